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
//! once its buffer holds the bytes) to a rank of this node: after a first send that is not
//! timed (cold buffers, the arena's first region), the sends alternate between the two paths,
//! and each send is timed from its start to the later of its return and its receiver's finish.
//! The receiver tells the finish through a *receipt* (`transfer::receipt`: bytes and the time on
//! the node's one clock, written into a slot of the sender's arena when a receive of a
//! non-contiguous type finished); the send's time waits for the receipt, and the next sends of
//! the class take the built-in rules until it is there (at most [`WAITS`]). Why the receiver's part: the two paths
//! leave it different work (a pipelined stream is unpacked as its chunks arrive, the MPI's typed
//! stream received as packed bytes only after its last byte), so equally fast sends can differ
//! 1.7x end to end (docs/benchmarks.md, "Automatic path"). A receipt that does not match the
//! message (another size, finished before the send's first half, replaced by later ones) is a
//! miss; after [`MISSES`] the contest starts over timing sends alone (a receiver whose receives
//! sluice does not see). After [`SAMPLES`] sends on each path (or one each when one path was at
//! least [`CLEAR`] times faster) the faster path by its median time is kept, the MPI's only when
//! at least [`MARGIN`] faster. Every send of the class follows the decision from then on, blocking
//! or not; nonblocking sends of an undecided class take the built-in rules. Receives of the class
//! from the node take sluice's path once it chose sluice's ([`receive_takes_sluice`]), so that
//! an exchange runs through sluice on both sides. Every receive reads either path's message
//! (docs/protocol.md, wire format), so learning changes no byte and no status.
//!
//! What it costs: the slower path's extra time on at most [`SAMPLES`] sends per type and size
//! class, a lock and a table look-up per large send, and per large receive sluice's engine
//! serves from a rank of this node a rank translation, a clock read and one cache line written.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use crate::ffi::mpi;
use crate::transfer::receipt::{self, Read, Slot};
use crate::transfer::shm;

/// Smallest message (packed bytes) that has a contest: below it a send's time is mostly fixed
/// costs and the clock.
pub const MIN_BYTES: usize = 32 << 10;

/// Timed sends per path before a decision.
pub const SAMPLES: u8 = 5;
/// A path this many times faster than the other after one send each decides at once.
pub const CLEAR: f64 = 2.0;
/// The MPI's engine must be this much faster to be chosen over sluice's path; ties go to
/// sluice's. Why: when the two sides of an exchange choose differently, one side's receives
/// follow its choice of sluice's path ([`receive_takes_sluice`]) and the other's stay with the
/// rules, pairings neither contest measured; on the AMD VM every such split came from a choice
/// of the MPI by a hair (medians within 2-4%) and left the class's ping-pong 1.3-1.4x slower
/// than through sluice both ways (fft-t and lammps at 64 KiB, Open MPI).
pub const MARGIN: f64 = 1.05;
/// Sends of the class that may find a timed send's receipt missing before the sample is given
/// up (the sends meanwhile take the built-in rules).
pub const WAITS: u8 = 3;
/// Timed sends without a usable receipt after which a contest times its sends alone (a
/// receiver whose receives sluice does not see: a contiguous receive type, a receive the MPI
/// serves without sluice, sluice off there).
pub const MISSES: u8 = 4;

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

/// How the receiver served a message, as its receipt tells: the receive it had posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// The MPI's typed receive into the application's buffer (the rules left the receive to
    /// the MPI's engine; a pipelined message's M0 then lands through it, its chunks by range).
    Mpi,
    /// sluice's receive: staged and unpacked by sluice's engine, or pipelined into it.
    Sluice,
}

/// A receipt's size word carries this bit when the receiver served the message with the MPI's
/// typed receive ([`Served::Mpi`]); sizes stay below it (a message's bytes fit in 63 bits).
const SERVED_BY_MPI: u64 = 1 << 63;

impl Served {
    fn index(self) -> usize {
        self as usize
    }

    fn word(self, bytes: usize) -> u64 {
        (bytes as u64 & !SERVED_BY_MPI) | if self == Served::Mpi { SERVED_BY_MPI } else { 0 }
    }

    /// A receipt's size word: (bytes, how the message was served).
    fn of(word: u64) -> (u64, Served) {
        (word & !SERVED_BY_MPI, if word & SERVED_BY_MPI != 0 { Served::Mpi } else { Served::Sluice })
    }
}

