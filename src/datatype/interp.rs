//! The general dataloop interpreter: packs or unpacks any byte range `[first, last)` of the
//! packed stream of `count` elements, in MPI's typemap order.
//!
//! A [`Segment`] remembers where in the stream it stands. Positioning it elsewhere ("catch-up")
//! costs no copying: the walk descends from the root and skips whole blocks and copies by size
//! arithmetic: division for contig/vector/block-indexed levels, a binary search over the cached
//! prefix sums of block sizes for indexed/struct levels ([`DataLoop::block_at`]), so a seek is
//! O(depth · log n). The loop-state stack is the recursion of [`walk`].

use super::ir::DataLoop;

/// Emits, in stream order, the memory runs `(offset, len)` (offset relative to the element's
/// origin `base`) holding stream bytes `[skip, skip + *budget)` of one element of `dl`; lowers
/// `budget` by what it emitted.
fn walk(dl: &DataLoop, base: i64, skip: usize, budget: &mut usize, emit: &mut impl FnMut(i64, usize)) {
    if *budget == 0 || skip >= dl.size {
        return;
    }
    if dl.contiguous {
        let len = (dl.size - skip).min(*budget);
        emit(base + dl.true_lb + skip as i64, len);
        *budget -= len;
        return;
    }
    let (mut i, mut skip) = dl.block_at(skip);
    while i < dl.nblocks() && *budget > 0 {
        let (d, bl, c) = dl.block(i);
        if DataLoop::block_contiguous(bl, c) {
            let len = (bl * c.size - skip).min(*budget);
            emit(base + d + c.true_lb + skip as i64, len);
            *budget -= len;
        } else if let Some(j0) = skip.checked_div(c.size) {
            for j in j0..bl {
                let s = if j == j0 { skip % c.size } else { 0 };
                walk(c, base + d + j as i64 * c.extent, s, budget, emit);
                if *budget == 0 {
                    return;
                }
            }
        }
        skip = 0;
        i += 1;
    }
}

/// Emits the memory runs of stream bytes `[first, last)` of `count` elements; element `k`'s
/// origin is `k * extent`.
pub fn for_each_run(dl: &DataLoop, count: usize, first: usize, last: usize, mut emit: impl FnMut(i64, usize)) {
    let total = dl.size * count;
    assert!(first <= last && last <= total, "range [{first}, {last}) outside the stream of {total} bytes");
    if first == last {
        return;
    }
    let mut budget = last - first;
    let mut k = first / dl.size;
    let mut skip = first % dl.size;
    while budget > 0 {
        walk(dl, k as i64 * dl.extent, skip, &mut budget, &mut emit);
        skip = 0;
        k += 1;
    }
}

/// The only places the interpreter touches memory through a raw pointer. `mem` is the user's
/// buffer pointer: MPI datatypes address bytes at signed displacements from it, possibly before
/// it, so no slice can describe them.
///
/// # Safety
/// `mem + off .. mem + off + dst.len()` must be readable and must not overlap `dst`.
#[inline]
unsafe fn read_run(mem: *const u8, off: i64, dst: &mut [u8]) {
    // SAFETY: the caller guarantees the run is inside the allocation `mem` points into (so
    // `off` fits in isize) and does not overlap `dst`.
    unsafe { std::ptr::copy_nonoverlapping(mem.offset(off as isize), dst.as_mut_ptr(), dst.len()) }
}

/// # Safety
/// `mem + off .. mem + off + src.len()` must be writable and must not overlap `src`.
#[inline]
unsafe fn write_run(mem: *mut u8, off: i64, src: &[u8]) {
    // SAFETY: as in `read_run`, for writing.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), mem.offset(off as isize), src.len()) }
}

/// Packs stream bytes `[first, last)` of `count` elements at `src` into `out[..last - first]`.
///
/// # Safety
/// Every byte the typemap of the `count` elements addresses relative to `src` must be readable,
/// and must not overlap `out`.
pub unsafe fn pack(dl: &DataLoop, count: usize, src: *const u8, first: usize, last: usize, out: &mut [u8]) {
    assert!(out.len() >= last - first, "output too short");
    let mut at = 0;
    for_each_run(dl, count, first, last, |off, len| {
        // SAFETY: the run is part of the typemap (caller's contract).
        unsafe { read_run(src, off, &mut out[at..at + len]) };
        at += len;
    });
}

