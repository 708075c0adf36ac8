//! Checkpointed parallel datatype processing (paper §3.2.4): the streaming interface
//! [`Stream`] ("process bytes `[first, last)` of this packed stream into/out of this buffer",
//! callable concurrently and in any order) under three strategies, and whole-buffer parallel
//! pack/unpack on `P` workers: the calling thread and `P - 1` threads of the persistent
//! [`pool`].
//!
//! Strategies ([`Strategy`]), chunks of `k` bytes:
//! - **RW-CP**: one working copy per checkpoint, progressed in place. Chunks are assigned in
//!   sequences of `Δp = Δr / k` consecutive chunks, sequence `s` to worker `s mod P` (blocked
//!   round-robin), so each worker owns the working copies of its sequences; in order, a chunk
//!   starts exactly where the copy stands (no catch-up). A chunk behind the copy resets it from
//!   the master (the shared [`Checkpoints`] table), then catches up.
//! - **RO-CP**: every chunk copies the nearest checkpoint at or before it and catches up from
//!   there; nothing is written back. Chunk `c` goes to worker `c mod P`.
//! - **HPU-local**: one segment state per worker (chunk `c` to worker `c mod P`), reset to the
//!   start of the stream when a chunk lies behind it, otherwise caught up.
//!
//! Catch-up is [`Cursor::catch_up`] (no copying, linear in the runs skipped, as MPITypes');
//! [`Counters`] count its bytes, the resets and the checkpoint copies.
//!
//! Types whose kernel runs ranges ([`super::kernel::Kernel::runs_ranges`]: every kernel but the
//! interpreter) need none of this: a chunk finds its place by arithmetic and runs at kernel
//! speed ([`Stream::kernel`]). Their chunks are assigned in blocks, worker `w` taking the `w`-th
//! of `P` consecutive shares of the stream (whole chunks each), so each worker streams through
//! one region of memory. The strategies above remain for interpreter types and for comparison.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use super::checkpoint::Checkpoints;
use super::compiled::CompiledType;
use super::ir::DataLoop;
use super::pool;
use super::segment::{Cursor, SegState};

/// How a [`Stream`] finds the segment state for a chunk (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Progressing checkpoints with master copies.
    RwCp,
    /// Read-only checkpoints, copied per chunk.
    RoCp,
    /// One state per worker, from the start of the stream.
    HpuLocal,
}

impl Strategy {
    /// All strategies, for tests and benchmarks.
    pub const ALL: [Strategy; 3] = [Strategy::RwCp, Strategy::RoCp, Strategy::HpuLocal];

    /// Short name (`rwcp`, `rocp`, `local`).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::RwCp => "rwcp",
            Strategy::RoCp => "rocp",
            Strategy::HpuLocal => "local",
        }
    }
}

/// Work a stream did besides moving bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Stream bytes skipped by catch-up phases.
    pub catch_up_bytes: u64,
    /// Working states reset (RW-CP: from the master; HPU-local: to the start).
    pub resets: u64,
    /// Checkpoints copied (RO-CP: one per chunk; RW-CP: first use of each working copy).
    pub copies: u64,
}

/// One processing of a packed stream: `count` elements of a type, a chunk size and a worker
/// count, with the type's range kernel ([`Stream::kernel`]) or with a strategy over a checkpoint
/// table ([`Stream::new`]). Thread-safe: the working states sit behind one mutex each
/// (uncontended under the assignment in the module doc), the counters are atomic. Create one
/// per operation (per buffer); the checkpoint table is shared.
pub struct Stream<'a> {
    dl: &'a DataLoop,
    count: usize,
    chunk: usize,
    workers: usize,
    how: How<'a>,
    catch_up: AtomicU64,
    resets: AtomicU64,
    copies: AtomicU64,
}

/// How a chunk finds its place in the type.
enum How<'a> {
    /// The type's range kernel: positions are arithmetic, there is no state. `share` is the
    /// stream bytes each worker owns (whole chunks).
    Kernel { ct: &'a CompiledType, share: usize },
    /// The interpreter from a segment state found with a strategy.
    Segment {
        strategy: Strategy,
        ckpts: Arc<Checkpoints>,
        /// RW-CP: one per checkpoint; HPU-local: one per worker; RO-CP: none.
        slots: Vec<Mutex<Option<SegState>>>,
    },
}

