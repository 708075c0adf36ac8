//! The strided kernel (nested loops around one contiguous block) and the block-indexed one (an
//! offset table whose entries each run a strided kernel). All `#[inline(always)]`: they are
//! compiled into each instruction-set instantiation of [`super::exec`].

use super::copy::{prefetch, prefetch_l2, xfer};
use super::isa::Simd;
use super::stores::{copy_streaming, LINE};
use super::transpose::{transposable, transpose};
use super::{Level, Strided, MAX_LEVELS};

/// Rows whose stride is at least this many bytes (and below the max) prefetch ahead: the
/// hardware prefetchers stop at page boundaries, which such rows cross every few blocks.
const PREFETCH_MIN_STRIDE: u64 = 128;
const PREFETCH_MAX_STRIDE: u64 = 4096;
/// Dense rows (blocks over more than an eighth of the stride) prefetch this many blocks ahead
/// into L1.
const PREFETCH_AHEAD: i64 = 48;
/// Dense rows prefetch only blocks shorter than this: the hardware's stream prefetcher follows
/// a run of 4 lines or more by itself, and 48 such blocks ahead lie beyond L1 (vec-64, 512 B
/// blocks 1 KiB apart, packed at 0.76-0.86x Open MPI's speed with the prefetch and 0.99-1.04x
/// without, paired rounds of `sluice-ddt-bench`).
const PREFETCH_MAX_BLOCK: usize = 256;
/// Sparse rows (one line or so per stride, like the x-face of a grid) prefetch this many blocks
/// ahead into L2 only: each block is a line miss, and L1 has too few miss buffers to keep
/// enough of them in flight (face-x 1.7 -> 2.8 GB/s), while dense rows lose with it.
const PREFETCH_AHEAD_SPARSE: i64 = 96;
/// Smallest block unpacked with streaming stores: it holds at least one whole line wherever it
/// starts.
const STREAM_MIN_BLOCK: usize = 2 * LINE;

/// One strided row: `count` blocks `stride` apart from `mem + off`; returns the buffer end.
/// `nt`: unpack large blocks with streaming stores ([`super::stores`]).
///
/// # Safety
/// Every block `mem + off + i*stride` (`i < count`) valid for the access, the `count * block`
/// bytes at `buf` too, no overlap (see [`xfer`]).
#[inline(always)]
unsafe fn row<S: Simd, const N: usize, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    l: Level,
    block: usize,
    buf: *mut u8,
    nt: bool,
) -> *mut u8 {
    // Intermediate addresses may lie outside the allocation (negative strides, padding), so
    // only wrapping arithmetic here; every address dereferenced is a typemap block.
    let mut p = mem.wrapping_offset(off as isize);
    let mut q = buf;
    let mut count = l.count;
    if PACK && N == 8 && l.stride == 16 {
        // SAFETY: the row's blocks and buffer bytes (caller's contract).
        let done = unsafe { S::pack_alternate_8(q, p, count) };
        p = p.wrapping_add(16 * done);
        q = q.wrapping_add(8 * done);
        count -= done;
    }
    if N == 16 && l.stride.unsigned_abs() < PREFETCH_MIN_STRIDE {
        // SAFETY: the row's blocks and buffer bytes (caller's contract).
        let done = unsafe { S::row_16_split::<PACK>(p, q, l.stride as isize, count) };
        p = p.wrapping_offset(l.stride as isize * done as isize);
        q = q.wrapping_add(16 * done);
        count -= done;
    }
    if !PACK && nt && block >= STREAM_MIN_BLOCK {
        for _ in 0..count {
            // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
            unsafe { copy_streaming(p, q, block) };
            p = p.wrapping_offset(l.stride as isize);
            q = q.wrapping_add(block);
        }
        return q;
    }
    let stride = l.stride.unsigned_abs();
    if (PREFETCH_MIN_STRIDE..PREFETCH_MAX_STRIDE).contains(&stride) {
        // SAFETY: forwarded contract.
        unsafe {
            if block as u64 * 8 <= stride {
                if count as i64 > PREFETCH_AHEAD_SPARSE {
                    return prefetched_row::<N, PACK, true>(p, q, l.stride, block, count, PREFETCH_AHEAD_SPARSE);
                }
            } else if block < PREFETCH_MAX_BLOCK && count as i64 > PREFETCH_AHEAD {
                return prefetched_row::<N, PACK, false>(p, q, l.stride, block, count, PREFETCH_AHEAD);
            }
        }
    }
    for _ in 0..count {
        // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
        unsafe { xfer::<N, PACK>(p, q, block) };
        p = p.wrapping_offset(l.stride as isize);
        q = q.wrapping_add(block);
    }
    q
}

