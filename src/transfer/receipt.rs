//! Receipts: when a receiver of this node finished a large message, written where its sender can
//! read it. Each arena holds one [`Slot`] per world rank of its node's receivers
//! (`transfer::shm`); a receiver appends (bytes, finish time) to the slot for itself in the
//! *sender's* arena, and the sender reads its own arena. Both sides read `CLOCK_MONOTONIC`,
//! one clock on one node, so a sender can tell how long its message took end to end: what the
//! point-to-point path contest (`protocol::p2p::contest`) compares, since two paths whose sends
//! return equally fast can leave the receiver different work (one unpacks while the chunks
//! arrive, the other after the last byte).
//!
//! A slot is a seqlock over a ring of [`RING`] records: the sequence number is odd while a record
//! is written and counts two per record, so record `n` lives in `ring[n % RING]` until record
//! `n + RING` replaces it. A reader that saw the count before its message can thus find that
//! message's record even when the receiver finished one or two later messages meanwhile.
//!
//! Beside each slot the sender keeps a [`Hints`] line for the same receiver: per size class of
//! a message, the receive the sender asks that receiver to post for its next message of the
//! class (the contest's way to measure, and then to use, the pairing of a send path with a
//! receive path; a receive follows it only where the application's call leaves the path free),
//! and a [`Medians`] line: what the sender measured of each pairing, which the receiver's
//! contest for its own sends back to the sender decides on too.
//!
//! Hand-written: the record and its placement are sluice's own protocol state between two of
//! its processes (no crate speaks it); the atomics are std's.

use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Records a slot keeps.
pub const RING: u64 = 3;

/// One receiver's records for one sender, one cache line.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Slot {
    /// Twice the records written, plus one while one is being written.
    seq: AtomicU64,
    /// (bytes, finish time in ns of `CLOCK_MONOTONIC`) per record.
    ring: [[AtomicU64; 2]; RING as usize],
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

/// What a reader finds for one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The record: (bytes, finish time in ns).
    Ready(u64, u64),
    /// Not written yet (or being written).
    NotYet,
    /// Replaced by later records.
    Lost,
}

impl Slot {
    /// Appends a record (the receiver). `false` when another thread of this process is writing
    /// the same slot: that record is dropped, which the reader sees as a record it cannot match.
    pub fn append(&self, bytes: u64, finish_ns: u64) -> bool {
        let s = self.seq.load(Ordering::Relaxed);
        if s & 1 == 1 || self.seq.compare_exchange(s, s + 1, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return false;
        }
        // The odd count is visible before any of the record's words.
        fence(Ordering::Release);
        let r = &self.ring[((s / 2) % RING) as usize];
        r[0].store(bytes, Ordering::Relaxed);
        r[1].store(finish_ns, Ordering::Relaxed);
        self.seq.store(s + 2, Ordering::Release);
        true
    }

    /// The number the next record will have (the reader, before its message leaves: a record
    /// being written is an earlier message's).
    pub fn next_record(&self) -> u64 {
        self.seq.load(Ordering::Acquire).div_ceil(2)
    }

    /// Record `n` (the reader).
    pub fn read(&self, n: u64) -> Read {
        for _ in 0..4 {
            let s1 = self.seq.load(Ordering::Acquire);
            let written = s1 / 2;
            if written <= n {
                return Read::NotYet;
            }
            if written - n > RING || (s1 & 1 == 1 && written + 1 - n > RING) {
                return Read::Lost;
            }
            let r = &self.ring[(n % RING) as usize];
            let (bytes, at) = (r[0].load(Ordering::Relaxed), r[1].load(Ordering::Relaxed));
            // The words were read before the count is read again.
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return Read::Ready(bytes, at);
            }
        }
        Read::NotYet
    }
}

/// What one sender asks one receiver to post, one byte per size class (a power of two of
/// packed bytes), one cache line: 0 = no request (the receiver's own rules); any other value is
/// the protocol's code for a receive path. Written only by the sender, read by the receiver.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Hints([AtomicU8; 64]);

impl Default for Hints {
    fn default() -> Hints {
        Hints(std::array::from_fn(|_| AtomicU8::new(0)))
    }
}

const _: () = assert!(std::mem::size_of::<Hints>() == 64);

impl Hints {
    /// The code for size class `class` (0 for a class past the line).
    pub fn get(&self, class: u32) -> u8 {
        self.0.get(class as usize).map_or(0, |b| b.load(Ordering::Relaxed))
    }

