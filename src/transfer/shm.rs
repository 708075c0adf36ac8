//! The node's shared-memory channel: each process owns one *arena*, a `memfd` mapped shared,
//! which the other processes of its node map at `MPI_Init` through `/proc/<pid>/fd/<fd>` (the
//! way UCX's posix transport attaches a peer's memfd; unlike a file in `/dev/shm` it is not
//! bounded by a container's small tmpfs). A pipelined sender packs the stream straight into a
//! region of its own arena and publishes how far it got; the receiver unpacks from the sender's
//! arena as the bytes appear and marks the region done (docs/protocol.md, "Shared-memory
//! chunks"). No copy between the two: the receiving CPU only unpacks.
//!
//! Layout of an arena: page 0 holds the owner's token (checked by every peer that maps it, so
//! a stale or foreign `/proc` entry is never used), then [`CONTROLS`] control blocks of one cache
//! line each, then one receipt slot per world rank below [`RECEIPT_RANKS`] (`transfer::receipt`:
//! written by that rank when it finished a large message from the owner), then as many hint
//! lines (`receipt::Hints`: written by the owner, read by that rank) and median lines
//! (`receipt::Medians`: the owner's path contest measurements, read by that rank), then the
//! data region,
//! handed out in whole pages first fit (the lowest pages are reused, so a stream of transfers
//! stays on pages already faulted in).
//!
//! Hand-written: the arena's layout, its allocator and the publish/done handshake are sluice's
//! own protocol state; the system calls come from `libc`, as in `staging`.

use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use super::receipt::{Hints, Medians, Slot};
use crate::ffi::{consts, mpi};

const PAGE: usize = 4096;
/// Transfers one process can have in its arena at once.
pub const CONTROLS: usize = 4096;
/// First receipt slot.
const RECEIPTS: usize = PAGE + CONTROLS * 64;
/// World ranks with a receipt slot (a receiver above has none: its senders' path contests time
/// the send alone).
pub const RECEIPT_RANKS: usize = 2048;
/// First hint line (one per world rank below [`RECEIPT_RANKS`]).
const HINTS: usize = RECEIPTS + RECEIPT_RANKS * std::mem::size_of::<Slot>();
/// First median line (one per world rank below [`RECEIPT_RANKS`]).
const MEDIANS: usize = HINTS + RECEIPT_RANKS * std::mem::size_of::<Hints>();
/// First byte of the data region.
const DATA: usize = MEDIANS + RECEIPT_RANKS * std::mem::size_of::<Medians>();
/// The smallest arena `SLUICE_SHM_ARENA` accepts (the control blocks and some data).
pub const MIN_ARENA: usize = 1 << 20;

/// One transfer's handshake, one cache line: the sender stores `packed` (bytes of the region
/// written, release) as it packs; the receiver stores `done` once it has read the whole region.
#[repr(C, align(64))]
struct Control {
    packed: AtomicU64,
    done: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Control>() == 64);
const _: () = assert!(DATA % PAGE == 0 && DATA < MIN_ARENA);

/// A mapped arena.
#[derive(Clone, Copy)]
struct Mapping {
    base: *mut u8,
    size: usize,
}

