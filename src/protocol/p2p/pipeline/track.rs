//! Nonblocking receives that may receive an M0 (capacity at least S\*), and the completion
//! calls' handling of them.
//!
//! The application's handle is the real request of the receive, **kept alive** until the
//! whole transfer has arrived: sluice tests it with `PMPI_Request_get_status`, which never frees
//! it, and hides it from the MPI's completion calls (`MPI_REQUEST_NULL` in a copy of the array)
//! while chunks are outstanding. Once the transfer is complete the request is complete in the
//! MPI too; the completion call then lets the MPI complete it and sluice corrects the status
//! (the byte count of the whole message, truncation).
//!
//! Entries are taken out of the table while a thread works on them; another thread asking
//! about the same request meanwhile sees it as not yet complete.

use rustc_hash::FxHashMap;
use std::ffi::c_int;
use std::sync::Mutex;

use super::incoming::{Dest, Incoming, Outcome};
use super::placeholder::Placeholder;
use super::reserved;
use super::urgency;
use crate::ffi::{consts, errclass, mpi, request_from_key, request_key};
use crate::protocol::comm_hints::CommHints;
use crate::protocol::p2p::Layout;
use crate::protocol::p2p::{blank_status, ops, received_bytes, Source};

type Req = mpi::MPI_Request;
type Status = mpi::MPI_Status;

enum State {
    /// M0 not seen yet: the request may still turn out to be an ordinary message.
    Armed,
    /// M0 arrived; chunks are arriving.
    Busy(Box<Incoming>),
    /// Every chunk arrived; the MPI request is complete and waits for the application.
    Done(Outcome),
}

/// Where a tracked receive's M0 lands.
pub enum Landing {
    /// Contiguous memory of the application (the data start).
    Bytes(*mut u8),
    /// Staging of the receive's `ops` entry (sluice's engine path).
    Staged,
    /// The application's buffer, through the MPI's own engine (a compiled type sluice leaves to
    /// the MPI).
    InPlace(Layout, *mut std::ffi::c_void),
    /// Served from the probe stash: the request is a placeholder, completed by sluice when the
    /// transfer is done (`None`: completed already, or a persistent request sluice completes
    /// itself).
    Served(Option<Placeholder>),
}

/// A tracked receive.
pub struct Entry {
    state: State,
    landing: Landing,
    capacity: usize,
    comm: usize,
    persistent: bool,
    /// Started and not yet found to hold an ordinary message or completed: the only receives
    /// progress must look at (an inactive persistent receive holds no message, and asking the
    /// MPI about it each time cost a call per recorded receive in every progress).
    active: bool,
    /// The application freed the request: sluice completes the transfer on its own.
    freed: bool,
    /// A persistent receive served from the stash (`persistent::start_from_stash`): its own
    /// entry, put back once the served transfer completed.
    resume: Option<Box<Entry>>,
    /// The communicator's keys, read when the receive was posted (the application may free the
    /// communicator before the message arrives): `sluice_priority` orders a sweep (`urgency`).
    hints: CommHints,
}

impl Entry {
    /// A receive of `capacity` bytes landing as `landing`.
    pub fn new(landing: Landing, capacity: usize, comm: mpi::MPI_Comm, persistent: bool) -> Entry {
        Entry {
            state: State::Armed,
            landing,
            capacity,
            comm: super::comm_key(comm),
            persistent,
            active: !persistent,
            freed: false,
            resume: None,
            hints: CommHints::of(comm),
        }
    }

    /// A persistent request served from the stash: inactive in the MPI, completed by sluice.
    fn self_completed(&self) -> bool {
        self.persistent && matches!(self.landing, Landing::Served(_))
    }
}

// SAFETY: the addresses are the application's receive buffer, valid until the receive completes
// (MPI's rule), from whichever thread completes it.
unsafe impl Send for Entry {}

/// `None`: taken out by a thread working on it.
static TABLE: Mutex<Option<FxHashMap<usize, Option<Entry>>>> = Mutex::new(None);
/// Tracked receives; the progress engine polls them ([`poll_receives`]).
static TRACKED: Source = Source::new("p2p-pipelined-receives", Some(poll_receives));

/// Whether any receive is tracked or any chunk is in flight (the completion calls' fast test).
#[inline]
pub fn any() -> bool {
    TRACKED.get() != 0
}

/// Number of tracked receives (leak checks).
pub fn tracked() -> usize {
    TRACKED.get()
}

