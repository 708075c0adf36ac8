//! One-sided puts and gets (`sluice_put`, `sluice_get`) through firehoses (the firehose paper,
//! Section 3.2; docs/firehose.md).
//!
//! `sluice_rma_init` (collective over `MPI_COMM_WORLD`) opens the service: a duplicate of the
//! world communicator for move requests, a dynamic RMA window on it with a passive epoch to
//! every process (`MPI_Win_lock_all`), and the progress thread. A put or get is split into
//! pieces of at most `F` remote buckets; each piece covers its buckets with firehoses
//! (`pin::firehose`): when all are mapped it moves one-sided (`MPI_Put`/`MPI_Get`, then
//! `MPI_Win_flush`: the data is at the target, or here, when the event completes); otherwise a
//! move request goes to the target, whose service pins and attaches the buckets (`target`) and
//! answers, and the piece moves then.
//!
//! Progress: a target serves move requests whenever the engine is driven (`progress`), and the
//! service needs the progress thread, which drives it every 20 us, so a target inside any MPI
//! call (a barrier, a reduction, a blocking receive), or computing outside MPI, still serves.
//! Hence `MPI_THREAD_MULTIPLE` (initialize with it, or `SLUICE_PROGRESS_THREAD=1`).

pub mod target;

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use crate::ffi::{consts, mpi};
use crate::pin::firehose::{Cover, FirehoseTable, Readiness};
use crate::pin::{self, Use};
use crate::protocol::copy::{code, Refused};
use crate::transfer::runtime::progress;
use crate::transfer::runtime::Event;

/// Tags on the service's communicator.
const MOVE: c_int = 1;
const REPLY: c_int = 2;
/// The largest piece one MPI call moves (counts are `int`).
const PIECE_MAX: usize = 1 << 30;

static SERVICE: Mutex<Option<Service>> = Mutex::new(None);
static SERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Counts 1 while the service is open (so the engine, and the progress thread, keep polling it
/// for move requests) plus the operations waiting for a move.
static SOURCE: progress::Source = progress::Source::new("rma", Some(poll));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Put,
    Get,
}

/// A put or get in flight.
struct Op {
    dir: Dir,
    rank: c_int,
    remote: usize,
    local: usize,
    len: usize,
    /// Bytes moved so far (whole pieces).
    done: usize,
    /// The current piece holds its firehose references.
    covered: bool,
    /// Rendezvous strategies: the handshake this operation waits for, and whether it is the
    /// unmap after the piece (then `moved` bytes are done once it is answered).
    handshake: Option<u64>,
    unmapping: bool,
    moved: usize,
    event: Event,
}

/// A move request sent, its answer not yet in.
struct Move {
    rank: c_int,
    id: u64,
    /// The request's words: kept alive until the send completes.
    _msg: Vec<u64>,
    send: mpi::MPI_Request,
    answer: Box<[u64; 2]>,
    recv: mpi::MPI_Request,
    /// A rendezvous handshake: its answer goes to `Service::answers`, not the firehose table.
    handshake: bool,
}

struct Service {
    me: c_int,
    comm: mpi::MPI_Comm,
    win: mpi::MPI_Win,
    size: c_int,
    bucket: usize,
    table: FirehoseTable,
    attached: target::Attached,
    moves: Vec<Move>,
    ops: Vec<Op>,
    strategy: Strategy,
    /// Answers to rendezvous handshakes, by id.
    answers: std::collections::HashMap<u64, u64>,
    next_handshake: u64,
}

/// How puts and gets reach remote memory: firehoses, or the paper's two baselines (for the
/// benchmark, `sluice_rma_strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Firehoses: one-sided when mapped, a move request otherwise.
    Firehose,
    /// A handshake per operation (the target pins and attaches), the data, then a second
    /// handshake that unpins and detaches.
    Rendezvous,
    /// A handshake per operation; the target keeps everything pinned and attached for good
    /// (unbounded: the paper's "rendezvous without unpin").
    RendezvousKeep,
}

