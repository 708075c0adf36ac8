//! The completion family. Each call first checks whether sluice tracks any request at all
//! (one atomic load: the fast path forwards unchanged). Otherwise the tracked requests among
//! the arguments are taken out of the table before the MPI call, finished (unpacked, staging
//! released) for those the call completed, and put back for the others and for persistent
//! requests. Statuses the application ignores are collected into local arrays when sluice
//! needs them (the byte count of a receive).

use std::ffi::c_int;

use super::ops::{self, Entry};
use super::pipeline::track;
use super::{blank_status, status_or};
use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::comm_hints;
use crate::transfer::runtime::progress;

type Req = mpi::MPI_Request;
type Status = mpi::MPI_Status;

/// Staged receives of at least this many bytes are unpacked as they arrive inside a wait on
/// several ([`Taken::unpack_as_they_arrive`]); below it an unpack costs less than the polls.
const OVERLAP_MIN: usize = 16 * 1024;

/// Tracked requests taken out of the table for one call: `(index, op)`.
struct Taken(Vec<(usize, Entry)>);

impl Taken {
    /// Takes the tracked requests among `reqs`.
    fn from(reqs: &[Req]) -> Taken {
        Taken(reqs.iter().enumerate().filter_map(|(i, r)| ops::take(*r).map(|op| (i, op))).collect())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Before a blocking wait on all of `reqs`: unpacks each staged receive among them as its
    /// data arrives, while the others are still on the wire, instead of all of them after the
    /// last one (the MPI's own engine unpacks each fragment as it lands; a window of staged
    /// receives from another node would otherwise end with its whole unpack in series: 3% of
    /// a window of 64 KiB `vect:8:4` messages at 1 Gbit/s). `MPI_Request_get_status` leaves
    /// each request to the wait that follows, which completes and reports them all as before;
    /// a receive finished here is not unpacked again ([`Op::finish`] acts once).
    ///
    /// A truncated receive is left to the wait: Open MPI's `MPI_Request_get_status` reports it
    /// as a success with the sender's larger count (measured), which this skips; MPICH's
    /// returns the error after raising it through `MPI_COMM_WORLD`'s handler (measured), so on
    /// MPICH the loop runs with that handler set to `MPI_ERRORS_RETURN` ([`super::QuietWorld`]) and
    /// stops at the error, which the wait then raises as it would have. Where another thread
    /// may call MPI meanwhile (`MPI_THREAD_MULTIPLE`) MPICH's loop does not run.
    ///
    /// [`Op::finish`]: ops::Op::finish
    fn unpack_as_they_arrive(&mut self, reqs: &[Req]) {
        let early = |e: &Entry| matches!(e, Entry::P2p(op) if op.dir == ops::Dir::Recv && op.active && op.layout.bytes() >= OVERLAP_MIN);
        let mut waiting: Vec<usize> = (0..self.0.len()).filter(|&k| early(&self.0[k].1)).collect();
        if waiting.len() < 2 {
            return;
        }
        let _quiet = match cfg!(sluice_mpi = "mpich") {
            true => match super::QuietWorld::new() {
                Some(q) => Some(q),
                None => return,
            },
            false => None,
        };
        while !waiting.is_empty() {
            let mut failed = false;
            waiting.retain(|&k| {
                if failed {
                    return true;
                }
                let (i, entry) = &mut self.0[k];
                let Entry::P2p(op) = entry else { return false };
                let (mut flag, mut st) = (0, blank_status());
                // SAFETY: a live request of the application's array; writes a local flag and status.
                let rc = unsafe { next::MPI_Request_get_status(reqs[*i], &mut flag, &mut st) };
                if rc != errclass::SUCCESS {
                    failed = true;
                    return true;
                }
                if flag == 0 {
                    return true;
                }
                // SAFETY: the request completed and `st` is its status.
                if unsafe { super::received_bytes(&st) } <= op.layout.bytes() {
                    // SAFETY: as above; the wait's completion finds it finished (and reports a
                    // partial element again: not consumed here).
                    let _ = unsafe { op.finish(rc, &mut st, false) };
                }
                false
            });
            if failed {
                return;
            }
        }
    }

    /// After the MPI call: finishes the requests that completed, using status `status(i)` and
    /// per-request code `code(i)`, and puts back the live ones. A non-persistent request
    /// completed exactly when the MPI set its handle to `MPI_REQUEST_NULL` (`now`; an erroneous
    /// call that completed nothing must not release a staging buffer the MPI still writes); a
    /// persistent one when the call says so (`done(i)`: the index, flag or outcount).
    ///
    /// `before[i]` is the handle the request had when it was taken. Returns the requests whose
    /// receive failed at a partial element (`(i, comm)`, [`ops::Op::finish`]).
    fn settle(
        self,
        before: &[Req],
        now: &[Req],
        done: impl Fn(usize) -> bool,
        status: impl Fn(usize) -> *mut Status,
        code: impl Fn(usize) -> c_int,
    ) -> Vec<(usize, mpi::MPI_Comm)> {
        let mut failed = Vec::new();
        for (i, mut op) in self.0 {
            let live = now[i] != consts::request_null();
            let completed = if op.persistent() { done(i) } else { !live };
            if completed {
                // SAFETY: the MPI completed request `i` and filled its status.
                if let Some(comm) = unsafe { op.finish(code(i), status(i), true) } {
                    failed.push((i, comm));
                }
            }
            // A persistent request lives on, unless the MPI freed it (`forgetting_freed`).
            if live && (op.persistent() || !completed) {
                ops::restore(before[i], op);
            }
        }
        failed
    }
}

/// A status array the MPI may write `n` statuses into: the application's, or local storage
/// when it passed `MPI_STATUSES_IGNORE`.
struct Statuses {
    local: Vec<Status>,
    user: *mut Status,
}

impl Statuses {
    fn new(user: *mut Status, n: usize) -> Statuses {
        if user.is_null() || user == consts::statuses_ignore() {
            Statuses { local: vec![blank_status(); n.max(1)], user: std::ptr::null_mut() }
        } else {
            Statuses { local: Vec::new(), user }
        }
    }

