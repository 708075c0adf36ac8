//! The exported C symbols: one per registry entry (`intercept::registry`), each a thin wrapper that
//! hands its arguments to [`guard::call`](super::guard::call).

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

#[allow(unused_imports)]
use crate::ffi::mpi::*;
use crate::ffi::{consts, next};
use crate::intercept::guard::{self, FnInfo};
use crate::intercept::profile::profile_hook;
use crate::stats::Family;

macro_rules! err_comm {
    (world) => {
        consts::comm_world()
    };
    ($c:ident) => {
        $c
    };
}

macro_rules! payload {
    () => {
        0u64
    };
    ($cnt:ident, $dt:ident) => {
        guard::payload_bytes($cnt as i64, $dt)
    };
}

macro_rules! handler {
    (forward, $name:ident $(, $a:ident)*) => {
        next::$name($($a),*)
    };
    ({ $($path:tt)* }, $name:ident $(, $a:ident)*) => {
        $($path)*($($a),*)
    };
}

macro_rules! define_exports {
    ($(
        $fam:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) err($ec:ident)
        $(bytes($cnt:ident, $dt:ident))?
        $(fast($fast:ident($($farg:ident),*)))? => $handler:tt ;
    )*) => {$(
        export! {
            $fam fn $name($($arg: $ty),*) err($ec) bytes($($cnt, $dt)?) fast($($fast($($farg),*))?) => $handler
        }
    )*};
}

/// One exported function. Without a `fast` predicate: [`guard::call`] inline. With one
/// (`protocol::p2p::fast`): its quick look first, in the exported function, which then is a
/// few loads and a tail call to the next definition, with no stack frame of its own; else, out
/// of line, its thorough look, then `guard::call`.
macro_rules! export {
    ($fam:ident fn $name:ident($($arg:ident : $ty:ty),*) err($ec:ident) bytes($($b:ident),*) fast() => $handler:tt) => {
        #[doc = concat!("Intercepted `", stringify!($name), "` (C binding).")]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            dispatch!($fam fn $name($($arg),*) err($ec) bytes($($b),*) => $handler)
        }
    };
    ($fam:ident fn $name:ident($($arg:ident : $ty:ty),*) err($ec:ident) bytes($($b:ident),*)
     fast($fast:ident($($farg:ident),*)) => $handler:tt) => {
        #[doc = concat!("Intercepted `", stringify!($name), "` (C binding).")]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            use crate::protocol::p2p::fast::{self, Look};
            // The predicate only loads atomics (it cannot panic): no `catch_unwind` needed, and
            // in `Active` mode the forwarded call is exactly what the handler would make.
            if guard::fast_path_open() && fast::$fast(Look::Quick, $($farg),*) {
                if let Some(f) = paste::paste!(next::untimed::[<resolved_ $name>]()) {
                    // SAFETY: the application's arguments, forwarded unchanged to the next
                    // definition of the same function; MPI's contract is the caller's.
                    // Untimed: statistics put sluice in `Instrumented` mode, never `Active`.
                    return unsafe { f($($arg),*) };
                }
            }
            // `extern "C"` (here and below): they cannot unwind (`guard::call` catches every
            // panic), so calling them needs no unwind edge and compiles to a tail call.
            #[inline(never)]
            unsafe extern "C" fn full($($arg: $ty),*) -> c_int {
                if guard::fast_path_open() && fast::$fast(Look::Thorough, $($farg),*) {
                    if let Some(f) = paste::paste!(next::untimed::[<resolved_ $name>]()) {
                        // SAFETY: as above.
                        return unsafe { f($($arg),*) };
                    }
                }
                // Separate, so that the thorough look runs before `dispatch`'s stack frame.
                #[inline(never)]
                unsafe extern "C" fn dispatch($($arg: $ty),*) -> c_int {
                    dispatch!($fam fn $name($($arg),*) err($ec) bytes($($b),*) => $handler)
                }
                // SAFETY: as above.
                unsafe { dispatch($($arg),*) }
            }
            // SAFETY: as above.
            unsafe { full($($arg),*) }
        }
    };
}

/// The body of an exported function: everything through [`guard::call`].
macro_rules! dispatch {
    ($fam:ident fn $name:ident($($arg:ident),*) err($ec:ident) bytes($($b:ident),*) => $handler:tt) => {{
        static INFO: FnInfo = FnInfo { name: stringify!($name), family: Family::$fam };
        guard::call(
            &INFO,
            move || err_comm!($ec),
            move || payload!($($b),*),
            // SAFETY: the application's arguments are forwarded unchanged to the next
            // definition of the same function; MPI's contract is the caller's.
            move || unsafe { next::$name($($arg),*) },
            // SAFETY: protocol handlers take the same contract as the C function.
            move || unsafe { handler!($handler, $name $(, $arg)*) },
            // Only while profiling (`Instrumented` mode): `run` calls the handler above.
            move |run: &mut dyn FnMut() -> c_int| -> c_int { profile_hook!($name, run $(, $arg)*) },
        )
    }};
}

crate::for_each_interposed!(define_exports);

/// Keeps `c_char`/`c_void` referenced for registries that do not use them.
#[allow(dead_code)]
type _Unused = (*mut c_char, *mut c_void);
