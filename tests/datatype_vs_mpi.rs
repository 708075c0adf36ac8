//! The datatype engine against the real MPI in one singleton process: random nested datatypes
//! and the ddt-suite constructions are built with PMPI constructors, decoded, and packed /
//! unpacked by sluice and by PMPI_Pack / PMPI_Unpack; the bytes must be identical.

use std::ffi::c_int;
use std::ptr::null_mut;

use sluice::datatype::{compiled::CompiledType, decode::decode, interp, normalize::normalize, DataLoop};
use sluice::ffi::consts as k;
use sluice::ffi::mpi::{self, MPI_Aint, MPI_Datatype};

/// splitmix64: a tiny seeded generator, so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
}

fn ok(rc: c_int) {
    assert_eq!(rc, mpi::MPI_SUCCESS as c_int, "MPI call failed");
}

fn extent(t: MPI_Datatype) -> (i64, i64) {
    let (mut lb, mut ext): (MPI_Aint, MPI_Aint) = (0, 0);
    // SAFETY: valid handle, local outputs.
    ok(unsafe { mpi::PMPI_Type_get_extent(t, &mut lb, &mut ext) });
    (lb as i64, ext as i64)
}

fn is_named(t: MPI_Datatype) -> bool {
    let (mut a, mut b, mut c, mut comb) = (0, 0, 0, 0);
    // SAFETY: valid handle, local outputs.
    ok(unsafe { mpi::PMPI_Type_get_envelope(t, &mut a, &mut b, &mut c, &mut comb) });
    comb == mpi::SLUICE_COMBINER_NAMED as c_int
}

fn free(mut t: MPI_Datatype) {
    if !is_named(t) {
        // SAFETY: a derived type this test created.
        ok(unsafe { mpi::PMPI_Type_free(&mut t) });
    }
}

/// Runs one PMPI constructor writing into a fresh handle.
fn make(f: impl FnOnce(*mut MPI_Datatype) -> c_int) -> MPI_Datatype {
    let mut t = k::datatype_null();
    ok(f(&mut t));
    t
}

fn basic(r: &mut Rng) -> MPI_Datatype {
    let all = [k::byte(), k::int(), k::double(), k::float(), k::char(), k::short(), k::double_int(), k::short_int(), k::long_double_int()];
    all[r.range(0, all.len() as i64) as usize]
}

/// A random datatype of nesting `depth`, non-negative displacements, no overlapping bytes.
fn random_type(r: &mut Rng, depth: u32) -> MPI_Datatype {
    if depth == 0 || r.range(0, 6) == 0 {
        return basic(r);
    }
    let c = random_type(r, depth - 1);
    let (_, ext) = extent(c);
    let n = r.range(1, 4) as c_int;
    let bl = r.range(1, 3) as c_int;
    // SAFETY (all constructors below): arrays outlive the call and have `n` entries.
    let t = match r.range(0, 11) {
        0 => make(|o| unsafe { mpi::PMPI_Type_contiguous(n, c, o) }),
        1 => make(|o| unsafe { mpi::PMPI_Type_vector(n, bl, bl + r.range(0, 3) as c_int, c, o) }),
        2 => make(|o| unsafe { mpi::PMPI_Type_create_hvector(n, bl, (bl as i64 * ext + r.range(0, 9)) as MPI_Aint, c, o) }),
        3 | 4 => {
            let bls: Vec<c_int> = (0..n).map(|_| r.range(0, 3) as c_int).collect();
            let mut at = 0i64;
            let mut ds = vec![];
            for &b in &bls {
                at += r.range(0, 3);
                ds.push(at);
                at += b as i64;
            }
            if r.range(0, 2) == 0 {
                let ds: Vec<c_int> = ds.iter().map(|&d| d as c_int).collect();
                make(|o| unsafe { mpi::PMPI_Type_indexed(n, bls.as_ptr(), ds.as_ptr(), c, o) })
            } else {
                let ds: Vec<MPI_Aint> = ds.iter().map(|&d| (d * ext + r.range(0, 3)) as MPI_Aint).collect();
                let ds: Vec<MPI_Aint> = ds.iter().enumerate().map(|(i, &d)| d + i as MPI_Aint * 3).collect();
                make(|o| unsafe { mpi::PMPI_Type_create_hindexed(n, bls.as_ptr(), ds.as_ptr(), c, o) })
            }
        }
        5 => {
            let ds: Vec<c_int> = (0..n).map(|i| i * (bl + 1)).collect();
            make(|o| unsafe { mpi::PMPI_Type_create_indexed_block(n, bl, ds.as_ptr(), c, o) })
        }
        6 => {
            let ds: Vec<MPI_Aint> = (0..n).map(|i| (i as i64 * (bl as i64 * ext + 5)) as MPI_Aint).collect();
            make(|o| unsafe { mpi::PMPI_Type_create_hindexed_block(n, bl, ds.as_ptr(), c, o) })
        }
        7 => {
            let mut types = vec![c];
            for _ in 1..n {
                types.push(random_type(r, depth - 1));
            }
            let bls: Vec<c_int> = (0..n).map(|_| r.range(1, 3) as c_int).collect();
            let mut at = r.range(0, 8);
            let mut ds = vec![];
            for (i, &t) in types.iter().enumerate() {
                ds.push(at as MPI_Aint);
                at += bls[i] as i64 * extent(t).1 + r.range(0, 8);
            }
            let t = make(|o| unsafe { mpi::PMPI_Type_create_struct(n, bls.as_ptr(), ds.as_ptr(), types.as_ptr(), o) });
            for &x in &types[1..] {
                free(x);
            }
            t
        }
        8 => {
            let nd = r.range(1, 4) as usize;
            let sizes: Vec<c_int> = (0..nd).map(|_| r.range(1, 5) as c_int).collect();
            let subs: Vec<c_int> = sizes.iter().map(|&s| r.range(1, s as i64 + 1) as c_int).collect();
            let starts: Vec<c_int> = sizes.iter().zip(&subs).map(|(&s, &b)| r.range(0, (s - b) as i64 + 1) as c_int).collect();
            let order = if r.range(0, 2) == 0 { mpi::MPI_ORDER_C } else { mpi::MPI_ORDER_FORTRAN } as c_int;
            make(|o| unsafe {
                mpi::PMPI_Type_create_subarray(nd as c_int, sizes.as_ptr(), subs.as_ptr(), starts.as_ptr(), order, c, o)
            })
        }
        9 => {
            let (lb, e) = extent(c);
            make(|o| unsafe { mpi::PMPI_Type_create_resized(c, lb as MPI_Aint, (e + r.range(0, 16)) as MPI_Aint, o) })
        }
        _ => make(|o| unsafe { mpi::PMPI_Type_dup(c, o) }),
    };
    free(c);
    t
}

