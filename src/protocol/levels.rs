//! The cluster level pair of the multi-level interface (Sequoia 3.4; docs/levels.md): the top is
//! the memory of all ranks of `MPI_COMM_WORLD` (rank 0 runs the top's code), the children are the
//! ranks. Arrays are distributed over the ranks in blocks of whole rows, block `k` on rank
//! `k mod ranks` (block-cyclic; one block per rank by default, so a child's even share of rows is
//! mostly its own); each process keeps the parts of every array (an interval map) and its own
//! share. Transfers move local pieces with a copy (none where both sides are the same memory) and
//! remote pieces with sluice's one-sided gets and puts (`protocol::rma`: firehoses), or, where
//! the MPI gives no one-sided window, as messages served by the owner (`levels_msg`).
//!
//! Control travels on a private duplicate of the world communicator: the top sends commands
//! (allocate, publish an array's parts, register, unregister, free, run a task, close) to every
//! other rank, whose application thread serves them inside `sluice_levels_open` (so tasks run on
//! the application's own thread there); child 0's tasks run on a thread of rank 0; a thread of
//! rank 0 counts the children's completions. Barriers are messages to the range's first child.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::levels_msg::{Server, PIECE_MAX};
use crate::ffi::{consts, mpi};
use crate::levels::exec::{Completion, Job, Workers};
use crate::levels::{
    pieces, ArrayInfo, Change, Desc, Dir, Error, Kind, Level, LevelSpec, Part, RemoteCall, Runtime, Shape, Stats, Storage, XferList,
};
use crate::transfer::runtime::Event;

const CMD: c_int = 1;
const ALLOCATED: c_int = 2;
const DONE: c_int = 3;
const ARRIVE: c_int = 4;
const RELEASE: c_int = 5;
const STATS: c_int = 6;

const C_ALLOC: u64 = 1;
const C_PUBLISH: u64 = 2;
const C_ADD: u64 = 3;
const C_REMOVE: u64 = 4;
const C_FREE: u64 = 5;
const C_CALL: u64 = 6;
const C_CLOSE: u64 = 7;
const C_STATS: u64 = 8;
/// The completion id that stops rank 0's completion thread.
const STOP: u64 = u64::MAX;

/// How remote pieces move.
enum Moves {
    /// sluice's one-sided gets and puts.
    OneSided,
    /// Messages served by the owning rank.
    Messages(Arc<Server>),
}

/// Gets of pieces at most this far apart in the owner's memory are read as one span.
const SPAN_GAP: u64 = 4096;
/// The longest span read at once.
const SPAN_MAX: u64 = 64 << 20;

/// A span read into scratch memory and the local places its pieces go to.
struct Scatter {
    scratch: Vec<u8>,
    base: u64,
    /// (remote address, local address, bytes)
    pieces: Vec<(u64, *mut u8, usize)>,
}

// SAFETY: the local addresses are the application's memory, valid until the transfer's event
// completes, which happens only after `deliver` wrote them.
unsafe impl Send for Scatter {}

impl Scatter {
    fn deliver(self) {
        for &(addr, local, len) in &self.pieces {
            let at = (addr - self.base) as usize;
            // SAFETY: the piece lies inside the span read (it was grown to cover it) and its
            // local run inside the checked local array.
            unsafe { std::ptr::copy_nonoverlapping(self.scratch.as_ptr().add(at), local, len) };
        }
    }
}

/// Nonblocking sends still in flight, with their buffers.
struct Sends(Vec<(mpi::MPI_Request, Vec<u64>)>);

