//! Channels: what moves one request (one block of a transfer through one hop). Each kind is one
//! implementation of [`Channel`] in its own module (`memcpy`, `disk`); adding a kind touches one
//! module and the table in `node`. A channel runs its requests on its own worker thread
//! ([`super::queue`]), never calls MPI, and never panics across its worker: failures are
//! returned and end the transfer with an error.

use std::os::fd::RawFd;
use std::sync::Arc;

use crate::datatype::compiled::CompiledType;
use crate::transfer::plan::ChannelKind;

/// Memory seen as a layout, for one request: where stream byte range `[first, last)` is.
#[derive(Clone, Debug)]
pub enum View {
    /// The elements of a typed layout, addressed from `base` (a host place, or a window of a
    /// file place's layout held in an intermediate buffer).
    Typed { base: *mut u8, ty: Arc<CompiledType>, count: usize },
    /// The range itself, packed, from `at`.
    Packed { at: *mut u8 },
}

/// One request, resolved to addresses by the transfer it belongs to.
#[derive(Clone, Debug)]
pub enum Step {
    /// Stream bytes `[first, last)` from one layout to another (the datatype engine).
    Convert { from: View, to: View, first: usize, last: usize },
    /// `len` bytes of a file at `offset` into memory.
    Read { fd: RawFd, offset: u64, into: *mut u8, len: usize },
    /// `len` bytes of memory to a file at `offset`.
    Write { fd: RawFd, offset: u64, from: *const u8, len: usize },
}

// SAFETY: a step's addresses are the application's buffers (valid until its copy completes)
// or the transfer's intermediate slots (owned by the transfer until it completes); the
// transfer's dependencies give each slot to one step at a time.
unsafe impl Send for Step {}

impl Step {
    /// Bytes this request moves.
    pub fn bytes(&self) -> usize {
        match self {
            Step::Convert { first, last, .. } => last - first,
            Step::Read { len, .. } | Step::Write { len, .. } => *len,
        }
    }
}

/// A channel of this node.
pub trait Channel: Send + Sync {
    fn kind(&self) -> ChannelKind;

    /// Performs one request.
    ///
    /// # Safety
    /// The step's addresses are valid for its bytes and no other step uses them meanwhile.
    unsafe fn perform(&self, step: &Step) -> Result<(), String>;
}