    fn ptr(&mut self) -> *mut Status {
        if self.user.is_null() {
            self.local.as_mut_ptr()
        } else {
            self.user
        }
    }

    fn at(&mut self, i: usize) -> *const Status {
        // SAFETY: `i` is below the array length the call was made with.
        unsafe { self.ptr().add(i) }
    }
}

/// The code of entry `i` of a multi-request call: its status's MPI_ERROR when the call
/// returned MPI_ERR_IN_STATUS, else the call's code.
///
/// # Safety
/// `st` points to the call's filled status of entry `i`.
unsafe fn entry_code(rc: c_int, st: *const Status) -> c_int {
    if rc == errclass::ERR_IN_STATUS {
        // SAFETY: see above.
        unsafe { (*st).MPI_ERROR }
    } else {
        rc
    }
}

/// An empty or missing request array: no tracked request can be in it, and the MPI must see
/// the application's own pointer and count (the track layer passes the array on through its
/// slice, whose pointer is dangling when empty) to report a bad argument as it would.
fn no_array(reqs: *mut Req, n: c_int) -> bool {
    reqs.is_null() || n <= 0
}

/// Slice view of the application's request array.
///
/// The `*_mpi` calls below take this slice once and hand the MPI `rs.as_mut_ptr()` (the same
/// address as `reqs` when the array is not empty), then read the handles the MPI wrote back
/// through the same slice. Passing the original `reqs` to the MPI while the slice is alive
/// would write behind the back of a unique borrow that is used again afterwards (undefined
/// behaviour under Rust's aliasing rules even where today's compiler does not exploit it).
/// An empty or missing array is forwarded with the application's own pointer before any
/// pointer is derived from the slice (its pointer would be dangling, not the application's).
///
/// # Safety
/// `reqs` points to `n` requests (or `n == 0`).
unsafe fn requests<'a>(reqs: *mut Req, n: c_int) -> &'a mut [Req] {
    if reqs.is_null() || n <= 0 {
        &mut []
    } else {
        // SAFETY: see above.
        unsafe { std::slice::from_raw_parts_mut(reqs, n as usize) }
    }
}

// The `*_mpi` calls do not drive progress: every entry point below drives it first, the track
// layer in its passes over the pipelined receives. A pass that completed an urgent receive
// leaves the receives of lower priority for the next pass (`pipeline::urgency`); driving again
// here, before the MPI's call, would unpack them all before the urgent one is returned.

/// `MPI_Wait`.
///
/// # Safety
/// As `MPI_Wait`.
pub(crate) unsafe fn wait_mpi(request: *mut Req, status: *mut Status) -> c_int {
    // SAFETY: a non-null request pointer is the application's handle.
    let Some(mut op) = (!request.is_null()).then(|| ops::take(unsafe { *request })).flatten() else {
        // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Wait(request, status) };
    };
    // SAFETY: as above.
    let before = unsafe { *request };
    let mut local = blank_status();
    let stp = status_or(status, &mut local);
    // SAFETY: forwarded with a real status.
    let rc = unsafe { next::MPI_Wait(request, stp) };
    // SAFETY: as above.
    let now = unsafe { *request };
    let mut failed = None;
    if op.persistent() || now == consts::request_null() {
        // SAFETY: completed; `stp` is its status.
        failed = unsafe { op.finish(rc, stp, true) };
    }
    if now != consts::request_null() {
        ops::restore(before, op); // live, or persistent (unless the MPI freed it: `forgetting_freed`)
    }
    super::raise_partial(rc, failed)
}

/// `MPI_Test`.
///
/// # Safety
/// As `MPI_Test`.
pub(crate) unsafe fn test_mpi(request: *mut Req, flag: *mut c_int, status: *mut Status) -> c_int {
    // SAFETY: a non-null request pointer is the application's handle.
    let Some(mut op) = (!request.is_null()).then(|| ops::take(unsafe { *request })).flatten() else {
        // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Test(request, flag, status) };
    };
    // SAFETY: as above.
    let before = unsafe { *request };
    let mut local = blank_status();
    let stp = status_or(status, &mut local);
    // SAFETY: forwarded with a real status.
    let rc = unsafe { next::MPI_Test(request, flag, stp) };
    // SAFETY: the MPI wrote the flag (the pointer is the application's).
    let done = !flag.is_null() && unsafe { *flag } != 0;
    // SAFETY: completed; `stp` is its status.
    let failed = if done { unsafe { op.finish(rc, stp, true) } } else { None };
    // SAFETY: as above.
    if unsafe { *request } != consts::request_null() {
        ops::restore(before, op); // as in `wait_mpi`
    }
    super::raise_partial(rc, failed)
}

/// `MPI_Waitall`.
///
/// # Safety
/// As `MPI_Waitall`.
pub(crate) unsafe fn waitall_mpi(count: c_int, reqs: *mut Req, statuses: *mut Status) -> c_int {
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    let mut taken = Taken::from(rs);
    if taken.is_empty() {
        // SAFETY: forwarded unchanged.
        return unsafe { super::waitall_guard::waitall(count, reqs, statuses) };
    }
    taken.unpack_as_they_arrive(rs);
    let before = rs.to_vec();
    let mut sts = Statuses::new(statuses, rs.len());
    // SAFETY: forwarded with a real status array of `count` entries; the MPI writes the handles
    // through `rs` (see [`requests`]).
    let rc = unsafe { super::waitall_guard::waitall(count, rs.as_mut_ptr(), sts.ptr()) };
    let pending = |i: usize, sts: &mut Statuses| {
        // SAFETY: entry `i` of the filled status array.
        rc == errclass::ERR_IN_STATUS && unsafe { (*sts.at(i)).MPI_ERROR } == errclass::ERR_PENDING
    };
    let done: Vec<bool> = (0..rs.len()).map(|i| !pending(i, &mut sts)).collect();
    // SAFETY: entry `i` of the filled status array.
    let codes: Vec<c_int> = (0..rs.len()).map(|i| unsafe { entry_code(rc, sts.at(i)) }).collect();
    let base = sts.ptr();
    // SAFETY: `i < count`; `rs` holds the handles as the MPI wrote them.
    let failed = taken.settle(&before, rs, |i| done[i], |i| unsafe { base.add(i) }, |i| codes[i]);
    // SAFETY: as above.
    unsafe { super::raise_partial_in_status(rc, &failed, 0..rs.len(), |i| base.add(i)) }
}

/// `MPI_Testall`: all or nothing.
///
/// # Safety
/// As `MPI_Testall`.
pub(crate) unsafe fn testall_mpi(count: c_int, reqs: *mut Req, flag: *mut c_int, statuses: *mut Status) -> c_int {
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    let taken = Taken::from(rs);
    if taken.is_empty() {
        // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Testall(count, reqs, flag, statuses) };
    }
    let before = rs.to_vec();
    let mut sts = Statuses::new(statuses, rs.len());
    // SAFETY: forwarded with a real status array; the MPI writes the handles through `rs`.
    let rc = unsafe { next::MPI_Testall(count, rs.as_mut_ptr(), flag, sts.ptr()) };
    // SAFETY: the MPI wrote the flag.
    let all = !flag.is_null() && unsafe { *flag } != 0;
    let base = sts.ptr();
    // SAFETY: entries below `count`.
    let codes: Vec<c_int> = (0..rs.len()).map(|i| unsafe { entry_code(rc, base.add(i)) }).collect();
    // SAFETY: entries below `count`; `rs` holds the handles as the MPI wrote them.
    let failed = taken.settle(&before, rs, |_| all, |i| unsafe { base.add(i) }, |i| codes[i]);
    // SAFETY: as above.
    unsafe { super::raise_partial_in_status(rc, &failed, 0..rs.len(), |i| base.add(i)) }
}

/// `MPI_Waitany` / `MPI_Testany` share this: one index completes (or none). `call(array,
/// status)` makes the MPI call on `array` (a pointer derived from the request slice, see
/// [`requests`]); `forward()` makes it unchanged.
///
/// # Safety
/// As `MPI_Waitany` / `MPI_Testany`.
unsafe fn any_of(
    count: c_int,
    reqs: *mut Req,
    index: *mut c_int,
    status: *mut Status,
    call: impl FnOnce(*mut Req, *mut Status) -> c_int,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    let taken = Taken::from(rs);
    if taken.is_empty() {
        return forward();
    }
    let before = rs.to_vec();
    let mut local = blank_status();
    let stp = status_or(status, &mut local);
    let rc = call(rs.as_mut_ptr(), stp);
    // SAFETY: the MPI wrote the index (the application's pointer).
    let idx = if index.is_null() { crate::ffi::UNDEFINED } else { unsafe { *index } };
    let failed = taken.settle(&before, rs, |i| idx >= 0 && i == idx as usize, |_| stp, |_| rc);
    super::raise_partial(rc, failed.first().map(|&(_, comm)| comm))
}

/// `MPI_Waitany`.
///
/// # Safety
/// As `MPI_Waitany`.
pub(crate) unsafe fn waitany_mpi(count: c_int, reqs: *mut Req, index: *mut c_int, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        any_of(count, reqs, index, status, |r, s| next::MPI_Waitany(count, r, index, s), || next::MPI_Waitany(count, reqs, index, status))
    }
}