pub struct Cluster {
    me: usize,
    size: usize,
    comm: mpi::MPI_Comm,
    /// Rank 0: child 0's thread.
    exec: Mutex<Option<Workers>>,
    /// Rank 0: task calls waiting for children of other ranks, by call id.
    pending: Arc<Mutex<HashMap<u64, Arc<Completion>>>>,
    next_call: AtomicU64,
    counter: Mutex<Option<std::thread::JoinHandle<()>>>,
    sends: Mutex<Sends>,
    /// Other ranks: their share of arrays allocated but not yet published.
    unpublished: Mutex<HashMap<Desc, (ArrayInfo, Storage, usize)>>,
    moves: Moves,
    /// This process's share of each array (address, bytes), for the message server.
    shares: Mutex<HashMap<Desc, (u64, usize)>>,
}

// SAFETY: the MPI handles are opaque values passed back to the MPI, which runs at
// MPI_THREAD_MULTIPLE (checked at open); requests are used under `sends`' lock.
unsafe impl Send for Cluster {}
// SAFETY: as above.
unsafe impl Sync for Cluster {}

fn send(words: &[u64], to: usize, tag: c_int, comm: mpi::MPI_Comm) {
    // SAFETY: a buffer of `words`, sent whole on sluice's private communicator.
    unsafe { mpi::PMPI_Send(words.as_ptr().cast(), (words.len() * 8) as c_int, consts::byte(), to as c_int, tag, comm) };
}

/// Receives a message of any length from `from` with `tag`.
fn recv(from: c_int, tag: c_int, comm: mpi::MPI_Comm) -> (Vec<u64>, usize) {
    let mut st = crate::protocol::p2p::blank_status();
    let mut bytes = 0;
    // SAFETY: probes and receives on the private communicator into a buffer of the probed size.
    unsafe {
        mpi::PMPI_Probe(from, tag, comm, &mut st);
        mpi::PMPI_Get_count(&st, consts::byte(), &mut bytes);
    }
    let mut words = vec![0u64; (bytes as usize).div_ceil(8).max(1)];
    // SAFETY: as above.
    unsafe { mpi::PMPI_Recv(words.as_mut_ptr().cast(), bytes, consts::byte(), st.MPI_SOURCE, tag, comm, consts::status_ignore()) };
    (words, st.MPI_SOURCE as usize)
}

/// Bytes per block of an array of `shape` over `ranks`: `block_rows` whole rows (clipped to the
/// array), or with 0 one block per rank (an even share).
fn block_bytes(shape: &Shape, ranks: usize, block_rows: usize) -> usize {
    let rows = shape.dims[0];
    let row = shape.bytes() / rows;
    let per_block = if block_rows == 0 { rows.div_ceil(ranks) } else { block_rows.min(rows) };
    per_block.max(1) * row
}

/// The parts of an array of `len` bytes in blocks of `block`, rank `r`'s share at `bases[r]`.
fn parts_of(len: usize, block: usize, bases: &[u64]) -> Vec<Part> {
    let ranks = bases.len();
    (0..len.div_ceil(block))
        .map(|k| {
            let start = k * block;
            Part { start, len: block.min(len - start), rank: k % ranks, addr: bases[k % ranks] + ((k / ranks) * block) as u64 }
        })
        .collect()
}

/// Bytes rank `r` holds of an array of `len` bytes in blocks of `block`.
fn share(len: usize, block: usize, ranks: usize, r: usize) -> usize {
    parts_of(len, block, &vec![0; ranks]).iter().filter(|p| p.rank == r).map(|p| p.len).sum()
}

fn shape_words(shape: &Shape) -> [u64; 6] {
    let d = shape.dims;
    [shape.elem_size as u64, shape.ndims as u64, d[0] as u64, d[1] as u64, d[2] as u64, d[3] as u64]
}

fn shape_of(w: &[u64]) -> Option<Shape> {
    let n = *w.get(1)? as usize;
    Shape::new(*w.first()? as usize, &w.get(2..2 + n)?.iter().map(|&d| d as usize).collect::<Vec<_>>()).ok()
}

