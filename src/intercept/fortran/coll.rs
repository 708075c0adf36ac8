//! Fortran bindings of the data-movement collectives, Open MPI only (its Fortran bindings call
//! `PMPI_*` directly; MPICH's `mpif.h`, `use mpi` and `use mpi_f08` call the C `MPI_*`
//! collectives, which are intercepted already).
//!
//! Buffers go through the `MPI_BOTTOM`/`MPI_IN_PLACE` sentinel conversion, handles through
//! `PMPI_*_f2c`, requests back through `PMPI_Request_c2f`. Count and displacement arrays are
//! passed as they are: a Fortran INTEGER is a C `int` ([`Fint`]), and `MPI_Neighbor_alltoallw`'s
//! `INTEGER(KIND=MPI_ADDRESS_KIND)` displacements are `MPI_Aint`. The w-forms' datatype arrays
//! are converted element by element into arrays sluice owns, one entry per peer
//! (`MPI_Alltoallw`: the communicator's size, the remote group's for an intercommunicator;
//! `MPI_Neighbor_alltoallw`: the topology's in- and out-degree); the nonblocking forms keep
//! those arrays alive until the request completes ([`coll::retain_types`]).

// Fortran signatures are fixed by the MPI standard.
#![allow(non_snake_case, clippy::too_many_arguments)]

use std::ffi::c_void;

use super::convert::*;
use super::run;
use crate::ffi::mpi::{MPI_Aint, MPI_Comm, MPI_Datatype};
use crate::ffi::{consts, Fint};
use crate::intercept::exports as c;
use crate::protocol::coll;

/// The Rust type of a Fortran argument of each kind (see [`collective`]).
macro_rules! arg_ty {
    (buf) => { *mut c_void };
    ($other:ident) => { *mut Fint };
}

/// The C argument made of a Fortran argument of each kind: `buf` a choice buffer, `int` an
/// INTEGER, `ints` an INTEGER array (passed as it is), `dtype` and `comm` handles.
macro_rules! arg_c {
    (buf, $a:ident) => {
        buffer($a)
    };
    (int, $a:ident) => {
        int($a)
    };
    (ints, $a:ident) => {
        $a
    };
    (dtype, $a:ident) => {
        type_f2c($a)
    };
    (comm, $a:ident) => {
        comm_f2c($a)
    };
}

/// A collective without datatype arrays, blocking and nonblocking (the same arguments, then a
/// request).
macro_rules! collective {
    ($($name:ident, $iname:ident => $c:ident, $ic:ident ( $($arg:ident : $kind:ident),* );)*) => {
        fortran! {$(
            fn $name [ompi] ($($arg: arg_ty!($kind)),*) {
                // SAFETY: Fortran passes every argument by reference; the converted buffers and
                // handles and the application's INTEGER arrays go to the C binding.
                unsafe { c::$c($(arg_c!($kind, $arg)),*) }
            }
            fn $iname [ompi] ($($arg: arg_ty!($kind),)* request: *mut Fint) {
                let mut r = consts::request_null();
                // SAFETY: as for the blocking form; the C call writes one request. The INTEGER
                // arrays are the application's, which it keeps until completion (MPI's rule).
                unsafe {
                    let rc = c::$ic($(arg_c!($kind, $arg),)* &mut r);
                    set_request(request, r);
                    rc
                }
            }
        )*}
    };
}

