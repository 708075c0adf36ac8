//! The event of a copy: completes once, with success or the first failure's message.

use std::sync::{Arc, Condvar, Mutex};

#[derive(Default, Debug)]
struct State {
    outcome: Option<Result<(), String>>,
    /// What kind of failure (the API's error code; 0: the default, an I/O failure).
    code: i32,
    /// When it completed (for the busy time of the multi-level runtimes).
    at: Option<std::time::Instant>,
}

/// A copy's completion; clones refer to the same event.
#[derive(Clone, Default, Debug)]
pub struct Event(Arc<(Mutex<State>, Condvar)>);

impl Event {
    pub fn new() -> Event {
        Event::default()
    }

    /// An event that is already complete.
    pub fn done(outcome: Result<(), String>) -> Event {
        let e = Event::new();
        e.complete(outcome);
        e
    }

    /// Completes the event (the first completion counts).
    pub fn complete(&self, outcome: Result<(), String>) {
        let (m, cv) = &*self.0;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        if g.outcome.is_none() {
            g.outcome = Some(outcome);
            g.at = Some(std::time::Instant::now());
            cv.notify_all();
        }
    }

    /// Completes the event with a failure of kind `code` (an error code of the API that made it).
    pub fn fail(&self, code: i32, message: String) {
        let (m, cv) = &*self.0;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        if g.outcome.is_none() {
            g.outcome = Some(Err(message));
            g.code = code;
            g.at = Some(std::time::Instant::now());
            cv.notify_all();
        }
    }

    /// The kind of failure given to [`Event::fail`] (0 otherwise).
    pub fn code(&self) -> i32 {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner()).code
    }

    /// When the event completed, if it did.
    pub fn completed_at(&self) -> Option<std::time::Instant> {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner()).at
    }

    /// The outcome, if complete.
    pub fn test(&self) -> Option<Result<(), String>> {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner()).outcome.clone()
    }

    /// Waits for the outcome.
    pub fn wait(&self) -> Result<(), String> {
        let (m, cv) = &*self.0;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = &g.outcome {
                return o.clone();
            }
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}
