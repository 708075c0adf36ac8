//! Which path a type's messages of [`MIN_BYTES`] and more to a rank of this node take, learned
//! from the application's own blocking sends: the MPI's datatype engine, or sluice's (staged
//! below the pipeline's threshold, pipelined through the shared-memory arena above it).
//!
//! Why: no rule by block size, and no calibration in another job, gets this right. Between two
//! ranks of one node the faster path depends on the machine (an Intel VM: Open MPI's engine
//! 1.2-1.4x faster for plain vectors of 512-byte blocks at 1-16 MiB; an AMD EPYC VM: the arena
//! 1.3-2.4x faster for the same messages), on the type (nested types of the same block size go
//! the other way; below the pipeline's threshold MPICH's engine beat sluice's staging for
//! 384-byte blocks on the Intel VM and lost to it 1.2-1.6x on the AMD VM), and even on the job
//! (the MPI's own path changed speed up to 2x from one job to the next on the AMD VM):
//! docs/benchmarks.md, "Automatic path". A measurement in the job that sends the messages can
//! know.
//!
//! How: per committed type and size class (a power of two of packed bytes), a *contest* runs
//! on the blocking sends (`MPI_Send`, `MPI_Ssend`, `MPI_Rsend`; not `MPI_Bsend`, which returns
//! once its buffer holds the bytes) to a rank of this node, over the four *pairings* of a send
//! path (the MPI's engine or sluice's) with a receive path (the MPI's typed receive or
//! sluice's): after a first send that is not timed (cold buffers, the arena's first region),
//! each send takes a side and asks its receiver which receive to post, and is timed from its
//! start to the later of its return and its receiver's finish.
//!
//! - The request: a *hint line* per receiver in the sender's arena (`transfer::receipt::Hints`,
//!   one byte per size class), read by the receiver's receives of a non-contiguous type of that
//!   size from that rank on a communicator without a path key ([`asked`], `p2p::recv`). Why the
//!   sender decides the receiver's side too: only it times the message end to end, and a
//!   receiver left to its own rules leaves pairings unmeasured (face-x at 64 KiB: every sample
//!   went into sluice's staged receive, and the MPI's engine on both ends, 1.1-1.3x faster,
//!   was never tried; docs/benchmarks.md, "Automatic path"). The requested receive alternates
//!   every second send; a receiver that posted its receive before the request came takes it one
//!   message late, which the contest learns from the receipts ([`Contest::turn`]).
//! - The receipt: bytes, how the receiver served the message, and the time on the node's one
//!   clock, written into a slot of the sender's arena when a receive of a non-contiguous type
//!   finished (`transfer::receipt`). The sample is placed under the pairing the receipt names,
//!   whatever was asked. The send's time waits for the receipt, and the next sends of the class
//!   take the built-in rules until it is there (at most [`WAITS`]). Why the receiver's part:
//!   the paths leave it different work (a pipelined stream is unpacked as its chunks arrive,
//!   the MPI's typed stream received as packed bytes only after its last byte), so equally
//!   fast sends can differ 1.7x end to end. A receipt that does not match the message (another
//!   size, finished before the send's first half, replaced by later ones) is a miss; after
//!   [`MISSES`] the contest starts over timing sends alone (a receiver whose receives sluice
//!   does not see), without requests.
//!
//! Below 4 MiB each timed send follows untimed ones of the same pairing, one below 1 MiB and three
//! from 1 MiB (`Contest::step`, `Contest::primes`: the first messages of a pairing after another's
//! are biased by what that one left in the caches). After [`SAMPLES`] timed sends on each pairing
//! (fewer for large or slow messages, and from 1 MiB none more for a pairing [`CLEAR`] times slower after
//! two, or a decision after two each when one was at least [`CLEAR`] times faster than every other;
//! or [`LIMIT`] timed sends when the receiver does not post what it is asked, a receive it rarely
//! posts when asked no longer asked for after [`REFUSALS`] receipts) the fastest pairing
//! by its median time is kept, a mixed one (one engine sends, the other's receive unpacks) only
//! when at least [`MIXED_MARGIN`] faster than both pure ones, another than sluice's on both ends
//! only when at least [`MARGIN`] faster, and the pairing the receiver already chose for its own
//! sends to this process when at most [`AGREE_MARGIN`] slower than that (its hint line to this
//! process carries its decision); the hint lines then ask for its receive. The medians are
//! pooled with those the receiver published for its sends of the same size to this process
//! ([`Contest::pooled`], `receipt::Medians`). Where the runner-up is within
//! [`runoff::WITHIN`] of the pick, the two run off in blocks of each in a row, in a steady
//! state, and the runoff's medians choose between them (`runoff`). Every send of
//! the class follows the decision from then on, blocking or not; nonblocking sends of an
//! undecided class take the built-in rules.
//! A receive whose sender asked nothing takes sluice's path once this process's own sends of the
//! class chose sluice's ([`receive_takes_sluice`]). Every receive reads either path's message
//! (docs/protocol.md, wire format), so learning changes no byte and no status. (MPICH, from the
//! pipeline's threshold on: a blocking receive asked for the MPI's typed receive probes the
//! message first, other receives keep their rules; see [`mpi_receive_posts_plainly`].)
//!
//! What it costs: the slower pairings' extra time on at most [`LIMIT`] timed sends per type and
//! size class (and as many warm-up sends below 1 MiB, three times as many from 1 to 4 MiB; a
//! runoff's at most 32 timed sends below 1 MiB and 8 from 1 MiB, and a quarter to one and a half
//! times as many untimed ones), a lock
//! and a table look-up per large send; per receive of a contested size from a named rank of this
//! node a rank translation and one cache line read; per large receive sluice's engine serves from a
//! rank of this node a clock read and one cache line written.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use crate::ffi::mpi;
use crate::transfer::receipt::{self, Hints, Median, Medians, Read, Slot};
use crate::transfer::shm;

mod runoff;
use runoff::Runoff;

/// Smallest message (packed bytes) that has a contest: below it a send's time is mostly fixed
/// costs and the clock.
pub const MIN_BYTES: usize = 32 << 10;

/// Size classes below this one (4 MiB) time each send after untimed ones of its pairing
/// (`Contest::step`, `Contest::primes`).
const PRIMED_BELOW: u32 = 22;

/// A contest whose fastest timed send took this long (ns) or more samples as from 4 MiB
/// (`Contest::regime`): a 4 MiB message takes about a millisecond here.
const SLOW_NS: u64 = 1_000_000;

/// Timed sends per pairing (send path, receive path) before a decision, below 1 MiB
/// (`Contest::samples`). Why nine: one 64 KiB message takes 10-30 us, timed alone it varies
/// +-30% on a 2-vCPU VM and the pairings are often within 10-20% of each other; the median of
/// five picked a pairing 1.1-1.3x slower than the best in about one case in five, a median of
/// nine halves its spread, for about 40 more sends of tens of microseconds per type.
pub const SAMPLES: u8 = 9;
/// A pairing this many times faster than every other after two sends each decides at once;
/// after two sends, a pairing this many times slower than the fastest gets no more.
pub const CLEAR: f64 = 2.0;
/// Another pairing must be this much faster than sluice's send into sluice's receive to be
/// chosen over it; ties go to sluice on both ends, the pairing a receiver without a request
/// falls back to once its own sends chose sluice ([`receive_takes_sluice`]).
pub const MARGIN: f64 = 1.02;
/// A mixed pairing (one engine sends, the other's receive unpacks) must be this much faster than
/// the faster pure pairing (the MPI's engine on both ends, or sluice's) to be chosen over it.
/// Why: a mixed pairing does both engines' work in turn (sluice packs, then the MPI copies the
/// contiguous bytes and its receive unpacks them; or the MPI's typed stream lands whole before
/// sluice unpacks it), and the contest's alternating samples do not see what that costs in an
/// exchange's steady state: MPICH, 64 KiB of vec-256 and face-y, sluice's send into the MPI's
/// receive was timed 4-14% faster than the MPI's engine on both ends in most jobs, and with
/// both ranks on it the ping-pong ran 1.03-1.10x slower than the MPI's path forced on both.
/// Mixed pairings that win in reality win by more (Open MPI, vec-8, face-y and milc at 64 KiB:
/// 1.2-2x ahead of the best pure pairing, and the exchange 1.05-1.2x faster than any forced
/// path).
pub const MIXED_MARGIN: f64 = 1.15;
/// A pairing a peer already chose for its sends of the class to this process is taken for this
/// process's sends to it when at most this much slower than the pairing this process would take
/// (the fastest, a mixed one only with its [`MIXED_MARGIN`] lead). Why: in an
/// exchange each rank decides its own sends, and two ranks that decided differently on nearly
/// even pairings run both paths in turn, which neither measured: Open MPI, 16 MiB of lammps and
/// wrf, one rank chose the MPI's engine on both ends by 3-4%, the other sluice's by 0-2%, and
/// the exchange then ran 1.09-1.13x slower than the MPI's path forced on both.
pub const AGREE_MARGIN: f64 = 1.06;
/// Timed sends after which a contest decides on the pairings it measured (at most; four more
/// than four pairings' samples, fewer for large messages: `Contest::samples`): a receiver
/// that posts the receives it is asked for only at times (`MPI_ANY_SOURCE` at times, a
/// communicator with a path key) leaves some pairings unmeasured.
pub const LIMIT: u8 = 4 * SAMPLES + 4;
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
    const BOTH: [Side; 2] = [Side::Mpi, Side::Sluice];

    fn index(self) -> usize {
        self as usize
    }

    /// The short name the plan log's medians go by.
    fn tag(self) -> &'static str {
        match self {
            Side::Mpi => "MPI",
            Side::Sluice => "sluice",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Mpi => "the MPI's datatype engine",
            Side::Sluice => "sluice's engine (staged, or pipelined through the arena)",
        }
    }
}

/// How the receiver served a message, as its receipt tells: the receive it had posted. Also
/// the receive a sender asks its receiver to post ([`asked`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// The MPI's typed receive into the application's buffer (the rules left the receive to
    /// the MPI's engine; a pipelined message's M0 then lands through it, its chunks by range).
    Mpi,
    /// sluice's receive: staged and unpacked by sluice's engine, or pipelined into it.
    Sluice,
}

/// A hint line's code carries this bit once the sender's contest for the class has decided
/// (with the receive it asks for from then on): its receivers stop writing receipts for the
/// class ([`received_from`]), a clock read and a store into the sender's arena per receive that
/// nobody reads any more. Another type's contest of the same class asking clears it again.
const DECIDED_CODE: u8 = 0x80;

/// A decided hint line's code carries this bit when the sender's decision sends on sluice's
/// side: with the receive it asks for, a receiver reads the whole pairing its peer chose, and
/// its own contest takes the same one where its measurements call them even ([`AGREE_MARGIN`]).
const SENT_BY_SLUICE: u8 = 0x40;

/// A receipt's size word carries this bit when the receiver served the message with the MPI's
/// typed receive ([`Served::Mpi`]); sizes stay below it (a message's bytes fit in 63 bits).
const SERVED_BY_MPI: u64 = 1 << 63;

impl Served {
    const BOTH: [Served; 2] = [Served::Mpi, Served::Sluice];

    fn index(self) -> usize {
        self as usize
    }

    fn other(self) -> Served {
        match self {
            Served::Mpi => Served::Sluice,
            Served::Sluice => Served::Mpi,
        }
    }

    fn word(self, bytes: usize) -> u64 {
        (bytes as u64 & !SERVED_BY_MPI) | if self == Served::Mpi { SERVED_BY_MPI } else { 0 }
    }

