//! Software prefetching for strided rows and offset tables, and the policy that decides it per
//! CPU family.
//!
//! The hardware prefetchers follow a run of lines inside a page; rows of blocks a few hundred
//! bytes to a few KiB apart cross a page every few blocks and leave gaps, so the kernels may ask
//! for blocks ahead themselves. Whether that pays, for which direction and with which hint,
//! was measured to differ between CPU families with the same loops (paired rounds of
//! `sluice-ddt-bench`, this policy against the other and against each MPI's engine;
//! docs/benchmarks.md, "An Intel Sapphire-Rapids-class VM"):
//!
//! - AMD Zen 4: read prefetches in both directions pay (face-x 1.7 -> 2.8 GB/s with L2
//!   prefetches 96 blocks ahead; dense rows of small blocks +10-30% with L1 prefetches 48
//!   ahead) where the row's lines do not stay in L2; write-intent prefetches were no better;
//!   unpacking sparse rows loads each block before writing it ([`RowPrefetch::LoadFirst`]).
//!   [`Prefetch::Read`].
//! - Intel (Sapphire-Rapids-class VM): the same read prefetches cost packing up to 17% against
//!   the hardware alone (face-x pack 0.83x MPICH's engine with them, 1.02x without) and the L2
//!   one leaves unpack behind, while write-intent prefetches of the destination make unpack the
//!   faster engine (face-x unpack 0.93x -> 1.31x MPICH, vec-64 0.93x -> 1.01x, milc 1.64x ->
//!   2.86x, lammps and specfem 0.98x -> 1.02-1.05x). [`Prefetch::Write`].
//!
//! [`Prefetch::host`] picks Write on Intel CPUs that have `prefetchw` and Read elsewhere; the
//! benchmark and the tests run every policy this CPU has ([`Prefetch::available`]).

use super::cpu::{has_prefetchw, intel, l2_cache};

/// How strided rows prefetch, chosen once per type ([`Prefetch::host`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// Read prefetches in both directions for strides of 128 B-4 KiB: dense rows of blocks
    /// under 256 B ask L1 for the block 48 ahead, sparse rows (block at most 1/8 of the stride)
    /// ask L2 for the block 96 ahead, each only where its lines outgrow L2 (the operation's for
    /// dense rows, the row's for sparse ones); unpacking sparse rows also loads each block
    /// before writing it. Tuned on AMD Zen 4.
    Read,
    /// Strided rows: packing leaves prefetching to the hardware; unpacking asks for the
    /// destination with write intent (`prefetchw`, so the line arrives owned): the block 32
    /// ahead for strides of 128 B-4 KiB, and every line of the block 2 ahead for larger strides
    /// in rows that write at least 256 KiB (smaller ones stay in L2 between calls: face-y,
    /// 128 KiB, lost 5% with it). Unpacking an offset table of blocks under 256 B (whose next
    /// address no hardware prefetcher can know) asks for the block 32 entries on with write
    /// intent (lammps 0.98-1.01 -> 1.02-1.05 of MPICH's engine, specfem 0.98 -> 1.01-1.03;
    /// packing them with read prefetches gained nothing). Tuned on a Sapphire-Rapids-class VM.
    Write,
    /// No software prefetch (comparisons).
    Off,
}

/// What one row prefetches: nothing, the first and last byte of the block `ahead` blocks on
/// with `hint` (one of the `HINT_*` constants), or every line of that block with write intent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RowPrefetch {
    None,
    Ends {
        hint: u8,
        ahead: i64,
    },
    LinesForWrite {
        ahead: i64,
    },
    /// Unpack: a load of each block's first byte (and its last, for blocks of 16 bytes or more
    /// or across a line) right before the block is written, and an L2 prefetch of the block
    /// `ahead` on when `ahead > 0`. On Zen 4 a row of stores
    /// that each miss the cache runs at half the speed of the same row when each store follows
    /// a load of its line: load misses overlap, store misses wait their turn in the store
    /// queue (8 B blocks 512 B apart into lines in L2/L3, standalone loop: 2.9 -> 6.9 GB/s;
    /// issue 28's face-x3 unpack 0.44 -> 1.03-1.2x Open MPI's engine, whose per-block
    /// `memcpy` call spaces the stores out). Prefetches ahead, read or write, were slower than
    /// the load, and erratic (2.5-7 GB/s).
    LoadFirst {
        ahead: i64,
    },
}

/// Read into L1.
pub(super) const HINT_L1: u8 = 0;
/// Read into L2 only.
pub(super) const HINT_L2: u8 = 1;
/// Write intent (`prefetchw`).
pub(super) const HINT_WRITE: u8 = 2;

