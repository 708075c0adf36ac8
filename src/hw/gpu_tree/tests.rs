//! The probe on hand-made hwloc XML topologies (tests/data/hwloc/, the format `lstopo --of xml`
//! of hwloc 2.9 writes and reads back) and on this machine.

use super::*;

fn load(name: &str) -> GpuTree {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hwloc").join(name);
    let topology = load_xml_file(&path).unwrap_or_else(|e| panic!("{e}"));
    probe(&topology)
}

fn shape(t: &GpuTree) -> Vec<(&str, u32, f64)> {
    t.levels.iter().map(|l| (l.name.as_str(), l.arity, (l.gbs * 1000.0).round() / 1000.0)).collect()
}

#[test]
fn two_packages_two_switches_two_gpus() {
    let t = load("2pkg-2switch-2gpu.xml");
    // The switches' uplinks are PCIe 4.0 x16, the GPUs' PCIe 3.0 x16; packages: nominal.
    assert_eq!(shape(&t), [("package", 2, 16.0), ("switch", 2, 31.508), ("gpu", 2, 15.754)], "{t:?}");
    assert_eq!(t.gpus.len(), 8);
    assert_eq!(t.gpus[0], Gpu { bus_id: "0000:13:00.0".into(), os_devices: vec!["cuda0".into()] });
    assert_eq!(t.gpus[7].os_devices, ["cuda7"]);
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    assert_eq!(t.leaves(), 8);
}

#[test]
fn nvlink_pairs_group_the_gpus() {
    let t = load("2pkg-nvlink-pairs.xml");
    // Each pair: 40 GB/s between its GPUs; each GPU 40 GB/s NVLink to its package, so a pair
    // reaches the host at 80.
    assert_eq!(shape(&t), [("package", 2, 16.0), ("nvlink", 1, 80.0), ("gpu", 2, 40.0)], "{t:?}");
    let buses: Vec<&str> = t.gpus.iter().map(|g| g.bus_id.as_str()).collect();
    assert_eq!(buses, ["0000:01:00.0", "0001:01:00.0", "0002:01:00.0", "0003:01:00.0"]);
    assert_eq!(t.gpus[2].os_devices, ["cuda2", "nvml2"]);
}

#[test]
fn nvswitch_makes_one_group() {
    let t = load("1pkg-nvswitch-4gpu.xml");
    // 150 GB/s from each GPU into the NVSwitch fabric; the group reaches the host over the four
    // GPUs' PCIe 3.0 x16 links. One package: no package level.
    assert_eq!(shape(&t), [("nvlink", 1, 63.015), ("gpu", 4, 150.0)], "{t:?}");
}

#[test]
fn uneven_switches_fold_and_class_finds_gpus() {
    let t = load("1pkg-uneven-3gpu.xml");
    // Two GPUs share a switch behind a PCIe 3.0 x8 link, the third has its own root port (speed
    // unknown): the switch level folds away, the GPUs keep the slowest known link. The ASPEED
    // VGA is not a GPU.
    assert_eq!(shape(&t), [("gpu", 3, 7.877)], "{t:?}");
    assert!(t.gpus.iter().all(|g| g.os_devices.is_empty()));
    assert!(t.notes.iter().any(|n| n.contains("uneven switch groups")), "{:?}", t.notes);
    assert_eq!(t.leaves(), 3);
}

#[test]
fn xml_text_and_errors() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hwloc/2pkg-2switch-2gpu.xml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(probe(&load_xml(&text).unwrap()).gpus.len(), 8);
    assert!(load_xml_file(Path::new("/nonexistent.xml")).is_err());
    assert!(load_xml("<topology version=\"2.0\"><nonsense/>").is_err());
}

#[test]
fn this_machine_probes_without_panicking() {
    // No GPU here; on a machine with GPUs the tree must hold them all.
    let topology = load_system().unwrap();
    let t = probe(&topology);
    assert_eq!(t.leaves(), t.gpus.len(), "{t:?}");
}

fn node(kind: Kind, gbs: Option<f64>, children: Vec<Node>) -> Node {
    Node { kind, key: 0, gbs, children, gpu: None }
}

fn leaf(i: usize, gbs: f64) -> Node {
    Node { kind: Kind::Gpu, key: i as u64, gbs: Some(gbs), children: Vec::new(), gpu: Some(i) }
}

#[test]
fn folding_keeps_every_gpu() {
    // package0: switch(2 GPUs), switch(2 GPUs); package1: switch(2 GPUs), switch(1 GPU).
    let sw = |a: usize, n: usize| node(Kind::Switch, Some(8.0), (a..a + n).map(|i| leaf(i, 16.0)).collect());
    let mut root = node(
        Kind::Package,
        None,
        vec![node(Kind::Package, None, vec![sw(0, 2), sw(2, 2)]), node(Kind::Package, None, vec![sw(4, 2), sw(6, 1)])],
    );
    let mut notes = Vec::new();
    pad(&mut root, &mut notes);
    symmetrize(&mut root, &mut notes);
    let (levels, order) = levels(&root, &mut notes);
    // The deepest uneven level is the switches' (2, 2, 2, 1 GPUs): folded, packages then hold 4
    // and 3 GPUs: folded too; 7 GPUs at the slower switch link remain.
    let got: Vec<(&str, u32, f64)> = levels.iter().map(|l| (l.name.as_str(), l.arity, l.gbs)).collect();
    assert_eq!(got, [("gpu", 7, 8.0)], "{notes:?}");
    assert_eq!(order, [0, 1, 2, 3, 4, 5, 6]);

    // Packages with 2 and 1 switches of 2 GPUs each: the package level goes, the switches stay.
    let mut root =
        node(Kind::Package, None, vec![node(Kind::Package, None, vec![sw(0, 2), sw(2, 2)]), node(Kind::Package, None, vec![sw(4, 2)])]);
    let mut notes = Vec::new();
    symmetrize(&mut root, &mut notes);
    let (levels, _) = super::levels(&root, &mut notes);
    let got: Vec<(&str, u32, f64)> = levels.iter().map(|l| (l.name.as_str(), l.arity, l.gbs)).collect();
    assert_eq!(got, [("switch", 3, 8.0), ("gpu", 2, 16.0)], "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("uneven package groups")), "{notes:?}");
}