    /// A receipt's size word: (bytes, how the message was served).
    fn of(word: u64) -> (u64, Served) {
        (word & !SERVED_BY_MPI, if word & SERVED_BY_MPI != 0 { Served::Mpi } else { Served::Sluice })
    }

    /// The code of a request for this receive in a hint line (`receipt::Hints`; 0: none).
    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn of_code(code: u8) -> Option<Served> {
        match code & !(DECIDED_CODE | SENT_BY_SLUICE) {
            1 => Some(Served::Mpi),
            2 => Some(Served::Sluice),
            _ => None,
        }
    }

    /// The short name the plan log's medians go by.
    fn tag(self) -> &'static str {
        match self {
            Served::Mpi => "MPI",
            Served::Sluice => "sluice",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Served::Mpi => "the MPI's typed receive",
            Served::Sluice => "sluice's receive",
        }
    }
}

/// What a class's sends do once decided: the send path, and the receive its receivers are
/// asked to post (`None`: timed at the sender alone, no request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub send: Side,
    pub receive: Option<Served>,
}

/// The receive column that sends timed at the sender alone are kept under (sluice's, the one
/// column of a contest whose receiver posts only sluice's receive on request).
const ALONE: Served = Served::Sluice;

/// Hint lines a contest asked receivers on (the decision is written to each).
const ASKED: usize = 8;

/// Receipts that name the other receive where a receive was asked for twice in a row, after
/// which a contest no longer asks for it, where at least [`REFUSAL_RATIO`] times as many as
/// name it (`Contest::refuses`).
const REFUSALS: u8 = 3;
/// Why a ratio, not none naming it: a receiver that posts the receive asked for once in five
/// or less (a receive of `MPI_ANY_SOURCE` at times, one posted before the request came) kept
/// the contest asking for it, its sends landing in the other receive.
const REFUSAL_RATIO: u8 = 4;

/// One type and size class's contest: over the four pairings of a send path with a receive
/// path, each sample placed by the receive its receipt names (module doc).
#[derive(Debug, Default)]
struct Contest {
    /// The size class (the byte of the hint lines this contest writes).
    class: u32,
    /// The untimed first send happened.
    warm: bool,
    /// Times per packed byte (s/B) of the timed sends by [send side][receive] (the first
    /// [`SAMPLES`] of each), and how many there were.
    times: [[[f64; SAMPLES as usize]; 2]; 2],
    runs: [[u8; 2]; 2],
    /// Timed sends settled in all.
    settled: u8,
    decided: Option<Choice>,
    /// The receive the last turn asked for, and for how many turns in a row.
    asking: Option<Served>,
    held: u8,
    /// Receipts that showed the receiver posting the receive asked for by the message's own
    /// send ([0]) or by the send before it ([1]), counted where the two differed.
    lag: [u8; 2],
    /// Timed sends by [send side][receive expected to serve them] ([`Contest::turn`]): the
    /// turns balance these, not the samples, which land where the receiver served them.
    tried: [[u8; 2]; 2],
    /// The receivers' hint lines the turns wrote.
    lines: Vec<&'static Hints>,
    /// Those receivers' hint lines to this process (their decisions, [`Contest::peers_choice`]).
    heard: Vec<&'static Hints>,
    /// The decision took the pairing a receiver had chosen ([`AGREE_MARGIN`]).
    followed: bool,
    /// A timed send waiting for its receiver's receipt.
    pending: Option<Pending>,
    /// Timed sends whose receipt could not be matched.
    misses: u8,
    /// Sends are timed alone (their receipts kept missing).
    sender_only: bool,
    /// Receipts by receive asked for (twice in a row, by the send before and by the message's
    /// own): how many named the other receive ([0]), and how many this one ([1]).
    refused: [[u8; 2]; 2],
    /// A pipelined message is received by sluice's receive even where the MPI's typed receive
    /// was asked for (MPICH from the pipeline's threshold on, [`mpi_receive_posts_plainly`]):
    /// sluice's send into the MPI's receive is not a pairing here.
    pipelined_into_sluice: bool,
    /// The pairing the last sends warmed up untimed, and how many of them ([`Contest::step`]).
    primed: Option<((Side, Option<Served>), u8)>,
    /// The packed bytes of the class's first timed send: the size this contest's medians are
    /// published for, and the size a receiver's published medians must be for to be pooled.
    bytes: usize,
    /// The lines this contest publishes its medians on (one per receiver asked), and the
    /// receivers' lines that publish theirs for their sends to this process
    /// ([`Contest::pooled`]).
    told: Vec<&'static Medians>,
    reports: Vec<&'static Medians>,
    /// A runoff between the two fastest pairings, where the samples called them close
    /// (`runoff`), and once it ended its outcome (one per contest).
    runoff: Option<Runoff>,
    ran_off: Option<RunoffResult>,
    /// The fastest timed send's time (ns; `None`: none yet), which may make the contest
    /// sample as for larger messages ([`Contest::regime`]).
    fastest_ns: Option<u64>,
}

/// A runoff's outcome: its two pairings (the contest's pick first) and each one's median time
/// per byte (s/B) and samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunoffResult {
    pub pairs: [(Side, Served); 2],
    pub medians: [(f64, u8); 2],
}

/// The next send of an undecided class ([`Contest::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Untimed, on this side, asking for this receive: it warms up the pairing that the next
    /// send times.
    Warm(Side, Option<Served>),
    /// Timed, on this side, asking for this receive.
    Time(Side, Option<Served>),
}

