//! Which path a type's messages of [`MIN_BYTES`] and more to a rank of this node take, learned
//! from the application's own blocking sends: the MPI's datatype engine, or sluice's (staged
//! below the pipeline's threshold, pipelined through the shared-memory arena above it).
//!
//! Why: no rule by block size, and no calibration in another job, gets this right. Between two
//! ranks of one node the faster path depends on the machine (an Intel VM: Open MPI's engine
//! 1.2-1.4x faster for plain vectors of 512-byte blocks at 1-16 MiB; an AMD EPYC VM: the arena
//! 1.3-2.4x faster for the same messages), on the type (nested types of the same block size go
//! the other way; below the pipeline's threshold MPICH's engine beat sluice's staging for
//! 384-byte blocks on the Intel VM and lost to it 1.2-1.6x on the AMD VM), and even on the job (the MPI's own path changed speed up to 2x from one job
//! to the next on the AMD VM): docs/benchmarks.md, "Automatic path". A measurement in the job
//! that sends the messages can know.
//!
//! How: per committed type and size class (a power of two of packed bytes), a *contest* runs
//! on the blocking sends (`MPI_Send`, `MPI_Ssend`, `MPI_Rsend`; not `MPI_Bsend`, which returns
//! once its buffer holds the bytes) to a rank of this node: after
//! a first send that is not timed (cold buffers, the arena's first region), the sends alternate
//! between the two paths, and each send's time is its call's duration: the MPI's engine
//! returns once its rendezvous moved the data (or, below the MPI's eager limit, once it packed
//! them), sluice's once its packed bytes are handed to the MPI or the last chunk is published,
//! which the receiver, unpacking as chunks appear, follows by about one chunk. The receiver's
//! unpacking is thus outside both times (both paths unpack once). After
//! [`SAMPLES`] sends on each path (or one each when one path was at least [`CLEAR`] times
//! faster) the faster path by its best time is kept, the arena only when at least [`MARGIN`]
//! faster. Every send of the class follows the decision from then on, blocking or not;
//! nonblocking sends of an undecided class take the built-in rules. A receiver needs nothing:
//! every receive reads either path's message (docs/protocol.md, wire format), so learning
//! changes no byte and no status.
//!
//! What it costs: the slower path's extra time on at most [`SAMPLES`] sends per type and size
//! class, and a lock and a table look-up per large send.

use std::sync::Mutex;
use std::time::Instant;

use rustc_hash::FxHashMap;

/// Smallest message (packed bytes) that has a contest: below it a send's time is mostly fixed
/// costs and the clock.
pub const MIN_BYTES: usize = 32 << 10;

/// Timed sends per path before a decision.
pub const SAMPLES: u8 = 3;
/// A path this many times faster than the other after one send each decides at once.
pub const CLEAR: f64 = 2.0;
/// The arena must be this much faster to be chosen over the MPI's engine (it also holds the
/// whole stream in shared memory; ties go to the MPI).
pub const MARGIN: f64 = 1.05;

/// A path a large message to this node can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The MPI's datatype engine (the application's call, unchanged).
    Mpi,
    /// sluice's path: staged below the pipeline's threshold, pipelined through the
    /// shared-memory arena above it.
    Sluice,
}

impl Side {
    fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Mpi => "the MPI's datatype engine",
            Side::Sluice => "sluice's engine (staged, or pipelined through the arena)",
        }
    }
}

/// One type and size class's contest.
#[derive(Debug, Default)]
struct Contest {
    /// The untimed first send happened.
    warm: bool,
    /// Best time per packed byte (s/B) and timed sends, per side.
    best: [f64; 2],
    runs: [u8; 2],
    decided: Option<Side>,
}

impl Contest {
    fn next(&self) -> Side {
        if self.runs[Side::Mpi.index()] <= self.runs[Side::Sluice.index()] {
            Side::Mpi
        } else {
            Side::Sluice
        }
    }

    fn record(&mut self, side: Side, per_byte: f64) -> Option<Side> {
        let i = side.index();
        self.best[i] = if self.runs[i] == 0 { per_byte } else { self.best[i].min(per_byte) };
        self.runs[i] = self.runs[i].saturating_add(1);
        let (m, a) = (Side::Mpi.index(), Side::Sluice.index());
        if self.runs[m] == 0 || self.runs[a] == 0 {
            return None;
        }
        let (tm, ta) = (self.best[m], self.best[a]);
        let clear = tm >= CLEAR * ta || ta >= CLEAR * tm;
        if clear || (self.runs[m] >= SAMPLES && self.runs[a] >= SAMPLES) {
            self.decided = Some(if tm >= MARGIN * ta { Side::Sluice } else { Side::Mpi });
        }
        self.decided
    }
}