/// Tracks a receive served from the probe stash under its placeholder `p`: its transfer
/// (`Ok`) is under way, or it is complete (`Err`: an ordinary message).
pub fn arm_served(p: Placeholder, t: Result<Incoming, Outcome>, comm: mpi::MPI_Comm) {
    let req = p.request();
    let (state, landing) = match t {
        Ok(t) => (State::Busy(Box::new(t)), Landing::Served(Some(p))),
        Err(o) => {
            p.complete(o.reported_bytes());
            (State::Done(o), Landing::Served(None))
        }
    };
    arm(
        req,
        Entry {
            state,
            landing,
            capacity: 0,
            comm: super::comm_key(comm),
            persistent: false,
            active: true,
            freed: false,
            resume: None,
            hints: CommHints::of(comm),
        },
    );
}

/// Tracks a persistent receive `req` that `MPI_Start` served from the probe stash (the MPI
/// request stays inactive): its own entry, if it has one, waits until the transfer is done.
pub fn arm_served_persistent(req: Req, t: Result<Incoming, Outcome>, comm: mpi::MPI_Comm) {
    let resume = take_out_when_free(req).map(Box::new);
    let state = match t {
        Ok(t) => State::Busy(Box::new(t)),
        Err(o) => State::Done(o),
    };
    let landing = Landing::Served(None);
    let hints = CommHints::of(comm);
    arm(
        req,
        Entry { state, landing, capacity: 0, comm: super::comm_key(comm), persistent: true, active: true, freed: false, resume, hints },
    );
}

/// Tracks the receive the MPI just returned as `req`.
pub fn arm(req: Req, e: Entry) {
    let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    match g.get_or_insert_with(FxHashMap::default).insert(request_key(req), Some(e)) {
        None => TRACKED.add(1),
        // Every caller arms a handle that is not in the table (a new request, or one taken
        // out): one that is means two live requests share a handle value, or a stale entry.
        // A diagnostic for the flaky p2p_conf_threads failure (docs/protocol.md, Requests).
        Some(old) => log::error!(
            "request {:#x} armed for a pipelined receive while the handle was already tracked ({})",
            request_key(req),
            match old {
                None => "its slot held by a thread working on it".to_string(),
                Some(e) => format!(
                    "a stale entry: {}, active {}, freed {}, persistent {}",
                    match e.state {
                        State::Armed => "armed",
                        State::Busy(_) => "busy",
                        State::Done(_) => "done",
                    },
                    e.active,
                    e.freed,
                    e.persistent
                ),
            }
        ),
    }
}

/// Whether a pipelined receive is tracked under handle `req` (diagnostics: a new request of
/// another kind must not have the handle of a live tracked receive).
pub fn holds(req: Req) -> bool {
    any() && TABLE.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|m| m.contains_key(&request_key(req)))
}

enum Taken {
    /// Not tracked.
    No,
    /// Another thread is working on it.
    InUse,
    Yes(Entry),
}

fn take(req: Req) -> Taken {
    let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    match g.as_mut().and_then(|m| m.get_mut(&request_key(req))) {
        None => Taken::No,
        Some(slot) => slot.take().map_or(Taken::InUse, Taken::Yes),
    }
}

fn restore(req: Req, e: Entry) {
    let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    if g.get_or_insert_with(FxHashMap::default).insert(request_key(req), Some(e)).is_none() {
        // Only the thread holding a slot removes it (`take_out` and `take_out_when_free` wait
        // for it): the request may be freed and its handle reused once the slot is gone, so the
        // entry just put back is stale. A diagnostic, as in `arm`.
        log::error!("request {:#x} put back into the pipelined-receive table after its entry was removed", request_key(req));
    }
}

/// Takes the entry of `req` out of the table altogether, before an MPI call that may complete
/// and free the request: the MPI may give its handle value to another thread's new request at
/// once, and that one's entry must not be removed or overwritten when this call settles.
fn take_out(req: Req) -> Option<Entry> {
    let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let m = g.as_mut()?;
    let k = request_key(req);
    if !matches!(m.get(&k), Some(Some(_))) {
        return None; // untracked, or another thread works on it
    }
    let e = m.remove(&k).flatten();
    TRACKED.sub(1);
    e
}

