//! Shared harness for the integration tests: compile MPI programs with the flavor's own
//! compiler wrappers and run them under the flavor's real launcher with `libsluice.so`
//! preloaded. Nothing is mocked.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// The flavor this test binary (and the shim next to it) was built for.
pub const FLAVOR: &str = env!("SLUICE_MPI");

/// MPI jobs oversubscribe the 2 cores; run one at a time per test binary.
static LAUNCH: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    LAUNCH.lock().unwrap_or_else(|e| e.into_inner())
}

/// `target/<dir>/<profile>/libsluice.so`, next to this test's `deps/` directory.
pub fn shim() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let so = profile_dir.join("libsluice.so");
    assert!(so.exists(), "{} missing: build the cdylib first (scripts/test.sh does)", so.display());
    so
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(FLAVOR);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Programs built by this test process: each is compiled once (tests run in parallel threads
/// and must never overwrite an executable another test is running).
static BUILT: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// Builds `out` from `src` once per process with `cmd` (which writes to `tmp`, then renamed).
fn build_once(src: &Path, out: PathBuf, cmd: impl FnOnce(&Path) -> Command) -> PathBuf {
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, o)) = built.iter().find(|(s, o)| s == src && *o == out) {
        return o.clone();
    }
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    run_checked(&mut cmd(&tmp), &format!("compiling {}", src.display()));
    std::fs::rename(&tmp, &out).unwrap();
    built.push((src.to_path_buf(), out.clone()));
    out
}

fn run_checked(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// Compiles `tests/c/<name>.c` with `mpicc.<flavor>`; returns the executable.
pub fn compile_c(name: &str) -> PathBuf {
    let src = repo().join("tests/c").join(format!("{name}.c"));
    build_once(&src.clone(), scratch().join(format!("{name}_c")), |out| {
        let mut c = Command::new(format!("mpicc.{FLAVOR}"));
        c.args(["-O1", "-Wall", "-Wno-stringop-overflow", "-pthread", "-I"]).arg(repo().join("tests/c")).arg(&src).arg("-o").arg(out);
        c
    })
}

/// Compiles `<dir>/<name>.c` (`dir` relative to the repository: `tests/c`, `examples`) against
/// sluice's header and links it with the shim (`-lsluice`, found at run time through its rpath):
/// programs that call sluice's own API.
pub fn compile_linked(dir: &str, name: &str) -> PathBuf {
    let src = repo().join(dir).join(format!("{name}.c"));
    let lib = shim().parent().unwrap().to_path_buf();
    build_once(&src.clone(), scratch().join(format!("{name}_linked")), |out| {
        let mut c = Command::new(format!("mpicc.{FLAVOR}"));
        c.args(["-O2", "-Wall", "-I"]).arg(repo().join("tests/c")).arg("-I").arg(repo().join("include")).arg(&src);
        c.arg("-L").arg(&lib).arg("-lsluice").arg("-lm").arg(format!("-Wl,-rpath,{}", lib.display())).arg("-o").arg(out);
        c
    })
}

/// Compiles `tests/c/<name>.c` into a shared library (a PMPI tool).
pub fn compile_c_tool(name: &str) -> PathBuf {
    let src = repo().join("tests/c").join(format!("{name}.c"));
    build_once(&src.clone(), scratch().join(format!("lib{name}.so")), |out| {
        let mut c = Command::new(format!("mpicc.{FLAVOR}"));
        c.args(["-shared", "-fPIC", "-O1"]).arg(&src).arg("-o").arg(out);
        c
    })
}

/// Compiles `tests/fortran/<file>` with `mpif90.<flavor>`, with `-D<define>` for each define.
pub fn compile_fortran(file: &str, defines: &[&str]) -> PathBuf {
    let src = repo().join("tests/fortran").join(file);
    let stem = Path::new(file).file_stem().unwrap().to_string_lossy().into_owned();
    let name = std::iter::once(stem.as_str()).chain(defines.iter().copied()).collect::<Vec<_>>().join("_");
    build_once(&src.clone(), scratch().join(format!("{name}_f")), |out| {
        let mut c = Command::new(format!("mpif90.{FLAVOR}"));
        c.args(["-O1", "-ffree-line-length-none", "-fallow-argument-mismatch", "-J"]).arg(scratch());
        for d in defines {
            c.arg(format!("-D{d}"));
        }
        c.arg(&src).arg("-o").arg(out);
        c
    })
}

/// Compiles `tests/fortran/<file>` with `mpif90.<flavor>` linked against the shim (programs
/// that call sluice's own API through the `sluice` module, include/sluice.f90).
pub fn compile_fortran_linked(file: &str) -> PathBuf {
    let src = repo().join("tests/fortran").join(file);
    let stem = Path::new(file).file_stem().unwrap().to_string_lossy().into_owned();
    let lib = shim().parent().unwrap().to_path_buf();
    build_once(&src.clone(), scratch().join(format!("{stem}_f_linked")), |out| {
        let mut c = Command::new(format!("mpif90.{FLAVOR}"));
        c.args(["-O1", "-ffree-line-length-none", "-J"]).arg(scratch()).arg(&src);
        c.arg("-L").arg(&lib).arg("-lsluice").arg("-lm").arg(format!("-Wl,-rpath,{}", lib.display())).arg("-o").arg(out);
        c
    })
}

/// Result of one MPI job.
pub struct Job {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Job {
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Calls counted for `family` in the statistics table rank 0 printed, if any.
    pub fn stat_calls(&self, family: &str) -> Option<u64> {
        self.stderr.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "[sluice]" && w.next()? == family).then(|| w.next()?.parse().ok())?
        })
    }

    pub fn assert_pass(&self, name: &str) {
        assert!(self.ok && self.stdout.contains(&format!("PASS {name}")), "job {name} failed:\n{}", self.all());
    }
}

