//! Forwarding to the next definition of each intercepted function.
//!
//! Choice (docs/architecture.md, "Forwarding"): application calls are forwarded to
//! `dlsym(RTLD_NEXT, "MPI_X")`, the next definition after `libsluice.so` in the symbol lookup
//! order, and only fall back to `PMPI_X` when there is none. That lets sluice sit in front of
//! other PMPI tools (`LD_PRELOAD=libsluice.so:libtool.so`): the tool still sees every call the
//! application made, and when no tool is present the next definition is the MPI library's own
//! `MPI_X`, which is `PMPI_X`. sluice's *own* traffic (statistics gather, later protocol
//! messages) calls `PMPI_*` directly so that tools below never see it.
//!
//! Each target is resolved once, on first use, into an atomic slot; the hot path is one relaxed
//! load and an indirect call ([`untimed`]), plus one load of the statistics switch for the
//! handlers' calls ([`timed`] when statistics are on).

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments, non_snake_case)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

#[allow(unused_imports)]
use super::mpi::*;
use crate::stats;

/// Resolves `name` with `dlsym(RTLD_NEXT)`, falling back to `fallback` (the `PMPI_` symbol).
///
/// A next definition inside sluice's own object (possible when sluice is both preloaded and
/// linked) is skipped in favour of the fallback, which cannot recurse.
#[cold]
pub fn resolve(name: &CStr, fallback: *mut c_void) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; dlsym with RTLD_NEXT is thread-safe and only reads.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() || in_own_object(p) {
        fallback
    } else {
        p
    }
}

/// Whether `p` lies in the object (shared library or executable) this code was loaded from.
/// Asked by address rather than by comparing with sluice's exported function, so that this
/// layer does not name the interception layer above it.
fn in_own_object(p: *mut c_void) -> bool {
    let base = |addr: *const c_void| {
        // SAFETY: an all-zero Dl_info is a valid value (null pointers); dladdr only writes it.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr accepts any address and writes `info` only on success.
        (unsafe { libc::dladdr(addr, &mut info) } != 0).then_some(info.dli_fbase)
    };
    let own = base(in_own_object as *const c_void);
    own.is_some() && base(p) == own
}

/// Loads a resolved target from its slot, resolving on first use.
#[inline(always)]
pub fn slot_target(slot: &AtomicPtr<c_void>, name: &CStr, fallback: *mut c_void) -> *mut c_void {
    let p = slot.load(Ordering::Relaxed);
    if !p.is_null() {
        return p;
    }
    resolve_into(slot, name, fallback)
}

/// First use of a slot: resolves and stores the target (out of line, like all of the rare path).
#[cold]
#[inline(never)]
fn resolve_into(slot: &AtomicPtr<c_void>, name: &CStr, fallback: *mut c_void) -> *mut c_void {
    let p = resolve(name, fallback);
    slot.store(p, Ordering::Relaxed);
    p
}

macro_rules! define_next {
    ($(
        $fam:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) err($ec:ident)
        $(bytes($cnt:ident, $dt:ident))?
        $(fast($fast:ident($($farg:ident),*)))? => $handler:tt ;
    )*) => { paste::paste! {$(
        #[doc = concat!("Calls the next definition of `", stringify!($name), "` (see module docs).")]
        ///
        /// # Safety
        /// The arguments must satisfy the MPI standard's contract for this function.
        #[inline(always)]
        pub unsafe fn $name($($arg: $ty),*) -> c_int {
            if stats::timing_enabled() {
                // SAFETY: forwarded unchanged; the caller upholds the MPI contract.
                unsafe { timed::$name($($arg),*) }
            } else {
                // SAFETY: as above.
                unsafe { untimed::$name($($arg),*) }
            }
        }
    )*

    /// The forwarding calls with the time spent in the MPI added to the thread's account
    /// (statistics on), out of line: the common path must not pay for the clock calls' frame.
    pub mod timed {
        #[allow(unused_imports)]
        use super::*;
        $(
            #[doc = concat!("`", stringify!($name), "`, timed.")]
            ///
            /// # Safety
            /// As [`super::untimed`].
            #[cold]
            #[inline(never)]
            pub unsafe fn $name($($arg: $ty),*) -> c_int {
                let t = stats::now_ns();
                // SAFETY: forwarded unchanged; the caller upholds the MPI contract.
                let rc = unsafe { super::untimed::$name($($arg),*) };
                stats::add_mpi_ns(stats::now_ns() - t);
                rc
            }
        )*
    }

    /// The forwarding calls themselves: one load of the resolved target and an indirect call.
    /// The exported functions' fast path uses these directly (it runs only while statistics
    /// are off).
    pub mod untimed {
        #[allow(unused_imports)]
        use super::*;
        $(
            #[allow(non_upper_case_globals)]
            static [<SLOT_ $name>]: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

            #[doc = concat!("Calls the next definition of `", stringify!($name), "`, untimed.")]
            ///
            /// # Safety
            /// The arguments must satisfy the MPI standard's contract for this function.
            #[inline(always)]
            pub unsafe fn $name($($arg: $ty),*) -> c_int {
                type Target = unsafe extern "C" fn($($ty),*) -> c_int;
                let p = slot_target(
                    &[<SLOT_ $name>],
                    // SAFETY: literal with exactly one trailing NUL.
                    unsafe { CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                    [<P $name>] as Target as *mut c_void,
                );
                // SAFETY: `p` is either the PMPI function of this exact prototype or a symbol
                // named like it, which the MPI standard gives the same prototype.
                let f: Target = unsafe { std::mem::transmute::<*mut c_void, Target>(p) };
                // SAFETY: forwarded unchanged; the caller upholds the MPI contract.
                unsafe { f($($arg),*) }
            }

            #[doc = concat!("The next definition of `", stringify!($name), "` once a call resolved it (`None` before: ")]
            /// the caller takes the path that resolves it). Lets the exported function's fast
            /// path be a load and a tail call, with no resolution code (and no frame) in it.
            #[inline(always)]
            #[allow(dead_code)] // generated for every entry; those with a `fast` predicate use it
            pub fn [<resolved_ $name>]() -> Option<unsafe extern "C" fn($($ty),*) -> c_int> {
                let p = [<SLOT_ $name>].load(Ordering::Relaxed);
                // SAFETY: a non-null slot holds the target `$name` resolved to, a function of
                // exactly this prototype (see above).
                (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> c_int>(p) })
            }
        )*
    }
    }};
}

crate::for_each_interposed!(define_next);

/// Keeps `c_char` referenced for flavors whose list has no `argv` (silences unused import).
#[allow(dead_code)]
type _Argv = *mut *mut c_char;

macro_rules! define_name_list {
    ($(
        $fam:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) err($ec:ident)
        $(bytes($cnt:ident, $dt:ident))?
        $(fast($fast:ident($($farg:ident),*)))? => $handler:tt ;
    )*) => {
        /// Every intercepted C function name (the registry in `intercept::registry`).
        const INTERCEPTED: &[&str] = &[$( stringify!($name) ),*];
    };
}

crate::for_each_interposed!(define_name_list);

/// Whether `name` is an intercepted C function (used to validate `SLUICE_TEST_PANIC`).
pub fn is_intercepted(name: &str) -> bool {
    INTERCEPTED.contains(&name)
}
