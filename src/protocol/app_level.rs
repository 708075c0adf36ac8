//! The thread level the application runs at, which is not the MPI's when sluice raised that
//! to `MPI_THREAD_MULTIPLE` for its progress thread (`init`, `SLUICE_PROGRESS_THREAD=1`).
//! Its own module so that what reads it (`quiet`, which `comm_cache` and so `comm_facts` use)
//! does not depend on `init`.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::ffi::mpi;

/// The level the application was told when sluice raised the MPI's (`-1`: not raised).
static SHOWN: AtomicI32 = AtomicI32::new(-1);

/// The MPI's level was raised; the application was told `level`.
pub fn record(level: c_int) {
    SHOWN.store(level, Ordering::Relaxed);
}

/// The level the application was told when sluice raised the MPI's, else `-1`.
pub fn shown() -> c_int {
    SHOWN.load(Ordering::Relaxed)
}

/// The thread level the application runs at: what it was told when sluice raised the MPI's,
/// else the MPI's.
pub fn app_thread_level() -> c_int {
    let shown = shown();
    if shown >= 0 {
        return shown;
    }
    let mut level = crate::ffi::THREAD_SINGLE;
    // SAFETY: legal from any thread while MPI is initialized; writes one int.
    unsafe { mpi::PMPI_Query_thread(&mut level) };
    level
}
