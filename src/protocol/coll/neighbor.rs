//! Neighborhood collectives on Cartesian, graph and distributed-graph communicators:
//! Neighbor_allgather(v), Neighbor_alltoall(v,w) and their nonblocking forms.
//!
//! Peers are the communicator's in-neighbors (receive blocks) and out-neighbors (send blocks),
//! in the MPI's order. A Cartesian neighbor that is `MPI_PROC_NULL` (a non-periodic border)
//! moves nothing: its receive block is left untouched, as by the MPI. `MPI_IN_PLACE` is not
//! defined for these calls and is left to the MPI.

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::alltoall::{blocking_pair, types};
use super::rooted::ints;
use super::side::{Disp, Side, Slots, SplitRule};
use super::{any_noncontiguous, noncontiguous, run, Converted, Req, BLOCKING};
use crate::ffi::{consts, errclass, mpi, next, PROC_NULL};

type Dt = mpi::MPI_Datatype;
type Comm = mpi::MPI_Comm;

/// The neighborhood of this rank in a communicator with a topology.
struct Neighbors {
    indegree: usize,
    outdegree: usize,
    /// Neighbor slots that are `MPI_PROC_NULL` (Cartesian borders; same for both directions).
    null_slots: Vec<usize>,
}

/// `None`: no topology (the MPI reports the error), an intercommunicator, or a failed query.
fn neighbors(comm: Comm) -> Option<Neighbors> {
    let (indegree, outdegree, cart) = topology(comm)?;
    let mut null_slots = Vec::new();
    if cart {
        for d in 0..(indegree / 2) as c_int {
            let (mut src, mut dst) = (0, 0);
            // SAFETY: a Cartesian communicator of `indegree / 2` dimensions; writes two ints.
            if unsafe { mpi::PMPI_Cart_shift(comm, d, 1, &mut src, &mut dst) } != errclass::SUCCESS {
                return None;
            }
            // MPI-3.1 sec. 7.6: per dimension, the neighbor in the negative direction, then the
            // positive one.
            null_slots.extend([(src, 2 * d), (dst, 2 * d + 1)].iter().filter(|(r, _)| *r == PROC_NULL).map(|(_, s)| *s as usize));
        }
    }
    Some(Neighbors { indegree, outdegree, null_slots })
}

/// This rank's in- and out-degree in `comm`'s topology (the lengths of a neighborhood
/// collective's per-neighbor arrays; Cartesian: two per dimension, `MPI_PROC_NULL` borders
/// included). `None` as for [`neighbors`]. Used by the Fortran bindings of
/// `MPI_(I)neighbor_alltoallw` to convert their datatype arrays.
#[cfg_attr(not(sluice_mpi = "openmpi"), allow(dead_code))] // used by the Open MPI Fortran bindings
pub fn degrees(comm: Comm) -> Option<(usize, usize)> {
    topology(comm).map(|(indegree, outdegree, _)| (indegree, outdegree))
}

/// This rank's out-neighbors in `comm`'s topology, in the MPI's order (`MPI_PROC_NULL` at
/// Cartesian borders); `None` as for [`neighbors`]. For the profiler (`protocol::profile`).
pub fn out_neighbors(comm: Comm) -> Option<Vec<c_int>> {
    let nb = neighbors(comm)?;
    neighbor_ranks(comm, &nb).map(|(_, destinations)| destinations)
}

/// In-degree, out-degree and whether the topology is Cartesian.
fn topology(comm: Comm) -> Option<(usize, usize, bool)> {
    let (_, rank) = super::intracomm(comm)?;
    let mut kind = 0;
    // SAFETY: a valid intracommunicator; writes one int.
    if unsafe { mpi::PMPI_Topo_test(comm, &mut kind) } != errclass::SUCCESS {
        return None;
    }
    let ok = |rc: c_int| (rc == errclass::SUCCESS).then_some(());
    if kind == mpi::SLUICE_TOPO_CART as c_int {
        let mut ndims = 0;
        // SAFETY: a Cartesian communicator; writes one int.
        ok(unsafe { mpi::PMPI_Cartdim_get(comm, &mut ndims) })?;
        let n = 2 * ndims.max(0) as usize;
        return Some((n, n, true));
    }
    if kind == mpi::SLUICE_TOPO_GRAPH as c_int {
        let mut n = 0;
        // SAFETY: a graph communicator; writes one int.
        ok(unsafe { mpi::PMPI_Graph_neighbors_count(comm, rank as c_int, &mut n) })?;
        return Some((n.max(0) as usize, n.max(0) as usize, false));
    }
    if kind == mpi::SLUICE_TOPO_DIST_GRAPH as c_int {
        let (mut i, mut o, mut weighted) = (0, 0, 0);
        // SAFETY: a distributed-graph communicator; writes three ints.
        ok(unsafe { mpi::PMPI_Dist_graph_neighbors_count(comm, &mut i, &mut o, &mut weighted) })?;
        return Some((i.max(0) as usize, o.max(0) as usize, false));
    }
    None
}

