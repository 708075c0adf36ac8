//! One mapping problem of a phase and the state of its solution: processes (a graph over local
//! indices, plus each one's traffic with processes outside the problem) placed on the leaves of
//! one tree with a capacity per leaf, and the load every placed edge puts on the tree's links.
//! The greedy heuristic builds an [`Assignment`] process by process; the refinement moves
//! processes in it. Both judge a placement by its maximum link congestion, and then by the sum
//! of squared congestions (how evenly the rest is spread).

use super::matrix::Graph;
use super::tree::{Loads, Tree, Vertex};

/// What a phase maps: `graph` over processes `0..n`, `external[i]` bytes of process `i` with
/// processes outside the problem (they leave through the tree's root: the node's network
/// card, or nothing for the network itself), onto `tree`'s leaves, `capacity[l]` processes
/// on leaf `l`.
pub struct Problem<'a> {
    pub graph: &'a Graph,
    pub external: &'a [f64],
    pub tree: &'a Tree,
    pub capacity: &'a [u32],
}

/// Not placed yet.
pub const UNPLACED: u32 = u32::MAX;

/// Relative tolerance when comparing congestions (sums of f64 in different orders).
const EPS: f64 = 1e-9;

/// `a` is smaller than `b` beyond rounding.
pub fn less(a: f64, b: f64) -> bool {
    a < b - EPS * a.abs().max(b.abs())
}

/// Score `a` beats score `b`: a lower maximum congestion, or an equal one (within rounding) and a
/// lower sum of squares.
pub fn better(a: (f64, f64), b: (f64, f64)) -> bool {
    less(a.0, b.0) || (!less(b.0, a.0) && less(a.1, b.1))
}

/// A (partial) placement and its link loads.
pub struct Assignment<'a> {
    pub p: &'a Problem<'a>,
    /// Leaf of each process, or [`UNPLACED`].
    pub leaf_of: Vec<u32>,
    pub used: Vec<u32>,
    pub loads: Loads,
}

impl<'a> Assignment<'a> {
    pub fn new(p: &'a Problem<'a>) -> Assignment<'a> {
        assert_eq!(p.capacity.len(), p.tree.leaf_count());
        let n = p.graph.len();
        assert!(p.external.is_empty() || p.external.len() == n);
        assert!(p.capacity.iter().map(|&c| c as usize).sum::<usize>() >= n, "more processes than places");
        Assignment { p, leaf_of: vec![UNPLACED; n], used: vec![0; p.capacity.len()], loads: Loads::new(p.tree) }
    }

    /// The placement `leaf_of` (every process placed).
    pub fn with(p: &'a Problem<'a>, leaf_of: &[u32]) -> Assignment<'a> {
        let mut a = Assignment::new(p);
        for (i, &l) in leaf_of.iter().enumerate() {
            a.place(i, l);
        }
        a
    }

    fn external(&self, i: usize) -> f64 {
        self.p.external.get(i).copied().unwrap_or(0.0)
    }

    /// Adds (`sign` 1) or removes (-1) the loads of `i`'s edges to placed processes and of its
    /// external traffic, with `i` on leaf `l`.
    fn charge(&mut self, i: usize, l: u32, sign: f64) {
        let t = self.p.tree;
        let at = t.leaf(l as usize);
        for &(j, w) in &self.p.graph.adj[i] {
            let lj = self.leaf_of[j as usize];
            if lj != UNPLACED && j as usize != i {
                self.loads.add(t, at, t.leaf(lj as usize), sign * w);
            }
        }
        let e = self.external(i);
        if e > 0.0 {
            self.loads.add(t, at, t.root(), sign * e);
        }
    }

    /// Places the unplaced process `i` on leaf `l`.
    pub fn place(&mut self, i: usize, l: u32) {
        debug_assert_eq!(self.leaf_of[i], UNPLACED);
        self.charge(i, l, 1.0);
        self.leaf_of[i] = l;
        self.used[l as usize] += 1;
    }

    /// Takes the placed process `i` off its leaf.
    pub fn unplace(&mut self, i: usize) {
        let l = self.leaf_of[i];
        self.leaf_of[i] = UNPLACED;
        self.used[l as usize] -= 1;
        self.charge(i, l, -1.0);
    }

    /// (maximum congestion, sum of squared congestions).
    pub fn score(&self) -> (f64, f64) {
        (self.loads.max(self.p.tree).0, self.loads.sum_sq(self.p.tree))
    }

    /// What placing the unplaced process `i` on leaf `l` would make of the score, given the
    /// current maximum `cur_max`: (new maximum, increase of the sum of squares). Touches
    /// nothing (`scratch`: one f64 per vertex, zero on entry and on return).
    pub fn try_place(&self, i: usize, l: u32, cur_max: f64, scratch: &mut [f64], touched: &mut Vec<Vertex>) -> (f64, f64) {
        let t = self.p.tree;
        let at = t.leaf(l as usize);
        let mut add = |a: Vertex, b: Vertex, w: f64| {
            t.path(a, b, |v| {
                if scratch[v as usize] == 0.0 {
                    touched.push(v);
                }
                scratch[v as usize] += w;
            })
        };
        for &(j, w) in &self.p.graph.adj[i] {
            let lj = self.leaf_of[j as usize];
            if lj != UNPLACED && j as usize != i {
                add(at, t.leaf(lj as usize), w);
            }
        }
        let e = self.external(i);
        if e > 0.0 {
            add(at, t.root(), e);
        }
        let (mut max, mut dsq) = (cur_max, 0.0);
        for v in touched.drain(..) {
            let bw = t.bandwidth(v);
            let (old, new) = (self.loads.bytes[v as usize] / bw, (self.loads.bytes[v as usize] + scratch[v as usize]) / bw);
            max = max.max(new);
            dsq += new * new - old * old;
            scratch[v as usize] = 0.0;
        }
        (max, dsq)
    }
}
