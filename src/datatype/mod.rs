//! The datatype engine (wired into MPI_Type_commit/free/dup and MPI_Pack/Unpack by
//! `src/protocol/datatype.rs`).
//!
//! - [`ir`]: the dataloop IR, a tree of loops over contiguous byte runs (pure Rust).
//! - [`normalize`]: rewrite rules that shrink a tree without changing its typemap or bounds.
//! - [`interp`]: the general interpreter: pack/unpack any byte range of the packed stream.
//! - [`kernel`]: specialized whole-element pack/unpack loops picked per type after
//!   normalization: contiguous, strided (nested vectors, any depth up to 7 levels, element loop
//!   folded in; column-per-element types run as a tiled transpose), block-indexed (offset
//!   table), small-runs (arrays of structs: fixed-width moves over tiles of elements) and
//!   indexed (`(offset, len)` table, with prefix sums for ranges); blocks of 1-64 bytes copy with
//!   fixed-size moves. Anything
//!   else (more than 64 Ki runs per element and no regular shape) uses the interpreter.
//! - [`compiled`]: [`compiled::CompiledType`], normalized dataloop + kernel, the per-type unit;
//!   [`form_cache`]: one compiled form per construction, shared by the handles that commit it.
//! - [`segment`]: the explicit resumable segment state (stack of loop positions) that
//!   checkpoints snapshot; [`checkpoint`]: checkpoint tables, the Δr model, the memory budget;
//!   [`parallel`]: the streaming interface and parallel pack/unpack (RW-CP, RO-CP, HPU-local);
//!   [`pool`]: the persistent worker threads they run on.
//! - [`decode`]: committed MPI datatype → IR via MPI_Type_get_envelope/get_contents (every
//!   combiner but the deprecated *_INTEGER ones, DARRAY included).
//!
//! Performance against Open MPI's and MPICH's own engines on the ddt suite:
//! `scripts/bench-ddt.sh` (`src/bin/sluice-ddt-bench.rs`), results in docs/benchmarks.md.
//!
//! Every kernel also runs any byte range `[first, last)` of the stream (`kernel/range.rs`,
//! [`compiled::CompiledType::pack_range`]); large unpacks stream whole lines past the cache
//! (`kernel/stores.rs`).
//!
//! Missing (later steps): wiring the parallel path into the p2p protocol (MPI_Pack/MPI_Unpack
//! use it: `src/protocol/parallel.rs`), the deprecated *_INTEGER combiners (decode
//! reports them unsupported so callers fall back to the MPI).

pub mod checkpoint;
pub mod choice;
pub mod compiled;
pub mod decode;
pub mod device_shape;
pub mod form_cache;
pub mod grain;
pub mod interp;
pub mod ir;
pub mod kernel;
pub mod normalize;
pub mod parallel;
pub mod pool;
pub mod probe;
pub mod segment;
#[cfg(test)]
pub(crate) mod testgen;

pub use ir::{DataLoop, Kind};
