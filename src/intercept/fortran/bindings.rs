//! The Fortran bindings and the flavor-dependent sets of names they are exported under
//! (see the module docs of `intercept::fortran`).

// Fortran signatures are fixed by the MPI standard.
#![allow(non_snake_case, clippy::too_many_arguments)]

use std::ffi::c_void;
use std::ptr::null_mut;

use super::convert::*;
use super::run;
use crate::ffi::mpi::MPI_Count;
use crate::ffi::{consts, Fint};
use crate::intercept::exports as c;

/// Exports one Rust implementation under several symbol names.
macro_rules! aliases {
    ($target:ident, $params:tt, $args:tt, { $($alias:ident),* }) => {$(
        #[doc = concat!("Fortran entry point `", stringify!($alias), "`.")]
        #[no_mangle]
        pub unsafe extern "C" fn $alias $params {
            // SAFETY: an alias of the implementation, with its contract.
            unsafe { $target $args }
        }
    )*};
}

/// The sets of exported names for the binding of `$name` (`mpi_send`), given as a list
/// (`[ompi, mpich_f08]`) or one at a time:
/// - `ompi`: Open MPI's `mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND`, `ompi_send_f`;
/// - `ompi_f08`: Open MPI's `mpi_f08` procedure `mpi_send_f08_`;
/// - `mpich_f08`: MPICH's `mpi_f08` procedure `mpi_send_f08_`.
macro_rules! export_set {
    ([], $($rest:tt)*) => {};
    ([$set:ident $(, $more:ident)*], $name:ident, $($rest:tt)*) => {
        export_set!($set, $name, $($rest)*);
        export_set!([$($more),*], $name, $($rest)*);
    };
    (ompi, $name:ident, $($rest:tt)*) => { paste::paste! {
        #[cfg(sluice_mpi = "openmpi")]
        aliases!($($rest)*, {
            [<$name _>], [<$name __>], $name, [<$name:upper>], [<o $name _f>]
        });
    }};
    (ompi_f08, $name:ident, $($rest:tt)*) => { paste::paste! {
        #[cfg(sluice_mpi = "openmpi")]
        aliases!($($rest)*, { [<$name _f08_>] });
    }};
    (mpich_f08, $name:ident, $($rest:tt)*) => { paste::paste! {
        #[cfg(sluice_mpi = "mpich")]
        aliases!($($rest)*, { [<$name _f08_>] });
    }};
}

/// Defines one Fortran binding: `fn mpi_x [sets] (args) { body }` becomes `mpi_x_impl`
/// (the body under [`run`], plus the trailing `ierr`), exported under each set of names
/// (see `export_set`).
macro_rules! fortran {
    ($(
        fn $name:ident [$($set:ident),*] ( $($arg:ident : $ty:ty),* $(,)? ) $body:block
    )*) => { paste::paste! {$(
        /// # Safety
        /// The Fortran binding's contract: every argument is a valid reference.
        #[allow(dead_code)] // not every flavor exports every binding
        unsafe fn [<$name _impl>]($($arg: $ty,)* ierr: *mut Fint) {
            run(ierr, || $body)
        }
        export_set!([$($set),*], $name, [<$name _impl>], ($($arg: $ty,)* ierr: *mut Fint),
            ($($arg,)* ierr));
    )*}};
}

/// Blocking sends: `(buf, count, datatype, dest, tag, comm)`.
macro_rules! blocking_send {
    ($($name:ident => $c:ident;)*) => {
        fortran! {$(
            fn $name [ompi] (
                buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, dest: *mut Fint,
                tag: *mut Fint, comm: *mut Fint,
            ) {
                // SAFETY: Fortran passes every argument by reference; converted handles
                // and the buffer go to the C binding of the same function.
                unsafe {
                    c::$c(buffer(buf), int(count), type_f2c(datatype), int(dest), int(tag),
                        comm_f2c(comm))
                }
            }
        )*}
    };
}

/// Calls that create a request: `(buf, count, datatype, peer, tag, comm, request)`
/// (nonblocking sends and receives, persistent inits).
macro_rules! request_op {
    ($($name:ident => $c:ident;)*) => {
        fortran! {$(
            fn $name [ompi] (
                buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, peer: *mut Fint,
                tag: *mut Fint, comm: *mut Fint, request: *mut Fint,
            ) {
                let mut r = consts::request_null();
                // SAFETY: Fortran references; the C call writes one request.
                unsafe {
                    let rc = c::$c(buffer(buf), int(count), type_f2c(datatype), int(peer),
                        int(tag), comm_f2c(comm), &mut r);
                    set_request(request, r);
                    rc
                }
            }
        )*}
    };
}

