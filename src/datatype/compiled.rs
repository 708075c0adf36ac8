//! A committed datatype compiled for packing: the normalized dataloop plus the kernel chosen for
//! it. This is what the protocol layer caches per MPI datatype handle.
//!
//! Today every type runs through the general interpreter; specialized kernels plug in here.

use super::interp;
use super::ir::DataLoop;
use super::normalize::normalize;

/// A datatype ready to pack and unpack whole elements or any byte range of its stream.
#[derive(Debug)]
pub struct CompiledType {
    dl: DataLoop,
}

impl CompiledType {
    /// Normalizes `dl` and picks its kernel.
    pub fn new(dl: &DataLoop) -> Self {
        CompiledType { dl: normalize(dl) }
    }

    /// The normalized dataloop.
    pub fn dataloop(&self) -> &DataLoop {
        &self.dl
    }

    /// Packed bytes of one element.
    pub fn size(&self) -> usize {
        self.dl.size
    }

    /// Packs `count` whole elements at `src` into `out[..count * size]`.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `src` must be
    /// readable and must not overlap `out`.
    pub unsafe fn pack(&self, src: *const u8, count: usize, out: &mut [u8]) {
        let n = self.dl.size * count;
        // SAFETY: forwarded contract.
        unsafe { interp::pack(&self.dl, count, src, 0, n, out) }
    }

    /// Unpacks `input[..count * size]` into `count` elements at `dst`.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `dst` must be
    /// writable and must not overlap `input`.
    pub unsafe fn unpack(&self, input: &[u8], count: usize, dst: *mut u8) {
        let n = self.dl.size * count;
        // SAFETY: forwarded contract.
        unsafe { interp::unpack(&self.dl, count, dst, 0, n, input) }
    }
}
