//! Point-to-point calls with device buffers: each handler stages its buffer (see the module
//! above) and calls the point-to-point protocol's handler of the same name on the host copy.
//! Blocking calls copy outputs back before returning; nonblocking and persistent ones leave
//! their staged copies with the request ([`super::pending`]).

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments)]
// MPI_Aint and MPI_Count are `i64` in MPICH but `isize`/`c_long` in Open MPI: the casts that are
// no-ops for one flavor are needed by the other.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::{copy_failed, flush_all, host_args, pending, stage_typed, HostArgs, Staged};
use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::p2p::pipeline::{self, send::Arriving, send::PostFn};
use crate::protocol::p2p::{blank_status, delivered_bytes, status_or};
use crate::protocol::p2p::{recv, send};
use crate::transfer::gpu::{self, mover};

type Dt = mpi::MPI_Datatype;
type Comm = mpi::MPI_Comm;
type Req = mpi::MPI_Request;
type Status = mpi::MPI_Status;

/// The most a host call's `int` count holds (a packed form's byte count must fit).
const INT: i64 = c_int::MAX as i64;
/// The most an `MPI_Count` holds.
#[cfg(sluice_large_count)]
const LARGE: i64 = i64::MAX;

/// A blocking call with one buffer argument (`output`: the call writes it).
///
/// # Safety
/// `buf`, `count` and `dt` are the application's arguments; `f` is the host call.
unsafe fn one(
    call: &'static str,
    buf: *const c_void,
    count: i64,
    dt: Dt,
    output: bool,
    max: i64,
    comm: Comm,
    f: impl FnOnce(HostArgs) -> c_int,
) -> c_int {
    let app = HostArgs { buf: buf.cast_mut(), count, dt };
    if !gpu::armed() {
        return f(app);
    }
    // SAFETY: forwarded contract.
    match unsafe { stage_typed(call, buf, count, dt, output, true, max, comm) } {
        Err(rc) => rc,
        Ok(None) => f(app),
        Ok(Some(s)) => {
            let rc = f(s.args(count, dt));
            after_host_call(call, s, rc, comm, None)
        }
    }
}

/// What follows the host call (`rc`) on a staged copy: a blocking call (`request`: `None`)
/// copies outputs back; a nonblocking or persistent one (the application's request pointer,
/// and whether persistent) leaves the copy with the request the host call returned.
fn after_host_call(call: &'static str, mut s: Staged, rc: c_int, comm: Comm, request: Option<(*mut Req, bool)>) -> c_int {
    match request {
        None => flush_all(call, std::slice::from_mut(&mut s), rc, comm),
        Some((request, persistent)) => {
            if rc == errclass::SUCCESS && !request.is_null() {
                // SAFETY: the host call succeeded, so it wrote the application's request.
                pending::track(call, unsafe { *request }, vec![s], persistent);
            }
            rc
        }
    }
}

/// A blocking receive into one buffer: `f` gets the host arguments and a status to fill. A
/// buffer staged in the packed form, or whose receive fills a prefix of its span
/// ([`fills_prefix`]), is not copied in first; only the bytes the MPI delivered (its status says
/// how many; on truncation what the MPI leaves in the buffer) go back. Others are staged as any
/// output.
///
/// # Safety
/// As [`one`]; `status` is the application's (possibly `MPI_STATUS_IGNORE`).
unsafe fn receive(
    call: &str,
    buf: *mut c_void,
    count: i64,
    dt: Dt,
    max: i64,
    comm: Comm,
    status: *mut Status,
    f: impl FnOnce(HostArgs, *mut Status) -> c_int,
) -> c_int {
    let app = HostArgs { buf, count, dt };
    if !gpu::armed() {
        return f(app, status);
    }
    // SAFETY: forwarded contract. The fill is decided once the form is known.
    let staged = unsafe { stage_typed(call, buf, count, dt, true, false, max, comm) };
    match staged {
        Err(rc) => rc,
        Ok(None) => f(app, status),
        Ok(Some(mut s)) => {
            let prefix = s.is_stream(dt);
            if !prefix {
                if let Err(e) = s.fill() {
                    return copy_failed(call, comm, &e);
                }
            }
            let mut local = blank_status();
            let stp = status_or(status, &mut local);
            // A receive that may get a pipelined message takes its chunks to the device as they
            // land (`stream::Feed`).
            let feed = if prefix && pipeline::may_be_pipelined(s.bytes()) {
                match s.feed() {
                    Ok(feed) => Some(feed),
                    Err(e) => return copy_failed(call, comm, &e),
                }
            } else {
                None
            };
            let args = s.args(count, dt);
            let rc = match &feed {
                Some(feed) => pipeline::incoming::watching(feed.base(), feed.watcher(), || f(args, stp)),
                None => f(args, stp),
            };
            let done = if prefix {
                // SAFETY: the MPI filled `stp` for this completed receive.
                let n = unsafe { delivered_bytes(rc, stp, s.bytes()) };
                match feed {
                    Some(feed) => feed.finish(n),
                    None => s.flush_prefix(n),
                }
            } else {
                s.flush()
            };
            match done {
                Ok(()) => rc,
                Err(e) => copy_failed(call, comm, &e),
            }
        }
    }
}

