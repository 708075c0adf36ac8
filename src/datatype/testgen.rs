//! Random dataloops for the engine's property tests (interpreter, kernels), in one place.

use proptest::prelude::*;

use super::ir::DataLoop;

fn b(n: usize) -> DataLoop {
    DataLoop::bytes(n)
}

fn arb_leaf() -> impl Strategy<Value = DataLoop> {
    prop_oneof![(1usize..9).prop_map(b), Just(b(12)), Just(b(16)), Just(b(24)), Just(b(40)), Just(b(100))]
}

/// Random dataloops, negative strides and displacements included, depth <= 4 (loop levels,
/// [`DataLoop::depth`]). Leaves are 1-8 bytes or one of the block sizes the kernels specialize;
/// resized nodes may have negative extents; typemaps may address a byte twice. Recursion alone
/// rarely nests past 2 levels, so half the values are [`arb_deep_dl`] of depth 3 or 4.
pub(crate) fn arb_dl() -> impl Strategy<Value = DataLoop> {
    let any = arb_leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            (0usize..4, inner.clone()).prop_map(|(n, c)| DataLoop::contig(n, c)),
            (0usize..5, 1usize..3, -160i64..160, inner.clone()).prop_map(|(n, b, s, c)| DataLoop::vector(n, b, s, c)),
            // Vectors whose stride is a multiple of the child's extent (tiling levels).
            (0usize..5, 1usize..3, -3i64..4, inner.clone()).prop_map(|(n, b, m, c)| {
                let s = m * c.extent * b as i64;
                DataLoop::vector(n, b, s, c)
            }),
            (1usize..3, prop::collection::vec(-128i64..128, 0..5), inner.clone()).prop_map(|(b, d, c)| DataLoop::block_indexed(b, d, c)),
            (prop::collection::vec((0usize..3, -128i64..128), 0..5), inner.clone()).prop_map(|(v, c)| {
                let (b, d) = v.into_iter().unzip();
                DataLoop::indexed(b, d, c)
            }),
            prop::collection::vec((0usize..3, -64i64..64, inner.clone()), 1..4).prop_map(structure_of),
            (inner, -16i64..16, -8i64..64).prop_map(|(c, lb, e)| c.resized(lb, e)),
        ]
    });
    prop_oneof![2 => any, 1 => arb_deep_dl(3), 1 => arb_deep_dl(4)]
}

/// Random dataloops exactly `depth` loop levels deep: each level is any node kind over a child
/// of `depth - 1` levels (a struct's other members are leaves), now and then resized, with
/// counts of 1-2 so that the stream stays small.
fn arb_deep_dl(depth: u32) -> BoxedStrategy<DataLoop> {
    if depth == 0 {
        return arb_leaf().boxed();
    }
    let inner = arb_deep_dl(depth - 1);
    let level = prop_oneof![
        (1usize..3, inner.clone()).prop_map(|(n, c)| DataLoop::contig(n, c)),
        (1usize..3, 1usize..3, -160i64..160, inner.clone()).prop_map(|(n, b, s, c)| DataLoop::vector(n, b, s, c)),
        (1usize..3, 1usize..3, -3i64..4, inner.clone()).prop_map(|(n, b, m, c)| {
            let s = m * c.extent * b as i64;
            DataLoop::vector(n, b, s, c)
        }),
        (1usize..3, prop::collection::vec(-128i64..128, 1..4), inner.clone()).prop_map(|(b, d, c)| DataLoop::block_indexed(b, d, c)),
        (prop::collection::vec((0usize..3, -128i64..128), 1..4), inner.clone()).prop_map(|(v, c)| {
            let (b, d) = v.into_iter().unzip();
            DataLoop::indexed(b, d, c)
        }),
        (1usize..3, -64i64..64, inner, prop::collection::vec((0usize..3, -64i64..64, arb_leaf()), 0..3), any::<prop::sample::Index>())
            .prop_map(|(b, d, c, mut v, at)| {
                v.insert(at.index(v.len() + 1), (b, d, c));
                structure_of(v)
            }),
    ];
    prop_oneof![3 => level.clone(), 1 => (level, -16i64..16, -8i64..64).prop_map(|(c, lb, e)| c.resized(lb, e))].boxed()
}

/// A struct of `(blocklength, displacement, member)` triples.
pub(crate) fn structure_of(v: Vec<(usize, i64, DataLoop)>) -> DataLoop {
    let (mut b, mut d, mut c) = (vec![], vec![], vec![]);
    for (x, y, z) in v {
        b.push(x);
        d.push(y);
        c.push(z);
    }
    DataLoop::structure(b, d, c)
}

/// The origin offset and length of a buffer covering every byte `count` elements of `dl`
/// touch (the origin is where element 0 starts, so negative displacements stay inside).
pub(crate) fn span(dl: &DataLoop, count: usize) -> (usize, usize) {
    let last = (count.max(1) as i64 - 1) * dl.extent;
    let lo = (dl.true_lb + last.min(0)).min(0);
    let hi = dl.true_ub + last.max(0);
    ((-lo) as usize, (hi - lo).max(0) as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// Depths of [`arb_dl`]'s values: 3 and 4 must be common (at least a sixth of the values
    /// each); `--nocapture` shows the distribution.
    #[test]
    fn arb_dl_reaches_depth_4() {
        let mut runner = TestRunner::deterministic();
        let strategy = arb_dl();
        let mut depths = [0usize; 6];
        let n = 2000;
        for _ in 0..n {
            let dl = strategy.new_tree(&mut runner).unwrap().current();
            depths[(dl.depth as usize).min(5)] += 1;
        }
        eprintln!("arb_dl: values by depth 0, 1, 2, 3, 4, 5+: {depths:?}");
        assert_eq!(depths[5], 0, "deeper than 4: {depths:?}");
        assert!(depths[3] >= n / 6 && depths[4] >= n / 6, "depth 3 or 4 rare: {depths:?}");
    }
}