/// The split rules of a neighborhood w-variant's send and receive sides (`None`: no block is
/// split, the usual case: see `SplitRule::for_peers`).
fn split_rules(comm: Comm, nb: &Neighbors) -> (Option<SplitRule>, Option<SplitRule>) {
    if crate::transfer::netpath::split_min().is_none() {
        return (None, None);
    }
    let Some((sources, destinations)) = neighbor_ranks(comm, nb) else { return (None, None) };
    (SplitRule::for_peers(comm, &destinations), SplitRule::for_peers(comm, &sources))
}

/// The in-neighbors (receive slots) and out-neighbors (send slots) of this rank, in the MPI's
/// order; `None` if a query fails.
fn neighbor_ranks(comm: Comm, nb: &Neighbors) -> Option<(Vec<c_int>, Vec<c_int>)> {
    let (_, rank) = super::intracomm(comm)?;
    let mut kind = 0;
    let ok = |rc: c_int| (rc == errclass::SUCCESS).then_some(());
    // SAFETY: a valid intracommunicator with a topology (`neighbors` succeeded); writes one int.
    ok(unsafe { mpi::PMPI_Topo_test(comm, &mut kind) })?;
    let (mut sources, mut destinations) = (vec![PROC_NULL; nb.indegree], vec![PROC_NULL; nb.outdegree]);
    if kind == mpi::SLUICE_TOPO_CART as c_int {
        for d in 0..(nb.indegree / 2) {
            let (mut src, mut dst) = (0, 0);
            // SAFETY: a Cartesian communicator of `indegree / 2` dimensions; writes two ints.
            ok(unsafe { mpi::PMPI_Cart_shift(comm, d as c_int, 1, &mut src, &mut dst) })?;
            (sources[2 * d], sources[2 * d + 1]) = (src, dst);
        }
        destinations.clone_from(&sources);
    } else if kind == mpi::SLUICE_TOPO_GRAPH as c_int {
        // SAFETY: a graph communicator; writes `indegree` ranks (its neighbor count).
        ok(unsafe { mpi::PMPI_Graph_neighbors(comm, rank as c_int, nb.indegree as c_int, sources.as_mut_ptr()) })?;
        destinations.clone_from(&sources);
    } else {
        // Weights are written only for a weighted graph; room for them either way.
        let (mut sw, mut dw) = (vec![0 as c_int; nb.indegree.max(1)], vec![0 as c_int; nb.outdegree.max(1)]);
        // SAFETY: a distributed-graph communicator; each array holds its degree's entries.
        ok(unsafe {
            mpi::PMPI_Dist_graph_neighbors(
                comm,
                nb.indegree as c_int,
                sources.as_mut_ptr(),
                sw.as_mut_ptr(),
                nb.outdegree as c_int,
                destinations.as_mut_ptr(),
                dw.as_mut_ptr(),
            )
        })?;
    }
    Some((sources, destinations))
}

/// A converted neighborhood call (`None` when nothing goes through the engine).
fn converted(nb: &Neighbors, mut send: Side, mut recv: Side) -> Option<Converted> {
    send.drop_peers(&nb.null_slots);
    recv.drop_peers(&nb.null_slots);
    Some(Converted { send: Some(send), recv: Some(recv), recv_input: Slots::Nothing, recv_output: Slots::All })
        .filter(Converted::uses_engine)
}

fn in_place(sb: *const c_void) -> bool {
    sb == consts::in_place().cast_const()
}

blocking_pair!(
    /// `MPI_Neighbor_allgather`.
    neighbor_allgather, ineighbor_allgather, allgather_any,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm)
);

