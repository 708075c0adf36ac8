//! The machine a mapping is for: a network of nodes (a switch tree whose leaves are the nodes)
//! and, inside every node, a tree of CPU cores and a tree of GPUs (the paper's Fig. 1 and 2).
//! Nodes are alike. A topology comes from a file (TOML, below), from the built-in models of the
//! paper's two clusters, or from this host (hwloc, `detect`).
//!
//! ```toml
//! name = "magc-cluster-a"
//! nodes = 4                    # or hosts = ["a0", "a1", "a2", "a3"] (names for the rankfile)
//!
//! [network]                    # one switch, every node's uplink at `gbs` GB/s ...
//! gbs = 4.0
//! # levels = [{ name = "leaf", arity = 2, gbs = 8.0 }, { name = "node", arity = 2, gbs = 4.0 }]
//! #                            # ... or a switch tree whose leaves are the nodes
//!
//! [cpu]                        # root: the node (its memory and network card)
//! levels = [{ name = "package", arity = 2, gbs = 16.0 }, { name = "core", arity = 12, gbs = 10.0 }]
//!
//! [gpu]                        # optional: a node without GPUs has no [gpu]
//! levels = [{ name = "package", arity = 2, gbs = 16.0 }, { name = "gpu", arity = 8, gbs = 12.0 }]
//! ```
//!
//! Bandwidths are in GB/s (10^9 bytes per second) and describe a link in either direction
//! together: a link's load is the bytes crossing it both ways. Traffic between nodes runs from
//! the processing element up its node's tree to the root, across the network, and down.
//! Unknown keys are errors.

use std::fmt;

use serde::Deserialize;

use super::tree::{Level, Tree};

/// The trees inside one node.
#[derive(Clone, Debug)]
pub struct NodeTopology {
    pub cpu: Tree,
    /// `None`: no GPUs.
    pub gpu: Option<Tree>,
}

/// A cluster of alike nodes joined by a network tree.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub name: String,
    /// Host names, one per network leaf.
    pub hosts: Vec<String>,
    pub network: Tree,
    pub node: NodeTopology,
}

/// What is wrong with a topology.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologyError(pub String);

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "topology: {}", self.0)
    }
}

