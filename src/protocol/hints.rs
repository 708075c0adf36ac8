//! Per-datatype hints for the parallel datatype engine, set by the application with
//! `MPI_Type_set_attr` on three datatype keyvals that sluice creates when it starts and frees in
//! MPI_Finalize (`sluice_type_keyval` in include/sluice.h publishes them).
//!
//! The attribute value *is* the hint, an integer stored in the `void *` itself (never a pointer
//! sluice would follow): nothing for the application to keep alive, and exactly what a Fortran
//! `MPI_TYPE_SET_ATTR(type, keyval, 1_MPI_ADDRESS_KIND, ierror)` stores, so C and Fortran set
//! hints the same way.
//!
//! - [`PARALLEL`]: 0 = never process this type in parallel; any other value = allowed (the
//!   default: the size threshold, `SLUICE_THREADS` and ε still decide).
//! - [`EPSILON`]: ε in millionths (200000 = 0.2), 1 to 10000000; replaces
//!   `SLUICE_CKPT_EPSILON` for this type. Out of range: ignored (with a warning).
//! - [`PRIORITY`]: priority of this type's checkpoint tables in the memory budget
//!   (`SLUICE_CKPT_MEMORY`); higher is evicted later, default 0; clamped to the `int` range.
//!
//! The copy callback copies the value (so `MPI_Type_dup` keeps the hints), the delete callback
//! has nothing to free. Hints are read with `PMPI_Type_get_attr` at each operation that is a
//! candidate for parallel processing (three attribute lookups against an operation of
//! `SLUICE_PARALLEL_MIN` bytes), so a hint set or deleted at any time takes effect at the next
//! MPI_Pack/MPI_Unpack, and no attribute call needs intercepting.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::ffi::{errclass, mpi};

/// `which` of the parallel on/off hint.
pub const PARALLEL: c_int = 0;
/// `which` of the ε hint.
pub const EPSILON: c_int = 1;
/// `which` of the checkpoint-priority hint.
pub const PRIORITY: c_int = 2;

/// `MPI_KEYVAL_INVALID` as `c_int` (bindgen gives it as `u32` in MPICH, `i32` in Open MPI).
pub const INVALID: c_int = mpi::MPI_KEYVAL_INVALID as c_int;

/// The keyvals, `INVALID` before start-up and after MPI_Finalize.
static KEYVALS: [AtomicI32; 3] = [const { AtomicI32::new(INVALID) }; 3];

/// ε values a hint may carry, in millionths.
const EPSILON_RANGE: std::ops::RangeInclusive<isize> = 1..=10_000_000;

/// The hints in effect for one operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hints {
    /// Parallel processing allowed.
    pub parallel: bool,
    /// ε.
    pub epsilon: f64,
    /// Checkpoint-budget priority.
    pub priority: i32,
}

/// The keyval for hint `which` ([`PARALLEL`], [`EPSILON`], [`PRIORITY`]), or [`INVALID`].
pub fn keyval(which: c_int) -> c_int {
    usize::try_from(which).ok().and_then(|i| KEYVALS.get(i)).map_or(INVALID, |k| k.load(Ordering::Acquire))
}

/// Copy callback of an attribute whose value is an integer (these hints, and the
/// communicator hints of `comm_hints`): the duplicate gets the same value. Generic over the
/// handle type, the callbacks' only difference.
pub(crate) unsafe extern "C" fn copy_value<H>(
    _old: H,
    _keyval: c_int,
    _extra: *mut c_void,
    value_in: *mut c_void,
    value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the MPI passes `value_out` as a `void **` and `flag` as an `int *` to fill
    // (MPI_Type_copy_attr_function, MPI_Comm_copy_attr_function).
    unsafe {
        *value_out.cast::<*mut c_void>() = value_in;
        *flag = 1;
    }
    errclass::SUCCESS
}

/// Delete callback of an integer attribute: nothing to free.
pub(crate) unsafe extern "C" fn delete_value<H>(_handle: H, _keyval: c_int, _value: *mut c_void, _extra: *mut c_void) -> c_int {
    errclass::SUCCESS
}

