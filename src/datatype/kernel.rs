//! Specialized pack/unpack kernels, chosen once per type by [`compile`] after normalization
//! (the "specialized handlers" of sPIN, sec. 3.2.3), with the interpreter as the fallback.
//!
//! - [`Kernel::Strided`]: nested strided loops around one contiguous block. Zero levels is a
//!   contiguous type (one copy per element, or one copy overall when extent == size); one level
//!   is a vector; two and three levels are nested vectors (subarray faces, milc, wrf, lu). The
//!   element loop (`count` elements, `extent` apart) is one more level, merged with the type's
//!   outermost one when they tile (contiguous-extent elements fold into a bigger stride loop).
//!   Two levels where each element is a column (outer level steps through adjacent blocks,
//!   inner stride >= 1 KiB, like an FFT transpose) run in tiles that read a line at a time.
//!   Rows with strides of 128 B to 4 KiB prefetch 48 blocks ahead.
//! - [`Kernel::BlockIndexed`]: an offset table, each entry the origin of a strided kernel.
//! - [`Kernel::SmallRuns`]: up to 16 disjoint runs of at most 64 bytes per element, elements
//!   disjoint (an array of structs): each run is one or two fixed-width moves, run over a tile
//!   of 64 elements as a strided loop, so there is no length dispatch per run.
//! - [`Kernel::Indexed`]: a table of `(offset, len)` runs per element (indexed types, and any
//!   type with at most [`MAX_RUNS`] runs per element).
//! - [`Kernel::Interp`]: everything else.
//!
//! The kernels produce exactly the interpreter's bytes, also for negative strides and typemaps
//! that address a byte twice (unpack: last wins): they walk the stream in typemap order, except
//! the transpose and small-runs kernels, which are only chosen when no two blocks they reorder
//! overlap. Blocks of 1, 2, 4, 8, 12, 16, 24, 32, 40, 48 and 64 bytes get their own
//! monomorphized loop that copies a `[u8; N]` with unaligned loads and stores (plain moves, no
//! `memcpy` call); other blocks up to 64 bytes use two overlapping moves, larger ones `memcpy`.

use super::interp;
use super::ir::{DataLoop, Kind};

/// Most `(offset, len)` runs per element the [`Kernel::Indexed`] table holds (16 B each).
pub const MAX_RUNS: usize = 1 << 16;

/// Most loop levels of a [`Strided`] kernel, the element loop included.
pub const MAX_LEVELS: usize = 8;

/// One loop level: `count` iterations `stride` bytes apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub count: usize,
    pub stride: i64,
}

/// Nested strided loops around a contiguous block: the blocks of `block` bytes sit at
/// `off + sum(i_l * levels[l].stride)`, `i_l < levels[l].count`, outermost level first, in
/// stream order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub off: i64,
    pub block: usize,
    depth: usize,
    lv: [Level; MAX_LEVELS],
}

impl Strided {
    fn new(off: i64, block: usize) -> Self {
        Strided { off, block, depth: 0, lv: [Level::default(); MAX_LEVELS] }
    }

    /// The loop levels, outermost first.
    pub fn levels(&self) -> &[Level] {
        &self.lv[..self.depth]
    }

    /// Adds an outer level; false when full.
    fn push_outer(&mut self, l: Level) -> bool {
        if self.depth == MAX_LEVELS {
            return false;
        }
        self.lv.copy_within(0..self.depth, 1);
        self.lv[0] = l;
        self.depth += 1;
        true
    }

    fn remove(&mut self, i: usize) {
        self.lv.copy_within(i + 1..self.depth, i);
        self.depth -= 1;
    }

    /// Drops one-iteration levels, folds an innermost level that tiles the block into the block
    /// and merges adjacent levels that tile (`outer.stride == inner.count * inner.stride`).
    /// None of this changes the sequence of block addresses.
    fn simplify(&mut self) {
        let mut i = 0;
        while i < self.depth {
            if self.lv[i].count == 1 {
                self.remove(i);
            } else {
                i += 1;
            }
        }
        loop {
            if let Some(l) = self.levels().last().copied() {
                if l.stride == self.block as i64 {
                    self.block *= l.count;
                    self.depth -= 1;
                    continue;
                }
            }
            let Some(i) = (1..self.depth).find(|&i| self.lv[i - 1].stride == self.lv[i].count as i64 * self.lv[i].stride)
            else {
                break;
            };
            self.lv[i].count *= self.lv[i - 1].count;
            self.remove(i - 1);
        }
    }

