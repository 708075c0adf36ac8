//! One-sided calls and file reads/writes with device buffers: not served yet, so refused
//! clearly instead of crashing inside the MPI. With the GPU layer armed, a call whose buffer
//! lies in device memory fails with `MPI_ERR_BUFFER` through the error handler of its window,
//! file or communicator (`MPI_Win_create`), with a message naming the call; every other call
//! goes to the MPI unchanged (through the fast path when the layer is not armed).

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use crate::errors;
use crate::ffi::{consts, errclass, mpi, next};
use crate::transfer::gpu;

type Dt = mpi::MPI_Datatype;

/// Whether `buf` lies in device memory (never when the layer is not armed).
fn on_device(buf: *const c_void) -> bool {
    gpu::armed() && buf != consts::in_place().cast_const() && gpu::device_range(buf as usize).is_some()
}

fn message(call: &str) -> String {
    format!("{call}: device buffers are not supported by sluice for this call yet (only point-to-point, collectives and reductions stage them; docs/gpu.md)")
}

/// `MPI_Win_create`: a window over device memory is refused on `comm`.
///
/// # Safety
/// As `MPI_Win_create`.
pub unsafe fn win_create(
    base: *mut c_void,
    size: mpi::MPI_Aint,
    disp_unit: c_int,
    info: mpi::MPI_Info,
    comm: mpi::MPI_Comm,
    win: *mut mpi::MPI_Win,
) -> c_int {
    if size as i64 > 0 && on_device(base) {
        return errors::raise(comm, errclass::ERR_BUFFER, &message("MPI_Win_create"));
    }
    // SAFETY: forwarded contract.
    unsafe { next::MPI_Win_create(base, size, disp_unit, info, comm, win) }
}

/// Defines a one-sided call refused on its window when a named buffer is on the device.
macro_rules! rma {
    ($name:ident, $mpi:ident, [$($buf:ident),*] on $win:ident, ($($a:ident: $t:ty),*)) => {
        #[doc = concat!("`", stringify!($mpi), "`: refused with a device buffer.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $name($($a: $t),*) -> c_int {
            if false $(|| on_device($buf as *const c_void))* {
                return errors::raise_win($win, errclass::ERR_BUFFER, &message(stringify!($mpi)));
            }
            // SAFETY: forwarded contract.
            unsafe { next::$mpi($($a),*) }
        }
    };
}

rma!(put, MPI_Put, [origin_addr] on win, (origin_addr: *const c_void, origin_count: c_int, origin_datatype: Dt, target_rank: c_int,
    target_disp: mpi::MPI_Aint, target_count: c_int, target_datatype: Dt, win: mpi::MPI_Win));
rma!(get, MPI_Get, [origin_addr] on win, (origin_addr: *mut c_void, origin_count: c_int, origin_datatype: Dt, target_rank: c_int,
    target_disp: mpi::MPI_Aint, target_count: c_int, target_datatype: Dt, win: mpi::MPI_Win));
rma!(accumulate, MPI_Accumulate, [origin_addr] on win, (origin_addr: *const c_void, origin_count: c_int, origin_datatype: Dt,
    target_rank: c_int, target_disp: mpi::MPI_Aint, target_count: c_int, target_datatype: Dt, op: mpi::MPI_Op, win: mpi::MPI_Win));
rma!(get_accumulate, MPI_Get_accumulate, [origin_addr, result_addr] on win, (origin_addr: *const c_void, origin_count: c_int,
    origin_datatype: Dt, result_addr: *mut c_void, result_count: c_int, result_datatype: Dt, target_rank: c_int,
    target_disp: mpi::MPI_Aint, target_count: c_int, target_datatype: Dt, op: mpi::MPI_Op, win: mpi::MPI_Win));

/// Defines a file read or write refused on its file when the buffer is on the device.
macro_rules! file {
    ($name:ident, $mpi:ident, $buf:ident in $fh:ident, ($($a:ident: $t:ty),*)) => {
        #[doc = concat!("`", stringify!($mpi), "`: refused with a device buffer.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $name($($a: $t),*) -> c_int {
            if on_device($buf as *const c_void) {
                return errors::raise_file($fh, errclass::ERR_BUFFER, &message(stringify!($mpi)));
            }
            // SAFETY: forwarded contract.
            unsafe { next::$mpi($($a),*) }
        }
    };
}

file!(file_read, MPI_File_read, buf in fh, (fh: mpi::MPI_File, buf: *mut c_void, count: c_int, datatype: Dt, status: *mut mpi::MPI_Status));
file!(file_read_all, MPI_File_read_all, buf in fh, (fh: mpi::MPI_File, buf: *mut c_void, count: c_int, datatype: Dt, status: *mut mpi::MPI_Status));
file!(file_write, MPI_File_write, buf in fh, (fh: mpi::MPI_File, buf: *const c_void, count: c_int, datatype: Dt, status: *mut mpi::MPI_Status));
file!(file_write_all, MPI_File_write_all, buf in fh, (fh: mpi::MPI_File, buf: *const c_void, count: c_int, datatype: Dt, status: *mut mpi::MPI_Status));
file!(file_read_at, MPI_File_read_at, buf in fh, (fh: mpi::MPI_File, offset: mpi::MPI_Offset, buf: *mut c_void, count: c_int, datatype: Dt,
    status: *mut mpi::MPI_Status));
file!(file_read_at_all, MPI_File_read_at_all, buf in fh, (fh: mpi::MPI_File, offset: mpi::MPI_Offset, buf: *mut c_void, count: c_int,
    datatype: Dt, status: *mut mpi::MPI_Status));
file!(file_write_at, MPI_File_write_at, buf in fh, (fh: mpi::MPI_File, offset: mpi::MPI_Offset, buf: *const c_void, count: c_int,
    datatype: Dt, status: *mut mpi::MPI_Status));
file!(file_write_at_all, MPI_File_write_at_all, buf in fh, (fh: mpi::MPI_File, offset: mpi::MPI_Offset, buf: *const c_void, count: c_int,
    datatype: Dt, status: *mut mpi::MPI_Status));
