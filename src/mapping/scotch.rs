//! Scotch's graph mapping for one phase [`Problem`] (the paper's other choice for phases 2 and
//! 3), through Debian's libscotch (`scotch-sys`; the `scotch` crate's wrapper can only describe
//! complete graphs or files as targets, and panics on errors).
//!
//! The target architecture is the problem's tree itself: its vertices form a Scotch graph whose
//! edges are the links, each weighted by a cost inversely proportional to its bandwidth, and
//! `SCOTCH_archBuild0` turns it into a decomposition-defined architecture whose terminals are the
//! leaves. That works for every [`Tree`], regular or not, and prices every link by its own
//! bandwidth; `SCOTCH_archTleaf` would be cheaper to build but needs one arity and one cost per
//! level, which [`Tree`] does not promise (only its constructor from levels builds regular
//! trees). The nodes of a cluster share their trees: each architecture is built once and kept.
//!
//! The source graph is the process graph with its byte weights scaled to integers. Scotch
//! minimises the sum of bytes times distance and knows nothing of the traffic that leaves the
//! tree (`Problem::external`) nor of congestion: its placement is a start for the refinement
//! pass, which sees both. Scotch balances processes over leaves by their capacities but may
//! still put more on a leaf than it takes: [`map`] moves the extras to free leaves, each where it
//! raises the score least.
//!
//! Errors: Debian's libscotch reports through libscotcherr, whose `SCOTCH_errorPrint` prints the
//! message and returns (libscotcherrexit would exit), and the call fails with a non-zero result,
//! which becomes a [`MapError`]. (libscotch itself calls `exit` only from its strategy-string
//! lexer on a fatal error, and strategies here are the ones Scotch builds, and from a mesh check
//! not used here.) Inputs are checked first (sizes that fit `SCOTCH_Num`, finite
//! non-negative weights, enough places) and the graph with `SCOTCH_graphCheck`, so bad input
//! never reaches the mapping. Calls are serialised by a lock (Scotch's random generator is
//! global) and the generator is reset before each mapping, so results are reproducible.

use std::collections::HashMap;
use std::mem::{size_of, MaybeUninit};
use std::os::raw::c_int;
use std::sync::Mutex;

use scotch_sys as sys;
use sys::SCOTCH_Num as Num;

use super::assign::{better, Assignment, Problem, UNPLACED};
use super::magc::MapError;
use super::tree::{Tree, Vertex};

/// Scotch keeps global state (its random generator): one mapping at a time. The lock also
/// holds the architectures built last and their mapping strategies, by what they were built
/// from (the nodes of a cluster share their trees: built and parsed once).
static LOCK: Mutex<Vec<(Vec<u64>, Arch, Strat)>> = Mutex::new(Vec::new());

/// Architectures kept.
const ARCHS_KEPT: usize = 8;

/// The largest link cost (the slowest link's); faster links cost proportionally less, at least 1.
const LINK_COST: f64 = 100.0;

/// `SCOTCH_NUMMAX` (a macro bindgen does not translate).
const NUM_MAX: Num = Num::MAX;

/// Headroom under [`NUM_MAX`] for Scotch's sums of loads times distances.
const NUM_BUDGET: f64 = (NUM_MAX / 4) as f64;

fn err(what: &str) -> MapError {
    MapError(format!("Scotch: {what}"))
}

fn check(rc: c_int, what: &str) -> Result<(), MapError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(err(&format!("{what} failed ({rc})")))
    }
}

fn num(x: usize, what: &str) -> Result<Num, MapError> {
    Num::try_from(x).ok().filter(|&v| v < NUM_MAX).ok_or_else(|| err(&format!("too many {what} ({x})")))
}

/// A Scotch source graph and the arrays it points into (Scotch does not copy them).
struct Graph {
    raw: Box<MaybeUninit<sys::SCOTCH_Graph>>,
    _vert: Vec<Num>,
    _velo: Vec<Num>,
    _edge: Vec<Num>,
    _edlo: Vec<Num>,
}

