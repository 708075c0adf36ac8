//! An intermediate buffer's memory: one allocation for all of a transfer's slots, written through
//! raw pointers by the steps the transfer's dependencies give each slot to.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

pub struct Slab {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the slab is plain memory; which thread writes which slot is ordered by the owning
// transfer's state lock (a step starts only after the steps it depends on finished).
unsafe impl Send for Slab {}
// SAFETY: as above.
unsafe impl Sync for Slab {}

const ALIGN: usize = 64;

impl Slab {
    /// `len` zeroed bytes (zeroed so that no step ever hands uninitialized memory to a system
    /// call; large allocations come zeroed from the kernel for free).
    pub fn new(len: usize) -> Slab {
        if len == 0 {
            return Slab { ptr: NonNull::dangling(), len };
        }
        let layout = Layout::from_size_align(len, ALIGN).expect("slab size fits isize");
        // SAFETY: a non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(p) else { std::alloc::handle_alloc_error(layout) };
        Slab { ptr, len }
    }

    /// Address of byte `at`.
    pub fn at(&self, at: usize) -> *mut u8 {
        assert!(at <= self.len, "slab offset {at} past {}", self.len);
        // SAFETY: within the allocation (or one past its end).
        unsafe { self.ptr.as_ptr().add(at) }
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.len, ALIGN)) };
        }
    }
}
