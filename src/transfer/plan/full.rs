//! The full planner (Section 4.2): the path, intermediate layouts and block factors with the
//! highest throughput over every path the paper allows (acyclic, each memory's self-loop at
//! most once).
//!
//! Paths are not enumerated up front (a two-node machine has hundreds of thousands); they are
//! grown best-first from a priority queue ordered by an upper bound: the smaller of the
//! path's slowest channel so far and the widest-path bound from its end to the destination,
//! both at a request of the whole instance (no PREFIX exceeds TOTAL; the paper's BFS bound on
//! peak bandwidth, made tighter). A complete path is solved (`search.rs`) only if its bound can
//! still beat the best plan, and the search ends as soon as a plan reaches the bound of
//! everything left, so the answer is exact.
//!
//! Ties keep results reproducible: among plans of equal throughput the one with fewer hops
//! wins, then the lexicographically smaller channel sequence; the queue pops in exactly that
//! order among equal bounds, so the first plan to reach the bound is the winner.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::curve::Curve;
use super::model::{ChannelId, MemoryId, Model};
use super::planner::{Plan, Transfer};
use super::search::{Found, Search, Space};

/// Longest path considered (a model of 12 memories cannot have a longer one).
pub const MAX_HOPS: usize = 24;

/// A path grown so far.
#[derive(Clone)]
struct Entry {
    bound: f64,
    slowest: f64,
    hops: u8,
    at: MemoryId,
    seq: [u32; MAX_HOPS],
}

impl Entry {
    fn key(&self) -> (usize, &[u32]) {
        (self.hops as usize, &self.seq[..self.hops as usize])
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// The heap pops the greatest: highest bound, then fewest hops, then smallest sequence.
    fn cmp(&self, other: &Self) -> Ordering {
        self.bound.total_cmp(&other.bound).then_with(|| other.key().cmp(&self.key()))
    }
}

/// For each memory, the widest-path bound to `dst` (the largest possible slowest channel), with
/// channel weights `w`; `-inf` where `dst` cannot be reached. Dijkstra on max-min.
pub(super) fn widest_to(model: &Model, w: &[f64], dst: MemoryId) -> Vec<f64> {
    let n = model.memories().len();
    let mut h = vec![f64::NEG_INFINITY; n];
    let mut done = vec![false; n];
    h[dst.0 as usize] = f64::INFINITY;
    loop {
        let Some(m) = (0..n).filter(|&m| !done[m] && h[m] > f64::NEG_INFINITY).max_by(|&a, &b| h[a].total_cmp(&h[b]).then(b.cmp(&a)))
        else {
            return h;
        };
        done[m] = true;
        for (i, c) in model.channels().iter().enumerate() {
            if c.dst.0 as usize == m && c.src != c.dst && !done[c.src.0 as usize] {
                let via = w[i].min(h[m]);
                let s = &mut h[c.src.0 as usize];
                *s = s.max(via);
            }
        }
    }
}

/// The best plan for `t`; `None` if no path fits the space threshold (or a memory is not in the
/// model).
pub fn full(model: &Model, t: &Transfer) -> Option<Plan> {
    if !t.fits(model) {
        return None;
    }
    let space = Space::new(*t.shape(), model.threshold(), t.src_layout(), t.dst_layout());
    let (seq, found) = best_path(model, t, &space)?;
    let mut layouts = vec![*t.src_layout()];
    layouts.extend(found.layouts.iter().map(|&l| space.layouts[l]));
    layouts.push(*t.dst_layout());
    Some(Plan::build(model, t, &seq, &layouts, &found.u))
}

fn best_path(model: &Model, t: &Transfer, space: &Space) -> Option<(Vec<ChannelId>, Found)> {
    let (src, dst) = (t.src(), t.dst());
    let total = space.shape.lambda(true, space.shape.total().int as i64);
    let w: Vec<f64> = model.channels().iter().map(|c| c.curve.at_log2(total)).collect();
    let h = widest_to(model, &w, dst);
    let bound_at = |m: MemoryId| if m == dst { f64::INFINITY } else { h[m.0 as usize] };
    let mut search = Search::new(space);
    let mut heap = BinaryHeap::new();
    if bound_at(src) > f64::NEG_INFINITY {
        heap.push(Entry { bound: bound_at(src), slowest: f64::INFINITY, hops: 0, at: src, seq: [0; MAX_HOPS] });
    }
    let mut best: Option<(Entry, Found)> = None;
    let mut curves: Vec<&Curve> = Vec::with_capacity(MAX_HOPS);
    while let Some(e) = heap.pop() {
        if let Some((b, f)) = &best {
            if e.bound < f.value || (e.bound == f.value && e.hops > b.hops) {
                break;
            }
        }
        if e.at == dst && e.hops > 0 {
            curves.clear();
            curves.extend(e.seq[..e.hops as usize].iter().map(|&c| &model.channel(ChannelId(c)).curve));
            let (floor, strict) = match &best {
                Some((b, f)) => (f.value, e.key() >= b.key()),
                None => (0.0, true),
            };
            if let Some(f) = search.best(&curves, floor, strict) {
                let reached = f.value >= e.bound;
                best = Some((e.clone(), f));
                if reached {
                    break;
                }
            }
        }
        expand(model, &e, src, dst, &w, &bound_at, best.as_ref().map(|(_, f)| f.value), &mut heap);
    }
    best.map(|(e, f)| (e.seq[..e.hops as usize].iter().map(|&c| ChannelId(c)).collect(), f))
}

/// Pushes every allowed one-channel extension of `e` whose bound can still reach `floor`.
#[allow(clippy::too_many_arguments)]
fn expand(
    model: &Model,
    e: &Entry,
    src: MemoryId,
    dst: MemoryId,
    w: &[f64],
    bound_at: &dyn Fn(MemoryId) -> f64,
    floor: Option<f64>,
    heap: &mut BinaryHeap<Entry>,
) {
    let n = e.hops as usize;
    if n >= MAX_HOPS {
        return;
    }
    let last_loops = n > 0 && {
        let c = model.channel(ChannelId(e.seq[n - 1]));
        c.src == c.dst
    };
    let visited = |m: MemoryId| m == src || e.seq[..n].iter().any(|&c| model.channel(ChannelId(c)).dst == m);
    for &c in model.outgoing(e.at) {
        let to = model.channel(c).dst;
        // A self-loop once per memory (it is used while there, so only right after another);
        // otherwise a memory not seen yet, and nothing leaves the destination.
        let allowed = if to == e.at { !last_loops } else { e.at != dst && !visited(to) };
        if !allowed {
            continue;
        }
        let slowest = e.slowest.min(w[c.0 as usize]);
        let bound = slowest.min(bound_at(to));
        if bound == f64::NEG_INFINITY || floor.is_some_and(|f| bound < f) {
            continue;
        }
        let mut seq = e.seq;
        seq[n] = c.0;
        heap.push(Entry { bound, slowest, hops: e.hops + 1, at: to, seq });
    }
}