/// A nonblocking or persistent call with one buffer argument: the staged copy lives with the
/// request the host call returns.
///
/// # Safety
/// As [`one`]; `request` is the application's output pointer.
unsafe fn with_request(
    call: &'static str,
    buf: *const c_void,
    count: i64,
    dt: Dt,
    output: bool,
    max: i64,
    comm: Comm,
    request: *mut Req,
    persistent: bool,
    f: impl FnOnce(HostArgs) -> c_int,
) -> c_int {
    let app = HostArgs { buf: buf.cast_mut(), count, dt };
    if !gpu::armed() {
        return f(app);
    }
    // SAFETY: forwarded contract. A persistent request's copy is filled at every start, not here.
    match unsafe { stage_typed(call, buf, count, dt, output, !persistent, max, comm) } {
        Err(rc) => rc,
        Ok(None) => f(app),
        Ok(Some(s)) => {
            // A nonblocking receive that may get a pipelined message takes it to the device as
            // it lands, or straight from a peer's device memory (`stream::Feed`).
            let feed = (output && !persistent && s.is_stream(dt) && pipeline::may_be_pipelined(s.bytes())).then(|| s.feed().ok()).flatten();
            if let Some(feed) = &feed {
                pipeline::incoming::watch_at(feed.base(), feed.watcher());
            }
            let rc = f(s.args(count, dt));
            match feed {
                Some(feed) if rc == errclass::SUCCESS && !request.is_null() => {
                    // SAFETY: the host call succeeded, so it wrote the application's request.
                    pending::track_fed(call, unsafe { *request }, vec![s], false, Some(feed));
                    rc
                }
                Some(feed) => {
                    pipeline::incoming::unwatch(feed.base());
                    after_host_call(call, s, rc, comm, Some((request, persistent)))
                }
                None => after_host_call(call, s, rc, comm, Some((request, persistent))),
            }
        }
    }
}

/// Bytes a device send copies out in one piece when it travels as it arrives, and so the least
/// chunk size of its pipelined transfer: on an H200 with MPICH, 1 MiB chunks made such sends
/// 5-26% faster than staging by hand at 1-64 MiB, where the pipeline's default 128 KiB chunks
/// lost at 1-4 MiB (docs/benchmarks.md, "GPU").
const ARRIVING_PIECE: usize = 1 << 20;

/// Where a send goes, and the nonblocking MPI call of its mode (M0 of a pipelined send is
/// posted with it).
#[derive(Clone, Copy)]
struct SendTo {
    dest: c_int,
    tag: c_int,
    post: PostFn,
}

