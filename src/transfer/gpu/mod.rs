//! Device memory (the isometry model's FBM) for the layers above: which buffers live on a CUDA
//! device, host staging for them (pinned, REG, when the driver gives pinned memory), and the
//! copies between the two on one dedicated stream per context.
//!
//! The driver is loaded at run time (cudarc's dynamic loading). Without a driver on the machine
//! the layer stays off ([`armed`] is false) and nothing below is ever called. sluice never calls
//! `cuInit`: a process that never initialized CUDA owns no device memory, and the driver answers
//! its pointer queries with `CUDA_ERROR_NOT_INITIALIZED`, which reads as host memory.
//!
//! Copies are synchronous towards the caller: when a copy function returns, the bytes are where
//! they were sent (the MPI may read a staged send buffer, the application may use a received
//! device buffer). The dedicated streams are created with default flags, so they also wait for
//! work the application queued on the legacy default stream, as a hand-written
//! `cudaMemcpy` before the MPI call would.

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

use cudarc::driver::sys;

use crate::transfer::hollow::Mapping;

pub mod ipc;
pub mod mover;
pub mod pieces;

pub use pieces::Pieces;

static ARMED: AtomicBool = AtomicBool::new(false);
/// The device of the last device buffer found, plus one (0: none yet): this process uses CUDA
/// and may open another process's device memory there ([`ipc`]).
static SEEN: AtomicI32 = AtomicI32::new(0);

/// The device this process last passed a buffer of, if it ever did.
pub fn seen_ordinal() -> Option<i32> {
    Some(SEEN.load(Ordering::Relaxed) - 1).filter(|&o| o >= 0)
}

/// Whether device buffers are looked for at all (a CUDA driver is present and `SLUICE_GPU`
/// allows it). One relaxed load: the host-only cost of this layer on machines with a driver.
#[inline(always)]
pub fn armed() -> bool {
    ARMED.load(Ordering::Relaxed)
}

/// Arms the layer if a CUDA driver can be loaded (`want`: `SLUICE_GPU` is not `off`). Returns
/// whether it is armed.
pub fn arm(want: bool) -> bool {
    // SAFETY: only tries to dlopen the driver library candidates; calls no driver function.
    let present = want && std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
    ARMED.store(present, Ordering::Relaxed);
    present
}

/// A CUDA driver error, with the driver's own description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaError {
    pub what: &'static str,
    pub code: sys::CUresult,
}

impl std::fmt::Display for CudaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: writes a pointer to a static string owned by the driver (or leaves it null).
        let ok = unsafe { sys::cuGetErrorString(self.code, &mut s) } == sys::CUresult::CUDA_SUCCESS;
        // SAFETY: on success `s` is a NUL-terminated static string.
        let text = if ok && !s.is_null() { unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned() } else { String::new() };
        write!(f, "{} failed: {:?} {}", self.what, self.code, text)
    }
}

fn check(what: &'static str, code: sys::CUresult) -> Result<(), CudaError> {
    if code == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError { what, code })
    }
}

/// One device allocation, as the driver describes the memory around an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRange {
    /// First byte of the allocation.
    pub base: usize,
    /// Its length in bytes.
    pub len: usize,
    /// The device it lives on.
    pub ordinal: i32,
    /// The context it was allocated in (0: none, e.g. stream-ordered pools; the device's
    /// primary context serves it).
    ctx: usize,
}

impl DeviceRange {
    /// Whether `[addr, addr + len)` lies inside the allocation.
    pub fn holds(&self, addr: usize, len: usize) -> bool {
        addr >= self.base && addr.checked_add(len).is_some_and(|end| end <= self.base + self.len)
    }
}

