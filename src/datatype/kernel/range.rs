//! Range kernels: the compiled loops over any byte range `[first, last)` of the packed stream of
//! `count` elements, not only whole elements. This is what lets a chunk of a parallel or
//! pipelined operation ([`crate::datatype::parallel::Stream`]) run at kernel speed.
//!
//! A range is a partial leading block, whole blocks, a partial trailing block. Where a block sits
//! is arithmetic, so no checkpoint is needed:
//! - strided: block `i` of the nest (element loop included) is a mixed-radix digit split of `i`;
//!   the whole blocks run as a few full sub-nests of the whole-element loops ([`blocks`]: at
//!   most two partial rows per level around one full nest), O(depth) calls per range;
//! - block-indexed: the element and table entry by division, the entry's blocks as strided;
//! - indexed: the run by binary search over the prefix sums of run lengths;
//! - small-runs: whole elements through the tiled kernel, the partial first and last element
//!   through the interpreter (an element is at most 16 runs of 64 bytes);
//! - interpreter types: the interpreter's own range walk (O(depth · log n) seek).

use super::copy::xfer;
use super::exec::{body, by_block, Entries};
use super::isa::Portable;
use super::stores::{fence, Stores};
use super::{BlockCopy, Kernel, Level, Strided, Tactics, MAX_LEVELS};
use crate::datatype::interp;
use crate::datatype::ir::DataLoop;

impl Kernel {
    /// Whether [`Kernel::run_range`] runs compiled loops (false: the interpreter walks the range).
    pub fn runs_ranges(&self) -> bool {
        !matches!(self, Kernel::Interp)
    }

    /// Moves stream bytes `[first, last)` of `count` elements between `mem` and `buf` (`buf`
    /// holds the `last - first` bytes; `PACK`: memory to buffer) with the loops compiled for
    /// `isa`, unpacking with `stores`, with the CPU-family tactics `tuning`. `dl` is the type this
    /// kernel was compiled from. The bytes
    /// moved and their order are those of [`Kernel::run`] restricted to the range.
    ///
    /// # Safety
    /// `first <= last <= count * dl.size`; every byte the typemap of the `count` elements
    /// addresses relative to `mem` valid for the access; `buf` valid for `last - first` bytes;
    /// the two do not overlap; the CPU runs `isa` (one of [`super::Isa::available`]) and
    /// `tuning.prefetch` (one of [`super::Prefetch::available`]).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run_range<const PACK: bool>(
        &self,
        isa: super::Isa,
        stores: Stores,
        tuning: super::Tuning,
        dl: &DataLoop,
        mem: *mut u8,
        count: usize,
        first: usize,
        last: usize,
        buf: *mut u8,
    ) {
        assert!(first <= last && last <= count * dl.size, "range [{first}, {last}) outside the stream");
        if first == last {
            return;
        }
        let t = Tactics {
            nt: !PACK && stores == Stores::Streaming,
            prefetch: tuning.prefetch,
            lines: tuning.block_copy == BlockCopy::Lines,
            bytes: count.saturating_mul(dl.size),
        };
        // SAFETY: caller's contract, including that the CPU has the level's features.
        unsafe {
            match isa {
                super::Isa::Portable => range_body::<Portable, PACK>(self, dl, mem, count, first, last, buf, t),
                #[cfg(target_arch = "x86_64")]
                super::Isa::Avx2 => range_body::<super::isa::Avx2, PACK>(self, dl, mem, count, first, last, buf, t),
            }
        }
        if t.nt {
            fence();
        }
    }
}

