//! `SLUICE_PROFILE`: the communication matrix of `tests/c/profile_patterns.c` (a ring of sends,
//! a nonblocking neighbour exchange, persistent sends started 3 times, an alltoallv, rooted
//! collectives from non-zero roots, a sub-communicator with reversed ranks, a neighbourhood
//! alltoallv on a Cartesian line, a nonblocking alltoall, 4 threads sending at once) at 2 and 4
//! ranks, compared exactly with the one the patterns give; the mapper reads the file; no file
//! without the variable; an unwritable path is reported, and the job still succeeds.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::path::PathBuf;

use sluice::mapping::matrix::{CommMatrix, Kind};

type Pairs = BTreeMap<(usize, usize), (f64, u64)>;

/// The matrix `profile_patterns.c` must give at `n` ranks (see its header).
fn expected(n: usize) -> Pairs {
    let mut m = Pairs::new();
    let mut add = |from: usize, to: usize, bytes: usize, msgs: u64| {
        assert_ne!(from, to);
        let e = m.entry((from, to)).or_default();
        e.0 += bytes as f64;
        e.1 += msgs;
    };
    for r in 0..n {
        let (right, left) = ((r + 1) % n, (r + n - 1) % n);
        add(r, right, 4 * (100 + r), 1); // ring of MPI_Send
        add(r, right, 8 * 10 * (r + 1), 1); // MPI_Isend
        add(r, left, 8 * 10 * (r + 1), 1);
        add(r, right, 3 * 7 * (r + 1), 3); // persistent, started 3 times
        for j in (0..n).filter(|&j| j != r) {
            add(r, j, 4 * (1 + r * n + j), 1); // alltoallv
        }
        if r == n - 1 {
            for j in 0..n - 1 {
                add(r, j, 8 * 33, 1); // bcast
                add(r, j, 4 * 3, 1); // scatter
            }
        }
        if r != 1 {
            add(r, 1, 2 * 6, 1); // gather
            add(r, 1, 4 * (5 + r), 1); // gatherv
        }
        let s = n - 1 - r; // sub-communicator rank
        add(r, n - 1 - (s + 1) % n, 50 + r, 1); // sendrecv to sub rank s + 1
        if r != n - 1 {
            add(r, n - 1, 8 * 2, 1); // gather to sub rank 0
        }
        if r > 0 {
            add(r, r - 1, 4 * (4 + r), 1); // neighbor alltoallv on a line
        }
        if r + 1 < n {
            add(r, r + 1, 4 * (4 + r), 1);
        }
        for j in (0..n).filter(|&j| j != r) {
            add(r, j, 3, 1); // ialltoall
        }
        for t in 0..4 {
            add(r, right, 20 * 4 * (1 + t), 20); // 4 threads, 20 sends each
        }
    }
    m
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("profile-{FLAVOR}"));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn profile_matches_known_patterns_and_maps() {
    let exe = compile_c("profile_patterns");
    for np in [2usize, 4] {
        let prefix = scratch(&format!("patterns-{np}"));
        let file = PathBuf::from(format!("{}.matrix", prefix.display()));
        let _ = std::fs::remove_file(&file);
        let job = launch_shim(np as u32, &exe, &[("SLUICE_PROFILE", prefix.to_str().unwrap())]);
        job.assert_pass("profile_patterns");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}\n{}", file.display(), job.all()));
        let m = CommMatrix::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(m.ranks(), np, "{text}");
        assert!(!m.has_gpu(), "no device buffers here:\n{text}");
        let got: Pairs = m
            .iter()
            .map(|(k, f, t, v)| {
                assert_eq!(k, Kind::Cpu);
                ((f, t), (v.bytes, v.messages))
            })
            .collect();
        let want = expected(np);
        for (pair, w) in &want {
            assert_eq!(got.get(pair), Some(w), "{np} ranks, pair {pair:?}:\n{text}");
        }
        assert_eq!(got, want, "{np} ranks:\n{text}");
        // The verdict's MPI_Allreduce of one int: the MPI picks its pattern, so it is only
        // counted as the rank's contribution.
        for r in 0..np {
            assert!(text.contains(&format!("# unattributed {r} cpu 4 1 gpu 0 0\n")), "rank {r}:\n{text}");
        }
        // The mapper reads it.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice-map"))
            .args([file.to_str().unwrap(), "--cluster", "magc-a"])
            .output()
            .expect("sluice-map runs");
        let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "sluice-map on the profile:\n{shown}\n{text}");
    }
}

#[test]
fn no_file_without_the_variable() {
    let exe = compile_c("profile_patterns");
    // Empty: off. A profile would be written to ".matrix" in the launcher's directory.
    let stray = std::env::current_dir().unwrap().join(".matrix");
    let _ = std::fs::remove_file(&stray);
    for env in [&[][..], &[("SLUICE_PROFILE", "")][..]] {
        let job = launch_shim(2, &exe, env);
        job.assert_pass("profile_patterns");
        assert!(!stray.exists(), "a profile was written without SLUICE_PROFILE:\n{}", job.all());
        assert!(!job.all().contains("SLUICE_PROFILE"), "{}", job.all());
    }
}

#[test]
fn an_unwritable_path_is_reported_and_the_job_succeeds() {
    let exe = compile_c("profile_patterns");
    let prefix = scratch("no-such-dir/app");
    let job = launch_shim(2, &exe, &[("SLUICE_PROFILE", prefix.to_str().unwrap())]);
    job.assert_pass("profile_patterns");
    assert!(job.stderr.contains("cannot write the communication matrix"), "{}", job.all());
}
