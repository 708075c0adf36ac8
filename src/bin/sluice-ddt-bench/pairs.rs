//! Paired ratios: sluice against another engine, one ratio per round.
//!
//! Every round samples each operation once, back to back, so sluice's sample and the other
//! engine's sample of the same round ran under the same load on the shared cores. The ratio of
//! the two (`other time / sluice time`: sluice's speed over the other's) moves far less than
//! either time, and its median gets a distribution-free confidence interval. The method is the
//! one of the C benchmarks' `bench/ab_stats.h` (kept in C there: the two are separate programs).

/// Median of a sample of ratios and its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// Half the interval's width relative to the median.
    pub fn rel_half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0 / self.median
    }
}

/// The per-round ratios `other[k] / sluice[k]` (times per operation; the two slices are the
/// same length, one entry per round).
pub fn ratios(sluice: &[f64], other: &[f64]) -> Vec<f64> {
    sluice.iter().zip(other).map(|(s, o)| o / s).collect()
}

/// Median of `r` with its 95% interval by order statistics: the k-th smallest and largest of
/// the sorted sample with k = (n - 1.96 sqrt(n)) / 2, which assumes nothing about the
/// distribution (timings on shared cores are skewed and often bimodal). `None` when empty.
pub fn median_ci(r: &[f64]) -> Option<Interval> {
    if r.is_empty() {
        return None;
    }
    let mut v = r.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let k = ((n as f64 - 1.96 * (n as f64).sqrt()) / 2.0).max(0.0) as usize;
    let median = if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) };
    Some(Interval { median, lo: v[k], hi: v[n - 1 - k] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_interval_of_a_known_sample() {
        // 1..=100: k = (100 - 19.6) / 2 = 40 -> the 41st smallest and largest.
        let r: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let ci = median_ci(&r).unwrap();
        assert_eq!(ci, Interval { median: 50.5, lo: 41.0, hi: 60.0 });
        assert!((ci.rel_half_width() - 9.5 / 50.5).abs() < 1e-12);
    }

    #[test]
    fn tiny_samples_span_everything() {
        let ci = median_ci(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(ci, Interval { median: 2.0, lo: 1.0, hi: 3.0 });
        assert_eq!(median_ci(&[]), None);
    }

    #[test]
    fn ratios_are_other_over_sluice() {
        assert_eq!(ratios(&[1.0, 2.0], &[2.0, 3.0]), vec![2.0, 1.5]);
    }
}