// SAFETY: shared memory mapped for the life of the process; every access goes through atomics
// (control blocks) or through regions owned by one transfer.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The receipt slot of receiver `rank` (`None` above [`RECEIPT_RANKS`]).
    fn receipt(&self, rank: c_int) -> Option<&Slot> {
        let i = usize::try_from(rank).ok().filter(|&i| i < RECEIPT_RANKS)?;
        // SAFETY: inside the receipt slots of a mapped arena (`DATA` <= every arena's size:
        // `MIN_ARENA`), 64-byte aligned, only accessed through atomics.
        Some(unsafe { &*self.base.add(RECEIPTS + i * std::mem::size_of::<Slot>()).cast::<Slot>() })
    }

    /// The hint line for receiver `rank` (`None` above [`RECEIPT_RANKS`]).
    fn hints(&self, rank: c_int) -> Option<&Hints> {
        let i = usize::try_from(rank).ok().filter(|&i| i < RECEIPT_RANKS)?;
        // SAFETY: inside the hint lines of a mapped arena (below `DATA`, as above), 64-byte
        // aligned, only accessed through atomics.
        Some(unsafe { &*self.base.add(HINTS + i * std::mem::size_of::<Hints>()).cast::<Hints>() })
    }

    /// The median line for receiver `rank` (`None` above [`RECEIPT_RANKS`]).
    fn medians(&self, rank: c_int) -> Option<&Medians> {
        let i = usize::try_from(rank).ok().filter(|&i| i < RECEIPT_RANKS)?;
        // SAFETY: inside the median lines of a mapped arena (below `DATA`, as above), 64-byte
        // aligned, only accessed through atomics.
        Some(unsafe { &*self.base.add(MEDIANS + i * std::mem::size_of::<Medians>()).cast::<Medians>() })
    }

    fn control(&self, i: u32) -> &Control {
        // SAFETY: `i < CONTROLS` (checked by callers); the block lies in page 1.. of the mapping
        // and is only accessed atomically.
        unsafe { &*self.base.add(PAGE + i as usize * 64).cast::<Control>() }
    }
}

/// What `MPI_Init` set up: this process's arena and the arenas of its node's peers.
struct Node {
    /// This process's world rank.
    me: c_int,
    own: Mapping,
    /// World ranks whose arena this process mapped (it can receive from them).
    peers: FxHashMap<c_int, Mapping>,
    /// World ranks that mapped this process's arena (it can send to them).
    reach: FxHashSet<c_int>,
}

static NODE: OnceLock<Node> = OnceLock::new();
/// The allocator of this process's arena.
static FREE: Mutex<Option<Free>> = Mutex::new(None);

/// Free control blocks and free data ranges of the own arena.
struct Free {
    controls: Vec<u32>,
    ranges: Ranges,
}

/// First-fit free list of page ranges (offset -> length), merged on release.
#[derive(Default)]
struct Ranges(BTreeMap<usize, usize>);

impl Ranges {
    fn take(&mut self, len: usize) -> Option<usize> {
        let (&off, &have) = self.0.iter().find(|(_, &l)| l >= len)?;
        self.0.remove(&off);
        if have > len {
            self.0.insert(off + len, have - len);
        }
        Some(off)
    }

    fn give(&mut self, mut off: usize, mut len: usize) {
        if let Some((&p, &pl)) = self.0.range(..off).next_back() {
            if p + pl == off {
                self.0.remove(&p);
                off = p;
                len += pl;
            }
        }
        if let Some(nl) = self.0.remove(&(off + len)) {
            len += nl;
        }
        self.0.insert(off, len);
    }
}

/// A region of this process's arena that one pipelined send packs into.
pub struct Region {
    ctrl: u32,
    off: usize,
    len: usize,
}

impl Region {
    /// The control block index the header carries.
    pub fn control(&self) -> u32 {
        self.ctrl
    }

    /// Offset of the data in the arena, as the header carries it.
    pub fn offset(&self) -> u64 {
        self.off as u64
    }

    /// Start of the region's `len` bytes.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        // SAFETY: the region lies inside the own arena.
        unsafe { own().base.add(self.off) }
    }

    /// Makes the first `bytes` of the region visible to the receiver.
    pub fn publish(&self, bytes: usize) {
        own().control(self.ctrl).packed.store(bytes as u64, Ordering::Release);
    }

    /// Whether the receiver has read the whole region (and therefore M0 before it).
    pub fn done(&self) -> bool {
        own().control(self.ctrl).done.load(Ordering::Acquire) != 0
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let mut g = FREE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = g.as_mut() {
            f.controls.push(self.ctrl);
            f.ranges.give(self.off, self.len);
        }
    }
}

fn own() -> Mapping {
    NODE.get().expect("shared-memory arena set up").own
}

