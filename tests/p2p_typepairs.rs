//! Randomized type-pair conformance (issue 21, scope item 2): `tests/c/p2p_typepairs.c` builds,
//! for each pair index, two random nested derived types of one base with the same signature and
//! different shapes, message sizes below, on and above every protocol threshold, and one
//! communication pattern, all from (seed, index). Every receive prints a digest line (status
//! fields, counts, an FNV-1a checksum of the whole receive allocation, probe results), every send
//! and auxiliary call its return class. Under sluice the digest lines must be the bare MPI's, line
//! for line (the program orders them: ranks gathered in rank order, each rank's records in program
//! order, completion arrays in slot order).
//!
//! This runs a fixed-seed slice at 2 and 4 ranks, bare (which must also pass the program's own
//! check against PMPI_Pack/PMPI_Unpack images) and with sluice at default settings and at minimum
//! thresholds, with and without the shared-memory arena. `scripts/soak-typepairs.sh` runs the same
//! comparison over many seeds.
//!
//! What is compared: every field of every line. The generator avoids what the standard leaves to
//! the implementation: truncation (receives always hold the whole message), overlapping receive
//! types, heterogeneous signatures. `status.MPI_ERROR` is compared too: single-completion calls
//! must leave it alone (MPI-3.1 3.2.5), and the bare MPI's behaviour is deterministic.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

const SEED: &str = "20261125";

/// (ranks, first pair, pairs): a few hundred pairs in all.
const SLICES: [(u32, &str, &str); 2] = [(2, "0", "220"), (4, "100000", "120")];

const MIN_THRESHOLDS: &[(&str, &str)] =
    &[("SLUICE_PIPELINE_THRESHOLD", "128"), ("SLUICE_PIPELINE_CHUNK", "64"), ("SLUICE_PIPELINE_DEPTH", "2")];
const MIN_THRESHOLDS_THREAD: &[(&str, &str)] = &[
    ("SLUICE_PIPELINE_THRESHOLD", "128"),
    ("SLUICE_PIPELINE_CHUNK", "64"),
    ("SLUICE_PIPELINE_DEPTH", "2"),
    ("SLUICE_PROGRESS_THREAD", "1"),
];
const MIN_THRESHOLDS_NO_ARENA: &[(&str, &str)] =
    &[("SLUICE_PIPELINE_THRESHOLD", "128"), ("SLUICE_PIPELINE_CHUNK", "64"), ("SLUICE_PIPELINE_DEPTH", "2"), ("SLUICE_SHM_ARENA", "off")];

/// Digest lines by pair index, in output order.
type Digests = BTreeMap<u64, Vec<String>>;

fn digests(job: &Job) -> Digests {
    let mut m = Digests::new();
    for l in job.stdout.lines() {
        if !(l.starts_with("D ") || l.starts_with("S ") || l.starts_with("A ")) {
            continue;
        }
        let i = l.split_whitespace().find_map(|f| f.strip_prefix("i=")).and_then(|v| v.parse().ok()).expect("pair index");
        m.entry(i).or_default().push(l.to_string());
    }
    m
}

fn exe() -> std::path::PathBuf {
    compile_c("p2p_typepairs")
}

fn slice_env(first: &'static str, count: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![("TYPEPAIRS_SEED", SEED), ("TYPEPAIRS_FIRST", first), ("TYPEPAIRS_COUNT", count)]
}

/// The bare MPI's digests of each slice, computed once per test process.
fn bare(np: u32) -> &'static Digests {
    static BARE: OnceLock<Vec<(u32, Digests)>> = OnceLock::new();
    let all = BARE.get_or_init(|| {
        let exe = exe();
        SLICES
            .iter()
            .map(|&(np, first, count)| {
                let job = launch(np, &exe, &slice_env(first, count), None);
                assert!(
                    job.ok && job.stdout.contains(&format!("pairs {count} failures 0")),
                    "bare MPI run of the type-pair slice failed its own checks ({np} ranks):\n{}",
                    job.all()
                );
                let d = digests(&job);
                assert_eq!(d.len(), count.parse::<usize>().unwrap(), "bare run printed every pair");
                (np, d)
            })
            .collect()
    });
    &all.iter().find(|(n, _)| *n == np).unwrap().1
}

