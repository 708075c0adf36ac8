//! Barriers among ranges of a runtime's children (children that share this process).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

/// Arrivals per range: (arrived in this round, round number).
#[derive(Default)]
pub struct RangeBarrier {
    rounds: Mutex<HashMap<(usize, usize), (usize, u64)>>,
    released: Condvar,
}

impl RangeBarrier {
    /// Waits until every child of `start .. end` arrived (the caller is one of them).
    pub fn wait(&self, start: usize, end: usize) {
        let n = end - start;
        let mut g = self.rounds.lock().unwrap_or_else(|e| e.into_inner());
        let round = {
            let r = g.entry((start, end)).or_insert((0, 0));
            r.0 += 1;
            if r.0 == n {
                *r = (0, r.1 + 1);
                self.released.notify_all();
                return;
            }
            r.1
        };
        while g.get(&(start, end)).is_some_and(|r| r.1 == round) {
            g = self.released.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}
