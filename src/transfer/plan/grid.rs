//! The block-factor grid as bitsets: every vector `u` (`0 <= u_d <= log2 |d|`) is one bit, so
//! the full planner decides a constraint for all block factors at once with a few word
//! operations instead of one evaluation per `u` (289 points for a 64K x 64K instance).
//!
//! Every constraint the planner meets is a half-space `a . u >= v` with `a_d` in {-1, 0, 1}
//! (`layout.rs`), so the grid precomputes, for each of the `3^dims` coefficient vectors, the set
//! for every level `v` that cuts the grid; a lookup is then an offset into one arena.

use std::cell::RefCell;
use std::rc::Rc;

use super::layout::{Shape, MAX_DIMS};

/// Grids kept per thread: a grid depends on the extents only, and a process plans transfers of
/// few shapes (between many memory pairs), so the last few are reused.
const CACHED: usize = 8;

thread_local! {
    static GRIDS: RefCell<Vec<Rc<Grid>>> = const { RefCell::new(Vec::new()) };
}

/// Half-space bitsets over the block-factor grid of one shape.
pub(super) struct Grid {
    /// `log2 |d|` per dimension (0 past `dims`: one point).
    ext: [u32; MAX_DIMS],
    dims: usize,
    words: usize,
    /// All sets, `words` words each.
    sets: Vec<u64>,
    /// Per coefficient vector: lowest level (`min a . u`), number of levels stored (the last one
    /// empty) and offset of the lowest level's set.
    levels: Vec<(i64, usize, usize)>,
}

impl Grid {
    /// The grid of `shape`'s extents, from this thread's cache when it was built lately.
    pub(super) fn of(shape: &Shape) -> Rc<Grid> {
        let mut ext = [0; MAX_DIMS];
        ext[..shape.dims()].copy_from_slice(&shape.log2_extents()[..shape.dims()]);
        GRIDS.with_borrow_mut(|grids| {
            if let Some(i) = grids.iter().position(|g| g.dims == shape.dims() && g.ext == ext) {
                let g = grids.remove(i);
                grids.push(g.clone());
                return g;
            }
            let g = Rc::new(Grid::new(shape));
            if grids.len() == CACHED {
                grids.remove(0);
            }
            grids.push(g.clone());
            g
        })
    }

    pub(super) fn new(shape: &Shape) -> Grid {
        let dims = shape.dims();
        let mut ext = [0; MAX_DIMS];
        ext[..dims].copy_from_slice(&shape.log2_extents()[..dims]);
        let points: usize = ext.iter().map(|&e| e as usize + 1).product();
        // Up to 8 words, a power of two: the search has code for those widths (`search.rs`).
        let words = match points.div_ceil(64) {
            w @ 0..=8 => w.next_power_of_two(),
            w => w,
        };
        let mut grid = Grid { ext, dims, words, sets: Vec::new(), levels: Vec::new() };
        // Coefficient vectors over the instance's dimensions only (the planner's forms are zero
        // past them). Codes past the middle are the negations of those before it.
        let codes = 3usize.pow(dims as u32);
        let mid = codes / 2;
        for code in 0..codes {
            let coef = decode(code);
            let lo: i64 = (0..dims).map(|d| (coef[d] as i64 * ext[d] as i64).min(0)).sum();
            let hi: i64 = (0..dims).map(|d| (coef[d] as i64 * ext[d] as i64).max(0)).sum();
            let count = (hi - lo + 2) as usize;
            grid.levels.push((lo, count, grid.sets.len()));
            grid.sets.resize(grid.sets.len() + count * words, 0);
        }
        // Exact levels (a . u == v) of the first half, points in index order (x fastest).
        let half: Vec<([i64; MAX_DIMS], i64, usize)> = (0..=mid)
            .map(|code| {
                let (lo, _, off) = grid.levels[code];
                (decode(code).map(i64::from), lo, off)
            })
            .collect();
        let mut u = [0i64; MAX_DIMS];
        for p in 0..points {
            let bit = 1u64 << (p % 64);
            for &(coef, lo, off) in &half {
                let dot = coef[0] * u[0] + coef[1] * u[1] + coef[2] * u[2];
                grid.sets[off + (dot - lo) as usize * words + p / 64] |= bit;
            }
            for d in 0..MAX_DIMS {
                if u[d] < ext[d] as i64 {
                    u[d] += 1;
                    break;
                }
                u[d] = 0;
            }
        }
        // a . u >= v from the exact levels; then -a . u >= v is not a . u >= 1 - v.
        for code in 0..=mid {
            let (_, count, off) = grid.levels[code];
            for level in (0..count - 1).rev() {
                let (low, high) = grid.sets[off + level * words..].split_at_mut(words);
                for (x, y) in low.iter_mut().zip(&high[..words]) {
                    *x |= *y;
                }
            }
        }
        let full: Vec<u64> = grid.sets[grid.levels[mid].2..][..words].to_vec();
        for code in mid + 1..codes {
            let (_, count, off) = grid.levels[code];
            let (_, _, from) = grid.levels[codes - 1 - code];
            for i in 0..count {
                let (src, dst) = (from + (count - 1 - i) * words, off + i * words);
                let negated: Vec<u64> = grid.sets[src..src + words].iter().zip(&full).map(|(&x, &f)| !x & f).collect();
                grid.sets[dst..dst + words].copy_from_slice(&negated);
            }
        }
        grid
    }

