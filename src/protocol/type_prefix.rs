//! The first blocks of a datatype's element as an MPI type of their own: a prefix of the
//! element's packed stream, at the same addresses. The engine choice times the MPI's engine on
//! such a prefix where a call has too few elements to split by element
//! (`datatype::choice`, prefix samples): the MPI's engine only takes whole elements of a type,
//! and timing it on a whole element of a call of one element would cost the whole call.
//!
//! Built from the type's constructor arguments (`MPI_Type_get_contents`): the same constructor
//! with fewer top-level blocks (a vector's count, an indexed or struct type's first entries, a
//! subarray's outermost dimension), through `MPI_Type_dup` and `MPI_Type_create_resized`, which
//! keep the typemap of the type they wrap. Where the first top-level block alone is too large,
//! a prefix inside it: the first copies of its child, or the child's own prefix, placed at the
//! block's displacement (a subarray cuts its outer dimensions to one row and goes on inward).
//! Any other constructor (a darray, a large-count one) has no prefix here, and the choice times
//! whole calls instead.

use std::ffi::c_int;

use crate::datatype::decode::{comb, envelope, free_child};
use crate::ffi::{errclass, mpi};

type Dt = mpi::MPI_Datatype;

/// A committed prefix type, freed on drop.
pub struct Prefix {
    handle: Dt,
    bytes: usize,
}

impl Prefix {
    pub fn handle(&self) -> Dt {
        self.handle
    }

