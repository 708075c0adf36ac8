//! Hollow staging buffers: staging whose middle stretch nobody ever reads, backed by a small
//! ring of physical pages instead of memory of its own.
//!
//! Why: a uniform `MPI_Alltoall` converted to bytes hands the MPI one send and one receive
//! staging buffer with a slot per rank, and the MPI copies this rank's own slot from the one to
//! the other. sluice has already moved the own block directly from the application's send buffer
//! to its receive buffer (`coll::Converted::copy_own_block`), so those staged bytes are garbage
//! that nobody reads, but the MPI cannot be told to skip them: the call must stay an
//! `MPI_Alltoall` (a peer that forwards its contiguous types calls `MPI_Alltoall` too, and the
//! MPIs match collectives by kind), and a uniform call has no per-slot counts. So the own slot is
//! made cheap instead: its pages map a per-buffer ring of [`RING`] bytes over and over, and the
//! MPI's copy of it runs cache to cache. Measured with `bench/hollow_copy.c` (this VM): a
//! 16 MiB copy 2.0-2.1 ms between ordinary buffers, 0.31-0.33 ms between two rings; 64 MiB
//! 7.8-8.1 ms against 1.4-1.7 ms.
//!
//! The mappings are made once per layout (size, hole, guard) and cached ([`IDLE_MAX`] idle), since
//! `mmap` of many ring segments costs more than a copy. Hand-written: the mapping trick is
//! sluice's own; it is a few `mmap` calls over `libc`.

use std::ptr::NonNull;
use std::sync::Mutex;

const PAGE: usize = 4096;
/// Physical bytes behind a hole: a few hundred KiB stay in the L2 cache for both the read and
/// the write side of the copy.
pub const RING: usize = 256 << 10;
/// Holes shorter than this are left as ordinary memory (their copy is cheap).
pub const MIN_HOLE: usize = 1 << 20;
/// Idle mappings kept for reuse: a converted alltoall takes two (send and receive), so this
/// serves eight layouts used in turn. A layout beyond them maps afresh and faults its private
/// pages in again, as fresh staging does.
const IDLE_MAX: usize = 16;

/// One mapped buffer: `cap` usable bytes at the start of a `reserve`-byte private mapping whose
/// pages `[hole.0, hole.1)` (if any) map a ring of its own instead. Without a hole it is
/// `staging`'s guarded buffer (address space reserved behind the usable bytes).
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    cap: usize,
    reserve: usize,
    hole: (usize, usize),
}

// SAFETY: an exclusively owned mapping (the ring's pages belong to this mapping alone), like a
// Box; only accessed through the staging buffer that owns it.
unsafe impl Send for Mapping {}

impl Mapping {
    /// A mapping of `cap` bytes (a multiple of the page size) with the page-aligned hole `hole`
    /// (none when empty) and `guard` extra bytes of reserved address space behind it; `None`
    /// when the system refuses (the caller uses ordinary staging).
    pub fn new(cap: usize, hole: (usize, usize), guard: usize) -> Option<Mapping> {
        let reserve = cap.checked_add(guard)?;
        // SAFETY: a fresh private anonymous mapping; MAP_NORESERVE commits nothing up front.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let m = Mapping { ptr: NonNull::new(p.cast())?, cap, reserve, hole };
        m.map_ring().then_some(m) // dropping `m` unmaps a failed attempt
    }