/// Makes the cluster level (collective over `MPI_COMM_WORLD`).
pub fn make(_spec: &LevelSpec) -> Result<Box<dyn Level>, Error> {
    if !crate::errors::mpi_is_active() {
        return Err(Error::Unavailable(
            -5,
            "the cluster level needs MPI: call sluice_levels_open between MPI_Init and MPI_Finalize".into(),
        ));
    }
    let mut level = crate::ffi::THREAD_SINGLE;
    // SAFETY: MPI is active; writes one int.
    unsafe { mpi::PMPI_Query_thread(&mut level) };
    if level < crate::ffi::THREAD_MULTIPLE {
        return Err(Error::Unavailable(
            -8,
            "the cluster level needs MPI_THREAD_MULTIPLE (its ranks serve the top and one-sided transfers while tasks run): initialize MPI with it".into(),
        ));
    }
    let world = consts::comm_world();
    let (mut me, mut size, mut comm) = (0, 0, consts::comm_null());
    // SAFETY: MPI is active; out-parameters are ours.
    unsafe {
        mpi::PMPI_Comm_rank(world, &mut me);
        mpi::PMPI_Comm_size(world, &mut size);
    }
    // One rank holds every part itself: nothing remote ever moves. Otherwise one-sided where
    // every rank has the window, else messages (decided together: the choice must agree).
    let mut moves = Moves::OneSided;
    let forced = match std::env::var("SLUICE_LEVELS_MOVES").as_deref() {
        Err(_) | Ok("auto") => false,
        Ok("messages") => true,
        Ok(v) => return Err(Error::Spec(format!("SLUICE_LEVELS_MOVES=\"{v}\": accepted are auto and messages"))),
    };
    if size > 1 {
        let rma = if forced {
            Err(crate::protocol::copy::Refused(0, "SLUICE_LEVELS_MOVES=messages".into()))
        } else {
            crate::protocol::rma::init()
        };
        let (mine, mut all) = (rma.is_ok() as c_int, 0 as c_int);
        // SAFETY: one int each way, collective over the world as this call is.
        unsafe {
            mpi::PMPI_Allreduce((&mine as *const c_int).cast(), (&mut all as *mut c_int).cast(), 1, consts::int(), consts::op_min(), world)
        };
        if all == 0 {
            if let Err(r) = rma {
                log::info!("cluster level: no one-sided window ({}); remote pieces move as messages", r.1);
            }
            moves = Moves::Messages(Server::start().map_err(|e| Error::Unavailable(-2, e))?);
        }
    }
    // SAFETY: collective duplicate of the world communicator (every rank opens the level).
    unsafe { mpi::PMPI_Comm_dup(world, &mut comm) };
    let (me, size) = (me as usize, size as usize);
    let c = Cluster {
        me,
        size,
        comm,
        exec: Mutex::new(None),
        pending: Arc::default(),
        next_call: AtomicU64::new(0),
        counter: Mutex::new(None),
        sends: Mutex::new(Sends(Vec::new())),
        unpublished: Mutex::default(),
        moves,
        shares: Mutex::default(),
    };
    if me == 0 {
        *c.exec.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Workers::start(1, "sluice-cluster").map_err(|e| Error::Unavailable(-2, e))?);
        let (pending, comm) = (c.pending.clone(), CommHandle(comm));
        let t = std::thread::Builder::new()
            .name("sluice-cluster-done".into())
            .spawn(move || count_completions(comm, pending))
            .map_err(|e| Error::Unavailable(-2, format!("cannot start the completion thread: {e}")))?;
        *c.counter.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
    }
    Ok(Box::new(c))
}

struct CommHandle(mpi::MPI_Comm);
// SAFETY: an opaque handle used at MPI_THREAD_MULTIPLE.
unsafe impl Send for CommHandle {}

/// Rank 0: finishes task calls as the other ranks report their children done.
fn count_completions(comm: CommHandle, pending: Arc<Mutex<HashMap<u64, Arc<Completion>>>>) {
    loop {
        let (w, _) = recv(crate::ffi::ANY_SOURCE, DONE, comm.0);
        if w[0] == STOP {
            return;
        }
        let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = p.get(&w[0]).cloned() {
            c.finish();
            if c.is_done() {
                p.remove(&w[0]);
            }
        }
    }
}

