//! Running a kernel: [`Kernel::run`] dispatches on the instruction-set level to [`body`]
//! instantiated with that level's [`Entries`]: the kernel loops (strided, block-indexed table,
//! small-runs column, indexed runs), one monomorphized function per block size and direction,
//! compiled for the level. The loops below each entry are `#[inline(always)]`, so the AVX2 entries, which are
//! `#[target_feature(enable = "avx2")]` functions, compile all of them with AVX2.

use super::isa::{Isa, Portable};
use super::small_runs::SMALL_RUNS_TILE;
use super::stores::{fence, Stores};
use super::{BlockCopy, Kernel, Level, Strided, Tactics, Tuning};
use crate::datatype::interp;
use crate::datatype::ir::DataLoop;

/// Calls `$s::$f::<N, $pack>($args)` with `N` the block size when it has a specialized copy,
/// else 0.
macro_rules! by_block {
    ($block:expr, $s:ident :: $f:ident, $pack:tt, ($($a:expr),*)) => {
        match $block {
            1 => $s::$f::<1, $pack>($($a),*),
            2 => $s::$f::<2, $pack>($($a),*),
            4 => $s::$f::<4, $pack>($($a),*),
            8 => $s::$f::<8, $pack>($($a),*),
            12 => $s::$f::<12, $pack>($($a),*),
            16 => $s::$f::<16, $pack>($($a),*),
            24 => $s::$f::<24, $pack>($($a),*),
            32 => $s::$f::<32, $pack>($($a),*),
            40 => $s::$f::<40, $pack>($($a),*),
            48 => $s::$f::<48, $pack>($($a),*),
            64 => $s::$f::<64, $pack>($($a),*),
            192 => $s::$f::<192, $pack>($($a),*),
            _ => $s::$f::<0, $pack>($($a),*),
        }
    };
}
pub(super) use by_block;

/// The kernel loops compiled for one instruction-set level (see the `entries!` instances).
pub(super) trait Entries {
    /// [`super::strided::strided`].
    ///
    /// # Safety
    /// As there; the CPU runs the level.
    unsafe fn strided<const N: usize, const PACK: bool>(
        mem: *mut u8,
        off: i64,
        levels: &[Level],
        block: usize,
        buf: *mut u8,
        t: Tactics,
    ) -> *mut u8;
    /// [`super::strided::table`].
    ///
    /// # Safety
    /// As there; the CPU runs the level.
    unsafe fn table<const N: usize, const PACK: bool>(
        mem: *mut u8,
        base: i64,
        displs: &[i64],
        inner: &Strided,
        buf: *mut u8,
        t: Tactics,
    ) -> *mut u8;
    /// [`super::small_runs::column`].
    ///
    /// # Safety
    /// As there; the CPU runs the level.
    unsafe fn column<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, n: usize, ext: i64, size: usize);
    /// [`super::indexed::runs`].
    ///
    /// # Safety
    /// As there; the CPU runs the level.
    unsafe fn runs<const PACK: bool>(mem: *mut u8, count: usize, ext: i64, runs: &[(i64, usize)], buf: *mut u8) -> *mut u8;
}