/// `MPI_Testany`.
///
/// # Safety
/// As `MPI_Testany`.
pub(crate) unsafe fn testany_mpi(count: c_int, reqs: *mut Req, index: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        any_of(
            count,
            reqs,
            index,
            status,
            |r, s| next::MPI_Testany(count, r, index, flag, s),
            || next::MPI_Testany(count, reqs, index, flag, status),
        )
    }
}

/// `MPI_Waitsome` / `MPI_Testsome`: `outcount` indices complete. `call(array, statuses)` and
/// `forward()` as for [`any_of`].
///
/// # Safety
/// As `MPI_Waitsome` / `MPI_Testsome`.
unsafe fn some_of(
    incount: c_int,
    reqs: *mut Req,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
    call: impl FnOnce(*mut Req, *mut Status) -> c_int,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: the application's array of `incount` requests.
    let rs = unsafe { requests(reqs, incount) };
    let taken = Taken::from(rs);
    if taken.is_empty() {
        return forward();
    }
    let before = rs.to_vec();
    let mut sts = Statuses::new(statuses, rs.len());
    let rc = call(rs.as_mut_ptr(), sts.ptr());
    // SAFETY: the MPI wrote outcount and the first `outcount` indices.
    let out = if outcount.is_null() { 0 } else { unsafe { *outcount } };
    let done_idx: Vec<usize> = if out > 0 && !indices.is_null() {
        // SAFETY: see above.
        unsafe { std::slice::from_raw_parts(indices, out as usize) }.iter().map(|&i| i as usize).collect()
    } else {
        Vec::new()
    };
    let base = sts.ptr();
    // Status `k` belongs to request `indices[k]`.
    let slot = |i: usize| done_idx.iter().position(|&j| j == i);
    let failed = taken.settle(
        &before,
        rs,
        |i| slot(i).is_some(),
        // SAFETY: `k < outcount <= incount`.
        |i| unsafe { base.add(slot(i).unwrap_or(0)) },
        // SAFETY: as above.
        |i| unsafe { entry_code(rc, base.add(slot(i).unwrap_or(0))) },
    );
    // Reported by status entry: request `i`'s is `slot(i)`.
    let failed: Vec<(usize, mpi::MPI_Comm)> = failed.into_iter().map(|(i, c)| (slot(i).unwrap_or(0), c)).collect();
    // SAFETY: entries below `outcount`.
    unsafe { super::raise_partial_in_status(rc, &failed, 0..done_idx.len(), |k| base.add(k)) }
}

