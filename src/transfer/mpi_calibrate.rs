//! Calibration of the MPI's own paths (`mpirun -np 2 sluice-info --calibrate`): world ranks 0
//! and 1 stream messages to each other, timed by rank 0, and the throughputs become two
//! channels of the machine model (docs/runtime.md, "Calibration"):
//!
//! - `network`: contiguous bytes handed to the MPI, by message size (the request size of a
//!   channel that moves packed chunks: sluice's pipelined and staged protocols);
//! - `mpi_typed`: a 4 MiB message of a strided layout handed to the MPI's datatype engine, by
//!   the layout's contiguous block (Isometry's request size of a channel that converts layouts):
//!   what "leave it to the MPI" achieves for a derived datatype;
//! - `shm_typed` (same node only): the same messages through sluice's pipelined protocol over
//!   the shared-memory arena ([`measure_typed`] with sluice's own calls, which the caller
//!   provides: this layer does not call the interception layer). The point-to-point protocol
//!   compares the two curves to choose between them (`protocol::layout`).
//!
//! Both run from this rank's memory (SYS0) to rank 1's: `PEER0` when it shares the node (the
//! MPI's shared-memory path), `REMOTE0` when not (the network). Each point is the median of
//! five timed rounds after a warm-up; a contiguous round is a window of nonblocking sends (8 MiB
//! in all, two messages at least), received by pre-posted receives, then a zero-byte
//! acknowledgement, so the MPI's per-message latency is overlapped as a stream of chunks
//! overlaps it; a typed round is one message and the acknowledgement (the time a receiver
//! waiting for the message sees). Unlike the rest of `transfer`, this calls MPI:
//! the caller initialized it; nothing here runs inside an application.

use std::ffi::c_int;
use std::time::Instant;

use crate::ffi::{consts, mpi};

/// Bytes of one message of the typed measurement.
const TYPED_BYTES: usize = 4 << 20;
/// Contiguous blocks of the typed measurement's layouts.
pub const BLOCKS: [usize; 6] = [8, 64, 512, 4096, 65536, 1 << 20];
/// Message sizes of the contiguous measurement.
pub const MESSAGES: [usize; 6] = [4096, 16384, 65536, 262144, 1 << 20, 4 << 20];
/// Bytes a round moves at least (small messages go many to a round, so that a round is long
/// enough to time), and the most messages in flight.
const ROUND_BYTES: usize = 8 << 20;
const MAX_WINDOW: usize = 1024;
const TAG: c_int = 7301;

/// The curves, `(request bytes, bytes/s)`, and the kind of rank 1's memory.
#[derive(Debug, Clone)]
pub struct MpiCurves {
    /// `"peer"` (same node) or `"remote"`.
    pub peer_kind: &'static str,
    pub contiguous: Vec<(usize, f64)>,
    pub typed: Vec<(usize, f64)>,
    /// The typed messages through sluice's arena path (empty: not measured).
    pub arena: Vec<(usize, f64)>,
}

/// The point-to-point calls a measurement makes, and the communicator: the MPI's own (`PMPI_*`
/// on `MPI_COMM_WORLD`) or sluice's.
#[derive(Clone, Copy)]
pub struct Calls {
    pub isend: unsafe extern "C" fn(
        *const std::ffi::c_void,
        c_int,
        mpi::MPI_Datatype,
        c_int,
        c_int,
        mpi::MPI_Comm,
        *mut mpi::MPI_Request,
    ) -> c_int,
    pub irecv:
        unsafe extern "C" fn(*mut std::ffi::c_void, c_int, mpi::MPI_Datatype, c_int, c_int, mpi::MPI_Comm, *mut mpi::MPI_Request) -> c_int,
    pub waitall: unsafe extern "C" fn(c_int, *mut mpi::MPI_Request, *mut mpi::MPI_Status) -> c_int,
    pub send: unsafe extern "C" fn(*const std::ffi::c_void, c_int, mpi::MPI_Datatype, c_int, c_int, mpi::MPI_Comm) -> c_int,
    pub recv:
        unsafe extern "C" fn(*mut std::ffi::c_void, c_int, mpi::MPI_Datatype, c_int, c_int, mpi::MPI_Comm, *mut mpi::MPI_Status) -> c_int,
    /// `MPI_Type_commit` and `MPI_Type_free` of the measured types (sluice compiles the types
    /// committed through it).
    pub type_commit: unsafe extern "C" fn(*mut mpi::MPI_Datatype) -> c_int,
    pub type_free: unsafe extern "C" fn(*mut mpi::MPI_Datatype) -> c_int,
    pub comm: mpi::MPI_Comm,
}

