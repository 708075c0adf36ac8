//! The engine's view of one typed buffer argument: `count` elements of a compiled datatype,
//! packed into and unpacked from contiguous bytes. Used by the point-to-point protocol
//! ([`Layout::of`], with its rules for when a message takes sluice's path) and by the collective
//! protocol ([`Layout::new`], which decides per buffer itself and packs many buffers into one
//! staging buffer at offsets: [`Layout::pack_into`], [`Layout::unpack_from`]).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::datatype::compiled::CompiledType;
use crate::datatype::interp;
use crate::ffi::mpi;
use crate::protocol::comm_hints::P2pPath;
use crate::protocol::datatype::TypeArg;
use crate::protocol::pack_engine;
use crate::transfer::staging::{self, Staging};

/// A typed buffer that sluice's engine moves: `count` elements of a compiled type, `bytes`
/// packed bytes in all.
#[derive(Clone, Debug)]
pub struct Layout {
    ct: Arc<CompiledType>,
    count: usize,
    bytes: usize,
    /// The application's handle: its hints decide whether large buffers go parallel.
    datatype: mpi::MPI_Datatype,
}

// SAFETY: the datatype handle is an opaque value (a pointer into the MPI library on Open MPI)
// only passed back to the MPI; sluice never dereferences it.
unsafe impl Send for Layout {}
// SAFETY: as above; shared references only read the handle value.
unsafe impl Sync for Layout {}

impl Layout {
    /// The engine path for `count` elements of `datatype` at `buf`, or `None` when the call goes
    /// to the MPI unchanged: protocol off, contiguous or uncompiled type, zero or invalid count,
    /// `MPI_BOTTOM`, more than `INT_MAX` packed bytes, or a large message of large blocks
    /// (`SLUICE_P2P_MPI_ABOVE` / `SLUICE_P2P_MPI_BLOCK`) or an interpreted type on Open MPI,
    /// unless the communicator's `path` hint sends it through sluice; every non-contiguous
    /// message with `P2pPath::Mpi` (on MPICH, but a struct's, which takes the automatic rules). Invalid
    /// arguments thus always reach the MPI, which reports them with its own error class.
    /// `shares_node` says whether the peer is on this node; only the automatic rule for
    /// large-block messages on MPICH asks it ([`mpich_leaves_to_mpi`]).
    #[inline]
    pub fn of(buf: *const c_void, count: i64, datatype: &TypeArg, path: P2pPath, shares_node: &dyn Fn() -> bool) -> Option<Layout> {
        if count <= 0 || buf.is_null() || (path == P2pPath::Mpi && !cfg!(sluice_mpi = "mpich")) {
            return None;
        }
        // The lock-free hint answers the common cases without the table's lock: contiguous
        // types, and large blocks when every size goes to the MPI (Open MPI's `auto`).
        if let Some(h) = datatype.hint() {
            // (A forced path, `P2pPath::Arena` from a decided contest among them, asks anyway.)
            if h.left_to_mpi && !path.engine_forced() {
                return None;
            }
        }
        let ct = datatype.compiled()?;
        if path == P2pPath::Mpi && !ct.from_struct() {
            // (MPICH) A struct's receive stays with sluice: MPICH's engine refuses packed bytes
            // from a sender that staged them into a type of mixed basic types (`recv.rs`,
            // `plain_posting`).
            return None;
        }
        let cfg = crate::runtime::config().filter(|c| c.p2p)?;
        let dl = ct.dataloop();
        if dl.contiguous && dl.extent == dl.size as i64 {
            return None; // contiguous in memory: the MPI sends it with no copy
        }
        let bytes = ct.size().checked_mul(count as usize)?;
        if bytes == 0 || bytes > c_int::MAX as usize {
            return None;
        }
        // Large blocks: the MPI's engine moves them well, and from some size on it pipelines
        // its own packing with the transfer (docs/benchmarks.md, "Automatic path"). The
        // receiver decides for itself; any pairing reads correctly.
        let block = ct.kernel().min_block(count as usize, dl.extent);
        let to_mpi = match block {
            // Types only the interpreter serves (more runs per element than an offset table
            // holds, too small per block for the nested kernel): Open MPI's engine moved all
            // six such shapes of the shape sweep 1.5-2x faster than sluice's interpreter,
            // MPICH's five of six at 0.4-0.6x its speed (docs/benchmarks.md, "Datatype shape
            // sweep"; six shapes the nested kernel now serves).
            None => cfg.p2p_mpi_auto && !cfg!(sluice_mpi = "mpich"),
            Some(b) if cfg.p2p_mpi_auto && cfg!(sluice_mpi = "mpich") => mpich_leaves_to_mpi(cfg, bytes, b, ct.from_struct(), shares_node),
            Some(b) => bytes >= cfg.p2p_mpi_above && b >= cfg.p2p_mpi_block,
        };
        if to_mpi && !path.engine_forced() {
            return None;
        }
        Some(Layout { ct: Arc::clone(ct), count: count as usize, bytes, datatype: datatype.handle() })
    }

