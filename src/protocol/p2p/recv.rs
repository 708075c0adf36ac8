//! Receives: a non-contiguous receive lands in a staging buffer of the user's capacity
//! (`count * size` bytes of `MPI_PACKED`: any message fits exactly where it would fit the user's
//! buffer, and a longer one is truncated by the MPI with its own MPI_ERR_TRUNCATE) and is
//! unpacked when it completes. The status is the MPI's own: its byte count makes
//! MPI_Get_count / MPI_Get_elements in the user's datatype come out as with the bare MPI.

use std::ffi::{c_int, c_void};

use super::contest::Served;
use super::ops::{self, Dir, Op};
use super::pipeline;
use super::pipeline::incoming::Dest;
use super::pipeline::track::Landing;
use super::{is_proc_null, status_or, Layout};
use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::comm_hints::{self, P2pPath};
use crate::protocol::datatype::TypeArg;
use crate::transfer::{netpath, staging};

type Comm = mpi::MPI_Comm;
type Dt = mpi::MPI_Datatype;
type Req = mpi::MPI_Request;
type Status = mpi::MPI_Status;

/// A blocking receive into staging, then unpack (`from`: the communicator whose ranks the
/// status names, when known: the sender learns when the receive finished, `contest::received`;
/// a pipelined message tells it from its last chunk).
///
/// # Safety
/// As `MPI_Recv`; `receive(staging, bytes, status)` performs the MPI receive.
unsafe fn blocking(
    layout: Layout,
    buf: *mut c_void,
    status: *mut Status,
    pipe: Option<Comm>,
    from: Option<Comm>,
    receive: impl FnOnce(*mut c_void, c_int, *mut Status) -> c_int,
) -> c_int {
    super::note_staged(&layout, false);
    let mut st = staging::take_for_receive(layout.bytes());
    let mut local = super::blank_status();
    let stp = status_or(status, &mut local);
    let rc = receive(st.as_mut_ptr().cast(), layout.count_arg(), stp);
    if let Some(comm) = pipe {
        // SAFETY: the MPI filled `stp` for this receive.
        if rc == errclass::SUCCESS && unsafe { super::received_bytes(stp) } == pipeline::reserved() {
            let op = Op {
                dir: Dir::Recv,
                layout: layout.clone(),
                user: buf as usize,
                staging: st,
                persistent: false,
                active: true,
                gap_at: 0,
                sender: None,
                comm: pipeline::comm_key(comm),
                cut: None,
            };
            let cap = layout.bytes();
            // SAFETY: M0 landed in the operation's staging; the user buffer is the receive's.
            match unsafe { pipeline::track::receive_rest(pipeline::incoming::Dest::Engine(op), cap, comm) } {
                (Some(o), _) => return pipeline::track::blocking_code(rc, Some(o), stp),
                (None, op) => st = op.expect("engine receive keeps its operation").staging,
            }
        }
    }
    // SAFETY: the MPI filled `stp` for this receive.
    let n = unsafe { super::delivered_bytes(rc, stp, layout.bytes()) };
    // SAFETY: as above.
    st.note_received(unsafe { super::received_bytes(stp) });
    let whole = layout.unpackable(n);
    if whole > 0 {
        // SAFETY: the application's buffer is valid for the typemap (MPI contract); inside the
        // application's blocking call.
        unsafe { layout.unpack_in_call(&st, whole, buf) };
    }
    if whole != n {
        // A matched receive's communicator is not known here: MPI_COMM_WORLD's handler.
        let comm = from.unwrap_or_else(consts::comm_world);
        // SAFETY: `stp` is this receive's writable status.
        unsafe { super::partial_element(stp, whole) };
        return super::raise_partial(rc, Some(comm));
    }
    if let Some(comm) = from {
        // SAFETY: the MPI filled `stp`.
        unsafe { receipt(rc, comm, stp, Served::Sluice) };
    }
    rc
}

/// A nonblocking or persistent receive into staging, tracked until completion;
/// `receive(staging, count, datatype)` posts it. A nonblocking receive from `peer` (a world
/// rank, or -1) that cannot get a pipelined message (`pipe == None`) lands in two runs where
/// [`netpath::p2p_recv_split_at`] says so.
#[allow(clippy::too_many_arguments)]
fn with_request(
    layout: Layout,
    buf: *mut c_void,
    request: *mut Req,
    persistent: bool,
    split_from: Option<c_int>,
    sender: Option<c_int>,
    comm: Comm,
    receive: impl FnOnce(*mut c_void, c_int, Dt) -> c_int,
) -> c_int {
    super::note_staged(&layout, false);
    let n = layout.bytes();
    let gap_at = match split_from {
        Some(peer) if !persistent => netpath::p2p_recv_split_at(peer, n),
        _ => 0,
    };
    let split = (gap_at != 0).then(|| netpath::cached_split_type(n, gap_at)).flatten();
    let gap_at = if split.is_some() { gap_at } else { 0 };
    if gap_at != 0 && crate::stats::timing_enabled() {
        crate::stats::count(crate::stats::Family::P2pSplit, n);
    }
    let mut op = Op {
        dir: Dir::Recv,
        staging: staging::take_for_receive(if gap_at != 0 { n + netpath::GAP } else { n }),
        layout,
        user: buf as usize,
        persistent,
        active: !persistent,
        gap_at,
        sender,
        // The handler MPICH raises a nonblocking receive's error through (`Outcome::for_request`).
        comm: pipeline::comm_key(if cfg!(sluice_mpi = "mpich") && !persistent { consts::comm_world() } else { comm }),
        cut: None,
    };
    let rc = match split {
        Some(t) => receive(op.staging.as_mut_ptr().cast(), 1, t),
        None => receive(op.staging.as_mut_ptr().cast(), op.layout.count_arg(), consts::packed()),
    };
    if rc == errclass::SUCCESS {
        // SAFETY: the MPI wrote the new request through the application's non-null pointer.
        ops::track(unsafe { *request }, op);
    }
    rc
}

