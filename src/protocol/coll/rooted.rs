//! Rooted collectives: Bcast, Gather(v), Scatter(v) and their nonblocking forms.
//!
//! Only significant arguments are converted: the receive buffer of a gather at the root only,
//! the send buffer of a scatter at the root only; elsewhere they are passed as the application
//! gave them (the MPI ignores them). `MPI_IN_PLACE` at the root stays `MPI_IN_PLACE`: a gather's
//! root slot is then neither received nor unpacked, a scatter's root receives nothing.

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::side::{Disp, Side, Slots};
use super::{any_noncontiguous, intracomm, run, Converted, Req, BLOCKING};
use crate::ffi::{consts, mpi, next};

type Dt = mpi::MPI_Datatype;
type Comm = mpi::MPI_Comm;

/// `(size, rank)` of `comm` when `root` is a valid root of it.
fn rooted(comm: Comm, root: c_int) -> Option<(usize, usize)> {
    intracomm(comm).filter(|(size, _)| root >= 0 && (root as usize) < *size)
}

/// The application's array of `n` ints, `None` if null.
///
/// # Safety
/// A non-null `p` points to `n` ints (the MPI's contract for count/displacement arrays).
pub(super) unsafe fn ints<'a>(p: *const c_int, n: usize) -> Option<&'a [c_int]> {
    // SAFETY: see above.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, n) })
}

/// A converted call's uniform send arguments, or the application's.
fn send_args(conv: &Converted, buf: *const c_void, count: c_int, t: Dt) -> (*const c_void, c_int, Dt) {
    conv.send.as_ref().map_or((buf, count, t), |s| (s.ptr(), s.count(), consts::byte()))
}

/// A converted call's uniform receive arguments, or the application's.
fn recv_args(conv: &Converted, buf: *mut c_void, count: c_int, t: Dt) -> (*mut c_void, c_int, Dt) {
    conv.recv.as_ref().map_or((buf, count, t), |s| (s.ptr(), s.count(), consts::byte()))
}

fn converted(send: Option<Side>, recv: Option<Side>, recv_input: Slots, recv_output: Slots) -> Option<Converted> {
    Some(Converted { send, recv, recv_input, recv_output }).filter(Converted::uses_engine)
}

/// `MPI_Bcast`.
///
/// # Safety
/// As `MPI_Bcast`.
pub unsafe fn bcast(buf: *mut c_void, count: c_int, t: Dt, root: c_int, comm: Comm) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { bcast_any(buf, count, t, root, comm, BLOCKING) }
}

/// `MPI_Ibcast`.
///
/// # Safety
/// As `MPI_Ibcast`.
pub unsafe fn ibcast(buf: *mut c_void, count: c_int, t: Dt, root: c_int, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { bcast_any(buf, count, t, root, comm, request) }
}

unsafe fn bcast_any(buf: *mut c_void, count: c_int, t: Dt, root: c_int, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |b: *mut c_void, c: c_int, t: Dt| unsafe {
        if request.is_null() {
            next::MPI_Bcast(b, c, t, root, comm)
        } else {
            next::MPI_Ibcast(b, c, t, root, comm, request)
        }
    };
    if !any_noncontiguous(&[t]) {
        return call(buf, count, t);
    }
    let plan = || {
        let (_, rank) = rooted(comm, root)?;
        let is_root = rank == root as usize;
        let side = Side::plan(buf, 1, Disp::Elements, true, !is_root, |_| (count, 0, t))?;
        if is_root {
            converted(Some(side), None, Slots::Nothing, Slots::Nothing)
        } else {
            converted(None, Some(side), Slots::Nothing, Slots::All)
        }
    };
    match plan() {
        None => call(buf, count, t),
        // SAFETY: the application's buffer is valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Bcast", conv, request, |c| {
                let s = c.send.as_ref().or(c.recv.as_ref()).expect("a bcast side");
                call(s.ptr(), s.count(), consts::byte())
            })
        },
    }
}