/// A region of `len` bytes for a send to world rank `peer`, if `peer` mapped this arena and
/// the arena has room (else the transfer's chunks travel through the MPI).
pub fn reserve(peer: c_int, len: usize) -> Option<Region> {
    let node = NODE.get()?;
    if !node.reach.contains(&peer) || len == 0 {
        return None;
    }
    let len = len.next_multiple_of(PAGE);
    let mut g = FREE.lock().unwrap_or_else(|e| e.into_inner());
    let f = g.as_mut()?;
    let ctrl = *f.controls.last()?;
    let off = f.ranges.take(len)?;
    f.controls.pop();
    drop(g);
    let c = node.own.control(ctrl);
    c.packed.store(0, Ordering::Relaxed);
    c.done.store(0, Ordering::Relaxed);
    Some(Region { ctrl, off, len })
}

/// The receiving side's view of a region in a peer's arena.
pub struct PeerRegion {
    map: Mapping,
    ctrl: u32,
    off: usize,
    len: usize,
}

/// The region that world rank `sender` announced in a header (`None`: no such arena mapped,
/// or the region lies outside it).
pub fn attach(sender: c_int, ctrl: u32, off: u64, len: usize) -> Option<PeerRegion> {
    let map = *NODE.get()?.peers.get(&sender)?;
    let off = usize::try_from(off).ok()?;
    let fits = (ctrl as usize) < CONTROLS && off >= DATA && off.checked_add(len).is_some_and(|end| end <= map.size);
    fits.then_some(PeerRegion { map, ctrl, off, len })
}

impl PeerRegion {
    /// Bytes the sender has published so far.
    pub fn packed(&self) -> usize {
        (self.map.control(self.ctrl).packed.load(Ordering::Acquire) as usize).min(self.len)
    }

    /// Bytes `[from, to)` of the region, once published.
    pub fn bytes(&self, from: usize, to: usize) -> &[u8] {
        assert!(from <= to && to <= self.len);
        // SAFETY: inside the mapped region (checked in `attach`); the sender wrote these bytes
        // before publishing them and does not write them again during this transfer.
        unsafe { std::slice::from_raw_parts(self.map.base.add(self.off + from), to - from) }
    }

    /// Tells the sender the region is read and may be reused.
    pub fn finish(&self) {
        self.map.control(self.ctrl).done.store(1, Ordering::Release);
    }
}

// SAFETY: see `Mapping`.
unsafe impl Send for PeerRegion {}

// Page 0 after the token: what this process tells its node's peers about device memory
// (`protocol::p2p::pipeline::device`). The probe: a state word (1: published) and a CUDA IPC
// handle of this process's, written before the state. The pull table: one byte per world rank
// below [`PULL_RANKS`], written only by the arena's owner: whether the owner can open device
// memory that rank exports ([`Pull`]).
const PROBE_STATE: usize = 64;
const PROBE_HANDLE: usize = 128;
const PROBE_LEN: usize = 64;
const PULL_TABLE: usize = 256;
/// World ranks the pull table has a byte for.
pub const PULL_RANKS: usize = PAGE - PULL_TABLE;
// Page 0's fields follow the 16-byte token without overlapping.
const _: () = assert!(16 <= PROBE_STATE && PROBE_STATE + 8 <= PROBE_HANDLE && PROBE_HANDLE + PROBE_LEN <= PULL_TABLE);

/// Whether an arena's owner can open device memory a peer exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pull {
    /// Not tried yet.
    Unknown = 0,
    /// Opened the peer's probe.
    Yes = 1,
    /// Could not.
    No = 2,
}

impl Mapping {
    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: page 0 of a live mapping, 8-byte aligned offsets, accessed atomically.
        unsafe { &*self.base.add(off).cast::<AtomicU64>() }
    }

    fn pull_byte(&self, rank: c_int) -> Option<&std::sync::atomic::AtomicU8> {
        let i = usize::try_from(rank).ok().filter(|&i| i < PULL_RANKS)?;
        // SAFETY: inside page 0 (checked above), accessed atomically.
        Some(unsafe { &*self.base.add(PULL_TABLE + i).cast::<std::sync::atomic::AtomicU8>() })
    }
}

