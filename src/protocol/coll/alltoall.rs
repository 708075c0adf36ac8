//! Collectives among all ranks: Allgather(v), Alltoall(v,w) and their nonblocking forms.
//!
//! `MPI_IN_PLACE` keeps its meaning on the converted bytes: the receive buffer's input slots
//! (the own slot of an allgather, every slot of an alltoall) are packed into the receive
//! staging before the call, the MPI runs in place on staging, and the output slots are
//! unpacked afterwards (an allgather's own slot is left alone, as the MPI leaves it).

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::rooted::ints;
use super::side::{Disp, Side, Slots, SplitRule};
use super::{any_noncontiguous, intracomm, noncontiguous, run, Converted, Req, BLOCKING};
use crate::ffi::{consts, mpi, next};

type Dt = mpi::MPI_Datatype;
type Comm = mpi::MPI_Comm;

fn is_in_place(sb: *const c_void) -> bool {
    sb == consts::in_place().cast_const()
}

fn converted(send: Option<Side>, recv: Side, recv_input: Slots, recv_output: Slots) -> Option<Converted> {
    Some(Converted { send, recv: Some(recv), recv_input, recv_output }).filter(Converted::uses_engine)
}

/// The send side of a uniform call with `n` peers of `sc` elements, unless `MPI_IN_PLACE`.
fn uniform_send(sb: *const c_void, n: usize, sc: c_int, st: Dt, per_peer: bool, split: Option<&SplitRule>) -> Option<Option<Side>> {
    if is_in_place(sb) {
        return Some(None);
    }
    let side = if per_peer {
        Side::plan_uniform(sb, n, false, split, |i| (sc, i as i64 * sc as i64, st))?
    } else {
        Side::plan_uniform(sb, 1, false, split, |_| (sc, 0, st))?
    };
    Some(Some(side))
}

