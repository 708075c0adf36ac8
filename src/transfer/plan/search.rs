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

use super::curve::Curve;
use super::grid::{first, Grid};
use super::layout::{candidates, Affine, Layout, Shape, MAX_DIMS};
use super::solve::{max_shuffle_int, min_int, next_up, search_candidates};

/// Everything about one transfer's layouts that does not depend on the path: candidate
/// layouts (with the source's and destination's), their pairwise common prefix and suffix
/// lengths, every prefix's size and whether it fits the space threshold.
pub(super) struct Space {
    pub(super) shape: Shape,
    pub(super) layouts: Cow<'static, [Layout]>,
    cp: Cow<'static, [u8]>,
    cs: Cow<'static, [u8]>,
    k: usize,
    /// Components per (expanded) layout.
    len: usize,
    /// Indices of the source's and the destination's expanded layouts.
    pub(super) src: usize,
    pub(super) dst: usize,
    /// Size of the first `j` components of layout `l`: `forms[l * (len + 1) + j]`.
    forms: Vec<Affine>,
    /// Grid set where that size fits the space threshold, same index.
    fits: Vec<usize>,
    grid: Grid,
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
        let (layouts, cp, cs): (Cow<'static, [Layout]>, Cow<'static, [u8]>, Cow<'static, [u8]>) = if extra.is_empty() {
            (Cow::Borrowed(&c.layouts), Cow::Borrowed(&c.cp), Cow::Borrowed(&c.cs))
        } else {
            let all: Vec<Layout> = c.layouts.iter().chain(&extra).copied().collect();
            let (mut cp, mut cs) = (Vec::new(), Vec::new());
            for a in &all {
                for b in &all {
                    let (p, s) = super::layout::common(a, b);
                    cp.push(p as u8);
                    cs.push(s as u8);
                }
            }
            (Cow::Owned(all), Cow::Owned(cp), Cow::Owned(cs))
        };
        let k = layouts.len();
        let len = 2 * shape.dims() + 1;
        let index = |l: &Layout| layouts.iter().position(|x| x == l).unwrap_or(0);
        let (src, dst) = (index(&src), index(&dst));
        let grid = Grid::new(&shape);
        let mut forms = Vec::with_capacity(k * (len + 1));
        let mut fits = Vec::with_capacity(k * (len + 1));
        for l in layouts.iter() {
            for j in 0..=len {
                let f = Affine::of_prefix(l, j, &shape);
                forms.push(f);
                fits.push(match max_shuffle_int(threshold, &shape, f.field) {
                    Some(max) => grid.at_least(f.coef.map(|a| -a), f.int as i64 - max),
                    None => grid.empty(),
                });
            }
        }
        Space { shape, layouts, cp, cs, k, len, src, dst, forms, fits, grid }
    }

    /// PREFIX of the hop from layout `a` to layout `b`.
    fn prefix(&self, a: usize, b: usize) -> &Affine {
        &self.forms[a * (self.len + 1) + self.cp[a * self.k + b] as usize]
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
    /// Per hop, the least PREFIX exponent reaching the target, without and with |F|.
    kmin: Vec<[Option<i64>; 2]>,
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
            kmin: Vec::new(),
            layers: Vec::new(),
            live: Vec::new(),
            tmp: vec![0; (sp.len + 1) * w],
            tmp_live: vec![false; sp.len + 1],
            last: vec![0; w],
            cands: Vec::new(),
        }
    }

    /// Grid set where the prefix of length `j` of layout `l` is large enough for hop `hop`.
    fn pre(&self, hop: usize, l: usize, j: usize) -> usize {
        let f = &self.sp.forms[l * (self.sp.len + 1) + j];
        match self.kmin[hop][f.field as usize] {
            Some(k) => self.sp.grid.at_least(f.coef, k - f.int as i64),
            None => self.sp.grid.empty(),
        }
    }

    /// Whether some layouts and block factors give every hop of the path (its curves, in order)
    /// a throughput of at least `t` within the space threshold. Leaves the layers for
    /// [`Search::witness`].
    fn feasible(&mut self, curves: &[&Curve], t: f64) -> bool {
        let sp = self.sp;
        let (w, k, len) = (sp.grid.words(), sp.k, sp.len);
        self.kmin.clear();
        for c in curves {
            self.kmin.push([min_int(c, &sp.shape, false, t), min_int(c, &sp.shape, true, t)]);
        }
        let inner = curves.len() - 1;
        if inner == 0 {
            let off = self.pre(0, sp.src, sp.cp[sp.src * k + sp.dst] as usize);
            self.last.copy_from_slice(sp.grid.set(off));
            return first(&self.last).is_some();
        }
        self.layers.clear();
        self.layers.resize(inner * k * w, 0);
        self.live.clear();
        self.live.resize(inner * k, false);
        for b in 0..k {
            let off = self.pre(0, sp.src, sp.cp[sp.src * k + b] as usize);
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
                let from = &done[((hop - 1) * k + a) * w..((hop - 1) * k + a + 1) * w];
                for j in 0..=len {
                    let f = &sp.forms[a * (len + 1) + j];
                    let off = match self.kmin[hop][f.field as usize] {
                        Some(m) => sp.grid.at_least(f.coef, m - f.int as i64),
                        None => sp.grid.empty(),
                    };
                    let mut any = 0;
                    for ((t, &x), &y) in self.tmp[j * w..(j + 1) * w].iter_mut().zip(from).zip(sp.grid.set(off)) {
                        *t = x & y;
                        any |= *t;
                    }
                    self.tmp_live[j] = any != 0;
                }
                for b in 0..k {
                    let j = sp.cp[a * k + b] as usize;
                    if !self.tmp_live[j] {
                        continue;
                    }
                    let fit = sp.grid.set(sp.fits[a * (len + 1) + len - sp.cs[a * k + b] as usize]);
                    for ((r, &x), &y) in next[b * w..(b + 1) * w].iter_mut().zip(&self.tmp[j * w..(j + 1) * w]).zip(fit) {
                        *r |= x & y;
                    }
                }
            }
            for b in 0..k {
                self.live[hop * k + b] = next[b * w..(b + 1) * w].iter().any(|&x| x != 0);
            }
        }
        self.last.fill(0);
        for a in 0..k {
            if !self.live[(inner - 1) * k + a] {
                continue;
            }
            let off = self.pre(inner, a, sp.cp[a * k + sp.dst] as usize);
            let from = &self.layers[((inner - 1) * k + a) * w..((inner - 1) * k + a + 1) * w];
            for ((r, &x), &y) in self.last.iter_mut().zip(from).zip(sp.grid.set(off)) {
                *r |= x & y;
            }
        }
        first(&self.last).is_some()
    }

    /// Layouts and block factors behind the last successful [`Search::feasible`]: the lowest
    /// grid point, then the lowest layout index, buffer by buffer from the destination back.
    fn witness(&self, hops: usize) -> (Vec<usize>, [u32; MAX_DIMS]) {
        let sp = self.sp;
        let (w, k, len) = (sp.grid.words(), sp.k, sp.len);
        let p = first(&self.last).unwrap_or(0);
        let inner = hops - 1;
        let mut ls = vec![0; inner];
        let has = |layer: usize, a: usize| self.layers[(layer * k + a) * w + p / 64] >> (p % 64) & 1 == 1;
        for i in (0..inner).rev() {
            let next = if i + 1 == inner { sp.dst } else { ls[i + 1] };
            let fits = |a: usize| i + 1 == inner || sp.grid.contains(sp.fits[a * (len + 1) + len - sp.cs[a * k + next] as usize], p);
            ls[i] = (0..k)
                .find(|&a| has(i, a) && sp.grid.contains(self.pre(i + 1, a, sp.cp[a * k + next] as usize), p) && fits(a))
                .unwrap_or(0);
        }
        (ls, sp.grid.point(p))
    }

    /// The exact throughput of the path with intermediate layouts `ls` at `u`.
    pub(super) fn value(&self, curves: &[&Curve], ls: &[usize], u: &[u32; MAX_DIMS]) -> f64 {
        let sp = self.sp;
        let buffers = std::iter::once(sp.src).chain(ls.iter().copied()).chain(std::iter::once(sp.dst));
        let pairs = buffers.clone().zip(buffers.skip(1));
        curves.iter().zip(pairs).map(|(c, (a, b))| c.at_log2(sp.prefix(a, b).log2_at(&sp.shape, u))).fold(f64::INFINITY, f64::min)
    }

    fn found(&self, curves: &[&Curve]) -> Found {
        let (layouts, u) = self.witness(curves.len());
        Found { value: self.value(curves, &layouts, &u), layouts, u }
    }

    /// The path's highest throughput if it beats `floor` (equals it, when `strict` is false).
    pub(super) fn best(&mut self, curves: &[&Curve], floor: f64, strict: bool) -> Option<Found> {
        let sp = self.sp;
        let total = sp.shape.total();
        // No PREFIX exceeds TOTAL: this bound is the path's value when nothing converts.
        let ub = curves.iter().map(|c| c.at_log2(sp.shape.lambda(true, total.int as i64))).fold(f64::INFINITY, f64::min);
        if ub < floor || (strict && ub <= floor) {
            return None;
        }
        if sp.src == sp.dst {
            return Some(Found { value: ub, layouts: vec![sp.src; curves.len() - 1], u: [0; MAX_DIMS] });
        }
        if self.feasible(curves, ub) {
            return Some(self.found(curves));
        }
        if ub == floor || !self.feasible(curves, if strict { next_up(floor) } else { floor.max(next_up(0.0)) }) {
            return None;
        }
        let mut best = self.found(curves);
        let mut cands = std::mem::take(&mut self.cands);
        cands.clear();
        for c in curves {
            for field in [false, true] {
                for int in 0..=total.int as i64 {
                    let v = c.at_log2(sp.shape.lambda(field, int));
                    if v > best.value && v < ub {
                        cands.push(v);
                    }
                }
            }
        }
        let mut lo = best.value;
        search_candidates(&mut cands, &mut lo, &mut best, |t| self.feasible(curves, t).then(|| self.found(curves)).map(|f| (f.value, f)));
        self.cands = cands;
        Some(best)
    }
}
