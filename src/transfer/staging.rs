//! A pool of staging buffers: contiguous byte buffers that hold a packed stream between the
//! datatype engine and the MPI.
//!
//! Buffers come in power-of-two size classes (4 KiB up), so a buffer returned by one transfer
//! serves the next one of a similar size without touching the allocator or faulting pages in
//! again (first touch costs 2-4 us per page on this VM: `shared/notes/platform-facts.md`). Idle
//! buffers are kept up to a byte budget (`SLUICE_STAGING_CACHE`, or twice the most staging ever in
//! use at once if that is larger; 0 keeps none); the rest go back to the system.
//!
//! Receive staging on Open MPI is *guarded*: Open MPI 4.1's shared-memory single-copy path writes
//! the whole message into a contiguous receive buffer even when it is longer than the buffer
//! (it reports MPI_ERR_TRUNCATE afterwards; measured: a 8000-byte message into a 4000-byte
//! `MPI_PACKED` or `MPI_BYTE` receive overwrites 4000 bytes past the end, while a non-contiguous
//! receive type is bounded). A bare application receiving a non-contiguous type is safe from
//! that, so sluice's staging must be too: guarded buffers sit at the start of a large
//! `MAP_NORESERVE` reservation, so an overrun lands in sluice's own untouched address space
//! (faulted in only if written, released again with `MADV_DONTNEED`).
//! A collective can also take *hollow* staging ([`take_hollow`], `hollow.rs`): a buffer whose
//! unread middle (the own slot of a uniform alltoall) maps a small ring of pages; those are kept
//! per layout, outside the size classes.
//! Hand-written because it is sluice's own policy (size classes + budget + leak counters) and
//! will be backed by the registration manager (pinned buckets) later; it is a few lines over
//! `Vec`.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::hollow;

const MIN_SHIFT: u32 = 12;
const CLASSES: usize = 40;
/// Address space reserved behind a guarded buffer (virtual only; nothing is committed unless an
/// overrunning message writes it).
const GUARD_RESERVE: usize = 1 << 36;

/// Memory of one staging buffer.
#[derive(Debug)]
enum Buf {
    Heap(Box<[u8]>),
    /// `cap` usable bytes at the start of a `cap + GUARD_RESERVE` private anonymous mapping.
    Guarded(hollow::Mapping),
    /// A buffer with a stretch backed by a ring of shared pages ([`hollow`]), not pooled.
    Hollow(hollow::Mapping),
}

impl Buf {
    fn len(&self) -> usize {
        match self {
            Buf::Heap(b) => b.len(),
            Buf::Guarded(m) | Buf::Hollow(m) => m.len(),
        }
    }

    fn ptr(&mut self) -> *mut u8 {
        match self {
            Buf::Heap(b) => b.as_mut_ptr(),
            Buf::Guarded(m) | Buf::Hollow(m) => m.ptr(),
        }
    }

    fn guarded(cap: usize) -> Buf {
        match hollow::Mapping::new(cap, (0, 0), GUARD_RESERVE) {
            Some(m) => Buf::Guarded(m),
            None => Buf::Heap(vec![0u8; cap].into_boxed_slice()), // no address space: unguarded
        }
    }

    /// Gives back the pages an overrunning message wrote past the usable bytes.
    fn release_overrun(&mut self, overrun: usize) {
        if let Buf::Guarded(m) | Buf::Hollow(m) = self {
            m.release_overrun(overrun);
        }
    }
}

/// Idle buffers per size class, plain and guarded.
static IDLE: [Mutex<Vec<Buf>>; CLASSES] = [const { Mutex::new(Vec::new()) }; CLASSES];
static IDLE_GUARDED: [Mutex<Vec<Buf>>; CLASSES] = [const { Mutex::new(Vec::new()) }; CLASSES];
/// Bytes held by idle buffers.
static IDLE_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Buffers handed out and not yet returned.
static IN_USE: AtomicI64 = AtomicI64::new(0);
/// Budget for idle bytes (`SLUICE_STAGING_CACHE`), set at start-up.
static BUDGET: AtomicUsize = AtomicUsize::new(64 << 20);
/// Bytes of buffers handed out now (pooled class sizes), and the most ever at once.
static IN_USE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

/// One staging buffer, at least as long as requested. Dropping it returns it to the pool.
#[derive(Debug)]
pub struct Staging {
    buf: Option<Buf>,
    len: usize,
    overrun: usize,
}

impl Staging {
    /// The requested length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the requested length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The requested bytes.
    pub fn bytes(&self) -> &[u8] {
        let p = match self.buf.as_ref().expect("live staging buffer") {
            Buf::Heap(b) => b.as_ptr(),
            Buf::Guarded(m) | Buf::Hollow(m) => m.ptr().cast_const(),
        };
        // SAFETY: the buffer holds at least `len` initialized bytes (zeroed or mapped anonymous
        // memory, then written by sluice or the MPI) and is borrowed with `self`.
        unsafe { std::slice::from_raw_parts(p, self.len) }
    }

