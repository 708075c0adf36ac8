//! Kernels against the interpreter, byte for byte, at every instruction-set level the CPU has.

use super::transpose::transposable;
use super::*;
use crate::datatype::normalize::normalize;
use crate::datatype::testgen::{arb_dl, span};
use proptest::prelude::*;

/// Offset tables of at most 3 runs, nested kernels over blocks of any size: small types reach
/// the nested kernel.
const SMALL: Limits = Limits { max_runs: 3, nested_block: 1 };

fn b(n: usize) -> DataLoop {
    DataLoop::bytes(n)
}

/// A buffer of `len` bytes of `fill` whose byte `origin` sits `skew` bytes past a 64-byte
/// boundary, so the paths that depend on line alignment (streaming stores) run:
/// `(storage, offset of byte 0)`.
fn line_aligned(len: usize, origin: usize, fill: u8, skew: usize) -> (Vec<u8>, usize) {
    let v = vec![fill; len + 128];
    let shift = v.as_ptr().wrapping_add(origin).align_offset(64) + skew;
    (v, shift)
}

/// Checks the kernel of `dl` against the interpreter for `count` elements, pack and unpack (with
/// both kinds of stores), at every instruction-set level this CPU runs (the portable one always).
fn check(dl: &DataLoop, count: usize) -> Result<(), TestCaseError> {
    let n = normalize(dl);
    check_kernel(&compile(&n), &n, count)
}

