//! The receiving side of one pipelined transfer, from the moment its M0 arrived: chunk
//! receives on the private communicator, at most `SLUICE_PIPELINE_DEPTH` in flight. A
//! contiguous receive takes chunks straight into the application's buffer. A non-contiguous one
//! takes them into a ring of staging chunks and unpacks each as a byte range of the stream.
//! Chunks past the receive's capacity land in staging and only their fitting prefix is kept
//! (a truncated receive). A transfer whose header names a region of the sender's
//! shared-memory arena has no chunk messages: the stream is unpacked from that region as the
//! sender publishes it (`transfer::shm`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};

use super::urgency::Busy;
use super::{chunk_posting, depth, m0_data, private, Header};
use crate::ffi::{consts, errclass, mpi, next, request_from_key, request_key};
use crate::protocol::comm_hints::{CommHints, P2pPath};
use crate::protocol::p2p::ops::Op;
use crate::protocol::p2p::Layout;
use crate::transfer::gpu::{self, ipc};
use crate::transfer::shm::{self, PeerRegion};
use crate::transfer::staging::{self, Staging};

/// Where the stream goes.
pub enum Dest {
    /// Contiguous memory of the application: the stream lands in place.
    Bytes(*mut u8),
    /// A non-contiguous type: the receive's tracked operation (layout, user buffer, and the
    /// staging buffer M0 landed in).
    Engine(Op),
    /// A type the MPI received into directly (not contiguous, left to the MPI's engine): M0's
    /// data is already in place; chunks are unpacked by range.
    InPlace(Layout, *mut c_void),
}

impl Dest {
    /// The receive's layout, where sluice unpacks it (a contiguous receive's posting does not
    /// keep its type: MPICH takes any byte count into one, docs/protocol.md).
    pub fn layout(&self) -> Option<&Layout> {
        match self {
            Dest::Engine(op) => Some(&op.layout),
            Dest::InPlace(l, _) => Some(l),
            Dest::Bytes(_) => None,
        }
    }
}

/// What a receive into sluice's own memory (a device buffer's host copy) is told as a
/// pipelined message lands ([`watching`], [`watch_at`]).
pub trait Watch: Send {
    /// The stream's first `end` bytes are in place.
    fn landed(&mut self, end: usize);
    /// Offers the stream's first `len` bytes straight from the sender's exported device memory
    /// (the device route, `device`), instead of in the receive's memory: `None` declines (the
    /// bytes are then copied into that memory and [`Watch::landed`] is told), else the outcome
    /// of the copy, which is complete when this returns.
    fn take_from_peer(&mut self, _from: &ipc::PeerBytes, _len: usize) -> Option<Result<(), gpu::CudaError>> {
        None
    }
}

impl<F: FnMut(usize) + Send> Watch for F {
    fn landed(&mut self, end: usize) {
        self(end)
    }
}

/// A receive's watcher.
pub type Watcher = Box<dyn Watch>;

thread_local! {
    /// The watcher of the blocking receive this thread is in, with the address it receives at.
    static WATCH: RefCell<Option<(usize, Watcher)>> = const { RefCell::new(None) };
}

/// Runs `f`, a blocking receive into sluice's own contiguous memory at `base` (a device
/// buffer's host copy, `protocol::device`), with `w` told, as a pipelined message lands there,
/// how many of its first bytes are in place (M0's data at once, then chunk by chunk, never past
/// the receive's capacity): the next hop may take them while later chunks still arrive. `w` is
/// never called when the receive gets an ordinary message, and not after `f` returned.
pub fn watching<R>(base: *const u8, w: Watcher, f: impl FnOnce() -> R) -> R {
    /// Clears the watcher however `f` ends (a panic caught at the C ABI included): a stale one
    /// would be taken by a later receive into the same, pooled, host memory.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            WATCH.with(|c| c.borrow_mut().take());
        }
    }
    WATCH.with(|c| *c.borrow_mut() = Some((base as usize, w)));
    let _clear = Clear;
    f()
}

