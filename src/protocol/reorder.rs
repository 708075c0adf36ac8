//! `reorder = true` in the topology constructors (`MPI_Cart_create`, `MPI_Graph_create`,
//! `MPI_Dist_graph_create_adjacent`, `MPI_Dist_graph_create`): sluice chooses which process
//! takes which rank of the virtual topology (`mapping::reorder`), so that the topology's edges
//! cross between nodes as little as possible; Open MPI's default component and MPICH ignore
//! the flag and keep the old ranks.
//!
//! The new communicator is the MPI's own: `MPI_Comm_split` of the old communicator with the
//! chosen rank as key, then the same constructor on it with `reorder = false`. The topology is
//! a graph over ranks: vertex `v` is the process of rank `v` in the new communicator (for
//! `MPI_Dist_graph_create_adjacent`, which each process calls with its own vertex's edges, the
//! process taking rank `v` passes the edges vertex `v` was given). So every query,
//! neighbourhood collective and error handler behaves as the MPI makes it; only which process
//! plays which vertex changes, which `reorder = true` allows (the application learns its
//! vertex from its rank in the new communicator).
//!
//! Left to the MPI's constructor on the old communicator: `reorder = false`, `SLUICE_REORDER=0`
//! (both unchanged), a communicator on one node (nothing to gain), an intercommunicator, any
//! argument the MPI would refuse (it then reports the error as without sluice), and a mapping
//! that keeps every rank where it is; with `SLUICE_REORDER` on, these get `reorder = false`
//! ([`passed`]). The decision is the same on every process: it depends only on arguments MPI
//! requires to be the same everywhere, the node table every process has (`transfer::node`),
//! and, for the distributed graphs, on a validity flag gathered with the edges.
//!
//! Inside a node whose processes are each bound to their own core (`hw::bound_core`, gathered
//! on rank 0), the node's vertices go onto those cores by the node's CPU tree
//! (`mapping::reorder::Cores`); unbound processes keep their order.
//!
//! The graph's weights are the call's edges (weights where it gives them), or, with
//! `SLUICE_REORDER_MATRIX`, the bytes a profile of the job recorded between the processes of
//! the vertices' ranks: a run with `SLUICE_REORDER=off` plays vertex `v` on rank `v` of the old
//! communicator, so its traffic between world ranks is the traffic between vertices, collectives
//! and other communicators included, which the topology alone does not show.

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]

use std::collections::BTreeMap;
use std::ffi::c_int;

use super::coll::intracomm;
use crate::config::Reorder;
use crate::errors;
use crate::ffi::{consts, errclass, mpi, next, UNDEFINED};
use crate::mapping::matrix::{CommMatrix, Graph, Kind};
use crate::mapping::reorder::{ranks_for, Cores};
use crate::mapping::topology::cpu_tree;
use crate::runtime;
use crate::transfer::node;

type Comm = mpi::MPI_Comm;
type Info = mpi::MPI_Info;

/// Moves the refinement may try: a topology constructor is called once, and 10^5 moves of a
/// 1,024-rank stencil take a few milliseconds.
const REFINE_BUDGET: usize = 100_000;

/// The old communicator as the mapping sees it.
struct Old {
    comm: Comm,
    size: usize,
    rank: usize,
    /// World rank of each rank.
    world: Vec<c_int>,
    /// Node of each rank, numbered 0.. in order of first appearance.
    node_of: Vec<u32>,
}

impl Old {
    /// `None`: reordering is off for this constructor (`dist`: a distributed graph's), `comm`
    /// is not a valid intracommunicator, or it lies on one node.
    fn of(comm: Comm, dist: bool) -> Option<Old> {
        let wanted = if dist { Reorder::All } else { Reorder::Cart };
        if runtime::config().is_none_or(|c| c.reorder < wanted) {
            return None;
        }
        let (size, rank) = intracomm(comm).filter(|&(size, _)| size >= 2)?;
        let world = node::world_ranks(comm, &(0..size as c_int).collect::<Vec<c_int>>())?;
        let nodes = node::nodes_of(&world)?;
        let mut dense: BTreeMap<c_int, u32> = BTreeMap::new();
        let mut node_of = Vec::with_capacity(nodes.len());
        for x in nodes {
            let next = dense.len() as u32;
            node_of.push(*dense.entry(x).or_insert(next));
        }
        (dense.len() > 1).then_some(Old { comm, size, rank, world, node_of })
    }

