//! The datatype engine (core only; not yet wired into MPI_Pack / MPI_Type_commit).
//!
//! - [`ir`]: the dataloop IR, a tree of loops over contiguous byte runs (pure Rust).
//! - [`normalize`]: rewrite rules that shrink a tree without changing its typemap or bounds.
//! - [`interp`]: the general interpreter: pack/unpack any byte range of the packed stream.
//! - [`decode`]: committed MPI datatype → IR via MPI_Type_get_envelope/get_contents.
//!
//! Missing (later steps): interception of MPI_Type_commit/Pack/Unpack, specialized kernels
//! (strided copies, unrolled small blocks), prefix sums for O(log n) catch-up in large
//! indexed/struct levels, parallel checkpoints, DARRAY and the deprecated *_INTEGER combiners
//! (decode reports them unsupported so callers fall back to the MPI), benchmarks.

pub mod compiled;
pub mod decode;
pub mod interp;
pub mod kernel;
pub mod ir;
pub mod normalize;

pub use ir::{DataLoop, Kind};
