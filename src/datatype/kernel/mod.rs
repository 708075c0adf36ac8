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
//!   Rows prefetch ahead as the CPU family's [`Prefetch`] policy says (`prefetch.rs`: read
//!   prefetches on AMD, write-intent ones for unpack only on Intel). Rows of 16-byte blocks
//!   under 128 B apart, and 8-byte blocks 16 bytes apart when packed, move with 8-byte accesses on the
//!   strided side (`split.rs`).
//! - [`Kernel::BlockIndexed`]: an offset table, each entry the origin of a strided kernel.
//! - [`Kernel::SmallRuns`]: up to 16 disjoint runs of at most 64 bytes per element (64 runs
//!   when a tile of elements spans at most 32 KiB), elements disjoint (an array of structs):
//!   each run is one or two fixed-width moves, run over a tile of 64 elements as a strided
//!   loop, so there is no length dispatch per run; calls of fewer than 8 elements move the
//!   runs in stream order instead (a column's set-up costs more than a few elements' moves).
//! - [`Kernel::Indexed`]: a table of `(offset, len)` runs per element (indexed types, and any
//!   type with at most [`MAX_RUNS`] runs per element).
//! - [`Kernel::Nested`]: a type with more runs per element than that table holds, whose top
//!   node's children have kernels (large elements of structs, vectors of indexed types): the
//!   top node's blocks in order, each run by its child's kernel.
//! - [`Kernel::Interp`]: everything else.
//!
//! The kernels produce exactly the interpreter's bytes, also for negative strides and typemaps
//! that address a byte twice (unpack: last wins): they walk the stream in typemap order, except
//! the transpose and small-runs kernels, which are only chosen when no two blocks they reorder
//! overlap. Blocks of 1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 64 and 192 bytes get their own
//! monomorphized loop that copies a `[u8; N]` with unaligned loads and stores (plain moves, no
//! `memcpy` call; 24 bytes as three 8-byte moves); other blocks up to 64 bytes use two
//! overlapping moves, larger ones `memcpy` or, on Intel, a loop of 64-byte moves
//! ([`BlockCopy`]).
//!
//! The loops are compiled once per instruction-set level ([`Isa`]: the build's baseline, and
//! AVX2 on x86_64, chosen at run time per type) and direction. Every kernel also runs any byte
//! range of the stream ([`Kernel::run_range`]), and large unpacks stream whole lines past the
//! cache ([`Stores`]). Files: `strided.rs` (strided and block-indexed), `transpose.rs`,
//! `small_runs.rs`, `indexed.rs`, `nested.rs`, `split.rs` (8- and 16-byte rows), `copy.rs`
//! (block moves), `prefetch.rs` (prefetch policies),
//! `stores.rs` (streaming stores), `isa.rs` (levels and their vector paths), `exec.rs` ([`Kernel::run`], the per-level entry
//! points), `range.rs` (range kernels), `tests.rs` (every kernel, level and store kind against
//! the interpreter, whole and in ranges).

mod copy;
mod cpu;
mod exec;
mod indexed;
mod isa;
mod nested;
mod prefetch;
mod range;
mod small_runs;
mod split;
mod stores;
mod strided;
#[cfg(test)]
mod tests;
mod transpose;

pub use copy::{BlockCopy, LINES_MAX, LINES_MIN};
pub use isa::Isa;
pub use prefetch::Prefetch;
pub use small_runs::MOVE_WIDTHS;
pub use stores::{streaming_min, Stores};

use super::interp;
use super::ir::{DataLoop, Kind};
use small_runs::small_runs;

/// The tactics measured to differ between CPU families, chosen once per process
/// ([`Tuning::host`]) and held per type by `CompiledType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub prefetch: Prefetch,
    pub block_copy: BlockCopy,
}

impl Tuning {
    /// This CPU's tactics.
    pub fn host() -> Tuning {
        Tuning { prefetch: Prefetch::host(), block_copy: BlockCopy::host() }
    }

    /// Every combination this CPU runs, for tests.
    pub fn all() -> Vec<Tuning> {
        Prefetch::available().into_iter().flat_map(|prefetch| BlockCopy::ALL.map(|block_copy| Tuning { prefetch, block_copy })).collect()
    }
}

