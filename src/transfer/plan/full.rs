//! The full planner (Section 4.2): the path, intermediate layouts and block factors with the
//! highest throughput over every path the paper allows (acyclic, each memory's self-loop at
//! most once).
//!
//! Paths are not enumerated up front (a two-node machine has hundreds of thousands); they are
//! grown best-first from a frontier ordered by an upper bound: the smaller of the path's slowest
//! channel so far and the widest-path bound from its end to the destination, both at a request
//! of the whole instance (no PREFIX exceeds TOTAL: the paper's BFS bound on peak bandwidth, made
//! tighter). Work is done only when its bound is the highest left:
//! - a complete path is first tested at its own bound (one reachability test, `search.rs`);
//!   reaching it ends the search, since nothing left can do better;
//! - a path short of its bound goes back with the next lower bound and is solved exactly (the
//!   candidate binary search) only if it comes out again;
//! - a path's extensions with bounds below its own wait in one deferred entry, so the many
//!   paths that could only matter below the answer are never built.
//!
//! Every entry's bound is an upper bound of what it can still yield, so the answer is exact.
//! Ties keep results reproducible: among plans of equal throughput the one with fewer hops wins,
//! then the lexicographically smaller channel sequence; the frontier pops in exactly that order
//! among equal bounds.

use super::curve::Curve;
use super::frontier::{Frontier, Kind, Path};
use super::model::{ChannelId, MemoryId, Model};
use super::planner::{Plan, Transfer};
use super::search::{Found, Search, Space};

/// Longest path considered: a model of 12 memories has no longer one; in a larger model longer
/// paths are left out.
pub const MAX_HOPS: usize = 24;
/// Largest model the full planner takes (visited memories are a bitmask, channels 16 bits).
pub const MAX_MEMORIES: usize = 128;
pub const MAX_CHANNELS: usize = u16::MAX as usize;

/// The largest float below a positive `x`.
fn next_down(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
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

/// The best plan for `t`; `None` if no path fits the space threshold, a memory is not in the
/// model, or the model is larger than [`MAX_MEMORIES`] / [`MAX_CHANNELS`].
pub fn full(model: &Model, t: &Transfer) -> Option<Plan> {
    if !t.fits(model) || model.memories().len() > MAX_MEMORIES || model.channels().len() > MAX_CHANNELS {
        return None;
    }
    let space = Space::new(*t.shape(), model.threshold(), t.src_layout(), t.dst_layout());
    let (seq, found) = best_path(model, t, &space)?;
    let mut layouts = vec![*t.src_layout()];
    layouts.extend(found.layouts.iter().map(|&l| space.layout(l)));
    layouts.push(*t.dst_layout());
    Some(Plan::build(model, t, &seq, &layouts, &found.u))
}

/// The transfer graph as the search walks it: channel ends and weights (throughput at a
/// whole-instance request) and the widest-path bound of each memory to the destination.
struct Walk<'m> {
    model: &'m Model,
    ends: Vec<(u16, u16)>,
    w: Vec<f64>,
    h: Vec<f64>,
    dst: u16,
}

