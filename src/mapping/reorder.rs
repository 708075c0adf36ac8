//! Rank reordering for MPI's topology constructors (`MPI_Cart_create`, `MPI_Graph_create`,
//! `MPI_Dist_graph_create(_adjacent)` with `reorder = 1`): the processes are already running,
//! so the question is not where to start them but which virtual-topology rank each one takes.
//! That is MAGC's first two phases turned around: the virtual ranks are the processes to place,
//! the nodes are the leaves, and a node holds as many virtual ranks as it has processes of the
//! communicator (nodes may hold different numbers); then, inside each node whose processes are
//! bound to distinct cores, the node's virtual ranks go onto those cores (the node's CPU tree
//! with one place at each such core and none elsewhere). A node with unbound processes keeps
//! them in order: its virtual ranks go to its processes in increasing order of both.

use super::assign::{better, Assignment, Problem};
use super::matrix::Graph;
use super::tree::{Level, Tree};
use super::{greedy, refine};

/// Where the processes run inside their nodes: the CPU tree of a node (nodes alike) and the
/// core (a leaf of `cpu`) each process is bound to, `None` for a process not bound to one core.
pub struct Cores<'a> {
    pub cpu: &'a Tree,
    pub core_of: &'a [Option<u32>],
}

/// The virtual rank each process takes: `node_of[p]` is the node (`0..k`, dense) of process
/// `p` of the old communicator; `g` is the virtual topology over ranks `0..g.len()`, at most
/// `node_of.len()`; `cores`, where known, places each node's ranks on its processes' cores.
/// Returns, per process, its rank in the new communicator, or `None` for a process left out
/// (more processes than virtual ranks: `MPI_Cart_create` gives those `MPI_COMM_NULL`).
///
/// Neither the maximum node-link congestion nor, inside a node, the maximum core-tree
/// congestion is ever above that of the identity (virtual rank `v` on process `v`, what the MPI
/// does without reordering): the identity is one of the starts and wins ties.
pub fn ranks_for(g: &Graph, node_of: &[u32], cores: Option<&Cores>, refine_budget: usize) -> Vec<Option<u32>> {
    let n = g.len();
    assert!(n <= node_of.len(), "more virtual ranks than processes");
    let k = node_of.iter().map(|&x| x as usize + 1).max().unwrap_or(0);
    let mut capacity = vec![0u32; k];
    for &x in node_of {
        capacity[x as usize] += 1;
    }
    let identity: Vec<u32> = node_of[..n].to_vec();
    let node_of_vrank = if k <= 1 || n == 0 {
        identity
    } else {
        // One switch: every node's link equally fast, so congestion is bytes through a node's
        // link and the mapper minimizes the busiest node's cross-node traffic.
        let tree = Tree::from_levels(&[Level { name: "node".into(), arity: k as u32, gbs: 1.0 }]);
        best_from(&Problem { graph: g, external: &[], tree: &tree, capacity: &capacity }, identity, refine_budget)
    };
    let mut rank_of = vec![None; node_of.len()];
    for x in 0..k as u32 {
        let vranks: Vec<usize> = (0..n).filter(|&v| node_of_vrank[v] == x).collect();
        let procs: Vec<usize> = (0..node_of.len()).filter(|&p| node_of[p] == x).collect();
        let chosen = cores.and_then(|c| on_cores(g, &vranks, &procs, c, refine_budget)).unwrap_or_else(|| procs[..vranks.len()].to_vec());
        for (&v, p) in vranks.iter().zip(chosen) {
            rank_of[p] = Some(v as u32);
        }
    }
    rank_of
}

/// The mapper's placement (greedy, refined) or `start`, whichever scores better (`start` on
/// ties).
fn best_from(p: &Problem, start: Vec<u32>, refine_budget: usize) -> Vec<u32> {
    let score = |l: &[u32]| Assignment::with(p, l).score();
    let mut mapped = greedy::map(p);
    refine::refine(p, &mut mapped, refine_budget);
    if better(score(&mapped), score(&start)) {
        mapped
    } else {
        start
    }
}