/// How one kernel call runs beyond its loops: whether unpack streams whole lines past the cache
/// ([`Stores`]), how strided rows prefetch ([`Prefetch`]) and whether large blocks move inline
/// ([`BlockCopy`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Tactics {
    pub nt: bool,
    pub prefetch: Prefetch,
    pub lines: bool,
    /// Stream bytes of the whole operation (a range's message), for the prefetch policy.
    pub bytes: usize,
}

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
            let Some(i) = (1..self.depth).find(|&i| self.lv[i - 1].stride == self.lv[i].count as i64 * self.lv[i].stride) else {
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
    /// The memory runs `(offset, len)` of one element, in stream order, and where each ends
    /// in the element's stream (prefix sums of the lengths: a range finds its run by binary
    /// search).
    Indexed { runs: Vec<(i64, usize)>, ends: Vec<usize> },
    /// A few short, disjoint runs per element, elements disjoint too (an array of structs):
    /// fixed-width moves `(width index into MOVE_WIDTHS, memory offset, buffer offset)`, each
    /// run over a tile of elements as one strided loop of plain moves.
    /// `runs` is the element's `(offset, len)` runs in stream order: calls of fewer than
    /// [`small_runs::SMALL_RUNS_MIN_COUNT`] elements move them as the indexed kernel does.
    SmallRuns { moves: Vec<(usize, i64, usize)>, runs: Vec<(i64, usize)> },
    /// An element with more runs than an offset table holds, whose blocks' children each have
    /// a kernel: the blocks of the type's top node in order, each its child's kernel over the
    /// block's `blocklen` children (`kernels[i]` for a struct's block `i`, `kernels[0]` for
    /// every block of the other kinds). See `nested.rs`.
    Nested { kernels: Vec<Kernel> },
    /// The general interpreter.
    Interp,
}

impl Kernel {
    /// A short name for reports: contig, strided-1..3, strided-n, block-indexed, indexed,
    /// small-runs, nested, interp.
    pub fn name(&self) -> &'static str {
        self.c_name().to_str().unwrap_or("?")
    }

    /// [`Kernel::name`] as a C string (`sluice_type_kernel`).
    pub fn c_name(&self) -> &'static std::ffi::CStr {
        match self {
            Kernel::Strided(s) => match s.depth {
                0 => c"contig",
                1 => c"strided-1",
                2 => c"strided-2",
                3 => c"strided-3",
                _ => c"strided-n",
            },
            Kernel::BlockIndexed { .. } => c"block-indexed",
            Kernel::Indexed { .. } => c"indexed",
            Kernel::SmallRuns { .. } => c"small-runs",
            Kernel::Nested { .. } => c"nested",
            Kernel::Interp => c"interp",
        }
    }
}

impl Kernel {
    /// Entries of the kernel's tables (offsets, runs, moves), its children's included.
    pub fn table_entries(&self) -> usize {
        match self {
            Kernel::Strided(_) | Kernel::Interp => 0,
            Kernel::BlockIndexed { displs, .. } => displs.len(),
            Kernel::Indexed { runs, .. } => runs.len(),
            Kernel::SmallRuns { moves, .. } => moves.len(),
            Kernel::Nested { kernels } => kernels.iter().map(Kernel::table_entries).sum(),
        }
    }

    /// The smallest contiguous block the kernel copies for `count` elements (`None`: interp).
    pub fn min_block(&self, count: usize, extent: i64) -> Option<usize> {
        match self {
            Kernel::Strided(s) => Some(s.for_count(count, extent).unwrap_or(*s).block),
            Kernel::BlockIndexed { inner, .. } => Some(inner.block),
            Kernel::Indexed { runs, .. } => runs.iter().map(|r| r.1).min(),
            Kernel::SmallRuns { moves, .. } => moves.iter().map(|m| MOVE_WIDTHS[m.0]).min(),
            // The children's smallest blocks (their own extents: an estimate for the rules
            // that only ask whether blocks are large).
            Kernel::Nested { kernels } => kernels.iter().filter_map(|k| k.min_block(1, 0)).min(),
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

/// Sizes that pick between the offset table, the nested kernel and the interpreter.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// Most runs per element of an offset table ([`MAX_RUNS`]).
    pub max_runs: usize,
    /// Fewest stream bytes per block, on average, of the nested kernel (`nested.rs`).
    pub nested_block: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits { max_runs: MAX_RUNS, nested_block: nested::MIN_BYTES_PER_BLOCK };
}

/// Picks the kernel for a normalized type.
pub fn compile(dl: &DataLoop) -> Kernel {
    compile_limited(dl, Limits::DEFAULT)
}

/// [`compile`] under other [`Limits`] (tests reach the nested kernel with small types).
pub(super) fn compile_limited(dl: &DataLoop, limits: Limits) -> Kernel {
    let max_runs = limits.max_runs;
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
    if nruns(dl, max_runs) <= max_runs {
        let mut runs: Vec<(i64, usize)> = Vec::new();
        interp::for_each_run(dl, 1, 0, dl.size, |o, l| match runs.last_mut() {
            Some((lo, ll)) if *lo + *ll as i64 == o => *ll += l,
            _ => runs.push((o, l)),
        });
        let disjoint_elements = dl.true_ub - dl.true_lb <= dl.extent.abs();
        return disjoint_elements.then(|| small_runs(&runs, dl.extent)).flatten().unwrap_or_else(|| {
            let ends = runs.iter().scan(0, |at, r| {
                *at += r.1;
                Some(*at)
            });
            Kernel::Indexed { ends: ends.collect(), runs }
        });
    }
    nested::nested(dl, limits).unwrap_or(Kernel::Interp)
}