impl Contest {
    /// The pairings this contest compares.
    fn arms(&self) -> impl Iterator<Item = (Side, Served)> + '_ {
        let one = self.sender_only;
        let no_sm = self.pipelined_into_sluice;
        let refused = Served::BOTH.map(|r| self.refuses(r));
        let refused = if refused == [true; 2] { [false; 2] } else { refused };
        Side::BOTH.into_iter().flat_map(move |s| {
            Served::BOTH
                .into_iter()
                .filter(move |&r| if one { r == ALONE } else { !(refused[r.index()] || no_sm && (s, r) == (Side::Sluice, Served::Mpi)) })
                .map(move |r| (s, r))
        })
    }

    /// Whether the receiver does not post receive `r` when asked: [`REFUSALS`] receipts named
    /// the other where `r` was asked for twice in a row, and [`REFUSAL_RATIO`] times as many as
    /// named `r`. Why: a receive that
    /// sluice serves whatever is asked (MPICH: a type mixing basic types, whose packed bytes
    /// MPICH's engine refuses; a nonblocking receive from the pipeline's threshold on) left the
    /// MPI's engine on both ends unmeasured, and the contest kept asking for it up to its
    /// [`LIMIT`] (MPICH, struct-mix and wrf just under 1 MiB: 40 sends of the MPI's engine into
    /// sluice's receive, 3.5 ms each for struct-mix, where two pairings take 18).
    fn refuses(&self, r: Served) -> bool {
        let [other, this] = self.refused[r.index()];
        other >= REFUSALS && u16::from(other) >= u16::from(REFUSAL_RATIO) * u16::from(this)
    }

    fn runs(&self, (s, r): (Side, Served)) -> u8 {
        self.runs[s.index()][r.index()]
    }

    /// The next timed send: its side, and the receive to ask for from now on. The receive
    /// asked for changes every second send (each pairing is sampled all through the contest,
    /// not one receive's pairings while the buffers are cold and the other's later). A
    /// receiver may post its next receive before the send that asks for it starts: the
    /// request then takes effect one message late. So the second send of each two gets the
    /// receive asked for; the first gets the new request or the old one, as the receipts so
    /// far say the receiver does ([`Contest::lag`]). The side: the one with fewer timed sends
    /// expected into the receive the message is expected to get (on a tie, the one with fewer
    /// timed sends in all); the third part is that receive. Why sends expected, not samples:
    /// a receiver that serves another receive than the one asked for now and then (an
    /// `MPI_ANY_SOURCE` receive, one posted before the request came) leaves the pairing
    /// expected without samples, and balancing samples sent every such turn on the side that
    /// had fewer into it: 14-38 timed sends of the MPI's engine into sluice's receive, one of
    /// sluice's, and a decision at the limit for a pairing 6x slower, or none in 200 sends
    /// (Open MPI, 64-byte chunks, 1 and 4 MiB).
    fn turn(&self) -> (Side, Option<Served>, Served) {
        let col = |r: Served| (self.tried[0][r.index()], self.tried[1][r.index()]);
        let total = |s: Side| self.tried[s.index()].iter().map(|&n| n as u32).sum::<u32>();
        let by_totals = if total(Side::Sluice) < total(Side::Mpi) { Side::Sluice } else { Side::Mpi };
        let side = |(m, a): (u8, u8)| match m.cmp(&a) {
            std::cmp::Ordering::Less => Side::Mpi,
            std::cmp::Ordering::Greater => Side::Sluice,
            std::cmp::Ordering::Equal => by_totals,
        };
        // A side whose pairing into `r` needs samples and the other's not; else by counts.
        let pick = |r: Served| match (self.needs((Side::Mpi, r)), self.needs((Side::Sluice, r))) {
            (true, false) => Side::Mpi,
            (false, true) => Side::Sluice,
            _ => side(col(r)),
        };
        if self.sender_only {
            return (pick(ALONE), None, ALONE);
        }
        let sum = |r: Served| col(r).0 as u32 + col(r).1 as u32;
        let wanted = |r: Served| self.needs((Side::Mpi, r)) || self.needs((Side::Sluice, r));
        let ask = match self.asking {
            Some(a) if !wanted(a) && wanted(a.other()) => a.other(),
            Some(a) if !wanted(a.other()) => a,
            Some(a) if self.held < 2 => a,
            Some(a) if sum(a.other()) <= sum(a) => a.other(),
            Some(a) => a,
            None => Served::Mpi,
        };
        let lands = if Some(ask) == self.asking || self.lag[0] > self.lag[1] { ask } else { self.asking.unwrap_or(ask) };
        (pick(lands), Some(ask), lands)
    }

    /// The next send's part: [`Contest::turn`]'s pairing, sent untimed ([`Contest::primes`] times)
    /// before it is timed, below 4 MiB ([`PRIMED_BELOW`]). Why: a contest's sends change pairing
    /// from one message to the next, and the first message of a pairing after another runs on what
    /// the other left in the caches (the MPI's fragments, sluice's staging): at 64 KiB such a
    /// message was 0.6-1.4x the time of one after a message of the same pairing, a different bias
    /// per pairing, so the contest chose pairings 1.1-1.3x slower than the best in steady state
    /// (Open MPI and MPICH, vec-64, milc, face-z); at 1 MiB Open MPI's single copy of face-z
    /// (contiguous data in a larger extent) was timed at half its steady speed and lost to sluice's
    /// path, 1.3-1.4x slower (with one untimed send still 0.5-0.9x). The untimed sends also ask for
    /// the receive one message ahead, so a receiver that posts before the request reaches it still
    /// gets the pairing timed. From 4 MiB sends are timed at once: each costs milliseconds, and an
    /// application sends few of them.
    fn step(&mut self) -> Step {
        let alone = self.sender_only;
        if let Some(((side, served), timed)) = self.runoff.as_mut().and_then(Runoff::next) {
            let ask = (!alone).then_some(served);
            return if timed { Step::Time(side, ask) } else { Step::Warm(side, ask) };
        }
        let (side, ask, lands) = self.turn();
        let warmed = match self.primed {
            Some((p, n)) if p == (side, ask) => n,
            _ => 0,
        };
        if warmed < self.primes() {
            self.primed = Some(((side, ask), warmed + 1));
            return Step::Warm(side, ask);
        }
        self.primed = None;
        let n = &mut self.tried[side.index()][lands.index()];
        *n = n.saturating_add(1);
        Step::Time(side, ask)
    }

    /// Untimed sends of a pairing before each of its timed ones ([`Contest::step`]): one below
    /// 1 MiB, three from 1 MiB to 4 MiB ([`PRIMED_BELOW`]), none above. Why three there: Open
    /// MPI's single copy (face-z: contiguous data in a larger extent, copied by the receiver
    /// from the sender's buffer) recovers from another path's messages over three to five
    /// messages (a 1 MiB send 1.3-2x its steady time first, often still 1.1-1.8x second and
    /// third), sluice's paths after one. With one untimed send the MPI's engine on both ends
    /// was measured at 0.5-0.9x its steady speed and lost to sluice's send in about one job in
    /// three, with two in about one in seven (each time one rank or both then ran 1.2-1.4x
    /// slower than the MPI's path for the rest of the run), with three in one of 16.
    fn primes(&self) -> u8 {
        match self.regime() {
            c if c >= PRIMED_BELOW => 0,
            20.. => 3,
            _ => 1,
        }
    }

    /// The size class whose sampling rules ([`Contest::primes`], [`Contest::samples`], the
    /// runoff's legs) this contest follows: its own, or from 4 MiB's ([`PRIMED_BELOW`]) once
    /// its fastest timed send took [`SLOW_NS`] or more. Why: what the rules by size weigh is a
    /// send's time, and a type the engines move slowly costs per message what a large one does
    /// (Open MPI, face-x at 1 MiB: 3-4 ms per message, about 100 sends to decide by the rules
    /// of 1 MiB, more than the benchmark's 21 rounds sent on the automatic path). The fastest,
    /// not the first: a contest's first sends run on cold buffers.
    fn regime(&self) -> u32 {
        match self.fastest_ns {
            Some(ns) if ns >= SLOW_NS => self.class.max(PRIMED_BELOW),
            _ => self.class,
        }
    }

    /// Whether pairings are dropped early (a pairing [`CLEAR`] times slower after two samples
    /// gets no more; a pairing [`CLEAR`] times faster than every other decides): only where a
    /// sample is expensive, from 1 MiB on. Below, early samples mislead: the first messages
    /// of a type ran 2-4x slower than the later ones for every pairing (Open MPI, MPICH, 64
    /// KiB), and the MPI's engine on both ends, measured slow first, was dropped after three
    /// samples although fastest (MPICH, vec-64: 1.3x slower than it for the rest of the run).
    fn prunes(&self) -> bool {
        self.samples() < SAMPLES
    }

    /// Samples each pairing needs: [`SAMPLES`], five at 1-4 MiB, three from 4 MiB. Why fewer:
    /// a send of a megabyte or more takes a millisecond or more, on which a descheduled moment
    /// (tens of microseconds) weighs little, and an application sends few of them (a benchmark's 15
    /// rounds of one or two 16 MiB messages on the automatic path never finished a contest of
    /// five samples per pairing, its sends meanwhile spread over the slow pairings). Why not
    /// two: the median of two is the faster one, and one lucky (or one slowed) sample decided
    /// (Open MPI, lammps at 16 MiB: the arena chose on two samples in one run of three, 1.2x
    /// slower than the MPI's engine on both ends, which the other runs chose). Why five at 1-4
    /// MiB: in a ping-pong each rank decides its own sends, and one rank's three samples of
    /// the MPI's engine on both ends, taken while the other rank was slow to post, chose
    /// sluice's send in about one job in 16 (Open MPI, face-z at 1 MiB: 6.3 GB/s against 7.4
    /// through sluice's send, where the other rank measured 9-16 against 7-9; that rank then
    /// ran 1.3x slower than the MPI's path); with five, 24 jobs of 24 chose the MPI's engine on
    /// both ranks, by 1.2x or more, for about 40 more sends of a millisecond or less per type.
    fn samples(&self) -> u8 {
        match self.regime() {
            20..=21 => 5,
            22.. => 3,
            _ => SAMPLES,
        }
    }

    /// Whether pairing `a` needs another sample: fewer than [`Contest::samples`], unless two
    /// samples already showed it [`CLEAR`] times slower than the fastest pairing so far (it
    /// cannot win; more of its slow sends would only cost). Two, not one: a contest's first
    /// sample runs on colder buffers than the later ones.
    fn needs(&self, a: (Side, Served)) -> bool {
        let n = self.runs(a);
        if n >= self.samples() || !self.arms().any(|b| b == a) {
            return false;
        }
        if n < 2 || !self.prunes() {
            return true;
        }
        let best = self.arms().filter(|&b| self.runs(b) > 0).map(|b| self.median(b)).fold(f64::INFINITY, f64::min);
        self.median(a) < CLEAR * best
    }

    /// A send asked for a receive on the receiver's lines `peer` (the decision is written to its
    /// hint line too, the medians to its median line).
    fn asked_on(&mut self, peer: &Peer) {
        fn keep<T>(v: &mut Vec<&'static T>, l: Option<&'static T>) {
            if let Some(l) = l.filter(|l| v.len() < ASKED && !v.iter().any(|h| std::ptr::eq(*h, *l))) {
                v.push(l);
            }
        }
        keep(&mut self.lines, Some(peer.ask));
        keep(&mut self.heard, peer.decided);
        keep(&mut self.told, peer.told);
        keep(&mut self.reports, peer.heard);
    }

    /// A turn asked for `ask`.
    fn ask(&mut self, ask: Served) {
        self.held = if self.asking == Some(ask) { self.held.saturating_add(1) } else { 1 };
        self.asking = Some(ask);
    }

    fn record(&mut self, side: Side, served: Served, per_byte: f64) -> Option<Choice> {
        let ns = (per_byte * self.bytes as f64 * 1e9) as u64;
        self.fastest_ns = Some(self.fastest_ns.map_or(ns, |f| f.min(ns)));
        if let Some(r) = self.runoff.as_mut() {
            r.record(side, served, per_byte);
            return if r.over() { self.conclude() } else { None };
        }
        let (s, r) = (side.index(), served.index());
        if let Some(t) = self.times[s][r].get_mut(self.runs[s][r] as usize) {
            *t = per_byte;
        }
        self.runs[s][r] = self.runs[s][r].saturating_add(1);
        self.settled = self.settled.saturating_add(1);
        self.tell();
        let sampled = |a| self.runs(a) > 0;
        let full = self.arms().all(|a| !self.needs(a));
        // Two samples each, not one: every pairing's first send runs on cold buffers (its
        // staging, the MPI's fragments), 2-10x slower at 64 KiB here, and a winner by one
        // sample each was often only the pairing first sampled warm (Open MPI, vec-64 at
        // 64 KiB: sluice into the MPI's receive chosen on 40 us against 105-178 us, then 1.3x
        // slower than the MPI on both ends for the rest of the run).
        let twice = self.arms().all(|a| self.runs(a) >= 2);
        let best = self.arms().filter(|&a| sampled(a)).min_by(|&a, &b| self.median(a).total_cmp(&self.median(b)))?;
        let clear = twice && self.prunes() && self.arms().all(|a| a == best || self.median(a) >= CLEAR * self.median(best));
        let limit = self.settled >= LIMIT - 4 * (SAMPLES - self.samples())
            && Side::BOTH.iter().all(|&s| Served::BOTH.iter().any(|&r| self.runs((s, r)) > 0));
        if !(full || clear || limit) {
            return None;
        }
        // At the limit a pairing measured once does not outvote those measured more.
        let least = if full || clear || !self.arms().any(|a| self.runs(a) >= 2) { 1 } else { 2 };
        let eligible = |a| self.runs(a) >= least;
        // Decided on this process's samples pooled with the receiver's of the same messages
        // the other way, where it published them.
        let pooled: [[f64; 2]; 2] = Side::BOTH.map(|s| Served::BOTH.map(|r| self.pooled((s, r))));
        let median = |(s, r): (Side, Served)| pooled[s.index()][r.index()];
        let arms: Vec<_> = self.arms().filter(|&a| eligible(a)).collect();
        let (best, followed) = self.choose(&arms, median)?;
        // A close call is run off in a steady state (`runoff`), once per contest, against the
        // runner-up by the same rules (a mixed pairing only with its lead over the pure one).
        if self.ran_off.is_none() {
            let others: Vec<_> = arms.iter().copied().filter(|&a| a != best).collect();
            let runner = self.choose(&others, median).map(|(a, _)| a);
            if let Some(runner) = runner.filter(|&a| median(a) <= runoff::WITHIN * median(best)) {
                self.runoff = Some(Runoff::new([best, runner], self.regime()));
                return None;
            }
        }
        Some(self.finish(best, followed))
    }

    /// The pairing to keep among `arms` by their `median` times per byte: the fastest, a mixed
    /// one only when at least [`MIXED_MARGIN`] faster than the faster pure one, sluice's on
    /// both ends when at most [`MARGIN`] slower than that, and the pairing the receiver chose for
    /// its sends to this process when at most [`AGREE_MARGIN`] slower (then `true`).
    fn choose(&self, arms: &[(Side, Served)], median: impl Fn((Side, Served)) -> f64) -> Option<((Side, Served), bool)> {
        let fastest = |pure: bool| {
            let arms = arms.iter().copied().filter(|a| !pure || a.0.index() == a.1.index());
            arms.min_by(|&a, &b| median(a).total_cmp(&median(b)))
        };
        let mut best = fastest(false)?;
        if let Some(pure) = fastest(true).filter(|_| !self.sender_only) {
            if best.0.index() != best.1.index() && median(pure) <= MIXED_MARGIN * median(best) {
                best = pure;
            }
        }
        let ours = (Side::Sluice, if self.sender_only { ALONE } else { Served::Sluice });
        // What the peer's choice is held against: the fastest pairing this process would take
        // (a mixed one only with its lead), before the tie goes to sluice's on both ends.
        let own = best;
        let best = if arms.contains(&ours) && median(ours) <= MARGIN * median(own) { ours } else { own };
        match self.peers_choice().filter(|&p| p != best && arms.contains(&p)) {
            Some(theirs) if median(theirs) <= AGREE_MARGIN * median(own) => Some((theirs, true)),
            _ => Some((best, false)),
        }
    }

    /// Ends a runoff: its two pairings chosen between by its medians, as [`Contest::choose`]
    /// does (the contest's pick where neither pairing has a sample).
    fn conclude(&mut self) -> Option<Choice> {
        let r = self.runoff.take()?;
        let medians = [r.median(0), r.median(1)];
        self.ran_off = Some(RunoffResult { pairs: r.pairs, medians });
        let median = |a| r.pairs.iter().position(|&p| p == a).map_or(f64::INFINITY, |i| medians[i].0);
        let (best, followed) = if medians.iter().all(|m| m.1 == 0) { (r.pairs[0], false) } else { self.choose(&r.pairs, median)? };
        Some(self.finish(best, followed))
    }

    /// Decides for pairing `(send, receive)` (`followed`: the receiver's own choice, taken for
    /// agreement) and writes the decision to the hint lines.
    fn finish(&mut self, (send, receive): (Side, Served), followed: bool) -> Choice {
        self.followed = followed;
        if send == Side::Sluice {
            SLUICE_CHOSEN.store(true, Ordering::Relaxed);
        }
        let choice = Choice { send, receive: (!self.sender_only).then_some(receive) };
        if let Some(r) = choice.receive {
            let side = if send == Side::Sluice { SENT_BY_SLUICE } else { 0 };
            for line in &self.lines {
                line.set(self.class, r.code() | DECIDED_CODE | side);
            }
        }
        self.decided = Some(choice);
        choice
    }

    /// The pairing a receiver this contest asked already chose for its own sends of the class
    /// to this process, as its hint line to this process tells (the first found).
    fn peers_choice(&self) -> Option<(Side, Served)> {
        if self.sender_only {
            return None;
        }
        self.heard.iter().find_map(|line| {
            let code = line.get(self.class);
            let side = if code & SENT_BY_SLUICE != 0 { Side::Sluice } else { Side::Mpi };
            (code & DECIDED_CODE != 0).then(|| Served::of_code(code)).flatten().map(|r| (side, r))
        })
    }

    /// The median time per byte of a pairing's timed sends (the lower middle one of an even
    /// count). Not the best: the sends that follow the decision run at the typical time, not
    /// the luckiest (vec-2 at 64 KiB on Open MPI: the MPI's best of three 3.68 GB/s end to end
    /// against the arena's 3.57 chose the MPI, and the class's ping-pong then ran 1.3x slower
    /// than through the arena).
    fn median(&self, (s, r): (Side, Served)) -> f64 {
        let (s, r) = (s.index(), r.index());
        let mut t = self.times[s][r];
        let t = &mut t[..(self.runs[s][r] as usize).min(SAMPLES as usize)];
        t.sort_by(f64::total_cmp);
        t.get(t.len().saturating_sub(1) / 2).copied().unwrap_or(f64::INFINITY)
    }

    /// The receiver's published median and samples of pairing `a` for its sends of the same
    /// size to this process (the first receiver asked that published one; `None`: none).
    fn reported(&self, (s, r): (Side, Served)) -> Option<Median> {
        if self.sender_only {
            return None;
        }
        let m = self.reports.iter().find_map(|l| l.get(self.bytes))?;
        Some(m[s.index() * 2 + r.index()]).filter(|&(t, n)| n > 0 && t.is_finite())
    }

    /// The median of pairing `a` pooled with the receiver's ([`Contest::reported`]): the
    /// geometric mean of the two medians weighted by their samples; this process's alone
    /// where the receiver published none or this process has no sample. Why: in an exchange
    /// both directions move the same messages, and each rank deciding on its own few samples
    /// (three per pairing from 4 MiB) let noise pick a pairing 1.06-1.2x slower than another
    /// (Open MPI, lammps at 16 MiB: one rank's three samples called the MPI's engine on both
    /// ends faster, the benchmark then ran 1.06x [0.91-1.20] of the arena's time). Pooled, both
    /// ranks decide on about twice the samples, and on nearly the same ones.
    fn pooled(&self, a: (Side, Served)) -> f64 {
        let (own, n) = (self.median(a), self.runs(a).min(SAMPLES));
        match self.reported(a) {
            Some((t, k)) if n > 0 => {
                let (n, k) = (f64::from(n), f64::from(k));
                ((n * own.ln() + k * t.ln()) / (n + k)).exp()
            }
            _ => own,
        }
    }

    /// Publishes this contest's medians on the receivers' median lines (not while timing sends
    /// alone: those times do not compare with the receivers' end-to-end ones).
    fn tell(&self) {
        if self.sender_only || self.told.is_empty() {
            return;
        }
        let m: [Median; 4] = std::array::from_fn(|k| {
            let a = (Side::BOTH[k / 2], Served::BOTH[k % 2]);
            (self.median(a), self.runs(a).min(SAMPLES))
        });
        for line in &self.told {
            line.set(self.bytes, m);
        }
    }

    /// A timed send whose receipt did not match: after [`MISSES`] the contest starts over
    /// timing sends alone (times of the two kinds are not compared with each other).
    fn miss(&mut self) {
        self.misses = self.misses.saturating_add(1);
        if self.misses >= MISSES {
            self.time_alone();
        }
    }

    /// From now on sends are timed at the sender alone: the pairings measured so far are
    /// dropped and the receivers are no longer asked for a receive.
    fn time_alone(&mut self) {
        if !self.sender_only {
            self.sender_only = true;
            (self.runs, self.tried, self.settled, self.runoff) = ([[0; 2]; 2], [[0; 2]; 2], 0, None);
            for line in self.lines.drain(..) {
                line.set(self.class, 0);
            }
            for line in self.told.drain(..) {
                line.clear(self.bytes);
            }
        }
    }

    /// Settles a timed send's outcome (`asks`: the receive asked for before the send, and by
    /// it); returns the decision it made.
    fn settle(&mut self, side: Side, asks: Asks, outcome: Outcome) -> Option<Choice> {
        match outcome {
            Outcome::Time(per_byte, Some(served)) if !self.sender_only => {
                if asks[0] != asks[1] {
                    if let Some(l) = asks.iter().rev().position(|&a| a == Some(served)) {
                        self.lag[l] = self.lag[l].saturating_add(1);
                    }
                } else if let Some(a) = asks[1].filter(|&a| !(self.pipelined_into_sluice && side == Side::Sluice && a == Served::Mpi)) {
                    // (Not where sluice's send lands in sluice's receive whatever was asked: the
                    // receiver did not refuse the MPI's receive, the message never offered it.)
                    let n = &mut self.refused[a.index()][usize::from(a == served)];
                    *n = n.saturating_add(1);
                }
                self.record(side, served, per_byte)
            }
            Outcome::Time(per_byte, _) => {
                // (A send without a receipt slot at its receiver: timed alone from now on.)
                self.time_alone();
                self.record(side, ALONE, per_byte)
            }
            Outcome::NotYet => None,
            Outcome::Miss => {
                self.miss();
                None
            }
        }
    }

    fn decision(&self, key: (u64, u32)) -> Option<Decision> {
        let mut medians = [[f64::INFINITY; 2]; 2];
        let mut theirs = [[0; 2]; 2];
        for a in self.arms() {
            medians[a.0.index()][a.1.index()] = self.pooled(a);
            theirs[a.0.index()][a.1.index()] = self.reported(a).map_or(0, |(_, n)| n);
        }
        let (choice, runs, followed, runoff) = (self.decided?, self.runs, self.followed, self.ran_off);
        Some(Decision { type_id: key.0, class: key.1, choice, medians, runs, theirs, followed, runoff })
    }
}