    /// Maps the ring over the hole, segment after segment, with the page tables filled in
    /// (`MAP_POPULATE`), so that the MPI's first copy does not fault once per page.
    fn map_ring(&self) -> bool {
        if self.hole.0 >= self.hole.1 {
            return true;
        }
        // SAFETY: creates a file descriptor; checked below.
        let fd = unsafe { libc::memfd_create(c"sluice-hollow".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return false;
        }
        // SAFETY: `fd` is the fresh memfd.
        let mut ok = unsafe { libc::ftruncate(fd, RING as libc::off_t) } == 0;
        let mut at = self.hole.0;
        while ok && at < self.hole.1 {
            let n = RING.min(self.hole.1 - at);
            // SAFETY: `[at, at + n)` lies inside this mapping's own reservation (the hole is
            // inside `cap`), so MAP_FIXED replaces only pages this mapping owns.
            let p = unsafe {
                libc::mmap(
                    self.ptr.as_ptr().add(at).cast(),
                    n,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_POPULATE,
                    fd,
                    0,
                )
            };
            ok = p != libc::MAP_FAILED;
            at += n;
        }
        // SAFETY: closes the memfd; the mappings keep its pages.
        unsafe { libc::close(fd) };
        ok
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.cap
    }

    /// Gives back pages an overrunning message wrote past the usable bytes (see `staging`).
    pub fn release_overrun(&mut self, overrun: usize) {
        let len = overrun.min(self.reserve - self.cap).next_multiple_of(PAGE);
        if len > 0 {
            // SAFETY: `[cap, cap + len)` lies inside this mapping's private reservation.
            unsafe { libc::madvise(self.ptr.as_ptr().add(self.cap).cast(), len, libc::MADV_DONTNEED) };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly this mapping's reservation (ring segments included).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.reserve) };
    }
}

/// The page-aligned part of `hole` inside `cap` bytes, if long enough to be worth a ring.
pub fn pages_of(cap: usize, hole: std::ops::Range<usize>) -> Option<(usize, usize)> {
    let (a, b) = (hole.start.next_multiple_of(PAGE), (hole.end.min(cap) / PAGE) * PAGE);
    (b > a && b - a >= MIN_HOLE).then_some((a, b))
}

static IDLE: Mutex<Vec<Mapping>> = Mutex::new(Vec::new());

/// An idle mapping of this layout, or a new one.
pub fn take(cap: usize, hole: (usize, usize), guard: usize) -> Option<Mapping> {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = idle.iter().position(|m| m.cap == cap && m.hole == hole && m.reserve == cap + guard) {
        return Some(idle.swap_remove(i));
    }
    drop(idle);
    Mapping::new(cap, hole, guard)
}

/// Keeps `m` for the next call of the same layout; the oldest idle mapping goes when there are
/// more than [`IDLE_MAX`].
pub fn give_back(m: Mapping) {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    idle.push(m);
    if idle.len() > IDLE_MAX {
        idle.remove(0);
    }
}

/// Unmaps every idle mapping (`MPI_Finalize`).
pub fn trim() {
    let drained = std::mem::take(&mut *IDLE.lock().unwrap_or_else(|e| e.into_inner()));
    drop(drained);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hole_repeats_the_ring_and_the_rest_is_private() {
        let cap = 4 << 20;
        let hole = pages_of(cap, 1000..(3 << 20) + 5).expect("a hole of 3 MiB");
        assert_eq!(hole, (PAGE, 3 << 20));
        let m = Mapping::new(cap, hole, 0).expect("mmap");
        let p = m.ptr();
        // Volatile accesses: to the compiler two addresses are two places, so it may fold plain
        // reads of what it saw written; the point here is that two addresses are one page.
        let at = |o: usize| p.wrapping_add(o);
        // SAFETY: every address is inside the mapping's `cap` bytes.
        unsafe {
            std::ptr::write_bytes(p, 1, cap);
            // Ring segments alias each other: a write through one shows in the next one.
            at(hole.0).write_volatile(9);
            assert_eq!(at(hole.0 + RING).read_volatile(), 9);
            // Outside the hole, memory is the buffer's own.
            assert_eq!(at(hole.0 - 1).read_volatile(), 1);
            assert_eq!(at(hole.1).read_volatile(), 1);
            at(hole.1).write_volatile(5);
            assert_eq!(at(hole.1 + RING).read_volatile(), 1);
        }
    }

    #[test]
    fn short_holes_are_left_alone() {
        assert_eq!(pages_of(8 << 20, 0..(MIN_HOLE - 1)), None);
        assert_eq!(pages_of(8 << 20, 1..MIN_HOLE + 1), None); // page-aligned part too short
        assert_eq!(pages_of(2 << 20, 0..(4 << 20)), Some((0, 2 << 20))); // clipped to the buffer
    }
}
