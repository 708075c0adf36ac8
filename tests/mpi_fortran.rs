//! Fortran applications (`mpif.h`, `use mpi`, `use mpi_f08`) built with the flavor's `mpif90`
//! and run under the real launcher with `libsluice.so` preloaded, at 2 and 4 ranks: the program
//! checks every value it receives, and sluice's statistics must show each call family.
//! `coll.F90` runs every intercepted collective with a derived datatype: each call must be
//! counted in the `coll` row (on Open MPI through sluice's Fortran exports).

mod common;
use common::*;

fn run_fortran(file: &str, defines: &[&str]) {
    let exe = compile_fortran(file, defines);
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "{file} np={np}:\n{}", job.all());
        for fam in ["init", "p2p", "persistent", "probe", "completion", "datatype", "pack", "comm"] {
            assert!(job.stat_calls(fam).unwrap_or(0) > 0, "{file} np={np}: no {fam} calls counted\n{}", job.all());
        }
    }
}

#[test]
fn mpif_h_calls_are_intercepted() {
    run_fortran("p2p.F90", &["SLUICE_MPIF_H"]);
}

#[test]
fn use_mpi_calls_are_intercepted() {
    run_fortran("p2p.F90", &[]);
}

#[test]
fn use_mpi_f08_calls_are_intercepted() {
    run_fortran("f08_p2p.f90", &[]);
}

/// Open MPI 4.1's own Fortran `MPI_Ialltoallw`/`MPI_Ineighbor_alltoallw` free their converted
/// datatype arrays at return and crash at completion when a derived type is in them
/// (open-mpi/ompi#8763): the bare runs of coll.F90 on Open MPI use predefined types there.
fn bare_coll_env() -> &'static [(&'static str, &'static str)] {
    if FLAVOR == "openmpi" {
        &[("COLL_F90_IW_PREDEFINED", "1")]
    } else {
        &[]
    }
}

/// Collective calls coll.F90 made (summed over ranks).
fn coll_calls(job: &Job) -> u64 {
    job.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("coll calls ")?.parse().ok())
        .unwrap_or_else(|| panic!("no call count printed:\n{}", job.all()))
}

fn run_fortran_coll(defines: &[&str]) {
    let exe = compile_fortran("coll.F90", defines);
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[("SLUICE_STATS", "1")]);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "coll.F90 {defines:?} np={np}:\n{}", job.all());
        let calls = coll_calls(&job);
        assert!(calls > 0, "coll.F90 {defines:?} np={np}: no collective made\n{}", job.all());
        assert_eq!(job.stat_calls("coll"), Some(calls), "coll.F90 {defines:?} np={np}: collectives not all intercepted\n{}", job.all());
        // The program packs nothing itself: the engine's operations are the collectives'.
        assert!(job.stat_calls("ddt-engine").unwrap_or(0) > 0, "coll.F90 {defines:?} np={np}: engine unused\n{}", job.all());
    }
}

#[test]
fn mpif_h_collectives_are_intercepted() {
    run_fortran_coll(&["SLUICE_MPIF_H"]);
}

#[test]
fn use_mpi_collectives_are_intercepted() {
    run_fortran_coll(&[]);
}

#[test]
fn use_mpi_f08_collectives_are_intercepted() {
    run_fortran_coll(&["SLUICE_F08"]);
}

#[test]
fn nonblocking_w_collectives_keep_their_converted_type_arrays() {
    // With the collective protocol off every call goes to the MPI with the arguments the Fortran
    // binding converted: on Open MPI the C datatype arrays of MPI_Ialltoallw and
    // MPI_Ineighbor_alltoallw are sluice's, and the MPI reads them until MPI_Wait (freed at
    // return, as Open MPI's own binding does, the program crashes).
    let exe = compile_fortran("coll.F90", &[]);
    for np in [2u32, 3] {
        let job = launch_shim(np, &exe, &[("SLUICE_COLL", "0"), ("SLUICE_STAGING_CACHE", "0")]);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "np={np}:\n{}", job.all());
    }
}

#[test]
fn fortran_programs_pass_without_the_shim() {
    for (file, defines) in [("p2p.F90", &["SLUICE_MPIF_H"][..]), ("p2p.F90", &[]), ("f08_p2p.f90", &[])] {
        let job = launch(2, &compile_fortran(file, defines), &[], None);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "{file}:\n{}", job.all());
    }
    for defines in [&["SLUICE_MPIF_H"][..], &[], &["SLUICE_F08"]] {
        for np in [2u32, 4] {
            let job = launch(np, &compile_fortran("coll.F90", defines), bare_coll_env(), None);
            assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "coll.F90 {defines:?} np={np}:\n{}", job.all());
        }
    }
}

#[test]
fn thread_level_is_the_one_asked_for_under_the_progress_thread() {
    // sluice raises the MPI's level to MPI_THREAD_MULTIPLE for its progress thread; the Fortran
    // program still sees MPI_THREAD_FUNNELED from MPI_INIT_THREAD and MPI_QUERY_THREAD, through
    // the mpi module and mpi_f08, as with the bare MPI.
    for defines in [&[][..], &["F08"][..]] {
        let exe = compile_fortran("query_thread.F90", defines);
        launch(1, &exe, &[], None).assert_pass("query_thread");
        launch_shim(2, &exe, &[("SLUICE_PROGRESS_THREAD", "1")]).assert_pass("query_thread");
    }
}

#[test]
fn communicator_info_key_reaches_sluice() {
    // sluice_p2p_path set through MPI_COMM_DUP_WITH_INFO and MPI_COMM_SET_INFO from Fortran (mpi
    // and mpi_f08) reaches sluice: without the key sluice's engine packs and unpacks the strided
    // 1 MiB Sendrecv messages; with `mpi` on both communicators it leaves them to the MPI.
    for defines in [&[][..], &["F08"][..]] {
        let exe = compile_fortran("comm_info.F90", defines);
        launch(2, &exe, &[], None).assert_pass("comm_info");
        let auto = launch_shim(2, &exe, &[("SLUICE_STATS", "1")]);
        auto.assert_pass("comm_info");
        let mpi = launch_shim(2, &exe, &[("SLUICE_STATS", "1"), ("SLUICE_TEST_PATH", "mpi")]);
        mpi.assert_pass("comm_info");
        let (a, m) = (auto.stat_calls("ddt-engine").unwrap_or(0), mpi.stat_calls("ddt-engine").unwrap_or(0));
        assert!(a > 0 && m == 0, "{defines:?}: engine operations {a} without the key, {m} with mpi\n{}\n{}", auto.all(), mpi.all());
    }
}