/// `MPI_Waitsome`.
///
/// # Safety
/// As `MPI_Waitsome`.
pub(crate) unsafe fn waitsome_mpi(
    incount: c_int,
    reqs: *mut Req,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        some_of(
            incount,
            reqs,
            outcount,
            indices,
            statuses,
            |r, s| next::MPI_Waitsome(incount, r, outcount, indices, s),
            || next::MPI_Waitsome(incount, reqs, outcount, indices, statuses),
        )
    }
}

/// `MPI_Testsome`.
///
/// # Safety
/// As `MPI_Testsome`.
pub(crate) unsafe fn testsome_mpi(
    incount: c_int,
    reqs: *mut Req,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        some_of(
            incount,
            reqs,
            outcount,
            indices,
            statuses,
            |r, s| next::MPI_Testsome(incount, r, outcount, indices, s),
            || next::MPI_Testsome(incount, reqs, outcount, indices, statuses),
        )
    }
}

/// `MPI_Request_get_status`: a completed receive is unpacked now (the application may read its
/// buffer as soon as the flag is set); the request stays tracked until it is freed.
///
/// # Safety
/// As `MPI_Request_get_status`.
pub(crate) unsafe fn request_get_status_mpi(request: Req, flag: *mut c_int, status: *mut Status) -> c_int {
    let Some(mut op) = ops::take(request) else {
        // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Request_get_status(request, flag, status) };
    };
    let mut local = blank_status();
    let stp = status_or(status, &mut local);
    // SAFETY: forwarded with a real status.
    let rc = unsafe { next::MPI_Request_get_status(request, flag, stp) };
    // SAFETY: the MPI wrote the flag.
    // SAFETY: complete; `stp` is its status.
    let failed = if !flag.is_null() && unsafe { *flag } != 0 { unsafe { op.finish(rc, stp, false) } } else { None };
    ops::restore(request, op);
    // MPICH's own MPI_Request_get_status raises a request's error through MPI_COMM_WORLD's
    // handler, whichever the request's (`QuietWorld`).
    super::raise_partial(rc, failed.map(|c| if cfg!(sluice_mpi = "mpich") { consts::comm_world() } else { c }))
}