impl Graph {
    /// The graph of `adj` (symmetric, no self loops, weights >= 1); `velo`: a load per vertex, or
    /// empty for 1 each.
    fn build(adj: &[Vec<(Num, Num)>], velo: Vec<Num>) -> Result<Graph, MapError> {
        let n = num(adj.len(), "vertices")?;
        let mut vert = Vec::with_capacity(adj.len() + 1);
        let (mut edge, mut edlo) = (Vec::new(), Vec::new());
        vert.push(0);
        for a in adj {
            for &(j, w) in a {
                edge.push(j);
                edlo.push(w);
            }
            vert.push(num(edge.len(), "edges")?);
        }
        let m = num(edge.len(), "edges")?;
        // Boxed: the structure must not move while Scotch holds it.
        let mut raw = Box::new(MaybeUninit::<sys::SCOTCH_Graph>::uninit());
        // SAFETY: `raw` points to a SCOTCH_Graph-sized block (checked against the library's own size
        // in `abi_ok`); graphInit only writes it.
        check(unsafe { sys::SCOTCH_graphInit(raw.as_mut_ptr()) }, "graphInit")?;
        let mut g = Graph { raw, _vert: vert, _velo: velo, _edge: edge, _edlo: edlo };
        let velo_ptr = if g._velo.is_empty() { std::ptr::null() } else { g._velo.as_ptr() };
        // SAFETY: the graph was initialised; the arrays have n + 1 (vert), n (velo) and m (edge,
        // edlo) entries, base 0, and live as long as `g` (they are its fields and never change
        // again); vendtab null means compact arrays; no labels.
        let rc = unsafe {
            sys::SCOTCH_graphBuild(
                g.raw.as_mut_ptr(),
                0,
                n,
                g._vert.as_ptr(),
                std::ptr::null(),
                velo_ptr,
                std::ptr::null(),
                m,
                g._edge.as_ptr(),
                g._edlo.as_ptr(),
            )
        };
        check(rc, "graphBuild")?;
        // SAFETY: the graph was built.
        check(unsafe { sys::SCOTCH_graphCheck(g.raw.as_ptr()) }, "graphCheck")?;
        Ok(g)
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: initialised in `build` (a Graph exists only after graphInit succeeded).
        unsafe { sys::SCOTCH_graphExit(self.raw.as_mut_ptr()) }
    }
}

/// A Scotch strategy (the default one until a mapping strategy is built into it).
struct Strat(Box<MaybeUninit<sys::SCOTCH_Strat>>);

impl Strat {
    fn new() -> Result<Strat, MapError> {
        let mut raw = Box::new(MaybeUninit::<sys::SCOTCH_Strat>::uninit());
        // SAFETY: a SCOTCH_Strat-sized block, only written by stratInit.
        check(unsafe { sys::SCOTCH_stratInit(raw.as_mut_ptr()) }, "stratInit")?;
        Ok(Strat(raw))
    }
}

impl Drop for Strat {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`.
        unsafe { sys::SCOTCH_stratExit(self.0.as_mut_ptr()) }
    }
}

/// A target architecture.
struct Arch(Box<MaybeUninit<sys::SCOTCH_Arch>>);

impl Arch {
    fn new() -> Result<Arch, MapError> {
        let mut raw = Box::new(MaybeUninit::<sys::SCOTCH_Arch>::uninit());
        // SAFETY: a SCOTCH_Arch-sized block, only written by archInit.
        check(unsafe { sys::SCOTCH_archInit(raw.as_mut_ptr()) }, "archInit")?;
        Ok(Arch(raw))
    }
}

impl Drop for Arch {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`.
        unsafe { sys::SCOTCH_archExit(self.0.as_mut_ptr()) }
    }
}