/// The communicator of a receive of `capacity` bytes that may get a pipelined message (at least
/// the reserved size, an intracommunicator), or `None`.
fn pipe_for(capacity: usize, source: c_int, comm: Comm) -> Option<Comm> {
    let s = pipeline::reserved();
    (s != 0 && capacity >= s && !is_proc_null(source) && comm != consts::comm_null() && !pipeline::is_inter(comm)).then_some(comm)
}

/// A receive that sluice's engine path does not serve but that may get a pipelined message:
/// where M0 lands, the capacity, the communicator, and what the MPI receive is posted with.
struct Direct {
    landing: Landing,
    cap: usize,
    comm: Comm,
    post: Posting,
}

/// The (buffer, count, datatype) an MPI receive is posted with.
#[derive(Clone, Copy)]
struct Posting {
    buf: *mut c_void,
    count: i64,
    datatype: Dt,
}

impl Posting {
    /// `count` as the `int` argument of the non-`_c` calls: the application's own count, or a
    /// byte count sluice made only when it fits.
    fn int_count(&self) -> c_int {
        self.count as c_int
    }
}

/// What a receive that sluice neither serves nor watches for a pipelined message is posted with.
///
/// MPICH 4.0's engine refuses more than about 8 KiB of packed bytes (what sluice sends for a
/// non-contiguous type) received into a type whose elements mix basic types, such as a struct
/// of `int` and `double` (`MPI_ERR_TRUNCATE`, measured; `tests/c/p2p_conf_landing.c`), where the
/// bare MPICH receives the sender's typed message. A compiled type that is contiguous in memory
/// is therefore posted there as `MPI_BYTE`s at its data: the same bytes, the same status count.
/// (Non-contiguous compiled types take sluice's engine path, or the byte twin.)
fn plain_posting(buf: *mut c_void, count: i64, t: &TypeArg) -> Posting {
    let user = Posting { buf, count, datatype: t.handle() };
    if !cfg!(sluice_mpi = "mpich") || count <= 0 || buf.is_null() {
        return user;
    }
    let Some(ct) = t.compiled().filter(|c| c.from_struct()) else { return user };
    let dl = ct.dataloop();
    match c_int::try_from(dl.size.saturating_mul(count as usize)) {
        Ok(n) if dl.contiguous && dl.extent == dl.size as i64 => {
            Posting { buf: buf.cast::<u8>().wrapping_offset(dl.true_lb as isize).cast(), count: n.into(), datatype: consts::byte() }
        }
        _ => user,
    }
}

/// How a receive that sluice's engine path does not serve lands a pipelined message's M0:
/// contiguous memory, or in place through the MPI's engine for a compiled type (`None`: a small
/// receive, or a type sluice cannot unpack by ranges).
///
/// M0 is S\* bytes, an odd number, so the MPI receive is posted with a description of the same
/// memory in bytes: `cap` bytes of `MPI_BYTE` at the data of a contiguous type, or the type's
/// byte twin ([`crate::protocol::byte_twin`]) on MPICH, whose engine refuses a byte count that
/// is not a whole number of the receive type's elements (`MPI_ERR_TRUNCATE`; an assertion abort
/// for a self-send). Open MPI's engine takes any byte count into a typed receive, so there the
/// application's type is kept. The status counts the same bytes either way, so `MPI_Get_count`
/// in the application's type is unchanged.
fn direct_landing(buf: *mut c_void, count: i64, t: &TypeArg, source: c_int, comm: Comm) -> Option<Direct> {
    let cap = pipeline::bytes_if_large(count, t)?;
    let comm = pipe_for(cap, source, comm)?;
    if buf.is_null() {
        return None;
    }
    let user = Posting { buf, count, datatype: t.handle() };
    if pipeline::is_contiguous(t) {
        let base = buf.cast::<u8>().wrapping_offset(pipeline::true_lb(t.handle()));
        let post = match c_int::try_from(cap) {
            Ok(n) => Posting { buf: base.cast(), count: n.into(), datatype: consts::byte() },
            Err(_) => user,
        };
        Some(Direct { landing: Landing::Bytes(base), cap, comm, post })
    } else {
        let l = Layout::any_compiled(buf, count, t)?;
        let twin = if cfg!(sluice_mpi = "mpich") { crate::protocol::byte_twin::of(l.form()) } else { None };
        let post = twin.map_or(user, |twin| Posting { datatype: twin, ..user });
        Some(Direct { landing: Landing::InPlace(l, buf), cap, comm, post })
    }
}

/// A blocking receive the MPI makes into the application's buffer (`direct`), followed by
/// the chunks when it got an M0.
///
/// # Safety
/// As `MPI_Recv`; `receive(posting, status)` is the application's receive, posted with `posting`.
unsafe fn direct_blocking(direct: Direct, status: *mut Status, receive: impl FnOnce(Posting, *mut Status) -> c_int) -> c_int {
    let Direct { landing, cap, comm, post } = direct;
    let mut local = super::blank_status();
    let stp = status_or(status, &mut local);
    let rc = receive(post, stp);
    // SAFETY: the MPI filled `stp`.
    let n = unsafe { super::received_bytes(stp) };
    if rc != errclass::SUCCESS || n != pipeline::reserved() {
        if rc == errclass::SUCCESS {
            if let Some(o) = pipeline::incoming::Outcome::partial(&landing, n, cap, comm) {
                return pipeline::track::blocking_code(rc, Some(o), stp);
            }
        }
        if let Landing::InPlace(..) = landing {
            // Non-contiguous types only (a contiguous receive's sender has no contest); the
            // receive is the application's own, on `comm`.
            // SAFETY: as above.
            unsafe { receipt(rc, comm, stp, Served::Mpi) };
        }
        return rc;
    }
    let dest = match landing {
        Landing::Bytes(base) => Dest::Bytes(base),
        Landing::InPlace(l, user) => Dest::InPlace(l, user),
        Landing::Staged | Landing::Served(_) => return rc,
    };
    // SAFETY: M0 landed in `dest`, which holds `cap` bytes of stream.
    let (o, _) = unsafe { pipeline::track::receive_rest(dest, cap, comm) };
    pipeline::track::blocking_code(rc, o, stp)
}

