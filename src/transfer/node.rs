//! Which world ranks share this process's node, as the MPI sees it: `MPI_Comm_split_type` with
//! `MPI_COMM_TYPE_SHARED` at `MPI_Init`, the one place that decides where the shared-memory
//! arena may be used (`transfer::shm`) and which transfers cross the network (statistics).
//! Host names are not compared: on an emulated cluster (network namespaces, scripts/cluster.sh)
//! or a container host, processes can have different names and still see each other's
//! `/proc`, or the same name and be apart; the MPI's own grouping is what its transports use.

use std::ffi::c_int;
use std::sync::OnceLock;

use crate::ffi::{consts, errclass, mpi};

/// The node of every world rank, numbered by the node's lowest world rank.
struct Nodes {
    of: Vec<c_int>,
    me: c_int,
    /// More than one node (kept: asked once per converted collective).
    spans: bool,
}

static NODES: OnceLock<Nodes> = OnceLock::new();

/// Learns the node of every world rank (collective over `MPI_COMM_WORLD`; every rank calls it
/// once from `MPI_Init`). If the MPI cannot split, every rank is taken to be on a node of its
/// own: nothing is shared, which is always correct.
pub fn start() {
    let world = consts::comm_world();
    let (mut me, mut n) = (0, 0);
    // SAFETY: plain queries of an active world communicator.
    unsafe {
        mpi::PMPI_Comm_rank(world, &mut me);
        mpi::PMPI_Comm_size(world, &mut n);
    }
    let mut shared = consts::comm_null();
    let mut leader = me;
    // SAFETY: collective over MPI_COMM_WORLD from MPI_Init; the new communicator is freed here.
    unsafe {
        let info = consts::info_null();
        if mpi::PMPI_Comm_split_type(world, mpi::MPI_COMM_TYPE_SHARED as c_int, me, info, &mut shared) == errclass::SUCCESS
            && shared != consts::comm_null()
        {
            // The lowest world rank of the node names it (key = world rank: node rank 0 is it).
            mpi::PMPI_Bcast((&mut leader as *mut c_int).cast(), 1, consts::int(), 0, shared);
            mpi::PMPI_Comm_free(&mut shared);
        }
    }
    let mut of = vec![0 as c_int; n.max(1) as usize];
    // SAFETY: collective; one int per rank.
    let rc =
        unsafe { mpi::PMPI_Allgather((&leader as *const c_int).cast(), 1, consts::int(), of.as_mut_ptr().cast(), 1, consts::int(), world) };
    if rc != errclass::SUCCESS {
        of = (0..n.max(1)).collect();
    }
    let mut nodes = Nodes { of, me, spans: false };
    nodes.spans = nodes.count() > 1;
    log::debug!("node {}: {} of {} ranks, {} nodes", nodes.mine(), nodes.members().len(), nodes.of.len(), nodes.count());
    let _ = NODES.set(nodes);
}

impl Nodes {
    fn mine(&self) -> c_int {
        self.of.get(self.me as usize).copied().unwrap_or(self.me)
    }

    fn members(&self) -> Vec<c_int> {
        let mine = self.mine();
        (0..self.of.len() as c_int).filter(|&r| self.of[r as usize] == mine).collect()
    }

    fn count(&self) -> usize {
        self.of.iter().enumerate().filter(|&(r, &leader)| r as c_int == leader).count()
    }
}

/// Whether the job runs on more than one node (`false` before [`start`]).
pub fn spans_nodes() -> bool {
    NODES.get().is_some_and(|n| n.spans)
}

/// Ranks in `MPI_COMM_WORLD` (`None` before [`start`]).
pub fn world_size() -> Option<usize> {
    NODES.get().map(|n| n.of.len())
}

/// The node of each world rank in `world_ranks` (named by the node's lowest world rank), or
/// `None` before [`start`] or for a rank outside the world.
pub fn nodes_of(world_ranks: &[c_int]) -> Option<Vec<c_int>> {
    let n = NODES.get()?;
    world_ranks.iter().map(|&r| usize::try_from(r).ok().and_then(|r| n.of.get(r).copied())).collect()
}

/// Translates `ranks` of `comm` into `MPI_COMM_WORLD` ranks (`MPI_UNDEFINED` where a rank is
/// not in the world, e.g. a spawned process; `MPI_PROC_NULL` stays itself); `None` if the MPI
/// refuses.
pub fn world_ranks(comm: mpi::MPI_Comm, ranks: &[c_int]) -> Option<Vec<c_int>> {
    let mut world = vec![crate::ffi::UNDEFINED; ranks.len()];
    // SAFETY: MPI_Group is a plain handle (pointer or int); all-zero is overwritten below.
    let (mut gc, mut gw): (mpi::MPI_Group, mpi::MPI_Group) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: group handles are created and freed here; `ranks.len()` ranks are translated into
    // `world`, of the same length.
    let ok = unsafe {
        mpi::PMPI_Comm_group(comm, &mut gc) == errclass::SUCCESS && {
            let ok = mpi::PMPI_Comm_group(consts::comm_world(), &mut gw) == errclass::SUCCESS && {
                let ok =
                    mpi::PMPI_Group_translate_ranks(gc, ranks.len() as c_int, ranks.as_ptr(), gw, world.as_mut_ptr()) == errclass::SUCCESS;
                mpi::PMPI_Group_free(&mut gw);
                ok
            };
            mpi::PMPI_Group_free(&mut gc);
            ok
        }
    };
    ok.then_some(world)
}

/// Whether world rank `rank` is on this process's node (`false` before [`start`] and for a
/// rank outside the world).
pub fn is_local(rank: c_int) -> bool {
    NODES.get().is_some_and(|n| usize::try_from(rank).ok().and_then(|r| n.of.get(r)).is_some_and(|&l| l == n.mine()))
}

/// This host's name (`gethostname`), or "localhost" when it cannot be read.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(s) if rc == 0 && !s.is_empty() => s.to_string(),
        _ => "localhost".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_named_by_their_lowest_rank() {
        let n = Nodes { of: vec![0, 1, 0, 1, 4], me: 2, spans: true };
        assert_eq!(n.mine(), 0);
        assert_eq!(n.members(), [0, 2]);
        assert_eq!(n.count(), 3);
    }
}