collective! {
    mpi_bcast, mpi_ibcast => MPI_Bcast, MPI_Ibcast
        (buffer: buf, count: int, datatype: dtype, root: int, comm: comm);
    mpi_gather, mpi_igather => MPI_Gather, MPI_Igather
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcount: int,
         recvtype: dtype, root: int, comm: comm);
    mpi_gatherv, mpi_igatherv => MPI_Gatherv, MPI_Igatherv
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcounts: ints,
         displs: ints, recvtype: dtype, root: int, comm: comm);
    mpi_scatter, mpi_iscatter => MPI_Scatter, MPI_Iscatter
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcount: int,
         recvtype: dtype, root: int, comm: comm);
    mpi_scatterv, mpi_iscatterv => MPI_Scatterv, MPI_Iscatterv
        (sendbuf: buf, sendcounts: ints, displs: ints, sendtype: dtype, recvbuf: buf,
         recvcount: int, recvtype: dtype, root: int, comm: comm);
    mpi_allgather, mpi_iallgather => MPI_Allgather, MPI_Iallgather
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcount: int,
         recvtype: dtype, comm: comm);
    mpi_allgatherv, mpi_iallgatherv => MPI_Allgatherv, MPI_Iallgatherv
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcounts: ints,
         displs: ints, recvtype: dtype, comm: comm);
    mpi_alltoall, mpi_ialltoall => MPI_Alltoall, MPI_Ialltoall
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcount: int,
         recvtype: dtype, comm: comm);
    mpi_alltoallv, mpi_ialltoallv => MPI_Alltoallv, MPI_Ialltoallv
        (sendbuf: buf, sendcounts: ints, sdispls: ints, sendtype: dtype, recvbuf: buf,
         recvcounts: ints, rdispls: ints, recvtype: dtype, comm: comm);
    mpi_neighbor_allgather, mpi_ineighbor_allgather
        => MPI_Neighbor_allgather, MPI_Ineighbor_allgather
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcount: int,
         recvtype: dtype, comm: comm);
    mpi_neighbor_allgatherv, mpi_ineighbor_allgatherv
        => MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcounts: ints,
         displs: ints, recvtype: dtype, comm: comm);
    mpi_neighbor_alltoall, mpi_ineighbor_alltoall
        => MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall
        (sendbuf: buf, sendcount: int, sendtype: dtype, recvbuf: buf, recvcount: int,
         recvtype: dtype, comm: comm);
    mpi_neighbor_alltoallv, mpi_ineighbor_alltoallv
        => MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv
        (sendbuf: buf, sendcounts: ints, sdispls: ints, sendtype: dtype, recvbuf: buf,
         recvcounts: ints, rdispls: ints, recvtype: dtype, comm: comm);
}

/// `n` Fortran datatype handles as C handles.
///
/// # Safety
/// `p` points to `n` handles when `n > 0`.
unsafe fn types_f2c(p: *const Fint, n: usize) -> Vec<MPI_Datatype> {
    // SAFETY: caller's contract, `k < n`.
    (0..n).map(|k| unsafe { type_f2c(p.add(k)) }).collect()
}

/// The C send and receive type arrays of `MPI_(I)alltoallw` on `comm`. With `MPI_IN_PLACE` the
/// send types are not significant and not read (a Fortran program may pass anything there);
/// the receive types stand in for them, so the MPI never sees a dangling array.
///
/// # Safety
/// Each Fortran array holds one handle per peer of `comm` (send types unless in place).
unsafe fn alltoallw_types(sendbuf: *mut c_void, sendtypes: *const Fint, recvtypes: *const Fint, comm: MPI_Comm) -> Vec<Vec<MPI_Datatype>> {
    let n = coll::peers(comm).unwrap_or(0);
    // SAFETY: caller's contract.
    let recv = unsafe { types_f2c(recvtypes, n) };
    let send = if sendbuf == consts::in_place() {
        recv.clone()
    } else {
        // SAFETY: caller's contract.
        unsafe { types_f2c(sendtypes, n) }
    };
    vec![send, recv]
}

/// The C send and receive type arrays of `MPI_(I)neighbor_alltoallw` on `comm`: one handle per
/// out-neighbor and per in-neighbor (none without a topology: the MPI reports that).
///
/// # Safety
/// The Fortran arrays hold one handle per out- and in-neighbor of this rank.
unsafe fn neighbor_types(sendtypes: *const Fint, recvtypes: *const Fint, comm: MPI_Comm) -> Vec<Vec<MPI_Datatype>> {
    let (indegree, outdegree) = coll::neighbor::degrees(comm).unwrap_or((0, 0));
    // SAFETY: caller's contract.
    unsafe { vec![types_f2c(sendtypes, outdegree), types_f2c(recvtypes, indegree)] }
}

