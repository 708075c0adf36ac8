//! Point-to-point thread stress (issue 21): `tests/c/p2p_thread_stress.c` runs 4 threads per
//! rank under `MPI_THREAD_MULTIPLE`, each exchanging pipelined and small, contiguous and
//! non-contiguous messages on its own tags with every send, receive, probe, completion,
//! cancel, free and persistent call; every byte and every status is checked by the program,
//! which ends with `sluice_p2p_outstanding` == 0 under sluice and prints
//! `p2p_thread_stress: OK (<n> checks)`.
//!
//! Bare MPI first (validates the program), then sluice at its defaults (the 300 and 600 KiB
//! messages are pipelined), with thresholds at their minimum (every message of at least 129
//! packed bytes pipelined, 64-byte chunks, two in flight), and the same without the
//! shared-memory arena (chunks through the MPI). 2 ranks; a few seconds per run.
//! `scripts/soak-threads.sh` repeats the sluice runs many times.

mod common;
use common::*;

const NAME: &str = "p2p_thread_stress";

const MIN: &[(&str, &str)] = &[("SLUICE_PIPELINE_THRESHOLD", "128"), ("SLUICE_PIPELINE_CHUNK", "64"), ("SLUICE_PIPELINE_DEPTH", "2")];
const MIN_NO_SHM: &[(&str, &str)] =
    &[("SLUICE_PIPELINE_THRESHOLD", "128"), ("SLUICE_PIPELINE_CHUNK", "64"), ("SLUICE_PIPELINE_DEPTH", "2"), ("SLUICE_SHM_ARENA", "off")];

fn assert_ok(what: &str, job: &Job) {
    let line = format!("{NAME}: OK (");
    assert!(job.ok && job.stdout.lines().any(|l| l.starts_with(&line)), "{NAME} ({what}) failed:\n{}", job.all());
    assert!(!job.stderr.contains("unknown variable"), "{NAME} ({what}): unknown setting\n{}", job.all());
}

#[test]
fn p2p_thread_stress() {
    let exe = compile_c(NAME);
    assert_ok("bare MPI, 2 ranks", &launch(2, &exe, &[], None));
    for env in [&[][..], MIN, MIN_NO_SHM] {
        let mut env = env.to_vec();
        env.push(("SLUICE_STATS", "1"));
        let job = launch_shim(2, &exe, &env);
        let what = format!("sluice, 2 ranks, {env:?}");
        assert_ok(&what, &job);
        // The large messages took the pipelined protocol (sender and receiver count each).
        let pipelined = job.stat_calls("p2p-pipeline").unwrap_or(0);
        assert!(pipelined > 0, "{what}: no pipelined transfer\n{}", job.all());
        // sluice logged no error (its diagnostics for handles tracked twice, docs/protocol.md).
        let logged = job.stderr.lines().any(|l| l.starts_with("[sluice") && l.contains("] error: "));
        assert!(!logged, "{what}: sluice logged an error\n{}", job.all());
    }
}