/// A blocking (`request`: `None`) or nonblocking send with one device buffer or not. A staged
/// copy that is one run of bytes ([`Staged::is_stream`]) of at least `SLUICE_GPU_PIPELINE_MIN`
/// bytes and a size the pipelined protocol takes travels as it arrives
/// ([`super::stream::ArrivingCopy`]): the MPI gets its first chunks while the later ones still
/// cross PCIe. Other buffers go as in [`one`] and [`with_request`]: filled, then `f` on the
/// host copy.
///
/// # Safety
/// As [`one`]; `request`, when given, is the application's output pointer.
unsafe fn sending(
    call: &'static str,
    buf: *const c_void,
    count: i64,
    dt: Dt,
    max: i64,
    comm: Comm,
    to: SendTo,
    request: Option<*mut Req>,
    f: impl FnOnce(HostArgs) -> c_int,
) -> c_int {
    let app = HostArgs { buf: buf.cast_mut(), count, dt };
    if !gpu::armed() {
        return f(app);
    }
    // SAFETY: forwarded contract. Filled below, at once or in pieces.
    let mut s = match unsafe { stage_typed(call, buf, count, dt, false, false, max, comm) } {
        Err(rc) => return rc,
        Ok(None) => return f(app),
        Ok(Some(s)) => s,
    };
    let has_request = request.is_none_or(|r| !r.is_null());
    let mut offer = false;
    if has_request && s.is_stream(dt) {
        // SAFETY: forwarded contract.
        match unsafe { device_to_device(call, &s, comm, to, request) } {
            Route::Sent(rc) => return rc,
            Route::Offer => offer = true,
            Route::Other => {}
        }
    }
    // A send that must carry the offer of the device route travels pipelined whatever its size.
    let min = if offer { 0 } else { crate::runtime::config().map_or(usize::MAX, |c| c.gpu_pipeline_min) };
    let path = (has_request && s.bytes() >= min && s.is_stream(dt)).then(|| send::arriving_path(s.bytes(), to.dest, comm)).flatten();
    if let Some(path) = path {
        let total = s.bytes();
        let arriving = match s.into_arriving(pipeline::m0_data(), pipeline::send::chunk_for(total).max(ARRIVING_PIECE)) {
            Ok(a) => a,
            Err(e) => return copy_failed(call, comm, &e),
        };
        let stream: Arc<dyn Arriving> = arriving.clone();
        // SAFETY: forwarded contract; the stream is sluice's host copy of `total` bytes, kept by
        // the pipeline until its chunks are sent.
        let rc = unsafe { send::arriving(&stream, total, to.dest, to.tag, comm, path, to.post, request) };
        // Every piece was waited for before its chunk went out: a failed copy is known now.
        return match arriving.error() {
            Some(e) if rc == errclass::SUCCESS => copy_failed(call, comm, &e),
            _ => rc,
        };
    }
    if let Err(e) = s.fill() {
        return copy_failed(call, comm, &e);
    }
    let rc = f(s.args(count, dt));
    after_host_call(call, s, rc, comm, request.map(|r| (r, false)))
}

/// A send of a device stream (a contiguous span, or the packed form) to a rank of this node that can open this process's
/// exported device memory: the pipelined protocol's device route (`pipeline::device`), one copy
/// on the device into an exported slab here and one out of it on the receiver. `None`: the
/// route does not apply now (another node, the pool or the arena full, a size the pipeline
/// does not take): the caller goes on as before; or the peer has not answered the probe yet:
/// the caller sends pipelined, so that the offer travels.
///
/// # Safety
/// As [`sending`].
unsafe fn device_to_device(call: &str, s: &Staged, comm: Comm, to: SendTo, request: Option<*mut Req>) -> Route {
    use pipeline::device::Use;
    let total = s.bytes();
    if send::arriving_path(total, to.dest, comm).filter(|p| p.may_use_arena()).is_none() {
        return Route::Other;
    }
    let Some(peer) = pipeline::send::peer_of(comm, to.dest) else { return Route::Other };
    match pipeline::device::usable(peer, &s.range) {
        Use::Yes => {}
        Use::Offer => return Route::Offer,
        Use::No => return Route::Other,
    }
    let fill = |slab: usize| match &s.packed {
        // SAFETY: the span was checked against its allocation when staged; the slab holds
        // `total` bytes.
        None => unsafe { gpu::ipc::queue_copy(slab, s.dev, total, &s.range) },
        // SAFETY: as in `Staged::fill`; the packed bytes go to the slab (device memory of the
        // same context: the driver's unified addressing tells the copy's direction).
        Some(p) => unsafe { mover::pack_to_host(slab as *mut u8, s.dev, &p.shape, &s.range) },
    };
    let prepared = match pipeline::device::prepare(peer, total, &s.range, fill) {
        None => return Route::Other,
        Some(Ok(p)) => p,
        Some(Err(e)) => return Route::Sent(copy_failed(call, comm, &e)),
    };
    // SAFETY: forwarded contract; the stream is on its way into the prepared slab.
    match unsafe { send::from_device(prepared, total, to.dest, to.tag, comm, to.post, request) } {
        Ok(rc) => Route::Sent(rc),
        Err(e) => Route::Sent(copy_failed(call, comm, &e)),
    }
}

/// What [`device_to_device`] did.
enum Route {
    /// Sent (the call's return code).
    Sent(c_int),
    /// Not yet: send pipelined so that the offer travels.
    Offer,
    /// Not this route.
    Other,
}

