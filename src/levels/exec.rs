//! Children as worker threads: one thread and one queue per child (Sequoia's SMP runtime, 3.1),
//! and the completion a task call waits on.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// A job for one child.
pub type Job = Box<dyn FnOnce() + Send>;

/// Counts the children of a task call still running.
#[derive(Default)]
pub struct Completion {
    left: Mutex<usize>,
    done: Condvar,
}

impl Completion {
    pub fn new(n: usize) -> Arc<Completion> {
        Arc::new(Completion { left: Mutex::new(n), done: Condvar::new() })
    }

    /// One child returned.
    pub fn finish(&self) {
        let mut g = self.left.lock().unwrap_or_else(|e| e.into_inner());
        *g -= 1;
        if *g == 0 {
            self.done.notify_all();
        }
    }

    pub fn wait(&self) {
        let mut g = self.left.lock().unwrap_or_else(|e| e.into_inner());
        while *g > 0 {
            g = self.done.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn is_done(&self) -> bool {
        *self.left.lock().unwrap_or_else(|e| e.into_inner()) == 0
    }
}

/// One thread per child, each serving its own queue in order.
pub struct Workers {
    queues: Vec<Sender<Job>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    /// Starts `n` threads named `<name>-<i>`.
    pub fn start(n: usize, name: &str) -> Result<Workers, String> {
        let mut queues = Vec::with_capacity(n);
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = channel::<Job>();
            let t = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .map_err(|e| format!("cannot start child thread {i}: {e}"))?;
            queues.push(tx);
            threads.push(t);
        }
        Ok(Workers { queues, threads: Mutex::new(threads) })
    }

    /// Queues `job` on child `i`'s thread.
    pub fn run(&self, i: usize, job: Job) {
        // A send fails only once the thread is gone (after stop): the job is dropped then.
        let _ = self.queues[i].send(job);
    }

    /// Lets every thread finish its queue and joins them (not from a child's own thread).
    pub fn stop(&mut self) {
        self.queues.clear();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let me = std::thread::current().id();
        // A child that drops the last reference to its runtime stops it from its own thread:
        // that thread is left to end by itself (its queue is closed).
        for t in threads.into_iter().filter(|t| t.thread().id() != me) {
            let _ = t.join();
        }
    }
}
