//! Per-communicator hints, set the MPI way: info keys given to `MPI_Comm_set_info` or
//! `MPI_Comm_dup_with_info` (docs/configuration.md, "Communicator info keys").
//!
//! - `sluice_p2p_path`: how point-to-point messages of non-contiguous types on this
//!   communicator move: `auto` (the default: sluice's rules), `mpi` (left to the MPI's own
//!   datatype engine), `staged` (packed by sluice, one MPI message), `pipelined` (packed chunk
//!   by chunk, every chunk through the MPI), `arena` (pipelined through the shared-memory arena
//!   when the peer shares the node, else as `pipelined`). Each process reads its own hint for
//!   the sends and receives it posts: the wire format is the same for every path, so any
//!   choice on one side is read by any receive on the other (docs/protocol.md). Messages of
//!   exactly the reserved size stay pipelined whatever the hint (they are the pipeline's
//!   marker). Unknown values are ignored with a warning, as MPI ignores hints it does not know.
//! - `sluice_priority`: an integer (default 0; higher is more urgent). While a pipelined
//!   message received on a communicator of higher priority is under way, this process's
//!   pipelined receives of lower priority wait for it at chunk granularity: they post no chunk
//!   receives and unpack nothing (`p2p::pipeline::urgency`, docs/protocol.md "Priorities").
//!
//! The hints live in an attribute of a communicator keyval that sluice creates at start-up;
//! its value *is* the hints (integers in the `void *`: the path's code in the low byte, the
//! priority above it), copied by `MPI_Comm_dup` (MPI-4 copies a communicator's info hints to
//! its duplicate) and dropped with the communicator. The info calls still reach the MPI, which
//! keeps the keys for `MPI_Comm_get_info`. Until some communicator sets a hint, reading one is
//! a single relaxed load.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::hints::{copy_value, delete_value};

/// How a communicator's non-contiguous point-to-point messages move (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum P2pPath {
    #[default]
    Auto,
    Mpi,
    Staged,
    Pipelined,
    Arena,
}

impl P2pPath {
    /// Every value, in the order of their codes (code = index + 1; 0 is "no hint").
    const ALL: [P2pPath; 5] = [P2pPath::Auto, P2pPath::Mpi, P2pPath::Staged, P2pPath::Pipelined, P2pPath::Arena];

    /// The info value naming this path.
    pub fn name(self) -> &'static str {
        match self {
            P2pPath::Auto => "auto",
            P2pPath::Mpi => "mpi",
            P2pPath::Staged => "staged",
            P2pPath::Pipelined => "pipelined",
            P2pPath::Arena => "arena",
        }
    }

    /// The path an info value names (case-insensitive, surrounding blanks ignored).
    pub fn parse(v: &str) -> Option<P2pPath> {
        let v = v.trim();
        P2pPath::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(v))
    }

    fn code(self) -> isize {
        P2pPath::ALL.iter().position(|&p| p == self).map_or(0, |i| i as isize + 1)
    }

    fn from_code(c: isize) -> P2pPath {
        usize::try_from(c - 1).ok().and_then(|i| P2pPath::ALL.get(i).copied()).unwrap_or_default()
    }

    /// Whether sluice packs this path's messages itself (its large-block rule does not apply).
    pub fn engine_forced(self) -> bool {
        matches!(self, P2pPath::Staged | P2pPath::Pipelined | P2pPath::Arena)
    }

    /// Whether a send of a size the pipeline takes is pipelined (`Staged` keeps one message).
    pub fn pipelines(self) -> bool {
        self != P2pPath::Staged
    }

    /// Whether a pipelined send may use the shared-memory arena.
    pub fn may_use_arena(self) -> bool {
        matches!(self, P2pPath::Auto | P2pPath::Arena)
    }
}

/// The info key of [`P2pPath`].
pub const PATH_KEY: &str = "sluice_p2p_path";
/// The info key of a communicator's priority ([`CommHints::priority`]).
pub const PRIORITY_KEY: &str = "sluice_priority";

