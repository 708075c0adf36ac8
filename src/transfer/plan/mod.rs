//! The path planner of the isometry design (Jia et al., "Isometry: A Path-Based Distributed Data
//! Transfer System", ICS '18, Sections 2-4): given a machine model (memories, channels with
//! throughput curves, a space threshold) and a transfer (source and destination memory and
//! layout), choose the path, the layout of every intermediate buffer and the block factors with
//! the highest predicted throughput. Pure computation: no MPI, no I/O but reading a model file.
//! The plan is immutable; a runtime only instantiates it.
//!
//! - `curve`, `model`, `file`: the transfer graph and its TOML model files (`models/`).
//! - `layout`: layouts, PREFIX and shuffle sizes as affine functions of the block factors.
//! - `solve`: block factors for fixed layouts; `grid` + `search`: layouts and block factors
//!   together, for one path.
//! - `full` (+ `frontier`): the full planner over all paths; `baselines`: the simple planner,
//!   SPSL and SPDL.
//! - `planner`: the transfer and the plan (with `explain`); `cache`: plans by transfer class.
//! - tests: the paper's examples, and the full planner against brute force (`brute`).

mod baselines;
#[cfg(test)]
mod brute;
mod cache;
mod curve;
mod file;
mod frontier;
mod full;
mod grid;
mod layout;
mod model;
mod planner;
mod search;
mod solve;
#[cfg(test)]
mod tests;

pub use baselines::{shortest_path, simple, spdl, spsl};
pub use cache::{PlanCache, PlanKey};
pub use curve::{Curve, CurveError};
pub use full::{full, MAX_CHANNELS, MAX_HOPS, MAX_MEMORIES};
pub use layout::{
    candidates, common, prefix, shuffle, Affine, Candidates, Component, Layout, LayoutError, Shape, MAX_COMPONENTS, MAX_DIMS,
};
pub use model::{Channel, ChannelId, ChannelKind, Memory, MemoryId, MemoryKind, Model, ModelError};
pub use planner::{Hop, Plan, Transfer};
pub use solve::{FixedHop, FixedPath};