    /// This kernel for `count` elements `extent` apart (the element loop as a level).
    fn for_count(&self, count: usize, extent: i64) -> Option<Strided> {
        let mut s = *self;
        if count != 1 {
            if !s.push_outer(Level { count, stride: extent }) {
                return None;
            }
            s.simplify();
        }
        Some(s)
    }
}

/// The kernel chosen for a (normalized) type.
#[derive(Clone, Debug, PartialEq)]
pub enum Kernel {
    /// Nested strided loops around a contiguous block (no levels: a contiguous type).
    Strided(Strided),
    /// The blocks of `inner` at each displacement of the table, in table order.
    BlockIndexed { displs: Vec<i64>, inner: Strided },
    /// The memory runs `(offset, len)` of one element, in stream order.
    Indexed { runs: Vec<(i64, usize)> },
    /// A few short, disjoint runs per element, elements disjoint too (an array of structs):
    /// fixed-width moves `(width index into MOVE_WIDTHS, memory offset, buffer offset)`, each
    /// run over a tile of elements as one strided loop of plain moves.
    SmallRuns { moves: Vec<(usize, i64, usize)> },
    /// The general interpreter.
    Interp,
}

impl Kernel {
    /// A short name for reports: contig, strided-1..3, strided-n, block-indexed, indexed, interp.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Strided(s) => match s.depth {
                0 => "contig",
                1 => "strided-1",
                2 => "strided-2",
                3 => "strided-3",
                _ => "strided-n",
            },
            Kernel::BlockIndexed { .. } => "block-indexed",
            Kernel::Indexed { .. } => "indexed",
            Kernel::SmallRuns { .. } => "small-runs",
            Kernel::Interp => "interp",
        }
    }
}

impl Kernel {
    /// The smallest contiguous block the kernel copies for `count` elements (`None`: interp).
    pub fn min_block(&self, count: usize, extent: i64) -> Option<usize> {
        match self {
            Kernel::Strided(s) => Some(s.for_count(count, extent).unwrap_or(*s).block),
            Kernel::BlockIndexed { inner, .. } => Some(inner.block),
            Kernel::Indexed { runs } => runs.iter().map(|r| r.1).min(),
            Kernel::SmallRuns { moves } => moves.iter().map(|m| MOVE_WIDTHS[m.0]).min(),
            Kernel::Interp => None,
        }
    }
}

/// Flattens a chain of single-child nodes (contig, vector, one-block indexed/struct) down to a
/// contiguous node into nested loops; `None` when the chain branches or is too deep.
fn chain(dl: &DataLoop, off: i64, levels: &mut Vec<Level>) -> Option<Strided> {
    if dl.contiguous {
        let mut s = Strided::new(off + dl.true_lb, dl.size);
        for &l in levels.iter().rev() {
            if !s.push_outer(l) {
                return None;
            }
        }
        s.simplify();
        // Leave room for the element loop.
        return (s.depth < MAX_LEVELS).then_some(s);
    }
    match &dl.kind {
        Kind::Contig { count, child } => {
            levels.push(Level { count: *count, stride: child.extent });
            chain(child, off, levels)
        }
        Kind::Vector { count, blocklen, stride_bytes, child } => {
            levels.push(Level { count: *count, stride: *stride_bytes });
            levels.push(Level { count: *blocklen, stride: child.extent });
            chain(child, off, levels)
        }
        _ if dl.nblocks() == 1 => {
            let (d, bl, c) = dl.block(0);
            levels.push(Level { count: bl, stride: c.extent });
            chain(c, off + d, levels)
        }
        _ => None,
    }
}

