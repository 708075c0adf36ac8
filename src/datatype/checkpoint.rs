//! Checkpoints: snapshots of the segment state every Δr bytes of a packed stream (paper §3.2.4),
//! the checkpoint-interval model that picks Δr, and the memory budget shared by the checkpoint
//! tables of all types with least-recently-used eviction.
//!
//! A [`Checkpoints`] table belongs to one (type, count, Δr): it holds [`SegState`]s (offsets, no
//! addresses), so it is created once and reused for every buffer. It is immutable and shared
//! through `Arc`; the working copies RW-CP progresses live in each operation's
//! [`super::parallel::Stream`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::ir::DataLoop;
use super::segment::SegState;

/// Snapshots of the segment state at stream positions `0, Δr, 2Δr, ...` below the stream's end.
#[derive(Debug)]
pub struct Checkpoints {
    interval: usize,
    states: Vec<SegState>,
    bytes: usize,
}

impl Checkpoints {
    /// Builds the table for `count` elements of `dl` (one seek per checkpoint, O(depth · log n)
    /// each). `interval` is Δr (> 0).
    pub fn build(dl: &DataLoop, count: usize, interval: usize) -> Self {
        assert!(interval > 0, "checkpoint interval must be positive");
        let total = dl.size * count;
        let states: Vec<SegState> = (0..total.div_ceil(interval).max(1)).map(|c| SegState::seek(dl, count, c * interval)).collect();
        let bytes = std::mem::size_of::<Self>() + states.iter().map(SegState::footprint).sum::<usize>();
        Checkpoints { interval, states, bytes }
    }

    /// Δr.
    pub fn interval(&self) -> usize {
        self.interval
    }

    /// Number of checkpoints.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Always false: a table has at least the checkpoint at position 0.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Checkpoint `c` (at stream position `c * Δr`).
    pub fn get(&self, c: usize) -> &SegState {
        &self.states[c]
    }

    /// The last checkpoint at or before stream position `pos`, and its index.
    pub fn before(&self, pos: usize) -> (usize, &SegState) {
        let c = (pos / self.interval).min(self.states.len() - 1);
        (c, &self.states[c])
    }

    /// Memory held by the table, bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Inputs of the checkpoint-interval model (paper §3.2.4), all per operation.
#[derive(Clone, Copy, Debug)]
pub struct IntervalModel {
    /// Packed bytes of the whole operation, `m`.
    pub total: usize,
    /// Chunk size `k`, bytes.
    pub chunk: usize,
    /// Workers `P`.
    pub workers: usize,
    /// Time for one chunk to arrive (`T_pkt`), seconds: `k` over the link bandwidth when
    /// unpacking as chunks arrive, ~0 when the whole buffer is already there.
    pub t_pkt: f64,
    /// Handler time for one chunk (`T_PH(γ)`), seconds; see [`IntervalModel::handler_time`].
    pub t_ph: f64,
    /// Tolerated scheduling overhead, a fraction of the processing time (ε).
    pub epsilon: f64,
    /// Bytes of one checkpoint (`C`).
    pub checkpoint_bytes: usize,
    /// Memory the table may take (`M`): the budget's share for this type.
    pub memory: usize,
}

/// Per-chunk handler cost on the host: fixed start-up, per contiguous run, per byte copied.
/// Measured on this machine with `sluice-rwcp-bench` (docs/benchmarks.md, RW-CP section).
pub const T_CHUNK_INIT: f64 = 200e-9;
/// See [`T_CHUNK_INIT`].
pub const T_RUN: f64 = 2e-9;
/// See [`T_CHUNK_INIT`]: 1 / (~10 GB/s of copying).
pub const T_BYTE: f64 = 0.1e-9;

/// Contiguous runs the interpreter emits for one element of `dl` (adjacent runs not merged),
/// from the tree alone: O(blocks). Saturates instead of overflowing.
pub fn runs_per_element(dl: &DataLoop) -> usize {
    if dl.contiguous {
        return usize::from(dl.size > 0);
    }
    (0..dl.nblocks())
        .map(|i| {
            let (_, bl, c) = dl.block(i);
            if bl == 0 || c.size == 0 {
                0
            } else if DataLoop::block_contiguous(bl, c) {
                1
            } else {
                bl.saturating_mul(runs_per_element(c))
            }
        })
        .fold(0, usize::saturating_add)
}

/// Defaults of the model's inputs: chunk size `k`, and the link bandwidth that sets `T_pkt`
/// for chunks arriving from the network (100 Gb/s).
pub const DEFAULT_CHUNK: usize = 64 << 10;
/// See [`DEFAULT_CHUNK`]; bytes per second.
pub const DEFAULT_LINK_BW: f64 = 12.5e9;

impl IntervalModel {
    /// The model for `count` elements of `dl` arriving in chunks of `chunk` bytes at
    /// `link_bw` bytes/s (0: all present) on `workers` workers; `T_PH` from
    /// [`IntervalModel::handler_time`] with the type's mean run length, `C` from the state at 0.
    pub fn for_type(dl: &DataLoop, count: usize, chunk: usize, workers: usize, link_bw: f64, epsilon: f64, memory: usize) -> Self {
        let runs = runs_per_element(dl).max(1) as f64;
        let chunk = chunk.max(1);
        IntervalModel {
            total: dl.size * count,
            chunk,
            workers,
            t_pkt: if link_bw > 0.0 { chunk as f64 / link_bw } else { 0.0 },
            t_ph: Self::handler_time(chunk, dl.size as f64 / runs),
            epsilon,
            checkpoint_bytes: SegState::seek(dl, count, 0).footprint(),
            memory,
        }
    }