// ---- environment -------------------------------------------------------------------------
fortran! {
    fn mpi_init [ompi, mpich_f08] () {
        // SAFETY: MPI_Init accepts NULL argc/argv.
        unsafe { c::MPI_Init(null_mut(), null_mut()) }
    }
    fn mpi_init_thread [ompi, mpich_f08] (required: *mut Fint, provided: *mut Fint) {
        // SAFETY: Fortran references; `provided` is a writable INTEGER.
        unsafe { c::MPI_Init_thread(null_mut(), null_mut(), int(required), provided) }
    }
    fn mpi_query_thread [ompi, mpich_f08] (provided: *mut Fint) {
        // SAFETY: `provided` is a writable INTEGER.
        unsafe { c::MPI_Query_thread(provided) }
    }
    fn mpi_finalize [ompi, mpich_f08] () {
        // SAFETY: no arguments.
        unsafe { c::MPI_Finalize() }
    }
}

// ---- point-to-point ----------------------------------------------------------------------
blocking_send! {
    mpi_send => MPI_Send;
    mpi_bsend => MPI_Bsend;
    mpi_ssend => MPI_Ssend;
    mpi_rsend => MPI_Rsend;
}

request_op! {
    mpi_isend => MPI_Isend;
    mpi_ibsend => MPI_Ibsend;
    mpi_issend => MPI_Issend;
    mpi_irsend => MPI_Irsend;
    mpi_irecv => MPI_Irecv;
    mpi_send_init => MPI_Send_init;
    mpi_bsend_init => MPI_Bsend_init;
    mpi_ssend_init => MPI_Ssend_init;
    mpi_rsend_init => MPI_Rsend_init;
    mpi_recv_init => MPI_Recv_init;
}

