//! Layouts and block factors together, for one path of the full planner: the most a path of
//! channels reaches when every intermediate buffer may take any candidate layout.
//!
//! Enumerating layout assignments is exponential in the path length (30 layouts per buffer in
//! 2-D), but the constraints only link neighbouring buffers, so feasibility at a throughput `T`
//! is reachability through layers, one per intermediate buffer: a state is a layout together
//! with the set of block-factor vectors `u` under which the path up to that buffer meets every
//! constraint. Sets are grid bitsets (`grid.rs`), so one step costs a few word operations per
//! pair of layouts, and the witness is read back from the layers. The optimum is found by the
//! candidate binary search of `solve.rs`.

use std::borrow::Cow;
use std::rc::Rc;

use super::curve::Curve;
use super::grid::{first, Grid};
use super::layout::{candidates, Affine, Candidates, Layout, Shape, MAX_DIMS};
use super::solve::{max_shuffle_int, min_int, next_up, search_candidates};

/// Everything about one transfer's layouts that does not depend on the path: the candidate
/// layouts (with the source's and destination's) and their pair tables, and the size of every
/// component set with the grid set where it fits the space threshold.
pub(super) struct Space {
    pub(super) shape: Shape,
    tables: Cow<'static, Candidates>,
    k: usize,
    /// Components per (expanded) layout.
    len: usize,
    /// Indices of the source's and the destination's expanded layouts.
    pub(super) src: usize,
    pub(super) dst: usize,
    /// Size of each component set (by mask).
    sizes: Vec<Affine>,
    /// Grid set where that size fits the space threshold.
    fits: Vec<u32>,
    grid: Rc<Grid>,
}

impl Space {
    pub(super) fn new(shape: Shape, threshold: u64, src: &Layout, dst: &Layout) -> Space {
        let c = candidates(shape.dims());
        let (src, dst) = (src.expand(), dst.expand());
        let mut extra: Vec<Layout> = Vec::new();
        for l in [src, dst] {
            if !c.layouts.contains(&l) && !extra.contains(&l) {
                extra.push(l);
            }
        }
        // A source or destination layout outside the candidates joins them, so that the full
        // planner searches a superset of what the simple one and the baselines use.
        let tables = if extra.is_empty() {
            Cow::Borrowed(c)
        } else {
            Cow::Owned(Candidates::new(c.layouts.iter().chain(&extra).copied().collect()))
        };
        let (k, len) = (tables.layouts.len(), tables.len);
        let index = |l: &Layout| tables.layouts.iter().position(|x| x == l).unwrap_or(0);
        let (src, dst) = (index(&src), index(&dst));
        let grid = Grid::of(&shape);
        let sizes: Vec<Affine> = (0..1u32 << len).map(|m| Affine::of_mask(m as u8, &shape)).collect();
        let fits = sizes
            .iter()
            .map(|f| match max_shuffle_int(threshold, &shape, f.field) {
                Some(max) => grid.at_least(f.coef.map(|a| -a), f.int as i64 - max) as u32,
                None => grid.empty() as u32,
            })
            .collect();
        Space { shape, tables, k, len, src, dst, sizes, fits, grid }
    }

    pub(super) fn layout(&self, i: usize) -> Layout {
        self.tables.layouts[i]
    }

    /// PREFIX of the hop from layout `a` to layout `b`.
    fn prefix(&self, a: usize, b: usize) -> &Affine {
        let t = &self.tables;
        &self.sizes[t.prefix_mask[a * (self.len + 1) + t.cp[a * self.k + b] as usize] as usize]
    }

    /// Grid set where the hop from intermediate `a` to intermediate `b` fits the threshold.
    fn fit(&self, a: usize, b: usize) -> usize {
        self.fits[self.tables.rest_mask[a * self.k + b] as usize] as usize
    }
}

/// A path's best layouts and block factors.
#[derive(Clone, Debug)]
pub(super) struct Found {
    pub(super) value: f64,
    /// Layout index of each intermediate buffer.
    pub(super) layouts: Vec<usize>,
    pub(super) u: [u32; MAX_DIMS],
}

/// Scratch for searching paths of one [`Space`]; reused across paths so that a test allocates
/// nothing once the buffers have grown.
pub(super) struct Search<'s> {
    sp: &'s Space,
    /// Per hop and component set: grid set where that prefix is large enough for the hop.
    pre: Vec<u32>,
    /// Per intermediate buffer and layout, the reachable block factors.
    layers: Vec<u64>,
    live: Vec<bool>,
    /// Per prefix length of one layout: reachable set within the request-size bound.
    tmp: Vec<u64>,
    tmp_live: Vec<bool>,
    last: Vec<u64>,
    cands: Vec<f64>,
}

