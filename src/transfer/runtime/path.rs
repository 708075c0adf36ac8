//! Paths for a copy between two places over this node's model: which channels the stream goes
//! through, in which layout each intermediate buffer holds its blocks, and the block size.
//!
//! The stream is cut into blocks of `block` bytes; each hop moves one block per request. A file
//! whose layout is one run is read and written by stream ranges; any other file layout by the
//! windows of memory its elements cover (a write then reads the window first and writes it back
//! whole: a read-modify-write that keeps the bytes between elements). Conversions between layouts
//! run on the Memcpy self-loop of host memory, from and to typed views (the datatype engine's
//! range kernels), so they never need whole elements.
//!
//! The block size is chosen on the model's throughput curves: a hop's request is the bytes it
//! moves per block, or for a conversion the contiguous run the datatype engine copies (a
//! channel that converts layouts sees requests of its runs: isometry, Section 4.2). The size
//! minimizes the predicted time of the pipelined copy, `S / T(b) + (hops - 1) * b / T(b)`, with
//! every intermediate buffer's slots within the model's space threshold, and on a path without
//! intermediate buffers no request longer than `MAX_REQUEST_TIME` (priorities preempt per request).

use std::fmt::Write as _;

use super::place::Place;
use crate::transfer::plan::{ChannelId, ChannelKind, MemoryKind, Model};

/// One end of the copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Src,
    Dst,
}

/// What an intermediate buffer's slot holds for one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    /// The block's stream bytes, packed.
    Packed,
    /// The window of memory that the block's elements cover in one side's layout.
    Window(Side),
}

/// A layout a conversion reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vw {
    /// A host place's own memory, typed.
    Place(Side),
    /// Intermediate buffer `j`, as its [`Buffer`] says.
    Buf(usize),
}

/// What a hop does with each block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Reads the block from `file` (its range, or its window) into a host place's run or an
    /// intermediate buffer.
    Read { file: Side, into: Vw },
    /// Writes the block to `file` from a host place's run or an intermediate buffer.
    Write { from: Vw, file: Side },
    /// Converts the block from one layout to another.
    Convert { from: Vw, to: Vw },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hop {
    pub channel: ChannelId,
    pub action: Action,
    /// Request size at the chosen block size (bytes) and the channel's predicted throughput.
    pub request: usize,
    pub throughput: f64,
}

/// A planned path; immutable, instantiated by a transfer descriptor.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    pub hops: Vec<Hop>,
    pub buffers: Vec<Buffer>,
    /// Bytes of one slot of each intermediate buffer.
    pub slot: Vec<usize>,
    /// Slots per intermediate buffer (blocks in flight between two hops).
    pub depth: usize,
    pub block: usize,
    /// One block at a time through the whole path (read-modify-write of interleaved windows).
    pub serial: bool,
    /// Predicted throughput of the pipelined copy (the slowest hop), bytes/s.
    pub throughput: f64,
}

/// Why no path exists.
#[derive(Clone, Debug, PartialEq)]
pub enum PathError {
    /// The model has no memory of this kind on node 0, or no channel of this kind between them.
    Missing(String),
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::Missing(what) => write!(f, "the machine model has no {what}"),
        }
    }
}

pub const DEPTH: usize = 4;
/// What one request costs besides moving its bytes (seconds), for models without a
/// `request_cost` of their own. The curves of the model are per request size and do not include
/// it; it is what keeps blocks from being made tiny when a conversion's short runs cap the
/// curve. An effective value: a channel kept busy pays 0.6-0.8 us per request, a worker that
/// waits to be woken 9-30 us more (2-core AMD EPYC VM, 2026-12-01), and what a copy pays
/// depends on its path; `calibrate` fits the cost to whole copies at forced block sizes, which
/// gave 3.7-4.9 us on that VM (docs/runtime.md), rounded up here.
pub const DEFAULT_REQUEST_COST: f64 = 5e-6;
/// The predicted gain (fraction of the copy's time) that makes a larger block worth its memory.
const LARGER_BLOCK_GAIN: f64 = 0.03;
/// Longest a request may hold its channel (seconds; see `plan`).
pub(super) const MAX_REQUEST_TIME: f64 = 100e-6;
/// Block sizes tried: 4 KiB .. 64 MiB.
const BLOCKS: std::ops::RangeInclusive<u32> = 12..=26;

struct Channels {
    memcpy: ChannelId,
    read: Option<ChannelId>,
    write: Option<ChannelId>,
}

