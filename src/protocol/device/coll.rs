//! Data-movement collectives with device buffers: the send and receive arguments are staged
//! (their spans follow each call's counts, displacements, root and topology), the collective
//! protocol's handler runs on the host copies, and the receive side goes back to the device
//! when the call (blocking) or its request (nonblocking, [`super::pending`]) completes.
//!
//! The collectives with one count and type per side ([`run_blocks`]: Bcast, Gather, Scatter,
//! Allgather, Alltoall, the neighbor forms of the last two) may stage in the packed form, each
//! block then a run of predefined elements; the v/w forms copy spans (their displacements count
//! extents of the application's type).
//!
//! The reductions and scans (intercepted for this alone) stage the same way and call the MPI on
//! the host copies (spans: a user-defined operation must get the application's type).
//!
//! Intercommunicators with device buffers are refused (`MPI_ERR_COMM`, naming the call): their
//! argument significance differs and is not served yet.

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]
// MPI_Aint and MPI_Count are `i64` in MPICH but `isize`/`c_long` in Open MPI: the casts that are
// no-ops for one flavor are needed by the other.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{c_int, c_void};

use super::{flush_all, host_args, host_or, pending, stage, stage_blocks, HostArgs, Span, Staged};
use crate::errors;
use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::coll::{alltoall, neighbor, rooted};
use crate::transfer::gpu;

type Dt = mpi::MPI_Datatype;
type Comm = mpi::MPI_Comm;
type Req = mpi::MPI_Request;

/// Size of and rank in an intracommunicator (`None`: an intercommunicator or a failed query).
fn intra(comm: Comm) -> Option<(i64, i64)> {
    let (mut inter, mut size, mut rank) = (0, 0, 0);
    // SAFETY: each call writes one int; a bad handle fails the query.
    let ok = unsafe {
        comm != consts::comm_null()
            && mpi::PMPI_Comm_test_inter(comm, &mut inter) == errclass::SUCCESS
            && inter == 0
            && mpi::PMPI_Comm_size(comm, &mut size) == errclass::SUCCESS
            && mpi::PMPI_Comm_rank(comm, &mut rank) == errclass::SUCCESS
    };
    ok.then_some((size as i64, rank as i64))
}

/// `count * n` elements of `dt`.
fn uniform(count: c_int, n: i64, dt: Dt) -> Option<Span> {
    Span::of(0, (count as i64).checked_mul(n)?, dt)
}

/// Blocks `counts[i]` of `dt` at `displs[i]` extents, `i < n`.
fn varying(counts: *const c_int, displs: *const c_int, n: i64, dt: Dt) -> Option<Span> {
    if counts.is_null() || displs.is_null() || n < 0 {
        return None;
    }
    let extent = crate::protocol::datatype::bounds(dt)?.extent;
    let mut span = Span::EMPTY;
    for i in 0..n as usize {
        // SAFETY: the application's arrays of (at least) `n` entries, as MPI requires.
        let (c, d) = unsafe { (*counts.add(i), *displs.add(i)) };
        span = span.union(Span::of((d as i64).checked_mul(extent)?, c.into(), dt)?);
    }
    Some(span)
}

/// Blocks `counts[i]` of `types[i]` at `displs[i]` bytes, `i < n` (the `w` forms).
fn typed<D: Copy + TryInto<i64>>(counts: *const c_int, displs: *const D, types: *const Dt, n: i64) -> Option<Span> {
    if counts.is_null() || displs.is_null() || types.is_null() || n < 0 {
        return None;
    }
    let mut span = Span::EMPTY;
    for i in 0..n as usize {
        // SAFETY: the application's arrays of (at least) `n` entries, as MPI requires.
        let (c, d, t) = unsafe { (*counts.add(i), *displs.add(i), *types.add(i)) };
        span = span.union(Span::of(d.try_into().ok()?, c.into(), t)?);
    }
    Some(span)
}

/// This rank's in- and out-degree in `comm`'s topology.
fn degrees(comm: Comm) -> Option<(i64, i64)> {
    neighbor::degrees(comm).map(|(i, o)| (i as i64, o as i64))
}