/// The receive a contest asked for before a timed send, and the one the send asked for.
type Asks = [Option<Served>; 2];

/// A timed send's time to its receiver's receipt.
#[derive(Debug, Clone, Copy)]
struct Pending {
    side: Side,
    asks: Asks,
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

/// Decided classes, read without the lock: a direct-mapped table of words `type id << 8 |
/// class << 2 | side code` (0: empty). Why: every send of a contested size asked the locked
/// table for its class's decision, a lock and a hash look-up per message that threads calling
/// the MPI at once contend on. Decisions are never undone, so a word is never stale; a slot
/// two classes share holds the later one, and the other asks the table.
static DECIDED: [AtomicU64; DECIDED_SLOTS] = [const { AtomicU64::new(0) }; DECIDED_SLOTS];
const DECIDED_SLOTS: usize = 1024;

fn decided_slot((id, class): (u64, u32)) -> &'static AtomicU64 {
    let h = (id ^ (u64::from(class) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    &DECIDED[(h >> 54) as usize % DECIDED_SLOTS]
}

fn decided_word((id, class): (u64, u32), side: Side) -> u64 {
    (id << 8) | (u64::from(class & 0x3f) << 2) | (side.index() as u64 + 1)
}

/// The side a decided class's sends take, if the lock-free table has it.
fn decided_fast(key: (u64, u32)) -> Option<Side> {
    if key.0 >= 1 << 56 || key.1 >= 64 {
        return None;
    }
    let w = decided_slot(key).load(Ordering::Acquire);
    (w != 0 && w & !3 == decided_word(key, Side::Mpi) & !3).then_some(if w & 3 == 1 { Side::Mpi } else { Side::Sluice })
}

/// The side sends of `bytes` packed bytes of type `type_id` take, when their class has decided
/// and the lock-free table has it (no lock: for the send path's early exit).
#[inline]
pub fn decided_side(type_id: u64, bytes: usize) -> Option<Side> {
    decided_fast((type_id, crate::logging::size_class(bytes)))
}

/// Publishes a decision to the lock-free table (ids past 2^56 and classes past 63 stay with
/// the locked one).
fn publish(key: (u64, u32), side: Side) {
    if key.0 < 1 << 56 && key.1 < 64 {
        decided_slot(key).store(decided_word(key, side), Ordering::Release);
    }
}

/// Contests kept at most ([`bound`]).
const MAX_CONTESTS: usize = 4096;

/// Keeps the contest table bounded before it takes a new entry: an application that builds a
/// new type for each exchange (adaptive meshes: new index lists every step) adds a contest per
/// type and size class, about 800 bytes each (800 B in the table, with the runoff), and
/// compiled type ids are never reused. At [`MAX_CONTESTS`] the undecided contests go (a type
/// sent once or twice and gone); when
/// decided ones alone still fill half the table, all go, and live types learn again (at most
/// [`LIMIT`] timed sends each).
fn bound(m: &mut FxHashMap<(u64, u32), Contest>, key: (u64, u32)) {
    if m.len() < MAX_CONTESTS || m.contains_key(&key) {
        return;
    }
    m.retain(|_, c| c.decided.is_some());
    if m.len() >= MAX_CONTESTS / 2 {
        m.clear();
    }
}
/// Some class chose sluice's send path (until then [`receive_takes_sluice`] answers without
/// the lock).
static SLUICE_CHOSEN: AtomicBool = AtomicBool::new(false);

/// Whether a receive from this node of `bytes` packed bytes of compiled type `type_id`, whose
/// sender asked for no receive ([`asked`]), takes sluice's path whatever the built-in rules say
/// (`p2p::recv`, which asks only from the pipeline's threshold on): once this process's sends
/// of the class chose sluice's path. Why: in an exchange the peer's sends land in these
/// receives; lammps elements pipelined through the arena into receives the rules leave to Open
/// MPI's engine ran at the MPI's speed, 1.2-1.4x slower than through sluice on both sides (AMD
/// VM, docs/benchmarks.md, "Automatic path"). Not while the contest runs, and not below the
/// threshold, where the peer's contest measured the receive the rules give. Any receive reads
/// either path's message, so this changes speed only.
pub fn receive_takes_sluice(type_id: u64, bytes: usize) -> bool {
    if bytes < MIN_BYTES || !any_chose_sluice() {
        return false;
    }
    let key = (type_id, crate::logging::size_class(bytes));
    if let Some(side) = decided_fast(key) {
        return side == Side::Sluice;
    }
    let g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref().and_then(|m| m.get(&key)).is_some_and(|c| c.decided.is_some_and(|d| d.send == Side::Sluice))
}

/// Whether any class chose sluice's send path (one relaxed load).
#[inline]
pub fn any_chose_sluice() -> bool {
    SLUICE_CHOSEN.load(Ordering::Relaxed)
}

/// What a send of a contested class does.
#[derive(Debug)]
pub enum Play {
    /// Not decided: this send warms up the pairing the next one times, on this side, untimed.
    Warm(Side),
    /// The class is decided: every send takes this side.
    Decided(Side),
    /// Not decided, and this send does not take part (nonblocking, the untimed first one, or
    /// one while a timed send waits for its receipt): the built-in rules decide.
    Rules,
    /// This blocking send runs on `side` and is timed; give the result to [`Turn::done`].
    Turn(Turn),
}

/// A contest's outcome: the pairing a type's size class takes, and the median times per
/// packed byte (s/B) of each pairing that decided it.
#[derive(Debug, Clone, Copy)]
pub struct Decision {
    pub type_id: u64,
    pub class: u32,
    pub choice: Choice,
    /// Median s/B by [send side][receive] (infinite: not measured).
    pub medians: [[f64; 2]; 2],
    /// Samples by [send side][receive].
    pub runs: [[u8; 2]; 2],
    /// The receiver's samples of its sends to this process pooled into `medians`, likewise.
    pub theirs: [[u8; 2]; 2],
    /// The pairing is the one the receiver chose for its own sends ([`AGREE_MARGIN`]).
    pub followed: bool,
    /// The runoff that decided, where the samples called two pairings close.
    pub runoff: Option<RunoffResult>,
}

/// A timed send of a contest.
#[derive(Debug)]
pub struct Turn {
    key: (u64, u32),
    pub side: Side,
    asks: Asks,
    bytes: usize,
    start_ns: u64,
    /// The receiver's receipt slot and the number its record of this message will have.
    receipts: Option<(&'static Slot, u64)>,
}

/// A send's receiver's lines: in this process's arena, where it tells when it finished (its
/// receipt slot), where this process asks it which receive to post (its hint line) and
/// publishes its medians; in the receiver's arena (`None`: not mapped), its hint line and
/// median line to this process, where its decision and its medians show.
#[derive(Clone, Copy)]
pub struct Peer {
    pub receipts: &'static Slot,
    pub ask: &'static Hints,
    pub told: Option<&'static Medians>,
    pub decided: Option<&'static Hints>,
    pub heard: Option<&'static Medians>,
}

/// The play for a send of `bytes` packed bytes of compiled type `type_id` (`timed`: a blocking
/// send that may take part; `peer`: the destination's receipt slot and hint line, asked only
/// for a timed send).
pub fn play(type_id: u64, bytes: usize, timed: bool, peer: impl FnOnce() -> Option<Peer>) -> Play {
    let key = (type_id, crate::logging::size_class(bytes));
    if let Some(side) = decided_fast(key) {
        return Play::Decided(side);
    }
    let mut g = CONTESTS.lock().unwrap_or_else(|e| e.into_inner());
    let m = g.get_or_insert_with(FxHashMap::default);
    bound(m, key);
    let c = m.entry(key).or_insert_with(|| Contest {
        class: key.1,
        pipelined_into_sluice: !mpi_receive_posts_plainly(bytes),
        bytes,
        ..Contest::default()
    });
    if let Some(d) = c.decided {
        publish(key, d.send);
        return Play::Decided(d.send);
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
        if let Some(d) = c.settle(p.side, p.asks, outcome) {
            publish(key, d.send);
            note(c.decision(key));
            return Play::Decided(d.send);
        }
    }
    if !timed {
        return Play::Rules;
    }
    if !c.warm {
        c.warm = true;
        return Play::Rules;
    }
    // A runoff whose last timed sends' receipts missed ends here.
    if c.runoff.as_ref().is_some_and(Runoff::over) {
        if let Some(d) = c.conclude() {
            publish(key, d.send);
            note(c.decision(key));
            return Play::Decided(d.send);
        }
    }
    let (side, ask) = match c.step() {
        Step::Warm(side, ask) => {
            if let (Some(r), false, Some(p)) = (ask, c.sender_only, peer()) {
                p.ask.set(key.1, r.code());
                c.asked_on(&p);
            }
            return Play::Warm(side);
        }
        Step::Time(side, ask) => (side, ask),
    };
    let (mut receipts, mut asks) = (None, [c.asking; 2]);
    if !c.sender_only {
        if let Some(p) = peer() {
            receipts = Some((p.receipts, p.receipts.next_record()));
            if let Some(r) = ask {
                p.ask.set(key.1, r.code());
                c.ask(r);
                asks[1] = Some(r);
                c.asked_on(&p);
            }
        }
    }
    Play::Turn(Turn { key, side, asks, bytes, start_ns: receipt::now_ns(), receipts })
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
                let p = Pending {
                    side: self.side,
                    asks: self.asks,
                    slot,
                    record,
                    start_ns: self.start_ns,
                    end_ns,
                    bytes: self.bytes,
                    waited: 0,
                };
                let o = p.resolve();
                if o == Outcome::NotYet {
                    c.pending = Some(p);
                }
                o
            }
            _ => Outcome::Time(end_ns.saturating_sub(self.start_ns) as f64 * 1e-9 / self.bytes.max(1) as f64, None),
        };
        let d = c.settle(self.side, self.asks, outcome)?;
        publish(self.key, d.send);
        c.decision(self.key)
    }
}