/// A communicator's hints, read once where the communicator is known to be alive (the call
/// that posts an operation) and kept with the operation: the application may free a
/// communicator while operations on it are pending (MPI-4 6.4.3), and asking the MPI about the
/// freed handle later is an error (MPICH) or a read of freed memory (Open MPI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CommHints {
    pub path: P2pPath,
    pub priority: i32,
}

impl CommHints {
    /// `comm`'s hints (the defaults, in one relaxed load, until some communicator has a key).
    #[inline]
    pub fn of(comm: mpi::MPI_Comm) -> CommHints {
        if !any() {
            return CommHints::default();
        }
        hints_slow(comm)
    }

    /// The attribute value: the path's code in the low byte, the priority above it.
    fn code(self) -> isize {
        ((self.priority as isize) << 8) | self.path.code()
    }

    fn from_code(c: isize) -> CommHints {
        CommHints { path: P2pPath::from_code(c & 0xff), priority: (c >> 8) as i32 }
    }
}

/// `MPI_KEYVAL_INVALID` as `c_int`.
const INVALID: c_int = mpi::MPI_KEYVAL_INVALID as c_int;
static KEYVAL: AtomicI32 = AtomicI32::new(INVALID);
/// Some communicator has had a hint set (stays set: a cheap "maybe").
static ANY: AtomicBool = AtomicBool::new(false);
/// Some communicator has had a path other than `auto` set (the datatype table is told once).
static PATHS: AtomicBool = AtomicBool::new(false);

/// Whether any communicator may carry a hint (a path or a priority).
#[inline]
pub fn any() -> bool {
    ANY.load(Ordering::Relaxed)
}

/// The path hint of `comm` (`Auto` when none is set).
#[inline]
pub fn path(comm: mpi::MPI_Comm) -> P2pPath {
    CommHints::of(comm).path
}

/// The paths of the communicators that matched probes took messages on, by message handle
/// (only while some communicator has a key): a message handle does not name its communicator,
/// so `MPI_Mrecv`/`MPI_Imrecv` read the path noted when the probe took the message.
static MATCHED: Mutex<Option<FxHashMap<usize, P2pPath>>> = Mutex::new(None);

/// A matched probe on `comm` took `message` (`MPI_Mprobe`, `MPI_Improbe`): notes `comm`'s path
/// for the receive of that message. Every taken message is noted, `Auto` included, so an entry
/// left under a handle the MPI reuses is replaced.
pub fn note_matched(comm: mpi::MPI_Comm, message: mpi::MPI_Message) {
    if !any() || message == consts::message_null() || message == consts::message_no_proc() {
        return;
    }
    let p = path(comm);
    let mut g = MATCHED.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(FxHashMap::default).insert(crate::ffi::message_key(message), p);
}

/// The path of the communicator `message` was taken on, forgotten once read (`Auto` when no
/// key was set when the probe took it).
pub fn matched_path(message: mpi::MPI_Message) -> P2pPath {
    if !any() {
        return P2pPath::Auto;
    }
    let mut g = MATCHED.lock().unwrap_or_else(|e| e.into_inner());
    g.as_mut().and_then(|m| m.remove(&crate::ffi::message_key(message))).unwrap_or(P2pPath::Auto)
}

