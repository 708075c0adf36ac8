//! The GPUs' tree inside one node, from hwloc's I/O objects (`sluice-map --cluster host`): which
//! package each GPU hangs from, which PCIe switches GPUs share, the link speeds hwloc reports, and
//! the NVLink groups of hwloc's NVML backend ("NVLinkBandwidth" distances). The result is a
//! symmetric tree's levels ([`GpuLevel`]: one arity and one bandwidth per level, as the mapper's
//! trees are regular; `mapping::topology` builds its tree from them: hardware detection stays
//! below the mapping layer).
//!
//! [`probe`] reads a [`Topology`], from this system ([`load_system`]) or from an XML file
//! (`lstopo --of xml`, [`load_xml_file`]): the tests load hand-made files of machines we do not
//! have (`tests/data/hwloc/`).
//!
//! **Which PCI devices are GPUs.** When hwloc's CUDA, NVML or ROCm SMI backends ran, the PCI
//! devices with an OS device `cuda*` (co-processor), `nvml*` or `rsmi*` (GPU): exactly the devices
//! a driver serves. Otherwise (Debian's hwloc is built without those backends) the PCI devices of
//! class 3D controller (0x0302), VGA (0x0300) or other display controller (0x0380) from NVIDIA
//! (0x10de) or AMD (0x1002): a server's BMC VGA (ASPEED, Matrox) is not a GPU.
//!
//! **Levels**, root first: `package` when the GPUs hang from more than one package, then either
//! `nvlink` (NVLink groups, when the NVLink matrix joins at least two GPUs) or one `switch` level
//! per PCIe branching point (a PCI-to-PCI bridge below which the GPUs take different ports: a
//! switch; bridges on a single GPU's path are folded into the link above or below), then `gpu`.
//! Host bridges are not switches: GPUs under one host bridge but different root ports share no
//! PCIe link.
//!
//! **Bandwidths** (GB/s, as hwloc gives them: one direction): a GPU's link is the slowest link
//! speed hwloc reports between it and the next kept vertex (its own, its port's); a switch's is
//! the slowest on its way up (the switch's upstream link). Unknown (hwloc reports 0, as in a VM)
//! falls back to the nominal [`NOMINAL_PCIE_GBS`]; `package` is always the nominal
//! [`NOMINAL_PACKAGE_GBS`] (hwloc measures no inter-socket link). A level takes the slowest of
//! its links. With NVLink: a GPU's link is the sum of its NVLink bandwidths to the other GPUs of
//! its group and to NVSwitches (a star: in a tree a pair's traffic crosses both GPUs' links); a
//! group's link is the sum of its members' host links (NVLink to the CPU where hwloc lists one,
//! else PCIe). All NVSwitches count as one fabric.
//!
//! **Uneven machines.** A level whose vertices do not all have the same number of children is
//! folded away, deepest first, until the tree is regular: its children hang from the level above
//! and keep the slower of their own link and the folded one. The number of GPUs never changes (a
//! larger or smaller arity would invent or hide devices); what is lost is written to the notes,
//! which `sluice-map` prints.

use std::path::Path;

use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{BridgeType, OSDeviceType, ObjectType};
use hwlocality::object::TopologyObject;
use hwlocality::topology::builder::TypeFilter;
use hwlocality::Topology;

/// A PCIe 3.0 x16 link's data rate, about 12 GB/s: a GPU's or switch's link hwloc does not know.
pub const NOMINAL_PCIE_GBS: f64 = 12.0;
/// Between packages (QPI at 8 GT/s), as the CPU tree of `--cluster host` uses.
pub const NOMINAL_PACKAGE_GBS: f64 = 16.0;

/// One GPU as found.
#[derive(Clone, Debug, PartialEq)]
pub struct Gpu {
    /// "0000:17:00.0".
    pub bus_id: String,
    /// Its OS devices (`cuda0`, `nvml0`, ...; empty when found by PCI class).
    pub os_devices: Vec<String>,
}

/// One level of the GPU tree: `arity` children per vertex of the level above, each joined by a
/// link of `gbs` GB/s.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuLevel {
    pub name: String,
    pub arity: u32,
    pub gbs: f64,
}