/// Two levels `[a, b]` from `mem + off`: a tiled transpose when [`transposable`], else `a.count`
/// rows of `b`; returns the buffer end.
///
/// # Safety
/// As [`strided`] for the two levels.
#[inline(always)]
unsafe fn two<S: Simd, const N: usize, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    a: Level,
    b: Level,
    block: usize,
    buf: *mut u8,
    nt: bool,
) -> *mut u8 {
    // SAFETY: the blocks of the two levels in stream order (caller's contract).
    unsafe {
        if transposable(a, b, block) {
            return transpose::<N, PACK>(mem, off, a, b, block, buf, nt);
        }
        let mut q = buf;
        for i in 0..a.count {
            q = row::<S, N, PACK>(mem, off + i as i64 * a.stride, b, block, q, nt);
        }
        q
    }
}

/// Runs nested levels from `mem + off`; returns the buffer end. Levels above the innermost two
/// run as an odometer (no recursion, so the whole kernel inlines into its instantiation). `nt`:
/// unpack with streaming stores where they apply ([`super::stores`]; the caller fences).
///
/// # Safety
/// Every block the levels address valid for the access, the buffer long enough for all of
/// them (see [`xfer`]).
#[inline(always)]
pub(super) unsafe fn strided<S: Simd, const N: usize, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    levels: &[Level],
    block: usize,
    buf: *mut u8,
    nt: bool,
) -> *mut u8 {
    // SAFETY: (all calls) the blocks visited are exactly the typemap's, in stream order, and
    // the buffer advances by `block` per block (caller's contract).
    unsafe {
        match levels {
            [] => {
                xfer::<N, PACK>(mem.wrapping_offset(off as isize), buf, block);
                buf.wrapping_add(block)
            }
            [l] => row::<S, N, PACK>(mem, off, *l, block, buf, nt),
            [a, b] => two::<S, N, PACK>(mem, off, *a, *b, block, buf, nt),
            _ => {
                let (outer, inner) = levels.split_at(levels.len() - 2);
                if outer.iter().any(|l| l.count == 0) {
                    return buf;
                }
                let mut idx = [0usize; MAX_LEVELS];
                let mut o = off;
                let mut q = buf;
                loop {
                    q = two::<S, N, PACK>(mem, o, inner[0], inner[1], block, q, nt);
                    // Next outer index, innermost outer level fastest.
                    let mut k = outer.len();
                    loop {
                        if k == 0 {
                            return q;
                        }
                        k -= 1;
                        idx[k] += 1;
                        o += outer[k].stride;
                        if idx[k] < outer[k].count {
                            break;
                        }
                        o -= outer[k].count as i64 * outer[k].stride;
                        idx[k] = 0;
                    }
                }
            }
        }
    }
}

/// The blocks of `inner` at `base + d` for each table entry `d`; returns the buffer end.
///
/// # Safety
/// As [`strided`], for every table entry.
#[inline(always)]
pub(super) unsafe fn table<S: Simd, const N: usize, const PACK: bool>(
    mem: *mut u8,
    base: i64,
    displs: &[i64],
    inner: &Strided,
    buf: *mut u8,
    nt: bool,
) -> *mut u8 {
    let mut q = buf;
    let block = inner.block;
    // SAFETY: every address is a typemap block in stream order (caller's contract).
    unsafe {
        if inner.levels().is_empty() {
            let p = mem.wrapping_offset((base + inner.off) as isize);
            let streaming = !PACK && nt && block >= STREAM_MIN_BLOCK;
            for &d in displs {
                if streaming {
                    copy_streaming(p.wrapping_offset(d as isize), q, block);
                } else {
                    xfer::<N, PACK>(p.wrapping_offset(d as isize), q, block);
                }
                q = q.wrapping_add(block);
            }
        } else {
            for &d in displs {
                q = strided::<S, N, PACK>(mem, base + inner.off + d, inner.levels(), block, q, nt);
            }
        }
    }
    q
}

/// The `count` blocks `stride` apart from `p`, prefetching the first and last byte of the block
/// `ahead` blocks on (into L2 only when `L2`); returns the buffer end.
///
/// # Safety
/// As [`row`], from `p` and `q`.
#[inline(always)]
unsafe fn prefetched_row<const N: usize, const PACK: bool, const L2: bool>(
    mut p: *mut u8,
    mut q: *mut u8,
    stride: i64,
    block: usize,
    count: usize,
    ahead: i64,
) -> *mut u8 {
    let ahead = (stride * ahead) as isize;
    let last = block as isize - 1;
    for _ in 0..count {
        let f = p.wrapping_offset(ahead);
        if L2 {
            prefetch_l2(f);
            prefetch_l2(f.wrapping_offset(last));
        } else {
            prefetch(f);
            prefetch(f.wrapping_offset(last));
        }
        // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
        unsafe { xfer::<N, PACK>(p, q, block) };
        p = p.wrapping_offset(stride as isize);
        q = q.wrapping_add(block);
    }
    q
}
