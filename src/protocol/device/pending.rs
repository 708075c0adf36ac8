//! Nonblocking and persistent operations with staged device buffers: the staged copies live with
//! the request, outputs go back to the device when a call of the Wait/Test family reports the
//! request complete, and persistent sends are filled again at every `MPI_Start`.
//!
//! The table sits outside the point-to-point protocol's own completion machinery: each wrapper
//! below takes the entries of the requests it is given, calls the protocol's handler of the same
//! name (which finishes sluice's own work on the host copies: unpacking, pipelined chunks), then
//! finishes the entries whose requests that call completed. With no entry at all, each wrapper
//! is one load and a call.
//!
//! A request the application frees while active is kept: sluice completes it in later calls of
//! the family (and at `MPI_Finalize`), then copies its outputs back and frees its buffers.

use rustc_hash::FxHashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::stream::Feed;
use super::{copy_failed, Staged};
use crate::ffi::{consts, errclass, is_shared_request, mpi, request_from_key, request_key, UNDEFINED};
use crate::protocol::p2p::{blank_status, complete, Source};

type Req = mpi::MPI_Request;
type Status = mpi::MPI_Status;

/// One operation's staged buffers.
#[derive(Debug)]
struct Op {
    call: &'static str,
    stages: Vec<Staged>,
    persistent: bool,
    /// Started and not yet finished (outputs not yet copied back).
    active: bool,
    /// A nonblocking receive's feed (its one stage's bytes go to the device as a pipelined
    /// message lands, or straight from a peer's device memory): finished instead of a flush.
    feed: Option<Feed>,
}

impl Op {
    /// Copies the outputs back once per activation; the class of a failed copy (raised).
    fn finish(&mut self) -> c_int {
        if !std::mem::replace(&mut self.active, false) {
            return errclass::SUCCESS;
        }
        if let Some(feed) = self.feed.take() {
            crate::protocol::p2p::pipeline::incoming::unwatch(feed.base());
            // The whole copy: it was filled before the receive, so bytes past the message are
            // the device's own.
            let len = self.stages.first().map_or(0, |s| s.bytes());
            return match feed.finish(len) {
                Ok(()) => errclass::SUCCESS,
                Err(e) => copy_failed(self.call, consts::comm_world(), &e),
            };
        }
        super::flush_all(self.call, &mut self.stages, errclass::SUCCESS, consts::comm_world())
    }

    /// Fills every staged copy again for a new activation (inputs are sent from it; outputs
    /// keep the bytes the MPI does not write).
    fn start(&mut self) -> c_int {
        for s in &mut self.stages {
            if let Err(e) = s.fill() {
                return copy_failed(self.call, consts::comm_world(), &e);
            }
        }
        self.active = true;
        errclass::SUCCESS
    }
}

static OPS: Mutex<Option<FxHashMap<usize, Op>>> = Mutex::new(None);
static DETACHED: Mutex<Vec<(usize, Op)>> = Mutex::new(Vec::new());
/// Entries in OPS and DETACHED together.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Entries in DETACHED, which only the progress engine completes.
static FREED: Source = Source::new("gpu-freed-requests", Some(poll_freed));

/// The completion calls below drive the engine while this very list may be locked (at
/// finalize, or a poll that reached them): skipped then, as the holder is working on it.
fn poll_freed() {
    match DETACHED.try_lock() {
        Ok(g) => complete_detached(g, false),
        Err(std::sync::TryLockError::Poisoned(e)) => complete_detached(e.into_inner(), false),
        Err(std::sync::TryLockError::WouldBlock) => {}
    }
}

#[inline(always)]
fn any() -> bool {
    COUNT.load(Ordering::Acquire) != 0
}

/// Keeps `stages` with `request` until it completes (`persistent`: until it is freed, active
/// from each start). A shared, already complete handle is finished at once.
pub fn track(call: &'static str, request: Req, stages: Vec<Staged>, persistent: bool) {
    track_fed(call, request, stages, persistent, None);
}

/// [`track`] of a nonblocking receive whose one stage has `feed` registered with the pipelined
/// protocol (`incoming::watch_at`).
pub fn track_fed(call: &'static str, request: Req, stages: Vec<Staged>, persistent: bool, feed: Option<Feed>) {
    let mut op = Op { call, stages, persistent, active: !persistent, feed };
    if !persistent && is_shared_request(request) {
        op.finish();
        return;
    }
    put(request_key(request), op);
}

