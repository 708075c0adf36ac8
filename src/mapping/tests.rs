//! The mapper on the paper's patterns and clusters, and on random problems.

use proptest::prelude::*;

use super::assign::{Assignment, Problem};
use super::magc::{self, Heuristic, Options, Strategy};
use super::matrix::{CommMatrix, Graph, Kind};
use super::patterns::{combination, Pattern};
use super::placement::Placement;
use super::topology::Cluster;
use super::tree::{Level, Tree};
use super::{greedy, refine, scotch};

/// Every CPU-GPU combination of the paper's patterns (weighted and not) on both clusters, 64
/// processes, 1 MiB messages: MAGC's maximum congestion is at most the default's and at most
/// the better of Strategy 1 and 2 (the target; the paper claims "almost all").
#[test]
fn magc_beats_default_and_both_strategies_on_every_combination() {
    let mut report = String::new();
    for cluster in ["magc-a", "magc-b"] {
        let c = Cluster::builtin(cluster).unwrap();
        for cpu in Pattern::ALL {
            for gpu in Pattern::ALL {
                let m = combination(64, cpu, gpu, 1048576.0);
                let cong = |s: Strategy| {
                    let p = magc::map(&c, &m, s, Options::default()).unwrap();
                    p.check(&c).unwrap();
                    p.congestion(&c, &m).max
                };
                let [d, s1, s2, g] = Strategy::ALL.map(cong);
                report += &format!("{cluster} {}-{}: default {d:.3e} s1 {s1:.3e} s2 {s2:.3e} magc {g:.3e}\n", cpu.name(), gpu.name());
                assert!(g <= d * (1.0 + 1e-9), "{report}");
                assert!(g <= s1.min(s2) * (1.0 + 1e-9), "{report}");
            }
        }
    }
    println!("{report}");
}

/// COL-COL: the improvement over the default is at least the paper's runtime improvement
/// (> 80%).
#[test]
fn col_col_improves_on_the_default_by_more_than_80_percent() {
    for cluster in ["magc-a", "magc-b"] {
        let c = Cluster::builtin(cluster).unwrap();
        let m = combination(64, Pattern::SubcommAlltoall, Pattern::SubcommAlltoall, 1048576.0);
        let d = magc::map(&c, &m, Strategy::Default, Options::default()).unwrap().congestion(&c, &m).max;
        let g = magc::map(&c, &m, Strategy::Magc, Options::default()).unwrap().congestion(&c, &m).max;
        assert!(g < 0.2 * d, "{cluster}: default {d:e}, magc {g:e}");
    }
}

#[test]
fn placements_keep_the_default_count_per_node() {
    let c = Cluster::builtin("magc-b").unwrap();
    let m = combination(60, Pattern::Stencil3d { weighted: true }, Pattern::Stencil2d { weighted: false }, 1.0);
    let p = magc::map(&c, &m, Strategy::Magc, Options::default()).unwrap();
    p.check(&c).unwrap();
    for k in 0..8 {
        assert!(p.node.iter().filter(|&&n| n == k).count() <= 8);
    }
    assert!(magc::map(&c, &CommMatrix::new(65), Strategy::Magc, Options::default()).unwrap_err().0.contains("do not fit"));
}

#[test]
fn the_block_mapping_is_rank_order() {
    let p = Placement::block(6, 4, true);
    assert_eq!(p.node, [0, 0, 0, 0, 1, 1]);
    assert_eq!(p.core, [0, 1, 2, 3, 0, 1]);
    assert_eq!(p.gpu[5], Some(1));
}

/// A cluster of 64 nodes like Cluster A with 1,024 processes maps (the timing target is in the
/// benchmark, `sluice-map --bench`).
#[test]
fn a_thousand_processes_map() {
    let c = Cluster::builtin("magc-a").unwrap().with_nodes(64);
    let m = combination(1024, Pattern::Stencil3d { weighted: true }, Pattern::SubcommAlltoall, 65536.0);
    let p = magc::map(&c, &m, Strategy::Magc, Options::default()).unwrap();
    p.check(&c).unwrap();
    let d = magc::map(&c, &m, Strategy::Default, Options::default()).unwrap();
    assert!(p.congestion(&c, &m).max <= d.congestion(&c, &m).max);
}

/// Two packages of two cores; processes 0-3 where pairs (0,3) and (1,2) talk a lot and
/// (0,1), (2,3), (0,2) a little: the optimum puts each heavy pair in one package. Shared by
/// the heuristics' unit tests (greedy, Scotch).
pub(super) fn heavy_pairs_on_two_packages() -> (Graph, Tree) {
    let mut m = CommMatrix::new(4);
    m.add(Kind::Cpu, 0, 3, 100.0, 1);
    m.add(Kind::Cpu, 1, 2, 100.0, 1);
    for (a, b) in [(0, 1), (2, 3), (0, 2)] {
        m.add(Kind::Cpu, a, b, 1.0, 1);
    }
    let t = Tree::from_levels(&[Level { name: "p".into(), arity: 2, gbs: 1.0 }, Level { name: "c".into(), arity: 2, gbs: 10.0 }]);
    (m.graph(&[Kind::Cpu]), t)
}