/// Publishes this process's probe handle (once; `false` without an own arena).
pub fn publish_probe(handle: &[u8; PROBE_LEN]) -> bool {
    let Some(node) = NODE.get().filter(|n| n.own.size != 0) else { return false };
    let m = node.own;
    if m.word(PROBE_STATE).load(Ordering::Acquire) == 1 {
        return true;
    }
    // SAFETY: page 0 of the own arena; peers read these bytes only after the state says 1.
    unsafe { std::ptr::copy_nonoverlapping(handle.as_ptr(), m.base.add(PROBE_HANDLE), PROBE_LEN) };
    m.word(PROBE_STATE).store(1, Ordering::Release);
    true
}

/// Whether this process published its probe.
pub fn probe_published() -> bool {
    NODE.get().filter(|n| n.own.size != 0).is_some_and(|n| n.own.word(PROBE_STATE).load(Ordering::Acquire) == 1)
}

/// The probe handle world rank `sender` published, if this process mapped its arena and it did.
pub fn peer_probe(sender: c_int) -> Option<[u8; PROBE_LEN]> {
    let m = *NODE.get()?.peers.get(&sender)?;
    if m.word(PROBE_STATE).load(Ordering::Acquire) != 1 {
        return None;
    }
    let mut h = [0u8; PROBE_LEN];
    // SAFETY: page 0 of a mapped peer arena, written before the state was published.
    unsafe { std::ptr::copy_nonoverlapping(m.base.add(PROBE_HANDLE), h.as_mut_ptr(), PROBE_LEN) };
    Some(h)
}

/// Whether world rank `peer` can open device memory this process exports (read in `peer`'s
/// arena; `Unknown` when this process did not map it or has no byte there).
pub fn peer_pulls(peer: c_int) -> Pull {
    let Some(node) = NODE.get() else { return Pull::Unknown };
    let Some(m) = node.peers.get(&peer) else { return Pull::Unknown };
    match m.pull_byte(node.me).map(|b| b.load(Ordering::Acquire)) {
        Some(1) => Pull::Yes,
        Some(2) => Pull::No,
        _ => Pull::Unknown,
    }
}

/// Whether this process can open device memory world rank `sender` exports (its own table).
pub fn own_pull(sender: c_int) -> Pull {
    let Some(node) = NODE.get().filter(|n| n.own.size != 0) else { return Pull::No };
    match node.own.pull_byte(sender).map(|b| b.load(Ordering::Acquire)) {
        Some(0) => Pull::Unknown,
        Some(1) => Pull::Yes,
        _ => Pull::No,
    }
}

/// Records whether this process can open device memory world rank `sender` exports.
pub fn set_own_pull(sender: c_int, p: Pull) {
    if let Some(b) = NODE.get().filter(|n| n.own.size != 0).and_then(|n| n.own.pull_byte(sender)) {
        b.store(p as u8, Ordering::Release);
    }
}

/// The slot in this process's arena where world rank `receiver` writes its receipts, and the
/// line where this process asks it which receive to post (`None`: no own arena, `receiver` did
/// not map it, or it has no slot).
pub fn own_lines(receiver: c_int) -> Option<(&'static Slot, &'static Hints)> {
    let node = NODE.get()?;
    if !node.reach.contains(&receiver) {
        return None;
    }
    Some((node.own.receipt(receiver)?, node.own.hints(receiver)?))
}

/// The line in this process's arena where it publishes what its path contest measured of its
/// sends to world rank `receiver`, and the line in `receiver`'s arena where that rank publishes
/// the same of its sends to this process (`None` as for [`own_lines`] and [`peer_receipts`]).
pub fn median_lines(receiver: c_int) -> (Option<&'static Medians>, Option<&'static Medians>) {
    let Some(node) = NODE.get() else { return (None, None) };
    let own = node.reach.contains(&receiver).then(|| node.own.medians(receiver)).flatten();
    (own, node.peers.get(&receiver).and_then(|m| m.medians(node.me)))
}

/// The slot in world rank `sender`'s arena where this process writes its receipts for messages
/// from `sender` (`None`: that arena is not mapped, or this rank has no slot).
pub fn peer_receipts(sender: c_int) -> Option<&'static Slot> {
    let node = NODE.get()?;
    node.peers.get(&sender)?.receipt(node.me)
}

/// The line in world rank `sender`'s arena where it asks this process which receive to post
/// (`None` as for [`peer_receipts`]).
pub fn peer_hints(sender: c_int) -> Option<&'static Hints> {
    let node = NODE.get()?;
    node.peers.get(&sender)?.hints(node.me)
}