/// One type and size class's contest.
#[derive(Debug, Default)]
struct Contest {
    /// The untimed first send happened.
    warm: bool,
    /// Times per packed byte (s/B) of the timed sends, and how many, per side.
    times: [[f64; SAMPLES as usize]; 2],
    runs: [u8; 2],
    decided: Option<Side>,
    /// A timed send waiting for its receiver's receipt.
    pending: Option<Pending>,
    /// Timed sends whose receipt could not be matched.
    misses: u8,
    /// Sends are timed alone (their receipts kept missing).
    sender_only: bool,
    /// Samples timed to a receipt, by the send's side and how the receiver served it: the
    /// pairing each sample measured (`SLUICE_LOG=plan` shows them: a receiver follows its own
    /// rules, so some pairings go unmeasured, docs/benchmarks.md "Automatic path").
    pairings: [[u8; 2]; 2],
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
        if let Some(t) = self.times[i].get_mut(self.runs[i] as usize) {
            *t = per_byte;
            self.runs[i] += 1;
        }
        let (m, a) = (Side::Mpi.index(), Side::Sluice.index());
        if self.runs[m] == 0 || self.runs[a] == 0 {
            return None;
        }
        let (tm, ta) = (self.median(Side::Mpi), self.median(Side::Sluice));
        let clear = tm >= CLEAR * ta || ta >= CLEAR * tm;
        if clear || (self.runs[m] >= SAMPLES && self.runs[a] >= SAMPLES) {
            let side = if ta >= MARGIN * tm { Side::Mpi } else { Side::Sluice };
            if side == Side::Sluice {
                SLUICE_CHOSEN.store(true, Ordering::Relaxed);
            }
            self.decided = Some(side);
        }
        self.decided
    }

    /// The median time per byte of `side`'s timed sends (the lower middle one of an even count).
    /// Not the best: the sends that follow the decision run at the typical time, not the
    /// luckiest (vec-2 at 64 KiB on Open MPI: the MPI's best of three 3.68 GB/s end to end
    /// against the arena's 3.57 chose the MPI, and the class's ping-pong then ran 1.3x slower
    /// than through the arena).
    fn median(&self, side: Side) -> f64 {
        let i = side.index();
        let mut t = self.times[i];
        let t = &mut t[..self.runs[i] as usize];
        t.sort_by(f64::total_cmp);
        t.get(t.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    }

    /// A timed send whose receipt did not match: after [`MISSES`] the contest starts over
    /// timing sends alone (times of the two kinds are not compared with each other).
    fn miss(&mut self) {
        self.misses = self.misses.saturating_add(1);
        if self.misses >= MISSES && !self.sender_only {
            self.sender_only = true;
            (self.runs, self.pairings) = ([0; 2], [[0; 2]; 2]);
        }
    }

    /// Settles a timed send's outcome; returns the decision it made.
    fn settle(&mut self, side: Side, outcome: Outcome) -> Option<Side> {
        match outcome {
            Outcome::Time(per_byte, served) => {
                if let Some(h) = served {
                    let n = &mut self.pairings[side.index()][h.index()];
                    *n = n.saturating_add(1);
                }
                self.record(side, per_byte)
            }
            Outcome::NotYet => None,
            Outcome::Miss => {
                self.miss();
                None
            }
        }
    }

    fn decision(&self, key: (u64, u32)) -> Option<Decision> {
        Some(Decision {
            type_id: key.0,
            class: key.1,
            side: self.decided?,
            mpi: self.median(Side::Mpi),
            sluice: self.median(Side::Sluice),
            end_to_end: self.pairings.iter().flatten().any(|&n| n > 0) && !self.sender_only,
            pairings: self.pairings,
        })
    }
}

/// A timed send's time to its receiver's receipt.
#[derive(Debug, Clone, Copy)]
struct Pending {
    side: Side,
    slot: &'static Slot,
    /// The number the receiver's record of this message has.
    record: u64,
    start_ns: u64,
    end_ns: u64,
    bytes: usize,
    /// Sends of the class that found the receipt missing.
    waited: u8,
}

/// What a timed send's receipt says.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// Seconds per packed byte from the send's start to the later of its return and the
    /// receiver's finish, and how the receiver served it (`None`: timed at the sender alone).
    Time(f64, Option<Served>),
    NotYet,
    /// The record is not this message's, or was replaced.
    Miss,
}

