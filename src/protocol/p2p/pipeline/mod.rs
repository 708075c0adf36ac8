//! The pipelined protocol for large messages (docs/protocol.md, "Pipelined protocol").
//!
//! A transfer is a first message M0 of exactly the reserved size S\* on the application's
//! (communicator, tag), carrying the first S\*-64 bytes of the packed stream and a 64-byte
//! [`Header`], followed by chunks on one private duplicate of `MPI_COMM_WORLD`, tagged with the
//! transfer's tag and addressed by world rank. A received message of S\* bytes is an M0; any
//! other size is an ordinary message, so application data is never read as a header.
//!
//! The sender packs and posts everything when the send is posted and never waits for sluice
//! code on the receiver ([`send`]); the receiver's completion calls post the chunk receives
//! and unpack them through a bounded ring ([`incoming`], [`track`]).

pub mod device;
pub mod incoming;
pub mod persistent;
pub mod placeholder;
pub mod send;
pub mod serve;
pub mod stash;
pub mod track;
pub mod urgency;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::ffi::{consts, errclass, mpi};
use crate::protocol::datatype::TypeArg;
use crate::protocol::limits;
pub use crate::protocol::limits::{reserved, small_count, WIDEST_PREDEFINED};

/// Bytes of the header at the end of M0.
pub const HEADER: usize = 64;
/// First word of every header: a sanity check on top of the size rule.
const MAGIC: u64 = u64::from_le_bytes(*b"SLUICEP1");

static CHUNK: AtomicUsize = AtomicUsize::new(128 << 10);
static DEPTH: AtomicUsize = AtomicUsize::new(4);
/// `SLUICE_PIPELINE_REMOTE_CHUNKS` (`usize::MAX`: off).
static REMOTE_CHUNKS: AtomicUsize = AtomicUsize::new(usize::MAX);
static TAG_UB: AtomicI32 = AtomicI32::new(32767);
static WORLD_RANK: AtomicI32 = AtomicI32::new(-1);
static NEXT_TAG: AtomicU32 = AtomicU32::new(0);
/// `SLUICE_TEST_CHUNK_FAULT`: which chunk receive (1-based, per process) is posted one byte
/// short (0: none), and how many have been posted.
static CHUNK_FAULT: AtomicUsize = AtomicUsize::new(0);
static CHUNKS_POSTED: AtomicUsize = AtomicUsize::new(0);

/// Bytes to post for a chunk receive of `len` bytes: `len`, except for the one receive
/// `SLUICE_TEST_CHUNK_FAULT` names, which the MPI then fails with a truncation (testing only).
pub fn chunk_posting(len: usize) -> usize {
    let fault = CHUNK_FAULT.load(Ordering::Relaxed);
    if fault != 0 && CHUNKS_POSTED.fetch_add(1, Ordering::Relaxed) + 1 == fault {
        log::warn!("SLUICE_TEST_CHUNK_FAULT: chunk receive {fault} posted one byte short");
        return len - 1;
    }
    len
}
/// The private communicator, as an integer (see [`comm_key`]).
static PRIVATE: Mutex<Option<usize>> = Mutex::new(None);

/// Sets S\* (0: off) and the values derived from it.
fn set_reserved(s: usize) {
    limits::set_reserved(s);
    crate::protocol::datatype::refresh_quick_limits();
}

/// Chunk size this process sends with.
pub fn chunk() -> usize {
    CHUNK.load(Ordering::Relaxed)
}

/// Most chunks a transfer to another node is cut into (`usize::MAX`: as many as within one).
pub fn remote_chunks() -> usize {
    REMOTE_CHUNKS.load(Ordering::Relaxed)
}

/// Chunk receives a transfer keeps in flight.
pub fn depth() -> usize {
    DEPTH.load(Ordering::Relaxed)
}

/// Whether a receive of `capacity` bytes may get a pipelined message (an M0 of S\* bytes).
pub fn may_be_pipelined(capacity: usize) -> bool {
    let s = reserved();
    s != 0 && capacity >= s
}

/// Bytes of the packed stream that M0 carries.
pub fn m0_data() -> usize {
    reserved() - HEADER
}

/// This process's rank in `MPI_COMM_WORLD`.
pub fn world_rank() -> c_int {
    WORLD_RANK.load(Ordering::Relaxed)
}

pub(crate) use crate::ffi::{comm_from_key, comm_key};

/// The private communicator for chunks.
pub fn private() -> mpi::MPI_Comm {
    comm_from_key(PRIVATE.lock().unwrap_or_else(|e| e.into_inner()).expect("pipeline started"))
}