fn channels(model: &Model) -> Result<Channels, PathError> {
    let find = |kind: MemoryKind| model.memories().iter().position(|m| m.kind == kind && m.node == 0);
    let sys = find(MemoryKind::Sys).ok_or_else(|| PathError::Missing("SYS memory on node 0".into()))?;
    let sys = crate::transfer::plan::MemoryId(sys as u32);
    let memcpy = model.self_loop(sys, ChannelKind::Memcpy).ok_or_else(|| PathError::Missing("Memcpy self-loop on SYS".into()))?;
    let dsk = find(MemoryKind::Dsk).map(|d| crate::transfer::plan::MemoryId(d as u32));
    let between =
        |from, to, kind| model.outgoing(from).iter().copied().find(|&c| model.channel(c).dst == to && model.channel(c).kind == kind);
    let read = dsk.and_then(|d| between(d, sys, ChannelKind::DiskRead));
    let write = dsk.and_then(|d| between(sys, d, ChannelKind::DiskWrite));
    Ok(Channels { memcpy, read, write })
}

/// A path's hops before the block size is chosen, and its intermediate buffers.
type Shape = (Vec<(ChannelId, Action)>, Vec<Buffer>);

/// The hops of the natural path for the places' kinds and layouts (before the block size).
fn shape(src: &Place, dst: &Place, ch: &Channels) -> Result<Shape, PathError> {
    let read = || ch.read.ok_or_else(|| PathError::Missing("DiskRead channel from DSK to SYS".into()));
    let write = || ch.write.ok_or_else(|| PathError::Missing("DiskWrite channel from SYS to DSK".into()));
    let mut hops = Vec::new();
    let mut bufs = Vec::new();
    let new_buf = |b: Buffer, bufs: &mut Vec<Buffer>| {
        bufs.push(b);
        Vw::Buf(bufs.len() - 1)
    };
    // Where the conversion reads from: the source place, or what a read brought in.
    let from = if src.is_file() {
        if src.dense().is_some() && !dst.is_file() && dst.dense().is_some() {
            // One run to one run: the read lands in place.
            hops.push((read()?, Action::Read { file: Side::Src, into: Vw::Place(Side::Dst) }));
            return Ok((hops, bufs));
        }
        let b = if src.dense().is_some() { Buffer::Packed } else { Buffer::Window(Side::Src) };
        let into = new_buf(b, &mut bufs);
        hops.push((read()?, Action::Read { file: Side::Src, into }));
        into
    } else {
        Vw::Place(Side::Src)
    };
    if !dst.is_file() {
        hops.push((ch.memcpy, Action::Convert { from, to: Vw::Place(Side::Dst) }));
        return Ok((hops, bufs));
    }
    if dst.dense().is_some() {
        let packed_source = match from {
            Vw::Buf(j) => bufs[j] == Buffer::Packed,
            Vw::Place(_) => src.dense().is_some(),
        };
        let out = if packed_source {
            from
        } else {
            let to = new_buf(Buffer::Packed, &mut bufs);
            hops.push((ch.memcpy, Action::Convert { from, to }));
            to
        };
        hops.push((write()?, Action::Write { from: out, file: Side::Dst }));
        return Ok((hops, bufs));
    }
    // Read-modify-write of the destination's windows.
    let win = new_buf(Buffer::Window(Side::Dst), &mut bufs);
    hops.push((read()?, Action::Read { file: Side::Dst, into: win }));
    hops.push((ch.memcpy, Action::Convert { from, to: win }));
    hops.push((write()?, Action::Write { from: win, file: Side::Dst }));
    Ok((hops, bufs))
}

fn side<'a>(s: Side, src: &'a Place, dst: &'a Place) -> &'a Place {
    match s {
        Side::Src => src,
        Side::Dst => dst,
    }
}

/// Bytes of one slot of `b` for blocks of `block` stream bytes (`exact`: the largest window of
/// any block, else a typical one, for planning).
fn slot_bytes(b: Buffer, block: usize, src: &Place, dst: &Place, exact: bool) -> usize {
    match b {
        Buffer::Packed => block,
        Buffer::Window(s) if exact => side(s, src, dst).max_window(block),
        Buffer::Window(s) => side(s, src, dst).typical_window(block),
    }
}

