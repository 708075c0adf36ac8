//! Runs the built `sluice-ddt-bench` briefly (singleton MPI_Init, no launcher) and checks what
//! `scripts/bench-ddt.sh` and `plot_ddt.py` rely on: it verifies sluice against the MPI before
//! timing, runs the paired rounds, and writes one CSV row per (case, direction, engine) with
//! a paired interval. No timing is judged here: the numbers are the benchmark's business.

use std::process::Command;

const HEADER: &str = "mpi,case,kernel,count,packed_bytes,block,dir,engine,median_gbs,best_gbs,samples,pair_median,pair_lo,pair_hi";

/// Runs the bench on `cases` with short budgets (plus `extra` arguments); returns the CSV rows
/// and the printed output.
fn run(cases: &str, extra: &[&str]) -> (Vec<Vec<String>>, String) {
    // One directory per call: the tests of this file run in parallel in one process.
    let tag = format!("{cases}{}", extra.join("")).replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let dir = std::env::temp_dir().join(format!("sluice-ddt-bench-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("out.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-ddt-bench"))
        .args(["--cases", cases, "--case-ms", "20", "--max-ms", "40", "--warm-us", "200", "--sample-us", "200"])
        .args(["--csv", csv.to_str().unwrap()])
        .args(extra)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("sluice-ddt-bench runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let body = std::fs::read_to_string(&csv).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some(HEADER));
    (lines.map(|l| l.split(',').map(str::to_string).collect()).collect(), text)
}

fn num(row: &[String], col: usize) -> f64 {
    row[col].parse().unwrap_or_else(|_| panic!("column {col} of {row:?} is not a number"))
}

#[test]
fn csv_has_every_engine_with_ordered_paired_intervals() {
    let (rows, text) = run("vec-8,struct-mix", &[]);
    assert!(!text.contains("A/A"), "{text}");
    assert_eq!(rows.len(), 2 * 2 * 3, "{rows:?}");
    for case in ["vec-8", "struct-mix"] {
        for dir in ["pack", "unpack"] {
            for engine in ["sluice", "mpi", "memcpy"] {
                let r = rows
                    .iter()
                    .find(|r| r[1] == case && r[6] == dir && r[7] == engine)
                    .unwrap_or_else(|| panic!("no row {case}/{dir}/{engine}"));
                assert_eq!(r[0], sluice::ffi::FLAVOR);
                let (med, lo, hi) = (num(r, 11), num(r, 12), num(r, 13));
                assert!(num(r, 8) > 0.0 && num(r, 9) >= num(r, 8), "{r:?}");
                assert!(num(r, 10) >= 6.0, "at least the minimum rounds: {r:?}");
                if engine == "sluice" {
                    assert_eq!((med, lo, hi), (1.0, 1.0, 1.0), "{r:?}");
                } else {
                    assert!(0.0 < lo && lo <= med && med <= hi, "{r:?}");
                }
            }
        }
    }
    // Every engine of a case is sampled once per round, so all have the same number of samples.
    let n: Vec<&String> = rows.iter().filter(|r| r[1] == "vec-8").map(|r| &r[10]).collect();
    assert!(n.iter().all(|x| *x == n[0]), "{n:?}");
}

#[test]
fn aa_run_times_the_mpi_engine_in_both_columns() {
    let (rows, text) = run("lu-5", &["--aa"]);
    assert!(text.contains("A/A run: the sluice columns are the MPI's engine too"), "{text}");
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert!(rows.iter().all(|r| r[1] == "lu-5"));
}

/// The shape sweep's fixed seeds (issue 28), correctness only: every generated shape is packed
/// and unpacked by sluice's engine and by the MPI's, and the bytes must agree (the bench exits
/// non-zero on the first difference). Three seeds x 150 shapes, one process each, all at once
/// (each runs on one core: together they take about two thirds of the time one after another on
/// CI's two cores); no timing.
#[test]
fn sweep_shapes_pack_and_unpack_like_the_mpi() {
    let seeds = ["11", "12", "13"];
    let children: Vec<_> = seeds
        .iter()
        .map(|seed| {
            Command::new(env!("CARGO_BIN_EXE_sluice-ddt-bench"))
                .args(["--sweep", seed, "--shapes", "150", "--check-only"])
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("sluice-ddt-bench starts")
        })
        .collect();
    for (seed, child) in seeds.into_iter().zip(children) {
        let out = child.wait_with_output().expect("sluice-ddt-bench runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}:\n{text}");
        assert!(text.contains("# 150 cases verified against the MPI's engine"), "seed {seed}:\n{text}");
        // Every shape is described (how to rebuild it), and the sweep spans the nesting depths.
        assert_eq!(text.lines().filter(|l| l.starts_with(&format!("# s{seed}:"))).count(), 150, "{text}");
        for depth in 1..=4 {
            let d = text.lines().filter(|l| l.starts_with("# s") && l.matches(" of ").count() == depth).count();
            assert!(d > 0, "seed {seed}: no shape with {depth} levels:\n{text}");
        }
    }
}

/// `--chooser` times sluice as MPI_Pack/MPI_Unpack serve a type (the engine choice learned in
/// the warm-up): the rows are complete and the kernel column names the choice.
#[test]
fn chooser_rows_name_the_kernel_and_the_choice() {
    let (rows, _) = run("vec-8,s3:5", &["--chooser"]);
    assert_eq!(rows.len(), 2 * 2 * 3, "{rows:?}");
    for r in &rows {
        assert!(!r[2].is_empty() && (!r[2].contains('+') || r[2].contains("+mpi")), "{r:?}");
    }
}