/// Runs one collective with its send and receive arguments staged. `request` null: blocking
/// (outputs copied back before returning); else the staged copies live with the request.
///
/// # Safety
/// The application's arguments; `f` is the host call on (possibly) replaced buffer addresses.
unsafe fn run(
    call: &'static str,
    comm: Comm,
    sb: *const c_void,
    send_span: impl FnOnce() -> Option<Span>,
    rb: *mut c_void,
    recv_span: impl FnOnce() -> Option<Span>,
    request: *mut Req,
    f: impl FnOnce(*const c_void, *mut c_void) -> c_int,
) -> c_int {
    if let Some(rc) = refuse_inter(call, comm, sb, rb.cast_const()) {
        return rc;
    }
    // SAFETY: forwarded contract.
    let s = match unsafe { stage(call, sb, send_span, false, comm) } {
        Ok(s) => s,
        Err(rc) => return rc,
    };
    // SAFETY: forwarded contract.
    let r = match unsafe { stage(call, rb, recv_span, true, comm) } {
        Ok(r) => r,
        Err(rc) => return rc,
    };
    let rc = f(host_or(&s, sb), host_or(&r, rb));
    // SAFETY: forwarded contract.
    unsafe { finish(call, comm, s, r, rc, request) }
}

/// Ends a staged collective whose host call returned `rc`: a blocking one copies its outputs
/// back, a nonblocking one leaves its staged copies with the request.
///
/// # Safety
/// `request` is null or the request the host call wrote.
unsafe fn finish(call: &'static str, comm: Comm, s: Option<Staged>, r: Option<Staged>, rc: c_int, request: *mut Req) -> c_int {
    let mut stages: Vec<_> = s.into_iter().chain(r).collect();
    if request.is_null() {
        return flush_all(call, &mut stages, rc, comm);
    }
    if rc == errclass::SUCCESS && !stages.is_empty() {
        // SAFETY: the host call wrote the request.
        pending::track(call, unsafe { *request }, stages, false);
    }
    rc
}

/// Defines a blocking collective and its nonblocking form over [`run`]: `send(expr)` and
/// `recv(expr)` give the spans (evaluated only for device buffers).
macro_rules! pair {
    ($name:ident / $iname:ident, $call:literal / $icall:literal, $host:path, $ihost:path,
     ($($a:ident: $t:ty),*), [$sb:ident, $rb:ident, $comm:ident], send($sspan:expr), recv($rspan:expr)) => {
        #[doc = concat!("`", $call, "` with device buffers or not.")]
        ///
        /// # Safety
        /// As the MPI function.
        pub unsafe fn $name($($a: $t),*) -> c_int {
            if !gpu::armed() {
                // SAFETY: forwarded contract.
                return unsafe { $host($($a),*) };
            }
            // SAFETY: forwarded contract; the host call gets the staged copies.
            unsafe { run($call, $comm, $sb, || $sspan, $rb, || $rspan, std::ptr::null_mut(), |$sb, $rb| $host($($a),*)) }
        }

        #[doc = concat!("`", $icall, "` with device buffers or not.")]
        ///
        /// # Safety
        /// As the MPI function.
        pub unsafe fn $iname($($a: $t,)* request: *mut Req) -> c_int {
            if !gpu::armed() {
                // SAFETY: forwarded contract.
                return unsafe { $ihost($($a,)* request) };
            }
            // SAFETY: forwarded contract; the host call gets the staged copies.
            unsafe { run($icall, $comm, $sb, || $sspan, $rb, || $rspan, request, |$sb, $rb| $ihost($($a,)* request)) }
        }
    };
}

/// Refuses device buffers on an intercommunicator (their argument significance differs); `None`
/// where the call may go on.
fn refuse_inter(call: &str, comm: Comm, sb: *const c_void, rb: *const c_void) -> Option<c_int> {
    let device = |p: *const c_void| p != consts::in_place().cast_const() && gpu::device_range(p as usize).is_some();
    if (device(sb) || device(rb)) && intra(comm).is_none() {
        let msg = format!("{call}: device buffers in collectives on intercommunicators are not supported");
        return Some(errors::raise(comm, errclass::ERR_COMM, &msg));
    }
    None
}