/// The probed message a receive of (source, tag, comm) must take first, if any.
#[inline]
fn stashed(source: c_int, tag: c_int, comm: Comm) -> Option<pipeline::stash::Stashed> {
    if pipeline::stash::any() {
        pipeline::stash::take(source, tag, comm)
    } else {
        None
    }
}

/// Arms pipelined-message detection on a nonblocking receive the MPI just posted.
fn arm(rc: c_int, request: *mut Req, landing: Landing, capacity: usize, pipe: Option<Comm>, persistent: bool) {
    // SAFETY: read only after a successful call, which wrote the request.
    if rc == errclass::SUCCESS && crate::ffi::is_shared_request(unsafe { *request }) {
        return; // complete at once, nothing received (`pipe_for` already excludes MPI_PROC_NULL)
    }
    if let (errclass::SUCCESS, Some(comm)) = (rc, pipe) {
        // SAFETY: the MPI wrote the new request.
        pipeline::track::arm(unsafe { *request }, pipeline::track::Entry::new(landing, capacity, comm, persistent));
    }
}

/// The path of a matched receive (`MPI_Mrecv`, `MPI_Imrecv`): the one noted when the probe took
/// the message (`comm_hints::note_matched`; a message handle does not name its communicator).
/// The peer's node is taken as this one; any path reads any message (a hint only changes speed).
fn matched_path(message: *mut mpi::MPI_Message) -> P2pPath {
    if message.is_null() {
        return P2pPath::Auto; // the MPI reports the argument
    }
    // SAFETY: a non-null pointer to the application's message handle.
    comm_hints::matched_path(unsafe { *message })
}

/// The engine layout of a receive, if sluice serves it: the receive its sender asked for
/// ([`asked_path`]), else by the built-in rules, or because this process's sends of the same
/// type and size to its node chose sluice's path in their contest
/// (`contest::receive_takes_sluice`; a receive from this node without a path key, of a size
/// that may get a pipelined message).
fn recv_layout(buf: *mut c_void, count: i64, t: &TypeArg, source: c_int, comm: Comm, path: P2pPath) -> Option<Layout> {
    recv_route(buf, count, t, source, comm, path, false).layout
}

/// Where a receive goes ([`recv_route`]).
struct Route {
    /// sluice's engine serves it (`None`: the MPI's receive).
    layout: Option<Layout>,
    /// The sender's world rank, when the receive tells it when it finished.
    sender: Option<c_int>,
    /// The MPI's typed receive was asked for where only a receive that probes first can post
    /// it ([`recv_probed`]).
    probe: bool,
}

/// [`recv_layout`], and the world rank of the sender when the receive tells it when it
/// finished (`contest::received_from`): resolved here once, where [`asked_path`] translates
/// the source anyway, instead of again at the receipt (three attribute look-ups and a rank
/// translation fewer per receive of a contested size: a few percent of a 64 KiB face's round
/// trip on Open MPI, `bench/p2p_paths.c`). `probes`: the caller can probe before it receives
/// (a blocking receive, [`recv_probed`]).
fn recv_route(buf: *mut c_void, count: i64, t: &TypeArg, source: c_int, comm: Comm, path: P2pPath, probes: bool) -> Route {
    if is_proc_null(source) {
        return Route { layout: None, sender: None, probe: false };
    }
    let shares = super::shares_node_once(comm, source);
    let (path, sender, probe) = if path == P2pPath::Auto { asked_path(count, t, source, comm, probes) } else { (path, None, false) };
    let layout = Layout::of(buf, count, t, path, &shares).or_else(|| {
        let ct = (path == P2pPath::Auto && super::contest::any_chose_sluice()).then(|| t.compiled()).flatten()?;
        let bytes = ct.size().saturating_mul(usize::try_from(count).ok()?);
        let follow = bytes >= pipeline::reserved() && super::contest::receive_takes_sluice(ct.id(), bytes) && shares();
        follow.then(|| Layout::of(buf, count, t, P2pPath::Arena, &shares)).flatten()
    });
    Route { probe: probe && layout.is_none(), layout, sender }
}

/// The path of a receive whose sender asked for one (`contest::asked`): the MPI's typed receive
/// or sluice's, for a receive of a non-contiguous type of a size that has a contest, from a
/// named rank of this node on an intracommunicator, where contests run; `Auto` (the rules)
/// otherwise. Why the sender decides: it times the message to this receive's finish, so only
/// it can compare the pairings of its send with each receive (face-x at 64 KiB: with the
/// receive left to the rules, every sample went into sluice's staged receive and the MPI's
/// engine on both ends, 1.1-1.3x faster, was never measured; docs/benchmarks.md "Automatic
/// path"). Costs a size check on every receive from a named rank, and a rank translation and
/// one cache line read on those of that size. The third value: the MPI's typed receive was
/// asked for where it must probe first (`contest::mpi_receive_posts_plainly`; only when
/// `probes`, else the rules decide).
fn asked_path(count: i64, t: &TypeArg, source: c_int, comm: Comm, probes: bool) -> (P2pPath, Option<c_int>, bool) {
    use super::contest::{self, Served};
    const AUTO: (P2pPath, Option<c_int>, bool) = (P2pPath::Auto, None, false);
    if source < 0 || count <= 0 || comm == consts::comm_null() {
        return AUTO;
    }
    let size = match t.hint() {
        Some(h) if h.left_to_mpi => return AUTO, // contiguous, or left to the MPI
        Some(h) => h.size,
        None => match t.compiled() {
            Some(ct) => ct.size(),
            None => return AUTO,
        },
    };
    let bytes = size.saturating_mul(count as usize);
    if bytes < contest::MIN_BYTES || bytes == pipeline::reserved() || !contest::learning_here() {
        return AUTO;
    }
    let non_contiguous = t.compiled().is_some_and(|ct| {
        let dl = ct.dataloop();
        !(dl.contiguous && dl.extent == dl.size as i64)
    });
    if !non_contiguous {
        return AUTO;
    }
    // An intracommunicator without a path key (the caller's `Auto`): its receives tell.
    let sender = match crate::protocol::comm_facts::inter_and_world_rank(comm, source) {
        Some((false, w)) => w,
        _ => return AUTO,
    };
    let (path, probe) = match sender.and_then(|w| contest::asked(w, bytes)) {
        Some(Served::Mpi) if contest::mpi_receive_posts_plainly(bytes) => (P2pPath::Mpi, false),
        // (Where no other thread of the application receives at once: `recv_probed`.)
        Some(Served::Mpi) if probes && crate::protocol::app_level::app_thread_level() < crate::ffi::THREAD_MULTIPLE => (P2pPath::Mpi, true),
        Some(Served::Mpi) => (P2pPath::Auto, false),
        Some(Served::Sluice) => (P2pPath::Arena, false),
        None => (P2pPath::Auto, false),
    };
    (path, sender, probe)
}

