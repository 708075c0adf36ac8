//! The transfer layer beneath the protocols: the staging buffers the point-to-point and
//! collective protocols pack into and receive into (with hollow ones for unread own slots),
//! the node's shared-memory channel that pipelined transfers between ranks of one node use
//! for their chunks, which ranks share a node (`node`), and how staged bytes for another node
//! are laid out for the MPI's network path (`netpath`). The isometry design's path planner
//! (`plan`: paths, intermediate layouts and block factors over a machine model) is here too;
//! its transfer descriptors and pipelined runtime plug in next to them. `gpu` is device memory:
//! which buffers live on a CUDA device, pinned host staging, and the copies between them.

pub mod gpu;
mod hollow;
pub mod mpi_calibrate;
pub mod netpath;
pub mod node;
pub mod plan;
pub mod receipt;
pub mod runtime;
pub mod shm;
pub mod staging;