/// Number of memory runs of one element, or some number above `limit`.
fn nruns(dl: &DataLoop, limit: usize) -> usize {
    if dl.size == 0 {
        return 0;
    }
    if dl.contiguous {
        return 1;
    }
    let per_block = |bl: usize, c: &DataLoop| {
        if DataLoop::block_contiguous(bl, c) {
            1
        } else {
            bl.saturating_mul(nruns(c, limit))
        }
    };
    match &dl.kind {
        Kind::Vector { count, blocklen, child, .. } => count.saturating_mul(per_block(*blocklen, child)),
        _ => {
            let mut n = 0usize;
            for i in 0..dl.nblocks() {
                let (_, bl, c) = dl.block(i);
                if bl > 0 && c.size > 0 {
                    n = n.saturating_add(per_block(bl, c));
                }
                if n > limit {
                    break;
                }
            }
            n
        }
    }
}

/// Picks the kernel for a normalized type.
pub fn compile(dl: &DataLoop) -> Kernel {
    if dl.size == 0 {
        return Kernel::Interp;
    }
    if let Some(s) = chain(dl, 0, &mut Vec::new()) {
        return Kernel::Strided(s);
    }
    if let Kind::BlockIndexed { blocklen, displs_bytes, child } = &dl.kind {
        if let Some(inner) = chain(child, 0, &mut vec![Level { count: *blocklen, stride: child.extent }]) {
            return Kernel::BlockIndexed { displs: displs_bytes.clone(), inner };
        }
    }
    if nruns(dl, MAX_RUNS) <= MAX_RUNS {
        let mut runs: Vec<(i64, usize)> = Vec::new();
        interp::for_each_run(dl, 1, 0, dl.size, |o, l| match runs.last_mut() {
            Some((lo, ll)) if *lo + *ll as i64 == o => *ll += l,
            _ => runs.push((o, l)),
        });
        let disjoint_elements = dl.true_ub - dl.true_lb <= dl.extent.abs();
        return disjoint_elements.then(|| small_runs(&runs)).flatten().unwrap_or(Kernel::Indexed { runs });
    }
    Kernel::Interp
}

/// Widths of the moves of [`Kernel::SmallRuns`].
pub const MOVE_WIDTHS: [usize; 6] = [1, 2, 4, 8, 16, 32];
/// Most runs per element, and longest run, that [`Kernel::SmallRuns`] takes.
const SMALL_RUNS_MAX: usize = 16;
const SMALL_RUN_MAX_LEN: usize = 64;

/// The runs of one element as fixed-width moves, when there are few, short and pairwise
/// disjoint ones (the caller checked that elements are disjoint). Disjoint bytes may be copied
/// in any order: unpack leaves the same memory. A run of `len` bytes is one or two
/// (overlapping) moves of the widest width `w <= len`, at 0 and `len - w`.
fn small_runs(runs: &[(i64, usize)]) -> Option<Kernel> {
    if runs.len() > SMALL_RUNS_MAX || runs.iter().any(|r| r.1 > SMALL_RUN_MAX_LEN) {
        return None;
    }
    let mut sorted = runs.to_vec();
    sorted.sort();
    if sorted.windows(2).any(|w| w[0].0 + w[0].1 as i64 > w[1].0) {
        return None;
    }
    let mut moves = Vec::new();
    let mut at = 0;
    for &(o, len) in runs {
        let c = MOVE_WIDTHS.iter().rposition(|&w| w <= len)?;
        let w = MOVE_WIDTHS[c];
        moves.push((c, o, at));
        if len > w {
            moves.push((c, o + (len - w) as i64, at + len - w));
        }
        at += len;
    }
    Some(Kernel::SmallRuns { moves })
}

// ---- copies ------------------------------------------------------------------------------

/// Copies exactly `N` bytes with one unaligned load and store of `[u8; N]`.
///
/// # Safety
/// `src..src+N` readable, `dst..dst+N` writable, the two do not overlap.
#[inline(always)]
unsafe fn mv<const N: usize>(dst: *mut u8, src: *const u8) {
    // SAFETY: caller's contract; `[u8; N]` has alignment 1 and unaligned access is used anyway.
    unsafe { std::ptr::write_unaligned(dst.cast::<[u8; N]>(), std::ptr::read_unaligned(src.cast::<[u8; N]>())) }
}

/// Copies `len` bytes: two overlapping moves up to 64 bytes, `memcpy` above.
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
        } else {
            std::ptr::copy_nonoverlapping(src, dst, len);
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
unsafe fn xfer<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, len: usize) {
    let (dst, src) = if PACK { (buf, mem as *const u8) } else { (mem, buf as *const u8) };
    // SAFETY: caller's contract.
    unsafe {
        if N == 0 {
            copy_var(dst, src, len)
        } else {
            mv::<N>(dst, src)
        }
    }
}