/// `MPI_Cancel`: a persistent receive that `MPI_Start` served from a probed message is
/// inactive in the MPI (which would reject the cancel); its message was matched, so the cancel
/// fails, as MPI allows, and the receive completes normally. Everything else goes to the MPI.
///
/// # Safety
/// As `MPI_Cancel`.
pub unsafe fn cancel(request: *mut Req) -> c_int {
    // SAFETY: a non-null pointer to the application's handle.
    if !request.is_null() && super::pipeline::track::served_from_stash(unsafe { *request }) {
        return errclass::SUCCESS;
    }
    // SAFETY: forwarded unchanged.
    unsafe { next::MPI_Cancel(request) }
}

/// `MPI_Start`: a tracked persistent send packs the application's buffer first.
///
/// # Safety
/// As `MPI_Start`.
pub unsafe fn start(request: *mut Req) -> c_int {
    if !request.is_null() {
        // SAFETY: the application's persistent request.
        if let Some(rc) = unsafe { super::pipeline::persistent::start_from_stash(*request) } {
            return rc;
        }
    }
    // SAFETY: a non-null pointer to the application's handle.
    let Some(mut op) = (!request.is_null()).then(|| ops::take(unsafe { *request })).flatten() else {
        // SAFETY: forwarded unchanged.
        let rc = unsafe { next::MPI_Start(request) };
        if rc == errclass::SUCCESS {
            // SAFETY: the application's handle, non-null after a successful start.
            super::pipeline::track::started(unsafe { *request });
        }
        return rc;
    };
    activate(&mut op);
    // SAFETY: as above.
    let before = unsafe { *request };
    // SAFETY: forwarded unchanged.
    let rc = unsafe { next::MPI_Start(request) };
    set_active(&mut op, rc == errclass::SUCCESS);
    ops::restore(before, op);
    if rc == errclass::SUCCESS {
        super::pipeline::track::started(before);
    }
    rc
}

/// `MPI_Startall`.
///
/// # Safety
/// As `MPI_Startall`.
pub unsafe fn startall(count: c_int, reqs: *mut Req) -> c_int {
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    if super::pipeline::stash::any() && super::pipeline::persistent::any() {
        // A probed message may be served to some of them: start one by one (MPI_Startall is
        // MPI_Start of each request, in any order).
        for r in rs.iter_mut() {
            // SAFETY: one of the application's requests.
            let rc = unsafe { start(r) };
            if rc != errclass::SUCCESS {
                return rc;
            }
        }
        return errclass::SUCCESS;
    }
    let mut taken = Taken::from(rs);
    if taken.is_empty() {
        // SAFETY: forwarded unchanged (the array through `rs`, see [`requests`]).
        let rc = unsafe { next::MPI_Startall(count, if reqs.is_null() { reqs } else { rs.as_mut_ptr() }) };
        if rc == errclass::SUCCESS && super::pipeline::track::any() {
            rs.iter().for_each(|&r| super::pipeline::track::started(r));
        }
        return rc;
    }
    taken.0.iter_mut().for_each(|(_, op)| activate(op));
    let before = rs.to_vec();
    // SAFETY: forwarded unchanged (the array through `rs`, see [`requests`]).
    let rc = unsafe { next::MPI_Startall(count, rs.as_mut_ptr()) };
    for (i, mut op) in taken.0 {
        set_active(&mut op, rc == errclass::SUCCESS);
        ops::restore(before[i], op);
    }
    if rc == errclass::SUCCESS && super::pipeline::track::any() {
        before.iter().for_each(|&r| super::pipeline::track::started(r));
    }
    rc
}

/// Records whether a persistent operation was started (only point-to-point ones are).
fn set_active(op: &mut Entry, started: bool) {
    if let Entry::P2p(op) = op {
        op.active = started;
    }
}

/// Prepares a persistent operation for one more activation.
fn activate(op: &mut Entry) {
    let Entry::P2p(op) = op else { return };
    let user = op.user as *const std::ffi::c_void;
    match op.dir {
        // SAFETY: the buffer given to MPI_Send_init stays valid for the request's lifetime.
        ops::Dir::Send => unsafe { op.layout.clone().pack(user, &mut op.staging) },
        ops::Dir::SendPipelined { peer, arena } => {
            let src = super::pipeline::send::Source::Engine(&op.layout, user);
            // SAFETY: as above; the staging buffer is M0's (S* bytes), which the MPI does not
            // read while the request is inactive.
            unsafe { super::pipeline::send::refill(src, op.layout.bytes(), peer, arena, &mut op.staging) };
        }
        ops::Dir::Recv => {}
    }
    op.active = true;
}

/// `MPI_Probe`: finishes detached requests first (an application that freed an active receive
/// may poll with probes until its data is there, as progress makes it land with the bare MPI).
///
/// # Safety
/// As `MPI_Probe`.
pub unsafe fn probe(source: c_int, tag: c_int, comm: mpi::MPI_Comm, status: *mut Status) -> c_int {
    progress::drive();
    if super::pipeline::reserved() != 0 {
        // SAFETY: forwarded contract (a null flag: blocking).
        return unsafe { super::pipeline::stash::probe(source, tag, comm, std::ptr::null_mut(), status) };
    }
    // SAFETY: forwarded unchanged.
    unsafe { next::MPI_Probe(source, tag, comm, status) }
}