// SAFETY: the MPI handles (pointers in Open MPI) are opaque values only passed back to the MPI,
// which runs at MPI_THREAD_MULTIPLE while the service exists; every use is under SERVICE's lock.
unsafe impl Send for Service {}

/// `sluice_rma_init`: opens the service (collective over `MPI_COMM_WORLD`; again: no effect).
pub fn init() -> Result<(), Refused> {
    let mut g = SERVICE.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_some() {
        return Ok(());
    }
    if !crate::errors::mpi_is_active() {
        return Err(Refused(code::ERR_NOT_INITIALIZED, "call it between MPI_Init and MPI_Finalize".into()));
    }
    if crate::runtime::mode() == crate::runtime::Mode::PassThrough {
        return Err(Refused(code::ERR_NOT_INITIALIZED, "sluice is disabled (SLUICE_DISABLE=1, or sluice_disable())".into()));
    }
    let mut level = crate::ffi::THREAD_SINGLE;
    // SAFETY: MPI is active; writes one int (the MPI's own level, not the one sluice shows).
    unsafe { mpi::PMPI_Query_thread(&mut level) };
    if level < crate::ffi::THREAD_MULTIPLE {
        return Err(Refused(
            code::ERR_THREAD,
            "puts and gets need a service thread that serves move requests while the target is inside any MPI call: initialize MPI with MPI_THREAD_MULTIPLE, or set SLUICE_PROGRESS_THREAD=1".into(),
        ));
    }
    let limits = crate::runtime::config().map_or_else(pin::Limits::default_for_host, |c| c.firehose);
    let world = consts::comm_world();
    let (mut me, mut size) = (0, 0);
    // SAFETY: MPI is active; out-parameters are ints.
    unsafe {
        mpi::PMPI_Comm_rank(world, &mut me);
        mpi::PMPI_Comm_size(world, &mut size);
    }
    // Every process must use the same bucket size and M (firehoses name remote buckets).
    let mine = [limits.bucket as u64, limits.m as u64];
    let (mut lo, mut hi) = ([0u64; 2], [0u64; 2]);
    // SAFETY: two u64 each way; collective over the world, as this call is.
    unsafe {
        mpi::PMPI_Allreduce(mine.as_ptr().cast(), lo.as_mut_ptr().cast(), 2, consts::uint64(), consts::op_min(), world);
        mpi::PMPI_Allreduce(mine.as_ptr().cast(), hi.as_mut_ptr().cast(), 2, consts::uint64(), consts::op_max(), world);
    }
    if lo != hi {
        return Err(Refused(
            code::ERR_ARG,
            "SLUICE_FIREHOSE_BUCKET and SLUICE_FIREHOSE_M differ between processes; set them alike for the whole job".into(),
        ));
    }
    let per_rank = limits.m / (limits.bucket * (size as usize - 1).max(1));
    if per_rank == 0 {
        return Err(Refused(
            code::ERR_ARG,
            format!(
                "SLUICE_FIREHOSE_M = {} leaves no firehose per process ({} processes, buckets of {} bytes)",
                limits.m, size, limits.bucket
            ),
        ));
    }
    let (mut comm, mut win) = (consts::comm_null(), std::mem::MaybeUninit::<mpi::MPI_Win>::zeroed());
    // SAFETY: collective calls on the world communicator and its duplicate (whose errors return:
    // a window the MPI cannot create is reported, not fatal); out-parameters are ours.
    let rc = unsafe {
        let mut rc = mpi::PMPI_Comm_dup(world, &mut comm);
        if rc == 0 {
            mpi::PMPI_Comm_set_errhandler(comm, consts::errors_return());
            rc = mpi::PMPI_Win_create_dynamic(consts::info_null(), comm, win.as_mut_ptr());
            if rc != 0 {
                mpi::PMPI_Comm_free(&mut comm);
            }
        }
        if rc == 0 {
            // A failed access is the operation's error (its event), never an abort.
            mpi::PMPI_Win_set_errhandler(win.assume_init(), consts::errors_return());
            rc = mpi::PMPI_Win_lock_all(mpi::MPI_MODE_NOCHECK as c_int, win.assume_init());
        }
        rc
    };
    if rc != 0 {
        return Err(Refused(
            code::ERR_IO,
            format!(
                "the MPI cannot create a dynamic RMA window for this job at MPI_THREAD_MULTIPLE ({}); Open MPI 4.1 has no one-sided component for that between nodes over TCP (osc pt2pt refuses the thread level, osc ucx needs UCX's PML)",
                crate::errors::error_string(rc)
            ),
        ));
    }
    // SAFETY: written by PMPI_Win_create_dynamic (rc was 0).
    let win = unsafe { win.assume_init() };
    if let Err(e) = progress::thread::start(crate::protocol::p2p::pipeline::nudge) {
        // The window and its communicator stay: freeing them is collective, and the other
        // processes (whose threads started) would not join; a leak beats a hang.
        return Err(Refused(code::ERR_THREAD, format!("cannot start the service thread: {e}")));
    }
    *g = Some(Service {
        me,
        comm,
        win,
        size,
        bucket: limits.bucket,
        table: FirehoseTable::new(per_rank, limits.bucket),
        attached: target::Attached::default(),
        moves: Vec::new(),
        ops: Vec::new(),
        strategy: Strategy::Firehose,
        answers: std::collections::HashMap::new(),
        next_handshake: 1 << 62,
    });
    SOURCE.add(1);
    Ok(())
}