/// Rows whose stride is at least this many bytes prefetch [`PREFETCH_AHEAD`] blocks ahead: the
/// hardware prefetchers stop at page boundaries, which such rows cross every few blocks.
const PREFETCH_MIN_STRIDE: u64 = 128;
const PREFETCH_MAX_STRIDE: u64 = 4096;
const PREFETCH_AHEAD: i64 = 48;

/// Asks the cache for the line holding `p`.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and has no architectural effect,
    // whatever the address (SSE, which provides it, is part of the x86_64 baseline).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// One strided row: `count` blocks `stride` apart from `mem + off`; returns the buffer end.
///
/// # Safety
/// Every block `mem + off + i*stride` (`i < count`) valid for the access, the `count * block`
/// bytes at `buf` too, no overlap (see [`xfer`]).
#[inline(always)]
unsafe fn row<const N: usize, const PACK: bool>(mem: *mut u8, off: i64, l: Level, block: usize, buf: *mut u8) -> *mut u8 {
    // Intermediate addresses may lie outside the allocation (negative strides, padding), so
    // only wrapping arithmetic here; every address dereferenced is a typemap block.
    let mut p = mem.wrapping_offset(off as isize);
    let mut q = buf;
    if (PREFETCH_MIN_STRIDE..PREFETCH_MAX_STRIDE).contains(&l.stride.unsigned_abs()) && l.count as i64 > PREFETCH_AHEAD {
        let ahead = (l.stride * PREFETCH_AHEAD) as isize;
        let last = block as isize - 1;
        for _ in 0..l.count {
            let f = p.wrapping_offset(ahead);
            prefetch(f);
            prefetch(f.wrapping_offset(last));
            // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
            unsafe { xfer::<N, PACK>(p, q, block) };
            p = p.wrapping_offset(l.stride as isize);
            q = q.wrapping_add(block);
        }
        return q;
    }
    for _ in 0..l.count {
        // SAFETY: `p` is the next block of the row, `q` the next `block` bytes of the buffer.
        unsafe { xfer::<N, PACK>(p, q, block) };
        p = p.wrapping_offset(l.stride as isize);
        q = q.wrapping_add(block);
    }
    q
}

/// Inner strides at least this large make a two-level loop whose outer level steps through
/// adjacent blocks (a matrix column per element, like an FFT transpose) run tile by tile.
const TRANSPOSE_MIN_STRIDE: u64 = 1024;
/// Bytes of adjacent blocks a transpose tile reads at once (two cache lines).
const TRANSPOSE_TILE: usize = 128;

