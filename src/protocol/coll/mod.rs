//! Collective protocol: data-movement collectives (Bcast, Gather(v), Scatter(v), Allgather(v),
//! Alltoall(v,w), Neighbor_allgather(v), Neighbor_alltoall(v,w) and their nonblocking forms)
//! whose buffers use non-contiguous datatypes run on contiguous bytes: sluice's engine packs the
//! send buffer into staging, the MPI's own collective moves `MPI_BYTE`s (per-peer counts and
//! displacements converted to bytes), and the engine unpacks the received bytes
//! (docs/protocol.md, "Collectives").
//!
//! - A call whose buffers are all contiguous (or empty) goes to the MPI unchanged: the fast path
//!   is one datatype-filter lookup per type argument ([`noncontiguous`]).
//! - Anything the conversion cannot express exactly goes to the MPI unchanged as well, so the
//!   MPI reports invalid arguments itself: negative counts, `MPI_BOTTOM`/null buffers with data,
//!   null or uncommitted types, a bad root, `MPI_COMM_NULL`, intercommunicators, a communicator
//!   without the topology a neighborhood collective needs, more than `INT_MAX` bytes.
//! - [`side`]: one buffer argument (send or receive) as the converted call sees it;
//!   [`rooted`], [`alltoall`], [`neighbor`]: the calls; [`pending`]: the finish work of a
//!   nonblocking collective, completed by any call of the Wait/Test family.

// MPI_Aint and MPI_Count are `i64` in MPICH but `isize`/`c_long` in Open MPI: the casts that are
// no-ops for one flavor are needed by the other.
#![allow(clippy::unnecessary_cast)]

pub mod alltoall;
pub mod neighbor;
mod pending;
pub mod rooted;
mod side;

#[cfg_attr(not(sluice_mpi = "openmpi"), allow(unused_imports))] // used by the Open MPI Fortran bindings
pub use pending::retain_types;

use std::ffi::c_int;

use crate::ffi::{consts, errclass, mpi};
use crate::protocol::datatype::lookup;
use crate::protocol::p2p::ops;
use side::{Side, Slots};

type Req = mpi::MPI_Request;

/// Whether `t` is a compiled type whose elements are not one contiguous run in memory: the only
/// reason to convert a collective. One filter load for predefined types.
#[inline]
fn noncontiguous(t: mpi::MPI_Datatype) -> bool {
    lookup(t).is_some_and(|ct| {
        let dl = ct.dataloop();
        !(dl.contiguous && dl.extent == dl.size as i64)
    })
}

/// Whether any of `types` is non-contiguous and the collective protocol is on.
#[inline]
fn any_noncontiguous(types: &[mpi::MPI_Datatype]) -> bool {
    types.iter().any(|&t| noncontiguous(t)) && crate::runtime::config().is_some_and(|c| c.coll)
}

/// Size of and rank in an intracommunicator; `None` for `MPI_COMM_NULL`, intercommunicators
/// (left to the MPI) and failed queries.
pub(crate) fn intracomm(comm: mpi::MPI_Comm) -> Option<(usize, usize)> {
    if comm == consts::comm_null() {
        return None;
    }
    let (mut inter, mut size, mut rank) = (0, 0, 0);
    // SAFETY: a non-null communicator handle of the application; each call writes one int. An
    // invalid handle is erroneous with the bare MPI too.
    let ok = unsafe {
        mpi::PMPI_Comm_test_inter(comm, &mut inter) == errclass::SUCCESS
            && inter == 0
            && mpi::PMPI_Comm_size(comm, &mut size) == errclass::SUCCESS
            && mpi::PMPI_Comm_rank(comm, &mut rank) == errclass::SUCCESS
    };
    (ok && size > 0 && rank >= 0).then_some((size as usize, rank as usize))
}

/// Entries of `MPI_Alltoallw`'s per-peer arrays in `comm`: its size, or for an
/// intercommunicator the remote group's size. `None` for `MPI_COMM_NULL` and failed queries.
/// Used by the Fortran bindings of `MPI_(I)alltoallw` to convert their datatype arrays.
#[cfg_attr(not(sluice_mpi = "openmpi"), allow(dead_code))] // used by the Open MPI Fortran bindings
pub fn peers(comm: mpi::MPI_Comm) -> Option<usize> {
    if comm == consts::comm_null() {
        return None;
    }
    let (mut inter, mut size) = (0, 0);
    // SAFETY: a non-null communicator handle of the application; each call writes one int. An
    // invalid handle is erroneous with the bare MPI too.
    let ok = unsafe {
        mpi::PMPI_Comm_test_inter(comm, &mut inter) == errclass::SUCCESS
            && if inter != 0 {
                mpi::PMPI_Comm_remote_size(comm, &mut size) == errclass::SUCCESS
            } else {
                mpi::PMPI_Comm_size(comm, &mut size) == errclass::SUCCESS
            }
    };
    (ok && size >= 0).then_some(size as usize)
}