/// Defines the device-aware handlers of one send mode (int and large-count variants).
macro_rules! send_mode {
    ($blocking:ident / $blocking_c:ident, $nonblocking:ident / $nonblocking_c:ident, $init:ident / $init_c:ident,
     $n0:literal, $n1:literal, $n2:literal, $post:ident) => {
        #[doc = concat!("`", $n0, "` with a device buffer or not.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $blocking(buf: *const c_void, count: c_int, datatype: Dt, dest: c_int, tag: c_int, comm: Comm) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                let to = SendTo { dest, tag, post: next::$post };
                sending($n0, buf, count.into(), datatype, INT, comm, to, None, |h| {
                    send::$blocking(h.buf, h.count as c_int, h.dt, dest, tag, comm)
                })
            }
        }

        #[doc = concat!("`", $n1, "` with a device buffer or not.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $nonblocking(
            buf: *const c_void,
            count: c_int,
            datatype: Dt,
            dest: c_int,
            tag: c_int,
            comm: Comm,
            request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                let to = SendTo { dest, tag, post: next::$post };
                sending($n1, buf, count.into(), datatype, INT, comm, to, Some(request), |h| {
                    send::$nonblocking(h.buf, h.count as c_int, h.dt, dest, tag, comm, request)
                })
            }
        }

        #[doc = concat!("`", $n2, "` with a device buffer or not (filled again at every start).")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $init(
            buf: *const c_void,
            count: c_int,
            datatype: Dt,
            dest: c_int,
            tag: c_int,
            comm: Comm,
            request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                with_request($n2, buf, count.into(), datatype, false, INT, comm, request, true, |h| {
                    send::$init(h.buf, h.count as c_int, h.dt, dest, tag, comm, request)
                })
            }
        }

        #[cfg(sluice_large_count)]
        #[doc = concat!("`", $n0, "_c` with a device buffer or not.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $blocking_c(buf: *const c_void, count: mpi::MPI_Count, datatype: Dt, dest: c_int, tag: c_int, comm: Comm) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                let to = SendTo { dest, tag, post: next::$post };
                sending($n0, buf, count as i64, datatype, LARGE, comm, to, None, |h| {
                    send::$blocking_c(h.buf, h.count as mpi::MPI_Count, h.dt, dest, tag, comm)
                })
            }
        }

        #[cfg(sluice_large_count)]
        #[doc = concat!("`", $n1, "_c` with a device buffer or not.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $nonblocking_c(
            buf: *const c_void,
            count: mpi::MPI_Count,
            datatype: Dt,
            dest: c_int,
            tag: c_int,
            comm: Comm,
            request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                let to = SendTo { dest, tag, post: next::$post };
                sending($n1, buf, count as i64, datatype, LARGE, comm, to, Some(request), |h| {
                    send::$nonblocking_c(h.buf, h.count as mpi::MPI_Count, h.dt, dest, tag, comm, request)
                })
            }
        }

        #[cfg(sluice_large_count)]
        #[doc = concat!("`", $n2, "_c` with a device buffer or not.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $init_c(
            buf: *const c_void,
            count: mpi::MPI_Count,
            datatype: Dt,
            dest: c_int,
            tag: c_int,
            comm: Comm,
            request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                with_request($n2, buf, count as i64, datatype, false, LARGE, comm, request, true, |h| {
                    send::$init_c(h.buf, h.count as mpi::MPI_Count, h.dt, dest, tag, comm, request)
                })
            }
        }
    };
}

send_mode!(send / send_c, isend / isend_c, send_init / send_init_c, "MPI_Send", "MPI_Isend", "MPI_Send_init", MPI_Isend);
send_mode!(bsend / bsend_c, ibsend / ibsend_c, bsend_init / bsend_init_c, "MPI_Bsend", "MPI_Ibsend", "MPI_Bsend_init", MPI_Ibsend);
send_mode!(ssend / ssend_c, issend / issend_c, ssend_init / ssend_init_c, "MPI_Ssend", "MPI_Issend", "MPI_Ssend_init", MPI_Issend);
send_mode!(rsend / rsend_c, irsend / irsend_c, rsend_init / rsend_init_c, "MPI_Rsend", "MPI_Irsend", "MPI_Rsend_init", MPI_Irsend);

/// `MPI_Recv` with a device buffer or not.
///
/// # Safety
/// As `MPI_Recv`.
pub unsafe fn recv(buf: *mut c_void, count: c_int, datatype: Dt, source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        receive("MPI_Recv", buf, count.into(), datatype, INT, comm, status, |h, st| {
            recv::recv(h.buf, h.count as c_int, h.dt, source, tag, comm, st)
        })
    }
}