/// The process of `procs` (one node's, in order) that takes each of `vranks` (the virtual
/// ranks mapped to that node): the node's CPU tree with one place at each process's core;
/// traffic with other nodes' ranks leaves through the tree's root. `None` (keep the order)
/// unless every process is bound to its own core of the tree.
fn on_cores(g: &Graph, vranks: &[usize], procs: &[usize], c: &Cores, refine_budget: usize) -> Option<Vec<usize>> {
    let cores: Vec<u32> = procs.iter().map(|&p| c.core_of.get(p).copied().flatten()).collect::<Option<_>>()?;
    let mut capacity = vec![0u32; c.cpu.leaf_count()];
    for &l in &cores {
        let slot = capacity.get_mut(l as usize)?;
        if *slot > 0 {
            return None;
        }
        *slot = 1;
    }
    if vranks.len() < 2 {
        return None;
    }
    let (sub, external) = g.induced(vranks);
    let p = Problem { graph: &sub, external: &external, tree: c.cpu, capacity: &capacity };
    let leaf_of = best_from(&p, cores[..vranks.len()].to_vec(), refine_budget);
    leaf_of.iter().map(|&l| cores.iter().position(|&core| core == l).map(|i| procs[i])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32, f64)]) -> Graph {
        let mut g = Graph { adj: vec![Vec::new(); n] };
        for &(a, b, w) in edges {
            g.adj[a as usize].push((b, w));
            g.adj[b as usize].push((a, w));
        }
        g
    }

    fn is_permutation_of_prefix(r: &[Option<u32>], n: usize) -> bool {
        let mut seen = vec![false; n];
        for v in r.iter().flatten() {
            if *v as usize >= n || std::mem::replace(&mut seen[*v as usize], true) {
                return false;
            }
        }
        seen.iter().all(|&s| s)
    }

    #[test]
    fn heavy_pairs_split_by_the_block_placement_are_brought_together() {
        // Processes 0,1 on node 0 and 2,3 on node 1; edges 0-2 and 1-3: the identity puts both
        // across. Virtual ranks 0 and 2 must share a node, and 1 and 3.
        let g = graph(4, &[(0, 2, 10.0), (1, 3, 10.0)]);
        let r = ranks_for(&g, &[0, 0, 1, 1], None, 1000);
        assert!(is_permutation_of_prefix(&r, 4));
        let node_of_v = |v: u32| [0, 0, 1, 1][r.iter().position(|&x| x == Some(v)).unwrap()];
        assert_eq!(node_of_v(0), node_of_v(2));
        assert_eq!(node_of_v(1), node_of_v(3));
    }

    #[test]
    fn one_node_or_a_good_identity_is_kept() {
        let g = graph(4, &[(0, 1, 1.0), (2, 3, 1.0)]);
        assert_eq!(ranks_for(&g, &[0, 0, 0, 0], None, 1000), [Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(ranks_for(&g, &[0, 0, 1, 1], None, 1000), [Some(0), Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn interleaved_nodes_and_spare_processes() {
        // Round-robin placement (0,2,4 on node 0; 1,3,5 on node 1), a chain of 4 virtual ranks
        // on 6 processes: two processes are left out, and the chain crosses nodes once.
        let g = graph(4, &[(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0)]);
        let node_of = [0, 1, 0, 1, 0, 1];
        let r = ranks_for(&g, &node_of, None, 1000);
        assert!(is_permutation_of_prefix(&r, 4));
        assert_eq!(r.iter().filter(|x| x.is_none()).count(), 2);
        let node_of_v = |v: u32| node_of[r.iter().position(|&x| x == Some(v)).unwrap()];
        let cut = (0..3).filter(|&v| node_of_v(v) != node_of_v(v + 1)).count();
        assert_eq!(cut, 1);
    }

    #[test]
    fn bound_processes_get_the_ranks_their_cores_suit() {
        // One node of 2 packages x 2 cores; the processes are bound in rank order to cores
        // 0, 2, 1, 3 (packages 0, 1, 0, 1): virtual ranks 0-1 and 2-3 talk, so each pair must
        // share a package, which the in-order pairing (0 and 1 on different packages) misses.
        let cpu =
            Tree::from_levels(&[Level { name: "package".into(), arity: 2, gbs: 16.0 }, Level { name: "core".into(), arity: 2, gbs: 10.0 }]);
        let g = graph(4, &[(0, 1, 10.0), (2, 3, 10.0)]);
        let core_of = [Some(0), Some(2), Some(1), Some(3)];
        let r = ranks_for(&g, &[0, 0, 0, 0], Some(&Cores { cpu: &cpu, core_of: &core_of }), 1000);
        assert!(is_permutation_of_prefix(&r, 4));
        let package_of_v = |v: u32| core_of[r.iter().position(|&x| x == Some(v)).unwrap()].unwrap() / 2;
        assert_eq!(package_of_v(0), package_of_v(1));
        assert_eq!(package_of_v(2), package_of_v(3));
        // An unbound process, or two on one core: the node keeps the order.
        for odd in [[Some(0), None, Some(1), Some(3)], [Some(0), Some(0), Some(1), Some(3)]] {
            let r = ranks_for(&g, &[0, 0, 0, 0], Some(&Cores { cpu: &cpu, core_of: &odd }), 1000);
            assert_eq!(r, [Some(0), Some(1), Some(2), Some(3)]);
        }
    }

    #[test]
    fn cores_are_placed_per_node_after_the_nodes() {
        // Two nodes like the one above, processes 0-3 on node 0 and 4-7 on node 1, each bound
        // to cores 0, 2, 1, 3 of its node; virtual pairs (0,1) (2,3) (4,5) (6,7) are heavy, so
        // the nodes keep their ranks, and light edges (v, v + 4) leave every node.
        let cpu =
            Tree::from_levels(&[Level { name: "package".into(), arity: 2, gbs: 16.0 }, Level { name: "core".into(), arity: 2, gbs: 10.0 }]);
        let mut edges: Vec<(u32, u32, f64)> = (0..4).map(|v| (v, v + 4, 1.0)).collect();
        edges.extend([(0, 1, 100.0), (2, 3, 100.0), (4, 5, 100.0), (6, 7, 100.0)]);
        let g = graph(8, &edges);
        let node_of = [0, 0, 0, 0, 1, 1, 1, 1];
        let core_of: Vec<Option<u32>> = [0, 2, 1, 3, 0, 2, 1, 3].iter().map(|&c| Some(c)).collect();
        let r = ranks_for(&g, &node_of, Some(&Cores { cpu: &cpu, core_of: &core_of }), 1000);
        assert!(is_permutation_of_prefix(&r, 8));
        let at = |v: u32| r.iter().position(|&x| x == Some(v)).unwrap();
        for v in 0..8 {
            assert_eq!(node_of[at(v)], v / 4, "vertex {v} changed nodes");
        }
        for (a, b) in [(0, 1), (2, 3), (4, 5), (6, 7)] {
            assert_eq!(core_of[at(a)].unwrap() / 2, core_of[at(b)].unwrap() / 2, "{a} and {b} on one package");
        }
    }
}
