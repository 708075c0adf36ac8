//! The transfer layer beneath the protocols: the staging buffers the point-to-point and
//! collective protocols pack into and receive into (with hollow ones for unread own slots),
//! the node's shared-memory channel that pipelined transfers between ranks of one node use
//! for their chunks, and which ranks share a node (`node`). The path planner, transfer descriptors and
//! the pipelined runtime of the isometry design plug in here next to them.

mod hollow;
pub mod node;
pub mod shm;
pub mod staging;
