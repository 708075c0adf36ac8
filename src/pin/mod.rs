//! The registration manager: pinned memory cached in buckets, bounded, never stale (the firehose
//! paper, `../shared/papers/firehose-dma-registration.md`, Section 3.2).
//!
//! - [`bucket`]: the local bucket table and its victim FIFO; the bound `M + MAXVICTIM`.
//! - [`backend`]: the registration calls (`mlock`), and what the host offers.
//! - [`hooks`]: invalidation, so that memory leaving the process never stays pinned or cached.
//! - [`firehose`]: the remote side: which buckets of other processes this one has mapped.
//!
//! One table per process, behind one lock: [`pin`] takes references on the buckets of a range
//! (pinning what is not pinned), [`unpin`] drops them, and the hooks call [`invalidate`]. Until
//! the first pin nothing is installed and nothing costs anything.
//!
//! Thread safety: every function may be called from any thread; the lock is never held across
//! an allocation, so the hooks, which run inside the allocator, cannot deadlock with it.

pub mod backend;
pub mod bucket;
pub mod firehose;
pub mod hooks;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use backend::{Backend, Mlock};
use bucket::{BucketTable, Counters};

/// Who holds a reference on a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// An operation of this process (the source of a put, the destination of a get).
    Local,
    /// A firehose another process mapped onto the bucket.
    Remote,
}

/// Why a range could not be pinned. Nothing stays pinned for a failed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinError {
    /// The range wraps around the end of the address space.
    Range,
    /// The buckets do not fit: every pinned bucket is in use and the limit is reached.
    Full,
    /// The backend refused (`errno`): memory not mapped, or over the process's lock limit.
    Backend {
        /// The call that failed.
        backend: &'static str,
        /// Its errno.
        errno: i32,
    },
    /// Pinning is off (`SLUICE_FIREHOSE_M=0`).
    Off,
}

impl fmt::Display for PinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PinError::Range => write!(f, "the range wraps around the address space"),
            PinError::Full => write!(f, "the registration limit M + MAXVICTIM is reached and every pinned bucket is in use"),
            PinError::Backend { backend, errno } if *errno == libc::ENOMEM || *errno == libc::EPERM => write!(
                f,
                "{backend} failed ({}): memory not mapped, or more than RLIMIT_MEMLOCK would be locked (ulimit -l; lower SLUICE_FIREHOSE_M / SLUICE_FIREHOSE_MAXVICTIM)",
                std::io::Error::from_raw_os_error(*errno)
            ),
            PinError::Backend { backend, errno } => write!(f, "{backend} failed: {}", std::io::Error::from_raw_os_error(*errno)),
            PinError::Off => write!(f, "pinning is off (SLUICE_FIREHOSE_M=0)"),
        }
    }
}

/// The tunable parameters (`SLUICE_FIREHOSE_*`), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `M`: the most memory remote firehoses may keep pinned.
    pub m: usize,
    /// `MAXVICTIM`: the most pinned memory no one references, kept for reuse.
    pub max_victim: usize,
    /// The bucket size, a power-of-two multiple of the page size.
    pub bucket: usize,
}

impl Limits {
    /// The defaults: M = 256 MiB, MAXVICTIM = 64 MiB, one page per bucket (the paper's choice).
    pub fn default_for_host() -> Limits {
        Limits { m: 256 << 20, max_victim: 64 << 20, bucket: page_size() }
    }

    /// Rounds M and MAXVICTIM down to whole buckets; checks the bucket size.
    pub fn check(self) -> Result<Limits, String> {
        let page = page_size();
        if !self.bucket.is_power_of_two() || self.bucket < page {
            return Err(format!("bucket size {} is not a power-of-two multiple of the page size {page}", self.bucket));
        }
        let down = |x: usize| x & !(self.bucket - 1);
        Ok(Limits { m: down(self.m), max_victim: down(self.max_victim), bucket: self.bucket })
    }

