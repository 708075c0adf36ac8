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
    let parts = [env!("CARGO_PKG_VERSION_MAJOR"), env!("CARGO_PKG_VERSION_MINOR"), env!("CARGO_PKG_VERSION_PATCH")];
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

/// `sluice_disable`: every later call is a pure pass-through; returns 0. Returns -1 and changes
/// nothing while sluice still owns point-to-point requests (their data would never be unpacked
/// by a pass-through completion call).
#[no_mangle]
pub extern "C" fn sluice_disable() -> c_int {
    guarded(|| {
        if crate::protocol::p2p::ops::any()
            || crate::protocol::p2p::pipeline::track::any()
            || crate::protocol::p2p::pipeline::send::in_flight()
        {
            return -1;
        }
        runtime::disable();
        crate::protocol::datatype::forget_all();
        // MPI_Finalize passes straight through while disabled: stop the workers now.
        crate::protocol::parallel::shutdown();
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

/// `sluice_type_keyval`: the datatype keyval of hint `which` (`SLUICE_HINT_PARALLEL` 0,
/// `SLUICE_HINT_EPSILON` 1, `SLUICE_HINT_PRIORITY` 2), or `MPI_KEYVAL_INVALID` before MPI_Init,
/// after an MPI_Finalize sluice saw, with `SLUICE_DISABLE=1`, and for any other `which`.
#[no_mangle]
pub extern "C" fn sluice_type_keyval(which: c_int) -> c_int {
    std::panic::catch_unwind(|| crate::protocol::hints::keyval(which)).unwrap_or(crate::protocol::hints::INVALID)
}

/// `sluice_p2p_outstanding`: requests sluice's point-to-point protocol still tracks and staging
/// buffers in use (both 0 once every request completed or was freed). Null pointers are
/// skipped. Returns 0.
#[no_mangle]
pub extern "C" fn sluice_p2p_outstanding(requests: *mut std::ffi::c_long, staging_buffers: *mut std::ffi::c_long) -> c_int {
    guarded(|| {
        let (r, b) = crate::protocol::p2p::outstanding();
        // SAFETY: non-null pointers are the caller's `long` out-parameters.
        unsafe {
            if !requests.is_null() {
                *requests = r as std::ffi::c_long;
            }
            if !staging_buffers.is_null() {
                *staging_buffers = b as std::ffi::c_long;
            }
        }
        0
    })
}

/// `sluice_type_kernel`: 1 if sluice's engine serves `datatype` (committed and compiled while
/// the engine is on), with the kernel's name in `*kernel` (when non-null; a static string), or
/// 0 if the MPI's own engine does (predefined, uncommitted or undecodable types, engine off).
///
/// # Safety
/// A non-null `kernel` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn sluice_type_kernel(datatype: crate::ffi::mpi::MPI_Datatype, kernel: *mut *const c_char) -> c_int {
    guarded(|| match crate::protocol::datatype::lookup(datatype) {
        Some(c) => {
            if !kernel.is_null() {
                // SAFETY: the caller's out-parameter; the name is a static C string.
                unsafe { *kernel = c.kernel().c_name().as_ptr() };
            }
            1
        }
        None => 0,
    })
}
