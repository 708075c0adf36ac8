//! `SLUICE_PROFILE=<prefix>`: who talks to whom. Each rank counts the payload bytes and the
//! messages it sends to every other rank (world ranks), CPU traffic (host buffers) and GPU
//! traffic (device buffers, as the GPU layer classifies them) apart; at `MPI_Finalize` rank 0
//! gathers every rank's row and writes the job's communication matrix to `<prefix>.matrix` in
//! the format the mapper reads (`mapping::matrix`, docs/mapping.md).
//!
//! What is counted, on the sending side (bytes = count x type size, one message per peer):
//! - point-to-point sends (blocking, nonblocking, the send half of `MPI_Sendrecv(_replace)`),
//!   persistent sends at each `MPI_Start`/`MPI_Startall` (not at their `*_init`);
//!   `MPI_PROC_NULL` is not counted; on an intercommunicator the destination is in the remote
//!   group;
//! - the collectives whose pattern the standard fixes: `MPI_Alltoall(v,w)` (every peer its
//!   block), the neighborhood collectives (every out-neighbor its block), `MPI_Bcast` and
//!   `MPI_Scatter(v)` (the root to every other rank), `MPI_Gather(v)` (every rank to the root),
//!   with their nonblocking forms; a rank's block to itself is a local copy and not counted,
//!   nor are empty blocks;
//! - everything else that moves data (allgather(v), reductions, scans, reduce-scatters): the
//!   MPI's algorithm chooses who sends what to whom, so only the rank's own contribution is
//!   counted, as an "unattributed" total per rank (comment lines of the matrix file).
//!
//! Profiling runs in `Instrumented` mode: the exported functions' fast path is closed and every
//! call reaches `intercept::guard::call`'s instrumented branch, which calls
//! the hooks here (`intercept::profile`). Without `SLUICE_PROFILE` none of this runs: the default
//! path is unchanged.
//!
//! Counters are relaxed atomics, four per world rank (threads may call the MPI concurrently).
//! Communicator ranks are translated to world ranks once per communicator and kept in an
//! attribute (`comm_cache`: freed with the communicator).

// MPI_Aint and MPI_Count are `i64` in MPICH but `isize`/`c_long` in Open MPI.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;

use super::comm_cache::CommCache;
use crate::ffi::{consts, errclass, mpi, PROC_NULL, UNDEFINED};
use crate::mapping::matrix::{CommMatrix, Kind};

type Dt = mpi::MPI_Datatype;
type Comm = mpi::MPI_Comm;
type Req = mpi::MPI_Request;

/// Counters per peer: CPU bytes, CPU messages, GPU bytes, GPU messages.
const FIELDS: usize = 4;

struct Table {
    /// This process's rank in MPI_COMM_WORLD.
    rank: usize,
    /// `FIELDS` counters per world rank, then `FIELDS` unattributed ones (bytes, calls).
    counts: Box<[AtomicU64]>,
    prefix: String,
}

static TABLE: OnceLock<Table> = OnceLock::new();
static ON: AtomicBool = AtomicBool::new(false);

/// Each communicator's translation, computed at its first use.
static PEERS: CommCache<Peers> = CommCache::new();

/// Persistent sends by request handle: (world destination, bytes, GPU buffer), counted at each
/// start. Receives' handles are removed, so a handle the MPI reuses never counts twice.
static PERSISTENT: Mutex<Option<PersistentSends>> = Mutex::new(None);

/// A started persistent send: (world destination, bytes, GPU buffer).
type Started = (u32, u64, bool);
/// Persistent requests by handle (`None`: a receive, or a send to `MPI_PROC_NULL`).
type PersistentSends = FxHashMap<usize, Option<Started>>;

/// Whether profiling is on (set once at start-up).
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Starts profiling into `<prefix>.matrix` (MPI is initialized; from `init::start`).
pub fn start(prefix: &str) {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialized; each call writes one int.
    unsafe {
        mpi::PMPI_Comm_rank(consts::comm_world(), &mut rank);
        mpi::PMPI_Comm_size(consts::comm_world(), &mut size);
    }
    let n = size.max(1) as usize;
    let counts = (0..(n + 1) * FIELDS).map(|_| AtomicU64::new(0)).collect();
    if TABLE.set(Table { rank: rank.max(0) as usize, counts, prefix: prefix.to_string() }).is_err() {
        return;
    }
    if let Err(rc) = PEERS.create() {
        log::warn!("SLUICE_PROFILE: cannot create a communicator keyval (MPI error {rc}); ranks are translated at every call");
    }
    ON.store(true, Ordering::Relaxed);
}

