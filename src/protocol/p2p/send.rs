//! Sends: a non-contiguous buffer is packed into a staging buffer and sent as `MPI_PACKED`
//! bytes with the same mode, destination, tag and communicator (the wire format of
//! `protocol::p2p`). Blocking sends release the staging buffer on return; nonblocking and
//! persistent ones are tracked until the MPI completes them.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::contest;
use super::ops::{self, Dir, Op};
use super::pipeline::{self, send::Arriving, send::PostFn, send::Source};
use super::{is_proc_null, Layout};
use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::comm_hints::{self, P2pPath};
use crate::protocol::datatype::TypeArg;
use crate::transfer::netpath;
use crate::transfer::staging::{self, Staging};

type Comm = mpi::MPI_Comm;
type Dt = mpi::MPI_Datatype;
type Req = mpi::MPI_Request;
/// A blocking send of the MPI (`MPI_Send`, `MPI_Ssend`, ...).
type BlockingFn = unsafe fn(*const c_void, c_int, Dt, c_int, c_int, Comm) -> c_int;
/// A send that returns a request (`MPI_Isend`, ..., `MPI_Send_init`, ...).
type RequestFn = unsafe fn(*const c_void, c_int, Dt, c_int, c_int, Comm, *mut Req) -> c_int;

/// A blocking send in any mode (`timed`: one whose call lasts until its data has moved, which
/// may take part in its type's path contest: not `MPI_Bsend`).
///
/// # Safety
/// As the MPI send call; `forward` is that call with the application's arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn blocking(
    buf: *const c_void,
    count: i64,
    datatype: Dt,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    timed: bool,
    mpi_send: BlockingFn,
    post: PostFn,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    let path = comm_hints::path(comm);
    let shares = super::shares_node_once(comm, dest);
    let t = TypeArg::new(datatype);
    if decided_for_mpi(buf, count, &t, dest, path, &shares) {
        // SAFETY: forwarded contract.
        return unsafe { blocking_on(None, buf, count, &t, dest, tag, comm, path, mpi_send, post, forward) };
    }
    let layout = Layout::of(buf, count, &t, path, &shares).filter(|_| !is_proc_null(dest));
    let (layout, turn) = contested(layout, buf, count, &t, dest, comm, path, timed, &shares);
    // SAFETY: forwarded contract.
    let rc = unsafe { blocking_on(layout, buf, count, &t, dest, tag, comm, path, mpi_send, post, forward) };
    if let Some(t) = turn {
        contest::note(t.done(rc == errclass::SUCCESS));
    }
    rc
}

/// [`blocking`] once the layout is chosen (`None`: the MPI's engine).
///
/// # Safety
/// As [`blocking`].
#[allow(clippy::too_many_arguments)]
unsafe fn blocking_on(
    layout: Option<Layout>,
    buf: *const c_void,
    count: i64,
    datatype: &TypeArg,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    path: P2pPath,
    mpi_send: BlockingFn,
    post: PostFn,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    let Some(layout) = layout else {
        return match reserved_size(buf, count, datatype, dest, comm) {
            // SAFETY: forwarded contract.
            Some(r) => unsafe { pipelined_blocking(r.source(), pipeline::reserved(), dest, tag, comm, post, path) },
            None => forward(),
        };
    };
    if pipelines(layout.bytes(), comm, path) {
        // SAFETY: forwarded contract.
        return unsafe { pipelined_blocking(Source::Engine(&layout, buf), layout.bytes(), dest, tag, comm, post, path) };
    }
    super::note_staged(&layout, true);
    // SAFETY: the application's send buffer is valid for its typemap (MPI contract).
    let (mut st, count, ty) = unsafe { staged(&layout, buf, comm, dest) };
    // SAFETY: sluice's staging buffer holds the packed bytes as (count, ty) describes them; the
    // other arguments are the application's, so the MPI validates and reports them as it would
    // for the original call.
    unsafe { mpi_send(st.as_mut_ptr().cast(), count, ty, dest, tag, comm) }
}

