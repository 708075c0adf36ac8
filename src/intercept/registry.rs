//! The registry of every C entry point sluice intercepts (an "x-macro", like UCX's
//! `UCP_PROTO_FOR_EACH`): one line per MPI function with its exact C signature, the
//! interception family it is counted in, which communicator reports its errors, how to count
//! its payload bytes, and which protocol handler serves it (`forward` = pass through unchanged).
//!
//! `ffi::next` expands this list into forwarding stubs (names and signatures only), `intercept`
//! into the exported symbols that call the handlers.
//! Adding behaviour to a call means replacing its `forward` with a protocol function of the same
//! signature; adding a call means adding one line here.
//!
//! Entry grammar:
//! `Family fn NAME(arg: Type, ...) err(comm_arg | world) [bytes(count_arg, type_arg)]
//!  [fast(predicate(arg, ...))] => handler;`
//!
//! `fast` names a predicate of `protocol::p2p::fast` over some of the arguments: when sluice is
//! active and it holds, the handler would forward the call unchanged, so the exported function
//! calls the next definition at once (the fast path, `intercept::exports`).

/// Invokes `$callback!` with the whole list of intercepted functions.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_interposed {
    ($callback:ident) => {
        $crate::for_each_interposed_large_count! { $callback {
            // ---- environment ---------------------------------------------------------------
            Init fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) err(world)
                => { $crate::protocol::init::init };
            Init fn MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int,
                provided: *mut c_int) err(world) => { $crate::protocol::init::init_thread };
            Init fn MPI_Finalize() err(world) => { $crate::protocol::init::finalize };
            // Init family: its handler also runs while sluice passes calls through (SLUICE_DISABLE,
            // sluice_disable), so the level shown stays the one the program was told.
            Init fn MPI_Query_thread(provided: *mut c_int) err(world) => { $crate::protocol::init::query_thread };

            // ---- point-to-point: blocking -------------------------------------------------------
            P2p fn MPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::send };
            P2p fn MPI_Bsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::bsend };
            P2p fn MPI_Ssend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::ssend };
            P2p fn MPI_Rsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::rsend };
            P2p fn MPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int,
                tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) err(comm) fast(receive(count, datatype)) => { $crate::protocol::device::p2p::recv };
            P2p fn MPI_Sendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int,
                recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm,
                status: *mut MPI_Status) err(comm) bytes(sendcount, sendtype) fast(sendrecv(sendcount, sendtype, recvcount, recvtype)) => { $crate::protocol::device::p2p::sendrecv };
            P2p fn MPI_Sendrecv_replace(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: MPI_Comm,
                status: *mut MPI_Status) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::sendrecv_replace };

            // ---- point-to-point: nonblocking ----------------------------------------------------
            P2p fn MPI_Isend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::isend };
            P2p fn MPI_Ibsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::ibsend };
            P2p fn MPI_Issend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::issend };
            P2p fn MPI_Irsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int,
                tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::irsend };
            P2p fn MPI_Irecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int,
                tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm) fast(receive(count, datatype)) => { $crate::protocol::device::p2p::irecv };

            // ---- point-to-point: persistent -----------------------------------------------------
            Persistent fn MPI_Send_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::send_init };
            Persistent fn MPI_Bsend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::bsend_init };
            Persistent fn MPI_Ssend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::ssend_init };
            Persistent fn MPI_Rsend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::rsend_init };
            Persistent fn MPI_Recv_init(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                fast(persistent_receive(count, datatype)) => { $crate::protocol::device::p2p::recv_init };
            Persistent fn MPI_Start(request: *mut MPI_Request) err(world) => { $crate::protocol::device::pending::start };
            Persistent fn MPI_Startall(count: c_int, requests: *mut MPI_Request) err(world)
                => { $crate::protocol::device::pending::startall };

            // ---- probes and matched receives ----------------------------------------------------
            Probe fn MPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status)
                err(comm) => { $crate::protocol::p2p::complete::probe };
            Probe fn MPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int,
                status: *mut MPI_Status) err(comm) => { $crate::protocol::p2p::complete::iprobe };
            Probe fn MPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message,
                status: *mut MPI_Status) err(comm) => { $crate::protocol::p2p::complete::mprobe };
            Probe fn MPI_Improbe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int,
                message: *mut MPI_Message, status: *mut MPI_Status) err(comm) => { $crate::protocol::p2p::complete::improbe };
            Probe fn MPI_Mrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                message: *mut MPI_Message, status: *mut MPI_Status) err(world) => { $crate::protocol::device::p2p::mrecv };
            Probe fn MPI_Imrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype,
                message: *mut MPI_Message, request: *mut MPI_Request) err(world) => { $crate::protocol::device::p2p::imrecv };

            // ---- completion ---------------------------------------------------------------------
            Completion fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) err(world)
                fast(completion()) => { $crate::protocol::device::pending::wait };
            Completion fn MPI_Waitall(count: c_int, requests: *mut MPI_Request,
                statuses: *mut MPI_Status) err(world) fast(waitall()) => { $crate::protocol::device::pending::waitall };
            Completion fn MPI_Waitany(count: c_int, requests: *mut MPI_Request, index: *mut c_int,
                status: *mut MPI_Status) err(world) fast(completion()) => { $crate::protocol::device::pending::waitany };
            Completion fn MPI_Waitsome(incount: c_int, requests: *mut MPI_Request,
                outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status) err(world)
                fast(completion()) => { $crate::protocol::device::pending::waitsome };
            Completion fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int,
                status: *mut MPI_Status) err(world) fast(completion()) => { $crate::protocol::device::pending::test };
            Completion fn MPI_Testall(count: c_int, requests: *mut MPI_Request, flag: *mut c_int,
                statuses: *mut MPI_Status) err(world) fast(completion()) => { $crate::protocol::device::pending::testall };
            Completion fn MPI_Testany(count: c_int, requests: *mut MPI_Request, index: *mut c_int,
                flag: *mut c_int, status: *mut MPI_Status) err(world) fast(completion()) => { $crate::protocol::device::pending::testany };
            Completion fn MPI_Testsome(incount: c_int, requests: *mut MPI_Request,
                outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status) err(world)
                fast(completion()) => { $crate::protocol::device::pending::testsome };
            Completion fn MPI_Request_free(request: *mut MPI_Request) err(world) fast(request_free()) => { $crate::protocol::device::pending::request_free };
            Completion fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int,
                status: *mut MPI_Status) err(world) fast(completion()) => { $crate::protocol::device::pending::request_get_status };
            Completion fn MPI_Cancel(request: *mut MPI_Request) err(world) fast(completion())
                => { $crate::protocol::p2p::complete::cancel };
            Completion fn MPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype,
                count: *mut c_int) err(world) => forward;
            Completion fn MPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype,
                count: *mut c_int) err(world) => forward;
            Completion fn MPI_Get_elements_x(status: *const MPI_Status, datatype: MPI_Datatype,
                count: *mut MPI_Count) err(world) => forward;

            // ---- datatypes and packing ----------------------------------------------------------
            Datatype fn MPI_Type_commit(datatype: *mut MPI_Datatype) err(world)
                => { $crate::protocol::datatype::type_commit };
            Datatype fn MPI_Type_free(datatype: *mut MPI_Datatype) err(world)
                => { $crate::protocol::datatype::type_free };
            Datatype fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) err(world)
                => { $crate::protocol::datatype::type_dup };
            Pack fn MPI_Pack(inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype,
                outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: MPI_Comm) err(comm)
                bytes(incount, datatype) => { $crate::protocol::datatype::pack };
            Pack fn MPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int,
                outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype, comm: MPI_Comm)
                err(comm) bytes(outcount, datatype) => { $crate::protocol::datatype::unpack };
            Pack fn MPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm,
                size: *mut c_int) err(comm) => { $crate::protocol::datatype::pack_size };

            // ---- communicators ------------------------------------------------------------------
            Comm fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) err(comm) => forward;
            Comm fn MPI_Comm_free(comm: *mut MPI_Comm) err(world) => forward;
            // Info keys of sluice's own (`sluice_p2p_path`), read after the MPI's call.
            Comm fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) err(comm)
                => { $crate::protocol::comm_hints::comm_set_info };
            Comm fn MPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm)
                err(comm) => { $crate::protocol::comm_hints::comm_dup_with_info };
            // Topology constructors: `reorder = true` places the virtual topology's ranks
            // (protocol::reorder).
            Comm fn MPI_Cart_create(comm_old: MPI_Comm, ndims: c_int, dims: *const c_int,
                periods: *const c_int, reorder: c_int, comm_cart: *mut MPI_Comm) err(comm_old)
                => { $crate::protocol::reorder::cart_create };
            Comm fn MPI_Graph_create(comm_old: MPI_Comm, nnodes: c_int, index: *const c_int,
                edges: *const c_int, reorder: c_int, comm_graph: *mut MPI_Comm) err(comm_old)
                => { $crate::protocol::reorder::graph_create };
            Comm fn MPI_Dist_graph_create_adjacent(comm_old: MPI_Comm, indegree: c_int,
                sources: *const c_int, sourceweights: *const c_int, outdegree: c_int,
                destinations: *const c_int, destweights: *const c_int, info: MPI_Info,
                reorder: c_int, comm_dist_graph: *mut MPI_Comm) err(comm_old)
                => { $crate::protocol::reorder::dist_graph_create_adjacent };
            Comm fn MPI_Dist_graph_create(comm_old: MPI_Comm, n: c_int, sources: *const c_int,
                degrees: *const c_int, destinations: *const c_int, weights: *const c_int,
                info: MPI_Info, reorder: c_int, comm_dist_graph: *mut MPI_Comm) err(comm_old)
                => { $crate::protocol::reorder::dist_graph_create };

            // ---- collectives (data movement; reductions are not intercepted) -----------------
            Coll fn MPI_Bcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root:
                c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) => {
                $crate::protocol::device::coll::bcast };
            Coll fn MPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm:
                MPI_Comm) err(comm) => { $crate::protocol::device::coll::gather };
            Coll fn MPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype:
                MPI_Datatype, root: c_int, comm: MPI_Comm) err(comm) => {
                $crate::protocol::device::coll::gatherv };
            Coll fn MPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm:
                MPI_Comm) err(comm) => { $crate::protocol::device::coll::scatter };
            Coll fn MPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const
                c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype:
                MPI_Datatype, root: c_int, comm: MPI_Comm) err(comm) => {
                $crate::protocol::device::coll::scatterv };
            Coll fn MPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
                err(comm) => { $crate::protocol::device::coll::allgather };
            Coll fn MPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype:
                MPI_Datatype, comm: MPI_Comm) err(comm) => {
                $crate::protocol::device::coll::allgatherv };
            Coll fn MPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
                err(comm) => { $crate::protocol::device::coll::alltoall };
            Coll fn MPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const
                c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
                rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) err(comm) => {
                $crate::protocol::device::coll::alltoallv };
            Coll fn MPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const
                c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const
                c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm)
                err(comm) => { $crate::protocol::device::coll::alltoallw };
            Coll fn MPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm:
                MPI_Comm) err(comm) => { $crate::protocol::device::coll::neighbor_allgather };
            Coll fn MPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                recvtype: MPI_Datatype, comm: MPI_Comm) err(comm) => {
                $crate::protocol::device::coll::neighbor_allgatherv };
            Coll fn MPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm:
                MPI_Comm) err(comm) => { $crate::protocol::device::coll::neighbor_alltoall };
            Coll fn MPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int,
                sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts:
                *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
                err(comm) => { $crate::protocol::device::coll::neighbor_alltoallv };
            Coll fn MPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int,
                sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void,
                recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype,
                comm: MPI_Comm) err(comm) => { $crate::protocol::device::coll::neighbor_alltoallw
                };
            Coll fn MPI_Ibcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root:
                c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm) bytes(count, datatype)
                => { $crate::protocol::device::coll::ibcast };
            Coll fn MPI_Igather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm:
                MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::igather };
            Coll fn MPI_Igatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype:
                MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::igatherv };
            Coll fn MPI_Iscatter(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm:
                MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::iscatter };
            Coll fn MPI_Iscatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const
                c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype:
                MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::iscatterv };
            Coll fn MPI_Iallgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::iallgather };
            Coll fn MPI_Iallgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::iallgatherv };
            Coll fn MPI_Ialltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype,
                recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ialltoall };
            Coll fn MPI_Ialltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const
                c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
                rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut
                MPI_Request) err(comm) => { $crate::protocol::device::coll::ialltoallv };
            Coll fn MPI_Ialltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const
                c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const
                c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ialltoallw };
            Coll fn MPI_Ineighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm:
                MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ineighbor_allgather };
            Coll fn MPI_Ineighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int,
                recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ineighbor_allgatherv };
            Coll fn MPI_Ineighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype:
                MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm:
                MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ineighbor_alltoall };
            Coll fn MPI_Ineighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int,
                sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts:
                *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ineighbor_alltoallv };
            Coll fn MPI_Ineighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int,
                sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void,
                recvcounts: *const c_int, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype,
                comm: MPI_Comm, request: *mut MPI_Request) err(comm) => {
                $crate::protocol::device::coll::ineighbor_alltoallw };

            // ---- reductions: intercepted only to stage device buffers (forwarded otherwise) ----
            Reduce fn MPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) err(comm)
                fast(host_only()) => { $crate::protocol::device::coll::reduce };
            Reduce fn MPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) err(comm)
                fast(host_only()) => { $crate::protocol::device::coll::allreduce };
            Reduce fn MPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void,
                recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) err(comm)
                fast(host_only()) => { $crate::protocol::device::coll::reduce_scatter_block };
            Reduce fn MPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void,
                recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
                err(comm) fast(host_only()) => { $crate::protocol::device::coll::reduce_scatter };
            Reduce fn MPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) err(comm)
                fast(host_only()) => { $crate::protocol::device::coll::scan };
            Reduce fn MPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) err(comm)
                fast(host_only()) => { $crate::protocol::device::coll::exscan };
            Reduce fn MPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op) err(world)
                fast(host_only()) => { $crate::protocol::device::coll::reduce_local };
            Reduce fn MPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(host_only())
                => { $crate::protocol::device::coll::ireduce };
            Reduce fn MPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request)
                err(comm) fast(host_only()) => { $crate::protocol::device::coll::iallreduce };
            Reduce fn MPI_Ireduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void,
                recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(host_only())
                => { $crate::protocol::device::coll::ireduce_scatter_block };
            Reduce fn MPI_Ireduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void,
                recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(host_only())
                => { $crate::protocol::device::coll::ireduce_scatter };
            Reduce fn MPI_Iscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request)
                err(comm) fast(host_only()) => { $crate::protocol::device::coll::iscan };
            Reduce fn MPI_Iexscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request)
                err(comm) fast(host_only()) => { $crate::protocol::device::coll::iexscan };

            // ---- one-sided and I/O: intercepted only to refuse device buffers clearly --------
            RmaIo fn MPI_Win_create(base: *mut c_void, size: MPI_Aint, disp_unit: c_int,
                info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) err(comm)
                fast(host_only()) => { $crate::protocol::device::refuse::win_create };
            RmaIo fn MPI_Put(origin_addr: *const c_void, origin_count: c_int,
                origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint,
                target_count: c_int, target_datatype: MPI_Datatype, win: MPI_Win) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::put };
            RmaIo fn MPI_Get(origin_addr: *mut c_void, origin_count: c_int,
                origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint,
                target_count: c_int, target_datatype: MPI_Datatype, win: MPI_Win) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::get };
            RmaIo fn MPI_Accumulate(origin_addr: *const c_void, origin_count: c_int,
                origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint,
                target_count: c_int, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win)
                err(world) fast(host_only()) => { $crate::protocol::device::refuse::accumulate };
            RmaIo fn MPI_Get_accumulate(origin_addr: *const c_void, origin_count: c_int,
                origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: c_int,
                result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint,
                target_count: c_int, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win)
                err(world) fast(host_only()) => { $crate::protocol::device::refuse::get_accumulate };
            RmaIo fn MPI_File_read(fh: MPI_File, buf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_read };
            RmaIo fn MPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: c_int,
                datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_read_all };
            RmaIo fn MPI_File_write(fh: MPI_File, buf: *const c_void, count: c_int,
                datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_write };
            RmaIo fn MPI_File_write_all(fh: MPI_File, buf: *const c_void, count: c_int,
                datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_write_all };
            RmaIo fn MPI_File_read_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void,
                count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_read_at };
            RmaIo fn MPI_File_read_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void,
                count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_read_at_all };
            RmaIo fn MPI_File_write_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void,
                count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_write_at };
            RmaIo fn MPI_File_write_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void,
                count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) err(world)
                fast(host_only()) => { $crate::protocol::device::refuse::file_write_at_all };
        }}
    };
}