fn replay(np: u32, exe: &Path, env: &[(&str, &str)], index: u64) -> String {
    let so = shim();
    let mut s = String::new();
    if FLAVOR == "openmpi" {
        s += &format!("mpirun.openmpi --oversubscribe --allow-run-as-root -np {np} -x LD_PRELOAD={}", so.display());
        for (k, v) in env {
            s += &format!(" -x {k}={v}");
        }
    } else {
        s += &format!("mpiexec.mpich -np {np} -env LD_PRELOAD {}", so.display());
        for (k, v) in env {
            s += &format!(" -env {k} {v}");
        }
    }
    s + &format!(" {} {SEED} 1 {index}", exe.display())
}

/// Runs every slice under sluice with `env` and compares with the bare MPI, pair by pair.
fn compare(what: &str, env: &[(&str, &str)]) {
    let exe = exe();
    let mut report = Vec::new();
    for &(np, first, count) in &SLICES {
        let want = bare(np);
        let mut e = slice_env(first, count);
        e.extend_from_slice(env);
        let job = launch_shim(np, &exe, &e);
        let got = digests(&job);
        let differing: Vec<u64> = want.iter().filter(|(i, lines)| got.get(i) != Some(lines)).map(|(i, _)| *i).collect();
        if let Some(&i) = differing.first() {
            let none = Vec::new();
            let (w, g) = (&want[&i], got.get(&i).unwrap_or(&none));
            let shown: Vec<String> = differing.iter().take(30).map(|i| i.to_string()).collect();
            report.push(format!(
                "{what}, {np} ranks: {} of {count} pairs differ from the bare MPI ({}{}); first: pair {i}\n  bare:\n    {}\n  sluice:\n    {}\n  replay: {}\n  describe: {} {SEED} 1 {i} -d",
                differing.len(),
                shown.join(" "),
                if differing.len() > 30 { " ..." } else { "" },
                w.join("\n    "),
                if g.is_empty() { "(nothing: the run stopped before this pair)".to_string() } else { g.join("\n    ") },
                replay(np, &exe, env, i),
                exe.display()
            ));
        }
        let closing = format!("pairs {count} failures 0");
        if !(job.ok && job.stdout.contains(&closing)) {
            let err: Vec<&str> = job.stderr.lines().filter(|l| !l.starts_with("  ")).take(12).collect();
            report.push(format!(
                "{what}, {np} ranks: the run {} (self-check failures, leaks or an abort); stderr begins:\n    {}",
                if job.ok { "did not end with 0 failures" } else { "failed" },
                err.join("\n    ")
            ));
        }
    }
    assert!(report.is_empty(), "\n{}\n", report.join("\n\n"));
}

#[test]
fn bare_mpi_passes_its_own_checks() {
    for &(np, _, _) in &SLICES {
        bare(np);
    }
}

#[test]
fn sluice_default_settings() {
    compare("sluice, default settings", &[]);
}

#[test]
fn sluice_minimum_thresholds() {
    compare("sluice, minimum thresholds", MIN_THRESHOLDS);
}

#[test]
fn sluice_minimum_thresholds_no_arena() {
    compare("sluice, minimum thresholds, SLUICE_SHM_ARENA=off", MIN_THRESHOLDS_NO_ARENA);
}

#[test]
fn sluice_minimum_thresholds_progress_thread() {
    // Every pipelined transfer also advanced by a progress thread, concurrently with the
    // application's own calls (SLUICE_PROGRESS_THREAD, docs/architecture.md "Progress").
    compare("sluice, minimum thresholds, SLUICE_PROGRESS_THREAD=1", MIN_THRESHOLDS_THREAD);
}
