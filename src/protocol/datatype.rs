//! Datatype handlers: MPI_Type_commit compiles a type with sluice's engine, MPI_Type_free and
//! MPI_Type_dup keep the table of compiled types in step with MPI's handles, and MPI_Pack,
//! MPI_Unpack and MPI_Pack_size run on the compiled form (large operations on several workers:
//! [`super::parallel`]).
//!
//! Exactness first: a call takes sluice's path only when every argument is valid and the type
//! is compiled; anything else (negative counts, short buffers, uncommitted or undecodable
//! types, MPI_BOTTOM buffers, MPI_COMM_NULL, on MPICH an invalid communicator) is left to the
//! MPI, so it reports the error with its own class through the application's error handler.
//! The one exception is a position outside the buffer, which both MPIs accept and write out of
//! bounds for: sluice raises the error itself (`plan`). Packed bytes are the
//! MPI's own packed stream (homogeneous machine), so data packed by sluice and by the bare MPI
//! interoperate.

use rustc_hash::FxHashMap;
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use crate::datatype::choice::{Dir, Engine, Policy};
use crate::datatype::compiled::CompiledType;
use crate::ffi::{consts, datatype_key, errclass, mpi, next};
use crate::stats;

/// Compiled types by handle. Entries are removed *before* MPI_Type_free returns the handle to
/// the MPI (which may reuse it at once), so a stale entry is never found under a new type.
static TYPES: RwLock<Option<FxHashMap<usize, Arc<CompiledType>>>> = RwLock::new(None);

/// A counting filter over the keys in [`TYPES`]: a zero slot proves a handle is not compiled.
/// Every send and receive asks whether its datatype is compiled, and most use predefined types
/// that never are: the filter answers them with one relaxed load instead of a lock and a hash
/// (the point-to-point fast path must cost nothing measurable).
static MAYBE: [AtomicU32; FILTER_SLOTS] = [const { AtomicU32::new(0) }; FILTER_SLOTS];
const FILTER_SLOTS: usize = 1024;

/// Per filter slot, the counts below which a message of any type hashed to the slot is one the
/// point-to-point handlers leave to the MPI unchanged (`p2p::fast::message`): the predefined
/// types' bound (`limits::small_count`), lowered by every compiled type in the slot to
/// `ceil(S* / size)` for a type [`TypeHint::left_to_mpi`] (no bound with the pipeline off) and
/// to 0 for any other. The fast path's quick look is then one load and one comparison, and
/// messages of committed contiguous or large-block types skip the thorough look. Lowered
/// before `MPI_Type_commit` returns; recomputed from the slot's remaining types
/// when one is freed, and for every slot when the reserved size changes (`MPI_Init`).
static QUICK_LIMIT: [AtomicU64; FILTER_SLOTS] = [const { AtomicU64::new(u64::MAX) }; FILTER_SLOTS];

/// [`QUICK_LIMIT`] of `t`'s slot: one relaxed load.
#[inline(always)]
pub(crate) fn quick_limit(t: mpi::MPI_Datatype) -> u64 {
    QUICK_LIMIT[slot_index(datatype_key(t))].load(Ordering::Relaxed)
}

/// Recomputes every slot of [`QUICK_LIMIT`]: the reserved size changed.
pub(crate) fn refresh_quick_limits() {
    let g = TYPES.write().unwrap_or_else(|e| e.into_inner());
    (0..FILTER_SLOTS).for_each(|i| refresh_quick_limit(g.as_ref(), i));
}

/// Whether the point-to-point engine path leaves every message of `c` to the MPI (see
/// [`TypeHint::left_to_mpi`]; `Layout::of` decides the same from the type's dataloop).
fn left_to_mpi(c: &CompiledType) -> bool {
    let dl = c.dataloop();
    // On MPICH a contiguous struct must reach the receive handler, which posts it as bytes
    // (`p2p::recv`, MPICH's engine refuses packed bytes into mixed basic types).
    let contiguous = dl.contiguous && dl.extent == dl.size as i64 && !(cfg!(sluice_mpi = "mpich") && c.from_struct());
    let cfg = crate::runtime::config();
    let block = cfg.map_or(usize::MAX, |cfg| cfg.p2p_mpi_block);
    let large = c.kernel().min_block(1, dl.extent).is_some_and(|b| b >= block);
    // A communicator's `sluice_p2p_path` hint may send large blocks through sluice: then such
    // types take the full path, which decides.
    contiguous || (large && cfg.is_some_and(|c| c.p2p_mpi_above == 0) && !NO_PROMISE.load(Ordering::Relaxed))
}

/// Whether large blocks may take sluice's path after all: some communicator carries a
/// `sluice_p2p_path` key (`protocol::comm_hints`). From then on [`left_to_mpi`] promises
/// nothing.
static NO_PROMISE: AtomicBool = AtomicBool::new(false);

/// Large blocks may take sluice's path from now on (the first path key):
/// recomputes every compiled type's [`TypeHint::left_to_mpi`] and every slot's quick limit
/// (once).
pub(crate) fn large_blocks_may_take_sluice() {
    if !NO_PROMISE.swap(true, Ordering::AcqRel) {
        refresh_hints();
    }
}

/// Recomputes every compiled type's [`TypeHint::left_to_mpi`] and every slot's quick limit.
fn refresh_hints() {
    let g = TYPES.write().unwrap_or_else(|e| e.into_inner());
    for (&key, c) in g.iter().flatten() {
        let i = slot_index(key);
        if SIZE_KEY[i].load(Ordering::Relaxed) == key {
            let size = (c.size() << FLAG_BITS) | if left_to_mpi(c) { LEFT_TO_MPI } else { 0 };
            size_write(i, || SIZE_VAL[i].store(size, Ordering::Relaxed));
        }
    }
    (0..FILTER_SLOTS).for_each(|i| refresh_quick_limit(g.as_ref(), i));
}

/// `c`'s entry of [`QUICK_LIMIT`] for the current reserved size.
fn quick_limit_of(c: &CompiledType, left: bool) -> u64 {
    count_bound(left, c.size() as u64, crate::protocol::limits::reserved() as u64)
}

/// The counts below which `count` elements of `size` bytes stay below the reserved size
/// (`count < bound` exactly when `count * size < reserved`), for a type left to the MPI; 0 for
/// any other type (never forwarded on this bound alone); no bound with the pipeline off.
fn count_bound(left: bool, size: u64, reserved: u64) -> u64 {
    match (left, size) {
        (false, _) => 0,
        (true, 0) => u64::MAX,
        (true, _) if reserved == 0 => u64::MAX,
        (true, size) => reserved.div_ceil(size),
    }
}

