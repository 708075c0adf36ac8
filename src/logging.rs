//! `SLUICE_LOG`: rank-prefixed log lines on stderr, each emitted with a single `write(2)` so
//! lines from concurrent ranks and threads never interleave mid-line.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

static RANK: AtomicI32 = AtomicI32::new(-1);

/// `SLUICE_LOG` holds `plan`.
static PLANS: AtomicBool = AtomicBool::new(false);

/// The plans logged so far, by key (each is logged once per process).
static PLANS_SEEN: Mutex<Option<rustc_hash::FxHashSet<u64>>> = Mutex::new(None);

/// Turns plan logging on or off (`SLUICE_LOG=plan`).
pub fn set_plans(on: bool) {
    PLANS.store(on, Ordering::Relaxed);
}

/// Whether plans are logged: one relaxed load, so callers may ask on every decision.
#[inline]
pub fn plans() -> bool {
    PLANS.load(Ordering::Relaxed)
}

/// Logs `plan: <what()>` the first time this process sees `key`, when plans are logged.
/// `key` names the decision (its inputs' classes), so a steady stream of equal messages logs one
/// line, not one per call.
#[inline]
pub fn plan_once(key: u64, what: impl FnOnce() -> String) {
    if plans() {
        plan_once_slow(key, what);
    }
}

#[cold]
fn plan_once_slow(key: u64, what: impl FnOnce() -> String) {
    let new = PLANS_SEEN.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Default::default).insert(key);
    if new {
        write_line(&format!("plan: {}", what()));
    }
}

/// A key for [`plan_once`] from the decision's inputs.
pub fn plan_key(parts: impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(parts)
}

/// The power-of-two size class of `bytes` (0 for 0 and 1), for plan keys: a log line per class
/// rather than per size.
pub fn size_class(bytes: usize) -> u32 {
    usize::BITS - bytes.max(1).leading_zeros() - 1
}

struct Logger;

static LOGGER: Logger = Logger;

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            write_line(&format!("{}: {}", r.level().as_str().to_ascii_lowercase(), r.args()));
        }
    }

    fn flush(&self) {}
}

/// Installs the logger (idempotent) with the given level.
pub fn init(level: log::LevelFilter) {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}

/// Records this process's rank in `MPI_COMM_WORLD` for the line prefix.
pub fn set_rank(rank: i32) {
    RANK.store(rank, Ordering::Relaxed);
}

/// Formats the line prefix: `[sluice r3]` once the rank is known, `[sluice pid 1234]` before.
pub fn prefix() -> String {
    match RANK.load(Ordering::Relaxed) {
        r if r >= 0 => format!("[sluice r{r}]"),
        _ => format!("[sluice pid {}]", std::process::id()),
    }
}

/// Writes `prefix msg\n` to stderr with one `write(2)` (whatever the log level).
pub fn write_line(msg: &str) {
    let mut line = Vec::with_capacity(msg.len() + 24);
    let _ = write!(line, "{} {}", prefix(), msg);
    if !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    write_raw(&line);
}

/// Writes bytes to stderr with a single `write(2)` (retrying only on a short write).
pub fn write_raw(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe a live slice; fd 2 may be closed, in which
        // case write returns -1 and we give up.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefix_names_rank_once_known() {
        assert!(super::prefix().starts_with("[sluice"));
        super::set_rank(3);
        assert_eq!(super::prefix(), "[sluice r3]");
        super::set_rank(-1);
    }
}
