//! Asynchronous positioned file I/O for the disk level: a batch of reads or writes becomes one
//! event (Sequoia used Linux AIO's `lio_listio`). Served by io_uring where the kernel offers it
//! (one ring, owned by one thread: requests are queued to it and an eventfd read kept in the ring
//! wakes it; up to [`DEPTH`] requests in flight), else by a small pool of threads with
//! `pread`/`pwrite`. Large requests are cut into pieces (in flight together); `EINTR`, `EAGAIN` and
//! short transfers are continued; end of file is an error (a transfer names bytes that exist).

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

/// I/O threads of the fallback pool; the disk is the bottleneck, not the CPU, so a few
/// requests in flight suffice.
const THREADS: usize = 4;
/// Requests in flight in the ring (plus its wake-up read).
const DEPTH: usize = 63;
/// Batches this small are done by the caller itself: waking the ring's (or a pool's) thread and
/// being woken back costs more than the copies (measured: an 8-byte read 45 us through the ring
/// on the development VM, against ~1 us in place).
const INLINE_BYTES: usize = 64 << 10;
const INLINE_OPS: usize = 16;
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

/// The process's I/O engine: the ring's queue and wake-up descriptor, or the pool.
enum Engine {
    Ring(&'static Pool, std::os::fd::OwnedFd),
    Threads(&'static Pool),
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let p: &'static Pool = Box::leak(Box::default());
        match ring::start(p) {
            Ok(wake) => Engine::Ring(p, wake),
            Err(e) => {
                log::debug!("levels: no io_uring ({e}); file I/O on a pool of {THREADS} threads");
                threads(p)
            }
        }
    })
}

/// The thread-pool engine on `p`.
fn threads(p: &'static Pool) -> Engine {
    for i in 0..THREADS {
        // A thread that cannot start leaves fewer.
        let _ = std::thread::Builder::new().name(format!("sluice-io-{i}")).spawn(move || serve(p));
    }
    Engine::Threads(p)
}

/// Which engine serves file I/O: "io_uring" or "threads".
pub fn backend() -> &'static str {
    match engine() {
        Engine::Ring(..) => "io_uring",
        Engine::Threads(_) => "threads",
    }
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
    // SAFETY: the op's memory is valid for its length until its batch completes (the caller's
    // contract of `submit`).
    unsafe { crate::transfer::runtime::positioned(op.fd, op.offset, op.mem, op.len, op.write) }
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
    submit_to(engine(), ops, keep)
}

fn submit_to(engine: &Engine, ops: Vec<Op>, keep: Arc<dyn Any + Send + Sync>) -> Event {
    if ops.len() <= INLINE_OPS && ops.iter().map(|o| o.len).sum::<usize>() <= INLINE_BYTES {
        let outcome = ops.iter().try_for_each(perform);
        drop(keep);
        return Event::done(outcome);
    }
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
    let (p, wake) = match engine {
        Engine::Ring(p, w) => (*p, Some(w)),
        Engine::Threads(p) => (*p, None),
    };
    p.queue.lock().unwrap_or_else(|e| e.into_inner()).extend(pieces.into_iter().map(|op| (batch.clone(), op)));
    match wake {
        Some(fd) => ring::wake(fd),
        None => p.ready.notify_all(),
    }
    event
}

/// The io_uring engine.
mod ring {
    use std::collections::HashMap;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::Arc;

    use io_uring::{opcode, types, IoUring};

    use super::{Batch, Op, Pool, DEPTH};

    /// The user data of the wake-up read.
    const WAKE: u64 = u64::MAX;

    /// Makes the ring and its thread; returns the descriptor that wakes it.
    pub fn start(p: &'static Pool) -> std::io::Result<OwnedFd> {
        let ring = IoUring::new((DEPTH + 1) as u32)?;
        // SAFETY: creates a descriptor we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: just created, owned here.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = wake.as_raw_fd();
        std::thread::Builder::new().name("sluice-io-ring".into()).spawn(move || run(ring, raw, p))?;
        Ok(wake)
    }