/// [`run`] for the collectives whose send and receive arguments are blocks of one count and
/// type each (`*blocks`: how many blocks the argument holds on this rank, asked only for device
/// buffers): such arguments may be staged in the packed form ([`stage_blocks`]), so `f` gets
/// each side's whole host arguments.
///
/// # Safety
/// As [`run`].
unsafe fn run_blocks(
    call: &'static str,
    comm: Comm,
    (sb, sc, st): (*const c_void, c_int, Dt),
    sblocks: impl FnOnce() -> Option<i64>,
    (rb, rc, rt): (*mut c_void, c_int, Dt),
    rblocks: impl FnOnce() -> Option<i64>,
    request: *mut Req,
    f: impl FnOnce(HostArgs, HostArgs) -> c_int,
) -> c_int {
    if let Some(rc) = refuse_inter(call, comm, sb, rb.cast_const()) {
        return rc;
    }
    // SAFETY: forwarded contract.
    let s = match unsafe { stage_blocks(call, sb, sc, st, sblocks, false, comm) } {
        Ok(s) => s,
        Err(rc) => return rc,
    };
    // SAFETY: forwarded contract.
    let r = match unsafe { stage_blocks(call, rb, rc, rt, rblocks, true, comm) } {
        Ok(r) => r,
        Err(rc) => return rc,
    };
    let rc = f(host_args(&s, sb, sc.into(), st), host_args(&r, rb, rc.into(), rt));
    // SAFETY: forwarded contract.
    unsafe { finish(call, comm, s, r, rc, request) }
}

/// [`pair!`] for the block collectives over [`run_blocks`]: `send(n)` and `recv(n)` give how
/// many blocks each side holds.
macro_rules! pair_blocks {
    ($name:ident / $iname:ident, $call:literal / $icall:literal, $host:path, $ihost:path,
     ($($a:ident: $t:ty),*), [$sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident],
     send($sn:expr), recv($rn:expr)) => {
        #[doc = concat!("`", $call, "` with device buffers or not.")]
        ///
        /// # Safety
        /// As the MPI function.
        pub unsafe fn $name($($a: $t),*) -> c_int {
            if !gpu::armed() {
                // SAFETY: forwarded contract.
                return unsafe { $host($($a),*) };
            }
            // SAFETY: forwarded contract; the host call gets the staged copies.
            unsafe {
                run_blocks($call, $comm, ($sb, $sc, $st), || $sn, ($rb, $rc, $rt), || $rn, std::ptr::null_mut(), |s, r| {
                    let ($sb, $sc, $st, $rb, $rc, $rt) = (s.buf.cast_const(), s.count as c_int, s.dt, r.buf, r.count as c_int, r.dt);
                    $host($($a),*)
                })
            }
        }

        #[doc = concat!("`", $icall, "` with device buffers or not.")]
        ///
        /// # Safety
        /// As the MPI function.
        pub unsafe fn $iname($($a: $t,)* request: *mut Req) -> c_int {
            if !gpu::armed() {
                // SAFETY: forwarded contract.
                return unsafe { $ihost($($a,)* request) };
            }
            // SAFETY: forwarded contract; the host call gets the staged copies.
            unsafe {
                run_blocks($icall, $comm, ($sb, $sc, $st), || $sn, ($rb, $rc, $rt), || $rn, request, |s, r| {
                    let ($sb, $sc, $st, $rb, $rc, $rt) = (s.buf.cast_const(), s.count as c_int, s.dt, r.buf, r.count as c_int, r.dt);
                    $ihost($($a,)* request)
                })
            }
        }
    };
}