/// Unpacks `input[..last - first]`, stream bytes `[first, last)`, into `count` elements at `dst`.
///
/// # Safety
/// Every byte the typemap of the `count` elements addresses relative to `dst` must be writable,
/// and must not overlap `input`.
pub unsafe fn unpack(dl: &DataLoop, count: usize, dst: *mut u8, first: usize, last: usize, input: &[u8]) {
    assert!(input.len() >= last - first, "input too short");
    let mut at = 0;
    for_each_run(dl, count, first, last, |off, len| {
        // SAFETY: the run is part of the typemap (caller's contract).
        unsafe { write_run(dst, off, &input[at..at + len]) };
        at += len;
    });
}

/// A position in the packed stream of `count` elements of `dl`, for piecewise processing.
pub struct Segment<'a> {
    dl: &'a DataLoop,
    count: usize,
    pos: usize,
}

impl<'a> Segment<'a> {
    pub fn new(dl: &'a DataLoop, count: usize) -> Self {
        Segment { dl, count, pos: 0 }
    }

    /// Total packed bytes.
    pub fn len(&self) -> usize {
        self.dl.size * self.count
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Current stream position.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to stream byte `pos` (catch-up is recomputed from the root on the next call).
    pub fn seek(&mut self, pos: usize) {
        assert!(pos <= self.len());
        self.pos = pos;
    }

    /// Packs the next `out.len()` bytes (fewer at the end); returns how many.
    ///
    /// # Safety
    /// As [`pack`].
    pub unsafe fn pack_next(&mut self, src: *const u8, out: &mut [u8]) -> usize {
        let last = (self.pos + out.len()).min(self.len());
        // SAFETY: forwarded contract.
        unsafe { pack(self.dl, self.count, src, self.pos, last, out) };
        let n = last - self.pos;
        self.pos = last;
        n
    }

    /// Unpacks the next `input.len()` bytes (fewer at the end); returns how many.
    ///
    /// # Safety
    /// As [`unpack`].
    pub unsafe fn unpack_next(&mut self, dst: *mut u8, input: &[u8]) -> usize {
        let last = (self.pos + input.len()).min(self.len());
        // SAFETY: forwarded contract.
        unsafe { unpack(self.dl, self.count, dst, self.pos, last, input) };
        let n = last - self.pos;
        self.pos = last;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::ir::Kind;
    use crate::datatype::normalize::normalize;
    use crate::datatype::testgen::{arb_dl, span};
    use proptest::prelude::*;

    fn whole(dl: &DataLoop, count: usize, src: &[u8], origin: usize) -> Vec<u8> {
        let mut out = vec![0; dl.size * count];
        // SAFETY: `span` sized `src` to cover the typemap around `origin`.
        unsafe { pack(dl, count, src.as_ptr().add(origin), 0, out.len(), &mut out) };
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn pieces_match_whole(dl in arb_dl(), count in 0usize..4, cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4)) {
            let (origin, len) = span(&dl, count);
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let full = whole(&dl, count, &src, origin);
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(full.len() + 1)).collect();
            at.push(0);
            at.push(full.len());
            at.sort();
            let mut seg = Segment::new(&dl, count);
            let mut got = vec![0; full.len()];
            // Pieces in reverse order exercise catch-up from the start.
            for w in at.windows(2).rev() {
                seg.seek(w[0]);
                // SAFETY: as in `whole`.
                unsafe { seg.pack_next(src.as_ptr().add(origin), &mut got[w[0]..w[1]]) };
            }
            prop_assert_eq!(&got, &full);
            // Normalization must not change the stream.
            let n = normalize(&dl);
            prop_assert_eq!((n.size, n.lb, n.extent), (dl.size, dl.lb, dl.extent));
            prop_assert_eq!(whole(&n, count, &src, origin), full.clone());
            // Unpack restores the selected bytes: re-packing gives the stream back, unless the
            // typemap addresses a byte twice (then the later entry wins).
            let mut runs = vec![];
            for_each_run(&dl, count, 0, full.len(), |o, l| runs.push((o, o + l as i64)));
            runs.sort();
            if runs.windows(2).all(|w| w[0].1 <= w[1].0) {
                let mut dst = vec![0u8; len];
                // SAFETY: as in `whole`.
                unsafe { unpack(&dl, count, dst.as_mut_ptr().add(origin), 0, full.len(), &full) };
                prop_assert_eq!(whole(&dl, count, &dst, origin), full);
            }
        }
    }

