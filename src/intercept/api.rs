//! sluice's own extension API, declared in `include/sluice.h`.

use std::ffi::{c_char, c_int};

use crate::runtime::{self, Mode};

/// Version as a NUL-terminated string.
static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The older entry points' guard: a panic becomes -1.
fn guarded(f: impl FnOnce() -> c_int) -> c_int {
    api(-1, f)
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
    guarded(|| crate::protocol::init::enable() as c_int)
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
/// the engine is on), with the kernel's name in `*kernel` (when non-null; a static string;
/// with `+mpi-pack`, `+mpi-unpack` or `+mpi` once the MPI's engine was chosen for a direction), or
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
                unsafe { *kernel = crate::protocol::pack_engine::describe(&c).as_ptr() };
            }
            1
        }
        None => 0,
    })
}

// ---- sluice_copy: the transfer runtime (protocol::copy, transfer::runtime) -------------------

use crate::protocol::copy::{self, code, CPlace, Refused};
use crate::transfer::runtime::Event;

/// Reports a refused call: its message (prefixed with the function) at warning level; its code.
fn refuse(function: &str, r: Refused) -> c_int {
    log::warn!("{function}: {}", r.1);
    r.0
}

/// Runs an API body; a panic (a bug in sluice) becomes `fallback` instead of unwinding into C.
pub(crate) fn api(fallback: c_int, f: impl FnOnce() -> c_int) -> c_int {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// `sluice_copy`: starts copying `src`'s data into `dst`; `*event` receives the copy's event.
///
/// # Safety
/// As documented in include/sluice.h: null or valid pointers; the buffers stay valid and
/// untouched until the event completes.
#[no_mangle]
pub unsafe extern "C" fn sluice_copy(src: *const CPlace, dst: *const CPlace, priority: c_int, event: *mut *mut Event) -> c_int {
    api(code::ERR_ARG, || {
        if event.is_null() {
            return refuse("sluice_copy", Refused(code::ERR_ARG, "null event pointer".into()));
        }
        // SAFETY: forwarded contract.
        match unsafe { copy::copy(src, dst, priority) } {
            Ok(e) => {
                // SAFETY: non-null (checked), the application's event variable.
                unsafe { *event = Box::into_raw(Box::new(e)) };
                code::SUCCESS
            }
            Err(r) => {
                // SAFETY: as above.
                unsafe { *event = std::ptr::null_mut() };
                refuse("sluice_copy", r)
            }
        }
    })
}

/// `sluice_event_wait`: waits for the copy, frees the event and sets `*event` to NULL.
///
/// # Safety
/// `event` points to an event from `sluice_copy` (or to NULL: returns at once).
#[no_mangle]
pub unsafe extern "C" fn sluice_event_wait(event: *mut *mut Event) -> c_int {
    api(code::ERR_ARG, || {
        // SAFETY: see above.
        let Some(e) = (unsafe { event.as_mut() }) else {
            return refuse("sluice_event_wait", Refused(code::ERR_ARG, "null pointer".into()));
        };
        if e.is_null() {
            return code::SUCCESS;
        }
        // SAFETY: made by Box::into_raw in sluice_copy, not freed yet (the handle is reset below).
        let ev = unsafe { Box::from_raw(*e) };
        *e = std::ptr::null_mut();
        let o = copy::wait(&ev);
        copy::outcome(&ev, o)
    })
}

/// `sluice_event_test`: `*flag` = 1 and the event freed (`*event` = NULL) if the copy completed.
///
/// # Safety
/// As `sluice_event_wait`; `flag` is writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_event_test(event: *mut *mut Event, flag: *mut c_int) -> c_int {
    api(code::ERR_ARG, || {
        // SAFETY: see above.
        let (Some(e), Some(flag)) = (unsafe { event.as_mut() }, unsafe { flag.as_mut() }) else {
            return refuse("sluice_event_test", Refused(code::ERR_ARG, "null pointer".into()));
        };
        if e.is_null() {
            *flag = 1;
            return code::SUCCESS;
        }
        // SAFETY: a live event from sluice_copy.
        let Some(o) = copy::test(unsafe { &**e }) else {
            *flag = 0;
            return code::SUCCESS;
        };
        // SAFETY: as in sluice_event_wait.
        let ev = unsafe { Box::from_raw(*e) };
        *e = std::ptr::null_mut();
        *flag = 1;
        copy::outcome(&ev, o)
    })
}

/// `sluice_plan_explain`: the plan a copy would take, as text (NUL-terminated, truncated to
/// `size` bytes); returns the length of the whole text, or an error code.
///
/// # Safety
/// Places as for `sluice_copy`; `text` writable for `size` bytes (or NULL with `size` 0).
#[no_mangle]
pub unsafe extern "C" fn sluice_plan_explain(src: *const CPlace, dst: *const CPlace, text: *mut c_char, size: c_int) -> c_int {
    api(code::ERR_ARG, || {
        if size < 0 || (text.is_null() && size > 0) {
            return refuse("sluice_plan_explain", Refused(code::ERR_ARG, "bad text buffer".into()));
        }
        // SAFETY: forwarded contract.
        match unsafe { copy::explain(src, dst) } {
            Ok(s) => {
                if size > 0 {
                    let n = s.len().min(size as usize - 1);
                    // SAFETY: `text` holds `size` bytes; n + 1 <= size.
                    unsafe {
                        std::ptr::copy_nonoverlapping(s.as_ptr(), text.cast::<u8>(), n);
                        *text.add(n) = 0;
                    }
                }
                c_int::try_from(s.len()).unwrap_or(c_int::MAX)
            }
            Err(r) => refuse("sluice_plan_explain", r),
        }
    })
}