/// Recomputes slot `i` of [`QUICK_LIMIT`] from the types left in it (under the table's write
/// lock). A scan of the table: only `MPI_Type_free` of a type that set the slot's limit pays it.
fn refresh_quick_limit(types: Option<&FxHashMap<usize, Arc<CompiledType>>>, i: usize) {
    let min = types
        .into_iter()
        .flatten()
        .filter(|(&k, _)| slot_index(k) == i)
        .map(|(_, c)| quick_limit_of(c, left_to_mpi(c)))
        .fold(crate::protocol::limits::small_count(), u64::min);
    QUICK_LIMIT[i].store(min, Ordering::Relaxed);
}

/// Tables of up to this many types recompute a slot's limit exactly when the type that set it
/// leaves; above it the limit stays as it was until the slot empties or the reserved size
/// changes. Lower than needed is safe (the quick look forwards fewer calls, which then take the
/// thorough look); a scan of the whole table at every `MPI_Type_free` made a type's life
/// (construct, commit, free) cost 19 us with 10,000 other types committed and 109 us with
/// 50,000, against 1.1 us with none.
const EXACT_REFRESH_MAX: usize = 256;

/// Slot `i`'s limit after a type left it or was replaced in it (under the table's write lock).
fn refresh_after_leave(types: Option<&FxHashMap<usize, Arc<CompiledType>>>, i: usize) {
    if MAYBE[i].load(Ordering::Relaxed) == 0 {
        QUICK_LIMIT[i].store(crate::protocol::limits::small_count(), Ordering::Relaxed);
    } else if types.map_or(0, |m| m.len()) <= EXACT_REFRESH_MAX {
        refresh_quick_limit(types, i);
    }
}

#[inline]
fn slot_index(key: usize) -> usize {
    // Fibonacci hashing: handles are pointers (Open MPI) or small tagged integers (MPICH).
    let h = (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
    h as usize % FILTER_SLOTS
}

#[inline]
fn slot(key: usize) -> &'static AtomicU32 {
    &MAYBE[slot_index(key)]
}

/// The packed size of one element of the last type compiled into each filter slot, by handle:
/// the pipelined protocol asks every large-enough send and receive for its size, and a lock, a
/// hash and a reference count per call showed as +25 ns on small messages of derived types.
static SIZE_KEY: [AtomicUsize; FILTER_SLOTS] = [const { AtomicUsize::new(0) }; FILTER_SLOTS];
static SIZE_VAL: [AtomicUsize; FILTER_SLOTS] = [const { AtomicUsize::new(0) }; FILTER_SLOTS];
/// Per slot, a sequence number (a seqlock): odd while a writer, holding [`TYPES`]' write lock,
/// changes the slot's key and value. A reader that sees the same even number before and after
/// its reads has a consistent pair. Checking only the key twice let a slot rewritten with another
/// type's size and then back to this key between the two checks (another type compiled into the
/// slot and freed, then this type's size noted again) pass with the other type's size.
static SIZE_SEQ: [AtomicU32; FILTER_SLOTS] = [const { AtomicU32::new(0) }; FILTER_SLOTS];

/// Changes slot `i`'s key and value with `write`, under [`SIZE_SEQ`] (caller holds [`TYPES`]'
/// write lock: one writer at a time).
fn size_write(i: usize, write: impl FnOnce()) {
    // Plain stores, not read-modify-writes: the one writer holds the table's lock, and a commit
    // and a free each make several of these writes (a locked instruction costs ~6 ns here).
    let seq = SIZE_SEQ[i].load(Ordering::Relaxed);
    SIZE_SEQ[i].store(seq.wrapping_add(1), Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    write();
    SIZE_SEQ[i].store(seq.wrapping_add(2), Ordering::Release);
}

/// Adds `delta` to an atomic that only holders of [`TYPES`]' write lock change (a load and a
/// store: no locked instruction).
#[inline]
fn locked_add_u32(a: &AtomicU32, delta: i32) {
    a.store(a.load(Ordering::Relaxed).wrapping_add_signed(delta), Ordering::Relaxed);
}

/// Bumps [`GENERATION`] (caller holds [`TYPES`]' write lock; Release as the bump was).
#[inline]
fn bump_generation() {
    GENERATION.store(GENERATION.load(Ordering::Relaxed) + 1, Ordering::Release);
}

/// Flag kept with the size in [`SIZE_VAL`] (its low bit): [`TypeHint::left_to_mpi`].
const LEFT_TO_MPI: usize = 1;
const FLAG_BITS: u32 = 1;

/// What the point-to-point fast path needs of a compiled type, read without a lock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeHint {
    /// Packed bytes of one element.
    pub size: usize,
    /// The point-to-point engine path leaves messages of this type to the MPI at every size:
    /// contiguous in memory (the MPI moves it with no copy), or every contiguous block of one
    /// element at least `SLUICE_P2P_MPI_BLOCK` bytes (blocks of several elements only merge,
    /// so this holds for any count) with `SLUICE_P2P_MPI_ABOVE` at 0 (Open MPI's `auto`).
    /// Decided once at commit, so that the fast path needs no configuration load.
    pub left_to_mpi: bool,
}

/// The hint of type `t`, without a lock: a compiled type's, or the size [`remember_size`] noted
/// for a type that is not compiled (with the flag false). `None`: neither, or its slot holds
/// another type (use [`lookup`]).
#[inline]
pub(crate) fn hint(t: mpi::MPI_Datatype) -> Option<TypeHint> {
    read_hint(datatype_key(t), || {}, || {})
}

/// [`hint`] of `key`, with `after_key` run between the key's and the value's reads and
/// `after_value` between the value's read and the sequence check (tests use them to change the
/// slot at the worst moments).
#[inline(always)]
fn read_hint(key: usize, after_key: impl FnOnce(), after_value: impl FnOnce()) -> Option<TypeHint> {
    let i = slot_index(key);
    let seq = SIZE_SEQ[i].load(Ordering::Acquire);
    if seq & 1 != 0 || SIZE_KEY[i].load(Ordering::Relaxed) != key {
        return None;
    }
    after_key();
    let v = SIZE_VAL[i].load(Ordering::Relaxed);
    after_value();
    std::sync::atomic::fence(Ordering::Acquire);
    (SIZE_SEQ[i].load(Ordering::Relaxed) == seq).then_some(TypeHint { size: v >> FLAG_BITS, left_to_mpi: v & LEFT_TO_MPI != 0 })
}

