//! Which engine packs (or unpacks) a committed type faster on this machine: sluice's kernels or
//! the MPI's own. Learned once per type and direction from the application's own first large
//! calls, then a single relaxed load per call.
//!
//! Why: sluice's kernels win on most shapes, not on all, and not by the same margin on every
//! CPU (issue 28: on an AMD EPYC, a 192-byte-block hvector unpacked at 0.78x of Open MPI's
//! engine and a 512-byte-stride face at 0.75x of MPICH's, shapes where this Intel machine runs
//! sluice 1.2-1.3x faster). No table of shapes can know the machine; a measurement can.
//!
//! How, so that learning costs little and changes no byte: the packed stream of `count`
//! elements is the concatenation of the elements' streams, so a call can be split by element
//! and each part given to either engine. A call of at least [`PIECES_MIN_COUNT`] elements times
//! two pieces of 1/[`PIECE_DIV`] of its elements (at least [`PIECE_MIN_BYTES`] each, and at most
//! a quarter of the call), one per engine (in alternating order from one call to the next), and
//! processes the rest with sluice: in a large call the learning touches ~3% of it. A call that
//! cannot be split so (one large element: a face, a plane; the MPI's engine only takes whole
//! elements) of at least 4 pieces' worth times the MPI's engine on a prefix of its first
//! element, where the caller can make one (a type of the element's first blocks:
//! [`Engines::make_prefix`]), and sluice's on the next as many bytes; other calls run whole on
//! one engine, alternating sluice, MPI, MPI, sluice, after a first call that is not timed (it
//! may find its buffers cold or fault their pages in, which would count against whichever
//! engine ran it; split calls time both engines on the same call from the first). After
//! [`SAMPLES`] learning calls the faster engine by the best time per byte each showed is kept,
//! the MPI's only when it was at least [`MARGIN`] faster; a contest clearer than [`CLEAR`] ends
//! as soon as each engine has two samples (after two split calls), and one where the MPI's
//! engine was [`SLOW_MPI`] slower at its first sample taken warm (after the MPI's engine first
//! ran on the type: its first use may set up state for it) ends then, for sluice.
//!
//! What learning costs: the slower engine's extra time on the part of the learning calls it
//! ran. With `s` the slower engine's time over the faster's: for calls split by piece or
//! prefix, at most
//! `(s - 1)` x 1/64 of one call when the MPI's is the slower by `s > SLOW_MPI`, 2/64 when
//! `s > CLEAR` and 4/64 otherwise (pieces are at least 64 KiB, so calls under 16 pieces pay
//! more); for whole calls `s - 1` calls when the MPI's is the slower by more than
//! [`SLOW_MPI`], else `2 (s - 1)`.
//!
//! The engines are an [`Engines`]: the protocol layer's calls `PMPI_Pack`/`PMPI_Unpack` (this
//! module calls no MPI), the benchmark's the same, the tests' are fakes with known speeds.

use std::any::Any;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// An engine that can pack a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sluice,
    Mpi,
}

/// A decision, with the best times per packed byte (seconds) that made it (infinite: none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub engine: Engine,
    pub sluice: f64,
    pub mpi: f64,
}

/// The direction of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Pack = 0,
    Unpack = 1,
}

/// `SLUICE_PACK_ENGINE`: how the engine is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Learned per type and direction (the default).
    Auto,
    /// Always sluice's kernels.
    Sluice,
    /// Always the MPI's engine where it can serve the call (tests, comparisons).
    Mpi,
}

