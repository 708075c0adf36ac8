//! What every level pair shares: the top's arrays, task calls, barriers, transfer lists and
//! statistics, over one [`Level`] that says where arrays live, how children run and how data
//! moves.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use super::array::{pieces, ArrayInfo, Desc, Registry, Shape, Storage};
use super::barrier::RangeBarrier;
pub use super::exec::Completion as CallCompletion;
use super::exec::{Completion, Job};
use super::spec::{Kind, Spec};
use super::xfer::{Dir, XferList};
use super::Error;
use crate::transfer::runtime::Event;

/// A task of the table: runs on one child with the call's argument block.
pub type Task = Arc<dyn Fn(&Child, &[u8]) + Send + Sync>;

/// Makes a cluster level (installed by the protocol layer, which owns MPI).
pub type ClusterFactory = fn(&super::spec::LevelSpec) -> Result<Box<dyn Level>, Error>;
static CLUSTER: std::sync::OnceLock<ClusterFactory> = std::sync::OnceLock::new();

/// Installs the cluster level's constructor (once; later calls change nothing).
pub fn install_cluster(make: ClusterFactory) {
    let _ = CLUSTER.set(make);
}

/// Largest argument block of a task call (`SLUICE_TASK_ARG_MAX`).
pub const TASK_ARG_MAX: usize = 4096;

/// A task call as a level that runs children in other processes sends it.
pub struct RemoteCall {
    pub task: usize,
    pub arg: Arc<[u8]>,
    /// Finished once per child when the child's task returned.
    pub done: Arc<Completion>,
}

/// What differs between level pairs.
pub trait Level: Send + Sync {
    fn kind(&self) -> Kind;
    /// Number of children.
    fn children(&self) -> usize;
    /// Storage for array `desc` of `shape` at the top (`align`: a power of two). A level whose
    /// top is spread over its children places blocks of `block_rows` rows (the first extent;
    /// 0: one block per child) round-robin on them; a top of one memory ignores it.
    fn allocate(&self, shape: &Shape, desc: Desc, align: usize, block_rows: usize) -> Result<Storage, Error>;
    /// Runs a task on child `i`: `job` where the child is in this process (it finishes the
    /// call's completion itself), else the level sends `remote` and finishes it on the reply.
    fn spawn(&self, child: usize, remote: RemoteCall, job: Job);
    /// Starts moving `list` between the top array in `top` and the child's memory. Returns the
    /// events to wait for and the bytes elided (both sides the same memory).
    fn transfer(&self, top: &Arc<Storage>, list: &XferList) -> Result<(Vec<Event>, usize), Error>;
    /// A barrier among children in other processes too (`None`: all children are threads of
    /// this process and the runtime's own barrier serves).
    fn barrier(&self, _child: usize, _start: usize, _end: usize) -> Option<Result<(), Error>> {
        None
    }
    /// The registry of the top changed (levels with copies of it elsewhere forward it).
    fn registered(&self, _change: &Change) {}
    /// Called once the runtime exists: a level whose top is in another process serves that
    /// top here until it closes, then returns `true` (the open call then gives no handle).
    fn serve(&self, _rt: &Arc<Runtime>) -> bool {
        false
    }
    /// The counters of the whole runtime from `local`, this process's (a level whose children
    /// are in other processes adds theirs). Called from the top only.
    fn gather(&self, local: Stats) -> Stats {
        local
    }
    /// Stops the children (after every task returned). Not called from a child.
    fn stop(&self);
}

/// A change of a top's registry.
#[derive(Clone, Copy, Debug)]
pub enum Change {
    Add(Desc),
    Remove(Desc),
    Free(Desc),
}

/// One child of a runtime: the handle its tasks receive.
#[derive(Clone)]
pub struct Child {
    pub rt: Arc<Runtime>,
    pub id: usize,
}

/// A task call in flight.
pub struct TaskCall(Arc<Completion>);

impl TaskCall {
    pub fn wait(&self) {
        self.0.wait();
    }

    pub fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

/// A transfer in flight: the events of its parts.
pub struct Xfer {
    events: Vec<Event>,
}

/// Counters of a runtime (`sluice_level_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub tasks: u64,
    pub xfers: u64,
    pub bytes: u64,
    pub elided_bytes: u64,
    pub busy_ns: u64,
    pub alive_ns: u64,
    pub peak_bytes: u64,
}

/// The time at least one transfer of a runtime is in flight: a count of transfers' events in
/// flight, since when it is nonzero, and the total of earlier busy periods (exact, O(1) per
/// event: events report their completion through a hook, wherever they complete).
#[derive(Default)]
struct Busy {
    in_flight: usize,
    since: Option<Instant>,
    total: std::time::Duration,
}