/// `MPI_Gather`.
///
/// # Safety
/// As `MPI_Gather`.
pub unsafe fn gather(sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, root: c_int, comm: Comm) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { gather_any(sb, sc, st, rb, rc, rt, root, comm, BLOCKING) }
}

/// `MPI_Igather`.
///
/// # Safety
/// As `MPI_Igather`.
pub unsafe fn igather(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { gather_any(sb, sc, st, rb, rc, rt, root, comm, request) }
}

unsafe fn gather_any(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Gather(sb, sc, st, rb, rc, rt, root, comm)
        } else {
            next::MPI_Igather(sb, sc, st, rb, rc, rt, root, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, sc, st, rb, rc, rt);
    }
    let plan = || {
        let (size, rank) = rooted(comm, root)?;
        let is_root = rank == root as usize;
        let in_place = is_root && sb == consts::in_place().cast_const();
        let send = if in_place { None } else { Some(Side::plan(sb, 1, Disp::Elements, true, false, |_| (sc, 0, st))?) };
        let recv = if is_root { Some(Side::plan(rb, size, Disp::Elements, true, true, |i| (rc, i as i64 * rc as i64, rt))?) } else { None };
        let out = if in_place { Slots::AllBut(rank) } else { Slots::All };
        converted(send, recv, Slots::Nothing, out)
    };
    match plan() {
        None => call(sb, sc, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Gather", conv, request, |c| {
                let (sb, sc, st) = send_args(c, sb, sc, st);
                let (rb, rc, rt) = recv_args(c, rb, rc, rt);
                call(sb, sc, st, rb, rc, rt)
            })
        },
    }
}

/// `MPI_Gatherv`.
///
/// # Safety
/// As `MPI_Gatherv`.
pub unsafe fn gatherv(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { gatherv_any(sb, sc, st, rb, rcs, rds, rt, root, comm, BLOCKING) }
}

/// `MPI_Igatherv`.
///
/// # Safety
/// As `MPI_Igatherv`.
pub unsafe fn igatherv(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { gatherv_any(sb, sc, st, rb, rcs, rds, rt, root, comm, request) }
}

unsafe fn gatherv_any(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rcs, rds, rt| unsafe {
        if request.is_null() {
            next::MPI_Gatherv(sb, sc, st, rb, rcs, rds, rt, root, comm)
        } else {
            next::MPI_Igatherv(sb, sc, st, rb, rcs, rds, rt, root, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, sc, st, rb, rcs, rds, rt);
    }
    let plan = || {
        let (size, rank) = rooted(comm, root)?;
        let is_root = rank == root as usize;
        let in_place = is_root && sb == consts::in_place().cast_const();
        let send = if in_place { None } else { Some(Side::plan(sb, 1, Disp::Elements, true, false, |_| (sc, 0, st))?) };
        let recv = if is_root {
            // SAFETY: at the root, `rcs` and `rds` hold one entry per rank (MPI's contract).
            let (counts, displs) = unsafe { (ints(rcs, size)?, ints(rds, size)?) };
            Some(Side::plan(rb, size, Disp::Elements, false, true, |i| (counts[i], displs[i] as i64, rt))?)
        } else {
            None
        };
        let out = if in_place { Slots::AllBut(rank) } else { Slots::All };
        converted(send, recv, Slots::Nothing, out)
    };
    match plan() {
        None => call(sb, sc, st, rb, rcs, rds, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Gatherv", conv, request, |c| {
                let (sb, sc, st) = send_args(c, sb, sc, st);
                match c.recv.as_ref() {
                    Some(r) => call(sb, sc, st, r.base(), r.counts(), r.displs(), consts::byte()),
                    None => call(sb, sc, st, rb, rcs, rds, rt),
                }
            })
        },
    }
}

/// `MPI_Scatter`.
///
/// # Safety
/// As `MPI_Scatter`.
pub unsafe fn scatter(sb: *const c_void, sc: c_int, st: Dt, rb: *mut c_void, rc: c_int, rt: Dt, root: c_int, comm: Comm) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { scatter_any(sb, sc, st, rb, rc, rt, root, comm, BLOCKING) }
}