/// A staged send's packed bytes and the (count, datatype) that send them: `bytes` of
/// `MPI_PACKED`, or, to a rank on another node (`netpath::p2p_split_at`), two runs with a gap
/// as one element of a two-run type, so that the MPI moves them as it would the application's
/// non-contiguous data. The receiver gets the same bytes either way.
///
/// # Safety
/// The application's send buffer is valid for `layout`'s typemap.
unsafe fn staged(layout: &Layout, buf: *const c_void, comm: Comm, dest: c_int) -> (Staging, c_int, Dt) {
    let n = layout.bytes();
    // The peer's world rank only for an intracommunicator and a rank in range: an erroneous
    // destination is the MPI's to report, from the send itself.
    let split = match netpath::p2p_split_min() {
        Some(min) if n >= min && comm != consts::comm_null() && !pipeline::is_inter(comm) => {
            pipeline::send::peer_of(comm, dest).map_or(0, |w| netpath::p2p_split_at(w, n))
        }
        _ => 0,
    };
    if let Some(t) = (split != 0).then(|| netpath::cached_split_type(n, split)).flatten() {
        // SAFETY: forwarded contract; `split < n`.
        let st = unsafe { layout.packed_split(buf, split, netpath::GAP) };
        if crate::stats::timing_enabled() {
            crate::stats::count(crate::stats::Family::P2pSplit, n);
        }
        return (st, 1, t);
    }
    // SAFETY: forwarded contract.
    (unsafe { layout.packed(buf) }, layout.count_arg(), consts::packed())
}

/// After a persistent send was created as `request` (code `rc`): a persistent receive the MPI
/// freed without the application (Open MPI frees one whose completion failed,
/// `complete::forgetting_freed`) may still be recorded under this handle value when that call
/// took the fast path; the send's `MPI_Start` must not find it.
///
/// # Safety
/// `request` is null or the application's handle the call wrote (on success).
unsafe fn forget_receive_under(rc: c_int, request: *mut Req) -> c_int {
    if rc == errclass::SUCCESS && !request.is_null() {
        // SAFETY: the new request's handle, written by the MPI.
        pipeline::persistent::forget(unsafe { *request });
    }
    rc
}

/// A nonblocking (`persistent == false`) or persistent send in any mode.
///
/// # Safety
/// As the MPI call; `forward` is that call with the application's arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn with_request(
    buf: *const c_void,
    count: i64,
    datatype: Dt,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Req,
    persistent: bool,
    mpi_send: RequestFn,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    let path = comm_hints::path(comm);
    let shares = super::shares_node_once(comm, dest);
    let t = TypeArg::new(datatype);
    if decided_for_mpi(buf, count, &t, dest, path, &shares) {
        return forward(); // (not of the reserved size: nothing else to do)
    }
    let layout = Layout::of(buf, count, &t, path, &shares).filter(|_| !is_proc_null(dest));
    // Only a decided contest applies here (a nonblocking send is not timed).
    let (layout, _) = contested(layout, buf, count, &t, dest, comm, path, false, &shares);
    let Some(layout) = layout.filter(|_| !request.is_null()) else {
        if !persistent && !request.is_null() {
            if let Some(r) = reserved_size(buf, count, &t, dest, comm) {
                // SAFETY: forwarded contract; `request` is the application's non-null pointer.
                return unsafe { pipelined_request(r.source(), pipeline::reserved(), dest, tag, comm, mpi_send, request, path) };
            }
        }
        return forward();
    };
    let pipelined = pipelines(layout.bytes(), comm, path);
    if !persistent && pipelined {
        // SAFETY: forwarded contract.
        return unsafe { pipelined_request(Source::Engine(&layout, buf), layout.bytes(), dest, tag, comm, mpi_send, request, path) };
    }
    // A persistent send of the pipelined protocol: the MPI's request sends M0 (S* bytes from
    // the staging buffer), which `MPI_Start` refills before posting the chunks.
    let peer = if pipelined { pipeline::world_rank_of(comm, dest) } else { None };
    if peer.is_none() {
        super::note_staged(&layout, true);
    }
    let (dir, st, count, ty) = match peer {
        Some(peer) => (
            Dir::SendPipelined { peer, arena: path.may_use_arena() },
            staging::take(pipeline::reserved()),
            pipeline::reserved() as c_int,
            consts::packed(),
        ),
        // Packed at every MPI_Start.
        None if persistent => (Dir::Send, staging::take(layout.bytes()), layout.count_arg(), consts::packed()),
        None => {
            // SAFETY: the application's send buffer is valid for its typemap.
            let (st, count, ty) = unsafe { staged(&layout, buf, comm, dest) };
            (Dir::Send, st, count, ty)
        }
    };
    let mut op =
        Op { dir, layout, user: buf as usize, staging: st, persistent, active: !persistent, gap_at: 0, sender: None, comm: 0, cut: None };
    // SAFETY: as in `blocking`; `request` is the application's non-null output pointer.
    let rc = unsafe { mpi_send(op.staging.as_mut_ptr().cast(), count, ty, dest, tag, comm, request) };
    if rc == errclass::SUCCESS {
        // SAFETY: the MPI wrote the new request.
        ops::track(unsafe { *request }, op);
    }
    rc
}

