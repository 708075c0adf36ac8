//! Whole-element packs and unpacks on the engine chosen for the type: sluice's kernel or the
//! MPI's own (`PMPI_Pack`/`PMPI_Unpack`), per type and direction ([`crate::datatype::choice`]:
//! learned from the type's first large calls unless `SLUICE_PACK_ENGINE` says otherwise).
//!
//! Both engines produce the same packed bytes (homogeneous packing: `sluice-ddt-bench` and
//! tests/c/pack.c check it on every shape they build), so the choice changes no byte on the
//! wire and nothing the application can see but the time.

use std::ffi::c_int;

use crate::datatype::choice::{Decision, Dir, Engine, Policy};
use crate::datatype::compiled::CompiledType;
use crate::ffi::{consts, errclass, mpi, next};

fn policy() -> Policy {
    crate::runtime::config().map_or(Policy::Sluice, |c| c.pack_engine)
}

fn log_decision(c: &CompiledType, dir: Dir, d: Decision) {
    log::debug!(
        "compiled type {} ({}): {dir:?} by {:?} (best ns per KiB: sluice {:.0}, MPI {:.0})",
        c.id(),
        c.kernel().name(),
        d.engine,
        d.sluice * 1024e9,
        d.mpi * 1024e9
    );
}

/// Packs `count` elements of `datatype` (compiled `c`) at `inbuf` into `out`, exactly
/// `count * c.size()` bytes long, under `SLUICE_PACK_ENGINE`.
///
/// # Safety
/// As `MPI_Pack` of those elements: the typemap readable at `inbuf`; `out` is not user memory
/// the typemap covers.
pub(crate) unsafe fn pack(datatype: mpi::MPI_Datatype, c: &CompiledType, count: usize, inbuf: *const u8, out: &mut [u8]) {
    // SAFETY: forwarded contract.
    unsafe { pack_with(policy(), datatype, c, count, inbuf, out) }
}

/// Unpacks `input` (exactly `count * c.size()` bytes) into `count` elements of `datatype`
/// (compiled `c`) at `outbuf`, under `SLUICE_PACK_ENGINE`.
///
/// # Safety
/// As `MPI_Unpack` of those elements: the typemap writable at `outbuf`, no byte addressed twice.
pub(crate) unsafe fn unpack(datatype: mpi::MPI_Datatype, c: &CompiledType, count: usize, input: &[u8], outbuf: *mut u8) {
    // SAFETY: forwarded contract.
    unsafe { unpack_with(policy(), datatype, c, count, input, outbuf) }
}

/// [`pack`] under `policy` (the benchmark's entry: it has no runtime configuration).
///
/// # Safety
/// As [`pack`]; MPI is initialized.
pub unsafe fn pack_with(policy: Policy, datatype: mpi::MPI_Datatype, c: &CompiledType, count: usize, inbuf: *const u8, out: &mut [u8]) {
    let (size, extent) = (c.size(), c.dataloop().extent as isize);
    let bytes = out.len();
    let outp = out.as_mut_ptr();
    let at = |a: usize| inbuf.wrapping_offset(a as isize * extent);
    let decided = c.choice().run(
        Dir::Pack,
        policy,
        count,
        bytes,
        // SAFETY: elements [a, b) start at `a * extent` from `inbuf` (the caller's typemap) and
        // their packed bytes are [a * size, b * size) of `out`.
        |a, b| unsafe { c.pack(at(a), b - a, std::slice::from_raw_parts_mut(outp.add(a * size), (b - a) * size)) },
        |a, b| {
            let mut pos = (a * size) as c_int;
            // SAFETY: the same elements and bytes through the MPI's engine (the choice keeps
            // `bytes` and the counts within `int`); `out` is `bytes` long.
            let rc = unsafe {
                next::MPI_Pack(at(a).cast(), (b - a) as c_int, datatype, outp.cast(), bytes as c_int, &mut pos, consts::comm_self())
            };
            rc == errclass::SUCCESS && pos as usize == b * size
        },
    );
    if let Some(d) = decided {
        log_decision(c, Dir::Pack, d);
    }
}

/// [`unpack`] under `policy`.
///
/// # Safety
/// As [`unpack`]; MPI is initialized.
pub unsafe fn unpack_with(policy: Policy, datatype: mpi::MPI_Datatype, c: &CompiledType, count: usize, input: &[u8], outbuf: *mut u8) {
    let (size, extent) = (c.size(), c.dataloop().extent as isize);
    let bytes = input.len();
    let inp = input.as_ptr();
    let at = |a: usize| outbuf.wrapping_offset(a as isize * extent);
    let decided = c.choice().run(
        Dir::Unpack,
        policy,
        count,
        bytes,
        // SAFETY: as in `pack`, in the other direction.
        |a, b| unsafe { c.unpack(std::slice::from_raw_parts(inp.add(a * size), (b - a) * size), b - a, at(a)) },
        |a, b| {
            let mut pos = (a * size) as c_int;
            // SAFETY: as in `pack`.
            let rc = unsafe {
                next::MPI_Unpack(inp.cast(), bytes as c_int, &mut pos, at(a).cast(), (b - a) as c_int, datatype, consts::comm_self())
            };
            rc == errclass::SUCCESS && pos as usize == b * size
        },
    );
    if let Some(d) = decided {
        log_decision(c, Dir::Unpack, d);
    }
}

/// The kernel's name with the engine choice: `"<kernel>"` while sluice's kernel serves both
/// directions (or they are still learning), `"<kernel>+mpi-pack"`, `"<kernel>+mpi-unpack"` or
/// `"<kernel>+mpi"` where the MPI's engine was chosen (`sluice_type_kernel`). A static string.
pub fn describe(c: &CompiledType) -> &'static std::ffi::CStr {
    use std::collections::HashMap;
    use std::sync::Mutex;
    let mpi = |d| c.choice().decided(d) == Some(Engine::Mpi);
    let suffix = match (mpi(Dir::Pack), mpi(Dir::Unpack)) {
        (false, false) => return c.kernel().c_name(),
        (true, false) => "+mpi-pack",
        (false, true) => "+mpi-unpack",
        (true, true) => "+mpi",
    };
    // At most three strings per kernel name, made once and kept for the process.
    static NAMES: Mutex<Option<HashMap<(&'static str, &'static str), &'static std::ffi::CStr>>> = Mutex::new(None);
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let key = (c.kernel().name(), suffix);
    g.get_or_insert_with(HashMap::new).entry(key).or_insert_with(|| {
        let s = std::ffi::CString::new(format!("{}{suffix}", key.0)).unwrap_or_default();
        Box::leak(s.into_boxed_c_str())
    })
}