/// `sluice_put` (`Dir::Put`: `len` bytes at `local` to `remote` of `rank`) and `sluice_get`.
pub fn start(put: bool, rank: c_int, remote: u64, local: *mut c_void, len: usize) -> Result<Event, Refused> {
    let mut g = SERVICE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(s) = g.as_mut() else {
        return Err(Refused(code::ERR_NOT_INITIALIZED, "call sluice_rma_init first (after MPI_Init)".into()));
    };
    if rank < 0 || rank >= s.size {
        return Err(Refused(code::ERR_ARG, format!("rank {rank} is not a rank of MPI_COMM_WORLD (size {})", s.size)));
    }
    if len == 0 {
        return Ok(Event::done(Ok(())));
    }
    if local.is_null() {
        return Err(Refused(code::ERR_ARG, "null local buffer".into()));
    }
    if remote == 0 || remote.checked_add(len as u64).is_none() || (local as usize).checked_add(len).is_none() {
        return Err(Refused(code::ERR_ARG, format!("remote range {remote:#x} + {len} bytes is not an address range")));
    }
    let dir = if put { Dir::Put } else { Dir::Get };
    crate::stats::count(crate::stats::Family::Rma, len);
    if rank == s.me {
        return Ok(self_copy(dir, remote as usize, local as usize, len));
    }
    let mut op = Op {
        dir,
        rank,
        remote: remote as usize,
        local: local as usize,
        len,
        done: 0,
        covered: false,
        handshake: None,
        unmapping: false,
        moved: 0,
        event: Event::new(),
    };
    let event = op.event.clone();
    if !s.advance(&mut op) {
        s.ops.push(op);
        SOURCE.add(1);
    }
    Ok(event)
}

/// A put or get to this process itself: no firehose, no window; the remote range is checked
/// against this process's mappings, then copied.
fn self_copy(dir: Dir, remote: usize, local: usize, len: usize) -> Event {
    let (name, write) = if dir == Dir::Put { ("sluice_put", true) } else { ("sluice_get", false) };
    let ev = Event::new();
    if !target::accessible(remote, len, write) {
        ev.fail(
            code::ERR_REMOTE,
            format!("{name}: {remote:#x} + {len} bytes of this process are not mapped{}", if write { " writable" } else { "" }),
        );
        return ev;
    }
    let (src, dst) = if write { (local, remote) } else { (remote, local) };
    // SAFETY: both ranges are mapped (the remote one checked above, the local one lent by the
    // caller); they may overlap, as memory given to MPI_Put to oneself may.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
    ev.complete(Ok(()));
    ev
}

