//! A value sluice computes once per communicator and keeps in an attribute of a keyval of its
//! own, which the MPI drops (delete callback) when the communicator is freed, however it is
//! freed; `MPI_Comm_dup` does not copy it (the duplicate computes its own). Used by
//! `comm_facts` (inter or not, world ranks) and `profile` (the profiler's rank translation).
//!
//! Why one type: attaching is the delicate part. Under `MPI_THREAD_MULTIPLE` two threads that
//! both miss the attribute of one communicator must not both set it: the second set makes the
//! MPI delete the first value while the other thread may still read it. Misses take a lock, read
//! again and set only when still absent; a value, once set, is never replaced, so readers of a
//! present value need no lock.
//!
//! Errors: asking the MPI about an invalid communicator (MPICH detects a freed handle) runs
//! `MPI_COMM_WORLD`'s error handler, and the application's call that follows runs it again. So
//! a handle that is not known to carry a value is first looked up with that handler set aside
//! (`quiet::QuietWorld`), and an invalid one is left to the application's call alone: the
//! handler runs once, as without sluice (`tests/c/p2p_conf_badcomm.c`). Known handles are kept in a
//! small direct-mapped table (set when a value is attached or found, cleared by the delete
//! callback) so that this costs nothing after a communicator's first large operation. At
//! `MPI_THREAD_MULTIPLE` the handler cannot be set aside (another thread's error would miss
//! it): there an invalid handle runs it twice.

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::quiet::QuietWorld;
use crate::ffi::{comm_key, consts, errclass, mpi};

const INVALID: c_int = mpi::MPI_KEYVAL_INVALID as c_int;

/// Values deleted so far, by every cache: a caller that remembers a value it was given (see
/// [`CommCache::with_attached`]) may use it again while this has not moved.
static DELETED: AtomicU64 = AtomicU64::new(0);

/// The count of deleted values (read it before the look-up whose value is remembered).
pub fn deletions() -> u64 {
    DELETED.load(Ordering::Acquire)
}

/// Slots of the table of handles known to carry a value.
const KNOWN_SLOTS: usize = 64;

/// One keyval whose attributes are `Box<T>`s.
pub struct CommCache<T> {
    keyval: AtomicI32,
    /// Serializes attaching (see the module comment).
    attach: Mutex<()>,
    /// Handles (`comm_key`) that carry a value, by `slot`; 0 is empty. A handle found here
    /// names a live communicator (its value's delete callback clears it before the handle can
    /// be reused), so looking it up cannot raise an error.
    known: [AtomicUsize; KNOWN_SLOTS],
    _value: PhantomData<fn() -> T>,
}

fn slot(key: usize) -> usize {
    // Handles are aligned object addresses (Open MPI) or small indexes with kind bits (MPICH).
    (key ^ (key >> 6) ^ (key >> 12)) % KNOWN_SLOTS
}

/// Copy callback: the duplicate gets no value.
unsafe extern "C" fn no_copy(
    _old: mpi::MPI_Comm,
    _keyval: c_int,
    _extra: *mut c_void,
    _value_in: *mut c_void,
    _value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the MPI passes `flag` as an `int *` to fill (MPI_Comm_copy_attr_function).
    unsafe { *flag = 0 };
    errclass::SUCCESS
}