/// Rows whose stride is in `[NEAR_MIN_STRIDE, FAR_MIN_STRIDE)` cross a page every few blocks.
const NEAR_MIN_STRIDE: u64 = 128;
/// From here on every block is on a page of its own.
const FAR_MIN_STRIDE: u64 = 4096;
/// Read: dense rows prefetch this many blocks ahead into L1.
const READ_DENSE_AHEAD: i64 = 48;
/// Read: dense rows prefetch only blocks shorter than this: the hardware's stream prefetcher
/// follows a run of 4 lines or more by itself, and 48 such blocks ahead lie beyond L1 (vec-64,
/// 512 B blocks 1 KiB apart, packed at 0.76-0.86x Open MPI's speed with the prefetch and
/// 0.99-1.04x without on Zen 4).
const READ_DENSE_MAX_BLOCK: usize = 256;
/// Read: sparse rows (one line or so per stride, like the x-face of a grid) prefetch this many
/// blocks ahead into L2 only: each block is a line miss, and L1 has too few miss buffers to
/// keep enough of them in flight on Zen 4.
const READ_SPARSE_AHEAD: i64 = 96;
/// Read: unpacking sparse rows loads each block first only in operations that write to at
/// least this many bytes of lines (L1's size): in a smaller one the lines stay in L1 between
/// calls, and the loads only cost (the y-face of a 16^3 grid of doubles, 16 blocks of 128 B
/// 2 KiB apart: 0.81x Open MPI's engine with them, 0.93-0.97x without, hot; 0.92x either way
/// with the grid out of cache; pack_small).
const LOAD_FIRST_MIN_LINES: usize = 32 << 10;

/// Bytes of the cache lines an operation of `op_bytes` stream bytes in blocks of `block` bytes
/// writes to (at most; a block may share its lines with its neighbours).
fn op_lines(op_bytes: usize, block: usize) -> usize {
    (op_bytes / block.max(1)).saturating_mul(block.div_ceil(64) * 64)
}
/// Write: blocks ahead for strides under 4 KiB (24-48 measured alike on face-x and lu-5; 16
/// lost a fifth of face-x's gain).
const WRITE_NEAR_AHEAD: i64 = 32;
/// Write: blocks ahead for larger strides (wrf 0.34 -> 0.45 of memcpy and milc 0.74 -> 0.89 at
/// 2-3; at 8 wrf lost the gain).
const WRITE_FAR_AHEAD: i64 = 2;
/// Write: far rows prefetch only when they write at least this much.
const WRITE_FAR_MIN_ROW: usize = 256 << 10;
/// Write: offset tables prefetch this many entries ahead (16 and 32 measured alike).
const WRITE_TABLE_AHEAD: i64 = 32;
/// Write: offset tables prefetch only blocks shorter than this (larger blocks are runs of
/// lines the hardware follows; unmeasured).
const WRITE_TABLE_MAX_BLOCK: usize = 256;
/// Write: far rows prefetch only blocks smaller than a page (larger ones are runs of lines the
/// hardware follows).
const WRITE_FAR_MAX_BLOCK: usize = 4096;

/// Write: operations that move fewer bytes than this prefetch nothing. Their destination stays
/// in L2 between calls, where a write-intent prefetch only adds instructions (shape sweep,
/// 16-17 KiB unpacks of 264-520 B blocks at 128 B-4 KiB strides: 0.88-0.95x of Open MPI's
/// engine with it, 1.04-1.09x without). Rows are too short a measure: face-x's rows are 2 KiB
/// each, and its 512 KiB unpack gains from the prefetch.
const WRITE_MIN_OPERATION: usize = 32 << 10;

impl Prefetch {
    /// The policy for one operation of `bytes` stream bytes: this one, or [`Prefetch::Off`] for
    /// small operations under [`Prefetch::Write`] ([`WRITE_MIN_OPERATION`]).
    #[inline]
    pub(super) fn for_operation(self, bytes: usize) -> Prefetch {
        if self == Prefetch::Write && bytes < WRITE_MIN_OPERATION {
            Prefetch::Off
        } else {
            self
        }
    }

    /// The policy for this CPU: [`Prefetch::Write`] on Intel CPUs with `prefetchw`, else
    /// [`Prefetch::Read`].
    pub fn host() -> Prefetch {
        static HOST: std::sync::OnceLock<Prefetch> = std::sync::OnceLock::new();
        *HOST.get_or_init(|| if intel() && has_prefetchw() { Prefetch::Write } else { Prefetch::Read })
    }

    /// Every policy this CPU runs (Write needs `prefetchw`).
    pub fn available() -> Vec<Prefetch> {
        let mut v = vec![Prefetch::Read, Prefetch::Off];
        if has_prefetchw() {
            v.push(Prefetch::Write);
        }
        v
    }