/// The device allocation holding `addr`, or `None` for host memory (pageable, pinned or
/// managed: the MPI reads all three itself) and in a process that never initialized CUDA.
pub fn device_range(addr: usize) -> Option<DeviceRange> {
    if !armed() || addr == 0 {
        return None;
    }
    use sys::CUpointer_attribute as A;
    let mut attrs = [
        A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        A::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        A::CU_POINTER_ATTRIBUTE_CONTEXT,
        A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        A::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let (mut memtype, mut managed, mut ordinal): (c_uint, c_uint, i32) = (0, 0, -1);
    let (mut ctx, mut start, mut size): (sys::CUcontext, sys::CUdeviceptr, usize) = (std::ptr::null_mut(), 0, 0);
    let mut data: [*mut c_void; 6] = [
        (&mut memtype as *mut c_uint).cast(),
        (&mut managed as *mut c_uint).cast(),
        (&mut ordinal as *mut i32).cast(),
        (&mut ctx as *mut sys::CUcontext).cast(),
        (&mut start as *mut sys::CUdeviceptr).cast(),
        (&mut size as *mut usize).cast(),
    ];
    // SAFETY: six attributes, each written into the matching local of the size the driver
    // documents; a non-CUDA address gets default (zero) values and CUDA_SUCCESS.
    let rc = unsafe { sys::cuPointerGetAttributes(attrs.len() as c_uint, attrs.as_mut_ptr(), data.as_mut_ptr(), addr as sys::CUdeviceptr) };
    if rc != sys::CUresult::CUDA_SUCCESS || memtype != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as c_uint || managed != 0 {
        return None;
    }
    if SEEN.load(Ordering::Relaxed) != ordinal + 1 {
        SEEN.store(ordinal + 1, Ordering::Relaxed);
    }
    Some(DeviceRange { base: start as usize, len: size, ordinal, ctx: ctx as usize })
}

/// The context and stream sluice copies with for one device allocation's context.
struct Lane {
    ctx: usize,
    stream: usize,
}

static LANES: Mutex<Vec<Lane>> = Mutex::new(Vec::new());

/// Makes `range`'s context current on this thread for the duration of `f`, and gives `f`
/// sluice's stream for it and the context (the key of per-context state).
fn with_lane<T>(range: &DeviceRange, f: impl FnOnce(sys::CUstream, usize) -> Result<T, CudaError>) -> Result<T, CudaError> {
    let ctx = if range.ctx != 0 { range.ctx as sys::CUcontext } else { primary_context(range.ordinal)? };
    // SAFETY: a live context (the allocation's, or the device's retained primary context).
    check("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(ctx) })?;
    let result = stream_for(ctx as usize).and_then(|s| f(s, ctx as usize));
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops the context pushed above.
    unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    result
}

fn primary_context(ordinal: i32) -> Result<sys::CUcontext, CudaError> {
    static PRIMARY: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());
    let mut g = PRIMARY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, c)) = g.iter().find(|(o, _)| *o == ordinal) {
        return Ok(c as sys::CUcontext);
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: writes one device handle; the ordinal came from the driver.
    check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: retains the primary context (kept for the life of the process).
    check("cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
    g.push((ordinal, ctx as usize));
    Ok(ctx)
}

/// sluice's stream in context `ctx` (current on this thread), created once.
fn stream_for(ctx: usize) -> Result<sys::CUstream, CudaError> {
    let mut g = LANES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = g.iter().find(|l| l.ctx == ctx) {
        return Ok(l.stream as sys::CUstream);
    }
    let mut s: sys::CUstream = std::ptr::null_mut();
    // SAFETY: creates a stream in the current context (flags 0: it waits for the legacy
    // default stream, see the module comment).
    check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, 0) })?;
    g.push(Lane { ctx, stream: s as usize });
    Ok(s)
}

/// Copies `len` bytes from device address `src` (inside `range`) to host memory at `dst`.
///
/// # Safety
/// `dst` is valid for `len` bytes of writes; `[src, src + len)` lies inside `range`.
pub unsafe fn to_host(dst: *mut u8, src: usize, len: usize, range: &DeviceRange) -> Result<(), CudaError> {
    // SAFETY: forwarded contract.
    unsafe { copy_in_lane("cuMemcpyAsync (device to host)", dst as usize, src, len, range) }
}