impl Busy {
    /// `parts` more in flight from `at` on (`at`: now, or the start of the call adding them).
    fn start(&mut self, at: Instant, parts: usize) {
        if self.in_flight == 0 {
            self.since = Some(at);
        }
        self.in_flight += parts;
    }

    fn end(&mut self) {
        self.in_flight -= 1;
        if self.in_flight == 0 {
            if let Some(s) = self.since.take() {
                self.total += s.elapsed();
            }
        }
    }

    fn total_ns(&self) -> u64 {
        (self.total + self.since.map_or(std::time::Duration::ZERO, |s| s.elapsed())).as_nanos() as u64
    }
}

/// A runtime: a parent level and its children.
pub struct Runtime {
    level: Box<dyn Level>,
    spec: Arc<Spec>,
    depth: usize,
    tasks: Arc<Vec<Task>>,
    arrays: Mutex<Registry>,
    memory: Option<usize>,
    barrier: RangeBarrier,
    calls: Mutex<Vec<Weak<Completion>>>,
    busy: Arc<Mutex<Busy>>,
    counts: [AtomicU64; 4],
    opened: Instant,
    closed: AtomicBool,
}

const TASKS: usize = 0;
const XFERS: usize = 1;
const BYTES: usize = 2;
const ELIDED: usize = 3;

impl Runtime {
    /// Opens the runtime of level pair `depth` of `spec`; `None` where this process served a
    /// top in another process until it closed (a cluster's ranks other than 0).
    pub fn open(spec: Arc<Spec>, depth: usize, tasks: Arc<Vec<Task>>) -> Result<Option<Arc<Runtime>>, Error> {
        let ls = spec.levels.get(depth).ok_or_else(|| Error::Arg(format!("the composition has no level {depth}")))?;
        let level: Box<dyn Level> = match ls.kind {
            Kind::Smp => Box::new(super::smp::Smp::new(ls.children)?),
            Kind::Disk => Box::new(super::disk::Disk::new()?),
            Kind::Cluster => match CLUSTER.get() {
                Some(make) => make(ls)?,
                None => return Err(Error::Unavailable(-5, "the cluster level needs MPI: call sluice_levels_open after MPI_Init".into())),
            },
        };
        let memory = ls.memory;
        let rt = Arc::new(Runtime {
            level,
            spec,
            depth,
            tasks,
            arrays: Mutex::new(Registry::default()),
            memory,
            barrier: RangeBarrier::default(),
            calls: Mutex::new(Vec::new()),
            busy: Arc::default(),
            counts: Default::default(),
            opened: Instant::now(),
            closed: AtomicBool::new(false),
        });
        if rt.level.serve(&rt) {
            rt.close();
            return Ok(None);
        }
        Ok(Some(rt))
    }

    pub fn kind(&self) -> Kind {
        self.level.kind()
    }

    pub fn children(&self) -> usize {
        self.level.children()
    }