/// Lets the MPI make progress on its own (the progress thread's nudge, `progress::thread`): a
/// nonblocking probe on the private communicator. Pipelined sends through the shared-memory
/// arena need no MPI call of sluice's, yet their first message may wait on the MPI's own
/// progress (MPICH moves a 256 KiB message by rendezvous); a probe moves it, matches nothing
/// and receives nothing.
pub fn nudge() {
    let Some(k) = *PRIVATE.lock().unwrap_or_else(|e| e.into_inner()) else { return };
    let (mut flag, mut st) = (0, crate::protocol::p2p::blank_status());
    // SAFETY: probes sluice's own communicator; writes the flag and a local status.
    unsafe { mpi::PMPI_Iprobe(crate::ffi::ANY_SOURCE, crate::ffi::ANY_TAG, comm_from_key(k), &mut flag, &mut st) };
}

/// A new transfer tag on the private communicator: 1..=MPI_TAG_UB (tag 0 is unused).
pub fn next_tag() -> c_int {
    let ub = TAG_UB.load(Ordering::Relaxed).max(1) as u32;
    (NEXT_TAG.fetch_add(1, Ordering::Relaxed) % ub) as c_int + 1
}

/// The header M0 carries after its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Packed bytes of the whole message.
    pub total: u64,
    /// Chunk size the sender uses.
    pub chunk: u64,
    /// Tag of the chunks on the private communicator.
    pub tag: c_int,
    /// The sender's rank in `MPI_COMM_WORLD`.
    pub sender: c_int,
    /// Where the chunks are: `None`, on the private communicator; `Some((control, offset))`, in
    /// a region of the sender's shared-memory arena (`transfer::shm`).
    pub shm: Option<(u32, u64)>,
    /// The region named by `shm` holds a [`device::Descriptor`] instead of the stream after M0:
    /// the whole stream is in the sender's exported device memory (M0's data is not part of it).
    pub device: bool,
    /// The sender has published a device-memory probe that the receiver has not tried yet
    /// ([`device::answer_offer`]).
    pub offer: bool,
}

/// Bits of the header's flags word.
const FLAG_DEVICE: u32 = 1;
const FLAG_OFFER: u32 = 2;

/// The header's `shm` control field when the chunks travel through the MPI.
const NO_SHM: u32 = u32::MAX;

impl Header {
    /// The 64 header bytes.
    pub fn encode(&self) -> [u8; HEADER] {
        let mut b = [0u8; HEADER];
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..16].copy_from_slice(&self.total.to_le_bytes());
        b[16..24].copy_from_slice(&self.chunk.to_le_bytes());
        b[24..28].copy_from_slice(&self.tag.to_le_bytes());
        b[28..32].copy_from_slice(&self.sender.to_le_bytes());
        let (ctrl, off) = self.shm.unwrap_or((NO_SHM, 0));
        b[32..36].copy_from_slice(&ctrl.to_le_bytes());
        let flags = if self.device { FLAG_DEVICE } else { 0 } | if self.offer { FLAG_OFFER } else { 0 };
        b[36..40].copy_from_slice(&flags.to_le_bytes());
        b[40..48].copy_from_slice(&off.to_le_bytes());
        b
    }

    /// Reads a header; `None` if the bytes are not one (checked on top of the size rule).
    pub fn decode(b: &[u8]) -> Option<Header> {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let half = |i: usize| c_int::from_le_bytes(b[i..i + 4].try_into().unwrap());
        if b.len() < HEADER || word(0) != MAGIC {
            return None;
        }
        let ctrl = u32::from_le_bytes(b[32..36].try_into().unwrap());
        let shm = (ctrl != NO_SHM).then(|| (ctrl, word(40)));
        let flags = u32::from_le_bytes(b[36..40].try_into().unwrap());
        let (device, offer) = (flags & FLAG_DEVICE != 0, flags & FLAG_OFFER != 0);
        let h = Header { total: word(8), chunk: word(16), tag: half(24), sender: half(28), shm, device, offer };
        let sane = h.total as usize >= reserved() && h.chunk > 0 && h.tag > 0 && h.sender >= 0 && (!device || shm.is_some());
        sane.then_some(h)
    }
}

