//! The firehose table of the paper (Section 3.2, Table 1): the remote buckets this process has
//! mapped its firehoses onto, per remote process, with a reference count per firehose (operations
//! in flight through it) and a victim FIFO per remote process (mapped firehoses no operation uses,
//! moved first when new ones are needed). Each process owns `F` firehoses to every other process;
//! the target guarantees a mapped bucket stays pinned (and attached to the RMA window) until the
//! firehose is moved away.
//!
//! Pure bookkeeping: the move requests it asks for are sent and answered by the protocol layer
//! (`protocol::rma`). Only the protocol's threads use it (behind its lock), never the hooks, so
//! it may allocate.

use std::collections::{BTreeMap, HashMap};

/// A firehose's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Asked for by the move request `id`, not answered yet.
    Pending(u64),
    /// Mapped: the target's bucket is pinned and attached (`writable`: the target may be written).
    Mapped { writable: bool },
}

#[derive(Clone, Copy, Debug)]
struct Firehose {
    refs: u32,
    state: State,
    /// Its position in its process's victim FIFO (mapped and unreferenced only).
    victim: Option<u64>,
}

/// What an operation on remote buckets needs before it can move data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cover {
    /// Every bucket is mapped: move the data now (one-sided).
    Ready,
    /// Some buckets are being mapped by earlier move requests: wait for their answers.
    Waiting,
    /// A move request must be sent: map `map` (new firehoses, pending under `id`), unmap
    /// `unmap` (victims moved away). The operation also waits for it.
    Move {
        /// The move request's id.
        id: u64,
        /// Remote buckets to pin and attach.
        map: Vec<usize>,
        /// Remote buckets this process no longer needs pinned.
        unmap: Vec<usize>,
    },
    /// All `F` firehoses to that process are in use by operations in flight: retry after one
    /// of them completes. Nothing was taken.
    Busy,
}

/// The firehose table of one process.
pub struct FirehoseTable {
    /// `F`: firehoses to each other process.
    per_rank: usize,
    shift: u32,
    hoses: HashMap<(i32, usize), Firehose>,
    /// Per remote process: FIFO position -> bucket (oldest first).
    victims: HashMap<i32, BTreeMap<u64, usize>>,
    /// Firehoses per remote process (mapped or pending).
    used: HashMap<i32, usize>,
    next_seq: u64,
    next_id: u64,
    /// Operations that found every bucket mapped.
    pub hits: u64,
    /// Move requests asked for.
    pub moves: u64,
}

impl FirehoseTable {
    /// `per_rank` firehoses to each process, buckets of `bucket` bytes (a power of two).
    pub fn new(per_rank: usize, bucket: usize) -> FirehoseTable {
        FirehoseTable {
            per_rank,
            shift: bucket.trailing_zeros(),
            hoses: HashMap::new(),
            victims: HashMap::new(),
            used: HashMap::new(),
            next_seq: 0,
            next_id: 0,
            hits: 0,
            moves: 0,
        }
    }

    /// `F`.
    pub fn per_rank(&self) -> usize {
        self.per_rank
    }

    /// The remote buckets `[first, end)` of `len` bytes at `addr` (`len > 0`, no overflow).
    pub fn buckets(&self, addr: usize, len: usize) -> (usize, usize) {
        (addr >> self.shift, ((addr + len - 1) >> self.shift) + 1)
    }

