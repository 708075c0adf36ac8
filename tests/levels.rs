//! The multi-level runtime interface (`include/sluice_levels.h`, docs/levels.md) under real MPI
//! jobs with the shim preloaded: tests/c/levels_api.c (every call, every error code, task calls,
//! barriers, transfer lists of one and many runs, elision, a child opening the level below) on
//! each composition at 1, 2 and 4 ranks, and the examples of examples/levels/ (SAXPY, SGEMV,
//! SGEMM, CONV2D), written once, run unchanged on several compositions, each checking its
//! result against a plain reference implementation.

mod common;
use common::*;

fn assert_ok(job: &Job, name: &str, what: &str) {
    assert!(job.ok && job.stdout.contains(&format!("{name}: OK")), "{name} ({what}) failed:\n{}", job.all());
}

/// Compositions of processes' own levels (no MPI inside) and of the cluster level.
const LOCAL: &[&str] = &["smp:2", "smp:1", "disk", "disk/smp:2", "disk/smp:3@1M", "smp:2/smp:2"];
const CLUSTER: &[&str] = &["cluster", "cluster/smp:2", "cluster/disk/smp:2@1M", "cluster/smp:2/smp:2"];

#[test]
fn every_call_and_error_code_on_each_composition() {
    let exe = compile_linked("tests/c", "levels_api");
    for spec in LOCAL {
        let np = if cluster_nodes() > 0 { 2 } else { 1 };
        assert_ok(&launch_shim(np, &exe, &[("SLUICE_LEVELS", spec)]), "levels_api", spec);
    }
    for spec in CLUSTER {
        // One rank is one node wherever it runs: across nodes only the jobs that span them.
        let ranks: &[u32] = if cluster_nodes() > 1 { &[2, 4] } else { &[1, 2, 4] };
        for &np in ranks {
            assert_ok(&launch_shim(np, &exe, &[("SLUICE_LEVELS", spec)]), "levels_api", &format!("{spec} np={np}"));
        }
    }
}

/// Remote pieces as messages served by their owner (what the cluster level does where the MPI
/// gives no one-sided window, e.g. Open MPI 4.1 between nodes over TCP): forced here.
#[test]
fn a_cluster_level_moves_remote_pieces_as_messages_too() {
    let exe = compile_linked("tests/c", "levels_api");
    for spec in ["cluster", "cluster/smp:2"] {
        for np in [2u32, 4] {
            let job = launch_shim(np, &exe, &[("SLUICE_LEVELS", spec), ("SLUICE_LEVELS_MOVES", "messages"), ("SLUICE_LOG", "info")]);
            assert_ok(&job, "levels_api", &format!("{spec} np={np} messages"));
            assert!(job.stderr.contains("move as messages"), "not moved as messages:\n{}", job.all());
        }
    }
}

/// A cluster level needs MPI_THREAD_MULTIPLE: refused with SLUICE_ERR_THREAD otherwise.
#[test]
fn a_cluster_level_needs_thread_multiple() {
    let exe = compile_linked("tests/c", "levels_api");
    let job = launch_shim(2, &exe, &[("SLUICE_LEVELS", "cluster"), ("LEVELS_THREAD_SINGLE", "1")]);
    assert_ok(&job, "levels_api", "single");
    assert!(job.stderr.contains("MPI_THREAD_MULTIPLE"), "no reason given:\n{}", job.all());
}

/// The four examples of the paper's Table 1, unchanged on every composition; each checks its
/// result and prints one line with its time and the level pairs' statistics.
#[test]
fn examples_run_unchanged_on_every_composition() {
    let specs = ["smp:2", "disk/smp:2@2M", "smp:2/smp:1", "smp:2/disk", "cluster/smp:2", "cluster", "cluster/disk/smp:2@4M"];
    for name in ["saxpy", "sgemv", "sgemm", "conv2d"] {
        let exe = compile_linked("examples/levels", name);
        for spec in &specs {
            let np = if spec.starts_with("cluster") { 2 } else { 1 };
            if np == 1 && cluster_nodes() > 1 {
                continue; // a one-rank job runs on one node: the single-node runs cover it
            }
            let job = launch_shim(np, &exe, &[("SLUICE_LEVELS", spec)]);
            assert_ok(&job, name, spec);
        }
    }
}

/// The Fortran binding (`use sluice_levels`, include/sluice_levels.f90): tests/fortran/levels.F90
/// (Fortran tasks from a c_funloc table, puts and gets from local Fortran arrays with 0-based index
/// lists, a strided get, a barrier, error codes, the level below, statistics) on a composition of
/// each kind; the local ones at 1 rank and 2 (every rank its own runtime), the cluster at 1 and 2.
#[test]
fn fortran_module_runs_tasks_and_transfers() {
    let exe = compile_fortran_linked("levels.F90");
    for spec in ["smp:2", "disk/smp:2", "cluster/smp:2"] {
        for np in [1u32, 2] {
            if np == 1 && cluster_nodes() > 1 {
                continue; // one node: as on a single one
            }
            let job = launch_shim(np, &exe, &[("SLUICE_LEVELS", spec)]);
            assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "levels.F90 {spec} np={np} ({FLAVOR}):\n{}", job.all());
        }
    }
}
