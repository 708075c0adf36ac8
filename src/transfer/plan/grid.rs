//! The block-factor grid as bitsets: every vector `u` (`0 <= u_d <= log2 |d|`) is one bit, so
//! the full planner decides a constraint for all block factors at once with a few word
//! operations instead of one evaluation per `u` (289 points for a 64K x 64K instance).
//!
//! Every constraint the planner meets is a half-space `a . u >= v` with `a_d` in {-1, 0, 1}
//! (`layout.rs`), so the grid precomputes, for each of the `3^dims` coefficient vectors, the set
//! for every level `v` that cuts the grid; a lookup is then an offset into one arena.

use super::layout::{Shape, MAX_DIMS};

/// Half-space bitsets over the block-factor grid of one shape.
pub(super) struct Grid {
    /// `log2 |d|` per dimension (0 past `dims`: one point).
    ext: [u32; MAX_DIMS],
    points: usize,
    words: usize,
    /// All sets, `words` words each.
    sets: Vec<u64>,
    /// Per coefficient vector: lowest level (`min a . u`), number of levels stored (the last one
    /// empty) and offset of the lowest level's set.
    levels: Vec<(i64, usize, usize)>,
}

impl Grid {
    pub(super) fn new(shape: &Shape) -> Grid {
        let dims = shape.dims();
        let mut ext = [0; MAX_DIMS];
        ext[..dims].copy_from_slice(&shape.log2_extents()[..dims]);
        let points: usize = ext.iter().map(|&e| e as usize + 1).product();
        let words = points.div_ceil(64);
        let mut grid = Grid { ext, points, words, sets: Vec::new(), levels: Vec::new() };
        for code in 0..3usize.pow(MAX_DIMS as u32) {
            // Coefficients past `dims` meet u_d = 0 only: their sets repeat others (small).
            let coef = decode(code);
            let lo: i64 = (0..MAX_DIMS).map(|d| (coef[d] as i64 * ext[d] as i64).min(0)).sum();
            let hi: i64 = (0..MAX_DIMS).map(|d| (coef[d] as i64 * ext[d] as i64).max(0)).sum();
            let count = (hi - lo + 2) as usize;
            let off = grid.sets.len();
            grid.sets.resize(off + count * words, 0);
            for p in 0..points {
                let u = grid.point(p);
                let dot: i64 = (0..MAX_DIMS).map(|d| coef[d] as i64 * u[d] as i64).sum();
                let level = (dot - lo) as usize;
                grid.sets[off + level * words + p / 64] |= 1 << (p % 64);
            }
            // Level sets so far hold a . u == v; make them a . u >= v.
            for level in (0..count - 1).rev() {
                let (low, high) = grid.sets[off + level * words..].split_at_mut(words);
                for (x, y) in low.iter_mut().zip(&high[..words]) {
                    *x |= *y;
                }
            }
            grid.levels.push((lo, count, off));
        }
        grid
    }

    /// Words per set.
    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Offset of the set `{u : coef . u >= v}`.
    pub(super) fn at_least(&self, coef: [i8; MAX_DIMS], v: i64) -> usize {
        let (lo, count, off) = self.levels[encode(coef)];
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
        let mut u = [0; MAX_DIMS];
        let mut rest = p;
        for d in 0..MAX_DIMS {
            let side = self.ext[d] as usize + 1;
            u[d] = (rest % side) as u32;
            rest /= side;
        }
        u
    }

    #[cfg(test)]
    pub(super) fn points(&self) -> usize {
        self.points
    }
}

/// The lowest point of a set, if any.
pub(super) fn first(set: &[u64]) -> Option<usize> {
    set.iter().enumerate().find(|(_, &w)| w != 0).map(|(i, &w)| i * 64 + w.trailing_zeros() as usize)
}

fn encode(coef: [i8; MAX_DIMS]) -> usize {
    coef.iter().rev().fold(0, |acc, &c| acc * 3 + (c + 1) as usize)
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
            assert_eq!(encode(coef), code);
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
