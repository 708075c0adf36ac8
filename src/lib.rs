//! sluice: a PMPI shim that makes data movement inside unmodified MPI applications faster.
//!
//! Layers, top to bottom (docs/architecture.md):
//! - [`intercept`]: exported C and Fortran symbols; translate, catch panics, dispatch.
//! - [`protocol`]: MPI semantics; handlers for the calls that need more than forwarding.
//! - engines (datatype, transfer, pin, topo, levels) arrive with their issues.
//! - [`ffi`]: bindgen output, predefined handles, forwarding to the next definition.
//!
//! Services used by every layer: [`config`], [`logging`], [`stats`], [`runtime`], [`errors`].

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// Open MPI's handles (MPI_Comm, MPI_Datatype, ...) are pointers, MPICH's are integers. Sluice
// treats them as opaque values that only the MPI dereferences (and validates), so safe functions
// taking a handle are sound; clippy cannot tell a handle from a pointer sluice reads.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod config;
pub mod datatype;
pub mod errors;
pub mod ffi;
pub mod hw;
pub mod intercept;
pub mod logging;
pub mod protocol;
pub mod runtime;
pub mod stats;
pub mod transfer;
