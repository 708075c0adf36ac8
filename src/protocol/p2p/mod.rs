//! Point-to-point protocol: sends and receives of non-contiguous datatypes run through sluice's
//! datatype engine; everything else goes straight to the MPI.
//!
//! Wire format (docs/protocol.md): a message is exactly the packed stream the MPI itself would
//! send for the user's (buffer, count, datatype), sent as `count * size` bytes of `MPI_PACKED`
//! on the user's communicator and tag. So it matches, orders, probes and truncates exactly as the
//! user's message would, and any receive (contiguous, another layout of the same signature,
//! `MPI_PACKED`, sluice or not) reads it correctly. Receives of a non-contiguous type land in a
//! staging buffer of the user's capacity and are unpacked at completion.
//!
//! - [`send`]: the four send modes, blocking, nonblocking and persistent;
//! - [`recv`]: receives, matched receives, Sendrecv and Sendrecv_replace;
//! - [`ops`]: the table of requests sluice must finish (unpack, release staging);
//! - [`complete`]: the Wait/Test family, Request_free, Request_get_status, Start/Startall;
//! - [`fast`]: which calls the handlers would forward unchanged, decided before dispatch;
//! - [`waitall_guard`]: Waitall without Open MPI 4.1's spin at `MPI_THREAD_MULTIPLE`.

pub mod complete;
pub mod contest;
pub mod fast;
pub mod ops;
pub mod pipeline;
pub mod recv;
pub mod send;
pub mod waitall_guard;

use std::ffi::c_int;

use crate::ffi::{consts, errclass, mpi};
use crate::transfer::staging;

/// The engine's view of a typed buffer, shared with the collective protocol.
pub use crate::protocol::layout::Layout;

/// What the completion calls must attend to (requests sluice tracks, pipelined receives,
/// pipelined sends in flight) is counted by the progress engine's sources, whose total the
/// fast path ([`fast::completion`]) tests with a single load.
pub(crate) use crate::transfer::runtime::progress::Source;

/// Bytes of the staging buffer to unpack after a receive that returned `rc` with `status`, for
/// a receive of `capacity` bytes: what the MPI itself leaves in a truncated receive buffer.
/// Open MPI writes the prefix that fits; MPICH leaves the buffer untouched (measured by
/// `tests/c/p2p_conf_basic.c`, which compares sluice with the bare MPI).
///
/// # Safety
/// `status` is the MPI's status of this completed receive.
pub(crate) unsafe fn delivered_bytes(rc: c_int, status: *const mpi::MPI_Status, capacity: usize) -> usize {
    if rc == errclass::SUCCESS {
        // SAFETY: forwarded contract.
        return unsafe { received_bytes(status) };
    }
    if error_class(rc) == errclass::ERR_TRUNCATE && cfg!(sluice_mpi = "openmpi") {
        // SAFETY: forwarded contract.
        return unsafe { received_bytes(status) }.min(capacity);
    }
    0
}

/// A receive whose delivered bytes end inside a predefined element of its type, on MPICH: its
/// status counts the `whole` bytes unpacked; the caller then raises `MPI_ERR_TRUNCATE`
/// ([`raise_partial`], [`raise_partial_in_status`]). MPICH's engine stops at the partial
/// element and fails the receive the same way (measured: `tests/c/p2p_conf_partial.c`; its own
/// status then counts the whole bytes or 0, depending on whether the message arrived before the
/// receive was posted, so sluice takes the former).
///
/// # Safety
/// `status` is a writable status of the completed receive (or `MPI_STATUS_IGNORE`).
pub(crate) unsafe fn partial_element(status: *mut mpi::MPI_Status, whole: usize) {
    if !status.is_null() && status != consts::status_ignore() {
        // SAFETY: a valid status (above).
        unsafe { mpi::PMPI_Status_set_elements_x(status, consts::byte(), whole as mpi::MPI_Count) };
    }
    log::debug!("a receive ended inside a predefined element of its type: {whole} whole bytes unpacked, MPI_ERR_TRUNCATE");
}

/// Reports a single completion that [`partial_element`] failed: `comm`'s error handler, then
/// `MPI_ERR_TRUNCATE` for the call to return (when the MPI reported no error of its own).
pub(crate) fn raise_partial(rc: c_int, failed: Option<mpi::MPI_Comm>) -> c_int {
    match failed {
        Some(comm) if rc == errclass::SUCCESS => {
            // SAFETY: the receive's communicator, valid while its request was.
            unsafe { mpi::PMPI_Comm_call_errhandler(comm, errclass::ERR_TRUNCATE) };
            errclass::ERR_TRUNCATE
        }
        _ => rc,
    }
}

/// Reports a multiple completion in which [`partial_element`] failed the receives of status
/// entries `failed` (`(entry, comm)`) among the `completed` entries: each such entry's
/// `MPI_ERROR` is `MPI_ERR_TRUNCATE`, the others' `MPI_SUCCESS` when the MPI reported no error,
/// and the call returns `MPI_ERR_IN_STATUS` through the first one's handler, as the MPI does.
///
/// # Safety
/// `status(k)` is the call's writable status entry `k` for every `k` in `completed` and `failed`.
pub(crate) unsafe fn raise_partial_in_status(
    rc: c_int,
    failed: &[(usize, mpi::MPI_Comm)],
    completed: impl Iterator<Item = usize>,
    status: impl Fn(usize) -> *mut mpi::MPI_Status,
) -> c_int {
    let Some(&(_, comm)) = failed.first() else { return rc };
    if rc != errclass::SUCCESS && rc != errclass::ERR_IN_STATUS {
        return rc;
    }
    // SAFETY: the caller's status entries.
    unsafe {
        if rc == errclass::SUCCESS {
            for k in completed {
                (*status(k)).MPI_ERROR = errclass::SUCCESS;
            }
        }
        for &(k, _) in failed {
            (*status(k)).MPI_ERROR = errclass::ERR_TRUNCATE;
        }
        if rc == errclass::SUCCESS {
            // The MPI invoked the handler itself for its own error.
            mpi::PMPI_Comm_call_errhandler(comm, errclass::ERR_IN_STATUS);
        }
    }
    errclass::ERR_IN_STATUS
}