    /// Sets the code for size class `class` (the sender); a store only when it changes, so a
    /// sender that keeps asking for the same path does not take the line from its reader.
    pub fn set(&self, class: u32, code: u8) {
        if let Some(b) = self.0.get(class as usize) {
            if b.load(Ordering::Relaxed) != code {
                b.store(code, Ordering::Relaxed);
            }
        }
    }
}

/// What one sender measured of its sends to one receiver, per size class from [`Medians::FIRST`]
/// (32 KiB) on: each of the four pairings' median time per packed byte and its sample count,
/// with the exact size of the messages measured. Written only by the sender (its path contest,
/// `protocol::p2p::contest`), read by that receiver's own contest for its sends back, which
/// decides on both ranks' samples (an exchange's two directions move the same data: each rank
/// alone decided a 16 MiB class on three samples per pairing, and noise chose the slower
/// pairing). A reader sees a line's words between two equal reads of the size word that names
/// the messages; a line being rewritten reads as empty.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Medians {
    /// [class - FIRST][pairing]: `samples << 12 | log-scale time` (0: not measured).
    words: [[AtomicU16; 4]; Medians::CLASSES],
    /// [class - FIRST]: the messages' size (`u32` of packed bytes; 0: nothing published).
    sizes: [AtomicU32; Medians::CLASSES],
}

impl Default for Medians {
    fn default() -> Medians {
        Medians {
            words: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU16::new(0))),
            sizes: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

const _: () = assert!(std::mem::size_of::<Medians>() == 192);

/// A pairing's median as [`Medians`] publishes it: seconds per byte, and samples.
pub type Median = (f64, u8);

impl Medians {
    /// The first size class with a line (32 KiB: the smallest contested message).
    pub const FIRST: u32 = 15;
    const CLASSES: usize = 16;
    /// Steps of the log-scale time per power of two (0.54% apart).
    const STEPS: f64 = 128.0;
    /// log2 of the smallest time per byte a word holds (2^-48 s/B: 280 TB/s).
    const FLOOR: f64 = -48.0;

    /// A word: `(seconds per byte, samples)`; 0 for no samples or no finite time.
    fn word((t, n): Median) -> u16 {
        if n == 0 || !(t.is_finite() && t > 0.0) {
            return 0;
        }
        let q = ((t.log2() - Medians::FLOOR) * Medians::STEPS).round().clamp(1.0, 4095.0) as u16;
        (u16::from(n.min(15)) << 12) | q
    }

    fn of_word(w: u16) -> Median {
        let n = (w >> 12) as u8;
        if n == 0 {
            return (f64::INFINITY, 0);
        }
        (((w & 0xfff) as f64 / Medians::STEPS + Medians::FLOOR).exp2(), n)
    }

    fn size_word(bytes: usize) -> u32 {
        (bytes as u64 ^ (bytes as u64 >> 32)) as u32 | 1
    }

    /// Publishes the pairings' medians of messages of `bytes` packed bytes (the sender).
    pub fn set(&self, bytes: usize, medians: [Median; 4]) {
        let Some(i) = Medians::index(bytes) else { return };
        // Emptied first: a reader never pairs these words with another size's.
        self.sizes[i].store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        for (w, m) in self.words[i].iter().zip(medians) {
            w.store(Medians::word(m), Ordering::Relaxed);
        }
        self.sizes[i].store(Medians::size_word(bytes), Ordering::Release);
    }

    /// Withdraws what was published for messages of `bytes`' size class.
    pub fn clear(&self, bytes: usize) {
        if let Some(i) = Medians::index(bytes) {
            self.sizes[i].store(0, Ordering::Release);
        }
    }

    /// The pairings' medians published for messages of exactly `bytes` packed bytes (the
    /// receiver; `None`: none, another size of the class, or being rewritten).
    pub fn get(&self, bytes: usize) -> Option<[Median; 4]> {
        let i = Medians::index(bytes)?;
        let want = Medians::size_word(bytes);
        if self.sizes[i].load(Ordering::Acquire) != want {
            return None;
        }
        let m = std::array::from_fn(|k| Medians::of_word(self.words[i][k].load(Ordering::Relaxed)));
        // The words were read before the size word is read again.
        fence(Ordering::Acquire);
        (self.sizes[i].load(Ordering::Relaxed) == want).then_some(m)
    }

