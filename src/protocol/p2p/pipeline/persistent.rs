//! Persistent receives and the probe stash. A probe that met an M0 took it out of the MPI
//! ([`super::stash`]); a persistent receive started afterwards must get that message first, as
//! the MPI itself would have matched it, but `MPI_Start` only posts the receive the MPI knows.
//! So sluice remembers the arguments of every persistent receive (`MPI_Recv_init`, while the
//! pipeline is on) and `MPI_Start` looks in the stash: a matching message is served into the
//! receive's buffer as for `MPI_Irecv` ([`super::serve`]) and the MPI request is **not**
//! started. The application's handle then stays inactive in the MPI, which completes it at
//! once with an empty status in Wait/Test/Waitall/Testall/Request_get_status; sluice holds the
//! completion back until the transfer is done and writes the status. `MPI_Waitany`/`Waitsome`
//! and their Test forms skip inactive requests, so [`super::track`] reports such a request
//! itself there.

use rustc_hash::FxHashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{serve, stash, track};
use crate::ffi::{errclass, mpi, request_key};
use crate::protocol::p2p::ops;

type Req = mpi::MPI_Request;

/// What `MPI_Recv_init` was given.
#[derive(Clone, Copy)]
pub struct RecvArgs {
    pub buf: *mut c_void,
    pub count: i64,
    pub datatype: mpi::MPI_Datatype,
    pub source: c_int,
    pub tag: c_int,
    pub comm: mpi::MPI_Comm,
}

// SAFETY: the application's buffer address and MPI handles, used only by the thread that
// starts the request (MPI forbids concurrent use of one request).
unsafe impl Send for RecvArgs {}

static RECEIVES: Mutex<Option<FxHashMap<usize, RecvArgs>>> = Mutex::new(None);
/// Entries in [`RECEIVES`]: `MPI_Request_free` takes the full path while any is recorded.
static RECORDED: AtomicUsize = AtomicUsize::new(0);

/// Whether any persistent receive is recorded (the `MPI_Request_free` fast path's test).
#[inline(always)]
pub fn any() -> bool {
    RECORDED.load(Ordering::Acquire) != 0
}

/// Records the persistent receive the MPI just returned as `req`.
pub fn record(req: Req, args: RecvArgs) {
    let mut g = RECEIVES.lock().unwrap_or_else(|e| e.into_inner());
    if g.get_or_insert_with(FxHashMap::default).insert(request_key(req), args).is_none() {
        RECORDED.fetch_add(1, Ordering::AcqRel);
    }
}

/// Forgets `req` (the application frees it: the MPI may give the handle to another request).
pub fn forget(req: Req) {
    if !any() {
        return;
    }
    let mut g = RECEIVES.lock().unwrap_or_else(|e| e.into_inner());
    if g.as_mut().and_then(|m| m.remove(&request_key(req))).is_some() {
        RECORDED.fetch_sub(1, Ordering::AcqRel);
    }
}

fn args_of(req: Req) -> Option<RecvArgs> {
    let g = RECEIVES.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref()?.get(&request_key(req)).copied()
}

/// `MPI_Start` of a recorded persistent receive that a stashed message matches: serves the
/// message and leaves the MPI request inactive. `None`: start it as usual.
///
/// # Safety
/// `req` is the application's persistent request; its buffer is valid (MPI's rule for an
/// active request).
pub unsafe fn start_from_stash(req: Req) -> Option<c_int> {
    if !stash::any() || !any() {
        return None;
    }
    let a = args_of(req)?;
    let e = stash::take(a.source, a.tag, a.comm)?;
    // The request's own staging (engine path) must not be unpacked at completion: the data
    // goes straight to the application's buffer.
    if let Some(mut op) = ops::take(req) {
        if let ops::Entry::P2p(p) = &mut op {
            p.active = false;
        }
        ops::restore(req, op);
    }
    // SAFETY: the receive's buffer, count and type, valid while the request is active.
    let t = unsafe { serve::start(e, a.buf, a.count, a.datatype, a.comm) };
    track::arm_served_persistent(req, t, a.comm);
    Some(errclass::SUCCESS)
}
