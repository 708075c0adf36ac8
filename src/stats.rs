//! Interception statistics (`SLUICE_STATS=1`): calls, payload bytes and time per call family,
//! gathered to rank 0 and printed once at `MPI_Finalize`.
//!
//! Counters are process-wide relaxed atomics, one cache line per family so that threads calling
//! different families do not share lines. Nothing here runs unless statistics are enabled: the
//! interception fast path does not touch these counters.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// The groups in which intercepted calls are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// MPI_Init, MPI_Init_thread, MPI_Finalize.
    Init,
    /// Blocking and nonblocking sends and receives, Sendrecv(_replace).
    P2p,
    /// Persistent request creation and Start/Startall.
    Persistent,
    /// Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv.
    Probe,
    /// Wait/Test family, Request_free, Request_get_status, Cancel, Get_count/Get_elements.
    Completion,
    /// Type_commit, Type_free, Type_dup.
    Datatype,
    /// MPI_Pack, MPI_Unpack, MPI_Pack_size.
    Pack,
    /// Comm_dup, Comm_free.
    Comm,
    /// Data-movement collectives (Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v,w),
    /// the neighborhood ones) and their nonblocking forms.
    Coll,
    /// Reductions and scans (and their nonblocking forms), `MPI_Reduce_local`: intercepted only
    /// to stage device buffers.
    Reduce,
    /// One-sided calls and file reads/writes: intercepted only to refuse device buffers.
    RmaIo,
    /// Not a call family: pack/unpack operations served by sluice's datatype engine (calls =
    /// operations, bytes = packed bytes), whichever MPI call asked for them.
    Engine,
    /// Not a call family: those of the engine's operations that ran on several workers
    /// (checkpointed parallel processing; calls = operations, bytes = packed bytes).
    Parallel,
    /// Not a call family: checkpoint tables built (calls = tables, bytes = their memory).
    Checkpoints,
    /// Not a call family: pipelined point-to-point transfers, counted once by the sender and
    /// once by the receiver (calls = transfers, bytes = their packed bytes).
    Pipeline,
    /// Not a call family: those pipelined transfers whose chunks went through the node's
    /// shared-memory arena (`transfer::shm`), counted as `Pipeline` is.
    Shm,
    /// Not a call family: those pipelined transfers whose peer is on another node
    /// (`transfer::node`): their bytes crossed the network. Pipelined bytes within nodes are
    /// `Pipeline` minus `Remote`.
    Remote,
    /// Not a call family: staged collective blocks for or from a peer on another node laid
    /// out in two runs (`transfer::netpath`; calls = blocks, bytes = their bytes).
    CollSplit,
    /// Not a call family: chunks of pipelined transfers and staged messages to another node sent
    /// in two runs (`transfer::netpath`, `SLUICE_P2P_REMOTE_SPLIT`; calls = messages, bytes =
    /// their bytes).
    P2pSplit,
    /// Not a call family: requests the transfer runtime's Memcpy channel served (`sluice_copy`;
    /// calls = requests, bytes = their bytes, time = the channel's busy time).
    ChMemcpy,
    /// Not a call family: the DiskRead channel's requests, as `ChMemcpy`.
    ChDiskRead,
    /// Not a call family: the DiskWrite channel's requests, as `ChMemcpy`.
    ChDiskWrite,
    /// Not a call family: rounds of the progress thread with work in flight
    /// (`SLUICE_PROGRESS_THREAD`; calls = rounds, time = time spent driving the engine).
    ProgressThread,
    /// Not a call family: buckets the registration manager found pinned when an operation
    /// needed them (`pin`; calls = buckets, bytes = their bytes). Filled at `MPI_Finalize`.
    PinHit,
    /// Not a call family: buckets the registration manager had to pin (as `PinHit`).
    PinMiss,
    /// Not a call family: the registration backend's pin calls (calls; bytes = bytes pinned).
    Pin,
    /// Not a call family: the backend's unpin calls (calls = buckets unpinned, bytes = theirs).
    Unpin,
    /// Not a call family: buckets dropped because their memory was freed, unmapped or replaced
    /// (the invalidation hooks; calls = buckets, bytes = theirs).
    PinInvalidated,
    /// Not a call family: each process's high-water mark of pinned memory (calls = processes
    /// that pinned, bytes = the sum of their marks).
    PinHigh,
    /// Not a call family: `sluice_put`/`sluice_get` operations (calls; bytes = their bytes).
    Rma,
    /// Not a call family: firehose move requests sent (calls; bytes = the bytes of the buckets
    /// they asked to map).
    FirehoseMove,
    /// Not a call family: move requests this process served as a target (calls).
    FirehoseServed,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 32] = [
        Family::Init,
        Family::P2p,
        Family::Persistent,
        Family::Probe,
        Family::Completion,
        Family::Datatype,
        Family::Pack,
        Family::Comm,
        Family::Coll,
        Family::Reduce,
        Family::RmaIo,
        Family::Engine,
        Family::Parallel,
        Family::Checkpoints,
        Family::Pipeline,
        Family::Shm,
        Family::Remote,
        Family::CollSplit,
        Family::P2pSplit,
        Family::ChMemcpy,
        Family::ChDiskRead,
        Family::ChDiskWrite,
        Family::ProgressThread,
        Family::PinHit,
        Family::PinMiss,
        Family::Pin,
        Family::Unpin,
        Family::PinInvalidated,
        Family::PinHigh,
        Family::Rma,
        Family::FirehoseMove,
        Family::FirehoseServed,
    ];

    /// Short lower-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::Init => "init",
            Family::P2p => "p2p",
            Family::Persistent => "persistent",
            Family::Probe => "probe",
            Family::Completion => "completion",
            Family::Datatype => "datatype",
            Family::Pack => "pack",
            Family::Comm => "comm",
            Family::Coll => "coll",
            Family::Reduce => "reduce",
            Family::RmaIo => "rma-io",
            Family::Engine => "ddt-engine",
            Family::Parallel => "ddt-parallel",
            Family::Checkpoints => "ddt-ckpt",
            Family::Pipeline => "p2p-pipeline",
            Family::Shm => "p2p-shm",
            Family::Remote => "p2p-remote",
            Family::CollSplit => "coll-split",
            Family::P2pSplit => "p2p-split",
            Family::ChMemcpy => "ch-memcpy",
            Family::ChDiskRead => "ch-disk-read",
            Family::ChDiskWrite => "ch-disk-write",
            Family::ProgressThread => "progress-thread",
            Family::PinHit => "pin-hit",
            Family::PinMiss => "pin-miss",
            Family::Pin => "pin",
            Family::Unpin => "unpin",
            Family::PinInvalidated => "pin-invalid",
            Family::PinHigh => "pin-high",
            Family::Rma => "rma",
            Family::FirehoseMove => "fh-move",
            Family::FirehoseServed => "fh-served",
        }
    }
}