/// As [`take_out`], but waits while another thread's progress holds the entry (one
/// nonblocking `gate` of an inactive request): that thread would otherwise put it back over
/// the entry the caller arms next. `None`: untracked.
fn take_out_when_free(req: Req) -> Option<Entry> {
    loop {
        {
            let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
            let m = g.as_mut()?;
            let k = request_key(req);
            match m.get(&k) {
                None => return None,
                Some(Some(_)) => {
                    let e = m.remove(&k).flatten();
                    TRACKED.sub(1);
                    return e;
                }
                Some(None) => {} // in use: retry once the lock is released
            }
        }
        std::thread::yield_now();
    }
}

/// The MPI freed the persistent receive `req` itself (Open MPI frees one whose completion
/// failed: `complete::forgetting_freed`): its entry goes, since the handle value may name
/// another request next.
pub fn released_by_mpi(req: Req) {
    if any() {
        drop(take_out_when_free(req));
    }
}

fn forget(req: Req) {
    let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    if g.as_mut().and_then(|m| m.remove(&request_key(req))).is_some() {
        TRACKED.sub(1);
    }
}

/// What a completion call may do with a request.
#[derive(Clone, Copy)]
pub enum Gate {
    /// Not sluice's concern (untracked, or an ordinary message): the MPI completes it.
    Plain,
    /// Not complete: hide it from the MPI.
    Hidden,
    /// Complete: the MPI completes it, sluice corrects the status.
    Finished(Outcome),
}

/// Advances the tracked receive `req` as far as it goes without blocking.
///
/// A receive the application freed (`MPI_Request_free`) is released here once it is no longer
/// hidden, by the thread that holds its entry: the decision must be made on the entry this call
/// took, not on a `freed` flag read before (two threads' progress would both release it, the
/// second freeing the handle again, or a new request that the MPI gave the value to meanwhile).
/// It is then reported as hidden: no application call can name a freed request.
fn gate(req: Req) -> Gate {
    gate_or_busy(req).unwrap_or(Gate::Hidden)
}

/// [`gate`], or `None` while another thread holds the entry (its progress or completion call is
/// working on it for a moment).
fn gate_or_busy(req: Req) -> Option<Gate> {
    let mut e = match take(req) {
        Taken::No => return Some(Gate::Plain),
        Taken::InUse => return None,
        Taken::Yes(e) => e,
    };
    if urgency::sweep_skips(e.hints.priority) && !matches!(e.state, State::Done(_)) {
        restore(req, e); // a receive of higher priority completed in this pass: the next one
        return Some(Gate::Hidden);
    }
    // SAFETY: a tracked receive is live; its buffers are valid until it completes.
    let g = unsafe { advance(req, &mut e) };
    if e.freed && !matches!(g, Gate::Hidden) {
        forget(req); // the slot this thread holds: nobody else can have taken it
        release_freed(req, g);
        return Some(Gate::Hidden);
    }
    if matches!(g, Gate::Plain) && !e.persistent {
        forget(req); // an ordinary message: the MPI finishes it
    } else {
        if matches!(g, Gate::Plain) {
            e.active = false; // an ordinary message, or not started: nothing to progress
        }
        restore(req, e);
    }
    Some(g)
}

/// Whether `req` is a persistent receive that `MPI_Start` served from the probe stash (inactive
/// in the MPI, completed by sluice).
pub fn served_from_stash(req: Req) -> bool {
    while any() {
        {
            let g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
            match g.as_ref().and_then(|m| m.get(&request_key(req))) {
                None => return false,
                Some(Some(e)) => return e.self_completed(),
                Some(None) => {} // another thread's progress holds it for a moment
            }
        }
        std::thread::yield_now();
    }
    false
}

/// `MPI_Start` (or `MPI_Startall`) started the persistent receive `req` in the MPI: progress
/// looks at it again until it completes.
pub fn started(req: Req) {
    if !any() {
        return;
    }
    loop {
        {
            let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
            match g.as_mut().and_then(|m| m.get_mut(&request_key(req))) {
                None => return,
                Some(Some(e)) => {
                    e.active = true;
                    return;
                }
                Some(None) => {} // another thread's completion call holds it for a moment
            }
        }
        std::thread::yield_now();
    }
}