/// Watchers of nonblocking receives into sluice's own memory ([`watch_at`]), by address, and
/// how many there are (the one load a pipelined receive pays when there are none).
static WATCHED: std::sync::Mutex<Vec<(usize, Watcher)>> = std::sync::Mutex::new(Vec::new());
static WATCHED_N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// As [`watching`], for a nonblocking receive into sluice's own contiguous memory at `base`:
/// `w` serves the pipelined message that lands there, from whichever thread completes the
/// receive, until [`unwatch`] (which the receive's completion calls, whether or not `w` served).
pub fn watch_at(base: *const u8, w: Watcher) {
    let mut g = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
    g.push((base as usize, w));
    WATCHED_N.store(g.len(), std::sync::atomic::Ordering::Release);
}

/// Forgets the watcher registered at `base` by [`watch_at`], if it was not taken.
pub fn unwatch(base: *const u8) {
    take_watched(base as usize);
}

fn take_watched(base: usize) -> Option<Watcher> {
    if WATCHED_N.load(std::sync::atomic::Ordering::Acquire) == 0 {
        return None;
    }
    let mut g = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
    let i = g.iter().position(|(b, _)| *b == base)?;
    let (_, w) = g.swap_remove(i);
    WATCHED_N.store(g.len(), std::sync::atomic::Ordering::Release);
    Some(w)
}

/// The watcher of a transfer landing at `base`: this thread's blocking receive's, or a
/// nonblocking receive's.
fn watcher_for(base: *mut u8) -> Option<Watcher> {
    let mine = WATCH.with(|c| {
        let mut g = c.borrow_mut();
        if g.as_ref().is_some_and(|(b, _)| *b == base as usize) {
            g.take().map(|(_, w)| w)
        } else {
            None
        }
    });
    mine.or_else(|| take_watched(base as usize))
}

/// Tells `watch`, if any, that `end` bytes are in place, when that is more than `told`.
fn tell(watch: &mut Option<Watcher>, told: &mut usize, end: usize) {
    if let Some(w) = watch.as_mut() {
        if end > *told {
            *told = end;
            w.landed(end);
        }
    }
}

/// `SLUICE_LOG=plan`: how a pipelined message lands, once per (landing, type, size class, route).
fn note_plan(dest: &Dest, total: usize, capacity: usize, sender: c_int, route: &'static str) {
    if !crate::logging::plans() {
        return; // the key is not even computed: these run on every staged call
    }
    let (landing, id) = match dest {
        Dest::Bytes(_) => ("in place (contiguous)", 0),
        Dest::Engine(op) => ("unpacked by sluice's engine", op.layout.compiled().id()),
        Dest::InPlace(l, _) => ("M0 through the MPI's engine, the rest unpacked by range", l.compiled().id()),
    };
    let class = crate::logging::size_class(total);
    crate::logging::plan_once(crate::logging::plan_key(("receive", landing, id, class, route)), || {
        let ty = if id == 0 { String::new() } else { format!(" (datatype #{id})") };
        let cut = if total > capacity { format!(", truncated to {capacity} bytes") } else { String::new() };
        format!("receive of a {total}-byte pipelined message{ty} from world rank {sender}: {landing}, {route}{cut}")
    });
}

impl Dest {
    /// The header M0 carries, read where M0 landed.
    ///
    /// # Safety
    /// M0 (S\* bytes) was received into this destination.
    pub unsafe fn header(&self) -> Option<Header> {
        let d = m0_data();
        let mut h = [0u8; super::HEADER];
        match self {
            // SAFETY: M0 landed at `base`.
            Dest::Bytes(base) => h.copy_from_slice(unsafe { std::slice::from_raw_parts(base.add(d), super::HEADER) }),
            Dest::Engine(op) => h.copy_from_slice(&op.staging.bytes()[d..d + super::HEADER]),
            // SAFETY: the MPI unpacked M0's bytes into the typemap at `user`.
            Dest::InPlace(l, user) => unsafe { l.pack_range(*user, d, d + super::HEADER, &mut h) },
        }
        Header::decode(&h)
    }
}

