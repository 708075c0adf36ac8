//! Rank reordering for MPI's topology constructors (`MPI_Cart_create`, `MPI_Graph_create`,
//! `MPI_Dist_graph_create(_adjacent)` with `reorder = 1`): the processes are already running,
//! so the question is not where to start them but which virtual-topology rank each one takes.
//! That is MAGC's first phase turned around: the virtual ranks are the processes to place, the
//! nodes are the leaves, and a node holds as many virtual ranks as it has processes of the
//! communicator (nodes may hold different numbers).
//!
//! Inside a node the processes keep their order: the node's virtual ranks go to its processes
//! in increasing order of both. (Placing them on cores would need each process's binding; a
//! reordered communicator cannot move a process.)

use super::assign::{better, Assignment, Problem};
use super::matrix::Graph;
use super::tree::{Level, Tree};
use super::{greedy, refine};

/// The virtual rank each process takes: `node_of[p]` is the node (`0..k`, dense) of process
/// `p` of the old communicator; `g` is the virtual topology over ranks `0..g.len()`, at most
/// `node_of.len()`. Returns, per process, its rank in the new communicator, or `None` for a
/// process left out (more processes than virtual ranks: `MPI_Cart_create` gives those
/// `MPI_COMM_NULL`).
///
/// The result's maximum node-link congestion is never above that of the identity (virtual
/// rank `v` on process `v`, what the MPI does without reordering): the identity is one of the
/// starts and wins ties.
pub fn ranks_for(g: &Graph, node_of: &[u32], refine_budget: usize) -> Vec<Option<u32>> {
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
        let p = Problem { graph: g, external: &[], tree: &tree, capacity: &capacity };
        let score = |l: &[u32]| Assignment::with(&p, l).score();
        let mut mapped = greedy::map(&p);
        refine::refine(&p, &mut mapped, refine_budget);
        if better(score(&mapped), score(&identity)) {
            mapped
        } else {
            identity
        }
    };
    // Pair each node's virtual ranks with its processes, both in increasing order.
    let mut vranks_on: Vec<std::collections::VecDeque<u32>> = vec![Default::default(); k];
    for (v, &x) in node_of_vrank.iter().enumerate() {
        vranks_on[x as usize].push_back(v as u32);
    }
    node_of.iter().map(|&x| vranks_on[x as usize].pop_front()).collect()
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
        let r = ranks_for(&g, &[0, 0, 1, 1], 1000);
        assert!(is_permutation_of_prefix(&r, 4));
        let node_of_v = |v: u32| [0, 0, 1, 1][r.iter().position(|&x| x == Some(v)).unwrap()];
        assert_eq!(node_of_v(0), node_of_v(2));
        assert_eq!(node_of_v(1), node_of_v(3));
    }

    #[test]
    fn one_node_or_a_good_identity_is_kept() {
        let g = graph(4, &[(0, 1, 1.0), (2, 3, 1.0)]);
        assert_eq!(ranks_for(&g, &[0, 0, 0, 0], 1000), [Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(ranks_for(&g, &[0, 0, 1, 1], 1000), [Some(0), Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn interleaved_nodes_and_spare_processes() {
        // Round-robin placement (0,2,4 on node 0; 1,3,5 on node 1), a chain of 4 virtual ranks
        // on 6 processes: two processes are left out, and the chain crosses nodes once.
        let g = graph(4, &[(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0)]);
        let node_of = [0, 1, 0, 1, 0, 1];
        let r = ranks_for(&g, &node_of, 1000);
        assert!(is_permutation_of_prefix(&r, 4));
        assert_eq!(r.iter().filter(|x| x.is_none()).count(), 2);
        let node_of_v = |v: u32| node_of[r.iter().position(|&x| x == Some(v)).unwrap()];
        let cut = (0..3).filter(|&v| node_of_v(v) != node_of_v(v + 1)).count();
        assert_eq!(cut, 1);
    }
}