/// Whether this process mapped any peer's arena (it can write receipts).
pub fn maps_peers() -> bool {
    NODE.get().is_some_and(|n| !n.peers.is_empty())
}

/// Whether a pipelined send to world rank `peer` may name a region of this arena (the peer
/// mapped it).
pub fn reaches(peer: c_int) -> bool {
    NODE.get().is_some_and(|n| n.reach.contains(&peer))
}

/// What a process tells the others about its arena at `MPI_Init`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Card {
    token: [u64; 2],
    size: u64,
    pid: i32,
    fd: i32,
}

/// Sets the channel up at `MPI_Init` (collective over `MPI_COMM_WORLD`; every rank calls it,
/// after `node::start`).
/// `size`: this process's arena in bytes (`None`: no arena; it still maps its peers').
pub fn start(size: Option<usize>) {
    let world = consts::comm_world();
    let (mut me, mut n) = (0, 0);
    // SAFETY: plain queries.
    unsafe {
        mpi::PMPI_Comm_rank(world, &mut me);
        mpi::PMPI_Comm_size(world, &mut n);
    }
    let own = size.and_then(create);
    let mut card = Card { token: [0; 2], size: 0, pid: std::process::id() as i32, fd: -1 };
    if let Some((m, fd, token)) = own {
        (card.token, card.size, card.fd) = (token, m.size as u64, fd);
    }
    let n = n.max(1) as usize;
    let mut cards = vec![card; n];
    let cb = std::mem::size_of::<Card>() as c_int;
    // SAFETY: collective from MPI_Init; `cards` holds one card per rank.
    unsafe { mpi::PMPI_Allgather((&card as *const Card).cast(), cb, consts::byte(), cards.as_mut_ptr().cast(), cb, consts::byte(), world) };
    let mut peers = FxHashMap::default();
    let mut mapped = vec![0u8; n];
    for (r, c) in cards.iter().enumerate() {
        // Only peers the MPI puts on this node (`transfer::node`): elsewhere the /proc entry is
        // another machine's, or on an emulated cluster one the MPI would not share memory with.
        if r as c_int != me && c.fd >= 0 && super::node::is_local(r as c_int) {
            if let Some(m) = attach_arena(c) {
                peers.insert(r as c_int, m);
                mapped[r] = 1;
            }
        }
    }
    let mut theirs = vec![0u8; n];
    // SAFETY: collective; one byte per rank each way.
    unsafe { mpi::PMPI_Alltoall(mapped.as_ptr().cast(), 1, consts::byte(), theirs.as_mut_ptr().cast(), 1, consts::byte(), world) };
    if let Some((_, fd, _)) = own {
        // Every peer that could map the arena has (the alltoall follows its attempts); the
        // mappings keep the memory, so the descriptor is not left open in the application.
        // SAFETY: our own descriptor, used by nothing else.
        unsafe { libc::close(fd) };
    }
    let reach = if own.is_some() {
        theirs.iter().enumerate().filter(|(_, &b)| b != 0).map(|(r, _)| r as c_int).collect()
    } else {
        FxHashSet::default()
    };
    log::debug!("shared-memory arena: {} bytes, mapped by {} peers, {} peer arenas mapped", card.size, reach.len(), peers.len());
    let own = own.map_or(Mapping { base: std::ptr::null_mut(), size: 0 }, |(m, _, _)| m);
    if own.size != 0 {
        let mut ranges = Ranges::default();
        ranges.give(DATA, own.size - DATA);
        *FREE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Free { controls: (0..CONTROLS as u32).rev().collect(), ranges });
    }
    let _ = NODE.set(Node { me, own, peers, reach });
}