/// A communicator as seen by the profiler: world ranks of the peers a call can name (the
/// group, or for an intercommunicator the remote group) and this rank's rank in it.
pub struct Peers {
    world: Vec<u32>,
    /// This process's rank in the communicator (intracommunicators; `None` for an
    /// intercommunicator, whose peers never include this process).
    rank: Option<usize>,
}

impl Peers {
    fn world(&self, r: c_int) -> Option<u32> {
        usize::try_from(r).ok().and_then(|r| self.world.get(r).copied()).filter(|&w| w != u32::MAX)
    }

    /// Records `block(i)` bytes (one message) to every peer `i` but this process, from `buf`.
    fn send_to_each(&self, buf: *const c_void, block: impl Fn(usize) -> u64) {
        let g = gpu(buf);
        for i in 0..self.world.len() {
            if Some(i) == self.rank {
                continue;
            }
            let b = block(i);
            if let (Some(w), true) = (self.world(i as c_int), b > 0) {
                add(w, b, 1, g);
            }
        }
    }
}

fn compute(comm: Comm) -> Option<Peers> {
    let (mut inter, mut rank) = (0, 0);
    // SAFETY: a group handle is a pointer (Open MPI) or an integer (MPICH): zero is a valid
    // value of both, overwritten by the MPI before use.
    let mut group: mpi::MPI_Group = unsafe { std::mem::zeroed() };
    let mut world_group = group;
    // SAFETY: `comm` is the application's communicator of a call the MPI just accepted; the
    // groups are created here and freed below; the arrays hold `n` ints.
    unsafe {
        if mpi::PMPI_Comm_test_inter(comm, &mut inter) != errclass::SUCCESS {
            return None;
        }
        let rc = if inter != 0 { mpi::PMPI_Comm_remote_group(comm, &mut group) } else { mpi::PMPI_Comm_group(comm, &mut group) };
        if rc != errclass::SUCCESS {
            return None;
        }
        mpi::PMPI_Comm_rank(comm, &mut rank);
        let mut n = 0;
        mpi::PMPI_Group_size(group, &mut n);
        let ranks: Vec<c_int> = (0..n.max(0)).collect();
        let mut out = vec![UNDEFINED; ranks.len()];
        mpi::PMPI_Comm_group(consts::comm_world(), &mut world_group);
        let ok = mpi::PMPI_Group_translate_ranks(group, n, ranks.as_ptr().cast_mut(), world_group, out.as_mut_ptr()) == errclass::SUCCESS;
        mpi::PMPI_Group_free(&mut group);
        mpi::PMPI_Group_free(&mut world_group);
        if !ok {
            return None;
        }
        let world = out.iter().map(|&w| if w >= 0 { w as u32 } else { u32::MAX }).collect();
        Some(Peers { world, rank: (inter == 0 && rank >= 0).then_some(rank as usize) })
    }
}

/// Runs `f` with `comm`'s translation (computed and attached at its first use).
fn with_peers(comm: Comm, f: impl FnOnce(&Peers)) {
    PEERS.with(comm, compute, f);
}

/// Whether `buf` lies in device memory (always false where the GPU layer is not armed).
fn gpu(buf: *const c_void) -> bool {
    crate::transfer::gpu::armed() && crate::transfer::gpu::device_range(buf as usize).is_some()
}

/// Bytes of `count` elements of `dt` (0 when unknown).
pub fn bytes(count: i64, dt: Dt) -> u64 {
    if count <= 0 {
        return 0;
    }
    let mut size: mpi::MPI_Count = 0;
    // SAFETY: only called after the MPI accepted `dt` in a successful call; writes one
    // MPI_Count.
    let rc = unsafe { mpi::PMPI_Type_size_x(dt, &mut size) };
    if rc != errclass::SUCCESS || size <= 0 {
        0
    } else {
        (count as u64).saturating_mul(size as u64)
    }
}