/// `MPI_Iprobe`: as [`probe`].
///
/// # Safety
/// As `MPI_Iprobe`.
pub unsafe fn iprobe(source: c_int, tag: c_int, comm: mpi::MPI_Comm, flag: *mut c_int, status: *mut Status) -> c_int {
    progress::drive();
    if super::pipeline::reserved() != 0 && !flag.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { super::pipeline::stash::probe(source, tag, comm, flag, status) };
    }
    // SAFETY: forwarded unchanged.
    unsafe { next::MPI_Iprobe(source, tag, comm, flag, status) }
}

/// `MPI_Mprobe`: a pipelined message is taken at once (its size is in its header).
///
/// # Safety
/// As `MPI_Mprobe`.
pub unsafe fn mprobe(source: c_int, tag: c_int, comm: mpi::MPI_Comm, message: *mut mpi::MPI_Message, status: *mut Status) -> c_int {
    progress::drive();
    let rc = if super::pipeline::reserved() != 0 {
        // SAFETY: forwarded contract (a null flag: blocking).
        unsafe { super::pipeline::stash::mprobe(source, tag, comm, std::ptr::null_mut(), message, status) }
    } else {
        // SAFETY: forwarded unchanged.
        unsafe { next::MPI_Mprobe(source, tag, comm, message, status) }
    };
    if rc == errclass::SUCCESS && !message.is_null() {
        // SAFETY: the MPI (or the stash) wrote the message handle.
        comm_hints::note_matched(comm, unsafe { *message });
    }
    rc
}

/// `MPI_Improbe`: as [`mprobe`].
///
/// # Safety
/// As `MPI_Improbe`.
pub unsafe fn improbe(
    source: c_int,
    tag: c_int,
    comm: mpi::MPI_Comm,
    flag: *mut c_int,
    message: *mut mpi::MPI_Message,
    status: *mut Status,
) -> c_int {
    progress::drive();
    let rc = if super::pipeline::reserved() != 0 && !flag.is_null() {
        // SAFETY: forwarded contract.
        unsafe { super::pipeline::stash::mprobe(source, tag, comm, flag, message, status) }
    } else {
        // SAFETY: forwarded unchanged.
        unsafe { next::MPI_Improbe(source, tag, comm, flag, message, status) }
    };
    // SAFETY: on success the MPI (or the stash) wrote the flag, and the handle when it is set.
    if rc == errclass::SUCCESS && !flag.is_null() && !message.is_null() && unsafe { *flag } != 0 {
        // SAFETY: as above.
        comm_hints::note_matched(comm, unsafe { *message });
    }
    rc
}

// ---- the application's entry points: pipelined receives first, then the calls above --------

/// Runs the completion call `call` on the `count` requests at `reqs` and forgets sluice's
/// records (`pipeline::persistent`) of the persistent receives it freed: Open MPI 4.1 frees a
/// persistent request whose completion failed (its error handler's invocation releases it and
/// sets the handle to `MPI_REQUEST_NULL`), where MPICH leaves it inactive (measured:
/// `tests/c/p2p_persistent_failed.c`). The handle value may name another request next, so the
/// pipeline's entry of such a receive goes too (the engine path's entries follow the handles
/// the call leaves: `Taken::settle`, `track::settle`). At `MPI_THREAD_MULTIPLE` another
/// thread could be given the handle value between the MPI's free and this clean-up (a window of
/// a few instructions after a failed completion of a persistent receive).
///
/// # Safety
/// `reqs` is null or points to `count` requests; `call` is the completion call on them.
unsafe fn forgetting_freed(reqs: *mut Req, count: c_int, call: impl FnOnce() -> c_int) -> c_int {
    if !cfg!(sluice_mpi = "openmpi") || !super::pipeline::persistent::any() || reqs.is_null() || count <= 0 {
        return call();
    }
    // The handles before the call, on the stack for the usual few (this runs on every
    // completion call of the full path while a persistent receive is recorded).
    let n = count as usize;
    let (mut small, mut large) = ([consts::request_null(); 16], Vec::new());
    {
        // SAFETY: forwarded contract; read before the call writes the handles.
        let now = unsafe { std::slice::from_raw_parts(reqs, n) };
        match small.get_mut(..n) {
            Some(s) => s.copy_from_slice(now),
            None => large.extend_from_slice(now),
        }
    }
    let before: &[Req] = if n <= small.len() { &small[..n] } else { &large };
    let rc = call();
    if rc != errclass::SUCCESS {
        for (i, &b) in before.iter().enumerate() {
            // SAFETY: as above; the call is over.
            if b != consts::request_null() && unsafe { *reqs.add(i) } == consts::request_null() {
                super::pipeline::persistent::forget(b);
                track::released_by_mpi(b);
            }
        }
    }
    rc
}

/// `MPI_Wait`.
///
/// # Safety
/// As `MPI_Wait`.
pub unsafe fn wait(request: *mut Req, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(request, 1, || wait_layers(request, status)) }
}

/// `MPI_Wait` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Wait`.
unsafe fn wait_layers(request: *mut Req, status: *mut Status) -> c_int {
    if !track::any() || request.is_null() {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { wait_mpi(request, status) };
    }
    // SAFETY: forwarded contract.
    unsafe { track::wait(request, status, |r, s| wait_mpi(r, s)) }
}

