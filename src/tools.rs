//! What sluice's own command-line tools need from the crate-private layers (which stay
//! private: see lib.rs), as plain functions: `sluice-info --calibrate` initializes the MPI
//! through sluice and times sluice's own point-to-point path next to the MPI's.

use std::ffi::c_int;

use crate::ffi::{consts, mpi};
use crate::intercept::exports as sl;
use crate::transfer::mpi_calibrate::Calls;

/// `MPI_Init` through sluice (the pipeline and the shared-memory arena start as in an
/// application); the MPI's return code.
pub fn init() -> c_int {
    // SAFETY: null arguments are allowed; the caller has not initialized MPI.
    unsafe { sl::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) }
}

/// `MPI_Finalize` through sluice.
pub fn finalize() -> c_int {
    // SAFETY: the caller initialized MPI through [`init`] and has nothing pending.
    unsafe { sl::MPI_Finalize() }
}

/// Sluice's point-to-point calls on a duplicate of `MPI_COMM_WORLD` whose `sluice_p2p_path`
/// is `arena` (collective over `MPI_COMM_WORLD`), or `None` when sluice would not take that
/// path (disabled, the protocol or the arena off). Free the communicator with [`free_comm`].
pub fn arena_calls() -> Option<Calls> {
    let on = matches!(crate::runtime::mode(), crate::runtime::Mode::Active | crate::runtime::Mode::Instrumented)
        && crate::runtime::config().is_some_and(|c| c.p2p && c.shm_arena != usize::MAX);
    if !on {
        return None;
    }
    let (mut info, mut comm) = (consts::info_null(), consts::comm_null());
    // SAFETY: MPI is initialized; the info object is this function's own and freed here; the
    // key and value are NUL-terminated; the new communicator is written to a local.
    unsafe {
        mpi::PMPI_Info_create(&mut info);
        mpi::PMPI_Info_set(info, c"sluice_p2p_path".as_ptr().cast_mut(), c"arena".as_ptr().cast_mut());
        let rc = sl::MPI_Comm_dup_with_info(consts::comm_world(), info, &mut comm);
        mpi::PMPI_Info_free(&mut info);
        if rc != crate::ffi::errclass::SUCCESS {
            return None;
        }
    }
    Some(Calls {
        isend: sl::MPI_Isend,
        irecv: sl::MPI_Irecv,
        waitall: sl::MPI_Waitall,
        send: sl::MPI_Send,
        recv: sl::MPI_Recv,
        type_commit: sl::MPI_Type_commit,
        type_free: sl::MPI_Type_free,
        comm,
    })
}

/// Frees a communicator of [`arena_calls`] (collective).
pub fn free_comm(mut comm: mpi::MPI_Comm) {
    // SAFETY: a communicator this module created, with nothing pending on it.
    unsafe { sl::MPI_Comm_free(&mut comm) };
}