/// Calls of fewer packed bytes are not learned from (and run on sluice's engine until a larger
/// call has decided): below it a call's time is mostly fixed costs and the clock, not the
/// engine's loop. (At 16 KiB, 4-5 KiB types that MPICH's engine packs 1.3-1.7x faster stayed
/// with sluice.)
pub const LEARN_MIN: usize = 2 << 10;
/// Calls of at least this many elements learn from pieces of one call.
pub const PIECES_MIN_COUNT: usize = 32;
/// A piece is this fraction of the call's elements...
pub const PIECE_DIV: usize = 64;
/// ...but at least this many packed bytes: a piece pays each engine's fixed cost per call
/// (tens of ns, more for the MPI's) that the whole call pays once, so small pieces favour
/// sluice (pieces of one 24-byte element measured sluice 2-4x faster than Open MPI's engine on
/// types where whole 64 KiB calls were 1.3x; 8 KiB pieces of a contiguous type picked sluice
/// where whole 45 KiB calls ran 6% faster on Open MPI's engine). At 64 KiB a 50 ns difference
/// is within 2% of a piece.
pub const PIECE_MIN_BYTES: usize = 64 << 10;
/// Whole calls of fewer packed bytes are timed over several runs of the sampled engine after
/// one untimed run (each run leaves the same bytes: packing reads the same elements, unpacking
/// writes the same values): a single run of a 2-4 KiB call lasts 30-100 ns, a few ticks of the
/// clock, and the first runs of an engine on a type pay its cold code and branches. Timed
/// singly, a 2 KiB face (16 blocks of 128 bytes) that both engines pack in 33 ns measured 80 ns
/// per call on sluice's and 60 on Open MPI's, and the MPI's engine was chosen (AMD EPYC VM).
pub const REPEAT_BELOW: usize = 16 << 10;
/// Most timed runs of one sample.
pub const MAX_REPEATS: usize = 8;

/// The timed runs of a whole-call sample of `bytes` packed bytes.
fn whole_repeats(bytes: usize) -> usize {
    if bytes < REPEAT_BELOW {
        (REPEAT_BELOW / bytes.max(1)).clamp(1, MAX_REPEATS)
    } else {
        1
    }
}

/// Learning calls before deciding.
pub const SAMPLES: usize = 4;
/// The MPI's engine is kept only when its best time per byte is this much below sluice's.
pub const MARGIN: f64 = 1.03;
/// A contest this clear (one engine's best this much faster) is decided as soon as each engine
/// has two samples: the remaining learning calls would only add the loser's time. (One sample
/// each is not enough: a call preempted once on a shared core looked 2x slow in tests, and a
/// decision lasts as long as the type.)
pub const CLEAR: f64 = 1.5;

/// An MPI engine this much slower than sluice's after one sample each ends the contest for
/// sluice: further samples could only confirm sluice (the default) or, if the one MPI sample was
/// a preempted outlier, miss a faster MPI engine, which leaves the type as it would be without
/// the choice. It halves the cost of learning where the MPI's engine is slow (MPICH's engine,
/// up to 40x slower than sluice's on the shape sweep, timed on whole calls).
pub const SLOW_MPI: f64 = 2.0;

const LEARNING: u8 = 0;
const SLUICE: u8 = 1;
const MPI: u8 = 2;

/// Learned times (seconds per packed byte) of one direction.
#[derive(Default)]
struct Times {
    sluice: Vec<f64>,
    mpi: Vec<f64>,
    /// Learning calls started (decides the order and, for whole calls, the engine).
    calls: usize,
    /// Learning calls finished.
    done: usize,
    /// The MPI's engine has run on this type in this direction: its first use, with whatever
    /// the MPI sets up for a type then, is behind it.
    warm: bool,
    /// MPI samples taken with the engine warm (only those can end a contest at
    /// [`SLOW_MPI`]).
    warm_mpi: usize,
    /// The caller's prefix type ([`Engines::make_prefix`]), kept across the learning calls.
    kept: Option<Box<dyn Any + Send>>,
}

impl std::fmt::Debug for Times {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} sluice and {} MPI samples", self.sluice.len(), self.mpi.len())
    }
}

/// The per-type, per-direction choice. Lives in the compiled type.
#[derive(Debug)]
pub struct EngineChoice {
    state: [AtomicU8; 2],
    times: Mutex<[Option<Times>; 2]>,
}

impl Default for EngineChoice {
    fn default() -> Self {
        Self::new()
    }
}

/// The two engines over one call's packed stream of `count` elements, as the caller gives them
/// (this module calls no MPI). Element ranges `[a, b)` are the stream bytes
/// `[a * size, b * size)`.
pub trait Engines {
    /// Sluice's engine on elements `[a, b)`.
    fn sluice(&mut self, a: usize, b: usize);
    /// Sluice's engine on stream bytes `[first, last)`, any range.
    fn sluice_bytes(&mut self, first: usize, last: usize);
    /// The MPI's engine on elements `[a, b)`; false when it could not serve them (nothing was
    /// written).
    fn mpi(&mut self, a: usize, b: usize) -> bool;
    /// Readies a prefix of the first element for the MPI's engine: a type of its own covering
    /// stream bytes `[0, p)`, `want <= p <= max`, made anew or taken from `kept` (where the
    /// caller keeps it across the type's learning calls; dropped once the type decided);
    /// `None` where the type has no such prefix.
    fn make_prefix(&mut self, _want: usize, _max: usize, _kept: &mut Option<Box<dyn Any + Send>>) -> Option<Prefixed> {
        None
    }
    /// The MPI's engine on the prefix [`Engines::make_prefix`] readied; false as for
    /// [`Engines::mpi`].
    fn mpi_prefix(&mut self) -> bool {
        false
    }
}