/// What [`probe`] found: the GPUs in the order of the tree's leaves and the tree's levels.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTree {
    pub gpus: Vec<Gpu>,
    /// Root first; empty when there is no GPU.
    pub levels: Vec<GpuLevel>,
    /// What was nominal, folded or approximated (one line each).
    pub notes: Vec<String>,
}

impl GpuTree {
    /// Leaves of the tree the levels describe (the GPUs' count when there are any; 0 without).
    pub fn leaves(&self) -> usize {
        if self.levels.is_empty() {
            0
        } else {
            self.levels.iter().map(|l| l.arity as usize).product()
        }
    }

    /// "package 2 x switch 2 x gpu 2 (16.0, 15.8, 15.8 GB/s)".
    pub fn describe(&self) -> String {
        if self.levels.is_empty() {
            return "no GPUs".into();
        }
        let shape: Vec<String> = self.levels.iter().map(|l| format!("{} {}", l.name, l.arity)).collect();
        let gbs: Vec<String> = self.levels.iter().map(|l| format!("{:.1}", l.gbs)).collect();
        format!("{} ({} GB/s)", shape.join(" x "), gbs.join(", "))
    }
}

/// This system's topology with its I/O objects (PCI devices, bridges, OS devices).
pub fn load_system() -> Result<Topology, String> {
    // hwlocality answers some hwloc errors it does not expect with a panic: keep it a message.
    super::guarded("hwloc", || io_builder()?.build().map_err(|e| format!("hwloc topology discovery failed: {e}")))
}

/// [`probe`] of this system; a panic inside hwlocality becomes the error.
pub fn probe_system() -> Result<GpuTree, String> {
    let topology = load_system()?;
    // The topology is only read, and dropped if the probe panics: no broken state is seen.
    super::guarded("hwloc GPU tree", std::panic::AssertUnwindSafe(|| Ok(probe(&topology))))
}

/// A topology from an XML file (`lstopo --of xml`), I/O objects included.
pub fn load_xml_file(path: &Path) -> Result<Topology, String> {
    // Read here: hwlocality panics (`unreachable!`) on a file hwloc cannot open.
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    load_xml(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A topology from XML text.
pub fn load_xml(text: &str) -> Result<Topology, String> {
    super::guarded("hwloc XML", || {
        let b = io_builder()?.from_xml(text).map_err(|e| format!("hwloc XML: {e}"))?;
        b.build().map_err(|e| format!("hwloc XML: cannot build the topology: {e}"))
    })
}

/// hwloc drops every I/O object by default; keep them all (bridges without GPUs are few).
fn io_builder() -> Result<hwlocality::topology::builder::TopologyBuilder, String> {
    Topology::builder().with_io_type_filter(TypeFilter::KeepAll).map_err(|e| format!("hwloc I/O filter: {e}"))
}

/// A vertex while the tree is assembled.
#[derive(Clone, Debug)]
struct Node {
    kind: Kind,
    /// Identifies the vertex among its siblings (hwloc's persistent index, or the GPU's).
    key: u64,
    /// The uplink's GB/s, `None`: unknown (nominal) or a pass-through vertex.
    gbs: Option<f64>,
    children: Vec<Node>,
    /// Leaves: the index in the list of GPUs.
    gpu: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Package,
    Switch,
    NvLink,
    Gpu,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Package => "package",
            Kind::Switch => "switch",
            Kind::NvLink => "nvlink",
            Kind::Gpu => "gpu",
        }
    }

    fn nominal(self) -> f64 {
        match self {
            Kind::Package => NOMINAL_PACKAGE_GBS,
            _ => NOMINAL_PCIE_GBS,
        }
    }
}

/// One step of a GPU's path from the root.
type Step = (Kind, u64, Option<f64>);