/// Implements [`Entries`] for the level marker `$level` (also its [`super::isa::Simd`]) with
/// functions in module `$m`, compiled with the target features `$feat`.
macro_rules! entries {
    ($m:ident, $level:ty $(, $feat:literal)?) => {
        mod $m {
            use super::super::{indexed, small_runs, strided};
            use super::super::{Level, Strided, Tactics};

            $(#[target_feature(enable = $feat)])?
            #[inline(never)]
            pub(super) unsafe fn strided<const N: usize, const PACK: bool>(mem: *mut u8, off: i64, levels: &[Level], block: usize, buf: *mut u8, t: Tactics) -> *mut u8 {
                // SAFETY: forwarded contract.
                unsafe { strided::strided::<$level, N, PACK>(mem, off, levels, block, buf, t) }
            }

            $(#[target_feature(enable = $feat)])?
            #[inline(never)]
            pub(super) unsafe fn table<const N: usize, const PACK: bool>(mem: *mut u8, base: i64, displs: &[i64], inner: &Strided, buf: *mut u8, t: Tactics) -> *mut u8 {
                // SAFETY: forwarded contract.
                unsafe { strided::table::<$level, N, PACK>(mem, base, displs, inner, buf, t) }
            }

            $(#[target_feature(enable = $feat)])?
            #[inline(never)]
            pub(super) unsafe fn column<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, n: usize, ext: i64, size: usize) {
                // SAFETY: forwarded contract.
                unsafe { small_runs::column::<N, PACK>(mem, buf, n, ext, size) }
            }

            $(#[target_feature(enable = $feat)])?
            #[inline(never)]
            pub(super) unsafe fn runs<const PACK: bool>(mem: *mut u8, count: usize, ext: i64, runs: &[(i64, usize)], buf: *mut u8) -> *mut u8 {
                // SAFETY: forwarded contract.
                unsafe { indexed::runs::<PACK>(mem, count, ext, runs, buf) }
            }
        }

        impl Entries for $level {
            #[inline(always)]
            unsafe fn strided<const N: usize, const PACK: bool>(mem: *mut u8, off: i64, levels: &[Level], block: usize, buf: *mut u8, t: Tactics) -> *mut u8 {
                // SAFETY: forwarded contract.
                unsafe { $m::strided::<N, PACK>(mem, off, levels, block, buf, t) }
            }
            #[inline(always)]
            unsafe fn table<const N: usize, const PACK: bool>(mem: *mut u8, base: i64, displs: &[i64], inner: &Strided, buf: *mut u8, t: Tactics) -> *mut u8 {
                // SAFETY: forwarded contract.
                unsafe { $m::table::<N, PACK>(mem, base, displs, inner, buf, t) }
            }
            #[inline(always)]
            unsafe fn column<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, n: usize, ext: i64, size: usize) {
                // SAFETY: forwarded contract.
                unsafe { $m::column::<N, PACK>(mem, buf, n, ext, size) }
            }
            #[inline(always)]
            unsafe fn runs<const PACK: bool>(mem: *mut u8, count: usize, ext: i64, runs: &[(i64, usize)], buf: *mut u8) -> *mut u8 {
                // SAFETY: forwarded contract.
                unsafe { $m::runs::<PACK>(mem, count, ext, runs, buf) }
            }
        }
    };
}

entries!(portable, crate::datatype::kernel::isa::Portable);
#[cfg(target_arch = "x86_64")]
entries!(avx2, crate::datatype::kernel::isa::Avx2, "avx2");

impl Kernel {
    /// Moves the `count * dl.size` stream bytes of `count` elements between `mem` and `buf`
    /// (`PACK`: memory to buffer) with the loops compiled for `isa`, unpacking with `stores`
    /// (ignored when packing), with the CPU-family tactics `tuning`. `dl` is the type this kernel was
    /// compiled from.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `mem` valid for the
    /// access; `buf` valid for `count * dl.size` bytes; the two do not overlap; the CPU runs
    /// `isa` (one of [`Isa::available`]) and `tuning.prefetch` (one of [`super::Prefetch::available`]).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run<const PACK: bool>(
        &self,
        isa: Isa,
        stores: Stores,
        tuning: Tuning,
        dl: &DataLoop,
        mem: *mut u8,
        count: usize,
        buf: *mut u8,
    ) {
        let t = Tactics {
            nt: !PACK && stores == Stores::Streaming,
            prefetch: tuning.prefetch.for_operation(count.saturating_mul(dl.size)),
            lines: tuning.block_copy == BlockCopy::Lines,
            bytes: count.saturating_mul(dl.size),
        };
        // SAFETY: caller's contract, including that the CPU has the level's features.
        unsafe {
            match isa {
                Isa::Portable => body::<Portable, PACK>(self, dl, mem, count, buf, t),
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2 => body::<super::isa::Avx2, PACK>(self, dl, mem, count, buf, t),
            }
        }
        if t.nt {
            fence();
        }
    }
}

/// The kernel loops for `count` elements; see [`Kernel::run`] (`t.nt`: streaming stores, the
/// caller fences).
///
/// # Safety
/// As [`Kernel::run`]; the CPU runs `S`'s level.
pub(super) unsafe fn body<S: Entries, const PACK: bool>(k: &Kernel, dl: &DataLoop, mem: *mut u8, count: usize, buf: *mut u8, t: Tactics) {
    if count == 0 || dl.size == 0 {
        return;
    }
    let ext = dl.extent;
    // SAFETY: (all calls) the kernel visits exactly the typemap of the `count` elements in
    // stream order and writes/reads `count * dl.size` buffer bytes (caller's contract).
    unsafe {
        match k {
            // One element (most MPI_Pack calls of small messages) runs the kernel's own levels:
            // `for_count` copies the whole `Strided` (levels and all), a `memcpy` call that
            // measured a fifth of a 64-byte pack's time.
            Kernel::Strided(s) if count == 1 => {
                by_block!(s.block, S::strided, PACK, (mem, s.off, s.levels(), s.block, buf, t));
            }
            Kernel::Strided(s) => match s.for_count(count, ext) {
                Some(s) => {
                    by_block!(s.block, S::strided, PACK, (mem, s.off, s.levels(), s.block, buf, t));
                }
                None => {
                    let mut q = buf;
                    for k in 0..count {
                        q = by_block!(s.block, S::strided, PACK, (mem, s.off + k as i64 * ext, s.levels(), s.block, q, t));
                    }
                }
            },
            Kernel::BlockIndexed { displs, inner } => {
                let mut q = buf;
                for k in 0..count {
                    q = by_block!(inner.block, S::table, PACK, (mem, k as i64 * ext, displs, inner, q, t));
                }
            }
            Kernel::Indexed { runs, .. } => {
                S::runs::<PACK>(mem, count, ext, runs, buf);
            }
            Kernel::SmallRuns { runs, .. } if count < super::small_runs::SMALL_RUNS_MIN_COUNT => {
                S::runs::<PACK>(mem, count, ext, runs, buf);
            }
            Kernel::SmallRuns { moves, .. } => {
                let size = dl.size;
                let mut k0 = 0;
                while k0 < count {
                    let n = SMALL_RUNS_TILE.min(count - k0);
                    let p = mem.wrapping_offset((k0 as i64 * ext) as isize);
                    let q = buf.wrapping_add(k0 * size);
                    for &(c, o, b) in moves {
                        let (p, q) = (p.wrapping_offset(o as isize), q.wrapping_add(b));
                        match c {
                            0 => S::column::<1, PACK>(p, q, n, ext, size),
                            1 => S::column::<2, PACK>(p, q, n, ext, size),
                            2 => S::column::<4, PACK>(p, q, n, ext, size),
                            3 => S::column::<8, PACK>(p, q, n, ext, size),
                            4 => S::column::<16, PACK>(p, q, n, ext, size),
                            _ => S::column::<32, PACK>(p, q, n, ext, size),
                        }
                    }
                    k0 += n;
                }
            }
            Kernel::Nested { kernels } => super::nested::run::<S, PACK>(kernels, dl, mem, count, buf, t),
            Kernel::Interp => {
                let n = dl.size * count;
                if PACK {
                    interp::pack(dl, count, mem, 0, n, std::slice::from_raw_parts_mut(buf, n));
                } else {
                    interp::unpack(dl, count, mem, 0, n, std::slice::from_raw_parts(buf, n));
                }
            }
        }
    }
}