/// A converted collective: its send and receive sides (`None`: the argument is passed as the
/// application gave it, e.g. `MPI_IN_PLACE` or a buffer not significant at this rank), and
/// which receive slots hold input (`MPI_IN_PLACE`) and output.
#[derive(Debug)]
struct Converted {
    send: Option<Side>,
    recv: Option<Side>,
    /// Receive slots packed before the call (the input of an `MPI_IN_PLACE` call).
    recv_input: Slots,
    /// Receive slots unpacked after it.
    recv_output: Slots,
}

impl Converted {
    /// Only worth it when some buffer goes through the engine; otherwise the original call
    /// is exact and cheaper.
    fn uses_engine(&self) -> bool {
        self.send.as_ref().is_some_and(Side::uses_engine) || self.recv.as_ref().is_some_and(Side::uses_engine)
    }

    /// Copies this rank's own block (send slot and receive slot `rank`) directly, and keeps the
    /// MPI from copying the staged bytes of that slot, which nobody reads
    /// ([`Side::skip_staged_block`]; `uniform`: the call has one count for all peers): the calls
    /// whose own block goes from the send buffer to the receive buffer unchanged (alltoall,
    /// alltoallv).
    ///
    /// # Safety
    /// The application's send buffer is readable and its receive buffer writable for slot `rank`.
    unsafe fn copy_own_block(&mut self, rank: usize, uniform: bool) {
        if let (Some(s), Some(r)) = (self.send.as_mut(), self.recv.as_mut()) {
            // SAFETY: forwarded contract.
            if unsafe { s.copy_block(rank, r, rank) } {
                s.skip_staged_block(rank, uniform);
                r.skip_staged_block(rank, uniform);
            }
        }
    }

    /// Unpacks the received bytes after the collective completed successfully, `in_call` (a
    /// blocking collective) or at a later completion.
    ///
    /// # Safety
    /// The collective completed; the application's receive buffer is still valid.
    unsafe fn deliver(&mut self, in_call: bool) {
        if let Some(r) = self.recv.as_mut() {
            // SAFETY: forwarded contract.
            unsafe { r.unpack(self.recv_output, in_call) };
        }
    }
}

/// `SLUICE_LOG=plan`: how a collective is converted, once per (call, side shapes, size class).
fn note_plan(name: &'static str, conv: &Converted, nonblocking: bool) {
    if !crate::logging::plans() {
        return; // the key is not even computed: these run on every staged call
    }
    let side = |s: Option<&Side>| s.map(|s| (s.uses_engine(), s.staged_bytes()));
    let (send, recv) = (side(conv.send.as_ref()), side(conv.recv.as_ref()));
    let class = |s: Option<(bool, usize)>| s.map(|(e, b)| (e, crate::logging::size_class(b)));
    crate::logging::plan_once(crate::logging::plan_key(("coll", name, nonblocking, class(send), class(recv))), || {
        let say = |what: &str, s: Option<(bool, usize)>| match s {
            None => format!("{what} as given"),
            Some((true, b)) => format!("{what} through {b} bytes of staging (sluice's engine)"),
            Some((false, _)) => format!("{what} in the application's buffer (its contiguous blocks as MPI_BYTE)"),
        };
        // MPI_Bcast, MPI_Ibcast; MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall.
        let call = if nonblocking { format!("MPI_I{}", name.to_ascii_lowercase()) } else { format!("MPI_{name}") };
        format!("{call}: converted, the MPI moves MPI_BYTEs; {}, {}", say("send side", send), say("receive side", recv))
    });
}

/// Runs a converted collective: packs, makes the MPI call `call` (blocking when `request` is
/// null, else the nonblocking form writing `*request`), and unpacks at once (blocking) or when
/// the request completes (tracked in `ops`, finished by the Wait/Test family).
///
/// # Safety
/// The application's buffers are valid for the call's typemaps; `request` is null or the
/// application's request pointer.
unsafe fn run(name: &'static str, mut conv: Converted, request: *mut Req, call: impl FnOnce(&Converted) -> c_int) -> c_int {
    note_plan(name, &conv, !request.is_null());
    // SAFETY: the caller guarantees the application's buffers (send data, and the receive
    // buffer's input slots with MPI_IN_PLACE) are readable.
    unsafe {
        if let Some(s) = conv.send.as_mut() {
            s.pack(Slots::All);
        }
        if let Some(r) = conv.recv.as_mut() {
            r.pack(conv.recv_input);
        }
    }
    if crate::stats::timing_enabled() {
        let sides = [conv.send.as_ref(), conv.recv.as_ref()];
        sides.into_iter().flatten().flat_map(Side::split_blocks).for_each(|b| crate::stats::count(crate::stats::Family::CollSplit, b));
    }
    let rc = call(&conv);
    if request.is_null() {
        if rc == errclass::SUCCESS {
            // SAFETY: the blocking collective completed.
            unsafe { conv.deliver(true) };
        }
        return rc; // staging released here
    }
    // SAFETY: the application's request pointer, written by the MPI call.
    if rc == errclass::SUCCESS && unsafe { *request } != consts::request_null() {
        // SAFETY: as above.
        ops::track(unsafe { *request }, ops::Entry::Other(Box::new(pending::Pending::new(conv))));
    }
    rc
}

/// The request pointer of a blocking call.
const BLOCKING: *mut Req = std::ptr::null_mut();
