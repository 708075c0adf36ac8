//! The requests sluice must finish itself: for each real MPI request whose data moves through a
//! staging buffer, what to do when it completes (unpack into the user's buffer, release the
//! staging buffer).
//!
//! The application holds the real MPI handle, so calls sluice does not intercept and Fortran
//! handle conversion keep working. Entries are keyed by handle value, and completion calls
//! *take* an entry out before the MPI can complete (and free) its request: the MPI may hand the
//! same value to a new request of another thread at once, and that one must not find a stale
//! entry. Two threads may not complete the same request concurrently (MPI forbids it), so taking
//! an entry out never hides it from a legal concurrent call.
//!
//! Besides point-to-point operations ([`Op`]) the table holds other protocols' operations as
//! [`Finish`] trait objects (nonblocking collectives: `protocol::coll`), so the one completion
//! family finishes every kind, mixed in one request array.
//!
//! Requests the application frees with MPI_Request_free while sluice still has work to do are
//! *detached*: sluice keeps the real request, tests it inside later completion calls and waits
//! for it at MPI_Finalize.

use rustc_hash::FxHashMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use super::{received_bytes, Layout, Source};
use crate::ffi::{errclass, mpi, next, request_from_key, request_key};
use crate::transfer::staging::Staging;

/// Direction of a tracked operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The staging buffer holds packed data the MPI is sending.
    Send,
    /// A persistent send of the pipelined protocol: the staging buffer is M0, refilled (and the
    /// chunks posted to world rank `peer`, through the shared-memory arena where `arena` allows
    /// it) at every `MPI_Start`.
    SendPipelined { peer: std::ffi::c_int, arena: bool },
    /// The MPI receives into the staging buffer; unpack on completion.
    Recv,
}

/// One tracked operation.
#[derive(Debug)]
pub struct Op {
    pub dir: Dir,
    pub layout: Layout,
    /// The application's buffer (address), packed from at Start or unpacked into at completion.
    pub user: usize,
    pub staging: Staging,
    pub persistent: bool,
    /// Started and not yet delivered (receives unpack once per activation).
    pub active: bool,
    /// A receive that landed in two runs (`transfer::netpath::p2p_recv_split_at`): the second
    /// starts `GAP` bytes after this offset of the staging buffer; 0: one run.
    pub gap_at: usize,
    /// A receive's source as a world rank, resolved when it was posted (`None`: any source, a
    /// matched message, contests off here, or a send): its completion is told to that sender
    /// (`contest::received_from`). Resolved at posting, not at completion: the application may
    /// free the communicator before the receive completes.
    pub sender: Option<c_int>,
    /// A receive's communicator (`pipeline::comm_key`), whose error handler reports the
    /// receive's own error ([`Op::finish`]); unused for sends.
    pub comm: usize,
    /// The last completion delivered a partial predefined element (MPICH): the whole bytes
    /// unpacked, reported by every completion call until one consumes it.
    pub cut: Option<usize>,
}

impl Op {
    /// Finishes one completion of this operation: unpacks a receive that delivered data.
    /// A receive whose data ends inside a predefined element of its type (MPICH,
    /// [`Layout::unpackable`]) unpacks the whole elements only, as MPICH's engine does, and
    /// fails: its status then counts those bytes and the communicator to report
    /// `MPI_ERR_TRUNCATE` through is returned (the caller raises it, as a single or a multiple
    /// completion). `consume`: the call completes the request for the application (a wait or
    /// test), else it only looks (`MPI_Request_get_status`, an early unpack inside a wait), and
    /// the failure is reported again by the call that consumes it.
    ///
    /// # Safety
    /// `status` is the MPI's status for this completion; the user buffer is still valid (MPI
    /// requires it until completion).
    pub unsafe fn finish(&mut self, rc: c_int, status: *mut mpi::MPI_Status, consume: bool) -> Option<mpi::MPI_Comm> {
        if self.dir == Dir::Recv && self.active {
            // SAFETY: forwarded contract.
            unsafe {
                self.staging.note_received(received_bytes(status));
                let n = super::delivered_bytes(rc, status, self.layout.bytes());
                if n > self.gap_at && self.gap_at != 0 {
                    // The runs close up: the stream is then whole at the start of the buffer.
                    let (at, gap) = (self.gap_at, crate::transfer::netpath::GAP);
                    self.staging.bytes_mut().copy_within(at + gap..n + gap, at);
                }
                let whole = self.layout.unpackable(n);
                if whole > 0 {
                    self.layout.unpack(&self.staging, whole, self.user as *mut c_void);
                }
                self.cut = (whole != n).then_some(whole);
                if let (Some(sender), true, None) = (self.sender, rc == crate::ffi::errclass::SUCCESS, self.cut) {
                    super::contest::received_from(sender, n, super::contest::Served::Sluice);
                }
            }
        }
        self.active = false;
        let cut = if consume { self.cut.take() } else { self.cut };
        cut.map(|whole| {
            // SAFETY: forwarded contract.
            unsafe { super::partial_element(status, whole) };
            super::pipeline::comm_from_key(self.comm)
        })
    }
}

