//! A persistent worker pool for parallel datatype processing: long-lived threads parked on a
//! condition variable, woken per operation, instead of spawning scoped threads every time (a
//! spawn costs tens of µs against operations of 100-250 µs).
//!
//! [`Pool::try_run`]`(workers, f)` runs `f(0)`, ..., `f(workers - 1)` once each and returns
//! when all have returned: the calling thread takes indices too, `workers - 1` pool threads take
//! the others (an index goes to whichever participant asks first, so a thread may run several
//! and every index runs on exactly one thread). Threads are started lazily, on the first call
//! that needs them, and kept; [`Pool::shutdown`] joins them (sluice calls it in MPI_Finalize
//! for the [`global`] pool); a later call starts fresh ones.
//!
//! Thread safety: one operation at a time per pool. A second caller (another application thread
//! under MPI_THREAD_MULTIPLE, or `f` itself calling back into the pool) does not wait:
//! `try_run` returns `false` without running anything and the caller processes serially. So
//! the pool never deadlocks and never blocks one application thread behind another's operation.
//! Pool threads never call MPI.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;

/// Time for the pool to wake its threads (a futex wake and a context switch), seconds: the
/// scheduling overhead that ε weighs against each worker's share of an operation
/// ([`crate::datatype::checkpoint::IntervalModel::start_within_epsilon`]). A conservative
/// estimate for a loaded machine; docs/benchmarks.md (RW-CP section) has the measured value.
pub const T_WAKE: f64 = 10e-6;

/// One operation, on the stack of the calling thread; pool threads reach it through a raw
/// pointer only between its publication and their check-in (see [`Pool::try_run`]).
struct Job<'f> {
    f: &'f (dyn Fn(usize) + Sync),
    next: AtomicUsize,
    workers: usize,
    panicked: AtomicBool,
}

