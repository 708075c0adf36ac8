//! `SLUICE_LOG`: rank-prefixed log lines on stderr, each emitted with a single `write(2)` so
//! lines from concurrent ranks and threads never interleave mid-line.

use std::io::Write as _;
use std::sync::atomic::{AtomicI32, Ordering};

static RANK: AtomicI32 = AtomicI32::new(-1);

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
