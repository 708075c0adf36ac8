//! The shape sweep (issue 28): seeded random datatypes close to what applications build, not the
//! suite's sixteen. Each shape nests 1-4 constructor levels (every MPI constructor but darray)
//! over an element of 1-16 bytes or a struct mix, with innermost blocks of 1 B-8 KiB (powers of
//! two and odd sizes), gaps and strides from none to several blocks, start offsets (subarray
//! starts, resized lower bounds, byte displacements that break alignment), and a total packed
//! size drawn log-uniformly from 4 KiB to 64 MiB (in and out of cache).
//!
//! A shape is a pure function of (seed, index): `--sweep SEED --shapes N` measures shapes
//! 0..N of that seed, and `--shape SEED:I` one of them again.

use std::ffi::c_int;

use sluice::ffi::consts as k;
use sluice::ffi::mpi::{self, MPI_Aint, MPI_Datatype};

use super::{free, make, ok, Rng};

/// The largest memory span a shape may cover (its user buffer is allocated twice).
const MAX_SPAN: i64 = 160 << 20;

/// One generated shape: a committed type, the count to pack, and how it was built.
pub struct Shape {
    pub t: MPI_Datatype,
    pub count: usize,
    pub desc: String,
}

fn size_of(t: MPI_Datatype) -> i64 {
    let mut s: mpi::MPI_Count = 0;
    // SAFETY: a valid datatype and an output of the right type.
    ok(unsafe { mpi::PMPI_Type_size_x(t, &mut s) }, "MPI_Type_size_x");
    s as i64
}

/// (true lower bound, true extent, extent) of `t`.
#[allow(clippy::unnecessary_cast)] // MPI_Aint is i64 on MPICH, isize on Open MPI
fn bounds(t: MPI_Datatype) -> (i64, i64, i64) {
    let (mut lb, mut ext, mut tlb, mut text): (MPI_Aint, MPI_Aint, MPI_Aint, MPI_Aint) = (0, 0, 0, 0);
    // SAFETY: a valid datatype and outputs of the right type.
    unsafe {
        ok(mpi::PMPI_Type_get_extent(t, &mut lb, &mut ext), "MPI_Type_get_extent");
        ok(mpi::PMPI_Type_get_true_extent(t, &mut tlb, &mut text), "MPI_Type_get_true_extent");
    }
    (tlb as i64, text as i64, ext as i64)
}

/// The element: (type, its name, whether the sweep built it and must free it).
fn element(r: &mut Rng) -> (MPI_Datatype, String, bool) {
    let basic = [
        (k::char(), "char"),
        (k::short(), "short"),
        (k::int(), "int"),
        (k::float(), "float"),
        (k::double(), "double"),
        (k::c_double_complex(), "dcomplex"),
    ];
    if r.range(0, 8) == 0 {
        // A struct mix: an int, a double and 1-7 chars, padded to a multiple of 8 or not.
        let chars = r.range(1, 8) as c_int;
        let types = [k::int(), k::double(), k::char()];
        let s = make("MPI_Type_create_struct", |o| unsafe {
            // SAFETY: the arrays have 3 entries each and outlive the call.
            mpi::PMPI_Type_create_struct(3, [1, 1, chars].as_ptr(), [0, 8, 16].as_ptr(), types.as_ptr(), o)
        });
        let ext = if r.range(0, 2) == 0 { 16 + chars as MPI_Aint } else { 24 };
        // SAFETY: a valid type; the new one is freed by the caller.
        let t = make("MPI_Type_create_resized", |o| unsafe { mpi::PMPI_Type_create_resized(s, 0, ext, o) });
        free(s);
        return (t, format!("struct(int,double,{chars}char)/{ext}"), true);
    }
    let (t, n) = basic[r.range(0, basic.len() as i64) as usize];
    (t, n.to_string(), false)
}

/// Innermost block sizes in bytes: powers of two and odd sizes from 1 B to 8 KiB.
const BLOCKS: [i64; 26] =
    [1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 40, 64, 100, 128, 192, 256, 520, 512, 1000, 1024, 2048, 3000, 4096, 6000, 8192];

/// A gap after a block of `bl` units: none, one unit, half a block, a block or several.
fn gap(r: &mut Rng, bl: i64) -> i64 {
    match r.range(0, 6) {
        0 => 0,
        1 => 1,
        2 => (bl / 2).max(1),
        3 => bl,
        4 => 3 * bl,
        _ => r.range(1, 2 * bl + 2),
    }
}

