//! The C-ABI interception layer: exported `MPI_*` symbols (C), Fortran entry points, and
//! sluice's own extension API (`include/sluice.h`). It only translates and forwards: every call
//! goes through [`guard::call`], the single dispatch point, into a protocol handler or straight
//! to the next definition.

pub mod api;
pub mod exports;
pub mod fortran;
pub mod guard;

macro_rules! define_name_list {
    ($(
        $fam:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) err($ec:ident)
        $(bytes($cnt:ident, $dt:ident))?
        $(fast($fast:ident($($farg:ident),*)))? => $handler:tt ;
    )*) => {
        /// Every intercepted C function name (the registry in `ffi::interposed`).
        pub const INTERCEPTED: &[&str] = &[$( stringify!($name) ),*];
    };
}

crate::for_each_interposed!(define_name_list);

/// Whether `name` is an intercepted C function (used to validate `SLUICE_TEST_PANIC`).
pub fn is_intercepted(name: &str) -> bool {
    INTERCEPTED.contains(&name)
}