/// `MPI_Bcast` with a device buffer or not (staged as a receive everywhere: the root's copy
/// comes back unchanged; packed form as [`run_blocks`]).
///
/// # Safety
/// As `MPI_Bcast`.
pub unsafe fn bcast(buf: *mut c_void, count: c_int, t: Dt, root: c_int, comm: Comm) -> c_int {
    if !gpu::armed() {
        // SAFETY: forwarded contract.
        return unsafe { rooted::bcast(buf, count, t, root, comm) };
    }
    // SAFETY: forwarded contract.
    unsafe {
        run_blocks(
            "MPI_Bcast",
            comm,
            (std::ptr::null(), 0, t),
            || None,
            (buf, count, t),
            || Some(1),
            std::ptr::null_mut(),
            |_, b| rooted::bcast(b.buf, b.count as c_int, b.dt, root, comm),
        )
    }
}

/// `MPI_Ibcast` with a device buffer or not.
///
/// # Safety
/// As `MPI_Ibcast`.
pub unsafe fn ibcast(buf: *mut c_void, count: c_int, t: Dt, root: c_int, comm: Comm, request: *mut Req) -> c_int {
    if !gpu::armed() {
        // SAFETY: forwarded contract.
        return unsafe { rooted::ibcast(buf, count, t, root, comm, request) };
    }
    // SAFETY: forwarded contract.
    unsafe {
        run_blocks(
            "MPI_Ibcast",
            comm,
            (std::ptr::null(), 0, t),
            || None,
            (buf, count, t),
            || Some(1),
            request,
            |_, b| rooted::ibcast(b.buf, b.count as c_int, b.dt, root, comm, request),
        )
    }
}

/// Whether this rank is `root` of `comm`.
fn is_root(comm: Comm, root: c_int) -> bool {
    intra(comm).is_some_and(|(_, rank)| rank == root as i64)
}

/// Processes in `comm` (0 for a failed query).
fn size(comm: Comm) -> i64 {
    intra(comm).map_or(0, |(n, _)| n)
}

pair_blocks!(gather / igather, "MPI_Gather" / "MPI_Igather", rooted::gather, rooted::igather,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, root: c_int, comm: Comm),
    [sb, sc, st, rb, rc, rt, comm],
    send(Some(1)),
    recv(Some(if is_root(comm, root) { size(comm) } else { 0 })));

pair!(gatherv / igatherv, "MPI_Gatherv" / "MPI_Igatherv", rooted::gatherv, rooted::igatherv,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, root: c_int, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, sc.into(), st)),
    recv(if is_root(comm, root) { varying(rcs, rds, size(comm), rt) } else { Some(Span::EMPTY) }));

pair_blocks!(scatter / iscatter, "MPI_Scatter" / "MPI_Iscatter", rooted::scatter, rooted::iscatter,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, root: c_int, comm: Comm),
    [sb, sc, st, rb, rc, rt, comm],
    send(Some(if is_root(comm, root) { size(comm) } else { 0 })),
    recv(Some(1)));

pair!(scatterv / iscatterv, "MPI_Scatterv" / "MPI_Iscatterv", rooted::scatterv, rooted::iscatterv,
    (sb: *const c_void, scs: *const c_int, sds: *const c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, root: c_int, comm: Comm),
    [sb, rb, comm],
    send(if is_root(comm, root) { varying(scs, sds, size(comm), st) } else { Some(Span::EMPTY) }),
    recv(Span::of(0, rc.into(), rt)));

pair_blocks!(allgather / iallgather, "MPI_Allgather" / "MPI_Iallgather", alltoall::allgather, alltoall::iallgather,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm),
    [sb, sc, st, rb, rc, rt, comm],
    send(Some(1)),
    recv(Some(size(comm))));

pair!(allgatherv / iallgatherv, "MPI_Allgatherv" / "MPI_Iallgatherv", alltoall::allgatherv, alltoall::iallgatherv,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, sc.into(), st)),
    recv(varying(rcs, rds, size(comm), rt)));

pair_blocks!(alltoall / ialltoall, "MPI_Alltoall" / "MPI_Ialltoall", alltoall::alltoall, alltoall::ialltoall,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm),
    [sb, sc, st, rb, rc, rt, comm],
    send(Some(size(comm))),
    recv(Some(size(comm))));