/// `MPI_Test`.
///
/// # Safety
/// As `MPI_Test`.
pub unsafe fn test(request: *mut Req, flag: *mut c_int, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(request, 1, || test_layers(request, flag, status)) }
}

/// `MPI_Test` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Test`.
unsafe fn test_layers(request: *mut Req, flag: *mut c_int, status: *mut Status) -> c_int {
    if !track::any() || request.is_null() || flag.is_null() {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { test_mpi(request, flag, status) };
    }
    // SAFETY: forwarded contract.
    unsafe { track::test(request, flag, status, |r, f, s| test_mpi(r, f, s)) }
}

/// `MPI_Request_get_status`.
///
/// # Safety
/// As `MPI_Request_get_status`.
pub unsafe fn request_get_status(request: Req, flag: *mut c_int, status: *mut Status) -> c_int {
    if !track::any() || flag.is_null() {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { request_get_status_mpi(request, flag, status) };
    }
    // SAFETY: forwarded contract.
    unsafe { track::get_status(request, flag, status, |r, f, s| request_get_status_mpi(r, f, s)) }
}

/// `MPI_Request_free`.
///
/// # Safety
/// As `MPI_Request_free`.
pub unsafe fn request_free(request: *mut Req) -> c_int {
    if !request.is_null() {
        // SAFETY: the application's handle (freed now: the MPI may reuse its value).
        super::pipeline::persistent::forget(unsafe { *request });
    }
    if !track::any() || request.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { ops::request_free_mpi(request) };
    }
    // SAFETY: forwarded contract.
    unsafe { track::request_free(request, |r| ops::request_free_mpi(r)) }
}

/// `MPI_Waitall`.
///
/// # Safety
/// As `MPI_Waitall`.
pub unsafe fn waitall(count: c_int, reqs: *mut Req, statuses: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(reqs, count, || waitall_layers(count, reqs, statuses)) }
}

/// `MPI_Waitall` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Waitall`.
unsafe fn waitall_layers(count: c_int, reqs: *mut Req, statuses: *mut Status) -> c_int {
    if !track::any() || no_array(reqs, count) {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { waitall_mpi(count, reqs, statuses) };
    }
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    // SAFETY: forwarded contract.
    unsafe { track::all(rs, std::ptr::null_mut(), statuses, true, |r, st| waitall_mpi(count, r, st)) }
}

/// `MPI_Testall`.
///
/// # Safety
/// As `MPI_Testall`.
pub unsafe fn testall(count: c_int, reqs: *mut Req, flag: *mut c_int, statuses: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(reqs, count, || testall_layers(count, reqs, flag, statuses)) }
}

/// `MPI_Testall` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Testall`.
unsafe fn testall_layers(count: c_int, reqs: *mut Req, flag: *mut c_int, statuses: *mut Status) -> c_int {
    if !track::any() || flag.is_null() || no_array(reqs, count) {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { testall_mpi(count, reqs, flag, statuses) };
    }
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    // SAFETY: forwarded contract.
    unsafe { track::all(rs, flag, statuses, false, |r, st| testall_mpi(count, r, flag, st)) }
}

/// `MPI_Waitany` / `MPI_Testany` with pipelined receives among the requests.
///
/// # Safety
/// As the MPI call.
unsafe fn any_tracked(count: c_int, reqs: *mut Req, index: *mut c_int, flag: *mut c_int, status: *mut Status, wait: bool) -> c_int {
    // SAFETY: the application's array of `count` requests.
    let rs = unsafe { requests(reqs, count) };
    let masked = |copy: &mut [Req]| {
        let mut f = 0;
        // SAFETY: a copy of the application's array; index and status are the application's.
        let rc = unsafe { testany_mpi(count, copy.as_mut_ptr(), index, &mut f, status) };
        // The MPI's flag is the answer when nothing is hidden from it (no completion: 0, or 1
        // with MPI_UNDEFINED when every request is inactive); `none` corrects it otherwise.
        if !flag.is_null() {
            // SAFETY: the application's flag (Testany).
            unsafe { *flag = f };
        }
        // SAFETY: the MPI wrote the index.
        let i = unsafe { *index };
        (rc, Some(if f != 0 && i >= 0 { vec![i as usize] } else { Vec::new() }))
    };
    let blocking = |r: *mut Req| {
        // SAFETY: forwarded contract (nothing hidden); `r` is the application's array.
        let rc = unsafe { waitany_mpi(count, r, index, status) };
        // SAFETY: the MPI wrote the index.
        let i = unsafe { *index };
        (rc, Some(if i >= 0 { vec![i as usize] } else { Vec::new() }))
    };
    let none = || {
        // SAFETY: the application's output pointers.
        unsafe {
            *index = crate::ffi::UNDEFINED;
            if !flag.is_null() {
                *flag = 0;
            }
        }
    };
    let own = |done: &[usize]| {
        // SAFETY: the application's output pointers.
        unsafe {
            *index = done[0] as c_int;
            if !flag.is_null() {
                *flag = 1;
            }
        }
    };
    // SAFETY: forwarded contract.
    let rc = unsafe { track::any_or_some(rs, wait, status, true, masked, blocking, none, own) };
    if !flag.is_null() && wait {
        // SAFETY: unused for Waitany.
        unsafe { *flag = 1 };
    }
    rc
}

