//! Raw MPI bindings: the only module that knows which MPI flavor sluice was built for.
//!
//! `mpi` holds bindgen's output for the chosen `mpi.h` (types, constants, `PMPI_*`
//! prototypes). Code elsewhere uses only its type aliases (`MPI_Comm`, `MPI_Datatype`, ...),
//! never a flavor's concrete representation. `consts` returns the predefined handles that are
//! cast macros in C. `next` forwards intercepted calls to the next definition in the link
//! chain, for every entry of the interception layer's registry (`intercept::registry`).

pub mod consts;
// Crate-private: see the note in lib.rs (its target slots are on the fast path).
pub(crate) mod next;

/// bindgen's translation of the flavor's `mpi.h` plus `cbuild/handles.h`.
#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
pub mod mpi {
    include!(concat!(env!("OUT_DIR"), "/mpi_bindings.rs"));
    pub use super::window_file::*;
}

/// The window and file functions sluice calls or forwards. build.rs leaves every `PMPI_*File*`
/// and `PMPI_*Win*` function out of the bindings (their declarations differ between the MPIs'
/// versions); these few have the same prototype in both, written here once.
#[allow(missing_docs)]
pub mod window_file {
    use super::mpi::{MPI_Aint, MPI_Comm, MPI_Datatype, MPI_File, MPI_Info, MPI_Offset, MPI_Status, MPI_Win};
    use std::ffi::{c_int, c_void};

