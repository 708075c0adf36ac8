//! A runoff between the two fastest pairings of a contest whose samples call them close.
//!
//! Why: a contest's samples change pairing from one message to the next (each timed send after
//! at most three untimed ones of its pairing, none from 4 MiB), while an application's steady
//! state is one pairing after itself. Where two pairings are close, what the other pairing left
//! behind decides: Open MPI, 16 MiB of lammps, the pooled medians called the MPI's engine on
//! both ends and sluice's on both ends even (1.06 and 1.05 GB/s), the tie went to sluice's, and
//! the benchmark then ran 1.16x [1.11-1.20] of the MPI's path forced (Open MPI's single copy
//! recovers from another path's messages over several of its own). So where the runner-up's
//! median is within [`WITHIN`] of the pick's, the two run against each other in blocks: in each
//! block each pairing sends a few messages in a row, untimed first and then timed, and the
//! blocks alternate which pairing goes first (neither always runs on what the other left). The
//! runoff's medians, taken in a steady state like the application's, decide between the two.

use super::{Served, Side};

/// The runner-up's median within this factor of the pick's starts a runoff. Why 1.25: the
/// survey's wrong picks were 1.04-1.19 ahead in the contest (docs/benchmarks.md, "Automatic
/// path"); pairings further apart were ordered the same in steady state.
pub const WITHIN: f64 = 1.25;

/// Blocks of a runoff at most (each pairing timed in each; [`Runoff::new`]).
const MAX_BLOCKS: u8 = 4;

/// Timed sends per pairing and block, at most ([`Runoff::new`]).
const MAX_TIMED: usize = 4;

/// A runoff in progress: its sends' schedule and its samples.
#[derive(Debug, Clone)]
pub struct Runoff {
    /// The contest's pick ([0]) and its runner-up ([1]).
    pub pairs: [(Side, Served); 2],
    /// Untimed, then timed sends of a pairing in a row (a *leg*); two legs per block, and
    /// how many blocks.
    warm: u8,
    timed: u8,
    blocks: u8,
    /// Where the schedule is: the block, the leg within it, the sends of the leg so far.
    block: u8,
    leg: u8,
    sent: u8,
    /// Times per packed byte of each pairing's timed sends, and how many.
    times: [[f64; MAX_BLOCKS as usize * MAX_TIMED]; 2],
    runs: [u8; 2],
}

impl Runoff {
    /// A runoff between `pairs` for messages of size class `class`: per leg one untimed and
    /// four timed sends in four blocks below 1 MiB, three and two in two blocks at 1-4 MiB,
    /// two and two in two blocks from 4 MiB. Why more untimed sends for larger messages: Open
    /// MPI's single copy recovers over three to five messages of its own after another path's
    /// (`Contest::primes`), and from 1 MiB a send costs a millisecond or more, on which noise
    /// weighs less. Why four blocks below 1 MiB: the peer runs its own runoff at the same
    /// time, not in step, and what its sends leave in the caches weighs on messages of tens of
    /// microseconds (Open MPI, lu-5 at 64 KiB, in a job of many types: two blocks timed
    /// sluice's staged path at 16 us one way, where the ping-pong took 25, and kept it over
    /// a pairing 1.7x faster in one job of three); 32 more sends of that size cost well under
    /// a millisecond.
    pub fn new(pairs: [(Side, Served); 2], class: u32) -> Runoff {
        let (warm, timed, blocks) = match class {
            0..=19 => (1, 4, 4),
            20..=21 => (3, 2, 2),
            _ => (2, 2, 2),
        };
        let times = [[0.0; MAX_BLOCKS as usize * MAX_TIMED]; 2];
        Runoff { pairs, warm, timed, blocks, block: 0, leg: 0, sent: 0, times, runs: [0; 2] }
    }

    /// Timed sends a runoff for class `class` makes at most.
    #[cfg(test)]
    pub fn most_timed(class: u32) -> usize {
        let r = Runoff::new([(Side::Mpi, Served::Mpi); 2], class);
        usize::from(r.timed) * 2 * usize::from(r.blocks)
    }