/// A prefix [`Engines::make_prefix`] readied: its packed bytes, and whether it was made for
/// this call (the MPI's engine has not run on it yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefixed {
    pub bytes: usize,
    pub fresh: bool,
}

/// What one learning call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sample {
    /// The type's first large call learned from whole calls: sluice, untimed (it may fault pages
    /// in or find the buffers cold, which would count against whichever engine ran it).
    Warmup,
    /// Two pieces of `piece` elements, the MPI's first when `mpi_first`; the rest by sluice.
    Pieces { piece: usize, mpi_first: bool },
    /// Stream bytes `[0, bytes)` by the MPI's engine (a prefix of the first element as a type
    /// of its own) and `[bytes, 2 bytes)` by sluice's, the MPI's first when `mpi_first`; the rest
    /// by sluice.
    Prefix { bytes: usize, mpi_first: bool },
    /// The whole call on one engine.
    Whole(Engine),
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

impl EngineChoice {
    pub const fn new() -> Self {
        EngineChoice { state: [AtomicU8::new(LEARNING), AtomicU8::new(LEARNING)], times: Mutex::new([None, None]) }
    }

    /// Decides `dir` for `e` without learning (benchmarks' warm-ups).
    pub fn force(&self, dir: Dir, e: Engine) {
        self.state[dir as usize].store(if e == Engine::Mpi { MPI } else { SLUICE }, Ordering::Relaxed);
    }

    /// The engine decided for `dir`, `None` while learning.
    pub fn decided(&self, dir: Dir) -> Option<Engine> {
        match self.state[dir as usize].load(Ordering::Relaxed) {
            SLUICE => Some(Engine::Sluice),
            MPI => Some(Engine::Mpi),
            _ => None,
        }
    }