    /// The new rank of every process for the virtual topology `g`, the same on every process
    /// (rank 0 maps and broadcasts: one answer even if processes differed in floating point);
    /// `None` when the broadcast fails.
    fn ranks(&self, g: &Graph) -> Option<Vec<c_int>> {
        // Without the cores (a failed gather) every node keeps its order; every process still
        // reaches the broadcast below, so none is left waiting in it.
        let core_of = self.cores().unwrap_or_default();
        let mut new: Vec<c_int> = if self.rank == 0 {
            let profiled = self.profiled(g.len());
            // The CPU tree of this node stands for every node's (nodes alike, as in sluice-map).
            let cpu = crate::hw::detect_cpu().ok().map(|c| cpu_tree(&c));
            log::debug!("reorder: processes bound to cores {core_of:?}");
            let cores = cpu.as_ref().map(|cpu| Cores { cpu, core_of: &core_of });
            ranks_for(profiled.as_ref().unwrap_or(g), &self.node_of, cores.as_ref(), REFINE_BUDGET)
                .into_iter()
                .map(|r| r.map_or(UNDEFINED, |r| r as c_int))
                .collect()
        } else {
            vec![0; self.size]
        };
        // SAFETY: collective over the old communicator, which every process calls the
        // constructor on; `size` ints.
        let rc = unsafe { mpi::PMPI_Bcast(new.as_mut_ptr().cast(), self.size as c_int, consts::int(), 0, self.comm) };
        (rc == errclass::SUCCESS).then_some(new)
    }

    /// The core each process is bound to (`hw::bound_core`), gathered on rank 0 (empty
    /// elsewhere); `None` when the gather fails.
    fn cores(&self) -> Option<Vec<Option<u32>>> {
        let mine: c_int = crate::hw::bound_core().and_then(|c| c_int::try_from(c).ok()).unwrap_or(-1);
        let mut all = vec![-1 as c_int; if self.rank == 0 { self.size } else { 0 }];
        // SAFETY: collective over the old communicator (every process maps through here); one
        // int from each, `size` ints received on rank 0.
        let rc = unsafe {
            mpi::PMPI_Gather((&mine as *const c_int).cast(), 1, consts::int(), all.as_mut_ptr().cast(), 1, consts::int(), 0, self.comm)
        };
        (rc == errclass::SUCCESS).then(|| all.into_iter().map(|c| u32::try_from(c).ok()).collect())
    }

    /// The traffic `SLUICE_REORDER_MATRIX` records among the processes of ranks `0..n` (the
    /// vertices), CPU and GPU together; `None` without a matrix, with one that cannot be used
    /// (warned: the call's edges then weigh the mapping), or with no traffic among them.
    fn profiled(&self, n: usize) -> Option<Graph> {
        let path = runtime::config()?.reorder_matrix.as_deref()?;
        let matrix = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| CommMatrix::parse(&text).map_err(|e| e.to_string()))
            .and_then(|m| match node::world_size() {
                Some(w) if w != m.ranks() => Err(format!("records {} ranks, the job has {w}", m.ranks())),
                _ => Ok(m),
            });
        let matrix = match matrix {
            Ok(m) => m,
            Err(e) => {
                log::warn!("SLUICE_REORDER_MATRIX={path}: {e}; reordering by the topology's edges");
                return None;
            }
        };
        let vertices: Vec<usize> =
            self.world[..n].iter().filter_map(|&w| usize::try_from(w).ok()).filter(|&w| w < matrix.ranks()).collect();
        if vertices.len() != n {
            log::warn!("SLUICE_REORDER_MATRIX={path}: the communicator has ranks outside the matrix; reordering by the topology's edges");
            return None;
        }
        let (g, _) = matrix.graph(&[Kind::Cpu, Kind::Gpu]).induced(&vertices);
        let any = g.adj.iter().any(|e| !e.is_empty());
        if !any {
            log::info!("SLUICE_REORDER_MATRIX={path}: no traffic among the topology's processes; reordering by its edges");
        }
        any.then_some(g)
    }

    /// The old communicator with ranks renumbered to `new` (`MPI_COMM_NULL` for a process left
    /// out), then `create` on it; frees the intermediate communicator. When every process keeps
    /// its rank, `create` on the old communicator itself. (`create` passes `reorder = false`:
    /// across nodes sluice's placement stands. Open MPI's treematch component, which would
    /// otherwise reorder, aborts on a cluster whose node ids it cannot read from its modex.)
    fn create_on_split(&self, new: &[c_int], out: *mut Comm, create: impl FnOnce(Comm) -> c_int) -> c_int {
        let points = new.iter().filter(|&&r| r != UNDEFINED).count();
        if new.iter().enumerate().all(|(p, &r)| r == p as c_int || (r == UNDEFINED && p >= points)) {
            log::debug!("reorder: every rank stays");
            return create(self.comm);
        }
        log::debug!("reorder: new ranks {new:?}");
        let mine = new[self.rank];
        let mut split = consts::comm_null();
        let color = if mine == UNDEFINED { UNDEFINED } else { 0 };
        // SAFETY: collective over the old communicator (every process takes this path); writes
        // one handle.
        let rc = unsafe { mpi::PMPI_Comm_split(self.comm, color, mine.max(0), &mut split) };
        if rc != errclass::SUCCESS {
            return errors::raise(self.comm, rc, "reordering a topology: MPI_Comm_split failed");
        }
        if split == consts::comm_null() {
            // SAFETY: `out` is the application's handle argument, checked non-null.
            unsafe { *out = consts::comm_null() };
            return errclass::SUCCESS;
        }
        let rc = create(split);
        // SAFETY: the intermediate communicator is sluice's; the constructor's result keeps
        // what it needs.
        unsafe { mpi::PMPI_Comm_free(&mut split) };
        rc
    }
}

