//! The cluster level's transfers where the MPI gives no one-sided window (Open MPI 4.1 between
//! nodes over TCP at `MPI_THREAD_MULTIPLE`): gets and puts as messages, served by a thread of the
//! owning rank on a communicator of their own.
//!
//! A request is a header `[kind, tag, address, length]` to the owner; the data travels on a tag of
//! its own (one per operation in flight, so operations of several threads never take each other's
//! data): a get's reply straight from the owner's memory into a receive the initiator posted
//! before asking, a put's payload straight from the initiator's buffer into the owner's memory,
//! then a one-word acknowledgement. The owner checks that the range lies inside its own share of
//! an array before touching it; a refused get is answered with no data, a refused put's payload
//! is received into scratch memory and acknowledged as refused. The same thread completes the
//! initiator's operations (tests their requests) and completes their events.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::ffi::{consts, mpi};
use crate::transfer::runtime::Event;

const REQ: c_int = 1;
/// Data tags are `TAG0 + (operation id mod TAGS)`.
const TAG0: c_int = 16;
const TAGS: u64 = 30_000;
const GET: u64 = 0;
const PUT: u64 = 1;
/// The largest piece one message moves (counts are `int`).
pub const PIECE_MAX: usize = 1 << 30;

/// One operation of this process in flight.
struct Op {
    reqs: Vec<mpi::MPI_Request>,
    event: Event,
    /// A get: the bytes expected (the reply's size is checked). A put: the acknowledgement.
    len: usize,
    ack: Option<Box<u64>>,
    header: Box<[u64; 4]>,
    status: Box<mpi::MPI_Status>,
    rank: usize,
}

pub struct Server {
    comm: mpi::MPI_Comm,
    /// Address ranges of this process's shares of arrays: the only memory others may touch.
    shares: Mutex<Vec<(u64, usize)>>,
    ops: Mutex<Vec<Op>>,
    next: AtomicU64,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

// SAFETY: MPI handles and requests are opaque values used at MPI_THREAD_MULTIPLE; requests and
// the buffers they name are used under `ops`' lock only.
unsafe impl Send for Server {}
// SAFETY: as above.
unsafe impl Sync for Server {}
// SAFETY: as above (an operation moves between threads inside the lock).
unsafe impl Send for Op {}

impl Server {
    /// Starts the server (collective: duplicates the world communicator).
    pub fn start() -> Result<Arc<Server>, String> {
        let mut comm = consts::comm_null();
        // SAFETY: collective duplicate; out-parameter ours.
        unsafe { mpi::PMPI_Comm_dup(consts::comm_world(), &mut comm) };
        let s = Arc::new(Server {
            comm,
            shares: Mutex::default(),
            ops: Mutex::default(),
            next: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let me = s.clone();
        let t = std::thread::Builder::new()
            .name("sluice-cluster-data".into())
            .spawn(move || me.run())
            .map_err(|e| format!("cannot start the data thread: {e}"))?;
        *s.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        Ok(s)
    }

    /// Memory others may now read and write (a share of an array), or no longer.
    pub fn share(&self, base: u64, len: usize, on: bool) {
        let mut g = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            g.push((base, len));
        } else {
            g.retain(|&(b, l)| (b, l) != (base, len));
        }
    }

    fn allowed(&self, addr: u64, len: usize) -> bool {
        self.shares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|&(b, l)| addr >= b && addr.checked_add(len as u64).is_some_and(|e| e <= b + l as u64))
    }

    /// Starts moving `len` bytes (at most [`PIECE_MAX`]) between `local` and `addr` of `rank`.
    pub fn start_op(&self, put: bool, rank: usize, addr: u64, local: *mut u8, len: usize) -> Event {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let tag = TAG0 + (id % TAGS) as c_int;
        let event = Event::new();
        let header = Box::new([if put { PUT } else { GET }, tag as u64, addr, len as u64]);
        let mut op = Op {
            reqs: Vec::with_capacity(3),
            event: event.clone(),
            len,
            ack: None,
            header,
            status: Box::new(crate::protocol::p2p::blank_status()),
            rank,
        };
        let (r, n) = (rank as c_int, len as c_int);
        let mut ops = self.ops.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: every buffer named here lives in the operation (boxed: it does not move) or is
        // the application's local memory, valid until the event completes; the operation stays
        // in `ops` until all its requests completed.
        unsafe {
            let mut q = consts::request_null();
            if put {
                let mut ack = Box::new(u64::MAX);
                mpi::PMPI_Irecv((&mut *ack as *mut u64).cast(), 8, consts::byte(), r, tag, self.comm, &mut q);
                op.reqs.push(q);
                op.ack = Some(ack);
                mpi::PMPI_Isend(op.header.as_ptr().cast(), 32, consts::byte(), r, REQ, self.comm, &mut q);
                op.reqs.push(q);
                mpi::PMPI_Isend(local.cast_const().cast(), n, consts::byte(), r, tag, self.comm, &mut q);
                op.reqs.push(q);
            } else {
                mpi::PMPI_Irecv(local.cast(), n, consts::byte(), r, tag, self.comm, &mut q);
                op.reqs.push(q);
                mpi::PMPI_Isend(op.header.as_ptr().cast(), 32, consts::byte(), r, REQ, self.comm, &mut q);
                op.reqs.push(q);
            }
        }
        ops.push(op);
        event
    }