impl Pending {
    fn resolve(&self) -> Outcome {
        // This message's record has its size and cannot finish before the send's first half
        // did. A record that fails either is an earlier message's (a send returns before its
        // receiver finished, so in a stream of sends the receiver can be a record behind when
        // the next send starts): the next record is looked at, within the ring.
        let half = self.start_ns + self.end_ns.saturating_sub(self.start_ns) / 2;
        for n in self.record..self.record + receipt::RING {
            match self.slot.read(n) {
                Read::NotYet => return Outcome::NotYet,
                Read::Lost => return Outcome::Miss,
                Read::Ready(word, at) if Served::of(word).0 == self.bytes as u64 && at >= half => {
                    let secs = at.max(self.end_ns).saturating_sub(self.start_ns) as f64 * 1e-9;
                    return Outcome::Time(secs / self.bytes.max(1) as f64, Some(Served::of(word).1));
                }
                Read::Ready(..) => {}
            }
        }
        Outcome::Miss
    }
}

/// (compiled type id, size class) -> its contest.
static CONTESTS: Mutex<Option<FxHashMap<(u64, u32), Contest>>> = Mutex::new(None);
/// Some class chose sluice's path (until then [`receive_takes_sluice`] answers without the
/// lock).
static SLUICE_CHOSEN: AtomicBool = AtomicBool::new(false);

/// Whether a receive from this node of `bytes` packed bytes of compiled type `type_id` takes
/// sluice's path whatever the built-in rules say (`p2p::recv`, which asks only from the
/// pipeline's threshold on): once this process's sends of the class chose sluice's path. Why:
/// in an exchange the peer's sends land in these receives; lammps elements pipelined through
/// the arena into receives the rules leave to Open MPI's engine ran at the MPI's speed,
/// 1.2-1.4x slower than through sluice on both sides (AMD VM, docs/benchmarks.md, "Automatic
/// path"). Not while the contest runs: the peer's contest must be able to measure the MPI's
/// engine on both sides. Not below the threshold: there the peer's contest measured the
/// receive the rules give, and changing it after lost (vec-64 at 64 KiB on Open MPI: staged
/// bytes into the MPI's typed receive 12 us, into sluice's staged receive 18.5). Any receive
/// reads either path's message, so this changes speed only.
pub fn receive_takes_sluice(type_id: u64, bytes: usize) -> bool {
    if bytes < MIN_BYTES || !any_chose_sluice() {
        return false;
    }
    let g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
    let key = (type_id, crate::logging::size_class(bytes));
    g.as_ref().and_then(|m| m.get(&key)).is_some_and(|c| c.decided == Some(Side::Sluice))
}

/// Whether any class chose sluice's path (one relaxed load).
#[inline]
pub fn any_chose_sluice() -> bool {
    SLUICE_CHOSEN.load(Ordering::Relaxed)
}

/// What a send of a contested class does.
#[derive(Debug)]
pub enum Play {
    /// The class is decided: every send takes this side.
    Decided(Side),
    /// Not decided, and this send does not take part (nonblocking, the untimed first one, or
    /// one while a timed send waits for its receipt): the built-in rules decide.
    Rules,
    /// This blocking send runs on `side` and is timed; give the result to [`Turn::done`].
    Turn(Turn),
}

/// A contest's outcome: the side a type's size class takes, and the median times per packed byte
/// (s/B) that decided it.
#[derive(Debug, Clone, Copy)]
pub struct Decision {
    pub type_id: u64,
    pub class: u32,
    pub side: Side,
    pub mpi: f64,
    pub sluice: f64,
    /// Timed to the receiver's finish (else the send alone).
    pub end_to_end: bool,
    /// Samples timed to a receipt, by [`Side`] and [`Served`] (see [`Contest`]).
    pub pairings: [[u8; 2]; 2],
}

