//! The exported C symbols: one per registry entry (`ffi::interposed`), each a thin wrapper that
//! hands its arguments to [`guard::call`](super::guard::call).

// MPI signatures have as many arguments as the standard gives them.
#![allow(clippy::too_many_arguments, non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

#[allow(unused_imports)]
use crate::ffi::mpi::*;
use crate::ffi::{consts, next};
use crate::intercept::guard::{self, FnInfo};
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
        $(bytes($cnt:ident, $dt:ident))? => $handler:tt ;
    )*) => {$(
        #[doc = concat!("Intercepted `", stringify!($name), "` (C binding).")]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            static INFO: FnInfo = FnInfo { name: stringify!($name), family: Family::$fam };
            guard::call(
                &INFO,
                move || err_comm!($ec),
                move || payload!($($cnt, $dt)?),
                // SAFETY: the application's arguments are forwarded unchanged to the next
                // definition of the same function; MPI's contract is the caller's.
                move || unsafe { next::$name($($arg),*) },
                // SAFETY: protocol handlers take the same contract as the C function.
                move || unsafe { handler!($handler, $name $(, $arg)*) },
            )
        }
    )*};
}

crate::for_each_interposed!(define_exports);

/// Keeps `c_char`/`c_void` referenced for registries that do not use them.
#[allow(dead_code)]
type _Unused = (*mut c_char, *mut c_void);
