//! What sluice needs to know about a communicator and does not change while it lives: whether
//! it is an intercommunicator, and the world rank of each of its ranks. Read from the MPI the
//! first time a large point-to-point operation asks, and kept in an attribute of a keyval
//! sluice creates at start-up, which the MPI drops (delete callback) when the communicator is
//! freed, however it is freed; `MPI_Comm_dup` does not copy it (the duplicate reads its own).
//!
//! Why: a receive of a contested size used to translate its source twice (the hint line, then
//! the receipt) and ask twice whether the communicator is an intercommunicator, two group
//! creations and frees and a translation each time; at 64 KiB between two ranks of one node
//! that cost about 1% of the message's time on both MPIs (`bench/p2p_paths.c`, the automatic
//! path against the forced one it chose). An attribute read is one look-up in the MPI.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::ffi::{consts, errclass, mpi};

/// Communicators up to this size keep their world ranks (4 bytes per rank); larger ones
/// translate a rank at a time.
const MAX_KEPT: c_int = 1 << 16;

/// The facts of one communicator.
#[derive(Debug)]
struct CommFacts {
    inter: bool,
    /// World rank of each rank of the (local) group; empty when not kept.
    world: Vec<c_int>,
}

const INVALID: c_int = mpi::MPI_KEYVAL_INVALID as c_int;
static KEYVAL: AtomicI32 = AtomicI32::new(INVALID);

/// Copy callback: the duplicate gets no value (it reads its own facts when asked).
unsafe extern "C" fn no_copy(
    _old: mpi::MPI_Comm,
    _keyval: c_int,
    _extra: *mut c_void,
    _value_in: *mut c_void,
    _value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the MPI passes `flag` as an `int *` to fill (MPI_Comm_copy_attr_function).
    unsafe { *flag = 0 };
    errclass::SUCCESS
}

/// Delete callback: frees the facts the attribute points to.
unsafe extern "C" fn drop_facts(_comm: mpi::MPI_Comm, _keyval: c_int, value: *mut c_void, _extra: *mut c_void) -> c_int {
    if !value.is_null() {
        // SAFETY: every value of this keyval is a `Box<CommFacts>` leaked by `facts` and
        // dropped only here, once, when the MPI deletes the attribute.
        drop(unsafe { Box::from_raw(value.cast::<CommFacts>()) });
    }
    errclass::SUCCESS
}

/// Creates the keyval (MPI is initialized; from `init::start`). On failure the facts are read
/// from the MPI at each use, as before, with a warning.
pub fn create_keyval() {
    let mut kv = INVALID;
    // SAFETY: MPI is initialized; the callbacks match MPI_Comm_copy/delete_attr_function.
    let rc = unsafe { mpi::PMPI_Comm_create_keyval(Some(no_copy), Some(drop_facts), &mut kv, std::ptr::null_mut()) };
    if rc == errclass::SUCCESS {
        KEYVAL.store(kv, Ordering::Release);
    } else {
        log::warn!("cannot create the communicator facts keyval (MPI error {rc}); ranks are translated at each use");
    }
}

/// Frees the keyval (finalize; attributes still attached are deleted with their communicators).
pub fn free_keyval() {
    let mut kv = KEYVAL.swap(INVALID, Ordering::AcqRel);
    if kv != INVALID {
        // SAFETY: `kv` is the keyval this module created and has not freed.
        unsafe { mpi::PMPI_Comm_free_keyval(&mut kv) };
    }
}

/// Runs `f` on `comm`'s facts, read from the MPI and attached the first time. `None` when the
/// keyval is unavailable or the MPI refuses (`comm` invalid).
fn with_facts<R>(comm: mpi::MPI_Comm, f: impl FnOnce(&CommFacts) -> R) -> Option<R> {
    let kv = KEYVAL.load(Ordering::Acquire);
    if kv == INVALID || comm == consts::comm_null() {
        return None;
    }
    let (mut value, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
    // SAFETY: `comm` is the application's communicator of a call in progress; `value`
    // receives the attribute (a `void *`) and `flag` one int.
    let rc = unsafe { mpi::PMPI_Comm_get_attr(comm, kv, (&mut value as *mut *mut c_void).cast(), &mut flag) };
    if rc != errclass::SUCCESS {
        return None;
    }
    if flag != 0 && !value.is_null() {
        // SAFETY: the attribute is a live `Box<CommFacts>` (see `drop_facts`), freed only when
        // the communicator is, which cannot happen during this call on it.
        return Some(f(unsafe { &*value.cast::<CommFacts>() }));
    }
    let facts = Box::new(read(comm)?);
    let r = f(&facts);
    let raw = Box::into_raw(facts);
    // SAFETY: attaches the box to `comm`; from here the MPI owns it (deleted by `drop_facts`).
    let rc = unsafe { mpi::PMPI_Comm_set_attr(comm, kv, raw.cast()) };
    if rc != errclass::SUCCESS {
        // SAFETY: the MPI did not take it.
        drop(unsafe { Box::from_raw(raw) });
    }
    Some(r)
}

/// Reads the facts from the MPI.
fn read(comm: mpi::MPI_Comm) -> Option<CommFacts> {
    let (mut flag, mut size) = (0, 0);
    // SAFETY: each call writes one int.
    let ok = unsafe {
        mpi::PMPI_Comm_test_inter(comm, &mut flag) == errclass::SUCCESS && mpi::PMPI_Comm_size(comm, &mut size) == errclass::SUCCESS
    };
    if !ok {
        return None;
    }
    let world = if flag == 0 && (0..=MAX_KEPT).contains(&size) {
        let ranks: Vec<c_int> = (0..size).collect();
        crate::transfer::node::world_ranks(comm, &ranks)?
    } else {
        Vec::new()
    };
    Some(CommFacts { inter: flag != 0, world })
}

/// Whether `comm` is an intercommunicator (`false` for an invalid one: the MPI call that
/// follows reports the error).
pub fn is_inter(comm: mpi::MPI_Comm) -> bool {
    with_facts(comm, |f| f.inter).unwrap_or_else(|| {
        let mut flag = 0;
        // SAFETY: writes one int; an invalid communicator leaves it 0.
        unsafe { mpi::PMPI_Comm_test_inter(comm, &mut flag) };
        flag != 0
    })
}

/// The world rank of rank `rank` of `comm`'s (local) group, if it has one.
pub fn world_rank_of(comm: mpi::MPI_Comm, rank: c_int) -> Option<c_int> {
    let kept = with_facts(comm, |f| (!f.world.is_empty()).then(|| usize::try_from(rank).ok().and_then(|r| f.world.get(r).copied())));
    match kept {
        Some(Some(w)) => w.filter(|&w| w >= 0),
        _ => crate::transfer::node::world_ranks(comm, &[rank]).and_then(|w| w.first().copied()).filter(|&w| w >= 0),
    }
}