/// Increasing displacements (in units) of `n` blocks of lengths `bls`, with gaps.
fn displacements(r: &mut Rng, bls: &[c_int], first: i64) -> Vec<i64> {
    let mut at = first;
    bls.iter()
        .map(|&b| {
            let d = at;
            at += b as i64 + gap(r, b as i64);
            d
        })
        .collect()
}

/// One level over `child` (extent `ce` bytes): `n` blocks of `bl` children each.
/// Returns the new type and its description.
fn level(r: &mut Rng, child: MPI_Datatype, ce: i64, n: i64, bl: i64, innermost: bool) -> (MPI_Datatype, String) {
    let nc = n as c_int;
    let blc = bl as c_int;
    // Blocks of varying lengths around `bl` for the indexed kinds.
    let vary = |r: &mut Rng| (0..n).map(|_| r.range((bl / 2).max(1), bl + bl / 2 + 1) as c_int).collect::<Vec<c_int>>();
    match r.range(0, if innermost { 9 } else { 10 }) {
        0 => {
            let stride = bl + gap(r, bl);
            // SAFETY: (every constructor below) the arrays outlive the call and have `n` entries.
            (
                make("MPI_Type_vector", |o| unsafe { mpi::PMPI_Type_vector(nc, blc, stride as c_int, child, o) }),
                format!("vector({n},{bl},{stride})"),
            )
        }
        1 => {
            // Byte strides, odd ones included.
            let stride = bl * ce + gap(r, bl * ce);
            (
                make("MPI_Type_create_hvector", |o| unsafe { mpi::PMPI_Type_create_hvector(nc, blc, stride as MPI_Aint, child, o) }),
                format!("hvector({n},{bl},{stride}B)"),
            )
        }
        2 => {
            let bls = vary(r);
            let first = r.range(0, 3);
            let ds: Vec<c_int> = displacements(r, &bls, first).into_iter().map(|d| d as c_int).collect();
            (
                make("MPI_Type_indexed", |o| unsafe { mpi::PMPI_Type_indexed(nc, bls.as_ptr(), ds.as_ptr(), child, o) }),
                format!("indexed({n},~{bl})"),
            )
        }
        3 => {
            let bls = vary(r);
            let first = r.range(0, 2);
            let ds: Vec<MPI_Aint> =
                displacements(r, &bls, first).into_iter().map(|d| (d * ce + r.range(0, 2) * r.range(0, 8)) as MPI_Aint).collect();
            // Byte displacements from the unit ones, some moved by a few bytes: keep them increasing
            // and non-overlapping by spacing with each block's length.
            let mut fixed = Vec::with_capacity(ds.len());
            let mut end: MPI_Aint = 0;
            for (i, &d) in ds.iter().enumerate() {
                let d = d.max(end);
                fixed.push(d);
                end = d + bls[i] as MPI_Aint * ce as MPI_Aint;
            }
            (
                make("MPI_Type_create_hindexed", |o| unsafe { mpi::PMPI_Type_create_hindexed(nc, bls.as_ptr(), fixed.as_ptr(), child, o) }),
                format!("hindexed({n},~{bl})"),
            )
        }
        4 => {
            let bls = vec![blc; n as usize];
            let first = r.range(0, 3);
            let ds: Vec<c_int> = displacements(r, &bls, first).into_iter().map(|d| d as c_int).collect();
            (
                make("MPI_Type_create_indexed_block", |o| unsafe { mpi::PMPI_Type_create_indexed_block(nc, blc, ds.as_ptr(), child, o) }),
                format!("indexed_block({n},{bl})"),
            )
        }
        5 => {
            let bls = vec![blc; n as usize];
            let odd = r.range(0, 2) * r.range(1, 8);
            let ds: Vec<MPI_Aint> = displacements(r, &bls, 0).into_iter().map(|d| (d * ce + odd) as MPI_Aint).collect();
            (
                make("MPI_Type_create_hindexed_block", |o| unsafe { mpi::PMPI_Type_create_hindexed_block(nc, blc, ds.as_ptr(), child, o) }),
                format!("hindexed_block({n},{bl},+{odd}B)"),
            )
        }
        6 => {
            // A 2-D or 3-D subarray whose fastest dimension is the block, at a start offset.
            let dims = r.range(2, 4) as usize;
            let mut sizes = vec![0 as c_int; dims];
            let mut subs = vec![0 as c_int; dims];
            let mut starts = vec![0 as c_int; dims];
            let fortran = r.range(0, 2) == 0;
            let fast = if fortran { 0 } else { dims - 1 };
            let mut rest = n;
            for d in 0..dims {
                if d == fast {
                    subs[d] = blc;
                    sizes[d] = (bl + gap(r, bl)) as c_int;
                } else {
                    let s = if rest > 1 { r.range(1, rest.min(64) + 1) } else { 1 };
                    rest = (rest / s).max(1);
                    subs[d] = s as c_int;
                    sizes[d] = (s + r.range(0, 3) * gap(r, s)) as c_int;
                }
                starts[d] = r.range(0, (sizes[d] - subs[d]) as i64 + 1) as c_int;
            }
            let order = if fortran { mpi::MPI_ORDER_FORTRAN } else { mpi::MPI_ORDER_C } as c_int;
            (
                make("MPI_Type_create_subarray", |o| unsafe {
                    mpi::PMPI_Type_create_subarray(dims as c_int, sizes.as_ptr(), subs.as_ptr(), starts.as_ptr(), order, child, o)
                }),
                format!("subarray({sizes:?},{subs:?},{starts:?},{})", if fortran { "F" } else { "C" }),
            )
        }
        7 => {
            let bls = vec![blc; n as usize];
            let ds: Vec<MPI_Aint> = displacements(r, &bls, 0).into_iter().map(|d| (d * ce) as MPI_Aint).collect();
            let ts = vec![child; n as usize];
            (
                make("MPI_Type_create_struct", |o| unsafe { mpi::PMPI_Type_create_struct(nc, bls.as_ptr(), ds.as_ptr(), ts.as_ptr(), o) }),
                format!("struct({n},{bl})"),
            )
        }
        8 => {
            // Contiguous blocks, resized to leave a gap and moved by a lower bound.
            let c = make("MPI_Type_contiguous", |o| unsafe { mpi::PMPI_Type_contiguous(blc, child, o) });
            let lb = -(r.range(0, 3) * ce);
            let ext = bl * ce + gap(r, bl * ce) - lb;
            let t = make("MPI_Type_create_resized", |o| unsafe { mpi::PMPI_Type_create_resized(c, lb as MPI_Aint, ext as MPI_Aint, o) });
            free(c);
            let v = make("MPI_Type_contiguous", |o| unsafe { mpi::PMPI_Type_contiguous(nc, t, o) });
            free(t);
            (v, format!("contiguous({n},resized(contiguous({bl}),{lb},{ext}))"))
        }
        _ => (make("MPI_Type_contiguous", |o| unsafe { mpi::PMPI_Type_contiguous(nc * blc, child, o) }), format!("contiguous({})", n * bl)),
    }
}

