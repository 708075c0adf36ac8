//! Decodes a committed MPI datatype into the dataloop IR with MPI_Type_get_envelope /
//! MPI_Type_get_contents, recursively.
//!
//! Every decoded node gets the lb/extent MPI reports for that datatype (struct padding rules
//! differ between MPIs; asking MPI is the only way to agree with it), and its size and true
//! bounds are checked against MPI's (the bytes it touches must lie within MPI's true bounds):
//! any disagreement is an error, so callers fall back to MPI.

use std::ffi::c_int;

use super::ir::DataLoop;
use crate::ffi::mpi::{self, MPI_Aint, MPI_Datatype};

/// Why a datatype could not be decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// A combiner sluice does not decode (the deprecated *_INTEGER variants, unknown ones), or
    /// large-count contents it cannot place (arguments beyond `int` where only `int` fits).
    Unsupported(c_int),
    /// An MPI call returned this error code.
    Mpi(c_int),
    /// The IR disagrees with what MPI reports (size or true bounds).
    Mismatch(&'static str),
}

type Result<T> = std::result::Result<T, DecodeError>;

fn check(rc: c_int) -> Result<()> {
    if rc == mpi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(DecodeError::Mpi(rc))
    }
}

/// What MPI says about a datatype: (size, lb, extent, true_lb, true_extent).
pub(super) fn mpi_bounds(t: MPI_Datatype) -> Result<(usize, i64, i64, i64, i64)> {
    let (mut size, mut lb, mut ext, mut tlb, mut text): (c_int, MPI_Aint, MPI_Aint, MPI_Aint, MPI_Aint) = (0, 0, 0, 0, 0);
    // SAFETY: `t` is a datatype handle the caller got from MPI; the outputs are valid locals.
    unsafe {
        check(mpi::PMPI_Type_size(t, &mut size))?;
        check(mpi::PMPI_Type_get_extent(t, &mut lb, &mut ext))?;
        check(mpi::PMPI_Type_get_true_extent(t, &mut tlb, &mut text))?;
    }
    // MPI_Aint is isize in Open MPI and i64 in MPICH: the casts are needed for one of them.
    #[allow(clippy::unnecessary_cast)]
    Ok((size as usize, lb as i64, ext as i64, tlb as i64, text as i64))
}

/// The combiner constants as `c_int` (bindgen gives them the enum's unsigned type).
pub(crate) mod comb {
    use std::ffi::c_int;
    macro_rules! c {
        ($($n:ident = $v:ident),*) => { $(pub const $n: c_int = crate::ffi::mpi::$v as c_int;)* };
    }
    c!(
        NAMED = SLUICE_COMBINER_NAMED,
        DUP = SLUICE_COMBINER_DUP,
        CONTIGUOUS = SLUICE_COMBINER_CONTIGUOUS,
        VECTOR = SLUICE_COMBINER_VECTOR,
        HVECTOR = SLUICE_COMBINER_HVECTOR,
        INDEXED = SLUICE_COMBINER_INDEXED,
        HINDEXED = SLUICE_COMBINER_HINDEXED,
        INDEXED_BLOCK = SLUICE_COMBINER_INDEXED_BLOCK,
        HINDEXED_BLOCK = SLUICE_COMBINER_HINDEXED_BLOCK,
        STRUCT = SLUICE_COMBINER_STRUCT,
        SUBARRAY = SLUICE_COMBINER_SUBARRAY,
        DARRAY = SLUICE_COMBINER_DARRAY,
        F90_REAL = SLUICE_COMBINER_F90_REAL,
        F90_COMPLEX = SLUICE_COMBINER_F90_COMPLEX,
        F90_INTEGER = SLUICE_COMBINER_F90_INTEGER,
        RESIZED = SLUICE_COMBINER_RESIZED
    );
}

/// The arguments a datatype was built from.
struct Contents {
    /// The integer arguments in the layout of `MPI_Type_get_contents` (large counts of an MPI-4
    /// `_c` constructor are put back where the plain call has them: [`large_contents`]).
    ints: Vec<i64>,
    addrs: Vec<i64>,
    /// Decoded child datatypes (the MPI handles are already freed where MPI requires it).
    types: Vec<DataLoop>,
}