impl<'a> Stream<'a> {
    /// A stream over `count` elements of `dl` run by the interpreter with `strategy`. `ckpts`
    /// must have been built for the same `(dl, count)`; HPU-local only uses its first
    /// checkpoint (the start).
    pub fn new(dl: &'a DataLoop, count: usize, strategy: Strategy, chunk: usize, workers: usize, ckpts: Arc<Checkpoints>) -> Self {
        assert!(chunk > 0 && workers > 0, "chunk size and workers must be positive");
        let n = match strategy {
            Strategy::RwCp => ckpts.len(),
            Strategy::RoCp => 0,
            Strategy::HpuLocal => workers,
        };
        let slots = (0..n).map(|_| Mutex::new(None)).collect();
        Self::with(dl, count, chunk, workers, How::Segment { strategy, ckpts, slots })
    }

    /// A stream over `count` elements of `ct` run by its range kernel (the interpreter's range
    /// walk for interpreter types, positioned from the root for each chunk).
    pub fn kernel(ct: &'a CompiledType, count: usize, chunk: usize, workers: usize) -> Self {
        assert!(chunk > 0 && workers > 0, "chunk size and workers must be positive");
        let share = (ct.size() * count).div_ceil(workers).div_ceil(chunk).max(1) * chunk;
        Self::with(ct.dataloop(), count, chunk, workers, How::Kernel { ct, share })
    }

    fn with(dl: &'a DataLoop, count: usize, chunk: usize, workers: usize, how: How<'a>) -> Self {
        Stream { dl, count, chunk, workers, how, catch_up: AtomicU64::new(0), resets: AtomicU64::new(0), copies: AtomicU64::new(0) }
    }

    /// Packed bytes of the stream.
    pub fn len(&self) -> usize {
        self.dl.size * self.count
    }

