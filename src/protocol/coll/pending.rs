//! A nonblocking collective in flight: its staging buffers and converted count/displacement
//! arrays live here until the request completes (the MPI reads them until then), and the
//! received bytes are unpacked by whichever call of the Wait/Test family completes it. A
//! binding's converted datatype arrays are kept the same way ([`retain_types`]).

use std::ffi::c_int;

use super::Converted;
use crate::ffi::{consts, errclass, mpi};
use crate::protocol::p2p::blank_status;
use crate::protocol::p2p::ops::{self, Entry, Finish};
use crate::runtime::Mode;

/// The finish work of one nonblocking collective (tracked in `protocol::p2p::ops`).
#[derive(Debug)]
pub struct Pending {
    /// Taken at the first finish: later calls (a completion after
    /// `MPI_Request_get_status`) find nothing to do.
    conv: Option<Converted>,
}

impl Pending {
    pub(super) fn new(conv: Converted) -> Pending {
        Pending { conv: Some(conv) }
    }
}

impl Finish for Pending {
    unsafe fn finish(&mut self, rc: c_int) {
        if let Some(mut conv) = self.conv.take() {
            if rc == errclass::SUCCESS {
                // SAFETY: the request completed; the caller guarantees the buffers are valid.
                unsafe { conv.deliver(false) };
            }
        } // staging and arrays released here
    }
}

/// Datatype arrays a binding converted for one nonblocking collective, and the collective's
/// own finish work if sluice converted the call.
#[cfg_attr(not(sluice_mpi = "openmpi"), allow(dead_code))] // used by the Open MPI Fortran bindings
#[derive(Debug)]
struct Retained {
    inner: Option<Entry>,
    types: Option<Vec<Vec<mpi::MPI_Datatype>>>,
}

// SAFETY: the datatype handles are only kept alive here (their storage is what the MPI reads),
// never used; `inner` is a table entry, which is `Send`.
unsafe impl Send for Retained {}

impl Finish for Retained {
    unsafe fn finish(&mut self, rc: c_int) {
        if let Some(mut inner) = self.inner.take() {
            // SAFETY: forwarded contract; a collective's entry reads no status (and never fails
            // at a partial element: that is a point-to-point receive's).
            let _ = unsafe { inner.finish(rc, &mut blank_status(), true) };
        }
        self.types = None; // the MPI is done with the arrays
    }
}

/// Keeps `types`, datatype arrays a binding converted for the nonblocking collective of
/// `request` (the Fortran bindings' C handles made from INTEGER handles), alive until the
/// request completes: the MPI may read the arrays it was given until then (MPI-3.1 sec. 5.12),
/// and the handlers pass them on unchanged wherever they do not convert a side.
///
/// The arrays join the collective's own entry in the request table (if sluice converted the
/// call), so any call of the Wait/Test family releases them. Without a live request, or when
/// sluice is not active (pass-through: completion calls go straight to the MPI and would never
/// release them), they are dropped at once, as Open MPI 4.1's own Fortran bindings free theirs
/// when the call returns.
#[cfg_attr(not(sluice_mpi = "openmpi"), allow(dead_code))] // used by the Open MPI Fortran bindings
pub fn retain_types(request: mpi::MPI_Request, types: Vec<Vec<mpi::MPI_Datatype>>) {
    let tracked = matches!(crate::runtime::mode(), Mode::Active | Mode::Instrumented);
    if !tracked || request == consts::request_null() {
        return;
    }
    // The application has not seen the handle yet: no other thread can complete the request
    // between taking its entry out and putting the combined one in.
    let inner = ops::take(request);
    ops::track(request, Entry::Other(Box::new(Retained { inner, types: Some(types) })));
}