/// Whether the header's opaque structures are at least as large as the library's (a header of
/// another Scotch build would otherwise let the library write past them).
fn abi_ok() -> bool {
    // SAFETY: the sizeof functions take nothing and touch nothing.
    let sizes = unsafe { [sys::SCOTCH_graphSizeof(), sys::SCOTCH_archSizeof(), sys::SCOTCH_stratSizeof()] };
    let ours = [size_of::<sys::SCOTCH_Graph>(), size_of::<sys::SCOTCH_Arch>(), size_of::<sys::SCOTCH_Strat>()];
    sizes.iter().zip(ours).all(|(&lib, ours)| usize::try_from(lib).is_ok_and(|lib| lib <= ours))
}

/// The cost of every link (vertex uplink; the root's is 0): the slowest link costs
/// [`LINK_COST`], the others proportionally to 1 / bandwidth, at least 1.
fn link_costs(t: &Tree) -> Result<Vec<Num>, MapError> {
    let slowest = (1..t.vertices() as Vertex).map(|v| t.bandwidth(v)).fold(f64::INFINITY, f64::min);
    let mut cost = vec![0; t.vertices()];
    for v in 1..t.vertices() as Vertex {
        let bw = t.bandwidth(v);
        if bw.is_nan() || bw <= 0.0 {
            return Err(err(&format!("link {:?} has bandwidth {bw}", t.label(v))));
        }
        cost[v as usize] = (LINK_COST * slowest / bw).round().clamp(1.0, LINK_COST) as Num;
    }
    Ok(cost)
}

/// The tree as a target architecture: Scotch vertex `k < leaves` is leaf `k` (so terminal
/// numbers are leaf indices), then the other vertices; leaf loads are the capacities.
fn architecture(p: &Problem, cost: &[Num]) -> Result<Arch, MapError> {
    let t = p.tree;
    let leaves = t.leaf_count();
    let mut index = vec![Num::MAX; t.vertices()];
    for l in 0..leaves {
        index[t.leaf(l) as usize] = l as Num;
    }
    for (next, x) in (leaves as Num..).zip(index.iter_mut().filter(|x| **x == Num::MAX)) {
        *x = next;
    }
    let mut adj: Vec<Vec<(Num, Num)>> = vec![Vec::new(); t.vertices()];
    for v in 1..t.vertices() as Vertex {
        let (a, b) = (index[v as usize], index[t.parent(v) as usize]);
        adj[a as usize].push((b, cost[v as usize]));
        adj[b as usize].push((a, cost[v as usize]));
    }
    let mut velo = vec![1; t.vertices()];
    for (l, &c) in p.capacity.iter().enumerate() {
        velo[l] = num(c.max(1) as usize, "places on a leaf")?;
    }
    let g = Graph::build(&adj, velo)?;
    let list: Vec<Num> = (0..leaves as Num).collect();
    let mut arch = Arch::new()?;
    let strat = Strat::new()?;
    // SAFETY: arch, graph and strategy were initialised; `list` holds `leaves` vertex numbers of
    // the graph; archBuild0 copies what it keeps.
    let rc =
        unsafe { sys::SCOTCH_archBuild0(arch.0.as_mut_ptr(), g.raw.as_ptr(), num(leaves, "leaves")?, list.as_ptr(), strat.0.as_ptr()) };
    check(rc, "archBuild0")?;
    Ok(arch)
}

