//! Topology constructors with `reorder = true` (`protocol::reorder`), C and Fortran, under the
//! real launcher with `libsluice.so` preloaded, at 2 and 4 ranks; across the emulated cluster's
//! nodes when `SLUICE_CLUSTER_NODES` is set (scripts/test.sh), where the ring topologies must
//! cross nodes less often than without reordering.

mod common;
use common::*;

/// The launch puts ring neighbours on different nodes: round-robin over two nodes.
fn improvable(np: u32) -> bool {
    cluster_nodes() == 2 && np == 4
}

/// Open MPI 4.1's `treematch` topology component, which the MPI picks for `reorder = true`, hangs
/// now and then in `MPI_Dist_graph_create` on this machine (bare MPI, one node, 4 ranks, about 2
/// runs in 3 of `topology.F90`; sluice passes `reorder = false` on, so only the bare and
/// `SLUICE_REORDER=0` jobs meet it): every job here selects the `basic` component. On MPICH a
/// no-op.
const TOPO: (&str, &str) = ("OMPI_MCA_topo", "basic");

/// Reordering of every constructor, distributed graphs included (the default is `cart`).
const ALL: (&str, &str) = ("SLUICE_REORDER", "all");

fn error_class(job: &Job) -> Option<&str> {
    job.stdout.lines().find(|l| l.starts_with("cart error class"))
}

#[test]
fn c_topologies_are_exact_and_cross_nodes_less() {
    let exe = compile_c("topo_reorder");
    let so = shim();
    for np in [2u32, 4] {
        let args: &[&str] = if improvable(np) { &["improve"] } else { &[] };
        let job = launch_args(np, &exe, args, &[TOPO, ALL], Some(so.to_str().unwrap()));
        job.assert_pass("topo_reorder");
        eprintln!("np={np}:\n{}", job.stdout);
        // Processes bound to cores (Open MPI; on MPICH a no-op): the reordering also places
        // each node's vertices on its processes' cores.
        if cluster_nodes() > 0 {
            let bound =
                launch_args(np, &exe, args, &[TOPO, ALL, ("OMPI_MCA_hwloc_base_binding_policy", "core")], Some(so.to_str().unwrap()));
            bound.assert_pass("topo_reorder");
        }
        // The default (`cart`): the distributed graphs keep their ranks.
        let args: &[&str] = if improvable(np) { &["improve-cart"] } else { &[] };
        let cart = launch_args(np, &exe, args, &[TOPO], Some(so.to_str().unwrap()));
        cart.assert_pass("topo_reorder");
        // Bare MPI: the whole program on one node; across nodes only the refused call (Open
        // MPI's treematch component aborts on reorder = true there: docs/mapping.md).
        let bare_args: &[&str] = if cluster_nodes() > 0 { &["error-only"] } else { &[] };
        let bare = launch_args(np, &exe, bare_args, &[TOPO], None);
        bare.assert_pass("topo_reorder");
        // A call the MPI refuses is refused with the MPI's class.
        assert_eq!(error_class(&job), error_class(&bare), "np={np}\n{}\n{}", job.all(), bare.all());
        assert!(error_class(&job).is_some(), "{}", job.all());
        // SLUICE_REORDER=0 leaves the calls to the MPI: as bare.
        let off = launch_args(np, &exe, bare_args, &[("SLUICE_REORDER", "off"), TOPO], Some(so.to_str().unwrap()));
        off.assert_pass("topo_reorder");
    }
}

#[test]
fn fortran_topologies_reach_the_reordering() {
    let so = shim();
    for defines in [&[][..], &["F08"][..]] {
        let exe = compile_fortran("topology.F90", defines);
        for np in [2u32, 4] {
            let args: &[&str] = if improvable(np) { &["improve"] } else { &[] };
            let job = launch_args(np, &exe, args, &[TOPO, ALL], Some(so.to_str().unwrap()));
            assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "{defines:?} np={np}:\n{}", job.all());
            eprintln!("{defines:?} np={np}:\n{}", job.stdout);
            if cluster_nodes() == 0 {
                let bare = launch(np, &exe, &[TOPO], None);
                assert!(bare.ok && bare.stdout.lines().any(|l| l.trim() == "PASS"), "bare {defines:?} np={np}:\n{}", bare.all());
            }
        }
    }
}

/// A profile of 4 world ranks whose only traffic is between ranks v and v ^ x.
fn pairs_matrix(x: usize) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("sluice-reorder-{}-{x}.matrix", std::process::id()));
    let mut text = String::from("sluice-matrix 1\nranks 4\n");
    for v in 0..4 {
        text += &format!("cpu {v} {} 1048576 16\n", v ^ x);
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_profile_weighs_the_reordering() {
    // Only where reordering acts and a ring's neighbours start on different nodes (4 ranks
    // round-robin over 2 emulated nodes: world ranks 0 and 2 on one node, 1 and 3 on the other).
    if !improvable(4) {
        return;
    }
    let exe = compile_c("topo_reorder");
    let so = shim();
    let so = so.to_str().unwrap();
    for x in [1usize, 2] {
        let m = pairs_matrix(x);
        let arg = x.to_string();
        let job = launch_args(4, &exe, &["profile", &arg], &[TOPO, ("SLUICE_REORDER_MATRIX", m.to_str().unwrap())], Some(so));
        job.assert_pass("topo_reorder");
        eprintln!("x={x}:\n{}", job.stdout);
        std::fs::remove_file(m).ok();
    }
    // Without the profile the ring's edges decide, and the ring's best placement separates
    // ranks 0 and 2: the check above can fail.
    let job = launch_args(4, &exe, &["profile", "2"], &[TOPO], Some(so));
    assert!(!job.ok && job.all().contains("heavy pair"), "{}", job.all());
    // A matrix that cannot be used is reported and the call's edges weigh the mapping.
    let job = launch_args(4, &exe, &["profile", "1"], &[TOPO, ("SLUICE_REORDER_MATRIX", "/nonexistent/x.matrix")], Some(so));
    assert!(job.all().contains("SLUICE_REORDER_MATRIX=/nonexistent/x.matrix"), "{}", job.all());
}
