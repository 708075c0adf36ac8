//! The probe stash. A probe must report the size of the application's message, but a
//! pipelined message's M0 only says "S\* bytes": its header has the real size. So a probe that
//! sees an S\*-byte message takes it (`MPI_Improbe` + `MPI_Mrecv`) into this stash, reads the
//! header and reports the total. Receives and probes look here first (one atomic load when the
//! stash is empty); entries keep their arrival order, and an entry from source s with tag t is
//! older than any message from s with tag t still queued in the MPI, so serving it first keeps
//! MPI's non-overtaking order.
//!
//! The application's own `MPI_Mprobe`/`MPI_Improbe` of an M0 take it the same way, keyed by the
//! message handle the application got; its `MPI_Mrecv`/`MPI_Imrecv` are served from here.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{comm_key, reserved, Header, HEADER};
use crate::ffi::{consts, errclass, mpi, ANY_SOURCE, ANY_TAG};
use crate::protocol::p2p::blank_status;
use crate::transfer::staging::{self, Staging};

type Comm = mpi::MPI_Comm;
type Status = mpi::MPI_Status;

/// A message taken out of the MPI by a probe.
pub struct Stashed {
    comm: usize,
    /// Source (rank in the communicator) and tag.
    pub source: c_int,
    pub tag: c_int,
    /// The message's bytes: M0 (S\* bytes), or an ordinary message of that size whose header
    /// did not check out.
    pub m0: Staging,
    /// M0's header (`None`: an ordinary message).
    pub header: Option<Header>,
}

impl Stashed {
    /// The communicator the message arrived on.
    pub fn comm(&self) -> Comm {
        super::comm_from_key(self.comm)
    }

    /// Bytes the application's message has.
    pub fn total(&self) -> usize {
        self.header.map_or(reserved(), |h| h.total as usize)
    }

    /// Fills `status` as the MPI would for this message (source, tag, byte count). `MPI_ERROR`
    /// is left as it is: the standard leaves it unchanged for single-completion calls, and so do
    /// both MPIs' matched probes and receives (MPICH's `MPI_Probe`/`MPI_Iprobe` alone write
    /// it; see [`probe`]).
    ///
    /// # Safety
    /// `status` is a status or ignore/null.
    pub unsafe fn report(&self, status: *mut Status) {
        if status.is_null() || status == consts::status_ignore() {
            return;
        }
        // SAFETY: a valid status.
        unsafe {
            (*status).MPI_SOURCE = self.source;
            (*status).MPI_TAG = self.tag;
            mpi::PMPI_Status_set_elements_x(status, consts::byte(), self.total() as mpi::MPI_Count);
            mpi::PMPI_Status_set_cancelled(status, 0);
        }
    }
}

// SAFETY: a stashed message is sluice's own memory.
unsafe impl Send for Stashed {}

static BY_MATCH: Mutex<VecDeque<Stashed>> = Mutex::new(VecDeque::new());
static BY_MATCH_N: AtomicUsize = AtomicUsize::new(0);
static BY_MESSAGE: Mutex<Option<FxHashMap<usize, Stashed>>> = Mutex::new(None);
static BY_MESSAGE_N: AtomicUsize = AtomicUsize::new(0);

/// Whether any probed message waits for a receive (the receives' fast test).
#[inline]
pub fn any() -> bool {
    BY_MATCH_N.load(Ordering::Acquire) != 0
}

fn matches(e: &Stashed, source: c_int, tag: c_int, comm: Comm) -> bool {
    e.comm == comm_key(comm) && (source == ANY_SOURCE || source == e.source) && (tag == ANY_TAG || tag == e.tag)
}

/// Takes the oldest stashed message a receive of (source, tag, comm) matches.
pub fn take(source: c_int, tag: c_int, comm: Comm) -> Option<Stashed> {
    if !any() {
        return None;
    }
    let mut g = BY_MATCH.lock().unwrap_or_else(|e| e.into_inner());
    let i = g.iter().position(|e| matches(e, source, tag, comm))?;
    BY_MATCH_N.fetch_sub(1, Ordering::AcqRel);
    g.remove(i)
}

