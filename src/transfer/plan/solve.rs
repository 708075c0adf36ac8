//! Block factors for a path whose buffers' layouts are fixed (the paper's parts 2 and 3 of
//! Section 4.2): can the path reach throughput `T`, and what is the most it reaches?
//!
//! For a target `T` each hop needs `PREFIX_i >= r'_i(T)` (`Curve::min_request`), and each hop
//! between two intermediate buffers needs a shuffle size `<= TH`. Both sides are powers of two
//! times `|F|` or not, so in the log domain each constraint is `a . u >= v` over integers with
//! `a_d` in {-1, 0, 1}. With at most three variables the integer system is decided exactly:
//! enumerate the outer exponents, intersect the interval of `u_x`. The request-size bound is
//! confirmed with `Curve::at` at the neighbouring integers (`min_int`), so "feasible at `T`"
//! means exactly "every hop's curve at its PREFIX is `>= T`", free of rounding in the inverse.
//!
//! The optimum is one of finitely many values (a curve at one of the integer PREFIXes it can
//! see), so the binary search on throughput runs over those candidate values rather than over
//! a real interval: it ends exactly at the optimum after a handful of tests, instead of
//! approaching it to a relative precision.

use super::curve::Curve;
use super::layout::{prefix, shuffle, Affine, Layout, Shape, MAX_DIMS};
use super::model::{ChannelId, Model};

/// Largest PREFIX exponent considered: sizes are below 2^63 bytes.
const MAX_INT: i64 = 64;

/// The smallest integer `k >= 0` with `curve.at(|F|^field * 2^k) >= t`; `None` if no size up to
/// 2^64 (times |F|) reaches `t`.
pub(super) fn min_int(curve: &Curve, shape: &Shape, field: bool, t: f64) -> Option<i64> {
    let lr = curve.min_request_log2(t)?;
    let f = shape.lambda(field, 0);
    let mut k = if lr == f64::NEG_INFINITY { 0 } else { ((lr - f).ceil().clamp(0.0, MAX_INT as f64)) as i64 };
    while k > 0 && curve.at_log2(shape.lambda(field, k - 1)) >= t {
        k -= 1;
    }
    while curve.at_log2(shape.lambda(field, k)) < t {
        if k >= MAX_INT {
            return None;
        }
        k += 1;
    }
    Some(k)
}

/// The largest integer `s` with `|F|^field * 2^s <= th`; `None` if even `s = 0` is too large.
pub(super) fn max_shuffle_int(th: u64, shape: &Shape, field: bool) -> Option<i64> {
    let q = if field { th / shape.field_bytes() } else { th };
    (q > 0).then(|| 63 - q.leading_zeros() as i64)
}

/// `x`'s successor among the positive floats (the least throughput that beats `x`).
pub(super) fn next_up(x: f64) -> f64 {
    if x <= 0.0 {
        f64::MIN_POSITIVE
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// One hop of a path with fixed layouts.
#[derive(Clone, Debug)]
pub struct FixedHop<'a> {
    pub curve: &'a Curve,
    /// PREFIX of the hop's two layouts.
    pub prefix: Affine,
    /// Shuffle size, for a hop between two intermediate buffers (the only ones bounded by TH).
    pub shuffle: Option<Affine>,
}

/// A path whose buffers all have fixed layouts; only the block factors are free.
#[derive(Clone, Debug)]
pub struct FixedPath<'a> {
    pub shape: Shape,
    pub threshold: u64,
    pub hops: Vec<FixedHop<'a>>,
}