fn put(key: usize, op: Op) {
    let mut g = OPS.lock().unwrap_or_else(|e| e.into_inner());
    if g.get_or_insert_with(FxHashMap::default).insert(key, op).is_none() {
        COUNT.fetch_add(1, Ordering::AcqRel);
    }
}

fn take(request: Req) -> Option<Op> {
    let mut g = OPS.lock().unwrap_or_else(|e| e.into_inner());
    let op = g.as_mut()?.remove(&request_key(request))?;
    COUNT.fetch_sub(1, Ordering::AcqRel);
    Some(op)
}

/// The entries of `reqs`, with their indices.
fn take_all(reqs: &[Req]) -> Vec<(usize, Op)> {
    reqs.iter().enumerate().filter_map(|(i, &r)| take(r).map(|op| (i, op))).collect()
}

/// Finishes the taken entries whose request the call completed (`done(i)`) and puts back the
/// others and the persistent ones under their handles from before the call, unless the call
/// left the handle null (`now`: Open MPI frees a persistent request whose completion failed,
/// `p2p::complete::forgetting_freed`). Returns `rc`, or the class of a failed copy.
fn settle(taken: Vec<(usize, Op)>, before: &[Req], now: &[Req], done: impl Fn(usize) -> bool, rc: c_int) -> c_int {
    let mut out = rc;
    for (i, mut op) in taken {
        if done(i) {
            let r = op.finish();
            if r != errclass::SUCCESS && out == errclass::SUCCESS {
                out = r;
            }
            if !op.persistent {
                continue;
            }
        }
        if now.get(i).is_some_and(|&h| h != consts::request_null()) {
            put(request_key(before[i]), op);
        }
    }
    out
}

/// Whether entry `i` of a multiple-completion call completed: all of them, except those a
/// `MPI_ERR_IN_STATUS` result marks pending.
///
/// # Safety
/// `statuses` is null, `MPI_STATUSES_IGNORE` or the call's array of at least `i + 1` statuses.
unsafe fn not_pending(rc: c_int, statuses: *const Status, i: usize) -> bool {
    if rc != errclass::ERR_IN_STATUS || statuses.is_null() || statuses == consts::statuses_ignore().cast_const() {
        return true;
    }
    // SAFETY: forwarded contract.
    unsafe { (*statuses.add(i)).MPI_ERROR != errclass::ERR_PENDING }
}

/// The application's array of `count` requests (empty for a null pointer or a bad count).
///
/// # Safety
/// A non-null `reqs` points to `count` requests.
unsafe fn handles(reqs: *mut Req, count: c_int) -> Vec<Req> {
    if reqs.is_null() || count <= 0 {
        return Vec::new();
    }
    // SAFETY: forwarded contract.
    unsafe { std::slice::from_raw_parts(reqs, count as usize) }.to_vec()
}

/// Completes freed requests that sluice still holds (`wait`: waits for each, at finalize).
fn progress_detached(wait: bool) {
    complete_detached(DETACHED.lock().unwrap_or_else(|e| e.into_inner()), wait);
}

fn complete_detached(mut g: std::sync::MutexGuard<'_, Vec<(usize, Op)>>, wait: bool) {
    let mut i = 0;
    while i < g.len() {
        let mut req = request_from_key(g[i].0);
        let mut st = blank_status();
        let mut flag = 0;
        // SAFETY: a live request sluice holds; writes the flag and status.
        unsafe {
            if wait {
                complete::wait(&mut req, &mut st);
                flag = 1;
            } else {
                complete::test(&mut req, &mut flag, &mut st);
            }
        }
        if flag == 0 {
            i += 1;
            continue;
        }
        let (_, mut op) = g.swap_remove(i);
        FREED.sub(1);
        COUNT.fetch_sub(1, Ordering::AcqRel);
        op.finish();
        if op.persistent && req != consts::request_null() {
            // SAFETY: a persistent request the application freed while active.
            unsafe { complete::request_free(&mut req) };
        }
    }
}

/// Drives the progress engine (the freed requests here among its sources).
#[inline(always)]
fn progress() {
    crate::transfer::runtime::progress::drive();
}

/// `MPI_Finalize`: completes the freed requests sluice still holds.
pub fn finalize() {
    if any() {
        progress_detached(true);
    }
}