// ---- one-sided puts and gets through firehoses (protocol::rma, pin) ---------------------------

/// Stores a started operation's event (or NULL on refusal) and reports a refusal.
fn started(function: &str, r: Result<Event, Refused>, event: *mut *mut Event) -> c_int {
    match r {
        Ok(e) => {
            // SAFETY: non-null (checked by the caller), the application's event variable.
            unsafe { *event = Box::into_raw(Box::new(e)) };
            code::SUCCESS
        }
        Err(r) => {
            // SAFETY: as above.
            unsafe { *event = std::ptr::null_mut() };
            refuse(function, r)
        }
    }
}

/// `sluice_rma_init`: opens the one-sided service (collective over `MPI_COMM_WORLD`).
#[no_mangle]
pub extern "C" fn sluice_rma_init() -> c_int {
    api(code::ERR_ARG, || match crate::protocol::rma::init() {
        Ok(()) => code::SUCCESS,
        Err(r) => refuse("sluice_rma_init", r),
    })
}

/// `sluice_put`: starts writing `len` bytes at `local` to address `remote` of world rank `rank`.
///
/// # Safety
/// `local` holds `len` readable bytes until the event completes; `event` is writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_put(rank: c_int, remote: u64, local: *const std::ffi::c_void, len: usize, event: *mut *mut Event) -> c_int {
    api(code::ERR_ARG, || {
        if event.is_null() {
            return refuse("sluice_put", Refused(code::ERR_ARG, "null event pointer".into()));
        }
        started("sluice_put", crate::protocol::rma::start(true, rank, remote, local.cast_mut(), len), event)
    })
}

/// `sluice_get`: starts reading `len` bytes at address `remote` of world rank `rank` into `local`.
///
/// # Safety
/// `local` holds `len` writable bytes until the event completes; `event` is writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_get(rank: c_int, remote: u64, local: *mut std::ffi::c_void, len: usize, event: *mut *mut Event) -> c_int {
    api(code::ERR_ARG, || {
        if event.is_null() {
            return refuse("sluice_get", Refused(code::ERR_ARG, "null event pointer".into()));
        }
        started("sluice_get", crate::protocol::rma::start(false, rank, remote, local, len), event)
    })
}

/// `sluice_pin_state`: this process's registration manager now: bytes pinned, bytes in the
/// victim FIFO, bytes referenced by remote firehoses, the high-water mark, and firehoses other
/// processes map onto it (each pointer may be NULL). Returns 0.
///
/// # Safety
/// Non-null pointers are writable `long`s.
#[no_mangle]
pub unsafe extern "C" fn sluice_pin_state(
    pinned: *mut std::ffi::c_long,
    victims: *mut std::ffi::c_long,
    remote: *mut std::ffi::c_long,
    high: *mut std::ffi::c_long,
    firehoses: *mut std::ffi::c_long,
) -> c_int {
    guarded(|| {
        let s = crate::pin::snapshot();
        let values = [
            s.map_or(0, |s| s.pinned),
            s.map_or(0, |s| s.victims),
            s.map_or(0, |s| s.remote),
            s.map_or(0, |s| s.counters.pinned_high),
            crate::protocol::rma::firehoses_here(),
        ];
        for (p, v) in [pinned, victims, remote, high, firehoses].into_iter().zip(values) {
            if !p.is_null() {
                // SAFETY: the caller's `long` out-parameter.
                unsafe { *p = v as std::ffi::c_long };
            }
        }
        0
    })
}

/// `sluice_rma_strategy`: how this process's later puts and gets reach remote memory
/// (`SLUICE_RMA_FIREHOSE` 0, `SLUICE_RMA_RENDEZVOUS` 1, `SLUICE_RMA_RENDEZVOUS_KEEP` 2: the
/// paper's baselines, for benchmarks). Returns the previous strategy, or an error code.
#[no_mangle]
pub extern "C" fn sluice_rma_strategy(strategy: c_int) -> c_int {
    use crate::protocol::rma::Strategy;
    api(code::ERR_ARG, || {
        let s = match strategy {
            0 => Strategy::Firehose,
            1 => Strategy::Rendezvous,
            2 => Strategy::RendezvousKeep,
            _ => return refuse("sluice_rma_strategy", Refused(code::ERR_ARG, format!("unknown strategy {strategy}"))),
        };
        match crate::protocol::rma::set_strategy(s) {
            Ok(Strategy::Firehose) => 0,
            Ok(Strategy::Rendezvous) => 1,
            Ok(Strategy::RendezvousKeep) => 2,
            Err(r) => refuse("sluice_rma_strategy", r),
        }
    })
}

/// `sluice_rma_counters`: pieces of this process's puts and gets that found their firehoses
/// mapped (one-sided), and move requests plus handshakes it sent (each pointer may be NULL).
///
/// # Safety
/// Non-null pointers are writable `long`s.
#[no_mangle]
pub unsafe extern "C" fn sluice_rma_counters(one_sided: *mut std::ffi::c_long, moves: *mut std::ffi::c_long) -> c_int {
    guarded(|| {
        let (h, m) = crate::protocol::rma::firehose_counters();
        for (p, v) in [(one_sided, h), (moves, m)] {
            if !p.is_null() {
                // SAFETY: the caller's `long` out-parameter.
                unsafe { *p = v as std::ffi::c_long };
            }
        }
        0
    })
}