/// Logs a contest's decision (`SLUICE_LOG=plan`).
pub fn note(d: Option<Decision>) {
    let Some(d) = d else { return };
    let gbs = |per_byte: f64| if per_byte.is_finite() { format!("{:.2}", 1e-9 / per_byte.max(1e-18)) } else { "-".into() };
    crate::logging::plan_once(crate::logging::plan_key(("contest", d.type_id, d.class)), || {
        let (m, r) = (d.medians, d.runs);
        let (path, measured) = match d.choice.receive {
            Some(recv) => (
                format!("{} into {}", d.choice.send.name(), recv.name()),
                format!(
                    "timed to the receiver's finish; median GB/s (samples) by send into receive: MPI into MPI {} ({}), MPI into sluice {} ({}), sluice into MPI {} ({}), sluice into sluice {} ({})",
                    gbs(m[0][0]), r[0][0], gbs(m[0][1]), r[0][1], gbs(m[1][0]), r[1][0], gbs(m[1][1]), r[1][1]
                ),
            ),
            None => (
                d.choice.send.name().to_string(),
                format!(
                    "timed at the sender alone; median {} GB/s through the MPI's engine, {} GB/s through sluice's",
                    gbs(m[0][ALONE.index()]),
                    gbs(m[1][ALONE.index()])
                ),
            ),
        };
        let agreed = if d.followed { ", as the receiver chose for its sends (even here)" } else { "" };
        let t = d.theirs;
        let measured = if t.iter().flatten().any(|&n| n > 0) {
            format!("{measured}; pooled with the receiver's samples of its sends here: {} {} {} {}", t[0][0], t[0][1], t[1][0], t[1][1])
        } else {
            measured
        };
        let measured = match d.runoff {
            Some(RunoffResult { pairs, medians }) => {
                let tag = |(s, r): (Side, Served)| match (d.choice.receive, s) {
                    (None, Side::Mpi) => "MPI".to_string(),
                    (None, Side::Sluice) => "sluice".to_string(),
                    (Some(_), _) => format!("{} into {}", s.tag(), r.tag()),
                };
                let leg = |i: usize| format!("{} {} ({})", tag(pairs[i]), gbs(medians[i].0), medians[i].1);
                format!("{measured}; then a runoff in blocks of each in a row: {}, {}", leg(0), leg(1))
            }
            None => measured,
        };
        format!("sends of datatype #{} to this node: {path} from now on{agreed}, learned from blocking sends ({measured})", d.type_id)
    });
}

/// Whether a receive of `bytes` packed bytes asked for the MPI's typed receive can post it as
/// it is: not on MPICH from the pipeline's threshold on, where sluice posts that receive with
/// the type's byte twin so that a pipelined message's M0 can land in place, and a message ending
/// inside an element would then have that element's bytes written, which MPICH's receive with
/// the application's type does not write (`tests/c/p2p_conf_partial.c`). There a blocking
/// receive probes the message first (`p2p::recv`, below `MPI_THREAD_MULTIPLE`); other
/// receives keep their rules.
pub fn mpi_receive_posts_plainly(bytes: usize) -> bool {
    let reserved = super::pipeline::reserved();
    !(cfg!(sluice_mpi = "mpich") && reserved != 0 && bytes >= reserved)
}

/// The receive world rank `sender` asked this process to post for its messages of `bytes`
/// packed bytes (`None`: no request; the receiver's own rules). A sender asks while its
/// contest for the class measures the pairings, then for the pairing it chose.
pub fn asked(sender: c_int, bytes: usize) -> Option<Served> {
    Served::of_code(shm::peer_hints(sender)?.get(crate::logging::size_class(bytes)))
}

/// The receiving half: a receive of `bytes` packed bytes from rank `source` of `comm`, `served`
/// as it says, finished now (see [`received_from`]).
pub fn received(comm: mpi::MPI_Comm, source: c_int, bytes: usize, served: Served) {
    if bytes < MIN_BYTES || source < 0 || comm == crate::ffi::consts::comm_null() || !shm::maps_peers() {
        return;
    }
    if !learning() || !tells_on(comm) {
        return;
    }
    if let Some(w) = super::pipeline::world_rank_of(comm, source) {
        received_from(w, bytes, served);
    }
}

/// Whether receives on `comm` tell their senders when they finished: an intracommunicator
/// without a `sluice_p2p_path` key. Why not with a key: sends on such a communicator do not
/// contest (when both ends set it, as one does), and their receipts would push a contested
/// send's record out of the slot's ring before its sender reads it (a benchmark alternating
/// the automatic path with forced ones lost every 16 MiB record that way).
pub fn tells_on(comm: mpi::MPI_Comm) -> bool {
    crate::protocol::comm_hints::path(comm) == crate::protocol::comm_hints::P2pPath::Auto && !super::pipeline::is_inter(comm)
}