/// Number of counters kept per family (calls, bytes, total ns, ns inside the MPI).
pub const FIELDS: usize = 4;
/// Length of one rank's counter vector.
pub const LEN: usize = Family::ALL.len() * FIELDS;

#[derive(Default)]
struct FamilyCounters {
    calls: AtomicU64,
    bytes: AtomicU64,
    total_ns: AtomicU64,
    mpi_ns: AtomicU64,
}

static COUNTERS: [CachePadded<FamilyCounters>; Family::ALL.len()] = [const {
    CachePadded::new(FamilyCounters {
        calls: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        total_ns: AtomicU64::new(0),
        mpi_ns: AtomicU64::new(0),
    })
}; Family::ALL.len()];

static TIMING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Nanoseconds this thread spent inside forwarded MPI calls (see `ffi::next`).
    static MPI_NS: Cell<u64> = const { Cell::new(0) };
}

/// Turns time accounting of forwarded calls on or off.
pub fn set_timing(on: bool) {
    TIMING.store(on, Ordering::Relaxed);
}

/// Whether forwarded calls are being timed.
#[inline(always)]
pub fn timing_enabled() -> bool {
    TIMING.load(Ordering::Relaxed)
}

/// Monotonic clock in nanoseconds.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Adds time spent in the underlying MPI by the current thread.
#[inline]
pub fn add_mpi_ns(ns: u64) {
    MPI_NS.with(|c| c.set(c.get() + ns));
}

/// Time this thread has spent in the underlying MPI so far.
#[inline]
pub fn thread_mpi_ns() -> u64 {
    MPI_NS.with(|c| c.get())
}