/// A blocking receive on MPICH, from the pipeline's threshold on, whose sender asked for the
/// MPI's typed receive: the message is probed first. Any message but a pipelined one's M0 (its
/// size is [`pipeline::reserved`]) is received here into the application's type, as by the bare
/// MPICH; an M0 returns `Err(())`, for sluice's receive (the receipt then names sluice's). Why
/// not post the MPI's receive with the type's byte twin, as a receive the rules leave to the
/// MPI is posted there so that an M0 can land in place: a message that ends inside an element
/// would have that element's bytes written, which MPICH's typed receive does not write, and
/// one pipelined into it writes only its M0 (`tests/c/p2p_conf_partial.c`). Without this
/// receive the path contest could not measure the MPI's engine on both ends from the threshold
/// on, and chose sluice's path where the MPI's ran 1.1x faster (MPICH, vec-64 at 1 MiB,
/// docs/benchmarks.md "Automatic path").
///
/// `MPI_Probe` then `MPI_Recv` with the same arguments, not `MPI_Mprobe` and `MPI_Mrecv`:
/// MPICH raises an `MPI_Mrecv` error (a truncation) through `MPI_COMM_WORLD`'s handler, not the
/// communicator's as `MPI_Recv` does. The receive gets the probed message because no other
/// receive can come between: messages from one source do not overtake, and the caller takes
/// this path only where the application's threads do not call the MPI at once (below
/// `MPI_THREAD_MULTIPLE`). The probe costs a microsecond or two against the hundreds a message
/// of this size takes.
///
/// # Safety
/// As `MPI_Recv`; `source` is a rank of `comm`, `sender` its world rank.
#[allow(clippy::too_many_arguments)]
unsafe fn recv_probed(
    buf: *mut c_void,
    count: c_int,
    datatype: Dt,
    source: c_int,
    tag: c_int,
    comm: Comm,
    status: *mut Status,
    sender: c_int,
) -> Result<c_int, ()> {
    let mut probed = super::blank_status();
    // SAFETY: forwarded contract; `probed` is valid for writes.
    let rc = unsafe { next::MPI_Probe(source, tag, comm, &mut probed) };
    if rc != errclass::SUCCESS {
        return Ok(rc);
    }
    // SAFETY: the MPI filled `probed`.
    if unsafe { super::received_bytes(&probed) } == pipeline::reserved() {
        return Err(());
    }
    let mut local = super::blank_status();
    let stp = status_or(status, &mut local);
    // SAFETY: forwarded contract.
    let rc = unsafe { next::MPI_Recv(buf, count, datatype, source, tag, comm, stp) };
    if rc == errclass::SUCCESS {
        // SAFETY: the MPI filled `stp`.
        super::contest::received_from(sender, unsafe { super::received_bytes(stp) }, super::contest::Served::Mpi);
    }
    Ok(rc)
}

