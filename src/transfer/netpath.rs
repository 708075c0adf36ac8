//! How the MPI moves sluice's staged bytes between nodes, and the one thing sluice does about
//! it: collective blocks staged for a peer on another node can be laid out as two runs with a
//! gap between them ("split"), so that the MPI sees a non-contiguous buffer.
//!
//! Why: Open MPI's ob1 point-to-point layer sends a large message whose buffers are contiguous
//! on both sides by its RDMA protocol, which over the TCP transport is a put emulated with
//! control messages that the receiver sends back to the sender. In an exchange, those control
//! messages queue behind the data going the other way, and the transfer stalls: between two
//! emulated nodes a halo exchange of 128 KiB faces took 2.7-2.9 ms with contiguous buffers and
//! 2.18 ms with non-contiguous ones at 1 Gbit/s (the link's time is 2.1 ms), 0.35 ms and
//! 0.275 ms at 10 Gbit/s (docs/benchmarks.md, "Across two emulated nodes"). A buffer that is
//! not contiguous makes ob1 use its copy pipeline instead, the path the application's own
//! non-contiguous types take without sluice. The split costs nothing on the wire: the packed
//! stream, what the peer sees, is the same bytes in the same order.
//!
//! Within a node the MPI's shared-memory transports copy contiguous buffers in one pass, so
//! only blocks for peers on other nodes are split (uniform calls, `MPI_Alltoall` and
//! `MPI_Allgather`, have one datatype for all peers: there every block is split once one peer
//! is elsewhere), and only above the size at which ob1 stops
//! sending eagerly (`SLUICE_COLL_REMOTE_SPLIT`, docs/configuration.md).

use std::ffi::c_int;
use std::sync::OnceLock;

use crate::config::RemoteSplit;
use crate::ffi::{consts, errclass, mpi};

/// Bytes left out between the two runs of a split block: one cache line, so the second run
/// starts as aligned as the first.
pub const GAP: usize = 64;

/// `auto`'s threshold: Open MPI's default `btl_tcp_eager_limit`; smaller messages go eagerly,
/// never by the RDMA protocol.
const AUTO_MIN: usize = 64 << 10;

/// The smallest staged block that is split when its peer is on another node; `None`: never
/// (the setting is `off`, the job runs on one node, or `auto` and the MPI is not Open MPI's
/// ob1).
pub fn split_min() -> Option<usize> {
    min_of(crate::runtime::config()?.coll_remote_split)
}

/// The smallest message sluice sends itself to another node (a pipelined transfer's chunk, a
/// staged message) that is split (`SLUICE_P2P_REMOTE_SPLIT`): it then goes as the
/// application's non-contiguous data would, where each contiguous rendezvous would cost Open
/// MPI's RDMA protocol its extra round trip (measured between two emulated nodes at 1 Gbit/s
/// with 50 us of delay: `vect:8:4` 4 MiB ping-pong 6.6% slower than the bare MPI in 128 KiB
/// chunks, at parity split or with ob1's RDMA off). `None`: never.
pub fn p2p_split_min() -> Option<usize> {
    min_of(crate::runtime::config()?.p2p_remote_split)
}

fn min_of(setting: RemoteSplit) -> Option<usize> {
    let min = match setting {
        RemoteSplit::Off => return None,
        RemoteSplit::Above(n) => n,
        RemoteSplit::Auto => ob1().then_some(AUTO_MIN)?,
    };
    super::node::spans_nodes().then_some(min.max(2))
}

/// Where a message of `bytes` bytes that sluice sends to world rank `peer` is split (0: not;
/// see [`p2p_split_min`]).
pub fn p2p_split_at(peer: c_int, bytes: usize) -> usize {
    match p2p_split_min() {
        Some(min) if bytes >= min && peer >= 0 && !super::node::is_local(peer) => split_at(bytes),
        _ => 0,
    }
}