    fn index(bytes: usize) -> Option<usize> {
        let c = crate::logging::size_class(bytes);
        c.checked_sub(Medians::FIRST).map(|i| i as usize).filter(|&i| i < Medians::CLASSES)
    }
}

/// Now on `CLOCK_MONOTONIC`, in ns: the clock every process of the node shares (`Instant`
/// reads it too but does not show its value).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes one timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_by_number_until_the_ring_replaces_them() {
        let s = Slot::default();
        let n = s.next_record();
        assert_eq!(n, 0);
        assert_eq!(s.read(n), Read::NotYet);
        assert!(s.append(100, 7));
        assert_eq!(s.read(n), Read::Ready(100, 7));
        assert!(s.append(200, 8));
        assert!(s.append(300, 9));
        assert_eq!(s.read(n), Read::Ready(100, 7), "still in the ring after two more");
        assert_eq!(s.read(2), Read::Ready(300, 9));
        assert!(s.append(400, 10));
        assert_eq!(s.read(n), Read::Lost);
        assert_eq!(s.read(1), Read::Ready(200, 8));
        assert_eq!(s.next_record(), 4);
        assert_eq!(s.read(4), Read::NotYet);
    }

    #[test]
    fn a_record_being_written_is_neither_read_nor_overwritten() {
        let s = Slot::default();
        assert!(s.append(1, 1));
        s.seq.fetch_add(1, Ordering::Relaxed); // a writer in the middle of record 1
        assert!(!s.append(2, 2), "a second writer drops its record");
        assert_eq!(s.next_record(), 2, "the record in progress belongs to an earlier message");
        assert_eq!(s.read(1), Read::NotYet);
        assert_eq!(s.read(0), Read::Ready(1, 1));
        s.seq.fetch_add(1, Ordering::Relaxed);
        assert!(s.append(3, 3));
        assert!(s.append(4, 4));
        // Record 4 is being written into record 1's place.
        s.seq.fetch_add(1, Ordering::Relaxed);
        assert_eq!(s.read(1), Read::Lost);
        assert_eq!(s.read(2), Read::Ready(3, 3));
    }

    #[test]
    fn concurrent_writers_and_a_reader_never_see_a_torn_record() {
        let s = std::sync::Arc::new(Slot::default());
        let writers: Vec<_> = (0..2)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let v = t * 1_000_000 + i;
                        s.append(v, v + 1);
                    }
                })
            })
            .collect();
        let mut seen = 0;
        while seen < 1000 {
            let n = s.next_record().saturating_sub(1);
            if let Read::Ready(b, at) = s.read(n) {
                assert_eq!(at, b + 1, "torn record {b} {at}");
                seen += 1;
            }
            if writers.iter().all(|w| w.is_finished()) {
                break;
            }
        }
        for w in writers {
            w.join().unwrap();
        }
    }

    #[test]
    fn hints_keep_one_code_per_size_class() {
        let h = Hints::default();
        assert_eq!(h.get(20), 0, "no request yet");
        h.set(20, 2);
        h.set(15, 1);
        assert_eq!((h.get(20), h.get(15), h.get(21)), (2, 1, 0));
        h.set(20, 0);
        assert_eq!(h.get(20), 0);
        h.set(64, 1);
        assert_eq!(h.get(64), 0, "past the line: ignored");
    }

    #[test]
    fn medians_are_read_back_for_the_size_they_were_published_for() {
        let m = Medians::default();
        let bytes = 16 << 20;
        assert_eq!(m.get(bytes), None, "nothing published");
        let times = [(1.0e-10, 3), (f64::INFINITY, 0), (2.5e-10, 15), (7.0e-11, 20)];
        m.set(bytes, times);
        let got = m.get(bytes).expect("published");
        for (k, ((t, n), (g, gn))) in times.iter().zip(got).enumerate() {
            if *n == 0 {
                assert_eq!((g, gn), (f64::INFINITY, 0), "pairing {k}: not measured");
            } else {
                assert!((g / t - 1.0).abs() < 0.003, "pairing {k}: {g} for {t}");
                assert_eq!(gn, (*n).min(15), "pairing {k}");
            }
        }
        assert_eq!(m.get(bytes + 8), None, "another size of the class");
        assert_eq!(m.get(bytes * 2), None, "another class");
        assert_eq!(m.get(1 << 10), None, "below the first class");
        m.set(1 << 10, times); // ignored: no line
        m.clear(bytes + 1);
        assert_eq!(m.get(bytes), None, "withdrawn for the class");
    }

    #[test]
    fn the_clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(a > 0 && b >= a);
    }
}
