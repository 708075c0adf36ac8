//! The runtime: one queue and worker thread per channel of the model, the buffer budget, and the
//! entry point that turns a copy into a transfer descriptor.
//!
//! **Priorities.** Each channel's queue is ordered by priority, then by the transfer's arrival
//! (first come, first served: among equal priorities the oldest copy's ready requests go first,
//! so copies complete in the order they started rather than all together, as requests taken in
//! their own arrival order would on a multi-hop path, where each copy queues only as many
//! requests as its bounded buffers have slots), then by the request's arrival. While a
//! transfer is running, the channels it uses suspend every lower-priority transfer (isometry,
//! Section 5.1): a worker takes only requests of the highest priority among the running
//! transfers that use its channel, even if that means waiting for the next one (a lower-priority
//! request started in the gap would hold the channel when the high one arrives). Requests
//! already running finish first; the granularity is one request (block).
//!
//! **Bounded buffers without deadlock.** A transfer takes all of its intermediate slots at once
//! (all or nothing) before its first request, and returns them when it completes. No transfer
//! ever holds part of what it needs while waiting for more, so concurrent transfers cannot
//! deadlock on buffers; waiting transfers start in priority order as space frees. One transfer
//! larger than the whole budget runs alone.

use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::channel::Channel;
use super::descriptor::Transfer;
use super::event::Event;
use super::path::{plan, Path, PathError};
use super::place::Place;
use super::{disk, memcpy};
use crate::stats::Family;
use crate::transfer::plan::{ChannelKind, Model};

/// Where a request stands in its channel's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Turn {
    priority: i32,
    /// The transfer's arrival (lower: older).
    arrival: u64,
    /// The request's arrival.
    seq: u64,
}

impl PartialOrd for Turn {
    fn partial_cmp(&self, o: &Turn) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Turn {
    /// Greater goes first (the queue is a max-heap): higher priority, then the older transfer,
    /// then the earlier request.
    fn cmp(&self, o: &Turn) -> std::cmp::Ordering {
        self.priority.cmp(&o.priority).then(o.arrival.cmp(&self.arrival)).then(o.seq.cmp(&self.seq))
    }
}

/// One request in a channel's queue.
struct Job {
    turn: Turn,
    transfer: Arc<Transfer>,
    hop: usize,
    block: usize,
}

impl PartialEq for Job {
    fn eq(&self, o: &Job) -> bool {
        self.turn == o.turn
    }
}
impl Eq for Job {}
impl PartialOrd for Job {
    fn partial_cmp(&self, o: &Job) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Job {
    fn cmp(&self, o: &Job) -> std::cmp::Ordering {
        self.turn.cmp(&o.turn)
    }
}

#[derive(Default)]
struct Queue {
    jobs: Mutex<Jobs>,
    ready: Condvar,
}

#[derive(Default)]
struct Jobs {
    heap: BinaryHeap<Job>,
    /// Running transfers that use this channel, by priority (count per priority).
    active: std::collections::BTreeMap<i32, usize>,
}

impl Jobs {
    /// The next request a worker may take: the first in line, unless a running transfer of
    /// higher priority uses this channel (its lower-priority requests are suspended meanwhile).
    fn next(&mut self) -> Option<Job> {
        let top = self.heap.peek()?.turn.priority;
        if self.active.keys().next_back().is_some_and(|&p| p > top) {
            return None;
        }
        self.heap.pop()
    }
}

struct Budget {
    used: usize,
    /// Priorities of the copies holding buffers.
    running: Vec<i32>,
    waiting: VecDeque<Arc<Transfer>>,
}

/// What a path depends on: each side's compiled type (ids are never reused), count, and whether
/// it is a file (not its address, descriptor or offset).
type PathKey = [(u64, usize, bool); 2];
/// Paths kept; the cache starts over when full (copies of one program repeat a few shapes).
const PATHS_KEPT: usize = 1024;

pub struct Runtime {
    model: Model,
    paths: Mutex<rustc_hash::FxHashMap<PathKey, Arc<Path>>>,
    channels: Vec<Option<Arc<dyn Channel>>>,
    queues: Vec<Arc<Queue>>,
    started: Mutex<Vec<bool>>,
    limit: usize,
    budget: Mutex<Budget>,
    /// Requests submitted, and copies started: their arrival order.
    seq: AtomicU64,
    arrivals: AtomicU64,
    stop: Arc<AtomicBool>,
}

/// Why a copy cannot be made.
#[derive(Clone, Debug, PartialEq)]
pub enum CopyError {
    /// The two streams differ in length (bytes of source, of destination).
    Size(usize, usize),
    /// A file place's layout reaches before the start of the file.
    Offset,
    Path(PathError),
}

impl std::fmt::Display for CopyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyError::Size(s, d) => write!(f, "source and destination differ in size ({s} and {d} bytes of data)"),
            CopyError::Offset => write!(f, "a file's layout reaches before the start of the file"),
            CopyError::Path(e) => write!(f, "no path: {e}"),
        }
    }
}

