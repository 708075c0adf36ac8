//! One-sided puts and gets through firehoses (`sluice_put`/`sluice_get`, docs/firehose.md) under
//! real MPI jobs: tests/c/rma_put_get.c at 2 and 4 ranks with a small `M`, so that operations
//! split, firehoses move and victims are evicted; targets inside MPI_Barrier, MPI_Allreduce and
//! a blocking MPI_Recv serve move requests; threads; refusals of unmapped and read-only remote
//! memory; the pinned amount within M + MAXVICTIM. And the refusal without MPI_THREAD_MULTIPLE.

mod common;
use common::*;

/// Open MPI 4.1 creates no dynamic window between nodes over TCP at `MPI_THREAD_MULTIPLE`
/// (osc pt2pt refuses the level, osc ucx needs UCX's PML): there `sluice_rma_init` must refuse
/// cleanly (checked) instead of the job aborting.
fn no_window_here() -> bool {
    FLAVOR == "openmpi" && cluster_nodes() > 0
}

#[test]
fn puts_and_gets_move_exact_bytes_and_keep_the_bound() {
    let exe = compile_linked("tests/c", "rma_put_get");
    if no_window_here() {
        let job = launch_shim(2, &exe, &[("RMA_EXPECT_NO_WINDOW", "1")]);
        job.assert_pass("rma_put_get");
        assert!(job.stderr.contains("dynamic RMA window"), "no message:\n{}", job.all());
        return;
    }
    for np in [2u32, 4] {
        for (m, v) in [("262144", "65536"), ("8388608", "1048576")] {
            let job = launch_shim(np, &exe, &[("SLUICE_FIREHOSE_M", m), ("SLUICE_FIREHOSE_MAXVICTIM", v), ("SLUICE_STATS", "1")]);
            job.assert_pass("rma_put_get");
            assert!(job.stat_calls("fh-move").is_some_and(|n| n > 0), "no move requests counted:\n{}", job.all());
            assert!(job.stat_calls("fh-served").is_some_and(|n| n > 0), "no move requests served:\n{}", job.all());
            assert!(job.stat_calls("pin-hit").is_some_and(|n| n > 0), "no bucket reused:\n{}", job.all());
        }
    }
}

#[test]
fn without_thread_multiple_the_service_is_refused() {
    let exe = compile_linked("tests/c", "rma_put_get");
    let job = launch_args(2, &exe, &["single"], &[], Some(shim().to_str().unwrap()));
    job.assert_pass("rma_single");
    assert!(job.stderr.contains("MPI_THREAD_MULTIPLE"), "no message:\n{}", job.all());
}

/// The same from Fortran (`use sluice`): tests/fortran/rma.F90 at 2 and 4 ranks.
#[test]
fn fortran_module_puts_and_gets() {
    if no_window_here() {
        return; // the refusal is checked above
    }
    let exe = compile_fortran_linked("rma.F90");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[]);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "rma.F90 np={np}:\n{}", job.all());
    }
}