#[cold]
fn hints_slow(comm: mpi::MPI_Comm) -> CommHints {
    let kv = KEYVAL.load(Ordering::Acquire);
    if kv == INVALID || comm == consts::comm_null() {
        return CommHints::default();
    }
    let (mut value, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
    // SAFETY: `comm` is the application's communicator of a call in progress (an invalid one
    // makes the MPI return an error, read as "no hint"); `value` receives the attribute (a
    // `void *`) and `flag` one int.
    let rc = unsafe { mpi::PMPI_Comm_get_attr(comm, kv, (&mut value as *mut *mut c_void).cast(), &mut flag) };
    if rc == errclass::SUCCESS && flag != 0 {
        CommHints::from_code(value as isize)
    } else {
        CommHints::default()
    }
}

/// Creates the keyval (MPI is initialized; from `init::start`). On failure the hints are
/// unavailable, with a warning.
pub fn create_keyval() {
    let mut kv = INVALID;
    // SAFETY: MPI is initialized; the callbacks match MPI_Comm_copy/delete_attr_function (the
    // copy keeps the value: `MPI_Comm_dup` keeps the hint).
    let rc = unsafe {
        mpi::PMPI_Comm_create_keyval(Some(copy_value::<mpi::MPI_Comm>), Some(delete_value::<mpi::MPI_Comm>), &mut kv, std::ptr::null_mut())
    };
    if rc == errclass::SUCCESS {
        KEYVAL.store(kv, Ordering::Release);
    } else {
        log::warn!("cannot create the communicator hint keyval (MPI error {rc}); {PATH_KEY} and {PRIORITY_KEY} are ignored");
    }
}

/// Frees the keyval (MPI_Finalize, MPI still active).
pub fn free_keyval() {
    let mut kv = KEYVAL.swap(INVALID, Ordering::AcqRel);
    if kv != INVALID {
        // SAFETY: `kv` is the keyval this module created and has not freed.
        unsafe { mpi::PMPI_Comm_free_keyval(&mut kv) };
    }
}

/// The value of `key` in `info`, if present (and shorter than `MPI_MAX_INFO_VAL`).
fn info_value(info: mpi::MPI_Info, key: &str) -> Option<String> {
    if info == consts::info_null() {
        return None;
    }
    let ckey = std::ffi::CString::new(key).ok()?;
    let mut buf = vec![0u8; mpi::MPI_MAX_INFO_VAL as usize + 1];
    let mut flag: c_int = 0;
    // SAFETY: `info` is the application's valid info object (the MPI accepted it in the call
    // just made); `buf` holds `MPI_MAX_INFO_VAL + 1` bytes, the value's maximum plus its NUL.
    let rc = unsafe {
        mpi::PMPI_Info_get(info, ckey.as_ptr().cast_mut(), mpi::MPI_MAX_INFO_VAL as c_int, buf.as_mut_ptr().cast::<c_char>(), &mut flag)
    };
    if rc != errclass::SUCCESS || flag == 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Applies `info`'s keys to `comm`. `replace`: hints not in `info` go back to their default
/// (`MPI_Comm_dup_with_info`, whose info replaces the copied hints); otherwise they stay
/// (`MPI_Comm_set_info`).
fn apply(comm: mpi::MPI_Comm, info: mpi::MPI_Info, replace: bool) {
    let kv = KEYVAL.load(Ordering::Acquire);
    if kv == INVALID || comm == consts::comm_null() {
        return;
    }
    // An unknown value counts as no key (ignored, as MPI ignores hints it does not know).
    let path = info_value(info, PATH_KEY).and_then(|v| {
        let p = P2pPath::parse(&v);
        if p.is_none() {
            log::warn!("{PATH_KEY}={v:?} ignored (accepted: auto, mpi, staged, pipelined, arena)");
        }
        p
    });
    let priority = info_value(info, PRIORITY_KEY).and_then(|v| {
        let p = parse_priority(&v);
        if p.is_none() {
            log::warn!("{PRIORITY_KEY}={v:?} ignored (accepted: an integer from -8388608 to 8388607)");
        }
        p
    });
    if path.is_none() && priority.is_none() && !replace {
        return;
    }
    // dup_with_info: the parent's copied keys go; set_info: keys not given stay.
    let old = if replace || !any() { CommHints::default() } else { hints_slow(comm) };
    let new = CommHints { path: path.unwrap_or(old.path), priority: priority.unwrap_or(old.priority) };
    if new.path != P2pPath::Auto && !PATHS.swap(true, Ordering::AcqRel) {
        // The first path hint: types promised to the MPI at every size must take the full
        // path now.
        crate::protocol::datatype::large_blocks_may_take_sluice();
    }
    if new == CommHints::default() && !any() {
        return; // nothing set anywhere: no attribute needed
    }
    ANY.store(true, Ordering::Release);
    // SAFETY: `comm` is a valid communicator (the MPI call on it just succeeded); the value is
    // integers carried in the pointer, never dereferenced.
    let rc = unsafe { mpi::PMPI_Comm_set_attr(comm, kv, new.code() as *mut c_void) };
    if rc != errclass::SUCCESS {
        log::warn!("cannot record {PATH_KEY}/{PRIORITY_KEY} on a communicator (MPI error {rc}); they are ignored");
    }
}

/// A priority value: a decimal integer that fits the attribute beside the path (24 bits).
fn parse_priority(v: &str) -> Option<i32> {
    v.trim().parse::<i32>().ok().filter(|p| (-(1 << 23)..(1 << 23)).contains(p))
}

/// `MPI_Comm_set_info`: the MPI's call, then sluice's keys.
///
/// # Safety
/// As the MPI call.
pub unsafe fn comm_set_info(comm: mpi::MPI_Comm, info: mpi::MPI_Info) -> c_int {
    // SAFETY: the application's arguments, unchanged.
    let rc = unsafe { next::MPI_Comm_set_info(comm, info) };
    if rc == errclass::SUCCESS {
        apply(comm, info, false);
    }
    rc
}

/// `MPI_Comm_dup_with_info`: the MPI's call, then sluice's keys on the new communicator.
///
/// # Safety
/// As the MPI call.
pub unsafe fn comm_dup_with_info(comm: mpi::MPI_Comm, info: mpi::MPI_Info, newcomm: *mut mpi::MPI_Comm) -> c_int {
    // SAFETY: the application's arguments, unchanged.
    let rc = unsafe { next::MPI_Comm_dup_with_info(comm, info, newcomm) };
    if rc == errclass::SUCCESS && !newcomm.is_null() {
        // SAFETY: the MPI wrote the new communicator through the application's pointer.
        apply(unsafe { *newcomm }, info, true);
    }
    rc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_round_trip_through_their_codes() {
        for p in P2pPath::ALL {
            assert_eq!(P2pPath::parse(p.name()), Some(p));
            assert_eq!(P2pPath::from_code(p.code()), p);
        }
        assert_eq!(P2pPath::parse(" Staged "), Some(P2pPath::Staged));
        assert_eq!(P2pPath::parse("fast"), None);
        assert_eq!(P2pPath::from_code(0), P2pPath::Auto, "no attribute value: auto");
        assert_eq!(P2pPath::from_code(99), P2pPath::Auto);
    }

    #[test]
    fn hints_round_trip_through_the_attribute_value() {
        for path in P2pPath::ALL {
            for priority in [0, 1, -1, 7, -(1 << 23), (1 << 23) - 1] {
                let h = CommHints { path, priority };
                assert_eq!(CommHints::from_code(h.code()), h);
            }
        }
        assert_eq!(CommHints::from_code(0), CommHints::default(), "no attribute value: no hints");
        assert_eq!(parse_priority(" 3 "), Some(3));
        assert_eq!(parse_priority("-2"), Some(-2));
        assert_eq!(parse_priority("high"), None);
        assert_eq!(parse_priority("8388608"), None, "does not fit beside the path");
    }

    #[test]
    fn paths_say_what_they_force() {
        assert!(!P2pPath::Auto.engine_forced() && !P2pPath::Mpi.engine_forced());
        assert!(P2pPath::Staged.engine_forced() && !P2pPath::Staged.pipelines());
        assert!(P2pPath::Pipelined.pipelines() && !P2pPath::Pipelined.may_use_arena());
        assert!(P2pPath::Arena.may_use_arena() && P2pPath::Auto.may_use_arena());
    }
}
