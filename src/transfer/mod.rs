//! The transfer layer beneath the protocols: the staging buffers the point-to-point protocol
//! packs into and receives into, and the node's shared-memory channel that pipelined transfers
//! between ranks of one node use for their chunks. The path planner, transfer descriptors and
//! the pipelined runtime of the isometry design plug in here next to them.

pub mod shm;
pub mod staging;