fortran! {
    fn mpi_alltoallw [ompi] (
        sendbuf: *mut c_void, sendcounts: *mut Fint, sdispls: *mut Fint, sendtypes: *mut Fint,
        recvbuf: *mut c_void, recvcounts: *mut Fint, rdispls: *mut Fint, recvtypes: *mut Fint,
        comm: *mut Fint,
    ) {
        // SAFETY: Fortran references; the type arrays hold one handle per peer (MPI's
        // contract), converted into `t`, which outlives the blocking call.
        unsafe {
            let (cm, sb) = (comm_f2c(comm), buffer(sendbuf));
            let t = alltoallw_types(sb, sendtypes, recvtypes, cm);
            c::MPI_Alltoallw(sb, sendcounts, sdispls, t[0].as_ptr(), buffer(recvbuf), recvcounts,
                rdispls, t[1].as_ptr(), cm)
        }
    }
    fn mpi_ialltoallw [ompi] (
        sendbuf: *mut c_void, sendcounts: *mut Fint, sdispls: *mut Fint, sendtypes: *mut Fint,
        recvbuf: *mut c_void, recvcounts: *mut Fint, rdispls: *mut Fint, recvtypes: *mut Fint,
        comm: *mut Fint, request: *mut Fint,
    ) {
        let mut r = consts::request_null();
        // SAFETY: as for mpi_alltoallw; the converted type arrays stay with the request until
        // it completes (moving the vectors keeps their heap storage in place).
        unsafe {
            let (cm, sb) = (comm_f2c(comm), buffer(sendbuf));
            let t = alltoallw_types(sb, sendtypes, recvtypes, cm);
            let rc = c::MPI_Ialltoallw(sb, sendcounts, sdispls, t[0].as_ptr(), buffer(recvbuf),
                recvcounts, rdispls, t[1].as_ptr(), cm, &mut r);
            coll::retain_types(r, t);
            set_request(request, r);
            rc
        }
    }
    fn mpi_neighbor_alltoallw [ompi] (
        sendbuf: *mut c_void, sendcounts: *mut Fint, sdispls: *mut MPI_Aint,
        sendtypes: *mut Fint, recvbuf: *mut c_void, recvcounts: *mut Fint,
        rdispls: *mut MPI_Aint, recvtypes: *mut Fint, comm: *mut Fint,
    ) {
        // SAFETY: Fortran references; the type arrays hold one handle per out-/in-neighbor
        // (MPI's contract), converted into `t`, which outlives the blocking call; the
        // displacements are INTEGER(KIND=MPI_ADDRESS_KIND), i.e. MPI_Aint.
        unsafe {
            let cm = comm_f2c(comm);
            let t = neighbor_types(sendtypes, recvtypes, cm);
            c::MPI_Neighbor_alltoallw(buffer(sendbuf), sendcounts, sdispls, t[0].as_ptr(),
                buffer(recvbuf), recvcounts, rdispls, t[1].as_ptr(), cm)
        }
    }
    fn mpi_ineighbor_alltoallw [ompi] (
        sendbuf: *mut c_void, sendcounts: *mut Fint, sdispls: *mut MPI_Aint,
        sendtypes: *mut Fint, recvbuf: *mut c_void, recvcounts: *mut Fint,
        rdispls: *mut MPI_Aint, recvtypes: *mut Fint, comm: *mut Fint, request: *mut Fint,
    ) {
        let mut r = consts::request_null();
        // SAFETY: as for mpi_neighbor_alltoallw; the converted type arrays stay with the
        // request until it completes.
        unsafe {
            let cm = comm_f2c(comm);
            let t = neighbor_types(sendtypes, recvtypes, cm);
            let rc = c::MPI_Ineighbor_alltoallw(buffer(sendbuf), sendcounts, sdispls,
                t[0].as_ptr(), buffer(recvbuf), recvcounts, rdispls, t[1].as_ptr(), cm, &mut r);
            coll::retain_types(r, t);
            set_request(request, r);
            rc
        }
    }
}
