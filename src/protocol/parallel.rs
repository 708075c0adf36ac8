//! When and how MPI_Pack/MPI_Unpack run on several workers: checkpointed parallel processing
//! (RW-CP, `src/datatype/parallel.rs`) on the persistent worker pool.
//!
//! An operation of `count` elements of a compiled type goes parallel when all of these hold:
//! `SLUICE_THREADS` > 1; its packed size is at least `SLUICE_PARALLEL_MIN` (default `off`,
//! docs/configuration.md); the type's
//! `SLUICE_HINT_PARALLEL` is not 0 ([`super::hints`]); waking the workers costs at most ε of
//! each worker's share ([`IntervalModel::start_within_epsilon`] with the pool's
//! [`pool::T_WAKE`], ε from the type's hint or `SLUICE_CKPT_EPSILON`); and the pool is free
//! (another thread's operation holds it: this one runs serially). Otherwise the serial kernel runs.
//!
//! Each worker runs its share of the stream with the type's range kernel
//! ([`Stream::kernel`]): no checkpoints. Only interpreter types (no compiled kernel) run RW-CP
//! over a checkpoint table from one process-wide [`CheckpointCache`] (budget
//! `SLUICE_CKPT_MEMORY`, the type's `SLUICE_HINT_PRIORITY`), keyed by the compiled type's id,
//! the count and Δr: built on the first such operation (counted in the `ddt-ckpt` statistics
//! row) and reused for every buffer. With the whole buffer present Δr is one sequence per worker
//! unless memory forces fewer checkpoints. Operations that ran parallel are counted in the
//! `ddt-parallel` row.

use std::sync::{Arc, OnceLock};

use crate::datatype::checkpoint::{CheckpointCache, Checkpoints, IntervalModel, DEFAULT_CHUNK};
use crate::datatype::compiled::CompiledType;
use crate::datatype::parallel::{self, Strategy, Stream};
use crate::datatype::pool;
use crate::ffi::mpi;
use crate::stats::{self, Family};

use super::hints;

/// The checkpoint tables of all types (created with the budget of the configuration).
fn cache() -> Option<&'static CheckpointCache> {
    static CACHE: OnceLock<CheckpointCache> = OnceLock::new();
    let cfg = crate::runtime::config()?;
    Some(CACHE.get_or_init(|| CheckpointCache::new(cfg.ckpt_memory)))
}

/// `SLUICE_THREADS`, `auto` resolved once (hwloc).
fn workers() -> usize {
    static AUTO: OnceLock<usize> = OnceLock::new();
    match crate::runtime::config().map(|c| c.threads) {
        Some(Some(n)) => n,
        Some(None) => *AUTO.get_or_init(parallel::default_workers),
        None => 1,
    }
}

/// A parallel plan for one operation: the stream's inputs (`table`: RW-CP's checkpoints, for
/// interpreter types only).
struct Plan {
    chunk: usize,
    workers: usize,
    table: Option<Arc<Checkpoints>>,
}

impl Plan {
    /// The stream over `count` elements of `c` this plan describes.
    fn stream<'a>(&self, c: &'a CompiledType, count: usize) -> Stream<'a> {
        match &self.table {
            Some(t) => Stream::new(c.dataloop(), count, Strategy::RwCp, self.chunk, self.workers, t.clone()),
            None => Stream::kernel(c, count, self.chunk, self.workers),
        }
    }
}

/// Whether `count` elements of `c` (the compiled form of `t`) go parallel, and with what.
fn plan(t: mpi::MPI_Datatype, c: &CompiledType, count: usize) -> Option<Plan> {
    let cfg = crate::runtime::config()?;
    let total = c.size().checked_mul(count)?;
    if total == 0 || total < cfg.parallel_min {
        return None; // most calls: decided before anything else is looked at
    }
    let workers = workers();
    if workers <= 1 {
        return None;
    }
    let h = hints::read(t, cfg.ckpt_epsilon);
    if !h.parallel {
        return None;
    }
    // Every worker gets at least one chunk.
    let chunk = DEFAULT_CHUNK.min(total.div_ceil(workers)).max(1);
    let cache = cache()?;
    let dl = c.dataloop();
    let model = IntervalModel::for_type(dl, count, chunk, workers, 0.0, h.epsilon, cache.budget());
    if !model.start_within_epsilon(pool::T_WAKE) {
        return None;
    }
    if c.kernel().runs_ranges() {
        return Some(Plan { chunk, workers, table: None });
    }
    let interval = model.interval();
    let table = cache.get_or_build((c.id(), count, interval), h.priority, || {
        let table = Checkpoints::build(dl, count, interval);
        stats::count(Family::Checkpoints, table.bytes());
        table
    });
    Some(Plan { chunk, workers, table: Some(table) })
}

/// Packs `count` elements of `c` (compiled `t`) from `src` into `out` in parallel if the
/// operation qualifies (module doc); `false`: nothing was done, run the serial path.
///
/// # Safety
/// As [`CompiledType::pack`].
pub unsafe fn try_pack(t: mpi::MPI_Datatype, c: &CompiledType, count: usize, src: *const u8, out: &mut [u8]) -> bool {
    let Some(p) = plan(t, c, count) else { return false };
    let stream = p.stream(c, count);
    // SAFETY: forwarded contract (`out` holds the stream: `CompiledType::pack`'s contract).
    let done = unsafe { parallel::try_pack(&stream, src, out) };
    if done {
        stats::count(Family::Parallel, stream.len());
    }
    done
}

/// Unpacks `input` into `count` elements of `c` (compiled `t`) at `dst` in parallel if the
/// operation qualifies; `false`: nothing was done.
///
/// # Safety
/// As [`CompiledType::unpack`], and the typemap of the `count` elements addresses no byte twice
/// (MPI makes receiving, and so unpacking, into overlapping entries erroneous).
pub unsafe fn try_unpack(t: mpi::MPI_Datatype, c: &CompiledType, count: usize, input: &[u8], dst: *mut u8) -> bool {
    let Some(p) = plan(t, c, count) else { return false };
    let stream = p.stream(c, count);
    // SAFETY: forwarded contract.
    let done = unsafe { parallel::try_unpack(&stream, input, dst) };
    if done {
        stats::count(Family::Parallel, stream.len());
    }
    done
}

/// Drops the checkpoint tables of a compiled type that no handle uses any more.
pub fn forget(c: &CompiledType) {
    if let Some(cache) = cache() {
        cache.forget_type(c.id());
    }
}

/// At MPI_Finalize: stops the worker threads (joined).
pub fn shutdown() {
    pool::global().shutdown();
}
