//! A datatype's typemap read back from the MPI's own engine, for the types the decoder cannot
//! rebuild from their constructor arguments (a combiner it does not know, such as the
//! deprecated `*_INTEGER` ones, or an MPI whose layout of some constructor differs from the
//! standard's and from the decoder's).
//!
//! Leaving such a type to the MPI is exact for ordinary messages, but a receive of it would
//! have no way to land a pipelined message, whose stream sluice must place itself. So the
//! layout is asked of the MPI: one element is packed from a scratch copy of its true extent
//! whose bytes hold their own offsets, one base-256 digit per pass, and the packed bytes name
//! the offsets the MPI took them from, in its order. The typemap is then exactly the MPI's,
//! whatever it is. This is sluice's own idea (no crate reads a typemap back from an MPI), so
//! it is written here.

use std::ffi::c_int;

use super::decode::{mpi_bounds, DecodeError};
use super::ir::DataLoop;
use crate::ffi::{consts, mpi};

/// The largest true extent of one element probed (scratch memory, and commit time: a few
/// passes of `MPI_Pack` over it).
pub const MAX_EXTENT: usize = 16 << 20;

/// The most contiguous runs a probed typemap may have (its IR holds 16 bytes per run).
pub const MAX_RUNS: usize = 1 << 20;

/// The typemap of `t` as the MPI packs it: one struct member (its basic types are unknown, so
/// it may mix them) holding the runs of bytes in the MPI's order, with the MPI's bounds.
pub fn typemap(t: mpi::MPI_Datatype) -> Result<DataLoop, DecodeError> {
    let (size, lb, extent, tlb, text) = mpi_bounds(t)?;
    if size == 0 {
        return Ok(DataLoop::contig(0, DataLoop::bytes(1)).resized(lb, extent));
    }
    let text = usize::try_from(text).map_err(|_| DecodeError::Mismatch("negative true extent"))?;
    if text > MAX_EXTENT || c_int::try_from(size).is_err() {
        return Err(DecodeError::Mismatch("too large to probe"));
    }
    let offsets = packed_offsets(t, size, tlb, text)?;
    if !moves_bytes(t, &offsets, tlb, text)? {
        return Err(DecodeError::Mismatch("the MPI does not move this type as bytes"));
    }
    let runs = runs(&offsets).ok_or(DecodeError::Mismatch("too many runs to probe"))?;
    let (lens, displs): (Vec<usize>, Vec<i64>) = runs.into_iter().map(|(off, len)| (len, tlb + off as i64)).unzip();
    let members = DataLoop::indexed(lens, displs, DataLoop::bytes(1));
    Ok(DataLoop::structure(vec![1], vec![0], vec![members]).resized(lb, extent))
}

/// For each byte of one packed element of `t`, the offset from the true lower bound it was
/// taken from.
fn packed_offsets(t: mpi::MPI_Datatype, size: usize, tlb: i64, text: usize) -> Result<Vec<u32>, DecodeError> {
    let digits = (1..=4).find(|d| text <= 1usize << (8 * d)).unwrap_or(4);
    let mut scratch = vec![0u8; text];
    let mut offsets = vec![0u32; size];
    for d in 0..digits {
        for (i, b) in scratch.iter_mut().enumerate() {
            *b = (i >> (8 * d)) as u8;
        }
        let packed = pack_one(t, &scratch, tlb, size)?;
        for (o, &b) in offsets.iter_mut().zip(&packed) {
            *o |= u32::from(b) << (8 * d);
        }
    }
    if offsets.iter().any(|&o| o as usize >= text) {
        return Err(DecodeError::Mismatch("probe read outside the true extent"));
    }
    Ok(offsets)
}

/// Whether the MPI packs arbitrary bytes exactly as `offsets` say. It may not: MPICH moves
/// `long double` as x87 values, which rewrites padding and non-canonical encodings, so a probe
/// of a type holding one cannot be trusted (and such a type stays with the MPI).
fn moves_bytes(t: mpi::MPI_Datatype, offsets: &[u32], tlb: i64, text: usize) -> Result<bool, DecodeError> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let scratch: Vec<u8> = (0..text)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let packed = pack_one(t, &scratch, tlb, offsets.len())?;
    Ok(packed.iter().zip(offsets).all(|(&b, &o)| b == scratch[o as usize]))
}

/// `PMPI_Pack` of one element of `t` whose true extent is `scratch` (true lower bound `tlb`).
fn pack_one(t: mpi::MPI_Datatype, scratch: &[u8], tlb: i64, size: usize) -> Result<Vec<u8>, DecodeError> {
    // The element's origin: its true lower bound is the scratch's first byte.
    let origin = scratch.as_ptr().wrapping_offset(-(tlb as isize));
    let mut packed = vec![0u8; size];
    let mut position: c_int = 0;
    // SAFETY: the MPI reads only the element's typemap, `[tlb, tlb + text)` from `origin`,
    // which is `scratch`; it writes at most `size` bytes (one element's packed size, which
    // fits an int: checked by the caller) into `packed`, which holds exactly that.
    let rc = unsafe { mpi::PMPI_Pack(origin.cast(), 1, t, packed.as_mut_ptr().cast(), size as c_int, &mut position, consts::comm_self()) };
    if rc != mpi::MPI_SUCCESS as c_int {
        return Err(DecodeError::Mpi(rc));
    }
    if position as usize != size {
        return Err(DecodeError::Mismatch("probe packed another size"));
    }
    Ok(packed)
}

/// `offsets` as runs `(first offset, length)` of consecutive bytes, or `None` past
/// [`MAX_RUNS`].
fn runs(offsets: &[u32]) -> Option<Vec<(u32, usize)>> {
    let mut runs: Vec<(u32, usize)> = Vec::new();
    for &o in offsets {
        if let Some((_, len)) = runs.last_mut().filter(|(f, l)| *f as usize + *l == o as usize) {
            *len += 1;
        } else if runs.len() == MAX_RUNS {
            return None;
        } else {
            runs.push((o, 1));
        }
    }
    Some(runs)
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_merge_consecutive_offsets_only() {
        assert_eq!(runs(&[0, 1, 2, 5, 6, 4, 4]), Some(vec![(0, 3), (5, 2), (4, 1), (4, 1)]));
        assert_eq!(runs(&[]), Some(vec![]));
        assert_eq!(runs(&[7]), Some(vec![(7, 1)]));
    }
}
