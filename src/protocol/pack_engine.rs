//! Whole-element packs and unpacks on the engine chosen for the type: sluice's kernel or the
//! MPI's own (`PMPI_Pack`/`PMPI_Unpack`), per type and direction ([`crate::datatype::choice`]:
//! learned from the type's first large calls unless `SLUICE_PACK_ENGINE` says otherwise).
//!
//! Both engines produce the same packed bytes (homogeneous packing: `sluice-ddt-bench` and
//! tests/c/pack.c check it on every shape they build), so the choice changes no byte on the
//! wire and nothing the application can see but the time.

use std::any::Any;
use std::ffi::c_int;

use crate::datatype::choice::{Decision, Dir, Engine, Engines, Policy, Prefixed};
use crate::datatype::compiled::CompiledType;
use crate::ffi::{consts, errclass, mpi, next};
use crate::protocol::type_prefix::{self, Prefix};

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

/// One call's elements in user memory and its packed stream in sluice's, for both engines
/// ([`Engines`]), in either direction.
struct Call<'a> {
    dir: Dir,
    datatype: mpi::MPI_Datatype,
    c: &'a CompiledType,
    count: usize,
    /// The first element (`inbuf` of a pack, `outbuf` of an unpack).
    user: *mut u8,
    /// The packed stream, `count * size` bytes.
    packed: *mut u8,
    /// A prefix of the first element as an MPI type (its handle and packed bytes), while
    /// learning needs one; the type lives in the choice's keeping.
    prefix: Option<(mpi::MPI_Datatype, usize)>,
}

impl Call<'_> {
    fn bytes(&self) -> usize {
        self.count * self.c.size()
    }

    /// The MPI's engine on `n` elements of `datatype` at `user` and stream bytes `[first, first
    /// + n * size of datatype)`.
    fn mpi_on(&self, datatype: mpi::MPI_Datatype, user: *mut u8, n: usize, first: usize, last: usize) -> bool {
        let (bytes, mut pos) = (self.bytes() as c_int, first as c_int);
        // SAFETY: elements the caller's typemap covers and their bytes in the stream through
        // the MPI's engine (the choice keeps `bytes` and the counts within `int`); the stream
        // is `bytes` long.
        let rc = unsafe {
            match self.dir {
                Dir::Pack => next::MPI_Pack(user.cast(), n as c_int, datatype, self.packed.cast(), bytes, &mut pos, consts::comm_self()),
                Dir::Unpack => {
                    next::MPI_Unpack(self.packed.cast(), bytes, &mut pos, user.cast(), n as c_int, datatype, consts::comm_self())
                }
            }
        };
        rc == errclass::SUCCESS && pos as usize == last
    }
}

impl Engines for Call<'_> {
    fn sluice(&mut self, a: usize, b: usize) {
        let size = self.c.size();
        let at = self.user.wrapping_offset(a as isize * self.c.dataloop().extent as isize);
        // SAFETY: elements [a, b) start at `a * extent` from the first (the caller's typemap)
        // and their packed bytes are [a * size, b * size) of the stream.
        unsafe {
            let stream = self.packed.add(a * size);
            match self.dir {
                Dir::Pack => self.c.pack(at, b - a, std::slice::from_raw_parts_mut(stream, (b - a) * size)),
                Dir::Unpack => self.c.unpack(std::slice::from_raw_parts(stream, (b - a) * size), b - a, at),
            }
        }
    }

    fn sluice_bytes(&mut self, first: usize, last: usize) {
        // SAFETY: stream bytes [first, last) of the call's elements at `user`.
        unsafe {
            let stream = self.packed.add(first);
            match self.dir {
                Dir::Pack => self.c.pack_range(self.user, self.count, first, last, std::slice::from_raw_parts_mut(stream, last - first)),
                Dir::Unpack => self.c.unpack_range(std::slice::from_raw_parts(stream, last - first), self.count, first, last, self.user),
            }
        }
    }

    fn mpi(&mut self, a: usize, b: usize) -> bool {
        let size = self.c.size();
        let at = self.user.wrapping_offset(a as isize * self.c.dataloop().extent as isize);
        self.mpi_on(self.datatype, at, b - a, a * size, b * size)
    }

    fn make_prefix(&mut self, want: usize, max: usize, kept: &mut Option<Box<dyn Any + Send>>) -> Option<Prefixed> {
        let old = kept.as_ref().and_then(|k| k.downcast_ref::<Prefix>()).filter(|p| (want..=max).contains(&p.bytes()));
        let (p, fresh) = match old {
            Some(p) => ((p.handle(), p.bytes()), false),
            None => {
                // SAFETY: the application's committed handle, inside its call.
                let new = unsafe { type_prefix::prefix(self.datatype, want, max) }?;
                let p = (new.handle(), new.bytes());
                *kept = Some(Box::new(new));
                log::debug!(
                    "compiled type {} ({}): {:?} learns from a prefix of {} bytes",
                    self.c.id(),
                    self.c.kernel().name(),
                    self.dir,
                    p.1
                );
                (p, true)
            }
        };
        self.prefix = Some(p);
        Some(Prefixed { bytes: p.1, fresh })
    }

    fn mpi_prefix(&mut self) -> bool {
        let Some((handle, bytes)) = self.prefix else { return false };
        self.mpi_on(handle, self.user, 1, 0, bytes)
    }
}

/// [`pack`] under `policy` (the benchmark's entry: it has no runtime configuration).
///
/// # Safety
/// As [`pack`]; MPI is initialized.
pub unsafe fn pack_with(policy: Policy, datatype: mpi::MPI_Datatype, c: &CompiledType, count: usize, inbuf: *const u8, out: &mut [u8]) {
    debug_assert_eq!(out.len(), count * c.size());
    // `user` is only read in this direction.
    let mut call = Call { dir: Dir::Pack, datatype, c, count, user: inbuf.cast_mut(), packed: out.as_mut_ptr(), prefix: None };
    if let Some(d) = c.choice().run(Dir::Pack, policy, count, out.len(), &mut call) {
        log_decision(c, Dir::Pack, d);
    }
}

/// [`unpack`] under `policy`.
///
/// # Safety
/// As [`unpack`]; MPI is initialized.
pub unsafe fn unpack_with(policy: Policy, datatype: mpi::MPI_Datatype, c: &CompiledType, count: usize, input: &[u8], outbuf: *mut u8) {
    debug_assert_eq!(input.len(), count * c.size());
    // `packed` is only read in this direction.
    let mut call = Call { dir: Dir::Unpack, datatype, c, count, user: outbuf, packed: input.as_ptr().cast_mut(), prefix: None };
    if let Some(d) = c.choice().run(Dir::Unpack, policy, count, input.len(), &mut call) {
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