/// The process graph for Scotch: each pair once per direction with the sum of both directions'
/// bytes, scaled so that the sum of all loads times the longest distance stays far from
/// `SCOTCH_NUMMAX`; every edge at least 1, zero-byte pairs dropped.
fn source(p: &Problem, longest: f64) -> Result<Vec<Vec<(Num, Num)>>, MapError> {
    let n = p.graph.len();
    let mut pairs: HashMap<(u32, u32), f64> = HashMap::new();
    for (i, a) in p.graph.adj.iter().enumerate() {
        for &(j, w) in a {
            if !w.is_finite() || w < 0.0 {
                return Err(err(&format!("process {i} sends {w} bytes to {j}")));
            }
            if j as usize >= n {
                return Err(err(&format!("process {i} has neighbour {j} of {n}")));
            }
            if j as usize != i && w > 0.0 {
                *pairs.entry((i.min(j as usize) as u32, i.max(j as usize) as u32)).or_default() += w;
            }
        }
    }
    let total: f64 = pairs.values().sum::<f64>() * 2.0;
    let budget = NUM_BUDGET / longest.max(1.0) - 2.0 * pairs.len() as f64;
    if budget < 2.0 * pairs.len() as f64 {
        return Err(err(&format!("{} edges do not fit Scotch's integers", pairs.len())));
    }
    let scale = if total > 0.0 { budget / total } else { 1.0 };
    let mut adj = vec![Vec::new(); n];
    let mut sorted: Vec<_> = pairs.into_iter().collect();
    sorted.sort_unstable_by_key(|&(k, _)| k);
    for ((i, j), w) in sorted {
        let w = (w * scale).round().clamp(1.0, budget) as Num;
        adj[i as usize].push((j as Num, w));
        adj[j as usize].push((i as Num, w));
    }
    Ok(adj)
}