/// `MPI_Recv`.
///
/// # Safety
/// As `MPI_Recv`.
pub unsafe fn recv(buf: *mut c_void, count: c_int, datatype: Dt, source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int {
    let t = TypeArg::new(datatype);
    if let Some(e) = stashed(source, tag, comm) {
        // SAFETY: forwarded contract.
        return unsafe { pipeline::serve::blocking(e, buf, count.into(), datatype, comm, status, false) };
    }
    let Route { mut layout, sender, probe } = recv_route(buf, count.into(), &t, source, comm, comm_hints::path(comm), true);
    if let (true, Some(w)) = (probe, sender) {
        // SAFETY: forwarded contract; `sender` is `source`'s world rank.
        match unsafe { recv_probed(buf, count, datatype, source, tag, comm, status, w) } {
            Ok(rc) => return rc,
            // A pipelined message: sluice's receive (the sender shares this node).
            Err(()) => layout = Layout::of(buf, count.into(), &t, P2pPath::Arena, &|| true),
        }
    }
    match layout {
        // SAFETY: forwarded contract; the staging buffer has `n` bytes.
        Some(l) => unsafe {
            let pipe = pipe_for(l.bytes(), source, comm);
            blocking(l, buf, status, pipe, Some(comm), |p, n, s| next::MPI_Recv(p, n, consts::packed(), source, tag, comm, s))
        },
        None => match direct_landing(buf, count.into(), &t, source, comm) {
            // SAFETY: forwarded contract; the posting describes the application's buffer.
            Some(d) => unsafe { direct_blocking(d, status, |p, s| next::MPI_Recv(p.buf, p.int_count(), p.datatype, source, tag, comm, s)) },
            // SAFETY: forwarded unchanged.
            None => unsafe {
                let p = plain_posting(buf, count.into(), &t);
                if !tells_sender(count.into(), &t) {
                    return next::MPI_Recv(p.buf, p.int_count(), p.datatype, source, tag, comm, status);
                }
                let mut local = super::blank_status();
                let stp = status_or(status, &mut local);
                let rc = next::MPI_Recv(p.buf, p.int_count(), p.datatype, source, tag, comm, stp);
                match sender {
                    // (A named source: the status names the same rank.)
                    Some(w) if rc == errclass::SUCCESS => super::contest::received_from(w, super::received_bytes(stp), Served::Mpi),
                    _ => receipt(rc, comm, stp, Served::Mpi),
                }
                rc
            },
        },
    }
}

/// Whether a receive the MPI's engine serves still tells its sender when it finished
/// (`contest::received`): a non-contiguous type of a size that has a contest, where contests
/// run. Without it a sender's contest would time its sends alone against a receiver the rules
/// leave to the MPI (face-y at 64 KiB: the receiver's unpacking of staged bytes went unseen and
/// sluice's path was chosen, 1.6x slower than the MPI's on both MPIs).
fn tells_sender(count: i64, t: &TypeArg) -> bool {
    super::contest::learning_here()
        && t.compiled().is_some_and(|ct| {
            let dl = ct.dataloop();
            !(dl.contiguous && dl.extent == dl.size as i64) && ct.size().saturating_mul(count.max(0) as usize) >= super::contest::MIN_BYTES
        })
}

/// Tells the sender's path contest that this receive, `served` as it says, finished now
/// (`contest::received`).
///
/// # Safety
/// `stp` is the status the MPI filled for this receive (read only when `rc` is success).
unsafe fn receipt(rc: c_int, comm: Comm, stp: *const Status, served: Served) {
    if rc == errclass::SUCCESS {
        // SAFETY: forwarded contract.
        let (source, bytes) = unsafe { ((*stp).MPI_SOURCE, super::received_bytes(stp)) };
        super::contest::received(comm, source, bytes, served);
    }
}

/// A nonblocking or persistent receive: the engine path (`receive` into staging) or the MPI's
/// (`forward`), armed for pipelined messages when its capacity reaches the reserved size.
#[allow(clippy::too_many_arguments)]
fn nonblocking(
    buf: *mut c_void,
    count: i64,
    datatype: Dt,
    source: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Req,
    persistent: bool,
    receive: impl FnOnce(*mut c_void, c_int, Dt) -> c_int,
    forward: impl FnOnce(Posting) -> c_int,
) -> c_int {
    let t = TypeArg::new(datatype);
    if !persistent && !request.is_null() {
        if let Some(e) = stashed(source, tag, comm) {
            // SAFETY: the application's receive buffer and request pointer.
            return unsafe { pipeline::serve::nonblocking(e, buf, count, datatype, comm, request) };
        }
    }
    let rc = match recv_layout(buf, count, &t, source, comm, comm_hints::path(comm)).filter(|_| !request.is_null()) {
        Some(l) => {
            let (cap, pipe) = (l.bytes(), pipe_for(l.bytes(), source, comm));
            // A known peer on an intracommunicator (an erroneous source stays the MPI's to report).
            let may_split = netpath::p2p_recv_split_min().is_some_and(|min| cap >= min);
            let split_from =
                if may_split && pipe.is_none() && !persistent && comm != consts::comm_null() && !pipeline::is_inter(comm) && source >= 0 {
                    pipeline::send::peer_of(comm, source)
                } else {
                    None
                };
            let sender = super::contest::sender_of(comm, source, cap);
            let rc = with_request(l, buf, request, persistent, split_from, sender, comm, receive);
            arm(rc, request, Landing::Staged, cap, pipe, persistent);
            rc
        }
        None => match direct_landing(buf, count, &t, source, comm).filter(|_| !request.is_null()) {
            Some(d) => {
                let rc = forward(d.post);
                arm(rc, request, d.landing, d.cap, Some(d.comm), persistent);
                rc
            }
            None => forward(plain_posting(buf, count, &t)),
        },
    };
    if persistent && rc == errclass::SUCCESS && !request.is_null() && pipeline::reserved() != 0 {
        // MPI_Start looks in the probe stash first (`pipeline::persistent`).
        let args = pipeline::persistent::RecvArgs { buf, count, datatype, source, tag, comm };
        // SAFETY: the MPI wrote the new request.
        pipeline::persistent::record(unsafe { *request }, args);
    }
    rc
}

/// `MPI_Irecv`.
///
/// # Safety
/// As `MPI_Irecv`.
pub unsafe fn irecv(buf: *mut c_void, count: c_int, datatype: Dt, source: c_int, tag: c_int, comm: Comm, request: *mut Req) -> c_int {
    nonblocking(
        buf,
        count.into(),
        datatype,
        source,
        tag,
        comm,
        request,
        false,
        |p, n, t| {
            // SAFETY: forwarded contract; the staging buffer holds `n` of `t` and lives in the
            // table until the request completes.
            unsafe { next::MPI_Irecv(p, n, t, source, tag, comm, request) }
        },
        |p| {
            // SAFETY: forwarded; the posting describes the application's buffer.
            unsafe { next::MPI_Irecv(p.buf, p.int_count(), p.datatype, source, tag, comm, request) }
        },
    )
}

/// `MPI_Recv_init`: the staging buffer lives as long as the request.
///
/// # Safety
/// As `MPI_Recv_init`.
pub unsafe fn recv_init(buf: *mut c_void, count: c_int, datatype: Dt, source: c_int, tag: c_int, comm: Comm, request: *mut Req) -> c_int {
    nonblocking(
        buf,
        count.into(),
        datatype,
        source,
        tag,
        comm,
        request,
        true,
        |p, n, t| {
            // SAFETY: as in `irecv`.
            unsafe { next::MPI_Recv_init(p, n, t, source, tag, comm, request) }
        },
        |p| {
            // SAFETY: forwarded; the posting describes the application's buffer.
            unsafe { next::MPI_Recv_init(p.buf, p.int_count(), p.datatype, source, tag, comm, request) }
        },
    )
}

/// Whether a matched-receive call is served by sluice (`MPI_MESSAGE_NO_PROC` and invalid
/// messages go to the MPI).
fn message_ok(message: *mut mpi::MPI_Message) -> bool {
    // SAFETY: non-null pointer to the application's message handle.
    !message.is_null() && unsafe { *message } != consts::message_no_proc() && unsafe { *message } != consts::message_null()
}

/// A matched receive of a message the application's `MPI_Mprobe` took into the stash
/// (`request` null: blocking). `None`: not a stashed message.
///
/// # Safety
/// As `MPI_Mrecv` / `MPI_Imrecv`.
unsafe fn mrecv_stashed(
    buf: *mut c_void,
    count: i64,
    datatype: Dt,
    message: *mut mpi::MPI_Message,
    status: *mut Status,
    request: *mut Req,
) -> Option<c_int> {
    if pipeline::reserved() == 0 || message.is_null() {
        return None;
    }
    // SAFETY: the application's message handle.
    let e = pipeline::stash::take_message(unsafe { *message })?;
    // SAFETY: as above: the handle is consumed, as by the MPI.
    unsafe { *message = consts::message_null() };
    let comm = e.comm();
    // SAFETY: forwarded contract.
    Some(unsafe {
        if request.is_null() {
            pipeline::serve::blocking(e, buf, count, datatype, comm, status, true)
        } else {
            pipeline::serve::nonblocking(e, buf, count, datatype, comm, request)
        }
    })
}

/// `MPI_Mrecv`.
///
/// # Safety
/// As `MPI_Mrecv`.
pub unsafe fn mrecv(buf: *mut c_void, count: c_int, datatype: Dt, message: *mut mpi::MPI_Message, status: *mut Status) -> c_int {
    let t = TypeArg::new(datatype);
    let path = matched_path(message);
    // SAFETY: forwarded contract.
    if let Some(rc) = unsafe { mrecv_stashed(buf, count.into(), datatype, message, status, std::ptr::null_mut()) } {
        return rc;
    }
    match Layout::of(buf, count.into(), &t, path, &|| true).filter(|_| message_ok(message)) {
        // SAFETY: forwarded contract.
        Some(l) => unsafe { blocking(l, buf, status, None, None, |p, n, s| next::MPI_Mrecv(p, n, consts::packed(), message, s)) },
        // SAFETY: forwarded unchanged.
        None => unsafe {
            let p = plain_posting(buf, count.into(), &t);
            next::MPI_Mrecv(p.buf, p.int_count(), p.datatype, message, status)
        },
    }
}

/// `MPI_Imrecv`.
///
/// # Safety
/// As `MPI_Imrecv`.
pub unsafe fn imrecv(buf: *mut c_void, count: c_int, datatype: Dt, message: *mut mpi::MPI_Message, request: *mut Req) -> c_int {
    let t = TypeArg::new(datatype);
    let path = matched_path(message);
    // SAFETY: forwarded contract.
    if let Some(rc) = unsafe { mrecv_stashed(buf, count.into(), datatype, message, std::ptr::null_mut(), request) } {
        return rc;
    }
    match Layout::of(buf, count.into(), &t, path, &|| true).filter(|_| message_ok(message) && !request.is_null()) {
        // SAFETY: as in `irecv`.
        Some(l) => with_request(l, buf, request, false, None, None, consts::comm_world(), |p, n, t| unsafe {
            next::MPI_Imrecv(p, n, t, message, request)
        }),
        // SAFETY: forwarded unchanged.
        None => unsafe {
            let p = plain_posting(buf, count.into(), &t);
            next::MPI_Imrecv(p.buf, p.int_count(), p.datatype, message, request)
        },
    }
}

/// `MPI_Sendrecv`: either side (or both) may go through staging.
///
/// # Safety
/// As `MPI_Sendrecv`.
#[allow(clippy::too_many_arguments)]
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
    // SAFETY: forwarded contract; `forward` is the application's call unchanged.
    unsafe {
        sendrecv_any(
            sendbuf,
            sendcount.into(),
            sendtype,
            dest,
            sendtag,
            recvbuf,
            recvcount.into(),
            recvtype,
            source,
            recvtag,
            comm,
            status,
            || next::MPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status),
        )
    }
}

