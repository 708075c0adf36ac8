//! The local bucket table of the firehose paper (Section 3.2, Table 1): one entry per pinned
//! bucket, keyed by bucket number (address / bucket size), with two reference counts (local
//! operations, remote firehoses) and the links of the victim FIFO (pinned buckets no one
//! references, kept pinned for reuse, at most `MAXVICTIM` bytes of them).
//!
//! Invariant, at every instant: pinned bytes <= `M + MAXVICTIM`; buckets referenced by remote
//! firehoses <= `M`; no bucket both referenced and in the FIFO; counts never negative.
//!
//! Nothing here allocates after [`BucketTable::new`]: the table is also updated from the
//! invalidation hooks (`hooks`), which run inside the allocator's own `munmap`/`brk`/`madvise`
//! calls, where allocating could deadlock on the allocator's lock. The hash map is created with
//! the capacity of the most buckets that can ever be pinned at once, and a scratch vector of the
//! same capacity serves range scans.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use super::backend::Backend;
use super::{Limits, PinError, Use};

/// No bucket: the end of the victim FIFO.
const NONE: usize = usize::MAX;

/// One pinned bucket.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Local operations in progress on the bucket.
    local: u32,
    /// Remote firehoses mapped to the bucket.
    remote: u32,
    /// Toward the FIFO's head (more recently released), `NONE` at the head or outside it.
    newer: usize,
    /// Toward the FIFO's tail (evicted first), `NONE` at the tail or outside it.
    older: usize,
    /// In the victim FIFO (then `local == remote == 0`).
    victim: bool,
}

/// What the table has done, for the finalize statistics and the invariant tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Buckets found pinned when an acquire needed them.
    pub hits: u64,
    /// Buckets an acquire had to pin.
    pub misses: u64,
    /// Backend pin calls (adjacent missing buckets of one acquire are one call).
    pub pins: u64,
    /// Backend unpin calls.
    pub unpins: u64,
    /// Buckets dropped because their memory left the process or changed its pages.
    pub invalidated: u64,
    /// Releases of buckets that were invalidated while in use (the application freed memory an
    /// operation still used: erroneous, counted, never a negative count).
    pub stale_releases: u64,
    /// The most bytes pinned at once.
    pub pinned_high: usize,
}

/// The table of pinned buckets.
pub struct BucketTable {
    limits: Limits,
    /// log2 of the bucket size.
    shift: u32,
    entries: HashMap<usize, Entry, FxBuildHasher>,
    /// Most buckets pinned at once: `(M + MAXVICTIM) / bucket`.
    max_pinned: usize,
    /// Most buckets referenced by remote firehoses: `M / bucket`.
    max_remote: usize,
    /// Most buckets in the victim FIFO: `MAXVICTIM / bucket`.
    max_victims: usize,
    /// Buckets with a remote reference.
    remote_buckets: usize,
    victims: usize,
    head: usize,
    tail: usize,
    /// Scratch for range scans (capacity `max_pinned`, never grown).
    scratch: Vec<usize>,
    /// Lowest and one past the highest bucket ever pinned since the table was last empty: a
    /// range outside it holds no entry (the hooks' fast path reads a copy: [`BucketTable::span`]).
    lo: usize,
    hi: usize,
    counters: Counters,
}

impl BucketTable {
    /// An empty table for `limits` (validated by [`Limits::check`]).
    pub fn new(limits: Limits) -> BucketTable {
        let shift = limits.bucket.trailing_zeros();
        let max_pinned = (limits.m + limits.max_victim) >> shift;
        BucketTable {
            limits,
            shift,
            entries: HashMap::with_capacity_and_hasher(max_pinned, FxBuildHasher),
            max_pinned,
            max_remote: limits.m >> shift,
            max_victims: limits.max_victim >> shift,
            remote_buckets: 0,
            victims: 0,
            head: NONE,
            tail: NONE,
            scratch: Vec::with_capacity(max_pinned),
            lo: usize::MAX,
            hi: 0,
            counters: Counters::default(),
        }
    }