/// Starts the pipeline at `MPI_Init`: checks that every rank uses the same threshold (the
/// reserved size must be agreed on), makes the private communicator.
/// `cfg` is `None` for a process whose sluice is off: it takes part with "off".
pub fn start(cfg: Option<&crate::config::Config>) -> Result<(), String> {
    let world = consts::comm_world();
    let cfg = cfg.filter(|c| c.p2p && c.datatype_engine && c.pipeline_threshold != usize::MAX);
    let mine: u64 = cfg.map_or(u64::MAX, |c| c.pipeline_threshold as u64);
    let (mut lo, mut hi) = (0u64, 0u64);
    let mut rank = 0;
    // SAFETY: collective over MPI_COMM_WORLD, called by every rank from MPI_Init; one u64 each.
    unsafe {
        mpi::PMPI_Comm_rank(world, &mut rank);
        let p = (&mine as *const u64).cast::<c_void>();
        mpi::PMPI_Allreduce(p, (&mut lo as *mut u64).cast(), 1, consts::uint64(), mpi_min(), world);
        mpi::PMPI_Allreduce(p, (&mut hi as *mut u64).cast(), 1, consts::uint64(), mpi_max(), world);
    }
    if lo != hi {
        return Err(format!(
            "SLUICE_PIPELINE_THRESHOLD (and SLUICE_P2P/SLUICE_DATATYPE) must be the same on every rank: the reserved message size differs between ranks ({} vs {})",
            show(lo),
            show(hi)
        ));
    }
    let Some(cfg) = cfg else {
        return Ok(());
    };
    let mut private = consts::comm_null();
    let (mut flag, mut ub) = (0, std::ptr::null_mut::<c_int>());
    // SAFETY: collective over MPI_COMM_WORLD from MPI_Init; the attribute value of MPI_TAG_UB
    // is a pointer to the MPI's int.
    unsafe {
        if mpi::PMPI_Comm_dup(world, &mut private) != errclass::SUCCESS {
            return Err("could not create the pipeline's private communicator".into());
        }
        // A failed chunk is reported by the receive it belongs to, through the application's
        // communicator (`incoming::Outcome`), not by the handler the dup inherited.
        mpi::PMPI_Comm_set_errhandler(private, consts::errors_return());
        mpi::PMPI_Comm_get_attr(world, mpi::MPI_TAG_UB as c_int, (&mut ub as *mut *mut c_int).cast(), &mut flag);
        if flag != 0 && !ub.is_null() {
            TAG_UB.store(*ub, Ordering::Relaxed);
        }
    }
    *PRIVATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(comm_key(private));
    WORLD_RANK.store(rank, Ordering::Relaxed);
    CHUNK.store(cfg.pipeline_chunk, Ordering::Relaxed);
    DEPTH.store(cfg.pipeline_depth, Ordering::Relaxed);
    REMOTE_CHUNKS.store(cfg.pipeline_remote_chunks, Ordering::Relaxed);
    CHUNK_FAULT.store(cfg.test_chunk_fault, Ordering::Relaxed);
    // Collective too (every rank with the pipeline on is here).
    crate::transfer::shm::start((cfg.shm_arena != usize::MAX).then_some(cfg.shm_arena));
    // The reserved size is odd: only a byte-typed message can have it, never a power of two
    // or an array of wider elements (measured: with S* = 256 KiB, contiguous 256 KiB messages
    // were pipelined through copies and ran 2.3x slower).
    set_reserved(cfg.pipeline_threshold | 1);
    Ok(())
}

fn show(v: u64) -> String {
    if v == u64::MAX {
        "off".into()
    } else {
        v.to_string()
    }
}

fn mpi_min() -> mpi::MPI_Op {
    // SAFETY: a predefined handle accessor.
    unsafe { mpi::sluice_c_op_min() }
}

fn mpi_max() -> mpi::MPI_Op {
    // SAFETY: a predefined handle accessor.
    unsafe { mpi::sluice_c_op_max() }
}

/// Stops the pipeline at `MPI_Finalize`: every chunk this process sent is delivered (orphans
/// of truncated transfers are drained on every rank) before the private communicator is freed.
pub fn finish() {
    if reserved() == 0 {
        return;
    }
    track::finish();
    send::drain_all();
    set_reserved(0);
    if let Some(k) = PRIVATE.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let mut c = comm_from_key(k);
        // SAFETY: sluice's own communicator; nothing is pending on it any more.
        unsafe { mpi::PMPI_Comm_free(&mut c) };
    }
}

/// Whether the communicator is an intercommunicator (the pipeline serves intracommunicators).
pub fn is_inter(comm: mpi::MPI_Comm) -> bool {
    crate::protocol::comm_facts::is_inter(comm)
}