impl<'a> FixedPath<'a> {
    /// The path along `channels` with buffer layouts `layouts` (source, intermediates,
    /// destination).
    ///
    /// # Panics
    /// If `layouts` is not one longer than `channels`, or a channel is not in `model`.
    pub fn new(model: &'a Model, shape: Shape, channels: &[ChannelId], layouts: &[Layout]) -> FixedPath<'a> {
        assert_eq!(layouts.len(), channels.len() + 1, "one layout per buffer");
        let n = channels.len();
        let hops = channels
            .iter()
            .enumerate()
            .map(|(i, &c)| FixedHop {
                curve: &model.channel(c).curve,
                prefix: prefix(&layouts[i], &layouts[i + 1], &shape),
                shuffle: (i > 0 && i + 1 < n).then(|| shuffle(&layouts[i], &layouts[i + 1], &shape)),
            })
            .collect();
        FixedPath { shape, threshold: model.threshold(), hops }
    }

    /// The throughput at block-factor exponents `u` (space constraints not checked).
    pub fn value(&self, u: &[u32; MAX_DIMS]) -> f64 {
        self.hops.iter().map(|h| h.curve.at_log2(h.prefix.log2_at(&self.shape, u))).fold(f64::INFINITY, f64::min)
    }

    /// Block-factor exponents (the lowest point of the grid, outer dimensions first) at which every
    /// hop reaches `t` within the space threshold; `None` if there are none.
    pub fn feasible(&self, t: f64) -> Option<[u32; MAX_DIMS]> {
        // a . u >= v, one per constraint.
        let mut cons: Vec<([i8; MAX_DIMS], i64)> = Vec::with_capacity(2 * self.hops.len());
        for h in &self.hops {
            let k = min_int(h.curve, &self.shape, h.prefix.field, t)?;
            cons.push((h.prefix.coef, k - h.prefix.int as i64));
            if let Some(s) = h.shuffle {
                let max = max_shuffle_int(self.threshold, &self.shape, s.field)?;
                cons.push((s.coef.map(|c| -c), s.int as i64 - max));
            }
        }
        let ext = self.shape.log2_extents();
        let dims = self.shape.dims();
        let outer: usize = ext[1..dims].iter().map(|&e| e as usize + 1).product();
        for p in 0..outer {
            let mut u = [0; MAX_DIMS];
            let mut rest = p;
            for d in 1..dims {
                u[d] = (rest % (ext[d] as usize + 1)) as u32;
                rest /= ext[d] as usize + 1;
            }
            let (mut lo, mut hi) = (0i64, ext[0] as i64);
            for (a, v) in &cons {
                let other: i64 = (1..dims).map(|d| a[d] as i64 * u[d] as i64).sum();
                match a[0] {
                    1 => lo = lo.max(v - other),
                    -1 => hi = hi.min(other - v),
                    _ if other < *v => hi = -1,
                    _ => {}
                }
            }
            if lo <= hi {
                u[0] = lo as u32;
                return Some(u);
            }
        }
        None
    }

    /// The highest throughput the path reaches and block-factor exponents reaching it; `None` if
    /// no block factors fit the space threshold.
    pub fn best(&self) -> Option<(f64, [u32; MAX_DIMS])> {
        let ext = self.shape.log2_extents();
        let range = |a: &Affine| {
            let lo: i64 = (0..MAX_DIMS).map(|d| (a.coef[d] as i64 * ext[d] as i64).min(0)).sum();
            let hi: i64 = (0..MAX_DIMS).map(|d| (a.coef[d] as i64 * ext[d] as i64).max(0)).sum();
            (a.int as i64 + lo, a.int as i64 + hi)
        };
        let ub =
            self.hops.iter().map(|h| h.curve.at_log2(self.shape.lambda(h.prefix.field, range(&h.prefix).1))).fold(f64::INFINITY, f64::min);
        if let Some(u) = self.feasible(ub) {
            return Some((self.value(&u), u));
        }
        let mut w = self.feasible(next_up(0.0))?;
        let mut lo = self.value(&w);
        let mut cands = Vec::new();
        for h in &self.hops {
            let (a, b) = range(&h.prefix);
            cands.extend((a..=b).map(|k| h.curve.at_log2(self.shape.lambda(h.prefix.field, k))).filter(|&c| c > lo && c < ub));
        }
        search_candidates(&mut cands, &mut lo, &mut w, |t| self.feasible(t).map(|u| (self.value(&u), u)));
        Some((lo, w))
    }
}

/// Binary search over candidate throughputs for the highest feasible one. `lo`, `w`: the best
/// value and witness so far; `test(t)` returns a witness reaching `t` and its exact value.
pub(super) fn search_candidates<W>(cands: &mut Vec<f64>, lo: &mut f64, w: &mut W, mut test: impl FnMut(f64) -> Option<(f64, W)>) {
    cands.sort_by(f64::total_cmp);
    cands.dedup();
    let (mut a, mut b) = (cands.partition_point(|&c| c <= *lo), cands.len());
    while a < b {
        let mid = (a + b) / 2;
        match test(cands[mid]) {
            Some((v, u)) => {
                *lo = v;
                *w = u;
                a = cands.partition_point(|&c| c <= v);
            }
            None => b = mid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::plan::layout::Component::*;

    #[test]
    fn thresholds_are_exact() {
        let shape = Shape::new(&[1 << 20], 16).unwrap();
        let c = Curve::new(&[(1024.0, 0.5e9), (32768.0, 3.0e9), (1048576.0, 6.418e9)]).unwrap();
        // 16 * 2^11 = 32 KiB reaches 3 GB/s, 16 * 2^10 does not.
        assert_eq!(min_int(&c, &shape, true, 3.0e9), Some(11));
        assert_eq!(min_int(&c, &shape, false, 3.0e9), Some(15));
        assert_eq!(min_int(&c, &shape, true, 0.1e9), Some(0));
        assert_eq!(min_int(&c, &shape, true, 7e9), None);
        for k in 0..30 {
            for field in [false, true] {
                let t = c.at_log2(shape.lambda(field, k));
                let m = min_int(&c, &shape, field, t).unwrap();
                assert!(m <= k && c.at_log2(shape.lambda(field, m)) >= t);
            }
        }
        assert_eq!(max_shuffle_int(32 << 20, &shape, true), Some(21));
        assert_eq!(max_shuffle_int(15, &shape, true), None);
        assert_eq!(max_shuffle_int(15, &shape, false), Some(3));
    }

    #[test]
    fn one_converting_hop_takes_the_largest_block() {
        // SOA -> AOS in one hop: PREFIX is x_in entries, so the best block is all of x.
        let shape = Shape::new(&[1 << 8], 4).unwrap();
        let c = Curve::new(&[(1.0, 1.0), (256.0, 100.0)]).unwrap();
        let src = Layout::new(&[In(0), Field, Out(0)], 1).unwrap();
        let dst = Layout::soa(1);
        let p = FixedPath { shape, threshold: 1, hops: vec![FixedHop { curve: &c, prefix: prefix(&src, &dst, &shape), shuffle: None }] };
        assert_eq!(p.best(), Some((100.0, [8, 0, 0])));
        assert_eq!(p.feasible(50.0), Some([4, 0, 0]));
    }
}