    /// The policy named `s` (read, write, off), for command lines.
    pub fn parse(s: &str) -> Option<Prefetch> {
        match s {
            "read" => Some(Prefetch::Read),
            "write" => Some(Prefetch::Write),
            "off" => Some(Prefetch::Off),
            _ => None,
        }
    }

    /// What a row of `count` blocks of `block` bytes, `stride` bytes apart, prefetches, in an
    /// operation that moves `op_bytes` stream bytes.
    #[inline(always)]
    pub(super) fn row<const PACK: bool>(self, stride: u64, block: usize, count: usize, op_bytes: usize) -> RowPrefetch {
        let near = (NEAR_MIN_STRIDE..FAR_MIN_STRIDE).contains(&stride);
        let more = |ahead: i64| count as i64 > ahead;
        // Read: rows whose lines stay in L2 between calls gain nothing from prefetching.
        // Measured on a Zen 4 VM, paired against Open MPI's engine.
        match self {
            Prefetch::Read if near => {
                if block as u64 * 8 <= stride {
                    // Sparse rows, judged by the row's own lines: face-x3 (16,384 lines of 8-byte
                    // blocks) packed at 0.88-0.93x with the L2 prefetch, 1.43-1.59x without;
                    // face-x (65,536 lines) unpacked at 1.14-1.54x with it, 0.77x without;
                    // lu-5's rows (4,096 blocks of 40 B, 256 KiB of lines, in a 2.5 MiB
                    // operation) packed at 1.13-1.19x with it, 1.45-1.49x without.
                    let row_lines = count.saturating_mul(block.div_ceil(64)).saturating_mul(64);
                    let ahead = if more(READ_SPARSE_AHEAD) && row_lines > l2_cache() { READ_SPARSE_AHEAD } else { 0 };
                    return match (PACK, ahead) {
                        (false, _) if op_lines(op_bytes, block) < LOAD_FIRST_MIN_LINES => RowPrefetch::None,
                        (false, _) => RowPrefetch::LoadFirst { ahead },
                        (true, 0) => RowPrefetch::None,
                        (true, _) => RowPrefetch::Ends { hint: HINT_L2, ahead },
                    };
                }
                // Dense rows, judged by the operation's lines (one per block under 64 bytes, an
                // upper bound), computed only here: milc-192 (96 KiB of 192-byte blocks) at
                // 0.96x with the L1 prefetch, 1.01-1.03x without.
                if block < READ_DENSE_MAX_BLOCK && more(READ_DENSE_AHEAD) && op_bytes.saturating_mul(64 / block.clamp(1, 64)) > l2_cache() {
                    return RowPrefetch::Ends { hint: HINT_L1, ahead: READ_DENSE_AHEAD };
                }
                RowPrefetch::None
            }
            Prefetch::Write if !PACK => {
                if near && more(WRITE_NEAR_AHEAD) {
                    RowPrefetch::Ends { hint: HINT_WRITE, ahead: WRITE_NEAR_AHEAD }
                } else if stride >= FAR_MIN_STRIDE
                    && block < WRITE_FAR_MAX_BLOCK
                    && count.saturating_mul(block) >= WRITE_FAR_MIN_ROW
                    && more(WRITE_FAR_AHEAD)
                {
                    RowPrefetch::LinesForWrite { ahead: WRITE_FAR_AHEAD }
                } else {
                    RowPrefetch::None
                }
            }
            _ => RowPrefetch::None,
        }
    }
}

impl Prefetch {
    /// What an offset table of `n` blocks of `block` bytes (without inner levels) prefetches:
    /// nothing, or [`RowPrefetch::Ends`] with write intent, counted in table entries.
    #[inline(always)]
    pub(super) fn table<const PACK: bool>(self, block: usize, n: usize) -> RowPrefetch {
        match self {
            Prefetch::Write if !PACK && block < WRITE_TABLE_MAX_BLOCK && n as i64 > WRITE_TABLE_AHEAD => {
                RowPrefetch::Ends { hint: HINT_WRITE, ahead: WRITE_TABLE_AHEAD }
            }
            _ => RowPrefetch::None,
        }
    }
}