/// The request a hop makes per block of `block` bytes.
fn request(a: Action, block: usize, bufs: &[Buffer], src: &Place, dst: &Place) -> usize {
    let run = |v: Vw| match v {
        Vw::Place(s) => side(s, src, dst).run(),
        Vw::Buf(j) => match bufs[j] {
            Buffer::Packed => block,
            Buffer::Window(s) => side(s, src, dst).run(),
        },
    };
    let file = |s: Side| {
        let p = side(s, src, dst);
        if p.dense().is_some() {
            block
        } else {
            p.typical_window(block)
        }
    };
    match a {
        Action::Convert { from, to } => block.min(run(from)).min(run(to)),
        Action::Read { file: s, .. } | Action::Write { file: s, .. } => file(s),
    }
}

/// Plans the copy of `src`'s stream into `dst` on `model`. Both have the same stream length.
pub fn plan(model: &Model, src: &Place, dst: &Place) -> Result<Path, PathError> {
    plan_with(model, src, dst, None)
}

/// [`plan`] with the block size fixed at `block` bytes (rounded up to the path's alignment, at
/// most the copy): calibration times copies at several block sizes to fit the model's request
/// cost (`calibrate`).
pub fn plan_at(model: &Model, src: &Place, dst: &Place, block: usize) -> Result<Path, PathError> {
    plan_with(model, src, dst, Some(block.max(1)))
}

/// Predicted seconds of a pipelined copy of `total` bytes in blocks of `block` over `hops` hops
/// whose slowest runs at `t` bytes/s: the stream, plus filling the pipeline (each hop after the
/// first starts a block later), or every block through every hop when `serial`.
fn copy_time(total: usize, block: usize, hops: usize, serial: bool, t: f64) -> f64 {
    let fill = if serial { total as f64 } else { hops.saturating_sub(1) as f64 * block.min(total) as f64 };
    (total as f64 + fill) / t
}

/// A hop's throughput for blocks of `b` bytes in requests of `request` bytes: the channel's
/// curve, less `cost` seconds per request.
fn hop_rate(model: &Model, c: ChannelId, request: usize, b: f64, cost: f64) -> f64 {
    b / (b / model.channel(c).curve.at(request as f64) + cost)
}

fn plan_with(model: &Model, src: &Place, dst: &Place, forced: Option<usize>) -> Result<Path, PathError> {
    let ch = channels(model)?;
    let (hops, buffers) = shape(src, dst, &ch)?;
    let total = src.bytes().max(1);
    let rmw = buffers.contains(&Buffer::Window(Side::Dst));
    // A read-modify-write block ends on an element boundary of the destination: no element is
    // written by two blocks.
    let align = if rmw { dst.window_align() } else { 1 };
    let serial = rmw && dst.windows_interleave();
    let cost = model.request_cost().unwrap_or(DEFAULT_REQUEST_COST);
    let mut best: Option<(f64, usize, f64, Vec<usize>)> = None;
    let sizes = BLOCKS.map(|k| 1usize << k).filter(|_| forced.is_none()).chain(forced);
    for (i, size) in sizes.enumerate() {
        let block = size.next_multiple_of(align).min(total.next_multiple_of(align));
        let slots: Vec<usize> = buffers.iter().map(|&b| slot_bytes(b, block, src, dst, false)).collect();
        let space: usize = slots.iter().sum::<usize>() * DEPTH;
        let first = i == 0;
        if !first && space as u64 > model.threshold() {
            break;
        }
        let b = block.min(total) as f64;
        let t = hops.iter().map(|&(c, a)| hop_rate(model, c, request(a, block, &buffers, src, dst), b, cost)).fold(f64::INFINITY, f64::min);
        // Priorities preempt at request granularity: a block that would hold a channel longer
        // than MAX_REQUEST_TIME makes an urgent copy wait that long behind it. Only paths
        // without intermediate buffers need the bound (theirs have no space bound: blocks up to
        // 64 MiB); buffered paths are bounded by the space threshold already, and smaller
        // blocks cost them (measured: the file transpose with 256 KiB instead of 1 MiB blocks
        // 14 -> 20 ms).
        if !first && buffers.is_empty() && b / t > MAX_REQUEST_TIME {
            break;
        }
        let time = copy_time(total, block, hops.len(), serial, t);
        // A larger block must pay for its memory: it wins only by a clear margin (the buffers
        // of every copy share one budget, and a copy that does not fit waits for others).
        if best.as_ref().is_none_or(|b| time < b.0 * (1.0 - LARGER_BLOCK_GAIN)) {
            best = Some((time, block, t, slots));
        }
        if block >= total {
            break;
        }
    }
    let (_, block, throughput, _) = best.expect("at least one block size is tried");
    let slot = buffers.iter().map(|&b| slot_bytes(b, block, src, dst, true)).collect();
    let hops = hops
        .into_iter()
        .map(|(channel, action)| {
            let request = request(action, block, &buffers, src, dst);
            Hop { channel, action, request, throughput: hop_rate(model, channel, request, block.min(total) as f64, cost) }
        })
        .collect();
    Ok(Path { hops, buffers, slot, depth: if serial { 1 } else { DEPTH }, block, serial, throughput })
}

