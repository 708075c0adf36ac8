//! Collectives with derived datatypes under the real launchers (tests/c/coll_check.c): every
//! intercepted collective, blocking and nonblocking (Wait, Waitall mixed with non-contiguous
//! point-to-point requests, Test loops), with contiguous, vector, FFT-column, subarray and
//! struct types, zero counts, MPI_IN_PLACE, w-variants with per-peer types, Cartesian and
//! distributed-graph neighborhoods, an intercommunicator and invalid arguments. The program
//! checks every receive allocation against an image it computes with PMPI_Pack/PMPI_Unpack and
//! against the same call with sluice disabled, and checks the leak counters before
//! MPI_Finalize. Here: it passes on the bare MPI, and with sluice at 2, 3 and 4 ranks, every
//! collective call is counted in sluice's `coll` row, and the engine does the packing.

mod common;
use common::*;

/// Collective calls the program made while sluice was enabled (summed over ranks).
fn program_calls(job: &Job) -> u64 {
    job.stdout
        .lines()
        .find_map(|l| l.strip_prefix("coll_check: calls ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no call count printed:\n{}", job.all()))
}

fn engine_calls(job: &Job) -> u64 {
    job.stat_calls("ddt-engine").unwrap_or(0)
}

#[test]
fn collectives_match_the_mpi_and_run_on_sluices_engine() {
    let exe = compile_c("coll_check");
    launch(2, &exe, &[], None).assert_pass("coll_check"); // the checks hold for the bare MPI
    for np in [2u32, 3, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        job.assert_pass("coll_check");
        let calls = program_calls(&job);
        assert!(calls > 0, "np={np}: no collective made through sluice\n{}", job.all());
        assert_eq!(job.stat_calls("coll"), Some(calls), "np={np}: collective calls not all intercepted\n{}", job.all());
        // With the collective protocol off, only the point-to-point requests mixed into Waitall
        // use the engine: the difference is the collectives' packing and unpacking. (Engine
        // choice pinned to sluice's: a block whose direction learned the MPI's engine is left
        // to the MPI after a timing-dependent number of calls.)
        if np == 2 {
            let pinned = ("SLUICE_PACK_ENGINE", "sluice");
            let on = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), pinned]);
            let off = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_COLL", "0"), pinned]);
            on.assert_pass("coll_check");
            off.assert_pass("coll_check");
            assert!(engine_calls(&off) > 0, "p2p requests should use the engine:\n{}", off.all());
            assert!(
                engine_calls(&on) > engine_calls(&off) + calls,
                "collectives did not use the engine: {} vs {} engine calls\n{}",
                engine_calls(&on),
                engine_calls(&off),
                on.all()
            );
        }
    }
}

#[test]
fn collectives_with_fresh_staging_buffers() {
    // Every staging buffer fresh (none reused): a buffer released before the MPI finished with
    // it would show up as wrong data or a crash instead of hiding behind reuse.
    let exe = compile_c("coll_check");
    let job = launch_shim(3, &exe, &[("SLUICE_STAGING_CACHE", "0")]);
    job.assert_pass("coll_check");
}

#[test]
fn collectives_with_every_block_left_to_the_mpi_or_staged() {
    // SLUICE_COLL_MPI_BLOCK decides which blocks the MPI's own engine moves. 8 leaves almost
    // every block of the test's types to it, so the w-variants mix staged blocks with blocks
    // passed with the application's own types, and the other calls convert whole sides only
    // when another block needs the engine; `off` stages every non-contiguous block. Each must
    // give the bare MPI's results.
    let exe = compile_c("coll_check");
    for (np, block) in [(3u32, "8"), (2, "off")] {
        let job = launch_shim(np, &exe, &[("SLUICE_COLL_MPI_BLOCK", block)]);
        job.assert_pass("coll_check");
    }
}

#[test]
fn staged_blocks_for_other_nodes_are_split_exactly() {
    // SLUICE_COLL_REMOTE_SPLIT=1: every staged block of MPI_Alltoallw and MPI_Neighbor_alltoallw
    // whose peer is on another node, and every block of a uniform MPI_Alltoall/MPI_Allgather
    // with such a peer, is laid out in two runs with a gap (transfer::netpath),
    // whatever the MPI (auto does it only for Open MPI's ob1, from 64 KiB). Results must be the
    // bare MPI's; on one node nothing is split. Across nodes (SLUICE_CLUSTER_NODES=2, ranks
    // round-robin) 2 ranks have only remote peers, 4 ranks a local and remote ones.
    // Uniform calls (MPI_Alltoall, MPI_Allgather) split every block alike, the own and this
    // node's too (one datatype for all peers): tests/c/coll_transpose.c adds 1-4 MiB blocks,
    // whose own slot is copied directly and left hollow in staging.
    for name in ["coll_check", "coll_transpose"] {
        let exe = compile_c(name);
        for np in [2u32, 4] {
            let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_COLL_REMOTE_SPLIT", "1")]);
            job.assert_pass(name);
            let split = job.stat_calls("coll-split").unwrap_or(0);
            if cluster_nodes() > 1 {
                assert!(split > 0, "{name} np={np}: no block split across nodes\n{}", job.all());
            } else {
                assert_eq!(split, 0, "{name} np={np}: blocks split on one node\n{}", job.all());
            }
        }
    }
}

#[test]
fn large_transposes_skip_the_own_slot_copy() {
    // tests/c/coll_transpose.c: own slots of 1-4 MiB, so a uniform MPI_Alltoall gets hollow
    // staging (the own slot backed by a ring of pages) and MPI_Alltoallv zero own counts; every
    // element of every transpose is checked, blocking and nonblocking, three rounds each.
    let exe = compile_c("coll_transpose");
    launch(2, &exe, &[], None).assert_pass("coll_transpose");
    for np in [2u32, 3, 4] {
        let job = launch_shim(np, &exe, &[]);
        job.assert_pass("coll_transpose");
        if np == 2 {
            assert!(job.stdout.contains("hollow 1"), "no ring mapping after a 4 MiB own slot:\n{}", job.all());
        }
    }
    // Fresh staging and mappings for every call (no pool): nothing may depend on reuse.
    launch_shim(3, &exe, &[("SLUICE_STAGING_CACHE", "0")]).assert_pass("coll_transpose");
}