/// The `reorder` flag a constructor passes on to the MPI: with `SLUICE_REORDER` on, sluice
/// decides (or leaves the ranks: distributed graphs under `cart`) and the MPI keeps the ranks
/// (`false` is always allowed; Open MPI 4.1's `treematch` component, which `true` selects,
/// aborts across the emulated cluster's nodes and hangs now and then on one node); with it off,
/// the application's flag.
fn passed(reorder: c_int) -> c_int {
    if runtime::config().is_some_and(|c| c.reorder != Reorder::Off) {
        0
    } else {
        reorder
    }
}

/// Adds the directed edge `a -> b` of weight `w` to a symmetric accumulation.
fn add(edges: &mut BTreeMap<(u32, u32), f64>, a: usize, b: usize, w: f64) {
    if a != b && w > 0.0 {
        *edges.entry((a.min(b) as u32, a.max(b) as u32)).or_default() += w;
    }
}

fn graph(n: usize, edges: BTreeMap<(u32, u32), f64>) -> Graph {
    let mut g = Graph { adj: vec![Vec::new(); n] };
    for ((a, b), w) in edges {
        g.adj[a as usize].push((b, w));
        g.adj[b as usize].push((a, w));
    }
    g
}

/// `n` ints at `p` (empty when `n` is 0), or `None` for a NULL pointer with `n > 0`.
///
/// # Safety
/// A non-null `p` points to at least `n` ints.
unsafe fn ints<'a>(p: *const c_int, n: usize) -> Option<&'a [c_int]> {
    if n == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        // SAFETY: caller's contract.
        Some(unsafe { std::slice::from_raw_parts(p, n) })
    }
}

/// The Cartesian grid's edges: every rank with its neighbour one step either way in every
/// dimension (wrapping where periodic). `None` if the arguments are not a valid grid on
/// `size` ranks.
fn cart_graph(dims: &[c_int], periods: &[c_int], size: usize) -> Option<Graph> {
    let mut n = 1usize;
    for &d in dims {
        n = n.checked_mul(usize::try_from(d).ok().filter(|&d| d > 0)?)?;
    }
    if n > size {
        return None;
    }
    let mut edges = BTreeMap::new();
    let mut stride = n;
    for (d, &extent) in dims.iter().enumerate() {
        let extent = extent as usize;
        stride /= extent;
        for v in 0..n {
            let c = (v / stride) % extent;
            for up in [false, true] {
                let nc = match (up, c) {
                    (true, c) if c + 1 < extent => c + 1,
                    (true, _) if periods[d] != 0 => 0,
                    (false, c) if c > 0 => c - 1,
                    (false, _) if periods[d] != 0 => extent - 1,
                    _ => continue,
                };
                add(&mut edges, v, v - c * stride + nc * stride, 1.0);
            }
        }
    }
    Some(graph(n, edges))
}