impl Path {
    /// Seconds the model predicts for this path's copy of `total` bytes when each request costs
    /// `cost` seconds besides its bytes (calibration fits `cost` to measured copies).
    pub fn predicted_time(&self, model: &Model, total: usize, cost: f64) -> f64 {
        let b = self.block.min(total).max(1) as f64;
        let t = self.hops.iter().map(|h| hop_rate(model, h.channel, h.request, b, cost)).fold(f64::INFINITY, f64::min);
        copy_time(total, self.block, self.hops.len(), self.serial, t)
    }

    /// One line per hop, like a query planner's EXPLAIN; `*` marks the hops that limit the copy.
    pub fn explain(&self, model: &Model, bytes: usize) -> String {
        let mut s = format!(
            "copy: {bytes} bytes over {} hop(s), blocks of {} bytes, {} slot(s) per buffer{}, predicted {:.3} GB/s\n",
            self.hops.len(),
            self.block,
            self.depth,
            if self.serial { ", one block at a time" } else { "" },
            self.throughput / 1e9
        );
        let name = |v: Vw| match v {
            Vw::Place(Side::Src) => "source".to_string(),
            Vw::Place(Side::Dst) => "destination".to_string(),
            Vw::Buf(j) => format!(
                "buffer {j} ({})",
                match self.buffers[j] {
                    Buffer::Packed => "packed",
                    Buffer::Window(Side::Src) => "source layout",
                    Buffer::Window(Side::Dst) => "destination layout",
                }
            ),
        };
        let file = |s: Side| if s == Side::Src { "source file" } else { "destination file" };
        for (i, h) in self.hops.iter().enumerate() {
            let c = model.channel(h.channel);
            let what = match h.action {
                Action::Read { file: f, into } => format!("{} -> {}", file(f), name(into)),
                Action::Write { from, file: f } => format!("{} -> {}", name(from), file(f)),
                Action::Convert { from, to } => format!("{} -> {} (layout conversion)", name(from), name(to)),
            };
            let _ = writeln!(
                s,
                "{} {}. {:<9} {} -> {}  {}  request {} B  {:.3} GB/s",
                if h.throughput <= self.throughput { '*' } else { ' ' },
                i + 1,
                format!("{:?}", c.kind),
                model.memory(c.src).name,
                model.memory(c.dst).name,
                what,
                h.request,
                h.throughput / 1e9
            );
        }
        if let Some(note) = self.sharing_note(cpus()) {
            s.push_str(&note);
        }
        s
    }

    /// The distinct channels the hops use, by index (each runs on its own worker thread).
    pub fn channels(&self) -> Vec<usize> {
        let mut c: Vec<usize> = self.hops.iter().map(|h| h.channel.0 as usize).collect();
        c.sort_unstable();
        c.dedup();
        c
    }

    /// A note when this process may run on fewer CPUs than the path has channels: its workers
    /// then take turns instead of overlapping, and the copy takes about the sum of its hops'
    /// times, not the slowest one's (measured: `bench/runtime/copy_stages.c` with the rank bound
    /// to one core, Open MPI's default for one or two ranks, runs at 0.38 of the slowest stage's
    /// speed, unbound at 0.71; scripts/bench-copy.sh, docs/benchmarks.md).
    pub fn sharing_note(&self, cpus: usize) -> Option<String> {
        let n = self.channels().len();
        (n > 1 && cpus < n).then(|| {
            format!(
                "note: this process may run on {cpus} CPU(s) (its affinity mask) and the path has {n} channels: \
                 they take turns instead of overlapping (give each rank more cores, e.g. mpirun --bind-to none or --map-by slot:PE={n})\n"
            )
        })
    }
}

/// CPUs this process may run on (its affinity mask and CPU quota).
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