/// `MPI_Irecv` with a device buffer or not.
///
/// # Safety
/// As `MPI_Irecv`.
pub unsafe fn irecv(buf: *mut c_void, count: c_int, datatype: Dt, source: c_int, tag: c_int, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_request("MPI_Irecv", buf, count.into(), datatype, true, INT, comm, request, false, |h| {
            recv::irecv(h.buf, h.count as c_int, h.dt, source, tag, comm, request)
        })
    }
}

/// `MPI_Recv_init` with a device buffer or not.
///
/// # Safety
/// As `MPI_Recv_init`.
pub unsafe fn recv_init(buf: *mut c_void, count: c_int, datatype: Dt, source: c_int, tag: c_int, comm: Comm, request: *mut Req) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_request("MPI_Recv_init", buf, count.into(), datatype, true, INT, comm, request, true, |h| {
            recv::recv_init(h.buf, h.count as c_int, h.dt, source, tag, comm, request)
        })
    }
}

/// `MPI_Mrecv` with a device buffer or not (errors on `MPI_COMM_WORLD`: a message handle names
/// no communicator sluice can read).
///
/// # Safety
/// As `MPI_Mrecv`.
pub unsafe fn mrecv(buf: *mut c_void, count: c_int, datatype: Dt, message: *mut mpi::MPI_Message, status: *mut Status) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        one("MPI_Mrecv", buf, count.into(), datatype, true, INT, consts::comm_world(), |h| {
            recv::mrecv(h.buf, h.count as c_int, h.dt, message, status)
        })
    }
}

/// `MPI_Imrecv` with a device buffer or not.
///
/// # Safety
/// As `MPI_Imrecv`.
pub unsafe fn imrecv(buf: *mut c_void, count: c_int, datatype: Dt, message: *mut mpi::MPI_Message, request: *mut Req) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        with_request("MPI_Imrecv", buf, count.into(), datatype, true, INT, consts::comm_world(), request, false, |h| {
            recv::imrecv(h.buf, h.count as c_int, h.dt, message, request)
        })
    }
}

/// `MPI_Sendrecv` with device buffers or not (each side staged on its own).
///
/// # Safety
/// As `MPI_Sendrecv`.
pub unsafe fn sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Dt,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Dt,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    status: *mut Status,
) -> c_int {
    if !gpu::armed() {
        // SAFETY: forwarded contract.
        return unsafe {
            recv::sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status)
        };
    }
    const CALL: &str = "MPI_Sendrecv";
    // SAFETY: the application's arguments.
    let s = match unsafe { stage_typed(CALL, sendbuf, sendcount.into(), sendtype, false, true, INT, comm) } {
        Ok(s) => s,
        Err(rc) => return rc,
    };
    let out = host_args(&s, sendbuf, sendcount.into(), sendtype);
    // SAFETY: forwarded contract, on host copies of the device buffers.
    unsafe {
        receive(CALL, recvbuf, recvcount.into(), recvtype, INT, comm, status, |h, st| {
            recv::sendrecv(out.buf, out.count as c_int, out.dt, dest, sendtag, h.buf, h.count as c_int, h.dt, source, recvtag, comm, st)
        })
    }
}

/// `MPI_Sendrecv_replace` with a device buffer or not.
///
/// # Safety
/// As `MPI_Sendrecv_replace`.
pub unsafe fn sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: Dt,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    status: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        one("MPI_Sendrecv_replace", buf, count.into(), datatype, true, INT, comm, |h| {
            recv::sendrecv_replace(h.buf, h.count as c_int, h.dt, dest, sendtag, source, recvtag, comm, status)
        })
    }
}

/// The large-count receives (MPICH).
#[cfg(sluice_large_count)]
pub mod large_count {
    use super::*;
    use crate::protocol::p2p::recv::large_count as host;

    /// `MPI_Recv_c`.
    ///
    /// # Safety
    /// As `MPI_Recv_c`.
    pub unsafe fn recv_c(
        buf: *mut c_void,
        count: mpi::MPI_Count,
        datatype: Dt,
        source: c_int,
        tag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: forwarded contract.
        unsafe {
            one("MPI_Recv_c", buf, count as i64, datatype, true, LARGE, comm, |h| {
                host::recv_c(h.buf, h.count as mpi::MPI_Count, h.dt, source, tag, comm, status)
            })
        }
    }