/// See [`Kernel::run_range`] (`first < last`; `t.nt`: streaming stores, the caller fences).
///
/// # Safety
/// As [`Kernel::run_range`]; the CPU runs `S`'s level.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn range_body<S: Entries, const PACK: bool>(
    k: &Kernel,
    dl: &DataLoop,
    mem: *mut u8,
    count: usize,
    first: usize,
    last: usize,
    buf: *mut u8,
    t: Tactics,
) {
    let ext = dl.extent;
    // SAFETY: (all calls) each visits exactly the typemap blocks of stream bytes
    // `[first, last)` in stream order and moves `last - first` buffer bytes (caller's contract).
    unsafe {
        match k {
            Kernel::Strided(s) => {
                let nest = Nest::of(s, count, ext);
                nest_range::<S, PACK>(mem, nest.off, nest.levels(), nest.block, first, last, buf, t);
            }
            Kernel::BlockIndexed { displs, inner } => block_indexed::<S, PACK>(mem, dl, displs, inner, first, last, buf, t),
            // Whole elements by the kernel's loop, the partial ones at either end by a range
            // walk: the table's for indexed, the interpreter for small runs (whose moves are not
            // in stream order).
            Kernel::Indexed { runs, ends } => {
                let part = |a, b, q| indexed::<PACK>(mem, dl, runs, ends, a, b, q);
                by_elements(dl.size, first, last, buf, part, |k0, n, q| {
                    S::runs::<PACK>(mem.wrapping_offset((k0 as i64 * ext) as isize), n, ext, runs, q);
                });
            }
            Kernel::SmallRuns { .. } => {
                let part = |a, b, q| interp_range::<PACK>(dl, mem, count, a, b, q);
                by_elements(dl.size, first, last, buf, part, |k0, n, q| {
                    body::<S, PACK>(k, dl, mem.wrapping_offset((k0 as i64 * ext) as isize), n, q, t);
                });
            }
            Kernel::Nested { kernels } => super::nested::range::<S, PACK>(kernels, dl, mem, first, last, buf, t),
            Kernel::Interp => interp_range::<PACK>(dl, mem, count, first, last, buf),
        }
    }
}

/// Splits stream bytes `[first, last)` of elements of `size` bytes into a partial element at
/// each end, moved by `part(first, last, buf)`, and whole elements between, moved by
/// `whole(first element, elements, buf)`. Only pointer arithmetic here: the closures, built in
/// the caller's `unsafe` block, hold the contract of [`Kernel::run_range`] for their ranges.
fn by_elements(
    size: usize,
    first: usize,
    last: usize,
    buf: *mut u8,
    part: impl Fn(usize, usize, *mut u8),
    whole: impl FnOnce(usize, usize, *mut u8),
) {
    let (k0, k1) = (first.div_ceil(size), last / size);
    if k0 > k1 {
        // Inside one element.
        return part(first, last, buf);
    }
    if first < k0 * size {
        part(first, k0 * size, buf);
    }
    let q = buf.wrapping_add(k0 * size - first);
    if k1 > k0 {
        whole(k0, k1 - k0, q);
    }
    if k1 * size < last {
        part(k1 * size, last, q.wrapping_add((k1 - k0) * size));
    }
}

/// The interpreter over `[first, last)`.
///
/// # Safety
/// As [`Kernel::run_range`].
unsafe fn interp_range<const PACK: bool>(dl: &DataLoop, mem: *mut u8, count: usize, first: usize, last: usize, buf: *mut u8) {
    let n = last - first;
    if n == 0 {
        return;
    }
    // SAFETY: `buf` holds the `n` bytes (caller's contract); the typemap is valid.
    unsafe {
        if PACK {
            interp::pack(dl, count, mem, first, last, std::slice::from_raw_parts_mut(buf, n));
        } else {
            interp::unpack(dl, count, mem, first, last, std::slice::from_raw_parts(buf, n));
        }
    }
}

/// A strided kernel's loops for `count` elements: the element loop merged in
/// ([`Strided::for_count`]), or prepended unmerged when the merged nest would be too deep.
struct Nest {
    off: i64,
    block: usize,
    lv: [Level; MAX_LEVELS + 1],
    depth: usize,
}

