//! Instruction-set levels of the kernels. The crate is built for the target's baseline (SSE2 on
//! x86_64); on a CPU with AVX2 the same kernel code runs from a second instantiation compiled
//! with `#[target_feature(enable = "avx2")]` ([`super::exec`]), where fixed-size block moves
//! become 32-byte vector moves and [`Simd`] adds paths that need AVX2 instructions. The level
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

/// Kernel steps that have a faster form at some instruction-set level. Implemented by one
/// marker type per level; the kernels are generic over it.
pub(super) trait Simd {
    /// Packs 8-byte blocks 16 bytes apart (every other `u64`, a column of a two-column
    /// matrix): moves the first blocks of the `n` at `src` to `dst` and returns how many, a
    /// multiple of its width, or 0 where the level has no such path. It leaves at least the last
    /// block to the caller.
    ///
    /// # Safety
    /// The `n` blocks `src + 16 i` readable, `dst..dst + 8 n` writable, no overlap.
    unsafe fn pack_alternate_8(dst: *mut u8, src: *const u8, n: usize) -> usize;
}

/// The baseline: no extra paths.
pub(super) struct Portable;

impl Simd for Portable {
    #[inline(always)]
    unsafe fn pack_alternate_8(_: *mut u8, _: *const u8, _: usize) -> usize {
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
        // SAFETY: caller's contract; this impl is only used where AVX2 is available (`exec`).
        unsafe { pack_alternate_8_avx2(dst, src, n) }
    }
}

/// [`Simd::pack_alternate_8`] with AVX2: four 32-byte loads hold 8 blocks in their even
/// 8-byte lanes, `vpunpcklqdq` + `vpermq` gather them into two 32-byte stores (4 loads and 2
/// stores per 8 blocks instead of 8 of each).
///
/// # Safety
/// As [`Simd::pack_alternate_8`]; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn pack_alternate_8_avx2(dst: *mut u8, src: *const u8, n: usize) -> usize {
    use std::arch::x86_64::*;
    let mut i = 0;
    // A group of 8 blocks loads 128 bytes, its last 8 the gap after block i + 7, which ends
    // where block i + 8 starts: run groups only while that block exists.
    while i + 8 < n {
        // SAFETY: the loads cover `src + 16 i .. src + 16 (i + 8)`, blocks i..i+7 and the gaps
        // between them and block i + 8; a gap byte lies between two readable blocks 8 bytes
        // away, so in a page one of them occupies, and its value is discarded (only the even
        // lanes are stored). The stores cover `dst + 8 i .. dst + 8 (i + 8)`, inside the
        // caller's `8 n` bytes.
        unsafe {
            let s = src.add(i * 16);
            let a = _mm256_loadu_si256(s.cast());
            let b = _mm256_loadu_si256(s.add(32).cast());
            let c = _mm256_loadu_si256(s.add(64).cast());
            let d = _mm256_loadu_si256(s.add(96).cast());
            // [a0 b0 a2 b2] -> [a0 a2 b0 b2]: blocks i..i+3 in order.
            let ab = _mm256_permute4x64_epi64::<0xD8>(_mm256_unpacklo_epi64(a, b));
            let cd = _mm256_permute4x64_epi64::<0xD8>(_mm256_unpacklo_epi64(c, d));
            let o = dst.add(i * 8);
            _mm256_storeu_si256(o.cast(), ab);
            _mm256_storeu_si256(o.add(32).cast(), cd);
        }
        i += 8;
    }
    i
}
