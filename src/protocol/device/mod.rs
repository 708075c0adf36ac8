//! Device buffers in MPI calls, on an MPI that knows nothing of GPUs (docs/gpu.md).
//!
//! When the GPU layer is armed (`transfer::gpu`: a CUDA driver is present, `SLUICE_GPU=auto`),
//! each intercepted call with buffers lands here first. A buffer that lies in device memory is
//! *staged*: the bytes its datatype touches (its span, from the true lower bound of the first
//! element to the true upper bound of the last) are copied into pinned host memory, the call runs
//! on the host copy through sluice's own handler (so the datatype engine, the pipelined protocol
//! and the collectives serve it exactly as a host buffer, and every receiver reads what the MPI
//! would have sent), and output buffers are copied back when the operation completes. Nothing
//! else changes: matching, statuses, errors and requests are the host call's.
//!
//! Output spans are copied in before the call as well, so that the bytes the MPI does not write
//! (gaps of the type, the tail of a short message) come back unchanged.
//!
//! - [`p2p`]: sends, receives, Sendrecv(_replace), matched receives, persistent requests;
//! - [`coll`]: the data-movement collectives and their nonblocking forms;
//! - [`refuse`]: one-sided calls and file reads/writes, which refuse device buffers clearly;
//! - [`pending`]: nonblocking and persistent operations with staged buffers, finished by the
//!   Wait/Test family (wrapped here, outside the point-to-point protocol's own completion).

// MPI_Aint and MPI_Count are `i64` in MPICH but `isize`/`c_long` in Open MPI: the casts that are
// no-ops for one flavor are needed by the other.
#![allow(clippy::unnecessary_cast)]
pub mod coll;
pub mod p2p;
pub mod pending;
pub mod refuse;

use std::ffi::{c_int, c_void};

use crate::errors;
use crate::ffi::{consts, errclass, mpi};
use crate::transfer::gpu::{self, DeviceRange, HostBuffer};

/// Bytes `[lo, hi)`, relative to a buffer address, that a typed buffer argument touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    lo: i64,
    hi: i64,
}

impl Span {
    /// No bytes.
    pub const EMPTY: Span = Span { lo: i64::MAX, hi: i64::MIN };

    /// The bytes of `count` elements of `dt` starting `disp` bytes after the buffer; `None` when
    /// the MPI does not accept `dt` (the call then goes on unstaged and the MPI reports it).
    pub fn of(disp: i64, count: i64, dt: mpi::MPI_Datatype) -> Option<Span> {
        if count < 0 || dt == consts::datatype_null() {
            return None;
        }
        let b = crate::protocol::datatype::bounds(dt)?;
        let (size, tlb, textent, extent) = (b.size, b.true_lb, b.true_extent, b.extent);
        if count == 0 || size == 0 {
            return Some(Span::EMPTY);
        }
        let last = extent.checked_mul(count - 1)?;
        let lo = disp.checked_add(tlb)?.checked_add(last.min(0))?;
        let hi = disp.checked_add(tlb)?.checked_add(textent)?.checked_add(last.max(0))?;
        Some(Span { lo, hi })
    }

    /// Both spans' bytes and those between them.
    pub fn union(self, o: Span) -> Span {
        Span { lo: self.lo.min(o.lo), hi: self.hi.max(o.hi) }
    }

    /// Whether it touches no byte.
    pub fn is_empty(&self) -> bool {
        self.lo >= self.hi
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            (self.hi - self.lo) as usize
        }
    }
}

/// A device buffer staged in host memory for one operation.
#[derive(Debug)]
pub struct Staged {
    /// Device address of the span's first byte.
    dev: usize,
    len: usize,
    /// The span's offset from the application's buffer address.
    lo: i64,
    range: DeviceRange,
    host: HostBuffer,
    /// Copied back to the device when the operation completes.
    output: bool,
}

impl Staged {
    /// The host address that stands for the application's buffer address.
    pub fn buf(&self) -> *mut c_void {
        self.host.as_ptr().wrapping_offset(-(self.lo as isize)).cast()
    }

    /// Copies the device bytes into the host copy.
    pub fn fill(&mut self) -> Result<(), gpu::CudaError> {
        // SAFETY: the host buffer holds `len` bytes; `[dev, dev + len)` was checked to lie in
        // `range` when staged, and MPI requires the buffer to stay allocated during the call.
        unsafe { gpu::to_host(self.host.as_ptr(), self.dev, self.len, &self.range) }
    }

    /// Bytes staged (the span's length).
    pub fn bytes(&self) -> usize {
        self.len
    }

    /// Copies the first `n` bytes of the host copy back (an output staged without filling).
    pub fn flush_prefix(&mut self, n: usize) -> Result<(), gpu::CudaError> {
        // SAFETY: as in `fill`, for at most `len` bytes.
        unsafe { gpu::to_device(self.dev, self.host.as_ptr(), n.min(self.len), &self.range) }
    }