/// Reports the oldest stashed message a probe of (source, tag, comm) matches.
///
/// # Safety
/// `status` is a status or ignore/null.
unsafe fn peek(source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> bool {
    if !any() {
        return false;
    }
    let g = BY_MATCH.lock().unwrap_or_else(|e| e.into_inner());
    match g.iter().find(|e| matches(e, source, tag, comm)) {
        Some(e) => {
            // SAFETY: forwarded contract.
            unsafe { e.report(status) };
            true
        }
        None => false,
    }
}

/// Bytes of the message a probe found (status `st`). Unlike `p2p::received_bytes` this ignores
/// the cancelled bit: a probe cannot be cancelled, and MPICH's probes leave that bit of the
/// caller's status as it was (measured: an uninitialized status read as "cancelled", so a
/// probed M0 went unrecognized and the probe reported S\* bytes instead of the message's).
///
/// # Safety
/// `st` is a probe's status.
unsafe fn probed_bytes(st: *const Status) -> usize {
    let mut n: c_int = 0;
    // SAFETY: reads the status; writes one int.
    let rc = unsafe { mpi::PMPI_Get_count(st, consts::byte(), &mut n) };
    if rc != errclass::SUCCESS || n == crate::ffi::UNDEFINED || n < 0 {
        0
    } else {
        n as usize
    }
}

/// Receives the matched message `msg` (described by `st`) into a stash entry.
///
/// # Safety
/// `msg` is a matched message of `comm` the MPI just returned, with status `st`.
unsafe fn receive(msg: &mut mpi::MPI_Message, st: &Status, comm: Comm) -> Stashed {
    // SAFETY: the status of the matched message.
    let n = unsafe { probed_bytes(st) };
    let mut m0 = staging::take_for_receive(n.max(1));
    let mut st2 = blank_status();
    // SAFETY: receives exactly the matched message into a buffer of its size.
    unsafe { mpi::PMPI_Mrecv(m0.as_mut_ptr().cast(), n as c_int, consts::packed(), msg, &mut st2) };
    let d = reserved().saturating_sub(HEADER);
    let header = (n == reserved()).then(|| Header::decode(&m0.bytes()[d..d + HEADER])).flatten();
    Stashed { comm: comm_key(comm), source: st.MPI_SOURCE, tag: st.MPI_TAG, m0, header }
}

/// Whether a probed message (status `st` on `comm`) may be an M0 and must be taken.
///
/// # Safety
/// `st` is the probe's status.
unsafe fn may_be_m0(st: *const Status, comm: Comm) -> bool {
    // SAFETY: forwarded contract.
    reserved() != 0 && unsafe { probed_bytes(st) } == reserved() && !super::is_inter(comm)
}

/// `MPI_Probe` (`flag` null) or `MPI_Iprobe`.
///
/// # Safety
/// As the MPI call.
pub unsafe fn probe(source: c_int, tag: c_int, comm: Comm, flag: *mut c_int, status: *mut Status) -> c_int {
    loop {
        // SAFETY: forwarded contract.
        if unsafe { peek(source, tag, comm, status) } {
            if cfg!(sluice_mpi = "mpich") && !status.is_null() && status != consts::status_ignore() {
                // MPICH's MPI_Probe and MPI_Iprobe set MPI_ERROR (measured), Open MPI's do not.
                // SAFETY: the application's status.
                unsafe { (*status).MPI_ERROR = errclass::SUCCESS };
            }
            if !flag.is_null() {
                // SAFETY: the application's flag.
                unsafe { *flag = 1 };
            }
            return errclass::SUCCESS;
        }
        let mut local = blank_status();
        let stp = crate::protocol::p2p::status_or(status, &mut local);
        // SAFETY: forwarded to the MPI.
        let rc = unsafe {
            if flag.is_null() {
                mpi::PMPI_Probe(source, tag, comm, stp)
            } else {
                mpi::PMPI_Iprobe(source, tag, comm, flag, stp)
            }
        };
        // SAFETY: the MPI wrote the flag.
        if rc != errclass::SUCCESS || (!flag.is_null() && unsafe { *flag } == 0) {
            return rc;
        }
        // SAFETY: the probe's status.
        if !unsafe { may_be_m0(stp, comm) } {
            return rc;
        }
        // Take the probed message: the oldest from its source with its tag.
        // SAFETY: the probe's status.
        let (src, t) = unsafe { ((*stp).MPI_SOURCE, (*stp).MPI_TAG) };
        let (mut f, mut msg, mut st) = (0, consts::message_null(), blank_status());
        // SAFETY: forwarded to the MPI with the probed source and tag.
        unsafe { mpi::PMPI_Improbe(src, t, comm, &mut f, &mut msg, &mut st) };
        if f != 0 {
            // SAFETY: the matched message.
            let e = unsafe { receive(&mut msg, &st, comm) };
            // Counted under the lock, as `take` uncounts: counted after, another thread's `take`
            // of it could lower the count first, and `any()` could read 0 with another entry
            // still stashed (a receive matching that one would then skip the stash).
            let mut g = BY_MATCH.lock().unwrap_or_else(|e| e.into_inner());
            BY_MATCH_N.fetch_add(1, Ordering::AcqRel);
            g.push_back(e);
        }
        // Report it (or, if another thread took it meanwhile, probe again).
    }
}

/// `MPI_Mprobe` (`flag` null) or `MPI_Improbe`: an M0 is received at once and the
/// application's message handle refers to the stash entry.
///
/// # Safety
/// As the MPI call.
pub unsafe fn mprobe(
    source: c_int,
    tag: c_int,
    comm: Comm,
    flag: *mut c_int,
    message: *mut mpi::MPI_Message,
    status: *mut Status,
) -> c_int {
    if !message.is_null() {
        if let Some(e) = take(source, tag, comm) {
            // A message an earlier probe took: the application gets a handle of sluice's own,
            // which only MPI_Mrecv/MPI_Imrecv (intercepted) ever see.
            let handle = fake_message();
            // SAFETY: the application's output arguments.
            unsafe {
                e.report(status);
                *message = handle;
                if !flag.is_null() {
                    *flag = 1;
                }
            }
            let mut g = BY_MESSAGE.lock().unwrap_or_else(|e| e.into_inner());
            g.get_or_insert_with(FxHashMap::default).insert(crate::ffi::message_key(handle), e);
            BY_MESSAGE_N.fetch_add(1, Ordering::AcqRel);
            return errclass::SUCCESS;
        }
    }
    let mut local = blank_status();
    let stp = crate::protocol::p2p::status_or(status, &mut local);
    // SAFETY: forwarded to the MPI.
    let rc = unsafe {
        if flag.is_null() {
            mpi::PMPI_Mprobe(source, tag, comm, message, stp)
        } else {
            mpi::PMPI_Improbe(source, tag, comm, flag, message, stp)
        }
    };
    // SAFETY: the MPI wrote the flag and message.
    if rc != errclass::SUCCESS || (!flag.is_null() && unsafe { *flag } == 0) || message.is_null() {
        return rc;
    }
    // SAFETY: as above.
    let mut msg = unsafe { *message };
    // SAFETY: the probe's status.
    if msg == consts::message_no_proc() || !unsafe { may_be_m0(stp, comm) } {
        return rc;
    }
    // SAFETY: the matched message and its status.
    let e = unsafe { receive(&mut msg, &*stp, comm) };
    // `receive` freed the MPI's message (MPI_Mrecv): the MPI may hand its value to the next
    // matched probe at once (this thread's or another's), whose stash entry would then take this
    // one's place. The application gets a handle of sluice's own, as for a stashed message.
    let handle = fake_message();
    // SAFETY: the application's output argument; the status it reads (or local).
    unsafe {
        *message = handle;
        e.report(status);
    }
    let mut g = BY_MESSAGE.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(FxHashMap::default).insert(crate::ffi::message_key(handle), e);
    BY_MESSAGE_N.fetch_add(1, Ordering::AcqRel);
    rc
}

/// Takes the stash entry of a message handle the application got from `MPI_Mprobe`.
pub fn take_message(message: mpi::MPI_Message) -> Option<Stashed> {
    if BY_MESSAGE_N.load(Ordering::Acquire) == 0 {
        return None;
    }
    let mut g = BY_MESSAGE.lock().unwrap_or_else(|e| e.into_inner());
    let e = g.as_mut()?.remove(&crate::ffi::message_key(message))?;
    BY_MESSAGE_N.fetch_sub(1, Ordering::AcqRel);
    Some(e)
}

/// A message handle no MPI object has: Open MPI's handles are object addresses, so a fresh
/// address of sluice's own; MPICH's are integers whose top bits give the kind and object type,
/// so a builtin-kind value of an object type MPICH does not define (0xF).
fn fake_message() -> mpi::MPI_Message {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    #[cfg(sluice_mpi = "openmpi")]
    {
        // Addresses inside a static block of sluice's: never an Open MPI object.
        static BLOCK: [u8; 4096] = [0; 4096];
        (BLOCK.as_ptr() as usize + (n % 4096)) as mpi::MPI_Message
    }
    #[cfg(sluice_mpi = "mpich")]
    {
        (0x7c00_0000u32 | (n as u32 & 0x03ff_ffff)) as mpi::MPI_Message
    }
}