/// `MPI_Cart_create`.
///
/// # Safety
/// As `MPI_Cart_create`.
pub unsafe fn cart_create(comm: Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, out: *mut Comm) -> c_int {
    let forward = || {
        // SAFETY: the application's arguments.
        unsafe { next::MPI_Cart_create(comm, ndims, dims, periods, passed(reorder), out) }
    };
    let Some(old) = (reorder != 0 && ndims > 0 && !out.is_null()).then(|| Old::of(comm, false)).flatten() else {
        return forward();
    };
    // SAFETY: MPI_Cart_create's arrays have `ndims` entries.
    let (Some(d), Some(p)) = (unsafe { ints(dims, ndims as usize) }, unsafe { ints(periods, ndims as usize) }) else {
        return forward();
    };
    let Some(new) = cart_graph(d, p, old.size).and_then(|g| old.ranks(&g)) else {
        return forward();
    };
    old.create_on_split(&new, out, |c| {
        // SAFETY: the application's arguments on the renumbered communicator, without reordering.
        unsafe { next::MPI_Cart_create(c, ndims, dims, periods, 0, out) }
    })
}

/// `MPI_Graph_create`.
///
/// # Safety
/// As `MPI_Graph_create`.
pub unsafe fn graph_create(comm: Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, out: *mut Comm) -> c_int {
    let forward = || {
        // SAFETY: the application's arguments.
        unsafe { next::MPI_Graph_create(comm, nnodes, index, edges, passed(reorder), out) }
    };
    let Some(old) = (reorder != 0 && nnodes > 0 && !out.is_null()).then(|| Old::of(comm, false)).flatten() else {
        return forward();
    };
    let n = nnodes as usize;
    // SAFETY: MPI_Graph_create's `index` has `nnodes` entries, `edges` `index[nnodes - 1]`.
    let g = unsafe { ints(index, n) }.filter(|_| n <= old.size).and_then(|index| {
        let total = usize::try_from(index[n - 1]).ok()?;
        // SAFETY: as above.
        let targets = unsafe { ints(edges, total) }?;
        let mut acc = BTreeMap::new();
        let mut from = 0usize;
        for (v, &end) in index.iter().enumerate() {
            let end = usize::try_from(end).ok().filter(|&e| e >= from && e <= total)?;
            for &u in &targets[from..end] {
                add(&mut acc, v, usize::try_from(u).ok().filter(|&u| u < n)?, 1.0);
            }
            from = end;
        }
        Some(graph(n, acc))
    });
    let Some(new) = g.and_then(|g| old.ranks(&g)) else {
        return forward();
    };
    old.create_on_split(&new, out, |c| {
        // SAFETY: as in the forward, on the renumbered communicator without reordering.
        unsafe { next::MPI_Graph_create(c, nnodes, index, edges, 0, out) }
    })
}

/// Weights of `n` edges: `MPI_UNWEIGHTED` counts each edge once; `MPI_WEIGHTS_EMPTY` is for
/// no edges; weights must not be negative. `None`: not valid (the MPI reports it).
///
/// # Safety
/// A weights array other than the sentinels has `n` entries.
unsafe fn weights(w: *const c_int, n: usize) -> Option<Vec<c_int>> {
    if w == consts::unweighted().cast_const() {
        Some(vec![1; n])
    } else if w == consts::weights_empty().cast_const() {
        (n == 0).then(Vec::new)
    } else {
        // SAFETY: caller's contract.
        unsafe { ints(w, n) }.filter(|w| w.iter().all(|&x| x >= 0)).map(<[c_int]>::to_vec)
    }
}

/// Every process's `record` (ints), gathered on every process: `None` if any process had no
/// valid record (its arguments are wrong: then every process forwards and the MPI reports it)
/// or a gather failed.
fn gather_records(old: &Old, record: Option<Vec<c_int>>) -> Option<Vec<Vec<c_int>>> {
    let ok = record.is_some();
    let local = record.unwrap_or_default();
    let head = [c_int::from(ok), local.len() as c_int];
    let mut heads = vec![0 as c_int; 2 * old.size];
    // SAFETY: collective over the old communicator; two ints from each process.
    let rc = unsafe { mpi::PMPI_Allgather(head.as_ptr().cast(), 2, consts::int(), heads.as_mut_ptr().cast(), 2, consts::int(), old.comm) };
    if rc != errclass::SUCCESS || heads.chunks(2).any(|h| h[0] == 0) {
        return None;
    }
    let counts: Vec<c_int> = heads.chunks(2).map(|h| h[1]).collect();
    let mut displs = Vec::with_capacity(old.size);
    let mut total: c_int = 0;
    for &c in &counts {
        displs.push(total);
        total = total.checked_add(c)?;
    }
    let mut all = vec![0 as c_int; total as usize];
    // SAFETY: collective; every process sends its record and receives all of them into `all`,
    // laid out by `counts`/`displs`.
    let rc = unsafe {
        mpi::PMPI_Allgatherv(
            local.as_ptr().cast(),
            local.len() as c_int,
            consts::int(),
            all.as_mut_ptr().cast(),
            counts.as_ptr(),
            displs.as_ptr(),
            consts::int(),
            old.comm,
        )
    };
    (rc == errclass::SUCCESS).then(|| counts.iter().zip(&displs).map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec()).collect())
}