/// # Safety
/// `req` is the live receive of `e`.
unsafe fn advance(req: Req, e: &mut Entry) -> Gate {
    if matches!(e.state, State::Armed) {
        let (mut flag, mut st) = (0, blank_status());
        // MPICH would raise a failed receive's error here, before the application's own
        // completion call raises it (again, or through another handler).
        let quiet = if cfg!(sluice_mpi = "mpich") { crate::protocol::p2p::QuietWorld::new() } else { None };
        // SAFETY: a live request; does not free it.
        unsafe { mpi::PMPI_Request_get_status(req, &mut flag, &mut st) };
        drop(quiet);
        if flag == 0 {
            return Gate::Hidden;
        }
        // SAFETY: the status of the completed receive.
        let n = unsafe { received_bytes(&st) };
        if n != reserved() {
            // An ordinary message; one posted with the byte twin of a non-contiguous type
            // (MPICH) fails where MPICH's engine would, at a partial element.
            return match Outcome::partial(&e.landing, n, e.capacity, super::comm_from_key(e.comm)) {
                Some(o) => {
                    let o = o.for_request(e.persistent);
                    e.state = State::Done(o);
                    Gate::Finished(o)
                }
                None => Gate::Plain,
            };
        }
        // SAFETY: forwarded contract.
        match unsafe { begin(req, e) } {
            Some(t) => e.state = State::Busy(Box::new(t)),
            None => return Gate::Plain,
        }
    }
    if let State::Busy(t) = &mut e.state {
        // SAFETY: forwarded contract.
        if !unsafe { t.advance(false) } {
            return Gate::Hidden;
        }
        let State::Busy(t) = std::mem::replace(&mut e.state, State::Armed) else { unreachable!() };
        let (o, op) = t.finish();
        let o = o.for_request(e.persistent);
        if let Landing::Served(p) = &mut e.landing {
            // The MPI may complete the placeholder from now on.
            if let Some(p) = p.take() {
                p.complete(o.reported_bytes());
            }
        }
        if let Some(mut op) = op {
            // (A served transfer's operation is its own, not the request's: it is dropped.)
            if e.persistent && !e.self_completed() {
                op.active = false; // delivered: the completion must not unpack M0's bytes again
                ops::restore(req, op.into());
            }
        }
        urgency::sweep_finished(e.hints.priority);
        e.state = State::Done(o);
    }
    match e.state {
        State::Done(o) => Gate::Finished(o),
        _ => Gate::Hidden,
    }
}

/// Reads M0's header and starts the chunk receives; `None` if the message is not an M0 after
/// all (no valid header: it is then an ordinary message).
///
/// # Safety
/// `req` completed with S\* bytes into `e`'s buffer.
unsafe fn begin(req: Req, e: &mut Entry) -> Option<Incoming> {
    let comm = super::comm_from_key(e.comm);
    let dest = match &e.landing {
        Landing::Bytes(base) => Dest::Bytes(*base),
        Landing::InPlace(l, user) => Dest::InPlace(l.clone(), *user),
        Landing::Served(_) => return None,
        Landing::Staged => match ops::take(req)? {
            ops::Entry::P2p(op) => Dest::Engine(op),
            other => {
                ops::restore(req, other);
                return None;
            }
        },
    };
    // SAFETY: M0 landed in `dest`.
    match unsafe { dest.header() } {
        // SAFETY: forwarded contract.
        Some(h) => Some(unsafe { Incoming::begin(h, e.capacity, dest, comm, e.hints) }),
        None => {
            if let Dest::Engine(op) = dest {
                ops::restore(req, op.into());
            }
            None
        }
    }
}

/// Drives the progress engine: every source, the tracked receives among them (chunks keep
/// flowing while the application completes other requests).
/// Starts the completion call's pass over the receives (`urgency`: the requests it names
/// follow in [`prepare`]).
#[inline]
pub fn progress_all() {
    urgency::sweep_start();
    crate::transfer::runtime::progress::drive();
}

/// Advances every tracked receive, the most urgent first (`urgency`), and finishes those the
/// application freed (the progress engine's poll of [`TRACKED`]).
fn poll_receives() {
    urgency::sweep_start();
    let mut keys: Vec<(usize, i32)> = {
        let g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = |e: &Entry| e.active || e.freed;
        g.as_ref().map_or_else(Vec::new, |m| {
            m.iter().filter_map(|(k, v)| v.as_ref().filter(|e| wanted(e)).map(|e| (*k, e.hints.priority))).collect()
        })
    };
    if keys.iter().any(|&(_, p)| p != 0) {
        keys.sort_by_key(|&(_, p)| std::cmp::Reverse(p));
    }
    for (k, _) in keys {
        // Releases the receives the application freed, once they are done (see `gate`).
        gate(request_from_key(k));
    }
}