/// The world rank a receive of up to `capacity` bytes from rank `source` of `comm` tells when it
/// finishes (`ops::Op::sender`): a known source of this node's, a size that has a contest,
/// contests running here.
pub fn sender_of(comm: mpi::MPI_Comm, source: c_int, capacity: usize) -> Option<c_int> {
    let known = capacity >= MIN_BYTES && source >= 0 && comm != crate::ffi::consts::comm_null();
    if !known || !learning_here() || !tells_on(comm) {
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
    if shm::peer_hints(sender).is_some_and(|h| h.get(crate::logging::size_class(bytes)) & DECIDED_CODE != 0) {
        return; // the sender's contest for the class has decided: nobody reads the receipt
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

    /// How a simulated receiver posts its receives.
    #[derive(Clone, Copy, Debug)]
    enum Receiver {
        /// The receive asked for by the message's own send.
        Prompt,
        /// The receive asked for by the send before (it posted before the request came).
        Late,
        /// Prompt or late by the moment (a ping-pong's receiver races the next send).
        Racing,
        /// Always sluice's (it does not follow requests).
        Deaf,
        /// Prompt, but a message sluice sends (pipelined) always into sluice's receive (MPICH
        /// from the pipeline's threshold on, `p2p::recv`).
        PipelinedIntoSluice,
    }

    /// Runs a contest against `receiver` with `time(side, served)` per byte; returns the
    /// choice, the timed sends it took and the samples per pairing.
    fn contest(time: impl FnMut(Side, Served, usize) -> f64, receiver: Receiver) -> (Option<Choice>, usize, [[u8; 2]; 2]) {
        contest_in(0, time, receiver)
    }

    /// [`contest`] for size class `class`, through [`Contest::step`] as `play` goes: a warm-up
    /// send asks for its receive on the simulated hint line too.
    fn contest_in(class: u32, time: impl FnMut(Side, Served, usize) -> f64, receiver: Receiver) -> (Option<Choice>, usize, [[u8; 2]; 2]) {
        contest_from(Contest { class, ..Contest::default() }, time, receiver)
    }

    /// [`contest_in`] from a contest set up by the test.
    fn contest_from(
        mut c: Contest,
        mut time: impl FnMut(Side, Served, usize) -> f64,
        receiver: Receiver,
    ) -> (Option<Choice>, usize, [[u8; 2]; 2]) {
        let mut line = None;
        let mut timed = 0;
        for n in 1..=256usize {
            let before = c.asking;
            let (step, ask) = match c.step() {
                Step::Warm(side, ask) => ((side, false), ask),
                Step::Time(side, ask) => ((side, true), ask),
            };
            let posted_with = line; // what a receiver that posted before this send read
            line = ask.or(line);
            let served = match receiver {
                Receiver::PipelinedIntoSluice if step.0 == Side::Sluice => Some(Served::Sluice),
                Receiver::Prompt | Receiver::PipelinedIntoSluice => line,
                Receiver::Late => posted_with,
                Receiver::Racing if (n * 2654435761) % 7 < 3 => posted_with,
                Receiver::Racing => line,
                Receiver::Deaf => None,
            }
            .unwrap_or(Served::Sluice);
            let (side, is_timed) = step;
            if !is_timed {
                continue;
            }
            timed += 1;
            if let Some(a) = ask {
                c.ask(a);
            }
            let t = time(side, served, timed);
            if let Some(d) = c.settle(side, [before, ask], Outcome::Time(t, Some(served))) {
                return (Some(d), timed, c.runs);
            }
        }
        (None, timed, c.runs)
    }

    /// A contest with this has had its runoff (to test what decides without one).
    const RAN_OFF: Option<RunoffResult> = Some(RunoffResult { pairs: [(Side::Mpi, Served::Mpi); 2], medians: [(1.0, 0); 2] });

    fn table(t: [[f64; 2]; 2]) -> impl Fn(Side, Served, usize) -> f64 {
        move |s, r, _| t[s.index()][r.index()]
    }

    #[test]
    fn every_pairing_is_measured_and_the_fastest_kept() {
        for receiver in [Receiver::Prompt, Receiver::Late, Receiver::Racing] {
            for (t, want) in [
                ([[1.0, 1.3], [1.4, 1.2]], (Side::Mpi, Served::Mpi)),
                ([[1.3, 1.2], [1.0, 1.4]], (Side::Sluice, Served::Mpi)),
                ([[1.3, 1.0], [1.4, 1.2]], (Side::Mpi, Served::Sluice)),
                ([[1.3, 1.2], [1.4, 1.0]], (Side::Sluice, Served::Sluice)),
                ([[1.0, 1.3], [1.4, 1.01]], (Side::Sluice, Served::Sluice)),
                // A mixed pairing 10% ahead of the faster pure one: the pure one (MIXED_MARGIN).
                ([[1.1, 1.3], [1.0, 1.2]], (Side::Mpi, Served::Mpi)),
                ([[1.3, 1.0], [1.4, 1.1]], (Side::Sluice, Served::Sluice)),
                // Ahead of both by more than the margin: kept.
                ([[1.2, 1.3], [1.0, 1.25]], (Side::Sluice, Served::Mpi)),
            ] {
                let (d, n, runs) = contest(table(t), receiver);
                assert_eq!(d, Some(Choice { send: want.0, receive: Some(want.1) }), "{t:?} {receiver:?}");
                // (Plus a runoff where two pairings are within 25%.)
                assert!(n <= 4 * SAMPLES as usize + 3 + Runoff::most_timed(0), "{n} sends for {t:?} {receiver:?}: {runs:?}");
                assert!(runs.iter().flatten().all(|&k| k >= SAMPLES), "every pairing sampled: {runs:?}");
            }
        }
    }

    #[test]
    fn the_pairing_a_peer_chose_is_taken_where_the_measurements_call_them_even() {
        let theirs: &'static Hints = Box::leak(Box::default());
        let class = 16;
        let hearing = || Contest { class, heard: vec![theirs], ..Contest::default() };
        let choice = |send, receive| Some(Choice { send, receive: Some(receive) });
        // The peer's sends chose the MPI's engine on both ends.
        theirs.set(class, Served::Mpi.code() | DECIDED_CODE);
        // Here sluice's on both ends 4% ahead: the peer's pairing; 20% ahead: this one's own.
        assert_eq!(contest_from(hearing(), table([[1.04, 1.3], [1.3, 1.0]]), Receiver::Prompt).0, choice(Side::Mpi, Served::Mpi));
        assert_eq!(contest_from(hearing(), table([[1.2, 1.3], [1.3, 1.0]]), Receiver::Prompt).0, choice(Side::Sluice, Served::Sluice));
        // The peer chose sluice's send into the MPI's receive (the side's bit): taken 3% behind.
        theirs.set(class, Served::Mpi.code() | DECIDED_CODE | SENT_BY_SLUICE);
        assert_eq!(contest_from(hearing(), table([[1.0, 1.3], [1.03, 1.3]]), Receiver::Prompt).0, choice(Side::Sluice, Served::Mpi));
        // A request of the peer's own contest, undecided, is not a choice; nor another class's.
        theirs.set(class, Served::Mpi.code());
        assert_eq!(contest_from(hearing(), table([[1.04, 1.3], [1.3, 1.0]]), Receiver::Prompt).0, choice(Side::Sluice, Served::Sluice));
        theirs.set(class, 0);
        theirs.set(class + 1, Served::Mpi.code() | DECIDED_CODE);
        assert_eq!(contest_from(hearing(), table([[1.04, 1.3], [1.3, 1.0]]), Receiver::Prompt).0, choice(Side::Sluice, Served::Sluice));
        // The request this process reads keeps its receive whatever the side's bit says.
        assert_eq!(Served::of_code(Served::Sluice.code() | DECIDED_CODE | SENT_BY_SLUICE), Some(Served::Sluice));
    }

    #[test]
    fn a_close_call_is_decided_on_both_ranks_samples_of_the_same_messages() {
        let bytes = 64 << 10;
        let (told, heard): (&'static Medians, &'static Medians) = (Box::leak(Box::default()), Box::leak(Box::default()));
        // (Without the runoff, which decides on this process's samples alone.)
        let pooling = || Contest { class: 16, bytes, told: vec![told], reports: vec![heard], ran_off: RAN_OFF, ..Contest::default() };
        let choice = |send, receive| Some(Choice { send, receive: Some(receive) });
        // Here the MPI's engine on both ends 10% ahead of sluice's; the receiver's nine samples
        // of each pairing for its sends here call sluice's on both ends 38% ahead.
        // (Seconds per byte as a VM measures them: 10 GB/s is 1e-10.)
        let ns = 1e-10;
        let here = |s: Side, r: Served, _| [[1.0, 1.3], [1.3, 1.1]][s.index()][r.index()] * ns;
        let inf = (f64::INFINITY, 0);
        let theirs = |n| [(1.1 * ns, n), (1.3 * ns, n), inf, (0.8 * ns, n)];
        heard.set(bytes, theirs(9));
        assert_eq!(contest_from(pooling(), &here, Receiver::Prompt).0, choice(Side::Sluice, Served::Sluice));
        // What this contest measured is published for the receiver's contest: every pairing's
        // median and samples, for messages of this size.
        let mine = told.get(bytes).expect("published");
        assert!((mine[0].0 / ns - 1.0).abs() < 0.01 && (mine[3].0 / (1.1 * ns) - 1.0).abs() < 0.01, "{mine:?}");
        assert!(mine.iter().all(|&(_, n)| n == SAMPLES), "{mine:?}");
        // Another size of the class (another exchange), or nothing published: this process's
        // samples alone.
        heard.set(bytes + 64, theirs(9));
        assert_eq!(contest_from(pooling(), &here, Receiver::Prompt).0, choice(Side::Mpi, Served::Mpi));
        heard.clear(bytes);
        assert_eq!(contest_from(pooling(), &here, Receiver::Prompt).0, choice(Side::Mpi, Served::Mpi));
        // The receiver's samples weigh by their number: one sample does not overturn nine.
        heard.set(bytes, theirs(1));
        assert_eq!(contest_from(pooling(), &here, Receiver::Prompt).0, choice(Side::Mpi, Served::Mpi));
        // A contest timing its sends alone neither pools nor publishes.
        heard.set(bytes, theirs(9));
        let alone = Contest { class: 16, bytes, told: vec![told], reports: vec![heard], ..Contest::default() };
        let (d, _, _) = contest_from(alone, &here, Receiver::Deaf);
        assert!(d.is_some());
        let mut c = Contest { class: 16, bytes, told: vec![told], reports: vec![heard], ..Contest::default() };
        c.time_alone();
        assert_eq!(told.get(bytes), None, "withdrawn when the contest times its sends alone");
        assert_eq!(c.reported((Side::Sluice, Served::Sluice)), None);
    }

    #[test]
    fn the_pairings_are_sampled_in_turn_not_one_receive_first() {
        // Times that fall as the buffers warm up: with every pairing sampled all along, the
        // pairing that is faster at every moment wins.
        let warming =
            |s: Side, r: Served, n: usize| (if (s, r) == (Side::Sluice, Served::Mpi) { 1.0 } else { 1.25 }) * (1.0 + 2.0 / n as f64);
        for receiver in [Receiver::Prompt, Receiver::Late] {
            assert_eq!(contest(warming, receiver).0, Some(Choice { send: Side::Sluice, receive: Some(Served::Mpi) }), "{receiver:?}");
        }
    }

    #[test]
    fn slow_samples_do_not_decide() {
        // The MPI into the MPI's receive: fastest but for two slow sends (descheduled).
        let mut seen = 0;
        let noisy = move |s: Side, r: Served, _| {
            if (s, r) == (Side::Mpi, Served::Mpi) {
                seen += 1;
                if seen % 3 == 2 {
                    return 9.0;
                }
                return 1.0;
            }
            1.2
        };
        let mut c = Contest::default();
        let mut d = None;
        let mut noisy = noisy;
        for _ in 0..128 {
            let before = c.asking;
            let Step::Time(side, ask) = c.step() else { continue };
            if let Some(a) = ask {
                c.ask(a);
            }
            let served = ask.unwrap_or(Served::Sluice);
            d = c.settle(side, [before, ask], Outcome::Time(noisy(side, served, 0), Some(served)));
            if d.is_some() {
                break;
            }
        }
        assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }));
    }

    #[test]
    fn a_clear_winner_decides_after_two_sends_per_pairing() {
        // (From 1 MiB, where samples are expensive; below, every pairing gets all its samples.)
        for receiver in [Receiver::Prompt, Receiver::Late] {
            let (d, n, runs) = contest_in(20, table([[1.0, 3.0], [3.0, 3.5]]), receiver);
            assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }), "{receiver:?}");
            assert!(runs.iter().flatten().all(|&k| k >= 2), "two samples each: {runs:?} ({receiver:?})");
            assert!(n <= 11, "{n} sends, {receiver:?}");
            let (d, _, runs) = contest(table([[1.0, 3.0], [3.0, 3.5]]), receiver);
            assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }), "{receiver:?}");
            assert!(runs.iter().flatten().all(|&k| k >= SAMPLES), "below 1 MiB every pairing is sampled: {runs:?}");
        }
    }

    #[test]
    fn cold_first_sends_do_not_decide() {
        // Every pairing's first send is slow (cold buffers), by different amounts: the one
        // first sampled warmest is 2x ahead of the others after one send each but slowest
        // once warm. The warm times decide, with and without early drops.
        for class in [0, 20] {
            for receiver in [Receiver::Prompt, Receiver::Late, Receiver::Racing] {
                let mut seen = [[0usize; 2]; 2];
                let cold = move |s: Side, r: Served, _| {
                    let k = &mut seen[s.index()][r.index()];
                    *k += 1;
                    let warm = if (s, r) == (Side::Mpi, Served::Mpi) { 1.0 } else { 1.3 };
                    match (*k, (s, r) == (Side::Sluice, Served::Mpi)) {
                        (1, true) => 2.0,
                        (1, false) => 9.0,
                        _ if (s, r) == (Side::Sluice, Served::Mpi) => 1.5,
                        _ => warm,
                    }
                };
                let (d, _, runs) = contest_in(class, cold, receiver);
                assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }), "class {class} {receiver:?}: {runs:?}");
            }
        }
    }

    #[test]
    fn a_slow_start_does_not_drop_the_fastest_pairing_below_one_mebibyte() {
        // The first dozen sends of a type are 3x slower whatever the pairing (MPICH, 64 KiB):
        // the pairing sampled first during them is still sampled to the end and wins.
        for receiver in [Receiver::Prompt, Receiver::Late] {
            let slow_start = |s: Side, r: Served, n: usize| {
                let base = if (s, r) == (Side::Mpi, Served::Mpi) { 1.0 } else { 1.25 };
                if n <= 12 {
                    3.0 * base
                } else {
                    base
                }
            };
            let (d, _, runs) = contest(slow_start, receiver);
            assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }), "{receiver:?}: {runs:?}");
        }
    }

    #[test]
    fn below_four_mebibytes_each_timed_send_follows_untimed_ones_of_its_pairing() {
        // One untimed send below 1 MiB, three from 1 MiB (`Contest::primes`).
        for (class, primes) in [(16, 1), (20, 3), (21, 3)] {
            let mut c = Contest { class, ..Contest::default() };
            let (mut warmed, mut times) = (None, 0);
            for _ in 0..200 {
                match c.step() {
                    Step::Warm(side, ask) => {
                        let n = match warmed {
                            Some((p, n)) if p == (side, ask) => n,
                            Some(_) => panic!("class {class}: a warm-up of another pairing before a timed send"),
                            None => 0,
                        };
                        assert!(n < primes, "class {class}: more than {primes} warm-ups in a row");
                        warmed = Some(((side, ask), n + 1));
                    }
                    Step::Time(side, ask) => {
                        assert_eq!(warmed.take(), Some(((side, ask), primes)), "class {class}: a timed send not warmed up {primes} times");
                        times += 1;
                        if let Some(a) = ask {
                            c.ask(a);
                        }
                        let served = ask.unwrap_or(Served::Sluice);
                        // (The pairings are even: a runoff follows, with warm-ups of its own.)
                        if c.settle(side, [c.asking, ask], Outcome::Time(1.0, Some(served))).is_some() || c.runoff.is_some() {
                            break;
                        }
                    }
                }
            }
            assert!(c.runoff.is_some() && times >= 4, "class {class}: {times} timed sends, decided {:?}", c.decided);
        }
        let mut large = Contest { class: 22, ..Contest::default() };
        assert!(matches!(large.step(), Step::Time(..)), "from 4 MiB messages are timed at once");
    }

    #[test]
    fn a_pairing_clearly_slower_after_two_samples_gets_no_more() {
        for receiver in [Receiver::Prompt, Receiver::Late] {
            let (d, n, runs) = contest_in(20, table([[1.0, 3.0], [3.0, 1.1]]), receiver);
            assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }), "{receiver:?}");
            assert!(runs[0][1] <= 2 && runs[1][0] <= 2, "the slow pairings: {runs:?} ({receiver:?})");
            assert!(n <= 2 * 5 + 5 + Runoff::most_timed(20), "{n} sends ({receiver:?})");
        }
    }

    #[test]
    fn decisions_are_read_without_the_lock_and_never_for_another_class() {
        let (a, b) = ((0x00ab_cdef_0123_4567, 16), (0x00ab_cdef_0123_4567, 17));
        assert_eq!(decided_fast(a), None);
        publish(a, Side::Sluice);
        assert_eq!(decided_fast(a), Some(Side::Sluice));
        assert_eq!(decided_fast(b), None, "another size class of the type");
        assert_eq!(decided_fast((a.0 + 1, 16)), None, "another type");
        publish(b, Side::Mpi);
        assert_eq!((decided_fast(a), decided_fast(b)), (Some(Side::Sluice), Some(Side::Mpi)));
        publish((1 << 56, 16), Side::Mpi);
        assert_eq!(decided_fast((1 << 56, 16)), None, "ids past 2^56 stay with the locked table");
        // A class the lock-free table has decided plays it (the locked table has no contest
        // for it: a first send there would play the rules).
        let c = (0x00ab_cdef_0000_0001, crate::logging::size_class(1 << 20));
        publish(c, Side::Mpi);
        assert!(matches!(play(c.0, 1 << 20, true, || None), Play::Decided(Side::Mpi)));
    }

    #[test]
    fn the_table_stays_bounded_and_keeps_decided_contests_while_it_can() {
        let decided = || Contest { decided: Some(Choice { send: Side::Mpi, receive: None }), ..Contest::default() };
        let mut m = FxHashMap::default();
        for id in 0..MAX_CONTESTS as u64 {
            m.insert((id, 16), if id < 10 { decided() } else { Contest::default() });
        }
        bound(&mut m, (3, 16));
        assert_eq!(m.len(), MAX_CONTESTS, "a key already there: nothing goes");
        bound(&mut m, (1 << 40, 16));
        assert_eq!(m.len(), 10, "undecided contests go, decided ones stay");
        assert!((0..10).all(|id| m.contains_key(&(id, 16))));
        m.clear();
        for id in 0..MAX_CONTESTS as u64 {
            m.insert((id, 16), decided());
        }
        bound(&mut m, (1 << 40, 16));
        assert!(m.is_empty(), "decided ones filling the table: all go");
    }

    #[test]
    fn slow_messages_are_sampled_as_large_ones() {
        // 1 MiB messages of a type that takes 3 ms per message whatever the pairing (Open MPI,
        // face-x): after the first timed send, no more untimed ones, three samples per pairing.
        let bytes = 1 << 20;
        let per_byte = |ms: f64| ms * 1e-3 / bytes as f64;
        let mut c = Contest { class: 20, bytes, ..Contest::default() };
        assert_eq!((c.primes(), c.samples()), (3, 5), "no send timed yet: the rules of 1 MiB");
        let (mut untimed, mut timed, mut d) = (0, 0, None);
        while d.is_none() && timed < 100 {
            let before = c.asking;
            let (side, ask) = match c.step() {
                Step::Warm(..) => {
                    untimed += 1;
                    continue;
                }
                Step::Time(side, ask) => (side, ask),
            };
            timed += 1;
            c.ask(ask.unwrap());
            let t = if (side, ask) == (Side::Sluice, Some(Served::Sluice)) { 3.0 } else { 4.0 };
            d = c.settle(side, [before, ask], Outcome::Time(per_byte(t), ask));
        }
        assert_eq!(d, Some(Choice { send: Side::Sluice, receive: Some(Served::Sluice) }));
        assert_eq!((c.primes(), c.samples()), (0, 3));
        // The first timed send's three untimed ones only (sluice's path 1.33x ahead: no runoff).
        assert_eq!(untimed, 3, "{timed} timed");
        assert!(timed <= 4 * 3, "{timed} timed sends");
        // One send under a millisecond: the rules of its size.
        let mut c = Contest { class: 20, bytes, ..Contest::default() };
        for t in [3.0, 0.5, 3.0] {
            c.record(Side::Mpi, Served::Mpi, per_byte(t));
        }
        assert_eq!((c.primes(), c.samples()), (3, 5));
    }

    #[test]
    fn large_messages_take_fewer_samples() {
        for (class, want) in [(15, SAMPLES), (19, SAMPLES), (20, 5), (21, 5), (22, 3), (24, 3)] {
            let c = Contest { class, ..Contest::default() };
            assert_eq!(c.samples(), want, "class {class}");
        }
        let mut c = Contest { class: 24, ..Contest::default() };
        let mut n = 0;
        let d = loop {
            let before = c.asking;
            let (side, ask) = match c.step() {
                Step::Time(side, ask) => (side, ask),
                Step::Warm(..) if c.runoff.is_some() => continue, // the runoff's legs start warm
                Step::Warm(..) => panic!("untimed send from 4 MiB"),
            };
            n += 1;
            c.ask(ask.unwrap());
            let t = if side == Side::Sluice { 1.0 } else { 1.2 };
            if let Some(d) = c.settle(side, [before, ask], Outcome::Time(t, ask)) {
                break d;
            }
        };
        assert_eq!(d.send, Side::Sluice);
        assert!(n <= 4 * 3 + 1 + Runoff::most_timed(24), "{n} sends");
    }

    #[test]
    fn where_a_pipelined_message_lands_in_sluices_receive_the_three_other_pairings_are_compared() {
        // MPICH from 1 MiB: the MPI's engine on both ends fastest, measured and kept without
        // sending sluice's messages for a receive that cannot take them.
        let c = Contest { class: 20, pipelined_into_sluice: true, ..Contest::default() };
        let (d, n, runs) = contest_from(c, table([[1.0, 1.3], [1.6, 1.2]]), Receiver::PipelinedIntoSluice);
        assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }));
        assert_eq!(runs[Side::Sluice.index()][Served::Mpi.index()], 0, "{runs:?}");
        assert!(n <= 3 * 5 + 2 + Runoff::most_timed(20), "{n} timed sends, {runs:?}");
        // Where sluice's path is fastest it is kept as well.
        let c = Contest { class: 20, pipelined_into_sluice: true, ..Contest::default() };
        let (d, _, _) = contest_from(c, table([[1.3, 1.4], [0.8, 1.0]]), Receiver::PipelinedIntoSluice);
        assert_eq!(d, Some(Choice { send: Side::Sluice, receive: Some(Served::Sluice) }));
    }

    #[test]
    fn a_receiver_that_does_not_follow_is_no_longer_asked_and_decided_on_what_was_measured() {
        let (d, n, runs) = contest(table([[1.0, 1.3], [1.4, 1.2]]), Receiver::Deaf);
        assert_eq!(d, Some(Choice { send: Side::Sluice, receive: Some(Served::Sluice) }), "only sluice's receive was measured");
        // Two pairings' samples, not the limit: after REFUSALS receipts of sluice's receive
        // where the MPI's was asked for, only sluice's is asked for.
        assert_eq!(n, 2 * SAMPLES as usize + Runoff::most_timed(0), "two pairings and their runoff, {runs:?}");
        assert_eq!(runs[0][0] + runs[1][0], 0);
    }

    #[test]
    fn a_receiver_that_follows_now_and_then_has_both_send_paths_sampled() {
        // A receiver that posts the receive asked for only at times (one in ten to one in two,
        // on time or one message late), sluice's receive otherwise: every contest decides
        // within its limit, on samples of both send paths, for the faster one. (Before the
        // turns balanced sends expected rather than samples, one receipt of the MPI's receive
        // kept it asked for, every such send went on the MPI's side and landed in sluice's
        // receive: 14-38 of those, one of sluice's send, and the slower path chosen.)
        for class in [16u32, 20, 22] {
            for follows in [0.1, 0.3, 0.5] {
                for seed in 1..=100u64 {
                    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    let mut next = move || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        (rng % 1000) as f64 / 1000.0
                    };
                    let mut c = Contest { class, ..Contest::default() };
                    let (mut line, mut timed, mut d) = (None, 0, None);
                    while d.is_none() && timed < 128 {
                        let before = c.asking;
                        let (side, is_timed, ask) = match c.step() {
                            Step::Warm(s, a) => (s, false, a),
                            Step::Time(s, a) => (s, true, a),
                        };
                        let posted_with = line;
                        line = ask.or(line);
                        let follow = if next() < 0.5 { posted_with } else { line };
                        let served = if next() < follows { follow.unwrap_or(Served::Sluice) } else { Served::Sluice };
                        if !is_timed {
                            continue;
                        }
                        timed += 1;
                        if let Some(a) = ask {
                            c.ask(a);
                        }
                        let t = [[1.0, 3.0], [0.3, 0.25]][side.index()][served.index()] * (0.9 + 0.2 * next());
                        d = c.settle(side, [before, ask], Outcome::Time(t, Some(served)));
                    }
                    let at = format!("class {class}, follows {follows}, seed {seed}: {timed} timed sends, {:?}", c.runs);
                    assert_eq!(d.map(|d| d.send), Some(Side::Sluice), "{at}");
                    assert!(timed <= usize::from(LIMIT - 4 * (SAMPLES - c.samples())) + Runoff::most_timed(class), "{at}");
                    assert!(Side::BOTH.iter().all(|&s| c.runs[s.index()].iter().sum::<u8>() >= 2), "{at}");
                }
            }
        }
    }

    #[test]
    fn a_close_call_is_run_off_in_a_steady_state() {
        // From 4 MiB (no untimed sends before the contest's samples): the MPI's engine on both
        // ends takes 1.0 in a steady state but 1.3 for the first two messages after another
        // pairing's (Open MPI's single copy recovering), sluice's on both ends 1.1 whatever came
        // before. The contest's samples, each after another pairing's, call sluice's faster by
        // 18%; the runoff's legs (two untimed sends, then timed ones) measure the steady state,
        // and the MPI's engine is kept.
        for class in [22, 24] {
            let mut c = Contest { class, ..Contest::default() };
            let (mut last, mut run, mut d) = (None, 0, None);
            for _ in 0..200 {
                let before = c.asking;
                let (side, timed, ask) = match c.step() {
                    Step::Warm(s, a) => (s, false, a),
                    Step::Time(s, a) => (s, true, a),
                };
                let pairing = (side, ask.unwrap_or(Served::Sluice)); // a prompt receiver
                run = if last == Some(pairing) { run + 1 } else { 1 };
                last = Some(pairing);
                if !timed {
                    continue;
                }
                if let Some(a) = ask {
                    c.ask(a);
                }
                let t = match pairing {
                    (Side::Mpi, Served::Mpi) if run <= 2 => 1.3,
                    (Side::Mpi, Served::Mpi) => 1.0,
                    (Side::Sluice, Served::Sluice) => 1.1,
                    _ => 2.0,
                };
                d = c.settle(side, [before, ask], Outcome::Time(t, Some(pairing.1)));
                if d.is_some() {
                    break;
                }
            }
            assert_eq!(d, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }), "class {class}");
            let r = c.ran_off.expect("a runoff");
            assert_eq!(r.pairs, [(Side::Sluice, Served::Sluice), (Side::Mpi, Served::Mpi)], "the contest's pick first");
            assert_eq!(r.medians, [(1.1, 4), (1.0, 4)]);
            // Pairings further apart than runoff::WITHIN have none.
            let mut c = Contest { class, ..Contest::default() };
            let mut n = 0;
            while c.decided.is_none() && n < 100 {
                n += 1;
                let before = c.asking;
                let Step::Time(side, ask) = c.step() else { panic!("class {class}: a warm-up without a runoff") };
                c.ask(ask.unwrap());
                let t = [[1.0, 2.0], [2.0, 1.3]][side.index()][ask.unwrap().index()];
                c.settle(side, [before, ask], Outcome::Time(t, ask));
            }
            assert_eq!(c.decided, Some(Choice { send: Side::Mpi, receive: Some(Served::Mpi) }));
            assert!(c.ran_off.is_none());
        }
    }

    #[test]
    fn a_class_plays_rules_then_turns_then_its_decision() {
        let id = u64::MAX - 7; // no compiled type has it
        assert!(matches!(play(id, 1 << 22, false, || None), Play::Rules), "nonblocking sends of an undecided class");
        assert!(matches!(play(id, 1 << 22, true, || None), Play::Rules), "the untimed first send");
        let mut decided = None;
        for _ in 0..2 * SAMPLES {
            let Play::Turn(t) = play(id, 1 << 22, true, || None) else { break };
            let side = t.side;
            std::thread::sleep(std::time::Duration::from_millis(if side == Side::Sluice { 1 } else { 5 }));
            decided = t.done(true).or(decided);
        }
        assert_eq!(decided.map(|d| d.choice), Some(Choice { send: Side::Sluice, receive: None }), "no receipts: the sender's time");
        assert!(matches!(play(id, 1 << 22, false, || None), Play::Decided(Side::Sluice)));
        assert!(matches!(play(id, 1 << 23, true, || None), Play::Rules), "another size class has its own contest");
        // Below 4 MiB each turn follows a warm-up send on its side.
        let small = 64 << 10;
        assert!(matches!(play(id, small, true, || None), Play::Rules), "the untimed first send");
        for _ in 0..SAMPLES {
            let Play::Warm(warm) = play(id, small, true, || None) else { panic!("a warm-up first") };
            let Play::Turn(t) = play(id, small, true, || None) else { panic!("then the turn") };
            assert_eq!(t.side, warm, "on the side warmed up");
            let _ = t.done(true);
        }
    }

    /// A leaked slot and hint line standing for a receiver's (the arena's live as long as the
    /// process).
    fn peer() -> Peer {
        Peer { receipts: Box::leak(Box::default()), ask: Box::leak(Box::default()), told: None, decided: None, heard: None }
    }

    /// The receiver posts the receive its hint line asks for when the send starts (one message
    /// late) and tells it in its receipt: the MPI's sends return sooner, but into sluice's
    /// receive the message finishes later; the MPI's send into the MPI's receive is fastest end
    /// to end, and the line asks for that receive once decided.
    #[test]
    fn the_receivers_finish_and_receive_decide() {
        let (id, p) = (u64::MAX - 8, peer());
        let (s, h) = (p.receipts, p.ask);
        let bytes = 1 << 22;
        let class = crate::logging::size_class(bytes);
        assert!(matches!(play(id, bytes, true, || Some(p)), Play::Rules), "the untimed first send");
        s.append(Served::Sluice.word(bytes), receipt::now_ns()); // its receipt
        let mut decided = None;
        for _ in 0..4 * LIMIT {
            let posted = Served::of_code(h.get(class)).unwrap_or(Served::Sluice);
            let t = match play(id, bytes, true, || Some(p)) {
                Play::Turn(t) => t,
                // A runoff's untimed send, where the sleeps' times came out close.
                Play::Warm(_) => continue,
                p => panic!("a turn or a runoff's warm-up each time, not {p:?}"),
            };
            let (send_ms, recv_ms) = match (t.side, posted) {
                (Side::Mpi, Served::Mpi) => (1, 2),
                (Side::Mpi, Served::Sluice) => (1, 6),
                (Side::Sluice, _) => (3, 3),
            };
            std::thread::sleep(std::time::Duration::from_millis(send_ms));
            assert!(t.done(true).is_none(), "waits for the receipt");
            std::thread::sleep(std::time::Duration::from_millis(recv_ms - send_ms.min(recv_ms)));
            s.append(posted.word(bytes), receipt::now_ns());
            // The next send of the class resolves the receipt.
            match play(id, bytes, false, || Some(p)) {
                Play::Decided(side) => {
                    decided = Some(side);
                    break;
                }
                Play::Rules => {}
                p => panic!("nonblocking send played {p:?}"),
            }
        }
        assert_eq!(decided, Some(Side::Mpi), "2 ms to the receiver's finish vs 3 and 6");
        assert_eq!(Served::of_code(h.get(class)), Some(Served::Mpi), "the receiver is asked for the MPI's receive");
        assert_ne!(h.get(class) & DECIDED_CODE, 0, "and told the class decided (no more receipts)");
        let g = CONTESTS.lock().unwrap();
        let r = g.as_ref().unwrap()[&(id, class)].runs;
        assert!(r.iter().flatten().all(|&n| n > 0), "every pairing measured: {r:?}");
    }

    #[test]
    fn a_receipt_tells_how_the_receiver_served_the_message() {
        for (bytes, served) in [(64usize, Served::Mpi), (1 << 40, Served::Sluice), (0, Served::Mpi)] {
            assert_eq!(Served::of(served.word(bytes)), (bytes as u64, served));
        }
        for r in Served::BOTH {
            assert_eq!(Served::of_code(r.code()), Some(r));
        }
        assert_eq!(Served::of_code(0), None, "no request");
    }

    #[test]
    fn receipts_that_do_not_match_fall_back_to_the_senders_time() {
        let (id, p) = (u64::MAX - 9, peer());
        let (s, h) = (p.receipts, p.ask);
        let class = crate::logging::size_class(1 << 22);
        let _ = play(id, 1 << 22, true, || Some(p));
        for i in 0..MISSES {
            let Play::Turn(t) = play(id, 1 << 22, true, || Some(p)) else { panic!("turn {i}") };
            assert_ne!(h.get(class), 0, "the turns ask for a receive");
            assert!(t.done(true).is_none());
            for _ in 0..receipt::RING {
                s.append(12345, receipt::now_ns()); // other messages' sizes, the whole ring
            }
        }
        // The last miss is settled by this play.
        let Play::Turn(t) = play(id, 1 << 22, true, || Some(p)) else { panic!("a turn after the misses") };
        assert!(t.receipts.is_none(), "sends are timed alone now");
        assert_eq!(h.get(class), 0, "and the receiver is asked for nothing");
        let mut g = CONTESTS.lock().unwrap();
        let c = g.as_mut().unwrap().get_mut(&t.key).unwrap();
        assert!(
            c.sender_only && c.runs == [[0; 2]; 2] && c.tried.iter().flatten().sum::<u8>() == 1,
            "the sides are balanced afresh (this turn alone)"
        );
    }

    #[test]
    fn a_receipt_never_arriving_is_given_up_after_some_sends() {
        let (id, p) = (u64::MAX - 10, peer());
        let _ = play(id, 1 << 22, true, || Some(p));
        let Play::Turn(t) = play(id, 1 << 22, true, || Some(p)) else { panic!("a turn") };
        assert!(t.done(true).is_none());
        for _ in 0..WAITS {
            assert!(matches!(play(id, 1 << 22, true, || Some(p)), Play::Rules), "waiting: the rules");
        }
        assert!(matches!(play(id, 1 << 22, true, || Some(p)), Play::Turn(_)), "given up: a new turn");
    }

    #[test]
    fn an_earlier_message_s_record_is_not_this_one_s() {
        let s = peer().receipts;
        let n = s.next_record();
        let start = receipt::now_ns();
        let p = Pending {
            side: Side::Mpi,
            asks: [None; 2],
            slot: s,
            record: n,
            start_ns: start,
            end_ns: start + 1_000_000,
            bytes: 64,
            waited: 0,
        };
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