/// Shape `index` of `seed`, committed.
pub fn shape(seed: u64, index: u64) -> Shape {
    let mut r = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ index.wrapping_mul(0x9e37_79b9));
    for _ in 0..4 {
        r.next();
    }
    let (elem, ename, own) = element(&mut r);
    let esize = size_of(elem).max(1);
    let block = BLOCKS[r.range(0, BLOCKS.len() as i64) as usize];
    let levels = r.range(1, 5);
    // log-uniform total from 4 KiB to 64 MiB
    let total = (4096f64 * (2f64).powf(r.next() as f64 / u64::MAX as f64 * 14.0)) as i64;
    let mut t = elem;
    let mut desc = ename;
    let mut bl = (block / esize).max(1);
    for l in 0..levels {
        let (_, _, ce) = bounds(t);
        let size = size_of(t);
        // Blocks per level: the innermost up to 64, the others up to 16, never past the total.
        let cap = (total / (size * bl).max(1)).max(1);
        let n = r.range(1, (if l == 0 { 64 } else { 16 }).min(cap) + 1);
        let (nt, d) = level(&mut r, t, ce.max(1), n, bl, l == 0);
        if l > 0 && bounds(nt).1 > MAX_SPAN {
            free(nt); // gaps on every level: the span would not fit, stop nesting
            break;
        }
        if l > 0 || own {
            free(t);
        }
        t = nt;
        desc = format!("{d} of {desc}");
        bl = if r.range(0, 3) == 0 { r.range(1, 4) } else { 1 };
    }
    let size = size_of(t).max(1);
    let (tlb, text, ext) = bounds(t);
    let mut count = (total / size).max(1);
    // Keep the span of `count` elements inside MAX_SPAN.
    let span = |c: i64| text + (c - 1) * ext.abs() + tlb.abs();
    while count > 1 && span(count) > MAX_SPAN {
        count /= 2;
    }
    // SAFETY: a datatype built above.
    ok(unsafe { mpi::PMPI_Type_commit(&mut t) }, "MPI_Type_commit");
    Shape { t, count: count as usize, desc: format!("{desc} x{count}") }
}