/// [`check`] for kernel `k` of the normalized type `n`.
fn check_kernel(k: &Kernel, n: &DataLoop, count: usize) -> Result<(), TestCaseError> {
    let (origin, len) = span(n, count);
    let total = n.size * count;
    let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    let mut want = vec![0u8; total];
    // SAFETY: `span` covers the typemap of `count` elements around `origin`; the output
    // holds the packed size.
    unsafe { interp::pack(n, count, src.as_ptr().add(origin), 0, total, &mut want) };
    let stream: Vec<u8> = (0..total).map(|i| (i * 13 + 1) as u8).collect();
    let mut a = vec![0xAAu8; len];
    // SAFETY: as above, for writing.
    unsafe { interp::unpack(n, count, a.as_mut_ptr().add(origin), 0, total, &stream) };
    for (isa, pf) in Isa::available().into_iter().flat_map(|i| Tuning::all().into_iter().map(move |p| (i, p))) {
        let mut got = vec![0u8; total];
        // SAFETY: as above; `isa` and `pf` are ones this CPU runs.
        unsafe { k.run::<true>(isa, Stores::Cached, pf, n, src.as_ptr().add(origin).cast_mut(), count, got.as_mut_ptr()) };
        prop_assert_eq!(&got, &want, "pack, kernel {:?}, {:?}, {:?}", k, isa, pf);
        // Line-aligned, and 16 bytes past a line as malloc places large arrays.
        for (stores, skew) in Stores::ALL.into_iter().flat_map(|s| [(s, 0), (s, 16)]) {
            let (mut bb, at) = line_aligned(len, origin, 0xAA, skew);
            // SAFETY: as above, for writing, at `at` in the larger buffer.
            unsafe { k.run::<false>(isa, stores, pf, n, bb.as_mut_ptr().add(at + origin), count, stream.as_ptr().cast_mut()) };
            prop_assert_eq!(&bb[at..at + len], &a[..], "unpack, kernel {:?}, {:?}, {:?}, {:?}, skew {}", k, isa, pf, stores, skew);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn kernels_match_interpreter(dl in arb_dl(), count in 0usize..5) {
        check(&dl, count)?;
    }
}

/// Checks the range kernel of `dl` for `count` elements cut at `cuts` (stream offsets, modulo the
/// stream's length + 1) against
/// the interpreter's whole pack and unpack, at every level: the packed pieces concatenate to
/// the whole stream, and unpacking the pieces in stream order leaves the memory a whole unpack
/// leaves (also when the typemap addresses a byte twice: later pieces come later, as there).
fn check_ranges(dl: &DataLoop, count: usize, cuts: &[usize]) -> Result<(), TestCaseError> {
    let n = normalize(dl);
    check_kernel_ranges(&compile(&n), &n, count, cuts)
}

/// [`check_ranges`] for kernel `k` of the normalized type `n`.
fn check_kernel_ranges(k: &Kernel, n: &DataLoop, count: usize, cuts: &[usize]) -> Result<(), TestCaseError> {
    let (origin, len) = span(n, count);
    let total = n.size * count;
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (total + 1)).chain([0, total]).collect();
    at.sort_unstable();
    let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    let mut want = vec![0u8; total];
    // SAFETY: `span` covers the typemap of `count` elements around `origin`; the output holds
    // the packed size.
    unsafe { interp::pack(n, count, src.as_ptr().add(origin), 0, total, &mut want) };
    let stream: Vec<u8> = (0..total).map(|i| (i * 13 + 1) as u8).collect();
    let mut unpacked = vec![0xAAu8; len];
    // SAFETY: as above, for writing.
    unsafe { interp::unpack(n, count, unpacked.as_mut_ptr().add(origin), 0, total, &stream) };
    // Each combination of level and stores runs one of the tunings (prefetch policy and block
    // copy, in turn over the combinations); the whole-element checks run every combination.
    let pfs = Tuning::all();
    for (c, (isa, stores)) in Isa::available().into_iter().flat_map(|i| Stores::ALL.map(|s| (i, s))).enumerate() {
        let pf = pfs[c % pfs.len()];
        let mut got = vec![0u8; total];
        let (mut mem, m0) = line_aligned(len, origin, 0xAA, 0);
        for w in at.windows(2) {
            let (a, b) = (w[0], w[1]);
            // SAFETY: as above (memory at `m0` in the larger buffer); `[a, b)` is inside the
            // stream and `got[a..]`/`stream[a..]` hold its bytes; `isa` is one this CPU runs.
            unsafe {
                k.run_range::<true>(isa, stores, pf, n, src.as_ptr().add(origin).cast_mut(), count, a, b, got.as_mut_ptr().add(a));
                k.run_range::<false>(isa, stores, pf, n, mem.as_mut_ptr().add(m0 + origin), count, a, b, stream.as_ptr().add(a).cast_mut());
            }
        }
        prop_assert_eq!(&got, &want, "pack ranges {:?}, kernel {:?}, {:?}, {:?}", at, k, isa, pf);
        prop_assert_eq!(&mem[m0..m0 + len], &unpacked[..], "unpack ranges {:?}, kernel {:?}, {:?}, {:?}, {:?}", at, k, isa, pf, stores);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The nested kernel, reached with offset tables of at most 3 runs: whole elements and
    /// ranges against the interpreter.
    #[test]
    fn nested_kernels_match_interpreter(dl in arb_dl(), count in 0usize..4, cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let n = normalize(&dl);
        let k = compile_limited(&n, SMALL);
        check_kernel(&k, &n, count)?;
        check_kernel_ranges(&k, &n, count, &cuts)?;
    }

    #[test]
    fn ranges_match_whole(dl in arb_dl(), count in 0usize..5, cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        check_ranges(&dl, count, &cuts)?;
    }

    /// Ranges of the suite's regular shapes at sizes where partial rows, whole rows and whole
    /// planes all occur, cut at random (prime-ish sizes keep cuts off block boundaries).
    #[test]
    fn ranges_of_nests(
        blk in prop_oneof![Just(1usize), Just(8), Just(24), Just(40), 1usize..70],
        rows in 1usize..9,
        cols in 1usize..9,
        count in 1usize..4,
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let row = DataLoop::vector(cols, 1, blk as i64 + 3, b(blk));
        let plane = DataLoop::vector(rows, 1, (cols * (blk + 3)) as i64 + 5, row.clone());
        check_ranges(&DataLoop::contig(3, plane.clone()), count, &cuts)?;
        check_ranges(&DataLoop::block_indexed(2, vec![0, -4000, 9000], row), count, &cuts)?;
        check_ranges(&plane.resized(0, 7), count, &cuts)?;
    }
}

/// A nest too deep to merge the element loop into ([`Strided::for_count`] gives `None`; compile
/// leaves room for it, so only a hand-made kernel has one) runs ranges with the element loop
/// prepended.
#[test]
fn ranges_of_the_deepest_nest() {
    let mut dl = b(3);
    for l in 0..7 {
        // Padded copies: one loop level each.
        dl = DataLoop::contig(2, dl.resized(0, 7 * (1 << (3 * l)) + 1));
    }
    let dl = dl.clone().resized(0, dl.extent + 5);
    let n = normalize(&dl);
    let k = compile(&n);
    let Kernel::Strided(mut s) = k else { panic!("expected a strided kernel, got {k:?}") };
    assert_eq!(s.levels().len(), 7);
    // A one-iteration level changes no address and fills the nest.
    assert!(s.push_outer(Level { count: 1, stride: 0 }));
    assert!(s.for_count(3, n.extent).is_none());
    let cuts: Vec<usize> = (1..40).map(|i| i * 0x9e37_79b9).collect();
    for count in [1, 3] {
        check_kernel_ranges(&Kernel::Strided(s), &n, count, &cuts).unwrap();
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
    let Kernel::Strided(s) = kernel_of(&DataLoop::vector(4, 1, 16 * 32, DataLoop::vector(16, 1, 32, b(8)))) else { panic!() };
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
    assert_eq!(k, Kernel::SmallRuns { moves: vec![(2, 0, 0), (3, 8, 4), (3, 13, 9)], runs: vec![(0, 4), (8, 13)] });
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
        for count in [1, 7, 8, 63, 64, 65, 200] {
            check(&dl, count).unwrap();
        }
    }
    // Elements that overlap keep the ordered table.
    let tight = DataLoop::structure(vec![1, 1], vec![0, 8], vec![b(4), b(2)]).resized(0, 6);
    assert_eq!(kernel_of(&tight).name(), "indexed");
    check(&tight, 100).unwrap();
    // Many scattered ints (26 runs): small runs while a tile of 64 elements spans <= 32 KiB,
    // the ordered table when the elements are far apart.
    let lens: Vec<usize> = (0..26).map(|i| 1 + i % 3).collect();
    let displs = lens.iter().scan(0, |at, &l| {
        let d = *at;
        *at += 4 * (l as i64 + 1);
        Some(d)
    });
    let ints = DataLoop::indexed(lens.clone(), displs.collect(), b(4));
    assert_eq!(kernel_of(&ints).name(), "small-runs");
    let far = ints.clone().resized(0, 4096);
    assert_eq!(kernel_of(&far).name(), "indexed");
    for dl in [ints, far] {
        for count in [1, 64, 130] {
            check(&dl, count).unwrap();
        }
    }
}

/// Sparse rows (8-byte blocks 512 bytes apart, like a grid's x-face), which unpack loading each
/// block first and, once their lines outgrow L2, prefetch ahead: forward, backward, with blocks
/// that straddle a line, whole and in ranges.
#[test]
fn sparse_rows_load_before_they_store() {
    for dl in [DataLoop::vector(40_000, 1, 512, b(8)), DataLoop::vector(3000, 1, -520, b(12)), DataLoop::vector(300, 3, 200, b(20))] {
        check(&dl, 1).unwrap();
        check_ranges(&dl, 2, &[5, 4096, 77_777]).unwrap();
    }
}

/// The random types of `nested_kernels_match_interpreter` do reach the nested kernel.
#[test]
fn random_types_reach_the_nested_kernel() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_dl();
    let n = 2000;
    let nested = (0..n)
        .filter(|_| compile_limited(&normalize(&strategy.new_tree(&mut runner).unwrap().current()), SMALL).name() == "nested")
        .count();
    assert!(nested * 10 >= n, "{nested} of {n}");
}

/// Types with more runs per element than an offset table holds get the nested kernel when
/// their top node's children have kernels: a struct of two sparse vectors (p2p_interp.c's), a
/// vector of such structs, an indexed type of small-run structs; whole and in ranges.
#[test]
fn nested_kernel_for_large_elements() {
    let pair = DataLoop::structure(
        vec![1, 1],
        vec![0, 200_000],
        vec![DataLoop::vector(100_000, 1, 2, b(1)), DataLoop::vector(100_000, 1, 4, b(2))],
    );
    let n = normalize(&pair);
    assert_eq!(compile(&n).name(), "nested");
    check(&pair, 1).unwrap();
    check_ranges(&pair, 2, &[1, 99_999, 100_001, 250_000]).unwrap();
    // 100,000 blocks of 1-2 bytes: a dispatch per block would cost more than the
    // interpreter's run loop.
    let tiny = DataLoop::indexed((0..100_000).map(|i| 1 + i % 2).collect(), (0..100_000).map(|i| 3 * i as i64).collect(), b(1));
    assert_eq!(compile(&normalize(&tiny)).name(), "interp");
    // A struct whose members alternate an irregular type (40,000 runs) and a double: each
    // member compiles apart, and 8 copies of the table would exceed the budget (4 tables of
    // MAX_RUNS entries), so the interpreter serves it; 3 copies fit.
    let lens: Vec<usize> = (0..40_000).map(|i| 1 + (i * i) % 7).collect();
    let displs = lens.iter().enumerate().scan(0i64, |at, (i, &l)| {
        let d = *at;
        *at += (l + 1 + i % 3) as i64;
        Some(d)
    });
    let member = DataLoop::indexed(lens.clone(), displs.collect(), b(1));
    let members = |n: usize| {
        let at = (0..2 * n).map(|i| i as i64 * 300_000).collect();
        let kids = (0..2 * n).map(|i| if i % 2 == 0 { member.clone() } else { b(8) }).collect();
        DataLoop::structure(vec![1; 2 * n], at, kids)
    };
    assert_eq!(compile(&normalize(&members(8))).name(), "interp");
    assert_eq!(compile(&normalize(&members(3))).name(), "nested");
    check(&members(3), 1).unwrap();
    // Small ones, with tables of at most 3 runs.
    let mix = DataLoop::structure(vec![1, 1, 3], vec![0, 8, 16], vec![b(4), b(8), b(1)]).resized(0, 24);
    for dl in [
        DataLoop::vector(5, 2, 200, mix.clone()),
        DataLoop::indexed(vec![2, 0, 3], vec![-100, 0, 400], mix.clone()),
        DataLoop::structure(vec![2, 1], vec![0, 300], vec![mix.clone(), DataLoop::vector(4, 1, 16, b(8))]),
        DataLoop::vector(3, 1, -500, DataLoop::indexed(vec![2, 1], vec![0, 100], mix)),
    ] {
        let n = normalize(&dl);
        let k = compile_limited(&n, SMALL);
        assert_eq!(k.name(), "nested", "{dl:?}");
        for count in [1, 2, 5] {
            check_kernel(&k, &n, count).unwrap();
            check_kernel_ranges(&k, &n, count, &[3, 50, 777, 1234]).unwrap();
        }
    }
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

/// Rows of 16-byte blocks (the split loops of `split.rs`, both directions): strides below and
/// around the prefetching ones, negative, overlapping (unpack: last wins), inside a nest and an
/// offset table, and a row that starts and ends mid-count (element loop merged).
#[test]
fn rows_of_16_byte_blocks() {
    for stride in [-127i64, -48, -32, -17, -16, -8, 0, 8, 17, 24, 32, 40, 64, 100, 127, 128, 200] {
        let row = DataLoop::vector(37, 1, stride, b(16));
        if stride.abs() > 16 {
            let Kernel::Strided(s) = kernel_of(&row) else { panic!("{stride}: not strided") };
            assert_eq!(s.block, 16, "{stride}");
        }
        for count in [0, 1, 2, 5] {
            check(&row, count).unwrap();
            check(&DataLoop::vector(3, 1, 4096 + stride, row.clone()), count).unwrap();
            check(&DataLoop::block_indexed(1, vec![-300, 0, 999], row.clone()), count).unwrap();
        }
    }
    // vec-2 of the suite, at a smaller count: 2 doubles every 4.
    check(&DataLoop::vector(1 << 12, 2, 32, b(8)), 3).unwrap();
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
    let s2 = Strided {
        lv: [
            Level { count: 65, stride: 16 },
            Level { count: 64, stride: 1024 },
            Level::default(),
            Level::default(),
            Level::default(),
            Level::default(),
            Level::default(),
            Level::default(),
        ],
        depth: 2,
        off: 0,
        block: 16,
    };
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Columns of a two-column matrix of 8-byte values (the paired pack path, `split.rs`),
    /// alone, as the inner level of a nested vector and resized, over pair boundaries.
    #[test]
    fn alternate_8_matches_interpreter(n in 0usize..70, outer in 1usize..4, gap in 0i64..3, count in 0usize..3) {
        let col = DataLoop::vector(n, 1, 16, b(8));
        check(&col, count)?;
        let nested = DataLoop::vector(outer, 1, (n as i64 + gap) * 16, DataLoop::vector(n, 1, 16, b(8)));
        check(&nested, count)?;
        check(&DataLoop::vector(n, 1, 2, DataLoop::contig(1, b(8)).resized(0, 8)), count)?;
    }
}

/// The paired pack path never reads past the last block: the column ends at a page followed by
/// an inaccessible one (a read there would fault).
#[test]
fn alternate_8_stays_inside_the_typemap() {
    const PAGE: usize = 4096;
    // SAFETY: a fresh anonymous mapping of two pages, the second then made inaccessible; both
    // calls are checked and the mapping is unmapped at the end.
    let base = unsafe {
        let p =
            libc::mmap(std::ptr::null_mut(), 2 * PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::mprotect(p.cast::<u8>().add(PAGE).cast(), PAGE, libc::PROT_NONE), 0);
        p.cast::<u8>()
    };
    for n in [9usize, 16, 17, 64, 255] {
        let dl = DataLoop::vector(n, 1, 16, b(8));
        let nd = normalize(&dl);
        let k = compile(&nd);
        // The last block is the page's last 8 bytes.
        let start = PAGE - 8 - 16 * (n - 1);
        // SAFETY: the column lies in the first (accessible) page.
        let mem = unsafe { base.add(start) };
        for i in 0..PAGE - start {
            // SAFETY: inside the first page.
            unsafe { *mem.add(i) = i as u8 };
        }
        let mut want = vec![0u8; 8 * n];
        // SAFETY: the typemap of one element is inside the first page; `want` holds its size.
        unsafe { interp::pack(&dl, 1, mem, 0, 8 * n, &mut want) };
        for isa in Isa::available() {
            let mut got = vec![0u8; 8 * n];
            // SAFETY: as above; `isa` runs on this CPU.
            unsafe { k.run::<true>(isa, Stores::Cached, Tuning::host(), &nd, mem, 1, got.as_mut_ptr()) };
            assert_eq!(got, want, "n {n}, {isa:?}");
        }
    }
    // SAFETY: the mapping made above, no longer used.
    assert_eq!(unsafe { libc::munmap(base.cast(), 2 * PAGE) }, 0);
}

/// Rows on every prefetch path of every policy ([`super::prefetch`]): sparse and dense rows
/// of 128 B-4 KiB strides, small and large blocks (inside and outside the inline block copy's
/// sizes), far rows that write more and less than 256 KiB, forward and backward, alone and as
/// the inner row of a nest, and offset tables; checked under every tuning by [`check`].
#[test]
fn prefetched_rows() {
    for (count, stride, block) in [
        (200usize, 512i64, 8usize),
        (200, -512, 8),
        (120, 320, 40),
        (100, 128, 64),
        (100, -160, 100),
        (64, 1024, 512),
        (600, 4100, 480),
        (600, -4160, 480),
        (40, 8192, 300),
        (70, 131072, 4096),
        (40, 1024, 512),
        (40, -6144, 384),
        (20, 4096, 2048),
        (20, 2200, 2112),
        (30, 200, 128),
    ] {
        let row = DataLoop::vector(count, 1, stride, b(block));
        let Kernel::Strided(s) = kernel_of(&row) else { panic!("{stride}: not strided") };
        assert_eq!((s.block, s.levels().len()), (block, 1), "{count} x {block} B, {stride} apart");
        for n in [1, 2] {
            check(&row, n).unwrap();
        }
        check(&DataLoop::vector(2, 1, count as i64 * stride.abs() + 64, row), 1).unwrap();
    }
    // Offset tables (lammps, specfem): irregular, increasing and not, some overlapping (unpack:
    // last wins), longer and shorter than the prefetch distance.
    for (n, block) in [(100usize, 24usize), (100, 12), (40, 100), (33, 8), (20, 24), (40, 192), (40, 256)] {
        let displs: Vec<i64> = (0..n as i64).map(|i| (i * 37 * 11) % 2000 - 300 + (i % 3) * 5).collect();
        let table = DataLoop::block_indexed(1, displs, b(block));
        let Kernel::BlockIndexed { inner, .. } = kernel_of(&table) else { panic!("{n} x {block} B: not block-indexed") };
        assert!(inner.levels().is_empty(), "{n} x {block} B");
        for count in [1, 2] {
            check(&table, count).unwrap();
        }
    }
}

#[test]
fn every_level_is_tested() {
    let levels = Isa::available();
    assert_eq!(levels[0], Isa::Portable);
    assert!(levels.contains(&Isa::host()));
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        assert!(levels.contains(&Isa::Avx2));
    }
}