/// Creates this process's arena: the mapping, its descriptor (open until the peers mapped it)
/// and its token.
fn create(size: usize) -> Option<(Mapping, c_int, [u64; 2])> {
    let size = size.max(MIN_ARENA).next_multiple_of(PAGE);
    // SAFETY: a new anonymous memory file; the name is only for /proc listings.
    let fd = unsafe { libc::memfd_create(c"sluice-arena".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        log::info!("no shared-memory arena (memfd_create: {}): pipelined chunks travel through the MPI", std::io::Error::last_os_error());
        return None;
    }
    // SAFETY: sizes the file created above and maps it shared; pages are allocated on first touch.
    let base = unsafe {
        if libc::ftruncate(fd, size as libc::off_t) != 0 {
            libc::close(fd);
            return None;
        }
        libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_NORESERVE, fd, 0)
    };
    if base == libc::MAP_FAILED {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
        return None;
    }
    let mut token = [0u64; 2];
    // SAFETY: fills the 16 bytes of `token`.
    let got = unsafe { libc::getrandom(token.as_mut_ptr().cast(), 16, libc::GRND_NONBLOCK) };
    if got != 16 {
        // No entropy this early: unique is enough (the check only tells arenas apart).
        token = [std::process::id() as u64 ^ (base as u64).rotate_left(17), now_nanos()];
    }
    // SAFETY: page 0 of the new mapping.
    unsafe { std::ptr::copy_nonoverlapping(token.as_ptr(), base.cast::<[u64; 2]>().cast(), 2) };
    Some((Mapping { base: base.cast(), size }, fd, token))
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Maps a peer's arena through its `/proc` descriptor entry and checks its token.
fn attach_arena(c: &Card) -> Option<Mapping> {
    let path = std::ffi::CString::new(format!("/proc/{}/fd/{}", c.pid, c.fd)).ok()?;
    let size = usize::try_from(c.size).ok().filter(|&s| s >= MIN_ARENA)?;
    // SAFETY: opens and maps a file; the descriptor is closed at once (the mapping keeps the
    // memory alive).
    let base = unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if fd < 0 {
            log::info!("cannot open {path:?} ({}): chunks from that rank travel through the MPI", std::io::Error::last_os_error());
            return None;
        }
        let p = libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_NORESERVE, fd, 0);
        libc::close(fd);
        p
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let mut token = [0u64; 2];
    // SAFETY: page 0 of the mapping just made.
    unsafe { std::ptr::copy_nonoverlapping(base.cast::<u64>(), token.as_mut_ptr(), 2) };
    if token != c.token {
        // SAFETY: the mapping just made.
        unsafe { libc::munmap(base, size) };
        log::info!("{path:?} is not the arena its owner announced: chunks from that rank travel through the MPI");
        return None;
    }
    Some(Mapping { base: base.cast::<u8>(), size })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_first_fit_and_merge_on_release() {
        let mut r = Ranges::default();
        r.give(0, 100);
        assert_eq!(r.take(30), Some(0));
        assert_eq!(r.take(30), Some(30));
        assert_eq!(r.take(50), None);
        r.give(0, 30);
        assert_eq!(r.take(40), Some(60));
        assert_eq!(r.take(20), Some(0));
        r.give(60, 40);
        r.give(0, 20);
        r.give(30, 30);
        // 0..100 is whole again.
        assert_eq!(r.0.len(), 1);
        assert_eq!(r.take(100), Some(0));
        assert_eq!(r.take(1), None);
    }

    /// A pull byte exists for every world rank the table covers and for no other.
    #[test]
    fn pull_bytes_cover_exactly_the_table() {
        let mut page = vec![0u64; PAGE / 8];
        let m = Mapping { base: page.as_mut_ptr().cast(), size: PAGE };
        assert!(m.pull_byte(-1).is_none());
        assert!(m.pull_byte(PULL_RANKS as c_int).is_none());
        let last = m.pull_byte(PULL_RANKS as c_int - 1).expect("the last rank's byte");
        last.store(Pull::Yes as u8, Ordering::Release);
        assert_eq!(m.pull_byte(0).map(|b| b.load(Ordering::Acquire)), Some(Pull::Unknown as u8));
        // SAFETY: the last byte of the page the mapping stands for.
        assert_eq!(unsafe { *m.base.add(PAGE - 1) }, Pull::Yes as u8);
        m.word(PROBE_STATE).store(1, Ordering::Release);
        assert_eq!(page[PROBE_STATE / 8], 1);
    }
}