    /// The requested bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        let p = self.as_mut_ptr();
        // SAFETY: as in `bytes`, borrowed mutably with `self`.
        unsafe { std::slice::from_raw_parts_mut(p, len) }
    }

    /// Start of the buffer, for handing to the MPI. Stable while `self` lives: the memory never
    /// moves or reallocates.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut().expect("live staging buffer").ptr()
    }

    /// Records that a receive reported `total` bytes into this buffer of `len` bytes: the part
    /// beyond is released when the buffer goes back to the pool.
    pub fn note_received(&mut self, total: usize) {
        self.overrun = self.overrun.max(total.saturating_sub(self.buf.as_ref().map_or(0, Buf::len)));
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(mut b) = self.buf.take() {
            if self.overrun > 0 {
                b.release_overrun(self.overrun);
            }
            give_back(b);
        }
    }
}

fn class_of(len: usize) -> usize {
    let bits = usize::BITS - len.max(1 << MIN_SHIFT).saturating_sub(1).leading_zeros();
    (bits - MIN_SHIFT) as usize
}

/// Sets the idle-byte budget (`SLUICE_STAGING_CACHE`) and trims the pool to it.
pub fn set_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
    if IDLE_BYTES.load(Ordering::Relaxed) > bytes {
        trim();
    }
}

thread_local! {
    /// One idle smallest-class buffer per kind (plain, guarded) for this thread: a small message
    /// then takes and returns its staging buffer without touching the pool's locks. Not counted
    /// in the idle bytes (at most 8 KiB per thread) and freed when the thread exits.
    static SMALL: [Cell<Option<Buf>>; 2] = const { [Cell::new(None), Cell::new(None)] };
}

fn small_slot(guarded: bool) -> usize {
    guarded as usize
}

fn take_from(pools: &'static [Mutex<Vec<Buf>>; CLASSES], len: usize, make: fn(usize) -> Buf) -> Staging {
    let class = class_of(len);
    if class == 0 {
        let guarded = std::ptr::eq(pools, &IDLE_GUARDED);
        if let Ok(Some(buf)) = SMALL.try_with(|s| s[small_slot(guarded)].take()) {
            IN_USE.fetch_add(1, Ordering::Relaxed);
            note_taken(buf.len());
            return Staging { buf: Some(buf), len, overrun: 0 };
        }
    }
    let cap = 1usize << (class as u32 + MIN_SHIFT);
    let reused = pools[class].lock().unwrap_or_else(|e| e.into_inner()).pop();
    let buf = match reused {
        Some(b) => {
            IDLE_BYTES.fetch_sub(b.len(), Ordering::Relaxed);
            b
        }
        None => make(cap),
    };
    IN_USE.fetch_add(1, Ordering::Relaxed);
    note_taken(buf.len());
    Staging { buf: Some(buf), len, overrun: 0 }
}

fn note_taken(n: usize) {
    let now = IN_USE_BYTES.fetch_add(n, Ordering::Relaxed) + n;
    PEAK_BYTES.fetch_max(now, Ordering::Relaxed);
}

/// A buffer of at least `len` bytes (contents unspecified).
pub fn take(len: usize) -> Staging {
    take_from(&IDLE, len, |cap| Buf::Heap(vec![0u8; cap].into_boxed_slice()))
}

/// A buffer of at least `len` bytes that the MPI may receive into: guarded against Open MPI's
/// truncation overrun (see the module docs); a plain buffer on MPICH.
pub fn take_for_receive(len: usize) -> Staging {
    if cfg!(sluice_mpi = "openmpi") {
        take_from(&IDLE_GUARDED, len, Buf::guarded)
    } else {
        take(len)
    }
}

/// A buffer of `len` bytes whose bytes `hole` nobody will read, backed there by a small ring
/// of pages ([`hollow`]); guarded like [`take_for_receive`] when `recv`. `None` when the hole is
/// too short to be worth it or the mapping fails: the caller keeps ordinary staging.
/// Inside the hole, different offsets are the same memory: sluice must never read or write
/// them (only the MPI copies there, garbage to garbage); the slices of [`Staging::bytes`] may
/// span the hole, but the code using them only touches the other blocks' bytes.
pub fn take_hollow(len: usize, hole: std::ops::Range<usize>, recv: bool) -> Option<Staging> {
    let cap = len.checked_next_multiple_of(4096)?;
    let pages = hollow::pages_of(cap, hole)?;
    let guard = if recv && cfg!(sluice_mpi = "openmpi") { GUARD_RESERVE } else { 0 };
    let m = hollow::take(cap, pages, guard)?;
    IN_USE.fetch_add(1, Ordering::Relaxed);
    note_taken(cap);
    Some(Staging { buf: Some(Buf::Hollow(m)), len, overrun: 0 })
}

