//! A nonblocking collective in flight: its staging buffers and converted count/displacement
//! arrays live here until the request completes (the MPI reads them until then), and the
//! received bytes are unpacked by whichever call of the Wait/Test family completes it.

use std::ffi::c_int;

use super::Converted;
use crate::ffi::errclass;
use crate::protocol::p2p::ops::Finish;

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
                unsafe { conv.deliver() };
            }
        } // staging and arrays released here
    }
}
