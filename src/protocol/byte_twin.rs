//! Byte twins: for a compiled datatype, a committed MPI datatype with the same memory layout
//! (the same bytes in the same order, the same lower bound and extent) whose elements are
//! `MPI_BYTE`s.
//!
//! Why: a receive that sluice leaves to the MPI's engine (large blocks, `SLUICE_P2P_MPI_ABOVE`)
//! may be matched by a pipelined message, whose first message M0 is S\* bytes, an odd number.
//! MPICH's engine refuses to unpack a byte count that is not a whole number of the receive
//! type's basic elements (`MPI_ERR_TRUNCATE`; an assertion abort for a self-send), so the
//! receive could not take M0. Posted with the twin, the MPI lands M0 in place byte by byte;
//! the received stream is the same as with the application's type, and the status counts the
//! same bytes, so `MPI_Get_count` in the application's type is unchanged.
//!
//! A twin is built once per compiled type (its [`CompiledType::id`]) from the normalized
//! dataloop and freed once the compiled form is gone ([`sweep`]).

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rustc_hash::FxHashMap;

use crate::datatype::compiled::CompiledType;
use crate::datatype::ir::{DataLoop, Kind};
use crate::ffi::{consts, errclass, mpi};

type Dt = mpi::MPI_Datatype;

/// Twins by compiled-type id, with the form they belong to; `None`: the layout has no twin (a
/// count beyond `int`).
static TWINS: Mutex<Option<FxHashMap<u64, Twin>>> = Mutex::new(None);

/// Entries in [`TWINS`]: [`sweep`] skips the lock while there are none (every Open MPI run).
static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Twin {
    /// The form; the twin is freed only once no handle, cached form or operation holds it.
    form: Weak<CompiledType>,
    twin: Option<usize>,
}

pub(crate) fn to_key(t: Dt) -> usize {
    #[cfg(sluice_mpi = "openmpi")]
    {
        t as usize
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        t as u32 as usize
    }
}

pub(crate) fn from_key(k: usize) -> Dt {
    #[cfg(sluice_mpi = "openmpi")]
    {
        k as Dt
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        k as u32 as Dt
    }
}

/// The committed twin of `ct`, built on first use; `None` when the MPI cannot express it.
/// The caller holds `ct` until its operation has the twin posted (the MPI then keeps its own
/// reference), so the twin lives at least that long ([`sweep`]).
pub(crate) fn of(ct: &Arc<CompiledType>) -> Option<Dt> {
    let mut g = TWINS.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(FxHashMap::default);
    if let Some(t) = map.get(&ct.id()) {
        return t.twin.map(from_key);
    }
    let twin = build(ct.dataloop()).and_then(|mut t| {
        // SAFETY: `t` is a datatype this module just created.
        (unsafe { mpi::PMPI_Type_commit(&mut t) } == errclass::SUCCESS).then_some(t)
    });
    if twin.is_none() {
        log::debug!("no byte twin for compiled type {}: receives of it keep the application's type", ct.id());
    }
    map.insert(ct.id(), Twin { form: Arc::downgrade(ct), twin: twin.map(to_key) });
    LIVE.store(map.len(), Ordering::Relaxed);
    twin
}

/// Frees the twins whose forms are gone (called after a type is freed). A form outlives the
/// handle that was freed while other handles share it (`MPI_Type_dup`, the same construction:
/// `datatype::form_cache`), or an operation still holds it; freeing the twin then could pull it
/// from under another thread about to post a receive with it.
pub(crate) fn sweep() {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return;
    }
    let dead: Vec<usize> = {
        let mut g = TWINS.lock().unwrap_or_else(|e| e.into_inner());
        let Some(map) = g.as_mut() else { return };
        let mut dead = Vec::new();
        map.retain(|_, t| {
            let alive = t.form.strong_count() > 0;
            if !alive {
                dead.extend(t.twin);
            }
            alive
        });
        LIVE.store(map.len(), Ordering::Relaxed);
        dead
    };
    for k in dead {
        let mut t = from_key(k);
        // SAFETY: a datatype this module created; its form is gone, so no operation is about to
        // post it (receives in flight keep their own reference, as MPI guarantees).
        unsafe { mpi::PMPI_Type_free(&mut t) };
    }
}

/// Frees every twin (`MPI_Finalize`, or the engine switched off).
pub(crate) fn forget_all() {
    let all = TWINS.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
    LIVE.store(0, Ordering::Relaxed);
    for k in all.into_values().filter_map(|t| t.twin) {
        let mut t = from_key(k);
        // SAFETY: a datatype this module created; at finalize (or with the engine off) no
        // operation of sluice's posts it again.
        unsafe { mpi::PMPI_Type_free(&mut t) };
    }
}