/// The application freed `req` earlier and its entry is out of the table (`gate`); now the MPI
/// may free it.
fn release_freed(req: Req, g: Gate) {
    let mut r = req;
    if let Gate::Plain = g {
        // An ordinary message: the point-to-point layer finishes it (unpack, staging).
        // SAFETY: sluice's request (the application freed its handle).
        unsafe { ops::request_free_mpi(&mut r) };
    } else {
        // A persistent receive's operation goes with it (the request is complete: nothing
        // writes its staging any more).
        drop(ops::take(req));
        // SAFETY: a complete request sluice owns.
        unsafe { mpi::PMPI_Request_free(&mut r) };
    }
}

/// Takes the finished tracked requests among `reqs` out of the table for one completion call
/// and tells whether any is still hidden. Hidden ones stay in the table.
fn prepare(reqs: &[Req]) -> (Vec<(usize, Entry, Outcome)>, Vec<usize>) {
    let (mut fin, mut hidden) = (Vec::new(), Vec::new());
    for i in urgent_first(reqs) {
        let r = reqs[i];
        if r == consts::request_null() {
            continue;
        }
        match gate(r) {
            Gate::Plain => {}
            Gate::Hidden => hidden.push(i),
            Gate::Finished(o) => match take_out(r) {
                Some(e) => fin.push((i, e, o)),
                // Another thread's progress holds it for a moment: not ready for this call.
                None => hidden.push(i),
            },
        }
    }
    fin.sort_by_key(|(i, _, _)| *i);
    hidden.sort_unstable();
    (fin, hidden)
}

/// The positions of `reqs`, the receives of higher priority first (`urgency`; in order when
/// no communicator has a hint).
fn urgent_first(reqs: &[Req]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..reqs.len()).collect();
    if reqs.len() > 1 && crate::protocol::comm_hints::any() {
        let g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = g.as_ref() {
            let prio = |i: usize| m.get(&request_key(reqs[i])).and_then(|v| v.as_ref()).map_or(0, |e| e.hints.priority);
            let p: Vec<i32> = (0..reqs.len()).map(prio).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(p[i]));
        }
    }
    order
}

/// After the MPI call: corrects the statuses of finished transfers it completed (`done(i)`;
/// their status is entry `pos(i)` of `statuses`, or `single`) and puts back the others.
/// Returns the failed ones (truncated, or a chunk failed): (status position, outcome).
#[allow(clippy::too_many_arguments)]
fn settle(
    fin: Vec<(usize, Entry, Outcome)>,
    before: &[Req],
    now: &[Req],
    done: impl Fn(usize) -> bool,
    pos: impl Fn(usize) -> usize,
    statuses: *mut Status,
    single: bool,
) -> Vec<(usize, Outcome)> {
    let mut trunc = Vec::new();
    for (i, mut e, o) in fin {
        let live = now[i] != consts::request_null();
        let completed = if e.persistent { done(i) } else { !live };
        if !completed {
            if live {
                arm(before[i], e); // (a persistent request the MPI freed goes: `complete::forgetting_freed`)
            }
            continue;
        }
        let st = if single { statuses } else { status_at(statuses, pos(i)) };
        // SAFETY: the status the MPI filled for this completion (or ignore/null).
        unsafe { o.patch(st) };
        if o.failed() {
            trunc.push((pos(i), o));
        }
        if !live {
            continue; // a persistent request the MPI freed (`complete::forgetting_freed`)
        }
        if e.self_completed() {
            if let Some(own) = e.resume.take() {
                arm(before[i], *own);
            }
        } else if e.persistent {
            e.state = State::Armed;
            e.active = false;
            arm(before[i], e);
        }
    }
    trunc
}

/// Puts back entries taken by [`prepare`] that the call will not see.
fn put_back(fin: Vec<(usize, Entry, Outcome)>, reqs: &[Req]) {
    for (i, e, _) in fin {
        arm(reqs[i], e);
    }
}

fn status_at(base: *mut Status, i: usize) -> *mut Status {
    if base.is_null() || base == consts::statuses_ignore() {
        std::ptr::null_mut()
    } else {
        // SAFETY: `i` is below the array length of the call.
        unsafe { base.add(i) }
    }
}

/// The code of a single completion: the transfer's truncation, if the MPI saw no error.
fn single_code(rc: c_int, trunc: &[(usize, Outcome)]) -> c_int {
    match trunc.first() {
        Some((_, o)) if rc == errclass::SUCCESS => o.code(),
        _ => rc,
    }
}