/// The MPI-4 large-count (`_c`) variants, exported only where the MPI provides them
/// (MPICH 4.0 does, Open MPI 4.1 does not).
#[cfg(sluice_large_count)]
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_interposed_large_count {
    ($callback:ident { $($main:tt)* }) => {
        $callback! {
            $($main)*
            P2p fn MPI_Send_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::send_c };
            P2p fn MPI_Bsend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::bsend_c };
            P2p fn MPI_Ssend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::ssend_c };
            P2p fn MPI_Rsend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm) err(comm) bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::rsend_c };
            P2p fn MPI_Recv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype,
                source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) err(comm)
                fast(receive(count, datatype)) => { $crate::protocol::device::p2p::large_count::recv_c };
            P2p fn MPI_Sendrecv_c(sendbuf: *const c_void, sendcount: MPI_Count,
                sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void,
                recvcount: MPI_Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
                comm: MPI_Comm, status: *mut MPI_Status) err(comm) bytes(sendcount, sendtype)
                fast(sendrecv(sendcount, sendtype, recvcount, recvtype)) => { $crate::protocol::device::p2p::large_count::sendrecv_c };
            P2p fn MPI_Sendrecv_replace_c(buf: *mut c_void, count: MPI_Count,
                datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int,
                comm: MPI_Comm, status: *mut MPI_Status) err(comm) bytes(count, datatype)
                fast(message(count, datatype)) => { $crate::protocol::device::p2p::large_count::sendrecv_replace_c };
            P2p fn MPI_Isend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::isend_c };
            P2p fn MPI_Ibsend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::ibsend_c };
            P2p fn MPI_Issend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::issend_c };
            P2p fn MPI_Irsend_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype,
                dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                bytes(count, datatype) fast(message(count, datatype)) => { $crate::protocol::device::p2p::irsend_c };
            P2p fn MPI_Irecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype,
                source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) err(comm)
                fast(receive(count, datatype)) => { $crate::protocol::device::p2p::large_count::irecv_c };
            Persistent fn MPI_Send_init_c(buf: *const c_void, count: MPI_Count,
                datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::send_init_c };
            Persistent fn MPI_Bsend_init_c(buf: *const c_void, count: MPI_Count,
                datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::bsend_init_c };
            Persistent fn MPI_Ssend_init_c(buf: *const c_void, count: MPI_Count,
                datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::ssend_init_c };
            Persistent fn MPI_Rsend_init_c(buf: *const c_void, count: MPI_Count,
                datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(persistent_send(count, datatype)) => { $crate::protocol::device::p2p::rsend_init_c };
            Persistent fn MPI_Recv_init_c(buf: *mut c_void, count: MPI_Count,
                datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm,
                request: *mut MPI_Request) err(comm) fast(persistent_receive(count, datatype)) => { $crate::protocol::device::p2p::large_count::recv_init_c };
            Probe fn MPI_Mrecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype,
                message: *mut MPI_Message, status: *mut MPI_Status) err(world) => { $crate::protocol::device::p2p::large_count::mrecv_c };
            Probe fn MPI_Imrecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype,
                message: *mut MPI_Message, request: *mut MPI_Request) err(world) => { $crate::protocol::device::p2p::large_count::imrecv_c };
            Completion fn MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype,
                count: *mut MPI_Count) err(world) => forward;
            Completion fn MPI_Get_elements_c(status: *const MPI_Status, datatype: MPI_Datatype,
                count: *mut MPI_Count) err(world) => forward;
            Pack fn MPI_Pack_c(inbuf: *const c_void, incount: MPI_Count, datatype: MPI_Datatype,
                outbuf: *mut c_void, outsize: MPI_Count, position: *mut MPI_Count, comm: MPI_Comm)
                err(comm) bytes(incount, datatype) => { $crate::protocol::datatype::large_count::pack_c };
            Pack fn MPI_Unpack_c(inbuf: *const c_void, insize: MPI_Count, position: *mut MPI_Count,
                outbuf: *mut c_void, outcount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm)
                err(comm) bytes(outcount, datatype) => { $crate::protocol::datatype::large_count::unpack_c };
            Pack fn MPI_Pack_size_c(incount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm,
                size: *mut MPI_Count) err(comm) => { $crate::protocol::datatype::large_count::pack_size_c };
        }
    };
}

/// Open MPI 4.1 has no large-count variants: nothing to export.
#[cfg(not(sluice_large_count))]
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_interposed_large_count {
    ($callback:ident { $($main:tt)* }) => {
        $callback! { $($main)* }
    };
}