/// Sendrecv with counts of either width: sluice's path when a side is non-contiguous and both
/// counts fit the MPI's `int` arguments, else `forward`.
///
/// # Safety
/// As `MPI_Sendrecv`; `forward` is the application's call.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_any(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: Dt,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: Dt,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    status: *mut Status,
    forward: impl FnOnce() -> c_int,
) -> c_int {
    let tr = TypeArg::new(recvtype);
    let ts = TypeArg::new(sendtype);
    if pipeline::stash::any() {
        if let (Some(e), Ok(sc)) = (stashed(source, recvtag, comm), c_int::try_from(sendcount)) {
            // The receive side is a probed message: send, serve the receive, complete the send.
            let mut req = consts::request_null();
            // SAFETY: forwarded contract.
            let rc = unsafe { super::send::isend(sendbuf, sc, sendtype, dest, sendtag, comm, &mut req) };
            if rc != errclass::SUCCESS {
                return rc;
            }
            // SAFETY: as above.
            let rrc = unsafe { pipeline::serve::blocking(e, recvbuf, recvcount, recvtype, comm, status, false) };
            // SAFETY: the send's request.
            let wrc = unsafe { super::complete::wait(&mut req, consts::status_ignore()) };
            return if rrc != errclass::SUCCESS { rrc } else { wrc };
        }
    }
    let path = comm_hints::path(comm);
    let sl = Layout::of(sendbuf, sendcount, &ts, path, &|| super::shares_node(comm, dest)).filter(|_| !is_proc_null(dest));
    let rl = recv_layout(recvbuf, recvcount, &tr, source, comm, path);
    // A contiguous receive that may get a pipelined message.
    let rpipe = if rl.is_none() { direct_landing(recvbuf, recvcount, &tr, source, comm) } else { None };
    let (Ok(sendcount), Ok(recvcount)) = (c_int::try_from(sendcount), c_int::try_from(recvcount)) else {
        return forward();
    };
    // SAFETY: the application's send buffer is valid for its typemap.
    let mut sst = sl.as_ref().map(|l| unsafe { l.packed(sendbuf) });
    let (sp, sc, stype) = match (&sl, sst.as_mut()) {
        (Some(l), Some(st)) => (st.as_mut_ptr() as *const c_void, l.count_arg(), consts::packed()),
        _ => (sendbuf, sendcount, sendtype),
    };
    match (rl, rpipe) {
        // SAFETY: forwarded contract.
        (Some(l), _) => unsafe {
            let pipe = pipe_for(l.bytes(), source, comm);
            blocking(l, recvbuf, status, pipe, Some(comm), |rp, rn, s| {
                next::MPI_Sendrecv(sp, sc, stype, dest, sendtag, rp, rn, consts::packed(), source, recvtag, comm, s)
            })
        },
        // SAFETY: forwarded, with the packed send side.
        (None, Some(d)) => unsafe {
            direct_blocking(d, status, |p, s| {
                next::MPI_Sendrecv(sp, sc, stype, dest, sendtag, p.buf, p.int_count(), p.datatype, source, recvtag, comm, s)
            })
        },
        // SAFETY: forwarded, with the packed send side.
        (None, None) => unsafe {
            let p = plain_posting(recvbuf, recvcount.into(), &tr);
            next::MPI_Sendrecv(sp, sc, stype, dest, sendtag, p.buf, p.int_count(), p.datatype, source, recvtag, comm, status)
        },
    }
}