/// The layout of a send after its type's path contest (`contest`): between the MPI's engine
/// (`None`) and sluice's (staged, or pipelined through the arena above the reserved size), for
/// a message of at least `contest::MIN_BYTES` and not the reserved size (the pipeline's marker)
/// of a non-contiguous type the engine serves, to a rank of this node, on a communicator
/// without a path key, with the arena on, `SLUICE_P2P_MPI_ABOVE=auto` (a byte count or `off`
/// asks for the plain rule) and `SLUICE_P2P_LEARN=1`. A decided contest sets the path; an undecided one may give a blocking send
/// (`timed`) a side to run and time (the returned turn); otherwise `layout` (the built-in
/// rules) stands.
#[allow(clippy::too_many_arguments)]
fn contested(
    layout: Option<Layout>,
    buf: *const c_void,
    count: i64,
    datatype: &TypeArg,
    dest: c_int,
    comm: Comm,
    path: P2pPath,
    timed: bool,
    shares: &dyn Fn() -> bool,
) -> (Option<Layout>, Option<contest::Turn>) {
    let reserved = pipeline::reserved();
    if path != P2pPath::Auto || reserved == 0 || is_proc_null(dest) || buf.is_null() {
        return (layout, None);
    }
    // The size first, from the lock-free hint where it can (most sends end here).
    let bytes = match &layout {
        Some(l) => l.bytes(),
        None => match pipeline::bytes_if_large(count, datatype) {
            Some(n) => n,
            // (Below the reserved size the hint's size, when the type has one there.)
            None => match datatype.hint() {
                Some(h) => h.size.saturating_mul(count.max(0) as usize),
                None => return (layout, None),
            },
        },
    };
    if bytes < contest::MIN_BYTES
        || bytes == reserved
        || crate::runtime::config().is_none_or(|c| c.shm_arena == usize::MAX || !c.p2p_mpi_auto || !c.p2p_learn)
    {
        return (layout, None);
    }
    let (id, served) = match &layout {
        Some(l) => (l.compiled().id(), true),
        None => match datatype.compiled() {
            Some(ct) => {
                let dl = ct.dataloop();
                // Types only the interpreter serves play too: the rule that leaves them to Open
                // MPI's engine lost 1.4x to the arena for lammps elements at 16 MiB on the AMD VM.
                (ct.id(), !(dl.contiguous && dl.extent == dl.size as i64))
            }
            None => return (layout, None),
        },
    };
    if !served || !shares() {
        return (layout, None);
    }
    // The receiver's receipts and hints (a timed send only): where it writes when it finished
    // the message, where this process asks it which receive to post, and where it asks this
    // process (its decision shows there).
    let peer = || {
        let w = pipeline::world_rank_of(comm, dest)?;
        let (receipts, ask) = crate::transfer::shm::own_lines(w)?;
        let (told, heard) = crate::transfer::shm::median_lines(w);
        Some(contest::Peer { receipts, ask, told, decided: crate::transfer::shm::peer_hints(w), heard })
    };
    let (side, turn) = match contest::play(id, bytes, timed, peer) {
        contest::Play::Rules => return (layout, None),
        contest::Play::Decided(side) | contest::Play::Warm(side) => (side, None),
        contest::Play::Turn(t) => (t.side, Some(t)),
    };
    let layout = match (side, layout) {
        (contest::Side::Mpi, _) => None,
        (contest::Side::Sluice, Some(l)) => Some(l),
        (contest::Side::Sluice, None) => Layout::of(buf, count, datatype, P2pPath::Arena, shares),
    };
    (layout, turn)
}

