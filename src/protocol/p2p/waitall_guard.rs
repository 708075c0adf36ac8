//! `MPI_Waitall` without Open MPI 4.1's endless spin at `MPI_THREAD_MULTIPLE`.
//!
//! Open MPI 4.1's `ompi_request_default_wait_all`, when a request is already complete *with an
//! error* as the call starts, skips its wait and cleans up without marking its wait object
//! signalled; with threads in use (`MPI_THREAD_MULTIPLE`) the clean-up then spins forever on that
//! object. Measured on bare Open MPI 4.1.4 at `MPI_THREAD_MULTIPLE`: `MPI_Irecv` truncating a
//! 1 MiB message, `MPI_Request_get_status` until it says complete, then `MPI_Waitall`: hangs
//! (without the `MPI_Request_get_status`, or at `MPI_THREAD_SINGLE`, it returns the error).
//! Sluice makes that state common where the application alone would seldom reach it: its watch
//! of a receive that may bring a pipelined message polls `MPI_Request_get_status`
//! (`pipeline::track`), and its progress thread (`SLUICE_PROGRESS_THREAD=1`) completes requests
//! in the background at the thread level it raised the MPI to.
//!
//! `MPI_Testall` has no such path: it completes nothing until every request is complete, then
//! fills the statuses, frees the requests and raises a failure exactly as Waitall does once it
//! has waited for all. So at that level a Waitall is a loop of `MPI_Testall` (each pass tests
//! the requests and drives the MPI's progress once, as Open MPI's threaded wait loops on its
//! progress). Bare Open MPI's Waitall may instead return at the first failure with
//! `MPI_ERR_PENDING` for the requests still incomplete; waiting for all is the other outcome
//! the same program gets from it by timing.
//!
//! Written by hand: it works around one MPI's bug, below every sluice protocol.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::ffi::{errclass, mpi, next};

type Req = mpi::MPI_Request;
type Status = mpi::MPI_Status;

/// Set at initialization on Open MPI when the MPI runs at `MPI_THREAD_MULTIPLE`.
static ARMED: AtomicBool = AtomicBool::new(false);

/// Decides once MPI is initialized: Open MPI at `MPI_THREAD_MULTIPLE` (the MPI's level, whether
/// the application or sluice's progress thread asked for it).
pub fn arm() {
    if !cfg!(sluice_mpi = "openmpi") {
        return;
    }
    let mut level = crate::ffi::THREAD_SINGLE;
    // SAFETY: MPI is initialized (the caller's contract); writes one int.
    unsafe { mpi::PMPI_Query_thread(&mut level) };
    ARMED.store(level >= crate::ffi::THREAD_MULTIPLE, Ordering::Relaxed);
}

/// Whether Waitall must go through [`waitall`]'s loop (the fast path forwards only when not).
#[inline(always)]
pub fn armed() -> bool {
    ARMED.load(Ordering::Relaxed)
}

/// `MPI_Waitall` on the MPI (the next definition): directly, or as the Testall loop when
/// [`armed`].
///
/// # Safety
/// As `MPI_Waitall`.
pub unsafe fn waitall(count: c_int, reqs: *mut Req, statuses: *mut Status) -> c_int {
    if !armed() || count <= 0 || reqs.is_null() {
        // SAFETY: forwarded contract.
        return unsafe { next::MPI_Waitall(count, reqs, statuses) };
    }
    loop {
        let mut flag: c_int = 0;
        // SAFETY: forwarded contract; `flag` is a local int.
        let rc = unsafe { next::MPI_Testall(count, reqs, &mut flag, statuses) };
        if flag != 0 || rc != errclass::SUCCESS {
            return rc;
        }
    }
}