impl Cluster {
    /// This process's share of array `desc` is at `base` (`None`: the array is gone).
    fn share(&self, desc: Desc, share: Option<(u64, usize)>) {
        let mut g = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        let old = match share {
            Some(s) => g.insert(desc, s),
            None => g.remove(&desc),
        };
        if let Moves::Messages(server) = &self.moves {
            if let Some((b, l)) = old {
                server.share(b, l, false);
            }
            if let Some((b, l)) = share {
                server.share(b, l, true);
            }
        }
    }

    /// Starts moving one remote piece (`put`: from `local` to `addr` of `rank`).
    fn move_piece(&self, put: bool, rank: usize, addr: u64, local: *mut u8, len: usize, events: &mut Vec<Event>) -> Result<(), Error> {
        match &self.moves {
            Moves::OneSided => {
                let e = crate::protocol::rma::start(put, rank as c_int, addr, local.cast(), len)
                    .map_err(|r| Error::Io(format!("rank {rank}: {}", r.1)))?;
                events.push(e);
            }
            Moves::Messages(server) => {
                let mut done = 0;
                while done < len {
                    let n = PIECE_MAX.min(len - done);
                    events.push(server.start_op(put, rank, addr + done as u64, local.wrapping_add(done), n));
                    done += n;
                }
            }
        }
        Ok(())
    }

    fn put_pieces(&self, remote: &[(usize, u64, *mut u8, usize)], events: &mut Vec<Event>) -> Result<(), Error> {
        // One operation per piece: a put of a covering span would overwrite the gaps, which
        // other children may be writing.
        remote.iter().try_for_each(|&(rank, addr, local, len)| self.move_piece(true, rank, addr, local, len, events))
    }

