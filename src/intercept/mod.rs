//! The C-ABI interception layer: exported `MPI_*` symbols (C), Fortran entry points, and
//! sluice's own extension API (`include/sluice.h`). It only translates and forwards: every call
//! goes through [`guard::call`], the single dispatch point, into a protocol handler or straight
//! to the next definition.

pub mod api;
pub mod exports;
pub mod fortran;
pub mod guard;
pub mod levels_api;
pub mod profile;
pub mod registry;