/// The engine's poll: serve move requests, take answers, advance waiting operations.
fn poll() {
    let Ok(mut g) = SERVICE.try_lock() else { return };
    if let Some(s) = g.as_mut() {
        s.serve();
        s.progress();
    }
}

impl Service {
    /// The piece of `op` that starts at `op.done`: at most `F` remote buckets and `PIECE_MAX`.
    fn piece(&self, op: &Op) -> (usize, usize) {
        let start = op.remote + op.done;
        let f_end = (start / self.bucket + self.table.per_rank()) * self.bucket;
        let end = (op.remote + op.len).min(f_end).min(start + PIECE_MAX);
        (start, end - start)
    }

    /// Moves as many pieces of `op` as are covered; whether the operation finished (its event
    /// completed, either way).
    fn advance(&mut self, op: &mut Op) -> bool {
        if self.strategy != Strategy::Firehose || op.handshake.is_some() {
            return self.advance_handshakes(op);
        }
        loop {
            if op.done == op.len {
                op.event.complete(Ok(()));
                return true;
            }
            let (start, plen) = self.piece(op);
            if !op.covered {
                match self.table.cover(op.rank, start, plen) {
                    Cover::Busy => return false,
                    Cover::Move { id, map, unmap } => self.send_move(op.rank, id, &map, &unmap),
                    Cover::Ready | Cover::Waiting => {}
                }
                op.covered = true;
            }
            match self.table.state(op.rank, start, plen) {
                Readiness::Pending => return false,
                Readiness::Refused => {
                    self.table.release(op.rank, start, plen);
                    op.event.fail(
                        code::ERR_REMOTE,
                        format!(
                            "{}: rank {} refused {start:#x} + {plen} bytes: not mapped there, or its firehose memory is full",
                            op.name(),
                            op.rank
                        ),
                    );
                    return true;
                }
                Readiness::Mapped { writable } => {
                    if op.dir == Dir::Put && !writable {
                        self.table.release(op.rank, start, plen);
                        op.event.fail(code::ERR_REMOTE, format!("sluice_put: {start:#x} + {plen} bytes of rank {} are read-only", op.rank));
                        return true;
                    }
                    let rc = self.transfer(op, start, plen);
                    self.table.release(op.rank, start, plen);
                    op.covered = false;
                    if rc != 0 {
                        op.event.fail(code::ERR_IO, format!("{}: the MPI failed the transfer (error {rc})", op.name()));
                        return true;
                    }
                    op.done += plen;
                }
            }
        }
    }

    /// The baselines: every piece is a handshake (map), the data, and with `Rendezvous` a
    /// second handshake (unmap).
    fn advance_handshakes(&mut self, op: &mut Op) -> bool {
        loop {
            if op.handshake.is_none() && op.event.test().is_some() {
                return true; // failed, and its last unmap is answered
            }
            if op.done == op.len {
                op.event.complete(Ok(()));
                return true;
            }
            let (start, plen) = self.piece(op);
            let (first, end) = self.table.buckets(start, plen);
            let buckets: Vec<usize> = (first..end).collect();
            let Some(id) = op.handshake else {
                let keep = self.strategy == Strategy::RendezvousKeep;
                op.handshake = Some(self.send_handshake(op.rank, &buckets, &[], keep));
                op.unmapping = false;
                return false;
            };
            let Some(status) = self.answers.remove(&id) else { return false };
            if op.unmapping {
                op.done += op.moved;
                op.handshake = None;
                continue;
            }
            let refused = !(status == target::OK_WRITABLE || (status == target::OK_READ_ONLY && op.dir == Dir::Get));
            let rc = if refused { 0 } else { self.transfer(op, start, plen) };
            if self.strategy == Strategy::Rendezvous && status <= target::OK_READ_ONLY {
                op.handshake = Some(self.send_handshake(op.rank, &[], &buckets, false));
                op.unmapping = true;
                op.moved = plen;
            } else {
                op.handshake = None;
                op.done += plen;
            }
            if refused || rc != 0 {
                op.event.fail(
                    if refused { code::ERR_REMOTE } else { code::ERR_IO },
                    format!("{}: rank {} refused or failed {start:#x} + {plen} bytes", op.name(), op.rank),
                );
                return op.handshake.is_none();
            }
        }
    }