/// Whether every rank in `r` names a process of a communicator of `size`.
fn in_range(r: &[c_int], size: usize) -> bool {
    r.iter().all(|&x| x >= 0 && (x as usize) < size)
}

/// One process's edges as `MPI_Dist_graph_create_adjacent` gives them: `[indegree,
/// outdegree, sources.., source weights.., destinations.., destination weights..]`.
struct Adjacency<'a>(&'a [c_int]);

impl Adjacency<'_> {
    fn degrees(&self) -> (usize, usize) {
        (self.0[0] as usize, self.0[1] as usize)
    }
    fn part(&self, k: usize) -> &[c_int] {
        let (i, o) = self.degrees();
        let start = 2 + [0, i, 2 * i, 2 * i + o][k];
        &self.0[start..start + if k < 2 { i } else { o }]
    }
}

/// `MPI_Dist_graph_create_adjacent`.
///
/// The graph's vertex `v` is described by the process of rank `v` in the old communicator
/// (sources and destinations are ranks of the old communicator, MPI-4.0 sec. 8.5.4); with
/// reordering the process that takes rank `v` in the new communicator plays vertex `v`: it
/// gets vertex `v`'s edges (gathered from the process that gave them), so that every rank's
/// neighbours in the new communicator are those its vertex was given.
///
/// # Safety
/// As `MPI_Dist_graph_create_adjacent`.
pub unsafe fn dist_graph_create_adjacent(
    comm: Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: Info,
    reorder: c_int,
    out: *mut Comm,
) -> c_int {
    let forward = || {
        // SAFETY: the application's arguments.
        unsafe {
            next::MPI_Dist_graph_create_adjacent(
                comm,
                indegree,
                sources,
                sourceweights,
                outdegree,
                destinations,
                destweights,
                info,
                passed(reorder),
                out,
            )
        }
    };
    let Some(old) = (reorder != 0 && !out.is_null()).then(|| Old::of(comm, true)).flatten() else {
        return forward();
    };
    // SAFETY: the arrays have `indegree` and `outdegree` entries (MPI's contract); the weight
    // sentinels are recognized before any read.
    let record = usize::try_from(indegree).ok().zip(usize::try_from(outdegree).ok()).and_then(|(i, o)| unsafe {
        let (s, sw, d, dw) = (ints(sources, i)?, weights(sourceweights, i)?, ints(destinations, o)?, weights(destweights, o)?);
        (in_range(s, old.size) && in_range(d, old.size)).then(|| [&[indegree, outdegree][..], s, &sw, d, &dw].concat())
    });
    let Some(all) = gather_records(&old, record) else {
        return forward();
    };
    let mut acc = BTreeMap::new();
    for (v, r) in all.iter().enumerate() {
        let a = Adjacency(r);
        for (&d, &w) in a.part(2).iter().zip(a.part(3)) {
            add(&mut acc, v, d as usize, f64::from(w));
        }
    }
    let Some(new) = old.ranks(&graph(old.size, acc)) else {
        return forward();
    };
    let vertex = Adjacency(&all[new[old.rank] as usize]);
    let (i, o) = vertex.degrees();
    // The weights as this process gave them: unweighted stays unweighted (MPI requires every
    // process to agree), an empty list keeps the empty sentinel.
    let w = |given: *const c_int, part: &[c_int]| {
        if given == consts::unweighted().cast_const() || (part.is_empty() && given == consts::weights_empty().cast_const()) {
            given
        } else if part.is_empty() {
            consts::weights_empty().cast_const()
        } else {
            part.as_ptr()
        }
    };
    old.create_on_split(&new, out, |c| {
        // SAFETY: vertex `new rank`'s edges (arrays alive for the call, of the lengths given),
        // on the renumbered communicator, without reordering.
        unsafe {
            next::MPI_Dist_graph_create_adjacent(
                c,
                i as c_int,
                vertex.part(0).as_ptr(),
                w(sourceweights, vertex.part(1)),
                o as c_int,
                vertex.part(2).as_ptr(),
                w(destweights, vertex.part(3)),
                info,
                0,
                out,
            )
        }
    })
}

