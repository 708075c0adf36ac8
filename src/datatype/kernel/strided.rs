//! The strided kernel (nested loops around one contiguous block) and the block-indexed one (an
//! offset table whose entries each run a strided kernel). All `#[inline(always)]`: they are
//! compiled into each instruction-set instantiation of [`super::exec`].

use super::copy::xfer_block;
use super::isa::Simd;
use super::prefetch::{prefetch, RowPrefetch, HINT_L1, HINT_L2, HINT_WRITE};
use super::stores::{copy_streaming, LINE};
use super::transpose::{transposable, transpose};
use super::{Level, Strided, Tactics, MAX_LEVELS};

/// Rows of 16-byte blocks closer than this move with split accesses ([`super::split`]).
const SPLIT_16_MAX_STRIDE: u64 = 128;
/// Smallest block unpacked with streaming stores: it holds at least one whole line wherever it
/// starts.
const STREAM_MIN_BLOCK: usize = 2 * LINE;

/// One strided row: `count` blocks `stride` apart from `mem + off`; returns the buffer end.
/// `t.nt`: unpack large blocks with streaming stores ([`super::stores`]); `t.prefetch`: how the
/// row prefetches ([`super::prefetch`]).
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
    t: Tactics,
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
    if N == 16 && l.stride.unsigned_abs() < SPLIT_16_MAX_STRIDE {
        // SAFETY: the row's blocks and buffer bytes (caller's contract).
        let done = unsafe { S::row_16_split::<PACK>(p, q, l.stride as isize, count) };
        p = p.wrapping_offset(l.stride as isize * done as isize);
        q = q.wrapping_add(16 * done);
        count -= done;
    }
    if !PACK && t.nt && block >= STREAM_MIN_BLOCK {
        for _ in 0..count {
            // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
            unsafe { copy_streaming(p, q, block) };
            p = p.wrapping_offset(l.stride as isize);
            q = q.wrapping_add(block);
        }
        return q;
    }
    // SAFETY: (all calls) forwarded contract.
    unsafe {
        match t.prefetch.row::<PACK>(l.stride.unsigned_abs(), block, count, t.bytes) {
            RowPrefetch::None => {}
            RowPrefetch::Ends { hint, ahead } => {
                return match hint {
                    HINT_L1 => prefetched_row::<N, PACK, HINT_L1, false>(p, q, l.stride, block, count, ahead, t.lines),
                    HINT_L2 => prefetched_row::<N, PACK, HINT_L2, false>(p, q, l.stride, block, count, ahead, t.lines),
                    _ => prefetched_row::<N, PACK, HINT_WRITE, false>(p, q, l.stride, block, count, ahead, t.lines),
                };
            }
            RowPrefetch::LinesForWrite { ahead } => {
                return prefetched_row::<N, PACK, HINT_WRITE, true>(p, q, l.stride, block, count, ahead, t.lines);
            }
            RowPrefetch::LoadFirst { ahead } => {
                return load_first_row::<N, PACK>(p, q, l.stride, block, count, ahead, t.lines);
            }
        }
    }
    for _ in 0..count {
        // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
        unsafe { xfer_block::<N, PACK>(p, q, block, t.lines) };
        p = p.wrapping_offset(l.stride as isize);
        q = q.wrapping_add(block);
    }
    q
}