    /// Sends a handshake of the baselines: the target pins outside the bucket table (`keep`:
    /// for good; else until the unmap handshake).
    fn send_handshake(&mut self, rank: c_int, map: &[usize], unmap: &[usize], keep: bool) -> u64 {
        let id = self.next_handshake;
        self.next_handshake += 1;
        self.post_move(rank, id, map, unmap, if keep { 1 } else { 2 }, true);
        id
    }

    /// One piece, one-sided: an `MPI_Put`/`MPI_Get` per remote bucket (each bucket is its own
    /// attached region, and an access may not span regions: Open MPI refuses it), then one
    /// `MPI_Win_flush`. The local side is pinned for the transfer as the paper's local
    /// operations are (a failure to pin only costs that).
    fn transfer(&self, op: &Op, start: usize, plen: usize) -> c_int {
        let local = op.local + op.done;
        let pinned = pin::pin(local, plen, Use::Local).is_ok();
        let mut rc = 0;
        let mut at = 0;
        while at < plen && rc == 0 {
            let n = (self.bucket - (start + at) % self.bucket).min(plen - at);
            let (l, r) = (local + at, (start + at) as mpi::MPI_Aint);
            // SAFETY: `local` holds `plen` bytes the application lent until the event
            // completes; the target bucket is attached to the window (its firehose is mapped);
            // the epoch to every process is open (lock_all).
            rc = unsafe {
                match op.dir {
                    Dir::Put => {
                        mpi::PMPI_Put(l as *const c_void, n as c_int, consts::byte(), op.rank, r, n as c_int, consts::byte(), self.win)
                    }
                    Dir::Get => {
                        mpi::PMPI_Get(l as *mut c_void, n as c_int, consts::byte(), op.rank, r, n as c_int, consts::byte(), self.win)
                    }
                }
            };
            at += n;
        }
        // SAFETY: completes the accesses above at both ends (also after a failed one).
        let flushed = unsafe { mpi::PMPI_Win_flush(op.rank, self.win) };
        if pinned {
            pin::unpin(local, plen, Use::Local);
        }
        if rc != 0 {
            rc
        } else {
            flushed
        }
    }

    fn send_move(&mut self, rank: c_int, id: u64, map: &[usize], unmap: &[usize]) {
        self.post_move(rank, id, map, unmap, 0, false);
    }

    /// Sends a move request (`mode` 0: firehoses; 1: a baseline's, kept for good; 2: a
    /// baseline's, until unmapped) and posts the receive of its answer.
    fn post_move(&mut self, rank: c_int, id: u64, map: &[usize], unmap: &[usize], mode: u64, handshake: bool) {
        crate::stats::count(crate::stats::Family::FirehoseMove, map.len() * self.bucket);
        let mut msg = Vec::with_capacity(4 + map.len() + unmap.len());
        msg.extend([id, unmap.len() as u64, map.len() as u64, mode]);
        msg.extend(unmap.iter().map(|b| *b as u64));
        msg.extend(map.iter().map(|b| *b as u64));
        let mut answer = Box::new([0u64; 2]);
        let (mut send, mut recv) = (consts::request_null(), consts::request_null());
        // SAFETY: `msg` and `answer` live in the Move until both requests complete (`progress`).
        let (rs, rr) = unsafe {
            (
                mpi::PMPI_Isend(msg.as_ptr().cast(), (msg.len() * 8) as c_int, consts::byte(), rank, MOVE, self.comm, &mut send),
                mpi::PMPI_Irecv(answer.as_mut_ptr().cast(), 16, consts::byte(), rank, REPLY, self.comm, &mut recv),
            )
        };
        if rs == 0 && rr == 0 {
            self.moves.push(Move { rank, id, _msg: msg, send, answer, recv, handshake });
            return;
        }
        // The MPI refused the request (errors return on the service's communicator): the
        // operations waiting for it fail instead of waiting for an answer that cannot come.
        log::warn!("firehose move request to rank {rank} failed: {}", crate::errors::error_string(if rs != 0 { rs } else { rr }));
        // SAFETY: the request that was posted is cancelled (a receive) and waited for, so its
        // buffer may go.
        unsafe {
            if rr == 0 {
                mpi::PMPI_Cancel(&mut recv);
                mpi::PMPI_Wait(&mut recv, consts::status_ignore());
            }
            if rs == 0 {
                mpi::PMPI_Wait(&mut send, consts::status_ignore());
            }
        }
        if handshake {
            self.answers.insert(id, target::NOT_MAPPED);
        } else {
            self.table.moved(rank, id, Err(()));
        }
    }