/// Scotch's placement of `p`, repaired to respect every capacity: the leaf of each process.
pub fn map(p: &Problem) -> Result<Vec<u32>, MapError> {
    let (n, t, leaves) = (p.graph.len(), p.tree, p.tree.leaf_count());
    if p.capacity.len() != leaves {
        return Err(err(&format!("{} capacities for {leaves} leaves", p.capacity.len())));
    }
    if !p.external.is_empty() && p.external.len() != n {
        return Err(err(&format!("{} external volumes for {n} processes", p.external.len())));
    }
    if p.capacity.iter().map(|&c| c as usize).sum::<usize>() < n {
        return Err(MapError(format!("{n} processes do not fit {leaves} leaves")));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if leaves == 1 {
        return Ok(vec![0; n]);
    }
    num(n, "processes")?;
    num(t.vertices(), "tree vertices")?;
    let cost = link_costs(t)?;
    // The longest leaf-to-leaf distance is at most twice the costliest way up from a leaf.
    let up = |mut v: Vertex| {
        let mut c = 0.0;
        while v != t.root() {
            c += f64::from(cost[v as usize]);
            v = t.parent(v);
        }
        c
    };
    let longest = 2.0 * (0..leaves).map(|l| up(t.leaf(l))).fold(0.0, f64::max);
    let adj = source(p, longest)?;
    let mut part: Vec<Num> = vec![-1; n];
    {
        let mut archs = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if !abi_ok() {
            return Err(err("the library's structures are larger than its header's"));
        }
        // A fixed seed, then the generator back to its start, before the architecture's
        // decomposition and again before the mapping (both draw from it): the same problem gets
        // the same placement, whether its architecture was kept or not.
        let reset = || {
            // SAFETY: only this thread uses Scotch (the lock); no pointers.
            unsafe {
                sys::SCOTCH_randomSeed(1);
                sys::SCOTCH_randomReset();
            }
        };
        let key: Vec<u64> = (0..t.vertices() as Vertex)
            .flat_map(|v| [u64::from(t.parent(v)), t.bandwidth(v).to_bits()])
            .chain(p.capacity.iter().map(|&c| u64::from(c)))
            .collect();
        let at = match archs.iter().position(|(k, _, _)| *k == key) {
            Some(i) => i,
            None => {
                reset();
                let arch = architecture(p, &cost)?;
                let mut strat = Strat::new()?;
                // SAFETY: the strategy was initialised; flags and a count of parts, no pointers.
                let rc = unsafe {
                    sys::SCOTCH_stratGraphMapBuild(strat.0.as_mut_ptr(), sys::SCOTCH_STRATDEFAULT as Num, num(leaves, "leaves")?, 0.01)
                };
                check(rc, "stratGraphMapBuild")?;
                if archs.len() == ARCHS_KEPT {
                    archs.remove(0);
                }
                archs.push((key, arch, strat));
                archs.len() - 1
            }
        };
        reset();
        let mut g = Graph::build(&adj, Vec::new())?;
        let (_, arch, strat) = &mut archs[at];
        // SAFETY: graph, architecture and strategy were initialised and built; `part` has one
        // entry per graph vertex, which graphMap fills with terminal numbers.
        let rc = unsafe { sys::SCOTCH_graphMap(g.raw.as_mut_ptr(), arch.0.as_ptr(), strat.0.as_mut_ptr(), part.as_mut_ptr()) };
        check(rc, "graphMap")?;
    }
    let mut leaf_of = Vec::with_capacity(n);
    for (i, &x) in part.iter().enumerate() {
        match u32::try_from(x) {
            Ok(l) if (l as usize) < leaves => leaf_of.push(l),
            _ => return Err(err(&format!("process {i} mapped to terminal {x} of {leaves}"))),
        }
    }
    Ok(repair(p, &leaf_of))
}

/// `leaf_of` with every leaf at most at its capacity: on a leaf that holds too many, the
/// processes with the least traffic leave, one by one (the busiest first) to the free leaf where
/// they raise the score least.
fn repair(p: &Problem, leaf_of: &[u32]) -> Vec<u32> {
    let n = leaf_of.len();
    let volume = |i: usize| p.graph.volume(i) + p.external.get(i).copied().unwrap_or(0.0);
    let mut order: Vec<usize> = (0..n).collect();
    // Busiest first: they keep their leaf.
    order.sort_by(|&x, &y| volume(y).total_cmp(&volume(x)).then(x.cmp(&y)));
    let mut a = Assignment::new(p);
    let mut extra = Vec::new();
    for &i in &order {
        let l = leaf_of[i];
        if a.used[l as usize] < p.capacity[l as usize] {
            a.place(i, l);
        } else {
            extra.push(i);
        }
    }
    let mut scratch = vec![0.0; p.tree.vertices()];
    let mut touched = Vec::new();
    for i in extra {
        let cur = a.score().0;
        let mut best: Option<((f64, f64), u32)> = None;
        for l in 0..p.capacity.len() as u32 {
            if a.used[l as usize] < p.capacity[l as usize] {
                let s = a.try_place(i, l, cur, &mut scratch, &mut touched);
                if best.is_none_or(|(b, _)| better(s, b)) {
                    best = Some((s, l));
                }
            }
        }
        let (_, l) = best.expect("enough places (checked in map)");
        a.place(i, l);
    }
    debug_assert!(a.leaf_of.iter().all(|&l| l != UNPLACED));
    a.leaf_of
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::matrix::{CommMatrix, Graph as ProcessGraph, Kind};
    use crate::mapping::tree::Level;

    fn packages(p: u32, c: u32) -> Tree {
        Tree::from_levels(&[Level { name: "p".into(), arity: p, gbs: 1.0 }, Level { name: "c".into(), arity: c, gbs: 10.0 }])
    }

    /// Every process on a leaf, no leaf over its capacity.
    fn valid(l: &[u32], n: usize, cap: &[u32]) {
        assert_eq!(l.len(), n);
        for (leaf, &c) in cap.iter().enumerate() {
            assert!(l.iter().filter(|&&x| x as usize == leaf).count() <= c as usize, "{l:?}");
        }
    }

    #[test]
    fn heavy_pairs_share_a_package() {
        // Pairs (0,3) and (1,2) talk a lot, everything else a little; two packages of two cores:
        // the optimum puts each pair in one package.
        let (g, t) = crate::mapping::tests::heavy_pairs_on_two_packages();
        let cap = vec![1; 4];
        let l = map(&Problem { graph: &g, external: &[], tree: &t, capacity: &cap }).unwrap();
        assert_eq!(l[0] / 2, l[3] / 2, "{l:?}");
        assert_eq!(l[1] / 2, l[2] / 2, "{l:?}");
        let mut sorted = l.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3]);
    }

    #[test]
    fn capacities_are_respected_and_every_process_placed_once() {
        // A ring of 6 on 3 nodes of 2, and a clique of 5 on 8 single places (leaves > processes).
        let (g, t, cap) = crate::mapping::tests::ring_of_six_on_three_nodes();
        let l = map(&Problem { graph: &g, external: &[], tree: &t, capacity: &cap }).unwrap();
        for leaf in 0..3 {
            assert_eq!(l.iter().filter(|&&x| x == leaf).count(), 2, "{l:?}");
        }
        let mut m = CommMatrix::new(5);
        for i in 0..5 {
            for j in 0..5 {
                if i != j {
                    m.add(Kind::Cpu, i, j, 1e6 * (i + j) as f64, 1);
                }
            }
        }
        let g = m.graph(&[Kind::Cpu]);
        let t = packages(2, 4);
        let cap = vec![1; 8];
        let ext = [0.0, 5e6, 0.0, 0.0, 1e9];
        let l = map(&Problem { graph: &g, external: &ext, tree: &t, capacity: &cap }).unwrap();
        valid(&l, 5, &cap);
    }

    #[test]
    fn no_process_one_process_and_one_leaf() {
        let t = packages(2, 2);
        let cap = vec![1; 4];
        let empty = ProcessGraph::default();
        assert!(map(&Problem { graph: &empty, external: &[], tree: &t, capacity: &cap }).unwrap().is_empty());
        let one = ProcessGraph { adj: vec![Vec::new()] };
        let l = map(&Problem { graph: &one, external: &[3.0], tree: &t, capacity: &cap }).unwrap();
        valid(&l, 1, &cap);
        let single = Tree::single();
        let two = ProcessGraph { adj: vec![vec![(1, 5.0)], vec![(0, 5.0)]] };
        assert_eq!(map(&Problem { graph: &two, external: &[], tree: &single, capacity: &[2] }).unwrap(), [0, 0]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let t = packages(2, 2);
        let cap = vec![1; 4];
        let nan = ProcessGraph { adj: vec![vec![(1, f64::NAN)], vec![(0, 1.0)]] };
        let e = map(&Problem { graph: &nan, external: &[], tree: &t, capacity: &cap }).unwrap_err();
        assert!(e.0.contains("Scotch") && e.0.contains("NaN"), "{e}");
        let five = ProcessGraph { adj: vec![Vec::new(); 5] };
        assert!(map(&Problem { graph: &five, external: &[], tree: &t, capacity: &cap }).unwrap_err().0.contains("do not fit"));
        let far = ProcessGraph { adj: vec![vec![(7, 1.0)], Vec::new()] };
        assert!(map(&Problem { graph: &far, external: &[], tree: &t, capacity: &cap }).is_err());
    }

    #[test]
    fn huge_weights_are_scaled_and_the_result_is_reproducible() {
        let n = 24;
        let mut m = CommMatrix::new(n);
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    m.add(Kind::Cpu, i, j, 1e15 / (1 + (i ^ j)) as f64, 1);
                }
            }
        }
        let g = m.graph(&[Kind::Cpu]);
        let t = packages(2, 12);
        let cap = vec![1; 24];
        let p = Problem { graph: &g, external: &[], tree: &t, capacity: &cap };
        let l = map(&p).unwrap();
        valid(&l, n, &cap);
        assert_eq!(map(&p).unwrap(), l);
    }

    #[test]
    fn repair_moves_extras_to_free_leaves() {
        // Everyone on leaf 0 (capacity 1): the busiest stays, the others spread.
        let g = ProcessGraph { adj: vec![vec![(1, 10.0), (2, 1.0)], vec![(0, 10.0)], vec![(0, 1.0)]] };
        let t = packages(2, 2);
        let cap = vec![1; 4];
        let p = Problem { graph: &g, external: &[], tree: &t, capacity: &cap };
        let l = repair(&p, &[0, 0, 0]);
        valid(&l, 3, &cap);
        assert_eq!(l[0], 0);
        assert_eq!(l[1], 1, "the heavy neighbour stays in the package: {l:?}");
    }
}
