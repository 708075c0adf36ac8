//! The protocol layer: owns MPI semantics. Each intercepted call whose registry entry names a
//! handler here (instead of `forward`) lands in this module with the C function's exact
//! signature. Today: the environment (`init`: init/finalize) and datatypes (`datatype`: commit,
//! free, dup, pack, unpack, pack size) and point-to-point (`p2p`: sends, receives and the
//! completion family for non-contiguous datatypes) and collectives (`coll`: data-movement
//! collectives with non-contiguous datatypes run on bytes). `layout` is the engine's view of a
//! typed buffer, shared by both protocols.
//! `device` stages device (GPU) buffers through host memory around the handlers of both.
//! `byte_twin` gives a compiled type's layout as `MPI_BYTE`s, for receives left to the MPI.
//! `reorder` places the ranks of topology constructors called with `reorder = true`.
//! `hints` (the datatype attribute keyvals) and `parallel` (when MPI_Pack/MPI_Unpack run on
//! several workers) serve `datatype`. `pack_engine` runs a whole-element pack or unpack on the
//! engine chosen for the type (sluice's kernel or the MPI's), for `MPI_Pack`/`MPI_Unpack` and,
//! inside the application's calls, for messages and collectives; `type_prefix` gives it the MPI
//! type of an element's first blocks to time the MPI's engine on. `quiet` sets
//! `MPI_COMM_WORLD`'s error handler aside while sluice asks the MPI something that may fail;
//! `app_level` is the thread level the application runs at.

pub mod app_level;
pub mod byte_twin;
pub mod coll;
pub mod comm_cache;
pub mod comm_facts;
pub mod comm_hints;
pub mod copy;
pub mod datatype;
pub mod device;
pub mod hints;
pub mod init;
pub mod layout;
pub mod levels;
pub mod levels_msg;
pub mod limits;
pub mod p2p;
pub mod pack_engine;
pub mod parallel;
pub mod profile;
pub mod quiet;
pub mod reorder;
pub mod rma;
pub mod type_prefix;