/// Nodes of the emulated cluster the jobs run across: `SLUICE_CLUSTER_NODES`, set by
/// scripts/test.sh once `scripts/cluster.sh up` made the nodes (0 or unset: this node only).
/// Ranks are placed round-robin, so ranks 0 and 1 are always on different nodes.
pub fn cluster_nodes() -> u32 {
    std::env::var("SLUICE_CLUSTER_NODES").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Launches `exe` on `np` ranks with the flavor's launcher (across the emulated cluster's nodes
/// when [`cluster_nodes`] is nonzero); `env` is exported to every rank; `preload` becomes the
/// ranks' `LD_PRELOAD` (None: bare MPI). A 180 s timeout turns a hang into a failure.
pub fn launch(np: u32, exe: &Path, env: &[(&str, &str)], preload: Option<&str>) -> Job {
    launch_args(np, exe, &[], env, preload)
}

/// [`launch`] with command-line arguments for `exe`.
pub fn launch_args(np: u32, exe: &Path, args: &[&str], env: &[(&str, &str)], preload: Option<&str>) -> Job {
    let _guard = serial();
    let mut cmd = Command::new("timeout");
    cmd.arg("180");
    if cluster_nodes() > 0 {
        cmd.arg(repo().join("scripts/cluster.sh")).args(["run", "--"]);
    }
    let mut vars: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    if let Some(p) = preload {
        vars.push(("LD_PRELOAD".into(), p.into()));
    }
    if FLAVOR == "openmpi" {
        cmd.args(["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root", "-np", &np.to_string()]);
        for (k, v) in &vars {
            cmd.arg("-x").arg(format!("{k}={v}"));
            // MCA parameters reach mpirun too: some (binding, mapping) are the launcher's.
            if k.starts_with("OMPI_MCA_") {
                cmd.env(k, v);
            }
        }
    } else {
        cmd.args(["mpiexec.mpich", "-np", &np.to_string()]);
        for (k, v) in &vars {
            cmd.args(["-env", k, v]);
        }
    }
    cmd.arg(exe).args(args);
    collect(cmd.output().expect("launcher"))
}

/// Launches with the shim preloaded. `SLUICE_CLUSTER_JOB_ENV` (`NAME=VALUE,...`, set by
/// scripts/test.sh for a second pass of some suites across nodes) adds settings to every such
/// job, below the test's own: the suites then run at the minimum pipeline thresholds too.
pub fn launch_shim(np: u32, exe: &Path, env: &[(&str, &str)]) -> Job {
    let so = shim();
    let extra = std::env::var("SLUICE_CLUSTER_JOB_ENV").unwrap_or_default();
    let mut all: Vec<(&str, &str)> =
        extra.split(',').filter_map(|kv| kv.split_once('=')).filter(|(k, _)| !env.iter().any(|(e, _)| e == k)).collect();
    all.extend_from_slice(env);
    launch(np, exe, &all, Some(so.to_str().unwrap()))
}

pub fn collect(out: Output) -> Job {
    Job {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