/// Creates the three keyvals (MPI is initialized; called once, from `init::start`). A
/// failure leaves that keyval `INVALID`, with a warning.
pub fn create_keyvals() {
    for (i, k) in KEYVALS.iter().enumerate() {
        let mut kv = INVALID;
        // SAFETY: MPI is initialized; the callbacks match MPI_Type_copy/delete_attr_function and
        // `kv` is a writable int.
        let rc = unsafe {
            mpi::PMPI_Type_create_keyval(
                Some(copy_value::<mpi::MPI_Datatype>),
                Some(delete_value::<mpi::MPI_Datatype>),
                &mut kv,
                std::ptr::null_mut(),
            )
        };
        if rc == errclass::SUCCESS {
            k.store(kv, Ordering::Release);
        } else {
            log::warn!("cannot create datatype hint keyval {i} (MPI error {rc}); that hint is unavailable");
        }
    }
}

/// Frees the keyvals (in MPI_Finalize, MPI still active). Attributes still set keep their
/// values until their types are freed, as MPI specifies for freed keyvals.
pub fn free_keyvals() {
    for k in &KEYVALS {
        let mut kv = k.swap(INVALID, Ordering::AcqRel);
        if kv != INVALID {
            // SAFETY: `kv` is a keyval this module created and has not freed.
            unsafe { mpi::PMPI_Type_free_keyval(&mut kv) };
        }
    }
}

/// The integer value of hint `which` on `t`, if set.
fn get(t: mpi::MPI_Datatype, which: c_int) -> Option<isize> {
    let kv = keyval(which);
    if kv == INVALID {
        return None;
    }
    let (mut value, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
    // SAFETY: `t` is a committed type the caller is using in a successful-so-far MPI_Pack or
    // MPI_Unpack; `value` receives the attribute (a `void *`) and `flag` one int.
    let rc = unsafe { mpi::PMPI_Type_get_attr(t, kv, (&mut value as *mut *mut c_void).cast(), &mut flag) };
    (rc == errclass::SUCCESS && flag != 0).then_some(value as isize)
}

/// The hints of `t`, with `epsilon` where the type sets none.
pub fn read(t: mpi::MPI_Datatype, epsilon: f64) -> Hints {
    decode(get(t, PARALLEL), get(t, EPSILON), get(t, PRIORITY), epsilon)
}

/// Hints from raw attribute values (module doc).
fn decode(parallel: Option<isize>, eps: Option<isize>, priority: Option<isize>, epsilon: f64) -> Hints {
    let epsilon = match eps {
        Some(e) if EPSILON_RANGE.contains(&e) => e as f64 / 1e6,
        Some(e) => {
            log::warn!("SLUICE_HINT_EPSILON value {e} outside 1..=10000000 (millionths) ignored");
            epsilon
        }
        None => epsilon,
    };
    Hints { parallel: parallel != Some(0), epsilon, priority: priority.map_or(0, |p| p.clamp(i32::MIN as isize, i32::MAX as isize) as i32) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_decode_as_documented() {
        let d = decode(None, None, None, 0.2);
        assert_eq!(d, Hints { parallel: true, epsilon: 0.2, priority: 0 });
        let h = decode(Some(0), Some(50_000), Some(-3), 0.2);
        assert_eq!(h, Hints { parallel: false, epsilon: 0.05, priority: -3 });
        assert!(decode(Some(7), None, None, 0.2).parallel);
        assert_eq!(decode(None, Some(0), None, 0.2).epsilon, 0.2, "out of range: default");
        assert_eq!(decode(None, Some(10_000_001), None, 0.2).epsilon, 0.2);
        assert_eq!(decode(None, None, Some(isize::MAX), 0.2).priority, i32::MAX);
    }

    #[test]
    fn keyvals_are_invalid_before_start_and_for_unknown_hints() {
        assert_eq!(keyval(-1), INVALID);
        assert_eq!(keyval(3), INVALID);
    }
}
