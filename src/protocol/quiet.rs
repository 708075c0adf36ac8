//! `MPI_COMM_WORLD`'s error handler set aside for a moment, so that sluice's own calls to the
//! MPI can ask something that may fail (a request's status, whether a handle names a live
//! communicator) without running the application's handler: the application's call that
//! follows reports the error once, as the bare MPI would.

use crate::ffi::{consts, errclass, mpi};
use crate::transfer::runtime::progress;

/// `MPI_COMM_WORLD`'s error handler set to `MPI_ERRORS_RETURN` for as long as this lives, then
/// the application's again: MPICH's `MPI_Request_get_status` raises a completed request's error
/// through that handler (measured), where the application's completion call that follows raises
/// it as the MPI would (`complete::Taken::unpack_as_they_arrive`, `pipeline::track`). Only while
/// no other thread of the application may call MPI (not at `MPI_THREAD_MULTIPLE`), and only
/// from the application's thread: sluice's progress thread (`SLUICE_PROGRESS_THREAD=1`, which
/// raises the MPI's level, not the application's) never sets it aside, so two threads never
/// swap the handler at once.
pub struct QuietWorld(mpi::MPI_Errhandler);

impl QuietWorld {
    pub fn new() -> Option<QuietWorld> {
        if super::app_level::app_thread_level() >= crate::ffi::THREAD_MULTIPLE || progress::thread::is_current() {
            return None;
        }
        let mut app = consts::errors_return();
        // SAFETY: MPI_COMM_WORLD is valid while MPI is initialized; writes one handle, a new
        // reference that `drop` releases.
        if unsafe { mpi::PMPI_Comm_get_errhandler(consts::comm_world(), &mut app) } != errclass::SUCCESS {
            return None;
        }
        // SAFETY: as above; a predefined handler.
        unsafe { mpi::PMPI_Comm_set_errhandler(consts::comm_world(), consts::errors_return()) };
        Some(QuietWorld(app))
    }
}

impl Drop for QuietWorld {
    fn drop(&mut self) {
        // SAFETY: puts back the handler taken in `new` and releases that reference.
        unsafe {
            mpi::PMPI_Comm_set_errhandler(consts::comm_world(), self.0);
            mpi::PMPI_Errhandler_free(&mut self.0);
        }
    }
}