    /// Copies the host copy back to the device (outputs only).
    pub fn flush(&mut self) -> Result<(), gpu::CudaError> {
        if !self.output {
            return Ok(());
        }
        // SAFETY: as in `fill`; MPI requires the buffer to stay allocated until completion.
        unsafe { gpu::to_device(self.dev, self.host.as_ptr(), self.len, &self.range) }
    }
}

/// The device memory a buffer argument of `call` touches, staged (and filled) for the call:
/// `Ok(None)` for host memory, an empty span, `MPI_IN_PLACE`, and types the MPI rejects;
/// `Err(class)` (already raised on `comm`) when the span leaves its device allocation or the
/// copy fails. `span` is asked only for device buffers (and `MPI_BOTTOM`-relative ones): a
/// host buffer costs one pointer query.
///
/// # Safety
/// `buf` and `span` describe the application's argument (MPI's contract for it holds).
pub unsafe fn stage(
    call: &str,
    buf: *const c_void,
    span: impl FnOnce() -> Option<Span>,
    output: bool,
    comm: mpi::MPI_Comm,
) -> Result<Option<Staged>, c_int> {
    // SAFETY: forwarded contract.
    unsafe { stage_as(call, buf, span, output, true, comm) }
}

/// [`stage`], with the copy into host memory left out unless `fill` (a receive whose delivered
/// bytes are a prefix of its span needs none: [`Staged::flush_prefix`] copies only those back).
///
/// # Safety
/// As [`stage`].
pub unsafe fn stage_as(
    call: &str,
    buf: *const c_void,
    span: impl FnOnce() -> Option<Span>,
    output: bool,
    fill: bool,
    comm: mpi::MPI_Comm,
) -> Result<Option<Staged>, c_int> {
    if buf == consts::in_place().cast_const() {
        return Ok(None);
    }
    let at_buf = gpu::device_range(buf as usize);
    if at_buf.is_none() && !buf.is_null() {
        return Ok(None);
    }
    let Some(span) = span() else { return Ok(None) };
    if span.is_empty() {
        return Ok(None);
    }
    let first = (buf as i64).wrapping_add(span.lo) as usize;
    let range = match at_buf {
        Some(r) => r,
        None => match gpu::device_range(first) {
            Some(r) => r,
            None => return Ok(None),
        },
    };
    if !range.holds(first, span.len()) {
        let msg = format!(
            "{call}: the datatype reaches {} bytes from {first:#x}, outside its device allocation ({:#x}, {} bytes)",
            span.len(),
            range.base,
            range.len
        );
        return Err(errors::raise(comm, errclass::ERR_BUFFER, &msg));
    }
    let mut s = Staged { dev: first, len: span.len(), lo: span.lo, host: HostBuffer::new(span.len(), &range), range, output };
    if fill {
        s.fill().map_err(|e| copy_failed(call, comm, &e))?;
    }
    Ok(Some(s))
}

/// Whether a receive of `dt` elements fills a prefix of its span: one run of bytes in stream
/// order (the pipelined protocol's test, which also rules out types with permuted blocks).
pub fn fills_prefix(dt: mpi::MPI_Datatype) -> bool {
    crate::protocol::p2p::pipeline::is_contiguous(dt)
}

/// Raises a failed device copy of `call` on `comm`.
pub fn copy_failed(call: &str, comm: mpi::MPI_Comm, e: &gpu::CudaError) -> c_int {
    errors::raise(comm, errclass::ERR_OTHER, &format!("{call}: device buffer copy: {e}"))
}

/// Copies every output of `stages` back after the operation completed with `rc`; returns `rc`,
/// or the class of a failed copy (raised on `comm`).
pub fn flush_all(call: &str, stages: &mut [Staged], rc: c_int, comm: mpi::MPI_Comm) -> c_int {
    for s in stages.iter_mut() {
        if let Err(e) = s.flush() {
            return copy_failed(call, comm, &e);
        }
    }
    rc
}

/// The host address to pass for a staged (or not) buffer argument.
pub fn host_or<T>(staged: &Option<Staged>, buf: *const T) -> *mut T {
    staged.as_ref().map_or(buf.cast_mut(), |s| s.buf().cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_union_and_length() {
        let a = Span { lo: -8, hi: 8 };
        let b = Span { lo: 100, hi: 120 };
        assert_eq!(a.union(b), Span { lo: -8, hi: 120 });
        assert_eq!(a.union(b).len(), 128);
        assert!(Span::EMPTY.is_empty());
        assert_eq!(Span::EMPTY.union(b), b);
        assert_eq!(Span::EMPTY.len(), 0);
    }
}
