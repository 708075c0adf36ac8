//! Runs the built `sluice-map` binary: matrices and topologies from files, the launch files it
//! writes, and its errors.

use std::process::{Command, Output};

fn run(args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-map")).args(args).output().expect("sluice-map runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out, text)
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-map-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Two nodes of two cores; ranks 0-3 in heavy pairs (0,2) and (1,3): the default mapping puts
/// both pairs across the network, MAGC neither.
const TOPOLOGY: &str =
    "hosts = [\"left\", \"right\"]\n[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"core\", arity = 2, gbs = 10.0 }]\n";
const MATRIX: &str = "sluice-matrix 1\nranks 4\ncpu 0 2 1000000 1\ncpu 2 0 1000000 1\ncpu 1 3 1000000 1\ncpu 0 1 10 1\n";

#[test]
fn maps_a_matrix_file_and_writes_launch_files() {
    let (topo, matrix) = (tmp("t.toml"), tmp("m.txt"));
    std::fs::write(&topo, TOPOLOGY).unwrap();
    std::fs::write(&matrix, MATRIX).unwrap();
    let (rf, hosts, map) = (tmp("rf"), tmp("hosts"), tmp("map"));
    let (out, text) = run(&[
        matrix.to_str().unwrap(),
        "--topology",
        topo.to_str().unwrap(),
        "--rankfile",
        rf.to_str().unwrap(),
        "--hostfile",
        hosts.to_str().unwrap(),
        "--assignment",
        map.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for s in ["default", "strategy1", "strategy2", "magc", "<- written"] {
        assert!(text.contains(s), "{s}: {text}");
    }
    // rank -> host from the assignment table: the heavy pairs share a host.
    let table = std::fs::read_to_string(&map).unwrap();
    let host: Vec<String> =
        table.lines().filter(|l| !l.starts_with('#')).map(|l| l.split_whitespace().nth(1).unwrap().to_string()).collect();
    assert_eq!(host.len(), 4, "{table}");
    assert_eq!(host[0], host[2], "{table}");
    assert_eq!(host[1], host[3], "{table}");
    assert_ne!(host[0], host[1], "{table}");
    let rankfile = std::fs::read_to_string(&rf).unwrap();
    assert!(rankfile.contains(&format!("rank 2={} slot=", host[2])), "{rankfile}");
    let hostfile = std::fs::read_to_string(&hosts).unwrap();
    let lines: Vec<&str> = hostfile.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines, host.iter().map(|h| format!("{h}:1")).collect::<Vec<_>>(), "{hostfile}");
}

#[test]
fn patterns_write_matrices_that_read_back() {
    let m = tmp("col.txt");
    let (out, text) = run(&["--pattern", "col-2d-w", "--ranks", "64", "--cluster", "magc-b", "--write-matrix", m.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let (out, text2) = run(&[m.to_str().unwrap(), "--cluster", "magc-b"]);
    assert_eq!(out.status.code(), Some(0), "{text2}");
    let magc = |t: &str| t.lines().find(|l| l.starts_with("magc")).map(|l| l.split_whitespace().nth(1).unwrap().to_string());
    assert_eq!(magc(&text), magc(&text2), "{text}\n{text2}");
}

/// `--cluster host`: this machine's cores (hwloc), on as many nodes as asked.
#[test]
fn maps_onto_this_host() {
    let (out, text) = run(&["--pattern", "3d-3d", "--ranks", "2", "--cluster", "host", "--nodes", "2", "--network-gbs", "1.25"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("on this-host (2 nodes x"), "{text}");
}

#[test]
fn bad_input_is_reported_with_its_place() {
    let bad = tmp("bad.txt");
    std::fs::write(&bad, "sluice-matrix 1\nranks 4\ncpu 0 9 10 1\n").unwrap();
    let (out, text) = run(&[bad.to_str().unwrap(), "--cluster", "magc-a"]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("line 3") && text.contains("not in 0..4"), "{text}");
    let topo = tmp("bad.toml");
    std::fs::write(&topo, "nodes = 2\n[network]\ngbs = 1.0\n[cpu]\nlevels = [{ name = \"core\", arity = 2, gbs = 10.0 }]\ncolour = 3\n")
        .unwrap();
    let (out, text) = run(&["--pattern", "2d-2d", "--ranks", "4", "--topology", topo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("unknown field") && text.contains("line"), "{text}");
    let (out, text) = run(&["--pattern", "2d-2d", "--ranks", "65", "--cluster", "magc-a"]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("do not fit"), "{text}");
    let (out, text) = run(&["--pattern", "2d-4d", "--ranks", "4"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("usage"), "{text}");
    let (out, text) = run(&["--pattern", "2d-2d", "--ranks", "4"]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("--cluster"), "{text}");
    let (out, _) = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
}

/// `--heuristic` picks what places processes inside the nodes; every choice maps (and says so),
/// and an unknown one is a usage error.
#[test]
fn heuristics_of_phases_2_and_3() {
    let mut magc = Vec::new();
    for h in ["greedy", "scotch", "both"] {
        let (out, text) = run(&["--pattern", "3d-w-col", "--ranks", "64", "--cluster", "magc-a", "--heuristic", h]);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains(&format!("phases 2-3: {h} + refinement")), "{text}");
        let line = text.lines().find(|l| l.starts_with("magc")).unwrap_or_else(|| panic!("{text}")).to_string();
        magc.push(line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap());
    }
    // The busiest link of this pattern is a network link, placed by phase 1 (the same for all).
    assert!(magc.iter().all(|&x| x == magc[0]), "{magc:?}");
    let (out, text) = run(&["--pattern", "2d-2d", "--ranks", "4", "--cluster", "magc-b", "--heuristic", "scotch", "--no-refine"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("phases 2-3: scotch;"), "{text}");
    let (out, text) = run(&["--pattern", "2d-2d", "--ranks", "4", "--cluster", "magc-b", "--heuristic", "metis"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("unknown heuristic") && text.contains("usage"), "{text}");
    let (out, text) = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text.contains("--heuristic greedy|scotch|both"), "{text}");
}

/// The shim preloaded into every MPI program must not load libscotch: only the mapper (this
/// tool) calls Scotch, and the linker (--as-needed) leaves libsluice.so without a NEEDED entry
/// for it as long as nothing its exports reach does.
#[test]
fn the_shim_does_not_need_libscotch() {
    let exe = std::env::current_exe().unwrap();
    let so = exe.parent().unwrap().parent().unwrap().join("libsluice.so");
    assert!(so.exists(), "{} missing: build the cdylib first", so.display());
    let out = Command::new("readelf").arg("-d").arg(&so).output().expect("readelf (binutils) runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
    assert!(!needed.is_empty(), "{dynamic}");
    assert!(needed.iter().all(|l| !l.contains("scotch")), "{}", needed.join("\n"));
    // The tool itself does use it.
    let out = Command::new("readelf").arg("-d").arg(env!("CARGO_BIN_EXE_sluice-map")).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("libscotch"));
}

mod common;

/// `scripts/sluice-gpu-bind` gives each rank its assigned GPU as `CUDA_VISIBLE_DEVICES`, under
/// the flavor's real launcher (the rank comes from the launcher's environment), leaves a rank
/// without a GPU alone, and stops a rank the assignment does not list.
#[test]
fn gpu_bind_exports_each_ranks_device() {
    let asg = tmp("gpu-assignment");
    std::fs::write(&asg, "# rank host core gpu\n0 h 0 3\n1 h 1 -\n2 h 0 5\n").unwrap();
    let bind = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/sluice-gpu-bind");
    let show = "echo \"gpu ${OMPI_COMM_WORLD_RANK:-$PMI_RANK} ${CUDA_VISIBLE_DEVICES:-none}\"";
    let job = common::launch_args(3, &bind, &[asg.to_str().unwrap(), "sh", "-c", show], &[], None);
    assert!(job.ok, "{}", job.all());
    for want in ["gpu 0 3", "gpu 1 none", "gpu 2 5"] {
        assert!(job.stdout.lines().any(|l| l == want), "missing '{want}':\n{}", job.all());
    }
    let job = common::launch_args(4, &bind, &[asg.to_str().unwrap(), "true"], &[], None);
    assert!(!job.ok && job.all().contains("rank 3 is not in"), "{}", job.all());
}
