//! Receives served from the probe stash ([`super::stash`]): the stashed message's bytes are
//! delivered into the receive's buffer and, for an M0, its chunks follow as for any pipelined
//! receive. A nonblocking receive gets a placeholder request ([`super::placeholder`]), tracked
//! and completed by sluice when the transfer is done; sluice fills in source, tag and count.

use std::ffi::{c_int, c_void};

use super::incoming::{Dest, Incoming, Outcome};
use super::placeholder::Placeholder;
use super::stash::Stashed;
use super::{is_contiguous, m0_data, true_lb};
use crate::ffi::{errclass, mpi};
use crate::protocol::datatype::TypeArg;
use crate::protocol::p2p::ops::{Dir, Op};
use crate::protocol::p2p::Layout;

type Comm = mpi::MPI_Comm;
type Dt = mpi::MPI_Datatype;

/// Starts delivering `e` into the receive of `count` elements of `datatype` at `buf`: `Ok`
/// with the transfer of an M0, `Err` with the outcome of an ordinary message (delivered).
///
/// # Safety
/// The receive buffer is valid for its typemap.
pub(super) unsafe fn start(e: Stashed, buf: *mut c_void, count: i64, datatype: Dt, comm: Comm) -> Result<Incoming, Outcome> {
    let t = TypeArg::new(datatype);
    let origin = Some((e.source, e.tag));
    let n = if e.header.is_some() { m0_data() } else { e.m0.bytes().len() };
    let (dest, cap) = if let Some(l) =
        Layout::of(buf, count, &t, crate::protocol::comm_hints::path(comm), &|| crate::protocol::p2p::shares_node(comm, e.source))
    {
        let cap = l.bytes();
        (
            Dest::Engine(Op {
                dir: Dir::Recv,
                layout: l,
                user: buf as usize,
                staging: e.m0,
                persistent: false,
                active: true,
                gap_at: 0,
                sender: None,
                comm: super::comm_key(comm),
                cut: None,
            }),
            cap,
        )
    } else if count <= 0 || buf.is_null() {
        (Dest::Bytes(std::ptr::null_mut()), 0)
    } else if is_contiguous(&t) {
        let cap = super::bytes_if_large(count, &t).unwrap_or_else(|| size_of(count, datatype));
        let base = buf.cast::<u8>().wrapping_offset(true_lb(datatype));
        // SAFETY: the stream's first bytes go to the start of the application's contiguous
        // buffer of `cap` bytes.
        unsafe { std::ptr::copy_nonoverlapping(e.m0.bytes().as_ptr(), base, n.min(cap)) };
        (Dest::Bytes(base), cap)
    } else if let Some(l) = Layout::any_compiled(buf, count, &t) {
        let cap = l.bytes();
        // An ordinary message's end is its own: whole elements of it only (MPICH).
        let m = if e.header.is_some() { n.min(cap) } else { l.unpackable(n.min(cap)) };
        // SAFETY: the range lies inside the receive's stream.
        unsafe { l.unpack_range(&e.m0.bytes()[..m], 0, buf) };
        (Dest::InPlace(l, buf), cap)
    } else {
        // A type sluice cannot unpack by ranges: the MPI unpacks an ordinary message; an M0
        // cannot be served (documented limit).
        let mut pos = 0;
        let cap = size_of(count, datatype);
        // SAFETY: unpacks at most `cap` bytes of the message into the receive.
        unsafe { mpi::PMPI_Unpack(e.m0.bytes().as_ptr().cast(), n.min(cap) as c_int, &mut pos, buf, count as c_int, datatype, comm) };
        if e.header.is_some() {
            log::error!("a probed pipelined message cannot be received into this datatype; set SLUICE_PIPELINE_THRESHOLD=off");
        }
        return Err(Outcome::new(e.total(), cap, comm, origin));
    };
    match e.header {
        Some(h) => {
            let hints = crate::protocol::comm_hints::CommHints::of(comm);
            // SAFETY: M0's data went to `dest` (Engine: unpacked by `begin`).
            Ok(unsafe { Incoming::begin(h, cap, dest, comm, hints) }.with_origin(e.source, e.tag))
        }
        None => {
            let whole = dest.layout().map_or(n, |l| l.unpackable(n));
            if let Dest::Engine(op) = &dest {
                // SAFETY: as above.
                unsafe { op.layout.unpack(&op.staging, whole, buf) };
            }
            Err(Outcome::new(n, cap, comm, origin).ending_at(whole))
        }
    }
}

fn size_of(count: i64, datatype: Dt) -> usize {
    let mut size: mpi::MPI_Count = 0;
    // SAFETY: writes one count.
    unsafe { mpi::PMPI_Type_size_x(datatype, &mut size) };
    (size.max(0) as usize).saturating_mul(count.max(0) as usize)
}

/// A blocking receive served from the stash (`matched`: `MPI_Mrecv`, whose errors MPICH raises
/// as a nonblocking completion's, `Outcome::for_request`).
///
/// # Safety
/// As `MPI_Recv`.
pub unsafe fn blocking(
    e: Stashed,
    buf: *mut c_void,
    count: i64,
    datatype: Dt,
    comm: Comm,
    status: *mut mpi::MPI_Status,
    matched: bool,
) -> c_int {
    // SAFETY: forwarded contract.
    let o = match unsafe { start(e, buf, count, datatype, comm) } {
        Ok(mut t) => {
            // SAFETY: as above.
            while !unsafe { t.advance(true) } {}
            t.finish().0
        }
        Err(o) => o,
    };
    let o = if matched { o.for_request(false) } else { o };
    // SAFETY: the application's status (or ignore).
    unsafe { o.patch(status) };
    o.code()
}

/// A nonblocking receive served from the stash: `request` gets a placeholder (a generalized
/// request of its own, [`Placeholder`]).
///
/// # Safety
/// As `MPI_Irecv`.
pub unsafe fn nonblocking(e: Stashed, buf: *mut c_void, count: i64, datatype: Dt, comm: Comm, request: *mut mpi::MPI_Request) -> c_int {
    // SAFETY: `request` is the application's.
    let p = match unsafe { Placeholder::start(e.source, e.tag, request) } {
        Ok(p) => p,
        Err(rc) => return rc,
    };
    // SAFETY: forwarded contract.
    let t = unsafe { start(e, buf, count, datatype, comm) };
    super::track::arm_served(p, t, comm);
    errclass::SUCCESS
}