    /// The limits the table enforces.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Bytes pinned now.
    pub fn pinned_bytes(&self) -> usize {
        self.entries.len() << self.shift
    }

    /// Bytes in the victim FIFO now.
    pub fn victim_bytes(&self) -> usize {
        self.victims << self.shift
    }

    /// Bytes of buckets referenced by remote firehoses now.
    pub fn remote_bytes(&self) -> usize {
        self.remote_buckets << self.shift
    }

    /// Buckets in use by local operations only (no firehose, not a victim).
    fn local_only(&self) -> usize {
        self.entries.len() - self.victims - self.remote_buckets
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Addresses `[lo, hi)` outside of which no bucket is pinned (empty when nothing is).
    pub fn span(&self) -> (usize, usize) {
        if self.entries.is_empty() {
            (0, 0)
        } else {
            (self.lo << self.shift, self.hi << self.shift)
        }
    }

    /// The buckets `[first, end)` covering `len` bytes at `addr` (`len > 0`).
    fn buckets(&self, addr: usize, len: usize) -> (usize, usize) {
        (addr >> self.shift, ((addr + len - 1) >> self.shift) + 1)
    }

    /// Takes a reference of kind `how` on every bucket of `len` bytes at `addr`, pinning the ones
    /// not pinned (adjacent ones in one backend call), evicting victims to stay within the
    /// limit. Fails when the buckets cannot fit or the backend refuses; then no reference is
    /// taken and nothing this call pinned stays pinned (victims it evicted stay evicted).
    pub fn acquire(&mut self, backend: &dyn Backend, addr: usize, len: usize, how: Use) -> Result<(), PinError> {
        if len == 0 {
            return Ok(());
        }
        if addr.checked_add(len).is_none() {
            return Err(PinError::Range);
        }
        let (first, end) = self.buckets(addr, len);
        let mut missing = 0;
        let mut new_remote = 0;
        for b in first..end {
            match self.entries.get(&b) {
                None => {
                    missing += 1;
                    new_remote += 1;
                }
                Some(e) if e.remote == 0 => new_remote += 1,
                Some(_) => {}
            }
        }
        if how == Use::Remote && self.remote_buckets + new_remote > self.max_remote {
            return Err(PinError::Full);
        }
        // Victims among the buckets of this range are about to leave the FIFO, not be evicted.
        let reusable_victims = (first..end).filter(|b| self.entries.get(b).is_some_and(|e| e.victim)).count();
        // Local operations get at most MAXVICTIM of buckets no firehose holds (the paper's
        // guarantee both ways: remote firehoses always find room within M + MAXVICTIM).
        if how == Use::Local && self.local_only() + missing + reusable_victims > self.max_victims {
            return Err(PinError::Full);
        }
        let over = (self.entries.len() + missing).saturating_sub(self.max_pinned);
        if over > self.victims - reusable_victims {
            return Err(PinError::Full);
        }
        while self.entries.len() + missing > self.max_pinned {
            self.evict_oldest_outside(backend, first, end);
        }
        // Pin the missing runs first, so that a refusal leaves the table as it was.
        let mut b = first;
        while b < end {
            if self.entries.contains_key(&b) {
                b += 1;
                continue;
            }
            let run = b;
            while b < end && !self.entries.contains_key(&b) {
                b += 1;
            }
            if let Err(e) = backend.pin(run << self.shift, (b - run) << self.shift) {
                self.unpin_new_runs(backend, first, run);
                return Err(e);
            }
            self.counters.pins += 1;
            for n in run..b {
                self.entries.insert(n, Entry { local: 0, remote: 0, newer: NONE, older: NONE, victim: false });
            }
            // Marked so that `unpin_new_runs` can tell them from buckets that were pinned before.
            for n in run..b {
                self.entries.get_mut(&n).expect("just inserted").newer = NEW;
            }
        }
        for n in first..end {
            let e = *self.entries.get(&n).expect("pinned above");
            if e.newer == NEW {
                self.counters.misses += 1;
            } else {
                self.counters.hits += 1;
            }
            if e.victim {
                self.unlink(n);
            }
            let e = self.entries.get_mut(&n).expect("pinned above");
            if e.newer == NEW {
                e.newer = NONE;
            }
            match how {
                Use::Local => e.local += 1,
                Use::Remote => {
                    if e.remote == 0 {
                        self.remote_buckets += 1;
                    }
                    e.remote += 1;
                }
            }
        }
        self.lo = self.lo.min(first);
        self.hi = self.hi.max(end);
        self.counters.pinned_high = self.counters.pinned_high.max(self.pinned_bytes());
        Ok(())
    }

    /// Drops one reference of kind `how` from every bucket of `len` bytes at `addr`; buckets no
    /// one references go to the FIFO's head, and the FIFO's tail is unpinned past `MAXVICTIM`.
    pub fn release(&mut self, backend: &dyn Backend, addr: usize, len: usize, how: Use) {
        if len == 0 || addr.checked_add(len).is_none() {
            return;
        }
        let (first, end) = self.buckets(addr, len);
        for n in first..end {
            let Some(e) = self.entries.get_mut(&n) else {
                self.counters.stale_releases += 1;
                continue;
            };
            let count = match how {
                Use::Local => &mut e.local,
                Use::Remote => &mut e.remote,
            };
            if *count == 0 {
                // Invalidated and pinned again by someone else in between: not this reference.
                self.counters.stale_releases += 1;
                continue;
            }
            *count -= 1;
            if how == Use::Remote && e.remote == 0 {
                self.remote_buckets -= 1;
            }
            if e.local == 0 && e.remote == 0 {
                self.push_victim(n);
            }
        }
        while self.victims > self.max_victims {
            let oldest = self.tail;
            self.drop_bucket(backend, oldest);
        }
    }

    /// Forgets and unpins every bucket that overlaps `len` bytes at `addr`: the memory is about
    /// to leave the process or change its pages. References in use are dropped too (an
    /// operation on memory being freed is erroneous; its release is counted as stale).
    pub fn invalidate(&mut self, backend: &dyn Backend, addr: usize, len: usize) {
        if len == 0 || self.entries.is_empty() {
            return;
        }
        let end_addr = addr.saturating_add(len);
        let (first, end) = (addr >> self.shift, ((end_addr - 1) >> self.shift) + 1);
        let (first, end) = (first.max(self.lo), end.min(self.hi));
        if first >= end {
            return;
        }
        self.scratch.clear();
        if end - first <= self.entries.len() {
            for n in first..end {
                if self.entries.contains_key(&n) {
                    self.scratch.push(n);
                }
            }
        } else {
            for &n in self.entries.keys() {
                if n >= first && n < end {
                    self.scratch.push(n);
                }
            }
        }
        for i in 0..self.scratch.len() {
            let n = self.scratch[i];
            self.counters.invalidated += 1;
            self.drop_bucket(backend, n);
        }
    }

    /// Unpins every victim (for `MPI_Finalize` and tests); referenced buckets stay.
    pub fn drain_victims(&mut self, backend: &dyn Backend) {
        while self.tail != NONE {
            let oldest = self.tail;
            self.drop_bucket(backend, oldest);
        }
    }

    /// Checks the invariants (tests): limits, counts, FIFO membership and length.
    pub fn check(&self) -> Result<(), String> {
        if self.pinned_bytes() > self.limits.m + self.limits.max_victim {
            return Err(format!("pinned {} > M + MAXVICTIM", self.pinned_bytes()));
        }
        if self.remote_bytes() > self.limits.m {
            return Err(format!("remote {} > M", self.remote_bytes()));
        }
        if self.victims > self.max_victims {
            return Err(format!("{} victims > {}", self.victims, self.max_victims));
        }
        let mut in_fifo = 0;
        let mut n = self.head;
        let mut prev = NONE;
        while n != NONE {
            let e = self.entries.get(&n).ok_or("FIFO holds a bucket not in the table")?;
            if !e.victim || e.local != 0 || e.remote != 0 {
                return Err(format!("bucket {n} in the FIFO is referenced or unmarked"));
            }
            if e.newer != prev {
                return Err(format!("bucket {n}: broken FIFO link"));
            }
            in_fifo += 1;
            prev = n;
            n = e.older;
        }
        if prev != self.tail || in_fifo != self.victims {
            return Err("FIFO tail or length wrong".into());
        }
        let marked = self.entries.values().filter(|e| e.victim).count();
        let unreferenced = self.entries.values().filter(|e| e.local == 0 && e.remote == 0).count();
        let remote = self.entries.values().filter(|e| e.remote > 0).count();
        if marked != in_fifo || unreferenced != in_fifo || remote != self.remote_buckets {
            return Err("a pinned bucket no one references is outside the FIFO".into());
        }
        Ok(())
    }

    fn push_victim(&mut self, n: usize) {
        let old_head = self.head;
        let e = self.entries.get_mut(&n).expect("caller holds it");
        e.victim = true;
        e.newer = NONE;
        e.older = old_head;
        if let Some(h) = self.entries.get_mut(&old_head) {
            h.newer = n;
        } else {
            self.tail = n;
        }
        self.head = n;
        self.victims += 1;
    }

    fn unlink(&mut self, n: usize) {
        let e = self.entries.get_mut(&n).expect("caller holds it");
        let (newer, older) = (e.newer, e.older);
        e.victim = false;
        e.newer = NONE;
        e.older = NONE;
        match self.entries.get_mut(&newer) {
            Some(x) => x.older = older,
            None => self.head = older,
        }
        match self.entries.get_mut(&older) {
            Some(x) => x.newer = newer,
            None => self.tail = newer,
        }
        self.victims -= 1;
    }

    /// Removes bucket `n` from the table (and the FIFO) and unpins it.
    fn drop_bucket(&mut self, backend: &dyn Backend, n: usize) {
        let Some(e) = self.entries.get(&n).copied() else { return };
        if e.victim {
            self.unlink(n);
        }
        if e.remote > 0 {
            self.remote_buckets -= 1;
        }
        self.entries.remove(&n);
        // An unpin can fail only when the pages are gone already (`munlock` of an unmapped
        // range): the kernel has dropped the pin with them, so the table is right either way.
        let _ = backend.unpin(n << self.shift, 1 << self.shift);
        self.counters.unpins += 1;
        if self.entries.is_empty() {
            self.lo = usize::MAX;
            self.hi = 0;
        }
    }

    /// Evicts the oldest victim that is not one of the buckets `[first, end)` being acquired.
    fn evict_oldest_outside(&mut self, backend: &dyn Backend, first: usize, end: usize) {
        let mut n = self.tail;
        while n != NONE && n >= first && n < end {
            n = self.entries[&n].newer;
        }
        debug_assert!(n != NONE, "acquire counted enough victims");
        self.drop_bucket(backend, n);
    }

    /// Undoes what this acquire pinned so far (buckets marked `NEW` in `[first, upto)`).
    fn unpin_new_runs(&mut self, backend: &dyn Backend, first: usize, upto: usize) {
        for n in first..upto {
            if self.entries.get(&n).is_some_and(|e| e.newer == NEW) {
                self.drop_bucket(backend, n);
            }
        }
    }
}

/// Marks, during one acquire, the buckets it pinned (never a bucket number: addresses end
/// below the top of the address space).
const NEW: usize = usize::MAX - 1;