/// The code of a multiple completion over `n` completed status entries: with truncation,
/// MPI_ERR_IN_STATUS and each entry's MPI_ERROR set (as the MPI does).
///
/// # Safety
/// `statuses` holds `n` statuses (or is ignore/null).
unsafe fn multi_code(rc: c_int, trunc: &[(usize, Outcome)], statuses: *mut Status, n: usize) -> c_int {
    let Some((_, o)) = trunc.first() else { return rc };
    if rc != errclass::SUCCESS && rc != errclass::ERR_IN_STATUS {
        return rc;
    }
    if rc == errclass::SUCCESS {
        for k in 0..n {
            let st = status_at(statuses, k);
            if !st.is_null() {
                // SAFETY: entry `k` of the application's status array.
                unsafe { (*st).MPI_ERROR = errclass::SUCCESS };
            }
        }
    }
    for &(k, o) in trunc {
        let st = status_at(statuses, k);
        if !st.is_null() {
            // SAFETY: as above.
            unsafe { (*st).MPI_ERROR = o.error_code() };
        }
    }
    if rc == errclass::ERR_IN_STATUS {
        // The MPI raised the call's error through the handler itself: one call, one
        // invocation (MPICH, a tracked receive truncated by the MPI beside one sluice
        // truncated: the handler ran twice).
        return rc;
    }
    o.code_in_status()
}

/// `MPI_Wait` of a tracked receive (`inner`: the point-to-point layer's Wait).
///
/// # Safety
/// As `MPI_Wait`.
pub unsafe fn wait(request: *mut Req, status: *mut Status, inner: impl FnOnce(*mut Req, *mut Status) -> c_int) -> c_int {
    // SAFETY: the application's handle.
    let r = unsafe { *request };
    let fin = loop {
        progress_all();
        let (fin, hidden) = prepare(&[r]);
        if hidden.is_empty() {
            break fin;
        }
    };
    if fin.is_empty() {
        return inner(request, status);
    }
    let mut local = blank_status();
    let stp = crate::protocol::p2p::status_or(status, &mut local);
    let rc = inner(request, stp);
    // SAFETY: as above.
    let now = [unsafe { *request }];
    let t = settle(fin, &[r], &now, |_| true, |_| 0, stp, true);
    single_code(rc, &t)
}

/// `MPI_Test` of a tracked receive.
///
/// # Safety
/// As `MPI_Test`.
pub unsafe fn test(
    request: *mut Req,
    flag: *mut c_int,
    status: *mut Status,
    inner: impl FnOnce(*mut Req, *mut c_int, *mut Status) -> c_int,
) -> c_int {
    progress_all();
    // SAFETY: the application's handle.
    let r = unsafe { *request };
    let (fin, hidden) = prepare(&[r]);
    if !hidden.is_empty() {
        put_back(fin, &[r]);
        // SAFETY: the application's flag.
        unsafe { *flag = 0 };
        return errclass::SUCCESS;
    }
    if fin.is_empty() {
        return inner(request, flag, status);
    }
    let mut local = blank_status();
    let stp = crate::protocol::p2p::status_or(status, &mut local);
    let rc = inner(request, flag, stp);
    // SAFETY: as above; the MPI wrote the flag.
    let (now, f) = ([unsafe { *request }], unsafe { *flag } != 0);
    let t = settle(fin, &[r], &now, |_| f, |_| 0, stp, true);
    single_code(rc, &t)
}

/// `MPI_Request_get_status` of a tracked receive.
///
/// # Safety
/// As `MPI_Request_get_status`.
pub unsafe fn get_status(
    request: Req,
    flag: *mut c_int,
    status: *mut Status,
    inner: impl FnOnce(Req, *mut c_int, *mut Status) -> c_int,
) -> c_int {
    progress_all();
    // A request found complete stays complete for the application: while another thread (the
    // progress thread's poll, say) holds the entry for a moment, wait for it rather than answer
    // "not complete" (a second MPI_Request_get_status after one that said complete returned
    // flag 0 under MPICH with SLUICE_PROGRESS_THREAD=1, across nodes).
    let g = loop {
        match gate_or_busy(request) {
            Some(g) => break g,
            None => std::thread::yield_now(),
        }
    };
    match g {
        Gate::Hidden => {
            // SAFETY: the application's flag.
            unsafe { *flag = 0 };
            errclass::SUCCESS
        }
        Gate::Plain => inner(request, flag, status),
        Gate::Finished(o) => {
            let rc = inner(request, flag, status);
            // SAFETY: the status the MPI filled (or ignore).
            unsafe { o.patch(status) };
            rc
        }
    }
}

