//! Process-wide sluice state: whether sluice is active, and its configuration. State only: the
//! start-up that fills it in is `protocol::init::start`, so every layer may read it.
//!
//! The mode is one atomic byte read on every intercepted call (relaxed: it only changes in
//! MPI_Init, MPI_Finalize and the `sluice_enable`/`sluice_disable` extension calls).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;

use crate::config::Config;
use crate::stats;

/// What the interception layer does with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// MPI not initialized through sluice yet: init calls run, others check for lazy init.
    Uninit = 0,
    /// Pure pass-through (`SLUICE_DISABLE=1`, `sluice_disable()`, or after MPI_Finalize).
    PassThrough = 1,
    /// Normal operation: calls go to their protocol handlers.
    Active = 2,
    /// Active, plus statistics and fault injection.
    Instrumented = 3,
}

static MODE: AtomicU8 = AtomicU8::new(Mode::Uninit as u8);
static CONFIG: OnceLock<Config> = OnceLock::new();
static STARTED: AtomicBool = AtomicBool::new(false);

/// The current mode.
#[inline(always)]
pub fn mode() -> Mode {
    match MODE.load(Ordering::Relaxed) {
        0 => Mode::Uninit,
        1 => Mode::PassThrough,
        2 => Mode::Active,
        _ => Mode::Instrumented,
    }
}

pub(crate) fn set_mode(m: Mode) {
    MODE.store(m as u8, Ordering::Relaxed);
}

/// The configuration read at start-up, if sluice has started.
pub fn config() -> Option<&'static Config> {
    CONFIG.get()
}

/// Claims the one start of sluice (`protocol::init::start`): true the first time only.
pub(crate) fn claim_start() -> bool {
    !STARTED.swap(true, Ordering::AcqRel)
}

/// Keeps the configuration read at start-up (the first one stays).
pub(crate) fn set_config(cfg: Config) {
    let _ = CONFIG.set(cfg);
}

/// Stops interception after MPI_Finalize: every later call passes through.
pub fn stop() {
    set_mode(Mode::PassThrough);
    stats::set_timing(false);
}

/// `sluice_disable()`: makes every following call a pure pass-through.
pub fn disable() {
    if mode() != Mode::Uninit {
        set_mode(Mode::PassThrough);
        stats::set_timing(false);
    }
}
