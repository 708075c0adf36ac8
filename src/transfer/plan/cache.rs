//! Plans by transfer class, so that an iterative application plans each kind of transfer once
//! (the paper's Section 4.2 cache; Table 6 shows no new plans after the first iteration).
//!
//! A class is what the plan depends on: the two memories, the two layouts (expanded, so that
//! `x` and `x_in, x_out` are one class), the extents (block factors are per dimension and must
//! fit them) and the size class `floor(log2 TOTAL)`, which leaves out only the exact field size.
//! A failed plan is cached too: asking again would fail again.
//!
//! Not shared between threads by itself (it counts hits without atomics); keep one per thread or
//! put it behind a lock. The plans it hands out are `Arc`s and may be used anywhere.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::layout::{Layout, MAX_DIMS};
use super::model::{MemoryId, Model};
use super::planner::{Plan, Transfer};

/// The cache key of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanKey {
    pub src: MemoryId,
    pub dst: MemoryId,
    pub src_layout: Layout,
    pub dst_layout: Layout,
    pub log2_extents: [u32; MAX_DIMS],
    /// `floor(log2 TOTAL bytes)`.
    pub size_class: u32,
}

impl PlanKey {
    pub fn of(t: &Transfer) -> PlanKey {
        PlanKey {
            src: t.src(),
            dst: t.dst(),
            src_layout: t.src_layout().expand(),
            dst_layout: t.dst_layout().expand(),
            log2_extents: t.shape().log2_extents(),
            size_class: 127 - t.shape().total_bytes().leading_zeros(),
        }
    }
}

/// Plans by [`PlanKey`], with hit and miss counts.
#[derive(Default)]
pub struct PlanCache {
    plans: FxHashMap<PlanKey, Option<Arc<Plan>>>,
    hits: u64,
    misses: u64,
}

impl PlanCache {
    pub fn new() -> PlanCache {
        PlanCache::default()
    }

    /// The cached plan of `t`'s class, or `planner`'s plan for `t` (cached).
    pub fn get_or_plan(
        &mut self,
        model: &Model,
        t: &Transfer,
        planner: impl FnOnce(&Model, &Transfer) -> Option<Plan>,
    ) -> Option<Arc<Plan>> {
        let key = PlanKey::of(t);
        if let Some(p) = self.plans.get(&key) {
            self.hits += 1;
            return p.clone();
        }
        self.misses += 1;
        let plan = planner(model, t).map(Arc::new);
        self.plans.insert(key, plan.clone());
        plan
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }

    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Classes cached (failed ones included).
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }

    /// Forgets every plan (for a new machine model); the counts stay.
    pub fn clear(&mut self) {
        self.plans.clear();
    }
}