/// Counts `n` bytes moved by the datatype engine (when statistics are on).
pub fn engine_bytes(n: usize) {
    count(Family::Engine, n);
}

/// Counts one event of a non-call family with `n` bytes (when statistics are on).
pub fn count(family: Family, n: usize) {
    if timing_enabled() {
        record(family, n as u64, 0, 0);
    }
}

/// Counts one request of a transfer-runtime channel: `n` bytes, `busy_ns` (when statistics are on).
pub fn channel_request(family: Family, n: usize, busy_ns: u64) {
    if timing_enabled() {
        record(family, n as u64, busy_ns, 0);
    }
}

/// Adds `calls` events of `bytes` bytes in all to a non-call family (counts kept elsewhere,
/// folded in before the report).
pub fn add(family: Family, calls: u64, bytes: u64) {
    let c = &COUNTERS[family as usize];
    c.calls.fetch_add(calls, Ordering::Relaxed);
    c.bytes.fetch_add(bytes, Ordering::Relaxed);
}

/// Records one intercepted call.
pub fn record(family: Family, bytes: u64, total_ns: u64, mpi_ns: u64) {
    let c = &COUNTERS[family as usize];
    c.calls.fetch_add(1, Ordering::Relaxed);
    c.bytes.fetch_add(bytes, Ordering::Relaxed);
    c.total_ns.fetch_add(total_ns, Ordering::Relaxed);
    c.mpi_ns.fetch_add(mpi_ns.min(total_ns), Ordering::Relaxed);
}

/// This process's counters as a flat vector: per family `[calls, bytes, total_ns, mpi_ns]`.
pub fn snapshot() -> [u64; LEN] {
    let mut v = [0u64; LEN];
    for (i, c) in COUNTERS.iter().enumerate() {
        v[i * FIELDS] = c.calls.load(Ordering::Relaxed);
        v[i * FIELDS + 1] = c.bytes.load(Ordering::Relaxed);
        v[i * FIELDS + 2] = c.total_ns.load(Ordering::Relaxed);
        v[i * FIELDS + 3] = c.mpi_ns.load(Ordering::Relaxed);
    }
    v
}

/// Formats the job-wide table from every rank's snapshot (concatenated, `LEN` each).
pub fn format_report(all: &[u64], flavor: &str) -> String {
    let ranks = all.len() / LEN;
    let mut out = format!(
        "[sluice] statistics: {ranks} ranks, built for {flavor}\n\
         [sluice] {:<12} {:>12} {:>16} {:>16} {:>16}\n",
        "family", "calls", "bytes", "in sluice (us)", "in MPI (us)"
    );
    for (f, fam) in Family::ALL.iter().enumerate() {
        let (mut calls, mut bytes, mut total, mut mpi) = (0u64, 0u64, 0u64, 0u64);
        for r in 0..ranks {
            let base = r * LEN + f * FIELDS;
            calls += all[base];
            bytes += all[base + 1];
            total += all[base + 2];
            mpi += all[base + 3];
        }
        let sluice_us = total.saturating_sub(mpi) as f64 / 1e3;
        out.push_str(&format!("[sluice] {:<12} {:>12} {:>16} {:>16.1} {:>16.1}\n", fam.name(), calls, bytes, sluice_us, mpi as f64 / 1e3));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_sums_ranks_and_separates_sluice_time() {
        let mut all = vec![0u64; 2 * LEN];
        let p2p = Family::P2p as usize * FIELDS;
        all[p2p] = 3;
        all[p2p + 1] = 24;
        all[p2p + 2] = 5_000;
        all[p2p + 3] = 4_000;
        all[LEN + p2p] = 4;
        all[LEN + p2p + 1] = 8;
        let text = format_report(&all, "openmpi");
        let line = text.lines().find(|l| l.contains(" p2p ")).unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1..5], ["p2p", "7", "32", "1.0"]);
        assert!(text.contains("2 ranks"));
    }

    #[test]
    fn record_accumulates_and_clamps_mpi_time() {
        let before = snapshot();
        record(Family::Comm, 10, 100, 250);
        let after = snapshot();
        let b = Family::Comm as usize * FIELDS;
        assert_eq!(after[b] - before[b], 1);
        assert_eq!(after[b + 1] - before[b + 1], 10);
        assert_eq!(after[b + 3] - before[b + 3], 100, "MPI time never exceeds the call's time");
    }
}