/// `MPI_Waitall` / `MPI_Testall` with tracked receives among `reqs` (`wait`: block).
///
/// # Safety
/// As `MPI_Waitall` / `MPI_Testall`.
pub unsafe fn all(
    reqs: &mut [Req],
    flag: *mut c_int,
    statuses: *mut Status,
    wait: bool,
    inner: impl FnOnce(*mut Req, *mut Status) -> c_int,
) -> c_int {
    let fin = loop {
        progress_all();
        let (fin, hidden) = prepare(reqs);
        if hidden.is_empty() {
            break fin;
        }
        put_back(fin, reqs);
        if !wait {
            // SAFETY: the application's flag.
            unsafe { *flag = 0 };
            return errclass::SUCCESS;
        }
    };
    let before = reqs.to_vec();
    // The MPI writes the handles through a pointer derived from `reqs`: a separate raw pointer
    // to the array would let the compiler keep the handles it read before the call (`reqs` is
    // a unique borrow), and settle would see completed requests as live.
    let rc = inner(reqs.as_mut_ptr(), statuses);
    // SAFETY: the MPI wrote the flag (Testall).
    let f = wait || unsafe { *flag } != 0;
    let t = settle(fin, &before, reqs, |_| f, |i| i, statuses, false);
    // SAFETY: `statuses` holds one status per request.
    unsafe { multi_code(rc, &t, statuses, reqs.len()) }
}

/// `MPI_Waitany`/`MPI_Testany` (`some == false`) or `MPI_Waitsome`/`MPI_Testsome` with tracked
/// receives among `reqs`. `masked(copy, statuses)` runs the MPI's *test* call on a copy of the
/// array in which hidden requests are `MPI_REQUEST_NULL` and returns (code, completed indices);
/// `blocking(array)` runs the application's call on the real array (a pointer derived from
/// `reqs`) once nothing is hidden;
/// `report_own(indices)` writes the call's index/outcount outputs for requests sluice completes
/// itself (persistent receives served from the stash: the MPI skips them as inactive).
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn any_or_some(
    reqs: &mut [Req],
    wait: bool,
    statuses: *mut Status,
    single_status: bool,
    mut masked: impl FnMut(&mut [Req]) -> (c_int, Option<Vec<usize>>),
    blocking: impl FnOnce(*mut Req) -> (c_int, Option<Vec<usize>>),
    report_none: impl FnOnce(),
    report_own: impl FnOnce(&[usize]),
) -> c_int {
    loop {
        progress_all();
        let (fin, hidden) = prepare(reqs);
        let before = reqs.to_vec();
        let pos_in = |done: &[usize], i: usize| if single_status { 0 } else { done.iter().position(|&j| j == i).unwrap_or(0) };
        let mut own: Vec<usize> = fin.iter().filter(|(_, e, _)| e.self_completed()).map(|(i, _, _)| *i).collect();
        if !own.is_empty() {
            own.truncate(if single_status { 1 } else { own.len() });
            for k in 0..own.len() {
                let st = if single_status { statuses } else { status_at(statuses, k) };
                if !st.is_null() && st != consts::status_ignore() {
                    // SAFETY: status `k` of the call (settle fills in source, tag and count).
                    unsafe { *st = blank_status() };
                }
            }
            report_own(&own);
            let t = settle(fin, &before, reqs, |i| own.contains(&i), |i| pos_in(&own, i), statuses, single_status);
            return finish_some(errclass::SUCCESS, &t, single_status, statuses, own.len());
        }
        if hidden.is_empty() && wait {
            // Through `reqs` itself, as in [`all`].
            let (rc, done) = blocking(reqs.as_mut_ptr());
            let done = done.unwrap_or_default();
            let t = settle(fin, &before, reqs, |i| done.contains(&i), |i| pos_in(&done, i), statuses, single_status);
            return finish_some(rc, &t, single_status, statuses, done.len());
        }
        let mut copy = reqs.to_vec();
        for &i in &hidden {
            copy[i] = consts::request_null();
        }
        let (rc, done) = masked(&mut copy);
        match done {
            Some(done) if !done.is_empty() => {
                for &i in &done {
                    reqs[i] = copy[i];
                }
                let t = settle(fin, &before, reqs, |i| done.contains(&i), |i| pos_in(&done, i), statuses, single_status);
                return finish_some(rc, &t, single_status, statuses, done.len());
            }
            _ => {
                put_back(fin, reqs);
                if rc != errclass::SUCCESS || !wait {
                    if hidden.is_empty() {
                        // Nothing hidden: the MPI's answer (including "all inactive") stands.
                        return rc;
                    }
                    report_none();
                    return rc;
                }
            }
        }
    }
}

