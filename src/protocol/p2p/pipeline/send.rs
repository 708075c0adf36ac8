//! The sending side of a pipelined transfer.
//!
//! Everything happens when the send is posted: M0 (the first S\*-64 packed bytes and the
//! header) goes out with the application's send mode, then each chunk is packed and its
//! `MPI_Isend` posted at once, so the receiver can pull chunk i while chunk i+1 is packed. When
//! the receiver is on this node and mapped this process's shared-memory arena, the chunks are
//! packed into a region of the arena instead and published one by one; the receiver unpacks
//! them from there (`transfer::shm`). The sender never waits for the receiver's sluice code
//! (docs/protocol.md, rule 1): the chunk requests and regions are kept in [`OUTGOING`], tested
//! by every intercepted completion call and drained at `MPI_Finalize`, where orphaned chunks
//! of truncated transfers are received and dropped.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use super::{chunk, m0_data, next_tag, private, remote_chunks, reserved, world_rank, world_rank_of, Header, HEADER};
use crate::ffi::{consts, errclass, mpi, next, request_from_key, request_key};
use crate::protocol::p2p::Layout;
use crate::transfer::netpath;
use crate::transfer::runtime::progress;
use crate::transfer::shm::{self, Region};
use crate::transfer::staging::{self, Staging};

type Comm = mpi::MPI_Comm;
type Dt = mpi::MPI_Datatype;
type Req = mpi::MPI_Request;

/// The nonblocking MPI call of the application's send mode (`MPI_Isend`, `MPI_Issend`, ...).
pub type PostFn = unsafe fn(*const c_void, c_int, Dt, c_int, c_int, Comm, *mut Req) -> c_int;

/// What a pipelined send reads.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Elements of a non-contiguous type at the application's buffer.
    Engine(&'a Layout, *const c_void),
    /// Contiguous bytes (a send of exactly S\* bytes of a contiguous type).
    Bytes(*const u8),
    /// Contiguous bytes in sluice's own memory that are still arriving (a device buffer's
    /// host copy, `protocol::device`): each range is read once it has arrived, and chunks go
    /// to the MPI straight from that memory.
    Arriving(&'a Arc<dyn Arriving>),
}

/// A stream that arrives in sluice's own memory while it is being sent ([`Source::Arriving`]).
/// The pipeline keeps it (with its memory) until every chunk sent from it is complete.
pub trait Arriving: Send + Sync {
    /// The stream's first byte; the whole stream stays there until the value is dropped.
    fn bytes(&self) -> *const u8;
    /// Returns once stream bytes `[0, upto)` are there, or never will be (a failed copy: the
    /// bytes are then unspecified and reporting the failure is the owner's business).
    fn wait(&self, upto: usize);
    /// The size its bytes arrive in: the transfer's chunks are at least that large.
    fn piece(&self) -> usize;
}

impl Source<'_> {
    /// Writes stream bytes `[first, last)` to `out`.
    ///
    /// # Safety
    /// The application's buffer is readable for the whole stream; `out` holds `last - first`
    /// bytes of sluice's own memory.
    unsafe fn pack(&self, first: usize, last: usize, out: *mut u8) {
        // SAFETY: forwarded contract.
        let out = unsafe { std::slice::from_raw_parts_mut(out, last - first) };
        match *self {
            // SAFETY: forwarded contract.
            Source::Engine(l, buf) => unsafe { l.pack_range(buf, first, last, out) },
            // SAFETY: forwarded contract; the application's bytes cannot overlap staging.
            Source::Bytes(p) => unsafe { std::ptr::copy_nonoverlapping(p.add(first), out.as_mut_ptr(), last - first) },
            Source::Arriving(a) => {
                a.wait(last);
                // SAFETY: the stream's bytes are sluice's own and have arrived up to `last`.
                unsafe { std::ptr::copy_nonoverlapping(a.bytes().add(first), out.as_mut_ptr(), last - first) }
            }
        }
    }
}