impl Nest {
    fn of(s: &Strided, count: usize, ext: i64) -> Nest {
        let mut n = Nest { off: s.off, block: s.block, lv: [Level::default(); MAX_LEVELS + 1], depth: 0 };
        let (lv, outer) = match s.for_count(count, ext) {
            Some(f) => {
                (n.off, n.block) = (f.off, f.block);
                n.lv[..f.levels().len()].copy_from_slice(f.levels());
                n.depth = f.levels().len();
                return n;
            }
            None => (s.levels(), Level { count, stride: ext }),
        };
        n.lv[0] = outer;
        n.lv[1..=lv.len()].copy_from_slice(lv);
        n.depth = lv.len() + 1;
        n
    }

    fn levels(&self) -> &[Level] {
        &self.lv[..self.depth]
    }
}

/// Stream bytes `[first, last)` of the nest of `levels` around `block` at `mem + off`: a partial
/// leading block, the whole blocks, a partial trailing block. Returns the buffer end.
///
/// # Safety
/// Every block of the nest valid for the access (those in the range are touched), `buf` valid
/// for `last - first` bytes, no overlap; `first <= last` inside the nest's bytes.
#[allow(clippy::too_many_arguments)]
unsafe fn nest_range<S: Entries, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    levels: &[Level],
    block: usize,
    first: usize,
    last: usize,
    buf: *mut u8,
    t: Tactics,
) -> *mut u8 {
    if first >= last {
        return buf;
    }
    let (mut i0, o0) = (first / block, first % block);
    let (i1, o1) = (last / block, last % block);
    let mut q = buf;
    // SAFETY: every address is a block of the nest inside the range, in stream order, with its
    // buffer bytes (caller's contract).
    unsafe {
        if i0 == i1 {
            let p = mem.wrapping_offset((off + block_offset(levels, i0)) as isize);
            xfer::<0, PACK>(p.wrapping_add(o0), q, o1 - o0);
            return q.wrapping_add(o1 - o0);
        }
        if o0 > 0 {
            let p = mem.wrapping_offset((off + block_offset(levels, i0)) as isize);
            xfer::<0, PACK>(p.wrapping_add(o0), q, block - o0);
            q = q.wrapping_add(block - o0);
            i0 += 1;
        }
        q = blocks::<S, PACK>(mem, off, levels, block, i0, i1, q, t);
        if o1 > 0 {
            let p = mem.wrapping_offset((off + block_offset(levels, i1)) as isize);
            xfer::<0, PACK>(p, q, o1);
            q = q.wrapping_add(o1);
        }
    }
    q
}

/// Memory offset of block `i` of a nest (relative to its origin): `i` split into one digit per
/// level, innermost fastest.
fn block_offset(levels: &[Level], mut i: usize) -> i64 {
    let mut o = 0;
    for l in levels.iter().rev() {
        o += (i % l.count) as i64 * l.stride;
        i /= l.count;
    }
    o
}

/// Whole blocks `[i0, i1)` of the nest: the outermost level's partial first and last iterations
/// recurse one level down, the full iterations between them run as one nest of the
/// whole-element loops. Returns the buffer end.
///
/// # Safety
/// As [`nest_range`] for those blocks.
#[allow(clippy::too_many_arguments)]
unsafe fn blocks<S: Entries, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    levels: &[Level],
    block: usize,
    i0: usize,
    i1: usize,
    buf: *mut u8,
    t: Tactics,
) -> *mut u8 {
    if i0 >= i1 {
        return buf;
    }
    let Some((outer, rest)) = levels.split_first() else {
        // SAFETY: the nest's only block (caller's contract).
        unsafe { xfer::<0, PACK>(mem.wrapping_offset(off as isize), buf, block) };
        return buf.wrapping_add(block);
    };
    // Blocks per outer iteration (non-zero: the range is not empty).
    let per: usize = rest.iter().map(|l| l.count).product();
    let at = |a: usize| off + a as i64 * outer.stride;
    let (a0, r0, a1, r1) = (i0 / per, i0 % per, i1 / per, i1 % per);
    // SAFETY: (all calls) sub-ranges of the caller's blocks, in order.
    unsafe {
        if a0 == a1 {
            return blocks::<S, PACK>(mem, at(a0), rest, block, r0, r1, buf, t);
        }
        let mut q = buf;
        let mut a = a0;
        if r0 > 0 {
            q = blocks::<S, PACK>(mem, at(a0), rest, block, r0, per, q, t);
            a += 1;
        }
        if a1 > a {
            let mut full = [Level::default(); MAX_LEVELS + 1];
            full[0] = Level { count: a1 - a, stride: outer.stride };
            full[1..=rest.len()].copy_from_slice(rest);
            q = by_block!(block, S::strided, PACK, (mem, at(a), &full[..=rest.len()], block, q, t));
        }
        blocks::<S, PACK>(mem, at(a1), rest, block, 0, r1, q, t)
    }
}

