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
//! load and an indirect call.

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments, non_snake_case)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

#[allow(unused_imports)]
use super::mpi::*;
use crate::stats;

/// Resolves `name` with `dlsym(RTLD_NEXT)`, falling back to `fallback` (the `PMPI_` symbol).
///
/// A next definition that is `libsluice.so`'s own (possible when sluice is both preloaded and
/// linked) is skipped in favour of the fallback, which cannot recurse.
#[cold]
pub fn resolve(name: &CStr, fallback: *mut c_void, own: *mut c_void) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; dlsym with RTLD_NEXT is thread-safe and only reads.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() || p == own {
        fallback
    } else {
        p
    }
}

/// Loads a resolved target from its slot, resolving on first use.
#[inline(always)]
pub fn slot_target(
    slot: &AtomicPtr<c_void>,
    name: &CStr,
    fallback: *mut c_void,
    own: *mut c_void,
) -> *mut c_void {
    let p = slot.load(Ordering::Relaxed);
    if !p.is_null() {
        return p;
    }
    let p = resolve(name, fallback, own);
    slot.store(p, Ordering::Relaxed);
    p
}

macro_rules! define_next {
    ($(
        $fam:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) err($ec:ident)
        $(bytes($cnt:ident, $dt:ident))? => $handler:tt ;
    )*) => { paste::paste! {$(
        #[doc = concat!("Calls the next definition of `", stringify!($name), "` (see module docs).")]
        ///
        /// # Safety
        /// The arguments must satisfy the MPI standard's contract for this function.
        #[inline(always)]
        pub unsafe fn $name($($arg: $ty),*) -> c_int {
            type Target = unsafe extern "C" fn($($ty),*) -> c_int;
            static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            let p = slot_target(
                &SLOT,
                // SAFETY: literal with exactly one trailing NUL.
                unsafe { CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                [<P $name>] as Target as *mut c_void,
                crate::intercept::exports::$name as Target as *mut c_void,
            );
            // SAFETY: `p` is either the PMPI function of this exact prototype or a symbol named
            // like it, which the MPI standard gives the same prototype.
            let f: Target = unsafe { std::mem::transmute::<*mut c_void, Target>(p) };
            if stats::timing_enabled() {
                let t = stats::now_ns();
                // SAFETY: forwarded unchanged; the caller upholds the MPI contract.
                let rc = unsafe { f($($arg),*) };
                stats::add_mpi_ns(stats::now_ns() - t);
                rc
            } else {
                // SAFETY: as above.
                unsafe { f($($arg),*) }
            }
        }
    )*}};
}

crate::for_each_interposed!(define_next);

/// Keeps `c_char` referenced for flavors whose list has no `argv` (silences unused import).
#[allow(dead_code)]
type _Argv = *mut *mut c_char;