/// `MPI_Iscatter`.
///
/// # Safety
/// As `MPI_Iscatter`.
pub unsafe fn iscatter(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { scatter_any(sb, sc, st, rb, rc, rt, root, comm, request) }
}

unsafe fn scatter_any(
    sb: *const c_void,
    sc: c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, sc, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Scatter(sb, sc, st, rb, rc, rt, root, comm)
        } else {
            next::MPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, sc, st, rb, rc, rt);
    }
    let plan = || {
        let (size, rank) = rooted(comm, root)?;
        let is_root = rank == root as usize;
        let in_place = is_root && rb == consts::in_place();
        let send =
            if is_root { Some(Side::plan(sb, size, Disp::Elements, true, false, |i| (sc, i as i64 * sc as i64, st))?) } else { None };
        let recv = if in_place { None } else { Some(Side::plan(rb, 1, Disp::Elements, true, true, |_| (rc, 0, rt))?) };
        converted(send, recv, Slots::Nothing, Slots::All)
    };
    match plan() {
        None => call(sb, sc, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Scatter", conv, request, |c| {
                let (sb, sc, st) = send_args(c, sb, sc, st);
                let (rb, rc, rt) = recv_args(c, rb, rc, rt);
                call(sb, sc, st, rb, rc, rt)
            })
        },
    }
}

/// `MPI_Scatterv`.
///
/// # Safety
/// As `MPI_Scatterv`.
pub unsafe fn scatterv(
    sb: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { scatterv_any(sb, scs, sds, st, rb, rc, rt, root, comm, BLOCKING) }
}

/// `MPI_Iscatterv`.
///
/// # Safety
/// As `MPI_Iscatterv`.
pub unsafe fn iscatterv(
    sb: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { scatterv_any(sb, scs, sds, st, rb, rc, rt, root, comm, request) }
}

unsafe fn scatterv_any(
    sb: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    st: Dt,
    rb: *mut c_void,
    rc: c_int,
    rt: Dt,
    root: c_int,
    comm: Comm,
    request: *mut Req,
) -> c_int {
    // SAFETY: the application's arguments, or sluice's converted ones for the same call.
    let call = |sb, scs, sds, st, rb, rc, rt| unsafe {
        if request.is_null() {
            next::MPI_Scatterv(sb, scs, sds, st, rb, rc, rt, root, comm)
        } else {
            next::MPI_Iscatterv(sb, scs, sds, st, rb, rc, rt, root, comm, request)
        }
    };
    if !any_noncontiguous(&[st, rt]) {
        return call(sb, scs, sds, st, rb, rc, rt);
    }
    let plan = || {
        let (size, rank) = rooted(comm, root)?;
        let is_root = rank == root as usize;
        let in_place = is_root && rb == consts::in_place();
        let send = if is_root {
            // SAFETY: at the root, `scs` and `sds` hold one entry per rank (MPI's contract).
            let (counts, displs) = unsafe { (ints(scs, size)?, ints(sds, size)?) };
            Some(Side::plan(sb, size, Disp::Elements, false, false, |i| (counts[i], displs[i] as i64, st))?)
        } else {
            None
        };
        let recv = if in_place { None } else { Some(Side::plan(rb, 1, Disp::Elements, true, true, |_| (rc, 0, rt))?) };
        converted(send, recv, Slots::Nothing, Slots::All)
    };
    match plan() {
        None => call(sb, scs, sds, st, rb, rc, rt),
        // SAFETY: the application's buffers are valid for the call (MPI's contract).
        Some(conv) => unsafe {
            run("Scatterv", conv, request, |c| {
                let (rb, rc, rt) = recv_args(c, rb, rc, rt);
                match c.send.as_ref() {
                    Some(s) => call(s.base(), s.counts(), s.displs(), consts::byte(), rb, rc, rt),
                    None => call(sb, scs, sds, st, rb, rc, rt),
                }
            })
        },
    }
}
