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
pub mod stream;

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use crate::datatype::device_shape::DeviceShape;
use crate::errors;
use crate::ffi::{consts, errclass, mpi};
use crate::protocol::byte_twin;
use crate::transfer::gpu::{self, mover, DeviceRange, HostBuffer};

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
///
/// Two forms: a *span* copy (the bytes from the type's true lower bound to its true upper bound,
/// gaps included, laid out as on the device: the host call takes the application's count and
/// type) and a *packed* copy (`packed` set: the GPU move kernels gather the typemap on the
/// device, only the packed stream crosses PCIe, and the host call moves that stream as a
/// contiguous run of the type's one predefined element type: the same type signature, so any
/// receive that matches the application's message matches this one).
#[derive(Debug)]
pub struct Staged {
    /// Device address of the span's first byte (packed: the application's buffer address).
    dev: usize,
    /// Bytes of the host copy (the span's length, or the packed stream's).
    len: usize,
    /// The span's offset from the application's buffer address (0 when packed).
    lo: i64,
    range: DeviceRange,
    host: HostBuffer,
    /// Copied back to the device when the operation completes.
    output: bool,
    /// The packed form.
    packed: Option<Arc<Packed>>,
}

/// How `count` elements of a type travel in the packed form.
#[derive(Debug)]
pub struct Packed {
    /// The kernels' layout of the elements.
    shape: DeviceShape,
    /// The predefined type they are all made of ([`byte_twin::to_key`] form), how many of it in
    /// all (at most the host call's count limit), and in one element of the application's type.
    basic: usize,
    n: i64,
    per_element: i64,
}

/// The buffer, count and type a staged (or not) buffer argument passes to the host call.
#[derive(Clone, Copy, Debug)]
pub struct HostArgs {
    pub buf: *mut c_void,
    pub count: i64,
    pub dt: mpi::MPI_Datatype,
}

impl Staged {
    /// The host address that stands for the application's buffer address (span form; the packed
    /// form's stream starts there).
    pub fn buf(&self) -> *mut c_void {
        self.host.as_ptr().wrapping_offset(-(self.lo as isize)).cast()
    }

    /// What the host call gets in place of the application's `(buf, count, dt)`, `count`
    /// elements (of a point-to-point call, or of each block of a collective): a packed copy
    /// passes them as their run of predefined elements.
    pub fn args(&self, count: i64, dt: mpi::MPI_Datatype) -> HostArgs {
        match &self.packed {
            None => HostArgs { buf: self.buf(), count, dt },
            Some(p) => HostArgs { buf: self.host.as_ptr().cast(), count: count * p.per_element, dt: byte_twin::from_key(p.basic) },
        }
    }

    /// Copies the device bytes into the host copy.
    pub fn fill(&mut self) -> Result<(), gpu::CudaError> {
        match &self.packed {
            // SAFETY: the host buffer holds the packed stream's `len` bytes; the shape's bytes
            // from `dev` were checked to lie in `range` (its span) when staged, and MPI requires
            // the buffer to stay allocated during the call.
            Some(p) => unsafe { mover::pack_to_host(self.host.as_ptr(), self.dev, &p.shape, &self.range) },
            // SAFETY: the host buffer holds `len` bytes; `[dev, dev + len)` was checked to lie
            // in `range` when staged.
            None => unsafe { gpu::to_host(self.host.as_ptr(), self.dev, self.len, &self.range) },
        }
    }

    /// Bytes staged (the span's length, or the packed stream's).
    pub fn bytes(&self) -> usize {
        self.len
    }

    /// Copies the first `n` bytes of the host copy back (an output staged without filling).
    pub fn flush_prefix(&mut self, n: usize) -> Result<(), gpu::CudaError> {
        let n = n.min(self.len);
        match &self.packed {
            // SAFETY: as in `fill`, the first `n` bytes of the stream.
            Some(p) => unsafe { mover::unpack_from_host(self.dev, self.host.as_ptr(), n, &p.shape, &self.range) },
            // SAFETY: as in `fill`, for at most `len` bytes.
            None => unsafe { gpu::to_device(self.dev, self.host.as_ptr(), n, &self.range) },
        }
    }

    /// Copies the host copy back to the device (outputs only).
    pub fn flush(&mut self) -> Result<(), gpu::CudaError> {
        if !self.output {
            return Ok(());
        }
        self.flush_prefix(self.len)
    }
}

/// The packed form by (compiled type id, count); `None`: the type has none.
type ShapeEntry = (u64, usize, Option<Arc<Packed>>);
/// Recently used packed layouts.
static SHAPES: Mutex<Vec<ShapeEntry>> = Mutex::new(Vec::new());
/// Layouts kept in [`SHAPES`].
const SHAPES_KEPT: usize = 16;
/// Most leaf runs of a packed layout (its table goes to device memory once per context).
const MAX_LEAF_RUNS: usize = 1 << 16;