fn add(world: u32, bytes: u64, messages: u64, gpu: bool) {
    let Some(t) = TABLE.get() else { return };
    let base = world as usize * FIELDS + if gpu { 2 } else { 0 };
    if base + 1 >= t.counts.len() - FIELDS {
        return;
    }
    t.counts[base].fetch_add(bytes, Ordering::Relaxed);
    t.counts[base + 1].fetch_add(messages, Ordering::Relaxed);
}

/// Counts a collective's contribution whose pattern the MPI chooses.
fn unattributed(bytes: u64, gpu: bool) {
    let Some(t) = TABLE.get() else { return };
    let base = t.counts.len() - FIELDS + if gpu { 2 } else { 0 };
    t.counts[base].fetch_add(bytes, Ordering::Relaxed);
    t.counts[base + 1].fetch_add(1, Ordering::Relaxed);
}

fn in_place(p: *const c_void) -> bool {
    p == consts::in_place().cast_const()
}

/// # Safety
/// `p` is null or points to `n` readable values.
unsafe fn slice<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, n) })
}

// ---- point-to-point ------------------------------------------------------------------------

/// A send of `count` elements of `dt` from `buf` to `dest` of `comm` (after the MPI accepted it).
pub fn send(buf: *const c_void, count: i64, dt: Dt, dest: c_int, comm: Comm) {
    if dest == PROC_NULL {
        return;
    }
    with_peers(comm, |p| {
        if let Some(w) = p.world(dest) {
            add(w, bytes(count, dt), 1, gpu(buf));
        }
    });
}

fn persistent() -> std::sync::MutexGuard<'static, Option<PersistentSends>> {
    PERSISTENT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A persistent send was created in `*request` (after the MPI accepted it).
///
/// # Safety
/// `request` is the application's request argument of a successful `MPI_*send_init` call.
pub unsafe fn send_init(buf: *const c_void, count: i64, dt: Dt, dest: c_int, comm: Comm, request: *const Req) {
    if request.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let key = crate::ffi::request_key(unsafe { *request });
    let mut entry = None;
    if dest != PROC_NULL {
        with_peers(comm, |p| entry = p.world(dest).map(|w| (w, bytes(count, dt), gpu(buf))));
    }
    persistent().get_or_insert_with(FxHashMap::default).insert(key, entry);
}

/// A persistent receive was created in `*request`, or a request is being freed: forgets what
/// a send of the same handle recorded.
///
/// # Safety
/// `request` is null or the application's request argument.
pub unsafe fn forget(request: *const Req) {
    if request.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let key = crate::ffi::request_key(unsafe { *request });
    if let Some(m) = persistent().as_mut() {
        m.remove(&key);
    }
}

/// The persistent sends among `requests` (read before their start), to count once it succeeds.
///
/// # Safety
/// `requests` is null or points to `n` requests.
pub unsafe fn started(requests: *const Req, n: usize) -> Vec<Started> {
    // SAFETY: the caller's contract.
    let Some(reqs) = (unsafe { slice(requests, n) }) else { return Vec::new() };
    let g = persistent();
    let Some(m) = g.as_ref() else { return Vec::new() };
    reqs.iter().filter_map(|&r| m.get(&crate::ffi::request_key(r)).copied().flatten()).collect()
}

/// Counts the persistent sends [`started`] found.
pub fn count_started(sends: Vec<Started>) {
    for (w, b, g) in sends {
        add(w, b, 1, g);
    }
}

// ---- collectives of fixed pattern ----------------------------------------------------------

/// `MPI_Bcast` (`count` elements of `dt`) and `MPI_Scatter` (`count` per peer): the root sends
/// every other rank its block.
pub fn rooted_out(buf: *const c_void, count: i64, dt: Dt, root: c_int, comm: Comm) {
    let b = bytes(count, dt);
    rooted_out_each(buf, root, comm, |_| b);
}

/// `MPI_Scatterv`: the root sends rank i `counts[i]` elements of `dt`.
///
/// # Safety
/// On the root `counts` holds one count per peer.
pub unsafe fn scatterv(buf: *const c_void, counts: *const c_int, dt: Dt, root: c_int, comm: Comm) {
    let size = bytes(1, dt);
    rooted_out_each(buf, root, comm, |i| {
        // SAFETY: the caller's contract (only read on the root, for i < peers).
        let c = if counts.is_null() { 0 } else { unsafe { *counts.add(i) } };
        size.saturating_mul(c.max(0) as u64)
    });
}