/// Chunks of one transfer still in flight, with the memory they are sent from (M0's too,
/// unless a persistent request owns it).
struct Outgoing {
    wait: Wait,
    m0: Option<Staging>,
    stream: Option<Staging>,
    /// The arriving stream the chunks are sent from ([`Source::Arriving`]): held for its
    /// memory, never read.
    #[allow(dead_code)]
    kept: Option<Arc<dyn Arriving>>,
    /// The exported device slab a device stream is read from (`device`): held until the
    /// receiver marks the region read.
    #[allow(dead_code)]
    slab: Option<crate::transfer::gpu::ipc::Lease>,
}

/// What ends a transfer on the sending side.
enum Wait {
    /// The chunk sends (on the private communicator) complete.
    Chunks(Vec<usize>),
    /// The receiver marks the shared-memory region read.
    Shm(Region),
}

/// Most chunks one transfer is cut into (the chunk size grows beyond `SLUICE_PIPELINE_CHUNK`
/// for larger messages).
const MAX_CHUNKS: usize = 1024;

static OUTGOING: Mutex<Vec<Outgoing>> = Mutex::new(Vec::new());
/// Transfers in OUTGOING; the progress engine polls them ([`poll_chunks`]).
static OUTGOING_N: progress::Source = progress::Source::new("p2p-send-chunks", Some(poll_chunks));

/// Whether a send of `total` packed bytes on `comm` is pipelined.
pub fn applies(total: usize, comm: Comm) -> bool {
    let s = reserved();
    s != 0 && total >= s && comm != consts::comm_null() && !super::is_inter(comm)
}

/// Posts a pipelined send of `total` stream bytes to `dest`: M0 through `post` on the
/// application's communicator and tag, then every chunk (into the peer's shared-memory arena
/// when `arena` allows it and the peer shares this node). Returns the MPI's code for M0 and
/// its request (the application's request for a nonblocking send).
///
/// # Safety
/// The application's send buffer is valid for the stream; the arguments are the application's.
pub unsafe fn start(src: Source<'_>, total: usize, dest: c_int, tag: c_int, comm: Comm, post: PostFn, arena: bool) -> (c_int, Req) {
    // Earlier transfers' buffers go back to the pool first, so a stream of sends reuses them.
    progress::drive();
    let s = reserved();
    let mut m0 = staging::take(s);
    // The peer is known before M0 is written: the header says where the chunks will be.
    let peer = peer_of(comm, dest);
    let region = peer.filter(|_| arena).and_then(|p| shm::reserve(p, total - m0_data()));
    // SAFETY: `m0` holds S* bytes.
    let (ctag, c) = unsafe { fill_m0(src, total, m0.as_mut_ptr(), region.as_ref(), peer) };
    let mut req = consts::request_null();
    // SAFETY: M0 is sluice's buffer of S* bytes; the rest are the application's arguments, which
    // the MPI validates and reports as for the original call.
    let rc = unsafe { post(m0.as_mut_ptr().cast_const().cast(), s as c_int, consts::packed(), dest, tag, comm, &mut req) };
    if rc != errclass::SUCCESS {
        return (rc, req);
    }
    let Some(peer) = peer else {
        log::error!("pipelined send to a process outside MPI_COMM_WORLD: set SLUICE_PIPELINE_THRESHOLD=off for dynamic processes");
        return (crate::errors::raise(comm, errclass::ERR_INTERN, "pipelined send to a process outside MPI_COMM_WORLD"), req);
    };
    // SAFETY: forwarded contract.
    unsafe { post_chunks(src, total, c, ctag, peer, Some(m0), region, req) };
    (rc, req)
}

