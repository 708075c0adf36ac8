//! The request a nonblocking receive served from the probe stash hands to the application: a
//! generalized request (`MPI_Grequest_start`), which sluice completes once the served transfer
//! has delivered everything (`MPI_Grequest_complete`).
//!
//! It must be a request of its own. An already complete request such as a receive from
//! `MPI_PROC_NULL` will not do: both MPIs hand out one shared handle for those (MPICH's builtin
//! 0x6c000002, Open MPI's `ompi_request_empty`), so two served receives in flight would share a
//! handle, and sluice's tables, keyed by handle, would mix their transfers up (measured:
//! `tests/c/p2p_conf_probe.c`, "two receives in flight"). A generalized request also keeps the
//! application's view exact: `MPI_Test` says "not yet" until the data is there, and
//! `MPI_Cancel` of a matched receive does nothing, as MPI requires.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, Ordering};

use crate::ffi::{consts, errclass, mpi};

/// What the MPI's status of the placeholder reports (the query callback reads it).
struct Report {
    source: c_int,
    tag: c_int,
    /// Byte count, set before the request is completed.
    bytes: AtomicI64,
}

/// A placeholder not yet completed. Completing it hands [`Report`] to the MPI, which frees it
/// with the request (`free_fn`).
pub struct Placeholder {
    request: mpi::MPI_Request,
    report: *mut Report,
}

// SAFETY: the report is only written through `complete`, which consumes the placeholder; the
// MPI's callbacks read it after that, from any thread.
unsafe impl Send for Placeholder {}

impl Placeholder {
    /// Starts a placeholder for a message from `source` with `tag`; writes its handle to
    /// `request`. Returns the MPI's code on failure.
    ///
    /// # Safety
    /// `request` is the application's non-null request pointer.
    pub unsafe fn start(source: c_int, tag: c_int, request: *mut mpi::MPI_Request) -> Result<Placeholder, c_int> {
        let report = Box::into_raw(Box::new(Report { source, tag, bytes: AtomicI64::new(0) }));
        // SAFETY: the callbacks match the MPI's prototypes; `report` lives until `free_fn`.
        let rc = unsafe { mpi::PMPI_Grequest_start(Some(query), Some(free), Some(cancel), report.cast(), request) };
        if rc != errclass::SUCCESS {
            // SAFETY: the MPI did not take the state.
            drop(unsafe { Box::from_raw(report) });
            return Err(rc);
        }
        // SAFETY: the MPI wrote the new request.
        Ok(Placeholder { request: unsafe { *request }, report })
    }

    /// The placeholder's handle.
    pub fn request(&self) -> mpi::MPI_Request {
        self.request
    }

    /// Completes the placeholder: its status will report `bytes` bytes.
    pub fn complete(self, bytes: usize) {
        // SAFETY: the report is alive until the MPI frees the request, which it cannot do
        // before this completion.
        unsafe { (*self.report).bytes.store(bytes as i64, Ordering::Release) };
        // SAFETY: sluice's own generalized request, completed once.
        unsafe { mpi::PMPI_Grequest_complete(self.request) };
    }
}

unsafe extern "C" fn query(state: *mut c_void, status: *mut mpi::MPI_Status) -> c_int {
    // Cannot unwind: plain loads and stores, and MPI calls that report errors by code.
    // SAFETY: `state` is the report of this request; `status` is the MPI's.
    unsafe {
        let r = &*(state as *const Report);
        (*status).MPI_SOURCE = r.source;
        (*status).MPI_TAG = r.tag;
        (*status).MPI_ERROR = errclass::SUCCESS;
        mpi::PMPI_Status_set_elements_x(status, consts::byte(), r.bytes.load(Ordering::Acquire) as mpi::MPI_Count);
        mpi::PMPI_Status_set_cancelled(status, 0);
    }
    errclass::SUCCESS
}

unsafe extern "C" fn free(state: *mut c_void) -> c_int {
    // SAFETY: the MPI frees the request once; the report was boxed in `start`.
    drop(unsafe { Box::from_raw(state.cast::<Report>()) });
    errclass::SUCCESS
}

/// The message is already matched: a receive that matched cannot be cancelled, so the request
/// completes normally and its status says "not cancelled".
unsafe extern "C" fn cancel(_state: *mut c_void, _complete: c_int) -> c_int {
    errclass::SUCCESS
}
