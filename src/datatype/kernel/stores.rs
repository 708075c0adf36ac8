//! Non-temporal (streaming) stores for unpacking into large destinations.
//!
//! An ordinary store to a line that is not cached first reads the line (read for ownership),
//! so unpacking into a destination that is not in the cache moves every written line twice.
//! A non-temporal store writes whole lines straight to memory without reading them, but the
//! lines leave the cache. That pays when the destination would not stay cached anyway: an
//! operation writing at least [`streaming_min`] bytes (half the last-level cache; the copy of a
//! contiguous type stays one `memcpy`, which decides for itself). Measured (standalone loops,
//! 2 shared Zen 4 cores): a 4 MiB unpack of 512 B blocks into an uncached
//! destination 9 -> 24 GB/s, the 16 MiB fft-t transpose 7 -> 16 GB/s; into a destination that
//! stays in L3, 512 B blocks lose 12% (32 -> 28 GB/s), hence the size threshold.
//!
//! Only whole 64-byte lines are streamed (a line written partly by each kind of store would be
//! read and evicted); the rest of a block goes through ordinary stores. Streaming stores are
//! weakly ordered: every kernel run that used them ends with [`fence`].

use super::copy::xfer;
use super::cpu::last_level_cache;

/// How unpack writes the user's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stores {
    /// Ordinary stores (the destination stays cached).
    Cached,
    /// Whole lines of large blocks and of transpose tiles with non-temporal stores.
    Streaming,
}

impl Stores {
    /// Both kinds, for tests.
    pub const ALL: [Stores; 2] = [Stores::Cached, Stores::Streaming];

    /// The kind for an unpack that writes `bytes` bytes.
    pub fn for_unpack(bytes: usize) -> Stores {
        if cfg!(target_arch = "x86_64") && bytes >= streaming_min() {
            Stores::Streaming
        } else {
            Stores::Cached
        }
    }
}

/// Bytes an unpack must write to stream: half the last-level cache, read once (16 MiB when the
/// system does not tell).
///
/// Not lower on Intel's mesh L3, where streaming is faster for the unpack alone: on a
/// Sapphire-Rapids-class VM (2 MiB L2, L3 at 15 GB/s per core up to 32 MiB) streaming unpacks
/// that write 1.5-4 MiB made them 8-20% faster and the application's read of the received data
/// right after 3x slower (from memory instead of L3), unpack and read together 1.8-2.2x slower
/// (`bench/strided_copy.c`: `rows 1024 512 8192 0 unpack [nt] read`; docs/benchmarks.md).
pub fn streaming_min() -> usize {
    static MIN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| last_level_cache().map_or(16 << 20, |b| b / 2))
}

/// Line size streamed at once.
pub(super) const LINE: usize = 64;

/// Copies `len` bytes to `dst`: the whole 64-byte lines of `dst` with non-temporal stores, the
/// partial lines at either end with ordinary ones.
///
/// # Safety
/// As [`xfer`] (unpack direction) for `len` bytes; [`fence`] before the data is handed on.
#[inline(always)]
pub(super) unsafe fn copy_streaming(dst: *mut u8, src: *const u8, len: usize) {
    let head = dst.align_offset(LINE).min(len);
    let lines = (len - head) / LINE;
    // SAFETY: the three pieces partition `[0, len)` of both buffers (caller's contract).
    unsafe {
        xfer::<0, false>(dst, src.cast_mut(), head);
        let (d, s) = (dst.add(head), src.add(head));
        for i in 0..lines {
            stream_line(d.add(i * LINE), s.add(i * LINE));
        }
        let done = head + lines * LINE;
        xfer::<0, false>(dst.add(done), src.add(done).cast_mut(), len - done);
    }
}

/// Writes the 64 bytes at `src` to the line at `dst` with non-temporal stores.
///
/// # Safety
/// `dst` 64-byte aligned and writable for 64 bytes, `src` readable for 64, no overlap.
#[inline(always)]
pub(super) unsafe fn stream_line(dst: *mut u8, src: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline; `dst` is 16-byte aligned (64 even) as
    // `_mm_stream_si128` requires; the four stores cover the line (caller's contract).
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        for k in 0..4 {
            let v = _mm_loadu_si128(src.add(16 * k).cast::<__m128i>());
            _mm_stream_si128(dst.add(16 * k).cast::<__m128i>(), v);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, LINE)
    }
}

/// Orders the non-temporal stores before any later store (the caller's hand-off of the data).
#[inline]
pub(super) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no memory-safety preconditions (SSE, baseline).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn streaming_threshold_is_known() {
        assert!(super::streaming_min() > 0);
    }
}
