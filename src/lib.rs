//! sluice: a PMPI shim that makes data movement inside unmodified MPI applications faster.
//!
//! Layers, top to bottom (docs/architecture.md):
//! - [`intercept`]: exported C and Fortran symbols; translate, catch panics, dispatch.
//! - [`protocol`]: MPI semantics; handlers for the calls that need more than forwarding.
//! - engines: [`datatype`], [`transfer`], [`mapping`], [`pin`], [`levels`].
//! - [`ffi`]: bindgen output, predefined handles, forwarding to the next definition.
//!
//! Services used by every layer: [`config`], [`logging`], [`stats`], [`runtime`], [`errors`].

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// Open MPI's handles (MPI_Comm, MPI_Datatype, ...) are pointers, MPICH's are integers. Sluice
// treats them as opaque values that only the MPI dereferences (and validates), so safe functions
// taking a handle are sound; clippy cannot tell a handle from a pointer sluice reads.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

// The layers on the interception fast path (`intercept`, `protocol`, `runtime`, `ffi::next`) are
// crate-private: a static that a public `#[inline]` function can reach is exported from the
// rlib and addressed through the GOT in the `.so` (one more load per access, measured on the
// fast path); crate-private ones are addressed directly. Tests and tools use the public rest.
pub mod config;
pub mod datatype;
pub mod errors;
pub mod ffi;
pub mod hw;
pub(crate) mod intercept;
pub mod levels;
pub mod logging;
pub mod mapping;
pub mod pin;
pub(crate) mod protocol;
/// The engine choice `MPI_Pack`/`MPI_Unpack` make (for `sluice-ddt-bench`, which times it).
pub use protocol::pack_engine;
pub(crate) mod runtime;
pub mod stats;
pub mod tools;
pub mod transfer;
