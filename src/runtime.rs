//! Process-wide sluice state: whether sluice is active, and its configuration.
//!
//! The mode is one atomic byte read on every intercepted call (relaxed: it only changes in
//! MPI_Init, MPI_Finalize and the `sluice_enable`/`sluice_disable` extension calls).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;

use crate::config::Config;
use crate::ffi::{consts, mpi};
use crate::{logging, stats};

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

fn set_mode(m: Mode) {
    MODE.store(m as u8, Ordering::Relaxed);
}

/// The configuration read at start-up, if sluice has started.
pub fn config() -> Option<&'static Config> {
    CONFIG.get()
}

/// The mode a started, enabled sluice runs in. Device buffers (`transfer::gpu` armed) need the
/// full path too: the fast path would hand them to the MPI unchecked.
fn active_mode(c: &Config) -> Mode {
    if c.stats || c.test_panic.is_some() || crate::transfer::gpu::armed() {
        Mode::Instrumented
    } else {
        Mode::Active
    }
}

/// Starts sluice once MPI is initialized: reads and validates the configuration, sets up
/// logging and statistics. Idempotent. On a bad setting sluice stays in pass-through and the
/// error is returned for MPI_Init to report.
pub fn start() -> Result<(), crate::config::ConfigError> {
    if STARTED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    let mut rank = -1;
    // SAFETY: MPI is initialized (callers check); writes one int.
    unsafe { mpi::PMPI_Comm_rank(consts::comm_world(), &mut rank) };
    logging::set_rank(rank);
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            set_mode(Mode::PassThrough);
            return Err(e);
        }
    };
    logging::init(cfg.log.filter());
    logging::set_plans(cfg.log_plans);
    if cfg.disable {
        set_mode(Mode::PassThrough);
        let _ = CONFIG.set(cfg);
        return Ok(());
    }
    if rank == 0 {
        for v in Config::unknown_vars(std::env::vars().map(|(k, _)| k)) {
            log::warn!("unknown variable {v} ignored (see sluice-info for the accepted ones)");
        }
    }
    stats::set_timing(cfg.stats);
    crate::transfer::staging::set_budget(cfg.staging_cache);
    crate::protocol::hints::create_keyvals();
    crate::protocol::comm_hints::create_keyval();
    if crate::transfer::gpu::arm(cfg.gpu) {
        log::info!("CUDA driver present: device buffers are staged through host memory (SLUICE_GPU=off to skip the checks)");
    }
    log::info!("sluice {} active ({} build)", env!("CARGO_PKG_VERSION"), crate::ffi::FLAVOR);
    set_mode(active_mode(&cfg));
    let _ = CONFIG.set(cfg);
    crate::protocol::datatype::compile_pair_types();
    Ok(())
}

/// Stops interception after MPI_Finalize: every later call passes through.
pub fn stop() {
    set_mode(Mode::PassThrough);
    stats::set_timing(false);
}

/// `sluice_enable()`: resumes interception if sluice started and was not disabled by
/// configuration. Returns whether sluice is now active.
pub fn enable() -> bool {
    match (config(), mode()) {
        (Some(c), Mode::PassThrough) if !c.disable && crate::errors::mpi_is_active() => {
            set_mode(active_mode(c));
            stats::set_timing(c.stats);
            // Switching off dropped every compiled type (`datatype::forget_all`), these too.
            crate::protocol::datatype::compile_pair_types();
            true
        }
        (_, m) => matches!(m, Mode::Active | Mode::Instrumented),
    }
}

/// `sluice_disable()`: makes every following call a pure pass-through.
pub fn disable() {
    if mode() != Mode::Uninit {
        set_mode(Mode::PassThrough);
        stats::set_timing(false);
    }
}
