//! Host memory of a top's arrays (smp tops, a cluster rank's share): zeroed, aligned as asked.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use super::Error;

/// Zeroed host memory, so that no child ever reads memory nothing wrote.
pub struct HostMemory {
    ptr: NonNull<u8>,
    len: usize,
    /// The allocator's alignment, or 0: mapped from the kernel.
    align: usize,
}

// SAFETY: plain memory owned by its array; transfers into it are ordered by the application (a
// child writes a region only through a transfer it waits for).
unsafe impl Send for HostMemory {}
// SAFETY: as above.
unsafe impl Sync for HostMemory {}

/// From this size on, arrays are mapped from the kernel (page-aligned zero pages, touched first by
/// whoever fills them) instead of taken from the allocator: `alloc_zeroed` with an alignment above
/// the allocator's own (16) clears the memory with a `memset`, an extra pass over every block a
/// program stages (measured: a disk-over-smp SAXPY's disk busy 17-19% -> 86%).
const MAPPED_FROM: usize = 1 << 20;
const PAGE: usize = 4096;

impl HostMemory {
    /// `len` zeroed bytes (at least 1: a rank's empty share still has an address) aligned to
    /// `align` (a power of two).
    pub fn new(len: usize, align: usize) -> Result<HostMemory, Error> {
        let len = len.max(1);
        if len >= MAPPED_FROM && align <= PAGE {
            // SAFETY: a private anonymous mapping of `len` bytes; nothing else refers to it.
            let p = unsafe {
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
            };
            if p == libc::MAP_FAILED {
                return Err(Error::NoMem(format!("{len} bytes of host memory could not be mapped: {}", std::io::Error::last_os_error())));
            }
            let ptr = NonNull::new(p.cast()).ok_or_else(|| Error::NoMem("mmap returned null".into()))?;
            return Ok(HostMemory { ptr, len, align: 0 });
        }
        let layout = Layout::from_size_align(len, align).map_err(|e| Error::Arg(format!("array layout: {e}")))?;
        // SAFETY: a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })
            .ok_or_else(|| Error::NoMem(format!("{len} bytes of host memory could not be allocated")))?;
        Ok(HostMemory { ptr, len, align })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl std::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostMemory({:p}, {} bytes{})", self.ptr, self.len, if self.align == 0 { ", mapped" } else { "" })
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        match self.align {
            // SAFETY: mapped in `new` with this length, unmapped once.
            0 => unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.len);
            },
            // SAFETY: allocated in `new` with this layout.
            align => unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.len, align)) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_is_zeroed_and_aligned() {
        for (len, align) in [(1, 64), (4096, 64), (MAPPED_FROM - 64, 64), (MAPPED_FROM, 4096), (3 * MAPPED_FROM + 8, 64), (100, 1 << 16)] {
            let m = HostMemory::new(len, align).unwrap();
            assert_eq!(m.as_ptr() as usize % align, 0, "{len} aligned to {align}");
            // SAFETY: `len` bytes of the allocation.
            assert!(unsafe { std::slice::from_raw_parts(m.as_ptr(), len) }.iter().all(|&b| b == 0), "{len} not zeroed");
        }
        assert!(HostMemory::new(100, 3).is_err(), "alignment not a power of two");
    }
}
