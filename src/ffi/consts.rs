//! Predefined MPI handles and sentinels, read through `cbuild/handles.c`.
//!
//! In both MPIs these are C cast macros; the accessors return exactly what the application sees.
#![allow(clippy::missing_safety_doc)]

use super::mpi;

macro_rules! accessor {
    ($($(#[$doc:meta])* $name:ident -> $ty:ty = $c:ident;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name() -> $ty {
            // SAFETY: the accessor takes no arguments and returns a compile-time constant of
            // the MPI library; it touches no state and is valid before MPI_Init.
            unsafe { mpi::$c() }
        }
    )*};
}

accessor! {
    /// `MPI_COMM_WORLD`.
    comm_world -> mpi::MPI_Comm = sluice_c_comm_world;
    /// `MPI_COMM_SELF`.
    comm_self -> mpi::MPI_Comm = sluice_c_comm_self;
    /// `MPI_COMM_NULL`.
    comm_null -> mpi::MPI_Comm = sluice_c_comm_null;
    /// `MPI_DATATYPE_NULL`.
    datatype_null -> mpi::MPI_Datatype = sluice_c_datatype_null;
    /// `MPI_BYTE`.
    byte -> mpi::MPI_Datatype = sluice_c_byte;
    /// `MPI_PACKED`.
    packed -> mpi::MPI_Datatype = sluice_c_packed;
    /// `MPI_UINT64_T`.
    uint64 -> mpi::MPI_Datatype = sluice_c_uint64;
    /// `MPI_INT`.
    int -> mpi::MPI_Datatype = sluice_c_int;
    /// `MPI_DOUBLE`.
    double -> mpi::MPI_Datatype = sluice_c_double;
    /// `MPI_FLOAT`.
    float -> mpi::MPI_Datatype = sluice_c_float;
    /// `MPI_CHAR`.
    char -> mpi::MPI_Datatype = sluice_c_char;
    /// `MPI_SHORT`.
    short -> mpi::MPI_Datatype = sluice_c_short;
    /// `MPI_LONG_DOUBLE`.
    long_double -> mpi::MPI_Datatype = sluice_c_long_double;
    /// `MPI_C_DOUBLE_COMPLEX`.
    c_double_complex -> mpi::MPI_Datatype = sluice_c_c_double_complex;
    /// `MPI_DOUBLE_INT`.
    double_int -> mpi::MPI_Datatype = sluice_c_double_int;
    /// `MPI_SHORT_INT`.
    short_int -> mpi::MPI_Datatype = sluice_c_short_int;
    /// `MPI_LONG_DOUBLE_INT`.
    long_double_int -> mpi::MPI_Datatype = sluice_c_long_double_int;
    /// `MPI_FLOAT_INT`.
    float_int -> mpi::MPI_Datatype = sluice_c_float_int;
    /// `MPI_LONG_INT`.
    long_int -> mpi::MPI_Datatype = sluice_c_long_int;
    /// `MPI_2INT`.
    two_int -> mpi::MPI_Datatype = sluice_c_2int;
    /// `MPI_REQUEST_NULL`.
    request_null -> mpi::MPI_Request = sluice_c_request_null;
    /// `MPI_MESSAGE_NULL`.
    message_null -> mpi::MPI_Message = sluice_c_message_null;
    /// `MPI_MESSAGE_NO_PROC`.
    message_no_proc -> mpi::MPI_Message = sluice_c_message_no_proc;
    /// `MPI_ERRORS_RETURN`.
    errors_return -> mpi::MPI_Errhandler = sluice_c_errors_return;
    /// `MPI_MIN`.
    op_min -> mpi::MPI_Op = sluice_c_op_min;
    /// `MPI_MAX`.
    op_max -> mpi::MPI_Op = sluice_c_op_max;
    /// `MPI_INFO_NULL`.
    info_null -> mpi::MPI_Info = sluice_c_info_null;
    /// `MPI_STATUS_IGNORE`.
    status_ignore -> *mut mpi::MPI_Status = sluice_c_status_ignore;
    /// `MPI_STATUSES_IGNORE`.
    statuses_ignore -> *mut mpi::MPI_Status = sluice_c_statuses_ignore;
    /// `MPI_F_STATUS_IGNORE`: the Fortran status-ignore sentinel as seen from C.
    f_status_ignore -> *mut super::Fint = sluice_c_f_status_ignore;
    /// `MPI_F_STATUSES_IGNORE`.
    f_statuses_ignore -> *mut super::Fint = sluice_c_f_statuses_ignore;
    /// `MPI_IN_PLACE`.
    in_place -> *mut std::ffi::c_void = sluice_c_in_place;
    /// `MPI_BOTTOM`.
    bottom -> *mut std::ffi::c_void = sluice_c_bottom;
    /// `MPI_UNWEIGHTED`.
    unweighted -> *mut std::ffi::c_int = sluice_c_unweighted;
    /// `MPI_WEIGHTS_EMPTY`.
    weights_empty -> *mut std::ffi::c_int = sluice_c_weights_empty;
}
