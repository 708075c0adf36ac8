//! The tiled transpose: two strided levels where each element is a matrix column (an FFT
//! transpose), run a line of memory at a time. `#[inline(always)]` like the strided kernel
//! that calls it.

use super::copy::xfer;
use super::stores::{stream_line, LINE};
use super::Level;

/// Inner strides at least this large make a two-level loop whose outer level steps through
/// adjacent blocks (a matrix column per element, like an FFT transpose) run tile by tile.
const TRANSPOSE_MIN_STRIDE: u64 = 1024;
/// Bytes of adjacent blocks a transpose tile reads at once (two cache lines).
const TRANSPOSE_TILE: usize = 128;
// A streamed tile row is two whole lines.
const _: () = assert!(TRANSPOSE_TILE == 2 * LINE);

/// Whether levels `[a, b]` around `block` may run as [`transpose`]: `a` steps through adjacent
/// blocks, `b` has a large stride, and one `a` row fits in one `b` stride, so no two blocks
/// overlap and the visiting order cannot change what an unpack leaves in memory.
#[inline(always)]
pub(super) fn transposable(a: Level, b: Level, block: usize) -> bool {
    a.stride == block as i64
        && block <= TRANSPOSE_TILE / 2
        && a.count >= 2
        && b.stride.unsigned_abs() >= TRANSPOSE_MIN_STRIDE
        && (a.count as u64).saturating_mul(block as u64) <= b.stride.unsigned_abs()
}

/// Levels `[a, b]` ([`transposable`]) in tiles of `TRANSPOSE_TILE / block` outer iterations:
/// for each inner index the tile's blocks are one contiguous line of memory, each going to its
/// own place in the buffer (outer index `i`, inner `j`: buffer offset `(i * b.count + j) *
/// block`, as in stream order). Memory is read (or written) a line at a time instead of one
/// block per page. `nt` (unpack): when every tile row is two whole aligned lines, each row is
/// gathered in a local buffer and written with streaming stores ([`super::stores`]).
///
/// # Safety
/// As [`super::strided::strided`] for the two levels.
#[inline(always)]
pub(super) unsafe fn transpose<const N: usize, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    a: Level,
    b: Level,
    block: usize,
    buf: *mut u8,
    nt: bool,
) -> *mut u8 {
    let per_row = b.count * block;
    let tile = TRANSPOSE_TILE / block;
    // Streaming needs every full tile row on a line boundary: the rows are lines apart, and a
    // first, shorter tile (`lead` blocks, ordinary stores) runs up to the first boundary (a
    // malloc'ed array starts 16 bytes past one); the full tiles after it are aligned.
    let origin = mem.wrapping_offset(off as isize);
    let streaming =
        !PACK && nt && N > 0 && TRANSPOSE_TILE % N.max(1) == 0 && origin.align_offset(N.max(1)) == 0 && b.stride % LINE as i64 == 0;
    let mut lead = if streaming { origin.align_offset(LINE) / N.max(1) } else { 0 };
    let mut i = 0;
    while i < a.count {
        let t = if lead > 0 { lead.min(a.count) } else { tile.min(a.count - i) };
        lead = 0;
        let mut p = mem.wrapping_offset((off + (i * block) as i64) as isize);
        let q0 = buf.wrapping_add(i * per_row);
        // A full tile of a fixed block size: a constant trip count, so the tile's moves unroll
        // into one straight row per `j` (with a run-time count LLVM may reorder the two loops,
        // which reads each row's line in two passes: fft-t at 2.5 instead of 7 GB/s).
        let full = TRANSPOSE_TILE / N.max(1);
        if streaming && t == full {
            let mut line = [0u8; TRANSPOSE_TILE];
            for j in 0..b.count {
                let q = q0.wrapping_add(j * N);
                for u in 0..full {
                    // SAFETY: block (i + u, j)'s bytes in the buffer, and its place in `line`.
                    unsafe { xfer::<N, false>(line.as_mut_ptr().add(u * N), q.wrapping_add(u * per_row), N) };
                }
                // SAFETY: the tile row is the two lines at `p`, aligned (after the lead tile,
                // above), all of them typemap blocks (i..i + full, j), disjoint from the buffer.
                unsafe {
                    stream_line(p, line.as_ptr());
                    stream_line(p.wrapping_add(LINE), line.as_ptr().add(LINE));
                }
                p = p.wrapping_offset(b.stride as isize);
            }
            i += t;
            continue;
        }
        if N > 0 && t == full {
            for j in 0..b.count {
                let q = q0.wrapping_add(j * N);
                for u in 0..full {
                    // SAFETY: as below.
                    unsafe { xfer::<N, PACK>(p.wrapping_add(u * N), q.wrapping_add(u * per_row), N) };
                }
                p = p.wrapping_offset(b.stride as isize);
            }
            i += t;
            continue;
        }
        for j in 0..b.count {
            let q = q0.wrapping_add(j * block);
            for u in 0..t {
                // SAFETY: block (i + u, j) of the two levels and its place in the buffer
                // (caller's contract); the blocks are disjoint (`transposable`).
                unsafe { xfer::<N, PACK>(p.wrapping_add(u * block), q.wrapping_add(u * per_row), block) };
            }
            p = p.wrapping_offset(b.stride as isize);
        }
        i += t;
    }
    buf.wrapping_add(a.count * per_row)
}