/// A ring of 6 processes and 3 nodes of capacity 2 (the heuristics' unit tests).
pub(super) fn ring_of_six_on_three_nodes() -> (Graph, Tree, Vec<u32>) {
    let mut m = CommMatrix::new(6);
    for i in 0..6 {
        m.add(Kind::Cpu, i, (i + 1) % 6, 10.0, 1);
    }
    (m.graph(&[Kind::Cpu]), Tree::from_levels(&[Level { name: "node".into(), arity: 3, gbs: 1.0 }]), vec![2; 3])
}

fn random_problem() -> impl proptest::strategy::Strategy<Value = (Vec<(u8, u8, u16)>, u8, u8, u8)> {
    (proptest::collection::vec((0u8..12, 0u8..12, 1u16..1000), 0..40), 1u8..4, 1u8..4, 1u8..3)
}

/// One of [`random_problem`]'s instances: 12 processes, the random edges, a two-level tree,
/// a capacity per leaf that fits everyone, and some traffic leaving through the root.
fn random_instance(edges: Vec<(u8, u8, u16)>, a1: u8, a2: u8, cap: u8) -> (Graph, Tree, Vec<u32>, Vec<f64>) {
    let n = 12usize;
    let mut m = CommMatrix::new(n);
    for (i, j, w) in edges {
        m.add(Kind::Cpu, i as usize, j as usize, f64::from(w), 1);
    }
    let t = Tree::from_levels(&[
        Level { name: "a".into(), arity: u32::from(a1), gbs: 2.0 },
        Level { name: "b".into(), arity: u32::from(a2) * 2, gbs: 1.0 },
    ]);
    let leaves = t.leaf_count();
    let cap = n.div_ceil(leaves).max(usize::from(cap)) as u32;
    let ext: Vec<f64> = (0..n).map(|i| (i % 3) as f64 * 10.0).collect();
    (m.graph(&[Kind::Cpu]), t, vec![cap; leaves], ext)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// On random graphs and trees: the greedy result respects every capacity, and the
    /// refinement never raises the maximum congestion (nor, at an equal maximum, the sum of
    /// squares).
    #[test]
    fn greedy_is_valid_and_refinement_never_worsens((edges, a1, a2, cap) in random_problem()) {
        let (g, t, capacity, ext) = random_instance(edges, a1, a2, cap);
        let (leaves, cap) = (t.leaf_count(), capacity[0]);
        let p = Problem { graph: &g, external: &ext, tree: &t, capacity: &capacity };
        let mut l = greedy::map(&p);
        for leaf in 0..leaves as u32 {
            prop_assert!(l.iter().filter(|&&x| x == leaf).count() <= cap as usize);
        }
        let before = Assignment::with(&p, &l).score();
        refine::refine(&p, &mut l, 10_000);
        let after = Assignment::with(&p, &l).score();
        prop_assert!(after.0 <= before.0 * (1.0 + 1e-9) + 1e-12, "{before:?} -> {after:?}");
        if after.0 >= before.0 * (1.0 - 1e-9) {
            prop_assert!(after.1 <= before.1 * (1.0 + 1e-9) + 1e-12);
        }
        for leaf in 0..leaves as u32 {
            prop_assert!(l.iter().filter(|&&x| x == leaf).count() <= cap as usize);
        }
    }
}

/// Phases 2 and 3 with Scotch, and with both heuristics: valid placements, never worse than the
/// default mapping on the paper's combinations.
#[test]
fn scotch_phases_are_valid_and_beat_the_default() {
    for cluster in ["magc-a", "magc-b"] {
        let c = Cluster::builtin(cluster).unwrap();
        for (cpu, gpu) in [
            (Pattern::SubcommAlltoall, Pattern::Stencil3d { weighted: true }),
            (Pattern::Stencil2d { weighted: false }, Pattern::SubcommAlltoall),
        ] {
            let m = combination(64, cpu, gpu, 1048576.0);
            let d = magc::map(&c, &m, Strategy::Default, Options::default()).unwrap().congestion(&c, &m).max;
            for phase in [Heuristic::Scotch, Heuristic::Both] {
                let p = magc::map(&c, &m, Strategy::Magc, Options { phase, ..Options::default() }).unwrap();
                p.check(&c).unwrap();
                let g = p.congestion(&c, &m).max;
                assert!(g <= d * (1.0 + 1e-9), "{cluster} {phase:?}: default {d:e}, magc {g:e}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// On random graphs and trees: Scotch's (repaired) placement respects every capacity and
    /// places every process once, and refining it never raises its maximum congestion.
    #[test]
    fn scotch_is_valid_and_refinement_never_worsens_it((edges, a1, a2, cap) in random_problem()) {
        let n = 12usize;
        let (g, t, capacity, ext) = random_instance(edges, a1, a2, cap);
        let (leaves, cap) = (t.leaf_count(), capacity[0]);
        let p = Problem { graph: &g, external: &ext, tree: &t, capacity: &capacity };
        let mut l = scotch::map(&p).unwrap();
        prop_assert_eq!(l.len(), n);
        for leaf in 0..leaves as u32 {
            prop_assert!(l.iter().filter(|&&x| x == leaf).count() <= cap as usize);
        }
        let before = Assignment::with(&p, &l).score();
        refine::refine(&p, &mut l, 10_000);
        let after = Assignment::with(&p, &l).score();
        prop_assert!(after.0 <= before.0 * (1.0 + 1e-9) + 1e-12, "{before:?} -> {after:?}");
        for leaf in 0..leaves as u32 {
            prop_assert!(l.iter().filter(|&&x| x == leaf).count() <= cap as usize);
        }
    }
}
