//! The reference the full planner is checked against: every path, every assignment of candidate
//! layouts to the intermediate buffers and every block-factor vector, evaluated from the
//! definitions (sizes multiplied out in integers, common prefixes and suffixes compared
//! component by component): no affine forms, no bitsets, no binary search, no pruning.

use super::full::MAX_HOPS;
use super::layout::{candidates, Component, Layout, MAX_DIMS};
use super::model::{ChannelId, Model};
use super::planner::Transfer;

/// Every path from the transfer's source to its destination: acyclic, each memory's self-loop at
/// most once, at least one hop, at most [`MAX_HOPS`].
pub(super) fn paths(model: &Model, t: &Transfer) -> Vec<Vec<ChannelId>> {
    let n = model.memories().len();
    let mut out = Vec::new();
    let mut seen = vec![false; n];
    let mut looped = vec![false; n];
    seen[t.src().0 as usize] = true;
    walk(model, t, t.src().0 as usize, &mut Vec::new(), &mut seen, &mut looped, &mut out);
    out
}

fn walk(
    model: &Model,
    t: &Transfer,
    at: usize,
    path: &mut Vec<ChannelId>,
    seen: &mut [bool],
    looped: &mut [bool],
    out: &mut Vec<Vec<ChannelId>>,
) {
    let dst = t.dst().0 as usize;
    if at == dst && !path.is_empty() {
        out.push(path.clone());
    }
    if path.len() == MAX_HOPS {
        return;
    }
    for (i, c) in model.channels().iter().enumerate() {
        let (s, d) = (c.src.0 as usize, c.dst.0 as usize);
        if s != at {
            continue;
        }
        path.push(ChannelId(i as u32));
        if d == at && !looped[at] {
            looped[at] = true;
            walk(model, t, at, path, seen, looped, out);
            looped[at] = false;
        } else if d != at && at != dst && !seen[d] {
            seen[d] = true;
            walk(model, t, d, path, seen, looped, out);
            seen[d] = false;
        }
        path.pop();
    }
}

/// The layouts an intermediate buffer may take (as in the full planner: the candidates, plus the
/// source's and destination's if they are not among them).
pub(super) fn layouts(t: &Transfer) -> Vec<Layout> {
    let mut all = candidates(t.shape().dims()).layouts.clone();
    for l in [t.src_layout().expand(), t.dst_layout().expand()] {
        if !all.contains(&l) {
            all.push(l);
        }
    }
    all
}

fn size(c: Component, t: &Transfer, u: &[u32; MAX_DIMS]) -> u128 {
    let ext = t.shape().log2_extents();
    match c {
        Component::Field => t.shape().field_bytes() as u128,
        Component::Dim(d) => 1 << ext[d as usize],
        Component::In(d) => 1 << u[d as usize],
        Component::Out(d) => 1 << (ext[d as usize] - u[d as usize]),
    }
}

/// The throughput of one plan, or `None` if a hop between two intermediate buffers shuffles
/// more than the threshold.
pub(super) fn evaluate(model: &Model, t: &Transfer, channels: &[ChannelId], layouts: &[Layout], u: &[u32; MAX_DIMS]) -> Option<f64> {
    let mut value = f64::INFINITY;
    for (i, &c) in channels.iter().enumerate() {
        let (a, b) = (layouts[i].expand(), layouts[i + 1].expand());
        let (a, b) = (a.components(), b.components());
        let cp = (0..a.len()).take_while(|&j| a[j] == b[j]).count();
        let cs = (0..a.len()).take_while(|&j| a[a.len() - 1 - j] == b[b.len() - 1 - j]).count();
        let request: u128 = a[..cp].iter().map(|&x| size(x, t, u)).product();
        let shuffle: u128 = a[..a.len() - cs].iter().map(|&x| size(x, t, u)).product();
        if i > 0 && i + 1 < channels.len() && shuffle > model.threshold() as u128 {
            return None;
        }
        value = value.min(model.channel(c).curve.at(request as f64));
    }
    Some(value)
}

/// Every block-factor vector of the transfer's grid.
pub(super) fn grid(t: &Transfer) -> Vec<[u32; MAX_DIMS]> {
    let ext = t.shape().log2_extents();
    let mut all = vec![[0; MAX_DIMS]];
    for d in 0..t.shape().dims() {
        all = all
            .iter()
            .flat_map(|u| {
                (0..=ext[d]).map(move |x| {
                    let mut v = *u;
                    v[d] = x;
                    v
                })
            })
            .collect();
    }
    all
}

/// How many plans [`brute_force`] evaluates.
pub(super) fn cost(model: &Model, t: &Transfer) -> u64 {
    let k = layouts(t).len() as u64;
    let g = grid(t).len() as u64;
    paths(model, t).iter().map(|p| k.saturating_pow(p.len() as u32 - 1).saturating_mul(g)).fold(0, u64::saturating_add)
}

/// The highest throughput of any plan and the path the full planner must choose for it: among
/// paths reaching it (within 1e-12, rounding of the two evaluations aside), the fewest hops,
/// then the smallest channel sequence. `None` if no plan fits the threshold.
pub(super) fn brute_force(model: &Model, t: &Transfer) -> Option<(f64, Vec<ChannelId>)> {
    let cands = layouts(t);
    let grid = grid(t);
    let mut per_path: Vec<(f64, Vec<ChannelId>)> = Vec::new();
    for path in paths(model, t) {
        let inner = path.len() - 1;
        let mut pick = vec![0usize; inner];
        let mut best: Option<f64> = None;
        loop {
            let mut ls = vec![*t.src_layout()];
            ls.extend(pick.iter().map(|&i| cands[i]));
            ls.push(*t.dst_layout());
            for u in &grid {
                if let Some(v) = evaluate(model, t, &path, &ls, u) {
                    best = Some(best.map_or(v, |b| b.max(v)));
                }
            }
            // Next assignment (odometer); done after the last.
            let Some(i) = pick.iter().position(|&x| x + 1 < cands.len()) else { break };
            pick[i] += 1;
            pick[..i].fill(0);
        }
        if let Some(v) = best {
            per_path.push((v, path));
        }
    }
    let top = per_path.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    per_path.into_iter().filter(|p| p.0 >= top * (1.0 - 1e-12)).min_by(|a, b| (a.1.len(), &a.1).cmp(&(b.1.len(), &b.1))).map(|p| (top, p.1))
}