fn finish_some(rc: c_int, t: &[(usize, Outcome)], single_status: bool, statuses: *mut Status, n: usize) -> c_int {
    if single_status {
        single_code(rc, t)
    } else {
        // SAFETY: `statuses` holds at least `n` statuses.
        unsafe { multi_code(rc, t, statuses, n) }
    }
}

/// `MPI_Request_free` of a tracked receive: an inactive persistent request is freed; a
/// receive still in progress is finished by sluice later.
///
/// # Safety
/// As `MPI_Request_free`.
pub unsafe fn request_free(request: *mut Req, inner: impl FnOnce(*mut Req) -> c_int) -> c_int {
    // SAFETY: the application's handle.
    let r = unsafe { *request };
    match gate(r) {
        Gate::Hidden | Gate::Finished(_) => loop {
            let mut g = TABLE.lock().unwrap_or_else(|e| e.into_inner());
            match g.as_mut().and_then(|m| m.get_mut(&request_key(r))) {
                Some(Some(e)) => {
                    e.freed = true;
                    drop(g);
                    // SAFETY: as above.
                    unsafe { *request = consts::request_null() };
                    return errclass::SUCCESS;
                }
                // Another thread's progress holds the entry for a moment: wait until it puts it
                // back. Letting the MPI free the request now would leave that thread to put the
                // entry back under a handle the MPI may give to another request.
                Some(None) => {
                    drop(g);
                    std::thread::yield_now();
                }
                // That progress found an ordinary message and forgot the entry: the MPI (and
                // the point-to-point layer) finish it.
                None => {
                    drop(g);
                    return inner(request);
                }
            }
        },
        Gate::Plain => {
            // A persistent receive's entry goes with it. `gate` has put the entry back, so
            // another thread's progress (holding the handle from a key list it took while the
            // receive was active) may have taken it out meanwhile: removing its empty slot now
            // and letting the MPI free the request would make that thread put the entry back
            // under a handle the MPI may already have given to another thread's new request (a
            // stale entry, uncounted: the counts then fall below the table and completion calls
            // skip requests sluice tracks; the thread stress soak's rare MPICH failures). Wait
            // until it is back, as for a freed receive above.
            drop(take_out_when_free(r));
            inner(request)
        }
    }
}

/// `MPI_Finalize`: finishes the transfers of receives the application freed.
pub fn finish() {
    while TABLE.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|m| m.values().flatten().any(|e| e.freed)) {
        progress_all();
    }
    let left = TABLE.lock().unwrap_or_else(|e| e.into_inner()).take().map_or(0, |m| m.len());
    TRACKED.sub(left);
}

/// A blocking receive that got S\* bytes: reads the header and receives the rest. Returns the
/// outcome, or `None` if it was an ordinary message after all; gives back the operation.
///
/// # Safety
/// The receive completed with S\* bytes into `dest`'s memory; `capacity` is its size.
pub unsafe fn receive_rest(dest: Dest, capacity: usize, comm: mpi::MPI_Comm) -> (Option<Outcome>, Option<crate::protocol::p2p::ops::Op>) {
    // SAFETY: M0 landed in `dest`.
    let Some(h) = (unsafe { dest.header() }) else {
        return (
            None,
            match dest {
                Dest::Engine(op) => Some(op),
                _ => None,
            },
        );
    };
    // SAFETY: forwarded contract.
    let mut t = unsafe { Incoming::begin(h, capacity, dest, comm, CommHints::of(comm)) };
    // SAFETY: as above.
    while !unsafe { t.advance(true) } {}
    let (o, op) = t.finish();
    (Some(o), op)
}

/// The code of a blocking receive whose transfer ended with `o` (status corrected).
pub fn blocking_code(rc: c_int, o: Option<Outcome>, status: *mut Status) -> c_int {
    let Some(o) = o else { return rc };
    // SAFETY: the receive's status (or ignore).
    unsafe { o.patch(status) };
    single_code(rc, &[(0, o)])
}