/// `MPI_Sendrecv_replace`: pack the outgoing elements, receive into staging, unpack in place.
///
/// # Safety
/// As `MPI_Sendrecv_replace`.
#[allow(clippy::too_many_arguments)]
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
    // SAFETY: forwarded contract; `forward` is the application's call unchanged.
    unsafe {
        sendrecv_replace_any(buf, count.into(), datatype, dest, sendtag, source, recvtag, comm, status, |p, s| {
            next::MPI_Sendrecv_replace(p.buf, p.int_count(), p.datatype, dest, sendtag, source, recvtag, comm, s)
        })
    }
}

/// Sendrecv_replace with a count of either width (see [`sendrecv_any`]).
///
/// # Safety
/// As `MPI_Sendrecv_replace`; `forward` is the application's call.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace_any(
    buf: *mut c_void,
    count: i64,
    datatype: Dt,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    status: *mut Status,
    forward: impl FnOnce(Posting, *mut Status) -> c_int,
) -> c_int {
    let t = TypeArg::new(datatype);
    if pipeline::stash::any() && !is_proc_null(source) {
        if let (Some(e), Ok(c)) = (stashed(source, recvtag, comm), c_int::try_from(count)) {
            // The receive side is a probed message: the outgoing elements are packed first (the
            // receive overwrites the buffer), sent, and the receive is served from the stash.
            // SAFETY: forwarded contract.
            return unsafe { replace_from_stash(e, buf, c, datatype, dest, sendtag, comm, status) };
        }
    }
    let layout = Layout::of(buf, count, &t, comm_hints::path(comm), &|| super::shares_node(comm, dest))
        .filter(|_| !(is_proc_null(dest) && is_proc_null(source)));
    if layout.is_none() {
        if let Some(d) = direct_landing(buf, count, &t, source, comm) {
            // The posting describes the same bytes in the same order, so the message sent from
            // it is the application's too.
            // SAFETY: forwarded contract.
            return unsafe { direct_blocking(d, status, forward) };
        }
    }
    let (Some(l), Ok(count)) = (layout, c_int::try_from(count)) else {
        return forward(Posting { buf, count, datatype }, status);
    };
    // SAFETY: the application's buffer is valid for its typemap.
    let mut sst = unsafe { l.packed(buf) };
    let sp = sst.as_mut_ptr() as *const c_void;
    let sc = if is_proc_null(dest) { 0 } else { l.count_arg() };
    if is_proc_null(source) {
        // Nothing arrives: the buffer keeps its contents, as with the MPI.
        // SAFETY: forwarded with the packed send side.
        let rc =
            unsafe { next::MPI_Sendrecv(sp, sc, consts::packed(), dest, sendtag, buf, count, datatype, source, recvtag, comm, status) };
        replace_status_error(rc, status);
        return rc;
    }
    let pipe = pipe_for(l.bytes(), source, comm);
    // SAFETY: forwarded contract; send and receive staging are distinct buffers.
    let rc = unsafe {
        blocking(l.clone(), buf, status, pipe, Some(comm), |rp, rn, s| {
            next::MPI_Sendrecv(sp, sc, consts::packed(), dest, sendtag, rp, rn, consts::packed(), source, recvtag, comm, s)
        })
    };
    replace_status_error(rc, status);
    rc
}

/// `MPI_Sendrecv_replace` whose receive side takes the stashed message `e`.
///
/// # Safety
/// As `MPI_Sendrecv_replace`.
#[allow(clippy::too_many_arguments)]
unsafe fn replace_from_stash(
    e: pipeline::stash::Stashed,
    buf: *mut c_void,
    count: c_int,
    datatype: Dt,
    dest: c_int,
    sendtag: c_int,
    comm: Comm,
    status: *mut Status,
) -> c_int {
    let mut size: c_int = 0;
    // SAFETY: writes one int; an invalid type or count is reported by the MPI.
    let rc = unsafe { mpi::PMPI_Pack_size(count, datatype, comm, &mut size) };
    if rc != errclass::SUCCESS {
        return rc;
    }
    let mut out = staging::take(size.max(1) as usize);
    let mut pos: c_int = 0;
    // SAFETY: packs the application's elements into sluice's buffer of `size` bytes.
    let rc = unsafe { mpi::PMPI_Pack(buf, count, datatype, out.as_mut_ptr().cast(), size, &mut pos, comm) };
    if rc != errclass::SUCCESS {
        return rc;
    }
    let mut req = consts::request_null();
    // SAFETY: sends sluice's packed copy; it lives until the send completes below.
    let rc = unsafe { super::send::isend(out.as_mut_ptr().cast(), pos, consts::packed(), dest, sendtag, comm, &mut req) };
    if rc != errclass::SUCCESS {
        return rc;
    }
    // SAFETY: forwarded contract.
    let rrc = unsafe { pipeline::serve::blocking(e, buf, count.into(), datatype, comm, status, false) };
    // SAFETY: the send's request.
    let wrc = unsafe { super::complete::wait(&mut req, consts::status_ignore()) };
    let rc = if rrc != errclass::SUCCESS { rrc } else { wrc };
    replace_status_error(rc, status);
    rc
}