/// Posts a pipelined send whose whole stream is on its way into exported device memory
/// (`device`): M0 (the header and no stream data) through `post` on the application's
/// communicator and tag, then publishes the stream's descriptor once the device copy is done
/// (the MPI moves M0 meanwhile); the transfer stays in [`OUTGOING`] with its slab until the
/// receiver has read it. Returns as [`start`], and the device copy's outcome.
///
/// # Safety
/// As [`start`]; `p` was prepared for `dest`'s world rank in `comm`.
pub unsafe fn start_device(
    p: super::device::Prepared,
    total: usize,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    post: PostFn,
) -> (c_int, Req, Result<(), crate::transfer::gpu::CudaError>) {
    progress::drive();
    let peer = p.peer;
    let s = reserved();
    let mut m0 = staging::take(s);
    let shm = Some((p.region.control(), p.region.offset()));
    let header = Header {
        total: total as u64,
        chunk: chunk_for(total) as u64,
        tag: next_tag(),
        sender: world_rank(),
        shm,
        device: true,
        offer: false,
    };
    // SAFETY: `m0` holds S* bytes; the header goes at their end (the data before it is not read).
    unsafe { std::ptr::copy_nonoverlapping(header.encode().as_ptr(), m0.as_mut_ptr().add(m0_data()), HEADER) };
    let mut req = consts::request_null();
    // SAFETY: as in `start`.
    let rc = unsafe { post(m0.as_mut_ptr().cast_const().cast(), s as c_int, consts::packed(), dest, tag, comm, &mut req) };
    if rc != errclass::SUCCESS {
        p.settle(); // nobody will read the region: it and the slab go back once the copy is done
        return (rc, req, Ok(()));
    }
    let copied = p.publish(|| {
        let mut flag = 0;
        // SAFETY: M0's live request; the query neither completes nor frees it.
        unsafe { mpi::PMPI_Request_get_status(req, &mut flag, consts::status_ignore()) };
    });
    crate::stats::count(crate::stats::Family::Pipeline, total);
    crate::stats::count(crate::stats::Family::Shm, total);
    if crate::logging::plans() {
        crate::logging::plan_once(crate::logging::plan_key(("pipelined", 0, crate::logging::size_class(total), "device")), || {
            format!("pipelined send of {total} bytes from device memory to world rank {peer}: through an exported device slab (CUDA IPC)")
        });
    }
    hold(Outgoing { wait: Wait::Shm(p.region), m0: Some(m0), stream: None, kept: None, slab: Some(p.lease) });
    (rc, req, copied)
}

/// The world rank of `dest` in `comm`, if it is a valid rank of an intracommunicator in the
/// world (an invalid one, or an invalid communicator, is left for the MPI to report when M0 is
/// posted; nothing is asked of the MPI about an invalid communicator here).
pub fn peer_of(comm: Comm, dest: c_int) -> Option<c_int> {
    world_rank_of(comm, dest)
}

/// `MPI_Start` of a persistent pipelined send (`protocol::p2p::complete`): refills M0 (its
/// data and a header with a fresh transfer tag) in the request's own buffer `m0` and posts
/// the chunks to world rank `peer`; the caller then starts the MPI request, which sends M0.
///
/// # Safety
/// As [`start`]; `m0` holds S\* bytes and its request is inactive.
pub unsafe fn refill(src: Source<'_>, total: usize, peer: c_int, arena: bool, m0: &mut Staging) {
    progress::drive();
    let region = if arena { shm::reserve(peer, total - m0_data()) } else { None };
    // SAFETY: forwarded contract.
    unsafe {
        let (ctag, c) = fill_m0(src, total, m0.as_mut_ptr(), region.as_ref(), Some(peer));
        post_chunks(src, total, c, ctag, peer, None, region, consts::request_null());
    }
}

/// The chunk size of a transfer of `total` stream bytes: `SLUICE_PIPELINE_CHUNK`, or more so
/// that there are at most [`MAX_CHUNKS`]: tens of thousands of tiny sends in flight stall Open
/// MPI's shared-memory transport (measured with 64-byte chunks of a 4 MiB message).
pub fn chunk_for(total: usize) -> usize {
    chunk().max(total.saturating_sub(m0_data()).div_ceil(MAX_CHUNKS))
}

/// The chunk size of a transfer of `total` stream bytes to world rank `peer`: [`chunk_for`],
/// or larger for a peer on another node, so that the transfer has at most
/// `SLUICE_PIPELINE_REMOTE_CHUNKS` chunks there. Each chunk crosses the network as a message of
/// its own, with the MPI's rendezvous round trip, which a link's latency makes dear (MPICH at
/// 1 Gbit/s + 50 us: a 4 MiB ping-pong 3.5% slower than the bare MPI in 32 chunks, on par in 8),
/// while within a node smaller chunks overlap packing and unpacking better.
pub fn chunk_to(total: usize, peer: Option<c_int>) -> usize {
    let c = chunk_for(total);
    match peer {
        Some(p) if crate::transfer::node::spans_nodes() && !crate::transfer::node::is_local(p) => {
            // Whole cache lines: the chunks' packed buffers then start aligned.
            c.max(total.saturating_sub(m0_data()).div_ceil(remote_chunks()).next_multiple_of(64))
        }
        _ => c,
    }
}