    extern "C" {
        pub fn PMPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int;
        pub fn PMPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> c_int;
        pub fn PMPI_Win_create(
            base: *mut c_void,
            size: MPI_Aint,
            disp_unit: c_int,
            info: MPI_Info,
            comm: MPI_Comm,
            win: *mut MPI_Win,
        ) -> c_int;
        pub fn PMPI_File_read(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int;
        pub fn PMPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int;
        pub fn PMPI_File_write(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int;
        pub fn PMPI_File_write_all(
            fh: MPI_File,
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            status: *mut MPI_Status,
        ) -> c_int;
        pub fn PMPI_File_read_at(
            fh: MPI_File,
            offset: MPI_Offset,
            buf: *mut c_void,
            count: c_int,
            datatype: MPI_Datatype,
            status: *mut MPI_Status,
        ) -> c_int;
        pub fn PMPI_File_read_at_all(
            fh: MPI_File,
            offset: MPI_Offset,
            buf: *mut c_void,
            count: c_int,
            datatype: MPI_Datatype,
            status: *mut MPI_Status,
        ) -> c_int;
        pub fn PMPI_File_write_at(
            fh: MPI_File,
            offset: MPI_Offset,
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            status: *mut MPI_Status,
        ) -> c_int;
        pub fn PMPI_File_write_at_all(
            fh: MPI_File,
            offset: MPI_Offset,
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            status: *mut MPI_Status,
        ) -> c_int;
    }
}

/// The MPI flavor this build targets (`openmpi` or `mpich`).
pub const FLAVOR: &str = env!("SLUICE_MPI");

/// Error class constants as `c_int`, in one place (bindgen emits them as `u32` in Open MPI).
#[allow(missing_docs)]
pub mod errclass {
    use std::ffi::c_int;
    pub const SUCCESS: c_int = super::mpi::MPI_SUCCESS as c_int;
    pub const ERR_ARG: c_int = super::mpi::MPI_ERR_ARG as c_int;
    pub const ERR_INTERN: c_int = super::mpi::MPI_ERR_INTERN as c_int;
    pub const ERR_OTHER: c_int = super::mpi::MPI_ERR_OTHER as c_int;
    pub const ERR_TRUNCATE: c_int = super::mpi::MPI_ERR_TRUNCATE as c_int;
    pub const ERR_IN_STATUS: c_int = super::mpi::MPI_ERR_IN_STATUS as c_int;
    pub const ERR_PENDING: c_int = super::mpi::MPI_ERR_PENDING as c_int;
    pub const ERR_BUFFER: c_int = super::mpi::MPI_ERR_BUFFER as c_int;
    pub const ERR_COMM: c_int = super::mpi::MPI_ERR_COMM as c_int;
}

/// `MPI_PROC_NULL` and `MPI_UNDEFINED` as `c_int`.
pub const PROC_NULL: std::ffi::c_int = mpi::MPI_PROC_NULL as std::ffi::c_int;
#[allow(missing_docs)]
pub const UNDEFINED: std::ffi::c_int = mpi::MPI_UNDEFINED as std::ffi::c_int;
/// `MPI_ANY_SOURCE` and `MPI_ANY_TAG` as `c_int`.
pub const ANY_SOURCE: std::ffi::c_int = mpi::MPI_ANY_SOURCE as std::ffi::c_int;
#[allow(missing_docs)]
pub const ANY_TAG: std::ffi::c_int = mpi::MPI_ANY_TAG as std::ffi::c_int;

/// `MPI_THREAD_MULTIPLE`.
pub const THREAD_MULTIPLE: std::ffi::c_int = mpi::MPI_THREAD_MULTIPLE as std::ffi::c_int;
/// `MPI_THREAD_SINGLE`.
pub const THREAD_SINGLE: std::ffi::c_int = mpi::MPI_THREAD_SINGLE as std::ffi::c_int;

/// Whether the calling thread may call MPI now: the MPI runs at `MPI_THREAD_MULTIPLE`, or this
/// is the thread that initialized it. Only to be asked while MPI is initialized.
pub fn this_thread_may_call_mpi() -> bool {
    let (mut level, mut main) = (THREAD_SINGLE, 0);
    // SAFETY: both calls are legal from any thread while MPI is initialized; each writes one int.
    unsafe {
        mpi::PMPI_Query_thread(&mut level);
        if level >= THREAD_MULTIPLE {
            return true;
        }
        mpi::PMPI_Is_thread_main(&mut main);
    }
    main != 0
}

/// Fortran `INTEGER` as MPI's C side sees it (`MPI_Fint`). Both supported MPIs, built with
/// gfortran's default integer kind, use C `int`; `cbuild/handles.c` asserts this at compile time.
pub type Fint = std::ffi::c_int;

/// A datatype handle as a plain integer key (Open MPI: the object's address; MPICH: the
/// integer handle), for sluice's per-type tables.
#[inline]
pub fn datatype_key(t: mpi::MPI_Datatype) -> usize {
    #[cfg(sluice_mpi = "openmpi")]
    {
        t as usize
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        t as u32 as usize
    }
}

/// A message handle (`MPI_Mprobe`'s) as a plain integer key.
#[inline]
pub fn message_key(m: mpi::MPI_Message) -> usize {
    #[cfg(sluice_mpi = "openmpi")]
    {
        m as usize
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        m as u32 as usize
    }
}

/// A communicator handle as a plain integer key, and back (the key round-trips exactly).
#[inline]
pub fn comm_key(c: mpi::MPI_Comm) -> usize {
    #[cfg(sluice_mpi = "openmpi")]
    {
        c as usize
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        c as u32 as usize
    }
}

#[inline]
pub fn comm_from_key(k: usize) -> mpi::MPI_Comm {
    #[cfg(sluice_mpi = "openmpi")]
    {
        k as mpi::MPI_Comm
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        k as u32 as mpi::MPI_Comm
    }
}

/// A request handle as a plain integer key, and back (the key round-trips exactly).
#[inline]
pub fn request_key(r: mpi::MPI_Request) -> usize {
    #[cfg(sluice_mpi = "openmpi")]
    {
        r as usize
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        r as u32 as usize
    }
}

#[cfg(sluice_mpi = "openmpi")]
extern "C" {
    /// Open MPI's exported empty request (libmpi), the object behind its shared handle.
    static ompi_request_empty: u8;
}

/// Whether `r` is a handle the MPI gives to many requests at once: both MPIs return one shared,
/// already complete request for operations that finished inside the call (MPICH's builtin
/// requests, e.g. 0x6c000001 for every eager send that completed at once, 0x6c000002 for
/// receives from `MPI_PROC_NULL`; Open MPI's `ompi_request_empty`). Such a handle names no
/// single operation, so tables keyed by handle must not hold it (measured with both MPIs;
/// `tests/c/p2p_conf_probe.c`, "two receives in flight", failed on such shared placeholders).
#[inline]
pub fn is_shared_request(r: mpi::MPI_Request) -> bool {
    #[cfg(sluice_mpi = "openmpi")]
    {
        // Only the address of the static is taken (no read: safe).
        std::ptr::eq(r.cast_const().cast::<u8>(), std::ptr::addr_of!(ompi_request_empty))
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        // Bits 31-30 of an MPICH handle are its kind; 1 is HANDLE_KIND_BUILTIN.
        (r as u32) >> 30 == 1
    }
}

/// The request handle of a key made by [`request_key`].
#[inline]
pub fn request_from_key(k: usize) -> mpi::MPI_Request {
    #[cfg(sluice_mpi = "openmpi")]
    {
        k as mpi::MPI_Request
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        k as u32 as mpi::MPI_Request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MPICH's pre-completed requests share builtin handles (values measured with MPICH 4.0.2:
    /// eager sends completed at once, receives from MPI_PROC_NULL, an empty Ialltoall); real
    /// requests are direct or indirect handles; MPI_REQUEST_NULL is neither.
    #[cfg(sluice_mpi = "mpich")]
    #[test]
    fn mpich_builtin_request_handles_are_shared() {
        for shared in [0x6c00_0001u32, 0x6c00_0002, 0x6c00_000a] {
            assert!(is_shared_request(shared as mpi::MPI_Request), "{shared:#x}");
        }
        for own in [0xac00_0000u32, 0xac00_0001, 0xec00_0401, 0x2c00_0000] {
            assert!(!is_shared_request(own as mpi::MPI_Request), "{own:#x}");
        }
    }

    /// Open MPI's shared handle is its empty request, nothing else.
    #[cfg(sluice_mpi = "openmpi")]
    #[test]
    fn openmpi_empty_request_is_shared() {
        assert!(is_shared_request(std::ptr::addr_of!(ompi_request_empty) as mpi::MPI_Request));
        assert!(!is_shared_request(consts::request_null()));
    }
}
