//! Non-temporal (streaming) stores for unpacking into large destinations.
//!
//! An ordinary store to a line that is not cached first reads the line (read for ownership),
//! so unpacking into a destination that is not in the cache moves every written line twice.
//! A non-temporal store writes whole lines straight to memory without reading them, but the
//! lines leave the cache. That pays when the destination would not stay cached anyway: an
//! operation writing at least [`streaming_min`] bytes (half the cache that would keep it: the
//! last-level cache on AMD, L2 on Intel, see [`streaming_min_for`]; the copy of a contiguous
//! type stays one `memcpy`, which decides for itself). Measured (standalone loops, 2 shared
//! Zen 4 cores): a 4 MiB unpack of 512 B blocks into an uncached
//! destination 9 -> 24 GB/s, the 16 MiB fft-t transpose 7 -> 16 GB/s; into a destination that
//! stays in L3, 512 B blocks lose 12% (32 -> 28 GB/s), hence the size threshold.
//!
//! Only whole 64-byte lines are streamed (a line written partly by each kind of store would be
//! read and evicted); the rest of a block goes through ordinary stores. Streaming stores are
//! weakly ordered: every kernel run that used them ends with [`fence`].

use super::copy::xfer;
use super::cpu::{cache_size, intel, last_level_cache};

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

/// Bytes an unpack must write to stream, read once ([`streaming_min_for`] this CPU).
pub fn streaming_min() -> usize {
    static MIN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| streaming_min_for(intel(), cache_size(2), last_level_cache()))
}

/// Bytes an unpack must write to stream on a CPU with these caches: the destination must not
/// fit in half the cache that would keep it (the packed source shares it), which is the
/// last-level cache on AMD (16 MiB when the system does not tell) and L2 on Intel (1 MiB when
/// it does not tell). Intel's server L3 is a mesh whose bandwidth per core is little above
/// memory's: on a Sapphire-Rapids-class VM (2 MiB L2, 480 MiB L3 reported) `memcpy` runs at
/// 56 GB/s up to 512 KiB and at 15 GB/s from 2 MiB to 32 MiB, and streaming an unpack that
/// writes 1.5-16 MiB was 7-80% faster (milc 0.92 -> 1.07-1.12 of memcpy, vec-64 0.80 -> 0.94,
/// fft-t 0.54 -> 0.93) while one writing 128-480 KiB, which L2 keeps, lost 10-35% (face-y,
/// wrf). On Zen 4 a 4 MiB destination that stays in the 32 MiB L3 lost 12% streamed.
fn streaming_min_for(intel: bool, l2: Option<usize>, llc: Option<usize>) -> usize {
    if intel {
        l2.map_or(1 << 20, |b| b / 2)
    } else {
        llc.map_or(16 << 20, |b| b / 2)
    }
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
    use super::streaming_min_for;

    #[test]
    fn streaming_threshold_follows_the_cache_that_keeps_the_destination() {
        assert_eq!(streaming_min_for(true, Some(2 << 20), Some(480 << 20)), 1 << 20);
        assert_eq!(streaming_min_for(false, Some(1 << 20), Some(32 << 20)), 16 << 20);
        assert_eq!(streaming_min_for(true, None, None), 1 << 20);
        assert_eq!(streaming_min_for(false, None, None), 16 << 20);
        assert!(super::streaming_min() > 0);
    }
}
