//! The first blocks of a datatype's element as an MPI type of their own: a prefix of the
//! element's packed stream, at the same addresses. The engine choice times the MPI's engine on
//! such a prefix where a call has too few elements to split by element
//! (`datatype::choice`, prefix samples): the MPI's engine only takes whole elements of a type,
//! and timing it on a whole element of a call of one element would cost the whole call.
//!
//! Built from the type's constructor arguments (`MPI_Type_get_contents`): the same constructor
//! with fewer top-level blocks (a vector's count, an indexed or struct type's first entries, a
//! subarray's outermost dimension), through `MPI_Type_dup` and `MPI_Type_create_resized`, which
//! keep the typemap of the type they wrap. Any other constructor (a darray, a large-count one)
//! has no prefix here, and the choice times whole calls instead.

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

impl Drop for Prefix {
    fn drop(&mut self) {
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
    let c = Contents::of(t)?;
    let i = |k: usize| c.ints.get(k).copied().unwrap_or(0).max(0) as usize;
    let mut out: Dt = crate::ffi::consts::datatype_null();
    let child = c.types.first().copied();
    let rc = match c.combiner {
        // The same typemap as the type they wrap (for one element at the same address).
        // SAFETY: a child handle get_contents returned, valid until `c` drops.
        comb::DUP | comb::RESIZED => return unsafe { prefix(child?, want, max) },
        comb::CONTIGUOUS | comb::VECTOR | comb::HVECTOR | comb::INDEXED_BLOCK | comb::HINDEXED_BLOCK => {
            let old = child?;
            let per = match c.combiner {
                comb::CONTIGUOUS => 1,
                _ => i(1),
            } * type_size(old)?;
            let (k, _) = blocks_for(i(0), want, max, |_| per)?;
            let k = k as c_int;
            // SAFETY: the constructor's own arguments, with the count cut to `k` (and the
            // displacement arrays, which hold at least `count` entries, read to `k`).
            unsafe {
                match c.combiner {
                    comb::CONTIGUOUS => mpi::PMPI_Type_contiguous(k, old, &mut out),
                    comb::VECTOR => mpi::PMPI_Type_vector(k, c.ints[1], c.ints[2], old, &mut out),
                    comb::HVECTOR => mpi::PMPI_Type_create_hvector(k, c.ints[1], c.aints[0], old, &mut out),
                    comb::INDEXED_BLOCK => mpi::PMPI_Type_create_indexed_block(k, c.ints[1], c.ints[2..].as_ptr(), old, &mut out),
                    _ => mpi::PMPI_Type_create_hindexed_block(k, c.ints[1], c.aints.as_ptr(), old, &mut out),
                }
            }
        }
        comb::INDEXED | comb::HINDEXED => {
            let (old, n) = (child?, i(0));
            let per = type_size(old)?;
            let (k, _) = blocks_for(n, want, max, |b| i(1 + b) * per)?;
            // SAFETY: as above: the first `k` block lengths and displacements.
            unsafe {
                if c.combiner == comb::INDEXED {
                    mpi::PMPI_Type_indexed(k as c_int, c.ints[1..].as_ptr(), c.ints[1 + n..].as_ptr(), old, &mut out)
                } else {
                    mpi::PMPI_Type_create_hindexed(k as c_int, c.ints[1..].as_ptr(), c.aints.as_ptr(), old, &mut out)
                }
            }
        }
        comb::STRUCT => {
            let sizes: Vec<usize> = c.types.iter().map(|&t| type_size(t)).collect::<Option<_>>()?;
            let (k, _) = blocks_for(i(0), want, max, |b| i(1 + b) * sizes[b])?;
            // SAFETY: as above: the first `k` entries of each array.
            unsafe { mpi::PMPI_Type_create_struct(k as c_int, c.ints[1..].as_ptr(), c.aints.as_ptr(), c.types.as_ptr(), &mut out) }
        }
        comb::SUBARRAY => {
            // ints = [ndims, sizes[n], subsizes[n], starts[n], order]: the outermost dimension
            // (the first in C order, the last in Fortran order) varies slowest in the typemap.
            let n = i(0);
            let order = *c.ints.get(1 + 3 * n)?;
            let outer = if order == mpi::MPI_ORDER_C as c_int { 0 } else { n.checked_sub(1)? };
            let rows = i(1 + n + outer);
            let per = type_size(t)? / rows.max(1);
            let (k, _) = blocks_for(rows, want, max, |_| per)?;
            let mut subsizes = c.ints[1 + n..1 + 2 * n].to_vec();
            subsizes[outer] = k as c_int;
            // SAFETY: the constructor's own arguments, with one subsize cut.
            unsafe {
                mpi::PMPI_Type_create_subarray(
                    n as c_int,
                    c.ints[1..].as_ptr(),
                    subsizes.as_ptr(),
                    c.ints[1 + 2 * n..].as_ptr(),
                    order,
                    *c.types.first()?,
                    &mut out,
                )
            }
        }
        _ => return None,
    };
    if rc != errclass::SUCCESS {
        return None;
    }
    // SAFETY: `out` is the type just created.
    if unsafe { mpi::PMPI_Type_commit(&mut out) } != errclass::SUCCESS {
        // SAFETY: as above.
        unsafe { mpi::PMPI_Type_free(&mut out) };
        return None;
    }
    let bytes = type_size(out);
    let p = Prefix { handle: out, bytes: bytes.unwrap_or(0) };
    (p.bytes >= want && p.bytes <= max).then_some(p)
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