    /// Packed bytes of the prefix (one element of it).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

// SAFETY: the handle is an opaque value (a pointer into the MPI library on Open MPI) only
// passed back to the MPI, and freed once, by the owner.
unsafe impl Send for Prefix {}

impl Drop for Prefix {
    fn drop(&mut self) {
        // The engine choice keeps a prefix while a type learns: it may drop with the type, after
        // MPI_Finalize, when no MPI call is allowed.
        let mut finalized = 0;
        // SAFETY: callable at any time; the output is a local.
        if unsafe { mpi::PMPI_Finalized(&mut finalized) } != errclass::SUCCESS || finalized != 0 {
            return;
        }
        // SAFETY: a derived type sluice created and committed; nothing else holds the handle.
        unsafe { mpi::PMPI_Type_free(&mut self.handle) };
    }
}

/// The constructor arguments of `t`, its child handles freed on drop.
struct Contents {
    combiner: c_int,
    ints: Vec<c_int>,
    aints: Vec<mpi::MPI_Aint>,
    types: Vec<Dt>,
}

impl Contents {
    fn of(t: Dt) -> Option<Contents> {
        let env = envelope(t).ok()?;
        if env.nc > 0 || env.combiner == comb::NAMED {
            return None; // a large-count constructor's arguments, or a predefined type
        }
        let mut c = Contents {
            combiner: env.combiner,
            ints: vec![0; env.ni as usize],
            aints: vec![0; env.na as usize],
            types: vec![crate::ffi::consts::datatype_null(); env.nd as usize],
        };
        // SAFETY: the arrays have exactly the lengths the envelope reported.
        let rc = unsafe {
            mpi::PMPI_Type_get_contents(t, env.ni, env.na, env.nd, c.ints.as_mut_ptr(), c.aints.as_mut_ptr(), c.types.as_mut_ptr())
        };
        if rc != errclass::SUCCESS {
            c.types.clear(); // not filled: nothing to free
            return None;
        }
        Some(c)
    }
}

impl Drop for Contents {
    fn drop(&mut self) {
        for h in &mut self.types {
            // Predefined children are left alone; a failure leaves the handle (never happens on
            // a handle get_contents returned).
            let _ = free_child(h);
        }
    }
}

fn type_size(t: Dt) -> Option<usize> {
    let mut s = 0;
    // SAFETY: a valid handle; the output is a local.
    (unsafe { mpi::PMPI_Type_size(t, &mut s) } == errclass::SUCCESS && s >= 0).then_some(s as usize)
}

/// The smallest `k` in `1..n` whose first `k` blocks (block `i` of `size(i)` packed bytes) hold
/// at least `want` bytes, with their bytes; `None` when that takes every block or exceeds `max`.
fn blocks_for(n: usize, want: usize, max: usize, size: impl Fn(usize) -> usize) -> Option<(usize, usize)> {
    let mut sum = 0usize;
    for k in 1..n {
        sum = sum.checked_add(size(k - 1))?;
        if sum >= want {
            return (sum <= max).then_some((k, sum));
        }
    }
    None
}

/// A committed type whose typemap is the first blocks of `t`'s element, of at least `want`
/// and at most `max` packed bytes; `None` where `t` has no such prefix (see the module docs) or
/// the MPI declines.
///
/// # Safety
/// `t` is a valid datatype handle; MPI is initialized.
pub unsafe fn prefix(t: Dt, want: usize, max: usize) -> Option<Prefix> {
    // SAFETY: forwarded contract.
    let mut out = unsafe { build(t, want, max) }?;
    // SAFETY: `out` is a type sluice just created.
    if unsafe { mpi::PMPI_Type_commit(&mut out) } != errclass::SUCCESS {
        // SAFETY: as above.
        unsafe { mpi::PMPI_Type_free(&mut out) };
        return None;
    }
    let p = Prefix { handle: out, bytes: type_size(out).unwrap_or(0) };
    (p.bytes >= want && p.bytes <= max).then_some(p)
}

/// A new (uncommitted) type for [`prefix`]: the same constructor with its first `k` top-level
/// blocks where those make `want..=max` bytes, else, where the first block alone is too large,
/// a prefix of that block placed where the block is.
///
/// # Safety
/// As [`prefix`].
#[allow(clippy::unnecessary_cast)] // MPI_Aint is isize in Open MPI, i64 in MPICH
unsafe fn build(t: Dt, want: usize, max: usize) -> Option<Dt> {
    let c = Contents::of(t)?;
    let i = |k: usize| c.ints.get(k).copied().unwrap_or(0).max(0) as usize;
    let mut out: Dt = crate::ffi::consts::datatype_null();
    let child = c.types.first().copied();
    let n = i(0);
    // Per family: the block sizes in bytes, and block 0 as (copies of the child, byte
    // displacement).
    let (sizes, first): (Vec<usize>, (usize, i64)) = match c.combiner {
        // The same typemap as the type they wrap (for one element at the same address).
        // SAFETY: a child handle get_contents returned, valid until `c` drops.
        comb::DUP | comb::RESIZED => return unsafe { build(child?, want, max) },
        // SAFETY: forwarded contract; `c` is `t`'s contents.
        comb::SUBARRAY => return unsafe { subarray(&c, t, want, max) },
        comb::CONTIGUOUS => (vec![type_size(child?)?; n], (1, 0)),
        comb::VECTOR | comb::HVECTOR => (vec![i(1) * type_size(child?)?; n], (i(1), 0)),
        comb::INDEXED_BLOCK => (vec![i(1) * type_size(child?)?; n], (i(1), *c.ints.get(2)? as i64 * extent(child?)?)),
        comb::HINDEXED_BLOCK => (vec![i(1) * type_size(child?)?; n], (i(1), *c.aints.first()? as i64)),
        comb::INDEXED => {
            let per = type_size(child?)?;
            ((0..n).map(|b| i(1 + b) * per).collect(), (i(1), *c.ints.get(1 + n)? as i64 * extent(child?)?))
        }
        comb::HINDEXED => {
            let per = type_size(child?)?;
            ((0..n).map(|b| i(1 + b) * per).collect(), (i(1), *c.aints.first()? as i64))
        }
        comb::STRUCT => {
            let sizes: Vec<usize> = c.types.iter().zip(1..).map(|(&t, b)| Some(i(b) * type_size(t)?)).collect::<Option<_>>()?;
            (sizes, (i(1), *c.aints.first()? as i64))
        }
        _ => return None,
    };
    let Some((k, _)) = blocks_for(n, want, max, |b| sizes[b]) else {
        // The first block alone holds `want` bytes but more than `max`: a prefix of it.
        if sizes.first().is_some_and(|&s| s > max) {
            // SAFETY: block 0's child, a handle get_contents returned.
            return unsafe { first_block(child?, first.0, first.1, want, max) };
        }
        return None;
    };
    let k_int = k as c_int;
    // SAFETY: the constructor's own arguments, with the count cut to `k` (the arrays, which
    // hold at least `count` entries, read to `k`).
    let rc = unsafe {
        let old = child?;
        match c.combiner {
            comb::CONTIGUOUS => mpi::PMPI_Type_contiguous(k_int, old, &mut out),
            comb::VECTOR => mpi::PMPI_Type_vector(k_int, c.ints[1], c.ints[2], old, &mut out),
            comb::HVECTOR => mpi::PMPI_Type_create_hvector(k_int, c.ints[1], c.aints[0], old, &mut out),
            comb::INDEXED_BLOCK => mpi::PMPI_Type_create_indexed_block(k_int, c.ints[1], c.ints[2..].as_ptr(), old, &mut out),
            comb::HINDEXED_BLOCK => mpi::PMPI_Type_create_hindexed_block(k_int, c.ints[1], c.aints.as_ptr(), old, &mut out),
            comb::INDEXED => mpi::PMPI_Type_indexed(k_int, c.ints[1..].as_ptr(), c.ints[1 + n..].as_ptr(), old, &mut out),
            comb::HINDEXED => mpi::PMPI_Type_create_hindexed(k_int, c.ints[1..].as_ptr(), c.aints.as_ptr(), old, &mut out),
            _ => mpi::PMPI_Type_create_struct(k_int, c.ints[1..].as_ptr(), c.aints.as_ptr(), c.types.as_ptr(), &mut out),
        }
    };
    (rc == errclass::SUCCESS).then_some(out)
}

/// A prefix of a block of `copies` copies of `child` (laid out by its extent) at byte
/// displacement `at`: the first copies where they make `want..=max` bytes, else a prefix of the
/// first copy; placed at `at`.
///
/// # Safety
/// As [`prefix`], for `child`.
unsafe fn first_block(child: Dt, copies: usize, at: i64, want: usize, max: usize) -> Option<Dt> {
    let per = type_size(child)?;
    let mut inner: Dt = crate::ffi::consts::datatype_null();
    match blocks_for(copies + 1, want, max, |_| per) {
        Some((j, _)) if j <= copies => {
            // SAFETY: `j` copies of a valid handle.
            if unsafe { mpi::PMPI_Type_contiguous(j as c_int, child, &mut inner) } != errclass::SUCCESS {
                return None;
            }
        }
        // SAFETY: forwarded contract.
        _ if per > max => inner = unsafe { build(child, want, max) }?,
        _ => return None,
    }
    if at == 0 {
        return Some(inner);
    }
    let (one, disp) = (1 as c_int, at as mpi::MPI_Aint);
    let mut out: Dt = crate::ffi::consts::datatype_null();
    // SAFETY: one block of the type just made at `at` bytes; the wrapped type keeps what it
    // needs of `inner`, which is freed here.
    let rc = unsafe {
        let rc = mpi::PMPI_Type_create_hindexed(1, &one, &disp, inner, &mut out);
        mpi::PMPI_Type_free(&mut inner);
        rc
    };
    (rc == errclass::SUCCESS).then_some(out)
}

/// A subarray's prefix: its outer dimensions cut to their first row, one dimension to its
/// first `k` rows, the inner ones whole (each such cut is a prefix of the typemap: the outermost
/// dimension, the first in C order and the last in Fortran order, varies slowest).
///
/// # Safety
/// As [`prefix`]; `c` is the contents of the subarray `t`.
unsafe fn subarray(c: &Contents, t: Dt, want: usize, max: usize) -> Option<Dt> {
    // ints = [ndims, sizes[n], subsizes[n], starts[n], order]
    let n = usize::try_from(*c.ints.first()?).ok()?;
    let order = *c.ints.get(1 + 3 * n)?;
    let mut subsizes = c.ints.get(1 + n..1 + 2 * n)?.to_vec();
    let dims: Vec<usize> = if order == mpi::MPI_ORDER_C as c_int { (0..n).collect() } else { (0..n).rev().collect() };
    // Bytes of one row of dimension `d` with the outer ones cut to 1: the whole type's size over
    // the rows of `d` and of every dimension outside it.
    let mut row = type_size(t)?;
    for d in dims {
        let rows = usize::try_from(subsizes[d]).ok()?.max(1);
        row /= rows;
        if let Some((k, _)) = blocks_for(rows + 1, want, max, |_| row).filter(|&(k, _)| k <= rows) {
            subsizes[d] = k as c_int;
            let mut out: Dt = crate::ffi::consts::datatype_null();
            // SAFETY: the constructor's own arguments with some subsizes cut.
            let rc = unsafe {
                mpi::PMPI_Type_create_subarray(
                    n as c_int,
                    c.ints[1..].as_ptr(),
                    subsizes.as_ptr(),
                    c.ints[1 + 2 * n..].as_ptr(),
                    order,
                    *c.types.first()?,
                    &mut out,
                )
            };
            return (rc == errclass::SUCCESS).then_some(out);
        }
        if row <= max {
            return None; // rows of this dimension are too small to reach `want` below `max`
        }
        subsizes[d] = 1;
    }
    None
}

fn extent(t: Dt) -> Option<i64> {
    let (mut lb, mut ext) = (0, 0);
    #[allow(clippy::unnecessary_cast)] // MPI_Aint is isize in Open MPI, i64 in MPICH
    // SAFETY: a valid handle; the outputs are locals.
    (unsafe { mpi::PMPI_Type_get_extent(t, &mut lb, &mut ext) } == errclass::SUCCESS).then_some(ext as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_the_fewest_blocks_that_reach_the_wanted_bytes() {
        assert_eq!(blocks_for(10, 25, 100, |_| 10), Some((3, 30)));
        assert_eq!(blocks_for(10, 25, 29, |_| 10), None, "over the limit");
        assert_eq!(blocks_for(3, 25, 100, |_| 10), None, "every block: no prefix");
        assert_eq!(blocks_for(4, 5, 100, |b| [0, 0, 8, 8][b]), Some((3, 8)), "empty blocks count for nothing");
        assert_eq!(blocks_for(1, 1, 100, |_| 10), None);
    }
}
