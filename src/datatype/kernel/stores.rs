//! Non-temporal (streaming) stores for unpacking into large destinations.
//!
//! An ordinary store to a line that is not cached first reads the line (read for ownership),
//! so unpacking into a destination that is not in the cache moves every written line twice.
//! A non-temporal store writes whole lines straight to memory without reading them, but the
//! lines leave the cache. That pays when the destination would not stay cached anyway: an
//! operation writing at least [`streaming_min`] bytes (half the last-level cache; the copy of a
//! contiguous type stays one `memcpy`, which decides for itself). Measured here
//! (standalone loops, 2 shared Zen 4 cores): a 4 MiB unpack of 512 B blocks into an uncached
//! destination 9 -> 24 GB/s, the 16 MiB fft-t transpose 7 -> 16 GB/s; into a destination that
//! stays in L3, 512 B blocks lose 12% (32 -> 28 GB/s), hence the size threshold.
//!
//! Only whole 64-byte lines are streamed (a line written partly by each kind of store would be
//! read and evicted); the rest of a block goes through ordinary stores. Streaming stores are
//! weakly ordered: every kernel run that used them ends with [`fence`].

use super::copy::xfer;

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
pub fn streaming_min() -> usize {
    static MIN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| last_level_cache().map_or(16 << 20, |b| b / 2))
}

/// Size of the last-level cache of CPU 0 from sysfs (what the kernel read from the CPU's cache
/// topology; `sysconf(_SC_LEVEL3_CACHE_SIZE)` reports 320 MiB in this project's VMs, whose L3
/// is 32 MiB).
fn last_level_cache() -> Option<usize> {
    let dir = "/sys/devices/system/cpu/cpu0/cache";
    let mut best: Option<(u32, usize)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
        let (Some(level), Some(size)) = (read("level"), read("size")) else { continue };
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(size.trim())) else { continue };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

/// `32768K`, `32M`, `1024` (bytes) as sysfs writes cache sizes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: usize = digits.parse().ok()?;
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
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
    fn cache_sizes_parse() {
        assert_eq!(super::parse_size("32768K"), Some(32 << 20));
        assert_eq!(super::parse_size("2M"), Some(2 << 20));
        assert_eq!(super::parse_size("512"), Some(512));
        assert_eq!(super::parse_size("12Q"), None);
        assert!(super::streaming_min() > 0);
    }
}
