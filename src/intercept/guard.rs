//! The single dispatch point of every intercepted call.
//!
//! [`call`] decides, from the runtime mode, between pure pass-through, the protocol handler,
//! and the instrumented handler (statistics, fault injection), and catches any panic so that no
//! unwinding crosses the C ABI: a panic becomes `MPI_ERR_INTERN` through the error handler of the
//! call's communicator. The fast path is one relaxed load and a branch.

use std::any::Any;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::errors;
use crate::ffi::{errclass, mpi};
use crate::runtime::{self, Mode};
use crate::stats::{self, Family};

/// Static description of one intercepted function.
#[derive(Debug)]
pub struct FnInfo {
    /// The C name, e.g. `MPI_Send`.
    pub name: &'static str,
    /// Statistics family.
    pub family: Family,
}

/// Runs one intercepted call.
///
/// - `err_comm`: the communicator whose error handler reports a failure inside sluice.
/// - `bytes`: payload bytes, evaluated only after a successful call with statistics on (so an
///   invalid datatype is never queried before the MPI itself has validated it).
/// - `pass`: the call forwarded unchanged; `handle`: the protocol handler.
/// - `profile`: the call as `SLUICE_PROFILE` sees it (`intercept::profile`): given a function
///   that runs `handle`, runs it and counts what the call sent. Only the instrumented branch
///   calls it: in `Active` mode it is never built.
#[inline(always)]
pub fn call(
    info: &'static FnInfo,
    err_comm: impl FnOnce() -> mpi::MPI_Comm,
    bytes: impl FnOnce() -> u64,
    pass: impl FnOnce() -> c_int,
    handle: impl FnOnce() -> c_int,
    profile: impl FnOnce(&mut dyn FnMut() -> c_int) -> c_int,
) -> c_int {
    let result = match runtime::mode() {
        Mode::Active => catch_unwind(AssertUnwindSafe(handle)),
        Mode::PassThrough => catch_unwind(AssertUnwindSafe(pass)),
        mode => catch_unwind(AssertUnwindSafe(|| slow_path(info, mode, bytes, pass, handle, profile))),
    };
    match result {
        Ok(rc) => rc,
        Err(payload) => internal_error(info, err_comm, payload),
    }
}

/// Whether the exported functions' fast path may run: sluice is active without
/// instrumentation (statistics, profiling and fault injection need the full path).
#[inline(always)]
pub fn fast_path_open() -> bool {
    runtime::mode() == Mode::Active
}

#[cold]
#[inline(never)]
fn slow_path(
    info: &'static FnInfo,
    mode: Mode,
    bytes: impl FnOnce() -> u64,
    pass: impl FnOnce() -> c_int,
    handle: impl FnOnce() -> c_int,
    profile: impl FnOnce(&mut dyn FnMut() -> c_int) -> c_int,
) -> c_int {
    let mode = if mode == Mode::Uninit { lazy_start(info) } else { mode };
    match mode {
        Mode::Uninit | Mode::PassThrough => {
            if info.family == Family::Init {
                handle()
            } else {
                pass()
            }
        }
        Mode::Active => handle(),
        Mode::Instrumented => instrumented(info, bytes, handle, profile),
    }
}

/// MPI may have been initialized without passing through sluice's MPI_Init (MPICH's `mpi_f08`
/// calls `PMPI_Init` directly): start sluice at the first call made after that.
fn lazy_start(info: &FnInfo) -> Mode {
    if info.family == Family::Init || !errors::mpi_is_active() {
        return Mode::Uninit;
    }
    if let Err(e) = crate::protocol::init::start() {
        errors::raise(crate::ffi::consts::comm_world(), errclass::ERR_ARG, &e.to_string());
    }
    runtime::mode()
}

fn instrumented(
    info: &'static FnInfo,
    bytes: impl FnOnce() -> u64,
    handle: impl FnOnce() -> c_int,
    profile: impl FnOnce(&mut dyn FnMut() -> c_int) -> c_int,
) -> c_int {
    let cfg = runtime::config();
    if cfg.and_then(|c| c.test_panic.as_deref()) == Some(info.name) {
        panic!("SLUICE_TEST_PANIC: injected panic in {}", info.name);
    }
    // Profiling: the handler runs inside the call's hook, which counts what it sent.
    let run = || {
        if crate::protocol::profile::on() {
            let mut handle = Some(handle);
            profile(&mut || handle.take().map_or(errclass::ERR_INTERN, |h| h()))
        } else {
            handle()
        }
    };
    if !cfg.is_some_and(|c| c.stats) {
        return run();
    }
    let mpi0 = stats::thread_mpi_ns();
    let t0 = stats::now_ns();
    let rc = run();
    let total = stats::now_ns() - t0;
    let mpi = stats::thread_mpi_ns() - mpi0;
    let b = if rc == errclass::SUCCESS { bytes() } else { 0 };
    stats::record(info.family, b, total, mpi);
    rc
}

#[cold]
fn internal_error(info: &FnInfo, err_comm: impl FnOnce() -> mpi::MPI_Comm, payload: Box<dyn Any + Send>) -> c_int {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    // Computing the communicator cannot panic in practice (a copy or a constant), but this runs
    // outside any other guard, so stay defensive.
    let comm = catch_unwind(AssertUnwindSafe(err_comm)).unwrap_or_else(|_| crate::ffi::consts::comm_world());
    errors::raise(comm, errclass::ERR_INTERN, &format!("internal error in {}: {what}", info.name))
}

/// Payload size in bytes of `count` elements of `datatype` (0 when the size is unknown).
pub fn payload_bytes(count: i64, datatype: mpi::MPI_Datatype) -> u64 {
    let mut size: mpi::MPI_Count = 0;
    // SAFETY: only called after the MPI accepted `datatype` in a successful call; writes one
    // MPI_Count.
    let rc = unsafe { mpi::PMPI_Type_size_x(datatype, &mut size) };
    if rc != errclass::SUCCESS || count <= 0 || size <= 0 {
        0
    } else {
        (count as u64).saturating_mul(size as u64)
    }
}
