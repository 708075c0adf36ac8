//! Random dataloops for the engine's property tests (interpreter, kernels), in one place.

use proptest::prelude::*;

use super::ir::DataLoop;

fn b(n: usize) -> DataLoop {
    DataLoop::bytes(n)
}

/// Random dataloops, negative strides and displacements included, depth <= 3. Leaves are 1-8
/// bytes or one of the block sizes the kernels specialize; resized nodes may have negative
/// extents; typemaps may address a byte twice.
pub(crate) fn arb_dl() -> impl Strategy<Value = DataLoop> {
    let leaf = prop_oneof![(1usize..9).prop_map(b), Just(b(12)), Just(b(16)), Just(b(24)), Just(b(40)), Just(b(100))];
    leaf.prop_recursive(3, 24, 4, |inner| {
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
            prop::collection::vec((0usize..3, -64i64..64, inner.clone()), 1..4).prop_map(|v| {
                let (mut b, mut d, mut c) = (vec![], vec![], vec![]);
                for (x, y, z) in v {
                    b.push(x);
                    d.push(y);
                    c.push(z);
                }
                DataLoop::structure(b, d, c)
            }),
            (inner, -16i64..16, -8i64..64).prop_map(|(c, lb, e)| c.resized(lb, e)),
        ]
    })
}

/// The origin offset and length of a buffer covering every byte `count` elements of `dl`
/// touch (the origin is where element 0 starts, so negative displacements stay inside).
pub(crate) fn span(dl: &DataLoop, count: usize) -> (usize, usize) {
    let last = (count.max(1) as i64 - 1) * dl.extent;
    let lo = (dl.true_lb + last.min(0)).min(0);
    let hi = dl.true_ub + last.max(0);
    ((-lo) as usize, (hi - lo).max(0) as usize + 1)
}