/// Writes M0 (the stream's first S\*-64 bytes and the header of a new transfer to world rank
/// `peer`) to `m0p`; returns the transfer's tag and chunk size.
///
/// # Safety
/// As [`start`]; `m0p` holds S\* bytes of sluice's own memory.
unsafe fn fill_m0(src: Source<'_>, total: usize, m0p: *mut u8, region: Option<&Region>, peer: Option<c_int>) -> (c_int, usize) {
    let d = m0_data();
    let ctag = next_tag();
    let c = match src {
        Source::Arriving(a) => chunk_to(total, peer).max(a.piece()),
        _ => chunk_to(total, peer),
    };
    let shm = region.map(|r| (r.control(), r.offset()));
    let offer = peer.is_some_and(super::device::offer);
    let header = Header { total: total as u64, chunk: c as u64, tag: ctag, sender: world_rank(), shm, device: false, offer };
    // SAFETY: `m0p` holds S* bytes: data then header.
    unsafe {
        src.pack(0, d, m0p);
        std::ptr::copy_nonoverlapping(header.encode().as_ptr(), m0p.add(d), HEADER);
    }
    (ctag, c)
}

/// Packs and posts the chunks of a transfer (bytes `[S*-64, total)` of the stream, `c` bytes
/// each, tag `ctag`) to world rank `peer` on the private communicator, or packs them into
/// `region` of the shared-memory arena, and keeps them in [`OUTGOING`] with the memory they
/// are sent from.
///
/// # Safety
/// As [`start`].
#[allow(clippy::too_many_arguments)]
unsafe fn post_chunks(
    src: Source<'_>,
    total: usize,
    c: usize,
    ctag: c_int,
    peer: c_int,
    m0: Option<Staging>,
    region: Option<Region>,
    m0_req: Req,
) {
    crate::stats::count(crate::stats::Family::Pipeline, total);
    if crate::stats::timing_enabled() && !crate::transfer::node::is_local(peer) {
        crate::stats::count(crate::stats::Family::Remote, total);
    }
    let d = m0_data();
    let rest = total - d;
    note_plan(src, total, c, peer, region.is_some());
    if let Some(region) = region {
        crate::stats::count(crate::stats::Family::Shm, total);
        let p = region.as_mut_ptr();
        let mut off = 0;
        let mut m0_moving = m0_req != consts::request_null();
        while off < rest {
            let len = c.min(rest - off);
            // SAFETY: the region holds `rest` bytes and is this transfer's alone.
            unsafe { src.pack(d + off, d + off + len, p.add(off)) };
            off += len;
            region.publish(off);
            if m0_moving {
                // Let the MPI move M0 meanwhile: a receive that lands M0 in the application's
                // non-contiguous buffer (a type left to the MPI's engine) gets it only as this
                // process's MPI pushes it, and unpacks no chunk before (measured: a 16 MiB
                // message took 2x the time when M0 waited for the last chunk).
                let mut flag = 0;
                // SAFETY: M0's live request; the query neither completes nor frees it.
                unsafe { mpi::PMPI_Request_get_status(m0_req, &mut flag, consts::status_ignore()) };
                m0_moving = flag == 0;
            }
        }
        hold(Outgoing { wait: Wait::Shm(region), m0, stream: None, kept: None, slab: None });
        return;
    }
    // Chunks for another node may be split (`netpath::p2p_split_at`): packed in two runs with a
    // gap and sent as one element of a two-run type. Not an arriving stream: it is sent from
    // where it arrives.
    let gapped = !matches!(src, Source::Arriving(_)) && netpath::p2p_split_at(peer, c) != 0;
    let gaps = if gapped { rest.div_ceil(c) * netpath::GAP } else { 0 };
    // An arriving stream is sent from where it arrives; others are packed into staging (its
    // heap memory stays in place when the value moves into OUTGOING).
    let (stream, kept, sp) = match src {
        // The chunks only read it; `d + rest` bytes stay there while `kept` lives.
        Source::Arriving(a) => (None, Some(a.clone()), a.bytes().wrapping_add(d).cast_mut()),
        _ => {
            let mut st = staging::take(rest + gaps);
            let p = st.as_mut_ptr();
            (Some(st), None, p)
        }
    };
    let pc = private();
    let mut reqs = Vec::with_capacity(rest.div_ceil(c));
    let mut off = 0;
    // Where the next chunk goes in staging: `off` plus the gaps of the split chunks before it.
    let mut at_staging = 0;
    while off < rest {
        let len = c.min(rest - off);
        let split = if gapped { netpath::p2p_split_at(peer, len) } else { 0 };
        let split_type = (split != 0).then(|| netpath::cached_split_type(len, split)).flatten();
        let split = if split_type.is_some() { split } else { 0 };
        let mut r = consts::request_null();
        // The last chunk is synchronous: once it is matched, the receiver has read M0 (it posts
        // chunk receives only after M0 arrived), so M0's buffer may go with the others even
        // though M0's request belongs to the application. An eager chunk completes locally at
        // once and would prove nothing.
        let post_chunk = if off + len == rest { next::MPI_Issend } else { next::MPI_Isend };
        // SAFETY: `sp` holds `rest` bytes plus a gap per chunk when split; the chunk is packed
        // (or has arrived) before its send is posted and is not written again.
        unsafe {
            let at = sp.add(at_staging);
            match src {
                Source::Arriving(a) => a.wait(d + off + len),
                _ if split != 0 => {
                    src.pack(d + off, d + off + split, at);
                    src.pack(d + off + split, d + off + len, at.add(split + netpath::GAP));
                }
                _ => src.pack(d + off, d + off + len, at),
            }
            let (count, ty) = split_type.map_or((len as c_int, consts::byte()), |t| (1, t));
            post_chunk(at.cast_const().cast(), count, ty, peer, ctag, pc, &mut r);
        }
        reqs.push(request_key(r));
        if split != 0 && crate::stats::timing_enabled() {
            crate::stats::count(crate::stats::Family::P2pSplit, len);
        }
        off += len;
        at_staging += len + if split != 0 { netpath::GAP } else { 0 };
    }
    hold(Outgoing { wait: Wait::Chunks(reqs), m0, stream, kept, slab: None });
}