impl<'s> Search<'s> {
    pub(super) fn new(sp: &'s Space) -> Search<'s> {
        let w = sp.grid.words();
        Search {
            sp,
            pre: Vec::new(),
            layers: Vec::new(),
            live: Vec::new(),
            tmp: vec![0; (sp.len + 1) * w],
            tmp_live: vec![false; sp.len + 1],
            last: vec![0; w],
            cands: Vec::new(),
        }
    }

    /// Grid set where the first `j` components of layout `l` make a large enough request for hop
    /// `hop`.
    fn pre(&self, hop: usize, l: usize, j: usize) -> usize {
        let m = self.sp.tables.prefix_mask[l * (self.sp.len + 1) + j] as usize;
        self.pre[(hop << self.sp.len) + m] as usize
    }

    /// Whether some layouts and block factors give every hop of the path (its curves, in order)
    /// a throughput of at least `t` within the space threshold. Leaves the layers for
    /// [`Search::witness`].
    fn feasible(&mut self, curves: &[&Curve], t: f64) -> bool {
        let sp = self.sp;
        self.pre.clear();
        for c in curves {
            let kmin = [min_int(c, &sp.shape, false, t), min_int(c, &sp.shape, true, t)];
            self.pre.extend(sp.sizes.iter().map(|f| match kmin[f.field as usize] {
                Some(k) => sp.grid.at_least(f.coef, k - f.int as i64) as u32,
                None => sp.grid.empty() as u32,
            }));
        }
        match sp.grid.words() {
            1 => self.layered::<1>(curves.len()),
            2 => self.layered::<2>(curves.len()),
            4 => self.layered::<4>(curves.len()),
            8 => self.layered::<8>(curves.len()),
            _ => self.layered::<0>(curves.len()),
        }
    }

    /// The reachability of [`Search::feasible`] with sets of `W` words (0: any width), so that
    /// the word loops of the usual widths compile to straight-line code.
    fn layered<const W: usize>(&mut self, hops: usize) -> bool {
        let sp = self.sp;
        let (w, k, len) = (if W == 0 { sp.grid.words() } else { W }, sp.k, sp.len);
        let inner = hops - 1;
        if inner == 0 {
            let off = self.pre(0, sp.src, sp.tables.cp[sp.src * k + sp.dst] as usize);
            self.last.copy_from_slice(sp.grid.set(off));
            return first(&self.last).is_some();
        }
        self.layers.clear();
        self.layers.resize(inner * k * w, 0);
        self.live.clear();
        self.live.resize(inner * k, false);
        for b in 0..k {
            let off = self.pre(0, sp.src, sp.tables.cp[sp.src * k + b] as usize);
            let set = sp.grid.set(off);
            self.layers[b * w..(b + 1) * w].copy_from_slice(set);
            self.live[b] = set.iter().any(|&x| x != 0);
        }
        for hop in 1..inner {
            if !self.live[(hop - 1) * k..hop * k].contains(&true) {
                return false;
            }
            let (done, next) = self.layers.split_at_mut(hop * k * w);
            let next = &mut next[..k * w];
            for a in 0..k {
                if !self.live[(hop - 1) * k + a] {
                    continue;
                }
                let from = &done[((hop - 1) * k + a) * w..][..w];
                for j in 0..=len {
                    let m = sp.tables.prefix_mask[a * (len + 1) + j] as usize;
                    let set = sp.grid.set(self.pre[(hop << len) + m] as usize);
                    let tmp = &mut self.tmp[j * w..][..w];
                    let mut any = 0;
                    for i in 0..w {
                        tmp[i] = from[i] & set[i];
                        any |= tmp[i];
                    }
                    self.tmp_live[j] = any != 0;
                }
                let cp = &sp.tables.cp[a * k..][..k];
                let rest = &sp.tables.rest_mask[a * k..][..k];
                for b in 0..k {
                    let j = cp[b] as usize;
                    if !self.tmp_live[j] {
                        continue;
                    }
                    let fit = sp.grid.set(sp.fits[rest[b] as usize] as usize);
                    let tmp = &self.tmp[j * w..][..w];
                    let r = &mut next[b * w..][..w];
                    for i in 0..w {
                        r[i] |= tmp[i] & fit[i];
                    }
                }
            }
            for b in 0..k {
                self.live[hop * k + b] = next[b * w..][..w].iter().any(|&x| x != 0);
            }
        }
        self.last.fill(0);
        for a in 0..k {
            if !self.live[(inner - 1) * k + a] {
                continue;
            }
            let off = self.pre(inner, a, sp.tables.cp[a * k + sp.dst] as usize);
            let from = &self.layers[((inner - 1) * k + a) * w..][..w];
            let set = sp.grid.set(off);
            for i in 0..w {
                self.last[i] |= from[i] & set[i];
            }
        }
        first(&self.last).is_some()
    }

    /// Layouts and block factors behind the last successful [`Search::feasible`]: the lowest
    /// grid point, then the lowest layout index, buffer by buffer from the destination back.
    fn witness(&self, hops: usize) -> (Vec<usize>, [u32; MAX_DIMS]) {
        let sp = self.sp;
        let (w, k) = (sp.grid.words(), sp.k);
        let p = first(&self.last).unwrap_or(0);
        let inner = hops - 1;
        let mut ls = vec![0; inner];
        let has = |layer: usize, a: usize| self.layers[(layer * k + a) * w + p / 64] >> (p % 64) & 1 == 1;
        for i in (0..inner).rev() {
            let next = if i + 1 == inner { sp.dst } else { ls[i + 1] };
            let fits = |a: usize| i + 1 == inner || sp.grid.contains(sp.fit(a, next), p);
            ls[i] = (0..k)
                .find(|&a| has(i, a) && sp.grid.contains(self.pre(i + 1, a, sp.tables.cp[a * k + next] as usize), p) && fits(a))
                .unwrap_or(0);
        }
        (ls, sp.grid.point(p))
    }

    /// The exact throughput of the path with intermediate layouts `ls` at `u`.
    fn value(&self, curves: &[&Curve], ls: &[usize], u: &[u32; MAX_DIMS]) -> f64 {
        let sp = self.sp;
        let buffers = std::iter::once(sp.src).chain(ls.iter().copied()).chain(std::iter::once(sp.dst));
        let pairs = buffers.clone().zip(buffers.skip(1));
        curves.iter().zip(pairs).map(|(c, (a, b))| c.at_log2(sp.prefix(a, b).log2_at(&sp.shape, u))).fold(f64::INFINITY, f64::min)
    }

    fn found(&self, curves: &[&Curve]) -> Found {
        let (layouts, u) = self.witness(curves.len());
        Found { value: self.value(curves, &layouts, &u), layouts, u }
    }

    /// The path's throughput with no PREFIX larger than TOTAL (each channel at a whole-instance
    /// request): an upper bound, and the value when nothing converts.
    fn bound(&self, curves: &[&Curve]) -> f64 {
        let total = self.sp.shape.total().int as i64;
        curves.iter().map(|c| c.at_log2(self.sp.shape.lambda(true, total))).fold(f64::INFINITY, f64::min)
    }

    /// Layouts and block factors giving the path at least `t`, if any.
    pub(super) fn reaches(&mut self, curves: &[&Curve], t: f64) -> Option<Found> {
        if self.sp.src == self.sp.dst {
            // Every buffer in the one layout: whole-instance requests everywhere.
            let f = Found { value: self.bound(curves), layouts: vec![self.sp.src; curves.len() - 1], u: [0; MAX_DIMS] };
            return (f.value >= t).then_some(f);
        }
        self.feasible(curves, t).then(|| self.found(curves))
    }

    /// The path's highest throughput, known to be below `ub`, if it beats `floor` (or equals it,
    /// when `strict` is false).
    pub(super) fn below(&mut self, curves: &[&Curve], ub: f64, floor: f64, strict: bool) -> Option<Found> {
        let sp = self.sp;
        let mut best = self.reaches(curves, if strict { next_up(floor) } else { floor.max(next_up(0.0)) })?;
        let mut cands = std::mem::take(&mut self.cands);
        cands.clear();
        for c in curves {
            for field in [false, true] {
                for int in 0..=sp.shape.total().int as i64 {
                    let v = c.at_log2(sp.shape.lambda(field, int));
                    if v > best.value && v < ub {
                        cands.push(v);
                    }
                }
            }
        }
        let mut lo = best.value;
        search_candidates(&mut cands, &mut lo, &mut best, |t| self.reaches(curves, t).map(|f| (f.value, f)));
        self.cands = cands;
        Some(best)
    }
}
