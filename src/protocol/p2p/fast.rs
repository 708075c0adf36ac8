//! The point-to-point fast path: predicates that prove, from a few atomic loads and no lock or
//! MPI call, that a handler of this protocol would forward its call to the MPI unchanged. The
//! exported function (`intercept::exports`) asks the predicate named in the registry entry
//! (`fast(...)` in `intercept::registry`) first and, when it holds, calls the next definition
//! directly, skipping the dispatch and the handler's own rules.
//!
//! Each predicate must imply exactly what the handler decides (a `true` that the handler would
//! not have forwarded changes semantics); a `false` only costs the full path. Most sends and
//! receives use predefined types (which sluice never compiles) and small counts, most completion
//! calls happen while sluice tracks no request: those are the cases answered here. The issue's
//! target is that such a call costs no more than calling the MPI directly (docs/benchmarks.md,
//! "Interception overhead").

use super::pipeline;
use crate::ffi::mpi;
use crate::protocol::datatype;

/// How far a predicate looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// What the exported function itself checks: types not compiled (predefined ones) only. Few
    /// enough registers that it needs no stack frame and its calls are tail calls.
    Quick,
    /// Also larger counts of types whose size is noted, and compiled types that are contiguous
    /// (both through the lock-free hint table), checked out of line when the quick look said no.
    Thorough,
}

/// A message of `count` elements of `datatype` that neither sluice's engine path nor the
/// pipelined protocol takes (the send handlers forward it; receives also check the stash):
/// - a type sluice has not compiled (every predefined type): `Layout::of` needs the compiled form,
///   and `pipeline::bytes_if_large` says "small" when even the widest predefined element times
///   `count` stays below the reserved size;
/// - a compiled type that `Layout::of` leaves to the MPI at every size (contiguous in memory, or
///   large blocks with Open MPI's `SLUICE_P2P_MPI_ABOVE`: the hint's `left_to_mpi`) whose
///   `count` elements stay below the reserved size.
///
/// The quick look answers both with one bound per filter slot (`datatype::quick_limit`: the
/// predefined types' bound, lowered by each compiled type in the slot to its own);
/// [`Look::Thorough`] also takes larger counts of a type whose size
/// `bytes_if_large` noted earlier (`datatype::remember_size`) and types whose slot another
/// compiled type shares, through the lock-free hint table.
///
/// The pipeline being off (reserved size 0) makes every size small. Negative counts fail the
/// bound (as `u64` they are huge) and take the full path, which forwards them too.
#[inline(always)]
pub fn message(look: Look, count: impl Into<i64>, dt: mpi::MPI_Datatype) -> bool {
    let count = count.into() as u64;
    // `count * WIDEST_PREDEFINED < S*` (or no pipeline), as `bytes_if_large` tests it, and the
    // bound of every compiled type hashed to `dt`'s slot (`dt`'s own if it is compiled).
    if count < datatype::quick_limit(dt) {
        return true;
    }
    if look == Look::Quick {
        return false;
    }
    let compiled = !datatype::not_compiled(dt);
    (!compiled && count < pipeline::small_count()) || below_reserved(count, dt, compiled)
}

/// Whether `count` elements of `dt` stay below the reserved size, by the type's hint: a type
/// that is not compiled needs only that (`Layout::of` leaves it to the MPI); a compiled one
/// (`compiled`) must also be one `Layout::of` leaves to the MPI at every size (`left_to_mpi`).
#[inline(always)]
fn below_reserved(count: u64, dt: mpi::MPI_Datatype, compiled: bool) -> bool {
    let reserved = pipeline::reserved() as u64;
    datatype::hint(dt).is_some_and(|h| (h.left_to_mpi || !compiled) && (reserved == 0 || count.saturating_mul(h.size as u64) < reserved))
}

/// A receive (`MPI_Recv`, `MPI_Irecv`) the handler forwards: no probed pipelined message waits
/// in the stash (one could match it), and [`message`].
#[inline(always)]
pub fn receive(look: Look, count: impl Into<i64>, dt: mpi::MPI_Datatype) -> bool {
    !pipeline::stash::any() && message(look, count, dt)
}

/// `MPI_Recv_init`: as [`message`], and the pipeline off. With it on, the handler records every
/// persistent receive, which `MPI_Start` serves from the probe stash when a probed message
/// matches (`pipeline::persistent`).
#[inline(always)]
pub fn persistent_receive(look: Look, count: impl Into<i64>, dt: mpi::MPI_Datatype) -> bool {
    pipeline::reserved() == 0 && message(look, count, dt)
}

/// The persistent sends (`MPI_Send_init` and the other modes): as [`message`], and no
/// persistent receive recorded (the handler forgets a record left under the new handle by a
/// receive the MPI freed: `send::forget_receive_under`).
#[inline(always)]
pub fn persistent_send(look: Look, count: impl Into<i64>, dt: mpi::MPI_Datatype) -> bool {
    !pipeline::persistent::any() && message(look, count, dt)
}

/// `MPI_Sendrecv`: both sides forwarded, and no stashed message for the receive side.
#[inline(always)]
pub fn sendrecv(
    look: Look,
    sendcount: impl Into<i64>,
    sendtype: mpi::MPI_Datatype,
    recvcount: impl Into<i64>,
    recvtype: mpi::MPI_Datatype,
) -> bool {
    !pipeline::stash::any() && message(look, sendcount, sendtype) && message(look, recvcount, recvtype)
}

/// The completion family (Wait/Test variants, Request_get_status, Request_free): no request is
/// tracked by the engine path (`ops`, detached ones included) or by the pipeline (`track`), and
/// no pipelined send has chunks in flight (nothing for the call to progress): all three counts
/// in one load (the progress engine's [`idle`](crate::transfer::runtime::progress::idle)). Looks
/// the same either way.
#[inline(always)]
pub fn completion(_: Look) -> bool {
    crate::transfer::runtime::progress::idle()
}

/// `MPI_Waitall`: as [`completion`], and not Open MPI at `MPI_THREAD_MULTIPLE`, where the
/// handler waits with a loop of Testall ([`super::waitall_guard`]).
#[inline(always)]
pub fn waitall(look: Look) -> bool {
    completion(look) && !super::waitall_guard::armed()
}

/// The reductions, which sluice intercepts only to stage device buffers
/// (`protocol::device::coll`): while the fast path is open the GPU layer is not armed (an armed
/// layer runs sluice in `Instrumented` mode), so their handlers would forward every call.
#[inline(always)]
pub fn host_only(_: Look) -> bool {
    true
}

/// `MPI_Request_free`: as [`completion`], and no persistent receive recorded (the handler
/// forgets the freed handle: the MPI may give its value to a new request).
#[inline(always)]
pub fn request_free(look: Look) -> bool {
    completion(look) && !pipeline::persistent::any()
}
