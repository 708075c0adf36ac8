//! The cheap planners: the paper's simple algorithm (Section 4.4) and the two baselines it is
//! measured against (Section 6.3), all on the shortest path. They cost a breadth-first search
//! and one fixed-layout solve, so they suit transfers too small to amortize the full planner.
//!
//! - `simple`: buffers keep the source layout up to one Memcpy hop that converts, the
//!   destination layout after it; without a Memcpy hop on the path, the first CPU memory's
//!   Memcpy self-loop is added.
//! - `spsl` / `spdl`: every intermediate in the source / destination layout, so the last / first
//!   hop converts, whatever channel it is.
//!
//! `simple` is usually at least as good as both baselines (a flat Memcpy converts cheaply, the
//! other hops then send whole-instance requests) but not always: the added self-loop is one
//! more channel that may be the slowest, and a conversion between two intermediate buffers must
//! fit its shuffle in TH, where a baseline converting at the first or last hop needs no buffer
//! at all. The paper uses `simple` below 16 MB with TH = 32 MB, where the latter never binds.

use super::layout::Layout;
use super::model::{ChannelId, ChannelKind, MemoryId, Model};
use super::planner::{Plan, Transfer};
use super::solve::FixedPath;

/// The path with the fewest hops from `src` to `dst` (a self-loop when they are the same);
/// among those the highest slowest peak, then the lexicographically smallest.
pub fn shortest_path(model: &Model, src: MemoryId, dst: MemoryId) -> Option<Vec<ChannelId>> {
    let n = model.memories().len();
    if src.0 as usize >= n || dst.0 as usize >= n {
        return None;
    }
    let peak = |c: ChannelId| model.channel(c).curve.peak();
    if src == dst {
        let loops = model.outgoing(src).iter().copied().filter(|&c| model.channel(c).dst == src);
        return loops
            .fold(None, |b: Option<ChannelId>, c| if b.is_some_and(|b| peak(b) >= peak(c)) { b } else { Some(c) })
            .map(|c| vec![c]);
    }
    // Hops to dst (breadth-first over incoming channels), then the best slowest peak of a
    // shortest path from each memory, nearest first.
    let mut dist = vec![usize::MAX; n];
    dist[dst.0 as usize] = 0;
    let mut order = vec![dst];
    let mut next = 0;
    while next < order.len() {
        let m = order[next];
        next += 1;
        for &c in model.incoming(m) {
            let s = model.channel(c).src;
            if dist[s.0 as usize] == usize::MAX {
                dist[s.0 as usize] = dist[m.0 as usize] + 1;
                order.push(s);
            }
        }
    }
    if dist[src.0 as usize] == usize::MAX {
        return None;
    }
    let mut wide = vec![f64::NEG_INFINITY; n];
    wide[dst.0 as usize] = f64::INFINITY;
    for &m in &order[1..] {
        for &c in model.outgoing(m) {
            let t = model.channel(c).dst.0 as usize;
            if dist[t] != usize::MAX && dist[t] + 1 == dist[m.0 as usize] {
                wide[m.0 as usize] = wide[m.0 as usize].max(peak(c).min(wide[t]));
            }
        }
    }
    // Greedy from src: the smallest channel that keeps the best slowest peak reachable.
    let target = wide[src.0 as usize];
    let mut path = Vec::with_capacity(dist[src.0 as usize]);
    let mut at = src;
    while at != dst {
        let c = model.outgoing(at).iter().copied().find(|&c| {
            let t = model.channel(c).dst.0 as usize;
            dist[t] != usize::MAX && dist[t] + 1 == dist[at.0 as usize] && peak(c) >= target && wide[t] >= target
        })?;
        path.push(c);
        at = model.channel(c).dst;
    }
    Some(path)
}

/// The plan along `channels` whose buffers take the source layout up to and including buffer
/// `conv` and the destination layout after it (hop `conv` converts).
fn fixed(model: &Model, t: &Transfer, channels: &[ChannelId], conv: usize) -> Option<Plan> {
    let layouts: Vec<Layout> = (0..=channels.len()).map(|b| if b <= conv { *t.src_layout() } else { *t.dst_layout() }).collect();
    let (_, u) = FixedPath::new(model, *t.shape(), channels, &layouts).best()?;
    Some(Plan::build(model, t, channels, &layouts, &u))
}

/// The simple planner (Section 4.4).
pub fn simple(model: &Model, t: &Transfer) -> Option<Plan> {
    if !t.fits(model) {
        return None;
    }
    let mut path = shortest_path(model, t.src(), t.dst())?;
    if !t.converts() {
        return fixed(model, t, &path, path.len() - 1);
    }
    let mut convs: Vec<usize> = (0..path.len()).filter(|&i| model.channel(path[i]).kind == ChannelKind::Memcpy).collect();
    if convs.is_empty() {
        // The first CPU memory on the path with a Memcpy self-loop converts in place.
        let mems = std::iter::once(t.src()).chain(path.iter().map(|&c| model.channel(c).dst));
        let (at, c) = mems
            .enumerate()
            .filter(|&(_, m)| model.memory(m).kind.is_cpu())
            .find_map(|(i, m)| model.self_loop(m, ChannelKind::Memcpy).map(|c| (i, c)))?;
        if path.contains(&c) {
            return None;
        }
        path.insert(at, c);
        convs.push(at);
    }
    let mut best: Option<Plan> = None;
    for i in convs {
        if let Some(p) = fixed(model, t, &path, i) {
            if best.as_ref().is_none_or(|b| p.throughput > b.throughput) {
                best = Some(p);
            }
        }
    }
    best
}

/// Shortest path, every intermediate buffer in the source layout: the last hop converts.
pub fn spsl(model: &Model, t: &Transfer) -> Option<Plan> {
    let path = shortest_path(model, t.src(), t.dst()).filter(|_| t.fits(model))?;
    fixed(model, t, &path, path.len() - 1)
}

/// Shortest path, every intermediate buffer in the destination layout: the first hop converts.
pub fn spdl(model: &Model, t: &Transfer) -> Option<Plan> {
    let path = shortest_path(model, t.src(), t.dst()).filter(|_| t.fits(model))?;
    fixed(model, t, &path, 0)
}
