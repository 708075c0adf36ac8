//! MPI_Init, MPI_Init_thread and MPI_Finalize: start sluice after the MPI is up, gather the
//! statistics before it goes down.

use std::ffi::{c_char, c_int};

use super::app_level;
use crate::config::Config;
use crate::ffi::{consts, errclass, mpi, next};
use crate::runtime::Mode;
use crate::transfer::runtime::progress;
use crate::{errors, logging, runtime, stats};

/// After a successful MPI initialization: start sluice, report a bad configuration through
/// MPI_COMM_WORLD's error handler (fatal by default) with MPI_ERR_ARG.
fn after_init(rc: c_int, t0: u64, mpi_ns: u64) -> c_int {
    if rc != errclass::SUCCESS {
        return rc;
    }
    crate::protocol::p2p::waitall_guard::arm();
    let started = start().map(|()| start_pipeline().and_then(|()| start_progress_thread()));
    match started {
        Ok(Err(msg)) => errors::raise(consts::comm_world(), errclass::ERR_ARG, &format!("MPI_Init: {msg}")),
        Ok(Ok(())) => {
            // Statistics start inside this call, so MPI_Init records itself once they are on.
            if runtime::config().is_some_and(|c| c.stats) {
                stats::record(stats::Family::Init, 0, stats::now_ns() - t0, mpi_ns);
            }
            rc
        }
        Err(e) => errors::raise(consts::comm_world(), errclass::ERR_ARG, &format!("MPI_Init: {e}")),
    }
}

/// The mode a started, enabled sluice runs in. Device buffers (`transfer::gpu` armed) need the
/// full path too: the fast path would hand them to the MPI unchecked.
fn active_mode(c: &Config) -> Mode {
    if c.stats || c.profile.is_some() || c.test_panic.is_some() || crate::transfer::gpu::armed() {
        Mode::Instrumented
    } else {
        Mode::Active
    }
}

/// Starts sluice once MPI is initialized: reads and validates the configuration, sets up
/// logging and statistics. Idempotent. On a bad setting sluice stays in pass-through and the
/// error is returned for MPI_Init to report.
pub fn start() -> Result<(), crate::config::ConfigError> {
    if !runtime::claim_start() {
        return Ok(());
    }
    let mut rank = -1;
    // SAFETY: MPI is initialized (callers check); writes one int.
    unsafe { mpi::PMPI_Comm_rank(consts::comm_world(), &mut rank) };
    logging::set_rank(rank);
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            runtime::set_mode(Mode::PassThrough);
            return Err(e);
        }
    };
    logging::init(cfg.log.filter());
    logging::set_plans(cfg.log_plans);
    if cfg.disable {
        runtime::set_mode(Mode::PassThrough);
        runtime::set_config(cfg);
        return Ok(());
    }
    if rank == 0 {
        for v in Config::unknown_vars(std::env::vars().map(|(k, _)| k)) {
            log::warn!("unknown variable {v} ignored (see sluice-info for the accepted ones)");
        }
    }
    stats::set_timing(cfg.stats);
    if let Some(prefix) = cfg.profile.as_deref() {
        super::profile::start(prefix);
    }
    crate::transfer::staging::set_budget(cfg.staging_cache);
    crate::pin::configure(cfg.firehose);
    super::hints::create_keyvals();
    super::comm_hints::create_keyval();
    super::comm_facts::create_keyval();
    if crate::transfer::gpu::arm(cfg.gpu) {
        crate::transfer::gpu::ipc::configure(cfg.gpu_ipc_pool);
        log::info!("CUDA driver present: device buffers are staged through host memory (SLUICE_GPU=off to skip the checks)");
    }
    log::info!("sluice {} active ({} build)", env!("CARGO_PKG_VERSION"), crate::ffi::FLAVOR);
    runtime::set_mode(active_mode(&cfg));
    runtime::set_config(cfg);
    super::datatype::compile_pair_types();
    Ok(())
}

/// `sluice_enable()`: resumes interception if sluice started and was not disabled by
/// configuration. Returns whether sluice is now active.
pub fn enable() -> bool {
    match (runtime::config(), runtime::mode()) {
        (Some(c), Mode::PassThrough) if !c.disable && crate::errors::mpi_is_active() => {
            runtime::set_mode(active_mode(c));
            stats::set_timing(c.stats);
            // Switching off dropped every compiled type (`datatype::forget_all`), these too.
            super::datatype::compile_pair_types();
            true
        }
        (_, m) => matches!(m, Mode::Active | Mode::Instrumented),
    }
}