impl std::error::Error for TopologyError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    nodes: Option<u32>,
    #[serde(default)]
    hosts: Option<Vec<String>>,
    network: Network,
    cpu: Levels,
    #[serde(default)]
    gpu: Option<Levels>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Network {
    #[serde(default)]
    gbs: Option<f64>,
    #[serde(default)]
    levels: Option<Vec<LevelEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Levels {
    levels: Vec<LevelEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelEntry {
    name: String,
    arity: u32,
    gbs: f64,
}

fn levels(what: &str, entries: &[LevelEntry]) -> Result<Vec<Level>, TopologyError> {
    if entries.is_empty() {
        return Err(TopologyError(format!("[{what}] needs at least one level")));
    }
    let mut out = Vec::new();
    let mut leaves = 1u64;
    for e in entries {
        if e.arity == 0 || !(e.gbs.is_finite() && e.gbs > 0.0) {
            return Err(TopologyError(format!("[{what}] level {:?}: arity must be >= 1 and gbs a bandwidth > 0", e.name)));
        }
        leaves *= u64::from(e.arity);
        if leaves > 1 << 20 {
            return Err(TopologyError(format!("[{what}] has more than 2^20 leaves")));
        }
        out.push(Level { name: e.name.clone(), arity: e.arity, gbs: e.gbs });
    }
    Ok(out)
}

impl Cluster {
    /// A cluster from the text of a topology file (module docs).
    pub fn from_toml_str(text: &str) -> Result<Cluster, TopologyError> {
        let f: File = toml::from_str(text).map_err(|e| TopologyError(e.to_string()))?;
        let network = match (&f.network.gbs, &f.network.levels) {
            (Some(gbs), None) => {
                let n = match (&f.nodes, &f.hosts) {
                    (Some(n), _) => *n,
                    (None, Some(h)) => h.len() as u32,
                    (None, None) => {
                        return Err(TopologyError("give the number of nodes (nodes = N) or their names (hosts = [...])".into()))
                    }
                };
                levels("network", &[LevelEntry { name: "node".into(), arity: n, gbs: *gbs }])?
            }
            (None, Some(l)) => levels("network", l)?,
            _ => return Err(TopologyError("[network] takes either gbs (one switch) or levels (a switch tree)".into())),
        };
        let network = Tree::from_levels(&network);
        let count = network.leaf_count();
        if f.nodes.is_some_and(|n| n as usize != count) {
            return Err(TopologyError(format!("nodes = {} but the network tree has {count} leaves", f.nodes.unwrap_or(0))));
        }
        let hosts = match f.hosts {
            Some(h) if h.len() != count => return Err(TopologyError(format!("{} hosts named for {count} nodes", h.len()))),
            Some(h) => h,
            None => (0..count).map(|i| format!("node{i}")).collect(),
        };
        let cpu = Tree::from_levels(&levels("cpu", &f.cpu.levels)?);
        let gpu = match &f.gpu {
            Some(g) => Some(Tree::from_levels(&levels("gpu", &g.levels)?)),
            None => None,
        };
        Ok(Cluster { name: f.name.unwrap_or_else(|| "cluster".into()), hosts, network, node: NodeTopology { cpu, gpu } })
    }

    /// One of the built-in models (`magc-a`, `magc-b`: the paper's Cluster A and B; docs/mapping.md
    /// says where their bandwidths come from).
    pub fn builtin(name: &str) -> Option<Cluster> {
        let text = match name {
            "magc-a" => include_str!("topologies/magc-a.toml"),
            "magc-b" => include_str!("topologies/magc-b.toml"),
            _ => return None,
        };
        Some(Cluster::from_toml_str(text).expect("built-in topology parses"))
    }

    /// `nodes` nodes like this host (`--cluster host`), without the notes of
    /// [`Cluster::this_host_with_notes`].
    pub fn this_host(nodes: usize, network_gbs: f64) -> Result<Cluster, TopologyError> {
        Cluster::this_host_with_notes(nodes, network_gbs).map(|(c, _)| c)
    }

    /// `nodes` nodes like this host and what the model had to guess (`sluice-map` prints it):
    /// the CPU tree of hwloc's packages, NUMA nodes, L3 caches and cores ([`cpu_tree`], nominal
    /// bandwidths), the GPUs' tree from hwloc's PCI
    /// objects (`hw::gpu_tree`: packages, PCIe switches, NVLink groups, link speeds), and
    /// `network_gbs` per node uplink on one switch. When the CUDA driver counts a different number
    /// of devices than hwloc finds (`CUDA_VISIBLE_DEVICES`, no PCI access), the leaves could not
    /// name the devices: the CUDA devices then sit on one level at a nominal 12 GB/s, as without
    /// hwloc. A topology file describes a machine better.
    pub fn this_host_with_notes(nodes: usize, network_gbs: f64) -> Result<(Cluster, Vec<String>), TopologyError> {
        let report = crate::hw::detect();
        let cpu = cpu_tree(&report.cpu.map_err(TopologyError)?);
        let cuda = report.cuda.as_ref().ok().map(Vec::len);
        let (gpu, notes) = host_gpus(report.gpu_tree, cuda);
        let network = Tree::from_levels(&[Level { name: "node".into(), arity: nodes.max(1) as u32, gbs: network_gbs }]);
        let hosts = (0..nodes.max(1)).map(|i| format!("node{i}")).collect();
        let cluster = Cluster { name: "this-host".into(), hosts, network, node: NodeTopology { cpu, gpu } };
        Ok((cluster, notes))
    }

    /// The same cluster with `n` nodes on one switch with the uplink bandwidth of the first
    /// node (`sluice-map --nodes`).
    pub fn with_nodes(&self, n: usize) -> Cluster {
        let gbs = self.network.bandwidth(self.network.leaf(0)) / 1e9;
        let network = Tree::from_levels(&[Level { name: "node".into(), arity: n as u32, gbs }]);
        let hosts = (0..n).map(|i| self.hosts.get(i).cloned().unwrap_or_else(|| format!("node{i}"))).collect();
        Cluster { name: self.name.clone(), hosts, network, node: self.node.clone() }
    }

    pub fn nodes(&self) -> usize {
        self.network.leaf_count()
    }

    /// Processes a node can hold: one per core, and one per GPU when GPUs are assigned.
    pub fn slots_per_node(&self, with_gpus: bool) -> usize {
        let cores = self.node.cpu.leaf_count();
        match (&self.node.gpu, with_gpus) {
            (Some(g), true) => cores.min(g.leaf_count()),
            _ => cores,
        }
    }
}

/// A node's CPU tree from what hwloc counts (leaf `i` is the core of hwloc's logical index `i`,
/// hwloc's order follows the tree): packages, then NUMA nodes and then L3 caches where there are
/// more of them than of the level above, then cores. A level is kept only where it divides the
/// level above and the cores evenly (the mapper's trees are regular). hwloc measures no link,
/// so the bandwidths are nominal: 16 GB/s between packages (QPI/UPI, Infinity Fabric between
/// sockets), 32 GB/s for a NUMA node's or an L3 group's link inside a package (on-die fabric),
/// 10 GB/s per core.
pub fn cpu_tree(cpu: &crate::hw::CpuTopology) -> Tree {
    let cores = cpu.cores.max(1);
    let mut levels = Vec::new();
    let mut above = 1usize;
    for (name, count, gbs) in [("package", cpu.packages, 16.0), ("numa", cpu.numa_nodes, 32.0), ("l3", cpu.l3_caches, 32.0)] {
        if count > above && count % above == 0 && count <= cores && cores % count == 0 {
            levels.push(Level { name: name.into(), arity: (count / above) as u32, gbs });
            above = count;
        }
    }
    levels.push(Level { name: "core".into(), arity: (cores / above) as u32, gbs: 10.0 });
    Tree::from_levels(&levels)
}

/// The mapper's tree of the GPU levels hwloc gave (`hw::gpu_tree`).
fn gpu_tree(t: &crate::hw::gpu_tree::GpuTree) -> Tree {
    Tree::from_levels(&t.levels.iter().map(|l| Level { name: l.name.clone(), arity: l.arity, gbs: l.gbs }).collect::<Vec<_>>())
}

/// The GPU tree of `--cluster host` from hwloc's probe and the CUDA driver's device count (`None`:
/// no driver), with notes.
fn host_gpus(probe: Result<crate::hw::gpu_tree::GpuTree, String>, cuda: Option<usize>) -> (Option<Tree>, Vec<String>) {
    let flat = |n: usize| Tree::from_levels(&[Level { name: "gpu".into(), arity: n as u32, gbs: crate::hw::gpu_tree::NOMINAL_PCIE_GBS }]);
    match (probe, cuda) {
        (Ok(t), cuda) if !t.gpus.is_empty() && cuda.is_none_or(|n| n == 0 || n == t.gpus.len()) => {
            let mut notes = vec![format!("GPU tree from hwloc: {}", t.describe())];
            notes.extend(t.notes.iter().cloned());
            (Some(gpu_tree(&t)), notes)
        }
        (Ok(t), Some(n)) if !t.gpus.is_empty() => (
            Some(flat(n)),
            vec![format!(
                "hwloc finds {} GPUs, the CUDA driver {n} (CUDA_VISIBLE_DEVICES?): the CUDA devices on one level at a nominal {} GB/s",
                t.gpus.len(),
                crate::hw::gpu_tree::NOMINAL_PCIE_GBS
            )],
        ),
        (probe, Some(n)) if n > 0 => {
            let why = probe.err().unwrap_or_else(|| "no GPU among its PCI devices".into());
            (
                Some(flat(n)),
                vec![format!(
                    "hwloc: {why}; the {n} CUDA devices on one level at a nominal {} GB/s",
                    crate::hw::gpu_tree::NOMINAL_PCIE_GBS
                )],
            )
        }
        _ => (None, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_clusters_match_the_paper() {
        let a = Cluster::builtin("magc-a").unwrap();
        assert_eq!((a.nodes(), a.node.cpu.leaf_count(), a.node.gpu.as_ref().unwrap().leaf_count()), (4, 24, 16));
        let b = Cluster::builtin("magc-b").unwrap();
        assert_eq!((b.nodes(), b.node.cpu.leaf_count(), b.node.gpu.as_ref().unwrap().leaf_count()), (8, 20, 8));
        assert_eq!(a.slots_per_node(true), 16);
        assert_eq!(a.slots_per_node(false), 24);
        assert_eq!(a.with_nodes(64).nodes(), 64);
        assert!(Cluster::builtin("nope").is_none());
    }

    #[test]
    fn this_host_has_its_cores() {
        let c = Cluster::this_host(3, 1.25).unwrap();
        let cores = crate::hw::detect_cpu().unwrap().cores;
        assert_eq!(c.nodes(), 3);
        assert!(c.node.cpu.leaf_count() >= 1 && c.node.cpu.leaf_count() <= cores, "{} of {cores}", c.node.cpu.leaf_count());
        assert_eq!(c.network.bandwidth(c.network.leaf(0)), 1.25e9);
    }

    #[test]
    fn cpu_trees_follow_packages_numa_nodes_and_caches() {
        let tree = |synthetic: &str| {
            let t = hwlocality::Topology::builder().from_synthetic(synthetic).unwrap().build().unwrap();
            cpu_tree(&crate::hw::cpu_topology_of(&t))
        };
        // Every level where it splits the one above.
        let t = tree("package:2 numa:2 l3:2 core:4 pu:2");
        assert_eq!(t.leaf_count(), 32);
        assert_eq!(t.label(t.leaf(31)), "package1/numa1/l31/core3");
        assert_eq!(t.bandwidth(t.leaf(0)), 10e9);
        assert_eq!(t.bandwidth(t.parent(t.leaf(0))), 32e9);
        // One L3 per package, one NUMA node per package: packages and cores only.
        let t = tree("package:2 l3:1 core:6 pu:1");
        assert_eq!(t.label(t.leaf(11)), "package1/core5");
        // One package: no package level.
        let t = tree("l3:3 core:4 pu:1");
        assert_eq!(t.label(t.leaf(11)), "l32/core3");
        // Groups that do not divide the cores evenly are left out.
        let cpu = crate::hw::CpuTopology { cores: 8, pus: 8, numa_nodes: 3, packages: 1, l3_caches: 0 };
        let t = cpu_tree(&cpu);
        assert_eq!((t.leaf_count(), t.label(t.leaf(7))), (8, "core7"));
    }

    #[test]
    fn host_gpus_trusts_hwloc_unless_cuda_disagrees() {
        use crate::hw::gpu_tree::{load_xml_file, probe};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hwloc/2pkg-2switch-2gpu.xml");
        let t = probe(&load_xml_file(&path).unwrap());
        let (tree, notes) = host_gpus(Ok(t.clone()), Some(8));
        let tree = tree.unwrap();
        assert_eq!(tree.leaf_count(), 8);
        assert_eq!(tree.label(tree.leaf(5)), "package1/switch0/gpu1");
        assert!(notes[0].contains("package 2 x switch 2 x gpu 2"), "{notes:?}");
        assert_eq!(host_gpus(Ok(t.clone()), None).0.unwrap().leaf_count(), 8);
        let (tree, notes) = host_gpus(Ok(t), Some(2));
        let tree = tree.unwrap();
        assert_eq!((tree.leaf_count(), tree.bandwidth(tree.leaf(0))), (2, 12e9));
        assert!(notes[0].contains("CUDA driver 2"), "{notes:?}");
        let (tree, notes) = host_gpus(Err("no PCI".into()), Some(3));
        assert_eq!(tree.unwrap().leaf_count(), 3);
        assert!(notes[0].contains("no PCI"), "{notes:?}");
        assert!(host_gpus(Err("no PCI".into()), None).0.is_none());
    }

    #[test]
    fn files_are_checked() {
        let ok = "nodes = 2\n[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"core\", arity = 4, gbs = 5.0 }]\n";
        let c = Cluster::from_toml_str(ok).unwrap();
        assert_eq!(c.hosts, ["node0", "node1"]);
        assert!(c.node.gpu.is_none());
        let bad = [
            ("nodes = 2\n[network]\ngbs = 1.0\n", "missing field `cpu`"),
            ("nodes = 2\n[network]\ngbs = 1.0\nlevels = []\n[cpu]\nlevels = [{ name = \"c\", arity = 1, gbs = 1.0 }]\n", "either gbs"),
            ("[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"c\", arity = 1, gbs = 1.0 }]\n", "number of nodes"),
            ("nodes = 2\n[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"c\", arity = 0, gbs = 1.0 }]\n", "arity"),
            ("hosts = [\"a\"]\nnodes = 2\n[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"c\", arity = 1, gbs = 1.0 }]\n", "1 hosts"),
            ("nodes = 2\ncolour = 1\n[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"c\", arity = 1, gbs = 1.0 }]\n", "unknown field"),
        ];
        for (text, want) in bad {
            let e = Cluster::from_toml_str(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