/// An uncommitted MPI type with `dl`'s byte layout, lower bound and extent.
fn build(dl: &DataLoop) -> Option<Dt> {
    let inner = match &dl.kind {
        Kind::Bytes(n) => make(|t| {
            // SAFETY: creates a type from a predefined one.
            unsafe { mpi::PMPI_Type_contiguous(int(*n)?, consts::byte(), t) }.into()
        }),
        Kind::Contig { count, child } => with_child(child, |c, t| {
            // SAFETY: `c` is a live type.
            unsafe { mpi::PMPI_Type_contiguous(int(*count)?, c, t) }.into()
        }),
        Kind::Vector { count, blocklen, stride_bytes, child } => with_child(child, |c, t| {
            // SAFETY: `c` is a live type.
            unsafe { mpi::PMPI_Type_create_hvector(int(*count)?, int(*blocklen)?, *stride_bytes as mpi::MPI_Aint, c, t) }.into()
        }),
        Kind::BlockIndexed { blocklen, displs_bytes, child } => {
            let displs = aints(displs_bytes);
            with_child(child, |c, t| {
                // SAFETY: `displs` holds as many displacements as the count says.
                unsafe { mpi::PMPI_Type_create_hindexed_block(int(displs.len())?, int(*blocklen)?, displs.as_ptr(), c, t) }.into()
            })
        }
        Kind::Indexed { blocklens, displs_bytes, child } => {
            let displs = aints(displs_bytes);
            let lens = blocklens.iter().map(|&b| int(b)).collect::<Option<Vec<c_int>>>()?;
            with_child(child, |c, t| {
                // SAFETY: both arrays hold as many entries as the count says.
                unsafe { mpi::PMPI_Type_create_hindexed(int(lens.len())?, lens.as_ptr(), displs.as_ptr(), c, t) }.into()
            })
        }
        Kind::Struct { blocklens, displs, children } => {
            let displs = aints(displs);
            let lens = blocklens.iter().map(|&b| int(b)).collect::<Option<Vec<c_int>>>()?;
            let mut kids = Vec::with_capacity(children.len());
            for c in children {
                match build(c) {
                    Some(t) => kids.push(t),
                    None => {
                        free_all(&mut kids);
                        return None;
                    }
                }
            }
            let t = make(|t| {
                // SAFETY: the three arrays hold as many entries as the count says; the children
                // are live types.
                unsafe { mpi::PMPI_Type_create_struct(int(kids.len())?, lens.as_ptr(), displs.as_ptr(), kids.as_ptr().cast_mut(), t) }
                    .into()
            });
            free_all(&mut kids);
            t
        }
    }?;
    resized(inner, dl.lb, dl.extent)
}

/// `f(child twin, out)`, then the child twin is freed (the new type keeps its own reference).
fn with_child(child: &DataLoop, f: impl FnOnce(Dt, *mut Dt) -> Option<c_int>) -> Option<Dt> {
    let mut c = build(child)?;
    let t = make(|t| f(c, t));
    // SAFETY: a type this module created.
    unsafe { mpi::PMPI_Type_free(&mut c) };
    t
}

/// The type a constructor call writes, if it succeeded.
fn make(f: impl FnOnce(*mut Dt) -> Option<c_int>) -> Option<Dt> {
    let mut t = consts::datatype_null();
    (f(&mut t)? == errclass::SUCCESS).then_some(t)
}

/// `t` with lower bound `lb` and extent `extent`; `t` itself is freed.
fn resized(mut t: Dt, lb: i64, extent: i64) -> Option<Dt> {
    let r = make(|out| {
        // SAFETY: `t` is a live type this module created.
        Some(unsafe { mpi::PMPI_Type_create_resized(t, lb as mpi::MPI_Aint, extent as mpi::MPI_Aint, out) })
    });
    // SAFETY: as above.
    unsafe { mpi::PMPI_Type_free(&mut t) };
    r
}

fn free_all(types: &mut [Dt]) {
    for t in types {
        // SAFETY: types this module created.
        unsafe { mpi::PMPI_Type_free(t) };
    }
}

fn int(n: usize) -> Option<c_int> {
    c_int::try_from(n).ok()
}

fn aints(v: &[i64]) -> Vec<mpi::MPI_Aint> {
    v.iter().map(|&d| d as mpi::MPI_Aint).collect()
}
