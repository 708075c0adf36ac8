//! Raw MPI bindings: the only module that knows which MPI flavor sluice was built for.
//!
//! `mpi` holds bindgen's output for the chosen `mpi.h` (types, constants, `PMPI_*`
//! prototypes). Code elsewhere uses only its type aliases (`MPI_Comm`, `MPI_Datatype`, ...),
//! never a flavor's concrete representation. `consts` returns the predefined handles that are
//! cast macros in C. `next` forwards intercepted calls to the next definition in the link
//! chain. `interposed` is the registry of every intercepted C entry point.

pub mod consts;
pub mod interposed;
pub mod next;

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
