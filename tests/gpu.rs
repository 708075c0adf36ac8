//! Device buffers in MPI calls (`tests/c/gpu_mpi.c`) under sluice, at 2 and 4 ranks: every case
//! must leave the same bytes, return codes and statuses on device buffers as on host buffers.
//!
//! Without a CUDA driver or device the program prints SKIP, and this test says so on stderr;
//! the cases then run twice on host memory (`GPU_MPI_HOST_TWICE`), which checks that they are
//! deterministic, so a failure on the GPU machine is sluice's and not the test's. The GPU run
//! itself happens on the device machine (`scripts/device-check.sh`, docs/gpu.md).

mod common;
use common::*;

#[test]
fn device_buffers_behave_exactly_as_host_buffers() {
    let exe = compile_c("gpu_mpi");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[]);
        if job.stdout.contains("SKIP gpu_mpi") {
            eprintln!("gpu_mpi np={np}: {} (cases checked on host memory only)", job.stdout.trim());
            launch_shim(np, &exe, &[("GPU_MPI_HOST_TWICE", "1")]).assert_pass("gpu_mpi");
            continue;
        }
        job.assert_pass("gpu_mpi");
    }
}

#[test]
fn gpu_setting_is_validated() {
    let exe = compile_c("ring");
    let job = launch_shim(2, &exe, &[("SLUICE_GPU", "maybe")]);
    let all = job.all();
    assert!(!job.ok && all.contains("SLUICE_GPU=\"maybe\"") && all.contains("auto or off"), "unclear or missing error:\n{all}");
    launch_shim(2, &exe, &[("SLUICE_GPU", "off")]).assert_pass("ring");
}