/// One chunk receive in flight.
struct Slot {
    req: usize,
    off: usize,
    len: usize,
    /// Staging the chunk lands in (`None`: straight into the application's buffer).
    buf: Option<Staging>,
}

/// How a finished transfer ends, for the status and return code.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Packed bytes the sender sent.
    pub total: usize,
    /// Bytes the receive could hold.
    pub capacity: usize,
    /// The receive's communicator (its error handler reports truncation).
    comm: usize,
    /// The error code of the first chunk receive that failed (`MPI_SUCCESS`: none did).
    error: c_int,
    /// Source and tag to report, when the MPI's status of the request does not carry them
    /// (a receive served from the probe stash completes a placeholder request).
    origin: Option<(c_int, c_int)>,
    /// The message ended inside a predefined element of the receive type (MPICH,
    /// `Layout::unpackable`): the bytes of whole elements, reported as MPICH's engine does
    /// (`MPI_ERR_TRUNCATE`, `p2p::partial_element`). The partial element's bytes are in the
    /// buffer already (chunks land as they arrive), inside the receive's typemap.
    whole: Option<usize>,
}

// SAFETY: `Dest::Bytes` and `Op` hold addresses of the application's buffer, which the
// application keeps valid until the receive completes, from whichever thread completes it.
unsafe impl Send for Incoming {}

/// One pipelined receive in progress.
pub struct Incoming {
    peer: c_int,
    tag: c_int,
    total: usize,
    capacity: usize,
    chunk: usize,
    next_off: usize,
    slots: VecDeque<Slot>,
    spare: Vec<Staging>,
    dest: Dest,
    comm: usize,
    origin: Option<(c_int, c_int)>,
    /// The first failed chunk receive's error code (see [`Outcome`]).
    error: c_int,
    /// The stream ends inside a predefined element of the receive type (see [`Outcome`]): the
    /// bytes of whole elements, the only ones written, as MPICH's engine writes.
    whole: Option<usize>,
    /// The sender's shared-memory region holding the stream after M0 (until it is read).
    shm: Option<PeerRegion>,
    /// Told how many stream bytes are in place ([`watching`]), and the last value told.
    watch: Option<Watcher>,
    told: usize,
    /// Counted among the receives under way at its communicator's priority, while any
    /// communicator has a hint (`urgency`).
    busy: Option<Busy>,
    /// Its end is told to the sender's path contest (`contest::tells_on`).
    tells: bool,
}

