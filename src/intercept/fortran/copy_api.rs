//! The copy API for Fortran (`use sluice`, include/sluice.f90): places whose datatype is a
//! Fortran handle are translated to C places here, then served by the C entry points; events
//! (`type(c_ptr)`) and the other calls bind to the C functions directly.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::convert::type_f2c;
use crate::ffi::{mpi, Fint};
use crate::intercept::api::{api, sluice_copy, sluice_plan_explain};
use crate::protocol::copy::{self, CPlace, Refused};
use crate::transfer::runtime::Event;

/// `sluice_fplace` of include/sluice.f90 (a `bind(C)` derived type): `sluice_place_t` with
/// 64-bit offset and count and a Fortran datatype handle (`dt%MPI_VAL` with `mpi_f08`).
#[repr(C)]
pub struct FPlace {
    kind: c_int,
    base: *mut c_void,
    fd: c_int,
    offset: i64,
    count: i64,
    datatype: Fint,
}

/// The C place of `p`, if `p` is not null.
///
/// # Safety
/// `p` is null or points to an `FPlace`.
unsafe fn c_place(p: *const FPlace) -> Option<CPlace> {
    // SAFETY: see above.
    let p = unsafe { p.as_ref() }?;
    Some(CPlace {
        kind: p.kind,
        base: p.base,
        fd: p.fd,
        offset: p.offset as mpi::MPI_Offset,
        count: p.count as mpi::MPI_Count,
        // SAFETY: a Fortran handle the application passed; an invalid one maps to a handle the
        // copy API refuses (SLUICE_ERR_TYPE) or to MPI_DATATYPE_NULL.
        datatype: unsafe { type_f2c(&p.datatype) },
    })
}

/// A pointer to `p`'s place, or null.
fn ptr(p: &Option<CPlace>) -> *const CPlace {
    p.as_ref().map_or(std::ptr::null(), |p| p as *const CPlace)
}

/// `sluice_copy` for Fortran places.
///
/// # Safety
/// As `sluice_copy`, with `FPlace` pointers.
#[no_mangle]
pub unsafe extern "C" fn sluice_copy_f(src: *const FPlace, dst: *const FPlace, priority: c_int, event: *mut *mut Event) -> c_int {
    api(copy::code::ERR_ARG, || {
        // SAFETY: forwarded contract.
        let (s, d) = unsafe { (c_place(src), c_place(dst)) };
        // SAFETY: null or valid places; the rest forwarded.
        unsafe { sluice_copy(ptr(&s), ptr(&d), priority, event) }
    })
}

/// `sluice_plan_explain` for Fortran places.
///
/// # Safety
/// As `sluice_plan_explain`, with `FPlace` pointers.
#[no_mangle]
pub unsafe extern "C" fn sluice_plan_explain_f(src: *const FPlace, dst: *const FPlace, text: *mut c_char, size: c_int) -> c_int {
    api(copy::code::ERR_ARG, || {
        // SAFETY: forwarded contract.
        let (s, d) = unsafe { (c_place(src), c_place(dst)) };
        // SAFETY: null or valid places; the rest forwarded.
        unsafe { sluice_plan_explain(ptr(&s), ptr(&d), text, size) }
    })
}

/// `sluice_file_open`: a file descriptor for a file place (include/sluice.h), or an error code.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn sluice_file_open(path: *const c_char, flags: c_int) -> c_int {
    api(copy::code::ERR_ARG, || {
        let r = if path.is_null() {
            Err(Refused(copy::code::ERR_ARG, "null path".into()))
        } else {
            // SAFETY: non-null, NUL-terminated (see above).
            copy::open_file(unsafe { CStr::from_ptr(path) }, flags)
        };
        r.unwrap_or_else(|Refused(code, message)| {
            log::warn!("sluice_file_open: {message}");
            code
        })
    })
}

/// `sluice_file_close`: closes a descriptor from `sluice_file_open`; 0 or `SLUICE_ERR_IO`.
#[no_mangle]
pub extern "C" fn sluice_file_close(fd: c_int) -> c_int {
    api(copy::code::ERR_IO, || {
        // SAFETY: close(2) on any integer is safe to call; a bad descriptor returns EBADF.
        if unsafe { libc::close(fd) } == 0 {
            copy::code::SUCCESS
        } else {
            log::warn!("sluice_file_close: {}", std::io::Error::last_os_error());
            copy::code::ERR_IO
        }
    })
}
