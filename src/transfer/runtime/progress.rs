//! The one progress engine: a registry of everything that needs polling to move (pipelined
//! sends' chunks, pipelined receives, requests the application freed while active, device
//! requests), driven from the intercepted calls that complete or probe, from
//! `sluice_event_wait/test`, and, when the user opts in (`SLUICE_PROGRESS_THREAD=1`), from a
//! progress thread.
//!
//! Like UCX's worker progress callbacks, each subsystem owns a [`Source`]: a count of what it
//! has in flight and the function that advances it. A source registers itself the first time
//! its count rises, so the engine knows nothing of the subsystems above it (no import from the
//! protocol layer). Every count also adds to one process-wide total, so "nothing to do" — the
//! completion calls' fast path and [`drive`]'s — is a single atomic load.
//!
//! Rules (docs/architecture.md, "Progress"): a poll may call MPI (the protocol's sources do);
//! it is then called only from the application's threads, or from the progress thread, which
//! exists only when the MPI granted `MPI_THREAD_MULTIPLE`. A poll must tolerate running on any
//! thread, concurrently with the application's calls (the protocol's tables are locked), and
//! must not block. A poll that reaches an intercepted call drives the engine again underneath,
//! but never re-enters a source this thread is already polling.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

/// One subsystem's work in flight, and how to advance it.
pub struct Source {
    /// What it is ([`snapshot`]: tests and diagnostics).
    name: &'static str,
    count: AtomicUsize,
    /// `None`: the work completes through the application's own calls (requests whose finish
    /// runs in the Wait/Test family); counted only so that the fast path sees it.
    poll: Option<fn()>,
    registered: AtomicBool,
    /// Times [`drive`] polled this source.
    polls: AtomicU64,
}

/// Sources that have had work (at most [`MAX_SOURCES`]; entries are never removed).
const MAX_SOURCES: usize = 32;
static SOURCES: [AtomicPtr<Source>; MAX_SOURCES] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SOURCES];
static REGISTERED: AtomicUsize = AtomicUsize::new(0);
static REGISTER: Mutex<()> = Mutex::new(());

/// The sum of every source's count.
///
/// Raised before and lowered after the count itself, so it is never below the sum of the
/// counts: a zero total proves every count zero.
static TOTAL: AtomicUsize = AtomicUsize::new(0);

impl Source {
    pub const fn new(name: &'static str, poll: Option<fn()>) -> Source {
        Source { name, count: AtomicUsize::new(0), poll, registered: AtomicBool::new(false), polls: AtomicU64::new(0) }
    }

    /// Counts `n` more in flight.
    pub fn add(&'static self, n: usize) {
        TOTAL.fetch_add(n, Ordering::AcqRel);
        self.count.fetch_add(n, Ordering::AcqRel);
        if !self.registered.load(Ordering::Acquire) {
            self.register();
        }
        if n != 0 {
            thread::wake();
        }
    }

    /// Counts `n` fewer.
    pub fn sub(&self, n: usize) {
        self.count.fetch_sub(n, Ordering::AcqRel);
        TOTAL.fetch_sub(n, Ordering::AcqRel);
    }

    /// The count.
    #[inline]
    pub fn get(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    #[cold]
    fn register(&'static self) {
        let _g = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
        if self.registered.load(Ordering::Acquire) {
            return;
        }
        let i = REGISTERED.load(Ordering::Acquire);
        // A fixed table: the sources are statics of the subsystems, a handful in all.
        assert!(i < MAX_SOURCES, "more than {MAX_SOURCES} progress sources");
        SOURCES[i].store(self as *const Source as *mut Source, Ordering::Release);
        REGISTERED.store(i + 1, Ordering::Release);
        self.registered.store(true, Ordering::Release);
    }
}

/// The registered sources, in registration order.
fn sources() -> impl Iterator<Item = &'static Source> {
    let n = REGISTERED.load(Ordering::Acquire);
    SOURCES[..n].iter().map(|p| {
        // SAFETY: entries below REGISTERED were stored (Release) before it was raised, each a
        // `&'static Source`; they are never removed.
        unsafe { &*p.load(Ordering::Acquire) }
    })
}

/// Whether no source has anything in flight (one load).
#[inline(always)]
pub fn idle() -> bool {
    TOTAL.load(Ordering::Acquire) == 0
}

thread_local! {
    /// The sources this thread is polling now (bit i: the i-th registered source).
    static POLLING: Cell<u32> = const { Cell::new(0) };
}

/// Polls every source that has work, once each, in registration order.
#[inline]
pub fn drive() {
    if !idle() {
        drive_now();
    }
}

/// A poll that reaches an intercepted call drives the engine again underneath: the other
/// sources are polled there, the ones this thread is already inside are not (their locks are
/// held, and their outer poll goes on).
#[cold]
fn drive_now() {
    for (i, s) in sources().enumerate() {
        let (Some(poll), true) = (s.poll, s.get() != 0) else { continue };
        let bit = 1u32 << i;
        let outer = POLLING.with(|p| p.get());
        if outer & bit != 0 {
            continue;
        }
        POLLING.with(|p| p.set(outer | bit));
        struct Reset(u32);
        impl Drop for Reset {
            fn drop(&mut self) {
                let outer = self.0;
                POLLING.with(|p| p.set(outer));
            }
        }
        let _reset = Reset(outer);
        s.polls.fetch_add(1, Ordering::Relaxed);
        poll();
    }
}