impl Incoming {
    /// Starts receiving the chunks of the transfer whose M0 (`header`) just arrived. M0's data
    /// is already in place for `Dest::Bytes`; for `Dest::Engine` it is in the operation's
    /// staging buffer and is unpacked here.
    ///
    /// # Safety
    /// The destination buffers are the live receive's; `capacity` is its size in bytes.
    pub unsafe fn begin(header: Header, capacity: usize, dest: Dest, comm: mpi::MPI_Comm, hints: CommHints) -> Incoming {
        let d = m0_data();
        crate::stats::count(crate::stats::Family::Pipeline, header.total as usize);
        if crate::stats::timing_enabled() && !crate::transfer::node::is_local(header.sender) {
            crate::stats::count(crate::stats::Family::Remote, header.total as usize);
        }
        if header.offer {
            super::device::answer_offer(header.sender);
        }
        // A truncated receive gets the prefix that fits (as with Open MPI; MPICH would leave
        // the buffer untouched, but M0 may already have landed in it: docs/protocol.md). On
        // the device route M0 carries no stream data.
        let total = header.total as usize;
        let whole = dest.layout().map(|l| l.unpackable(total)).filter(|&m| total <= capacity && m != total);
        if let (Dest::Engine(op), false) = (&dest, header.device) {
            let n = d.min(whole.unwrap_or(capacity));
            // SAFETY: the staging buffer holds M0; the user buffer is the receive's.
            unsafe { op.layout.unpack_range(&op.staging.bytes()[..n], 0, op.user as *mut c_void) };
        }
        let rest = (header.total as usize).saturating_sub(d);
        let described = match (header.device, header.shm) {
            (true, Some((ctrl, off))) => shm::attach(header.sender, ctrl, off, super::device::DESCRIPTOR),
            _ => None,
        };
        let shm = header.shm.filter(|_| !header.device).and_then(|(ctrl, off)| {
            let r = shm::attach(header.sender, ctrl, off, rest);
            if r.is_none() {
                // The sender only names a region to a rank that mapped its arena at MPI_Init.
                log::error!("a pipelined message names a shared-memory region of rank {} that this process cannot read", header.sender);
            }
            r
        });
        if shm.is_some() {
            crate::stats::count(crate::stats::Family::Shm, header.total as usize);
        }
        let route = if header.device {
            "copied out of the sender's exported device memory (CUDA IPC)"
        } else if shm.is_some() {
            "through the shared-memory arena"
        } else {
            "in chunks through the MPI"
        };
        note_plan(&dest, header.total as usize, capacity, header.sender, route);
        let no_region = header.shm.is_some() && shm.is_none() && !header.device;
        let watch = match dest {
            Dest::Bytes(base) => watcher_for(base),
            _ => None,
        };
        let mut t = Incoming {
            peer: header.sender,
            tag: header.tag,
            total: header.total as usize,
            capacity,
            chunk: header.chunk as usize,
            next_off: d,
            slots: VecDeque::new(),
            spare: Vec::new(),
            dest,
            comm: comm_key(comm),
            origin: None,
            error: errclass::SUCCESS,
            whole,
            shm,
            watch,
            told: 0,
            busy: crate::protocol::comm_hints::any().then(|| Busy::enter(hints.priority)),
            // (`hints`, not `comm`: the application may have freed the communicator since it
            // posted the receive.)
            tells: crate::protocol::p2p::contest::learning_here() && hints.path == P2pPath::Auto,
        };
        if header.device {
            // SAFETY: forwarded contract.
            unsafe { t.take_from_device(described) };
        } else {
            t.in_place(d);
        }
        if header.device {
            // Everything was taken above.
        } else if no_region {
            t.next_off = t.total; // nothing more can be read: the stream ends after M0
        } else if t.shm.is_none() {
            t.post();
        }
        t
    }

    /// Reports `source` and `tag` in the status (see [`Outcome`]).
    pub fn with_origin(mut self, source: c_int, tag: c_int) -> Incoming {
        self.origin = Some((source, tag));
        self
    }

    /// Tells the priorities that this transfer made progress.
    fn moved(&self) {
        if let Some(b) = &self.busy {
            b.moved();
        }
    }

    /// Posts chunk receives up to the depth.
    fn post(&mut self) {
        let pc = private();
        while self.slots.len() < depth() && self.next_off < self.total {
            let (off, len) = (self.next_off, self.chunk.min(self.total - self.next_off));
            let mut req = consts::request_null();
            let buf = match self.dest {
                Dest::Bytes(base) if off + len <= self.capacity => {
                    // SAFETY: the chunk lies inside the application's contiguous buffer.
                    unsafe {
                        next::MPI_Irecv(
                            base.add(off).cast(),
                            chunk_posting(len) as c_int,
                            consts::byte(),
                            self.peer,
                            self.tag,
                            pc,
                            &mut req,
                        )
                    };
                    None
                }
                _ => {
                    // Chunks arrive with their exact size, so no overrun guard is needed: pooled
                    // heap staging, whose pages stay mapped from one transfer to the next.
                    let mut b = self.spare.pop().unwrap_or_else(|| staging::take(self.chunk));
                    // SAFETY: sluice's staging of at least one chunk.
                    unsafe {
                        next::MPI_Irecv(
                            b.as_mut_ptr().cast(),
                            chunk_posting(len) as c_int,
                            consts::byte(),
                            self.peer,
                            self.tag,
                            pc,
                            &mut req,
                        )
                    };
                    Some(b)
                }
            };
            self.slots.push_back(Slot { req: request_key(req), off, len, buf });
            self.next_off += len;
        }
    }