    /// The composition this runtime belongs to, and its place in it.
    pub fn spec(&self) -> (&Spec, usize) {
        (&self.spec, self.depth)
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.arrays.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes the top may still allocate (`usize::MAX`: no bound).
    pub fn memory_left(&self) -> usize {
        match self.memory {
            None => usize::MAX,
            Some(m) => m.saturating_sub(self.registry().used),
        }
    }

    // ---- top interface ----

    pub fn alloc(&self, shape: Shape, desc: Desc, align: usize) -> Result<ArrayInfo, Error> {
        self.alloc_cyclic(shape, desc, align, 0)
    }

    /// As [`Runtime::alloc`], distributed block-cyclically in blocks of `block_rows` rows where
    /// the top is spread over the children (0: one block per child).
    pub fn alloc_cyclic(&self, shape: Shape, desc: Desc, align: usize, block_rows: usize) -> Result<ArrayInfo, Error> {
        let align = if align == 0 { 64 } else { align };
        if !align.is_power_of_two() || align > 1 << 30 {
            return Err(Error::Arg(format!("alignment {align} is not a power of two up to 1 GiB")));
        }
        self.registry().check_new(desc)?;
        let bytes = shape.bytes();
        if bytes > self.memory_left() {
            return Err(Error::NoMem(format!(
                "{bytes} bytes for descriptor {desc}: past this {} level's memory bound ({} bytes, {} in use)",
                self.kind().name(),
                self.memory.unwrap_or(0),
                self.registry().used
            )));
        }
        let storage = self.level.allocate(&shape, desc, align, block_rows)?;
        let info = ArrayInfo { desc, shape, data: storage.host() };
        let mut reg = self.registry();
        // Checked again under the lock: another thread may have taken the descriptor or memory.
        reg.check_new(desc)?;
        if self.memory.is_some_and(|m| reg.used + bytes > m) {
            return Err(Error::NoMem(format!("{bytes} bytes for descriptor {desc}: past this level's memory bound")));
        }
        reg.insert(info, storage);
        Ok(info)
    }

    pub fn free(&self, info: &ArrayInfo) -> Result<(), Error> {
        let storage = self.registry().free(info)?;
        self.level.registered(&Change::Free(info.desc));
        drop(storage); // released when the last transfer holding it is done
        Ok(())
    }

    pub fn add(&self, info: &ArrayInfo) -> Result<(), Error> {
        self.registry().add(info)?;
        self.level.registered(&Change::Add(info.desc));
        Ok(())
    }

    pub fn remove(&self, desc: Desc) -> Result<(), Error> {
        self.registry().remove(desc)?;
        self.level.registered(&Change::Remove(desc));
        Ok(())
    }

    /// A copy of another process's top: applies what that top did (no checks of its own: the
    /// top checked).
    pub fn mirror_insert(&self, info: ArrayInfo, storage: Storage) {
        self.registry().insert(info, storage);
    }

    /// As [`Runtime::mirror_insert`], for a change.
    pub fn mirror(&self, change: Change) {
        let mut reg = self.registry();
        let _ = match change {
            Change::Add(d) => reg.get_any(d).and_then(|i| reg.add(&i)),
            Change::Remove(d) => reg.remove(d),
            Change::Free(d) => reg.get_any(d).and_then(|i| reg.free(&i).map(drop)),
        };
    }

    /// Runs task `task` as child `id` here (for a level whose top is in another process).
    pub fn run_task(self: &Arc<Self>, task: usize, id: usize, arg: &[u8]) {
        match self.tasks.get(task) {
            Some(f) => {
                let child = Child { rt: self.clone(), id };
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&child, arg))).is_err() {
                    log::error!("a task of child {id} panicked");
                }
            }
            None => log::error!("task {task} is not in this process's table ({} tasks)", self.tasks.len()),
        }
        self.counts[TASKS].fetch_add(1, Ordering::Relaxed);
    }

    /// Runs task `task` on children `start .. end` with a copy of `arg`.
    pub fn call(self: &Arc<Self>, task: usize, start: usize, end: usize, arg: &[u8]) -> Result<TaskCall, Error> {
        let f =
            self.tasks.get(task).cloned().ok_or_else(|| Error::Task(format!("task {task}: the table has {} tasks", self.tasks.len())))?;
        if arg.len() > TASK_ARG_MAX {
            return Err(Error::Task(format!("argument block of {} bytes (at most {TASK_ARG_MAX})", arg.len())));
        }
        self.check_range(start, end)?;
        let done = Completion::new(end - start);
        self.counts[TASKS].fetch_add((end - start) as u64, Ordering::Relaxed);
        let arg: Arc<[u8]> = arg.into();
        {
            let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            calls.retain(|w| w.strong_count() > 0);
            calls.push(Arc::downgrade(&done));
        }
        for id in start..end {
            let remote = RemoteCall { task, arg: arg.clone(), done: done.clone() };
            let (rt, f, arg, done) = (self.clone(), f.clone(), arg.clone(), done.clone());
            self.level.spawn(
                id,
                remote,
                Box::new(move || {
                    let child = Child { rt, id };
                    // A panic in a task is a bug in sluice's wrapper (C tasks cannot unwind):
                    // the child survives and the call still completes.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&child, &arg))).is_err() {
                        log::error!("a task of child {id} panicked");
                    }
                    done.finish();
                }),
            );
        }
        Ok(TaskCall(done))
    }

    fn check_range(&self, start: usize, end: usize) -> Result<(), Error> {
        if start >= end || end > self.children() {
            return Err(Error::Child(format!("children {start} .. {end} (this runtime has {})", self.children())));
        }
        Ok(())
    }

    /// Waits for running tasks, frees every array and stops the children.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let calls = std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()));
        for c in calls.iter().filter_map(Weak::upgrade) {
            c.wait();
        }
        self.level.stop();
        drop(self.registry().drain());
    }

    // ---- either side ----

    pub fn get(&self, desc: Desc) -> Result<ArrayInfo, Error> {
        self.registry().get(desc).map(|(info, _)| info)
    }

    /// The child whose memory holds element `index` of the registered array `desc`; `None` when
    /// the whole array is in the top's memory (one memory: smp, disk).
    pub fn home(&self, desc: Desc, index: usize) -> Result<Option<usize>, Error> {
        let (info, storage) = self.registry().get(desc)?;
        let n = info.shape.elements();
        if index >= n {
            return Err(Error::Bounds(format!("element {index} of descriptor {desc}: the array has {n}")));
        }
        Ok(match &*storage {
            Storage::Parts { parts, .. } => pieces(parts, index * info.shape.elem_size, 1).next().map(|(p, _, _)| p.rank),
            Storage::Host(_) | Storage::File { .. } => None,
        })
    }

    /// The counters of the whole runtime (a cluster's: every rank's transfers), from the top.
    pub fn stats_all(&self) -> Stats {
        self.level.gather(self.stats())
    }

    /// This process's counters.
    pub fn stats(&self) -> Stats {
        let c = |i: usize| self.counts[i].load(Ordering::Relaxed);
        Stats {
            tasks: c(TASKS),
            xfers: c(XFERS),
            bytes: c(BYTES),
            elided_bytes: c(ELIDED),
            busy_ns: self.busy.lock().unwrap_or_else(|e| e.into_inner()).total_ns(),
            alive_ns: self.opened.elapsed().as_nanos() as u64,
            peak_bytes: self.registry().peak as u64,
        }
    }
}