pair!(alltoallv / ialltoallv, "MPI_Alltoallv" / "MPI_Ialltoallv", alltoall::alltoallv, alltoall::ialltoallv,
    (sb: *const c_void, scs: *const c_int, sds: *const c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, comm: Comm),
    [sb, rb, comm],
    send(varying(scs, sds, size(comm), st)),
    recv(varying(rcs, rds, size(comm), rt)));

pair!(alltoallw / ialltoallw, "MPI_Alltoallw" / "MPI_Ialltoallw", alltoall::alltoallw, alltoall::ialltoallw,
    (sb: *const c_void, scs: *const c_int, sds: *const c_int, sts: *const Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rts: *const Dt, comm: Comm),
    [sb, rb, comm],
    send(typed(scs, sds, sts, size(comm))),
    recv(typed(rcs, rds, rts, size(comm))));

pair_blocks!(neighbor_allgather / ineighbor_allgather, "MPI_Neighbor_allgather" / "MPI_Ineighbor_allgather",
    neighbor::neighbor_allgather, neighbor::ineighbor_allgather,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm),
    [sb, sc, st, rb, rc, rt, comm],
    send(Some(1)),
    recv(degrees(comm).map(|(i, _)| i)));

pair!(neighbor_allgatherv / ineighbor_allgatherv, "MPI_Neighbor_allgatherv" / "MPI_Ineighbor_allgatherv",
    neighbor::neighbor_allgatherv, neighbor::ineighbor_allgatherv,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, sc.into(), st)),
    recv(degrees(comm).and_then(|(i, _)| varying(rcs, rds, i, rt))));

pair_blocks!(neighbor_alltoall / ineighbor_alltoall, "MPI_Neighbor_alltoall" / "MPI_Ineighbor_alltoall",
    neighbor::neighbor_alltoall, neighbor::ineighbor_alltoall,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm),
    [sb, sc, st, rb, rc, rt, comm],
    send(degrees(comm).map(|(_, o)| o)),
    recv(degrees(comm).map(|(i, _)| i)));

pair!(neighbor_alltoallv / ineighbor_alltoallv, "MPI_Neighbor_alltoallv" / "MPI_Ineighbor_alltoallv",
    neighbor::neighbor_alltoallv, neighbor::ineighbor_alltoallv,
    (sb: *const c_void, scs: *const c_int, sds: *const c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, comm: Comm),
    [sb, rb, comm],
    send(degrees(comm).and_then(|(_, o)| varying(scs, sds, o, st))),
    recv(degrees(comm).and_then(|(i, _)| varying(rcs, rds, i, rt))));

pair!(neighbor_alltoallw / ineighbor_alltoallw, "MPI_Neighbor_alltoallw" / "MPI_Ineighbor_alltoallw",
    neighbor::neighbor_alltoallw, neighbor::ineighbor_alltoallw,
    (sb: *const c_void, scs: *const c_int, sds: *const mpi::MPI_Aint, sts: *const Dt, rb: *mut c_void, rcs: *const c_int, rds: *const mpi::MPI_Aint, rts: *const Dt, comm: Comm),
    [sb, rb, comm],
    send(degrees(comm).and_then(|(_, o)| typed(scs, sds, sts, o))),
    recv(degrees(comm).and_then(|(i, _)| typed(rcs, rds, rts, i))));

/// The elements a reduce-scatter reduces in all: the sum of `counts` over `comm`'s ranks, and
/// this rank's share.
fn scatter_counts(counts: *const c_int, comm: Comm) -> Option<(i64, i64)> {
    let (n, rank) = intra(comm)?;
    if counts.is_null() {
        return None;
    }
    // SAFETY: the application's array of one count per rank, as MPI requires.
    let c = unsafe { std::slice::from_raw_parts(counts, n as usize) };
    Some((c.iter().map(|&x| x as i64).sum(), c[rank as usize] as i64))
}

/// Whether `sb` is `MPI_IN_PLACE` (the receive buffer then holds the input too).
fn in_place(sb: *const c_void) -> bool {
    sb == consts::in_place().cast_const()
}