/// Bytes of `count` elements of `datatype` when the product may reach S\* (cheap for the common
/// small message: predefined types are at most 32 bytes, and a derived type's size comes from
/// its compiled form, without an MPI call), else `None`.
#[inline]
pub fn bytes_if_large(count: i64, t: &TypeArg) -> Option<usize> {
    let s = reserved();
    if s == 0 || count <= 0 {
        return None;
    }
    let datatype = t.handle();
    let size = match t.hint() {
        Some(h) => h.size as u64,
        None if (count as u64).saturating_mul(WIDEST_PREDEFINED) < s as u64 && t.compiled().is_none() => return None,
        None => {
            let mut size: mpi::MPI_Count = 0;
            // SAFETY: writes one count; an invalid type returns an error and leaves 0.
            unsafe { mpi::PMPI_Type_size_x(datatype, &mut size) };
            // Next time the fast path knows it (a large message of a predefined type, mostly).
            crate::protocol::datatype::remember_size(datatype, size.max(0) as usize);
            size.max(0) as u64
        }
    };
    let n = size.saturating_mul(count as u64);
    (n >= s as u64).then_some(n as usize)
}

/// Whether `count` elements of `datatype` are one contiguous run of bytes (starting at the
/// true lower bound) **in stream order**. Sizes and bounds alone do not tell: a derived type can
/// fill its extent without a hole yet list its bytes in another order (an indexed type with
/// permuted or negative displacements), so a derived type must be one sluice's dataloop calls
/// contiguous, and a type sluice did not compile must be predefined.
pub fn is_contiguous(t: &TypeArg) -> bool {
    let datatype = t.handle();
    if !fills_its_extent(datatype) {
        return false;
    }
    if let Some(ct) = t.compiled() {
        return ct.dataloop().contiguous;
    }
    let (mut ni, mut na, mut nt, mut combiner) = (0, 0, 0, -1);
    // SAFETY: writes four ints; an invalid type returns an error.
    let rc = unsafe { mpi::PMPI_Type_get_envelope(datatype, &mut ni, &mut na, &mut nt, &mut combiner) };
    rc == errclass::SUCCESS && combiner == mpi::SLUICE_COMBINER_NAMED as c_int
}

/// Whether the type's size, extent and true extent are equal (no hole, elements tile).
fn fills_its_extent(datatype: mpi::MPI_Datatype) -> bool {
    crate::protocol::datatype::bounds(datatype).is_some_and(|b| b.size > 0 && b.size == b.extent && b.size == b.true_extent)
}

/// The lower bound of the data of a contiguous type (its true lower bound).
pub fn true_lb(datatype: mpi::MPI_Datatype) -> isize {
    let (mut lb, mut extent): (mpi::MPI_Count, mpi::MPI_Count) = (0, 0);
    // SAFETY: writes two counts.
    unsafe { mpi::PMPI_Type_get_true_extent_x(datatype, &mut lb, &mut extent) };
    lb as isize
}

/// Translates `rank` of intracommunicator `comm` into its `MPI_COMM_WORLD` rank (`None`: not
/// in the world, e.g. a spawned process).
pub fn world_rank_of(comm: mpi::MPI_Comm, rank: c_int) -> Option<c_int> {
    crate::protocol::comm_facts::world_rank_of(comm, rank)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's one comparison must say "small" exactly where `bytes_if_large` does.
    #[test]
    fn small_count_matches_the_widest_predefined_bound() {
        for s in [1usize, 31, 32, 33, 63, 64, 129, (256 << 10) + 1, (1 << 20) - 1, usize::MAX] {
            let small = limits::small_count_for(s);
            let edge = small.saturating_sub(40)..small.saturating_add(40);
            for count in edge.chain([0, 1, u64::MAX, i64::MAX as u64, (-1i64) as u64]) {
                let bound = count.saturating_mul(WIDEST_PREDEFINED) < s as u64;
                assert_eq!(count < small, bound, "s={s} count={count}");
            }
        }
        assert_eq!(limits::small_count_for(0), u64::MAX);
    }

    /// Both chunk paths survive the header round trip; other bytes are never a header.
    #[test]
    fn header_round_trips_with_and_without_a_shared_memory_region() {
        for shm in [None, Some((0, 266240)), Some((4095, u64::MAX - 7))] {
            for (device, offer) in [(false, false), (false, true), (true, false), (true, true)] {
                let h = Header { total: 1 << 20, chunk: 4096, tag: 7, sender: 3, shm, device, offer };
                let back = Header::decode(&h.encode());
                if device && shm.is_none() {
                    assert_eq!(back, None, "a device stream needs its descriptor's region");
                } else {
                    assert_eq!(back, Some(h));
                }
            }
        }
        assert_eq!(Header::decode(&[0u8; HEADER]), None);
    }
}
