//! Topology-aware mapping (issue 25; the MAGC paper, `shared/papers/magc-gpu-cluster-mapping.md`):
//! who talks to whom ([`matrix`]), what the machine looks like ([`topology`], [`tree`]), and
//! where each rank should run ([`magc`]: the paper's three phases with its greedy heuristic
//! ([`greedy`]) or Scotch's graph mapping ([`scotch`]) in phases 2 and 3, and sluice's
//! refinement pass ([`refine`]), plus the paper's baselines).
//! `sluice-map` is the tool around it (docs/mapping.md).
//!
//! An engine: it knows nothing of MPI. Layers above hand it matrices and topologies.

pub mod assign;
pub mod greedy;
pub mod magc;
pub mod matrix;
pub mod patterns;
pub mod placement;
pub mod refine;
pub mod reorder;
pub mod scotch;
pub mod topology;
pub mod tree;

#[cfg(test)]
mod tests;