/// Copies `len` bytes from host memory at `src` to device address `dst` (inside `range`).
///
/// # Safety
/// `src` is valid for `len` bytes of reads; `[dst, dst + len)` lies inside `range`.
pub unsafe fn to_device(dst: usize, src: *const u8, len: usize, range: &DeviceRange) -> Result<(), CudaError> {
    // SAFETY: forwarded contract.
    unsafe { copy_in_lane("cuMemcpyAsync (host to device)", dst, src as usize, len, range) }
}

/// Copies `len` bytes from `src` to `dst` (device or host addresses valid in `range`'s
/// context: unified addressing tells the direction) on sluice's stream of that context, and
/// waits for the copy (`what` names it in an error).
///
/// # Safety
/// Both ranges are valid for the copy in that context and do not overlap.
unsafe fn copy_in_lane(what: &'static str, dst: usize, src: usize, len: usize, range: &DeviceRange) -> Result<(), CudaError> {
    if len == 0 {
        return Ok(());
    }
    with_lane(range, |s, _| {
        // SAFETY: forwarded contract; the stream is synchronized before the buffers are used.
        check(what, unsafe { sys::cuMemcpyAsync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, len, s) })?;
        // SAFETY: a stream of this context.
        check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(s) })
    })
}

/// Host memory that staged device data lives in: pinned by the driver when it can be (so the
/// copy engine reads and writes it directly), ordinary memory otherwise.
///
/// On Open MPI the memory is *guarded*, as sluice's receive staging is (`transfer::staging`):
/// Open MPI 4.1 writes a whole contiguous message into a receive buffer even past a truncated
/// receive's count, so the usable bytes sit at the start of a large `MAP_NORESERVE` reservation
/// (the head pinned with `cuMemHostRegister`) and an overrun lands in sluice's own untouched
/// address space instead of the heap.
#[derive(Debug)]
pub struct HostBuffer {
    ptr: NonNull<u8>,
    cap: usize,
    /// Pinned (with `cuMemHostAlloc`, or registered when guarded).
    pinned: bool,
    /// The guarded reservation the bytes live in (else a `cuMemHostAlloc` allocation when
    /// pinned, or a leaked boxed slice of `cap` bytes).
    guard: Option<Mapping>,
}

// SAFETY: the buffer is exclusively owned memory; nothing in it is tied to a thread.
unsafe impl Send for HostBuffer {}
// SAFETY: shared references only hand out its address and sizes; writing through the address
// is the owner's business (an `unsafe` contract at every such write).
unsafe impl Sync for HostBuffer {}

/// Idle pinned buffers kept for reuse, and their total size.
static POOL: Mutex<(Vec<HostBuffer>, usize)> = Mutex::new((Vec::new(), 0));
/// Most pinned bytes kept idle in [`POOL`].
const POOL_BYTES: usize = 256 << 20;
/// Address space reserved behind a guarded buffer (virtual only).
const GUARD_RESERVE: usize = 1 << 36;

/// The capacity [`HostBuffer::new`] gives a request of `len` bytes.
fn size_class(len: usize) -> usize {
    len.max(4096).checked_next_power_of_two().unwrap_or(len)
}

/// Whether host copies are guarded against overrunning receives (the MPI writes past them).
const GUARDED: bool = cfg!(sluice_mpi = "openmpi");