/// The GPU tree of `topology` (module docs). Never panics on odd topologies: what it cannot read
/// it leaves out and notes.
pub fn probe(topology: &Topology) -> GpuTree {
    let mut notes = Vec::new();
    let found = find_gpus(topology);
    if found.is_empty() {
        return GpuTree { gpus: Vec::new(), levels: Vec::new(), notes };
    }
    let packages: Vec<u64> = found.iter().map(|g| package_key(g)).collect();
    let several_packages = packages.iter().any(|&p| p != packages[0]);
    let nvlink = nvlink_groups(topology, &found);

    let paths: Vec<Vec<Step>> = match &nvlink {
        Some(nv) => {
            // A group spread over packages has no package above it: the package level goes.
            let group_in_one_package =
                |g: usize| (0..found.len()).filter(|&i| nv.group[i] == g).all(|i| packages[i] == packages[nv.first[g]]);
            let with_packages = several_packages && (0..found.len()).all(|i| group_in_one_package(nv.group[i]));
            if several_packages && !with_packages {
                notes.push("an NVLink group spans packages: no package level".into());
            }
            (0..found.len())
                .map(|i| {
                    let mut p = Vec::new();
                    if with_packages {
                        p.push((Kind::Package, packages[i], None));
                    }
                    let g = nv.group[i];
                    p.push((Kind::NvLink, g as u64, Some(nv.group_gbs[g])));
                    p.push((Kind::Gpu, i as u64, nv.gpu_gbs[i].or_else(|| pcie_gbs(found[i], None))));
                    p
                })
                .collect()
        }
        None => pcie_paths(&found, &packages, several_packages),
    };

    let mut root = Node { kind: Kind::Package, key: u64::MAX, gbs: None, children: Vec::new(), gpu: None };
    for (i, path) in paths.iter().enumerate() {
        insert(&mut root, path, i);
    }
    pad(&mut root, &mut notes);
    symmetrize(&mut root, &mut notes);
    let (levels, order) = levels(&root, &mut notes);
    let gpus = order.iter().map(|&i| describe_gpu(found[i])).collect();
    GpuTree { gpus, levels, notes }
}

/// The GPUs' PCI devices in PCI bus order (module docs: which devices count).
fn find_gpus(topology: &Topology) -> Vec<&TopologyObject> {
    let pci: Vec<&TopologyObject> = topology.objects_with_type(ObjectType::PCIDevice).collect();
    let driven: Vec<&TopologyObject> = pci.iter().copied().filter(|d| d.io_children().any(is_gpu_os_device)).collect();
    let mut gpus = if driven.is_empty() {
        pci.into_iter()
            .filter(|d| match d.attributes() {
                Some(ObjectAttributes::PCIDevice(a)) => {
                    matches!(a.class_id(), 0x0300 | 0x0302 | 0x0380) && matches!(a.vendor_id(), 0x10de | 0x1002)
                }
                _ => false,
            })
            .collect()
    } else {
        driven
    };
    gpus.sort_by_key(|d| bus_key(d));
    gpus
}

fn is_gpu_os_device(o: &TopologyObject) -> bool {
    let name = o.name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match o.attributes() {
        Some(ObjectAttributes::OSDevice(a)) => match a.device_type() {
            OSDeviceType::CoProcessor => name.starts_with("cuda"),
            OSDeviceType::GPU => name.starts_with("nvml") || name.starts_with("rsmi"),
            _ => false,
        },
        _ => false,
    }
}

fn bus_key(d: &TopologyObject) -> (u32, u8, u8, u8) {
    match d.attributes() {
        Some(ObjectAttributes::PCIDevice(a)) => (u32::from(a.domain()), a.bus_id(), a.bus_device(), a.function()),
        _ => (u32::MAX, 0, 0, 0),
    }
}

fn describe_gpu(d: &TopologyObject) -> Gpu {
    let (dom, bus, dev, func) = bus_key(d);
    let os_devices =
        d.io_children().filter(|o| is_gpu_os_device(o)).filter_map(|o| o.name().map(|n| n.to_string_lossy().into_owned())).collect();
    Gpu { bus_id: format!("{dom:04x}:{bus:02x}:{dev:02x}.{func:x}"), os_devices }
}

/// The package a GPU hangs from: its first CPU-side ancestor's Package, or that ancestor itself
/// (a Machine or Group above the packages).
fn package_key(gpu: &TopologyObject) -> u64 {
    match gpu.first_non_io_ancestor() {
        Some(a) if a.object_type() == ObjectType::Package => a.global_persistent_index(),
        Some(a) => a.first_ancestor_with_type(ObjectType::Package).unwrap_or(a).global_persistent_index(),
        None => 0,
    }
}