    /// Serves every move request that has arrived (the target side).
    fn serve(&mut self) {
        loop {
            let (mut flag, mut st) = (0, crate::protocol::p2p::blank_status());
            // SAFETY: probes the service's own communicator; writes the flag and a local status.
            unsafe { mpi::PMPI_Iprobe(crate::ffi::ANY_SOURCE, MOVE, self.comm, &mut flag, &mut st) };
            if flag == 0 {
                return;
            }
            let mut bytes = 0;
            // SAFETY: the status just filled; counts bytes.
            unsafe { mpi::PMPI_Get_count(&st, consts::byte(), &mut bytes) };
            let mut msg = vec![0u64; (bytes as usize).div_ceil(8).max(4)];
            // SAFETY: receives the probed message into a buffer of at least its size.
            unsafe {
                mpi::PMPI_Recv(msg.as_mut_ptr().cast(), bytes, consts::byte(), st.MPI_SOURCE, MOVE, self.comm, consts::status_ignore())
            };
            let (nu, nm) = (msg[1] as usize, msg[2] as usize);
            let mode = match msg[3] {
                0 => target::Mode::Firehose,
                _ => target::Mode::Raw,
            };
            let status = if 4 + nu + nm > msg.len() {
                target::NOT_MAPPED
            } else {
                let words: Vec<usize> = msg[4..4 + nu + nm].iter().map(|w| *w as usize).collect();
                self.attached.serve(self.win, self.bucket, mode, &words[..nu], &words[nu..])
            };
            SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let answer = [msg[0], status];
            // SAFETY: a 16-byte answer (sent eagerly by every MPI) on the service's communicator.
            unsafe { mpi::PMPI_Send(answer.as_ptr().cast(), 16, consts::byte(), st.MPI_SOURCE, REPLY, self.comm) };
        }
    }

    /// Takes the answers that arrived and advances the waiting operations (the initiator side).
    fn progress(&mut self) {
        let mut i = 0;
        while i < self.moves.len() {
            let mut flag = 0;
            let m = &mut self.moves[i];
            // SAFETY: the Move's own receive request.
            unsafe { mpi::PMPI_Test(&mut m.recv, &mut flag, consts::status_ignore()) };
            if flag == 0 {
                i += 1;
                continue;
            }
            let mut m = self.moves.swap_remove(i);
            // SAFETY: the send completed before its answer could arrive; this frees it.
            unsafe { mpi::PMPI_Wait(&mut m.send, consts::status_ignore()) };
            let status = m.answer[1];
            let answer = match status {
                target::OK_WRITABLE => Ok(true),
                target::OK_READ_ONLY => Ok(false),
                _ => Err(()),
            };
            debug_assert_eq!(m.answer[0], m.id);
            if m.handshake {
                self.answers.insert(m.id, status);
                continue;
            }
            self.table.moved(m.rank, m.id, answer);
            if answer.is_err() {
                // Operations holding the refused buckets release now, before any other covers.
                self.sweep();
            }
        }
        self.sweep();
    }

