//! The point-to-point size limits that the datatype table, the layout rules and the pipeline all
//! read: the pipeline's reserved size S\* and the fast path's count bound derived from it. A leaf
//! module, so that the datatype table below the protocols reads them without depending on the
//! pipeline that sets them (`p2p::pipeline::start` and `finish`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// S\*, the reserved size: `SLUICE_PIPELINE_THRESHOLD` rounded up to an odd number (0: the
/// pipeline is off).
static RESERVED: AtomicUsize = AtomicUsize::new(0);

/// Counts below which `count` elements of any predefined type (at most
/// [`WIDEST_PREDEFINED`] bytes each) stay below S\* (`u64::MAX` while the pipeline is off): the
/// fast path's size bound, kept per datatype-filter slot in `datatype::quick_limit`.
static SMALL_COUNT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Bytes of the widest predefined type (`MPI_C_LONG_DOUBLE_COMPLEX`), the bound used for a type
/// whose size sluice does not know without an MPI call.
pub const WIDEST_PREDEFINED: u64 = 32;

/// The reserved size S\*, or 0 when the pipeline is off.
#[inline]
pub fn reserved() -> usize {
    RESERVED.load(Ordering::Relaxed)
}

/// See [`SMALL_COUNT`]: `count < small_count()` exactly when `count * WIDEST_PREDEFINED < S*`
/// (or the pipeline is off).
#[inline(always)]
pub fn small_count() -> u64 {
    SMALL_COUNT.load(Ordering::Relaxed)
}

/// Sets S\* (0: off) and the count bound derived from it. The caller refreshes the datatype
/// table's per-slot limits afterwards.
pub(crate) fn set_reserved(s: usize) {
    SMALL_COUNT.store(small_count_for(s), Ordering::Relaxed);
    RESERVED.store(s, Ordering::Release);
}

/// [`SMALL_COUNT`] for reserved size `s`: the least count whose widest-predefined size reaches
/// `s` (`u64::MAX` when the pipeline is off).
pub(crate) fn small_count_for(s: usize) -> u64 {
    if s == 0 {
        u64::MAX
    } else {
        (s as u64).div_ceil(WIDEST_PREDEFINED)
    }
}
