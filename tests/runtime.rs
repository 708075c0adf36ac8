//! The transfer runtime's C API (`sluice_copy`, events, `sluice_plan_explain`) under real MPI
//! jobs, with programs linked against the shim (and the shim preloaded): `tests/c/copy_api.c`
//! (every error code, copies between host memory and files in derived layouts checked against
//! MPI_Pack/MPI_Unpack) at 2 and 4 ranks, and the two examples (`examples/transpose.c`, the
//! out-of-core transpose, and `examples/priority.c`), which check every byte they copy.

mod common;
use common::*;

fn assert_ok(job: &Job, name: &str) {
    assert!(job.ok && job.stdout.contains(&format!("{name}: OK")), "{name} failed:\n{}", job.all());
}

#[test]
fn copy_api_refuses_bad_arguments_and_copies_exactly() {
    let exe = compile_linked("tests/c", "copy_api");
    for np in [2u32, 4] {
        assert_ok(&launch_shim(np, &exe, &[]), "copy_api");
    }
}

#[test]
fn examples_run_and_check_their_results() {
    let transpose = compile_linked("examples", "transpose");
    let job = launch_shim(2, &transpose, &[]);
    assert_ok(&job, "transpose");
    assert!(job.stdout.contains("DiskRead") && job.stdout.contains("Memcpy"), "no plan printed:\n{}", job.all());
    let priority = compile_linked("examples", "priority");
    assert_ok(&launch_shim(1, &priority, &[("PRIORITY_MIB", "2"), ("PRIORITY_TRIALS", "3")]), "priority");
    // Background copies larger than the ninth (each checked byte for byte too).
    let job = launch_shim(1, &priority, &[("PRIORITY_MIB", "1"), ("PRIORITY_TRIALS", "2"), ("PRIORITY_BACKGROUND", "3")]);
    assert_ok(&job, "priority");
    assert!(job.stdout.contains("8 copies of 3 MiB, then a ninth of 1 MiB"), "{}", job.all());
}

#[test]
fn statistics_count_the_channels_requests() {
    let exe = compile_linked("examples", "transpose");
    let job = launch_shim(2, &exe, &[("SLUICE_STATS", "1")]);
    assert_ok(&job, "transpose");
    for row in ["ch-memcpy", "ch-disk-read"] {
        assert!(job.stat_calls(row).is_some_and(|n| n > 0), "no {row} requests counted:\n{}", job.all());
    }
}

#[test]
fn a_bad_model_file_warns_and_copies_with_the_built_in_model() {
    let exe = compile_linked("tests/c", "copy_api");
    let bad = std::env::temp_dir().join(format!("sluice-bad-model-{}.toml", std::process::id()));
    std::fs::write(&bad, "threshold = 0\n").unwrap();
    let job = launch_shim(2, &exe, &[("SLUICE_CALIBRATION", bad.to_str().unwrap())]);
    std::fs::remove_file(&bad).unwrap();
    assert_ok(&job, "copy_api");
    assert!(job.stderr.contains("SLUICE_CALIBRATION") && job.stderr.contains("built-in"), "no warning:\n{}", job.all());
}