    /// Gets: pieces of one rank close together in its memory (every piece of an array on a rank
    /// lies in that rank's one share) are read as one span into scratch memory and scattered
    /// when it lands, instead of one operation each.
    fn get_pieces(&self, remote: &mut [(usize, u64, *mut u8, usize)], events: &mut Vec<Event>) -> Result<(), Error> {
        remote.sort_by_key(|p| (p.0, p.1));
        let mut i = 0;
        while i < remote.len() {
            let (rank, lo) = (remote[i].0, remote[i].1);
            let (mut hi, mut j) = (lo + remote[i].3 as u64, i + 1);
            while j < remote.len()
                && remote[j].0 == rank
                && remote[j].1 <= hi + SPAN_GAP
                && remote[j].1 + remote[j].3 as u64 - lo <= SPAN_MAX
            {
                hi = hi.max(remote[j].1 + remote[j].3 as u64);
                j += 1;
            }
            if j == i + 1 {
                let (_, addr, local, len) = remote[i];
                self.move_piece(false, rank, addr, local, len, events)?;
            } else {
                let mut scratch = vec![0u8; (hi - lo) as usize];
                let mut inner = Vec::new();
                self.move_piece(false, rank, lo, scratch.as_mut_ptr(), scratch.len(), &mut inner)?;
                let outer = Event::new();
                let scatter = Scatter { scratch, base: lo, pieces: remote[i..j].iter().map(|p| (p.1, p.2, p.3)).collect() };
                let (left, first_error) = (Arc::new(AtomicU64::new(inner.len() as u64)), Arc::new(Mutex::new(None::<String>)));
                let shared = Arc::new(Mutex::new(Some(scatter)));
                for e in &inner {
                    let (e2, outer, left, first_error, shared) =
                        (e.clone(), outer.clone(), left.clone(), first_error.clone(), shared.clone());
                    e.on_complete(move || {
                        if let Some(Err(m)) = e2.test() {
                            first_error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(m);
                        }
                        if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                            let err = first_error.lock().unwrap_or_else(|e| e.into_inner()).take();
                            if let (None, Some(s)) = (&err, shared.lock().unwrap_or_else(|e| e.into_inner()).take()) {
                                s.deliver();
                            }
                            outer.complete(err.map_or(Ok(()), Err));
                        }
                    });
                }
                events.push(outer);
            }
            i = j;
        }
        Ok(())
    }

    /// Rank 0: a command to every other rank, without waiting for it to be received (a rank
    /// may be running a task).
    fn command(&self, to: usize, words: Vec<u64>) {
        let mut g = self.sends.lock().unwrap_or_else(|e| e.into_inner());
        g.0.retain_mut(|(req, _)| {
            let mut flag = 0;
            // SAFETY: a request of ours, tested (and freed by the MPI when complete).
            unsafe { mpi::PMPI_Test(req, &mut flag, consts::status_ignore()) };
            flag == 0
        });
        let mut req = consts::request_null();
        // SAFETY: the buffer moves into `sends` with the request and stays there (a Vec's heap
        // buffer does not move) until the send completed.
        unsafe {
            mpi::PMPI_Isend(words.as_ptr().cast(), (words.len() * 8) as c_int, consts::byte(), to as c_int, CMD, self.comm, &mut req)
        };
        g.0.push((req, words));
    }

    fn everyone_else(&self, words: &[u64]) {
        for r in 1..self.size {
            self.command(r, words.to_vec());
        }
    }

    /// Other ranks: one command from rank 0; `false` when it was `close`.
    fn handle(&self, rt: &Arc<Runtime>, w: &[u64]) -> bool {
        match w[0] {
            C_ALLOC => {
                let (desc, block, align) = (w[1] as i64, w[8] as usize, w[9] as usize);
                let Some(shape) = shape_of(&w[2..8]) else { return true };
                let bytes = share(shape.bytes(), block, self.size, self.me);
                let base = match crate::levels::smp::host_storage(bytes, align.max(64)) {
                    Ok(s) => {
                        let addr = s.host().map_or(0, |p| p as u64);
                        self.share(desc, Some((addr, bytes)));
                        self.unpublished
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(desc, (ArrayInfo { desc, shape, data: None }, s, block));
                        addr
                    }
                    Err(_) => 0,
                };
                send(&[desc as u64, base], 0, ALLOCATED, self.comm);
            }
            C_PUBLISH => {
                let desc = w[1] as i64;
                if let Some((info, mine, block)) = self.unpublished.lock().unwrap_or_else(|e| e.into_inner()).remove(&desc) {
                    let len = info.shape.bytes();
                    let parts = parts_of(len, block, &w[2..2 + self.size]);
                    rt.mirror_insert(info, Storage::Parts { len, parts, mine: Box::new(mine) });
                }
            }
            C_ADD => rt.mirror(Change::Add(w[1] as i64)),
            C_REMOVE => rt.mirror(Change::Remove(w[1] as i64)),
            C_FREE => {
                self.share(w[1] as i64, None);
                self.unpublished.lock().unwrap_or_else(|e| e.into_inner()).remove(&(w[1] as i64));
                rt.mirror(Change::Free(w[1] as i64));
            }
            C_CALL => {
                let (call, task, len) = (w[1], w[2] as usize, w[3] as usize);
                // SAFETY: the words after the header hold `len` argument bytes (as sent).
                let arg = unsafe { std::slice::from_raw_parts(w[4..].as_ptr().cast::<u8>(), len.min((w.len() - 4) * 8)) };
                rt.run_task(task, self.me, arg);
                send(&[call], 0, DONE, self.comm);
            }
            C_STATS => {
                let st = rt.stats();
                send(&[st.xfers, st.bytes, st.elided_bytes, st.busy_ns], 0, STATS, self.comm);
            }
            C_CLOSE => return false,
            _ => log::error!("cluster level: unknown command {}", w[0]),
        }
        true
    }
}

impl Level for Cluster {
    fn kind(&self) -> Kind {
        Kind::Cluster
    }

