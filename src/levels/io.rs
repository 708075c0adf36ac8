//! Asynchronous positioned file I/O for the disk level: a batch of reads or writes becomes one
//! event, served by a small pool of I/O threads with `pread`/`pwrite` (the thread-pool form of
//! asynchronous I/O; Sequoia used Linux AIO's `lio_listio`). Large requests are cut into pieces
//! so that the threads share one big transfer; `EINTR` and short transfers are continued.

use std::any::Any;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::transfer::runtime::Event;

/// One positioned read (file to memory) or write (memory to file).
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub fd: RawFd,
    pub offset: u64,
    pub mem: *mut u8,
    pub len: usize,
    pub write: bool,
}

// SAFETY: the memory is the application's (or a top's storage kept alive by the batch), valid
// until the batch's event completes, which is the API's rule for transfers.
unsafe impl Send for Op {}

/// I/O threads; the disk is the bottleneck, not the CPU, so a few requests in flight suffice.
const THREADS: usize = 4;
/// Largest piece one thread moves at once.
const PIECE: usize = 4 << 20;

struct Batch {
    event: Event,
    left: AtomicUsize,
    error: Mutex<Option<String>>,
    /// What must outlive the I/O (the file, the top's storage).
    _keep: Arc<dyn Any + Send + Sync>,
}

impl Batch {
    fn finish(&self, outcome: Result<(), String>) {
        if let Err(e) = outcome {
            self.error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
        }
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            match self.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
                Some(e) => self.event.complete(Err(e)),
                None => self.event.complete(Ok(())),
            }
        }
    }
}

#[derive(Default)]
struct Pool {
    queue: Mutex<VecDeque<(Arc<Batch>, Op)>>,
    ready: Condvar,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let p: &'static Pool = Box::leak(Box::default());
        for i in 0..THREADS {
            // A thread that cannot start leaves fewer; none at all is reported by `submit`.
            let _ = std::thread::Builder::new().name(format!("sluice-io-{i}")).spawn(move || serve(p));
        }
        p
    })
}

fn serve(p: &'static Pool) {
    loop {
        let (batch, op) = {
            let mut q = p.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(job) = q.pop_front() {
                    break job;
                }
                q = p.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        batch.finish(perform(&op));
    }
}

/// Moves all of `op`'s bytes.
fn perform(op: &Op) -> Result<(), String> {
    let mut done = 0usize;
    while done < op.len {
        let (mem, len, off) = (op.mem.wrapping_add(done), op.len - done, (op.offset + done as u64) as libc::off_t);
        // SAFETY: `mem .. mem + len` lies in the op's memory (the caller's contract); positioned
        // I/O on a descriptor the batch keeps open.
        let n = unsafe {
            if op.write {
                libc::pwrite(op.fd, mem.cast(), len, off)
            } else {
                libc::pread(op.fd, mem.cast(), len, off)
            }
        };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(format!("{} at file offset {off}: end of file after {done} of {} bytes", io_name(op), op.len)),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(format!("{} of {len} bytes at file offset {off}: {e}", io_name(op)));
                }
            }
        }
    }
    Ok(())
}

fn io_name(op: &Op) -> &'static str {
    if op.write {
        "pwrite"
    } else {
        "pread"
    }
}

/// Starts `ops` (in any order, concurrently); the event completes when all are done, with the
/// first failure if any. `keep` is dropped after the last one.
pub fn submit(ops: Vec<Op>, keep: Arc<dyn Any + Send + Sync>) -> Event {
    let mut pieces = Vec::with_capacity(ops.len());
    for op in ops {
        let mut at = 0;
        while at < op.len {
            let n = PIECE.min(op.len - at);
            pieces.push(Op { offset: op.offset + at as u64, mem: op.mem.wrapping_add(at), len: n, ..op });
            at += n;
        }
    }
    let event = Event::new();
    if pieces.is_empty() {
        event.complete(Ok(()));
        return event;
    }
    let batch = Arc::new(Batch { event: event.clone(), left: AtomicUsize::new(pieces.len()), error: Mutex::new(None), _keep: keep });
    let p = pool();
    let mut q = p.queue.lock().unwrap_or_else(|e| e.into_inner());
    q.extend(pieces.into_iter().map(|op| (batch.clone(), op)));
    p.ready.notify_all();
    event
}