/// Whether levels `[a, b]` around `block` may run as [`transpose`]: `a` steps through adjacent
/// blocks, `b` has a large stride, and one `a` row fits in one `b` stride, so no two blocks
/// overlap and the visiting order cannot change what an unpack leaves in memory.
#[inline(always)]
fn transposable(a: Level, b: Level, block: usize) -> bool {
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
/// block per page.
///
/// # Safety
/// As [`strided`] for the two levels.
unsafe fn transpose<const N: usize, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    a: Level,
    b: Level,
    block: usize,
    buf: *mut u8,
) -> *mut u8 {
    let per_row = b.count * block;
    let tile = TRANSPOSE_TILE / block;
    let mut i = 0;
    while i < a.count {
        let t = tile.min(a.count - i);
        let mut p = mem.wrapping_offset((off + (i * block) as i64) as isize);
        let q0 = buf.wrapping_add(i * per_row);
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

/// Runs nested levels from `mem + off`; returns the buffer end.
///
/// # Safety
/// Every block the levels address valid for the access, the buffer long enough for all of
/// them (see [`xfer`]).
unsafe fn strided<const N: usize, const PACK: bool>(
    mem: *mut u8,
    off: i64,
    levels: &[Level],
    block: usize,
    buf: *mut u8,
) -> *mut u8 {
    // SAFETY: (all arms) the blocks visited are exactly the typemap's, in stream order, and the
    // buffer advances by `block` per block (caller's contract).
    unsafe {
        match levels {
            [] => {
                xfer::<N, PACK>(mem.wrapping_offset(off as isize), buf, block);
                buf.wrapping_add(block)
            }
            [l] => row::<N, PACK>(mem, off, *l, block, buf),
            [a, b] if transposable(*a, *b, block) => transpose::<N, PACK>(mem, off, *a, *b, block, buf),
            [a, b] => {
                let mut q = buf;
                for i in 0..a.count {
                    q = row::<N, PACK>(mem, off + i as i64 * a.stride, *b, block, q);
                }
                q
            }
            [a, rest @ ..] => {
                let mut q = buf;
                for i in 0..a.count {
                    q = strided::<N, PACK>(mem, off + i as i64 * a.stride, rest, block, q);
                }
                q
            }
        }
    }
}

/// The blocks of `inner` at `base + d` for each table entry `d`; returns the buffer end.
///
/// # Safety
/// As [`strided`], for every table entry.
unsafe fn table<const N: usize, const PACK: bool>(
    mem: *mut u8,
    base: i64,
    displs: &[i64],
    inner: &Strided,
    buf: *mut u8,
) -> *mut u8 {
    let mut q = buf;
    let block = inner.block;
    // SAFETY: every address is a typemap block in stream order (caller's contract).
    unsafe {
        if inner.depth == 0 {
            let p = mem.wrapping_offset((base + inner.off) as isize);
            for &d in displs {
                xfer::<N, PACK>(p.wrapping_offset(d as isize), q, block);
                q = q.wrapping_add(block);
            }
        } else {
            for &d in displs {
                q = strided::<N, PACK>(mem, base + inner.off + d, inner.levels(), block, q);
            }
        }
    }
    q
}

/// Elements per tile of [`Kernel::SmallRuns`]: each move runs over a tile before the next
/// (the tile's memory stays in L1 meanwhile).
const SMALL_RUNS_TILE: usize = 64;

/// One move of [`Kernel::SmallRuns`] for `n` elements: `N` bytes at `mem + k * ext` and
/// `buf + k * size`, `k < n`.
///
/// # Safety
/// Every move inside the typemap of its element and that element's packed bytes (see
/// [`xfer`]).
#[inline(never)]
unsafe fn column<const N: usize, const PACK: bool>(mem: *mut u8, buf: *mut u8, n: usize, ext: i64, size: usize) {
    let (mut p, mut q) = (mem, buf);
    for _ in 0..n {
        // SAFETY: the move of element k and its place in the buffer (caller's contract).
        unsafe { xfer::<N, PACK>(p, q, N) };
        p = p.wrapping_offset(ext as isize);
        q = q.wrapping_add(size);
    }
}

/// Calls `$f::<N, $pack>($args)` with `N` the block size when it has a specialized copy, else 0.
macro_rules! by_block {
    ($block:expr, $f:ident, $pack:tt, ($($a:expr),*)) => {
        match $block {
            1 => $f::<1, $pack>($($a),*),
            2 => $f::<2, $pack>($($a),*),
            4 => $f::<4, $pack>($($a),*),
            8 => $f::<8, $pack>($($a),*),
            12 => $f::<12, $pack>($($a),*),
            16 => $f::<16, $pack>($($a),*),
            24 => $f::<24, $pack>($($a),*),
            32 => $f::<32, $pack>($($a),*),
            40 => $f::<40, $pack>($($a),*),
            48 => $f::<48, $pack>($($a),*),
            64 => $f::<64, $pack>($($a),*),
            _ => $f::<0, $pack>($($a),*),
        }
    };
}

impl Kernel {
    /// Moves the `count * dl.size` stream bytes of `count` elements between `mem` and `buf`
    /// (`PACK`: memory to buffer). `dl` is the type this kernel was compiled from.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `mem` valid for the
    /// access; `buf` valid for `count * dl.size` bytes; the two do not overlap.
    pub unsafe fn run<const PACK: bool>(&self, dl: &DataLoop, mem: *mut u8, count: usize, buf: *mut u8) {
        if count == 0 || dl.size == 0 {
            return;
        }
        let ext = dl.extent;
        // SAFETY: (all calls) the kernel visits exactly the typemap of the `count` elements in
        // stream order and writes/reads `count * dl.size` buffer bytes (caller's contract).
        unsafe {
            match self {
                Kernel::Strided(s) => match s.for_count(count, ext) {
                    Some(s) => {
                        by_block!(s.block, strided, PACK, (mem, s.off, s.levels(), s.block, buf));
                    }
                    None => {
                        let mut q = buf;
                        for k in 0..count {
                            q = by_block!(s.block, strided, PACK, (mem, s.off + k as i64 * ext, s.levels(), s.block, q));
                        }
                    }
                },
                Kernel::BlockIndexed { displs, inner } => {
                    let mut q = buf;
                    for k in 0..count {
                        q = by_block!(inner.block, table, PACK, (mem, k as i64 * ext, displs, inner, q));
                    }
                }
                Kernel::Indexed { runs } => {
                    let mut q = buf;
                    for k in 0..count {
                        let base = mem.wrapping_offset((k as i64 * ext) as isize);
                        for &(o, l) in runs {
                            xfer::<0, PACK>(base.wrapping_offset(o as isize), q, l);
                            q = q.wrapping_add(l);
                        }
                    }
                }
                Kernel::SmallRuns { moves } => {
                    let size = dl.size;
                    let mut k0 = 0;
                    while k0 < count {
                        let n = SMALL_RUNS_TILE.min(count - k0);
                        let p = mem.wrapping_offset((k0 as i64 * ext) as isize);
                        let q = buf.wrapping_add(k0 * size);
                        for &(c, o, b) in moves {
                            let (p, q) = (p.wrapping_offset(o as isize), q.wrapping_add(b));
                            match c {
                                0 => column::<1, PACK>(p, q, n, ext, size),
                                1 => column::<2, PACK>(p, q, n, ext, size),
                                2 => column::<4, PACK>(p, q, n, ext, size),
                                3 => column::<8, PACK>(p, q, n, ext, size),
                                4 => column::<16, PACK>(p, q, n, ext, size),
                                _ => column::<32, PACK>(p, q, n, ext, size),
                            }
                        }
                        k0 += n;
                    }
                }
                Kernel::Interp => {
                    let n = dl.size * count;
                    if PACK {
                        interp::pack(dl, count, mem, 0, n, std::slice::from_raw_parts_mut(buf, n));
                    } else {
                        interp::unpack(dl, count, mem, 0, n, std::slice::from_raw_parts(buf, n));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::normalize::normalize;
    use proptest::prelude::*;

    fn b(n: usize) -> DataLoop {
        DataLoop::bytes(n)
    }

    /// Random dataloops, negative strides and displacements included, depth <= 3.
    fn arb_dl() -> impl Strategy<Value = DataLoop> {
        let leaf = prop_oneof![(1usize..9).prop_map(b), Just(b(12)), Just(b(16)), Just(b(24)), Just(b(40)), Just(b(100))];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                (0usize..4, inner.clone()).prop_map(|(n, c)| DataLoop::contig(n, c)),
                (0usize..5, 1usize..3, -160i64..160, inner.clone()).prop_map(|(n, b, s, c)| DataLoop::vector(n, b, s, c)),
                // Vectors whose stride is a multiple of the child's extent (tiling levels).
                (0usize..5, 1usize..3, -3i64..4, inner.clone()).prop_map(|(n, b, m, c)| {
                    let s = m * c.extent * b as i64;
                    DataLoop::vector(n, b, s, c)
                }),
                (1usize..3, prop::collection::vec(-128i64..128, 0..5), inner.clone())
                    .prop_map(|(b, d, c)| DataLoop::block_indexed(b, d, c)),
                (prop::collection::vec((0usize..3, -128i64..128), 0..5), inner.clone()).prop_map(|(v, c)| {
                    let (b, d) = v.into_iter().unzip();
                    DataLoop::indexed(b, d, c)
                }),
                prop::collection::vec((0usize..3, -64i64..64, inner.clone()), 1..4).prop_map(|v| {
                    let (mut b, mut d, mut c) = (vec![], vec![], vec![]);
                    for (x, y, z) in v {
                        b.push(x);
                        d.push(y);
                        c.push(z);
                    }
                    DataLoop::structure(b, d, c)
                }),
                (inner, -16i64..16, -8i64..64).prop_map(|(c, lb, e)| c.resized(lb, e)),
            ]
        })
    }

    /// A buffer covering every byte `count` elements touch, and the origin offset inside it.
    fn span(dl: &DataLoop, count: usize) -> (usize, usize) {
        let last = (count.max(1) as i64 - 1) * dl.extent;
        let lo = (dl.true_lb + last.min(0)).min(0);
        let hi = dl.true_ub + last.max(0);
        ((-lo) as usize, (hi - lo).max(0) as usize + 1)
    }

    /// Checks the kernel of `dl` against the interpreter for `count` elements, pack and unpack.
    fn check(dl: &DataLoop, count: usize) -> Result<(), TestCaseError> {
        let n = normalize(dl);
        let k = compile(&n);
        let (origin, len) = span(&n, count);
        let total = n.size * count;
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut want = vec![0u8; total];
        let mut got = vec![0u8; total];
        // SAFETY: `span` covers the typemap of `count` elements around `origin`; the output
        // holds the packed size.
        unsafe {
            interp::pack(dl, count, src.as_ptr().add(origin), 0, total, &mut want);
            k.run::<true>(&n, src.as_ptr().add(origin).cast_mut(), count, got.as_mut_ptr());
        }
        prop_assert_eq!(&got, &want, "pack, kernel {:?}", k);
        let stream: Vec<u8> = (0..total).map(|i| (i * 13 + 1) as u8).collect();
        let mut a = vec![0xAAu8; len];
        let mut bb = vec![0xAAu8; len];
        // SAFETY: as above, for writing.
        unsafe {
            interp::unpack(dl, count, a.as_mut_ptr().add(origin), 0, total, &stream);
            k.run::<false>(&n, bb.as_mut_ptr().add(origin), count, stream.as_ptr().cast_mut());
        }
        prop_assert_eq!(&bb, &a, "unpack, kernel {:?}", k);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn kernels_match_interpreter(dl in arb_dl(), count in 0usize..5) {
            check(&dl, count)?;
        }
    }

    fn kernel_of(dl: &DataLoop) -> Kernel {
        compile(&normalize(dl))
    }

    #[test]
    fn picks_contig() {
        let k = kernel_of(&DataLoop::contig(10, b(8)));
        assert_eq!(k.name(), "contig");
        let r = kernel_of(&b(8).resized(0, 16));
        assert_eq!(r.name(), "contig");
        // Two elements of a padded run are a one-level stride loop.
        let Kernel::Strided(s) = r else { panic!() };
        assert_eq!(s.for_count(5, 16).unwrap().levels(), &[Level { count: 5, stride: 16 }]);
        // Elements of a dense type fold into one block.
        let Kernel::Strided(s) = kernel_of(&b(8)) else { panic!() };
        let s = s.for_count(5, 8).unwrap();
        assert_eq!((s.levels().len(), s.block), (0, 40));
    }

    #[test]
    fn picks_strided() {
        assert_eq!(kernel_of(&DataLoop::vector(8, 2, 64, b(8))).name(), "strided-1");
        let face = DataLoop::block_indexed(1, vec![0], DataLoop::vector(4, 1, 4096, DataLoop::vector(16, 1, 64, b(8))));
        assert_eq!(kernel_of(&face).name(), "strided-2");
        let three = DataLoop::contig(3, DataLoop::vector(4, 1, -4096, DataLoop::vector(16, 1, 64, b(8))).resized(0, 99999));
        assert_eq!(kernel_of(&three).name(), "strided-3");
        // Tiling levels merge: a vector of vectors that is itself a plain vector.
        let Kernel::Strided(s) = kernel_of(&DataLoop::vector(4, 1, 16 * 32, DataLoop::vector(16, 1, 32, b(8)))) else {
            panic!()
        };
        assert_eq!((s.levels(), s.block), (&[Level { count: 64, stride: 32 }][..], 8));
    }

    #[test]
    fn picks_tables() {
        let bi = kernel_of(&DataLoop::block_indexed(3, vec![0, 100, 40], b(4)));
        assert_eq!(bi.name(), "block-indexed");
        let Kernel::BlockIndexed { inner, .. } = bi else { panic!() };
        assert_eq!((inner.block, inner.levels().len()), (12, 0));
        assert_eq!(kernel_of(&DataLoop::indexed(vec![1, 3, 2], vec![0, 100, 40], b(4))).name(), "small-runs");
        assert_eq!(kernel_of(&DataLoop::indexed(vec![1, 30, 2], vec![0, 100, 400], b(4))).name(), "indexed");
        let s = DataLoop::structure(vec![1, 1, 5], vec![0, 8, 16], vec![b(4), b(8), b(1)]).resized(0, 24);
        let k = kernel_of(&s);
        assert_eq!(k, Kernel::SmallRuns { moves: vec![(2, 0, 0), (3, 8, 4), (3, 13, 9)] });
        // Overlapping runs keep the ordered table.
        let o = DataLoop::indexed(vec![2, 1], vec![0, 4], b(4));
        assert_eq!(kernel_of(&o).name(), "indexed");
    }

    #[test]
    fn small_runs_in_tiles() {
        let s = DataLoop::structure(vec![1, 1, 5], vec![0, 8, 16], vec![b(4), b(8), b(1)]).resized(0, 24);
        let odd = DataLoop::structure(vec![3, 1, 1], vec![40, 0, 20], vec![b(1), b(13), b(7)]);
        for dl in [s.clone(), s.resized(0, -24), odd.clone(), odd.resized(-8, 60)] {
            assert_eq!(kernel_of(&dl).name(), "small-runs");
            for count in [1, 63, 64, 65, 200] {
                check(&dl, count).unwrap();
            }
        }
        // Elements that overlap keep the ordered table.
        let tight = DataLoop::structure(vec![1, 1], vec![0, 8], vec![b(4), b(2)]).resized(0, 6);
        assert_eq!(kernel_of(&tight).name(), "indexed");
        check(&tight, 100).unwrap();
    }

    #[test]
    fn negative_strides() {
        for dl in [
            DataLoop::vector(5, 1, -24, b(8)),
            DataLoop::vector(3, 2, -100, DataLoop::vector(4, 1, -16, b(12))),
            DataLoop::block_indexed(2, vec![-40, 0, -200], DataLoop::vector(3, 1, -32, b(16))),
        ] {
            for count in 0..4 {
                check(&dl, count).unwrap();
                check(&dl.clone().resized(-50, -300), count).unwrap();
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Columns of a matrix resized to one block (FFT transpose), some overlapping.
        #[test]
        fn transpose_matches_interpreter(
            blk in prop_oneof![Just(1usize), Just(4), Just(8), Just(12), Just(16), Just(24), Just(32), 1usize..40],
            rows in 1usize..40,
            stride in prop_oneof![1000i64..1100, -1100i64..-1000, 2048i64..2049],
            count in 0usize..200,
        ) {
            let col = DataLoop::vector(rows, 1, stride, b(blk)).resized(0, blk as i64);
            check(&col, count)?;
        }
    }

    #[test]
    fn transpose_is_used_for_fft_columns() {
        let col = DataLoop::vector(64, 1, 64 * 16, b(16)).resized(0, 16);
        let Kernel::Strided(s) = kernel_of(&col) else { panic!() };
        let s = s.for_count(64, 16).unwrap();
        assert!(transposable(s.levels()[0], s.levels()[1], s.block));
        check(&col, 64).unwrap();
        // 65 columns overlap the next row: not transposable, still correct.
        let s2 = Strided { lv: [Level { count: 65, stride: 16 }, Level { count: 64, stride: 1024 }, Level::default(), Level::default(), Level::default(), Level::default(), Level::default(), Level::default()], depth: 2, off: 0, block: 16 };
        assert!(!transposable(s2.levels()[0], s2.levels()[1], 16));
        check(&col, 65).unwrap();
    }

    #[test]
    fn all_block_sizes() {
        for blk in 1..=130 {
            for dl in [
                DataLoop::vector(7, 1, blk as i64 + 5, b(blk)),
                DataLoop::vector(3, 1, 3 * (blk as i64 + 3), DataLoop::vector(2, 1, blk as i64 + 3, b(blk))),
                DataLoop::block_indexed(1, vec![0, 3 * blk as i64, blk as i64 + 1], b(blk)),
                DataLoop::indexed(vec![1, 2], vec![0, 3 * blk as i64], b(blk)),
            ] {
                for count in [1, 3] {
                    check(&dl, count).unwrap();
                }
            }
        }
    }
}
