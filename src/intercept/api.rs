//! sluice's own extension API, declared in `include/sluice.h`.

use std::ffi::{c_char, c_int};

use crate::runtime::{self, Mode};

/// Version as a NUL-terminated string.
static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

fn guarded(f: impl FnOnce() -> c_int) -> c_int {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(-1)
}

/// `sluice_version`: writes major, minor and patch (each pointer may be NULL); returns 0.
///
/// # Safety
/// Non-null pointers must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn sluice_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> c_int {
    let parts = [
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    ];
    for (p, v) in [major, minor, patch].into_iter().zip(parts) {
        if !p.is_null() {
            // SAFETY: caller promises `p` is writable when non-null.
            unsafe { *p = v.parse().unwrap_or(0) };
        }
    }
    0
}

/// `sluice_version_string`: "MAJOR.MINOR.PATCH", static storage.
#[no_mangle]
pub extern "C" fn sluice_version_string() -> *const c_char {
    VERSION.as_ptr().cast()
}

/// `sluice_mpi_flavor`: "openmpi" or "mpich", the ABI this library was built for.
#[no_mangle]
pub extern "C" fn sluice_mpi_flavor() -> *const c_char {
    match crate::ffi::FLAVOR {
        "openmpi" => c"openmpi".as_ptr(),
        _ => c"mpich".as_ptr(),
    }
}

/// `sluice_enable`: resume interception; returns 1 if sluice is now active, else 0.
#[no_mangle]
pub extern "C" fn sluice_enable() -> c_int {
    guarded(|| runtime::enable() as c_int)
}

/// `sluice_disable`: every later call is a pure pass-through; returns 0.
#[no_mangle]
pub extern "C" fn sluice_disable() -> c_int {
    guarded(|| {
        runtime::disable();
        crate::protocol::datatype::forget_all();
        0
    })
}

/// `sluice_is_enabled`: 1 if calls currently go through sluice, else 0.
#[no_mangle]
pub extern "C" fn sluice_is_enabled() -> c_int {
    matches!(runtime::mode(), Mode::Active | Mode::Instrumented) as c_int
}

/// `sluice_stats_dump`: collective over MPI_COMM_WORLD; rank 0 prints the job-wide statistics
/// gathered so far. Returns 0, or -1 when MPI is not active.
#[no_mangle]
pub extern "C" fn sluice_stats_dump() -> c_int {
    guarded(|| {
        if !crate::errors::mpi_is_active() {
            return -1;
        }
        crate::protocol::init::gather_and_print_stats();
        0
    })
}
