//! The event of a copy: completes once, with success or the first failure's message.

use std::sync::{Arc, Condvar, Mutex};

/// Run once when the event completes.
type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    outcome: Option<Result<(), String>>,
    /// What kind of failure (the API's error code; 0: the default, an I/O failure).
    code: i32,
    /// When it completed (for the busy time of the multi-level runtimes).
    at: Option<std::time::Instant>,
    hooks: Vec<Hook>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State").field("outcome", &self.outcome).field("code", &self.code).field("at", &self.at).finish_non_exhaustive()
    }
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
        self.settle(outcome, None);
    }

    /// Completes the event with a failure of kind `code` (an error code of the API that made it).
    pub fn fail(&self, code: i32, message: String) {
        self.settle(Err(message), Some(code));
    }

    fn settle(&self, outcome: Result<(), String>, code: Option<i32>) {
        let (m, cv) = &*self.0;
        let hooks = {
            let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
            if g.outcome.is_some() {
                return;
            }
            g.outcome = Some(outcome);
            if let Some(c) = code {
                g.code = c;
            }
            g.at = Some(std::time::Instant::now());
            cv.notify_all();
            std::mem::take(&mut g.hooks)
        };
        // Outside the lock: a hook may look at the event.
        hooks.into_iter().for_each(|h| h());
    }

    /// Runs `hook` once the event completes (now, if it has).
    pub fn on_complete(&self, hook: impl FnOnce() + Send + 'static) {
        {
            let mut g = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
            if g.outcome.is_none() {
                g.hooks.push(Box::new(hook));
                return;
            }
        }
        hook();
    }

    /// The kind of failure given to [`Event::fail`] (0 otherwise).
    pub fn code(&self) -> i32 {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner()).code
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
