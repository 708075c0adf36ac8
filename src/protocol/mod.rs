//! The protocol layer: owns MPI semantics. Each intercepted call whose registry entry names a
//! handler here (instead of `forward`) lands in this module with the C function's exact
//! signature. Today: the environment (`init`: init/finalize) and datatypes (`datatype`: commit,
//! free, dup, pack, unpack, pack size); the point-to-point and collective protocols add theirs.

pub mod datatype;
pub mod init;
