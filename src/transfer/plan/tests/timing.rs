//! Planning times on the Sapling model, printed for a later benchmark (targets: full <= 20 us
//! for 1-D and <= 50 us for 2-D, simple <= 2 us). Ignored by default: timings on a shared
//! machine are not a pass/fail criterion. Run with
//! `cargo test --release --lib transfer::plan::tests::timing -- --ignored --nocapture`.

use std::hint::black_box;
use std::time::Instant;

use super::{aos_to_soa, sapling, transpose};
use crate::transfer::plan::baselines::simple;
use crate::transfer::plan::cache::PlanCache;
use crate::transfer::plan::full::full;

/// Median time of one call (ns) over 21 batches, with the distribution-free 95% interval of the
/// median (the 6th and 16th of the 21 sorted batch times).
fn median_ns(mut f: impl FnMut()) -> (f64, f64, f64) {
    let start = Instant::now();
    f();
    let once = start.elapsed().as_nanos().max(1) as u64;
    let per_batch = (2_000_000 / once).clamp(1, 10_000);
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            start.elapsed().as_nanos() as f64 / per_batch as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[10], times[5], times[15])
}

#[test]
#[ignore]
fn planning_times() {
    let m = sapling();
    let cases = [
        ("1-D SYS0->FBM0 AOS->SOA 4M x 32 B", aos_to_soa(&m, "SYS0", "FBM0", 1 << 22, 32)),
        ("1-D SYS0->DSK0 AOS->SOA 4M x 32 B", aos_to_soa(&m, "SYS0", "DSK0", 1 << 22, 32)),
        ("1-D SYS0->SYS1 AOS->SOA 4M x 32 B", aos_to_soa(&m, "SYS0", "SYS1", 1 << 22, 32)),
        ("1-D FBM0->FBM1 AOS->SOA 4M x 32 B", aos_to_soa(&m, "FBM0", "FBM1", 1 << 22, 32)),
        ("2-D SYS0->FBM0 transpose 4K^2 x 16 B", transpose(&m, "SYS0", "FBM0", 1 << 12, 16)),
        ("2-D FBM0->FBM1 transpose 16K^2 x 16 B", transpose(&m, "FBM0", "FBM1", 1 << 14, 16)),
        ("2-D FBM0->FBM1 transpose 64K^2 x 16 B", transpose(&m, "FBM0", "FBM1", 1 << 16, 16)),
    ];
    // One line per transfer and planner: "plan <transfer> <planner> <median> <lo> <hi>" (us).
    for (name, t) in &cases {
        let f = median_ns(|| {
            black_box(full(black_box(&m), black_box(t)));
        });
        let s = median_ns(|| {
            black_box(simple(black_box(&m), black_box(t)));
        });
        let mut cache = PlanCache::new();
        cache.get_or_plan(&m, t, full);
        let c = median_ns(|| {
            black_box(cache.get_or_plan(black_box(&m), black_box(t), full));
        });
        for (planner, (med, lo, hi)) in [("full", f), ("simple", s), ("cached", c)] {
            println!("plan {} {planner} {:.4} {:.4} {:.4}", name.replace(' ', "_"), med / 1e3, lo / 1e3, hi / 1e3);
        }
    }
}
