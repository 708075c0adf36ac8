//! Point-to-point protocol: sends and receives of non-contiguous datatypes run through sluice's
//! datatype engine; everything else goes straight to the MPI.
//!
//! Wire format (docs/protocol.md): a message is exactly the packed stream the MPI itself would
//! send for the user's (buffer, count, datatype), sent as `count * size` bytes of `MPI_PACKED`
//! on the user's communicator and tag. So it matches, orders, probes and truncates exactly as the
//! user's message would, and any receive (contiguous, another layout of the same signature,
//! `MPI_PACKED`, sluice or not) reads it correctly. Receives of a non-contiguous type land in a
//! staging buffer of the user's capacity and are unpacked at completion.
//!
//! - [`send`]: the four send modes, blocking, nonblocking and persistent;
//! - [`recv`]: receives, matched receives, Sendrecv and Sendrecv_replace;
//! - [`ops`]: the table of requests sluice must finish (unpack, release staging);
//! - [`complete`]: the Wait/Test family, Request_free, Request_get_status, Start/Startall.

pub mod complete;
pub mod ops;
pub mod pipeline;
pub mod recv;
pub mod send;

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::datatype::compiled::CompiledType;
use crate::datatype::interp;
use crate::ffi::{consts, errclass, mpi};
use crate::protocol::datatype::lookup;
use crate::transfer::staging::{self, Staging};

/// A typed buffer that sluice's engine moves: `count` elements of a compiled non-contiguous
/// type, `bytes` packed bytes in all.
#[derive(Clone, Debug)]
pub struct Layout {
    ct: Arc<CompiledType>,
    count: usize,
    bytes: usize,
}

impl Layout {
    /// The engine path for `count` elements of `datatype` at `buf`, or `None` when the call goes
    /// to the MPI unchanged: protocol off, contiguous or uncompiled type, zero or invalid count,
    /// `MPI_BOTTOM`, more than `INT_MAX` packed bytes, or a large message of large blocks
    /// (`SLUICE_P2P_MPI_ABOVE` / `SLUICE_P2P_MPI_BLOCK`). Invalid arguments thus always reach
    /// the MPI, which reports them with its own error class.
    #[inline]
    pub fn of(buf: *const c_void, count: i64, datatype: mpi::MPI_Datatype) -> Option<Layout> {
        if count <= 0 || buf.is_null() {
            return None;
        }
        let ct = lookup(datatype)?;
        let cfg = crate::runtime::config().filter(|c| c.p2p)?;
        let dl = ct.dataloop();
        if dl.contiguous && dl.extent == dl.size as i64 {
            return None; // contiguous in memory: the MPI sends it with no copy
        }
        let bytes = ct.size().checked_mul(count as usize)?;
        if bytes == 0 || bytes > c_int::MAX as usize {
            return None;
        }
        if bytes >= cfg.p2p_mpi_above
            && ct.kernel().min_block(count as usize, dl.extent).is_some_and(|b| b >= cfg.p2p_mpi_block)
        {
            // Large blocks, large message: the MPI pipelines its own packing with the transfer
            // and beats pack-send-unpack in sequence here (docs/benchmarks.md, vect:128:64 at
            // 4-16 MiB). The receiver decides for itself; any pairing reads correctly.
            return None;
        }
        Some(Layout { ct, count: count as usize, bytes })
    }

    /// Packed bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// `bytes` as the MPI's count argument (checked in [`Layout::of`]).
    pub fn count_arg(&self) -> c_int {
        self.bytes as c_int
    }

    /// Packs the user's elements at `buf` into `st`.
    ///
    /// # Safety
    /// `buf` is the application's send buffer for this layout (valid for its typemap).
    pub unsafe fn pack(&self, buf: *const c_void, st: &mut Staging) {
        // SAFETY: the caller guarantees the typemap is readable at `buf`; `st` is sluice's own
        // buffer of at least `bytes` bytes and cannot overlap the application's memory.
        unsafe { self.ct.pack(buf.cast(), self.count, st.bytes_mut()) };
        crate::stats::engine_bytes(self.bytes);
    }

    /// A staging buffer holding the packed elements at `buf`.
    ///
    /// # Safety
    /// As [`Layout::pack`].
    pub unsafe fn packed(&self, buf: *const c_void) -> Staging {
        let mut st = staging::take(self.bytes);
        // SAFETY: forwarded contract.
        unsafe { self.pack(buf, &mut st) };
        st
    }

    /// Packs stream bytes `[first, last)` of the user's elements at `buf` into `out`.
    ///
    /// # Safety
    /// As [`Layout::pack`]; `out` is sluice's own memory of `last - first` bytes.
    pub unsafe fn pack_range(&self, buf: *const c_void, first: usize, last: usize, out: &mut [u8]) {
        // SAFETY: forwarded contract.
        unsafe { self.ct.pack_range(buf.cast(), self.count, first, last, out) };
        crate::stats::engine_bytes(last - first);
    }