/// A type's size, extent and true extent, as the MPI reports them (`None`: it rejects the handle).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub size: i64,
    pub lb: i64,
    pub extent: i64,
    pub true_lb: i64,
    pub true_extent: i64,
}

/// The [`Bounds`] of `t`.
pub(crate) fn bounds(t: mpi::MPI_Datatype) -> Option<Bounds> {
    let (mut size, mut lb, mut extent, mut tlb, mut textent): (
        mpi::MPI_Count,
        mpi::MPI_Count,
        mpi::MPI_Count,
        mpi::MPI_Count,
        mpi::MPI_Count,
    ) = (0, 0, 0, 0, 0);
    // SAFETY: each call writes one or two MPI_Count; a handle the MPI rejects fails the first
    // query (an invalid handle is erroneous with the bare MPI's call as well).
    let ok = unsafe {
        mpi::PMPI_Type_size_x(t, &mut size) == errclass::SUCCESS
            && mpi::PMPI_Type_get_extent_x(t, &mut lb, &mut extent) == errclass::SUCCESS
            && mpi::PMPI_Type_get_true_extent_x(t, &mut tlb, &mut textent) == errclass::SUCCESS
    };
    ok.then_some(Bounds { size, lb, extent, true_lb: tlb, true_extent: textent })
}

/// Whether `t` is certainly not compiled (its filter slot is empty): every predefined type.
/// One relaxed load: the fast path's first test (`p2p::fast`).
#[inline(always)]
pub(crate) fn not_compiled(t: mpi::MPI_Datatype) -> bool {
    slot(datatype_key(t)).load(Ordering::Relaxed) == 0
}

/// One call's datatype argument, looked up at most once and passed down: a send asks several
/// questions of its type (the engine rules, the path contest, the pipeline's reserved size),
/// and each used to look it up again (four look-ups for a send the rules left to the MPI).
pub(crate) struct TypeArg {
    handle: mpi::MPI_Datatype,
    compiled: std::cell::OnceCell<Option<Arc<CompiledType>>>,
}

impl TypeArg {
    /// The application's handle, not looked up yet.
    #[inline]
    pub(crate) fn new(handle: mpi::MPI_Datatype) -> TypeArg {
        TypeArg { handle, compiled: std::cell::OnceCell::new() }
    }

    /// The application's handle.
    #[inline]
    pub(crate) fn handle(&self) -> mpi::MPI_Datatype {
        self.handle
    }

    /// The lock-free [`hint`] (a few loads; read again at each call rather than kept).
    #[inline]
    pub(crate) fn hint(&self) -> Option<TypeHint> {
        hint(self.handle)
    }

    /// The compiled form ([`lookup`], the first time only).
    #[inline]
    pub(crate) fn compiled(&self) -> Option<&Arc<CompiledType>> {
        self.compiled.get_or_init(|| lookup(self.handle)).as_ref()
    }
}

/// The compiled form of `t`, if the engine is on and `t` is compiled.
#[inline]
///
/// Served from this thread's cache when it holds `t`, but a miss does not replace the cache's
/// type: the point-to-point and collective layers look up a send and a receive type in turn,
/// and refilling on each would add two reference-count updates to every call, and evict the
/// type a loop of `MPI_Pack` calls ([`compiled`]) keeps there.
pub(crate) fn lookup(t: mpi::MPI_Datatype) -> Option<Arc<CompiledType>> {
    if not_compiled(t) {
        return None;
    }
    let key = datatype_key(t);
    let generation = GENERATION.load(Ordering::Acquire);
    let hit = LAST.try_with(|last| {
        if last.busy.get() {
            return None;
        }
        // SAFETY: not busy, so no `CompiledRef` of this thread writes or reads the entry.
        let entry = unsafe { &*last.entry.get() };
        cached(entry, key, generation).cloned()
    });
    hit.ok().flatten().or_else(|| lookup_compiled(key))
}

/// The form in a [`LAST`] entry, if it is `key`'s of this `generation`.
#[inline]
fn cached(entry: &Option<(usize, u64, Arc<CompiledType>)>, key: usize, generation: u64) -> Option<&Arc<CompiledType>> {
    match entry {
        Some((k, g, c)) if *k == key && *g == generation => Some(c),
        _ => None,
    }
}

/// Bumped after an entry leaves [`TYPES`] or is replaced there, before `MPI_Type_free` hands
/// the handle back to the MPI: a per-thread [`LAST`] entry from an older generation is stale.
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// A thread's last compiled type found: (key, [`GENERATION`] then, form), and whether a
/// [`CompiledRef`] of this thread borrows it now.
struct LastType {
    busy: Cell<bool>,
    entry: UnsafeCell<Option<(usize, u64, Arc<CompiledType>)>>,
}

thread_local! {
    /// Applications pack many small messages of one type in a row; the table's lock and the
    /// `Arc` count are four atomic read-modify-writes per call, and a closure-based cache
    /// stalled on moving its closure: together about half of sluice's own cost of an
    /// `MPI_Pack` of 64 bytes (perf and wall time, 2026-11-25). A hit costs two loads.
    static LAST: LastType = const { LastType { busy: Cell::new(false), entry: UnsafeCell::new(None) } };
}

/// The compiled form of a type for the duration of one call (see [`compiled`]). Not `Send`
/// (it may point into this thread's [`LAST`]).
pub(crate) struct CompiledRef(Found);

enum Found {
    /// Not compiled, or the engine is off.
    Absent,
    /// Found in the table while this thread's cache was busy (a nested lookup).
    Owned(Arc<CompiledType>),
    /// This thread's [`LAST`] holds it; `busy` is set until the [`CompiledRef`] drops.
    Cached(*const LastType),
}

impl CompiledRef {
    /// The compiled form, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<&Arc<CompiledType>> {
        match &self.0 {
            Found::Absent => None,
            Found::Owned(c) => Some(c),
            // SAFETY: `compiled` made this from this thread's live `LAST` and set `busy`, under
            // which nothing writes `entry` (`compiled` and `remove` check it) until this drops;
            // the entry was `Some` then.
            Found::Cached(l) => unsafe { (*(**l).entry.get()).as_ref().map(|e| &e.2) },
        }
    }
}

impl Drop for CompiledRef {
    fn drop(&mut self) {
        if let Found::Cached(l) = &self.0 {
            // SAFETY: as in `get`: this thread's live `LAST`.
            unsafe { (**l).busy.set(false) };
        }
    }
}