    /// Tests the chunks in flight (`block`: waits for each in turn instead); returns whether
    /// the whole stream has arrived.
    ///
    /// # Safety
    /// The destination buffers are still the live receive's.
    pub unsafe fn advance(&mut self, block: bool) -> bool {
        if !block && self.busy.as_ref().is_some_and(Busy::outranked) {
            return false; // a transfer of higher priority goes first (`urgency`)
        }
        if self.shm.is_some() {
            // SAFETY: forwarded contract.
            return unsafe { self.advance_shm(block) };
        }
        while let Some(front) = self.slots.front() {
            let mut req = request_from_key(front.req);
            let mut flag = 1;
            // SAFETY: sluice's own chunk request.
            let rc = unsafe {
                if block {
                    next::MPI_Wait(&mut req, consts::status_ignore())
                } else {
                    next::MPI_Test(&mut req, &mut flag, consts::status_ignore())
                }
            };
            if rc == errclass::SUCCESS && flag == 0 {
                break;
            }
            let slot = self.slots.pop_front().expect("front slot");
            if rc == errclass::SUCCESS {
                let end = slot.off + slot.len;
                // SAFETY: forwarded contract.
                unsafe { self.land(slot) };
                self.in_place(end);
                self.moved();
            } else {
                // The chunk did not arrive: the receive completes with this error (the rest of
                // the stream is still taken, so no chunk is left for a later transfer).
                log::error!(
                    "a chunk of a pipelined message from rank {} failed: {}",
                    self.peer,
                    crate::errors::class_name(crate::protocol::p2p::error_class(rc))
                );
                if self.error == errclass::SUCCESS {
                    self.error = rc;
                }
                self.spare.extend(slot.buf);
            }
            self.post();
        }
        self.slots.is_empty() && self.next_off >= self.total
    }

