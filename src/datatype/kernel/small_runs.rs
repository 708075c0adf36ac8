//! The small-runs kernel (arrays of structs): a few short, disjoint runs per element, each
//! one or two fixed-width moves, run column-wise over tiles of elements.

use super::copy::xfer;
use super::Kernel;

/// Widths of the moves of [`Kernel::SmallRuns`].
pub const MOVE_WIDTHS: [usize; 6] = [1, 2, 4, 8, 16, 32];
/// Most runs per element, and longest run, that [`Kernel::SmallRuns`] takes.
const SMALL_RUNS_MAX: usize = 16;
const SMALL_RUN_MAX_LEN: usize = 64;
/// Up to this many runs per element when a tile of elements spans at most
/// [`SMALL_RUNS_WIDE_TILE_BYTES`]: the columns of a tile then re-read lines that are still in
/// L1. A struct of 26 ints at scattered displacements (sweep shape s1:63, runs of 4-12 bytes)
/// ran at 0.61x of MPICH's engine as an offset table and 1.04-1.06x as small runs.
const SMALL_RUNS_WIDE: usize = 64;
const SMALL_RUNS_WIDE_TILE_BYTES: u64 = 32 << 10;

/// The runs of one element (`extent` apart) as fixed-width moves, when there are few, short and pairwise
/// disjoint ones (the caller checked that elements are disjoint). Disjoint bytes may be copied
/// in any order: unpack leaves the same memory. A run of `len` bytes is one or two
/// (overlapping) moves of the widest width `w <= len`, at 0 and `len - w`.
pub(super) fn small_runs(runs: &[(i64, usize)], extent: i64) -> Option<Kernel> {
    let tile_bytes = extent.unsigned_abs().saturating_mul(SMALL_RUNS_TILE as u64);
    let most = if tile_bytes <= SMALL_RUNS_WIDE_TILE_BYTES { SMALL_RUNS_WIDE } else { SMALL_RUNS_MAX };
    if runs.len() > most || runs.iter().any(|r| r.1 > SMALL_RUN_MAX_LEN) {
        return None;
    }
    let mut sorted = runs.to_vec();
    sorted.sort();
    if sorted.windows(2).any(|w| w[0].0 + w[0].1 as i64 > w[1].0) {
        return None;
    }
    let mut moves = Vec::new();
    let mut at = 0;
    for &(o, len) in runs {
        let c = MOVE_WIDTHS.iter().rposition(|&w| w <= len)?;
        let w = MOVE_WIDTHS[c];
        moves.push((c, o, at));
        if len > w {
            moves.push((c, o + (len - w) as i64, at + len - w));
        }
        at += len;
    }
    Some(Kernel::SmallRuns { moves, runs: runs.to_vec() })
}

/// Calls of fewer elements move each element's runs in stream order (the indexed kernel's
/// loop) instead of running each move as a column: a column costs its dispatch and loop set-up
/// per call, which only many elements amortize. Measured on an AMD EPYC VM (Open MPI's
/// `MPI_Pack`, best of 15 x 20,000 calls): an indexed block of 16 x 12-byte blocks (22 moves,
/// 11 runs) 2.3x faster by runs at 1 element, equal at 8, 0.87x at 12; a 17-byte struct (4
/// moves, 3 runs) 1.13x at 1, equal at 6, 0.88x at 8.
pub const SMALL_RUNS_MIN_COUNT: usize = 8;

/// Elements per tile of [`Kernel::SmallRuns`]: each move runs over a tile before the next
/// (the tile's memory stays in L1 meanwhile).
pub(super) const SMALL_RUNS_TILE: usize = 64;

/// One move of [`Kernel::SmallRuns`] for `n` elements: `N` bytes at `mem + k * ext` and
/// `buf + k * size`, `k < n`.
///
/// # Safety
/// Every move inside the typemap of its element and that element's packed bytes (see
/// [`xfer`]).
#[inline(always)]
pub(super) unsafe fn column<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, n: usize, ext: i64, size: usize) {
    let (mut p, mut q) = (mem, buf);
    for _ in 0..n {
        // SAFETY: the move of element k and its place in the buffer (caller's contract).
        unsafe { xfer::<N, PACK>(p, q, N) };
        p = p.wrapping_offset(ext as isize);
        q = q.wrapping_add(size);
    }
}