/// `SLUICE_LOG=plan`: the route of a pipelined send, once per (source kind, size class, route).
fn note_plan(src: Source<'_>, total: usize, c: usize, peer: c_int, arena: bool) {
    if !crate::logging::plans() {
        return; // the key is not even computed: these run on every staged call
    }
    let (kind, id) = match src {
        Source::Engine(l, _) => ("packed by sluice's engine", l.compiled().id()),
        Source::Bytes(_) => ("contiguous", 0),
        Source::Arriving(_) => ("contiguous, sent as it arrives (a device buffer's host copy)", 0),
    };
    let class = crate::logging::size_class(total);
    crate::logging::plan_once(crate::logging::plan_key(("pipelined", id, class, arena)), || {
        let route = if arena {
            "the rest through the shared-memory arena".to_string()
        } else {
            format!("the rest in {} chunks of {c} bytes through the MPI", (total - m0_data()).div_ceil(c))
        };
        let ty = if id == 0 { String::new() } else { format!(" (datatype #{id})") };
        format!("send of {total} bytes{ty} to world rank {peer}, {kind}: pipelined, M0 of {} bytes, {route}", reserved())
    });
}

fn hold(o: Outgoing) {
    let mut g = OUTGOING.lock().unwrap_or_else(|e| e.into_inner());
    // Counted before another thread's progress can see it (under the lock): counted after, a
    // progress that found its chunks done would take it off first, and the sum of pending work
    // (`progress::idle`, the completion calls' fast path) would dip below a tracked receive
    // for a moment, letting a concurrent MPI_Wait on that receive skip sluice (the
    // p2p_conf_threads failure, docs/sanitizers.md).
    OUTGOING_N.add(1);
    g.push(o);
}

