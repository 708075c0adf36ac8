//! Block copies and prefetches shared by all kernels. Everything here is `#[inline(always)]`:
//! it is compiled into each instruction-set instantiation of the kernels ([`super::isa`]), so
//! the same `[u8; N]` move becomes 16-byte moves in the portable build and 32-byte ones in the
//! AVX2 one.

/// Copies exactly `N` bytes as a `memcpy` of constant size, which the compiler turns into
/// unaligned vector loads and stores of the level's width. (A `read_unaligned` of `[u8; N]`
/// followed by a `write_unaligned` kept a dead copy of every 16-byte piece on the stack in the
/// unpack loops: one extra store per move.)
///
/// # Safety
/// `src..src+N` readable, `dst..dst+N` writable, the two do not overlap.
#[inline(always)]
pub(super) unsafe fn mv<const N: usize>(dst: *mut u8, src: *const u8) {
    // SAFETY: caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, N) }
}

/// Copies `len` bytes: overlapping moves up to 256 bytes, `memcpy` above.
///
/// # Safety
/// As [`mv`] for `len` bytes.
#[inline(always)]
unsafe fn copy_var(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: (all moves) each covers a sub-range of `[0, len)` of both buffers, because each
    // branch only runs when `len` is at least the move's width.
    unsafe {
        if len <= 16 {
            if len >= 8 {
                mv::<8>(dst, src);
                mv::<8>(dst.add(len - 8), src.add(len - 8));
            } else if len >= 4 {
                mv::<4>(dst, src);
                mv::<4>(dst.add(len - 4), src.add(len - 4));
            } else if len >= 2 {
                mv::<2>(dst, src);
                mv::<2>(dst.add(len - 2), src.add(len - 2));
            } else if len == 1 {
                *dst = *src;
            }
        } else if len <= 32 {
            mv::<16>(dst, src);
            mv::<16>(dst.add(len - 16), src.add(len - 16));
        } else if len <= 64 {
            mv::<32>(dst, src);
            mv::<32>(dst.add(len - 32), src.add(len - 32));
        } else if len <= 128 {
            // Up to 256 bytes inline too: a `memcpy` call per block cost a shape of 29 blocks of
            // 96 bytes 0.6x of Open MPI's engine (shape sweep s1:184).
            mv::<64>(dst, src);
            mv::<64>(dst.add(len - 64), src.add(len - 64));
        } else if len <= 256 {
            // Three moves up to 192 bytes (milc-192's blocks: one store in four was a repeat).
            mv::<64>(dst, src);
            mv::<64>(dst.add(64), src.add(64));
            if len > 192 {
                mv::<64>(dst.add(128), src.add(128));
            }
            mv::<64>(dst.add(len - 64), src.add(len - 64));
        } else {
            std::ptr::copy_nonoverlapping(src, dst, len);
        }
    }
}

/// How blocks too large for a fixed-size move (over 64 bytes) are copied, chosen per CPU family
/// ([`BlockCopy::host`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockCopy {
    /// One `memcpy` call per block (AMD and others: on Zen 4 inline 512 B-2 KiB copies were
    /// 7-12% slower than glibc's).
    Memcpy,
    /// Blocks of [`LINES_MIN`]-[`LINES_MAX`] bytes that are whole multiples of 64 move as a loop
    /// of 64-byte moves, other ones by `memcpy` (Intel: on a Sapphire-Rapids-class VM vec-64
    /// pack 1.00 -> 1.05 of Open MPI's engine, face-y 1.01-1.03 -> 1.05-1.09, milc unpack
    /// 1.08 -> 1.19-1.39; with an overlapping last move for other lengths, wrf's 480 B lost
    /// 1-4%, hence whole multiples only).
    Lines,
}

/// Smallest block [`BlockCopy::Lines`] moves inline.
pub const LINES_MIN: usize = 128;
/// Largest block [`BlockCopy::Lines`] moves inline (measured up to 2 KiB; larger blocks are
/// runs `memcpy` handles at full speed).
pub const LINES_MAX: usize = 2048;

impl BlockCopy {
    /// The kind for this CPU: [`BlockCopy::Lines`] on Intel, else [`BlockCopy::Memcpy`].
    pub fn host() -> BlockCopy {
        static HOST: std::sync::OnceLock<BlockCopy> = std::sync::OnceLock::new();
        *HOST.get_or_init(|| if super::cpu::intel() { BlockCopy::Lines } else { BlockCopy::Memcpy })
    }

    /// Both kinds (plain Rust moves: every CPU runs them).
    pub const ALL: [BlockCopy; 2] = [BlockCopy::Memcpy, BlockCopy::Lines];

    /// The kind named `s` (memcpy, lines), for command lines.
    pub fn parse(s: &str) -> Option<BlockCopy> {
        match s {
            "memcpy" => Some(BlockCopy::Memcpy),
            "lines" => Some(BlockCopy::Lines),
            _ => None,
        }
    }
}

/// [`xfer`] for the kernels' blocks: with `lines` ([`BlockCopy::Lines`]), a variable-size
/// block of [`LINES_MIN`]-[`LINES_MAX`] bytes that is a whole number of 64-byte moves moves as
/// a loop of them instead of a `memcpy` call.
///
/// # Safety
/// As [`xfer`].
#[inline(always)]
pub(super) unsafe fn xfer_block<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, len: usize, lines: bool) {
    // SAFETY: (both branches) caller's contract; the moves cover `[0, len)` of both buffers in
    // 64-byte steps, `len` being a multiple of 64.
    unsafe {
        let dst = if PACK { buf } else { mem };
        // Only onto whole lines: every 64-byte move to a destination off a line boundary splits
        // into two lines (sweep shape s1:6, 1 KiB blocks unpacked at a 1905-byte stride, ran at
        // 0.55x of Open MPI's engine, whose memcpy aligns its stores; 0.98x with memcpy).
        if N == 0 && lines && len % 64 == 0 && (LINES_MIN..=LINES_MAX).contains(&len) && dst as usize % 64 == 0 {
            let (dst, src) = if PACK { (buf, mem as *const u8) } else { (mem, buf as *const u8) };
            let mut o = 0;
            while o < len {
                mv::<64>(dst.add(o), src.add(o));
                o += 64;
            }
        } else {
            xfer::<N, PACK>(mem, buf, len)
        }
    }
}

/// Moves one block between the user's memory `mem` and the packed buffer `buf`: `N` bytes
/// (`N > 0`) or `len` bytes (`N == 0`); memory to buffer when `PACK`, else the reverse.
///
/// # Safety
/// `mem..mem+len` and `buf..buf+len` valid for the access (`PACK`: read mem, write buf; else the
/// reverse), not overlapping; `len == N` when `N > 0`.
#[inline(always)]
pub(super) unsafe fn xfer<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, len: usize) {
    let (dst, src) = if PACK { (buf, mem as *const u8) } else { (mem, buf as *const u8) };
    // SAFETY: caller's contract.
    unsafe {
        if N == 0 {
            copy_var(dst, src, len)
        } else if N == 24 {
            // Three 8-byte moves, not the 16 + 8 of `[u8; 24]`: 24-byte blocks are strided or
            // irregular (lammps: 3 doubles per particle), and narrow accesses on the strided
            // side measured faster, as for the 16-byte rows of `split.rs` (lammps pack on an
            // Intel VM 0.95 -> 1.01 of MPICH's engine, which moves doubles; why is not known).
            mv::<8>(dst, src);
            mv::<8>(dst.add(8), src.add(8));
            mv::<8>(dst.add(16), src.add(16));
        } else {
            mv::<N>(dst, src)
        }
    }
}
