//! Registration backends behind one trait, and what this host offers.
//!
//! Built: `mlock`/`munlock` (always available). Probed and reported by `sluice-info`, not built
//! yet: `cuMemHostRegister` (needs a CUDA driver; the GPU issue) and `ibv_reg_mr` (needs a verbs
//! device; `libsluice.so` does not link libibverbs, the probe `dlopen`s it).
//!
//! `mlock` does not nest: `munlock` of a bucket also unlocks pages the application locked
//! itself with `mlock`, and an application's `munlock` unlocks sluice's buckets (the table then
//! still believes them pinned; for `mlock` that only costs residency, never data). Applications
//! that lock memory themselves should leave the firehose out (`SLUICE_FIREHOSE_M=0`).

use super::PinError;

/// Pins and unpins page-aligned ranges. Implementations are called with the bucket table's lock
/// held, possibly from inside the allocator (invalidation hooks): they must not allocate.
pub trait Backend: Send {
    /// Short name (`mlock`).
    fn name(&self) -> &'static str;
    /// Pins `len` bytes at `addr` (both multiples of the page size).
    fn pin(&self, addr: usize, len: usize) -> Result<(), PinError>;
    /// Unpins a range that was pinned (possibly a part of one `pin`'s range).
    fn unpin(&self, addr: usize, len: usize) -> Result<(), PinError>;
}

/// `mlock(2)`: pages stay resident; RLIMIT_MEMLOCK bounds them unless the process has
/// `CAP_IPC_LOCK`.
pub struct Mlock;

impl Backend for Mlock {
    fn name(&self) -> &'static str {
        "mlock"
    }

    fn pin(&self, addr: usize, len: usize) -> Result<(), PinError> {
        // SAFETY: mlock only changes the residency of the pages of [addr, addr + len); it reads
        // and writes no memory of ours and fails cleanly on unmapped addresses.
        let rc = unsafe { libc::mlock(addr as *const libc::c_void, len) };
        if rc == 0 {
            Ok(())
        } else {
            Err(PinError::Backend { backend: "mlock", errno: errno() })
        }
    }

    fn unpin(&self, addr: usize, len: usize) -> Result<(), PinError> {
        // SAFETY: as for mlock: residency only.
        let rc = unsafe { libc::munlock(addr as *const libc::c_void, len) };
        if rc == 0 {
            Ok(())
        } else {
            Err(PinError::Backend { backend: "munlock", errno: errno() })
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// RLIMIT_MEMLOCK's soft limit in bytes (`None`: unlimited).
pub fn memlock_limit() -> Option<usize> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur as usize)
}

/// Whether this process may lock memory past RLIMIT_MEMLOCK (`CAP_IPC_LOCK` in its effective
/// set, from `/proc/self/status`).
pub fn has_ipc_lock() -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| u64::from_str_radix(v.trim(), 16).ok())))
        .flatten()
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// Bytes `mlock` may pin for sluice: unlimited with `CAP_IPC_LOCK` or an unlimited rlimit,
/// else the soft limit less what the process has locked already.
pub fn mlock_budget(locked_now: usize) -> Option<usize> {
    if has_ipc_lock() {
        return None;
    }
    memlock_limit().map(|l| l.saturating_sub(locked_now))
}

/// Bytes this process has locked (`VmLck` of `/proc/self/status`).
pub fn locked_bytes() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("VmLck:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok()))
        })
        .map_or(0, |kb| kb << 10)
}

/// One backend's availability on this host, for `sluice-info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    /// The registration call.
    pub name: &'static str,
    /// Whether sluice uses it.
    pub used: bool,
    /// Why or why not, in words.
    pub detail: String,
}

/// What each backend can do here. Never fails: a missing library or device is a line.
pub fn report() -> Vec<Availability> {
    let mlock = match mlock_budget(locked_bytes()) {
        None => "available, no limit (CAP_IPC_LOCK or RLIMIT_MEMLOCK unlimited)".to_string(),
        Some(b) => format!("available, RLIMIT_MEMLOCK leaves {b} bytes (ulimit -l)"),
    };
    // SAFETY: only tries to dlopen the driver library (libcuda.so...); no driver call.
    let cuda = if unsafe { cudarc::driver::sys::is_culib_present() } {
        "CUDA driver present; backend not built yet (GPU issue)".to_string()
    } else {
        "no CUDA driver".to_string()
    };
    vec![
        Availability { name: "mlock", used: true, detail: mlock },
        Availability { name: "cuMemHostRegister", used: false, detail: cuda },
        Availability { name: "ibv_reg_mr", used: false, detail: verbs_devices() },
    ]
}

/// Verbs devices, found by `dlopen`ing libibverbs (sluice does not link it).
fn verbs_devices() -> String {
    type GetList = unsafe extern "C" fn(*mut libc::c_int) -> *mut *mut libc::c_void;
    type FreeList = unsafe extern "C" fn(*mut *mut libc::c_void);
    // SAFETY: dlopen of a C library by name; a null return is handled.
    let lib = unsafe { libc::dlopen(c"libibverbs.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if lib.is_null() {
        return "libibverbs not installed".into();
    }
    // SAFETY: symbol look-ups in the handle just opened.
    let (get, free) = unsafe { (libc::dlsym(lib, c"ibv_get_device_list".as_ptr()), libc::dlsym(lib, c"ibv_free_device_list".as_ptr())) };
    let text = if get.is_null() || free.is_null() {
        "libibverbs without ibv_get_device_list".to_string()
    } else {
        // SAFETY: the symbols have these C signatures (verbs.h); the list is freed once.
        unsafe {
            let get: GetList = std::mem::transmute::<*mut libc::c_void, GetList>(get);
            let free: FreeList = std::mem::transmute::<*mut libc::c_void, FreeList>(free);
            let mut n: libc::c_int = 0;
            let list = get(&mut n);
            if list.is_null() {
                "no verbs device".to_string()
            } else {
                free(list);
                if n == 0 {
                    "no verbs device".to_string()
                } else {
                    format!("{n} verbs device(s); backend not built yet")
                }
            }
        }
    };
    // SAFETY: closes the handle opened above; nothing of it is used afterwards.
    unsafe { libc::dlclose(lib) };
    text
}