pub(crate) use super::quiet::QuietWorld;

/// `MPI_Error_class` of a code returned by the MPI.
pub(crate) fn error_class(rc: c_int) -> c_int {
    let mut class = rc;
    // SAFETY: PMPI_Error_class only reads the code and writes one int.
    unsafe { mpi::PMPI_Error_class(rc, &mut class) };
    class
}

/// Bytes a completed receive delivered, from its status (0 if cancelled or unknown).
///
/// # Safety
/// `status` points to a status the MPI filled for a completed receive.
pub(crate) unsafe fn received_bytes(status: *const mpi::MPI_Status) -> usize {
    let mut cancelled = 0;
    let mut n: c_int = 0;
    // SAFETY: reads the status; writes one int each.
    unsafe {
        mpi::PMPI_Test_cancelled(status, &mut cancelled);
        if cancelled != 0 || mpi::PMPI_Get_count(status, consts::byte(), &mut n) != errclass::SUCCESS {
            return 0;
        }
    }
    if n == crate::ffi::UNDEFINED || n < 0 {
        0
    } else {
        n as usize
    }
}

/// An all-zero status for calls made with `MPI_STATUS_IGNORE` by the application but whose
/// status sluice needs.
pub(crate) fn blank_status() -> mpi::MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `status` unless it is `MPI_STATUS_IGNORE`, else `local`.
pub(crate) fn status_or(status: *mut mpi::MPI_Status, local: &mut mpi::MPI_Status) -> *mut mpi::MPI_Status {
    if status.is_null() || status == consts::status_ignore() {
        local
    } else {
        status
    }
}

/// `MPI_PROC_NULL`: such calls go to the MPI unchanged (nothing is moved).
pub(crate) fn is_proc_null(rank: c_int) -> bool {
    rank == crate::ffi::PROC_NULL
}

/// Whether `rank` of `comm` runs on this node (asked by `Layout::of` only where a rule depends
/// on the peer's place); `true` where that cannot be told (`MPI_ANY_SOURCE`, an invalid rank,
/// an intercommunicator, a process outside `MPI_COMM_WORLD`), the common case of one node.
pub(crate) fn shares_node(comm: mpi::MPI_Comm, rank: c_int) -> bool {
    if rank < 0 || comm == crate::ffi::consts::comm_null() {
        return true;
    }
    // One look-up of the communicator's facts (a rank past its size has no world rank).
    match crate::protocol::comm_facts::inter_and_world_rank(comm, rank) {
        Some((false, world)) => world.is_none_or(crate::transfer::node::is_local),
        _ => true,
    }
}

/// [`shares_node`] for one operation, asked of the MPI at most once: a send of a contested
/// size asks for the layout's rules and again for the contest (tens of nanoseconds each, a
/// percent of a 64 KiB message between two ranks of one node).
pub(crate) fn shares_node_once(comm: mpi::MPI_Comm, rank: c_int) -> impl Fn() -> bool {
    let known = std::cell::Cell::new(None);
    move || match known.get() {
        Some(b) => b,
        None => {
            let b = shares_node(comm, rank);
            known.set(Some(b));
            b
        }
    }
}

/// Requests and staging buffers sluice still holds (leak checks; `sluice_p2p_outstanding`).
pub fn outstanding() -> (i64, i64) {
    // Chunks of pipelined sends complete when the receiver has them, and requests the
    // application freed while active (detached) when their transfer is done: let them finish
    // first. Nothing else tests a freed request, so without this a leak check made after the
    // application knows the data arrived (a later handshake) still counted it (found by the
    // thread stress soak, about 1 run in 200 on Open MPI).
    for _ in 0..10_000 {
        if !pipeline::send::in_flight() && ops::detached() == 0 {
            break;
        }
        crate::transfer::runtime::progress::drive();
    }
    // Buffers of pipelined sends whose receiver never takes every chunk (a receive smaller than
    // the first message truncated it) stay until MPI_Finalize drains them: not a leak.
    let sending = pipeline::send::staging_held() as i64;
    ((ops::tracked() + pipeline::track::tracked()) as i64, staging::in_use() - sending)
}

/// `SLUICE_LOG=plan`: a send (`send`) or receive through staging, once per (direction, type,
/// size class).
fn note_staged(layout: &Layout, send: bool) {
    if !crate::logging::plans() {
        return; // the key is not even computed: this runs on every staged call
    }
    let (ct, bytes) = (layout.compiled(), layout.bytes());
    let key = crate::logging::plan_key(("staged", send, ct.id(), crate::logging::size_class(bytes)));
    crate::logging::plan_once(key, || {
        let (id, kernel) = (ct.id(), ct.kernel().name());
        if send {
            format!("send of {bytes} bytes (datatype #{id}): staged, packed by sluice's {kernel} kernel, one MPI message of MPI_PACKED")
        } else {
            format!("receive of up to {bytes} bytes (datatype #{id}): staged, the MPI receives MPI_PACKED bytes, sluice's {kernel} kernel unpacks them")
        }
    });
}