/// A PCI object's own link speed, `None` when hwloc does not know it (0).
fn link_gbs(o: &TopologyObject) -> Option<f64> {
    let speed = match o.attributes() {
        Some(ObjectAttributes::PCIDevice(a)) => a.link_speed(),
        Some(ObjectAttributes::Bridge(b)) => match b.upstream_attributes() {
            Some(hwlocality::object::attributes::UpstreamAttributes::PCI(a)) => a.link_speed(),
            None => 0.0,
        },
        _ => 0.0,
    };
    (speed.is_finite() && speed > 0.0).then_some(f64::from(speed))
}

fn is_pci_bridge(o: &TopologyObject) -> bool {
    matches!(o.attributes(), Some(ObjectAttributes::Bridge(b)) if b.upstream_type() == BridgeType::PCI)
}

/// The slower of two known bandwidths.
fn min_gbs(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The slowest link from `gpu` up to (not including) the bridge `stop`, or up to the host bridge.
fn pcie_gbs(gpu: &TopologyObject, stop: Option<u64>) -> Option<f64> {
    let mut gbs = link_gbs(gpu);
    for a in gpu.ancestors().take_while(|a| a.object_type() == ObjectType::Bridge) {
        if Some(a.global_persistent_index()) == stop || !is_pci_bridge(a) {
            break;
        }
        gbs = min_gbs(gbs, link_gbs(a));
    }
    gbs
}

/// Paths through the PCIe tree: package, the branching bridges, the GPU.
fn pcie_paths(found: &[&TopologyObject], packages: &[u64], several_packages: bool) -> Vec<Vec<Step>> {
    // Each GPU's PCI-to-PCI bridges, top first.
    let chains: Vec<Vec<&TopologyObject>> = found
        .iter()
        .map(|g| {
            let mut c: Vec<&TopologyObject> =
                g.ancestors().take_while(|a| a.object_type() == ObjectType::Bridge).filter(|a| is_pci_bridge(a)).collect();
            c.reverse();
            c
        })
        .collect();
    // A bridge branches when the GPUs below it continue through different children.
    let branches = |b: &TopologyObject| -> bool {
        let id = b.global_persistent_index();
        let mut next: Option<u64> = None;
        for (i, c) in chains.iter().enumerate() {
            if let Some(pos) = c.iter().position(|x| x.global_persistent_index() == id) {
                let below = c.get(pos + 1).map_or(found[i].global_persistent_index(), |x| x.global_persistent_index());
                match next {
                    None => next = Some(below),
                    Some(n) if n != below => return true,
                    Some(_) => {}
                }
            }
        }
        false
    };
    chains
        .iter()
        .enumerate()
        .map(|(i, chain)| {
            let mut p = Vec::new();
            if several_packages {
                p.push((Kind::Package, packages[i], None));
            }
            let kept: Vec<&TopologyObject> = chain.iter().copied().filter(|b| branches(b)).collect();
            for (k, b) in kept.iter().enumerate() {
                // The switch's link: the slowest from it up to the kept bridge above.
                let stop = k.checked_sub(1).map(|j| kept[j].global_persistent_index());
                let mut gbs = link_gbs(b);
                for a in b.ancestors().take_while(|a| a.object_type() == ObjectType::Bridge) {
                    if Some(a.global_persistent_index()) == stop || !is_pci_bridge(a) {
                        break;
                    }
                    gbs = min_gbs(gbs, link_gbs(a));
                }
                p.push((Kind::Switch, b.global_persistent_index(), gbs));
            }
            let stop = kept.last().map(|b| b.global_persistent_index());
            p.push((Kind::Gpu, i as u64, pcie_gbs(found[i], stop)));
            p
        })
        .collect()
}

/// NVLink groups from the "NVLinkBandwidth" matrix.
struct NvLink {
    /// The group of each GPU (groups numbered from 0).
    group: Vec<usize>,
    /// A member of each group.
    first: Vec<usize>,
    /// Each group's link to the host.
    group_gbs: Vec<f64>,
    /// Each GPU's NVLink bandwidth within its group (`None`: a GPU alone).
    gpu_gbs: Vec<Option<f64>>,
}

fn nvlink_groups(topology: &Topology, found: &[&TopologyObject]) -> Option<NvLink> {
    let matrices = topology.distances_with_name("NVLinkBandwidth").ok()?;
    let n = found.len();
    const FABRIC: usize = usize::MAX - 1;
    const HOST: usize = usize::MAX - 2;
    let gpu_index = |o: &TopologyObject| -> Option<usize> {
        let id = o.global_persistent_index();
        let pci = found.iter().position(|g| g.global_persistent_index() == id);
        pci.or_else(|| {
            let parent = o.parent()?.global_persistent_index();
            found.iter().position(|g| g.global_persistent_index() == parent)
        })
    };
    let classify = |o: Option<&TopologyObject>| -> Option<usize> {
        let o = o?;
        if let Some(i) = gpu_index(o) {
            return Some(i);
        }
        let nvswitch = o.subtype().is_some_and(|s| s.to_bytes() == b"NVSwitch")
            || matches!(o.attributes(), Some(ObjectAttributes::PCIDevice(a)) if a.class_id() >> 8 == 0x06 && a.vendor_id() == 0x10de);
        if nvswitch {
            Some(FABRIC)
        } else if o.cpuset().is_some() {
            Some(HOST)
        } else {
            None
        }
    };
    let mut parent: Vec<usize> = (0..=n).collect(); // n: the NVSwitch fabric
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut nv_gbs = vec![0.0f64; n];
    let mut host_gbs = vec![0.0f64; n];
    let mut linked = false;
    for m in &matrices {
        let who: Vec<Option<usize>> = m.objects().map(classify).collect();
        for ((a, b), v) in m.enumerate_distances() {
            if a == b || v == 0 {
                continue;
            }
            let gbs = v as f64 / 1000.0; // hwloc's MB/s
            match (who.get(a).copied().flatten(), who.get(b).copied().flatten()) {
                (Some(x), Some(y)) if x < n && y < n => {
                    nv_gbs[x] += gbs;
                    let (rx, ry) = (find(&mut parent, x), find(&mut parent, y));
                    parent[rx] = ry;
                    linked = true;
                }
                (Some(x), Some(FABRIC)) if x < n => {
                    nv_gbs[x] += gbs;
                    let (rx, rf) = (find(&mut parent, x), find(&mut parent, n));
                    parent[rx] = rf;
                    linked = true;
                }
                (Some(x), Some(HOST)) if x < n => host_gbs[x] += gbs,
                _ => {}
            }
        }
    }
    if !linked {
        return None;
    }
    // Groups numbered in the order of their first GPU (PCI bus order).
    let mut first = Vec::new();
    let mut roots: Vec<usize> = Vec::new();
    let group: Vec<usize> = (0..n)
        .map(|i| {
            let r = find(&mut parent, i);
            roots.iter().position(|&x| x == r).unwrap_or_else(|| {
                roots.push(r);
                first.push(i);
                roots.len() - 1
            })
        })
        .collect();
    let group_gbs = (0..roots.len())
        .map(|g| {
            (0..n)
                .filter(|&i| group[i] == g)
                .map(|i| if host_gbs[i] > 0.0 { host_gbs[i] } else { pcie_gbs(found[i], None).unwrap_or(NOMINAL_PCIE_GBS) })
                .sum()
        })
        .collect();
    let gpu_gbs = nv_gbs.iter().map(|&g| (g > 0.0).then_some(g)).collect();
    Some(NvLink { group, first, group_gbs, gpu_gbs })
}

fn insert(node: &mut Node, path: &[Step], gpu: usize) {
    let Some(&(kind, key, gbs)) = path.first() else { return };
    let pos = match node.children.iter().position(|c| c.kind == kind && c.key == key) {
        Some(p) => p,
        None => {
            let leaf = path.len() == 1;
            node.children.push(Node { kind, key, gbs, children: Vec::new(), gpu: leaf.then_some(gpu) });
            node.children.len() - 1
        }
    };
    insert(&mut node.children[pos], &path[1..], gpu);
}

fn depth(node: &Node) -> usize {
    node.children.iter().map(|c| 1 + depth(c)).max().unwrap_or(0)
}

/// Gives every leaf the same depth: a GPU behind fewer switches gets pass-through switches
/// (no bandwidth of their own) above it.
fn pad(root: &mut Node, notes: &mut Vec<String>) {
    fn go(node: &mut Node, at: usize, want: usize, padded: &mut bool) {
        for c in &mut node.children {
            if c.children.is_empty() && at + 1 < want {
                let mut leaf = c.clone();
                for _ in at + 1..want {
                    leaf = Node { kind: Kind::Switch, key: leaf.key, gbs: None, children: vec![leaf], gpu: None };
                }
                *c = leaf;
                *padded = true;
            } else {
                go(c, at + 1, want, padded);
            }
        }
    }
    let want = depth(root);
    let mut padded = false;
    go(root, 0, want, &mut padded);
    if padded {
        notes.push("GPUs sit behind different numbers of PCIe switches".into());
    }
}

/// Folds the deepest level whose vertices have unequal numbers of children, until none has.
fn symmetrize(root: &mut Node, notes: &mut Vec<String>) {
    loop {
        let leaf_depth = depth(root);
        let uneven = (1..leaf_depth).rev().find(|&d| {
            let mut counts = Vec::new();
            at_depth(root, d, &mut |n| counts.push(n.children.len()));
            counts.windows(2).any(|w| w[0] != w[1])
        });
        let Some(d) = uneven else { return };
        let mut name = "";
        at_depth(root, d, &mut |n| name = n.kind.name());
        notes.push(format!("uneven {name} groups: the {name} level is folded into the one above (the tree must be regular)"));
        fold(root, d);
    }
}

fn at_depth(node: &Node, d: usize, f: &mut impl FnMut(&Node)) {
    if d == 0 {
        f(node);
    } else {
        node.children.iter().for_each(|c| at_depth(c, d - 1, f));
    }
}

/// Replaces every vertex at depth `d` (>= 1) by its children, which keep the slower link.
fn fold(node: &mut Node, d: usize) {
    if d == 1 {
        let old = std::mem::take(&mut node.children);
        for v in old {
            for mut c in v.children {
                c.gbs = min_gbs(c.gbs, v.gbs);
                node.children.push(c);
            }
        }
    } else {
        node.children.iter_mut().for_each(|c| fold(c, d - 1));
    }
}

/// The levels of a regular tree and its GPUs in leaf order.
fn levels(root: &Node, notes: &mut Vec<String>) -> (Vec<GpuLevel>, Vec<usize>) {
    let mut levels = Vec::new();
    for d in 1..=depth(root) {
        let mut arity = 0;
        at_depth(root, d - 1, &mut |n| arity = n.children.len());
        let (mut kind, mut lo, mut hi) = (Kind::Gpu, f64::INFINITY, 0.0f64);
        let mut kinds = Vec::new();
        at_depth(root, d, &mut |n| {
            kinds.push(n.kind);
            if let Some(g) = n.gbs {
                lo = lo.min(g);
                hi = hi.max(g);
            }
        });
        // A pass-through switch keeps the name of the real ones beside it.
        if let Some(k) = kinds.first() {
            kind = *k;
        }
        let gbs = if lo.is_finite() {
            if hi > lo * 1.01 {
                notes.push(format!("{} links differ ({lo:.1} to {hi:.1} GB/s): the level takes the slowest", kind.name()));
            }
            lo
        } else {
            if kind != Kind::Package {
                notes.push(format!("{} links: speed unknown to hwloc, nominal {:.1} GB/s", kind.name(), kind.nominal()));
            }
            kind.nominal()
        };
        levels.push(GpuLevel { name: kind.name().into(), arity: arity as u32, gbs });
    }
    let mut order = Vec::new();
    fn leaves(n: &Node, out: &mut Vec<usize>) {
        match n.gpu {
            Some(i) if n.children.is_empty() => out.push(i),
            _ => n.children.iter().for_each(|c| leaves(c, out)),
        }
    }
    leaves(root, &mut order);
    if order.windows(2).any(|w| w[0] > w[1]) {
        notes.push("the tree's GPU order is not PCI bus order: set CUDA_DEVICE_ORDER=PCI_BUS_ID and check the listed bus ids".into());
    }
    (levels, order)
}

#[cfg(test)]
mod tests;