    /// The pairing of the leg under way (blocks alternate which of the two goes first).
    fn current(&self) -> (Side, Served) {
        self.pairs[usize::from((self.leg + self.block) % 2)]
    }

    /// The next send's pairing and whether it is timed; `None` once the schedule is done.
    /// Each call is one send.
    pub fn next(&mut self) -> Option<((Side, Served), bool)> {
        if self.over() {
            return None;
        }
        let pair = self.current();
        let timed = self.sent >= self.warm;
        self.sent += 1;
        if self.sent >= self.warm + self.timed {
            self.sent = 0;
            self.leg += 1;
            if self.leg == 2 {
                self.leg = 0;
                self.block += 1;
            }
        }
        Some((pair, timed))
    }

    /// Every send of the schedule went.
    pub fn over(&self) -> bool {
        self.block >= self.blocks
    }

    /// A timed send's sample, placed by the pairing its receipt names (one that names neither
    /// pairing, a receiver that served another receive than asked, is left out).
    pub fn record(&mut self, side: Side, served: Served, per_byte: f64) {
        if let Some(i) = self.pairs.iter().position(|&p| p == (side, served)) {
            if let Some(t) = self.times[i].get_mut(usize::from(self.runs[i])) {
                *t = per_byte;
                self.runs[i] += 1;
            }
        }
    }

    /// Pairing `i`'s median time per byte (the lower middle one of an even count; infinite
    /// without samples) and its samples.
    pub fn median(&self, i: usize) -> (f64, u8) {
        let n = usize::from(self.runs[i]);
        let mut t = self.times[i];
        let t = &mut t[..n];
        t.sort_by(f64::total_cmp);
        (t.get(n.saturating_sub(1) / 2).copied().unwrap_or(f64::INFINITY), self.runs[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: (Side, Served) = (Side::Mpi, Served::Mpi);
    const B: (Side, Served) = (Side::Sluice, Served::Sluice);

    #[test]
    fn blocks_alternate_which_pairing_goes_first_and_warm_each_leg() {
        let mut r = Runoff::new([A, B], 16);
        let mut seen = Vec::new();
        while let Some(s) = r.next() {
            seen.push(s);
        }
        let leg = |p, n| std::iter::once((p, false)).chain(std::iter::repeat_n((p, true), n));
        let block = |p, q| leg(p, 4).chain(leg(q, 4));
        let want: Vec<_> = block(A, B).chain(block(B, A)).chain(block(A, B)).chain(block(B, A)).collect();
        assert_eq!(seen, want);
        assert!(r.over());
        // From 4 MiB: two untimed and two timed sends per leg.
        let mut r = Runoff::new([A, B], 24);
        let n = std::iter::from_fn(|| r.next()).filter(|&(_, timed)| timed).count();
        assert_eq!(n, 2 * 2 * 2, "two blocks");
        assert_eq!(n, Runoff::most_timed(24));
    }

    #[test]
    fn samples_go_to_the_pairing_the_receipt_names_and_medians_take_the_middle() {
        let mut r = Runoff::new([A, B], 16);
        for t in [3.0, 1.0, 2.0] {
            r.record(A.0, A.1, t);
        }
        r.record(Side::Sluice, Served::Mpi, 0.1); // neither pairing: left out
        assert_eq!(r.median(0), (2.0, 3));
        assert_eq!(r.median(1), (f64::INFINITY, 0));
        for t in [4.0, 1.0, 3.0, 2.0] {
            r.record(B.0, B.1, t);
        }
        assert_eq!(r.median(1), (2.0, 4), "the lower middle one of an even count");
        for _ in 0..20 {
            r.record(B.0, B.1, 0.5); // more than the schedule times are not kept
        }
        assert_eq!(r.median(1).1, (MAX_BLOCKS as usize * MAX_TIMED) as u8);
    }
}
