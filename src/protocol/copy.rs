//! `sluice_copy`'s protocol side: turns the application's places (memory or file, `count`
//! elements of an MPI datatype) into the transfer runtime's, checking every argument first so
//! that a bad one is reported and nothing is written. The datatype is resolved once here (the
//! compiled form sluice keeps for committed types, or decoded now for predefined ones) and passed
//! down; the runtime never sees an MPI handle.

use std::ffi::c_int;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::datatype::compiled::CompiledType;
use crate::ffi::{consts, mpi};
use crate::transfer::runtime::{self, progress, CopyError, Event, Memory, Place};

/// Error codes of sluice's own API (`include/sluice.h`).
pub mod code {
    use std::ffi::c_int;
    pub const SUCCESS: c_int = 0;
    /// A null pointer, an unknown place kind, a negative count, a null buffer with data, or a
    /// file descriptor that is not open.
    pub const ERR_ARG: c_int = -2;
    /// The datatype is null or could not be decoded.
    pub const ERR_TYPE: c_int = -3;
    /// Source and destination hold different numbers of bytes of data.
    pub const ERR_SIZE: c_int = -4;
    /// MPI is not initialized, or already finalized.
    pub const ERR_NOT_INITIALIZED: c_int = -5;
    /// The copy failed while running (a read or write of a file failed).
    pub const ERR_IO: c_int = -6;
    /// The machine model has no path between the two places.
    pub const ERR_PATH: c_int = -7;
    /// `sluice_rma_init`: the MPI does not run at `MPI_THREAD_MULTIPLE`, which the target-side
    /// service thread needs.
    pub const ERR_THREAD: c_int = -8;
    /// A put or get the target refused: its range is not mapped there (or not writable, for a
    /// put), or the target's firehose memory is exhausted.
    pub const ERR_REMOTE: c_int = -9;
}

/// Where a `sluice_place_t` is.
pub const PLACE_HOST: c_int = 1;
pub const PLACE_FILE: c_int = 2;

/// `sluice_place_t` (include/sluice.h).
#[repr(C)]
pub struct CPlace {
    pub kind: c_int,
    pub base: *mut std::ffi::c_void,
    pub fd: c_int,
    pub offset: mpi::MPI_Offset,
    pub count: mpi::MPI_Count,
    pub datatype: mpi::MPI_Datatype,
}

/// `sluice_file_open`'s flags (include/sluice.h).
pub mod file_flags {
    use std::ffi::c_int;
    pub const READ: c_int = 1;
    pub const WRITE: c_int = 2;
    pub const CREATE: c_int = 4;
}

/// Opens `path` for a file place: reading (`READ`), writing (`WRITE`, reading too: a layout
/// with gaps is read, modified and written back), creating it when missing (`CREATE`, mode 0644,
/// implies `WRITE`; never truncated). Returns the descriptor, which the caller closes.
///
/// For languages that have no file descriptors of their own (the Fortran module `sluice`).
pub fn open_file(path: &std::ffi::CStr, flags: c_int) -> Result<c_int, Refused> {
    use file_flags::*;
    use std::os::fd::IntoRawFd;
    if flags & !(READ | WRITE | CREATE) != 0 || flags & (READ | WRITE | CREATE) == 0 {
        return Err(Refused(code::ERR_ARG, format!("bad flags {flags} (SLUICE_FILE_READ, _WRITE, _CREATE)")));
    }
    let path = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path.to_bytes()));
    let write = flags & (WRITE | CREATE) != 0;
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(write).create(flags & CREATE != 0);
    match o.open(path) {
        Ok(f) => Ok(f.into_raw_fd()),
        Err(e) => Err(Refused(code::ERR_IO, format!("cannot open {}: {e}", path.display()))),
    }
}

/// A failed call: its code and what to tell the user.
pub struct Refused(pub c_int, pub String);

fn initialized() -> bool {
    let (mut i, mut f) = (0, 0);
    // SAFETY: both may be called at any time, from any thread.
    unsafe {
        mpi::PMPI_Initialized(&mut i);
        mpi::PMPI_Finalized(&mut f);
    }
    i != 0 && f == 0
}

/// The compiled form of `t` (predefined types and types sluice does not keep are decoded now).
fn compiled(t: mpi::MPI_Datatype) -> Result<Arc<CompiledType>, Refused> {
    if t == consts::datatype_null() {
        return Err(Refused(code::ERR_TYPE, "MPI_DATATYPE_NULL".into()));
    }
    if let Some(c) = crate::protocol::datatype::lookup(t) {
        return Ok(c);
    }
    // Predefined types are compiled once: their handles never change meaning, and the runtime
    // caches paths by compiled type. (Other types sluice does not keep are decoded each time:
    // their handles may be freed and reused.)
    static NAMED: Mutex<Option<FxHashMap<usize, Arc<CompiledType>>>> = Mutex::new(None);
    let key = crate::ffi::datatype_key(t);
    if let Some(c) = NAMED.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(&key)) {
        return Ok(c.clone());
    }
    let c = crate::datatype::decode::typemap(t)
        .map(|dl| Arc::new(CompiledType::new(&dl)))
        .map_err(|e| Refused(code::ERR_TYPE, format!("the datatype cannot be used ({e:?})")))?;
    if crate::datatype::decode::is_named(t) {
        NAMED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(FxHashMap::default).insert(key, c.clone());
    }
    Ok(c)
}