/// Where a staged receive of `bytes` bytes from world rank `peer` lands split (0: not): with
/// `SLUICE_P2P_REMOTE_SPLIT` at a byte count, as sends; with `auto`, from 64 KiB when the MPI
/// is not Open MPI's ob1 (MPICH's UCX) and the peer is on another node. UCX moves a window of
/// messages that are contiguous at both ends by concurrent rendezvous gets, so every staged
/// message of the window completes at its end and the window's unpack follows its last byte
/// (MPICH, 64 x 64 KiB at 1 Gbit/s + 50 us, `bench/window_timeline.c`: every message within
/// 0.6 ms of the end); with a
/// non-contiguous receive buffer they arrive one after the other, as the bare MPI's own
/// non-contiguous messages do, and each is unpacked while the next is on the wire. The bare
/// MPI, contiguous send into a two-run receive: no slower than contiguous at both ends at 10
/// Gbit/s (64-128 KiB windows; the send-side split is, by 40-60%, so `auto` splits ob1's sends
/// and UCX's receives).
pub fn p2p_recv_split_at(peer: c_int, bytes: usize) -> usize {
    match p2p_recv_split_min() {
        Some(min) if bytes >= min && peer >= 0 && !super::node::is_local(peer) => split_at(bytes),
        _ => 0,
    }
}

/// The smallest staged receive that may land split ([`p2p_recv_split_at`]); `None`: none
/// (the setting is `off`, the job runs on one node, or `auto` under ob1).
pub fn p2p_recv_split_min() -> Option<usize> {
    let min = match crate::runtime::config()?.p2p_remote_split {
        RemoteSplit::Above(n) => n,
        RemoteSplit::Auto if !ob1() => AUTO_MIN,
        _ => return None,
    };
    super::node::spans_nodes().then_some(min.max(2))
}

/// Where a block of `bytes` bytes is split: two non-empty runs (`bytes` >= 2), the first
/// rounded down to a cache line when that leaves both non-empty.
pub fn split_at(bytes: usize) -> usize {
    let half = bytes / 2;
    let aligned = half & !(GAP - 1);
    if aligned > 0 {
        aligned
    } else {
        half
    }
}

/// Whether the MPI's point-to-point layer is Open MPI's ob1 (looked up once).
fn ob1() -> bool {
    static OB1: OnceLock<bool> = OnceLock::new();
    *OB1.get_or_init(|| {
        let ob1 = selected_pml().as_deref() == Some("ob1");
        log::debug!("MPI point-to-point layer: {}", selected_pml().as_deref().unwrap_or("not Open MPI's ob1"));
        ob1
    })
}

/// The name of Open MPI's selected PML component (`ob1`, `ucx`, `cm`), read from
/// `mca_pml_base_selected_component`, an `mca_base_component_2_1_0_t` (opal/mca/mca.h, the same
/// layout in Open MPI 3, 4 and 5): three ints, the project name (16 bytes), three ints, the
/// framework name (32 bytes), three ints, the component name (64 bytes). The project and
/// framework names are checked before the component name is trusted. `None` with MPICH or when
/// the symbol is missing or does not look like that.
fn selected_pml() -> Option<String> {
    if !cfg!(sluice_mpi = "openmpi") {
        return None;
    }
    // SAFETY: the name is NUL-terminated; dlsym only reads the global symbol tables.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"mca_pml_base_selected_component".as_ptr()) } as *const u8;
    if p.is_null() {
        return None;
    }
    const PROJECT: usize = 12;
    const FRAMEWORK: usize = PROJECT + 16 + 12;
    const COMPONENT: usize = FRAMEWORK + 32 + 12;
    // SAFETY: the symbol is Open MPI's component structure, at least COMPONENT + 64 bytes long
    // (its layout is the documented one above); the reads stay inside it.
    let field = |at: usize, len: usize| unsafe { std::slice::from_raw_parts(p.add(at), len) };
    let text = |b: &[u8]| b.iter().position(|&c| c == 0).map(|n| String::from_utf8_lossy(&b[..n]).into_owned());
    (text(field(PROJECT, 16))? == "ompi" && text(field(FRAMEWORK, 32))? == "pml").then_some(())?;
    text(field(COMPONENT, 64)).filter(|s| !s.is_empty())
}