/// MPICH's own `MPI_Sendrecv_replace` writes `MPI_ERROR` into the status (its `MPI_Sendrecv`,
/// which sluice's path calls, does not; measured by `tests/p2p_typepairs.rs`): the application
/// must see the same field.
fn replace_status_error(rc: c_int, status: *mut Status) {
    if cfg!(sluice_mpi = "mpich") && rc == errclass::SUCCESS && !status.is_null() && status != consts::status_ignore() {
        // SAFETY: the application's status.
        unsafe { (*status).MPI_ERROR = errclass::SUCCESS };
    }
}

/// Large-count variants (MPICH): the same paths; counts beyond `INT_MAX` packed bytes are
/// forwarded by [`Layout::of`].
#[cfg(sluice_large_count)]
pub mod large_count {
    use super::*;

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
        let t = TypeArg::new(datatype);
        if let Some(e) = stashed(source, tag, comm) {
            // SAFETY: forwarded contract.
            return unsafe { pipeline::serve::blocking(e, buf, count, datatype, comm, status, false) };
        }
        match recv_layout(buf, count, &t, source, comm, comm_hints::path(comm)) {
            // SAFETY: as in `recv`.
            Some(l) => unsafe {
                let pipe = pipe_for(l.bytes(), source, comm);
                blocking(l, buf, status, pipe, Some(comm), |p, n, s| next::MPI_Recv(p, n, consts::packed(), source, tag, comm, s))
            },
            None => match direct_landing(buf, count, &t, source, comm) {
                // SAFETY: forwarded contract; the posting describes the application's buffer.
                Some(d) => unsafe { direct_blocking(d, status, |p, s| next::MPI_Recv_c(p.buf, p.count, p.datatype, source, tag, comm, s)) },
                // SAFETY: forwarded unchanged.
                None => unsafe {
                    let p = plain_posting(buf, count, &t);
                    next::MPI_Recv_c(p.buf, p.count, p.datatype, source, tag, comm, status)
                },
            },
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
        nonblocking(
            buf,
            count,
            datatype,
            source,
            tag,
            comm,
            request,
            false,
            |p, n, t| {
                // SAFETY: as in `irecv`.
                unsafe { next::MPI_Irecv(p, n, t, source, tag, comm, request) }
            },
            |p| {
                // SAFETY: forwarded; the posting describes the application's buffer.
                unsafe { next::MPI_Irecv_c(p.buf, p.count, p.datatype, source, tag, comm, request) }
            },
        )
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
        nonblocking(
            buf,
            count,
            datatype,
            source,
            tag,
            comm,
            request,
            true,
            |p, n, t| {
                // SAFETY: as in `irecv`.
                unsafe { next::MPI_Recv_init(p, n, t, source, tag, comm, request) }
            },
            |p| {
                // SAFETY: forwarded; the posting describes the application's buffer.
                unsafe { next::MPI_Recv_init_c(p.buf, p.count, p.datatype, source, tag, comm, request) }
            },
        )
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
        let t = TypeArg::new(datatype);
        let path = super::matched_path(message);
        // SAFETY: forwarded contract.
        if let Some(rc) = unsafe { mrecv_stashed(buf, count, datatype, message, status, std::ptr::null_mut()) } {
            return rc;
        }
        match Layout::of(buf, count, &t, path, &|| true).filter(|_| message_ok(message)) {
            // SAFETY: as in `mrecv`.
            Some(l) => unsafe { blocking(l, buf, status, None, None, |p, n, s| next::MPI_Mrecv(p, n, consts::packed(), message, s)) },
            // SAFETY: forwarded unchanged.
            None => unsafe {
                let p = plain_posting(buf, count, &t);
                next::MPI_Mrecv_c(p.buf, p.count, p.datatype, message, status)
            },
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
        let t = TypeArg::new(datatype);
        let path = super::matched_path(message);
        // SAFETY: forwarded contract.
        if let Some(rc) = unsafe { mrecv_stashed(buf, count, datatype, message, std::ptr::null_mut(), request) } {
            return rc;
        }
        match Layout::of(buf, count, &t, path, &|| true).filter(|_| message_ok(message) && !request.is_null()) {
            // SAFETY: as in `irecv`.
            Some(l) => with_request(l, buf, request, false, None, None, consts::comm_world(), |p, n, t| unsafe {
                next::MPI_Imrecv(p, n, t, message, request)
            }),
            // SAFETY: forwarded unchanged.
            None => unsafe {
                let p = plain_posting(buf, count, &t);
                next::MPI_Imrecv_c(p.buf, p.count, p.datatype, message, request)
            },
        }
    }

    /// `MPI_Sendrecv_c`.
    ///
    /// # Safety
    /// As `MPI_Sendrecv_c`.
    #[allow(clippy::too_many_arguments)]
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
        // SAFETY: as in `sendrecv`.
        unsafe {
            sendrecv_any(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status, || {
                next::MPI_Sendrecv_c(
                    sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status,
                )
            })
        }
    }

    /// `MPI_Sendrecv_replace_c`.
    ///
    /// # Safety
    /// As `MPI_Sendrecv_replace_c`.
    #[allow(clippy::too_many_arguments)]
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
        // SAFETY: as in `sendrecv_replace`.
        unsafe {
            sendrecv_replace_any(buf, count, datatype, dest, sendtag, source, recvtag, comm, status, |p, s| {
                next::MPI_Sendrecv_replace_c(p.buf, p.count, p.datatype, dest, sendtag, source, recvtag, comm, s)
            })
        }
    }
}