    /// Words per set.
    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Offset of the set `{u : coef . u >= v}`.
    pub(super) fn at_least(&self, coef: [i8; MAX_DIMS], v: i64) -> usize {
        let (lo, count, off) = self.levels[encode(coef, self.dims)];
        let level = (v - lo).clamp(0, count as i64 - 1) as usize;
        off + level * self.words
    }

    /// Offset of the empty set.
    pub(super) fn empty(&self) -> usize {
        self.at_least([0; MAX_DIMS], 1)
    }

    /// The set at `off`.
    pub(super) fn set(&self, off: usize) -> &[u64] {
        &self.sets[off..off + self.words]
    }

    /// Whether point `p` is in the set at `off`.
    pub(super) fn contains(&self, off: usize, p: usize) -> bool {
        self.sets[off + p / 64] >> (p % 64) & 1 == 1
    }

    /// The block-factor exponents of point `p` (x varies fastest: the lowest point is the one
    /// with the smallest outer exponents, then the smallest x).
    pub(super) fn point(&self, p: usize) -> [u32; MAX_DIMS] {
        let mut rest = p;
        self.ext.map(|e| {
            let side = e as usize + 1;
            let x = (rest % side) as u32;
            rest /= side;
            x
        })
    }

    #[cfg(test)]
    pub(super) fn points(&self) -> usize {
        self.ext.iter().map(|&e| e as usize + 1).product()
    }
}

/// The lowest point of a set, if any.
pub(super) fn first(set: &[u64]) -> Option<usize> {
    set.iter().enumerate().find(|(_, &w)| w != 0).map(|(i, &w)| i * 64 + w.trailing_zeros() as usize)
}

fn encode(coef: [i8; MAX_DIMS], dims: usize) -> usize {
    coef[..dims].iter().rev().fold(0, |acc, &c| acc * 3 + (c + 1) as usize)
}

fn decode(mut code: usize) -> [i8; MAX_DIMS] {
    let mut coef = [0; MAX_DIMS];
    for c in coef.iter_mut() {
        *c = (code % 3) as i8 - 1;
        code /= 3;
    }
    coef
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_spaces_match_a_direct_count() {
        let shape = Shape::new(&[1 << 4, 1 << 3], 8).unwrap();
        let grid = Grid::new(&shape);
        assert_eq!(grid.points(), 5 * 4);
        for code in 0..9 {
            let coef = decode(code);
            assert_eq!(encode(coef, 2), code);
            for v in -10..10 {
                let off = grid.at_least(coef, v);
                for p in 0..grid.points() {
                    let u = grid.point(p);
                    let dot = coef[0] as i64 * u[0] as i64 + coef[1] as i64 * u[1] as i64;
                    assert_eq!(grid.contains(off, p), dot >= v, "coef {coef:?} v {v} u {u:?}");
                }
            }
        }
        assert_eq!(first(grid.set(grid.empty())), None);
        assert_eq!(first(grid.set(grid.at_least([1, 1, 0], 2))), Some(2));
    }
}
