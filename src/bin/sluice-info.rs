//! `sluice-info`: what this sluice build is, how it is configured, and what hardware it sees.
//!
//! Runs without `MPI_Init` and without a launcher. Exit status: 0, or 1 when the `SLUICE_*`
//! environment would be rejected at `MPI_Init` (everything is still printed), 2 on bad usage.

use std::ffi::{c_char, c_int};
use std::path::PathBuf;
use std::process::ExitCode;

use sluice::config::{Config, Param, PARAMS};
use sluice::ffi::{mpi, FLAVOR};

const USAGE: &str = "\
Usage: sluice-info [OPTION]
Show the sluice build, its SLUICE_* parameters and the hardware it detects.

  -c, --config   parameters and validation of the current environment only
      --hw       hardware only
      --model    the machine model sluice_copy plans with (SLUICE_CALIBRATION)
      --calibrate
                 measure this host's channels and write the model file that
                 SLUICE_CALIBRATION names (auto: ~/.cache/sluice/model-<host>.toml)
  -h, --help     this help

With no option everything is printed. Exit status: 0; 1 if the current SLUICE_*
environment is invalid (not checked with --hw, --model), or calibration failed;
2 on a usage error.";

/// Which sections to print.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    All,
    Config,
    Hardware,
    Model,
    Calibrate,
}

fn parse_args(args: &[String]) -> Result<Option<Mode>, String> {
    match args {
        [] => Ok(Some(Mode::All)),
        [a] => match a.as_str() {
            "-h" | "--help" => Ok(None),
            "-c" | "--config" => Ok(Some(Mode::Config)),
            "--hw" => Ok(Some(Mode::Hardware)),
            "--model" => Ok(Some(Mode::Model)),
            "--calibrate" => Ok(Some(Mode::Calibrate)),
            other => Err(format!("unknown option {other:?}")),
        },
        _ => Err("at most one option is accepted".to_string()),
    }
}