/// `MPI_Wait`.
///
/// # Safety
/// As `MPI_Wait`.
pub unsafe fn wait(request: *mut Req, status: *mut Status) -> c_int {
    if !any() || request.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::wait(request, status) };
    }
    progress();
    // SAFETY: the application's handle.
    let before = [unsafe { *request }];
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::wait(request, status) };
    // SAFETY: the application's handle, as the call left it.
    settle(taken, &before, &[unsafe { *request }], |_| true, rc)
}

/// `MPI_Test`.
///
/// # Safety
/// As `MPI_Test`.
pub unsafe fn test(request: *mut Req, flag: *mut c_int, status: *mut Status) -> c_int {
    if !any() || request.is_null() || flag.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::test(request, flag, status) };
    }
    progress();
    // SAFETY: the application's handle.
    let before = [unsafe { *request }];
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::test(request, flag, status) };
    // SAFETY: the application's flag, written by the call.
    let done = unsafe { *flag } != 0;
    // SAFETY: the application's handle, as the call left it.
    settle(taken, &before, &[unsafe { *request }], |_| done, rc)
}

/// `MPI_Waitall`.
///
/// # Safety
/// As `MPI_Waitall`.
pub unsafe fn waitall(count: c_int, reqs: *mut Req, statuses: *mut Status) -> c_int {
    if !any() {
        // SAFETY: forwarded contract.
        return unsafe { complete::waitall(count, reqs, statuses) };
    }
    progress();
    // SAFETY: forwarded contract.
    let before = unsafe { handles(reqs, count) };
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::waitall(count, reqs, statuses) };
    // SAFETY: forwarded contract; the handles as the call left them.
    settle(taken, &before, &unsafe { handles(reqs, count) }, |i| unsafe { not_pending(rc, statuses, i) }, rc)
}

/// `MPI_Testall`.
///
/// # Safety
/// As `MPI_Testall`.
pub unsafe fn testall(count: c_int, reqs: *mut Req, flag: *mut c_int, statuses: *mut Status) -> c_int {
    if !any() || flag.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::testall(count, reqs, flag, statuses) };
    }
    progress();
    // SAFETY: forwarded contract.
    let before = unsafe { handles(reqs, count) };
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::testall(count, reqs, flag, statuses) };
    // SAFETY: the application's flag, written by the call.
    let all = unsafe { *flag } != 0;
    // SAFETY: forwarded contract; the handles as the call left them.
    settle(taken, &before, &unsafe { handles(reqs, count) }, |i| all && unsafe { not_pending(rc, statuses, i) }, rc)
}

/// `MPI_Waitany`.
///
/// # Safety
/// As `MPI_Waitany`.
pub unsafe fn waitany(count: c_int, reqs: *mut Req, index: *mut c_int, status: *mut Status) -> c_int {
    if !any() || index.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::waitany(count, reqs, index, status) };
    }
    progress();
    // SAFETY: forwarded contract.
    let before = unsafe { handles(reqs, count) };
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::waitany(count, reqs, index, status) };
    // SAFETY: the application's index, written by the call.
    let k = unsafe { *index };
    // SAFETY: forwarded contract; the handles as the call left them.
    settle(taken, &before, &unsafe { handles(reqs, count) }, |i| k != UNDEFINED && i as c_int == k, rc)
}

/// `MPI_Testany`.
///
/// # Safety
/// As `MPI_Testany`.
pub unsafe fn testany(count: c_int, reqs: *mut Req, index: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int {
    if !any() || index.is_null() || flag.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::testany(count, reqs, index, flag, status) };
    }
    progress();
    // SAFETY: forwarded contract.
    let before = unsafe { handles(reqs, count) };
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::testany(count, reqs, index, flag, status) };
    // SAFETY: the application's index and flag, written by the call.
    let (k, f) = unsafe { (*index, *flag) };
    // SAFETY: forwarded contract; the handles as the call left them.
    settle(taken, &before, &unsafe { handles(reqs, count) }, |i| f != 0 && k != UNDEFINED && i as c_int == k, rc)
}

/// The indices a Waitsome/Testsome call reported.
///
/// # Safety
/// `outcount` and `indices` are the call's outputs.
unsafe fn reported(outcount: *const c_int, indices: *const c_int) -> Vec<usize> {
    // SAFETY: forwarded contract.
    let n = unsafe { *outcount };
    if n == UNDEFINED || n <= 0 || indices.is_null() {
        return Vec::new();
    }
    // SAFETY: the call wrote `n` indices.
    unsafe { std::slice::from_raw_parts(indices, n as usize) }.iter().map(|&i| i as usize).collect()
}