/// The compiled form of `t` (absent: not compiled, or the engine is off), from this thread's
/// cache when it is the type the thread used last.
#[inline]
pub(crate) fn compiled(t: mpi::MPI_Datatype) -> CompiledRef {
    if not_compiled(t) {
        return CompiledRef(Found::Absent);
    }
    let key = datatype_key(t);
    // Acquire: pairs with the bump in `remove`, made before the MPI may reuse the handle, so a
    // handle this thread got for a new type is never served from an older type's entry.
    let generation = GENERATION.load(Ordering::Acquire);
    // `try_with` fails only while this thread's thread-locals are being destroyed.
    if let Ok(l) = LAST.try_with(|l| l as *const LastType) {
        // SAFETY: this thread's thread-local, alive for the rest of this call.
        let last = unsafe { &*l };
        if !last.busy.get() {
            // SAFETY: not busy, so no `CompiledRef` of this thread reads the entry.
            let entry = unsafe { &mut *last.entry.get() };
            if cached(entry, key, generation).is_none() {
                let Some(c) = lookup_compiled(key) else { return CompiledRef(Found::Absent) };
                *entry = Some((key, generation, c));
            }
            last.busy.set(true);
            return CompiledRef(Found::Cached(l));
        }
    }
    CompiledRef(lookup_compiled(key).map_or(Found::Absent, Found::Owned))
}

fn lookup_compiled(key: usize) -> Option<Arc<CompiledType>> {
    if !crate::runtime::config().is_some_and(|c| c.datatype_engine) {
        return None;
    }
    let g = TYPES.read().unwrap_or_else(|e| e.into_inner());
    g.as_ref()?.get(&key).cloned()
}

fn insert(t: mpi::MPI_Datatype, c: Arc<CompiledType>) {
    let key = datatype_key(t);
    let mut g = TYPES.write().unwrap_or_else(|e| e.into_inner());
    let left = left_to_mpi(&c);
    let size = (c.size() << FLAG_BITS) | if left { LEFT_TO_MPI } else { 0 };
    let i = slot_index(key);
    // Lowered before the type is in the table and before the commit returns: the quick look
    // never sees a compiled type with a limit above its own.
    let limit = quick_limit_of(&c, left);
    if limit < QUICK_LIMIT[i].load(Ordering::Relaxed) {
        QUICK_LIMIT[i].store(limit, Ordering::Relaxed); // writers hold the lock: no fetch_min
    }
    if let Some(old) = g.get_or_insert_with(FxHashMap::default).insert(key, c) {
        // The same handle committed again: the old form's bound may have been the lowest.
        refresh_after_leave(g.as_ref(), i);
        bump_generation();
        drop(old);
        super::byte_twin::sweep();
    } else {
        locked_add_u32(slot(key), 1);
    }
    size_write(i, || {
        SIZE_KEY[i].store(key, Ordering::Relaxed);
        SIZE_VAL[i].store(size, Ordering::Relaxed);
    });
}

/// Notes the size of one element of `t`, a type that is not compiled (predefined, or left to
/// the MPI's engine), measured by the MPI: later sends and receives of it find the size in
/// [`hint`] instead of asking the MPI (the fast path's thorough look, `p2p::fast`). A compiled
/// type's entry is never replaced; [`remove`] forgets the size when the type is freed.
pub(crate) fn remember_size(t: mpi::MPI_Datatype, size: usize) {
    let key = datatype_key(t);
    let i = slot_index(key);
    if !not_compiled(t) || size == 0 || size > usize::MAX >> FLAG_BITS {
        return; // a compiled type's slot (its own or another's), or nothing worth noting
    }
    // Under the table's lock, checked again: `insert` and `remove` change the slot under it.
    let _g = TYPES.write().unwrap_or_else(|e| e.into_inner());
    if !not_compiled(t) {
        return;
    }
    size_write(i, || {
        SIZE_KEY[i].store(key, Ordering::Relaxed);
        SIZE_VAL[i].store(size << FLAG_BITS, Ordering::Relaxed);
    });
}

fn remove(t: mpi::MPI_Datatype) {
    let key = datatype_key(t);
    let mut g = TYPES.write().unwrap_or_else(|e| e.into_inner());
    // A remembered size of a type that is not compiled goes too: the MPI may reuse the handle.
    if SIZE_KEY[slot_index(key)].load(Ordering::Relaxed) == key {
        size_write(slot_index(key), || SIZE_KEY[slot_index(key)].store(0, Ordering::Relaxed));
    }
    if let Some(c) = g.as_mut().and_then(|m| m.remove(&key)) {
        bump_generation();
        locked_add_u32(slot(key), -1);
        let i = slot_index(key);
        // This type may have set the slot's limit; and a limit left low in a large table
        // (`refresh_after_leave`) opens again when the slot empties.
        if MAYBE[i].load(Ordering::Relaxed) == 0 || QUICK_LIMIT[i].load(Ordering::Relaxed) == quick_limit_of(&c, left_to_mpi(&c)) {
            refresh_after_leave(g.as_ref(), i);
        }
        // The last holder of this compiled form (no dup, no operation in flight, not in the
        // form cache): its checkpoint tables can go. Otherwise the budget's LRU evicts them later.
        // This thread's cache lets go of it first (other threads' caches let go at their next
        // lookup; until then the budget's LRU may keep the tables).
        let _ = LAST.try_with(|last| {
            if !last.busy.get() {
                // SAFETY: not busy, so no `CompiledRef` of this thread reads the entry.
                let entry = unsafe { &mut *last.entry.get() };
                if entry.as_ref().is_some_and(|(k, _, _)| *k == key) {
                    *entry = None;
                }
            }
        });
        if Arc::strong_count(&c) == 1 {
            super::parallel::forget(&c);
        }
        drop(c);
        super::byte_twin::sweep();
    }
}

/// Drops every compiled type. Called when interception is switched off at run time: while
/// sluice is disabled, MPI_Type_free passes straight through, so the table could no longer track
/// which handles the MPI reuses. Types committed before a later `sluice_enable()` then stay with
/// the MPI's engine.
pub fn forget_all() {
    let mut g = TYPES.write().unwrap_or_else(|e| e.into_inner());
    *g = None;
    super::byte_twin::forget_all();
    bump_generation();
    MAYBE.iter().for_each(|s| s.store(0, Ordering::Relaxed));
    let small = crate::protocol::limits::small_count();
    QUICK_LIMIT.iter().for_each(|s| s.store(small, Ordering::Relaxed));
    (0..FILTER_SLOTS).for_each(|i| size_write(i, || SIZE_KEY[i].store(0, Ordering::Relaxed)));
}