impl Walk<'_> {
    fn bound_at(&self, m: u16) -> f64 {
        if m == self.dst {
            f64::INFINITY
        } else {
            self.h[m as usize]
        }
    }

    /// Pushes the extensions of `e` whose bound is `key` (at least `floor`), and `e` itself,
    /// as the keeper of the rest, at the highest bound below `key` among them. Extensions: a
    /// self-loop once per memory (used while there, so only right after another hop), otherwise
    /// a memory not visited yet; nothing leaves the destination.
    fn expand(&self, e: &Path, key: f64, floor: f64, frontier: &mut Frontier) {
        let n = e.hops as usize;
        if n == MAX_HOPS {
            return;
        }
        let last_loops = n > 0 && self.ends[e.seq[n - 1] as usize].0 == self.ends[e.seq[n - 1] as usize].1;
        let mut rest = f64::NEG_INFINITY;
        for &c in self.model.outgoing(MemoryId(e.at as u32)) {
            let to = self.ends[c.0 as usize].1;
            let allowed = if to == e.at { !last_loops } else { e.at != self.dst && e.visited >> to & 1 == 0 };
            if !allowed {
                continue;
            }
            let slowest = e.slowest.min(self.w[c.0 as usize]);
            let bound = slowest.min(self.bound_at(to));
            if bound < floor || bound == f64::NEG_INFINITY {
                continue;
            }
            if bound < key {
                rest = rest.max(bound);
                continue;
            }
            let mut next = Path { slowest, at: to, hops: e.hops + 1, visited: e.visited | 1 << to, kind: Kind::Open, ..*e };
            next.seq[n] = c.0 as u16;
            frontier.push(bound, next);
        }
        if rest > f64::NEG_INFINITY {
            frontier.push(rest, Path { kind: Kind::Rest, ..*e });
        }
    }
}

fn best_path(model: &Model, t: &Transfer, space: &Space) -> Option<(Vec<ChannelId>, Found)> {
    let (src, dst) = (t.src(), t.dst());
    let total = space.shape.lambda(true, space.shape.total().int as i64);
    let w: Vec<f64> = model.channels().iter().map(|c| c.curve.at_log2(total)).collect();
    let walk = Walk {
        model,
        ends: model.channels().iter().map(|c| (c.src.0 as u16, c.dst.0 as u16)).collect(),
        h: widest_to(model, &w, dst),
        w,
        dst: dst.0 as u16,
    };
    let mut search = Search::new(space);
    let mut frontier = Frontier::default();
    let start = Path { seq: [0; MAX_HOPS], visited: 1 << src.0, slowest: f64::INFINITY, at: src.0 as u16, hops: 0, kind: Kind::Open };
    if walk.bound_at(start.at) > f64::NEG_INFINITY {
        frontier.push(walk.bound_at(start.at), start);
    }
    let mut best: Option<(Path, Found)> = None;
    let mut curves: Vec<&Curve> = Vec::with_capacity(MAX_HOPS);
    while let Some((bound, e)) = frontier.pop() {
        if let Some((b, f)) = &best {
            if bound < f.value || (bound == f.value && e.hops > b.hops) {
                break;
            }
        }
        let floor = best.as_ref().map_or(f64::NEG_INFINITY, |(_, f)| f.value);
        if e.kind == Kind::Rest {
            walk.expand(&e, bound, floor, &mut frontier);
            continue;
        }
        if e.at == walk.dst && e.hops > 0 {
            curves.clear();
            curves.extend(e.channels().iter().map(|&c| &model.channel(ChannelId(c as u32)).curve));
            // Whether the path may tie the best plan (it precedes it among equal throughputs).
            let strict = best.as_ref().is_some_and(|(b, _)| e.key() >= b.key());
            let floor = floor.max(0.0);
            let found = if e.kind == Kind::Short {
                search.below(&curves, e.slowest, floor, strict)
            } else if bound == floor && strict {
                None
            } else if let Some(f) = search.reaches(&curves, bound) {
                // The path's own bound (its slowest channel at a whole-instance request).
                Some(f)
            } else {
                // Short of it: back with the next lower bound, solved only if that is still
                // the highest bound left.
                let lower = next_down(bound);
                if lower > floor || (lower == floor && !strict) {
                    frontier.push(lower, Path { kind: Kind::Short, ..e });
                }
                None
            };
            if let Some(f) = found {
                let reached = f.value >= bound;
                best = Some((e, f));
                if reached {
                    break;
                }
            }
            if e.kind == Kind::Short {
                continue;
            }
        }
        let floor = best.as_ref().map_or(f64::NEG_INFINITY, |(_, f)| f.value);
        walk.expand(&e, bound, floor, &mut frontier);
    }
    best.map(|(p, f)| (p.channels().iter().map(|&c| ChannelId(c as u32)).collect(), f))
}