// Reductions: the MPI reduces on the host copies (a user-defined operation gets host memory).
pair!(reduce / ireduce, "MPI_Reduce" / "MPI_Ireduce", next::MPI_Reduce, next::MPI_Ireduce,
    (sb: *const c_void, rb: *mut c_void, count: c_int, dt: Dt, op: mpi::MPI_Op, root: c_int, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, count.into(), dt)),
    recv(if is_root(comm, root) { Span::of(0, count.into(), dt) } else { Some(Span::EMPTY) }));

pair!(allreduce / iallreduce, "MPI_Allreduce" / "MPI_Iallreduce", next::MPI_Allreduce, next::MPI_Iallreduce,
    (sb: *const c_void, rb: *mut c_void, count: c_int, dt: Dt, op: mpi::MPI_Op, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, count.into(), dt)),
    recv(Span::of(0, count.into(), dt)));

pair!(scan / iscan, "MPI_Scan" / "MPI_Iscan", next::MPI_Scan, next::MPI_Iscan,
    (sb: *const c_void, rb: *mut c_void, count: c_int, dt: Dt, op: mpi::MPI_Op, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, count.into(), dt)),
    recv(Span::of(0, count.into(), dt)));

pair!(exscan / iexscan, "MPI_Exscan" / "MPI_Iexscan", next::MPI_Exscan, next::MPI_Iexscan,
    (sb: *const c_void, rb: *mut c_void, count: c_int, dt: Dt, op: mpi::MPI_Op, comm: Comm),
    [sb, rb, comm],
    send(Span::of(0, count.into(), dt)),
    recv(Span::of(0, count.into(), dt)));

pair!(reduce_scatter_block / ireduce_scatter_block, "MPI_Reduce_scatter_block" / "MPI_Ireduce_scatter_block",
    next::MPI_Reduce_scatter_block, next::MPI_Ireduce_scatter_block,
    (sb: *const c_void, rb: *mut c_void, rc: c_int, dt: Dt, op: mpi::MPI_Op, comm: Comm),
    [sb, rb, comm],
    send(uniform(rc, size(comm), dt)),
    recv(if in_place(sb) { uniform(rc, size(comm), dt) } else { Span::of(0, rc.into(), dt) }));

pair!(reduce_scatter / ireduce_scatter, "MPI_Reduce_scatter" / "MPI_Ireduce_scatter",
    next::MPI_Reduce_scatter, next::MPI_Ireduce_scatter,
    (sb: *const c_void, rb: *mut c_void, rcs: *const c_int, dt: Dt, op: mpi::MPI_Op, comm: Comm),
    [sb, rb, comm],
    send(scatter_counts(rcs, comm).and_then(|(all, _)| Span::of(0, all, dt))),
    recv(scatter_counts(rcs, comm).and_then(|(all, mine)| Span::of(0, if in_place(sb) { all } else { mine }, dt))));

/// `MPI_Reduce_local` with device buffers or not (errors on `MPI_COMM_WORLD`: no communicator).
///
/// # Safety
/// As `MPI_Reduce_local`.
pub unsafe fn reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, dt: Dt, op: mpi::MPI_Op) -> c_int {
    if !gpu::armed() {
        // SAFETY: forwarded contract.
        return unsafe { next::MPI_Reduce_local(inbuf, inoutbuf, count, dt, op) };
    }
    const CALL: &str = "MPI_Reduce_local";
    let comm = consts::comm_world();
    // SAFETY: the application's arguments.
    let s = match unsafe { stage(CALL, inbuf, || Span::of(0, count.into(), dt), false, comm) } {
        Ok(s) => s,
        Err(rc) => return rc,
    };
    // SAFETY: as above.
    let mut r = match unsafe { stage(CALL, inoutbuf, || Span::of(0, count.into(), dt), true, comm) } {
        Ok(r) => r,
        Err(rc) => return rc,
    };
    // SAFETY: forwarded contract, on host copies.
    let rc = unsafe { next::MPI_Reduce_local(host_or(&s, inbuf), host_or(&r, inoutbuf), count, dt, op) };
    flush_all(CALL, r.as_mut_slice(), rc, comm)
}