    /// [`Incoming::advance`] of a transfer in shared memory: unpacks what the sender has
    /// published since the last call (`block`: until the whole stream is there), then tells
    /// the sender the region is read.
    ///
    /// # Safety
    /// As [`Incoming::advance`].
    unsafe fn advance_shm(&mut self, block: bool) -> bool {
        let d = m0_data();
        let mut idle = 0u32;
        while let Some(r) = &self.shm {
            let avail = d + r.packed();
            if avail > self.next_off {
                // SAFETY: forwarded contract; the bytes are published and stay until `finish`.
                unsafe { self.put(r.bytes(self.next_off - d, avail - d), self.next_off) };
                self.next_off = avail;
                tell(&mut self.watch, &mut self.told, avail.min(self.capacity));
                self.moved();
                idle = 0;
            }
            if self.next_off >= self.total {
                r.finish();
                self.shm = None;
                break;
            }
            if !block {
                return false;
            }
            // The sender packs the whole stream inside its send call: wait for it, and give the
            // core away when ranks outnumber cores.
            idle += 1;
            if idle < 256 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    /// The device route: copies the stream (the part within capacity) out of the sender's
    /// exported device memory that the region `r` describes, then marks the region read (the
    /// sender's slab goes back). A failed copy, or a region that cannot be read, fails the
    /// receive; the region is marked read in any case, so the sender never waits for it.
    ///
    /// # Safety
    /// As [`Incoming::advance`].
    unsafe fn take_from_device(&mut self, r: Option<PeerRegion>) {
        let n = self.total.min(self.capacity);
        let result = match r.as_ref().and_then(super::device::Descriptor::read) {
            // SAFETY: forwarded contract.
            Some(d) if d.len == self.total as u64 => unsafe { self.copy_from_device(&d.bytes_of(self.peer), n) },
            Some(_) => Err(format!("a device-to-device message from rank {}: the sender's device copy failed", self.peer)),
            None => Err(format!("a pipelined message of rank {} names device memory this process cannot read", self.peer)),
        };
        if let Some(r) = r {
            r.finish();
        }
        if let Err(e) = result {
            log::error!("{e}");
            self.error = errclass::ERR_OTHER;
        }
        self.next_off = self.total;
    }

    /// Copies the stream's first `n` bytes from `from` to the destination.
    ///
    /// # Safety
    /// As [`Incoming::advance`].
    unsafe fn copy_from_device(&mut self, from: &ipc::PeerBytes, n: usize) -> Result<(), String> {
        let what = |e: gpu::CudaError| format!("a device-to-device message from rank {}: {e}", self.peer);
        if n == 0 {
            return Ok(());
        }
        if let Some(r) = self.watch.as_mut().and_then(|w| w.take_from_peer(from, n)) {
            self.told = n; // on the device already: nothing is left for the watcher
            return r.map_err(what);
        }
        let ordinal =
            gpu::seen_ordinal().ok_or_else(|| format!("a device-to-device message from rank {} in a process without CUDA", self.peer))?;
        if let Dest::Bytes(base) = self.dest {
            // SAFETY: the first `n` bytes lie inside the application's (or sluice's) buffer.
            unsafe { ipc::peer_to_host(base, from, n, ordinal) }.map_err(what)?;
            self.in_place(n);
            return Ok(());
        }
        // A non-contiguous receive: through staging, a piece at a time.
        let piece = self.chunk.clamp(1 << 20, 16 << 20).min(n);
        let mut st = staging::take(piece);
        let mut off = 0;
        while off < n {
            let len = piece.min(n - off);
            let at = ipc::PeerBytes { offset: from.offset + off, ..*from };
            // SAFETY: staging of `piece` bytes; the slab holds the whole stream.
            unsafe { ipc::peer_to_host(st.as_mut_ptr(), &at, len, ordinal) }.map_err(what)?;
            // SAFETY: forwarded contract.
            unsafe { self.put(&st.bytes()[..len], off) };
            off += len;
        }
        Ok(())
    }

    /// Tells the watcher, if any, that the stream's first `end` bytes are in place (chunks
    /// land in order; the part past the capacity is not kept).
    fn in_place(&mut self, end: usize) {
        tell(&mut self.watch, &mut self.told, end.min(self.capacity));
    }

    /// Moves a chunk that arrived in staging to its destination (the part within capacity).
    ///
    /// # Safety
    /// As [`Incoming::advance`].
    unsafe fn land(&mut self, slot: Slot) {
        let Some(buf) = slot.buf else { return };
        // SAFETY: forwarded contract.
        unsafe { self.put(&buf.bytes()[..slot.len], slot.off) };
        self.spare.push(buf);
    }

    /// Writes stream bytes `data`, starting at stream offset `off`, to the destination (the
    /// part within the receive's capacity).
    ///
    /// # Safety
    /// As [`Incoming::advance`].
    unsafe fn put(&self, data: &[u8], off: usize) {
        let keep = data.len().min(self.whole.unwrap_or(self.capacity).saturating_sub(off));
        if keep == 0 {
            return;
        }
        let data = &data[..keep];
        match &self.dest {
            // SAFETY: `[off, off + keep)` lies inside the application's buffer.
            Dest::Bytes(base) => unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), base.add(off), keep) },
            // SAFETY: the range lies inside the stream of the receive's elements.
            Dest::Engine(op) => unsafe { op.layout.unpack_range(data, off, op.user as *mut c_void) },
            // SAFETY: as above.
            Dest::InPlace(l, user) => unsafe { l.unpack_range(data, off, *user) },
        }
    }

    /// The outcome, once [`Incoming::advance`] returned true; gives back the receive's
    /// operation (its staging and, for a persistent receive, its entry).
    pub fn finish(self) -> (Outcome, Option<Op>) {
        let o = Outcome {
            total: self.total,
            capacity: self.capacity,
            comm: self.comm,
            error: self.error,
            origin: self.origin,
            whole: self.whole,
        };
        if self.tells && !o.failed() && !matches!(self.dest, Dest::Bytes(_)) {
            // The last chunk is in place: the sender's contest learns it (non-contiguous
            // receives only; a contiguous receive's sender has no contest), and which receive
            // the rules had posted (M0 through the MPI's typed receive, or sluice's).
            use crate::protocol::p2p::contest::{received_from, Served};
            let served = if matches!(self.dest, Dest::InPlace(..)) { Served::Mpi } else { Served::Sluice };
            received_from(self.peer, self.total, served);
        }
        match self.dest {
            Dest::Engine(op) => (o, Some(op)),
            Dest::Bytes(_) | Dest::InPlace(..) => (o, None),
        }
    }
}