/// `MPI_Waitany`.
///
/// # Safety
/// As `MPI_Waitany`.
pub unsafe fn waitany(count: c_int, reqs: *mut Req, index: *mut c_int, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(reqs, count, || waitany_layers(count, reqs, index, status)) }
}

/// `MPI_Waitany` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Waitany`.
unsafe fn waitany_layers(count: c_int, reqs: *mut Req, index: *mut c_int, status: *mut Status) -> c_int {
    if !track::any() || index.is_null() || no_array(reqs, count) {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { waitany_mpi(count, reqs, index, status) };
    }
    // SAFETY: forwarded contract.
    unsafe { any_tracked(count, reqs, index, std::ptr::null_mut(), status, true) }
}

/// `MPI_Testany`.
///
/// # Safety
/// As `MPI_Testany`.
pub unsafe fn testany(count: c_int, reqs: *mut Req, index: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(reqs, count, || testany_layers(count, reqs, index, flag, status)) }
}

/// `MPI_Testany` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Testany`.
unsafe fn testany_layers(count: c_int, reqs: *mut Req, index: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int {
    if !track::any() || index.is_null() || flag.is_null() || no_array(reqs, count) {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { testany_mpi(count, reqs, index, flag, status) };
    }
    // SAFETY: forwarded contract.
    let rc = unsafe { any_tracked(count, reqs, index, flag, status, false) };
    // SAFETY: the application's pointers; a completed index means flag is set.
    unsafe {
        if *index >= 0 {
            *flag = 1;
        }
    }
    rc
}

/// `MPI_Waitsome` / `MPI_Testsome` with pipelined receives among the requests.
///
/// # Safety
/// As the MPI call.
unsafe fn some_tracked(
    incount: c_int,
    reqs: *mut Req,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
    wait: bool,
) -> c_int {
    // SAFETY: the application's array of `incount` requests.
    let rs = unsafe { requests(reqs, incount) };
    let read = |rc: c_int| {
        // SAFETY: the MPI wrote outcount and that many indices.
        let n = unsafe { *outcount };
        let done = if n > 0 && n != crate::ffi::UNDEFINED {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(indices, n as usize) }.iter().map(|&i| i as usize).collect()
        } else {
            Vec::new()
        };
        (rc, Some(done))
    };
    let masked = |copy: &mut [Req]| {
        // SAFETY: a copy of the application's array; the outputs are the application's.
        read(unsafe { testsome_mpi(incount, copy.as_mut_ptr(), outcount, indices, statuses) })
    };
    // SAFETY: forwarded contract (nothing hidden); `r` is the application's array.
    let blocking = |r: *mut Req| read(unsafe { waitsome_mpi(incount, r, outcount, indices, statuses) });
    // SAFETY: the application's output.
    let none = || unsafe { *outcount = 0 };
    let own = |done: &[usize]| {
        // SAFETY: the application's outputs: `indices` has room for `incount` entries.
        unsafe {
            *outcount = done.len() as c_int;
            for (k, &i) in done.iter().enumerate() {
                *indices.add(k) = i as c_int;
            }
        }
    };
    // SAFETY: forwarded contract.
    unsafe { track::any_or_some(rs, wait, statuses, false, masked, blocking, none, own) }
}

/// `MPI_Waitsome`.
///
/// # Safety
/// As `MPI_Waitsome`.
pub unsafe fn waitsome(incount: c_int, reqs: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(reqs, incount, || waitsome_layers(incount, reqs, outcount, indices, statuses)) }
}

/// `MPI_Waitsome` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Waitsome`.
unsafe fn waitsome_layers(incount: c_int, reqs: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int {
    if !track::any() || outcount.is_null() || indices.is_null() || no_array(reqs, incount) {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { waitsome_mpi(incount, reqs, outcount, indices, statuses) };
    }
    // SAFETY: forwarded contract.
    unsafe { some_tracked(incount, reqs, outcount, indices, statuses, true) }
}

/// `MPI_Testsome`.
///
/// # Safety
/// As `MPI_Testsome`.
pub unsafe fn testsome(incount: c_int, reqs: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { forgetting_freed(reqs, incount, || testsome_layers(incount, reqs, outcount, indices, statuses)) }
}

/// `MPI_Testsome` through the pipeline's and the engine path's tables.
///
/// # Safety
/// As `MPI_Testsome`.
unsafe fn testsome_layers(incount: c_int, reqs: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int {
    if !track::any() || outcount.is_null() || indices.is_null() || no_array(reqs, incount) {
        progress::drive();
        // SAFETY: forwarded contract.
        return unsafe { testsome_mpi(incount, reqs, outcount, indices, statuses) };
    }
    // SAFETY: forwarded contract.
    unsafe { some_tracked(incount, reqs, outcount, indices, statuses, false) }
}