/// What another protocol's tracked operation does when its request completes.
pub trait Finish: Send + std::fmt::Debug {
    /// Finishes the operation after its request completed with code `rc` (unpack received
    /// data, release staging). May be called more than once (`MPI_Request_get_status`, then a
    /// completion call): only the first call acts.
    ///
    /// # Safety
    /// The request completed; the application's buffers are still valid (MPI requires it
    /// until completion).
    unsafe fn finish(&mut self, rc: c_int);
}

/// One tracked request: a point-to-point operation or another protocol's.
#[derive(Debug)]
pub enum Entry {
    /// Sends and receives (`protocol::p2p`).
    P2p(Op),
    /// Anything else that completes through the Wait/Test family (never persistent).
    Other(Box<dyn Finish>),
}

impl From<Op> for Entry {
    fn from(op: Op) -> Entry {
        Entry::P2p(op)
    }
}

impl Entry {
    /// A persistent request (lives on after completion).
    pub fn persistent(&self) -> bool {
        matches!(self, Entry::P2p(op) if op.persistent)
    }

    /// Started and not yet delivered.
    pub fn active(&self) -> bool {
        match self {
            Entry::P2p(op) => op.active,
            Entry::Other(_) => true,
        }
    }

    /// Finishes one completion (see [`Op::finish`] and [`Finish::finish`]); the communicator
    /// of a receive that failed as [`Op::finish`] says.
    ///
    /// # Safety
    /// As [`Op::finish`].
    pub unsafe fn finish(&mut self, rc: c_int, status: *mut mpi::MPI_Status, consume: bool) -> Option<mpi::MPI_Comm> {
        // SAFETY: forwarded contract.
        unsafe {
            match self {
                Entry::P2p(op) => op.finish(rc, status, consume),
                Entry::Other(work) => {
                    work.finish(rc);
                    None
                }
            }
        }
    }
}

static OPS: Mutex<Option<FxHashMap<usize, Entry>>> = Mutex::new(None);
static DETACHED: Mutex<Vec<(usize, Entry)>> = Mutex::new(Vec::new());
/// Entries in OPS plus DETACHED: zero means every completion call is a plain forward. The
/// application's own Wait/Test calls finish them: nothing to poll.
static TRACKED: Source = Source::new("p2p-requests", None);
/// Entries in DETACHED, which nobody completes but the progress engine.
static DETACHED_N: Source = Source::new("p2p-freed-requests", Some(poll_detached));

fn poll_detached() {
    progress_detached_now(false);
}

/// Whether sluice tracks any request at all (the completion calls' fast-path test).
#[inline]
pub fn any() -> bool {
    TRACKED.get() != 0
}

/// Number of tracked requests (including detached ones).
pub fn tracked() -> usize {
    TRACKED.get()
}

/// Starts tracking `op` under the request the MPI just returned. A shared, already complete
/// handle ([`crate::ffi::is_shared_request`]) names no single operation: `op` is finished at
/// once instead (a send's staging is released, a collective's result delivered; a receive with
/// such a handle came from `MPI_PROC_NULL` and delivers nothing).
pub fn track(request: mpi::MPI_Request, op: impl Into<Entry>) {
    let mut op = op.into();
    if crate::ffi::is_shared_request(request) {
        let mut st = super::blank_status();
        // SAFETY: the operation is complete (the MPI returned a pre-completed request); an empty
        // status reports no bytes received.
        unsafe { op.finish(errclass::SUCCESS, &mut st, true) };
        return;
    }
    let mut g = OPS.lock().unwrap_or_else(|e| e.into_inner());
    match g.get_or_insert_with(FxHashMap::default).insert(request_key(request), op) {
        None => TRACKED.add(1),
        // Every caller tracks a handle that is not in the table (a new request, or one taken
        // out): one that is means a stale entry of a freed request whose handle the MPI gave to
        // this one, and the replaced operation is lost (its data never unpacked). A diagnostic
        // for the open MPICH min-noshm thread-stress failure (docs/sanitizers.md).
        Some(old) => log::error!("request {:#x} tracked while the handle was already tracked ({old:?} replaced)", request_key(request)),
    }
}

