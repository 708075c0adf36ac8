//! A channel's throughput as a function of its request size (the paper's `tp(m_s, m_d, r)`,
//! Figure 5): measured sample points, interpolated linearly in `log2(r)` because the curves are
//! measured at power-of-two sizes and bend over decades of them, constant beyond the first and
//! last sample (nothing is known there, and the planner must not extrapolate a channel faster
//! than it was seen to be).
//!
//! The planner turns throughput constraints into request-size constraints (`min_request`), which
//! needs a monotone curve; a measured curve that dips is made monotone with a running maximum:
//! a larger request can always be split into smaller ones that run at the earlier, higher rate
//! (the paper's footnote 2).

use std::fmt;

/// Throughput (bytes/s) against request size (bytes); immutable, monotone non-decreasing.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// `log2` of the sample request sizes, strictly increasing.
    log_r: Vec<f64>,
    /// Throughput at each sample, non-decreasing.
    tp: Vec<f64>,
}

/// Why a list of sample points is not a curve.
#[derive(Clone, Debug, PartialEq)]
pub enum CurveError {
    /// No sample points.
    Empty,
    /// A request size or throughput that is not a finite positive number (index of the point).
    NotPositive(usize),
    /// A point that is not a `[request bytes, bytes/s]` pair (index of the point).
    NotAPair(usize),
}

impl fmt::Display for CurveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CurveError::Empty => write!(f, "a curve needs at least one [request bytes, bytes/s] point"),
            CurveError::NotPositive(i) => write!(f, "point {i}: request size and throughput must be finite and > 0"),
            CurveError::NotAPair(i) => write!(f, "point {i}: expected [request bytes, bytes/s]"),
        }
    }
}

impl Curve {
    /// A curve through `points` (request bytes, bytes/s), in any order. Points at the same size
    /// keep the fastest; then each throughput is raised to the largest one at a smaller size.
    pub fn new(points: &[(f64, f64)]) -> Result<Curve, CurveError> {
        if points.is_empty() {
            return Err(CurveError::Empty);
        }
        if let Some(i) = points.iter().position(|&(r, t)| !(r.is_finite() && t.is_finite() && r > 0.0 && t > 0.0)) {
            return Err(CurveError::NotPositive(i));
        }
        let mut sorted = points.to_vec();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        sorted.dedup_by(|later, first| later.0 == first.0);
        let mut curve = Curve { log_r: Vec::with_capacity(sorted.len()), tp: Vec::with_capacity(sorted.len()) };
        let mut best = 0.0f64;
        for (r, t) in sorted {
            best = best.max(t);
            curve.log_r.push(r.log2());
            curve.tp.push(best);
        }
        Ok(curve)
    }

    /// The same throughput at every request size.
    pub fn flat(bytes_per_s: f64) -> Result<Curve, CurveError> {
        Curve::new(&[(1.0, bytes_per_s)])
    }