/// For each rank of `comm` in `ranks`, whether it is on another node (`MPI_PROC_NULL` and
/// ranks the MPI cannot translate: `false`).
pub fn remote(comm: mpi::MPI_Comm, ranks: &[c_int]) -> Vec<bool> {
    match super::node::world_ranks(comm, ranks) {
        Some(world) => world.iter().map(|&w| w >= 0 && !super::node::is_local(w)).collect(),
        None => vec![false; ranks.len()],
    }
}

/// A committed datatype of `bytes` bytes in two runs, `[0, at)` and `[at + GAP, bytes + GAP)`
/// (`0 < at < bytes`); the caller frees it. `None` if the MPI refuses.
pub fn split_type(bytes: usize, at: usize) -> Option<mpi::MPI_Datatype> {
    let lens = [c_int::try_from(at).ok()?, c_int::try_from(bytes - at).ok()?];
    let displs = [0 as mpi::MPI_Aint, (at + GAP) as mpi::MPI_Aint];
    let mut t = consts::datatype_null();
    // SAFETY: two blocks described by the two-element arrays above; the new handle is written
    // into `t` and committed, or freed on failure.
    unsafe {
        if mpi::PMPI_Type_create_hindexed(2, lens.as_ptr(), displs.as_ptr(), consts::byte(), &mut t) != errclass::SUCCESS {
            return None;
        }
        if mpi::PMPI_Type_commit(&mut t) != errclass::SUCCESS {
            mpi::PMPI_Type_free(&mut t);
            return None;
        }
    }
    Some(t)
}

thread_local! {
    /// This thread's split types for sluice's own point-to-point messages, by (bytes, split):
    /// a pipelined transfer's chunks are mostly one size, so a handful covers them.
    static CACHED: std::cell::RefCell<Vec<(usize, usize, mpi::MPI_Datatype)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// At most this many cached split types per thread; the oldest is freed for a new one.
const CACHED_MAX: usize = 4;

/// Every cached split type of every thread, until it is evicted or `MPI_Finalize` frees it
/// ([`free_cached`]): MPICH reports datatypes still allocated at finalize ("yaksa: N leaked
/// handle pool objects"), which the application without sluice would not print. Touched only
/// when a type is made or evicted, never on a message's path.
static LIVE: std::sync::Mutex<Vec<LiveType>> = std::sync::Mutex::new(Vec::new());

struct LiveType(mpi::MPI_Datatype);

// SAFETY: a datatype handle is a plain value that any thread may pass to MPI (the MPI's own
// thread rules apply to the calls, made under the MPI's thread level).
unsafe impl Send for LiveType {}

/// [`split_type`] from this thread's cache (the caller does not free it). A type evicted while
/// a send still uses it stays alive for that send (MPI's rule for freed datatypes).
pub fn cached_split_type(bytes: usize, at: usize) -> Option<mpi::MPI_Datatype> {
    CACHED.with_borrow_mut(|c| {
        if let Some(&(_, _, t)) = c.iter().find(|e| (e.0, e.1) == (bytes, at)) {
            return Some(t);
        }
        let t = split_type(bytes, at)?;
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() == CACHED_MAX {
            let old = c.remove(0).2;
            live.retain(|l| l.0 != old);
            free_type(old);
        }
        live.push(LiveType(t));
        c.push((bytes, at, t));
        Some(t)
    })
}

/// At `MPI_Finalize`: frees every cached split type (the caches are never used again).
pub fn free_cached() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for t in live {
        free_type(t.0);
    }
    CACHED.with_borrow_mut(Vec::clear);
}

/// Frees a type made by [`split_type`]. MPI keeps a freed type alive for the operations that
/// use it, so this is legal while a nonblocking collective is pending.
pub fn free_type(mut t: mpi::MPI_Datatype) {
    // SAFETY: a committed type sluice created; the handle is not used after this.
    unsafe { mpi::PMPI_Type_free(&mut t) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_leave_two_non_empty_runs() {
        for bytes in [2usize, 3, 63, 64, 65, 127, 128, 129, 4096, 65536, 131072 + 8, 1 << 30] {
            let at = split_at(bytes);
            assert!(at > 0 && at < bytes, "bytes={bytes} at={at}");
            if bytes >= 2 * GAP {
                assert_eq!(at % GAP, 0, "bytes={bytes}");
            }
        }
    }
}