/// At start-up: compiles the predefined pair types with padding (`MPI_DOUBLE_INT`,
/// `MPI_LONG_INT`, `MPI_SHORT_INT`, `MPI_LONG_DOUBLE_INT`), so that their point-to-point
/// messages take sluice's engine path like any non-contiguous type:
/// - a receive of one of them must recognize a pipelined message (its first message lands in
///   staging or in place by ranges, which needs the compiled form; left to the MPI, the data
///   landed nowhere near its place: `tests/c/p2p_conf_landing.c`);
/// - MPICH 4.0's engine refuses more than about 8 KiB of packed bytes received into such a type
///   (measured): a message sluice packed for a non-contiguous sender failed where the bare
///   MPICH receives the sender's typed message.
///
/// (`MPI_FLOAT_INT` and `MPI_2INT` have no padding: contiguous, they land as bytes.)
pub fn compile_pair_types() {
    for t in [consts::double_int(), consts::long_int(), consts::short_int(), consts::long_double_int()] {
        compile(t);
    }
}

/// Decodes and compiles a committed type (types of one construction share a form:
/// `datatype::form_cache`); an undecodable type stays with the MPI's engine.
fn compile(t: mpi::MPI_Datatype) {
    if !crate::runtime::config().is_some_and(|c| c.datatype_engine) {
        return;
    }
    match crate::datatype::form_cache::compiled_form(t) {
        Ok(c) => insert(t, c),
        Err(e) => {
            remove(t);
            log::debug!("datatype left to the MPI engine: {e:?}");
        }
    }
}

/// `MPI_Type_commit`.
///
/// # Safety
/// As `MPI_Type_commit`.
pub unsafe fn type_commit(datatype: *mut mpi::MPI_Datatype) -> c_int {
    // SAFETY: forwarded unchanged.
    let rc = unsafe { next::MPI_Type_commit(datatype) };
    if rc == errclass::SUCCESS {
        // SAFETY: the MPI accepted the pointer and wrote nothing else to it.
        compile(unsafe { *datatype });
    }
    rc
}

/// `MPI_Type_free`: forget the compiled form first (the MPI may reuse the handle at once).
///
/// # Safety
/// As `MPI_Type_free`.
pub unsafe fn type_free(datatype: *mut mpi::MPI_Datatype) -> c_int {
    if !datatype.is_null() {
        // SAFETY: non-null pointer to the application's handle.
        remove(unsafe { *datatype });
    }
    // SAFETY: forwarded unchanged.
    unsafe { next::MPI_Type_free(datatype) }
}

/// `MPI_Type_dup`: the duplicate of a committed type is committed and has the same typemap.
///
/// # Safety
/// As `MPI_Type_dup`.
pub unsafe fn type_dup(oldtype: mpi::MPI_Datatype, newtype: *mut mpi::MPI_Datatype) -> c_int {
    // SAFETY: forwarded unchanged.
    let rc = unsafe { next::MPI_Type_dup(oldtype, newtype) };
    if rc == errclass::SUCCESS {
        if let Some(c) = lookup(oldtype) {
            // SAFETY: the MPI wrote the new handle.
            insert(unsafe { *newtype }, c);
        }
    }
    rc
}

/// The part of a packed buffer a call would touch, if sluice may serve the call itself.
struct PackPlan<'a> {
    datatype: mpi::MPI_Datatype,
    compiled: &'a CompiledType,
    count: usize,
    start: usize,
    bytes: usize,
}

/// Who serves a pack or unpack call.
enum Route<'a> {
    /// sluice's engine.
    Engine(PackPlan<'a>),
    /// The MPI, unchanged: it reports its own errors.
    Forward,
    /// Nobody: the call fails with this error class, already raised through the error handler.
    Fail(c_int),
}

/// Whether `comm` is a predefined communicator (valid from `MPI_Init` to `MPI_Finalize`).
#[cfg(sluice_mpi = "mpich")]
fn builtin_comm(comm: mpi::MPI_Comm) -> bool {
    // Bits 31-30 of an MPICH handle are its kind; 1 is HANDLE_KIND_BUILTIN.
    (comm as u32) >> 30 == 1
}

/// Decides who serves a pack/unpack (`op`) of `count` elements of `datatype` (compiled form
/// `compiled`, if any), with the packed side `[*position, *position + bytes)` inside a buffer of
/// `capacity` bytes.
///
/// `probe` makes the same MPI call with count 0: on MPICH, whose MPI_Pack/MPI_Unpack reject a
/// freed or invalid communicator (`MPI_ERR_COMM` on MPI_COMM_WORLD, measured), it lets the MPI
/// validate a non-predefined communicator with its own class, handler and message (10 ns on
/// MPICH 4.0), before sluice serves the call or raises its own error (a forwarded call is
/// checked by the MPI anyway). Open MPI 4.1 does not validate it (a freed communicator packs), so the probe is
/// not made there.
///
/// A position outside the buffer fails here, whatever the MPI: both MPIs write before the
/// buffer for a negative position and return success, and MPICH writes past its end for a
/// position beyond `capacity` (measured, MPICH 4.0.2 and Open MPI 4.1.4). The classes are
/// `MPI_ERR_ARG` (negative) and `MPI_ERR_TRUNCATE` (past the end, Open MPI's own class there).
#[allow(clippy::too_many_arguments)]
fn plan<'a>(
    op: &str,
    compiled: Option<&'a Arc<CompiledType>>,
    user_buf: *const c_void,
    packed_buf: *const c_void,
    count: i64,
    datatype: mpi::MPI_Datatype,
    capacity: i64,
    position: Option<i64>,
    comm: mpi::MPI_Comm,
    probe: impl FnOnce() -> c_int,
) -> Route<'a> {
    let Some(position) = position else { return Route::Forward };
    if count < 0 || capacity < 0 || comm == consts::comm_null() {
        return Route::Forward;
    }
    let outside = position < 0 || position > capacity;
    if compiled.is_none() && !outside {
        return Route::Forward; // the MPI checks everything itself: no probe needed
    }
    #[cfg(sluice_mpi = "mpich")]
    if !builtin_comm(comm) {
        let rc = probe();
        if rc != errclass::SUCCESS {
            return Route::Fail(rc);
        }
    }
    #[cfg(sluice_mpi = "openmpi")]
    let _ = probe;
    if position < 0 {
        let msg = format!("{op}: position {position} is negative");
        return Route::Fail(crate::errors::raise(comm, errclass::ERR_ARG, &msg));
    }
    if position > capacity {
        let msg = format!("{op}: position {position} is past the end of the {capacity}-byte buffer");
        return Route::Fail(crate::errors::raise(comm, errclass::ERR_TRUNCATE, &msg));
    }
    let Some(compiled) = compiled else { return Route::Forward };
    let Some(bytes) = (compiled.size() as i64).checked_mul(count) else { return Route::Forward };
    if position.checked_add(bytes).is_none_or(|end| end > capacity) {
        return Route::Forward; // the MPI reports its own truncation (MPICH packs what fits)
    }
    if bytes > 0 && (user_buf.is_null() || packed_buf.is_null()) {
        return Route::Forward; // MPI_BOTTOM with absolute addresses: left to the MPI
    }
    Route::Engine(PackPlan { datatype, compiled, count: count as usize, start: position as usize, bytes: bytes as usize })
}

