//! The refinement pass the paper does not have: local search on a complete placement that
//! never raises the maximum congestion. It looks at the most congested link and at the
//! processes whose traffic crosses it, tries to move each to a leaf on the other side of that
//! link (to a free place, or swapping with a process there: on a large tree only leaves that
//! hold one of its neighbours) and keeps a change only when the maximum congestion falls, or
//! stays and the sum of squared congestions falls. A move that does not unload the hot link is
//! not even evaluated: its effect on that link is known from Kernighan-Lin gains computed once
//! per look at the link, and the most promising moves are tried first.
//! It stops when no such change is left or after `budget` evaluated moves.

use super::assign::{better, Assignment, Problem};
use super::tree::{Tree, Vertex};

/// Above this many leaves a process is only tried on leaves that hold one of its neighbours.
const ALL_TARGETS_UP_TO: usize = 16;

/// Improves `leaf_of` in place; returns the number of changes kept.
pub fn refine(p: &Problem, leaf_of: &mut [u32], budget: usize) -> usize {
    let mut a = Assignment::with(p, leaf_of);
    let t = p.tree;
    let leaves = p.capacity.len();
    let ext = |i: usize| p.external.get(i).copied().unwrap_or(0.0);
    let (mut cur, mut tried, mut kept) = (a.score(), 0usize, 0usize);
    // Who is on each leaf, kept up to date as changes are kept.
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); leaves];
    for (j, &l) in a.leaf_of.iter().enumerate() {
        members[l as usize].push(j);
    }
    let mut inside = vec![false; leaves];
    let mut seen = vec![false; leaf_of.len()];
    let mut gain = vec![0.0f64; leaf_of.len()];
    'search: while tried < budget && cur.0 > 0.0 {
        let hot = a.loads.max(t).1;
        for (l, x) in inside.iter_mut().enumerate() {
            *x = below(t, t.leaf(l), hot);
        }
        // The processes whose traffic crosses the hot link: inside it with a neighbour (or the
        // outside world) beyond it, or outside it with a neighbour inside; found from the
        // processes inside.
        let mut crossing: Vec<usize> = Vec::new();
        seen.fill(false);
        for l in (0..leaves).filter(|&l| inside[l]) {
            for &i in &members[l] {
                let mut out = ext(i) > 0.0;
                for &(j, _) in &p.graph.adj[i] {
                    let j = j as usize;
                    if !inside[a.leaf_of[j] as usize] {
                        out = true;
                        if !seen[j] {
                            seen[j] = true;
                            crossing.push(j);
                        }
                    }
                }
                if out && !seen[i] {
                    seen[i] = true;
                    crossing.push(i);
                }
            }
        }
        // Kernighan-Lin gains: how much the hot link's load falls if a process alone changes
        // side (its traffic with the other side, the outside world counting as outside, less
        // its traffic with its own side). A swap of i and j gains g(i) + g(j) - 2 w(i, j).
        for (k, gk) in gain.iter_mut().enumerate() {
            let me = inside[a.leaf_of[k] as usize];
            let e = ext(k);
            *gk = if me { e } else { -e };
            for &(n, w) in &p.graph.adj[k] {
                *gk += if inside[a.leaf_of[n as usize] as usize] != me { w } else { -w };
            }
        }
        crossing.sort_by(|&x, &y| gain[y].total_cmp(&gain[x]).then(x.cmp(&y)));
        for i in crossing {
            let from = a.leaf_of[i];
            let side = inside[from as usize];
            // Only a move to the other side of the hot link can unload it.
            let targets: Vec<u32> = if leaves <= ALL_TARGETS_UP_TO || ext(i) > 0.0 {
                (0..leaves as u32).filter(|&to| inside[to as usize] != side).collect()
            } else {
                let mut v: Vec<u32> =
                    p.graph.adj[i].iter().map(|&(j, _)| a.leaf_of[j as usize]).filter(|&l| inside[l as usize] != side).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            for to in targets {
                let free = a.used[to as usize] < p.capacity[to as usize];
                let mut partners: Vec<Option<usize>> =
                    free.then_some(None).into_iter().chain(members[to as usize].iter().map(|&j| Some(j))).collect();
                let g = |j: Option<usize>| j.map_or(0.0, |j| gain[j]);
                partners.sort_by(|&x, &y| g(y).total_cmp(&g(x)));
                for j in partners {
                    let w_ij = j.map_or(0.0, |j| p.graph.adj[i].iter().find(|&&(n, _)| n as usize == j).map_or(0.0, |&(_, w)| w));
                    if gain[i] + g(j) - 2.0 * w_ij <= 0.0 {
                        if gain[i] + g(j) <= 0.0 {
                            break; // partners come in falling gain: none further unloads the link
                        }
                        continue;
                    }
                    tried += 1;
                    exchange(&mut a, i, from, j, to);
                    let s = a.score();
                    if better(s, cur) {
                        cur = s;
                        kept += 1;
                        members[from as usize].retain(|&k| k != i);
                        members[to as usize].push(i);
                        if let Some(j) = j {
                            members[to as usize].retain(|&k| k != j);
                            members[from as usize].push(j);
                        }
                        continue 'search;
                    }
                    exchange(&mut a, i, to, j, from);
                    if tried >= budget {
                        break 'search;
                    }
                }
            }
        }
        break;
    }
    leaf_of.copy_from_slice(&a.leaf_of);
    kept
}

/// Moves `i` from `from` to `to` and, if given, `j` from `to` to `from`.
fn exchange(a: &mut Assignment, i: usize, from: u32, j: Option<usize>, to: u32) {
    a.unplace(i);
    if let Some(j) = j {
        a.unplace(j);
        a.place(j, from);
    }
    a.place(i, to);
}

/// Whether `v` is `top` or below it.
fn below(t: &Tree, mut v: Vertex, top: Vertex) -> bool {
    loop {
        if v == top {
            return true;
        }
        if v == t.root() {
            return false;
        }
        v = t.parent(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::matrix::{CommMatrix, Kind};
    use crate::mapping::tree::Level;

    #[test]
    fn swaps_bring_heavy_pairs_together_and_never_raise_the_maximum() {
        // 8 processes in heavy pairs (i, i+4), on 4 nodes of 2 placed in rank order: every
        // heavy pair crosses the network until refined.
        let mut m = CommMatrix::new(8);
        for i in 0..4 {
            m.add(Kind::Cpu, i, i + 4, 100.0, 1);
            m.add(Kind::Cpu, i, (i + 1) % 4, 1.0, 1);
        }
        let g = m.graph(&[Kind::Cpu]);
        let t = Tree::from_levels(&[Level { name: "node".into(), arity: 4, gbs: 1.0 }]);
        let cap = vec![2; 4];
        let p = Problem { graph: &g, external: &[], tree: &t, capacity: &cap };
        let mut l: Vec<u32> = (0..8).map(|i| i / 2).collect();
        let before = Assignment::with(&p, &l).score().0;
        assert!(refine(&p, &mut l, 100_000) > 0);
        let after = Assignment::with(&p, &l).score().0;
        assert!(after < before / 10.0, "{before} -> {after}: {l:?}");
        for i in 0..4 {
            assert_eq!(l[i], l[i + 4], "{l:?}");
        }
    }
}
