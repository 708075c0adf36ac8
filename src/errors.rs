//! Reporting errors the MPI way: through the communicator's error handler, so the application's
//! handler, `MPI_ERRORS_RETURN` or `MPI_ERRORS_ARE_FATAL` behaves exactly as with the bare MPI.

use std::ffi::c_int;

use crate::ffi::mpi;
use crate::logging;

/// Whether MPI is initialized and not yet finalized (error handlers may be called).
pub fn mpi_is_active() -> bool {
    let (mut init, mut fin) = (0, 0);
    // SAFETY: both functions may be called at any time, before MPI_Init and after
    // MPI_Finalize, and write one int each.
    unsafe {
        mpi::PMPI_Initialized(&mut init);
        mpi::PMPI_Finalized(&mut fin);
    }
    init != 0 && fin == 0
}

/// Prints `msg` (always, whatever `SLUICE_LOG` says), invokes `comm`'s error handler with
/// `class` and returns `class` for the intercepted call to return if the handler returns.
pub fn raise(comm: mpi::MPI_Comm, class: c_int, msg: &str) -> c_int {
    logging::write_line(&format!("error: {msg} [{}]", class_name(class)));
    if mpi_is_active() {
        // SAFETY: MPI is active and `comm` is either a communicator the application passed in
        // (already validated by the failing path or predefined) or MPI_COMM_WORLD.
        unsafe { mpi::PMPI_Comm_call_errhandler(comm, class) };
    }
    class
}

/// [`raise`] through a window's error handler.
pub fn raise_win(win: mpi::MPI_Win, class: c_int, msg: &str) -> c_int {
    logging::write_line(&format!("error: {msg} [{}]", class_name(class)));
    if mpi_is_active() {
        // SAFETY: MPI is active; `win` is the application's window handle, which the call it
        // passed it to requires to be valid.
        unsafe { mpi::PMPI_Win_call_errhandler(win, class) };
    }
    class
}

/// [`raise`] through a file's error handler (`MPI_ERRORS_RETURN` unless the application set
/// another: the default for files).
pub fn raise_file(fh: mpi::MPI_File, class: c_int, msg: &str) -> c_int {
    logging::write_line(&format!("error: {msg} [{}]", class_name(class)));
    if mpi_is_active() {
        // SAFETY: MPI is active; `fh` is the application's file handle, which the call it
        // passed it to requires to be valid.
        unsafe { mpi::PMPI_File_call_errhandler(fh, class) };
    }
    class
}

/// The MPI's text for an error code (`MPI_Error_string`), or the number when it has none.
pub fn error_string(code: c_int) -> String {
    let mut buf = vec![0u8; mpi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING characters; len is written.
    let rc = unsafe { mpi::PMPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    if rc != 0 || len <= 0 {
        return format!("MPI error {code}");
    }
    buf.truncate(len as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The MPI name of an error class sluice raises itself.
pub fn class_name(class: c_int) -> &'static str {
    use crate::ffi::errclass::*;
    match class {
        SUCCESS => "MPI_SUCCESS",
        ERR_ARG => "MPI_ERR_ARG",
        ERR_INTERN => "MPI_ERR_INTERN",
        ERR_OTHER => "MPI_ERR_OTHER",
        ERR_TRUNCATE => "MPI_ERR_TRUNCATE",
        ERR_BUFFER => "MPI_ERR_BUFFER",
        ERR_COMM => "MPI_ERR_COMM",
        _ => "MPI error",
    }
}