fn give_back(b: Buf) {
    IN_USE.fetch_sub(1, Ordering::Relaxed);
    let n = b.len();
    IN_USE_BYTES.fetch_sub(n, Ordering::Relaxed);
    let b = match b {
        // Not pooled: kept per layout (`hollow`), unless nothing may be kept.
        Buf::Hollow(m) if BUDGET.load(Ordering::Relaxed) > 0 => return hollow::give_back(m),
        Buf::Hollow(_) => return,
        b => b,
    };
    let guarded = matches!(b, Buf::Guarded(_));
    let b = if class_of(n) == 0 {
        let mut b = Some(b);
        let _ = SMALL.try_with(|s| {
            let slot = &s[small_slot(guarded)];
            if let Some(x) = b.take() {
                match slot.take() {
                    None => slot.set(Some(x)),
                    Some(old) => {
                        slot.set(Some(old));
                        b = Some(x);
                    }
                }
            }
        });
        match b {
            Some(b) => b,
            None => return, // kept in this thread's slot
        }
    } else {
        b
    };
    // Idle buffers are kept up to the budget, or up to twice the most staging ever in use at
    // once if that is more: an application that moves 2 x 128 MiB per collective would otherwise fault
    // in 256 MiB of fresh pages every call (measured: the FFT transpose at N = 4096 ran 2.9x
    // slower), and idle memory never exceeds what it already needed at its peak.
    // `SLUICE_STAGING_CACHE=0` keeps nothing at all.
    let configured = BUDGET.load(Ordering::Relaxed);
    // Twice the peak: buffers of a second, smaller size class (another message size) must not
    // push out the large ones (measured: alternating 32 and 128 MiB collectives).
    let budget = if configured == 0 { 0 } else { configured.max(2 * PEAK_BYTES.load(Ordering::Relaxed)) };
    if IDLE_BYTES.load(Ordering::Relaxed) + n > budget {
        return; // over budget: freed here
    }
    IDLE_BYTES.fetch_add(n, Ordering::Relaxed);
    let pools = if guarded { &IDLE_GUARDED } else { &IDLE };
    pools[class_of(n)].lock().unwrap_or_else(|e| e.into_inner()).push(b);
}

/// Frees every idle buffer (MPI_Finalize, budget changes).
pub fn trim() {
    for c in IDLE.iter().chain(IDLE_GUARDED.iter()) {
        let drained: Vec<_> = std::mem::take(&mut *c.lock().unwrap_or_else(|e| e.into_inner()));
        IDLE_BYTES.fetch_sub(drained.iter().map(|b| b.len()).sum(), Ordering::Relaxed);
    }
    hollow::trim();
}

/// Buffers currently handed out (leak check at finalize and in tests).
pub fn in_use() -> i64 {
    IN_USE.load(Ordering::Relaxed)
}

/// Bytes held by idle buffers.
pub fn idle_bytes() -> usize {
    IDLE_BYTES.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_powers_of_two_from_4k() {
        assert_eq!(class_of(0), 0);
        assert_eq!(class_of(4096), 0);
        assert_eq!(class_of(4097), 1);
        assert_eq!(class_of(8192), 1);
        assert_eq!(class_of(1 << 20), 8);
    }

    #[test]
    fn buffers_are_reused_counted_and_bounded() {
        // One test owns the process-wide pool (parallel tests would race on the counters).
        let before = in_use();
        let mut a = take(10_000);
        assert_eq!(a.len(), 10_000);
        a.bytes_mut().fill(7);
        let p = a.as_mut_ptr();
        assert_eq!(in_use(), before + 1);
        drop(a);
        assert_eq!(in_use(), before);
        let mut b = take(9_000); // same class: the same memory comes back
        assert_eq!(b.as_mut_ptr(), p);
        drop(b);
        set_budget(0);
        assert_eq!(idle_bytes(), 0);
        let c = take(10_000);
        drop(c); // over budget: freed, not kept
        assert_eq!(idle_bytes(), 0);
        set_budget(64 << 20);
    }

    #[test]
    fn guarded_buffers_absorb_an_overrun() {
        let mut g = Buf::guarded(4096);
        let p = g.ptr();
        // SAFETY: the test writes past the usable bytes into the buffer's own reservation,
        // which is exactly what the guard is for.
        unsafe { std::ptr::write_bytes(p, 0xAB, 3 * 4096) };
        g.release_overrun(2 * 4096);
        // SAFETY: released pages read back as zero; the usable part is kept.
        unsafe {
            assert_eq!(*p.add(4095), 0xAB);
            assert_eq!(*p.add(4096), 0);
        }
    }
}
