//! Priorities among this process's pipelined receives (the `sluice_priority` communicator key,
//! `protocol::comm_hints`): a transfer of higher priority goes ahead of lower ones on the
//! channels they share here, at chunk granularity (isometry, Section 5.1, for MPI traffic).
//!
//! The receiver is where sluice holds a queue: the sender packs and posts every chunk inside
//! the application's send call (docs/protocol.md, rule 1), while the receiver decides when it
//! posts the next chunk receives (which, for the MPI's rendezvous, is when their data crosses
//! the network) and when it unpacks what arrived or what the arena holds. Two rules:
//!
//! 1. **Deferral.** While a receive of higher priority is under way ([`Busy`]), a
//!    nonblocking receive of lower priority posts no chunk receive and unpacks nothing
//!    ([`Busy::outranked`]). Bounded: once the higher-priority transfers have made no progress
//!    for [`STALL_NS`] (their sender is slow, or not progressing its MPI), lower ones move
//!    again, so a priority can delay a receive but never hang one. A blocking receive is never
//!    deferred (the application waits for that message).
//! 2. **Sweeps.** A completion call's pass over the tracked receives (its progress and then
//!    its own requests) takes them by priority, and once a receive of priority `p` completed in
//!    the pass, receives below `p` are left for the next pass ([`sweep_skips`]): the call can
//!    return the urgent one without first unpacking every other message that is there.
//!
//! With no key set every receive has priority 0, nothing is deferred or skipped, and the cost
//! is one relaxed load per chunk step and a thread-local write per completed receive.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// How long the higher-priority transfers may make no progress before lower ones move again.
/// Long enough to cover one chunk's arrival on a slow link (a 256 KiB chunk at 1 Gbit/s takes
/// ~2 ms), short enough that a stalled sender costs lower receives little.
const STALL_NS: u64 = 5_000_000;

/// No receive under way.
const NONE: i64 = i64::MIN;

/// Receives under way, per priority (few distinct priorities: a short list).
static LEVELS: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());
/// The highest priority among receives under way ([`NONE`] when none).
static TOP: AtomicI64 = AtomicI64::new(NONE);
/// When a receive at [`TOP`] last made progress (ns, `stats::now_ns`).
static TOP_MOVED: AtomicU64 = AtomicU64::new(0);

/// A pipelined receive under way, counted at its priority until dropped.
#[derive(Debug)]
pub struct Busy {
    priority: i32,
}

impl Busy {
    /// Counts a receive of `priority` as under way.
    pub fn enter(priority: i32) -> Busy {
        let mut g = LEVELS.lock().unwrap_or_else(|e| e.into_inner());
        match g.iter_mut().find(|(p, _)| *p == priority) {
            Some((_, n)) => *n += 1,
            None => g.push((priority, 1)),
        }
        publish_top(&g);
        let b = Busy { priority };
        b.moved();
        b
    }

    /// Whether a receive of higher priority is under way and moved recently: this one waits.
    #[inline]
    pub fn outranked(&self) -> bool {
        let top = TOP.load(Ordering::Relaxed);
        top > self.priority as i64 && crate::stats::now_ns().saturating_sub(TOP_MOVED.load(Ordering::Relaxed)) < STALL_NS
    }

    /// This receive made progress (landed or unpacked bytes).
    #[inline]
    pub fn moved(&self) {
        if TOP.load(Ordering::Relaxed) <= self.priority as i64 {
            TOP_MOVED.store(crate::stats::now_ns(), Ordering::Relaxed);
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut g = LEVELS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = g.iter().position(|(p, _)| *p == self.priority) {
            g[i].1 -= 1;
            if g[i].1 == 0 {
                g.swap_remove(i);
            }
        }
        publish_top(&g);
    }
}

fn publish_top(levels: &[(i32, usize)]) {
    let top = levels.iter().map(|&(p, _)| p as i64).max().unwrap_or(NONE);
    if top > TOP.swap(top, Ordering::Relaxed) {
        // A new, higher level starts its stall clock now.
        TOP_MOVED.store(crate::stats::now_ns(), Ordering::Relaxed);
    }
}

thread_local! {
    /// The highest priority of a receive completed in this thread's current sweep.
    static SWEEP_DONE: Cell<i64> = const { Cell::new(NONE) };
}

/// A completion call starts a pass over the tracked receives.
#[inline]
pub fn sweep_start() {
    SWEEP_DONE.with(|c| c.set(NONE));
}

/// A receive of `priority` completed in this thread's sweep.
#[inline]
pub fn sweep_finished(priority: i32) {
    SWEEP_DONE.with(|c| c.set(c.get().max(priority as i64)));
}

/// Whether this thread's sweep leaves a receive of `priority` for the next one.
#[inline]
pub fn sweep_skips(priority: i32) -> bool {
    SWEEP_DONE.with(|c| c.get() > priority as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the levels are process-wide.
    #[test]
    fn lower_receives_wait_while_a_higher_one_moves_and_not_after() {
        let low = Busy::enter(0);
        assert!(!low.outranked(), "alone");
        let high = Busy::enter(3);
        assert!(low.outranked() && !high.outranked());
        let same = Busy::enter(3);
        assert!(!same.outranked(), "equal priorities do not wait for each other");
        drop(high);
        assert!(low.outranked(), "a receive of priority 3 is still under way");
        // A stalled higher level stops holding lower ones back.
        TOP_MOVED.store(crate::stats::now_ns() - 2 * STALL_NS, Ordering::Relaxed);
        assert!(!low.outranked(), "stalled");
        same.moved();
        assert!(low.outranked(), "moving again");
        drop(same);
        assert!(!low.outranked(), "nothing above");
        drop(low);
        assert_eq!(TOP.load(Ordering::Relaxed), NONE);

        sweep_start();
        assert!(!sweep_skips(0));
        sweep_finished(0);
        assert!(!sweep_skips(0), "equal priorities are not skipped");
        sweep_finished(2);
        assert!(sweep_skips(1) && !sweep_skips(2));
        sweep_start();
        assert!(!sweep_skips(-5));
    }
}