/// (compiled type id, size class) -> its contest.
static CONTESTS: Mutex<Option<FxHashMap<(u64, u32), Contest>>> = Mutex::new(None);

/// What a send of a contested class does.
#[derive(Debug)]
pub enum Play {
    /// The class is decided: every send takes this side.
    Decided(Side),
    /// Not decided, and this send does not take part (nonblocking, or the untimed first one):
    /// the built-in rules decide.
    Rules,
    /// This blocking send runs on `side` and is timed; give the result to [`Turn::done`].
    Turn(Turn),
}

/// A contest's outcome: the side a type's size class takes, and the best times per packed byte
/// (s/B) that decided it.
#[derive(Debug, Clone, Copy)]
pub struct Decision {
    pub type_id: u64,
    pub class: u32,
    pub side: Side,
    pub mpi: f64,
    pub sluice: f64,
}

/// A timed send of a contest.
#[derive(Debug)]
pub struct Turn {
    key: (u64, u32),
    pub side: Side,
    bytes: usize,
    start: Instant,
}

/// The play for a send of `bytes` packed bytes of compiled type `type_id` (`timed`: a blocking
/// send that may take part).
pub fn play(type_id: u64, bytes: usize, timed: bool) -> Play {
    let key = (type_id, crate::logging::size_class(bytes));
    let mut g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
    let c = g.get_or_insert_with(FxHashMap::default).entry(key).or_default();
    if let Some(side) = c.decided {
        return Play::Decided(side);
    }
    if !timed {
        return Play::Rules;
    }
    if !c.warm {
        c.warm = true;
        return Play::Rules;
    }
    Play::Turn(Turn { key, side: c.next(), bytes, start: Instant::now() })
}

impl Turn {
    /// The send returned (`ok`: successfully): records its time; returns the decision when this
    /// send made it, with the best times per byte (the MPI's, sluice's).
    pub fn done(self, ok: bool) -> Option<Decision> {
        let per_byte = self.start.elapsed().as_secs_f64() / self.bytes.max(1) as f64;
        if !ok {
            return None;
        }
        let mut g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
        let c = g.as_mut()?.get_mut(&self.key)?;
        if c.decided.is_some() {
            return None; // another thread's send decided meanwhile
        }
        let side = c.record(self.side, per_byte)?;
        Some(Decision {
            type_id: self.key.0,
            class: self.key.1,
            side,
            mpi: c.best[Side::Mpi.index()],
            sluice: c.best[Side::Sluice.index()],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(mpi: &[f64], arena: &[f64]) -> (Option<Side>, usize) {
        let mut c = Contest::default();
        let (mut m, mut a, mut n) = (mpi.iter(), arena.iter(), 0);
        loop {
            let side = c.next();
            let t = match side {
                Side::Mpi => m.next(),
                Side::Sluice => a.next(),
            };
            let Some(&t) = t else { return (c.decided, n) };
            n += 1;
            if let Some(d) = c.record(side, t) {
                return (Some(d), n);
            }
        }
    }

    #[test]
    fn sides_alternate_and_the_best_times_decide() {
        assert_eq!(decide(&[1.0, 0.9, 1.1], &[0.8, 0.85, 0.7]), (Some(Side::Sluice), 6), "arena 0.7 vs 0.9");
        assert_eq!(decide(&[1.0, 0.9, 1.1], &[0.95, 0.88, 0.87]), (Some(Side::Mpi), 6), "within the margin: the MPI");
        assert_eq!(decide(&[1.0], &[0.4]), (Some(Side::Sluice), 2), "clear at once");
        assert_eq!(decide(&[0.3], &[1.0]), (Some(Side::Mpi), 2), "clear at once");
        assert_eq!(decide(&[1.0, 1.0], &[0.9]), (None, 3), "not enough sends yet");
    }

    #[test]
    fn a_class_plays_rules_then_turns_then_its_decision() {
        let id = u64::MAX - 7; // no compiled type has it
        assert!(matches!(play(id, 1 << 20, false), Play::Rules), "nonblocking sends of an undecided class");
        assert!(matches!(play(id, 1 << 20, true), Play::Rules), "the untimed first send");
        let mut decided = None;
        for _ in 0..2 * SAMPLES {
            let Play::Turn(t) = play(id, 1 << 20, true) else { break };
            let side = t.side;
            std::thread::sleep(std::time::Duration::from_millis(if side == Side::Sluice { 1 } else { 5 }));
            decided = t.done(true).or(decided);
        }
        assert_eq!(decided.map(|d| d.side), Some(Side::Sluice));
        assert!(matches!(play(id, 1 << 20, false), Play::Decided(Side::Sluice)));
        assert!(matches!(play(id, 1 << 21, true), Play::Rules), "another size class has its own contest");
    }
}
