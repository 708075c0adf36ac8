//! Runs the built `sluice-info` binary without MPI_Init or a launcher.

use std::process::{Command, Output};

use sluice::config::PARAMS;

/// Runs sluice-info with `args`, with every SLUICE_* variable of the test's environment removed
/// and `env` added.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice-info"));
    cmd.args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SLUICE_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("sluice-info runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out, text)
}

#[test]
fn default_output_lists_build_params_and_hardware() {
    let (out, text) = run(&[], &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for p in PARAMS {
        assert!(text.contains(p.name), "missing {}:\n{text}", p.name);
    }
    assert!(text.contains(sluice::ffi::FLAVOR), "{text}");
    assert!(text.contains("cores"), "{text}");
    assert!(text.contains("Current environment: ok"), "{text}");
}

#[test]
fn invalid_environment_exits_1_and_names_the_variable() {
    let (out, text) = run(&[], &[("SLUICE_STATS", "maybe")]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("SLUICE_STATS=\"maybe\""), "{text}");
    // Everything is still printed.
    assert!(text.contains("Hardware") && text.contains("cores"), "{text}");
}

#[test]
fn unknown_variables_are_listed() {
    let (out, text) = run(&["--config"], &[("SLUICE_STAT", "1")]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = text.lines().find(|l| l.starts_with("Unknown SLUICE_*")).expect("unknown-variables line");
    assert!(line.ends_with(": SLUICE_STAT"), "{text}");
}

#[test]
fn config_flag_omits_hardware() {
    let (out, text) = run(&["--config"], &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("SLUICE_LOG"), "{text}");
    assert!(!text.contains("Hardware") && !text.contains("cores"), "{text}");
}

#[test]
fn hw_flag_prints_hardware_only() {
    let (out, text) = run(&["--hw"], &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("cores") && text.contains("CUDA") && text.contains("RDMA"), "{text}");
    assert!(text.contains("multi-level disk I/O"), "{text}");
    assert!(!text.contains("SLUICE_LOG"), "{text}");
}

#[test]
fn help_and_bad_usage() {
    let (out, text) = run(&["--help"], &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("--config") && text.contains("--hw"), "{text}");
    let (out, text) = run(&["--bogus"], &[]);
    assert_eq!(out.status.code(), Some(2), "{text}");
}

#[test]
fn calibration_writes_a_model_that_is_then_shown() {
    let path = std::env::temp_dir().join(format!("sluice-info-cal-{}/model.toml", std::process::id()));
    let p = path.to_str().unwrap();
    let (out, text) = run(&["--model"], &[("SLUICE_CALIBRATION", p)]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("Machine model") && text.contains("built-in"), "{text}");
    let (out, text) = run(&["--calibrate"], &[("SLUICE_CALIBRATION", p)]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(path.exists() && text.contains("wrote"), "{text}");
    let (_, text) = run(&[], &[("SLUICE_CALIBRATION", p)]);
    assert!(text.contains(&format!("Machine model (sluice_copy, docs/runtime.md): {p}")) && text.contains("DiskRead"), "{text}");
    // The request cost is fitted to copies through the runtime (not the default's line).
    assert!(text.contains("request cost: ") && !text.contains("us (default)"), "{text}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