impl Outcome {
    /// The outcome of a message of `total` bytes into a receive of `capacity` on `comm`,
    /// reporting `origin` as its source and tag.
    pub fn new(total: usize, capacity: usize, comm: mpi::MPI_Comm, origin: Option<(c_int, c_int)>) -> Outcome {
        Outcome { total, capacity, comm: comm_key(comm), error: errclass::SUCCESS, origin, whole: None }
    }

    /// The outcome of an ordinary message of `n` bytes that the MPI received into `landing`
    /// (`capacity` bytes, on `comm`), when it must fail: the receive was posted with the byte
    /// twin of a non-contiguous type (MPICH, `byte_twin`), which takes any byte count, and the
    /// message ends inside a predefined element, where MPICH's engine fails the receive with the
    /// application's type. The MPI wrote the partial element's bytes (inside the typemap).
    pub fn partial(landing: &super::track::Landing, n: usize, capacity: usize, comm: mpi::MPI_Comm) -> Option<Outcome> {
        let super::track::Landing::InPlace(l, _) = landing else { return None };
        let whole = l.unpackable(n);
        (n <= capacity && whole != n).then(|| Outcome::new(n, capacity, comm, None).ending_at(whole))
    }

    /// The same outcome, its error raised through the error handler MPICH uses for the
    /// completion of a nonblocking receive (`persistent`: made by `MPI_Recv_init`): the
    /// communicator's for a persistent receive, `MPI_COMM_WORLD`'s for any other (measured:
    /// `tests/c/p2p_conf_partial.c` records both). Open MPI uses the communicator's.
    pub fn for_request(self, persistent: bool) -> Outcome {
        if cfg!(sluice_mpi = "mpich") && !persistent {
            Outcome { comm: comm_key(consts::comm_world()), ..self }
        } else {
            self
        }
    }

    /// The same outcome for a message whose whole predefined elements of the receive type end
    /// at byte `whole` (`Layout::unpackable`): failed as MPICH fails it when that is not its end.
    pub fn ending_at(self, whole: usize) -> Outcome {
        let partial = whole != self.total && self.total <= self.capacity;
        Outcome { whole: partial.then_some(whole), ..self }
    }

    /// Whether the message was longer than the receive.
    pub fn truncated(&self) -> bool {
        self.total > self.capacity
    }

    /// Whether the receive completes with an error (a failed chunk, truncation, or a partial
    /// element).
    pub fn failed(&self) -> bool {
        self.error != errclass::SUCCESS || self.truncated() || self.whole.is_some()
    }

    /// The receive's own error code: a failed chunk's, else `MPI_ERR_TRUNCATE` when truncated
    /// or ended inside an element, else success.
    pub fn error_code(&self) -> c_int {
        if self.error != errclass::SUCCESS {
            self.error
        } else if self.truncated() || self.whole.is_some() {
            errclass::ERR_TRUNCATE
        } else {
            errclass::SUCCESS
        }
    }

    /// The byte count the MPI itself reports for this receive: on truncation Open MPI reports
    /// the message's size and MPICH 0 (measured).
    pub fn reported_bytes(&self) -> usize {
        if let Some(whole) = self.whole {
            whole
        } else if !self.truncated() || cfg!(sluice_mpi = "openmpi") {
            self.total
        } else {
            0
        }
    }