    /// The curve's points after the monotone fix-up (request bytes, bytes/s).
    pub fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.log_r.iter().zip(&self.tp).map(|(&l, &t)| (l.exp2(), t))
    }

    /// Throughput at request size `r` bytes.
    pub fn at(&self, r: f64) -> f64 {
        self.at_log2(r.log2())
    }

    /// Throughput at request size `2^lr` bytes. Monotone in `lr` also in floating point: the
    /// interpolated value is clamped to its segment's ends.
    pub fn at_log2(&self, lr: f64) -> f64 {
        let last = self.log_r.len() - 1;
        if lr.is_nan() || lr <= self.log_r[0] {
            return self.tp[0];
        }
        if lr >= self.log_r[last] {
            return self.tp[last];
        }
        // First sample above lr (exists: lr < the last one); the segment is [k - 1, k].
        let k = self.log_r.partition_point(|&l| l <= lr);
        let (l0, l1, t0, t1) = (self.log_r[k - 1], self.log_r[k], self.tp[k - 1], self.tp[k]);
        (t0 + (lr - l0) / (l1 - l0) * (t1 - t0)).clamp(t0, t1)
    }

    /// The highest throughput (that of the largest sample).
    pub fn peak(&self) -> f64 {
        self.tp[self.tp.len() - 1]
    }

    /// The smallest request size `r` with `at(r) >= t`: `Some(0.0)` when every size is fast
    /// enough (`t` at most the first sample's throughput), `None` when none is (`t > peak()`).
    /// Exact inverse of the interpolation up to rounding; callers that need an exact decision
    /// confirm it with [`Curve::at`] (see `solve::min_int`).
    pub fn min_request(&self, t: f64) -> Option<f64> {
        self.min_request_log2(t).map(f64::exp2)
    }

    /// `log2` of [`Curve::min_request`] (`-inf` for any size).
    pub fn min_request_log2(&self, t: f64) -> Option<f64> {
        if t <= self.tp[0] {
            return Some(f64::NEG_INFINITY);
        }
        if t > self.peak() {
            return None;
        }
        // First sample reaching t (k >= 1: the first one does not); t0 < t <= t1, so the segment
        // rises and the division is safe.
        let k = self.tp.partition_point(|&x| x < t);
        let (l0, l1, t0, t1) = (self.log_r[k - 1], self.log_r[k], self.tp[k - 1], self.tp[k]);
        if t >= t1 {
            return Some(l1);
        }
        Some((l0 + (t - t0) / (t1 - t0) * (l1 - l0)).clamp(l0, l1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu() -> Curve {
        Curve::new(&[(1024.0, 0.5e9), (32768.0, 3.0e9), (1048576.0, 6.418e9)]).unwrap()
    }

    #[test]
    fn interpolates_in_log2_and_is_flat_beyond_the_ends() {
        let c = gpu();
        assert_eq!(c.at(1.0), 0.5e9);
        assert_eq!(c.at(1024.0), 0.5e9);
        assert_eq!(c.at(32768.0), 3.0e9);
        assert_eq!(c.at(1e12), 6.418e9);
        // 2^12.5 is halfway between 2^10 and 2^15 in log2: halfway in throughput too.
        assert!((c.at(2f64.powf(12.5)) - 1.75e9).abs() < 1.0);
        assert_eq!(c.peak(), 6.418e9);
        assert_eq!(Curve::flat(7.74e9).unwrap().at(16.0), 7.74e9);
    }

    #[test]
    fn dips_are_raised_to_the_running_maximum() {
        let c = Curve::new(&[(4096.0, 2e9), (64.0, 1e9), (1024.0, 3e9), (4096.0, 1.5e9)]).unwrap();
        let pts: Vec<_> = c.points().collect();
        assert_eq!(pts, [(64.0, 1e9), (1024.0, 3e9), (4096.0, 3e9)]);
        let mut last = 0.0;
        for i in 0..200 {
            let t = c.at(2f64.powf(i as f64 / 10.0));
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn min_request_inverts_at() {
        let c = gpu();
        assert_eq!(c.min_request(0.1e9), Some(0.0));
        assert_eq!(c.min_request(3.0e9), Some(32768.0));
        assert_eq!(c.min_request(7e9), None);
        for i in 0..=300 {
            let r = 2f64.powf(i as f64 / 10.0);
            let t = c.at(r);
            let back = c.min_request(t).unwrap();
            assert!(back <= r * (1.0 + 1e-12), "r {r} t {t} back {back}");
            assert!(c.at(back) >= t * (1.0 - 1e-12));
        }
        for i in 1..=100 {
            let t = c.peak() * i as f64 / 100.0;
            let r = c.min_request(t).unwrap();
            assert!(c.at(r) >= t * (1.0 - 1e-12));
            // Nothing noticeably smaller is fast enough.
            assert!(r == 0.0 || c.at(r * (1.0 - 1e-6)) < t);
        }
    }

    #[test]
    fn bad_points_are_errors() {
        assert_eq!(Curve::new(&[]), Err(CurveError::Empty));
        assert_eq!(Curve::new(&[(1.0, 1.0), (2.0, -1.0)]), Err(CurveError::NotPositive(1)));
        assert_eq!(Curve::new(&[(0.0, 1.0)]), Err(CurveError::NotPositive(0)));
        assert_eq!(Curve::new(&[(f64::NAN, 1.0)]), Err(CurveError::NotPositive(0)));
    }
}
