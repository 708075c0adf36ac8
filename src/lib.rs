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

pub mod config;
pub mod errors;
pub mod ffi;
pub mod hw;
pub mod intercept;
pub mod logging;
pub mod protocol;
pub mod runtime;
pub mod stats;
