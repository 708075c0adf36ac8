//! A complete mapping of ranks onto a cluster (node, core, GPU per rank) and its link loads on
//! the whole machine: the measure every strategy is compared by.

use super::matrix::{CommMatrix, Graph, Kind};
use super::topology::Cluster;
use super::tree::{Loads, Tree};

/// Where every rank runs: `node[r]`, core `core[r]` (a leaf of the node's CPU tree) and GPU
/// `gpu[r]` (a leaf of its GPU tree; `None` without GPUs).
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub node: Vec<u32>,
    pub core: Vec<u32>,
    pub gpu: Vec<Option<u32>>,
}

/// The link loads of a placement: network links carry CPU and GPU traffic between nodes,
/// CPU trees the CPU traffic of their node (to the root for traffic leaving it), GPU trees the
/// GPU traffic. A cluster without GPU trees carries GPU traffic on the CPU trees.
pub struct MachineLoads {
    pub network: Loads,
    pub cpu: Vec<Loads>,
    pub gpu: Vec<Loads>,
}

/// The congestions that sum a placement up (seconds: bytes over bandwidth).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Congestion {
    /// The largest over every link of the machine (the number the strategies are compared by).
    pub max: f64,
    pub network: f64,
    pub cpu: f64,
    pub gpu: f64,
    /// Bytes crossing the network (each message once).
    pub inter_node: f64,
}

impl Placement {
    /// The default mapping: ranks fill the nodes in order (`per_node` each), the i-th rank of a
    /// node gets core i and GPU i (Open MPI's and hydra's block placement, one GPU per local
    /// rank).
    pub fn block(ranks: usize, per_node: usize, gpus: bool) -> Placement {
        Placement {
            node: (0..ranks).map(|r| (r / per_node) as u32).collect(),
            core: (0..ranks).map(|r| (r % per_node) as u32).collect(),
            gpu: (0..ranks).map(|r| gpus.then_some((r % per_node) as u32)).collect(),
        }
    }

    /// Checks that the placement fits the cluster: nodes, cores and GPUs in range, no core
    /// or GPU given twice.
    pub fn check(&self, c: &Cluster) -> Result<(), String> {
        let n = self.node.len();
        if self.core.len() != n || self.gpu.len() != n {
            return Err("placement arrays differ in length".into());
        }
        let mut seen = std::collections::HashSet::new();
        for r in 0..n {
            let (node, core) = (self.node[r] as usize, self.core[r] as usize);
            if node >= c.nodes() || core >= c.node.cpu.leaf_count() {
                return Err(format!("rank {r}: node {node} core {core} does not exist"));
            }
            if !seen.insert(("core", node, core)) {
                return Err(format!("rank {r}: core {core} of node {node} given twice"));
            }
            if let Some(g) = self.gpu[r] {
                let gpus = c.node.gpu.as_ref().map_or(0, Tree::leaf_count);
                if g as usize >= gpus {
                    return Err(format!("rank {r}: GPU {g} does not exist"));
                }
                if !seen.insert(("gpu", node, g as usize)) {
                    return Err(format!("rank {r}: GPU {g} of node {node} given twice"));
                }
            }
        }
        Ok(())
    }

    /// The loads `m` puts on `c` under this placement.
    pub fn loads(&self, c: &Cluster, m: &CommMatrix) -> MachineLoads {
        let mut l = MachineLoads {
            network: Loads::new(&c.network),
            cpu: (0..c.nodes()).map(|_| Loads::new(&c.node.cpu)).collect(),
            gpu: (0..c.nodes()).map(|_| c.node.gpu.as_ref().map_or(Loads { bytes: Vec::new() }, Loads::new)).collect(),
        };
        self.route(c, &m.graph(&[Kind::Cpu]), &mut l, false);
        self.route(c, &m.graph(&[Kind::Gpu]), &mut l, true);
        l
    }

    fn route(&self, c: &Cluster, g: &Graph, l: &mut MachineLoads, gpu: bool) {
        let (tree, on_gpu) = match (&c.node.gpu, gpu) {
            (Some(t), true) => (t, true),
            _ => (&c.node.cpu, false),
        };
        let at = |r: usize| {
            let leaf = if on_gpu { self.gpu[r].unwrap_or(self.core[r]) } else { self.core[r] };
            tree.leaf(leaf as usize)
        };
        let MachineLoads { network, cpu, gpu } = l;
        let trees = if on_gpu { gpu } else { cpu };
        for (i, adj) in g.adj.iter().enumerate() {
            for &(j, w) in adj {
                let j = j as usize;
                if j < i {
                    continue; // each pair once
                }
                let (ni, nj) = (self.node[i] as usize, self.node[j] as usize);
                if ni == nj {
                    trees[ni].add(tree, at(i), at(j), w);
                } else {
                    trees[ni].add(tree, at(i), tree.root(), w);
                    trees[nj].add(tree, at(j), tree.root(), w);
                    network.add(&c.network, c.network.leaf(ni), c.network.leaf(nj), w);
                }
            }
        }
    }

    /// The congestion summary of this placement.
    pub fn congestion(&self, c: &Cluster, m: &CommMatrix) -> Congestion {
        let l = self.loads(c, m);
        let max_of = |ls: &[Loads], t: Option<&Tree>| t.map_or(0.0, |t| ls.iter().map(|x| x.max(t).0).fold(0.0, f64::max));
        let network = l.network.max(&c.network).0;
        let cpu = max_of(&l.cpu, Some(&c.node.cpu));
        let gpu = max_of(&l.gpu, c.node.gpu.as_ref());
        // Every message between nodes crosses exactly two node uplinks.
        let inter_node = (0..c.network.leaf_count()).map(|n| l.network.bytes[c.network.leaf(n) as usize]).sum::<f64>() / 2.0;
        Congestion { max: network.max(cpu).max(gpu), network, cpu, gpu, inter_node }
    }
}