fn rooted_out_each(buf: *const c_void, root: c_int, comm: Comm, block: impl Fn(usize) -> u64) {
    with_peers(comm, |p| {
        let sending = match p.rank {
            Some(me) => root >= 0 && me == root as usize,
            None => root == mpi::MPI_ROOT as c_int,
        };
        if sending {
            p.send_to_each(buf, block);
        }
    });
}

/// `MPI_Gather(v)`: every rank but the root sends the root its block.
pub fn gather(sendbuf: *const c_void, count: i64, dt: Dt, root: c_int, comm: Comm) {
    with_peers(comm, |p| {
        if root < 0 || p.rank == Some(root as usize) || in_place(sendbuf) {
            return;
        }
        let b = bytes(count, dt);
        if let (Some(w), true) = (p.world(root), b > 0) {
            add(w, b, 1, gpu(sendbuf));
        }
    });
}

/// `MPI_Alltoall` and `MPI_Neighbor_alltoall`/`allgather` with one block size for every peer.
pub fn alltoall(sendbuf: *const c_void, sc: c_int, st: Dt, rb: *const c_void, rc: c_int, rt: Dt, comm: Comm) {
    let (buf, b) = if in_place(sendbuf) { (rb, bytes(rc as i64, rt)) } else { (sendbuf, bytes(sc as i64, st)) };
    every_peer(buf, comm, |_| b);
}

/// `MPI_Alltoallv`.
///
/// # Safety
/// The count arrays hold one entry per peer (the used one: `recvcounts` for `MPI_IN_PLACE`).
pub unsafe fn alltoallv(sendbuf: *const c_void, sc: *const c_int, st: Dt, rb: *const c_void, rc: *const c_int, rt: Dt, comm: Comm) {
    let (buf, counts, size) = if in_place(sendbuf) { (rb, rc, bytes(1, rt)) } else { (sendbuf, sc, bytes(1, st)) };
    if counts.is_null() {
        return;
    }
    // SAFETY: the caller's contract (i < peers).
    every_peer(buf, comm, |i| size.saturating_mul(unsafe { *counts.add(i) }.max(0) as u64));
}

/// `MPI_Alltoallw`.
///
/// # Safety
/// The count and type arrays hold one entry per peer.
pub unsafe fn alltoallw(
    sendbuf: *const c_void,
    sc: *const c_int,
    st: *const Dt,
    rb: *const c_void,
    rc: *const c_int,
    rt: *const Dt,
    comm: Comm,
) {
    let (buf, counts, types) = if in_place(sendbuf) { (rb, rc, rt) } else { (sendbuf, sc, st) };
    if counts.is_null() || types.is_null() {
        return;
    }
    // SAFETY: the caller's contract (i < peers).
    every_peer(buf, comm, |i| unsafe { bytes(*counts.add(i) as i64, *types.add(i)) });
}

fn every_peer(buf: *const c_void, comm: Comm, block: impl Fn(usize) -> u64) {
    with_peers(comm, |p| p.send_to_each(buf, block));
}

/// Neighborhood collectives: out-neighbor slot j gets `block(j)` bytes.
pub fn neighbors(buf: *const c_void, comm: Comm, block: impl Fn(usize) -> u64) {
    let Some(dests) = crate::protocol::coll::neighbor::out_neighbors(comm) else { return };
    with_peers(comm, |p| {
        let g = gpu(buf);
        for (j, &d) in dests.iter().enumerate() {
            if d == PROC_NULL {
                continue;
            }
            let b = block(j);
            if let (Some(w), true) = (p.world(d), b > 0) {
                add(w, b, 1, g);
            }
        }
    });
}

/// `MPI_Neighbor_allgather(v)`, `MPI_Neighbor_alltoall`: `count` elements of `dt` to every
/// out-neighbor.
pub fn neighbor_same(buf: *const c_void, count: i64, dt: Dt, comm: Comm) {
    let b = bytes(count, dt);
    neighbors(buf, comm, |_| b);
}

/// The w-variants' per-slot bytes.
///
/// # Safety
/// `counts` and `types` are null or hold one entry per out-neighbor slot.
pub unsafe fn neighbor_w(buf: *const c_void, counts: *const c_int, types: *const Dt, comm: Comm) {
    if counts.is_null() || types.is_null() {
        return;
    }
    // SAFETY: the caller's contract (j < out-degree).
    neighbors(buf, comm, |j| unsafe { bytes(*counts.add(j) as i64, *types.add(j)) });
}

