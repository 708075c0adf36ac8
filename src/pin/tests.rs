//! The bucket table's invariants on random operation sequences, against a backend that records
//! what is pinned (so the table's belief and the pins made agree at every step), and the `mlock`
//! backend against the kernel's own count.

use std::collections::BTreeSet;
use std::sync::Mutex;

use proptest::prelude::*;

use super::backend::{Backend, Mlock};
use super::bucket::BucketTable;
use super::{Limits, PinError, Use};

/// Records pinned units of `unit` bytes; a double pin or an unpin of nothing is a table bug.
struct Recorder {
    unit: usize,
    pinned: Mutex<BTreeSet<usize>>,
    errors: Mutex<Vec<String>>,
    /// Refuse pins touching this unit (a backend failure in the middle of an acquire).
    refuse: Option<usize>,
}

impl Recorder {
    fn new(unit: usize, refuse: Option<usize>) -> Recorder {
        Recorder { unit, pinned: Mutex::new(BTreeSet::new()), errors: Mutex::new(Vec::new()), refuse }
    }
}

impl Backend for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn pin(&self, addr: usize, len: usize) -> Result<(), PinError> {
        let units = addr / self.unit..(addr + len) / self.unit;
        if self.refuse.is_some_and(|r| units.contains(&r)) {
            return Err(PinError::Backend { backend: "recorder", errno: libc::ENOMEM });
        }
        let mut p = self.pinned.lock().unwrap();
        for u in units {
            if !p.insert(u) {
                self.errors.lock().unwrap().push(format!("unit {u} pinned twice"));
            }
        }
        Ok(())
    }
    fn unpin(&self, addr: usize, len: usize) -> Result<(), PinError> {
        let mut p = self.pinned.lock().unwrap();
        for u in addr / self.unit..(addr + len) / self.unit {
            if !p.remove(&u) {
                self.errors.lock().unwrap().push(format!("unit {u} unpinned but not pinned"));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Op {
    Acquire(usize, usize, bool),
    Release(usize),
    Invalidate(usize, usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // Addresses in units of 1 KiB over a 256 KiB space, so that ranges share buckets.
    let op = prop_oneof![
        4 => (0usize..256, 1usize..24, any::<bool>()).prop_map(|(a, l, r)| Op::Acquire(a << 10, l << 10, r)),
        3 => (0usize..64).prop_map(Op::Release),
        1 => (0usize..256, 1usize..40).prop_map(|(a, l)| Op::Invalidate(a << 10, l << 10)),
    ];
    proptest::collection::vec(op, 1..120)
}

fn run(limits: Limits, seq: &[Op], refuse: Option<usize>) -> Result<(), TestCaseError> {
    let rec = Recorder::new(limits.bucket, refuse);
    let mut t = BucketTable::new(limits);
    // The references each successful acquire took, released later by index.
    let mut held: Vec<(usize, usize, Use)> = Vec::new();
    for op in seq {
        match *op {
            Op::Acquire(a, l, remote) => {
                let how = if remote { Use::Remote } else { Use::Local };
                let before = t.counters();
                match t.acquire(&rec, a, l, how) {
                    Ok(()) => held.push((a, l, how)),
                    Err(_) => prop_assert_eq!(t.counters().hits, before.hits, "a failed acquire counted hits"),
                }
            }
            Op::Release(i) if !held.is_empty() => {
                let (a, l, how) = held.swap_remove(i % held.len());
                t.release(&rec, a, l, how);
            }
            Op::Release(_) => {}
            Op::Invalidate(a, l) => {
                t.invalidate(&rec, a, l);
                // Nothing overlapping the range stays pinned, neither in the table nor in fact.
                let units: BTreeSet<usize> = rec.pinned.lock().unwrap().clone();
                let (first, end) = (a / limits.bucket, (a + l - 1) / limits.bucket + 1);
                prop_assert!(units.range(first..end).next().is_none(), "stale bucket after invalidating {a}+{l}");
            }
        }
        t.check().map_err(TestCaseError::fail)?;
        let errors = rec.errors.lock().unwrap().clone();
        prop_assert!(errors.is_empty(), "{:?}", errors);
        prop_assert_eq!(rec.pinned.lock().unwrap().len() * limits.bucket, t.pinned_bytes(), "table and backend disagree");
    }
    // Releasing everything leaves only victims, at most MAXVICTIM of them; draining, nothing.
    for (a, l, how) in held.drain(..) {
        t.release(&rec, a, l, how);
    }
    prop_assert!(t.pinned_bytes() <= limits.max_victim);
    t.drain_victims(&rec);
    prop_assert_eq!(t.pinned_bytes(), 0);
    prop_assert!(rec.pinned.lock().unwrap().is_empty());
    t.check().map_err(TestCaseError::fail)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_every_invariant(seq in ops(), m in 0usize..16, v in 0usize..8, bucket_pages in 0u32..3) {
        let bucket = super::page_size() << bucket_pages;
        let limits = Limits { m: m * bucket, max_victim: v * bucket, bucket };
        run(limits, &seq, None)?;
    }

    #[test]
    fn a_refused_pin_leaves_nothing_pinned(seq in ops(), refuse in 0usize..64) {
        let bucket = super::page_size();
        run(Limits { m: 12 * bucket, max_victim: 4 * bucket, bucket }, &seq, Some(refuse))?;
    }
}

#[test]
fn hits_come_from_the_table_and_the_victim_fifo() {
    let bucket = super::page_size();
    let rec = Recorder::new(bucket, None);
    let mut t = BucketTable::new(Limits { m: 4 * bucket, max_victim: 3 * bucket, bucket });
    t.acquire(&rec, 0, 3 * bucket, Use::Local).unwrap();
    assert_eq!((t.counters().misses, t.counters().pins), (3, 1), "adjacent buckets pinned in one call");
    assert_eq!(t.acquire(&rec, 8 * bucket, bucket, Use::Local), Err(PinError::Full), "local operations get MAXVICTIM");
    t.acquire(&rec, bucket, bucket, Use::Remote).unwrap();
    assert_eq!(t.counters().hits, 1);
    t.release(&rec, 0, 3 * bucket, Use::Local);
    // Buckets 0 and 2 are victims now; bucket 1 is held by the remote firehose.
    assert_eq!((t.victim_bytes(), t.remote_bytes()), (2 * bucket, bucket));
    t.acquire(&rec, 2 * bucket, bucket, Use::Local).unwrap();
    assert_eq!((t.counters().hits, t.counters().pins, t.victim_bytes()), (2, 1, bucket), "a victim reused without a pin");
    // Seven buckets is the limit: three more remote ones fit beside the last victim (bucket 0),
    // a fourth evicts it; then M is reached.
    t.acquire(&rec, 10 * bucket, 3 * bucket, Use::Remote).unwrap();
    assert_eq!((t.pinned_bytes(), t.victim_bytes()), (6 * bucket, bucket));
    assert_eq!(t.acquire(&rec, 20 * bucket, bucket, Use::Remote), Err(PinError::Full), "M reached");
    t.acquire(&rec, 20 * bucket, 2 * bucket, Use::Local).unwrap();
    assert_eq!((t.pinned_bytes(), t.victim_bytes()), (7 * bucket, 0));
    assert!(!rec.pinned.lock().unwrap().contains(&0), "the victim was unpinned");
    assert_eq!(t.acquire(&rec, 22 * bucket, bucket, Use::Local), Err(PinError::Full));
    assert_eq!(t.counters().pinned_high, 7 * bucket);
    t.check().unwrap();
}

#[test]
fn remote_firehoses_are_bounded_by_m() {
    let bucket = super::page_size();
    let rec = Recorder::new(bucket, None);
    let mut t = BucketTable::new(Limits { m: 2 * bucket, max_victim: 8 * bucket, bucket });
    t.acquire(&rec, 0, 2 * bucket, Use::Remote).unwrap();
    assert_eq!(t.acquire(&rec, 5 * bucket, bucket, Use::Remote), Err(PinError::Full));
    t.acquire(&rec, 5 * bucket, bucket, Use::Local).unwrap();
    t.acquire(&rec, 0, bucket, Use::Remote).unwrap();
    t.check().unwrap();
}

#[test]
fn limits_fit_the_lock_budget() {
    let page = super::page_size();
    let l = Limits { m: 256 << 20, max_victim: 64 << 20, bucket: page };
    assert_eq!(l.fit(None), None);
    assert_eq!(l.fit(Some(1 << 30)), None);
    let f = l.fit(Some(8 << 20)).unwrap();
    assert!(f.m + f.max_victim <= 8 << 20 && f.m > f.max_victim && f.m % page == 0);
    assert!(Limits { m: 1, max_victim: 1, bucket: page + 1 }.check().is_err());
    assert_eq!(Limits { m: page + 5, max_victim: 3, bucket: page }.check().unwrap(), Limits { m: page, max_victim: 0, bucket: page });
}

/// `VmLck` of this process, in bytes (the kernel's count of locked memory).
fn vm_locked() -> usize {
    super::backend::locked_bytes()
}

#[test]
fn mlock_pins_what_the_table_says() {
    let page = super::page_size();
    let n = 64;
    // SAFETY: a private anonymous mapping of our own, unmapped at the end.
    let mem = unsafe {
        libc::mmap(std::ptr::null_mut(), n * page, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(mem, libc::MAP_FAILED);
    let base = mem as usize;
    let before = vm_locked();
    let mut t = BucketTable::new(Limits { m: 16 * page, max_victim: 10 * page, bucket: page });
    t.acquire(&Mlock, base, 10 * page, Use::Local).unwrap();
    assert_eq!(vm_locked() - before, 10 * page);
    t.release(&Mlock, base, 10 * page, Use::Local);
    assert_eq!(vm_locked() - before, 10 * page, "released buckets stay pinned as victims");
    t.acquire(&Mlock, base + 20 * page, 2 * page, Use::Local).unwrap();
    assert_eq!(vm_locked() - before, 12 * page);
    t.release(&Mlock, base + 20 * page, 2 * page, Use::Local);
    // Twelve victims, MAXVICTIM ten: the two released first are unpinned.
    assert_eq!(vm_locked() - before, 10 * page);
    t.invalidate(&Mlock, base + 6 * page, 4 * page);
    assert_eq!(vm_locked() - before, 6 * page);
    t.drain_victims(&Mlock);
    assert_eq!(vm_locked(), before);
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(mem, n * page) };
}