    /// Writes [`Outcome::reported_bytes`] (and the origin, if any) into `st`.
    ///
    /// # Safety
    /// `st` is a status of the completed receive (or null / ignore, then nothing is written).
    pub unsafe fn patch(&self, st: *mut mpi::MPI_Status) {
        if st.is_null() || st == consts::status_ignore() {
            return;
        }
        // SAFETY: a valid status.
        unsafe {
            mpi::PMPI_Status_set_elements_x(st, consts::byte(), self.reported_bytes() as mpi::MPI_Count);
            mpi::PMPI_Status_set_cancelled(st, 0);
            if let Some((source, tag)) = self.origin {
                (*st).MPI_SOURCE = source;
                (*st).MPI_TAG = tag;
            }
        }
    }

    /// The return code of the completion: [`Outcome::error_code`], through the communicator's
    /// error handler when it is an error.
    pub fn code(&self) -> c_int {
        let code = self.error_code();
        if code != errclass::SUCCESS {
            // SAFETY: the receive's communicator, valid while the receive was.
            unsafe { mpi::PMPI_Comm_call_errhandler(comm_from_key(self.comm), code) };
        }
        code
    }

    /// As [`Outcome::code`] for a multiple completion: `MPI_ERR_IN_STATUS`, raised as the MPI
    /// raises it (measured, `tests/c/p2p_conf_partial.c`): MPICH calls the handler with
    /// `MPI_ERR_IN_STATUS`, Open MPI with the failed request's own code.
    pub fn code_in_status(&self) -> c_int {
        let raised = if cfg!(sluice_mpi = "openmpi") { self.error_code() } else { errclass::ERR_IN_STATUS };
        // SAFETY: as in `code`.
        unsafe { mpi::PMPI_Comm_call_errhandler(comm_from_key(self.comm), raised) };
        errclass::ERR_IN_STATUS
    }
}

fn comm_key(c: mpi::MPI_Comm) -> usize {
    super::comm_key(c)
}

fn comm_from_key(k: usize) -> mpi::MPI_Comm {
    super::comm_from_key(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_watcher_serves_only_its_address_once_and_hears_only_growth() {
        let mut buf = [0u8; 8];
        let mut other = [0u8; 8];
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        watching(buf.as_ptr(), Box::new(move |n| h.lock().unwrap().push(n)), || {
            assert!(watcher_for(other.as_mut_ptr()).is_none(), "another address has no watcher");
            let mut watch = watcher_for(buf.as_mut_ptr());
            assert!(watch.is_some(), "the receive's address has its watcher");
            assert!(watcher_for(buf.as_mut_ptr()).is_none(), "a watcher serves one transfer");
            let mut told = 0;
            for end in [10, 10, 5, 20] {
                tell(&mut watch, &mut told, end);
            }
        });
        assert_eq!(*heard.lock().unwrap(), vec![10, 20]);
    }

    #[test]
    fn a_watcher_is_gone_after_a_receive_that_panicked() {
        let mut buf = [0u8; 8];
        let base = buf.as_ptr();
        let r = std::panic::catch_unwind(|| watching(base, Box::new(|_| ()), || panic!("inside the receive")));
        assert!(r.is_err());
        assert!(watcher_for(buf.as_mut_ptr()).is_none());
    }

    #[test]
    fn a_nonblocking_watcher_serves_its_address_once_or_is_forgotten() {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        watch_at(a.as_ptr(), Box::new(|_| ()));
        watch_at(b.as_ptr(), Box::new(|_| ()));
        assert!(watcher_for(a.as_mut_ptr()).is_some());
        assert!(watcher_for(a.as_mut_ptr()).is_none(), "a watcher serves one transfer");
        unwatch(b.as_ptr());
        assert!(watcher_for(b.as_mut_ptr()).is_none(), "an unwatched address has none");
        unwatch(a.as_ptr()); // taken already: nothing to forget
    }

    #[test]
    fn a_watcher_not_taken_is_gone_after_the_receive() {
        let mut buf = [0u8; 8];
        watching(buf.as_ptr(), Box::new(|_| panic!("never told")), || ());
        assert!(watcher_for(buf.as_mut_ptr()).is_none());
    }
}