fortran! {
    fn mpi_recv [ompi] (
        buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, source: *mut Fint,
        tag: *mut Fint, comm: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; `st` converts the status.
        unsafe {
            let rc = c::MPI_Recv(buffer(buf), int(count), type_f2c(datatype), int(source),
                int(tag), comm_f2c(comm), st.c());
            st.write_back();
            rc
        }
    }
    fn mpi_sendrecv [ompi] (
        sendbuf: *mut c_void, sendcount: *mut Fint, sendtype: *mut Fint, dest: *mut Fint,
        sendtag: *mut Fint, recvbuf: *mut c_void, recvcount: *mut Fint, recvtype: *mut Fint,
        source: *mut Fint, recvtag: *mut Fint, comm: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; `st` converts the status.
        unsafe {
            let rc = c::MPI_Sendrecv(buffer(sendbuf), int(sendcount), type_f2c(sendtype),
                int(dest), int(sendtag), buffer(recvbuf), int(recvcount), type_f2c(recvtype),
                int(source), int(recvtag), comm_f2c(comm), st.c());
            st.write_back();
            rc
        }
    }
    fn mpi_sendrecv_replace [ompi] (
        buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, dest: *mut Fint,
        sendtag: *mut Fint, source: *mut Fint, recvtag: *mut Fint, comm: *mut Fint,
        status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; `st` converts the status.
        unsafe {
            let rc = c::MPI_Sendrecv_replace(buffer(buf), int(count), type_f2c(datatype),
                int(dest), int(sendtag), int(source), int(recvtag), comm_f2c(comm), st.c());
            st.write_back();
            rc
        }
    }

    // ---- persistent ----------------------------------------------------------------------
    fn mpi_start [ompi, mpich_f08] (request: *mut Fint) {
        // SAFETY: Fortran reference to one request, converted both ways.
        unsafe {
            let mut r = request_f2c(request);
            let rc = c::MPI_Start(&mut r);
            set_request(request, r);
            rc
        }
    }
    fn mpi_startall [ompi, mpich_f08] (count: *mut Fint, requests: *mut Fint) {
        // SAFETY: Fortran references; `requests` holds `count` handles.
        unsafe {
            let mut reqs = Requests::new(requests, int(count));
            let rc = c::MPI_Startall(int(count), reqs.c());
            reqs.write_back();
            rc
        }
    }

    // ---- probes and matched receives -----------------------------------------------------
    fn mpi_probe [ompi, mpich_f08] (
        source: *mut Fint, tag: *mut Fint, comm: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; `st` converts the status.
        unsafe {
            let rc = c::MPI_Probe(int(source), int(tag), comm_f2c(comm), st.c());
            st.write_back();
            rc
        }
    }
    fn mpi_iprobe [ompi, ompi_f08, mpich_f08] (
        source: *mut Fint, tag: *mut Fint, comm: *mut Fint, flag: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        let mut f = 0;
        // SAFETY: Fortran references; `flag` is a LOGICAL.
        unsafe {
            let rc = c::MPI_Iprobe(int(source), int(tag), comm_f2c(comm), &mut f, st.c());
            set_logical(flag, f);
            st.write_back();
            rc
        }
    }
    fn mpi_mprobe [ompi, mpich_f08] (
        source: *mut Fint, tag: *mut Fint, comm: *mut Fint, message: *mut Fint,
        status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        let mut m = consts::message_null();
        // SAFETY: Fortran references; the message handle is converted back.
        unsafe {
            let rc = c::MPI_Mprobe(int(source), int(tag), comm_f2c(comm), &mut m, st.c());
            set_message(message, m);
            st.write_back();
            rc
        }
    }
    fn mpi_improbe [ompi, ompi_f08, mpich_f08] (
        source: *mut Fint, tag: *mut Fint, comm: *mut Fint, flag: *mut Fint, message: *mut Fint,
        status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        let mut m = consts::message_null();
        let mut f = 0;
        // SAFETY: Fortran references; `flag` is a LOGICAL.
        unsafe {
            let rc = c::MPI_Improbe(int(source), int(tag), comm_f2c(comm), &mut f, &mut m,
                st.c());
            set_logical(flag, f);
            if f != 0 {
                set_message(message, m);
            }
            st.write_back();
            rc
        }
    }
    fn mpi_mrecv [ompi] (
        buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, message: *mut Fint,
        status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; the message handle is converted both ways.
        unsafe {
            let mut m = message_f2c(message);
            let rc = c::MPI_Mrecv(buffer(buf), int(count), type_f2c(datatype), &mut m, st.c());
            set_message(message, m);
            st.write_back();
            rc
        }
    }
    fn mpi_imrecv [ompi] (
        buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, message: *mut Fint,
        request: *mut Fint,
    ) {
        let mut r = consts::request_null();
        // SAFETY: Fortran references; message in/out, one request out.
        unsafe {
            let mut m = message_f2c(message);
            let rc = c::MPI_Imrecv(buffer(buf), int(count), type_f2c(datatype), &mut m, &mut r);
            set_message(message, m);
            set_request(request, r);
            rc
        }
    }

    // ---- completion ----------------------------------------------------------------------
    fn mpi_wait [ompi, mpich_f08] (request: *mut Fint, status: *mut Fint) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; request in/out, status out.
        unsafe {
            let mut r = request_f2c(request);
            let rc = c::MPI_Wait(&mut r, st.c());
            set_request(request, r);
            st.write_back();
            rc
        }
    }
    fn mpi_waitall [ompi, mpich_f08] (
        count: *mut Fint, requests: *mut Fint, statuses: *mut Fint,
    ) {
        // SAFETY: Fortran references; arrays of `count` requests and statuses.
        unsafe {
            let n = int(count);
            let mut reqs = Requests::new(requests, n);
            let mut sts = StatusesOut::new(statuses, n);
            let rc = c::MPI_Waitall(n, reqs.c(), sts.c());
            reqs.write_back();
            sts.write_back(n);
            rc
        }
    }
    fn mpi_waitany [ompi, mpich_f08] (
        count: *mut Fint, requests: *mut Fint, index: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        // SAFETY: Fortran references; `index` becomes 1-based.
        unsafe {
            let n = int(count);
            let mut reqs = Requests::new(requests, n);
            let rc = c::MPI_Waitany(n, reqs.c(), index, st.c());
            reqs.write_back();
            *index = fortran_index(*index);
            st.write_back();
            rc
        }
    }
    fn mpi_waitsome [ompi, mpich_f08] (
        incount: *mut Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
        statuses: *mut Fint,
    ) {
        // SAFETY: Fortran references; `indices` and `statuses` hold `incount` entries, the
        // first `outcount` are written.
        unsafe {
            let n = int(incount);
            let mut reqs = Requests::new(requests, n);
            let mut sts = StatusesOut::new(statuses, n);
            let rc = c::MPI_Waitsome(n, reqs.c(), outcount, indices, sts.c());
            reqs.write_back();
            fortran_indices(indices, *outcount);
            sts.write_back(*outcount);
            rc
        }
    }
    fn mpi_test [ompi, ompi_f08, mpich_f08] (
        request: *mut Fint, flag: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        let mut f = 0;
        // SAFETY: Fortran references; request in/out, `flag` a LOGICAL.
        unsafe {
            let mut r = request_f2c(request);
            let rc = c::MPI_Test(&mut r, &mut f, st.c());
            set_request(request, r);
            set_logical(flag, f);
            st.write_back();
            rc
        }
    }
    fn mpi_testall [ompi, ompi_f08, mpich_f08] (
        count: *mut Fint, requests: *mut Fint, flag: *mut Fint, statuses: *mut Fint,
    ) {
        let mut f = 0;
        // SAFETY: Fortran references; arrays of `count` requests and statuses.
        unsafe {
            let n = int(count);
            let mut reqs = Requests::new(requests, n);
            let mut sts = StatusesOut::new(statuses, n);
            let rc = c::MPI_Testall(n, reqs.c(), &mut f, sts.c());
            reqs.write_back();
            set_logical(flag, f);
            sts.write_back(n);
            rc
        }
    }
    fn mpi_testany [ompi, ompi_f08, mpich_f08] (
        count: *mut Fint, requests: *mut Fint, index: *mut Fint, flag: *mut Fint,
        status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        let mut f = 0;
        // SAFETY: Fortran references; `index` becomes 1-based, `flag` a LOGICAL.
        unsafe {
            let n = int(count);
            let mut reqs = Requests::new(requests, n);
            let rc = c::MPI_Testany(n, reqs.c(), index, &mut f, st.c());
            reqs.write_back();
            *index = fortran_index(*index);
            set_logical(flag, f);
            st.write_back();
            rc
        }
    }
    fn mpi_testsome [ompi, ompi_f08, mpich_f08] (
        incount: *mut Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
        statuses: *mut Fint,
    ) {
        // SAFETY: as for mpi_waitsome.
        unsafe {
            let n = int(incount);
            let mut reqs = Requests::new(requests, n);
            let mut sts = StatusesOut::new(statuses, n);
            let rc = c::MPI_Testsome(n, reqs.c(), outcount, indices, sts.c());
            reqs.write_back();
            fortran_indices(indices, *outcount);
            sts.write_back(*outcount);
            rc
        }
    }
    fn mpi_request_free [ompi, mpich_f08] (request: *mut Fint) {
        // SAFETY: Fortran reference to one request, set to MPI_REQUEST_NULL.
        unsafe {
            let mut r = request_f2c(request);
            let rc = c::MPI_Request_free(&mut r);
            set_request(request, r);
            rc
        }
    }
    fn mpi_request_get_status [ompi, ompi_f08, mpich_f08] (
        request: *mut Fint, flag: *mut Fint, status: *mut Fint,
    ) {
        let mut st = StatusOut::new(status);
        let mut f = 0;
        // SAFETY: Fortran references; the request is only read.
        unsafe {
            let rc = c::MPI_Request_get_status(request_f2c(request), &mut f, st.c());
            set_logical(flag, f);
            st.write_back();
            rc
        }
    }
    fn mpi_cancel [ompi, mpich_f08] (request: *mut Fint) {
        // SAFETY: Fortran reference to one request (not modified by MPI_Cancel).
        unsafe {
            let mut r = request_f2c(request);
            c::MPI_Cancel(&mut r)
        }
    }
    fn mpi_get_count [ompi, mpich_f08] (
        status: *mut Fint, datatype: *mut Fint, count: *mut Fint,
    ) {
        // SAFETY: Fortran references; `count` is a writable INTEGER.
        unsafe { c::MPI_Get_count(&status_in(status), type_f2c(datatype), count) }
    }
    fn mpi_get_elements [ompi, mpich_f08] (
        status: *mut Fint, datatype: *mut Fint, count: *mut Fint,
    ) {
        // SAFETY: as for mpi_get_count.
        unsafe { c::MPI_Get_elements(&status_in(status), type_f2c(datatype), count) }
    }
    fn mpi_get_elements_x [ompi, mpich_f08] (
        status: *mut Fint, datatype: *mut Fint, count: *mut MPI_Count,
    ) {
        // SAFETY: as for mpi_get_count; `count` is INTEGER(KIND=MPI_COUNT_KIND).
        unsafe { c::MPI_Get_elements_x(&status_in(status), type_f2c(datatype), count) }
    }

    // ---- datatypes and packing -----------------------------------------------------------
    fn mpi_type_commit [ompi, mpich_f08] (datatype: *mut Fint) {
        // SAFETY: Fortran reference to one datatype handle, converted both ways.
        unsafe {
            let mut t = type_f2c(datatype);
            let rc = c::MPI_Type_commit(&mut t);
            set_dtype(datatype, t);
            rc
        }
    }
    fn mpi_type_free [ompi, mpich_f08] (datatype: *mut Fint) {
        // SAFETY: as for mpi_type_commit.
        unsafe {
            let mut t = type_f2c(datatype);
            let rc = c::MPI_Type_free(&mut t);
            set_dtype(datatype, t);
            rc
        }
    }
    fn mpi_type_dup [ompi, mpich_f08] (oldtype: *mut Fint, newtype: *mut Fint) {
        let mut t = consts::datatype_null();
        // SAFETY: Fortran references; one datatype handle out.
        unsafe {
            let rc = c::MPI_Type_dup(type_f2c(oldtype), &mut t);
            set_dtype(newtype, t);
            rc
        }
    }
    fn mpi_pack [ompi] (
        inbuf: *mut c_void, incount: *mut Fint, datatype: *mut Fint, outbuf: *mut c_void,
        outsize: *mut Fint, position: *mut Fint, comm: *mut Fint,
    ) {
        // SAFETY: Fortran references; `position` is an in/out INTEGER.
        unsafe {
            c::MPI_Pack(buffer(inbuf), int(incount), type_f2c(datatype), outbuf, int(outsize),
                position, comm_f2c(comm))
        }
    }
    fn mpi_unpack [ompi] (
        inbuf: *mut c_void, insize: *mut Fint, position: *mut Fint, outbuf: *mut c_void,
        outcount: *mut Fint, datatype: *mut Fint, comm: *mut Fint,
    ) {
        // SAFETY: Fortran references; `position` is an in/out INTEGER.
        unsafe {
            c::MPI_Unpack(inbuf, int(insize), position, buffer(outbuf), int(outcount),
                type_f2c(datatype), comm_f2c(comm))
        }
    }
    fn mpi_pack_size [ompi, mpich_f08] (
        incount: *mut Fint, datatype: *mut Fint, comm: *mut Fint, size: *mut Fint,
    ) {
        // SAFETY: Fortran references; `size` is a writable INTEGER.
        unsafe { c::MPI_Pack_size(int(incount), type_f2c(datatype), comm_f2c(comm), size) }
    }

    // ---- communicators -------------------------------------------------------------------
    fn mpi_comm_dup [ompi, mpich_f08] (comm: *mut Fint, newcomm: *mut Fint) {
        let mut nc = consts::comm_null();
        // SAFETY: Fortran references; one communicator handle out.
        unsafe {
            let rc = c::MPI_Comm_dup(comm_f2c(comm), &mut nc);
            set_comm(newcomm, nc);
            rc
        }
    }
    fn mpi_comm_set_info [ompi, mpich_f08] (comm: *mut Fint, info: *mut Fint) {
        // SAFETY: Fortran references to two handles.
        unsafe { c::MPI_Comm_set_info(comm_f2c(comm), info_f2c(info)) }
    }
    fn mpi_comm_dup_with_info [ompi, mpich_f08] (comm: *mut Fint, info: *mut Fint, newcomm: *mut Fint) {
        let mut nc = consts::comm_null();
        // SAFETY: Fortran references; one communicator handle out.
        unsafe {
            let rc = c::MPI_Comm_dup_with_info(comm_f2c(comm), info_f2c(info), &mut nc);
            set_comm(newcomm, nc);
            rc
        }
    }
    fn mpi_comm_free [ompi, mpich_f08] (comm: *mut Fint) {
        // SAFETY: Fortran reference to one communicator, set to MPI_COMM_NULL.
        unsafe {
            let mut cm = comm_f2c(comm);
            let rc = c::MPI_Comm_free(&mut cm);
            set_comm(comm, cm);
            rc
        }
    }
}