/// Origin offset and length of a buffer covering `count` elements of `dl`.
fn span(dl: &DataLoop, count: usize) -> (usize, usize) {
    let last = (count.max(1) as i64 - 1) * dl.extent;
    let lo = (dl.true_lb + last.min(0)).min(0);
    let hi = dl.true_ub + last.max(0);
    ((-lo) as usize, (hi - lo).max(0) as usize + 1)
}

/// Checks sluice against PMPI_Pack/PMPI_Unpack for `count` elements of committed type `t`.
fn compare(t: MPI_Datatype, count: usize, r: &mut Rng, what: &str) {
    let dl = decode(t).unwrap_or_else(|e| panic!("{what}: decode failed: {e:?}"));
    let (origin, len) = span(&dl, count);
    let src: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
    let total = dl.size * count;
    let mut want = vec![0u8; total];
    let mut pos: c_int = 0;
    // SAFETY: `src` covers the typemap around `origin`; `want` holds the packed size.
    ok(unsafe {
        mpi::PMPI_Pack(src.as_ptr().add(origin).cast(), count as c_int, t, want.as_mut_ptr().cast(), total as c_int, &mut pos, k::comm_self())
    });
    assert_eq!(pos as usize, total, "{what}: packed size");
    for (name, d) in [("decoded", dl.clone()), ("normalized", normalize(&dl))] {
        let mut got = vec![0u8; total];
        // SAFETY: as above.
        unsafe { interp::pack(&d, count, src.as_ptr().add(origin), 0, total, &mut got) };
        assert!(got == want, "{what}: {name} pack differs from PMPI_Pack\n{d:?}");
    }
    let ct = CompiledType::new(&dl);
    let mut got = vec![0u8; total];
    // SAFETY: as above.
    unsafe { ct.pack(src.as_ptr().add(origin), count, &mut got) };
    assert!(got == want, "{what}: CompiledType pack ({}) differs from PMPI_Pack\n{:?}", ct.kernel().name(), ct.dataloop());
    for _ in 0..3 {
        let a = r.range(0, total as i64 + 1) as usize;
        let b = r.range(a as i64, total as i64 + 1) as usize;
        let mut got = vec![0u8; b - a];
        // SAFETY: as above.
        unsafe { interp::pack(&dl, count, src.as_ptr().add(origin), a, b, &mut got) };
        assert!(got == want[a..b], "{what}: partial pack [{a}, {b})");
    }
    let mut mine = vec![0u8; len];
    let mut theirs = vec![0u8; len];
    let mut pos: c_int = 0;
    // SAFETY: as above, for writing.
    unsafe {
        interp::unpack(&dl, count, mine.as_mut_ptr().add(origin), 0, total, &want);
        ok(mpi::PMPI_Unpack(want.as_ptr().cast(), total as c_int, &mut pos, theirs.as_mut_ptr().add(origin).cast(), count as c_int, t, k::comm_self()));
    }
    assert!(mine == theirs, "{what}: unpack differs from PMPI_Unpack");
    let mut compiled = vec![0u8; len];
    // SAFETY: as above, for writing.
    unsafe { ct.unpack(&want, count, compiled.as_mut_ptr().add(origin)) };
    assert!(compiled == theirs, "{what}: CompiledType unpack ({}) differs from PMPI_Unpack", ct.kernel().name());
}