    fn children(&self) -> usize {
        self.size
    }

    fn allocate(&self, shape: &Shape, desc: Desc, align: usize, block_rows: usize) -> Result<Storage, Error> {
        let len = shape.bytes();
        let block = block_bytes(shape, self.size, block_rows);
        let bytes = share(len, block, self.size, 0);
        let mine = crate::levels::smp::host_storage(bytes, align)?;
        self.share(desc, Some((mine.host().map_or(0, |p| p as u64), bytes)));
        let mut words = vec![C_ALLOC, desc as u64];
        words.extend(shape_words(shape));
        words.extend([block as u64, align as u64]);
        self.everyone_else(&words);
        let mut bases = vec![0u64; self.size];
        bases[0] = mine.host().map_or(0, |p| p as u64);
        for _ in 1..self.size {
            let (w, from) = recv(crate::ffi::ANY_SOURCE, ALLOCATED, self.comm);
            bases[from] = w[1];
        }
        let mut publish = vec![C_PUBLISH, desc as u64];
        publish.extend(&bases);
        self.everyone_else(&publish);
        if let Some(r) = bases.iter().position(|&b| b == 0) {
            self.share(desc, None);
            self.everyone_else(&[C_FREE, desc as u64]);
            return Err(Error::NoMem(format!("rank {r} could not allocate its share of {len} bytes")));
        }
        Ok(Storage::Parts { len, parts: parts_of(len, block, &bases), mine: Box::new(mine) })
    }

    fn spawn(&self, child: usize, remote: RemoteCall, job: Job) {
        if child == self.me {
            if let Some(w) = &*self.exec.lock().unwrap_or_else(|e| e.into_inner()) {
                w.run(0, job);
            }
            return;
        }
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(call, remote.done.clone());
        let mut words = vec![C_CALL, call, remote.task as u64, remote.arg.len() as u64];
        words.resize(4 + remote.arg.len().div_ceil(8), 0);
        // SAFETY: the words after the header have room for the argument's bytes.
        unsafe { std::ptr::copy_nonoverlapping(remote.arg.as_ptr(), words[4..].as_mut_ptr().cast::<u8>(), remote.arg.len()) };
        self.command(child, words);
    }

    fn transfer(&self, top: &Arc<Storage>, list: &XferList) -> Result<(Vec<Event>, usize), Error> {
        let Storage::Parts { parts, .. } = &**top else {
            return Err(Error::Arg("a cluster array without parts".into()));
        };
        let put = list.dir == Dir::Put;
        let mut elided = 0;
        // Remote pieces: (rank, remote address, local address, bytes).
        let mut remote: Vec<(usize, u64, *mut u8, usize)> = Vec::new();
        for &(t, l, n) in &list.runs {
            let mut at = l;
            for (p, off, len) in pieces(parts, t, n) {
                let local = list.local.wrapping_add(at);
                at += len;
                let addr = p.addr + off as u64;
                if p.rank != self.me {
                    remote.push((p.rank, addr, local, len));
                    continue;
                }
                let mine = addr as usize as *mut u8;
                if mine == local {
                    elided += len;
                    continue;
                }
                // SAFETY: this process's share holds the part (allocated here); the local run
                // lies in the checked local array; `copy` allows overlap.
                unsafe {
                    if put {
                        std::ptr::copy(local, mine, len)
                    } else {
                        std::ptr::copy(mine, local, len)
                    }
                }
            }
        }
        let mut events = Vec::new();
        let moved = if put { self.put_pieces(&remote, &mut events) } else { self.get_pieces(&mut remote, &mut events) };
        if let Err(e) = moved {
            // Started pieces finish before the error is reported (their buffers are the
            // application's until then).
            for e in &events {
                let _ = e.wait();
            }
            return Err(e);
        }
        Ok((events, elided))
    }