/// Staging buffers that pipelined sends in flight hold.
pub fn staging_held() -> usize {
    let g = OUTGOING.lock().unwrap_or_else(|e| e.into_inner());
    g.iter().map(|o| o.m0.is_some() as usize + o.stream.is_some() as usize).sum()
}

/// Whether chunks of a pipelined send are still in flight on the private communicator.
fn chunks_in_flight() -> bool {
    OUTGOING.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|o| matches!(o.wait, Wait::Chunks(_)))
}

/// Whether chunks of pipelined sends are still in flight.
pub fn in_flight() -> bool {
    OUTGOING_N.get() != 0
}

/// Tests the chunks in flight and releases the memory of finished transfers (the progress
/// engine's poll of [`OUTGOING_N`]).
fn poll_chunks() {
    let Ok(mut g) = OUTGOING.try_lock() else {
        return; // another thread is testing them
    };
    g.retain_mut(|o| {
        let flag = match &mut o.wait {
            Wait::Shm(region) => region.done() as c_int,
            Wait::Chunks(keys) => {
                let mut reqs: Vec<Req> = keys.iter().map(|&k| request_from_key(k)).collect();
                let mut flag = 0;
                // SAFETY: sluice's own requests; statuses ignored.
                unsafe { next::MPI_Testall(reqs.len() as c_int, reqs.as_mut_ptr(), &mut flag, consts::statuses_ignore()) };
                *keys = reqs.iter().map(|&r| request_key(r)).collect();
                flag
            }
        };
        if flag != 0 {
            OUTGOING_N.sub(1);
        }
        flag == 0
    });
}

/// `MPI_Finalize`: delivers every chunk this process sent, receiving and dropping chunks
/// nobody will read (their M0 was truncated by a receive smaller than S\*). Each rank drains
/// until its own chunks are done, then keeps draining until every rank is (an `MPI_Ibarrier`
/// on the private communicator), so no rank leaves while a chunk to it is in flight.
/// Shared-memory regions still unread after the barrier are orphans too: every rank finished
/// its receives (and the receives it freed) before it entered the barrier.
pub fn drain_all() {
    let pc = private();
    while chunks_in_flight() {
        poll_chunks();
        drain_orphans(pc);
    }
    let mut barrier = consts::request_null();
    // SAFETY: collective over the private communicator, called by every rank from MPI_Finalize.
    unsafe { mpi::PMPI_Ibarrier(pc, &mut barrier) };
    loop {
        let mut flag = 0;
        // SAFETY: sluice's own request.
        unsafe { mpi::PMPI_Test(&mut barrier, &mut flag, consts::status_ignore()) };
        if flag != 0 {
            break;
        }
        drain_orphans(pc);
    }
    poll_chunks();
    let orphans = std::mem::take(&mut *OUTGOING.lock().unwrap_or_else(|e| e.into_inner()));
    if !orphans.is_empty() {
        log::debug!("{} shared-memory transfers were never read (their first message was truncated)", orphans.len());
        OUTGOING_N.sub(orphans.len());
    }
}

/// Receives and drops one pending message on the private communicator, if any.
fn drain_orphans(pc: Comm) {
    let (mut flag, mut st) = (0, crate::protocol::p2p::blank_status());
    // SAFETY: probes sluice's own communicator.
    unsafe { mpi::PMPI_Iprobe(crate::ffi::ANY_SOURCE, crate::ffi::ANY_TAG, pc, &mut flag, &mut st) };
    if flag == 0 {
        return;
    }
    let mut n = 0;
    // SAFETY: the status of the probed message.
    unsafe { mpi::PMPI_Get_count(&st, consts::byte(), &mut n) };
    let mut scratch = vec![0u8; n.max(1) as usize];
    // SAFETY: receives exactly the probed message into a buffer of its size.
    unsafe { mpi::PMPI_Recv(scratch.as_mut_ptr().cast(), n, consts::byte(), st.MPI_SOURCE, st.MPI_TAG, pc, consts::status_ignore()) };
    log::debug!("dropped an orphaned chunk of {n} bytes from rank {} (its first message was truncated)", st.MPI_SOURCE);
}