fn commit(mut t: MPI_Datatype) -> MPI_Datatype {
    // SAFETY: a datatype this test built.
    ok(unsafe { mpi::PMPI_Type_commit(&mut t) });
    t
}

fn random_cases(r: &mut Rng) {
    for case in 0..400 {
        let depth = r.range(1, 5) as u32;
        let t = commit(random_type(r, depth));
        let count = r.range(0, 4) as usize;
        compare(t, count, r, &format!("random case {case}"));
        free(t);
    }
}

/// The ddt-suite.md constructions, with the counts cut down where they only scale the test.
fn suite_cases(r: &mut Rng) {
    let d = k::double();
    let f = k::float();
    // SAFETY (constructors): arrays outlive the calls and have the given lengths.
    let vec = |n, b, s, t| make(|o| unsafe { mpi::PMPI_Type_vector(n, b, s, t, o) });
    let contig = |n, t| make(|o| unsafe { mpi::PMPI_Type_contiguous(n, t, o) });
    let sub = |sizes: [c_int; 3], subs: [c_int; 3], t| {
        make(|o| unsafe { mpi::PMPI_Type_create_subarray(3, sizes.as_ptr(), subs.as_ptr(), [0; 3].as_ptr(), mpi::MPI_ORDER_C as c_int, t, o) })
    };
    let mut cases: Vec<(&str, MPI_Datatype, usize)> = vec![
        ("contig", contig(1 << 19, d), 1),
        ("vec-1", vec(1 << 19, 1, 2, d), 1),
        ("vec-2", vec(1 << 18, 2, 4, d), 1),
        ("vec-8", vec(1 << 16, 8, 16, d), 1),
        ("vec-64", vec(1 << 13, 64, 128, d), 1),
        ("vec-256", vec(1 << 11, 256, 512, d), 1),
        ("face-x", sub([256, 256, 64], [256, 256, 1], d), 1),
        ("face-y", sub([256, 256, 64], [256, 1, 64], d), 1),
        ("face-z", sub([256, 256, 64], [1, 256, 64], d), 1),
    ];
    let lu = vec(4096, 5, 40, d);
    cases.push(("lu-5", contig(16, lu), 1));
    free(lu);
    let su3 = contig(6, f);
    let plane = vec(16 * 16, 16, 16 * 16, su3);
    cases.push(("milc", make(|o| unsafe { mpi::PMPI_Type_create_hvector(16, 1, 16 * 16 * 16 * 16 * 24, plane, o) }), 1));
    free(plane);
    free(su3);
    let field = sub([64, 64, 40], [64, 3, 40], f);
    let bls = [1 as c_int; 4];
    let ds: Vec<MPI_Aint> = (0..4).map(|i| i * 64 * 64 * 40 * 4).collect();
    cases.push(("wrf", make(|o| unsafe { mpi::PMPI_Type_create_struct(4, bls.as_ptr(), ds.as_ptr(), [field; 4].as_ptr(), o) }), 2));
    free(field);
    let col = vec(1024, 1, 1024, k::c_double_complex());
    cases.push(("fft-t", make(|o| unsafe { mpi::PMPI_Type_create_resized(col, 0, 16, o) }), 64));
    free(col);
    let mut at = 0;
    let ds: Vec<MPI_Aint> = (0..1 << 15)
        .map(|_| {
            at += r.range(24, 97) as MPI_Aint + 24;
            at
        })
        .collect();
    cases.push(("lammps", make(|o| unsafe { mpi::PMPI_Type_create_hindexed(1 << 15, [3; 1 << 15].as_ptr(), ds.as_ptr(), d, o) }), 1));
    let mut at = 0;
    let ds: Vec<c_int> = (0..1 << 17)
        .map(|_| {
            at += r.range(3, 13) as c_int + 3;
            at
        })
        .collect();
    cases.push(("specfem", make(|o| unsafe { mpi::PMPI_Type_create_indexed_block(1 << 17, 3, ds.as_ptr(), f, o) }), 1));
    let types = [k::int(), d, k::char()];
    let s = make(|o| unsafe { mpi::PMPI_Type_create_struct(3, [1, 1, 5].as_ptr(), [0, 8, 16].as_ptr(), types.as_ptr(), o) });
    cases.push(("struct-mix", make(|o| unsafe { mpi::PMPI_Type_create_resized(s, 0, 24, o) }), 1 << 10));
    free(s);
    for (name, t, count) in cases {
        let t = commit(t);
        compare(t, count, r, name);
        free(t);
    }
}

#[test]
fn datatype_engine_matches_mpi() {
    // SAFETY: singleton init, once per process (this is the only test in the binary).
    ok(unsafe { mpi::PMPI_Init(null_mut(), null_mut()) });
    let mut r = Rng(0x05ee_ddd7);
    random_cases(&mut r);
    suite_cases(&mut r);
}
