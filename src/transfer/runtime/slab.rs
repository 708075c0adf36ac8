//! Zeroed host memory for intermediate buffers (one allocation for all of a transfer's slots,
//! written through raw pointers by the steps the transfer's dependencies give each slot to) and
//! for the multi-level runtime's arrays, and the pool that keeps a runtime's buffers for its next
//! transfers.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// Zeroed memory, so that no step ever hands memory nothing wrote to a system call.
pub struct Slab {
    ptr: NonNull<u8>,
    len: usize,
    /// The allocator's alignment, or 0: mapped from the kernel.
    align: usize,
}

// SAFETY: a slab is plain memory; which thread writes which part is ordered by its owner (a
// transfer's state lock: a step starts only after the steps it depends on finished; an array's
// transfers, by the application).
unsafe impl Send for Slab {}
// SAFETY: as above.
unsafe impl Sync for Slab {}

/// From this size on, memory is mapped from the kernel (page-aligned zero pages, touched first by
/// whoever fills them) instead of taken from the allocator: `alloc_zeroed` with an alignment above
/// the allocator's own (16) clears the memory with a `memset`, an extra pass over every buffer
/// (measured in the levels' examples: a disk-over-smp SAXPY's disk busy 17-19% -> 86%).
const MAPPED_FROM: usize = 1 << 20;
const PAGE: usize = 4096;

/// The alignment of intermediate buffers (a cache line: the datatype engine's kernels' stores).
pub const ALIGN: usize = 64;

impl Slab {
    /// `len` zeroed bytes aligned to [`ALIGN`]; the allocator's out-of-memory handler if there is
    /// no memory.
    pub fn new(len: usize) -> Slab {
        Slab::aligned(len, ALIGN)
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(Layout::from_size_align(len.max(1), ALIGN).expect("fits")))
    }

    /// `len` zeroed bytes aligned to `align` (a power of two); why not, where there is no memory.
    pub fn aligned(len: usize, align: usize) -> Result<Slab, String> {
        if len == 0 {
            return Ok(Slab { ptr: NonNull::dangling(), len, align: 1 });
        }
        if len >= MAPPED_FROM && align <= PAGE {
            // SAFETY: a private anonymous mapping of `len` bytes; nothing else refers to it.
            let p = unsafe {
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
            };
            if p == libc::MAP_FAILED {
                return Err(format!("{len} bytes could not be mapped: {}", std::io::Error::last_os_error()));
            }
            let ptr = NonNull::new(p.cast()).ok_or("mmap returned null")?;
            return Ok(Slab { ptr, len, align: 0 });
        }
        let layout = Layout::from_size_align(len, align).map_err(|e| format!("{len} bytes aligned to {align}: {e}"))?;
        // SAFETY: a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or_else(|| format!("{len} bytes could not be allocated"))?;
        Ok(Slab { ptr, len, align })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address of byte `at`.
    pub fn at(&self, at: usize) -> *mut u8 {
        assert!(at <= self.len, "slab offset {at} past {}", self.len);
        // SAFETY: within the allocation (or one past its end).
        unsafe { self.ptr.as_ptr().add(at) }
    }
}

impl std::fmt::Debug for Slab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slab({:p}, {} bytes{})", self.ptr, self.len, if self.align == 0 { ", mapped" } else { "" })
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        match (self.len, self.align) {
            (0, _) => {}
            // SAFETY: mapped in `aligned` with this length, unmapped once.
            (len, 0) => unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), len);
            },
            // SAFETY: allocated in `aligned` with this layout.
            (len, align) => unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(len, align)) },
        }
    }
}

/// Slabs of finished transfers, kept for the next ones: a fresh slab costs a page fault per page
/// (and the kernel's zeroing) on every copy, which was most of a multi-hop copy's gap to its
/// slowest stage on this VM. Idle bytes stay within `limit` (the runtime's buffer budget: memory
/// the runtime may hold anyway while it runs); the oldest go first. A reused slab holds a previous
/// transfer's bytes, never memory nothing wrote.
pub struct SlabPool {
    idle: Vec<Slab>,
    bytes: usize,
    limit: usize,
}

impl SlabPool {
    pub fn new(limit: usize) -> SlabPool {
        SlabPool { idle: Vec::new(), bytes: 0, limit }
    }

    /// An idle slab of exactly `len` bytes, else `None`.
    pub fn take(&mut self, len: usize) -> Option<Slab> {
        let i = self.idle.iter().rposition(|s| s.len() == len)?;
        self.bytes -= len;
        Some(self.idle.remove(i))
    }

    /// Keeps `slabs` for later, dropping the oldest idle ones past the limit.
    pub fn give(&mut self, slabs: impl IntoIterator<Item = Slab>) {
        for s in slabs.into_iter().filter(|s| !s.is_empty() && s.len() <= self.limit) {
            self.bytes += s.len();
            self.idle.push(s);
        }
        while self.bytes > self.limit {
            let s = self.idle.remove(0);
            self.bytes -= s.len();
        }
    }

    /// Idle bytes held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_are_zeroed_aligned_and_reused_within_the_limit() {
        for len in [1, 4096, MAPPED_FROM - 64, MAPPED_FROM, 3 * MAPPED_FROM + 8] {
            let s = Slab::new(len);
            assert_eq!(s.at(0) as usize % ALIGN, 0, "{len}");
            // SAFETY: `len` bytes of the slab.
            assert!(unsafe { std::slice::from_raw_parts(s.at(0), len) }.iter().all(|&b| b == 0), "{len} not zeroed");
        }
        assert_eq!(Slab::aligned(100, 4096).unwrap().at(0) as usize % 4096, 0);
        assert!(Slab::aligned(100, 3).is_err(), "alignment not a power of two");
        let mut pool = SlabPool::new(3 << 20);
        let a = Slab::new(2 << 20);
        let at = a.at(0);
        pool.give([a, Slab::new(1 << 20), Slab::new(8 << 20)]);
        assert_eq!(pool.bytes(), 3 << 20, "past the limit alone: not kept");
        assert!(pool.take(4 << 20).is_none());
        assert_eq!(pool.take(2 << 20).map(|s| s.at(0)), Some(at), "the same memory again");
        pool.give([Slab::new(2 << 20), Slab::new(2 << 20)]);
        assert!(pool.bytes() <= 3 << 20, "idle bytes within the limit");
        assert!(pool.take(1 << 20).is_none(), "the oldest went first");
    }
}