    /// Takes a reference on every firehose an operation on `len` bytes at `addr` of `rank` uses,
    /// asking for a move when some are not mapped. The caller keeps the references until
    /// [`FirehoseTable::release`] (also after `Waiting` and `Move`, not after `Busy`). An
    /// operation may span at most `F` buckets (the protocol splits larger ones).
    pub fn cover(&mut self, rank: i32, addr: usize, len: usize) -> Cover {
        let (first, end) = self.buckets(addr, len);
        debug_assert!(end - first <= self.per_rank);
        let missing: Vec<usize> = (first..end).filter(|b| !self.hoses.contains_key(&(rank, *b))).collect();
        let used = self.used.get(&rank).copied().unwrap_or(0);
        let over = (used + missing.len()).saturating_sub(self.per_rank);
        // Victims among this operation's own buckets are about to be reused, not moved.
        let fifo = self.victims.entry(rank).or_default();
        let movable: Vec<(u64, usize)> =
            fifo.iter().filter(|(_, b)| !(first..end).contains(*b)).take(over).map(|(s, b)| (*s, *b)).collect();
        if movable.len() < over {
            return Cover::Busy;
        }
        let mut unmap = Vec::with_capacity(over);
        for (seq, b) in movable {
            fifo.remove(&seq);
            self.hoses.remove(&(rank, b));
            unmap.push(b);
        }
        let mut waiting = false;
        for b in first..end {
            if let Some(h) = self.hoses.get_mut(&(rank, b)) {
                if let Some(seq) = h.victim.take() {
                    self.victims.get_mut(&rank).expect("has a FIFO").remove(&seq);
                }
                h.refs += 1;
                waiting |= matches!(h.state, State::Pending(_));
            }
        }
        *self.used.entry(rank).or_default() += missing.len() - unmap.len();
        if missing.is_empty() {
            if !waiting {
                self.hits += 1;
            }
            return if waiting { Cover::Waiting } else { Cover::Ready };
        }
        let id = self.next_id;
        self.next_id += 1;
        self.moves += 1;
        for &b in &missing {
            self.hoses.insert((rank, b), Firehose { refs: 1, state: State::Pending(id), victim: None });
        }
        Cover::Move { id, map: missing, unmap }
    }

    /// The answer to move request `id` to `rank`: its buckets are mapped (`Ok(writable)`), or
    /// the target refused them (`Err`: they are forgotten; operations holding them fail).
    pub fn moved(&mut self, rank: i32, id: u64, answer: Result<bool, ()>) {
        let buckets: Vec<usize> =
            self.hoses.iter().filter(|((r, _), h)| *r == rank && h.state == State::Pending(id)).map(|((_, b), _)| *b).collect();
        for b in buckets {
            match answer {
                Ok(writable) => self.hoses.get_mut(&(rank, b)).expect("listed").state = State::Mapped { writable },
                Err(()) => {
                    self.hoses.remove(&(rank, b));
                    *self.used.get_mut(&rank).expect("counted") -= 1;
                }
            }
        }
    }

    /// Where the firehoses of an operation on `len` bytes at `addr` of `rank` stand.
    pub fn state(&self, rank: i32, addr: usize, len: usize) -> Readiness {
        let (first, end) = self.buckets(addr, len);
        let mut writable = true;
        for b in first..end {
            match self.hoses.get(&(rank, b)).map(|h| h.state) {
                None => return Readiness::Refused,
                Some(State::Pending(_)) => return Readiness::Pending,
                Some(State::Mapped { writable: w }) => writable &= w,
            }
        }
        Readiness::Mapped { writable }
    }

    /// Drops an operation's references; unreferenced mapped firehoses join their process's
    /// victim FIFO. Buckets refused meanwhile are skipped: an operation that learns of a refusal
    /// must release at once, before any other operation covers (the protocol does both under
    /// one lock), or it could drop a reference a newer firehose on the same bucket holds.
    pub fn release(&mut self, rank: i32, addr: usize, len: usize) {
        let (first, end) = self.buckets(addr, len);
        for b in first..end {
            let Some(h) = self.hoses.get_mut(&(rank, b)) else { continue };
            if h.refs == 0 {
                continue;
            }
            h.refs -= 1;
            if h.refs == 0 && matches!(h.state, State::Mapped { .. }) {
                let seq = self.next_seq;
                self.next_seq += 1;
                h.victim = Some(seq);
                self.victims.entry(rank).or_default().insert(seq, b);
            }
        }
    }

    /// Firehoses in use (mapped or pending) toward `rank`.
    pub fn used(&self, rank: i32) -> usize {
        self.used.get(&rank).copied().unwrap_or(0)
    }