    fn barrier(&self, child: usize, start: usize, end: usize) -> Option<Result<(), Error>> {
        let range = [start as u64, end as u64];
        if child == start {
            for r in start + 1..end {
                let _ = recv(r as c_int, ARRIVE, self.comm);
            }
            for r in start + 1..end {
                send(&range, r, RELEASE, self.comm);
            }
        } else {
            send(&range, start, ARRIVE, self.comm);
            let _ = recv(start as c_int, RELEASE, self.comm);
        }
        Some(Ok(()))
    }

    fn registered(&self, change: &Change) {
        if self.me != 0 {
            return;
        }
        match *change {
            Change::Add(d) => self.everyone_else(&[C_ADD, d as u64]),
            Change::Remove(d) => self.everyone_else(&[C_REMOVE, d as u64]),
            Change::Free(d) => {
                self.share(d, None);
                self.everyone_else(&[C_FREE, d as u64]);
            }
        }
    }

    /// Adds every other rank's transfers (their children move the data); tasks and memory are
    /// the top's own counts; busy time is the longest of any rank's.
    fn gather(&self, local: Stats) -> Stats {
        if self.me != 0 {
            return local;
        }
        self.everyone_else(&[C_STATS]);
        let mut all = local;
        for _ in 1..self.size {
            let (w, _) = recv(crate::ffi::ANY_SOURCE, STATS, self.comm);
            all.xfers += w[0];
            all.bytes += w[1];
            all.elided_bytes += w[2];
            all.busy_ns = all.busy_ns.max(w[3]);
        }
        all
    }

    fn serve(&self, rt: &Arc<Runtime>) -> bool {
        if self.me == 0 {
            return false;
        }
        loop {
            let (w, _) = recv(0, CMD, self.comm);
            if !self.handle(rt, &w) {
                return true;
            }
        }
    }

    fn stop(&self) {
        if self.me == 0 {
            self.everyone_else(&[C_CLOSE]);
            send(&[STOP], 0, DONE, self.comm);
            if let Some(t) = self.counter.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = t.join();
            }
            if let Some(mut w) = self.exec.lock().unwrap_or_else(|e| e.into_inner()).take() {
                w.stop();
            }
            let mut g = self.sends.lock().unwrap_or_else(|e| e.into_inner());
            for (req, _) in g.0.iter_mut() {
                // SAFETY: our own pending sends; the other ranks receive every command.
                unsafe { mpi::PMPI_Wait(req, consts::status_ignore()) };
            }
            g.0.clear();
        }
        if let Moves::Messages(s) = &self.moves {
            s.stop();
        }
        let mut comm = self.comm;
        // SAFETY: every rank frees its duplicate once, at close.
        unsafe { mpi::PMPI_Comm_free(&mut comm) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_whole_rows_dealt_round_robin() {
        let s = Shape::new(8, &[10, 3]).unwrap(); // rows of 24 bytes
        assert_eq!(block_bytes(&s, 4, 0), 3 * 24, "even share: 10 rows over 4 ranks, 3 each");
        assert_eq!(block_bytes(&s, 4, 1), 24);
        assert_eq!(block_bytes(&s, 4, 99), 10 * 24, "a block past the array is the array");
        let bases = [1000, 2000, 3000];
        let parts = parts_of(s.bytes(), 2 * 24, &bases);
        assert_eq!(parts.len(), 5);
        for (k, p) in parts.iter().enumerate() {
            assert_eq!((p.start, p.len, p.rank), (k * 48, 48, k % 3));
            assert_eq!(p.addr, bases[k % 3] + ((k / 3) * 48) as u64, "rank's blocks packed in order");
        }
        let shares: Vec<usize> = (0..3).map(|r| share(s.bytes(), 48, 3, r)).collect();
        assert_eq!(shares, [96, 96, 48]);
        let ragged = parts_of(100, 48, &bases);
        assert_eq!(ragged.last().map(|p| (p.start, p.len, p.rank)), Some((96, 4, 2)), "last block short");
    }
}