impl Calls {
    /// The MPI's own calls on `MPI_COMM_WORLD`.
    pub fn mpi() -> Calls {
        Calls {
            isend: mpi::PMPI_Isend,
            irecv: mpi::PMPI_Irecv,
            waitall: mpi::PMPI_Waitall,
            send: mpi::PMPI_Send,
            recv: mpi::PMPI_Recv,
            type_commit: mpi::PMPI_Type_commit,
            type_free: mpi::PMPI_Type_free,
            comm: consts::comm_world(),
        }
    }
}

fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == crate::ffi::errclass::SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed (MPI error {rc})"))
    }
}

/// Messages of `bytes` each per round.
fn window(bytes: usize) -> usize {
    (ROUND_BYTES / bytes).clamp(2, MAX_WINDOW)
}

/// One round: rank 0 sends `n` messages of (`count`, `ty`), each from its own `extent` bytes of
/// `buf`, to rank 1, which receives them into its own slices (receive buffers of requests in
/// flight must not overlap) and acknowledges with an empty message once all have arrived.
fn round(calls: &Calls, rank: c_int, buf: &mut [u8], extent: usize, n: usize, count: c_int, ty: mpi::MPI_Datatype) -> Result<(), String> {
    assert!(buf.len() >= n * extent, "calibration buffer too small");
    let world = calls.comm;
    let mut reqs = vec![consts::request_null(); n];
    // SAFETY: message i uses `buf[i * extent..(i + 1) * extent]`, which holds `count` elements
    // of `ty` (the caller sized `extent`); the requests complete before `buf` is touched again;
    // the acknowledgement moves no data.
    unsafe {
        for (i, r) in reqs.iter_mut().enumerate() {
            let p = buf.as_mut_ptr().add(i * extent).cast();
            let rc = if rank == 0 { (calls.isend)(p, count, ty, 1, TAG, world, r) } else { (calls.irecv)(p, count, ty, 0, TAG, world, r) };
            check(rc, "MPI_Isend/Irecv")?;
        }
        check((calls.waitall)(n as c_int, reqs.as_mut_ptr(), consts::statuses_ignore()), "MPI_Waitall")?;
        let p = buf.as_mut_ptr().cast();
        if rank == 0 {
            check((calls.recv)(p, 0, consts::byte(), 1, TAG + 1, world, consts::status_ignore()), "MPI_Recv")
        } else {
            check((calls.send)(p, 0, consts::byte(), 0, TAG + 1, world), "MPI_Send")
        }
    }
}

/// Throughput (bytes/s) of messages of `bytes` (spanning `extent`): the median of five timed
/// rounds after a warm-up (rank 0's clock; rank 1's numbers are not used).
#[allow(clippy::too_many_arguments)]
fn point(
    calls: &Calls,
    rank: c_int,
    buf: &mut [u8],
    extent: usize,
    count: c_int,
    ty: mpi::MPI_Datatype,
    bytes: usize,
    max_window: usize,
) -> Result<f64, String> {
    let n = window(bytes).min(buf.len() / extent).min(max_window);
    round(calls, rank, buf, extent, n, count, ty)?;
    let mut times = Vec::with_capacity(5);
    for _ in 0..5 {
        let t = Instant::now();
        round(calls, rank, buf, extent, n, count, ty)?;
        times.push(t.elapsed().as_secs_f64().max(1e-9));
    }
    times.sort_by(f64::total_cmp);
    Ok((n * bytes) as f64 / times[times.len() / 2])
}