/// Learns which ranks share a node, agrees on the pipelined protocol's reserved size with every
/// rank (collective: every rank takes part, a disabled sluice too) and starts the pipeline.
fn start_pipeline() -> Result<(), String> {
    crate::transfer::node::start();
    crate::protocol::p2p::pipeline::start(runtime::config().filter(|c| !c.disable))
}

/// `SLUICE_PROGRESS_THREAD=1` on an enabled sluice, read before the MPI starts (the rest of
/// the configuration is read, and reported, once it is up): the MPI must then be initialized
/// at `MPI_THREAD_MULTIPLE`, since the progress thread calls it.
fn wants_progress_thread() -> bool {
    crate::config::Config::from_env().is_ok_and(|c| c.progress_thread && !c.disable)
}

/// Starts the progress thread if the configuration asks for it; an error when the MPI does not
/// run at `MPI_THREAD_MULTIPLE` (it was asked for; an MPI built without thread support gives
/// less) or the thread cannot be created.
fn start_progress_thread() -> Result<(), String> {
    if !runtime::config().is_some_and(|c| c.progress_thread && !c.disable) {
        return Ok(());
    }
    let mut level = crate::ffi::THREAD_SINGLE;
    // SAFETY: MPI is initialized; writes one int.
    unsafe { mpi::PMPI_Query_thread(&mut level) };
    if level < crate::ffi::THREAD_MULTIPLE {
        return Err(format!(
            "SLUICE_PROGRESS_THREAD=1 needs MPI_THREAD_MULTIPLE, and the MPI provides only thread level {level}; unset SLUICE_PROGRESS_THREAD or use an MPI built with thread support"
        ));
    }
    progress::thread::start(crate::protocol::p2p::pipeline::nudge)
        .map_err(|e| format!("SLUICE_PROGRESS_THREAD=1: cannot start the progress thread: {e}"))
}

/// Initializes the MPI at `MPI_THREAD_MULTIPLE` for the progress thread, where the application
/// asked for `app` (`MPI_Init`: `MPI_THREAD_SINGLE`, both MPIs' default). The application is
/// told the level it asked for, capped by what the MPI gives, as the bare MPI answers
/// (`MPI_Query_thread` too, [`query_thread`]): it cannot tell the level was raised.
///
/// # Safety
/// As `MPI_Init_thread`.
unsafe fn init_raised(argc: *mut c_int, argv: *mut *mut *mut c_char, app: c_int, provided: *mut c_int) -> c_int {
    let mut got = crate::ffi::THREAD_SINGLE;
    // SAFETY: arguments forwarded; `got` is a local int.
    let rc = unsafe { next::MPI_Init_thread(argc, argv, crate::ffi::THREAD_MULTIPLE, &mut got) };
    if rc == errclass::SUCCESS {
        let shown = app.min(got);
        app_level::record(shown);
        if !provided.is_null() {
            // SAFETY: the application's output argument.
            unsafe { *provided = shown };
        }
    }
    rc
}

/// `MPI_Init`; `MPI_Init_thread` at `MPI_THREAD_MULTIPLE` for a progress thread.
///
/// # Safety
/// As `MPI_Init`: `argc`/`argv` are null or the program's arguments.
pub unsafe fn init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let t0 = stats::now_ns();
    crate::protocol::rma::before_mpi_init();
    let rc = if wants_progress_thread() {
        // SAFETY: forwarded contract; no output argument.
        unsafe { init_raised(argc, argv, crate::ffi::THREAD_SINGLE, std::ptr::null_mut()) }
    } else {
        // SAFETY: arguments forwarded unchanged.
        unsafe { next::MPI_Init(argc, argv) }
    };
    after_init(rc, t0, stats::now_ns() - t0)
}

/// `MPI_Init_thread`; at `MPI_THREAD_MULTIPLE` for a progress thread ([`init_raised`]).
///
/// # Safety
/// As `MPI_Init_thread`.
pub unsafe fn init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int {
    let t0 = stats::now_ns();
    crate::protocol::rma::before_mpi_init();
    let rc = if wants_progress_thread() {
        // SAFETY: forwarded contract.
        unsafe { init_raised(argc, argv, required, provided) }
    } else {
        // SAFETY: arguments forwarded unchanged.
        unsafe { next::MPI_Init_thread(argc, argv, required, provided) }
    };
    after_init(rc, t0, stats::now_ns() - t0)
}

/// `MPI_Query_thread`: the level the application was told at initialization when sluice raised
/// the MPI's for its progress thread, else the MPI's answer.
///
/// # Safety
/// As `MPI_Query_thread`.
pub unsafe fn query_thread(provided: *mut c_int) -> c_int {
    let shown = app_level::shown();
    if shown < 0 || provided.is_null() {
        // SAFETY: forwarded unchanged.
        return unsafe { next::MPI_Query_thread(provided) };
    }
    // SAFETY: the application's output argument (checked non-null).
    unsafe { *provided = shown };
    errclass::SUCCESS
}