    /// `MPI_Irecv_c`.
    ///
    /// # Safety
    /// As `MPI_Irecv_c`.
    pub unsafe fn irecv_c(
        buf: *mut c_void,
        count: mpi::MPI_Count,
        datatype: Dt,
        source: c_int,
        tag: c_int,
        comm: Comm,
        request: *mut Req,
    ) -> c_int {
        // SAFETY: forwarded contract.
        unsafe {
            with_request("MPI_Irecv_c", buf, count as i64, datatype, true, LARGE, comm, request, false, |h| {
                host::irecv_c(h.buf, h.count as mpi::MPI_Count, h.dt, source, tag, comm, request)
            })
        }
    }

    /// `MPI_Recv_init_c`.
    ///
    /// # Safety
    /// As `MPI_Recv_init_c`.
    pub unsafe fn recv_init_c(
        buf: *mut c_void,
        count: mpi::MPI_Count,
        datatype: Dt,
        source: c_int,
        tag: c_int,
        comm: Comm,
        request: *mut Req,
    ) -> c_int {
        // SAFETY: forwarded contract.
        unsafe {
            with_request("MPI_Recv_init_c", buf, count as i64, datatype, true, LARGE, comm, request, true, |h| {
                host::recv_init_c(h.buf, h.count as mpi::MPI_Count, h.dt, source, tag, comm, request)
            })
        }
    }

    /// `MPI_Mrecv_c`.
    ///
    /// # Safety
    /// As `MPI_Mrecv_c`.
    pub unsafe fn mrecv_c(
        buf: *mut c_void,
        count: mpi::MPI_Count,
        datatype: Dt,
        message: *mut mpi::MPI_Message,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: forwarded contract.
        unsafe {
            one("MPI_Mrecv_c", buf, count as i64, datatype, true, LARGE, consts::comm_world(), |h| {
                host::mrecv_c(h.buf, h.count as mpi::MPI_Count, h.dt, message, status)
            })
        }
    }

    /// `MPI_Imrecv_c`.
    ///
    /// # Safety
    /// As `MPI_Imrecv_c`.
    pub unsafe fn imrecv_c(
        buf: *mut c_void,
        count: mpi::MPI_Count,
        datatype: Dt,
        message: *mut mpi::MPI_Message,
        request: *mut Req,
    ) -> c_int {
        // SAFETY: forwarded contract.
        unsafe {
            with_request("MPI_Imrecv_c", buf, count as i64, datatype, true, LARGE, consts::comm_world(), request, false, |h| {
                host::imrecv_c(h.buf, h.count as mpi::MPI_Count, h.dt, message, request)
            })
        }
    }

    /// `MPI_Sendrecv_c`.
    ///
    /// # Safety
    /// As `MPI_Sendrecv_c`.
    pub unsafe fn sendrecv_c(
        sendbuf: *const c_void,
        sendcount: mpi::MPI_Count,
        sendtype: Dt,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: mpi::MPI_Count,
        recvtype: Dt,
        source: c_int,
        recvtag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        const CALL: &str = "MPI_Sendrecv_c";
        if !gpu::armed() {
            // SAFETY: forwarded contract.
            return unsafe {
                host::sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status)
            };
        }
        // SAFETY: the application's arguments.
        let s = match unsafe { stage_typed(CALL, sendbuf, sendcount as i64, sendtype, false, true, LARGE, comm) } {
            Ok(s) => s,
            Err(rc) => return rc,
        };
        let out = host_args(&s, sendbuf, sendcount as i64, sendtype);
        // SAFETY: forwarded contract, on host copies of the device buffers.
        unsafe {
            receive(CALL, recvbuf, recvcount as i64, recvtype, LARGE, comm, status, |h, st| {
                host::sendrecv_c(
                    out.buf,
                    out.count as mpi::MPI_Count,
                    out.dt,
                    dest,
                    sendtag,
                    h.buf,
                    h.count as mpi::MPI_Count,
                    h.dt,
                    source,
                    recvtag,
                    comm,
                    st,
                )
            })
        }
    }

    /// `MPI_Sendrecv_replace_c`.
    ///
    /// # Safety
    /// As `MPI_Sendrecv_replace_c`.
    pub unsafe fn sendrecv_replace_c(
        buf: *mut c_void,
        count: mpi::MPI_Count,
        datatype: Dt,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: forwarded contract.
        unsafe {
            one("MPI_Sendrecv_replace_c", buf, count as i64, datatype, true, LARGE, comm, |h| {
                host::sendrecv_replace_c(h.buf, h.count as mpi::MPI_Count, h.dt, dest, sendtag, source, recvtag, comm, status)
            })
        }
    }
}