macro_rules! blocking_pair {
    ($(#[$doc:meta])* $name:ident, $iname:ident, $any:ident, ($($a:ident: $t:ty),*)) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As the MPI function.
        pub unsafe fn $name($($a: $t),*) -> c_int {
            // SAFETY: forwarded contract.
            unsafe { $any($($a,)* BLOCKING) }
        }

        $(#[$doc])*
        /// (nonblocking)
        ///
        /// # Safety
        /// As the MPI function.
        pub unsafe fn $iname($($a: $t,)* request: *mut Req) -> c_int {
            // SAFETY: forwarded contract.
            unsafe { $any($($a,)* request) }
        }
    };
}
pub(super) use blocking_pair;

blocking_pair!(
    /// `MPI_Allgather`.
    allgather, iallgather, allgather_any,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm)
);

unsafe fn allgather_any(sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Allgather(sb, sc, st, rb, rc, rt, comm)
        } else {
            next::MPI_Iallgather(sb, sc, st, rb, rc, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, sc, st, rb, rc, rt);
    }
    let plan = || {
        let (size, rank) = intracomm(comm)?;
        let split = SplitRule::everywhere(comm, size);
        let send = uniform_send(sb, size, sc, st, false, split.as_ref())?;
        let recv = Side::plan_uniform(rb, size, true, split.as_ref(), |i| (rc, i as i64 * rc as i64, rt))?;
        let (input, output) = if send.is_none() { (Slots::Only(rank), Slots::AllBut(rank)) } else { (Slots::Nothing, Slots::All) };
        converted(send, recv, input, output)
    };
    match plan() {
        None => call(sb, sc, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Allgather", conv, request, |c| {
                let r = c.recv.as_ref().expect("receive side");
                match c.send.as_ref() {
                    Some(s) => call(s.ptr(), s.count(), s.uniform_type(), r.ptr(), r.count(), r.uniform_type()),
                    None => call(sb, sc, st, r.ptr(), r.count(), r.uniform_type()),
                }
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Allgatherv`.
    allgatherv, iallgatherv, allgatherv_any,
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
            next::MPI_Allgatherv(sb, sc, st, rb, rcs, rds, rt, comm)
        } else {
            next::MPI_Iallgatherv(sb, sc, st, rb, rcs, rds, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, sc, st, rb, rcs, rds, rt);
    }
    let plan = || {
        let (size, rank) = intracomm(comm)?;
        let send = uniform_send(sb, size, sc, st, false, None)?;
        // SAFETY: one entry per rank (MPI's contract).
        let (counts, displs) = unsafe { (ints(rcs, size)?, ints(rds, size)?) };
        let recv = Side::plan(rb, size, Disp::Elements, false, true, |i| (counts[i], displs[i] as i64, rt))?;
        let (input, output) = if send.is_none() { (Slots::Only(rank), Slots::AllBut(rank)) } else { (Slots::Nothing, Slots::All) };
        converted(send, recv, input, output)
    };
    match plan() {
        None => call(sb, sc, st, rb, rcs, rds, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Allgatherv", conv, request, |c| {
                let r = c.recv.as_ref().expect("receive side");
                let (b, n, t) = (r.base(), r.counts(), r.displs());
                match c.send.as_ref() {
                    Some(s) => call(s.ptr(), s.count(), consts::byte(), b, n, t, consts::byte()),
                    None => call(sb, sc, st, b, n, t, consts::byte()),
                }
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Alltoall`.
    alltoall, ialltoall, alltoall_any,
    (sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm)
);

unsafe fn alltoall_any(sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Alltoall(sb, sc, st, rb, rc, rt, comm)
        } else {
            next::MPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, sc, st, rb, rc, rt);
    }
    let plan = || {
        let (size, rank) = intracomm(comm)?;
        let split = SplitRule::everywhere(comm, size);
        let send = uniform_send(sb, size, sc, st, true, split.as_ref())?;
        let recv = Side::plan_uniform(rb, size, true, split.as_ref(), |i| (rc, i as i64 * rc as i64, rt))?;
        let input = if send.is_none() { Slots::All } else { Slots::Nothing };
        Some((converted(send, recv, input, Slots::All)?, rank))
    };
    match plan() {
        None => call(sb, sc, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some((mut conv, rank)) => unsafe {
            conv.copy_own_block(rank, true);
            run("Alltoall", conv, request, |c| {
                let r = c.recv.as_ref().expect("receive side");
                match c.send.as_ref() {
                    Some(s) => call(s.ptr(), s.count(), s.uniform_type(), r.ptr(), r.count(), r.uniform_type()),
                    None => call(sb, sc, st, r.ptr(), r.count(), r.uniform_type()),
                }
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Alltoallv`.
    alltoallv, ialltoallv, alltoallv_any,
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
            next::MPI_Alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm)
        } else {
            next::MPI_Ialltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, scs, sds, st, rb, rcs, rds, rt);
    }
    let plan = || {
        let (size, rank) = intracomm(comm)?;
        let send = if is_in_place(sb) {
            None
        } else {
            // SAFETY: one entry per rank (MPI's contract).
            let (counts, displs) = unsafe { (ints(scs, size)?, ints(sds, size)?) };
            Some(Side::plan(sb, size, Disp::Elements, false, false, |i| (counts[i], displs[i] as i64, st))?)
        };
        // SAFETY: as above.
        let (counts, displs) = unsafe { (ints(rcs, size)?, ints(rds, size)?) };
        let recv = Side::plan(rb, size, Disp::Elements, false, true, |i| (counts[i], displs[i] as i64, rt))?;
        let input = if send.is_none() { Slots::All } else { Slots::Nothing };
        Some((converted(send, recv, input, Slots::All)?, rank))
    };
    match plan() {
        None => call(sb, scs, sds, st, rb, rcs, rds, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some((mut conv, rank)) => unsafe {
            conv.copy_own_block(rank, false);
            run("Alltoallv", conv, request, |c| {
                let r = c.recv.as_ref().expect("receive side");
                let (b, n, d) = (r.base(), r.counts(), r.displs());
                match c.send.as_ref() {
                    Some(s) => call(s.base(), s.counts(), s.displs(), consts::byte(), b, n, d, consts::byte()),
                    None => call(sb, scs, sds, st, b, n, d, consts::byte()),
                }
            })
        },
    }
}

blocking_pair!(
    /// `MPI_Alltoallw`.
    alltoallw, ialltoallw, alltoallw_any,
    (sb: *const c_void, scs: *const c_int, sds: *const c_int, sts: *const Dt, rb: *mut c_void, rcs: *const c_int, rds: *const c_int, rts: *const Dt, comm: Comm)
);

/// The application's array of `n` datatypes, `None` if null.
///
/// # Safety
/// A non-null `p` points to `n` handles.
pub(super) unsafe fn types<'a>(p: *const Dt, n: usize) -> Option<&'a [Dt]> {
    // SAFETY: see above.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, n) })
}

unsafe fn alltoallw_any(
    sb: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sts: *const Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rts: *const Dt,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, scs, sds, sts, rb, rcs, rds, rts| unsafe {
        if request.is_null() {
            next::MPI_Alltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm)
        } else {
            next::MPI_Ialltoallw(sb, scs, sds, sts, rb, rcs, rds, rts, comm, request)
        }
    };
    // The type arrays have one entry per rank: the size is needed before any type is looked at.
    let Some((size, _)) = intracomm(comm) else { return call(sb, scs, sds, sts, rb, rcs, rds, rts) };
    let in_place = is_in_place(sb);
    // SAFETY: one entry per rank (MPI's contract); ignored send types are not read.
    let (stypes, rtypes) = unsafe { ((!in_place).then(|| types(sts, size)).flatten(), types(rts, size)) };
    let any = |ts: Option<&[Dt]>| ts.is_some_and(|ts| ts.iter().any(|&t| noncontiguous(t)));
    if !((any(stypes) || any(rtypes)) && crate::runtime::config().is_some_and(|c| c.coll)) {
        return call(sb, scs, sds, sts, rb, rcs, rds, rts);
    }
    let plan = || {
        // Peer slot i is rank i, for both sides.
        let split = SplitRule::for_peers(comm, &(0..size as c_int).collect::<Vec<_>>());
        let send = if in_place {
            None
        } else {
            // SAFETY: one entry per rank (MPI's contract).
            let (counts, displs) = unsafe { (ints(scs, size)?, ints(sds, size)?) };
            let ts = stypes?;
            Some(Side::plan_typed(sb, size, false, split.as_ref(), |i| (counts[i], displs[i] as i64, ts[i]))?)
        };
        // SAFETY: as above.
        let (counts, displs) = unsafe { (ints(rcs, size)?, ints(rds, size)?) };
        let ts = rtypes?;
        let recv = Side::plan_typed(rb, size, true, split.as_ref(), |i| (counts[i], displs[i] as i64, ts[i]))?;
        let input = if send.is_none() { Slots::All } else { Slots::Nothing };
        converted(send, recv, input, Slots::All)
    };
    match plan() {
        None => call(sb, scs, sds, sts, rb, rcs, rds, rts),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Alltoallw", conv, request, |c| {
                let r = c.recv.as_ref().expect("receive side");
                let (b, n, d, t) = (r.base(), r.counts(), r.displs(), r.types());
                match c.send.as_ref() {
                    Some(s) => call(s.base(), s.counts(), s.displs(), s.types(), b, n, d, t),
                    None => call(sb, scs, sds, sts, b, n, d, t),
                }
            })
        },
    }
}