/// Whether a send's type and size class has decided, in its contest, for the MPI's path, read
/// before the layout is built: [`contested`] would throw that layout away (its rules cost about
/// 70 ns per send at 64 KiB on Open MPI, where the whole of sluice's overhead on such a send
/// was about 200 ns). The conditions are [`contested`]'s for a decided class: the automatic
/// path, a real buffer and peer, a compiled type, a contested size, a peer on this node (the
/// configuration that lets contests play does not change after `MPI_Init`, so a decision
/// exists only where it holds).
fn decided_for_mpi(buf: *const c_void, count: i64, datatype: &TypeArg, dest: c_int, path: P2pPath, shares: &dyn Fn() -> bool) -> bool {
    if path != P2pPath::Auto || count <= 0 || buf.is_null() || is_proc_null(dest) {
        return false;
    }
    let Some(ct) = datatype.compiled() else { return false };
    let Some(bytes) = ct.size().checked_mul(count as usize) else { return false };
    bytes >= contest::MIN_BYTES
        && bytes != pipeline::reserved()
        && contest::decided_side(ct.id(), bytes) == Some(contest::Side::Mpi)
        && shares()
}

/// Whether a send of `bytes` packed bytes on `comm` is pipelined: a size the pipeline takes,
/// unless the communicator's hint keeps sends staged (a send of exactly the reserved size is
/// pipelined whatever the hint: that size marks pipelined messages).
fn pipelines(bytes: usize, comm: Comm, path: P2pPath) -> bool {
    pipeline::send::applies(bytes, comm) && (path.pipelines() || bytes == pipeline::reserved())
}

/// A send of exactly the reserved size that sluice's engine path does not serve (a contiguous
/// type, or large blocks left to the MPI): it must travel pipelined, so that no ordinary
/// message from sluice has that size (docs/protocol.md). `None` for every other send.
fn reserved_size(buf: *const c_void, count: i64, datatype: &TypeArg, dest: c_int, comm: Comm) -> Option<Reserved> {
    let n = pipeline::bytes_if_large(count, datatype)?;
    if n != pipeline::reserved() || buf.is_null() || is_proc_null(dest) || !pipeline::send::applies(n, comm) {
        return None;
    }
    if pipeline::is_contiguous(datatype) {
        Some(Reserved::Bytes(buf.cast::<u8>().wrapping_offset(pipeline::true_lb(datatype.handle()))))
    } else {
        Layout::any_compiled(buf, count, datatype).map(|l| Reserved::Engine(l, buf))
    }
}

/// The source of a reserved-size send ([`reserved_size`]).
enum Reserved {
    Bytes(*const u8),
    Engine(Layout, *const c_void),
}

impl Reserved {
    fn source(&self) -> Source<'_> {
        match self {
            Reserved::Bytes(p) => Source::Bytes(*p),
            Reserved::Engine(l, buf) => Source::Engine(l, *buf),
        }
    }
}

/// The communicator's path when a send of `total` contiguous bytes to `dest` on `comm` travels
/// as an arriving stream ([`arriving`]): a size the pipeline takes on this communicator (and
/// its hint), to a process; `None` otherwise.
pub fn arriving_path(total: usize, dest: c_int, comm: Comm) -> Option<P2pPath> {
    if total > c_int::MAX as usize || is_proc_null(dest) {
        return None;
    }
    let path = comm_hints::path(comm);
    pipelines(total, comm, path).then_some(path)
}

/// A send of `total` contiguous bytes that are still arriving in sluice's own memory (a device
/// buffer's host copy, `protocol::device`), pipelined whatever the size's usual route
/// ([`arriving_path`] gave `path`), so that the first chunks travel while the rest arrive.
/// `post` is the nonblocking call of the application's mode; `request`: `None` for a blocking
/// send (returns when M0 completes), else the application's request (M0's).
///
/// # Safety
/// As the MPI send call; `request`, when given, is the application's non-null pointer.
#[allow(clippy::too_many_arguments)]
pub unsafe fn arriving(
    a: &Arc<dyn Arriving>,
    total: usize,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    path: P2pPath,
    post: PostFn,
    request: Option<*mut Req>,
) -> c_int {
    // SAFETY: forwarded contract; the stream is sluice's memory of `total` bytes.
    unsafe {
        match request {
            None => pipelined_blocking(Source::Arriving(a), total, dest, tag, comm, post, path),
            Some(r) => pipelined_request(Source::Arriving(a), total, dest, tag, comm, post, r, path),
        }
    }
}