    /// Whether the stream is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Chunk size `k`.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        Counters { catch_up_bytes: self.catch_up.load(Relaxed), resets: self.resets.load(Relaxed), copies: self.copies.load(Relaxed) }
    }

    /// Worker that owns the chunk starting at stream byte `first` (module doc).
    pub fn owner(&self, first: usize) -> usize {
        match &self.how {
            How::Kernel { share, .. } => first / share,
            How::Segment { strategy: Strategy::RwCp, ckpts, .. } => (first / ckpts.interval()) % self.workers,
            How::Segment { .. } => (first / self.chunk) % self.workers,
        }
    }

    /// Moves `st` to `first` (catch-up counted) and emits the runs of `[first, last)`, each with
    /// the stream offset it starts at.
    fn run_from(&self, st: &mut SegState, first: usize, last: usize, emit: &mut impl FnMut(i64, usize, usize)) {
        let mut cur = Cursor::new(self.dl, self.count, st);
        let skipped = cur.catch_up(first);
        self.catch_up.fetch_add(skipped as u64, Relaxed);
        let mut at = first;
        cur.process(last - first, |off, len| {
            emit(off, len, at);
            at += len;
        });
    }

    /// Emits the memory runs of stream bytes `[first, last)` as `(offset, len, stream offset)`
    /// (the interpreter's path).
    fn for_each_run(&self, first: usize, last: usize, mut emit: impl FnMut(i64, usize, usize)) {
        assert!(first <= last && last <= self.len(), "range [{first}, {last}) outside the stream of {} bytes", self.len());
        let How::Segment { strategy, ckpts, slots } = &self.how else { unreachable!("kernel streams do not walk runs") };
        let mut first = first;
        while first < last {
            let (c, master) = ckpts.before(first);
            match strategy {
                Strategy::RoCp => {
                    let mut st = master.clone();
                    self.copies.fetch_add(1, Relaxed);
                    return self.run_from(&mut st, first, last, &mut emit);
                }
                Strategy::RwCp => {
                    // A sequence ends at the next checkpoint; the rest goes to the next one.
                    let end = last.min((c + 1).saturating_mul(ckpts.interval()));
                    let end = if c + 1 == ckpts.len() { last } else { end };
                    self.with_slot(&slots[c], master, first, &mut |st| self.run_from(st, first, end, &mut emit));
                    first = end;
                }
                Strategy::HpuLocal => {
                    let w = (first / self.chunk) % self.workers;
                    let start = ckpts.get(0);
                    return self.with_slot(&slots[w], start, first, &mut |st| self.run_from(st, first, last, &mut emit));
                }
            }
        }
    }

    /// Runs `f` on the working state in `slot`, first made from `base` (or reset to it when it stands
    /// past `first`).
    fn with_slot(&self, slot: &Mutex<Option<SegState>>, base: &SegState, first: usize, f: &mut dyn FnMut(&mut SegState)) {
        let mut g = slot.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_mut() {
            None => {
                self.copies.fetch_add(1, Relaxed);
                *g = Some(base.clone());
            }
            Some(st) if st.pos() > first => {
                self.resets.fetch_add(1, Relaxed);
                st.clone_from(base);
            }
            Some(_) => {}
        }
        f(g.as_mut().expect("slot initialized above"));
    }

    /// Packs stream bytes `[first, last)` from the buffer at `src` into `out[..last - first]`.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `src` must be
    /// readable, not overlap `out`, and not be written concurrently.
    pub unsafe fn pack(&self, src: *const u8, first: usize, last: usize, out: &mut [u8]) {
        assert!(out.len() >= last - first, "output too short");
        if let How::Kernel { ct, .. } = self.how {
            // SAFETY: forwarded contract.
            return unsafe { ct.pack_range(src, self.count, first, last, out) };
        }
        self.for_each_run(first, last, |off, len, at| {
            let o = &mut out[at - first..at - first + len];
            // SAFETY: the run is part of the typemap (caller's contract) and does not overlap
            // `out`; `off` is a signed displacement from `src` inside the user's allocation.
            unsafe { std::ptr::copy_nonoverlapping(src.offset(off as isize), o.as_mut_ptr(), len) };
        });
    }

    /// Unpacks `input[..last - first]`, stream bytes `[first, last)`, into the buffer at `dst`.
    ///
    /// # Safety
    /// Every byte the typemap addresses relative to `dst` must be writable and not overlap
    /// `input`; calls running at the same time must cover disjoint ranges of a typemap that
    /// addresses no byte twice (as MPI requires of receive types), so their writes are disjoint.
    pub unsafe fn unpack(&self, dst: *mut u8, first: usize, last: usize, input: &[u8]) {
        assert!(input.len() >= last - first, "input too short");
        if let How::Kernel { ct, .. } = self.how {
            // SAFETY: forwarded contract.
            return unsafe { ct.unpack_range(input, self.count, first, last, dst) };
        }
        self.for_each_run(first, last, |off, len, at| {
            let i = &input[at - first..at - first + len];
            // SAFETY: as in `pack`, for writing (disjointness is the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(i.as_ptr(), dst.offset(off as isize), len) };
        });
    }

    /// What worker `w` runs of a whole-stream operation, in order: its chunks, or with the range
    /// kernel its share as one range (one call keeps the kernel's loops long: cut in chunks, a
    /// transpose would run 64 KiB columns, fft-t 3 instead of 5 GB/s).
    fn spans_of(&self, w: usize) -> Vec<(usize, usize)> {
        match self.how {
            How::Kernel { share, .. } => {
                let total = self.len();
                vec![((w * share).min(total), ((w + 1) * share).min(total))]
            }
            How::Segment { .. } => self.chunks_of(w),
        }
    }

    /// The chunks worker `w` processes, in order: `[first, last)` stream ranges.
    pub fn chunks_of(&self, w: usize) -> Vec<(usize, usize)> {
        let (total, k) = (self.len(), self.chunk);
        let mut v = vec![];
        let mut first = 0;
        while first < total {
            let last = (first + k).min(total);
            // RW-CP: a chunk never straddles a checkpoint, so it has one owner.
            let last = match &self.how {
                How::Segment { strategy: Strategy::RwCp, ckpts, .. } => last.min((first / ckpts.interval() + 1) * ckpts.interval()),
                _ => last,
            };
            if self.owner(first) == w {
                v.push((first, last));
            }
            first = last;
        }
        v
    }
}

/// A buffer pointer shared by the workers of one call.
#[derive(Clone, Copy)]
struct Shared(*mut u8);
// SAFETY: the pointer is only dereferenced inside `Stream::pack`/`unpack`, whose contracts the
// callers of `pack`/`unpack` below uphold for every worker (reads of the source, disjoint writes
// of the destination); the pool returns only after every worker's last call returned.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