    /// Unpacks `input`, stream bytes `[first, first + input.len())`, into the user's elements.
    ///
    /// # Safety
    /// As [`Layout::unpack`].
    pub unsafe fn unpack_range(&self, input: &[u8], first: usize, buf: *mut c_void) {
        // SAFETY: forwarded contract.
        unsafe { self.ct.unpack_range(input, self.count, first, first + input.len(), buf.cast()) };
        crate::stats::engine_bytes(input.len());
    }

    /// Unpacks the first `received` bytes of `st` (a received, possibly short or truncated,
    /// stream) into the user's elements at `buf`.
    ///
    /// # Safety
    /// `buf` is the application's receive buffer for this layout (writable for its typemap).
    pub unsafe fn unpack(&self, st: &Staging, received: usize, buf: *mut c_void) {
        let n = received.min(self.bytes);
        let input = &st.bytes()[..n];
        if n == self.bytes {
            // SAFETY: the caller guarantees the typemap is writable at `buf`; `input` is
            // sluice's own memory.
            unsafe { self.ct.unpack(input, self.count, buf.cast()) };
        } else if n > 0 {
            // A short message fills a prefix of the stream, as in the MPI.
            // SAFETY: as above; the range [0, n) lies inside the stream of `count` elements.
            unsafe { interp::unpack(self.ct.dataloop(), self.count, buf.cast(), 0, n, input) };
        }
        crate::stats::engine_bytes(n);
    }
}

/// Bytes of the staging buffer to unpack after a receive that returned `rc` with `status`, for
/// a receive of `capacity` bytes: what the MPI itself leaves in a truncated receive buffer.
/// Open MPI writes the prefix that fits; MPICH leaves the buffer untouched (measured by
/// `tests/c/p2p_conf_basic.c`, which compares sluice with the bare MPI).
///
/// # Safety
/// `status` is the MPI's status of this completed receive.
pub(crate) unsafe fn delivered_bytes(rc: c_int, status: *const mpi::MPI_Status, capacity: usize) -> usize {
    if rc == errclass::SUCCESS {
        // SAFETY: forwarded contract.
        return unsafe { received_bytes(status) };
    }
    if error_class(rc) == errclass::ERR_TRUNCATE && cfg!(sluice_mpi = "openmpi") {
        // SAFETY: forwarded contract.
        return unsafe { received_bytes(status) }.min(capacity);
    }
    0
}

/// `MPI_Error_class` of a code returned by the MPI.
pub(crate) fn error_class(rc: c_int) -> c_int {
    let mut class = rc;
    // SAFETY: PMPI_Error_class only reads the code and writes one int.
    unsafe { mpi::PMPI_Error_class(rc, &mut class) };
    class
}

/// Bytes a completed receive delivered, from its status (0 if cancelled or unknown).
///
/// # Safety
/// `status` points to a status the MPI filled for a completed receive.
pub(crate) unsafe fn received_bytes(status: *const mpi::MPI_Status) -> usize {
    let mut cancelled = 0;
    let mut n: c_int = 0;
    // SAFETY: reads the status; writes one int each.
    unsafe {
        mpi::PMPI_Test_cancelled(status, &mut cancelled);
        if cancelled != 0 || mpi::PMPI_Get_count(status, consts::byte(), &mut n) != errclass::SUCCESS {
            return 0;
        }
    }
    if n == crate::ffi::UNDEFINED || n < 0 {
        0
    } else {
        n as usize
    }
}

/// An all-zero status for calls made with `MPI_STATUS_IGNORE` by the application but whose
/// status sluice needs.
pub(crate) fn blank_status() -> mpi::MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `status` unless it is `MPI_STATUS_IGNORE`, else `local`.
pub(crate) fn status_or(status: *mut mpi::MPI_Status, local: &mut mpi::MPI_Status) -> *mut mpi::MPI_Status {
    if status.is_null() || status == consts::status_ignore() {
        local
    } else {
        status
    }
}

/// `MPI_PROC_NULL`: such calls go to the MPI unchanged (nothing is moved).
pub(crate) fn is_proc_null(rank: c_int) -> bool {
    rank == crate::ffi::PROC_NULL
}

/// Requests and staging buffers sluice still holds (leak checks; `sluice_p2p_outstanding`).
pub fn outstanding() -> (i64, i64) {
    // Chunks of pipelined sends complete when the receiver has them; let them finish first.
    for _ in 0..10_000 {
        if !pipeline::send::in_flight() {
            break;
        }
        pipeline::track::progress_all();
    }
    ((ops::tracked() + pipeline::track::tracked()) as i64, staging::in_use())
}