/// A send of `total` contiguous bytes from device memory, prepared for the pipelined
/// protocol's device route (`pipeline::device`): M0 posted with `post`; `request` as in
/// [`arriving`]. A failed device copy is returned as such (after M0 was handled as usual: its
/// receiver gets an error too).
///
/// # Safety
/// As the MPI send call; `p` was prepared for `dest`'s world rank in `comm`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn from_device(
    p: pipeline::device::Prepared,
    total: usize,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    post: PostFn,
    request: Option<*mut Req>,
) -> Result<c_int, crate::transfer::gpu::CudaError> {
    // SAFETY: forwarded contract.
    let (rc, req, copied) = unsafe { pipeline::send::start_device(p, total, dest, tag, comm, post) };
    // SAFETY: forwarded contract.
    let rc = unsafe { hand_over((rc, req), request) };
    copied.map(|()| rc)
}

/// A blocking pipelined send: M0 and every chunk posted, then M0 completed in the
/// application's mode (the chunks complete on their own, docs/protocol.md rule 1).
///
/// # Safety
/// As the MPI send call.
unsafe fn pipelined_blocking(src: Source<'_>, total: usize, dest: c_int, tag: c_int, comm: Comm, post: PostFn, path: P2pPath) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { hand_over(pipeline::send::start(src, total, dest, tag, comm, post, path.may_use_arena()), None) }
}

/// A nonblocking pipelined send: the application's request is M0's.
///
/// # Safety
/// As the MPI send call; `request` is non-null.
#[allow(clippy::too_many_arguments)]
unsafe fn pipelined_request(
    src: Source<'_>,
    total: usize,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    post: PostFn,
    request: *mut Req,
    path: P2pPath,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { hand_over(pipeline::send::start(src, total, dest, tag, comm, post, path.may_use_arena()), Some(request)) }
}

/// The end of every pipelined send once M0 is posted (`rc`, its request): a blocking send
/// (`request`: `None`) completes M0 in the application's mode; a nonblocking one hands M0's
/// request to the application.
///
/// # Safety
/// `req` is M0's request when `rc` is success; `request`, when given, is the application's
/// non-null output pointer.
unsafe fn hand_over((rc, mut req): (c_int, Req), request: Option<*mut Req>) -> c_int {
    if rc != errclass::SUCCESS {
        return rc;
    }
    match request {
        // SAFETY: M0's request, sluice's own.
        None => unsafe { next::MPI_Wait(&mut req, consts::status_ignore()) },
        Some(r) => {
            if !crate::ffi::is_shared_request(req) && pipeline::track::holds(req) {
                // See `track::arm`: a diagnostic for the flaky p2p_conf_threads failure.
                log::error!("send request {:#x} has the handle of a live tracked receive", crate::ffi::request_key(req));
            }
            // SAFETY: the application's non-null output pointer.
            unsafe { *r = req };
            rc
        }
    }
}