/// The MPI library's own version string; needs no `MPI_Init`.
fn mpi_library_version() -> String {
    let mut buf = vec![0 as c_char; mpi::MPI_MAX_LIBRARY_VERSION_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: MPI_Get_library_version may be called before MPI_Init; `buf` holds
    // MPI_MAX_LIBRARY_VERSION_STRING characters (plus one spare) and `len` is a valid out-pointer.
    let rc = unsafe { mpi::PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    if rc != sluice::ffi::errclass::SUCCESS {
        return format!("(PMPI_Get_library_version failed with code {rc})");
    }
    let len = usize::try_from(len).unwrap_or(0).min(buf.len());
    let bytes: Vec<u8> = buf[..len].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).trim_end_matches(['\0', '\n', ' ']).to_string()
}

/// Cuts a line (MPICH's configure line runs to thousands of characters) to a readable width.
fn shorten(line: &str) -> String {
    const MAX: usize = 110;
    let line = line.replace('\t', " ");
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// `libsluice.so` next to this executable (cargo puts both in the same directory).
fn library_path() -> Option<PathBuf> {
    let lib = std::env::current_exe().ok()?.parent()?.join("libsluice.so");
    lib.is_file().then_some(lib)
}

fn print_build() {
    println!("sluice {}", env!("CARGO_PKG_VERSION"));
    println!("  MPI flavor:   {FLAVOR}");
    let version = mpi_library_version();
    let mut lines = version.lines();
    println!("  MPI library:  {}", shorten(lines.next().unwrap_or("")));
    lines.filter(|l| !l.trim().is_empty()).for_each(|l| println!("                {}", shorten(l.trim())));
    match library_path() {
        Some(p) => println!("  library:      {}", p.display()),
        None => println!("  library:      (libsluice.so not found next to this executable)"),
    }
}

/// The variable's value as set in the environment, or "(default)".
fn current_value(name: &str) -> String {
    match std::env::var_os(name) {
        Some(v) => format!("{:?}", v.to_string_lossy()),
        None => "(default)".to_string(),
    }
}

fn print_param(p: &Param) {
    let default = if p.default.is_empty() { "(empty)".to_string() } else { format!("{:?}", p.default) };
    println!("  {}", p.name);
    println!("      default:  {default}");
    println!("      current:  {}", current_value(p.name));
    println!("      accepted: {}", p.accepted);
    println!("      {}", p.doc);
}

/// Prints the parameter table and the validation verdict; returns whether the environment is valid.
fn print_config() -> bool {
    println!("Parameters");
    PARAMS.iter().for_each(print_param);
    println!();
    let result = Config::from_env();
    match &result {
        Ok(_) => println!("Current environment: ok"),
        Err(e) => println!("Current environment: INVALID: {e}"),
    }
    let env_names = std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned());
    let unknown = Config::unknown_vars(env_names);
    if unknown.is_empty() {
        println!("Unknown SLUICE_* variables: none");
    } else {
        println!("Unknown SLUICE_* variables (ignored; typos?): {}", unknown.join(", "));
    }
    result.is_ok()
}

fn print_hardware() {
    println!("Hardware");
    print!("{}", sluice::hw::detect());
    // What the datatype kernels chose for this CPU (docs/architecture.md, "Prefetch policies"
    // and "Streaming stores").
    use sluice::datatype::kernel::{streaming_min, Isa, Tuning};
    let t = Tuning::host();
    println!(
        "  datatype kernels: {:?} level, prefetch policy {:?}, block copy {:?}, unpacks of {} KiB or more stream",
        Isa::host(),
        t.prefetch,
        t.block_copy,
        streaming_min() >> 10
    );
    println!("  registration backends (docs/firehose.md):");
    for b in sluice::pin::backend::report() {
        println!("    {:<18} {}{}", b.name, if b.used { "" } else { "not used: " }, b.detail);
    }
    let hooks = match sluice::pin::hooks::probe() {
        Ok(how) => how.to_string(),
        Err(why) => format!("unavailable ({why}): pinned buckets are not cached between operations"),
    };
    println!("    invalidation       {hooks}");
    println!(
        "  multi-level disk I/O (docs/levels.md): {}",
        match sluice::levels::io::backend() {
            "io_uring" => "io_uring (one ring, one thread)",
            _ => "a pool of pread/pwrite threads (no io_uring here)",
        }
    );
}

/// `SLUICE_CALIBRATION` as set (None: auto).
fn calibration_setting() -> Option<String> {
    std::env::var("SLUICE_CALIBRATION").ok().filter(|v| v != "auto" && !v.is_empty())
}

fn print_model() {
    use sluice::transfer::runtime;
    let (model, from) = runtime::load_model(calibration_setting().as_deref());
    println!("Machine model (sluice_copy, docs/runtime.md): {from}");
    println!("  space threshold: {} bytes", model.threshold());
    match model.request_cost() {
        Some(c) => println!("  request cost: {:.2} us", c * 1e6),
        None => println!("  request cost: {:.2} us (default)", sluice::transfer::runtime::DEFAULT_REQUEST_COST * 1e6),
    }
    for c in model.channels() {
        let pts: Vec<String> = c.curve.points().map(|(r, t)| format!("{r:.0} B: {:.2} GB/s", t / 1e9)).collect();
        println!("  {:?} {} -> {}: {}", c.kind, model.memory(c.src).name, model.memory(c.dst).name, pts.join(", "));
    }
}

/// Whether a launcher started this process as an MPI rank (Open MPI's `mpirun`, MPICH's Hydra
/// `mpiexec`, or a PMI-based launcher such as `srun`).
fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

/// Initializes the MPI through sluice (its `MPI_Init`: the pipeline and the shared-memory
/// arena start as in an application), measures the MPI's paths between ranks 0 and 1 (every
/// rank takes part) and, when they share a node, the same typed messages through sluice's
/// arena path, finalizes; returns this rank and rank 0's curves.
fn measure_mpi() -> Result<(c_int, Option<sluice::transfer::mpi_calibrate::MpiCurves>), String> {
    use sluice::transfer::mpi_calibrate;
    let mut rank = 0;
    if sluice::tools::init() != 0 {
        return Err("MPI_Init failed".into());
    }
    // SAFETY: MPI is initialized; writes one int.
    unsafe { mpi::PMPI_Comm_rank(sluice::ffi::consts::comm_world(), &mut rank) };
    let mut r = mpi_calibrate::measure();
    // Collective over MPI_COMM_WORLD; ranks 0 and 1 measure when they share a node.
    let local = matches!(&r, Ok(Some(c)) if c.peer_kind == "peer");
    if let Some(calls) = sluice::tools::arena_calls() {
        if local {
            match mpi_calibrate::measure_typed(&calls) {
                Ok(a) => {
                    if let Ok(Some(c)) = &mut r {
                        c.arena = a;
                    }
                }
                Err(e) => r = Err(e),
            }
        }
        sluice::tools::free_comm(calls.comm);
    }
    sluice::tools::finalize();
    r.map(|c| (rank, c))
}

fn calibrate() -> ExitCode {
    use sluice::transfer::runtime::{calibrate, model_path};
    let Some(path) = model_path(calibration_setting().as_deref()) else {
        eprintln!("sluice-info: no place for the model: set SLUICE_CALIBRATION to a path (HOME is not set)");
        return ExitCode::FAILURE;
    };
    let scratch = path.parent().map(|p| p.to_path_buf()).unwrap_or_else(std::env::temp_dir);
    let _ = std::fs::create_dir_all(&scratch);
    let host = sluice::transfer::node::host_name();
    // Under an MPI launcher the MPI's own paths are measured too, between ranks 0 and 1; rank 0
    // measures the local channels and writes the model, the others only take part.
    let mpi = match launched_by_mpi().then(measure_mpi) {
        None => None,
        Some(Ok((0, curves))) => curves,
        Some(Ok((_, _))) => return ExitCode::SUCCESS,
        Some(Err(e)) => {
            eprintln!("sluice-info: calibration of the MPI's paths failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    if mpi.is_none() {
        println!("(the MPI's own paths are measured when run as two ranks: mpirun -np 2 sluice-info --calibrate)");
    }
    match calibrate::measure(&scratch, &host, mpi.as_ref()).and_then(|text| calibrate::write_atomically(&path, &text)) {
        Ok(()) => {
            println!("wrote {}", path.display());
            std::env::set_var("SLUICE_CALIBRATION", &path);
            print_model();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sluice-info: calibration failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    // SAFETY: restoring the default SIGPIPE action before any thread exists, so that
    // `sluice-info | head` ends quietly like other command-line tools instead of panicking.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let mode = match parse_args(&args) {
        Ok(Some(mode)) => mode,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("sluice-info: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match mode {
        Mode::Model => {
            print_model();
            return ExitCode::SUCCESS;
        }
        Mode::Calibrate => return calibrate(),
        _ => {}
    }
    let mut valid = true;
    if mode == Mode::All {
        print_build();
        println!();
    }
    if mode != Mode::Hardware {
        valid = print_config();
    }
    if mode != Mode::Config {
        if mode == Mode::All {
            println!();
        }
        print_hardware();
    }
    if mode == Mode::All {
        println!();
        print_model();
    }
    if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