/// The v-variant's per-slot bytes.
///
/// # Safety
/// `counts` is null or holds one entry per out-neighbor slot.
pub unsafe fn neighbor_v(buf: *const c_void, counts: *const c_int, dt: Dt, comm: Comm) {
    if counts.is_null() {
        return;
    }
    let size = bytes(1, dt);
    // SAFETY: the caller's contract (j < out-degree).
    neighbors(buf, comm, |j| size.saturating_mul(unsafe { *counts.add(j) }.max(0) as u64));
}

// ---- collectives whose pattern the MPI chooses ----------------------------------------------

/// A reduction, scan or allgather contributing `count` elements of `dt` from `buf`.
pub fn contribution(buf: *const c_void, count: i64, dt: Dt) {
    unattributed(bytes(count, dt), gpu(buf));
}

/// `MPI_Allgather`: the rank's block (`MPI_IN_PLACE`: its block of the receive buffer).
pub fn allgather(sb: *const c_void, sc: c_int, st: Dt, rb: *const c_void, rc: c_int, rt: Dt) {
    if in_place(sb) {
        contribution(rb, rc as i64, rt)
    } else {
        contribution(sb, sc as i64, st)
    }
}

/// `MPI_Allgatherv`: the rank's block (`MPI_IN_PLACE`: `recvcounts[rank]`).
///
/// # Safety
/// `rcs` holds one count per rank of `comm`.
pub unsafe fn allgatherv(sb: *const c_void, sc: c_int, st: Dt, rb: *const c_void, rcs: *const c_int, rt: Dt, comm: Comm) {
    if !in_place(sb) {
        return contribution(sb, sc as i64, st);
    }
    let mut rank = -1;
    // SAFETY: a valid communicator (the MPI accepted the call); writes one int.
    unsafe { mpi::PMPI_Comm_rank(comm, &mut rank) };
    if rank >= 0 && !rcs.is_null() {
        // SAFETY: the caller's contract.
        contribution(rb, unsafe { *rcs.add(rank as usize) } as i64, rt);
    }
}

/// `MPI_Reduce_scatter`: the rank reduces `sum(recvcounts)` elements.
///
/// # Safety
/// `rcs` holds one count per rank of `comm`.
pub unsafe fn reduce_scatter(sb: *const c_void, rb: *const c_void, rcs: *const c_int, dt: Dt, comm: Comm) {
    let mut n = 0;
    // SAFETY: a valid communicator; writes one int.
    unsafe { mpi::PMPI_Comm_size(comm, &mut n) };
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { slice(rcs, n.max(0) as usize) }) else { return };
    let total: i64 = c.iter().map(|&x| x.max(0) as i64).sum();
    contribution(if in_place(sb) { rb } else { sb }, total, dt);
}

/// `MPI_Reduce_scatter_block`: `recvcount` elements per rank.
pub fn reduce_scatter_block(sb: *const c_void, rb: *const c_void, rc: c_int, dt: Dt, comm: Comm) {
    let mut n = 0;
    // SAFETY: a valid communicator; writes one int.
    unsafe { mpi::PMPI_Comm_size(comm, &mut n) };
    contribution(if in_place(sb) { rb } else { sb }, rc as i64 * n.max(0) as i64, dt);
}

/// A reduction's buffer: `recvbuf` for `MPI_IN_PLACE`.
pub fn reduce_buf(sb: *const c_void, rb: *const c_void) -> *const c_void {
    if in_place(sb) {
        rb
    } else {
        sb
    }
}

// ---- finalize -------------------------------------------------------------------------------

