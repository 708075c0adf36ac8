//! The protocol layer: owns MPI semantics. Each intercepted call whose registry entry names a
//! handler here (instead of `forward`) lands in this module with the C function's exact
//! signature. Today that is the environment (init/finalize); the datatype engine and the
//! point-to-point and collective protocols add their handlers here.

pub mod datatype;
pub mod init;