/// Defines the exported handlers of one send mode (int and, on MPICH, large-count variants).
macro_rules! send_mode {
    ($(#[$doc:meta])* $blocking:ident / $blocking_c:ident => $mpi_blocking:ident / $mpi_blocking_c:ident,
     $nonblocking:ident / $nonblocking_c:ident => $mpi_nonblocking:ident / $mpi_nonblocking_c:ident,
     $init:ident / $init_c:ident => $mpi_init:ident / $mpi_init_c:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $blocking(buf: *const c_void, count: c_int, datatype: Dt, dest: c_int, tag: c_int, comm: Comm) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                blocking(buf, count.into(), datatype, dest, tag, comm, stringify!($blocking) != "bsend", next::$mpi_blocking, next::$mpi_nonblocking, || {
                    next::$mpi_blocking(buf, count, datatype, dest, tag, comm)
                })
            }
        }

        #[doc = concat!("`", stringify!($mpi_nonblocking), "`.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $nonblocking(
            buf: *const c_void, count: c_int, datatype: Dt, dest: c_int, tag: c_int, comm: Comm, request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                with_request(buf, count.into(), datatype, dest, tag, comm, request, false, next::$mpi_nonblocking, || {
                    next::$mpi_nonblocking(buf, count, datatype, dest, tag, comm, request)
                })
            }
        }

        #[doc = concat!("`", stringify!($mpi_init), "`: the staging buffer lives as long as the request.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $init(
            buf: *const c_void, count: c_int, datatype: Dt, dest: c_int, tag: c_int, comm: Comm, request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            let rc = unsafe {
                with_request(buf, count.into(), datatype, dest, tag, comm, request, true, next::$mpi_init, || {
                    next::$mpi_init(buf, count, datatype, dest, tag, comm, request)
                })
            };
            // SAFETY: the call's request argument.
            unsafe { forget_receive_under(rc, request) }
        }

        #[cfg(sluice_large_count)]
        #[doc = concat!("`", stringify!($mpi_blocking_c), "` (packed size up to `INT_MAX`, else forwarded).")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $blocking_c(
            buf: *const c_void, count: mpi::MPI_Count, datatype: Dt, dest: c_int, tag: c_int, comm: Comm,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                blocking(buf, count, datatype, dest, tag, comm, stringify!($blocking) != "bsend", next::$mpi_blocking, next::$mpi_nonblocking, || {
                    next::$mpi_blocking_c(buf, count, datatype, dest, tag, comm)
                })
            }
        }

        #[cfg(sluice_large_count)]
        #[doc = concat!("`", stringify!($mpi_nonblocking_c), "`.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $nonblocking_c(
            buf: *const c_void, count: mpi::MPI_Count, datatype: Dt, dest: c_int, tag: c_int, comm: Comm,
            request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                with_request(buf, count, datatype, dest, tag, comm, request, false, next::$mpi_nonblocking, || {
                    next::$mpi_nonblocking_c(buf, count, datatype, dest, tag, comm, request)
                })
            }
        }

        #[cfg(sluice_large_count)]
        #[doc = concat!("`", stringify!($mpi_init_c), "`.")]
        ///
        /// # Safety
        /// As the MPI call of the same name.
        pub unsafe fn $init_c(
            buf: *const c_void, count: mpi::MPI_Count, datatype: Dt, dest: c_int, tag: c_int, comm: Comm,
            request: *mut Req,
        ) -> c_int {
            // SAFETY: forwarded contract.
            let rc = unsafe {
                with_request(buf, count, datatype, dest, tag, comm, request, true, next::$mpi_init, || {
                    next::$mpi_init_c(buf, count, datatype, dest, tag, comm, request)
                })
            };
            // SAFETY: the call's request argument.
            unsafe { forget_receive_under(rc, request) }
        }
    };
}

send_mode! {
    /// `MPI_Send`.
    send / send_c => MPI_Send / MPI_Send_c,
    isend / isend_c => MPI_Isend / MPI_Isend_c,
    send_init / send_init_c => MPI_Send_init / MPI_Send_init_c
}
send_mode! {
    /// `MPI_Bsend`: the MPI copies the packed bytes into the attached buffer (they are never
    /// larger than the MPI's own packed size, so the application's buffer sizing holds).
    bsend / bsend_c => MPI_Bsend / MPI_Bsend_c,
    ibsend / ibsend_c => MPI_Ibsend / MPI_Ibsend_c,
    bsend_init / bsend_init_c => MPI_Bsend_init / MPI_Bsend_init_c
}
send_mode! {
    /// `MPI_Ssend`.
    ssend / ssend_c => MPI_Ssend / MPI_Ssend_c,
    issend / issend_c => MPI_Issend / MPI_Issend_c,
    ssend_init / ssend_init_c => MPI_Ssend_init / MPI_Ssend_init_c
}
send_mode! {
    /// `MPI_Rsend`.
    rsend / rsend_c => MPI_Rsend / MPI_Rsend_c,
    irsend / irsend_c => MPI_Irsend / MPI_Irsend_c,
    rsend_init / rsend_init_c => MPI_Rsend_init / MPI_Rsend_init_c
}
