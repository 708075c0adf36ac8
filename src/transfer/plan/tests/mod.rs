//! Tests across the planner: the paper's examples on the Sapling model (`paper`), the full
//! planner against brute force on generated machines (`random`), the cache, and timings for a
//! later benchmark (`timing`, ignored).

mod paper;
mod random;
mod timing;

use super::layout::{Component, Layout};
use super::model::{MemoryId, Model};
use super::planner::Transfer;

pub(super) const SAPLING: &str = include_str!("../models/sapling2.toml");

pub(super) fn sapling() -> Model {
    Model::from_toml_str(SAPLING).unwrap()
}

pub(super) fn mem(m: &Model, name: &str) -> MemoryId {
    m.memory_id(name).unwrap()
}

/// Row-major (`<F, x, y>`) to column-major (`<F, y, x>`) between two memories.
pub(super) fn transpose(m: &Model, src: &str, dst: &str, side: u64, field: u64) -> Transfer {
    let col = Layout::new(&[Component::Field, Component::Dim(1), Component::Dim(0)], 2).unwrap();
    Transfer::new(mem(m, src), Layout::aos(2), mem(m, dst), col, &[side, side], field).unwrap()
}

/// AOS to SOA, 1-D.
pub(super) fn aos_to_soa(m: &Model, src: &str, dst: &str, entries: u64, field: u64) -> Transfer {
    Transfer::new(mem(m, src), Layout::aos(1), mem(m, dst), Layout::soa(1), &[entries], field).unwrap()
}