/// Whether a call of `bytes` packed bytes of `c` in direction `dir` goes to the MPI unchanged
/// because the MPI's engine serves it: the type's engine choice (`datatype::choice`, policy
/// `auto`) settled on it, or `SLUICE_PACK_ENGINE=mpi` names it (which is also how the tests
/// reach this route: a learned decision depends on timing). The MPI then does exactly what
/// sluice's route to its engine did (same engine, same bytes), without that route's layers,
/// which cost 15-25 ns a call (face-y-16^3 pack, 2 KiB, on Open MPI: 50 ns through them against
/// 33 ns for the MPI's own call; a type whose two engines tie lost a third of its speed whenever
/// the MPI's won the contest). Not for calls large enough for sluice's parallel workers
/// (`SLUICE_PARALLEL_MIN`), which the route tries first, and not on MPICH for types built from
/// structs, whose packed bytes MPICH's engine may refuse to unpack where sluice's route falls
/// back to its own kernel.
#[inline]
fn mpi_engine_decided(c: &CompiledType, dir: Dir, bytes: u64) -> bool {
    // The type's state first: one relaxed load, which settles the common case (a type that
    // learned sluice's engine; decisions exist only under `auto`).
    let learned = match c.choice().decided(dir) {
        Some(Engine::Sluice) => return false,
        d => d == Some(Engine::Mpi),
    };
    !(cfg!(sluice_mpi = "mpich") && c.from_struct())
        && crate::runtime::config().is_some_and(|cfg| {
            let mpi = match cfg.pack_engine {
                Policy::Auto => learned,
                Policy::Mpi => true,
                Policy::Sluice => false,
            };
            mpi && bytes < cfg.parallel_min as u64
        })
}

/// Small operations on contiguous data are one `memcpy`, made here: the kernel's layers (the
/// parallel check, the dispatch on instruction set and block size) cost more than the copy, and
/// left both MPIs' contiguous paths faster than sluice for 8-64 bytes (bench/pack_small.c:
/// 16-19 ns against 11-12 ns). Larger ones take the kernel, which picks streaming stores and
/// workers by size.
const SMALL_CONTIGUOUS: usize = 4096;

#[inline]
fn small_contiguous(p: &PackPlan<'_>) -> Option<i64> {
    if p.bytes > SMALL_CONTIGUOUS {
        return None;
    }
    p.compiled.contiguous_at(p.count)
}

/// Packs through sluice's engine if `plan` allows; returns the new position, or `None` when
/// the call goes to the MPI unchanged ([`mpi_engine_decided`]).
///
/// # Safety
/// As `MPI_Pack` (the application's buffers are valid for the typemap and the packed range).
unsafe fn engine_pack(p: &PackPlan<'_>, inbuf: *const c_void, outbuf: *mut c_void) -> Option<i64> {
    if p.bytes == 0 {
        stats::engine_bytes(0);
        return Some(p.start as i64); // the buffers may be NULL: no slice or copy over them
    }
    // SAFETY: `plan` checked that `[start, start + bytes)` lies inside the caller's `outsize`
    // bytes at `outbuf`; MPI_Pack's contract makes the typemap readable at `inbuf` (for a
    // contiguous type: the `bytes` bytes at `at`).
    unsafe {
        if let Some(at) = small_contiguous(p) {
            std::ptr::copy_nonoverlapping((inbuf as *const u8).wrapping_offset(at as isize), (outbuf as *mut u8).add(p.start), p.bytes);
            stats::engine_bytes(p.bytes);
            return Some((p.start + p.bytes) as i64);
        }
        if mpi_engine_decided(p.compiled, Dir::Pack, p.bytes as u64) {
            return None;
        }
        let out = std::slice::from_raw_parts_mut((outbuf as *mut u8).add(p.start), p.bytes);
        if !super::parallel::try_pack(p.datatype, p.compiled, p.count, inbuf as *const u8, out) {
            super::pack_engine::pack(p.datatype, p.compiled, p.count, inbuf as *const u8, out);
        }
    }
    stats::engine_bytes(p.bytes);
    Some((p.start + p.bytes) as i64)
}

/// Unpacks through sluice's engine; returns the new position, or `None` as [`engine_pack`].
///
/// # Safety
/// As `MPI_Unpack`.
unsafe fn engine_unpack(p: &PackPlan<'_>, inbuf: *const c_void, outbuf: *mut c_void) -> Option<i64> {
    if p.bytes == 0 {
        stats::engine_bytes(0);
        return Some(p.start as i64); // as in `engine_pack`
    }
    // SAFETY: `plan` checked the packed range lies inside `insize` bytes at `inbuf`; MPI_Unpack's
    // contract makes the typemap writable at `outbuf`, and its typemap has no overlapping entries
    // (MPI_Unpack's output buffer is a receive buffer: overlapping entries are erroneous).
    unsafe {
        if let Some(at) = small_contiguous(p) {
            std::ptr::copy_nonoverlapping((inbuf as *const u8).add(p.start), (outbuf as *mut u8).wrapping_offset(at as isize), p.bytes);
            stats::engine_bytes(p.bytes);
            return Some((p.start + p.bytes) as i64);
        }
        if mpi_engine_decided(p.compiled, Dir::Unpack, p.bytes as u64) {
            return None;
        }
        let input = std::slice::from_raw_parts((inbuf as *const u8).add(p.start), p.bytes);
        if !super::parallel::try_unpack(p.datatype, p.compiled, p.count, input, outbuf as *mut u8) {
            super::pack_engine::unpack(p.datatype, p.compiled, p.count, input, outbuf as *mut u8);
        }
    }
    stats::engine_bytes(p.bytes);
    Some((p.start + p.bytes) as i64)
}

/// Reads an optional position pointer.
fn read_pos<T: Copy + Into<i64>>(p: *const T) -> Option<i64> {
    // SAFETY: non-null position pointers point to the application's position variable.
    (!p.is_null()).then(|| unsafe { *p }.into())
}