/// Gathers every rank's counters to rank 0 on a private duplicate of MPI_COMM_WORLD, which
/// writes `<prefix>.matrix` (collective: from `MPI_Finalize`, every rank profiling).
pub fn finish() {
    if !ON.swap(false, Ordering::Relaxed) {
        return;
    }
    let Some(t) = TABLE.get() else { return };
    let mine: Vec<u64> = t.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let len = mine.len();
    let ranks = len / FIELDS - 1;
    let mut comm = consts::comm_null();
    let mut all = vec![0u64; if t.rank == 0 { len * ranks } else { 0 }];
    // SAFETY: collective over MPI_COMM_WORLD (every rank profiles and is in MPI_Finalize);
    // `mine` holds `len` u64 values, on rank 0 `all` holds `len` per rank; MPI_UINT64_T is u64.
    let rc = unsafe {
        let mut rc = mpi::PMPI_Comm_dup(consts::comm_world(), &mut comm);
        if rc == errclass::SUCCESS {
            mpi::PMPI_Comm_set_errhandler(comm, consts::errors_return());
            rc = mpi::PMPI_Gather(
                mine.as_ptr().cast(),
                len as c_int,
                consts::uint64(),
                all.as_mut_ptr().cast(),
                len as c_int,
                consts::uint64(),
                0,
                comm,
            );
            mpi::PMPI_Comm_free(&mut comm);
        }
        rc
    };
    PEERS.free();
    if rc != errclass::SUCCESS {
        log::error!("SLUICE_PROFILE: gathering the communication matrix failed (MPI error {rc}); no file written");
        return;
    }
    if t.rank != 0 {
        return;
    }
    let path = format!("{}.matrix", t.prefix);
    match std::fs::write(&path, matrix_text(&all, ranks)) {
        Ok(()) => log::info!("SLUICE_PROFILE: communication matrix of {ranks} ranks written to {path}"),
        Err(e) => log::error!("SLUICE_PROFILE: cannot write the communication matrix to {path}: {e}"),
    }
}

/// The matrix file from every rank's counters (`(ranks + 1) * FIELDS` each, rank order).
pub fn matrix_text(all: &[u64], ranks: usize) -> String {
    let len = (ranks + 1) * FIELDS;
    let mut m = CommMatrix::new(ranks.max(1));
    let mut notes = String::new();
    for from in 0..ranks {
        let row = &all[from * len..(from + 1) * len];
        for to in 0..ranks {
            let c = &row[to * FIELDS..(to + 1) * FIELDS];
            m.add(Kind::Cpu, from, to, c[0] as f64, c[1]);
            m.add(Kind::Gpu, from, to, c[2] as f64, c[3]);
        }
        let u = &row[ranks * FIELDS..];
        if u.iter().any(|&v| v > 0) {
            notes += &format!("# unattributed {from} cpu {} {} gpu {} {}\n", u[0], u[1], u[2], u[3]);
        }
    }
    // The format's first line stays first; the origin follows as a comment.
    let body = m.to_text();
    let (first, rest) = body.split_once('\n').unwrap_or((&body, ""));
    let mut text = format!(
        "{first}\n# written by sluice {} (SLUICE_PROFILE, {} build): bytes and messages each rank sent to each other\n{rest}",
        env!("CARGO_PKG_VERSION"),
        crate::ffi::FLAVOR
    );
    if !notes.is_empty() {
        text += "# collectives whose pattern the MPI chooses (allgather(v), reductions, scans), per rank:\n";
        text += "# unattributed RANK cpu BYTES CALLS gpu BYTES CALLS\n";
        text += &notes;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_text_is_read_back_by_the_mapper() {
        let ranks = 3;
        let len = (ranks + 1) * FIELDS;
        let mut all = vec![0u64; len * ranks];
        all[FIELDS] = 100; // 0 -> 1 cpu
        all[FIELDS + 1] = 2;
        all[len + 2 * FIELDS + 2] = 64; // 1 -> 2 gpu
        all[len + 2 * FIELDS + 3] = 1;
        all[2 * len + 2 * FIELDS] = 9; // 2 -> 2: not between ranks
        all[2 * len + 2 * FIELDS + 1] = 1;
        all[2 * len + ranks * FIELDS] = 80; // 2: unattributed
        all[2 * len + ranks * FIELDS + 1] = 1;
        let text = matrix_text(&all, ranks);
        let m = CommMatrix::parse(&text).unwrap();
        assert_eq!(m.ranks(), 3);
        assert_eq!(m.get(Kind::Cpu, 0, 1).bytes, 100.0);
        assert_eq!(m.get(Kind::Cpu, 0, 1).messages, 2);
        assert_eq!(m.get(Kind::Gpu, 1, 2).bytes, 64.0);
        assert_eq!(m.iter().count(), 2);
        assert!(text.contains("# unattributed 2 cpu 80 1 gpu 0 0"), "{text}");
    }
}