fn channel_of(kind: ChannelKind) -> Option<Arc<dyn Channel>> {
    match kind {
        ChannelKind::Memcpy => Some(Arc::new(memcpy::Memcpy)),
        ChannelKind::DiskRead => Some(Arc::new(disk::DiskRead)),
        ChannelKind::DiskWrite => Some(Arc::new(disk::DiskWrite)),
        // Declared in the model for planning; run by the protocols or by later channels.
        _ => None,
    }
}

impl Runtime {
    /// A runtime over `model` whose transfers share `limit` bytes of intermediate buffers.
    pub fn new(model: Model, limit: usize) -> Arc<Runtime> {
        let n = model.channels().len();
        Arc::new(Runtime {
            channels: model.channels().iter().map(|c| channel_of(c.kind)).collect(),
            queues: (0..n).map(|_| Arc::new(Queue::default())).collect(),
            started: Mutex::new(vec![false; n]),
            paths: Mutex::new(Default::default()),
            model,
            limit,
            budget: Mutex::new(Budget { used: 0, running: Vec::new(), waiting: VecDeque::new() }),
            seq: AtomicU64::new(0),
            arrivals: AtomicU64::new(0),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The path a copy from `src` to `dst` takes (planned once per shape of copy, then cached).
    pub fn plan(&self, src: &Place, dst: &Place) -> Result<Arc<Path>, CopyError> {
        check(src, dst)?;
        let key = [src, dst].map(|p| (p.ty.id(), p.count, p.is_file()));
        if let Some(p) = self.paths.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let path = Arc::new(plan(&self.model, src, dst).map_err(CopyError::Path)?);
        let mut g = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() >= PATHS_KEPT {
            g.clear();
        }
        g.insert(key, path.clone());
        crate::logging::plan_once(crate::logging::plan_key(("copy", key)), || path.explain(&self.model, src.bytes()));
        Ok(path)
    }

    /// Starts copying `src`'s data into `dst`; `priority`: higher goes first.
    pub fn copy(self: &Arc<Self>, src: Place, dst: Place, priority: i32) -> Result<Event, CopyError> {
        let path = self.plan(&src, &dst)?;
        self.start_along(src, dst, priority, path)
    }

    /// [`Runtime::copy`] in blocks of `block` bytes, whatever the model would choose (not cached):
    /// calibration times copies at several block sizes (`calibrate`).
    pub(super) fn copy_at_block(self: &Arc<Self>, src: Place, dst: Place, block: usize) -> Result<Event, CopyError> {
        check(&src, &dst)?;
        let path = Arc::new(super::path::plan_at(&self.model, &src, &dst, block).map_err(CopyError::Path)?);
        self.start_along(src, dst, 0, path)
    }

    fn start_along(self: &Arc<Self>, src: Place, dst: Place, priority: i32, path: Arc<Path>) -> Result<Event, CopyError> {
        if src.bytes() == 0 {
            return Ok(Event::done(Ok(())));
        }
        for h in &path.hops {
            if self.channels[h.channel.0 as usize].is_none() {
                let kind = self.model.channel(h.channel).kind;
                return Err(CopyError::Path(PathError::Missing(format!("runnable {kind:?} channel"))));
            }
        }
        let arrival = self.arrivals.fetch_add(1, Ordering::Relaxed);
        let t = Arc::new(Transfer::new(Arc::downgrade(self), src, dst, path, priority, arrival));
        let event = t.event();
        self.admit(t);
        Ok(event)
    }

    /// Starts `t` if its buffers fit, else queues it (in priority order). A copy of higher
    /// priority than every copy running may use up to twice the budget: it must not wait for a
    /// lower-priority copy to finish (still all or nothing, so no deadlock).
    fn admit(&self, t: Arc<Transfer>) {
        let start = {
            let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
            let above = b.running.iter().all(|&p| p < t.priority()) && !b.running.is_empty();
            let room = if above { self.limit.saturating_mul(2) } else { self.limit };
            if (b.waiting.is_empty() || above) && (b.used == 0 || b.used + t.space() <= room) {
                b.used += t.space();
                b.running.push(t.priority());
                true
            } else {
                let at = b.waiting.iter().position(|w| w.priority() < t.priority()).unwrap_or(b.waiting.len());
                b.waiting.insert(at, t.clone());
                false
            }
        };
        if start {
            t.start();
        }
    }

    fn fits(&self, used: usize, need: usize) -> bool {
        used == 0 || used + need <= self.limit
    }

    /// A transfer completed: its buffers go back and waiting transfers start.
    pub(super) fn release(&self, space: usize, priority: i32) {
        let mut go = Vec::new();
        {
            let mut b = self.budget.lock().unwrap_or_else(|e| e.into_inner());
            b.used -= space;
            if let Some(i) = b.running.iter().position(|&p| p == priority) {
                b.running.swap_remove(i);
            }
            while let Some((need, p)) = b.waiting.front().map(|w| (w.space(), w.priority())) {
                if !self.fits(b.used, need) {
                    break;
                }
                b.used += need;
                b.running.push(p);
                go.push(b.waiting.pop_front().expect("front exists"));
            }
        }
        go.into_iter().for_each(|t| t.start());
    }

    /// Queues request (`hop`, `block`) of `t` on `channel`.
    pub(super) fn submit(&self, channel: usize, t: &Arc<Transfer>, hop: usize, block: usize) {
        self.ensure_worker(channel);
        let q = &self.queues[channel];
        let turn = Turn { priority: t.priority(), arrival: t.arrival(), seq: self.seq.fetch_add(1, Ordering::Relaxed) };
        q.jobs.lock().unwrap_or_else(|e| e.into_inner()).heap.push(Job { turn, transfer: t.clone(), hop, block });
        q.ready.notify_one();
    }

    /// A transfer of `priority` starts (`on`) or stops using `channels`: lower-priority requests
    /// on them are suspended meanwhile.
    pub(super) fn using(&self, channels: &[usize], priority: i32, on: bool) {
        for &c in channels {
            let q = &self.queues[c];
            let mut g = q.jobs.lock().unwrap_or_else(|e| e.into_inner());
            if on {
                *g.active.entry(priority).or_insert(0) += 1;
            } else if let Some(n) = g.active.get_mut(&priority) {
                *n -= 1;
                if *n == 0 {
                    g.active.remove(&priority);
                    q.ready.notify_all();
                }
            }
        }
    }

    fn ensure_worker(&self, channel: usize) {
        let mut s = self.started.lock().unwrap_or_else(|e| e.into_inner());
        if s[channel] {
            return;
        }
        s[channel] = true;
        let (q, stop) = (self.queues[channel].clone(), self.stop.clone());
        let ch = self.channels[channel].clone().expect("checked at copy");
        let name = format!("sluice-{:?}", ch.kind()).to_lowercase();
        std::thread::Builder::new().name(name).spawn(move || worker(&q, &*ch, &stop)).expect("spawn a channel worker");
    }
}

/// Whether `src` can be copied into `dst` at all: equal streams, and no file layout reaching
/// before the start of its file.
fn check(src: &Place, dst: &Place) -> Result<(), CopyError> {
    if src.bytes() != dst.bytes() {
        return Err(CopyError::Size(src.bytes(), dst.bytes()));
    }
    for p in [src, dst] {
        if let super::place::Memory::File { offset, .. } = p.memory {
            if p.bytes() > 0 && offset + p.window(0, p.bytes()).lo < 0 {
                return Err(CopyError::Offset);
            }
        }
    }
    Ok(())
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for q in &self.queues {
            let _g = q.jobs.lock().unwrap_or_else(|e| e.into_inner());
            q.ready.notify_all();
        }
    }
}

/// The statistics row of a channel kind (`SLUICE_STATS=1`).
fn family(kind: ChannelKind) -> Option<Family> {
    match kind {
        ChannelKind::Memcpy => Some(Family::ChMemcpy),
        ChannelKind::DiskRead => Some(Family::ChDiskRead),
        ChannelKind::DiskWrite => Some(Family::ChDiskWrite),
        _ => None,
    }
}

fn worker(q: &Queue, ch: &dyn Channel, stop: &AtomicBool) {
    let row = family(ch.kind());
    loop {
        let job = {
            let mut g = q.jobs.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(j) = g.next() {
                    break j;
                }
                if stop.load(Ordering::Acquire) {
                    return;
                }
                g = q.ready.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        };
        let t0 = std::time::Instant::now();
        // A panic (a bug in sluice: resolving the request, or in a kernel) must fail this copy,
        // not take the worker, and every later copy on its channel, down with it.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let step = job.transfer.step(job.hop, job.block);
            // SAFETY: the transfer resolved the step's addresses and its dependencies give them
            // to this request alone.
            unsafe { ch.perform(&step) }.map(|()| step.bytes())
        }))
        .unwrap_or_else(|_| Err(format!("{:?} channel: request failed (panic)", ch.kind())));
        if let (Some(f), Ok(n)) = (row, &r) {
            crate::stats::channel_request(f, *n, t0.elapsed().as_nanos() as u64);
        }
        let r = r.map(|_| ());
        job.transfer.finished(job.hop, job.block, r);
    }
}

#[cfg(test)]
mod turn_tests {
    use super::Turn;

    #[test]
    fn requests_go_by_priority_then_the_older_transfer_then_arrival() {
        let t = |priority, arrival, seq| Turn { priority, arrival, seq };
        // Pushed in request order: a multi-hop copy's requests trickle in as its slots free, so
        // the older copy's later requests (seq 5, 7) arrive after a younger one's (seq 4, 6).
        let mut heap: std::collections::BinaryHeap<Turn> =
            [t(0, 0, 1), t(0, 1, 2), t(0, 2, 3), t(0, 2, 4), t(0, 0, 5), t(0, 1, 6), t(0, 0, 7), t(3, 9, 8)].into();
        let order: Vec<(i32, u64, u64)> = std::iter::from_fn(|| heap.pop()).map(|t| (t.priority, t.arrival, t.seq)).collect();
        assert_eq!(order, [(3, 9, 8), (0, 0, 1), (0, 0, 5), (0, 0, 7), (0, 1, 2), (0, 1, 6), (0, 2, 3), (0, 2, 4)]);
    }
}