/// A row whose blocks are each read before they are written (unpack), with an L2 prefetch of
/// the block `ahead` on when `ahead > 0`; see [`RowPrefetch::LoadFirst`].
///
/// # Safety
/// As [`row`]; every block is also readable (it is the user's receive buffer).
#[inline(always)]
unsafe fn load_first_row<const N: usize, const PACK: bool>(
    mut p: *mut u8,
    mut q: *mut u8,
    stride: i64,
    block: usize,
    count: usize,
    ahead: i64,
    lines: bool,
) -> *mut u8 {
    let ahead = (stride * ahead) as isize;
    let last = block - 1;
    for _ in 0..count {
        if ahead != 0 {
            prefetch::<HINT_L2>(p.wrapping_offset(ahead));
        }
        // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer;
        // the block is valid for reading as well as writing (caller's contract). The volatile
        // loads only make the line's miss a load's (see `RowPrefetch::LoadFirst`); their
        // values are not used.
        unsafe {
            std::ptr::read_volatile(p);
            if last >= 15 || (p as usize & 63) + last >= 64 {
                std::ptr::read_volatile(p.add(last));
            }
            xfer_block::<N, PACK>(p, q, block, lines);
        }
        p = p.wrapping_offset(stride as isize);
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
    t: Tactics,
) -> *mut u8 {
    // SAFETY: the blocks of the two levels in stream order (caller's contract).
    unsafe {
        if transposable(a, b, block) {
            return transpose::<N, PACK>(mem, off, a, b, block, buf, t.nt);
        }
        let mut q = buf;
        for i in 0..a.count {
            q = row::<S, N, PACK>(mem, off + i as i64 * a.stride, b, block, q, t);
        }
        q
    }
}

/// Runs nested levels from `mem + off`; returns the buffer end. Levels above the innermost two
/// run as an odometer (no recursion, so the whole kernel inlines into its instantiation). `t.nt`:
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
    t: Tactics,
) -> *mut u8 {
    // SAFETY: (all calls) the blocks visited are exactly the typemap's, in stream order, and
    // the buffer advances by `block` per block (caller's contract).
    unsafe {
        match levels {
            [] => {
                xfer_block::<N, PACK>(mem.wrapping_offset(off as isize), buf, block, t.lines);
                buf.wrapping_add(block)
            }
            [l] => row::<S, N, PACK>(mem, off, *l, block, buf, t),
            [a, b] => two::<S, N, PACK>(mem, off, *a, *b, block, buf, t),
            _ => {
                let (outer, inner) = levels.split_at(levels.len() - 2);
                if outer.iter().any(|l| l.count == 0) {
                    return buf;
                }
                let mut idx = [0usize; MAX_LEVELS];
                let mut o = off;
                let mut q = buf;
                loop {
                    q = two::<S, N, PACK>(mem, o, inner[0], inner[1], block, q, t);
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
    t: Tactics,
) -> *mut u8 {
    let mut q = buf;
    let block = inner.block;
    // SAFETY: every address is a typemap block in stream order (caller's contract).
    unsafe {
        if inner.levels().is_empty() {
            let p = mem.wrapping_offset((base + inner.off) as isize);
            let streaming = !PACK && t.nt && block >= STREAM_MIN_BLOCK;
            if !streaming {
                if let RowPrefetch::Ends { ahead, .. } = t.prefetch.table::<PACK>(block, displs.len()) {
                    return prefetched_table::<N, PACK, HINT_WRITE>(p, q, displs, block, ahead as usize, t.lines);
                }
            }
            for &d in displs {
                if streaming {
                    copy_streaming(p.wrapping_offset(d as isize), q, block);
                } else {
                    xfer_block::<N, PACK>(p.wrapping_offset(d as isize), q, block, t.lines);
                }
                q = q.wrapping_add(block);
            }
        } else {
            for &d in displs {
                q = strided::<S, N, PACK>(mem, base + inner.off + d, inner.levels(), block, q, t);
            }
        }
    }
    q
}

/// The blocks at `p + d` for each table entry `d`, prefetching the first and last byte of the
/// block `ahead` entries on with hint `H` ([`super::prefetch`]); returns the buffer end.
///
/// # Safety
/// As [`table`] for a table without inner levels, from `p` and `q`.
#[inline(always)]
unsafe fn prefetched_table<const N: usize, const PACK: bool, const H: u8>(
    p: *mut u8,
    mut q: *mut u8,
    displs: &[i64],
    block: usize,
    ahead: usize,
    lines: bool,
) -> *mut u8 {
    let last = block as isize - 1;
    let (head, tail) = displs.split_at(displs.len().saturating_sub(ahead));
    for (&d, &f) in head.iter().zip(&displs[ahead.min(displs.len())..]) {
        let f = p.wrapping_offset(f as isize);
        prefetch::<H>(f);
        prefetch::<H>(f.wrapping_offset(last));
        // SAFETY: `p + d` is the entry's block, `q` the next `block` bytes of the buffer.
        unsafe { xfer_block::<N, PACK>(p.wrapping_offset(d as isize), q, block, lines) };
        q = q.wrapping_add(block);
    }
    for &d in tail {
        // SAFETY: as above.
        unsafe { xfer_block::<N, PACK>(p.wrapping_offset(d as isize), q, block, lines) };
        q = q.wrapping_add(block);
    }
    q
}

/// The `count` blocks `stride` apart from `p`, prefetching the block `ahead` blocks on with
/// hint `H` ([`super::prefetch`]): its first and last byte, or every line of it when `LINES`;
/// returns the buffer end.
///
/// # Safety
/// As [`row`], from `p` and `q`.
#[inline(always)]
unsafe fn prefetched_row<const N: usize, const PACK: bool, const H: u8, const LINES: bool>(
    mut p: *mut u8,
    mut q: *mut u8,
    stride: i64,
    block: usize,
    count: usize,
    ahead: i64,
    lines: bool,
) -> *mut u8 {
    let ahead = (stride * ahead) as isize;
    let last = block as isize - 1;
    for _ in 0..count {
        let f = p.wrapping_offset(ahead);
        if LINES {
            let mut o = 0;
            while o < last {
                prefetch::<H>(f.wrapping_offset(o));
                o += LINE as isize;
            }
        } else {
            prefetch::<H>(f);
        }
        prefetch::<H>(f.wrapping_offset(last));
        // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
        unsafe { xfer_block::<N, PACK>(p, q, block, lines) };
        p = p.wrapping_offset(stride as isize);
        q = q.wrapping_add(block);
    }
    q
}