    /// The engine path for `count` elements of the compiled form `ct` of `datatype`, whatever its
    /// layout (contiguous or not), without the point-to-point rules; `None` when nothing is moved
    /// or the packed size exceeds `INT_MAX` (the MPI's count arguments).
    pub fn new(ct: Arc<CompiledType>, count: usize, datatype: mpi::MPI_Datatype) -> Option<Layout> {
        let bytes = ct.size().checked_mul(count)?;
        (bytes > 0 && bytes <= c_int::MAX as usize).then_some(Layout { ct, count, bytes, datatype })
    }

    /// The engine path for a receive of `count` elements of `datatype` at `buf` that may get a
    /// pipelined message: any compiled type, contiguous or not, without the point-to-point
    /// rules (the stream is unpacked by ranges whatever the type).
    pub fn any_compiled(buf: *const c_void, count: i64, datatype: &TypeArg) -> Option<Layout> {
        if count <= 0 || buf.is_null() {
            return None;
        }
        Layout::new(Arc::clone(datatype.compiled()?), count as usize, datatype.handle())
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

    /// The compiled type.
    pub fn compiled(&self) -> &CompiledType {
        &self.ct
    }

    /// The compiled form, shared (its byte twin lives as long as it: `byte_twin::of`).
    pub fn form(&self) -> &Arc<CompiledType> {
        &self.ct
    }

    /// The smallest contiguous block the kernel copies (`None`: interpreted types).
    pub fn min_block(&self) -> Option<usize> {
        self.ct.kernel().min_block(self.count, self.ct.dataloop().extent)
    }

    /// Packed bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Of `n` received bytes (a stream prefix), those the MPI's own engine would unpack: on
    /// MPICH the whole predefined elements only (it fails the receive with `MPI_ERR_TRUNCATE`
    /// at a partial one, `p2p::partial_element`); all of them on Open MPI, whose engine unpacks
    /// any prefix. A whole number of the type's elements needs no look.
    #[inline]
    pub fn unpackable(&self, n: usize) -> usize {
        if cfg!(sluice_mpi = "mpich") && n % self.ct.size().max(1) != 0 {
            self.ct.whole_prefix(n)
        } else {
            n
        }
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

    /// A staging buffer holding the packed elements at `buf`, packed by the engine chosen for
    /// the type (`pack_engine`: the call may teach the choice). Only inside the application's
    /// call: the MPI's engine needs the application's datatype handle, which it may free once
    /// the call returns (legal while an operation uses the type). Completions and persistent
    /// starts pack with [`Layout::pack`].
    ///
    /// # Safety
    /// As [`Layout::pack`]; inside the call that got the layout's datatype handle.
    pub unsafe fn packed(&self, buf: *const c_void) -> Staging {
        let mut st = staging::take(self.bytes);
        // SAFETY: forwarded contract; `st` is sluice's own buffer of at least `bytes` bytes.
        unsafe { pack_engine::pack(self.datatype, &self.ct, self.count, buf.cast(), &mut st.bytes_mut()[..self.bytes]) };
        crate::stats::engine_bytes(self.bytes);
        st
    }

    /// As [`Layout::packed`], then the stream opened at `at` by `gap` bytes: bytes `[at, n)`
    /// move to `[at + gap, n + gap)` (a message sent in two runs, `transfer::netpath`). Packed
    /// whole first, so that the engine choice sees (and learns from) the whole type as for any
    /// staged send; the move is one pass over the second run.
    ///
    /// # Safety
    /// As [`Layout::packed`]; `at <= bytes`.
    pub unsafe fn packed_split(&self, buf: *const c_void, at: usize, gap: usize) -> Staging {
        let n = self.bytes;
        let mut st = staging::take(n + gap);
        // SAFETY: forwarded contract; `st` is sluice's own buffer of at least `n + gap` bytes.
        unsafe { pack_engine::pack(self.datatype, &self.ct, self.count, buf.cast(), &mut st.bytes_mut()[..n]) };
        st.bytes_mut().copy_within(at..n, at + gap);
        crate::stats::engine_bytes(n);
        st
    }

    /// Unpacks the first `received` bytes of `st` (a received, possibly short or truncated,
    /// stream) into the user's elements at `buf`.
    ///
    /// # Safety
    /// `buf` is the application's receive buffer for this layout (writable for its typemap).
    pub unsafe fn unpack(&self, st: &Staging, received: usize, buf: *mut c_void) {
        // SAFETY: forwarded contract.
        unsafe { self.unpack_by(st, received, buf, false) }
    }

    /// As [`Layout::unpack`], a whole stream by the engine chosen for the type (the call may
    /// teach the choice): only inside the application's call, as [`Layout::packed`].
    ///
    /// # Safety
    /// As [`Layout::unpack`]; inside the call that got the layout's datatype handle.
    pub unsafe fn unpack_in_call(&self, st: &Staging, received: usize, buf: *mut c_void) {
        // SAFETY: forwarded contract.
        unsafe { self.unpack_by(st, received, buf, true) }
    }

    /// # Safety
    /// As [`Layout::unpack`]; `in_call` only inside the call that got the datatype handle.
    unsafe fn unpack_by(&self, st: &Staging, received: usize, buf: *mut c_void, in_call: bool) {
        let n = received.min(self.bytes);
        let input = &st.bytes()[..n];
        if n == self.bytes && in_call {
            // SAFETY: as below; the handle is valid (the caller's contract).
            unsafe { pack_engine::unpack(self.datatype, &self.ct, self.count, input, buf.cast()) };
        } else if n == self.bytes {
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

    /// Packs the user's elements at `buf` into `out` (exactly [`Layout::bytes`] long), on the
    /// worker pool when the operation qualifies (`protocol::parallel`), else serially by the
    /// engine chosen for the type (`pack_engine`): only inside the application's call, as
    /// [`Layout::packed`].
    ///
    /// # Safety
    /// `buf` is the application's buffer for this layout (readable for its typemap); inside the
    /// call that got the datatype handle.
    pub unsafe fn pack_into(&self, buf: *const c_void, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.bytes);
        // SAFETY: the caller guarantees the typemap is readable at `buf` and the handle valid;
        // `out` is sluice's own memory of the stream's length.
        unsafe {
            if !crate::protocol::parallel::try_pack(self.datatype, &self.ct, self.count, buf.cast(), out) {
                pack_engine::pack(self.datatype, &self.ct, self.count, buf.cast(), out);
            }
        }
        crate::stats::engine_bytes(self.bytes);
    }

    /// Unpacks `input` (exactly [`Layout::bytes`] long) into the user's elements at `buf`, as
    /// [`Layout::pack_into`] packs.
    ///
    /// # Safety
    /// `buf` is the application's receive buffer for this layout (writable for its typemap, no
    /// byte addressed twice: MPI makes receiving into overlapping entries erroneous); `in_call`
    /// only inside the call that got the datatype handle.
    pub unsafe fn unpack_from(&self, input: &[u8], buf: *mut c_void, in_call: bool) {
        debug_assert_eq!(input.len(), self.bytes);
        // SAFETY: as above; `input` is sluice's own memory.
        unsafe {
            if !crate::protocol::parallel::try_unpack(self.datatype, &self.ct, self.count, input, buf.cast()) {
                if in_call {
                    pack_engine::unpack(self.datatype, &self.ct, self.count, input, buf.cast());
                } else {
                    self.ct.unpack(input, self.count, buf.cast());
                }
            }
        }
        crate::stats::engine_bytes(self.bytes);
    }
}

/// Smallest contiguous block that makes MPICH's engine faster than sluice's for a message
/// below the pipeline's threshold (`scripts/bench-p2p-paths.sh` at 64 KiB: MPICH is faster
/// with blocks of 384 B and more, slower with 64 B and less).
const MPICH_SMALL_MESSAGE_BLOCK: usize = 256;
/// Size from which large blocks to a peer on another node go to MPICH's engine.
const MPICH_REMOTE_ABOVE: usize = 512 << 10;

/// `SLUICE_P2P_MPI_ABOVE=auto` on MPICH, measured with `scripts/bench-p2p-paths.sh`
/// (docs/benchmarks.md, "Automatic path"): below the pipeline's threshold MPICH's engine beats
/// sluice's staging for blocks of [`MPICH_SMALL_MESSAGE_BLOCK`] and more (except a struct's,
/// whose staged bytes MPICH's typed receive refuses: `p2p::recv`, `plain_posting`); from the
/// threshold on, sluice's pipeline through the shared-memory arena beats MPICH's engine at every
/// block size (1.2-1.8x at 1-16 MiB), so only messages to or from a peer on another node (or with
/// the arena off) with blocks of at least `SLUICE_P2P_MPI_BLOCK` go to the MPI, from
/// [`MPICH_REMOTE_ABOVE`] on.
fn mpich_leaves_to_mpi(cfg: &crate::config::Config, bytes: usize, block: usize, from_struct: bool, shares_node: &dyn Fn() -> bool) -> bool {
    let reserved = crate::protocol::limits::reserved();
    if reserved == 0 || bytes < reserved {
        return block >= MPICH_SMALL_MESSAGE_BLOCK && !from_struct;
    }
    bytes >= MPICH_REMOTE_ABOVE && block >= cfg.p2p_mpi_block && !(cfg.shm_arena != usize::MAX && shares_node())
}