/// (name, count in flight, polls so far) of every registered source (tests, diagnostics).
pub fn snapshot() -> Vec<(&'static str, usize, u64)> {
    sources().map(|s| (s.name, s.get(), s.polls.load(Ordering::Relaxed))).collect()
}

/// The progress thread (`SLUICE_PROGRESS_THREAD=1`): drives the engine while the application
/// computes, so pipelined transfers move between its MPI calls.
pub mod thread {
    use super::*;

    static RUNNING: AtomicBool = AtomicBool::new(false);
    static STOP: AtomicBool = AtomicBool::new(false);
    static HANDLE: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);
    static DRIVES: AtomicU64 = AtomicU64::new(0);
    static NUDGE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

    /// How long the thread sleeps between polls while work is in flight. A spinning thread
    /// would take a core from the application (2 cores here); 20 us is about the time of one
    /// default 128 KiB chunk at 6.5 GB/s, so the ring of chunks in flight does not run dry.
    const BUSY_NAP: Duration = Duration::from_micros(20);
    /// How long it sleeps with nothing in flight; a source that gets work wakes it at once.
    const IDLE_NAP: Duration = Duration::from_millis(50);

    /// Starts the thread (once). The caller has made sure the MPI runs at
    /// `MPI_THREAD_MULTIPLE`: the polls call MPI. `nudge`, called after each drive while work
    /// is in flight, lets the MPI progress what no source polls (a message the MPI moves by
    /// rendezvous while the source waits on shared memory).
    pub fn start(nudge: fn()) -> std::io::Result<()> {
        let _ = NUDGE.set(nudge);
        let mut h = HANDLE.lock().unwrap_or_else(|e| e.into_inner());
        if h.is_some() {
            return Ok(());
        }
        STOP.store(false, Ordering::Release);
        let t = std::thread::Builder::new().name("sluice-progress".into()).spawn(run)?;
        RUNNING.store(true, Ordering::Release);
        *h = Some(t);
        Ok(())
    }

    thread_local! {
        /// Set on the progress thread itself.
        static ON_IT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Whether the calling thread is the progress thread.
    pub fn is_current() -> bool {
        ON_IT.with(std::cell::Cell::get)
    }

    fn run() {
        ON_IT.with(|c| c.set(true));
        while !STOP.load(Ordering::Acquire) {
            if idle() {
                std::thread::park_timeout(IDLE_NAP);
                continue;
            }
            // A panic in a poll must not take the process down from a thread the application
            // does not know; the same poll runs again from the application's calls, which
            // report it the MPI way.
            let round = || {
                drive();
                if let Some(n) = NUDGE.get() {
                    n();
                }
            };
            let t0 = crate::stats::now_ns();
            if std::panic::catch_unwind(round).is_err() {
                log::error!("progress thread: a poll panicked; the thread stops, the application's calls still progress");
                break;
            }
            crate::stats::record(crate::stats::Family::ProgressThread, 0, crate::stats::now_ns() - t0, 0);
            DRIVES.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(BUSY_NAP);
        }
        RUNNING.store(false, Ordering::Release);
    }

    /// Wakes the thread from its idle sleep (a source just got work).
    #[inline]
    pub(super) fn wake() {
        if RUNNING.load(Ordering::Acquire) {
            wake_now();
        }
    }

    #[cold]
    fn wake_now() {
        if let Some(h) = HANDLE.try_lock().ok().as_ref().and_then(|h| h.as_ref()) {
            h.thread().unpark();
        }
    }

    /// Whether the thread runs.
    pub fn running() -> bool {
        RUNNING.load(Ordering::Acquire)
    }

    /// Times the thread drove the engine with work in flight.
    pub fn drives() -> u64 {
        DRIVES.load(Ordering::Relaxed)
    }

    /// Stops and joins the thread (before `MPI_Finalize` drains what is left: from then on
    /// only the finalizing thread calls MPI).
    pub fn stop() {
        let h = HANDLE.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = h {
            STOP.store(true, Ordering::Release);
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static POLLED: AtomicUsize = AtomicUsize::new(0);
    fn poll_a() {
        POLLED.fetch_add(1, Ordering::Relaxed);
        A.sub(1); // finishes one item per poll
        drive(); // re-entry skips this source
    }
    static A: Source = Source::new("test-a", Some(poll_a));
    static B: Source = Source::new("test-b", None);

    #[test]
    fn drives_sources_with_work_until_idle() {
        A.add(3);
        B.add(1);
        assert!(!idle());
        let names: Vec<_> = snapshot().into_iter().map(|(n, _, _)| n).collect();
        assert!(names.contains(&"test-a") && names.contains(&"test-b"));
        for _ in 0..3 {
            drive();
        }
        assert_eq!(POLLED.load(Ordering::Relaxed), 3);
        assert_eq!(A.get(), 0);
        drive(); // nothing left in A: not polled
        assert_eq!(POLLED.load(Ordering::Relaxed), 3);
        assert!(!idle(), "B still counts");
        B.sub(1);
        assert_eq!(B.get(), 0);
        A.add(0);
        assert_eq!(snapshot().iter().filter(|(n, _, _)| *n == "test-a").count(), 1, "registered once");
    }
}
