//! The transfer layer beneath the protocols: today the staging buffers the point-to-point
//! protocol packs into and receives into. The path planner, transfer descriptors and the
//! pipelined runtime of the isometry design plug in here next to it.

pub mod staging;
