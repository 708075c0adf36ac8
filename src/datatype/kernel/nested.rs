//! The nested kernel: a type whose element has more runs than an offset table holds
//! ([`super::MAX_RUNS`]) but whose top node's children have kernels of their own (a large
//! element of struct mixes, an indexed type of vectors of structs). The element is the top
//! node's blocks in order; block `(displacement, blocklen, child)` is the child's kernel over
//! `blocklen` children at the displacement. Sluice's interpreter moved such types at 0.5-0.6x of
//! Open MPI's engine in the shape sweep (docs/benchmarks.md); each block here runs a kernel.
//! The per-block cost is a kernel dispatch, paid per block of a node whose children are large
//! enough to hold many runs each.

use super::exec::{body, Entries};
use super::range::range_body;
use super::{compile_limited, Kernel, Limits, Tactics};
use crate::datatype::ir::{DataLoop, Kind};

/// Fewest stream bytes per block, on average, for the nested kernel: each block pays a kernel
/// dispatch (tens of ns), which blocks of a few bytes would not amortize (an indexed type of
/// 100,000 blocks of 1-2 bytes stays with the interpreter's run loop).
pub(super) const MIN_BYTES_PER_BLOCK: usize = 256;

/// The nested kernel of `dl`, when its blocks are large enough on average
/// (`limits.nested_block`, [`MIN_BYTES_PER_BLOCK`] but in tests) and every non-empty block's
/// child has a kernel (not the interpreter).
pub(super) fn nested(dl: &DataLoop, limits: Limits) -> Option<Kernel> {
    if dl.size < limits.nested_block.saturating_mul(dl.nblocks()) {
        return None;
    }
    let kernels = match &dl.kind {
        Kind::Bytes(_) => return None,
        Kind::Struct { children, blocklens, .. } => children
            .iter()
            .zip(blocklens)
            .map(|(c, &bl)| if bl == 0 || c.size == 0 { Some(Kernel::Interp) } else { kernel_of(c, limits) })
            .collect::<Option<Vec<_>>>()?,
        Kind::Contig { child, .. } | Kind::Vector { child, .. } | Kind::BlockIndexed { child, .. } | Kind::Indexed { child, .. } => {
            vec![kernel_of(child, limits)?]
        }
    };
    // A struct compiles each member apart, also members of one type: many members with large
    // tables would hold the same table many times (the MPI shares one description).
    let entries: usize = kernels.iter().map(Kernel::table_entries).sum();
    (entries <= TABLE_BUDGET.saturating_mul(limits.max_runs)).then_some(Kernel::Nested { kernels })
}

/// Table entries all the children's kernels may hold together, in offset tables' worth
/// ([`super::MAX_RUNS`] entries, 1 MiB of runs, each).
const TABLE_BUDGET: usize = 4;

fn kernel_of(c: &DataLoop, limits: Limits) -> Option<Kernel> {
    Some(compile_limited(c, limits)).filter(|k| !matches!(k, Kernel::Interp))
}

/// Block `i`'s kernel.
fn kernel(kernels: &[Kernel], i: usize) -> &Kernel {
    &kernels[if kernels.len() == 1 { 0 } else { i }]
}

/// Moves `count` whole elements; returns the buffer end.
///
/// # Safety
/// As [`Kernel::run`] for the nested kernel `kernels` of `dl`; the CPU runs `S`'s level.
#[inline(always)]
pub(super) unsafe fn run<S: Entries, const PACK: bool>(
    kernels: &[Kernel],
    dl: &DataLoop,
    mem: *mut u8,
    count: usize,
    buf: *mut u8,
    t: Tactics,
) {
    let mut q = buf;
    for k in 0..count {
        let base = mem.wrapping_offset((k as i64 * dl.extent) as isize);
        for i in 0..dl.nblocks() {
            let (d, bl, c) = dl.block(i);
            if bl == 0 || c.size == 0 {
                continue;
            }
            // SAFETY: block `i` of element `k` is `bl` children at `base + d`, their stream the
            // next `bl * c.size` buffer bytes (caller's contract); the child's kernel was
            // compiled from `c`.
            unsafe { body::<S, PACK>(kernel(kernels, i), c, base.wrapping_offset(d as isize), bl, q, t) };
            q = q.wrapping_add(bl * c.size);
        }
    }
}

/// Moves stream bytes `[first, last)` (`first < last`): block after block from the one that
/// holds `first`, whole blocks by their kernel, partial ones by its range.
///
/// # Safety
/// As [`Kernel::run_range`] for the nested kernel `kernels` of `dl`; the CPU runs `S`'s level.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn range<S: Entries, const PACK: bool>(
    kernels: &[Kernel],
    dl: &DataLoop,
    mem: *mut u8,
    first: usize,
    last: usize,
    buf: *mut u8,
    t: Tactics,
) {
    let mut k = first / dl.size;
    let (mut i, mut o) = dl.block_at(first % dl.size);
    let (mut left, mut q) = (last - first, buf);
    while left > 0 {
        if i == dl.nblocks() {
            (k, i, o) = (k + 1, 0, 0);
            continue;
        }
        let (d, bl, c) = dl.block(i);
        let bytes = bl * c.size;
        let n = (bytes - o).min(left);
        let p = mem.wrapping_offset((k as i64 * dl.extent + d) as isize);
        if n > 0 {
            // SAFETY: stream bytes `[o, o + n)` of block `i` of element `k`, inside the range
            // (caller's contract); the child's kernel was compiled from `c`.
            unsafe {
                if o == 0 && n == bytes {
                    body::<S, PACK>(kernel(kernels, i), c, p, bl, q, t);
                } else {
                    range_body::<S, PACK>(kernel(kernels, i), c, p, bl, o, o + n, q, t);
                }
            }
        }
        q = q.wrapping_add(n);
        left -= n;
        (i, o) = (i + 1, 0);
    }
}