/// `SLUICE_LOG=plan`: each new plan is logged once per process: a copy's path with its hops,
/// the routes point-to-point sends and receives take (staged, pipelined) and how collectives
/// are converted; lines never repeat in a rank.
#[test]
fn plans_are_logged_once_each() {
    let transpose = compile_linked("examples", "transpose");
    let job = launch_shim(2, &transpose, &[("SLUICE_LOG", "plan")]);
    assert_ok(&job, "transpose");
    assert!(job.stderr.contains("plan: copy:") && job.stderr.contains("DiskRead"), "no copy plan logged:\n{}", job.all());
    let mut jobs = vec![];
    let routes = [
        ("p2p_pipeline", [": pipelined, M0 of", "-byte pipelined message"]),
        ("p2p_engine", ["staged, packed by sluice's", "staged, the MPI receives MPI_PACKED"]),
        ("coll_check", ["plan: MPI_Alltoallw: converted", "plan: MPI_Ibcast: converted"]),
    ];
    for (name, lines) in routes {
        let job = launch_shim(2, &compile_c(name), &[("SLUICE_LOG", "plan")]);
        for route in lines {
            assert!(job.ok && job.stderr.contains(route), "{name}: failed, or no {route:?} line:\n{}", job.all());
        }
        jobs.push(job);
    }
    let p2p = compile_c("p2p_pipeline");
    let quiet = launch_shim(2, &p2p, &[]);
    assert!(quiet.ok && !quiet.stderr.contains("plan:"), "plans logged without SLUICE_LOG=plan:\n{}", quiet.all());
    for j in &jobs {
        let lines: Vec<&str> = j.stderr.lines().filter(|l| l.contains("plan: ")).collect();
        let unique: std::collections::BTreeSet<&str> = lines.iter().copied().collect();
        assert_eq!(lines.len(), unique.len(), "a plan was logged twice by one rank:\n{}", j.stderr);
    }
}

/// The copy API from Fortran (`use sluice`, include/sluice.f90): tests/fortran/copy.F90 at 2
/// and 4 ranks (a transpose in memory, a file round trip, plan text, the error codes).
#[test]
fn fortran_module_copies_and_reports_errors() {
    let exe = compile_fortran_linked("copy.F90");
    for np in [2u32, 4] {
        let job = launch_shim(np, &exe, &[]);
        assert!(job.ok && job.stdout.lines().any(|l| l.trim() == "PASS"), "copy.F90 np={np}:\n{}", job.all());
    }
}

#[test]
fn mpi_paths_are_calibrated_between_two_ranks() {
    // `mpirun -np 2 sluice-info --calibrate`: the MPI's contiguous path and its datatype engine,
    // measured between ranks 0 and 1, join the model as two channels to rank 1's memory (a
    // peer on this node; a remote rank across the emulated cluster's nodes), and on one node a
    // third, the same typed messages through sluice's arena path. Rank 0 writes it, naming the
    // MPI.
    let dir = std::env::temp_dir().join(format!("sluice-mpi-cal-{}", std::process::id()));
    let path = dir.join("model.toml");
    let p = path.to_str().unwrap();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_sluice-info"));
    let job = launch_args(2, exe, &["--calibrate"], &[("SLUICE_CALIBRATION", p)], None);
    assert!(job.ok && job.stdout.contains("wrote"), "{}", job.all());
    let model = sluice::transfer::plan::Model::from_file(&path).unwrap_or_else(|e| panic!("{e}\n{}", job.all()));
    let peer = if cluster_nodes() > 1 { "REMOTE0" } else { "PEER0" };
    let to = model.memory_id(peer).unwrap_or_else(|| panic!("no {peer} in the model\n{}", job.all()));
    let sys = model.memory_id("SYS0").unwrap();
    use sluice::transfer::plan::ChannelKind;
    let kinds: Vec<ChannelKind> = model.incoming(to).iter().map(|&c| model.channel(c).kind).collect();
    let want: &[ChannelKind] = if cluster_nodes() > 1 {
        &[ChannelKind::Network, ChannelKind::MpiTyped]
    } else {
        &[ChannelKind::Network, ChannelKind::MpiTyped, ChannelKind::ShmTyped]
    };
    assert_eq!(kinds, want, "{}", job.all());
    assert_eq!(model.mpi(), Some(if cfg!(sluice_mpi = "mpich") { "mpich" } else { "openmpi" }), "{}", job.all());
    for &c in model.incoming(to) {
        let ch = model.channel(c);
        assert_eq!(ch.src, sys);
        assert!(ch.curve.points().count() == 6 && ch.curve.peak() > 1e6, "{:?}: {:?}", ch.kind, ch.curve);
    }
    // The model in use shows them.
    assert!(
        job.stdout.contains(&format!("Network SYS0 -> {peer}")) && job.stdout.contains(&format!("MpiTyped SYS0 -> {peer}")),
        "{}",
        job.all()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
