//! The small-runs kernel (arrays of structs): a few short, disjoint runs per element, each
//! one or two fixed-width moves, run column-wise over tiles of elements.

use super::copy::xfer;
use super::Kernel;

/// Widths of the moves of [`Kernel::SmallRuns`].
pub const MOVE_WIDTHS: [usize; 6] = [1, 2, 4, 8, 16, 32];
/// Most runs per element, and longest run, that [`Kernel::SmallRuns`] takes.
const SMALL_RUNS_MAX: usize = 16;
const SMALL_RUN_MAX_LEN: usize = 64;

/// The runs of one element as fixed-width moves, when there are few, short and pairwise
/// disjoint ones (the caller checked that elements are disjoint). Disjoint bytes may be copied
/// in any order: unpack leaves the same memory. A run of `len` bytes is one or two
/// (overlapping) moves of the widest width `w <= len`, at 0 and `len - w`.
pub(super) fn small_runs(runs: &[(i64, usize)]) -> Option<Kernel> {
    if runs.len() > SMALL_RUNS_MAX || runs.iter().any(|r| r.1 > SMALL_RUN_MAX_LEN) {
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
    Some(Kernel::SmallRuns { moves })
}

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