/// A timed send of a contest.
#[derive(Debug)]
pub struct Turn {
    key: (u64, u32),
    pub side: Side,
    bytes: usize,
    start_ns: u64,
    /// The receiver's receipt slot and the number its record of this message will have.
    receipts: Option<(&'static Slot, u64)>,
}

/// The play for a send of `bytes` packed bytes of compiled type `type_id` (`timed`: a blocking
/// send that may take part; `receipts`: the slot where the destination writes its receipts
/// for this process, asked only for a timed send).
pub fn play(type_id: u64, bytes: usize, timed: bool, receipts: impl FnOnce() -> Option<&'static Slot>) -> Play {
    let key = (type_id, crate::logging::size_class(bytes));
    let mut g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
    let c = g.get_or_insert_with(FxHashMap::default).entry(key).or_default();
    if let Some(side) = c.decided {
        return Play::Decided(side);
    }
    if let Some(p) = c.pending {
        let outcome = match p.resolve() {
            Outcome::NotYet if p.waited < WAITS => {
                c.pending = Some(Pending { waited: p.waited + 1, ..p });
                return Play::Rules;
            }
            Outcome::NotYet => Outcome::Miss,
            o => o,
        };
        c.pending = None;
        if let Some(side) = c.settle(p.side, outcome) {
            note(c.decision(key));
            return Play::Decided(side);
        }
    }
    if !timed {
        return Play::Rules;
    }
    if !c.warm {
        c.warm = true;
        return Play::Rules;
    }
    let receipts = if c.sender_only { None } else { receipts().map(|s| (s, s.next_record())) };
    Play::Turn(Turn { key, side: c.next(), bytes, start_ns: receipt::now_ns(), receipts })
}

impl Turn {
    /// The send returned (`ok`: successfully): records its time, or leaves it waiting for the
    /// receiver's receipt; returns the decision when this send made it.
    pub fn done(self, ok: bool) -> Option<Decision> {
        let end_ns = receipt::now_ns();
        if !ok {
            return None;
        }
        let mut g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
        let c = g.as_mut()?.get_mut(&self.key)?;
        if c.decided.is_some() || c.pending.is_some() {
            return None; // another thread's send decided, or waits for its receipt
        }
        let outcome = match self.receipts {
            Some((slot, record)) if !c.sender_only => {
                let p = Pending { side: self.side, slot, record, start_ns: self.start_ns, end_ns, bytes: self.bytes, waited: 0 };
                let o = p.resolve();
                if o == Outcome::NotYet {
                    c.pending = Some(p);
                }
                o
            }
            _ => Outcome::Time(end_ns.saturating_sub(self.start_ns) as f64 * 1e-9 / self.bytes.max(1) as f64, None),
        };
        c.settle(self.side, outcome)?;
        c.decision(self.key)
    }
}

/// Logs a contest's decision (`SLUICE_LOG=plan`).
pub fn note(d: Option<Decision>) {
    let Some(d) = d else { return };
    let gbs = |per_byte: f64| 1e-9 / per_byte.max(1e-18);
    crate::logging::plan_once(crate::logging::plan_key(("contest", d.type_id, d.class)), || {
        let p = d.pairings;
        let pairs = if d.end_to_end {
            format!(
                "; samples into the receiver's MPI / sluice receives: the MPI's engine {} / {}, sluice's {} / {}",
                p[0][0], p[0][1], p[1][0], p[1][1]
            )
        } else {
            String::new()
        };
        format!(
            "sends of datatype #{} to this node: {} from now on, learned from blocking sends timed {} (median {:.2} GB/s through the MPI's engine, {:.2} GB/s through sluice's{pairs})",
            d.type_id,
            d.side.name(),
            if d.end_to_end { "to the receiver's finish" } else { "at the sender alone" },
            gbs(d.mpi),
            gbs(d.sluice)
        )
    });
}

/// The receiving half: a receive of `bytes` packed bytes from rank `source` of `comm`, `served`
/// as it says, finished now (see [`received_from`]).
pub fn received(comm: mpi::MPI_Comm, source: c_int, bytes: usize, served: Served) {
    if bytes < MIN_BYTES || source < 0 || comm == crate::ffi::consts::comm_null() || !shm::maps_peers() {
        return;
    }
    if !learning() || super::pipeline::is_inter(comm) {
        return;
    }
    if let Some(w) = super::pipeline::world_rank_of(comm, source) {
        received_from(w, bytes, served);
    }
}

/// The world rank a receive of up to `capacity` bytes from rank `source` of `comm` tells when it
/// finishes (`ops::Op::sender`): a known source of this node's, a size that has a contest,
/// contests running here.
pub fn sender_of(comm: mpi::MPI_Comm, source: c_int, capacity: usize) -> Option<c_int> {
    let known = capacity >= MIN_BYTES && source >= 0 && comm != crate::ffi::consts::comm_null();
    if !known || !learning_here() || super::pipeline::is_inter(comm) {
        return None;
    }
    super::pipeline::world_rank_of(comm, source)
}

/// The receiving half: a receive of `bytes` packed bytes from world rank `sender`, `served` as
/// it says, finished now; the sender, when it is on this node, reads the receipt to time its
/// contest's send end to end and to know which pairing it measured. Only sizes that have a
/// contest; nothing when no contest can run here (learning off, no arena mapped).
pub fn received_from(sender: c_int, bytes: usize, served: Served) {
    if bytes < MIN_BYTES || !learning() {
        return;
    }
    if let Some(slot) = shm::peer_receipts(sender) {
        slot.append(served.word(bytes), receipt::now_ns());
    }
}

/// Whether contests run here: sends learn their path (see [`learning`]) and this process
/// mapped a peer's arena (where receipts go).
pub fn learning_here() -> bool {
    shm::maps_peers() && learning()
}

/// Whether sends learn their path here (`SLUICE_P2P_LEARN`, the automatic rules).
fn learning() -> bool {
    crate::runtime::config().is_some_and(|c| c.p2p_mpi_auto && c.p2p_learn)
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
    fn sides_alternate_and_the_median_times_decide() {
        let arena = [0.8, 0.85, 0.7, 0.75, 0.8];
        assert_eq!(decide(&[1.0, 0.9, 1.1, 1.0, 0.95], &arena), (Some(Side::Sluice), 10), "medians 0.8 vs 1.0");
        let close = [1.02, 1.03, 1.01, 1.04, 1.2];
        assert_eq!(decide(&[1.0, 0.9, 1.1, 1.0, 0.95], &close), (Some(Side::Sluice), 10), "within the margin: sluice's");
        let slower = [1.06, 1.07, 1.01, 1.08, 1.2];
        assert_eq!(decide(&[1.0, 0.9, 1.1, 1.0, 0.95], &slower), (Some(Side::Mpi), 10), "the MPI 6% faster");
        assert_eq!(decide(&[1.3, 0.7, 1.3, 1.3, 1.3], &[1.0; 5]), (Some(Side::Sluice), 10), "one lucky send does not decide");
        assert_eq!(decide(&[1.0], &[0.4]), (Some(Side::Sluice), 2), "clear at once");
        assert_eq!(decide(&[0.3], &[1.0]), (Some(Side::Mpi), 2), "clear at once");
        assert_eq!(decide(&[1.0, 1.0], &[0.9]), (None, 3), "not enough sends yet");
    }

    #[test]
    fn a_class_plays_rules_then_turns_then_its_decision() {
        let id = u64::MAX - 7; // no compiled type has it
        assert!(matches!(play(id, 1 << 20, false, || None), Play::Rules), "nonblocking sends of an undecided class");
        assert!(matches!(play(id, 1 << 20, true, || None), Play::Rules), "the untimed first send");
        let mut decided = None;
        for _ in 0..2 * SAMPLES {
            let Play::Turn(t) = play(id, 1 << 20, true, || None) else { break };
            let side = t.side;
            std::thread::sleep(std::time::Duration::from_millis(if side == Side::Sluice { 1 } else { 5 }));
            decided = t.done(true).or(decided);
        }
        assert_eq!(decided.map(|d| (d.side, d.end_to_end)), Some((Side::Sluice, false)), "no receipts: the sender's time");
        assert!(matches!(play(id, 1 << 20, false, || None), Play::Decided(Side::Sluice)));
        assert!(matches!(play(id, 1 << 21, true, || None), Play::Rules), "another size class has its own contest");
    }

    /// A leaked slot standing for a receiver's (the arena's slots live as long as the process).
    fn slot() -> &'static Slot {
        Box::leak(Box::default())
    }