    /// `T_PH(γ) = T_init + γ · T_block` plus the copy itself, for a chunk of `chunk` bytes of a
    /// type whose contiguous runs average `avg_run` bytes (γ = chunk / avg_run).
    pub fn handler_time(chunk: usize, avg_run: f64) -> f64 {
        let gamma = chunk as f64 / avg_run.max(1.0);
        T_CHUNK_INIT + gamma * T_RUN + chunk as f64 * T_BYTE
    }

    /// The scheduling-overhead condition for waking workers that take `t_start` seconds to
    /// start (a worker pool's wake-up, [`super::pool::T_WAKE`]): the paper's ε bound with the
    /// start-up in place of the packet arrivals, `t_start <= ε · ⌈n/P⌉ · T_PH`. With the whole
    /// buffer present this is what ε decides: whether parallel processing pays at all.
    pub fn start_within_epsilon(&self, t_start: f64) -> bool {
        let n = self.total.div_ceil(self.chunk.max(1)).max(1);
        t_start <= self.epsilon * n.div_ceil(self.workers.max(1)) as f64 * self.t_ph
    }

    /// Δr, a multiple of the chunk size `k`: the largest `Δp = Δr / k` with
    ///
    /// ```text
    ///   T_pkt + Δp · (P − 1) · T_pkt  <=  ε · ⌈n/P⌉ · T_PH          (scheduling overhead)
    /// ```
    ///
    /// capped at `⌈n/P⌉` (every worker gets a sequence; with `T_pkt = 0` or `P = 1` that is the
    /// cap), and raised to the smallest `Δp` with `⌈m / Δr⌉ · C <= M` when memory is the
    /// tighter bound (then ε is exceeded rather than the budget). `n = ⌈m/k⌉` chunks.
    pub fn interval(&self) -> usize {
        let k = self.chunk.max(1);
        let p = self.workers.max(1);
        let n = self.total.div_ceil(k).max(1);
        let per_worker = n.div_ceil(p);
        let mut dp = per_worker;
        if p > 1 && self.t_pkt > 0.0 {
            let slack = self.epsilon * per_worker as f64 * self.t_ph - self.t_pkt;
            let fit = (slack / ((p - 1) as f64 * self.t_pkt)).floor();
            dp = dp.min(if fit.is_finite() && fit >= 1.0 { fit as usize } else { 1 });
        }
        let c = self.checkpoint_bytes.max(1);
        let max_ckpts = (self.memory / c).max(1);
        let min_dp = n.div_ceil(max_ckpts);
        dp.max(min_dp).max(1) * k
    }
}

/// Identifies a table in a [`CheckpointCache`]: the caller's type id, count and Δr.
pub type TableKey = (u64, usize, usize);

struct Entry {
    table: Arc<Checkpoints>,
    priority: i32,
    last_use: u64,
}

struct CacheInner {
    entries: HashMap<TableKey, Entry>,
    used: usize,
    clock: u64,
}

/// The checkpoint memory budget: tables of all types, evicted lowest priority first, then least
/// recently used; a table only evicts tables of its priority or lower. Thread-safe (one mutex; every call is short).
///
/// The budget bounds the tables the cache holds. An evicted table stays alive while an
/// operation still holds its `Arc`, and a table larger than the whole budget is returned but
/// not kept (as is one that only higher-priority tables could make room for);
/// [`IntervalModel::interval`] sizes tables to fit their share.
pub struct CheckpointCache {
    budget: usize,
    inner: Mutex<CacheInner>,
}

impl CheckpointCache {
    /// A cache holding at most `budget` bytes of checkpoint tables.
    pub fn new(budget: usize) -> Self {
        CheckpointCache { budget, inner: Mutex::new(CacheInner { entries: HashMap::new(), used: 0, clock: 0 }) }
    }

    /// The budget, bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes of tables held now (never above the budget).
    pub fn used(&self) -> usize {
        self.lock().used
    }