/// `MPI_Dist_graph_create`. Any process may give any edge, so every process passes its own
/// arguments unchanged to the renumbered communicator: vertex `v` of the graph is the process
/// of rank `v` there.
///
/// # Safety
/// As `MPI_Dist_graph_create`.
pub unsafe fn dist_graph_create(
    comm: Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_arg: *const c_int,
    info: Info,
    reorder: c_int,
    out: *mut Comm,
) -> c_int {
    let forward = || {
        // SAFETY: the application's arguments.
        unsafe { next::MPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights_arg, info, passed(reorder), out) }
    };
    let Some(old) = (reorder != 0 && !out.is_null()).then(|| Old::of(comm, true)).flatten() else {
        return forward();
    };
    // SAFETY: `sources` and `degrees` have `n` entries, `destinations` and the weights the sum
    // of the degrees (MPI's contract); the weight sentinels are recognized before any read.
    let record = usize::try_from(n).ok().and_then(|n| unsafe {
        let (s, d) = (ints(sources, n)?, ints(degrees, n)?);
        let total = d.iter().try_fold(0usize, |t, &x| t.checked_add(usize::try_from(x).ok()?))?;
        let (t, w) = (ints(destinations, total)?, weights(weights_arg, total)?);
        if !in_range(s, old.size) || !in_range(t, old.size) {
            return None;
        }
        let mut e = Vec::with_capacity(3 * total);
        let mut k = 0;
        for (&a, &deg) in s.iter().zip(d) {
            for _ in 0..deg {
                e.extend([a, t[k], w[k]]);
                k += 1;
            }
        }
        Some(e)
    });
    let Some(all) = gather_records(&old, record) else {
        return forward();
    };
    let mut acc = BTreeMap::new();
    for e in all.iter().flat_map(|r| r.chunks(3)) {
        add(&mut acc, e[0] as usize, e[1] as usize, f64::from(e[2]));
    }
    let Some(new) = old.ranks(&graph(old.size, acc)) else {
        return forward();
    };
    old.create_on_split(&new, out, |c| {
        // SAFETY: the application's arguments on the renumbered communicator, without
        // reordering.
        unsafe { next::MPI_Dist_graph_create(c, n, sources, degrees, destinations, weights_arg, info, 0, out) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(g: &Graph) -> Vec<(u32, u32, f64)> {
        let mut e: Vec<_> = g
            .adj
            .iter()
            .enumerate()
            .flat_map(|(a, l)| l.iter().filter(move |&&(b, _)| b as usize > a).map(move |&(b, w)| (a as u32, b, w)))
            .collect();
        e.sort_by(|x, y| x.partial_cmp(y).unwrap());
        e
    }

    #[test]
    fn cart_edges_are_the_grid_neighbours() {
        // 2 x 3, periodic in the second dimension: rows 0-1-2-0, 3-4-5-3; columns 0-3, 1-4, 2-5.
        let g = cart_graph(&[2, 3], &[0, 1], 6).unwrap();
        let want = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 4), (2, 5), (3, 4), (3, 5), (4, 5)];
        // Each undirected edge is listed from both ends: weight 2.
        assert_eq!(edges(&g), want.iter().map(|&(a, b)| (a, b, 2.0)).collect::<Vec<_>>());
        // A periodic dimension of 2 has the same neighbour both ways: weight 4.
        let g = cart_graph(&[2], &[1], 2).unwrap();
        assert_eq!(edges(&g), [(0, 1, 4.0)]);
        // Fewer grid points than ranks is allowed; more, or a non-positive extent, is not.
        assert_eq!(cart_graph(&[3], &[0], 4).unwrap().len(), 3);
        assert!(cart_graph(&[3, 2], &[0, 0], 5).is_none());
        assert!(cart_graph(&[0], &[0], 5).is_none());
        assert!(cart_graph(&[-1], &[0], 5).is_none());
    }

    #[test]
    fn adjacency_records_split_into_their_four_lists() {
        let r = [2, 1, 5, 6, 10, 20, 7, 30];
        let a = Adjacency(&r);
        assert_eq!(a.degrees(), (2, 1));
        assert_eq!((a.part(0), a.part(1), a.part(2), a.part(3)), (&[5, 6][..], &[10, 20][..], &[7][..], &[30][..]));
    }
}