    /// The catch-up scan that [`DataLoop::block_at`] replaces: block by block from the start.
    fn block_at_linear(dl: &DataLoop, skip: usize) -> (usize, usize) {
        let mut skip = skip;
        for i in 0..dl.nblocks() {
            let (_, bl, c) = dl.block(i);
            if skip < bl * c.size {
                return (i, skip);
            }
            skip -= bl * c.size;
        }
        (dl.nblocks(), 0)
    }

    /// Checks `block_at` against the linear scan for every stream offset of every non-leaf node.
    fn check_seek(dl: &DataLoop) -> Result<(), TestCaseError> {
        if matches!(dl.kind, Kind::Bytes(_)) {
            return Ok(());
        }
        for skip in 0..=dl.size {
            prop_assert_eq!(dl.block_at(skip), block_at_linear(dl, skip), "skip {} in {:?}", skip, dl);
        }
        for i in 0..dl.nblocks() {
            check_seek(dl.block(i).2)?;
        }
        Ok(())
    }

    /// The memory offset of every stream byte `[first, last)`, one per byte.
    fn byte_offsets(dl: &DataLoop, count: usize, first: usize, last: usize) -> Vec<i64> {
        let mut v = vec![];
        for_each_run(dl, count, first, last, |o, l| v.extend(o..o + l as i64));
        v
    }

    /// Large indexed and struct levels (hundreds of blocks, empty ones included).
    fn arb_wide() -> impl Strategy<Value = DataLoop> {
        let child = prop_oneof![(1usize..9).prop_map(DataLoop::bytes), Just(DataLoop::vector(2, 1, 16, DataLoop::bytes(4)))];
        prop_oneof![
            (prop::collection::vec((0usize..4, -4096i64..4096), 0..400), child.clone()).prop_map(|(v, c)| {
                let (b, d) = v.into_iter().unzip();
                DataLoop::indexed(b, d, c)
            }),
            prop::collection::vec((0usize..3, -4096i64..4096, child), 0..300).prop_map(crate::datatype::testgen::structure_of),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn seek_matches_linear_scan(dl in prop_oneof![arb_dl(), arb_wide()]) {
            check_seek(&dl)?;
        }

        #[test]
        fn ranges_match_whole_walk(
            dl in prop_oneof![arb_dl(), arb_wide()],
            count in 0usize..4,
            a in any::<prop::sample::Index>(),
            b in any::<prop::sample::Index>(),
        ) {
            let total = dl.size * count;
            let all = byte_offsets(&dl, count, 0, total);
            let (a, b) = (a.index(total + 1), b.index(total + 1));
            let (a, b) = (a.min(b), a.max(b));
            prop_assert_eq!(byte_offsets(&dl, count, a, b), &all[a..b]);
        }
    }

    #[test]
    fn seek_in_wide_indexed() {
        let n = 100_000;
        let dl = DataLoop::indexed((0..n).map(|i| i % 3).collect(), (0..n as i64).map(|i| 8 * i).collect(), DataLoop::bytes(2));
        // Blocks of 0, 2 and 4 bytes repeat: 6 stream bytes per 3 blocks.
        assert_eq!(dl.block_at(0), (1, 0));
        assert_eq!(dl.block_at(5), (2, 3));
        assert_eq!(dl.block_at(6 * 1000 + 2), (3002, 0));
        assert_eq!(dl.block_at(dl.size), (n, 0));
    }

    #[test]
    fn vector_pack_and_unpack() {
        let dl = DataLoop::vector(3, 2, 8, DataLoop::bytes(2));
        let src: Vec<u8> = (0..24).collect();
        let out = whole(&dl, 1, &src, 0);
        assert_eq!(out, [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19]);
        let mut dst = [0u8; 24];
        // SAFETY: dst covers the 20-byte true extent.
        unsafe { unpack(&dl, 1, dst.as_mut_ptr(), 4, 12, &out[4..]) };
        assert_eq!(&dst[8..20], &[8, 9, 10, 11, 0, 0, 0, 0, 16, 17, 18, 19]);
    }
}