    /// Number of tables held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no table is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        // A panic while holding the lock leaves the map consistent (no multi-step updates).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The table for `key`, built with `build` on a miss (outside the lock; two threads missing
    /// together may both build, one result is kept). `priority`: higher is evicted later.
    pub fn get_or_build(&self, key: TableKey, priority: i32, build: impl FnOnce() -> Checkpoints) -> Arc<Checkpoints> {
        {
            let mut g = self.lock();
            g.clock += 1;
            let now = g.clock;
            if let Some(e) = g.entries.get_mut(&key) {
                e.last_use = now;
                e.priority = priority;
                return e.table.clone();
            }
        }
        let table = Arc::new(build());
        let size = table.bytes();
        if size > self.budget {
            return table;
        }
        let mut g = self.lock();
        if let Some(e) = g.entries.get(&key) {
            return e.table.clone();
        }
        while g.used + size > self.budget {
            // Only tables of the same or lower priority make room.
            let victim =
                g.entries.iter().filter(|(_, e)| e.priority <= priority).min_by_key(|(_, e)| (e.priority, e.last_use)).map(|(k, _)| *k);
            let Some(v) = victim else { return table };
            let e = g.entries.remove(&v).expect("victim present");
            g.used -= e.table.bytes();
        }
        g.clock += 1;
        let last_use = g.clock;
        g.used += size;
        g.entries.insert(key, Entry { table: table.clone(), priority, last_use });
        table
    }

    /// Drops every table of type `id` (the type was freed).
    pub fn forget_type(&self, id: u64) {
        let mut g = self.lock();
        let gone: Vec<TableKey> = g.entries.keys().filter(|k| k.0 == id).copied().collect();
        for k in gone {
            let e = g.entries.remove(&k).expect("key present");
            g.used -= e.table.bytes();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::testgen::arb_dl;
    use proptest::prelude::*;

    fn model(total: usize, workers: usize, t_pkt: f64, memory: usize) -> IntervalModel {
        let chunk = 64 << 10;
        IntervalModel {
            total,
            chunk,
            workers,
            t_pkt,
            t_ph: IntervalModel::handler_time(chunk, 64.0),
            epsilon: 0.2,
            checkpoint_bytes: 128,
            memory,
        }
    }

    #[test]
    fn interval_model() {
        let k = 64 << 10;
        // Everything present: one sequence per worker.
        assert_eq!(model(64 * k, 4, 0.0, 1 << 20).interval(), 16 * k);
        assert_eq!(model(64 * k, 1, 1e-6, 1 << 20).interval(), 64 * k);
        // Chunks arriving: the ε bound shortens the sequences...
        let arriving = model(64 * k, 4, k as f64 / 12.5e9, 1 << 20).interval();
        assert!(arriving < 16 * k && arriving % k == 0, "{arriving}");
        // ... unless memory allows fewer checkpoints only (4 of 128 B here).
        assert_eq!(model(64 * k, 4, k as f64 / 12.5e9, 512).interval(), 16 * k);
    }

    #[test]
    fn epsilon_bounds_the_start_up_overhead() {
        let k = 64 << 10;
        // 16 chunks per worker of ~9 µs each: 10 µs to start is 7% of a worker's share.
        let m = model(64 * k, 4, 0.0, 1 << 20);
        assert!(m.start_within_epsilon(10e-6));
        assert!(!IntervalModel { epsilon: 0.01, ..m }.start_within_epsilon(10e-6));
        assert!(!model(k, 4, 0.0, 1 << 20).start_within_epsilon(10e-6), "one chunk: not worth waking anyone");
    }

    #[test]
    fn runs_are_counted_from_the_tree() {
        let dl = DataLoop::vector(100, 3, 40, DataLoop::bytes(8));
        assert_eq!(runs_per_element(&dl), 100);
        let nested = DataLoop::contig(4, DataLoop::vector(5, 1, 16, DataLoop::bytes(8)));
        assert_eq!(runs_per_element(&nested), 20);
        assert_eq!(runs_per_element(&DataLoop::bytes(8)), 1);
    }

    #[test]
    fn checkpoints_sit_every_interval() {
        let dl = DataLoop::vector(100, 3, 40, DataLoop::bytes(8));
        let t = Checkpoints::build(&dl, 2, 100);
        assert_eq!(t.len(), 48);
        assert_eq!(t.before(250).0, 2);
        assert_eq!(t.before(250).1, &SegState::seek(&dl, 2, 200));
        assert_eq!(t.before(1 << 20).0, 47);
    }

    proptest! {
        /// Random insertions of random tables: the cache never holds more than its budget, and
        /// a table of higher priority than everything else is kept while it fits.
        #[test]
        fn budget_never_exceeded(
            budget in 0usize..4096,
            ops in prop::collection::vec((arb_dl(), 1usize..4, 1usize..64, 0u64..6, -1i32..2), 1..24),
        ) {
            let cache = CheckpointCache::new(budget);
            for (dl, count, interval, id, prio) in ops {
                let t = cache.get_or_build((id, count, interval), prio, || Checkpoints::build(&dl, count, interval));
                prop_assert!(t.interval() == interval);
                prop_assert!(cache.used() <= budget);
            }
            let vip = cache.get_or_build((99, 1, 1), 100, || Checkpoints::build(&DataLoop::bytes(1), 1, 1));
            let fits = vip.bytes() <= budget;
            cache.get_or_build((98, 1, 1), 0, || Checkpoints::build(&DataLoop::bytes(1), 1, 1));
            if fits {
                let again = cache.get_or_build((99, 1, 1), 100, || unreachable!("kept"));
                prop_assert!(Arc::ptr_eq(&vip, &again));
            }
            prop_assert!(cache.used() <= budget);
            cache.forget_type(99);
            prop_assert!(cache.used() <= budget);
        }
    }
}