    /// Scales M and MAXVICTIM down, keeping their ratio, so that their sum fits in `budget`
    /// bytes (RLIMIT_MEMLOCK less what is locked already); `None` when they fit.
    pub fn fit(self, budget: Option<usize>) -> Option<Limits> {
        let budget = budget?;
        let total = self.m + self.max_victim;
        if total <= budget {
            return None;
        }
        let down = |x: usize| ((x as u128 * budget as u128 / total as u128) as usize) & !(self.bucket - 1);
        Some(Limits { m: down(self.m), max_victim: down(self.max_victim), bucket: self.bucket })
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// The process's table and backend.
struct Manager {
    table: BucketTable,
    backend: Box<dyn Backend>,
    /// The invalidation hooks are in place: unreferenced buckets may stay pinned. Without them
    /// a bucket is unpinned as soon as no one references it (`MAXVICTIM` = 0).
    caching: bool,
}

static MANAGER: Mutex<Option<Manager>> = Mutex::new(None);
static CONFIGURED: Mutex<Option<Limits>> = Mutex::new(None);
/// A copy of the table's span (`BucketTable::span`) for the hooks' lock-free test.
static SPAN_LO: AtomicUsize = AtomicUsize::new(0);
static SPAN_HI: AtomicUsize = AtomicUsize::new(0);

fn lock() -> std::sync::MutexGuard<'static, Option<Manager>> {
    MANAGER.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets the limits the table is created with (`MPI_Init`, from `SLUICE_FIREHOSE_*`); ignored
/// once something was pinned.
pub fn configure(limits: Limits) {
    *CONFIGURED.lock().unwrap_or_else(|p| p.into_inner()) = Some(limits);
}

/// Creates the manager at the first pin: the limits (clamped to what `mlock` may lock, with a
/// warning), the hooks, the table's memory. Allocates: never called with the lock held.
fn create() -> Result<Manager, PinError> {
    let wanted = CONFIGURED.lock().unwrap_or_else(|p| p.into_inner()).unwrap_or_else(Limits::default_for_host);
    let mut limits = wanted.check().unwrap_or_else(|_| Limits::default_for_host());
    if limits.m + limits.max_victim == 0 {
        return Err(PinError::Off);
    }
    if let Some(fitted) = limits.fit(backend::mlock_budget(backend::locked_bytes())) {
        log::warn!(
            "firehose: M + MAXVICTIM = {} bytes is more than mlock may lock here (RLIMIT_MEMLOCK, `ulimit -l`); using M = {} and MAXVICTIM = {} bytes",
            limits.m + limits.max_victim,
            fitted.m,
            fitted.max_victim
        );
        limits = fitted;
    }
    let caching = match hooks::install() {
        Ok(()) => true,
        Err(why) => {
            log::warn!("firehose: {why}; buckets are unpinned as soon as no operation uses them");
            limits.max_victim = 0;
            false
        }
    };
    Ok(Manager { table: BucketTable::new(limits), backend: Box::new(Mlock), caching })
}

fn publish_span(table: &BucketTable) {
    let (lo, hi) = table.span();
    SPAN_LO.store(lo, Ordering::Release);
    SPAN_HI.store(hi, Ordering::Release);
}

/// Pins every bucket of `len` bytes at `addr` (or finds it pinned) and takes a reference of kind
/// `how` on each; [`unpin`] with the same arguments drops them.
pub fn pin(addr: usize, len: usize, how: Use) -> Result<(), PinError> {
    let mut guard = lock();
    if guard.is_none() {
        drop(guard);
        let created = create()?;
        guard = lock();
        if guard.is_none() {
            *guard = Some(created);
        }
    }
    let m = guard.as_mut().expect("created above");
    let r = m.table.acquire(m.backend.as_ref(), addr, len, how);
    publish_span(&m.table);
    r
}

/// Drops the references [`pin`] took.
pub fn unpin(addr: usize, len: usize, how: Use) {
    if let Some(m) = lock().as_mut() {
        m.table.release(m.backend.as_ref(), addr, len, how);
        publish_span(&m.table);
    }
}

/// Forgets and unpins every bucket overlapping `len` bytes at `addr` (from the hooks, before the
/// memory goes). A range outside every pinned bucket costs two atomic loads.
pub fn invalidate(addr: usize, len: usize) {
    let (lo, hi) = (SPAN_LO.load(Ordering::Acquire), SPAN_HI.load(Ordering::Acquire));
    if lo >= hi || addr >= hi || addr.saturating_add(len) <= lo {
        return;
    }
    if let Some(m) = lock().as_mut() {
        m.table.invalidate(m.backend.as_ref(), addr, len);
        publish_span(&m.table);
    }
}

/// Unpins every bucket no one references (`MPI_Finalize`).
pub fn drain() {
    if let Some(m) = lock().as_mut() {
        m.table.drain_victims(m.backend.as_ref());
        publish_span(&m.table);
    }
}

/// The manager's state, for statistics, `sluice-info` and tests.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    /// The limits in force (after fitting to RLIMIT_MEMLOCK).
    pub limits: Limits,
    /// Bytes pinned now.
    pub pinned: usize,
    /// Bytes in the victim FIFO now.
    pub victims: usize,
    /// Bytes referenced by remote firehoses now.
    pub remote: usize,
    /// Whether the invalidation hooks are in place.
    pub caching: bool,
    /// Hits, misses, pins, unpins, invalidations, high-water mark.
    pub counters: Counters,
}

/// The state now (`None`: nothing was ever pinned).
pub fn snapshot() -> Option<Snapshot> {
    lock().as_ref().map(|m| Snapshot {
        limits: m.table.limits(),
        pinned: m.table.pinned_bytes(),
        victims: m.table.victim_bytes(),
        remote: m.table.remote_bytes(),
        caching: m.caching,
        counters: m.table.counters(),
    })
}

/// Checks the table's invariants (tests).
pub fn check() -> Result<(), String> {
    lock().as_ref().map_or(Ok(()), |m| m.table.check())
}