unsafe fn allgather_any(sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Neighbor_allgather(sb, sc, st, rb, rc, rt, comm)
        } else {
            next::MPI_Ineighbor_allgather(sb, sc, st, rb, rc, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) || in_place(sb) {
        return call(sb, sc, st, rb, rc, rt);
    }
    let plan = || {
        let nb = neighbors(comm)?;
        let send = Side::plan(sb, 1, Disp::Elements, true, false, |_| (sc, 0, st))?;
        let mut recv = Side::plan(rb, nb.indegree, Disp::Elements, true, true, |i| (rc, i as i64 * rc as i64, rt))?;
        // One send block serves every out-neighbor: only receive slots can be border slots.
        recv.drop_peers(&nb.null_slots);
        Some(Converted { send: Some(send), recv: Some(recv), recv_input: Slots::Nothing, recv_output: Slots::All })
            .filter(Converted::uses_engine)
    };
    match plan() {
        None => call(sb, sc, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Neighbor_allgather", conv, request, |c| {
                let (s, r) = (c.send.as_ref().expect("send side"), c.recv.as_ref().expect("receive side"));
                call(s.ptr(), s.count(), consts::byte(), r.ptr(), r.count(), consts::byte())
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Neighbor_allgatherv`.
    neighbor_allgatherv, ineighbor_allgatherv, allgatherv_any,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, comm: Comm)
);

unsafe fn allgatherv_any(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rt: Dt,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rcs, rds, rt| unsafe {
        if request.is_null() {
            next::MPI_Neighbor_allgatherv(sb, sc, st, rb, rcs, rds, rt, comm)
        } else {
            next::MPI_Ineighbor_allgatherv(sb, sc, st, rb, rcs, rds, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) || in_place(sb) {
        return call(sb, sc, st, rb, rcs, rds, rt);
    }
    let plan = || {
        let nb = neighbors(comm)?;
        let send = Side::plan(sb, 1, Disp::Elements, true, false, |_| (sc, 0, st))?;
        // SAFETY: one entry per in-neighbor (MPI's contract).
        let (counts, displs) = unsafe { (ints(rcs, nb.indegree)?, ints(rds, nb.indegree)?) };
        let mut recv = Side::plan(rb, nb.indegree, Disp::Elements, false, true, |i| (counts[i], displs[i] as i64, rt))?;
        recv.drop_peers(&nb.null_slots);
        Some(Converted { send: Some(send), recv: Some(recv), recv_input: Slots::Nothing, recv_output: Slots::All })
            .filter(Converted::uses_engine)
    };
    match plan() {
        None => call(sb, sc, st, rb, rcs, rds, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Neighbor_allgatherv", conv, request, |c| {
                let (s, r) = (c.send.as_ref().expect("send side"), c.recv.as_ref().expect("receive side"));
                call(s.ptr(), s.count(), consts::byte(), r.base(), r.counts(), r.displs(), consts::byte())
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Neighbor_alltoall`.
    neighbor_alltoall, ineighbor_alltoall, alltoall_any,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm)
);

unsafe fn alltoall_any(sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Neighbor_alltoall(sb, sc, st, rb, rc, rt, comm)
        } else {
            next::MPI_Ineighbor_alltoall(sb, sc, st, rb, rc, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) || in_place(sb) {
        return call(sb, sc, st, rb, rc, rt);
    }
    let plan = || {
        let nb = neighbors(comm)?;
        let send = Side::plan(sb, nb.outdegree, Disp::Elements, true, false, |i| (sc, i as i64 * sc as i64, st))?;
        let recv = Side::plan(rb, nb.indegree, Disp::Elements, true, true, |i| (rc, i as i64 * rc as i64, rt))?;
        converted(&nb, send, recv)
    };
    match plan() {
        None => call(sb, sc, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Neighbor_alltoall", conv, request, |c| {
                let (s, r) = (c.send.as_ref().expect("send side"), c.recv.as_ref().expect("receive side"));
                call(s.ptr(), s.count(), consts::byte(), r.ptr(), r.count(), consts::byte())
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Neighbor_alltoallv`.
    neighbor_alltoallv, ineighbor_alltoallv, alltoallv_any,
    (sb: *const c_void, scs: *const c_int, sds: *const c_int, st: Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rt: Dt, comm: Comm)
);

unsafe fn alltoallv_any(
    sb: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    st: Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rt: Dt,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, scs, sds, st, rb, rcs, rds, rt| unsafe {
        if request.is_null() {
            next::MPI_Neighbor_alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm)
        } else {
            next::MPI_Ineighbor_alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) || in_place(sb) {
        return call(sb, scs, sds, st, rb, rcs, rds, rt);
    }
    let plan = || {
        let nb = neighbors(comm)?;
        // SAFETY: one entry per out-/in-neighbor (MPI's contract).
        let (sn, sd, rn, rd) =
            unsafe { (ints(scs, nb.outdegree)?, ints(sds, nb.outdegree)?, ints(rcs, nb.indegree)?, ints(rds, nb.indegree)?) };
        let send = Side::plan(sb, nb.outdegree, Disp::Elements, false, false, |i| (sn[i], sd[i] as i64, st))?;
        let recv = Side::plan(rb, nb.indegree, Disp::Elements, false, true, |i| (rn[i], rd[i] as i64, rt))?;
        converted(&nb, send, recv)
    };
    match plan() {
        None => call(sb, scs, sds, st, rb, rcs, rds, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Neighbor_alltoallv", conv, request, |c| {
                let (s, r) = (c.send.as_ref().expect("send side"), c.recv.as_ref().expect("receive side"));
                call(s.base(), s.counts(), s.displs(), consts::byte(), r.base(), r.counts(), r.displs(), consts::byte())
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Neighbor_alltoallw`.
    neighbor_alltoallw, ineighbor_alltoallw, alltoallw_any,
    (sb: *const c_void, scs: *const c_int, sds: *const mpi::MPI_Aint, sts: *const Dt, rb: *mut c_void, rcs: *const c_int,
     rds: *const mpi::MPI_Aint, rts: *const Dt, comm: Comm)
);

/// The application's array of `n` addresses, `None` if null.
///
/// # Safety
/// A non-null `p` points to `n` values.
unsafe fn aints<'a>(p: *const mpi::MPI_Aint, n: usize) -> Option<&'a [mpi::MPI_Aint]> {
    // SAFETY: see above.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, n) })
}

unsafe fn alltoallw_any(
    sb: *const c_void,
    scs: *const c_int,
    sds: *const mpi::MPI_Aint,
    sts: *const Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const mpi::MPI_Aint,
    rts: *const Dt,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, scs, sds, sts, rb, rcs, rds, rts| unsafe {
        if request.is_null() {
            next::MPI_Neighbor_alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm)
        } else {
            next::MPI_Ineighbor_alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm, request)
        }
    };
    // The type arrays have one entry per neighbor: the degrees are needed first.
    let nb = match neighbors(comm) {
        Some(nb) if !in_place(sb) => nb,
        _ => return call(sb, scs, sds, sts, rb, rcs, rds, rts),
    };
    // SAFETY: one entry per out-/in-neighbor (MPI's contract).
    let (stypes, rtypes) = unsafe { (types(sts, nb.outdegree), types(rts, nb.indegree)) };
    let any = |ts: Option<&[Dt]>| ts.is_some_and(|ts| ts.iter().any(|&t| noncontiguous(t)));
    if !((any(stypes) || any(rtypes)) && crate::runtime::config().is_some_and(|c| c.coll)) {
        return call(sb, scs, sds, sts, rb, rcs, rds, rts);
    }
    let plan = || {
        // SAFETY: as above.
        let (sn, sd, rn, rd) =
            unsafe { (ints(scs, nb.outdegree)?, aints(sds, nb.outdegree)?, ints(rcs, nb.indegree)?, aints(rds, nb.indegree)?) };
        let (st, rt) = (stypes?, rtypes?);
        // MPI_Aint displacements and a type per neighbor: only the blocks that need the engine
        // are staged (a halo's contiguous faces stay where they are).
        let (send_split, recv_split) = split_rules(comm, &nb);
        let send = Side::plan_mixed(sb, nb.outdegree, false, send_split.as_ref(), |i| (sn[i], sd[i] as i64, st[i]))?;
        let recv = Side::plan_mixed(rb, nb.indegree, true, recv_split.as_ref(), |i| (rn[i], rd[i] as i64, rt[i]))?;
        converted(&nb, send, recv)
    };
    match plan() {
        None => call(sb, scs, sds, sts, rb, rcs, rds, rts),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Neighbor_alltoallw", conv, request, |c| {
                let (s, r) = (c.send.as_ref().expect("send side"), c.recv.as_ref().expect("receive side"));
                call(s.base(), s.counts(), s.aint_displs(), s.types(), r.base(), r.counts(), r.aint_displs(), r.types())
            })
        },
    }
}
