//! Fortran applications (`mpif.h`, `use mpi`, `use mpi_f08`) built with the flavor's `mpif90`
//! and run under the real launcher with `libsluice.so` preloaded, at 2 and 4 ranks: the program
//! checks every value it receives, and sluice's statistics must show each call family.

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

#[test]
fn fortran_programs_pass_without_the_shim() {
    for (file, defines) in [("p2p.F90", &["SLUICE_MPIF_H"][..]), ("p2p.F90", &[]), ("f08_p2p.f90", &[])] {
        let job = launch(2, &compile_fortran(file, defines), &[], None);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "{file}:\n{}", job.all());
    }
}