    /// Advances every waiting operation once; removes the finished ones.
    fn sweep(&mut self) {
        let mut ops = std::mem::take(&mut self.ops);
        let before = ops.len();
        ops.retain_mut(|op| !self.advance(op));
        SOURCE.sub(before - ops.len());
        ops.append(&mut self.ops);
        self.ops = ops;
    }
}

impl Op {
    fn name(&self) -> &'static str {
        match self.dir {
            Dir::Put => "sluice_put",
            Dir::Get => "sluice_get",
        }
    }
}

/// `MPI_Finalize` (after the progress thread stopped; collective): finishes this process's
/// operations while serving the others', waits until every process has, then closes the
/// window and the communicator and unpins what the firehoses held.
pub fn finish() {
    let mut g = SERVICE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mut s) = g.take() else { return };
    while !s.ops.is_empty() || !s.moves.is_empty() {
        s.serve();
        s.progress();
        std::thread::yield_now();
    }
    let mut barrier = consts::request_null();
    // SAFETY: collective on the service's communicator; every process reaches it here.
    unsafe { mpi::PMPI_Ibarrier(s.comm, &mut barrier) };
    loop {
        s.serve();
        let mut flag = 0;
        // SAFETY: the barrier's request.
        unsafe { mpi::PMPI_Test(&mut barrier, &mut flag, consts::status_ignore()) };
        if flag != 0 {
            break;
        }
        std::thread::yield_now();
    }
    s.attached.clear(s.win, s.bucket);
    // SAFETY: closes the epoch opened at init, then frees the window and the communicator
    // (collective: every process is here after the barrier).
    unsafe {
        mpi::PMPI_Win_unlock_all(s.win);
        mpi::PMPI_Win_free(&mut s.win);
        mpi::PMPI_Comm_free(&mut s.comm);
    }
    SOURCE.sub(1);
}

/// Before the MPI starts (`MPI_Init`): Open MPI's RMA component limits the regions attached
/// to a dynamic window to 64 (`osc_rdma_max_attach`); the service attaches one per bucket that
/// firehoses map, up to `M / bucket`. Raised through the environment unless the user set it.
pub fn before_mpi_init() {
    if crate::ffi::FLAVOR != "openmpi" || std::env::var_os("OMPI_MCA_osc_rdma_max_attach").is_some() {
        return;
    }
    let Ok(c) = crate::config::Config::from_env() else { return };
    if c.disable || c.firehose.m == 0 {
        return;
    }
    let regions = (c.firehose.m / c.firehose.bucket + 64).min(1 << 20);
    // Before MPI_Init, normally with no other thread running: what Open MPI reads at start.
    std::env::set_var("OMPI_MCA_osc_rdma_max_attach", regions.to_string());
}

/// `sluice_rma_strategy`: switches this process's puts and gets to `strategy` (none may be in
/// flight); returns the previous one.
pub fn set_strategy(strategy: Strategy) -> Result<Strategy, Refused> {
    let mut g = SERVICE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(s) = g.as_mut() else {
        return Err(Refused(code::ERR_NOT_INITIALIZED, "call sluice_rma_init first".into()));
    };
    if !s.ops.is_empty() {
        return Err(Refused(code::ERR_ARG, "operations are in flight".into()));
    }
    Ok(std::mem::replace(&mut s.strategy, strategy))
}

/// (pieces that found their firehoses mapped, move requests and handshakes sent) so far.
pub fn firehose_counters() -> (u64, u64) {
    SERVICE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map_or((0, 0), |s| (s.table.hits, s.table.moves + (s.next_handshake - (1 << 62))))
}

/// Move requests this process served (the finalize statistics).
pub fn served() -> u64 {
    SERVED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Firehoses other processes have mapped onto this one now (tests, `sluice_rma_state`).
pub fn firehoses_here() -> usize {
    SERVICE.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map_or(0, |s| s.attached.firehoses())
}