/// Takes the entry of `request` out of the table, if sluice tracks it.
#[inline]
pub fn take(request: mpi::MPI_Request) -> Option<Entry> {
    if !any() {
        return None;
    }
    take_tracked(request)
}

fn take_tracked(request: mpi::MPI_Request) -> Option<Entry> {
    let mut g = OPS.lock().unwrap_or_else(|e| e.into_inner());
    let op = g.as_mut()?.remove(&request_key(request))?;
    TRACKED.sub(1);
    Some(op)
}

/// Puts an entry back (the request is still alive: not completed, or persistent).
pub fn restore(request: mpi::MPI_Request, op: Entry) {
    track(request, op);
}

/// Keeps finishing `op` after the application freed its request.
pub fn detach(request: mpi::MPI_Request, op: Entry) {
    let mut g = DETACHED.lock().unwrap_or_else(|e| e.into_inner());
    // Counted before another thread's progress can see it (under the lock), as in
    // `pipeline::send::hold`: counted after, a `progress_detached` that found the request
    // complete would take both counts off first, and the pending-work sum (the completion
    // calls' fast path) and `any()` (`take`) would dip below the truth for a moment, letting a
    // concurrent completion skip a request sluice tracks.
    TRACKED.add(1);
    DETACHED_N.add(1);
    g.push((request_key(request), op));
}

/// Requests the application freed while active that sluice still finishes.
pub fn detached() -> usize {
    DETACHED_N.get()
}

/// Tests every detached request once (`wait`: waits for each instead, at MPI_Finalize) and
/// finishes those that completed.
#[inline]
pub fn progress_detached(wait: bool) {
    if DETACHED_N.get() != 0 {
        progress_detached_now(wait);
    }
}

#[cold]
fn progress_detached_now(wait: bool) {
    let mut g = DETACHED.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_empty() {
        return;
    }
    let mut i = 0;
    while i < g.len() {
        let mut req = request_from_key(g[i].0);
        let mut st = super::blank_status();
        let mut flag = 0;
        // SAFETY: a live request sluice owns; writes the status and flag.
        let rc = unsafe {
            if wait {
                flag = 1;
                next::MPI_Wait(&mut req, &mut st)
            } else {
                next::MPI_Test(&mut req, &mut flag, &mut st)
            }
        };
        if flag == 0 && rc == errclass::SUCCESS {
            i += 1;
            continue;
        }
        let (_, mut op) = g.swap_remove(i);
        DETACHED_N.sub(1);
        TRACKED.sub(1);
        // SAFETY: the request completed; the application promised to keep the buffer alive.
        // (Its error, if any, has no one to go to: the application freed the request.)
        unsafe { op.finish(rc, &mut st, true) };
        if op.persistent() && req != crate::ffi::consts::request_null() {
            // SAFETY: a persistent request the application freed while active: free it now.
            unsafe { mpi::PMPI_Request_free(&mut req) };
        }
    }
}

/// Drops every entry (MPI_Finalize, after detached requests were waited for); returns how many
/// live requests were still tracked (application leaks, reported by the caller).
pub fn clear() -> usize {
    let n = OPS.lock().unwrap_or_else(|e| e.into_inner()).take().map_or(0, |m| m.len());
    TRACKED.sub(n);
    n
}

/// `MPI_Request_free`: an inactive persistent request is freed at once; anything sluice still
/// has to finish is detached (the application's handle becomes MPI_REQUEST_NULL, sluice keeps
/// the real request and finishes it later).
///
/// # Safety
/// As `MPI_Request_free`.
pub(crate) unsafe fn request_free_mpi(request: *mut mpi::MPI_Request) -> c_int {
    crate::transfer::runtime::progress::drive();
    // SAFETY: a non-null pointer to the application's handle.
    let Some(op) = (!request.is_null()).then(|| take(unsafe { *request })).flatten() else {
        // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Request_free(request) };
    };
    if op.persistent() && !op.active() {
        drop(op); // staging back to the pool
                  // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Request_free(request) };
    }
    // SAFETY: as above.
    unsafe {
        detach(*request, op);
        *request = crate::ffi::consts::request_null();
    }
    errclass::SUCCESS
}
