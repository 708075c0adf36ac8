//! The congestion-based greedy heuristic of the paper (Algorithm 1), on any [`Problem`]: the
//! intra-node phases (cores, GPUs; one process per leaf) and, with a capacity per node, the
//! first phase on the network tree.
//!
//! Each step picks the unplaced process whose average traffic with placed neighbours most
//! exceeds its average traffic with unplaced ones (δ, line 9), and puts it on the free leaf
//! that leaves the lowest maximum link congestion (lines 12-18). Two choices the paper leaves
//! open: the first process (no neighbour is placed, so δ would favour the *least*
//! communicating one) is the one with the most traffic; ties between leaves go to the one
//! that adds the least to the sum of squared congestions, then to the lowest leaf index.

use super::assign::{better, Assignment, Problem, UNPLACED};
use super::tree::Vertex;

/// Algorithm 1: the leaf of every process.
pub fn map(p: &Problem) -> Vec<u32> {
    let n = p.graph.len();
    let mut a = Assignment::new(p);
    // Per process: traffic and neighbour count towards placed and unplaced neighbours (line 9's
    // sums, kept up to date as processes are placed; N of line 6 counts neighbours).
    let mut placed_w = vec![0.0f64; n];
    let mut placed_n = vec![0u32; n];
    let mut open_w: Vec<f64> = (0..n).map(|i| p.graph.volume(i)).collect();
    let mut open_n: Vec<u32> = (0..n).map(|i| p.graph.adj[i].len() as u32).collect();
    let mut scratch = vec![0.0; p.tree.vertices()];
    let mut touched: Vec<Vertex> = Vec::new();
    let mut cur_max = 0.0f64;
    let mut empty_seen = vec![false; p.tree.vertices()];
    let mut seen_list: Vec<usize> = Vec::new();
    for step in 0..n {
        let pick = if step == 0 {
            (0..n).max_by(|&x, &y| (open_w[x] + external(p, x)).total_cmp(&(open_w[y] + external(p, y))).then(y.cmp(&x)))
        } else {
            let delta = |q: usize| {
                let avg = |w: f64, c: u32| if c == 0 { 0.0 } else { w / f64::from(c) };
                avg(placed_w[q], placed_n[q]) - avg(open_w[q], open_n[q])
            };
            (0..n).filter(|&q| a.leaf_of[q] == UNPLACED).max_by(|&x, &y| delta(x).total_cmp(&delta(y)).then(y.cmp(&x)))
        };
        let Some(q) = pick else { break };
        let mut best: Option<(f64, f64, u32)> = None;
        for l in 0..p.capacity.len() as u32 {
            if a.used[l as usize] >= p.capacity[l as usize] {
                continue;
            }
            // Empty leaves under one parent are alike (no load on their own uplinks, the same
            // path beyond it): only the first is evaluated, the one ties would pick anyway.
            let v = p.tree.leaf(l as usize);
            if a.used[l as usize] == 0 && v != p.tree.root() {
                let parent = p.tree.parent(v) as usize;
                if empty_seen[parent] {
                    continue;
                }
                empty_seen[parent] = true;
                seen_list.push(parent);
            }
            let (max, dsq) = a.try_place(q, l, cur_max, &mut scratch, &mut touched);
            if best.is_none_or(|(bm, bs, _)| better((max, dsq), (bm, bs))) {
                best = Some((max, dsq, l));
            }
        }
        for v in seen_list.drain(..) {
            empty_seen[v] = false;
        }
        let (max, _, l) = best.expect("a free leaf (capacity checked by Assignment::new)");
        a.place(q, l);
        cur_max = cur_max.max(max);
        for &(j, w) in &p.graph.adj[q] {
            let j = j as usize;
            placed_w[j] += w;
            placed_n[j] += 1;
            open_w[j] -= w;
            open_n[j] -= 1;
        }
    }
    a.leaf_of
}

fn external(p: &Problem, i: usize) -> f64 {
    p.external.get(i).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_pairs_share_a_package() {
        // Pairs (0,3) and (1,2) talk a lot, everything else a little; two packages of two cores.
        let (g, t) = crate::mapping::tests::heavy_pairs_on_two_packages();
        let cap = vec![1; 4];
        let p = Problem { graph: &g, external: &[], tree: &t, capacity: &cap };
        let l = map(&p);
        let pkg = |i: usize| l[i] / 2;
        assert_eq!(pkg(0), pkg(3), "{l:?}");
        assert_eq!(pkg(1), pkg(2), "{l:?}");
        let mut sorted = l.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3]);
    }

    #[test]
    fn capacities_are_respected() {
        let (g, t, cap) = crate::mapping::tests::ring_of_six_on_three_nodes();
        let l = map(&Problem { graph: &g, external: &[], tree: &t, capacity: &cap });
        for leaf in 0..3 {
            assert_eq!(l.iter().filter(|&&x| x == leaf).count(), 2, "{l:?}");
        }
        // A ring cut into 3 arcs of 2: each node's two processes are ring neighbours.
        for leaf in 0..3u32 {
            let on: Vec<usize> = (0..6).filter(|&i| l[i] == leaf).collect();
            let d = (on[1] + 6 - on[0]) % 6;
            assert!(d == 1 || d == 5, "{l:?}");
        }
    }
}