/// What `MPI_Type_get_envelope` reports: numbers of integers, addresses and datatypes, the
/// combiner, and (MPI-4) the number of large counts, nonzero for a type built by a `_c`
/// constructor whose arguments only `MPI_Type_get_contents_c` returns.
#[derive(Clone, Copy)]
pub(crate) struct Envelope {
    pub ni: c_int,
    pub na: c_int,
    pub nd: c_int,
    pub combiner: c_int,
    /// Large counts (0 for every type where `MPI_Type_get_envelope` alone suffices).
    pub nc: i64,
}

pub(crate) fn envelope(t: MPI_Datatype) -> Result<Envelope> {
    // A type built by an MPI-4 large-count constructor (`MPI_Type_contiguous_c`, ...) may keep
    // its counts where only MPI_Type_get_envelope_c reports them; the plain call then fails,
    // which would invoke the error handler (fatal by default): ask the `_c` call first.
    #[cfg(sluice_large_count)]
    {
        let (mut ni, mut na, mut nc, mut nd, mut combiner): (mpi::MPI_Count, mpi::MPI_Count, mpi::MPI_Count, mpi::MPI_Count, c_int) =
            (0, 0, 0, 0, 0);
        // SAFETY: valid handle, outputs are locals.
        check(unsafe { mpi::PMPI_Type_get_envelope_c(t, &mut ni, &mut na, &mut nc, &mut nd, &mut combiner) })?;
        if nc > 0 {
            let small = |n: mpi::MPI_Count| c_int::try_from(n).map_err(|_| DecodeError::Unsupported(combiner));
            return Ok(Envelope { ni: small(ni)?, na: small(na)?, nd: small(nd)?, combiner, nc });
        }
    }
    let (mut ni, mut na, mut nd, mut combiner) = (0, 0, 0, 0);
    // SAFETY: valid handle, outputs are locals.
    check(unsafe { mpi::PMPI_Type_get_envelope(t, &mut ni, &mut na, &mut nd, &mut combiner) })?;
    Ok(Envelope { ni, na, nd, combiner, nc: 0 })
}