    /// The MPI's sends return sooner but their receiver finishes later: the receipts decide.
    #[test]
    fn the_receivers_finish_decides_over_the_senders_return() {
        let (id, s) = (u64::MAX - 8, slot());
        assert!(matches!(play(id, 1 << 20, true, || Some(s)), Play::Rules), "the untimed first send");
        s.append(1 << 20, receipt::now_ns()); // its receipt
        let mut decided = None;
        for _ in 0..2 * SAMPLES {
            let Play::Turn(t) = play(id, 1 << 20, true, || Some(s)) else { panic!("a turn each time") };
            let (send_ms, recv_ms) = if t.side == Side::Mpi { (1, 6) } else { (3, 3) };
            std::thread::sleep(std::time::Duration::from_millis(send_ms));
            let d = t.done(true);
            assert!(d.is_none(), "waits for the receipt");
            std::thread::sleep(std::time::Duration::from_millis(recv_ms - send_ms.min(recv_ms)));
            s.append(1 << 20, receipt::now_ns());
            // The next send of the class resolves the receipt.
            match play(id, 1 << 20, false, || Some(s)) {
                Play::Decided(side) => {
                    decided = Some(side);
                    break;
                }
                Play::Rules => {}
                p => panic!("nonblocking send played {p:?}"),
            }
        }
        assert_eq!(decided, Some(Side::Sluice), "6 ms to the receiver's finish vs 3");
        let g = CONTESTS.lock().unwrap();
        let p = g.as_ref().unwrap()[&(id, crate::logging::size_class(1 << 20))].pairings;
        assert!(p[0][1] > 0 && p[1][1] > 0 && p[0][0] == 0 && p[1][0] == 0, "every receipt said sluice's receive: {p:?}");
    }