/// Waitsome/Testsome (`inner`, the protocol's handler of the same name): the entries of the
/// indices the call reports are finished.
///
/// # Safety
/// As `MPI_Waitsome`.
unsafe fn some(
    incount: c_int,
    reqs: *mut Req,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
    inner: unsafe fn(c_int, *mut Req, *mut c_int, *mut c_int, *mut Status) -> c_int,
) -> c_int {
    if !any() || outcount.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { inner(incount, reqs, outcount, indices, statuses) };
    }
    progress();
    // SAFETY: forwarded contract.
    let before = unsafe { handles(reqs, incount) };
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { inner(incount, reqs, outcount, indices, statuses) };
    // SAFETY: the call's outputs.
    let done = unsafe { reported(outcount, indices) };
    // SAFETY: forwarded contract; the handles as the call left them.
    settle(taken, &before, &unsafe { handles(reqs, incount) }, |i| done.contains(&i), rc)
}

/// `MPI_Waitsome`.
///
/// # Safety
/// As `MPI_Waitsome`.
pub unsafe fn waitsome(incount: c_int, reqs: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { some(incount, reqs, outcount, indices, statuses, complete::waitsome) }
}

/// `MPI_Testsome`.
///
/// # Safety
/// As `MPI_Testsome`.
pub unsafe fn testsome(incount: c_int, reqs: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { some(incount, reqs, outcount, indices, statuses, complete::testsome) }
}

/// `MPI_Request_get_status`: a complete request's outputs go back at once (the request stays
/// the application's to complete; its entry stays, finished).
///
/// # Safety
/// As `MPI_Request_get_status`.
pub unsafe fn request_get_status(request: Req, flag: *mut c_int, status: *mut Status) -> c_int {
    if !any() || flag.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::request_get_status(request, flag, status) };
    }
    progress();
    let before = [request];
    let taken = take_all(&before);
    // SAFETY: forwarded contract.
    let rc = unsafe { complete::request_get_status(request, flag, status) };
    // SAFETY: the application's flag, written by the call.
    let done = unsafe { *flag } != 0;
    let mut out = rc;
    for (_, mut op) in taken {
        if done {
            let r = op.finish();
            if r != errclass::SUCCESS && out == errclass::SUCCESS {
                out = r;
            }
        }
        put(request_key(request), op);
    }
    out
}

/// `MPI_Request_free`: an active operation's request is kept and completed later.
///
/// # Safety
/// As `MPI_Request_free`.
pub unsafe fn request_free(request: *mut Req) -> c_int {
    if !any() || request.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { complete::request_free(request) };
    }
    // SAFETY: the application's handle.
    let r = unsafe { *request };
    match take(r) {
        Some(op) if op.active => {
            let mut g = DETACHED.lock().unwrap_or_else(|e| e.into_inner());
            // Counted under the lock, before another thread's `poll_freed` can see the entry:
            // counted after, that thread could complete it and take both counts off first, and
            // the pending-work sum (the completion calls' fast path) would dip below the truth
            // for a moment (as in `pipeline::send::hold`).
            COUNT.fetch_add(1, Ordering::AcqRel);
            FREED.add(1);
            g.push((request_key(r), op));
            drop(g);
            // SAFETY: the application's handle: freed, from its point of view.
            unsafe { *request = consts::request_null() };
            errclass::SUCCESS
        }
        // SAFETY: forwarded contract (an inactive entry's buffers are dropped with it).
        _ => unsafe { complete::request_free(request) },
    }
}

/// `MPI_Start`: a persistent operation's staged copies are filled first.
///
/// # Safety
/// As `MPI_Start`.
pub unsafe fn start(request: *mut Req) -> c_int {
    if any() && !request.is_null() {
        // SAFETY: the application's handle.
        let r = unsafe { *request };
        if let Some(mut op) = take(r) {
            let rc = op.start();
            put(request_key(r), op);
            if rc != errclass::SUCCESS {
                return rc;
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe { complete::start(request) }
}

/// `MPI_Startall`.
///
/// # Safety
/// As `MPI_Startall`.
pub unsafe fn startall(count: c_int, reqs: *mut Req) -> c_int {
    if any() {
        // SAFETY: forwarded contract.
        for r in unsafe { handles(reqs, count) } {
            if let Some(mut op) = take(r) {
                let rc = op.start();
                put(request_key(r), op);
                if rc != errclass::SUCCESS {
                    return rc;
                }
            }
        }
    }
    // SAFETY: forwarded contract.
    unsafe { complete::startall(count, reqs) }
}