/// `block` bytes every `2 * block` bytes, `TYPED_BYTES` in all: a committed hvector of bytes.
fn strided(calls: &Calls, block: usize) -> Result<mpi::MPI_Datatype, String> {
    let mut ty = consts::datatype_null();
    let n = (TYPED_BYTES / block) as c_int;
    // SAFETY: creates and commits a new type, written to a local handle.
    unsafe {
        check(
            mpi::PMPI_Type_create_hvector(n, block as c_int, (2 * block) as mpi::MPI_Aint, consts::byte(), &mut ty),
            "MPI_Type_create_hvector",
        )?;
        check((calls.type_commit)(&mut ty), "MPI_Type_commit")?;
    }
    Ok(ty)
}

/// Measures both curves between world ranks 0 and 1; collective over `MPI_COMM_WORLD` (every
/// rank calls it; ranks other than 0 and 1 return `None` after the node grouping). Only rank
/// 0's numbers are meaningful. MPI is initialized.
pub fn measure() -> Result<Option<MpiCurves>, String> {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialized; each call writes one int.
    unsafe {
        mpi::PMPI_Comm_rank(consts::comm_world(), &mut rank);
        mpi::PMPI_Comm_size(consts::comm_world(), &mut size);
    }
    if size < 2 {
        return Err("the MPI paths need two ranks: run it as `mpirun -np 2 sluice-info --calibrate`".into());
    }
    crate::transfer::node::start(); // collective: which ranks share a node
    let peer_kind = if crate::transfer::node::is_local(if rank == 0 { 1 } else { 0 }) { "peer" } else { "remote" };
    if rank > 1 {
        return Ok(None);
    }
    let calls = Calls::mpi();
    let mut buf = calibration_buffer();
    let mut contiguous = Vec::new();
    for &m in &MESSAGES {
        contiguous.push((m, point(&calls, rank, &mut buf, m, m as c_int, consts::byte(), m, MAX_WINDOW)?));
    }
    let typed = typed_curve(&calls, rank, &mut buf)?;
    Ok(Some(MpiCurves { peer_kind, contiguous, typed, arena: Vec::new() }))
}

/// Room for two typed messages (8 MiB of extent each) or a round of contiguous ones.
fn calibration_buffer() -> Vec<u8> {
    vec![0u8; 4 * TYPED_BYTES.max(ROUND_BYTES / 2)]
}

/// The typed measurement through `calls`, one point per block of [`BLOCKS`].
fn typed_curve(calls: &Calls, rank: c_int, buf: &mut [u8]) -> Result<Vec<(usize, f64)>, String> {
    let mut typed = Vec::new();
    for &b in &BLOCKS {
        let mut ty = strided(calls, b)?;
        // One message at a time: what a receiver waiting for it sees (a halo exchange waits for
        // each), not a stream that overlaps one message's packing with the previous transfer.
        let t = point(calls, rank, buf, 2 * TYPED_BYTES, 1, ty, TYPED_BYTES, 1);
        // SAFETY: our own committed type, no longer in use.
        unsafe { (calls.type_free)(&mut ty) };
        typed.push((b, t?));
    }
    Ok(typed)
}

/// The typed measurement through `calls` (sluice's own calls on a communicator whose
/// `sluice_p2p_path` is `arena`: the `shm_typed` curve) between world ranks 0 and 1, which
/// call it together (others must not). Only rank 0's numbers are meaningful.
pub fn measure_typed(calls: &Calls) -> Result<Vec<(usize, f64)>, String> {
    let mut rank = 0;
    // SAFETY: MPI is initialized; writes one int.
    unsafe { mpi::PMPI_Comm_rank(consts::comm_world(), &mut rank) };
    typed_curve(calls, rank, &mut calibration_buffer())
}