    /// Wakes the ring's thread (new requests queued).
    pub fn wake(fd: &OwnedFd) {
        let one: u64 = 1;
        // SAFETY: an 8-byte write of a local to our eventfd.
        unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// The request for the bytes of `op` from `done` on.
    fn entry(op: &Op, done: usize, id: u64) -> io_uring::squeue::Entry {
        let (fd, mem, len, off) = (types::Fd(op.fd), op.mem.wrapping_add(done), (op.len - done) as u32, op.offset + done as u64);
        if op.write {
            opcode::Write::new(fd, mem, len).offset(off).build().user_data(id)
        } else {
            opcode::Read::new(fd, mem, len).offset(off).build().user_data(id)
        }
    }

    fn run(mut ring: IoUring, wake: i32, p: &'static Pool) {
        let mut counter = Box::new(0u64);
        let mut flight: HashMap<u64, (Arc<Batch>, Op, usize)> = HashMap::new();
        let mut next = 0u64;
        let mut arm = true;
        loop {
            let mut sq: Vec<io_uring::squeue::Entry> = Vec::new();
            if arm {
                sq.push(opcode::Read::new(types::Fd(wake), (&mut *counter as *mut u64).cast(), 8).build().user_data(WAKE));
                arm = false;
            }
            {
                let mut q = p.queue.lock().unwrap_or_else(|e| e.into_inner());
                while flight.len() + sq.len() < DEPTH {
                    let Some((batch, op)) = q.pop_front() else { break };
                    let id = next;
                    next = next.wrapping_add(1) % WAKE;
                    sq.push(entry(&op, 0, id));
                    flight.insert(id, (batch, op, 0));
                }
            }
            // SAFETY: every buffer named by these requests stays valid until its completion is
            // reaped: the eventfd counter is boxed and lives as long as the thread, and an
            // operation's memory is its batch's, whose event completes only after that.
            if unsafe { ring.submission().push_multiple(&sq) }.is_err() {
                log::error!("levels: io_uring submission queue full");
            }
            if let Err(e) = ring.submit_and_wait(1) {
                if e.raw_os_error() != Some(libc::EINTR) && e.raw_os_error() != Some(libc::EBUSY) {
                    log::error!("levels: io_uring_enter: {e}");
                }
            }
            let done: Vec<(u64, i32)> = ring.completion().map(|c| (c.user_data(), c.result())).collect();
            for (id, res) in done {
                if id == WAKE {
                    arm = true;
                    continue;
                }
                let Some((batch, op, moved)) = flight.remove(&id) else { continue };
                match res {
                    n if n > 0 && moved + n as usize >= op.len => batch.finish(Ok(())),
                    n if n > 0 => {
                        // A short transfer: the rest goes back in line first.
                        let rest = moved + n as usize;
                        p.queue.lock().unwrap_or_else(|e| e.into_inner()).push_front((
                            batch,
                            Op { offset: op.offset + rest as u64, mem: op.mem.wrapping_add(rest), len: op.len - rest, ..op },
                        ));
                    }
                    0 => batch.finish(Err(format!(
                        "{} at file offset {}: end of file after {moved} of {} bytes",
                        super::io_name(&op),
                        op.offset,
                        op.len
                    ))),
                    e if -e == libc::EINTR || -e == libc::EAGAIN => p.queue.lock().unwrap_or_else(|e| e.into_inner()).push_front((
                        batch,
                        Op { offset: op.offset + moved as u64, mem: op.mem.wrapping_add(moved), len: op.len - moved, ..op },
                    )),
                    e => batch.finish(Err(format!(
                        "{} of {} bytes at file offset {}: {}",
                        super::io_name(&op),
                        op.len - moved,
                        op.offset + moved as u64,
                        std::io::Error::from_raw_os_error(-e)
                    ))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both engines: many requests (more than the ring holds), pieces of a large one, writes then
    /// reads of a file, and end of file as an error.
    #[test]
    fn both_engines_move_every_byte_and_report_end_of_file() {
        let mut engines = vec![threads(Box::leak(Box::default()))];
        let p: &'static Pool = Box::leak(Box::default());
        if let Ok(w) = ring::start(p) {
            engines.push(Engine::Ring(p, w));
        }
        for e in &engines {
            let f = tempfile();
            let fd = f.as_raw_fd();
            let n = 200 * 4096 + PIECE + 123;
            let mut data: Vec<u8> = (0..n).map(|i| (i * 7 + i / 4096) as u8).collect();
            // 200 page-sized writes, then one large one (cut into pieces).
            let mut ops: Vec<Op> = (0..200)
                .map(|k| Op { fd, offset: (k * 4096) as u64, mem: data[k * 4096..].as_mut_ptr(), len: 4096, write: true })
                .collect();
            ops.push(Op { fd, offset: 200 * 4096, mem: data[200 * 4096..].as_mut_ptr(), len: n - 200 * 4096, write: true });
            submit_to(e, ops, Arc::new(())).wait().unwrap();
            let mut back = vec![0u8; n];
            let read = vec![Op { fd, offset: 0, mem: back.as_mut_ptr(), len: n, write: false }];
            submit_to(e, read, Arc::new(())).wait().unwrap();
            assert!(back == data, "bytes differ");
            // A small batch (done by the caller) too.
            let mut few = [0u8; 100];
            let small: Vec<Op> =
                (0..4).map(|k| Op { fd, offset: 1000 * k as u64, mem: few[25 * k..].as_mut_ptr(), len: 25, write: false }).collect();
            submit_to(e, small, Arc::new(())).wait().unwrap();
            assert!((0..4).all(|k| few[25 * k..25 * k + 25] == data[1000 * k..1000 * k + 25]));
            let past = vec![Op { fd, offset: n as u64 - 10, mem: back.as_mut_ptr(), len: 20, write: false }];
            let err = submit_to(e, past, Arc::new(())).wait().unwrap_err();
            assert!(err.contains("end of file"), "{err}");
            drop(f);
        }
    }

    fn tempfile() -> std::fs::File {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-io-test-{}-{:?}", std::process::id(), std::thread::current().id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).mode(0o600).open(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        f
    }

    use std::os::fd::AsRawFd;
}
