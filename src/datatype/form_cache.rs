//! Compiled forms shared by every type of the same construction.
//!
//! Why: applications that build a type per message (BLACS, under every ScaLAPACK routine, builds,
//! commits and frees a vector type for each submatrix it sends) commit the same few shapes over
//! and over. Decoding into a dataloop, normalizing it and choosing its kernel is what a commit
//! costs sluice (perf, 2026-11-30: 1.1-3.7 us per type against the MPI's 0.3-1.3 us for the
//! whole life of a type); the type's [`signature`] (its constructors' arguments, read without
//! building anything) makes the second and later commits of a shape a
//! few MPI queries and a hash look-up. Sharing is as safe as `MPI_Type_dup`'s (one form under
//! several handles): a form holds nothing of a handle, and equal signatures decode to the same
//! dataloop (checked against a fresh decode for every random type of
//! `tests/datatype_vs_mpi.rs`). Their engine choice ([`super::choice`]) is shared too, and
//! rightly: the MPI's engine sees the same constructors.
//!
//! Bounded twice: only small types are kept ([`MAX_SIGNATURE`] numbers, so a key costs at most a
//! few KiB), and at most [`CAPACITY`] forms, least recently used evicted (an evicted form lives
//! on under the handles that hold it).

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use rustc_hash::FxBuildHasher;

use super::compiled::CompiledType;
use super::decode::{signature, typemap_decoded, DecodeError};
use super::grain::Grain;
use crate::ffi::mpi::MPI_Datatype;

/// Forms kept.
pub const CAPACITY: usize = 256;

/// Types whose signature has more numbers are decoded and compiled every time: large indexed
/// types are rarely committed twice, and would make the cache large.
pub const MAX_SIGNATURE: usize = 512;

type Forms = LruCache<Vec<i64>, Arc<CompiledType>, FxBuildHasher>;

static FORMS: Mutex<Option<Forms>> = Mutex::new(None);

/// The compiled form of the committed type `t`: the cached form of its signature, or decoded
/// ([`typemap_decoded`]) and compiled now, and kept when the type is small enough.
pub fn compiled_form(t: MPI_Datatype) -> Result<Arc<CompiledType>, DecodeError> {
    // A buffer of its own per commit, not a thread-local one: one more thread-local in the
    // library slowed every small MPI_Pack/MPI_Unpack (its look-up of the thread's last type,
    // `protocol::datatype::LAST`) by 5-10% (pack_small's struct-17B unpack, paired against the
    // previous library: 0.81-0.85 vs 0.92-0.99; with this buffer 0.99), for ~20 ns saved here.
    let mut sig = Vec::with_capacity(64);
    let found = if signature(t, MAX_SIGNATURE, &mut sig) {
        match lock().as_mut().and_then(|m| m.get(sig.as_slice()).cloned()) {
            Some(c) => (Some(c), None),
            None => (None, Some(sig)),
        }
    } else {
        (None, None)
    };
    let (hit, sig) = found;
    if let Some(c) = hit {
        return Ok(c);
    }
    // Decoded and compiled outside the lock: another thread's commit does not wait for this one.
    let (dl, decoded) = typemap_decoded(t)?;
    let c = CompiledType::new(&dl);
    let c = Arc::new(if decoded { c } else { c.with_grain(Grain::Unknown) });
    Ok(match sig {
        Some(s) => keep(s, c),
        None => c,
    })
}

/// Keeps `c` under `sig`, unless another thread kept a form there first (both are correct; the
/// first wins so that later commits share one).
fn keep(sig: Vec<i64>, c: Arc<CompiledType>) -> Arc<CompiledType> {
    let mut g = lock();
    let forms = g.get_or_insert_with(|| LruCache::with_hasher(NonZeroUsize::new(CAPACITY).expect("nonzero"), FxBuildHasher));
    Arc::clone(forms.get_or_insert(sig, || c))
}

/// Forgets every cached form (they live on under the handles that hold them).
pub fn clear() {
    *lock() = None;
}

/// Forms cached now.
#[cfg(test)]
fn len() -> usize {
    lock().as_ref().map_or(0, |m| m.len())
}

fn lock() -> std::sync::MutexGuard<'static, Option<Forms>> {
    FORMS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::ir::DataLoop;

    /// Tests that fill or clear the process-wide cache run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn form(blocklen: usize) -> Arc<CompiledType> {
        Arc::new(CompiledType::new(&DataLoop::vector(3, blocklen, 800, DataLoop::bytes(8))))
    }

    #[test]
    fn the_first_form_kept_under_a_signature_is_shared() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        clear();
        let a = keep(vec![1, 2, 3], form(8));
        let b = keep(vec![1, 2, 3], form(8));
        let c = keep(vec![1, 2, 4], form(9));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(len(), 2);
    }

    #[test]
    fn the_cache_stays_bounded_and_evicts_the_least_recently_used() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        clear();
        let first = keep(vec![0], form(1));
        for n in 1..CAPACITY as i64 {
            keep(vec![n], form(1));
        }
        assert!(Arc::ptr_eq(&first, &keep(vec![0], form(1))), "used again: now the most recent");
        keep(vec![-1], form(1));
        assert_eq!(len(), CAPACITY);
        assert!(Arc::ptr_eq(&first, &keep(vec![0], form(1))), "the most recent survives");
        let one = keep(vec![1], form(2));
        assert_eq!(one.size(), 3 * 2 * 8, "the least recent ([1]) was evicted: a new form is kept");
        assert_eq!(len(), CAPACITY);
    }
}
