//! Fortran entry points.
//!
//! **Open MPI** (`sluice_mpi = "openmpi"`): its Fortran bindings (`mpif.h`, `use mpi`,
//! `use mpi_f08`) call `PMPI_*` directly, so the C exports never see Fortran traffic. In
//! `libmpi_mpifh.so`, `mpi_send_`, `mpi_send__`, `mpi_send` and `MPI_SEND` are weak aliases of
//! `ompi_send_f`, and most `mpi_f08` procedures (`mpi_send_f08_`) call `ompi_send_f@plt`. sluice
//! therefore exports all five names for every intercepted function. The `mpi_f08` procedures
//! with a LOGICAL argument (`MPI_Test*`, `MPI_Iprobe`, `MPI_Improbe`, `MPI_Request_get_status`)
//! call the Fortran PMPI symbol (`pmpi_test_`) instead: for those sluice also exports the
//! `mpi_f08` procedure itself (`mpi_test_f08_`).
//!
//! The data-movement collectives (`coll`) are exported the same way on Open MPI only; the
//! topology constructors (`topology`) on Open MPI and as MPICH's `mpi_f08` procedures.
//!
//! **MPICH** (`sluice_mpi = "mpich"`): `mpif.h` and `use mpi` call the C `MPI_*` symbols, which
//! are intercepted already. `mpi_f08` (MPICH 4.0) calls the C `MPI_*` for the calls with a
//! buffer argument, but `PMPI_*` for init/finalize, completion, probes, `MPI_Start*`, datatype
//! and communicator calls (topology constructors included): sluice exports those `mpi_f08`
//! procedures (`mpi_wait_f08_`, ...).
//!
//! An `mpi_f08` procedure has the `mpif.h` ABI (everything by reference, handles and statuses
//! laid out as INTEGERs) except that its `ierror` is OPTIONAL: NULL when absent. Each export
//! converts the Fortran arguments (handles, statuses, sentinels, 1-based indices, LOGICALs) and
//! calls the C export of the same function ([`exports`](super::exports)), so Fortran calls take
//! exactly the C path: `guard::call`, statistics, protocol handlers.
//!
//! Fortran-only symbols (`mpi_fortran_bottom_`, ...) are looked up with `dlsym`, never linked:
//! a cdylib binds every symbol at load time and a C-only application would fail to start.
//! No panic crosses the ABI: every entry point catches it and returns `MPI_ERR_INTERN` in
//! `ierror`.

#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::ffi::{errclass, Fint};

/// Runs a Fortran entry point's body: catches panics, stores the result in `ierr` when the
/// caller passed one (`mpi_f08`'s `ierror` is OPTIONAL: an absent argument is NULL).
fn run(ierr: *mut Fint, body: impl FnOnce() -> c_int) {
    let rc = catch_unwind(AssertUnwindSafe(body)).unwrap_or(errclass::ERR_INTERN);
    if !ierr.is_null() {
        // SAFETY: a non-null `ierror` is a Fortran INTEGER the caller passed by reference.
        unsafe { *ierr = rc };
    }
}

#[macro_use]
mod bindings;
#[cfg(sluice_mpi = "openmpi")]
mod coll;
mod convert;
pub mod copy_api;
mod topology;
