//! The refinement pass the paper does not have: local search on a complete placement that
//! never raises the maximum congestion. It looks at the most congested link, tries to move each
//! process whose traffic crosses it to every other leaf (to a free place, or swapping with a
//! process there) and keeps a change only when the maximum congestion falls, or stays and the
//! sum of squared congestions falls. It stops when no such change is left or after `budget`
//! tried moves.

use super::assign::{less, Assignment, Problem};
use super::tree::{Tree, Vertex};

/// Improves `leaf_of` in place; returns the number of changes kept.
pub fn refine(p: &Problem, leaf_of: &mut [u32], budget: usize) -> usize {
    let mut a = Assignment::with(p, leaf_of);
    let t = p.tree;
    let leaves = p.capacity.len() as u32;
    let (mut cur, mut tried, mut kept) = (a.score(), 0usize, 0usize);
    'search: while tried < budget && cur.0 > 0.0 {
        let hot = a.loads.max(t).1;
        let inside = |l: u32| below(t, t.leaf(l as usize), hot);
        // The processes whose traffic crosses the hot link: inside it with a neighbour (or the
        // outside world) beyond it, or outside it with a neighbour inside.
        let crossing: Vec<usize> = (0..leaf_of.len())
            .filter(|&i| {
                let me = inside(a.leaf_of[i]);
                p.graph.adj[i].iter().any(|&(j, _)| inside(a.leaf_of[j as usize]) != me)
                    || (me && p.external.get(i).is_some_and(|&e| e > 0.0))
            })
            .collect();
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); leaves as usize];
        for (j, &l) in a.leaf_of.iter().enumerate() {
            members[l as usize].push(j);
        }
        for i in crossing {
            let from = a.leaf_of[i];
            let side = inside(from);
            // Only a move to the other side of the hot link can unload it.
            for to in (0..leaves).filter(|&to| inside(to) != side) {
                let free = a.used[to as usize] < p.capacity[to as usize];
                let partners = free.then_some(None).into_iter().chain(members[to as usize].iter().map(|&j| Some(j)));
                for j in partners.collect::<Vec<_>>() {
                    tried += 1;
                    exchange(&mut a, i, from, j, to);
                    let s = a.score();
                    if less(s.0, cur.0) || (!less(cur.0, s.0) && less(s.1, cur.1)) {
                        cur = s;
                        kept += 1;
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