/// Stream bytes `[first, last)` of a block-indexed kernel: per element, the table entries the
/// range covers whole through the table loop, partial entries through [`nest_range`].
///
/// # Safety
/// As [`Kernel::run_range`] (`first < last`).
#[allow(clippy::too_many_arguments)]
unsafe fn block_indexed<S: Entries, const PACK: bool>(
    mem: *mut u8,
    dl: &DataLoop,
    displs: &[i64],
    inner: &Strided,
    first: usize,
    last: usize,
    buf: *mut u8,
    t: Tactics,
) {
    let entry = dl.size / displs.len();
    let levels = inner.levels();
    let (mut pos, mut q) = (first, buf);
    while pos < last {
        let (k, within) = (pos / dl.size, pos % dl.size);
        let (e, r) = (within / entry, within % entry);
        let base = k as i64 * dl.extent;
        // SAFETY: the entries and blocks of element `k` inside the range, in stream order
        // (caller's contract).
        unsafe {
            if r > 0 || last - pos < entry {
                let end = (last - pos).min(entry - r) + r;
                q = nest_range::<S, PACK>(mem, base + inner.off + displs[e], levels, inner.block, r, end, q, t);
                pos += end - r;
            } else {
                let e1 = displs.len().min(e + (last - pos) / entry);
                q = by_block!(inner.block, S::table, PACK, (mem, base, &displs[e..e1], inner, q, t));
                pos += (e1 - e) * entry;
            }
        }
    }
}

/// Stream bytes `[first, last)` of an indexed kernel: the first run found by binary search over
/// `ends` (the prefix sums of the run lengths), then run after run.
///
/// # Safety
/// As [`Kernel::run_range`] (`first < last`).
unsafe fn indexed<const PACK: bool>(
    mem: *mut u8,
    dl: &DataLoop,
    runs: &[(i64, usize)],
    ends: &[usize],
    first: usize,
    last: usize,
    buf: *mut u8,
) {
    let mut k = first / dl.size;
    let skip = first % dl.size;
    let mut i = ends.partition_point(|&e| e <= skip);
    // Bytes of run `i` already behind `first` (only for the first run).
    let mut o = skip - i.checked_sub(1).map_or(0, |p| ends[p]);
    let (mut left, mut q) = (last - first, buf);
    loop {
        let base = mem.wrapping_offset((k as i64 * dl.extent) as isize);
        // Run after run as in the whole-element loop; the one holding `last` ends the range.
        for &(ro, rl) in &runs[i..] {
            let p = base.wrapping_offset(ro as isize).wrapping_add(o);
            let n = rl - o;
            // SAFETY: part of a run of element `k` inside the range (caller's contract).
            unsafe {
                if n >= left {
                    return xfer::<0, PACK>(p, q, left);
                }
                xfer::<0, PACK>(p, q, n);
            }
            q = q.wrapping_add(n);
            left -= n;
            o = 0;
        }
        (i, k) = (0, k + 1);
    }
}