/// Asks the cache for the line holding `p` as hint `H` says.
#[inline(always)]
pub(super) fn prefetch<const H: u8>(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and has no architectural effect,
    // whatever the address (SSE, which provides the read forms, is part of the x86_64
    // baseline; `prefetchw` is only emitted under `Prefetch::Write`, which is only chosen, and
    // only testable, where CPUID reports it).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T2};
        match H {
            HINT_L1 => _mm_prefetch::<_MM_HINT_T0>(p.cast()),
            HINT_L2 => _mm_prefetch::<_MM_HINT_T2>(p.cast()),
            // Inline assembly because the intrinsic's write hint needs the unstable `prfchw`
            // target feature (without it LLVM emits a read prefetch).
            _ => std::arch::asm!("prefetchw [{p}]", p = in(reg) p, options(nostack, preserves_flags, readonly)),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_policy_matches_its_zen4_rules() {
        let r = Prefetch::Read;
        // Sparse (face-x: 8 B blocks 512 B apart) into L2 when the row's lines outgrow L2, both
        // directions; unpack loads each block before writing it.
        let big = 2 * l2_cache();
        let long = big / 64;
        assert_eq!(r.row::<true>(512, 8, long, big), RowPrefetch::Ends { hint: HINT_L2, ahead: 96 });
        assert_eq!(r.row::<false>(512, 8, long, big), RowPrefetch::LoadFirst { ahead: 96 });
        assert_eq!(r.row::<true>(512, 8, 4096, big), RowPrefetch::None);
        assert_eq!(r.row::<false>(512, 8, 4096, big), RowPrefetch::LoadFirst { ahead: 0 });
        // Dense small blocks into L1; dense large blocks and far strides not at all.
        assert_eq!(r.row::<true>(128, 64, 4096, big), RowPrefetch::Ends { hint: HINT_L1, ahead: 48 });
        assert_eq!(r.row::<true>(128, 64, 4096, 32 << 10), RowPrefetch::None);
        assert_eq!(r.row::<true>(1024, 512, 4096, 1 << 30), RowPrefetch::None);
        assert_eq!(r.row::<false>(10240, 480, 4096, 1 << 30), RowPrefetch::None);
        // Too short a row to have a block that far ahead.
        assert_eq!(r.row::<true>(512, 8, 96, 1 << 30), RowPrefetch::None);
        assert_eq!(r.row::<false>(512, 8, 96, 1 << 30), RowPrefetch::LoadFirst { ahead: 0 });
        // An operation whose lines stay in L1 (a 16^3 grid's y-face) loads nothing first; the
        // same rows in a larger operation do.
        assert_eq!(r.row::<false>(2048, 128, 16, 2048), RowPrefetch::None);
        assert_eq!(r.row::<false>(2048, 128, 16, 256 << 10), RowPrefetch::LoadFirst { ahead: 0 });
        assert_eq!(r.row::<false>(512, 8, 64, 512), RowPrefetch::None);
    }

    #[test]
    fn write_policy_prefetches_only_unpack_destinations() {
        let w = Prefetch::Write;
        for (stride, block) in [(512, 8), (128, 64), (1024, 512), (10240, 480)] {
            assert_eq!(w.row::<true>(stride, block, 1 << 16, 1 << 30), RowPrefetch::None);
        }
        assert_eq!(w.row::<false>(512, 8, 4096, 1 << 30), RowPrefetch::Ends { hint: HINT_WRITE, ahead: 32 });
        assert_eq!(w.row::<false>(1024, 512, 4096, 1 << 30), RowPrefetch::Ends { hint: HINT_WRITE, ahead: 32 });
        // Far rows: every line, when the row is large enough and its blocks under a page.
        assert_eq!(w.row::<false>(10240, 480, 1024, 1 << 30), RowPrefetch::LinesForWrite { ahead: 2 });
        assert_eq!(w.row::<false>(131072, 512, 256, 1 << 30), RowPrefetch::None);
        assert_eq!(w.row::<false>(1 << 20, 8192, 1024, 1 << 30), RowPrefetch::None);
        assert_eq!(Prefetch::Off.row::<false>(512, 8, 4096, 1 << 30), RowPrefetch::None);
    }

    #[test]
    fn only_the_write_policy_prefetches_tables() {
        let w = Prefetch::Write;
        assert_eq!(w.table::<true>(24, 1 << 15), RowPrefetch::None);
        assert_eq!(w.table::<false>(12, 1 << 17), RowPrefetch::Ends { hint: HINT_WRITE, ahead: 32 });
        assert_eq!(w.table::<false>(512, 1 << 15), RowPrefetch::None);
        assert_eq!(w.table::<false>(24, 32), RowPrefetch::None);
        assert_eq!(Prefetch::Read.table::<false>(24, 1 << 15), RowPrefetch::None);
        assert_eq!(Prefetch::Off.table::<true>(24, 1 << 15), RowPrefetch::None);
    }

    #[test]
    fn host_policy_is_available() {
        assert!(Prefetch::available().contains(&Prefetch::host()));
        for p in ["read", "write", "off"] {
            assert!(Prefetch::parse(p).is_some());
        }
        assert_eq!(Prefetch::parse("fast"), None);
    }
}
