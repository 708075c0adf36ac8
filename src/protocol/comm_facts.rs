//! What sluice needs to know about a communicator and does not change while it lives: whether
//! it is an intercommunicator, and the world rank of each of its ranks. Read from the MPI the
//! first time a large point-to-point operation asks, and kept with the communicator
//! (`comm_cache`: dropped when it is freed, not copied by `MPI_Comm_dup`).
//!
//! Why: a receive of a contested size used to translate its source twice (the hint line, then
//! the receipt) and ask twice whether the communicator is an intercommunicator, two group
//! creations and frees and a translation each time; at 64 KiB between two ranks of one node
//! that cost about 1% of the message's time on both MPIs (`bench/p2p_paths.c`, the automatic
//! path against the forced one it chose). An attribute read is one look-up in the MPI.

use std::cell::Cell;
use std::ffi::c_int;

use super::comm_cache::CommCache;
use crate::ffi::{consts, errclass, mpi};

/// Communicators up to this size keep their world ranks (4 bytes per rank); larger ones
/// translate a rank at a time.
const MAX_KEPT: c_int = 1 << 16;

/// The facts of one communicator.
#[derive(Debug)]
struct CommFacts {
    inter: bool,
    /// Size of the (local) group.
    size: c_int,
    /// World rank of each rank of the (local) group; empty when not kept.
    world: Vec<c_int>,
}

static FACTS: CommCache<CommFacts> = CommCache::new();

/// Creates the keyval (MPI is initialized; from `init::start`). On failure the facts are read
/// from the MPI at each use, as before, with a warning.
pub fn create_keyval() {
    if let Err(rc) = FACTS.create() {
        log::warn!("cannot create the communicator facts keyval (MPI error {rc}); ranks are translated at each use");
    }
}

/// Frees the keyval (finalize; attributes still attached are deleted with their communicators).
pub fn free_keyval() {
    FACTS.free();
}

thread_local! {
    /// The communicator this thread last asked about, `comm_cache::deletions()` before that
    /// look-up, and its attached facts. Why: an operation asks two or three times (the layout's
    /// rules, the contest, the receipt) and an application mostly uses one communicator at a
    /// time; the MPI's attribute look-up is a lock and a hash look-up in Open MPI.
    static LAST: Cell<(mpi::MPI_Comm, u64, *const CommFacts)> = Cell::new((consts::comm_null(), u64::MAX, std::ptr::null()));
}

/// Runs `f` on `comm`'s facts, read from the MPI and attached the first time. `None` when the
/// MPI refuses (`comm` invalid).
fn with_facts<R>(comm: mpi::MPI_Comm, f: impl FnOnce(&CommFacts) -> R) -> Option<R> {
    let deleted = super::comm_cache::deletions();
    let (last, seen, p) = LAST.with(Cell::get);
    if last == comm && seen == deleted && !p.is_null() {
        // SAFETY: `p` was attached to `comm` and no attached value has been deleted since it
        // was looked up, so `comm` was not freed (its handle cannot name another communicator)
        // and the value lives; this call is on `comm`, which cannot be freed meanwhile.
        return Some(f(unsafe { &*p }));
    }
    FACTS.with_attached(comm, read, |v, attached| {
        if attached {
            LAST.with(|l| l.set((comm, deleted, v as *const CommFacts)));
        }
        f(v)
    })
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
    Some(CommFacts { inter: flag != 0, size, world })
}

/// Whether `comm` is an intercommunicator (`false` for an invalid one: the MPI call that
/// follows reports the error, and nothing more is asked of the MPI about it here).
pub fn is_inter(comm: mpi::MPI_Comm) -> bool {
    with_facts(comm, |f| f.inter).unwrap_or(false)
}

/// The world rank of rank `rank` of intracommunicator `comm`, if it has one (`None` for an
/// intercommunicator, an invalid communicator or a rank outside the group: the MPI call that
/// follows reports an error).
pub fn world_rank_of(comm: mpi::MPI_Comm, rank: c_int) -> Option<c_int> {
    inter_and_world_rank(comm, rank).and_then(|(_, w)| w)
}

/// Whether `comm` is an intercommunicator and, for an intracommunicator, the world rank of its
/// rank `rank` (one look-up where [`is_inter`] then [`world_rank_of`] make two). `None` for an
/// invalid communicator.
pub fn inter_and_world_rank(comm: mpi::MPI_Comm, rank: c_int) -> Option<(bool, Option<c_int>)> {
    let kept = with_facts(comm, |f| {
        let w = usize::try_from(rank).ok().and_then(|r| f.world.get(r).copied());
        // (A rank outside the group has none, kept or not: nothing to translate.)
        (f.inter, (f.inter || !f.world.is_empty() || !(0..f.size).contains(&rank)).then_some(w))
    });
    match kept {
        Some((true, _)) => Some((true, None)),
        Some((false, Some(w))) => Some((false, w.filter(|&w| w >= 0))),
        // Not kept (a large group), rank in the group: translated alone.
        Some((false, None)) => {
            Some((false, crate::transfer::node::world_ranks(comm, &[rank]).and_then(|w| w.first().copied()).filter(|&w| w >= 0)))
        }
        None => None,
    }
}