/// `MPI_Pack`.
///
/// # Safety
/// As `MPI_Pack`.
pub unsafe fn pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: mpi::MPI_Datatype,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: mpi::MPI_Comm,
) -> c_int {
    // SAFETY: (probe) MPI_Pack of nothing, with the application's arguments.
    let probe = || unsafe { next::MPI_Pack(inbuf, 0, datatype, outbuf, outsize, &mut 0, comm) };
    let c = compiled(datatype);
    match plan("MPI_Pack", c.get(), inbuf, outbuf, incount.into(), datatype, outsize.into(), read_pos(position), comm, probe) {
        // SAFETY: plan validated the arguments; position is non-null; the end fits in c_int
        // because it is at most `outsize`.
        Route::Engine(p) => match unsafe { engine_pack(&p, inbuf, outbuf) } {
            Some(end) => {
                // SAFETY: as above.
                unsafe { *position = end as c_int };
                errclass::SUCCESS
            }
            // SAFETY: forwarded unchanged.
            None => unsafe { next::MPI_Pack(inbuf, incount, datatype, outbuf, outsize, position, comm) },
        },
        Route::Fail(class) => class,
        // SAFETY: forwarded unchanged.
        Route::Forward => unsafe { next::MPI_Pack(inbuf, incount, datatype, outbuf, outsize, position, comm) },
    }
}

/// `MPI_Unpack`.
///
/// # Safety
/// As `MPI_Unpack`.
pub unsafe fn unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: mpi::MPI_Datatype,
    comm: mpi::MPI_Comm,
) -> c_int {
    // SAFETY: (probe) MPI_Unpack of nothing, with the application's arguments.
    let probe = || unsafe { next::MPI_Unpack(inbuf, insize, &mut 0, outbuf, 0, datatype, comm) };
    let c = compiled(datatype);
    match plan("MPI_Unpack", c.get(), outbuf, inbuf, outcount.into(), datatype, insize.into(), read_pos(position), comm, probe) {
        // SAFETY: as in `pack`.
        Route::Engine(p) => match unsafe { engine_unpack(&p, inbuf, outbuf) } {
            Some(end) => {
                // SAFETY: as in `pack`.
                unsafe { *position = end as c_int };
                errclass::SUCCESS
            }
            // SAFETY: forwarded unchanged.
            None => unsafe { next::MPI_Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm) },
        },
        Route::Fail(class) => class,
        // SAFETY: forwarded unchanged.
        Route::Forward => unsafe { next::MPI_Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm) },
    }
}

/// Whether `MPI_Pack_size` may answer for `comm` without asking the MPI: not MPI_COMM_NULL, and
/// on MPICH, which validates the communicator (a freed one raises `MPI_ERR_COMM`), predefined.
fn size_comm_ok(comm: mpi::MPI_Comm) -> bool {
    #[cfg(sluice_mpi = "mpich")]
    if !builtin_comm(comm) {
        return false;
    }
    comm != consts::comm_null()
}

/// `MPI_Pack_size`: exactly `incount * size` (both MPIs return the same for homogeneous
/// packing; `tests/c/pack.c` checks it against `PMPI_Pack_size`).
///
/// # Safety
/// As `MPI_Pack_size`.
pub unsafe fn pack_size(incount: c_int, datatype: mpi::MPI_Datatype, comm: mpi::MPI_Comm, size: *mut c_int) -> c_int {
    let fast = (incount >= 0 && !size.is_null() && size_comm_ok(comm))
        .then(|| lookup(datatype))
        .flatten()
        .and_then(|c| c_int::try_from(c.size() as i64 * incount as i64).ok());
    match fast {
        // SAFETY: non-null output pointer.
        Some(n) => unsafe {
            *size = n;
            errclass::SUCCESS
        },
        // SAFETY: forwarded unchanged.
        None => unsafe { next::MPI_Pack_size(incount, datatype, comm, size) },
    }
}

/// Large-count variants (MPI-4, MPICH): the same logic with `MPI_Count` positions and sizes.
#[cfg(sluice_large_count)]
pub mod large_count {
    use super::*;