/// Delete callback: forgets the handle, frees the value.
unsafe extern "C" fn drop_value<T>(comm: mpi::MPI_Comm, _keyval: c_int, value: *mut c_void, extra: *mut c_void) -> c_int {
    if !extra.is_null() {
        // SAFETY: `create` passes the cache itself, a `'static`, as the keyval's extra state.
        let cache = unsafe { &*extra.cast_const().cast::<CommCache<T>>() };
        let key = comm_key(comm);
        let _ = cache.known[slot(key)].compare_exchange(key, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
    if !value.is_null() {
        // Counted first: a remembered pointer stops being used before its value goes.
        DELETED.fetch_add(1, Ordering::AcqRel);
        // SAFETY: every value of a `CommCache<T>` keyval is a `Box<T>` leaked by `with` and
        // dropped only here, once, when the MPI deletes the attribute.
        drop(unsafe { Box::from_raw(value.cast::<T>()) });
    }
    errclass::SUCCESS
}

impl<T: Sync> CommCache<T> {
    pub const fn new() -> Self {
        Self {
            keyval: AtomicI32::new(INVALID),
            attach: Mutex::new(()),
            known: [const { AtomicUsize::new(0) }; KNOWN_SLOTS],
            _value: PhantomData,
        }
    }

    /// Creates the keyval (MPI is initialized). On failure returns the MPI's code; `with` then
    /// computes the value at each use.
    pub fn create(&'static self) -> Result<(), c_int> {
        let mut kv = INVALID;
        let extra = (self as *const Self).cast_mut().cast::<c_void>();
        // SAFETY: MPI is initialized; the callbacks match MPI_Comm_copy/delete_attr_function,
        // `drop_value::<T>` frees exactly the values `with` attaches, and `extra` is this
        // `'static` cache, which it only reads.
        let rc = unsafe { mpi::PMPI_Comm_create_keyval(Some(no_copy), Some(drop_value::<T>), &mut kv, extra) };
        if rc != errclass::SUCCESS {
            return Err(rc);
        }
        self.keyval.store(kv, Ordering::Release);
        Ok(())
    }

    /// Frees the keyval (finalize; values still attached are deleted with their communicators).
    pub fn free(&self) {
        let mut kv = self.keyval.swap(INVALID, Ordering::AcqRel);
        if kv != INVALID {
            // SAFETY: `kv` is the keyval `create` made and nobody has freed.
            unsafe { mpi::PMPI_Comm_free_keyval(&mut kv) };
        }
    }

    /// The attached value, if any; `Err` when the MPI refuses `comm` (invalid).
    fn attached(kv: c_int, comm: mpi::MPI_Comm) -> Result<Option<*const T>, c_int> {
        let (mut value, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
        // SAFETY: `comm` is the application's communicator of a call in progress (an invalid
        // one makes the MPI return an error); writes a `void *` and an int.
        let rc = unsafe { mpi::PMPI_Comm_get_attr(comm, kv, (&mut value as *mut *mut c_void).cast(), &mut flag) };
        if rc != errclass::SUCCESS {
            return Err(rc);
        }
        Ok((flag != 0 && !value.is_null()).then_some(value.cast::<T>().cast_const()))
    }

    /// [`Self::attached`], for a handle not known to carry a value with `MPI_COMM_WORLD`'s
    /// handler set aside (see the module comment).
    fn attached_quietly(&self, kv: c_int, comm: mpi::MPI_Comm) -> Result<Option<*const T>, c_int> {
        let key = comm_key(comm);
        if self.known[slot(key)].load(Ordering::Acquire) == key || comm == consts::comm_world() || comm == consts::comm_self() {
            return Self::attached(kv, comm);
        }
        let quiet = QuietWorld::new();
        let found = Self::attached(kv, comm);
        drop(quiet);
        if let Ok(Some(_)) = found {
            self.known[slot(key)].store(key, Ordering::Release);
        }
        found
    }

    /// Runs `f` on `comm`'s value, computed by `compute` and attached the first time. `None`
    /// for `MPI_COMM_NULL`, an invalid communicator (nothing more is asked of the MPI about it)
    /// or when `compute` fails; without a keyval the value is computed for this call only.
    pub fn with<R>(&self, comm: mpi::MPI_Comm, compute: impl FnOnce(mpi::MPI_Comm) -> Option<T>, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.with_attached(comm, compute, |v, _| f(v))
    }

    /// [`CommCache::with`], telling `f` whether the value is attached to `comm` (it then
    /// lives until `comm` is freed, which moves [`deletions`]) or only computed for this call.
    pub fn with_attached<R>(
        &self,
        comm: mpi::MPI_Comm,
        compute: impl FnOnce(mpi::MPI_Comm) -> Option<T>,
        f: impl FnOnce(&T, bool) -> R,
    ) -> Option<R> {
        if comm == consts::comm_null() {
            return None;
        }
        let kv = self.keyval.load(Ordering::Acquire);
        if kv == INVALID {
            return compute(comm).map(|v| f(&v, false));
        }
        let p = match self.attached_quietly(kv, comm).ok()? {
            Some(p) => p,
            None => {
                let _g = self.attach.lock().unwrap_or_else(|e| e.into_inner());
                match Self::attached(kv, comm).ok()? {
                    Some(p) => p,
                    None => {
                        let raw = Box::into_raw(Box::new(compute(comm)?));
                        // SAFETY: attaches the box to `comm`; from here the MPI owns it
                        // (freed by `drop_value`). No other thread sets it: we hold `attach`.
                        if unsafe { mpi::PMPI_Comm_set_attr(comm, kv, raw.cast()) } != errclass::SUCCESS {
                            // SAFETY: the MPI did not take it: still ours.
                            let b = unsafe { Box::from_raw(raw) };
                            return Some(f(&b, false));
                        }
                        let key = comm_key(comm);
                        self.known[slot(key)].store(key, Ordering::Release);
                        raw.cast_const()
                    }
                }
            }
        };
        // SAFETY: the attribute is a live `Box<T>`, never replaced, freed only when `comm` is,
        // which cannot happen during this call of the application on `comm`.
        Some(f(unsafe { &*p }, true))
    }
}