/// The runtime's place for the application's `p` (`what`: "source" or "destination").
///
/// # Safety
/// `p` is null or points to a `sluice_place_t`.
unsafe fn place(p: *const CPlace, what: &str) -> Result<Place, Refused> {
    let arg = |m: String| Refused(code::ERR_ARG, format!("{what}: {m}"));
    // SAFETY: see above.
    let Some(p) = (unsafe { p.as_ref() }) else { return Err(arg("null place".into())) };
    let count = usize::try_from(p.count).map_err(|_| arg(format!("negative count {}", p.count)))?;
    let ty = compiled(p.datatype).map_err(|Refused(c, m)| Refused(c, format!("{what}: {m}")))?;
    let memory = match p.kind {
        PLACE_HOST => {
            if p.base.is_null() && count > 0 && ty.size() > 0 {
                return Err(arg("null buffer".into()));
            }
            Memory::Host(p.base.cast())
        }
        PLACE_FILE => {
            // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
            if unsafe { libc::fcntl(p.fd, libc::F_GETFD) } < 0 {
                return Err(arg(format!("file descriptor {} is not open", p.fd)));
            }
            Memory::File { fd: p.fd, offset: p.offset }
        }
        k => return Err(arg(format!("unknown place kind {k} (SLUICE_PLACE_HOST or SLUICE_PLACE_FILE)"))),
    };
    if ty.size().checked_mul(count).is_none() {
        return Err(arg(format!("{count} elements of {} bytes overflow", ty.size())));
    }
    Ok(Place::new(memory, ty, count))
}

fn refused(e: CopyError) -> Refused {
    match e {
        CopyError::Size(..) => Refused(code::ERR_SIZE, e.to_string()),
        CopyError::Offset => Refused(code::ERR_ARG, e.to_string()),
        CopyError::Path(_) => Refused(code::ERR_PATH, e.to_string()),
    }
}

/// Both places, checked.
///
/// # Safety
/// Null or valid `sluice_place_t` pointers.
unsafe fn places(src: *const CPlace, dst: *const CPlace) -> Result<(Place, Place), Refused> {
    if !initialized() {
        return Err(Refused(code::ERR_NOT_INITIALIZED, "call it between MPI_Init and MPI_Finalize".into()));
    }
    // SAFETY: forwarded contract.
    unsafe { Ok((place(src, "source")?, place(dst, "destination")?)) }
}

/// `sluice_copy`.
///
/// # Safety
/// As documented in include/sluice.h.
pub unsafe fn copy(src: *const CPlace, dst: *const CPlace, priority: c_int) -> Result<runtime::Event, Refused> {
    // SAFETY: forwarded contract.
    let (s, d) = unsafe { places(src, dst)? };
    runtime::global().copy(s, d, priority).map_err(refused)
}

/// `sluice_plan_explain`: the plan as text.
///
/// # Safety
/// As documented in include/sluice.h.
pub unsafe fn explain(src: *const CPlace, dst: *const CPlace) -> Result<String, Refused> {
    // SAFETY: forwarded contract.
    let (s, d) = unsafe { places(src, dst)? };
    let rt = runtime::global();
    let path = rt.plan(&s, &d).map_err(refused)?;
    Ok(format!("model: {}\n{}", runtime::model_source().unwrap_or("built-in"), path.explain(rt.model(), s.bytes())))
}

/// `sluice_event_wait`: the copy's outcome, driving the progress engine while the channels'
/// workers move it (MPI transfers in flight keep moving while the application waits here).
pub fn wait(ev: &Event) -> Result<(), String> {
    loop {
        if let Some(o) = ev.test() {
            return o;
        }
        if progress::idle() || !crate::ffi::this_thread_may_call_mpi() {
            return ev.wait(); // nothing this thread may move: sleep until the copy completes
        }
        progress::drive();
        std::thread::yield_now();
    }
}

/// `sluice_event_test`: the copy's outcome if it completed, after one drive of the engine.
pub fn test(ev: &Event) -> Option<Result<(), String>> {
    // Work in flight means MPI is up (the sources are empty before MPI_Init and after
    // MPI_Finalize); the thread must still be one the application may call MPI from.
    if !progress::idle() && crate::ffi::this_thread_may_call_mpi() {
        progress::drive();
    }
    ev.test()
}

/// The code of an event's outcome: a copy's failure is `SLUICE_ERR_IO`, a put's or get's
/// the code its event was failed with (`Event::fail`).
pub fn outcome(ev: &Event, o: Result<(), String>) -> c_int {
    match o {
        Ok(()) => code::SUCCESS,
        Err(m) => match ev.code() {
            0 => {
                log::warn!("sluice_copy: {m}");
                code::ERR_IO
            }
            c => {
                log::warn!("{m}");
                c
            }
        },
    }
}