    /// `MPI_Pack_c`.
    ///
    /// # Safety
    /// As `MPI_Pack_c`.
    pub unsafe fn pack_c(
        inbuf: *const c_void,
        incount: mpi::MPI_Count,
        datatype: mpi::MPI_Datatype,
        outbuf: *mut c_void,
        outsize: mpi::MPI_Count,
        position: *mut mpi::MPI_Count,
        comm: mpi::MPI_Comm,
    ) -> c_int {
        // SAFETY: (probe) MPI_Pack_c of nothing, with the application's arguments.
        let probe = || unsafe { next::MPI_Pack_c(inbuf, 0, datatype, outbuf, outsize, &mut 0, comm) };
        let c = compiled(datatype);
        match plan("MPI_Pack_c", c.get(), inbuf, outbuf, incount, datatype, outsize, read_pos(position), comm, probe) {
            // SAFETY: as in `pack`.
            Route::Engine(p) => match unsafe { engine_pack(&p, inbuf, outbuf) } {
                Some(end) => {
                    // SAFETY: as in `pack`.
                    unsafe { *position = end };
                    errclass::SUCCESS
                }
                // SAFETY: forwarded unchanged.
                None => unsafe { next::MPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, position, comm) },
            },
            Route::Fail(class) => class,
            // SAFETY: forwarded unchanged.
            Route::Forward => unsafe { next::MPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, position, comm) },
        }
    }

    /// `MPI_Unpack_c`.
    ///
    /// # Safety
    /// As `MPI_Unpack_c`.
    pub unsafe fn unpack_c(
        inbuf: *const c_void,
        insize: mpi::MPI_Count,
        position: *mut mpi::MPI_Count,
        outbuf: *mut c_void,
        outcount: mpi::MPI_Count,
        datatype: mpi::MPI_Datatype,
        comm: mpi::MPI_Comm,
    ) -> c_int {
        // SAFETY: (probe) MPI_Unpack_c of nothing, with the application's arguments.
        let probe = || unsafe { next::MPI_Unpack_c(inbuf, insize, &mut 0, outbuf, 0, datatype, comm) };
        let c = compiled(datatype);
        match plan("MPI_Unpack_c", c.get(), outbuf, inbuf, outcount, datatype, insize, read_pos(position), comm, probe) {
            // SAFETY: as in `pack`.
            Route::Engine(p) => match unsafe { engine_unpack(&p, inbuf, outbuf) } {
                Some(end) => {
                    // SAFETY: as in `pack`.
                    unsafe { *position = end };
                    errclass::SUCCESS
                }
                // SAFETY: forwarded unchanged.
                None => unsafe { next::MPI_Unpack_c(inbuf, insize, position, outbuf, outcount, datatype, comm) },
            },
            Route::Fail(class) => class,
            // SAFETY: forwarded unchanged.
            Route::Forward => unsafe { next::MPI_Unpack_c(inbuf, insize, position, outbuf, outcount, datatype, comm) },
        }
    }

    /// `MPI_Pack_size_c`.
    ///
    /// # Safety
    /// As `MPI_Pack_size_c`.
    pub unsafe fn pack_size_c(
        incount: mpi::MPI_Count,
        datatype: mpi::MPI_Datatype,
        comm: mpi::MPI_Comm,
        size: *mut mpi::MPI_Count,
    ) -> c_int {
        let fast = (incount >= 0 && !size.is_null() && size_comm_ok(comm))
            .then(|| lookup(datatype))
            .flatten()
            .and_then(|c| (c.size() as i64).checked_mul(incount));
        match fast {
            // SAFETY: non-null output pointer.
            Some(n) => unsafe {
                *size = n;
                errclass::SUCCESS
            },
            // SAFETY: forwarded unchanged.
            None => unsafe { next::MPI_Pack_size_c(incount, datatype, comm, size) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::ir::DataLoop;

    /// The tests that put types in the process's one table: one at a time, since a slot's
    /// limit is recomputed exactly only in a small table.
    static TABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn table() -> std::sync::MutexGuard<'static, ()> {
        TABLE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A datatype handle whose table key is `key` (no MPI call: the table only uses the key).
    fn handle(key: usize) -> mpi::MPI_Datatype {
        #[cfg(sluice_mpi = "openmpi")]
        {
            key as mpi::MPI_Datatype
        }
        #[cfg(sluice_mpi = "mpich")]
        {
            key as u32 as mpi::MPI_Datatype
        }
    }

    #[test]
    fn count_bound_is_exact() {
        let reserved = (256u64 << 10) | 1;
        for size in [1u64, 3, 8, 24, 64, 4096, 1 << 20] {
            let b = count_bound(true, size, reserved);
            for count in [b.saturating_sub(2), b.saturating_sub(1), b, b + 1] {
                assert_eq!(count < b, count * size < reserved, "size {size} count {count}");
            }
        }
        assert_eq!(count_bound(false, 8, reserved), 0);
        assert_eq!(count_bound(true, 8, 0), u64::MAX);
        assert_eq!(count_bound(true, 0, reserved), u64::MAX);
    }

    /// A slot's quick bound follows the types in it: a contiguous type keeps it open, a
    /// non-contiguous one closes it, and freeing that one opens it again.
    #[test]
    fn size_hint_never_pairs_a_key_with_another_type_s_size() {
        let _one = table();
        // Two keys of one slot, far from any real handle (and from the other tests' keys).
        let base = 0x7a11_0000usize;
        let i = slot_index(base);
        let other = (base + 1..).find(|&k| slot_index(k) == i).unwrap();
        let (p, c) = (handle(base), handle(other));
        remember_size(p, 4);
        assert_eq!(hint(p).map(|h| h.size), Some(4));
        // After the reader checked the key, another type is compiled into the slot (the reader
        // then loads its size), freed, and p's size is noted again: the key reads as p's on both
        // sides of the value. The reader must notice and give up.
        let got = read_hint(
            base,
            || insert(c, Arc::new(CompiledType::new(&DataLoop::vector(4, 1, 16, DataLoop::bytes(8))))),
            || {
                remove(c);
                remember_size(p, 4);
            },
        );
        assert_eq!(got.map(|h| h.size), None, "a read across writers must not be trusted");
        assert_eq!(hint(p).map(|h| h.size), Some(4), "a quiet read finds the size again");
        remove(p);
        assert!(hint(p).is_none());
    }

    #[test]
    fn quick_limit_follows_the_slot_s_types() {
        let _one = table();
        // Three keys of one slot and one of another, far from any real handle.
        let base = 0x5eed_0000usize;
        let slot0 = slot_index(base);
        let same: Vec<usize> = (base + 1..).filter(|&k| slot_index(k) == slot0).take(2).collect();
        let other = (base + 1..).find(|&k| slot_index(k) != slot0).unwrap();
        let (contig, strided, shared) = (handle(base), handle(same[0]), handle(same[1]));
        let open = crate::protocol::limits::small_count();
        assert_eq!(quick_limit(contig), open);

        insert(contig, Arc::new(CompiledType::new(&DataLoop::contig(4, DataLoop::bytes(8)))));
        assert_eq!(quick_limit(contig), open, "contiguous: left to the MPI (pipeline off here)");
        insert(strided, Arc::new(CompiledType::new(&DataLoop::vector(4, 1, 16, DataLoop::bytes(8)))));
        assert_eq!(quick_limit(contig), 0, "a non-contiguous type in the slot closes it");
        assert_eq!(quick_limit(shared), 0, "for every handle of the slot");
        assert_eq!(quick_limit(handle(other)), open, "other slots are untouched");
        remove(strided);
        assert_eq!(quick_limit(contig), open);
        remove(contig);
        assert_eq!(quick_limit(contig), open);
        assert!(not_compiled(contig) && not_compiled(strided));
    }

    /// In a table of more than [`EXACT_REFRESH_MAX`] types a type leaving its slot does not
    /// rescan the table: the slot's limit may stay lower than needed (safe), and it opens
    /// again once the slot is empty.
    #[test]
    fn quick_limit_stays_safe_in_a_large_table() {
        let _one = table();
        let base = 0x6b1d_0000usize;
        let i = slot_index(base);
        let keys: Vec<usize> = (base..).filter(|&k| slot_index(k) == i).take(EXACT_REFRESH_MAX + 2).collect();
        let open = crate::protocol::limits::small_count();
        for &k in &keys[1..] {
            insert(handle(k), Arc::new(CompiledType::new(&DataLoop::contig(4, DataLoop::bytes(8)))));
        }
        assert_eq!(quick_limit(handle(keys[1])), open, "contiguous types leave the slot open");
        let strided = handle(keys[0]);
        insert(strided, Arc::new(CompiledType::new(&DataLoop::vector(4, 1, 16, DataLoop::bytes(8)))));
        assert_eq!(quick_limit(strided), 0, "a non-contiguous type closes the slot");
        remove(strided);
        assert!(quick_limit(handle(keys[1])) <= open, "never above a remaining type's bound");
        for &k in &keys[1..] {
            remove(handle(k));
        }
        assert_eq!(quick_limit(strided), open, "an empty slot opens again");
        assert!(not_compiled(strided));
    }
}