impl Child {
    /// Checks a transfer list between `dst` and `src` (one of them a registered array of the
    /// top, the other local).
    pub fn xfer_list(
        &self,
        dst: &ArrayInfo,
        src: &ArrayInfo,
        dst_idx: &[usize],
        src_idx: &[usize],
        lengths: &[usize],
    ) -> Result<XferList, Error> {
        let local = super::array::LOCAL;
        let (dir, top, local_info) = match (dst.desc == local, src.desc == local) {
            (true, false) => (Dir::Get, src, dst),
            (false, true) => (Dir::Put, dst, src),
            (true, true) => return Err(Error::Desc("both sides of the transfer are local arrays".into())),
            (false, false) => return Err(Error::Desc("neither side of the transfer is a local array".into())),
        };
        let registered = self.rt.get(top.desc)?;
        if registered.shape != top.shape {
            return Err(Error::Desc(format!("descriptor {}: the array given differs from the one registered", top.desc)));
        }
        XferList::new(dir, &registered, local_info, dst_idx, src_idx, lengths)
    }

    /// Starts a transfer list.
    pub fn xfer(&self, list: &XferList) -> Result<Xfer, Error> {
        let (_, storage) = self.rt.registry().get(list.desc)?;
        let busy = &self.rt.busy;
        let lock = || busy.lock().unwrap_or_else(|e| e.into_inner());
        // The call itself is in flight while it runs (levels copy inside it, concurrently with
        // other children's calls: counted from its start, so overlaps count once).
        lock().start(Instant::now(), 1);
        let moved = self.rt.level.transfer(&storage, list);
        let (events, elided) = match moved {
            Ok(m) => m,
            Err(e) => {
                lock().end();
                return Err(e);
            }
        };
        lock().start(Instant::now(), events.len());
        for e in &events {
            let busy = busy.clone();
            e.on_complete(move || busy.lock().unwrap_or_else(|e| e.into_inner()).end());
        }
        lock().end();
        let rt = &self.rt;
        rt.counts[XFERS].fetch_add(1, Ordering::Relaxed);
        rt.counts[BYTES].fetch_add((list.bytes - elided) as u64, Ordering::Relaxed);
        rt.counts[ELIDED].fetch_add(elided as u64, Ordering::Relaxed);
        Ok(Xfer { events })
    }

    /// Waits for a transfer (the first failure of its parts is its outcome).
    pub fn wait(&self, x: Xfer) -> Result<(), Error> {
        let mut outcome = Ok(());
        for e in &x.events {
            if let (Err(m), Ok(())) = (e.wait(), &outcome) {
                outcome = Err(Error::Io(m));
            }
        }
        outcome
    }

    /// Barrier among children `start .. end`.
    pub fn barrier(&self, start: usize, end: usize) -> Result<(), Error> {
        self.rt.check_range(start, end)?;
        if !(start..end).contains(&self.id) {
            return Err(Error::Child(format!("child {} is not one of {start} .. {end}", self.id)));
        }
        match self.rt.level.barrier(self.id, start, end) {
            Some(r) => r,
            None => {
                self.rt.barrier.wait(start, end);
                Ok(())
            }
        }
    }

    /// The runtime of the next level pair below this child (`None` at a leaf).
    pub fn below(&self) -> Result<Option<Arc<Runtime>>, Error> {
        let next = self.rt.depth + 1;
        if next >= self.rt.spec.levels.len() {
            return Ok(None);
        }
        Runtime::open(self.rt.spec.clone(), next, self.rt.tasks.clone())
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.close();
    }
}