impl Shared {
    /// The pointer (a method, so closures capture the whole `Shared`, not its raw field).
    fn get(self) -> *mut u8 {
        self.0
    }
}

/// Packs the whole stream from `src` into `out` on `stream`'s workers (the caller is worker 0,
/// the others are threads of the [`pool`]); each worker processes its chunks in order
/// ([`Stream::chunks_of`]). When the pool is busy, the workers' chunks run one after the other
/// on the calling thread.
///
/// # Safety
/// As [`Stream::pack`] for the whole stream.
pub unsafe fn pack(stream: &Stream<'_>, src: *const u8, out: &mut [u8]) {
    // SAFETY: forwarded contract.
    let f = unsafe { pack_job(stream, src, out) };
    run_workers(stream.workers, &f);
}

/// As [`pack`], but returns `false` without touching `out` when the pool is busy (the caller
/// then takes its serial path).
///
/// # Safety
/// As [`Stream::pack`] for the whole stream.
pub unsafe fn try_pack(stream: &Stream<'_>, src: *const u8, out: &mut [u8]) -> bool {
    // SAFETY: forwarded contract.
    let f = unsafe { pack_job(stream, src, out) };
    pool::global().try_run(stream.workers, &f)
}

/// Worker `w`'s part of a whole-stream pack.
///
/// # Safety
/// As [`Stream::pack`] for the whole stream; `out` must stay untouched until the returned
/// closure's last call returns.
unsafe fn pack_job<'s>(stream: &'s Stream<'_>, src: *const u8, out: &mut [u8]) -> impl Fn(usize) + Sync + 's {
    let total = stream.len();
    assert!(out.len() >= total, "output too short");
    let src = Shared(src.cast_mut());
    let out = Shared(out.as_mut_ptr());
    move |w| {
        for (first, last) in stream.spans_of(w) {
            // SAFETY: chunks are disjoint, so each worker writes its own part of `out`, which
            // is `total` bytes long (checked above); reading `src` is the caller's contract.
            unsafe {
                let o = std::slice::from_raw_parts_mut(out.get().add(first), last - first);
                stream.pack(src.get(), first, last, o)
            }
        }
    }
}

/// Unpacks the whole stream `input` into `dst` on `stream`'s workers (as [`pack`]).
///
/// # Safety
/// As [`Stream::unpack`] for the whole stream (the typemap addresses no byte twice).
pub unsafe fn unpack(stream: &Stream<'_>, input: &[u8], dst: *mut u8) {
    // SAFETY: forwarded contract.
    let f = unsafe { unpack_job(stream, input, dst) };
    run_workers(stream.workers, &f);
}

/// As [`unpack`], but returns `false` without writing anything when the pool is busy.
///
/// # Safety
/// As [`Stream::unpack`] for the whole stream (the typemap addresses no byte twice).
pub unsafe fn try_unpack(stream: &Stream<'_>, input: &[u8], dst: *mut u8) -> bool {
    // SAFETY: forwarded contract.
    let f = unsafe { unpack_job(stream, input, dst) };
    pool::global().try_run(stream.workers, &f)
}

/// Worker `w`'s part of a whole-stream unpack.
///
/// # Safety
/// As [`Stream::unpack`] for the whole stream, until the returned closure's last call returns.
unsafe fn unpack_job<'s>(stream: &'s Stream<'_>, input: &'s [u8], dst: *mut u8) -> impl Fn(usize) + Sync + 's {
    assert!(input.len() >= stream.len(), "input too short");
    let dst = Shared(dst);
    move |w| {
        for (first, last) in stream.spans_of(w) {
            // SAFETY: the workers' chunks are disjoint ranges (caller's contract covers the rest).
            unsafe { stream.unpack(dst.get(), first, last, &input[first..last]) }
        }
    }
}

/// Runs `f(0..workers)` on the calling thread and `workers - 1` threads of the global [`pool`],
/// or all on the calling thread, in order, when the pool is busy.
pub fn run_workers(workers: usize, f: &(dyn Fn(usize) + Sync)) {
    if !pool::global().try_run(workers, f) {
        (0..workers).for_each(f);
    }
}

/// Default worker count: the physical cores hwloc reports (1 if it cannot tell).
pub fn default_workers() -> usize {
    crate::hw::detect_cpu().map(|c| c.cores.max(1)).unwrap_or(1)
}

#[cfg(test)]
mod tests;