    /// Runs one operation of `count` elements (`bytes` packed bytes) in direction `dir` under
    /// `policy` on `engines`; a range the MPI's engine could not serve is then sluice's.
    /// Returns the decision this call made, if it made one (for the caller to log).
    pub fn run(&self, dir: Dir, policy: Policy, count: usize, bytes: usize, engines: &mut impl Engines) -> Option<Decision> {
        let state = match policy {
            Policy::Sluice => SLUICE,
            Policy::Mpi => MPI,
            Policy::Auto => self.state[dir as usize].load(Ordering::Relaxed),
        };
        // The MPI's engine takes an `int` count and `int` sizes; larger calls stay with sluice.
        let mpi_can = bytes <= i32::MAX as usize && count <= i32::MAX as usize;
        match state {
            MPI if mpi_can => {
                if !engines.mpi(0, count) {
                    engines.sluice(0, count)
                }
                return None;
            }
            LEARNING if mpi_can && bytes >= LEARN_MIN && count > 0 => {}
            _ => {
                engines.sluice(0, count);
                return None;
            }
        }
        let sample = self.next_sample(dir, count, bytes);
        let (mut warm, mut kept) = self.prepared(dir);
        let sample = match sample {
            // Too few elements to split: a prefix of the first one, where the call is large
            // enough for samples of PIECE_MIN_BYTES and the type has one (from the first call,
            // as pieces).
            s @ (Sample::Warmup | Sample::Whole(_)) if bytes >= 4 * PIECE_MIN_BYTES && bytes / count >= PIECE_MIN_BYTES => {
                let want = (bytes / PIECE_DIV).max(PIECE_MIN_BYTES);
                match engines.make_prefix(want, (bytes / 4).min(bytes / count), &mut kept) {
                    // Alternating which engine goes first, as pieces do.
                    Some(p) => {
                        warm &= !p.fresh;
                        Sample::Prefix { bytes: p.bytes, mpi_first: s == Sample::Whole(Engine::Mpi) }
                    }
                    None => s,
                }
            }
            s => s,
        };
        // The MPI's first use of a type may set up state for it (MPICH's engine packed a fresh
        // type's first 470 KiB in 250-480 us, its second in 230 us; at the first sample of a
        // shape the sweep found 1.5x faster on MPICH's engine, that made it look 3x slower,
        // and the contest ended for sluice): where it is cheap (one element, or the prefix),
        // the MPI's engine runs once untimed before its first sample. It writes the bytes the
        // sample writes again.
        if !warm {
            match sample {
                Sample::Pieces { .. } => warm = engines.mpi(0, 1),
                Sample::Prefix { .. } => warm = engines.mpi_prefix(),
                // One element of a whole call of several (a call of one can only be warmed by
                // running it: its first MPI sample is taken cold, and cannot end the contest).
                Sample::Whole(Engine::Mpi) if count >= 2 => warm = engines.mpi(0, 1),
                _ => {}
            }
        }
        let warm_sample = warm;
        let timed = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        };
        let per_byte = |elements: usize| (elements * (bytes / count)).max(1) as f64;
        let (mut ts, mut tm) = (None, None);
        let mut mpi_failed = false;
        let run_mpi = |e: &mut dyn FnMut() -> bool| {
            let t = Instant::now();
            let ok = e();
            (ok, t.elapsed().as_secs_f64())
        };
        match sample {
            Sample::Pieces { piece, mpi_first } => {
                let (ms, ss) = if mpi_first { (0, piece) } else { (piece, 0) };
                let mut m = (false, 0.0);
                if mpi_first {
                    m = run_mpi(&mut || engines.mpi(ms, ms + piece));
                }
                ts = Some(timed(&mut || engines.sluice(ss, ss + piece)) / per_byte(piece));
                if !mpi_first {
                    m = run_mpi(&mut || engines.mpi(ms, ms + piece));
                }
                if m.0 {
                    tm = Some(m.1 / per_byte(piece));
                } else {
                    mpi_failed = true;
                    engines.sluice(ms, ms + piece);
                }
                engines.sluice(2 * piece, count);
            }
            Sample::Prefix { bytes: p, mpi_first } => {
                let mut m = (false, 0.0);
                if mpi_first {
                    m = run_mpi(&mut || engines.mpi_prefix());
                }
                ts = Some(timed(&mut || engines.sluice_bytes(p, 2 * p)) / p as f64);
                if !mpi_first {
                    m = run_mpi(&mut || engines.mpi_prefix());
                }
                if m.0 {
                    tm = Some(m.1 / p as f64);
                } else {
                    mpi_failed = true;
                    engines.sluice_bytes(0, p);
                }
                engines.sluice_bytes(2 * p, bytes);
            }
            Sample::Warmup => {
                engines.sluice(0, count);
                return None;
            }
            Sample::Whole(Engine::Sluice) => {
                let reps = whole_repeats(bytes);
                if reps > 1 {
                    engines.sluice(0, count);
                }
                ts = Some(timed(&mut || (0..reps).for_each(|_| engines.sluice(0, count))) / (reps as f64 * per_byte(count)));
            }
            Sample::Whole(Engine::Mpi) => {
                let reps = whole_repeats(bytes);
                let ok = reps == 1 || engines.mpi(0, count);
                let t = Instant::now();
                if ok && (0..reps).all(|_| engines.mpi(0, count)) {
                    tm = Some(t.elapsed().as_secs_f64() / (reps as f64 * per_byte(count)));
                } else {
                    mpi_failed = true;
                    engines.sluice(0, count);
                }
            }
        }
        self.record(dir, ts, tm, mpi_failed, warm_sample, kept)
    }

    /// Claims the next learning call of `dir` and says what it does.
    fn next_sample(&self, dir: Dir, count: usize, bytes: usize) -> Sample {
        let mut g = self.times.lock().unwrap_or_else(|e| e.into_inner());
        let t = g[dir as usize].get_or_insert_with(Times::default);
        let k = t.calls;
        t.calls += 1;
        let size = (bytes / count).max(1);
        let piece = (count / PIECE_DIV).max(PIECE_MIN_BYTES.div_ceil(size)).max(1);
        if count >= PIECES_MIN_COUNT && 4 * piece <= count {
            // Both engines time parts of one call, so the first call's cold buffers and
            // first-touch faults weigh on both alike: no warm-up call.
            Sample::Pieces { piece, mpi_first: k % 2 == 1 }
        } else if k == 0 {
            Sample::Warmup
        } else {
            // sluice, MPI, MPI, sluice, ...: each engine follows the other as often.
            Sample::Whole(if matches!((k - 1) % 4, 1 | 2) { Engine::Mpi } else { Engine::Sluice })
        }
    }

    /// Whether the MPI's engine ran on the type in `dir`, and the caller's kept prefix (taken:
    /// [`EngineChoice::record`] puts it back).
    fn prepared(&self, dir: Dir) -> (bool, Option<Box<dyn Any + Send>>) {
        let mut g = self.times.lock().unwrap_or_else(|e| e.into_inner());
        g[dir as usize].as_mut().map_or((false, None), |t| (t.warm, t.kept.take()))
    }

    /// Adds one learning call's times (`warm`: the MPI's engine had run on the type before this
    /// call's MPI sample; `kept`: the caller's prefix, kept while learning goes on); decides once
    /// enough are in.
    fn record(
        &self,
        dir: Dir,
        ts: Option<f64>,
        tm: Option<f64>,
        mpi_failed: bool,
        warm: bool,
        kept: Option<Box<dyn Any + Send>>,
    ) -> Option<Decision> {
        let mut g = self.times.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut g[dir as usize];
        let t = slot.get_or_insert_with(Times::default);
        t.sluice.extend(ts);
        t.mpi.extend(tm);
        t.done += 1;
        t.warm |= warm || tm.is_some();
        t.warm_mpi += (warm && tm.is_some()) as usize;
        if t.kept.is_none() {
            t.kept = kept; // (a prefix another thread made meanwhile is dropped here)
        }
        let decided = if mpi_failed {
            Engine::Sluice // the MPI refused a call sluice serves: never ask it again
        } else if !t.sluice.is_empty() && !t.mpi.is_empty() && {
            let (s, m) = (best(&t.sluice), best(&t.mpi));
            t.done >= SAMPLES
                || (t.sluice.len().min(t.mpi.len()) >= 2 && (s > CLEAR * m || m > CLEAR * s))
                || (t.warm_mpi > 0 && m > SLOW_MPI * s)
        } {
            if best(&t.mpi) * MARGIN < best(&t.sluice) {
                Engine::Mpi
            } else {
                Engine::Sluice
            }
        } else {
            return None;
        };
        let s = if decided == Engine::Mpi { MPI } else { SLUICE };
        if self.state[dir as usize].swap(s, Ordering::Relaxed) != LEARNING {
            return None; // another thread decided first
        }
        let d = Decision { engine: decided, sluice: best(&t.sluice), mpi: best(&t.mpi) };
        *slot = None;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Engines given as two closures over elements (no prefix).
    struct Fns<S, M>(S, M);

    impl<S: FnMut(usize, usize), M: FnMut(usize, usize) -> bool> Engines for Fns<S, M> {
        fn sluice(&mut self, a: usize, b: usize) {
            self.0(a, b)
        }
        fn sluice_bytes(&mut self, _: usize, _: usize) {
            panic!("byte ranges only with a prefix")
        }
        fn mpi(&mut self, a: usize, b: usize) -> bool {
            self.1(a, b)
        }
    }

    /// Engines of known speeds (nanoseconds per 16 KiB, spun) over a stream of elements of
    /// `size` bytes, that count how often each byte was processed in the current call; with a
    /// prefix of exactly the wanted bytes where `prefix`.
    struct Fake {
        size: usize,
        ns: [u64; 2],
        prefix: Option<usize>,
        offers_prefix: bool,
        seen: Vec<u8>,
        prefix_samples: usize,
    }

    impl Fake {
        fn process(&mut self, first: usize, last: usize, engine: Engine) {
            self.seen[first..last].iter_mut().for_each(|x| *x += 1);
            let ns = self.ns[(engine == Engine::Mpi) as usize] * (last - first) as u64 / (16 << 10);
            let until = Instant::now() + std::time::Duration::from_nanos(ns);
            while Instant::now() < until {}
        }
    }

    impl Engines for Fake {
        fn sluice(&mut self, a: usize, b: usize) {
            self.process(a * self.size, b * self.size, Engine::Sluice)
        }
        fn sluice_bytes(&mut self, first: usize, last: usize) {
            self.process(first, last, Engine::Sluice)
        }
        fn mpi(&mut self, a: usize, b: usize) -> bool {
            self.process(a * self.size, b * self.size, Engine::Mpi);
            true
        }
        fn make_prefix(&mut self, want: usize, max: usize, kept: &mut Option<Box<dyn Any + Send>>) -> Option<Prefixed> {
            assert!(max <= self.size, "a prefix lies in the first element");
            if !self.offers_prefix || want > max {
                return None;
            }
            let old = kept.as_ref().and_then(|k| k.downcast_ref::<usize>()).copied();
            let fresh = old != Some(want);
            if fresh {
                *kept = Some(Box::new(want));
            }
            self.prefix = Some(want);
            Some(Prefixed { bytes: want, fresh })
        }
        fn mpi_prefix(&mut self) -> bool {
            let p = self.prefix.expect("readied");
            self.prefix_samples += 1;
            self.process(0, p, Engine::Mpi);
            true
        }
    }

    /// Runs calls of `count` elements of `size` bytes until `dir` decides, checking that every
    /// call processes each byte exactly once (the first element's at most twice: the MPI's
    /// untimed first run); returns the decision, the calls it took and the MPI's runs on a
    /// prefix.
    fn learn_on(count: usize, size: usize, sluice_ns: u64, mpi_ns: u64, prefix: bool) -> (Engine, usize, usize) {
        let c = EngineChoice::new();
        // The marks are written before the first call: page faults would count against one engine.
        let seen = vec![0; count * size];
        let mut f = Fake { size, ns: [sluice_ns, mpi_ns], prefix: None, offers_prefix: prefix, seen, prefix_samples: 0 };
        for call in 0..100 {
            f.seen.fill(0);
            let d = c.run(Dir::Unpack, Policy::Auto, count, count * size, &mut f);
            let (first, rest) = f.seen.split_at(size);
            assert!(first.iter().all(|&x| x == 1 || x == 2) && rest.iter().all(|&x| x == 1), "call {call}: every byte once");
            if let Some(Decision { engine: e, .. }) = d {
                assert_eq!(c.decided(Dir::Unpack), Some(e));
                assert_eq!(c.decided(Dir::Pack), None, "directions learn apart");
                return (e, call + 1, f.prefix_samples);
            }
        }
        panic!("no decision in 100 calls");
    }

    /// [`learn_on`] until it decides `want`, at most three times (the engines are spun on real
    /// clocks: a test thread preempted on a loaded machine can spoil one contest, and a wrong
    /// rule spoils all three); returns that contest's calls and prefix runs.
    fn settles(count: usize, size: usize, sluice_ns: u64, mpi_ns: u64, prefix: bool, want: Engine) -> (usize, usize) {
        let mut seen = Vec::new();
        for _ in 0..3 {
            let (e, calls, samples) = learn_on(count, size, sluice_ns, mpi_ns, prefix);
            if e == want {
                return (calls, samples);
            }
            seen.push(e);
        }
        panic!("{count} x {size} bytes, sluice {sluice_ns} ns, MPI {mpi_ns} ns: decided {seen:?}, never {want:?}");
    }

    #[test]
    fn a_call_of_one_large_element_learns_from_a_prefix_of_it() {
        // 1 MiB: prefix samples of 64 KiB (PIECE_MIN_BYTES), not whole calls.
        for (sluice, mpi, engine) in [(2000, 1000, Engine::Mpi), (1000, 2000, Engine::Sluice)] {
            let (calls, samples) = settles(1, 1 << 20, sluice, mpi, true, engine);
            // A prefix sample in every call from the first, after one untimed run of the MPI's
            // engine on the new prefix (kept for the next calls).
            assert!(calls <= SAMPLES && samples == calls + 1, "{calls} calls, {samples} MPI runs on prefixes");
        }
        // Without a prefix (or below 4 samples' worth of bytes): whole calls.
        assert_eq!(learn_on(1, 1 << 20, 2000, 1000, false).2, 0);
        assert_eq!(learn_on(1, 200 << 10, 2000, 1000, true).2, 0);
    }

    #[test]
    fn a_clearly_faster_mpi_engine_is_chosen_and_a_slower_one_is_not() {
        for count in [1, 5, 31, 32, 200, 4096] {
            // (How soon a clear contest ends is timing: checked without clocks below.)
            let (calls, _) = settles(count, 16 << 10, 2000, 1000, false, Engine::Mpi);
            assert!(calls <= 1 + SAMPLES, "count {count}: MPI after {calls} calls");
            settles(count, 16 << 10, 1000, 2000, false, Engine::Sluice);
        }
    }

    #[test]
    fn a_clear_contest_ends_at_the_first_pair_of_samples() {
        let c = EngineChoice::new();
        let whole = |c: &EngineChoice| c.next_sample(Dir::Pack, 1, 1 << 20);
        // Whole calls: sluice, MPI, MPI, sluice; two samples of each engine are all of them.
        assert_eq!(whole(&c), Sample::Warmup);
        for (k, e) in [Engine::Sluice, Engine::Mpi, Engine::Mpi, Engine::Sluice].into_iter().enumerate() {
            assert_eq!(whole(&c), Sample::Whole(e));
            let d = match e {
                Engine::Sluice => c.record(Dir::Pack, Some(2.0), None, false, true, None),
                Engine::Mpi => c.record(Dir::Pack, None, Some(1.0), false, true, None),
            };
            assert_eq!(d.map(|d| (d.engine, d.sluice, d.mpi)), (k == 3).then_some((Engine::Mpi, 2.0, 1.0)), "call {k}");
        }
        // Split calls bring a sample of each from the first: an MPI engine over SLOW_MPI slower
        // ends the contest at once, another clear pair after two calls, a close one waits for
        // SAMPLES.
        for (mpi, calls) in [(3.0, 1), (1.6, 2), (1.1, SAMPLES)] {
            let c = EngineChoice::new();
            let split = |c: &EngineChoice| c.next_sample(Dir::Unpack, 4096, 4096 << 10);
            for k in 0..calls {
                assert_eq!(split(&c), Sample::Pieces { piece: 64, mpi_first: k % 2 == 1 });
                let d = c.record(Dir::Unpack, Some(1.0), Some(mpi), false, true, None);
                assert_eq!(d.map(|d| d.engine), (k == calls - 1).then_some(Engine::Sluice), "MPI {mpi}x, call {k}");
            }
        }
    }

    #[test]
    fn a_slow_mpi_engine_ends_whole_call_learning_at_its_first_sample() {
        let c = EngineChoice::new();
        let whole = |c: &EngineChoice| c.next_sample(Dir::Pack, 1, 1 << 20);
        assert_eq!(whole(&c), Sample::Warmup);
        assert_eq!(whole(&c), Sample::Whole(Engine::Sluice));
        assert_eq!(c.record(Dir::Pack, Some(1.0), None, false, true, None), None);
        assert_eq!(whole(&c), Sample::Whole(Engine::Mpi));
        let d = c.record(Dir::Pack, None, Some(2.5), false, true, None);
        assert_eq!(d.map(|d| (d.engine, d.sluice, d.mpi)), Some((Engine::Sluice, 1.0, 2.5)));
        // Not at a sample taken on a cold MPI engine (its first use of the type): at the next.
        let c = EngineChoice::new();
        assert_eq!(whole(&c), Sample::Warmup);
        assert_eq!(whole(&c), Sample::Whole(Engine::Sluice));
        assert_eq!(c.record(Dir::Pack, Some(1.0), None, false, false, None), None);
        assert_eq!(whole(&c), Sample::Whole(Engine::Mpi));
        assert_eq!(c.record(Dir::Pack, None, Some(2.5), false, false, None), None, "cold");
        assert_eq!(whole(&c), Sample::Whole(Engine::Mpi));
        let d = c.record(Dir::Pack, None, Some(2.6), false, true, None);
        assert_eq!(d.map(|d| (d.engine, d.sluice, d.mpi)), Some((Engine::Sluice, 1.0, 2.5)));
        // A faster MPI engine still needs the full evidence.
        let c = EngineChoice::new();
        assert_eq!(whole(&c), Sample::Warmup);
        for (e, t) in [(Engine::Sluice, 2.5), (Engine::Mpi, 1.0)] {
            assert_eq!(whole(&c), Sample::Whole(e));
            let d = if e == Engine::Sluice {
                c.record(Dir::Pack, Some(t), None, false, true, None)
            } else {
                c.record(Dir::Pack, None, Some(t), false, true, None)
            };
            assert_eq!(d, None);
        }
    }

    #[test]
    fn a_tie_stays_with_sluice() {
        // From recorded times, not from spinning engines: two engines spun for the same time
        // differ by more than MARGIN whenever the test threads share a loaded core (the spun
        // version failed that way on the 2-vCPU machine).
        for mpi in [1000.0, 1000.0 / MARGIN + 1.0] {
            let c = EngineChoice::new();
            let d = (0..SAMPLES).find_map(|_| c.record(Dir::Pack, Some(1000.0), Some(mpi), false, true, None));
            assert_eq!(d.map(|d| d.engine), Some(Engine::Sluice), "the MPI's engine at {mpi} against sluice's at 1000");
            assert_eq!(c.decided(Dir::Pack), Some(Engine::Sluice));
        }
    }

    #[test]
    fn small_calls_and_policies_do_not_learn() {
        let c = EngineChoice::new();
        let (mut s, mut m) = (0, 0);
        for _ in 0..10 {
            c.run(Dir::Pack, Policy::Auto, 4, LEARN_MIN - 1, &mut Fns(|_, _| s += 1, |_, _| true));
        }
        assert_eq!((s, c.decided(Dir::Pack)), (10, None));
        c.run(
            Dir::Pack,
            Policy::Mpi,
            4,
            1 << 20,
            &mut Fns(
                |_, _| s += 1,
                |_, _| {
                    m += 1;
                    true
                },
            ),
        );
        c.run(Dir::Pack, Policy::Sluice, 4, 1 << 20, &mut Fns(|_, _| s += 1, |_, _| panic!("never the MPI")));
        assert_eq!((s, m, c.decided(Dir::Pack)), (11, 1, None));
    }

    #[test]
    fn an_mpi_that_refuses_sends_the_type_to_sluice_for_good() {
        let c = EngineChoice::new();
        let mut s = vec![];
        for _ in 0..3 {
            c.run(Dir::Pack, Policy::Auto, 256, 256 << 10, &mut Fns(|a, b| s.push((a, b)), |_, _| false));
        }
        assert_eq!(c.decided(Dir::Pack), Some(Engine::Sluice));
        // The first call (1 KiB elements: pieces of 64, PIECE_MIN_BYTES) tries the MPI's engine
        // on element 0 (refused), runs sluice's piece, the refused MPI piece by sluice, then the
        // rest; the others sluice's whole.
        assert_eq!(s, [(0, 64), (64, 128), (128, 256), (0, 256), (0, 256)]);
    }

    #[test]
    fn small_whole_calls_are_timed_over_repeated_runs() {
        assert_eq!((whole_repeats(LEARN_MIN), whole_repeats(8 << 10), whole_repeats(REPEAT_BELOW)), (MAX_REPEATS, 2, 1));
        // A 2 KiB call of one element: the warm-up call runs sluice's engine once; each sample
        // runs its engine once untimed, then MAX_REPEATS times timed, and the decision follows
        // the faster engine.
        for (sluice, mpi, want) in [(200_000, 50_000, Engine::Mpi), (50_000, 200_000, Engine::Sluice)] {
            let mut seen = Vec::new();
            for _ in 0..3 {
                let c = EngineChoice::new();
                let mut f = Fake {
                    size: LEARN_MIN,
                    ns: [sluice, mpi],
                    prefix: None,
                    offers_prefix: false,
                    seen: vec![0; LEARN_MIN],
                    prefix_samples: 0,
                };
                let mut runs = Vec::new();
                let d = (0..20).find_map(|_| {
                    f.seen.fill(0);
                    let d = c.run(Dir::Pack, Policy::Auto, 1, LEARN_MIN, &mut f);
                    runs.push(f.seen[0]);
                    d
                });
                assert_eq!(runs[0], 1, "the warm-up call runs once");
                assert!(runs[1..].iter().all(|&r| r as usize == 1 + MAX_REPEATS), "{runs:?}");
                let e = d.expect("decided").engine;
                if e == want {
                    break;
                }
                seen.push(e);
                assert!(seen.len() < 3, "sluice {sluice}, MPI {mpi}: decided {seen:?}");
            }
        }
    }

    #[test]
    fn calls_too_large_for_the_mpi_stay_with_sluice() {
        let c = EngineChoice::new();
        let d = c.run(Dir::Pack, Policy::Mpi, 1, i32::MAX as usize + 1, &mut Fns(|_, _| {}, |_, _| panic!("too large for the MPI")));
        assert_eq!(d, None);
    }
}