impl HostBuffer {
    /// A buffer of at least `len` bytes (contents unspecified), pinned in `range`'s context
    /// when the driver allows it. Sizes are rounded up to a power of two (at least a page), so
    /// that an idle buffer of the same class serves the next request: pinning costs far more
    /// than the copy of a small message.
    pub fn new(len: usize, range: &DeviceRange) -> HostBuffer {
        let cap = size_class(len);
        {
            let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
            let (list, total) = &mut *g;
            if let Some(i) = list.iter().position(|b| b.cap == cap) {
                let b = list.swap_remove(i);
                *total -= b.cap;
                return b;
            }
        }
        if GUARDED {
            if let Some(m) = guarded(cap) {
                let p = m.ptr();
                let pinned = with_lane(range, |_, _| {
                    // SAFETY: pins the first `cap` bytes of the reservation (committed on first
                    // touch), unregistered before the mapping goes away.
                    check("cuMemHostRegister", unsafe { sys::cuMemHostRegister_v2(p.cast(), cap, sys::CU_MEMHOSTREGISTER_PORTABLE) })
                })
                .is_ok();
                let ptr = NonNull::new(p).expect("mapped memory");
                return HostBuffer { ptr, cap, pinned, guard: Some(m) };
            }
        }
        let pinned = with_lane(range, |_, _| {
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: allocates `cap` bytes of portable pinned memory in the current context.
            check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut p, cap, sys::CU_MEMHOSTALLOC_PORTABLE) })?;
            Ok(p)
        });
        match pinned.ok().and_then(|p| NonNull::new(p.cast::<u8>())) {
            Some(ptr) => HostBuffer { ptr, cap, pinned: true, guard: None },
            None => {
                let b: Box<[u8]> = vec![0u8; cap].into_boxed_slice();
                // `Box::into_raw` never gives null.
                let ptr = NonNull::new(Box::into_raw(b).cast::<u8>()).expect("boxed slice");
                HostBuffer { ptr, cap, pinned: false, guard: None }
            }
        }
    }

    /// First byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Usable bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Whether the driver pinned it.
    pub fn pinned(&self) -> bool {
        self.pinned
    }
}

/// `cap` usable bytes at the start of a `cap + GUARD_RESERVE` reservation (`None`: no address
/// space for it).
fn guarded(cap: usize) -> Option<Mapping> {
    Mapping::new(cap, (0, 0), GUARD_RESERVE)
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.pinned {
            let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
            let (list, total) = &mut *g;
            if *total + self.cap <= POOL_BYTES {
                *total += self.cap;
                list.push(HostBuffer { ptr: self.ptr, cap: self.cap, pinned: true, guard: self.guard.take() });
                self.pinned = false;
                self.cap = 0;
                return;
            }
            drop(g);
            if self.guard.is_some() {
                // SAFETY: registered in `new`, unregistered once, before the mapping goes.
                unsafe { sys::cuMemHostUnregister(self.ptr.as_ptr().cast()) };
            } else {
                // SAFETY: pinned memory from cuMemHostAlloc, freed once (portable: any context).
                unsafe { sys::cuMemFreeHost(self.ptr.as_ptr().cast()) };
            }
        } else if self.cap != 0 && self.guard.is_none() {
            // SAFETY: the boxed slice leaked in `new`, with the same length.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.cap)) });
        }
        // A guard mapping (if still here) is unmapped when the field drops.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disarmed_layer_sees_only_host_memory() {
        ARMED.store(false, Ordering::Relaxed);
        let x = [0u8; 16];
        assert_eq!(device_range(x.as_ptr() as usize), None);
    }

    /// What the guard is for: a message written past the usable bytes (Open MPI's truncated
    /// receive) lands in the reservation, never in the heap.
    #[test]
    fn a_guarded_buffer_takes_an_overrun_of_many_times_its_size() {
        let cap = size_class(4096);
        let m = guarded(cap).expect("address space for a guarded buffer");
        let over = 1 << 20;
        // SAFETY: the reservation holds `cap + GUARD_RESERVE` writable bytes.
        unsafe { std::ptr::write_bytes(m.ptr(), 0xa5, cap + over) };
        // SAFETY: as above.
        assert_eq!(unsafe { *m.ptr().add(cap + over - 1) }, 0xa5);
    }

    #[test]
    fn size_classes_are_powers_of_two_from_a_page() {
        assert_eq!(size_class(0), 4096);
        assert_eq!(size_class(8), 4096);
        assert_eq!(size_class(4097), 8192);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(size_class((1 << 20) + 1), 2 << 20);
    }

    #[test]
    fn ranges_hold_only_their_bytes() {
        let r = DeviceRange { base: 4096, len: 100, ordinal: 0, ctx: 0 };
        assert!(r.holds(4096, 100));
        assert!(r.holds(4100, 0));
        assert!(!r.holds(4095, 2));
        assert!(!r.holds(4100, 97));
        assert!(!r.holds(usize::MAX, 2));
    }
}