fn contents(t: MPI_Datatype, env: Envelope) -> Result<Contents> {
    let Envelope { ni, na, nd, .. } = env;
    let mut ints = vec![0 as c_int; ni as usize];
    let mut addrs = vec![0 as MPI_Aint; na as usize];
    let mut handles: Vec<MPI_Datatype> = vec![crate::ffi::consts::datatype_null(); nd as usize];
    // Once the MPI filled `handles`, every error waits until they are freed below.
    // MPI_Aint is isize in Open MPI and i64 in MPICH: the cast is needed for one of them.
    #[allow(clippy::unnecessary_cast)]
    let (args, mut err) = if env.nc > 0 {
        match large_contents(t, env, &mut handles)? {
            Ok(a) => (a, None),
            Err(e) => ((Vec::new(), Vec::new()), Some(e)),
        }
    } else {
        // SAFETY: the arrays have exactly the lengths the envelope reported.
        check(unsafe { mpi::PMPI_Type_get_contents(t, ni, na, nd, ints.as_mut_ptr(), addrs.as_mut_ptr(), handles.as_mut_ptr()) })?;
        ((ints.into_iter().map(i64::from).collect(), addrs.into_iter().map(|a| a as i64).collect()), None)
    };
    let (ints, addrs) = args;
    // Decode every child, then free the derived ones (get_contents returned new references);
    // free them all whatever fails on the way (the first error is returned).
    let mut types = Vec::with_capacity(handles.len());
    for h in &mut handles {
        match decode(*h) {
            Ok(d) => types.push(d),
            Err(e) => err = err.or(Some(e)),
        }
        if let Err(e) = free_child(h) {
            err = err.or(Some(e));
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(Contents { ints, addrs, types }),
    }
}

/// The arguments of a type built by an MPI-4 `_c` constructor (`MPI_Type_get_contents_c`),
/// laid out as `MPI_Type_get_contents` lays out the plain constructor's: (integers, addresses).
/// MPI-4.0 Table 5.1: with large counts, every argument the plain call returns as an integer
/// count or displacement, or as an address, comes in the large-count array instead, in the same
/// order (integers, then addresses), except those that stay `int` (a subarray's `ndims` and
/// `order`; a darray's all but `gsizes`), which keep the integer array.
/// The outer error: the MPI call failed (`handles` not filled); the inner one: the contents do
/// not have the shape of the combiner (`handles` filled, to be freed by the caller).
#[cfg(sluice_large_count)]
fn large_contents(t: MPI_Datatype, env: Envelope, handles: &mut [MPI_Datatype]) -> Result<Result<(Vec<i64>, Vec<i64>)>> {
    let mut ints = vec![0 as c_int; env.ni as usize];
    let mut addrs = vec![0 as MPI_Aint; env.na as usize];
    let mut counts = vec![0 as mpi::MPI_Count; env.nc as usize];
    // SAFETY: the arrays have exactly the lengths the envelope reported.
    check(unsafe {
        mpi::PMPI_Type_get_contents_c(
            t,
            env.ni as mpi::MPI_Count,
            env.na as mpi::MPI_Count,
            env.nc as mpi::MPI_Count,
            env.nd as mpi::MPI_Count,
            ints.as_mut_ptr(),
            addrs.as_mut_ptr(),
            counts.as_mut_ptr(),
            handles.as_mut_ptr(),
        )
    })?;
    #[allow(clippy::unnecessary_cast)] // MPI_Count is i64 here; MPI_Aint isize in Open MPI
    let (c, i, a): (Vec<i64>, Vec<i64>, Vec<i64>) =
        (counts.iter().map(|&x| x as i64).collect(), ints.iter().map(|&x| x as i64).collect(), addrs.iter().map(|&x| x as i64).collect());
    Ok(arrange_large(env.combiner, c, i, a))
}

/// [`large_contents`]'s arguments (`c`: large counts, `i`: integers, `a`: addresses) in the
/// layout of the plain call.
#[cfg(sluice_large_count)]
fn arrange_large(combiner: c_int, c: Vec<i64>, i: Vec<i64>, a: Vec<i64>) -> Result<(Vec<i64>, Vec<i64>)> {
    let bad = || DecodeError::Mismatch("large-count contents");
    if !a.is_empty() {
        return Err(bad()); // no large-count constructor reports addresses (MPI-4.0 Table 5.1)
    }
    let n = c.first().copied().unwrap_or(0).max(0) as usize;
    let split = |k: usize| (c.len() >= k).then(|| (c[..k].to_vec(), c[k..].to_vec())).ok_or_else(bad);
    Ok(match combiner {
        comb::CONTIGUOUS | comb::VECTOR | comb::INDEXED | comb::INDEXED_BLOCK => (c, Vec::new()),
        comb::HVECTOR | comb::HINDEXED_BLOCK => split(2)?,
        comb::HINDEXED | comb::STRUCT => split(1 + n)?,
        comb::RESIZED => (Vec::new(), c),
        comb::SUBARRAY => {
            // ints = [ndims, order], counts = [sizes, subsizes, starts]
            let [ndims, order] = i[..] else { return Err(bad()) };
            (std::iter::once(ndims).chain(c).chain(std::iter::once(order)).collect(), Vec::new())
        }
        comb::DARRAY => {
            // ints = [size, rank, ndims, distribs, dargs, psizes, order], counts = [gsizes]
            if i.len() < 3 {
                return Err(bad());
            }
            (i[..3].iter().copied().chain(c).chain(i[3..].iter().copied()).collect(), Vec::new())
        }
        other => return Err(DecodeError::Unsupported(other)),
    })
}

#[cfg(not(sluice_large_count))]
fn large_contents(_: MPI_Datatype, env: Envelope, _: &mut [MPI_Datatype]) -> Result<Result<(Vec<i64>, Vec<i64>)>> {
    Err(DecodeError::Unsupported(env.combiner)) // unreachable: no large counts without the `_c` calls
}

/// Frees `h`, a child handle from get_contents, unless it is predefined (named, or an F90
/// parameterized type: never freed). A handle whose combiner MPI does not report is left alone
/// (freeing a predefined type is an error) and the error returned.
pub(crate) fn free_child(h: &mut MPI_Datatype) -> Result<()> {
    let combiner = match envelope(*h) {
        Ok(e) => e.combiner,
        // Declined for its large counts: derived, and the combiner is known.
        Err(DecodeError::Unsupported(c)) => c,
        Err(e) => return Err(e),
    };
    if matches!(combiner, comb::NAMED | comb::F90_REAL | comb::F90_COMPLEX | comb::F90_INTEGER) {
        return Ok(());
    }
    // SAFETY: `h` is a derived datatype returned by get_contents, ours to free.
    check(unsafe { mpi::PMPI_Type_free(h) })
}

/// A predefined type from its size and true extent. Pair types with padding (MPI_DOUBLE_INT,
/// MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, ...) are `struct { T v; int i; }`: value then an int at
/// the next 4-byte boundary.
fn named(size: usize, tlb: i64, text: i64) -> Result<DataLoop> {
    if tlb != 0 {
        return Err(DecodeError::Mismatch("named type with nonzero true lb"));
    }
    if size as i64 == text {
        return Ok(DataLoop::bytes(size));
    }
    let int = std::mem::size_of::<c_int>();
    if size > int {
        let v = size - int;
        let off = v.next_multiple_of(int) as i64;
        if off + int as i64 == text {
            return Ok(DataLoop::structure(vec![1, 1], vec![0, off], vec![DataLoop::bytes(v), DataLoop::bytes(int)]));
        }
    }
    Err(DecodeError::Mismatch("named type with unknown layout"))
}

fn usizes(v: &[i64]) -> Vec<usize> {
    v.iter().map(|&x| x as usize).collect()
}

/// Whether `t` is a predefined (named) type: its handle never names another type.
pub fn is_named(t: MPI_Datatype) -> bool {
    envelope(t).is_ok_and(|e| e.combiner == comb::NAMED)
}

/// Whether `combiner` is a constructor sluice decodes that builds from one child type (every one
/// but struct).
fn one_child(combiner: c_int) -> bool {
    matches!(
        combiner,
        comb::DUP
            | comb::CONTIGUOUS
            | comb::VECTOR
            | comb::HVECTOR
            | comb::INDEXED
            | comb::HINDEXED
            | comb::INDEXED_BLOCK
            | comb::HINDEXED_BLOCK
            | comb::SUBARRAY
            | comb::DARRAY
            | comb::RESIZED
    )
}

/// The one predefined type all of `t` is made of, when `t` is built from it by constructors of
/// one child each (any but struct, down to a named type); `None` otherwise. A message of `t`
/// then has the type signature of that many predefined elements, so its packed bytes can travel
/// as a contiguous run of them (the GPU packed form, `protocol::device`).
pub fn basic_element(t: MPI_Datatype) -> Option<MPI_Datatype> {
    let (mut cur, mut owned) = (t, false);
    loop {
        let step = (|| {
            let Envelope { ni, na, nd, combiner, nc } = envelope(cur).ok()?;
            if combiner == comb::NAMED {
                return Some(Ok(cur));
            }
            if !one_child(combiner) || nd != 1 || nc != 0 {
                return None; // (a large-count constructor's child is not followed: rare)
            }
            let mut ints = vec![0 as c_int; ni as usize];
            let mut addrs = vec![0 as MPI_Aint; na as usize];
            let mut child = crate::ffi::consts::datatype_null();
            // SAFETY: the arrays have the lengths the envelope reported; one handle.
            check(unsafe { mpi::PMPI_Type_get_contents(cur, ni, na, nd, ints.as_mut_ptr(), addrs.as_mut_ptr(), &mut child) }).ok()?;
            Some(Err(child))
        })();
        if owned {
            if let Some(Ok(_)) = step {
                // A named handle: never freed, valid for the life of the MPI.
            } else {
                let _ = free_child(&mut cur);
            }
        }
        match step? {
            Ok(named) => return Some(named),
            Err(child) => (cur, owned) = (child, true),
        }
    }
}

/// The typemap of a committed (or predefined) datatype: decoded from its constructors, or,
/// where that fails, read back from the MPI's engine ([`super::probe`]); the first error when
/// neither can. The handle itself is not freed.
pub fn typemap(t: MPI_Datatype) -> Result<DataLoop> {
    typemap_decoded(t).map(|(dl, _)| dl)
}

/// As [`typemap`], and whether it was decoded (its leaves are then the predefined elements,
/// [`super::grain`]) rather than read back (runs that may merge elements).
pub fn typemap_decoded(t: MPI_Datatype) -> Result<(DataLoop, bool)> {
    decode(t).map(|dl| (dl, true)).or_else(|e| match super::probe::typemap(t) {
        Ok(dl) => {
            log::debug!("datatype not decoded ({e:?}): its typemap was read back from the MPI");
            Ok((dl, false))
        }
        Err(_) => Err(e),
    })
}

/// Decodes a committed (or predefined) datatype. The handle itself is not freed.
pub fn decode(t: MPI_Datatype) -> Result<DataLoop> {
    let env = envelope(t)?;
    let combiner = env.combiner;
    let (size, lb, extent, tlb, text) = mpi_bounds(t)?;
    let dl = match combiner {
        comb::NAMED | comb::F90_REAL | comb::F90_COMPLEX | comb::F90_INTEGER => named(size, tlb, text)?,
        c if one_child(c) || c == comb::STRUCT => {
            let c = contents(t, env)?;
            derived(combiner, c)?
        }
        other => return Err(DecodeError::Unsupported(other)),
    };
    let dl = dl.resized(lb, extent);
    if dl.size != size {
        return Err(DecodeError::Mismatch("size"));
    }
    // MPIs differ on whether empty members widen the true bounds (MPICH: yes), so the bytes
    // the IR touches must lie within MPI's true bounds rather than match them exactly.
    if size > 0 && (dl.true_lb < tlb || dl.true_ub > tlb + text) {
        return Err(DecodeError::Mismatch("true bounds"));
    }
    Ok(dl)
}

/// What [`decode`]'s result depends on, as a flat list of numbers written to `sig`, read from
/// the MPI without building any dataloop: per node (depth first) the combiner, the argument
/// counts and the integer and address arguments; a predefined child as its handle (never
/// freed, never reused for another type). Two types with equal signatures decode to the same
/// dataloop, so it keys their shared compiled form (`form_cache`). False when the signature
/// would pass `max_len` numbers, or for a type outside it (large-count or F90 arguments, a
/// combiner [`decode`] declines, an MPI error): those are decoded every time.
pub fn signature(t: MPI_Datatype, max_len: usize, sig: &mut Vec<i64>) -> bool {
    sig.clear();
    sign(t, sig, max_len).is_some()
}

/// Arguments of a node up to this many of each kind are read into the stack (most types have a
/// few), more into the heap.
const ON_STACK: usize = 16;

/// A buffer of `n` values: `stack` when it is long enough, else `heap` resized.
fn scratch<'a, T: Copy>(n: usize, stack: &'a mut [T; ON_STACK], heap: &'a mut Vec<T>, zero: T) -> &'a mut [T] {
    if n <= ON_STACK {
        &mut stack[..n]
    } else {
        heap.resize(n, zero);
        heap
    }
}

/// Appends `t`'s signature to `sig`; its combiner, or `None` when it has none.
fn sign(t: MPI_Datatype, sig: &mut Vec<i64>, max_len: usize) -> Option<c_int> {
    let env = envelope(t).ok()?;
    let Envelope { ni, na, nd, combiner, nc } = env;
    if combiner == comb::NAMED {
        sig.extend([combiner as i64, crate::ffi::datatype_key(t) as i64]);
        return (sig.len() <= max_len).then_some(combiner);
    }
    if nc > 0 || !(one_child(combiner) || combiner == comb::STRUCT) {
        return None;
    }
    let (ni, na, nd) = (ni.max(0) as usize, na.max(0) as usize, nd.max(0) as usize);
    if sig.len() + 4 + ni + na > max_len {
        return None;
    }
    let null = crate::ffi::consts::datatype_null();
    let (mut si, mut sa, mut sh) = ([0 as c_int; ON_STACK], [0 as MPI_Aint; ON_STACK], [null; ON_STACK]);
    let (mut hi, mut ha, mut hh) = (Vec::new(), Vec::new(), Vec::new());
    let ints = scratch(ni, &mut si, &mut hi, 0);
    let addrs = scratch(na, &mut sa, &mut ha, 0);
    let handles = scratch(nd, &mut sh, &mut hh, null);
    // SAFETY: the arrays have exactly the lengths the envelope reported.
    let rc = unsafe { mpi::PMPI_Type_get_contents(t, env.ni, env.na, env.nd, ints.as_mut_ptr(), addrs.as_mut_ptr(), handles.as_mut_ptr()) };
    check(rc).ok()?;
    // No bounds: the MPI computes a type's size and bounds from exactly these arguments and the
    // children's bounds (padding rules included), so they add nothing to tell types apart.
    sig.extend([combiner as i64, ni as i64, na as i64, nd as i64]);
    sig.extend(ints.iter().map(|&i| i as i64));
    // MPI_Aint is isize in Open MPI and i64 in MPICH: the cast is needed for one of them.
    #[allow(clippy::unnecessary_cast)]
    sig.extend(addrs.iter().map(|&a| a as i64));
    // Every derived child handle is freed, whether or not the signature is complete (a named
    // one, known from its signature, is not: it saves asking its combiner again).
    let mut ok = true;
    for h in handles.iter_mut() {
        let child = if ok { sign(*h, sig, max_len) } else { None };
        if child != Some(comb::NAMED) {
            ok &= free_child(h).is_ok();
        }
        ok &= child.is_some();
    }
    ok.then_some(combiner)
}

/// Builds the node for a derived combiner from its decoded contents.
fn derived(combiner: c_int, c: Contents) -> Result<DataLoop> {
    let Contents { ints, addrs, mut types } = c;
    if combiner == comb::STRUCT {
        // The only combiner with possibly no child type (a struct of 0 members).
        let n = ints[0] as usize;
        types.truncate(n);
        return Ok(DataLoop::structure(usizes(&ints[1..1 + n]), addrs, types));
    }
    let child = types.first().cloned().ok_or(DecodeError::Mismatch("no child type"))?;
    let ext = child.extent;
    let n = ints.first().copied().unwrap_or(0) as usize;
    Ok(match combiner {
        comb::DUP | comb::RESIZED => child, // decode() applies MPI's bounds
        comb::CONTIGUOUS => DataLoop::contig(n, child),
        comb::VECTOR => vector(n, ints[1] as usize, ints[2] * ext, child),
        comb::HVECTOR => vector(n, ints[1] as usize, addrs[0], child),
        comb::INDEXED => {
            let displs = ints[1 + n..1 + 2 * n].iter().map(|&d| d * ext).collect();
            DataLoop::indexed(usizes(&ints[1..1 + n]), displs, child)
        }
        comb::HINDEXED => DataLoop::indexed(usizes(&ints[1..1 + n]), addrs, child),
        comb::INDEXED_BLOCK => {
            let displs = ints[2..2 + n].iter().map(|&d| d * ext).collect();
            DataLoop::block_indexed(ints[1] as usize, displs, child)
        }
        comb::HINDEXED_BLOCK => DataLoop::block_indexed(ints[1] as usize, addrs, child),
        comb::SUBARRAY => subarray(&ints, child)?,
        comb::DARRAY => darray(&ints, child)?,
        other => return Err(DecodeError::Unsupported(other)),
    })
}

/// A (h)vector as the MPI builds it.
///
/// Open MPI 4.1 places the blocks of a (h)vector whose stride is exactly -1 byte one block
/// extent apart, forward (lower bound 0, `MPI_Pack` of `vector(3, 1, -1, MPI_CHAR)` gives
/// bytes 0 1 2 where the standard and MPICH give 0 -1 -2): its internal "add" call reads an
/// extent of -1 as "the child's own extent". Data sent with the bare MPI lands where its engine
/// puts it, so sluice must place it there too (a type decoded the standard's way would disagree
/// with the MPI's bounds and be left to the MPI, and a receive of it would then miss pipelined
/// messages). Whether the MPI does this is measured once, not assumed from its name
/// ([`minus_one_stride_is_child_extent`]). Only where the MPI does not lay the vector out as
/// one contiguous run (its first branch: one block, or blocks exactly one block apart) does
/// the stride take part.
fn vector(count: usize, blocklen: usize, stride_bytes: i64, child: DataLoop) -> DataLoop {
    let one_run = count <= 1 || blocklen as i64 * child.extent == stride_bytes;
    if stride_bytes == -1 && !one_run && minus_one_stride_is_child_extent() {
        let block_extent = DataLoop::contig(blocklen, child.clone()).extent;
        return DataLoop::vector(count, blocklen, block_extent, child);
    }
    DataLoop::vector(count, blocklen, stride_bytes, child)
}

/// Whether this MPI builds an hvector of byte stride -1 as blocks one child extent apart
/// (Open MPI 4.1 does; see [`vector`]): asked of the MPI once, with `hvector(2, 1, -1,
/// MPI_BYTE)`, whose lower bound is -1 by the standard and 0 where the quirk is.
fn minus_one_stride_is_child_extent() -> bool {
    static QUIRK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *QUIRK.get_or_init(|| {
        let mut t = crate::ffi::consts::datatype_null();
        let (mut lb, mut ext): (MPI_Aint, MPI_Aint) = (0, 0);
        // SAFETY: a new type from a predefined one into a local handle, read, then freed.
        unsafe {
            if mpi::PMPI_Type_create_hvector(2, 1, -1, crate::ffi::consts::byte(), &mut t) != mpi::MPI_SUCCESS as c_int {
                return false;
            }
            let rc = mpi::PMPI_Type_get_extent(t, &mut lb, &mut ext);
            mpi::PMPI_Type_free(&mut t);
            rc == mpi::MPI_SUCCESS as c_int && lb == 0
        }
    })
}

/// SUBARRAY as nested vectors over the innermost contiguous run, placed at the start offset.
/// ints = [ndims, sizes[n], subsizes[n], starts[n], order].
fn subarray(ints: &[i64], child: DataLoop) -> Result<DataLoop> {
    let n = ints[0] as usize;
    let mut sizes = ints[1..1 + n].to_vec();
    let mut subs = ints[1 + n..1 + 2 * n].to_vec();
    let mut starts = ints[1 + 2 * n..1 + 3 * n].to_vec();
    if n == 0 {
        return Err(DecodeError::Mismatch("0-d subarray"));
    }
    if ints[1 + 3 * n] == mpi::MPI_ORDER_FORTRAN as i64 {
        // Fortran order is C order with the dimensions reversed.
        sizes.reverse();
        subs.reverse();
        starts.reverse();
    }
    let ext = child.extent;
    // stride[d]: bytes between consecutive indices of dimension d (C order: last is fastest).
    let mut stride = vec![ext; n];
    for d in (0..n - 1).rev() {
        stride[d] = stride[d + 1] * sizes[d + 1];
    }
    let mut node = DataLoop::contig(subs[n - 1] as usize, child);
    for d in (0..n - 1).rev() {
        node = DataLoop::vector(subs[d] as usize, 1, stride[d], node);
    }
    let offset = (0..n).map(|d| starts[d] * stride[d]).sum();
    Ok(DataLoop::block_indexed(1, vec![offset], node))
}

/// The `MPI_DISTRIBUTE_*` constants as `c_int`.
mod distribute {
    use std::ffi::c_int;
    pub const BLOCK: c_int = crate::ffi::mpi::MPI_DISTRIBUTE_BLOCK as c_int;
    pub const CYCLIC: c_int = crate::ffi::mpi::MPI_DISTRIBUTE_CYCLIC as c_int;
    pub const NONE: c_int = crate::ffi::mpi::MPI_DISTRIBUTE_NONE as c_int;
    // Bindgen already types this one `i32` (its value is negative in both MPIs).
    pub const DFLT_DARG: c_int = crate::ffi::mpi::MPI_DISTRIBUTE_DFLT_DARG;
}

/// DARRAY as the standard constructs it (MPI-3.1 sec. 4.1.4): per dimension, the blocks of
/// `darg` indices this process owns, cyclically (`cyclic(darg)`; BLOCK is one cycle of
/// `ceil(gsize / psize)` by default, NONE one block of `gsize`), each dimension's node resized
/// to the full extent of one index of it; decode() applies MPI's bounds (lb 0, the whole global
/// array) to the result. The process grid is row-major whatever the array order.
/// ints = [size, rank, ndims, gsizes[n], distribs[n], dargs[n], psizes[n], order].
fn darray(ints: &[i64], child: DataLoop) -> Result<DataLoop> {
    let n = ints[2] as usize;
    if n == 0 {
        return Err(DecodeError::Mismatch("0-d darray"));
    }
    let field = |k: usize| ints[3 + k * n..3 + (k + 1) * n].to_vec();
    let (mut gsizes, mut distribs, mut dargs, mut psizes) = (field(0), field(1), field(2), field(3));
    let mut coords = vec![0i64; n];
    let (mut procs, mut r) = (ints[0], ints[1]);
    for d in 0..n {
        if psizes[d] <= 0 {
            return Err(DecodeError::Mismatch("darray process grid"));
        }
        procs /= psizes[d];
        coords[d] = r / procs.max(1);
        r %= procs.max(1);
    }
    if ints[3 + 4 * n] == mpi::MPI_ORDER_FORTRAN as i64 {
        // Fortran order is C order with the dimensions (array and grid) reversed.
        for v in [&mut gsizes, &mut distribs, &mut dargs, &mut psizes, &mut coords] {
            v.reverse();
        }
    }
    // stride[d]: bytes between consecutive indices of dimension d (C order: last is fastest).
    let mut stride = vec![child.extent; n];
    for d in (0..n - 1).rev() {
        stride[d] = stride[d + 1] * gsizes[d + 1];
    }
    let mut node = child;
    for d in (0..n).rev() {
        let (g, p) = (gsizes[d], psizes[d]);
        let darg = match (distribs[d] as c_int, dargs[d] as c_int) {
            (distribute::BLOCK, distribute::DFLT_DARG) => (g + p - 1) / p,
            (distribute::CYCLIC, distribute::DFLT_DARG) => 1,
            (distribute::NONE, _) => g,
            (distribute::BLOCK | distribute::CYCLIC, k) => k as i64,
            _ => return Err(DecodeError::Mismatch("darray distribution")),
        };
        if darg <= 0 {
            return Err(DecodeError::Mismatch("darray distribution argument"));
        }
        node = cyclic(g, darg, p, coords[d], stride[d], node);
        if d > 0 {
            node = node.resized(0, stride[d - 1]);
        }
    }
    Ok(node)
}

/// The indices of one dimension of `g` that process coordinate `c` of `p` owns in blocks of
/// `darg` dealt round-robin, as blocks of `child` (one index, extent `stride`): a vector of
/// the full blocks, then the last block when it is short.
fn cyclic(g: i64, darg: i64, p: i64, c: i64, stride: i64, child: DataLoop) -> DataLoop {
    let nblocks = (g + darg - 1) / darg;
    let owned = if c < nblocks { (nblocks - 1 - c) / p + 1 } else { 0 };
    let short = g % darg != 0 && owned > 0 && (nblocks - 1 - c) % p == 0;
    let full = (owned - short as i64) as usize;
    let first = c * darg * stride;
    let last = (c + full as i64 * p) * darg * stride;
    let tail = (g % darg) as usize;
    match (full, short) {
        (0, false) => DataLoop::contig(0, child),
        (0, true) => DataLoop::block_indexed(tail, vec![last], child),
        (_, false) => DataLoop::block_indexed(1, vec![first], DataLoop::vector(full, darg as usize, p * darg * stride, child)),
        (_, true) => {
            let v = DataLoop::vector(full, darg as usize, p * darg * stride, child.clone());
            DataLoop::structure(vec![1, tail], vec![first, last], vec![v, child])
        }
    }
}