    /// Checks the invariants (tests): at most `F` per process, counts match, victims are
    /// mapped and unreferenced.
    pub fn check(&self) -> Result<(), String> {
        let mut per: HashMap<i32, usize> = HashMap::new();
        for ((r, b), h) in &self.hoses {
            *per.entry(*r).or_default() += 1;
            match h.victim {
                Some(seq) => {
                    if h.refs != 0 || !matches!(h.state, State::Mapped { .. }) {
                        return Err(format!("victim ({r}, {b}) referenced or not mapped"));
                    }
                    if self.victims.get(r).and_then(|f| f.get(&seq)) != Some(b) {
                        return Err(format!("victim ({r}, {b}) missing from its FIFO"));
                    }
                }
                None if h.refs == 0 && matches!(h.state, State::Mapped { .. }) => {
                    return Err(format!("unreferenced ({r}, {b}) outside the FIFO"));
                }
                None => {}
            }
        }
        for (r, n) in &per {
            if *n > self.per_rank || self.used(*r) != *n {
                return Err(format!("rank {r}: {n} firehoses, counted {}, F = {}", self.used(*r), self.per_rank));
            }
        }
        let in_fifos: usize = self.victims.values().map(|f| f.len()).sum();
        if in_fifos != self.hoses.values().filter(|h| h.victim.is_some()).count() {
            return Err("a FIFO holds a firehose that is not a victim".into());
        }
        Ok(())
    }
}

/// Where an operation's firehoses stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// All mapped; `writable`: the target may be written.
    Mapped {
        /// Every bucket was mapped writable.
        writable: bool,
    },
    /// Some move is not answered yet.
    Pending,
    /// The target refused some bucket (not mapped there, or out of firehose memory).
    Refused,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hit_miss_move_and_victims() {
        let mut t = FirehoseTable::new(4, 4096);
        let Cover::Move { id, map, unmap } = t.cover(1, 0, 3 * 4096) else { panic!() };
        assert_eq!((map, unmap), (vec![0, 1, 2], vec![]));
        assert_eq!(t.cover(1, 4096, 8), Cover::Waiting, "pending buckets make others wait");
        t.moved(1, id, Ok(true));
        assert_eq!(t.state(1, 0, 3 * 4096), Readiness::Mapped { writable: true });
        t.release(1, 0, 3 * 4096);
        t.release(1, 4096, 8);
        assert_eq!(t.cover(1, 0, 100), Cover::Ready, "a victim is reused without a move");
        t.release(1, 0, 100);
        // Two more buckets than F - used: the two oldest victims move.
        let Cover::Move { map, unmap, .. } = t.cover(1, 10 * 4096, 3 * 4096) else { panic!() };
        assert_eq!(map, vec![10, 11, 12]);
        assert_eq!(unmap.len(), 2);
        assert_eq!(t.used(1), 4);
        t.check().unwrap();
        // The last victim moves for one more bucket; then every firehose is in use: Busy.
        let Cover::Move { map, unmap, .. } = t.cover(1, 20 * 4096, 4096) else { panic!() };
        assert_eq!((map.len(), unmap.len()), (1, 1));
        assert_eq!(t.cover(1, 21 * 4096, 4096), Cover::Busy);
        assert_eq!(t.cover(2, 20 * 4096, 4096), Cover::Move { id: 3, map: vec![20], unmap: vec![] }, "F per process");
        t.moved(2, 3, Err(()));
        assert_eq!(t.state(2, 20 * 4096, 1), Readiness::Refused);
        assert_eq!(t.used(2), 0);
        t.check().unwrap();
    }

    proptest! {
        #[test]
        fn random_operations_keep_f_per_process(ops in proptest::collection::vec((0i32..3, 0usize..40, 1usize..5, any::<bool>()), 1..200)) {
            let f = 6;
            let mut t = FirehoseTable::new(f, 4096);
            let mut live: Vec<(i32, usize, usize)> = Vec::new();
            for (rank, b, n, release_one) in ops {
                if release_one && !live.is_empty() {
                    let (r, a, l) = live.remove(b % live.len());
                    t.release(r, a, l);
                } else {
                    match t.cover(rank, b * 4096, n * 4096) {
                        Cover::Move { id, .. } if b % 7 == 0 => {
                            // Refused: the operation fails and releases at once.
                            t.moved(rank, id, Err(()));
                            prop_assert_eq!(t.state(rank, b * 4096, n * 4096), Readiness::Refused);
                            t.release(rank, b * 4096, n * 4096);
                        }
                        Cover::Move { id, .. } => {
                            t.moved(rank, id, Ok(true));
                            live.push((rank, b * 4096, n * 4096));
                        }
                        Cover::Ready | Cover::Waiting => live.push((rank, b * 4096, n * 4096)),
                        Cover::Busy => prop_assert!(t.used(rank) + n > f, "busy with room"),
                    }
                }
                t.check().map_err(TestCaseError::fail)?;
                prop_assert!((0..3).all(|r| t.used(r) <= f));
            }
        }
    }
}