/// The packed form of `count` elements of `dt` when it serves: a derived type that is not one
/// run in stream order, made of one predefined type without holes (so the packed bytes have a
/// contiguous type of the same signature; types through struct constructors keep the span form),
/// at least `SLUICE_GPU_PACK_MIN` packed bytes, and at most `max_count` predefined elements (the
/// host call's count type must hold them).
fn packable(count: i64, dt: mpi::MPI_Datatype, max_count: i64) -> Option<Arc<Packed>> {
    let min = crate::runtime::config().map_or(usize::MAX, |c| c.gpu_pack_min);
    if count <= 0 || min == usize::MAX || fills_prefix(dt) {
        return None;
    }
    let ct = crate::protocol::datatype::lookup(dt)?;
    let bytes = ct.size().checked_mul(count as usize)?;
    if bytes < min || ct.from_struct() {
        return None;
    }
    let found = {
        let g = SHAPES.lock().unwrap_or_else(|e| e.into_inner());
        g.iter().find(|e| e.0 == ct.id() && e.1 == count as usize).map(|e| e.2.clone())
    };
    let packed = found.unwrap_or_else(|| {
        let p = packed_form(dt, ct.dataloop(), count as usize, bytes).map(Arc::new);
        let mut g = SHAPES.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() >= SHAPES_KEPT {
            g.remove(0);
        }
        g.push((ct.id(), count as usize, p.clone()));
        p
    });
    packed.filter(|p| p.n <= max_count)
}

/// Builds the packed form (see [`packable`]) of `count` elements of `dt`, `bytes` packed bytes.
fn packed_form(dt: mpi::MPI_Datatype, dl: &crate::datatype::ir::DataLoop, count: usize, bytes: usize) -> Option<Packed> {
    let basic = crate::datatype::decode::basic_element(dt)?;
    let b = crate::protocol::datatype::bounds(basic)?;
    if b.size <= 0 || b.size != b.extent || b.size != b.true_extent || bytes % b.size as usize != 0 {
        return None;
    }
    let shape = DeviceShape::new(dl, count, MAX_LEAF_RUNS)?;
    let n = (bytes / b.size as usize) as i64;
    Some(Packed { shape, basic: byte_twin::to_key(basic), n, per_element: n / count as i64 })
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
    // SAFETY: forwarded contract.
    unsafe { stage_with(call, buf, span, || None, output, fill, comm) }
}

/// [`stage_as`] for one typed buffer argument `(buf, count, dt)` of a point-to-point call,
/// staged in the packed form when the type has a packed layout ([`packable`]) and the device
/// runs sluice's kernels, else as its span. `max_count`: the most the host call's count
/// argument holds (`c_int` or `MPI_Count`).
///
/// # Safety
/// As [`stage`].
// The application's buffer triple, then the staging options.
#[allow(clippy::too_many_arguments)]
pub unsafe fn stage_typed(
    call: &str,
    buf: *const c_void,
    count: i64,
    dt: mpi::MPI_Datatype,
    output: bool,
    fill: bool,
    max_count: i64,
    comm: mpi::MPI_Comm,
) -> Result<Option<Staged>, c_int> {
    // SAFETY: forwarded contract.
    unsafe { stage_with(call, buf, || Span::of(0, count, dt), || packable(count, dt, max_count), output, fill, comm) }
}

/// [`stage_typed`] for a collective's buffer argument of `blocks()` blocks of `count` elements
/// (one per peer; asked only for device buffers): in the packed form each block is its run of
/// predefined elements ([`Staged::block_args`]), so every block's count must fit an `int`.
///
/// # Safety
/// As [`stage`].
pub unsafe fn stage_blocks(
    call: &str,
    buf: *const c_void,
    count: c_int,
    dt: mpi::MPI_Datatype,
    blocks: impl FnOnce() -> Option<i64>,
    output: bool,
    comm: mpi::MPI_Comm,
) -> Result<Option<Staged>, c_int> {
    let sizes = std::cell::Cell::new(None);
    let span = || {
        let b = blocks()?;
        let n = (count as i64).checked_mul(b)?;
        sizes.set(Some((n, b)));
        Span::of(0, n, dt)
    };
    let packed = || {
        let (n, b) = sizes.get()?;
        packable(n, dt, (c_int::MAX as i64).saturating_mul(b))
    };
    // SAFETY: forwarded contract.
    unsafe { stage_with(call, buf, span, packed, output, true, comm) }
}

/// The staging both forms share: `packed` is asked only for a device buffer whose span lies in
/// its allocation.
///
/// # Safety
/// As [`stage`].
unsafe fn stage_with(
    call: &str,
    buf: *const c_void,
    span: impl FnOnce() -> Option<Span>,
    packed: impl FnOnce() -> Option<Arc<Packed>>,
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
    let mut s = match packed().filter(|_| mover::ready(&range)) {
        Some(p) => {
            let len = p.shape.bytes();
            Staged { dev: buf as usize, len, lo: 0, host: HostBuffer::new(len, &range), range, output, packed: Some(p) }
        }
        None => Staged { dev: first, len: span.len(), lo: span.lo, host: HostBuffer::new(span.len(), &range), range, output, packed: None },
    };
    if fill {
        s.fill().map_err(|e| copy_failed(call, comm, &e))?;
    }
    Ok(Some(s))
}

/// Whether a receive of `dt` elements fills a prefix of its span: one run of bytes in stream
/// order (the pipelined protocol's test, which also rules out types with permuted blocks).
pub fn fills_prefix(dt: mpi::MPI_Datatype) -> bool {
    crate::protocol::p2p::pipeline::is_contiguous(&crate::protocol::datatype::TypeArg::new(dt))
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

/// The host call's `(buf, count, dt)` for a staged (or not) buffer argument of `count` elements
/// (a collective's: each block's).
pub fn host_args(staged: &Option<Staged>, buf: *const c_void, count: i64, dt: mpi::MPI_Datatype) -> HostArgs {
    staged.as_ref().map_or(HostArgs { buf: buf.cast_mut(), count, dt }, |s| s.args(count, dt))
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