    fn run(&self) {
        while !self.stop.load(Ordering::Acquire) {
            let served = self.serve();
            let finished = self.complete();
            if !served && !finished {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }

    /// Serves one request of another process, if one arrived.
    fn serve(&self) -> bool {
        let (mut flag, mut st) = (0, crate::protocol::p2p::blank_status());
        // SAFETY: probes our own communicator.
        unsafe { mpi::PMPI_Iprobe(crate::ffi::ANY_SOURCE, REQ, self.comm, &mut flag, &mut st) };
        if flag == 0 {
            return false;
        }
        let mut h = [0u64; 4];
        let from = st.MPI_SOURCE;
        // SAFETY: the probed 32-byte header into a local array.
        unsafe { mpi::PMPI_Recv(h.as_mut_ptr().cast(), 32, consts::byte(), from, REQ, self.comm, consts::status_ignore()) };
        let (kind, tag, addr, len) = (h[0], h[1] as c_int, h[2], h[3] as usize);
        let ok = len <= PIECE_MAX && self.allowed(addr, len);
        // SAFETY: `addr .. addr + len` lies in this process's share of an array (checked) when
        // `ok`; otherwise nothing of ours is touched (no data, or scratch memory).
        unsafe {
            if kind == GET {
                let n = if ok { len as c_int } else { 0 };
                mpi::PMPI_Send(addr as usize as *const std::ffi::c_void, n, consts::byte(), from, tag, self.comm);
            } else {
                if ok {
                    mpi::PMPI_Recv(
                        addr as usize as *mut std::ffi::c_void,
                        len as c_int,
                        consts::byte(),
                        from,
                        tag,
                        self.comm,
                        consts::status_ignore(),
                    );
                } else {
                    let mut scratch = vec![0u8; len.min(PIECE_MAX)];
                    mpi::PMPI_Recv(
                        scratch.as_mut_ptr().cast(),
                        scratch.len() as c_int,
                        consts::byte(),
                        from,
                        tag,
                        self.comm,
                        consts::status_ignore(),
                    );
                }
                let ack: u64 = ok as u64;
                mpi::PMPI_Send((&ack as *const u64).cast(), 8, consts::byte(), from, tag, self.comm);
            }
        }
        true
    }

    /// Completes this process's operations whose requests all finished.
    fn complete(&self) -> bool {
        let mut ops = self.ops.lock().unwrap_or_else(|e| e.into_inner());
        let mut any = false;
        ops.retain_mut(|op| {
            let mut all = true;
            for (i, q) in op.reqs.iter_mut().enumerate() {
                let mut flag = 0;
                // The first request is the reply or acknowledgement receive: keep its status.
                let st = if i == 0 { &mut *op.status as *mut _ } else { consts::status_ignore() };
                // SAFETY: our own requests (null once complete: tested again harmlessly).
                unsafe { mpi::PMPI_Test(q, &mut flag, st) };
                all &= flag != 0;
            }
            if !all {
                return true;
            }
            any = true;
            let outcome = match &op.ack {
                Some(ack) if **ack == 1 => Ok(()),
                Some(_) => Err(format!(
                    "rank {} refused a put of {} bytes at {:#x}: not inside its share of an array",
                    op.rank, op.len, op.header[2]
                )),
                None => {
                    let mut n = 0;
                    // SAFETY: the status of the completed reply receive.
                    unsafe { mpi::PMPI_Get_count(&*op.status, consts::byte(), &mut n) };
                    if n as usize == op.len {
                        Ok(())
                    } else {
                        Err(format!(
                            "rank {} refused a get of {} bytes at {:#x}: not inside its share of an array",
                            op.rank, op.len, op.header[2]
                        ))
                    }
                }
            };
            op.event.complete(outcome);
            false
        });
        any
    }

    /// Stops the thread (every operation of this process completed) and frees the communicator
    /// (collective).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
        let mut comm = self.comm;
        // SAFETY: our duplicate, freed once by every rank at close.
        unsafe { mpi::PMPI_Comm_free(&mut comm) };
    }
}