    #[test]
    fn a_receipt_tells_how_the_receiver_served_the_message() {
        for (bytes, served) in [(64usize, Served::Mpi), (1 << 40, Served::Sluice), (0, Served::Mpi)] {
            assert_eq!(Served::of(served.word(bytes)), (bytes as u64, served));
        }
    }

    #[test]
    fn receipts_that_do_not_match_fall_back_to_the_senders_time() {
        let (id, s) = (u64::MAX - 9, slot());
        let _ = play(id, 1 << 20, true, || Some(s));
        for i in 0..MISSES {
            let Play::Turn(t) = play(id, 1 << 20, true, || Some(s)) else { panic!("turn {i}") };
            assert!(t.done(true).is_none());
            for _ in 0..receipt::RING {
                s.append(12345, receipt::now_ns()); // other messages' sizes, the whole ring
            }
        }
        // The last miss is settled by this play.
        let Play::Turn(t) = play(id, 1 << 20, true, || Some(s)) else { panic!("a turn after the misses") };
        assert!(t.receipts.is_none(), "sends are timed alone now");
        let mut g = CONTESTS.lock().unwrap();
        let c = g.as_mut().unwrap().get_mut(&t.key).unwrap();
        assert!(c.sender_only && c.runs == [0, 0]);
    }

    #[test]
    fn a_receipt_never_arriving_is_given_up_after_some_sends() {
        let (id, s) = (u64::MAX - 10, slot());
        let _ = play(id, 1 << 20, true, || Some(s));
        let Play::Turn(t) = play(id, 1 << 20, true, || Some(s)) else { panic!("a turn") };
        assert!(t.done(true).is_none());
        for _ in 0..WAITS {
            assert!(matches!(play(id, 1 << 20, true, || Some(s)), Play::Rules), "waiting: the rules");
        }
        assert!(matches!(play(id, 1 << 20, true, || Some(s)), Play::Turn(_)), "given up: a new turn");
    }

    #[test]
    fn an_earlier_message_s_record_is_not_this_one_s() {
        let s = slot();
        let n = s.next_record();
        let start = receipt::now_ns();
        let p = Pending { side: Side::Mpi, slot: s, record: n, start_ns: start, end_ns: start + 1_000_000, bytes: 64, waited: 0 };
        s.append(64, start + 100); // finished early in this send: the previous message
        assert_eq!(p.resolve(), Outcome::NotYet, "the next record is this message's");
        s.append(64, start + 900_000);
        assert_eq!(p.resolve(), Outcome::Time(1e-3 / 64.0, Some(Served::Sluice)), "to the sender's return, the later");
        let q = Pending { record: s.next_record(), ..p };
        s.append(32, start + 1_500_000); // another size
        s.append(64, start + 100);
        s.append(64, start + 200);
        assert_eq!(q.resolve(), Outcome::Miss, "no record of the ring is this message's");
        let p = Pending { record: s.next_record(), ..p };
        s.append(Served::Mpi.word(64), start + 2_000_000);
        assert_eq!(p.resolve(), Outcome::Time(2e-3 / 64.0, Some(Served::Mpi)), "to the receiver's finish, served by the MPI");
    }
}