/// `MPI_Finalize`: print the job-wide statistics (collective over MPI_COMM_WORLD, like
/// MPI_Finalize itself), then stop intercepting and finalize the MPI.
///
/// # Safety
/// As `MPI_Finalize`.
pub unsafe fn finalize() -> c_int {
    // From here on only this thread calls MPI for sluice (the drains below).
    progress::thread::stop();
    // Before anything that blocks in the MPI: other processes' puts and gets may still need
    // this one to serve their move requests.
    crate::protocol::rma::finish();
    if runtime::config().is_some_and(|c| c.stats) && errors::mpi_is_active() {
        gather_and_print_stats();
    }
    if crate::protocol::profile::on() && errors::mpi_is_active() {
        crate::protocol::profile::finish();
    }
    crate::protocol::device::pending::finalize();
    finish_p2p();
    // Forms kept for types the application has freed go now, while MPI calls are allowed: a
    // form still learning its engine choice holds an MPI type (a prefix of its element), which
    // MPICH would report as leaked.
    crate::datatype::form_cache::clear();
    crate::protocol::hints::free_keyvals();
    crate::protocol::comm_hints::free_keyval();
    crate::protocol::comm_facts::free_keyval();
    crate::protocol::parallel::shutdown();
    crate::pin::drain();
    runtime::stop();
    // SAFETY: forwarded unchanged.
    unsafe { next::MPI_Finalize() }
}

/// Completes what the point-to-point protocol still owns before the MPI goes away: requests
/// the application freed while active are waited for (their data is delivered), then leaks
/// are reported and idle staging memory is released.
fn finish_p2p() {
    use crate::protocol::p2p::ops;
    use crate::transfer::staging;
    ops::progress_detached(true);
    crate::protocol::p2p::pipeline::finish();
    crate::protocol::byte_twin::forget_all();
    crate::transfer::netpath::free_cached();
    let live = ops::clear();
    if live > 0 {
        log::warn!("{live} point-to-point request(s) of non-contiguous data were never completed or freed by the application");
    }
    staging::trim();
}

/// The registration manager keeps its own counters (in its table, updated from the memory
/// hooks); they join the report here.
fn fold_pin_counters() {
    let Some(p) = crate::pin::snapshot() else { return };
    let (c, b) = (p.counters, p.limits.bucket as u64);
    stats::add(stats::Family::PinHit, c.hits, c.hits * b);
    stats::add(stats::Family::PinMiss, c.misses, c.misses * b);
    stats::add(stats::Family::Pin, c.pins, c.misses * b);
    stats::add(stats::Family::Unpin, c.unpins, c.unpins * b);
    stats::add(stats::Family::PinInvalidated, c.invalidated, c.invalidated * b);
    stats::add(stats::Family::PinHigh, 1, c.pinned_high as u64);
    stats::add(stats::Family::FirehoseServed, crate::protocol::rma::served(), 0);
}

/// Gathers every rank's counters to rank 0 over `PMPI_Gather` (sluice's own traffic goes
/// straight to PMPI, never through tools stacked below) and prints one table there.
pub fn gather_and_print_stats() {
    let world = consts::comm_world();
    let (mut rank, mut size) = (0, 0);
    fold_pin_counters();
    let mine = stats::snapshot();
    // SAFETY: MPI is active; out-parameters are valid ints.
    unsafe {
        mpi::PMPI_Comm_rank(world, &mut rank);
        mpi::PMPI_Comm_size(world, &mut size);
    }
    let mut all = vec![0u64; if rank == 0 { stats::LEN * size as usize } else { 0 }];
    // SAFETY: `mine` holds LEN u64 values; on rank 0 `all` holds LEN per rank. MPI_UINT64_T
    // matches u64. Every rank of MPI_COMM_WORLD calls this from MPI_Finalize (collective).
    let rc = unsafe {
        mpi::PMPI_Gather(
            mine.as_ptr().cast(),
            stats::LEN as c_int,
            consts::uint64(),
            all.as_mut_ptr().cast(),
            stats::LEN as c_int,
            consts::uint64(),
            0,
            world,
        )
    };
    if rc != errclass::SUCCESS {
        log::warn!("statistics gather failed (MPI error {rc}); printing this rank's only");
        all = mine.to_vec();
    }
    if rank == 0 || rc != errclass::SUCCESS {
        logging::write_raw(stats::format_report(&all, crate::ffi::FLAVOR).as_bytes());
    }
}