impl Job<'_> {
    /// Takes indices until none is left; a panic in `f` is recorded, not propagated.
    fn participate(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.workers {
                return;
            }
            if catch_unwind(AssertUnwindSafe(|| (self.f)(i))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The published job pointer (lifetime erased; see the SAFETY comments where it is used).
#[derive(Clone, Copy)]
struct JobPtr(*const Job<'static>);
// SAFETY: a `Job` is `Sync` (`f` is `Sync`, the rest atomics); the pointer is dereferenced only
// while the publishing thread waits for every helper's check-in (`Pool::try_run`).
unsafe impl Send for JobPtr {}

#[derive(Default)]
struct State {
    /// Incremented per published job; a thread runs each generation at most once.
    generation: u64,
    job: Option<JobPtr>,
    /// Pool threads `0..helpers` take part in the current job.
    helpers: usize,
    /// Helpers that have not checked in yet.
    pending: usize,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is published or at shutdown.
    work: Condvar,
    /// Signalled when the last helper checks in.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent (no user code runs under the lock).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A pool of parked worker threads (module doc).
pub struct Pool {
    shared: Arc<Shared>,
    /// Held for the whole of an operation; `try_lock` failing means busy.
    busy: Mutex<Vec<JoinHandle<()>>>,
}

impl Default for Pool {
    fn default() -> Self {
        Self::new()
    }
}

impl Pool {
    /// An empty pool (threads start on first use).
    pub fn new() -> Self {
        Pool {
            shared: Arc::new(Shared { state: Mutex::new(State::default()), work: Condvar::new(), done: Condvar::new() }),
            busy: Mutex::new(Vec::new()),
        }
    }

    /// Threads started so far.
    pub fn threads(&self) -> usize {
        self.busy.lock().map_or(0, |t| t.len())
    }

    /// Runs `f(0..workers)` on the calling thread and `workers - 1` pool threads (module doc);
    /// returns `false`, having run nothing, when the pool is busy with another operation or
    /// cannot start a thread. A panic in any `f(i)` is re-raised here after every index ran.
    pub fn try_run(&self, workers: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
        if workers <= 1 {
            (0..workers).for_each(f);
            return true;
        }
        let mut threads = match self.busy.try_lock() {
            Ok(t) => t,
            Err(std::sync::TryLockError::WouldBlock) => return false,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        };
        let helpers = workers - 1;
        // A new thread must see the next generation as new, however late it first locks.
        let current = self.shared.lock().generation;
        while threads.len() < helpers {
            let (shared, id) = (self.shared.clone(), threads.len());
            match std::thread::Builder::new().name(format!("sluice-ddt-{}", id + 1)).spawn(move || worker(&shared, id, current)) {
                Ok(h) => threads.push(h),
                Err(e) => {
                    log::warn!("cannot start a datatype worker thread ({e}); processing serially");
                    return false;
                }
            }
        }
        let job = Job { f, next: AtomicUsize::new(0), workers, panicked: AtomicBool::new(false) };
        {
            let mut st = self.shared.lock();
            st.generation += 1;
            st.job = Some(JobPtr((&job as *const Job<'_>).cast()));
            st.helpers = helpers;
            st.pending = helpers;
        }
        self.shared.work.notify_all();
        // Waits for every helper even if this thread's own part panics (it cannot: `participate`
        // catches), so `job` outlives every use of the published pointer.
        struct WaitHelpers<'a>(&'a Shared);
        impl Drop for WaitHelpers<'_> {
            fn drop(&mut self) {
                let mut st = self.0.lock();
                while st.pending > 0 {
                    st = self.0.done.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                st.job = None;
            }
        }
        let wait = WaitHelpers(&self.shared);
        job.participate();
        drop(wait);
        drop(threads);
        if job.panicked.load(Ordering::Relaxed) {
            panic!("a datatype worker panicked");
        }
        true
    }

    /// Stops and joins every pool thread (waits for a running operation first). The pool can
    /// be used again afterwards: threads start anew.
    pub fn shutdown(&self) {
        let mut threads = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        self.shared.lock().shutdown = true;
        self.shared.work.notify_all();
        for h in threads.drain(..) {
            let _ = h.join();
        }
        self.shared.lock().shutdown = false;
    }
}

/// Body of pool thread `id`: park until a job that includes it, take part, check in. `seen`:
/// the generation current when the thread was started.
fn worker(shared: &Shared, id: usize, mut seen: u64) {
    loop {
        let job = {
            let mut st = shared.lock();
            loop {
                if st.shutdown {
                    return;
                }
                if st.generation != seen {
                    seen = st.generation;
                    if id < st.helpers {
                        break st.job.expect("a published generation has a job");
                    }
                }
                st = shared.work.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        // SAFETY: the publishing thread keeps the `Job` alive, and the closure it borrows, until
        // `pending` reaches 0, and this thread is one of the `helpers` it waits for (checked under
        // the lock above; it checks in below, after its last use of `job`).
        unsafe { &*job.0 }.participate();
        let mut st = shared.lock();
        st.pending -= 1;
        if st.pending == 0 {
            shared.done.notify_all();
        }
    }
}

/// The process-wide pool sluice's datatype engine uses.
pub fn global() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(Pool::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_index_runs_once() {
        let pool = Pool::new();
        for workers in [0usize, 1, 2, 3, 5, 2, 8] {
            let hits: Vec<AtomicU64> = (0..workers).map(|_| AtomicU64::new(0)).collect();
            assert!(pool.try_run(workers, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            }));
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "{workers}");
        }
        assert_eq!(pool.threads(), 7, "threads are kept and only added when needed");
        pool.shutdown();
        assert_eq!(pool.threads(), 0);
        // Usable again after shutdown.
        let n = AtomicU64::new(0);
        assert!(pool.try_run(3, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        }));
        assert_eq!(n.load(Ordering::Relaxed), 3);
        pool.shutdown();
    }

    #[test]
    fn a_busy_pool_declines_instead_of_waiting() {
        let pool = Pool::new();
        let inner = AtomicU64::new(0);
        assert!(pool.try_run(2, &|_| {
            // Re-entering the pool from inside an operation: declined, no deadlock.
            if !pool.try_run(2, &|_| {}) {
                inner.fetch_add(1, Ordering::Relaxed);
            }
        }));
        assert_eq!(inner.load(Ordering::Relaxed), 2);
        pool.shutdown();
    }

    #[test]
    fn concurrent_callers_all_complete() {
        let pool = Pool::new();
        let total = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let f = |_| {
                            total.fetch_add(1, Ordering::Relaxed);
                        };
                        if !pool.try_run(3, &f) {
                            (0..3).for_each(f);
                        }
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 200 * 3);
        pool.shutdown();
    }

    #[test]
    fn a_worker_panic_reaches_the_caller_and_the_pool_survives() {
        let pool = Pool::new();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.try_run(4, &|i| {
                if i == 3 {
                    panic!("boom");
                }
            })
        }));
        assert!(r.is_err());
        let n = AtomicU64::new(0);
        assert!(pool.try_run(4, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        }));
        assert_eq!(n.load(Ordering::Relaxed), 4);
        pool.shutdown();
    }

    /// Not a check: prints the pool's round trip (wake the helpers, run nothing, wait for them)
    /// for docs/benchmarks.md. `cargo test --release --lib pool::tests::round_trip -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn round_trip() {
        let pool = Pool::new();
        for workers in [2usize, 4] {
            let mut t: Vec<f64> = (0..2000)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    assert!(pool.try_run(workers, &|_| {}));
                    t0.elapsed().as_secs_f64()
                })
                .collect();
            t.sort_by(f64::total_cmp);
            let mut spawn: Vec<f64> = (0..200)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    std::thread::scope(|s| {
                        for _ in 1..workers {
                            s.spawn(|| {});
                        }
                    });
                    t0.elapsed().as_secs_f64()
                })
                .collect();
            spawn.sort_by(f64::total_cmp);
            let spawn = spawn[spawn.len() / 2];
            println!(
                "P={workers}: pool round trip median {:.1} us, p90 {:.1} us; scoped spawn+join median {:.1} us",
                t[t.len() / 2] * 1e6,
                t[t.len() * 9 / 10] * 1e6,
                spawn * 1e6
            );
        }
        pool.shutdown();
    }
}
