//! Instruction-set levels of the kernels. The crate is built for the target's baseline (SSE2 on
//! x86_64); on a CPU with AVX2 the same kernel code runs from a second instantiation compiled
//! with `#[target_feature(enable = "avx2")]` ([`super::exec`]), where fixed-size block moves
//! become 32-byte vector moves and the [`Simd`] paths use VEX encodings. The level
//! is detected once per type (`CompiledType::new`) and passed to [`super::Kernel::run`]; tests
//! run every level the CPU has ([`Isa::available`]).

/// An instruction-set level a kernel can run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// The build target's baseline (SSE2 on x86_64): runs on any CPU of the target.
    Portable,
    /// x86_64 with AVX2.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    /// The best level this CPU runs.
    pub fn host() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
        Isa::Portable
    }

    /// Every level this CPU runs, portable first.
    pub fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Portable];
        if Isa::host() != Isa::Portable {
            v.push(Isa::host());
        }
        v
    }
}

/// Kernel steps written per instruction-set level (assembly loops in [`super::split`], in the
/// level's encoding). Implemented by one marker type per level; the kernels are generic over it.
pub(super) trait Simd {
    /// Packs 8-byte blocks 16 bytes apart (every other `u64`, a column of a two-column
    /// matrix), two per 16-byte store ([`super::split`]): moves the first blocks of the `n` at
    /// `src` to `dst` and returns how many, an even number, or 0 where the target has no such
    /// path. It reads only the blocks.
    ///
    /// # Safety
    /// The `n` blocks `src + 16 i` readable, `dst..dst + 8 n` writable, no overlap.
    unsafe fn pack_alternate_8(dst: *mut u8, src: *const u8, n: usize) -> usize;

    /// Moves `n` blocks of 16 bytes between `mem + i*stride` and the contiguous `buf`, in order
    /// (memory to buffer when `PACK`), with 8-byte accesses on the strided side
    /// ([`super::split`]); returns how many it moved: `n`, or 0 where the target has no such
    /// path.
    ///
    /// # Safety
    /// Each `mem + i*stride .. +16` (`i < n`) and `buf .. buf + 16 n` valid for the direction's
    /// access, the buffer not overlapping any block.
    unsafe fn row_16_split<const PACK: bool>(mem: *mut u8, buf: *mut u8, stride: isize, n: usize) -> usize;
}

/// The baseline: no extra paths.
pub(super) struct Portable;

impl Simd for Portable {
    #[inline(always)]
    unsafe fn pack_alternate_8(dst: *mut u8, src: *const u8, n: usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        if n >= 2 {
            // SAFETY: caller's contract for the first `n / 2` pairs; SSE and SSE2 are part of
            // the x86_64 baseline.
            unsafe { super::split::pack_alternate_8_sse(src.cast_mut(), dst, 32, n / 2) };
            return n / 2 * 2;
        }
        let _ = (dst, src, n);
        0
    }

    #[inline(always)]
    unsafe fn row_16_split<const PACK: bool>(mem: *mut u8, buf: *mut u8, stride: isize, n: usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        if n > 0 {
            // SAFETY: caller's contract; SSE and SSE2 are part of the x86_64 baseline.
            unsafe {
                if PACK {
                    super::split::pack_16_sse(mem, buf, stride, n)
                } else {
                    super::split::unpack_16_sse(mem, buf, stride, n)
                }
            }
            return n;
        }
        let _ = (mem, buf, stride);
        0
    }
}

/// AVX2 (only instantiated inside `#[target_feature(enable = "avx2")]` functions).
#[cfg(target_arch = "x86_64")]
pub(super) struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Simd for Avx2 {
    #[inline(always)]
    unsafe fn pack_alternate_8(dst: *mut u8, src: *const u8, n: usize) -> usize {
        if n >= 2 {
            // SAFETY: caller's contract for the first `n / 2` pairs; this impl is only used
            // where AVX2 (so AVX, whose VEX encodings the loop uses) is available (`exec`).
            unsafe { super::split::pack_alternate_8_vex(src.cast_mut(), dst, 32, n / 2) };
        }
        n / 2 * 2
    }

    #[inline(always)]
    unsafe fn row_16_split<const PACK: bool>(mem: *mut u8, buf: *mut u8, stride: isize, n: usize) -> usize {
        if n > 0 {
            // SAFETY: caller's contract; this impl is only used where AVX2 (so AVX, whose VEX
            // encodings the loops use) is available (`exec`).
            unsafe {
                if PACK {
                    super::split::pack_16_vex(mem, buf, stride, n)
                } else {
                    super::split::unpack_16_vex(mem, buf, stride, n)
                }
            }
        }
        n
    }
}
