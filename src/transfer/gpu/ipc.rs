//! Device memory shared between the processes of one node through CUDA IPC: the isometry
//! model's peer FBM, and the one-hop device-to-device channel between two ranks of a node.
//!
//! A sending process copies a device buffer (on the device) into a *slab* of its own device
//! memory, exported once through `cuIpcGetMemHandle`; the receiving process opens the slab
//! once (`cuIpcOpenMemHandle`, cached per sender and handle) and copies the bytes out of it,
//! device to device into a device receive buffer or device to host into a host one. Slabs go
//! back to a bounded pool when the receiver is done (`SLUICE_GPU_IPC_POOL`) and are never
//! freed while the process runs, so an opened mapping never outlives the memory behind it.
//!
//! Whether a receiver can open a sender's memory at all (MPS, containers, devices without peer
//! access) is tried once per pair on a *probe*: a small exported allocation of the sender,
//! opened by the receiver before any transfer depends on it (`protocol::p2p::pipeline::device`).
//!
//! Hand-written: the slab pool and the open cache are sluice's own bookkeeping; the driver calls
//! come from cudarc.

use std::ffi::c_char;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cudarc::driver::sys;

use super::{check, copy_in_lane, with_lane, CudaError, DeviceRange};

/// Bytes of a CUDA IPC memory handle.
pub const HANDLE: usize = 64;
/// A CUDA IPC memory handle, as bytes.
pub type Handle = [u8; HANDLE];

/// The smallest slab (device allocations are granular to 2 MiB anyway).
const MIN_SLAB: usize = 2 << 20;

/// Most bytes of slabs this process allocates (`SLUICE_GPU_IPC_POOL`; 0: none).
static LIMIT: AtomicUsize = AtomicUsize::new(0);

/// Sets the pool's bound (`MPI_Init`).
pub fn configure(limit: usize) {
    LIMIT.store(limit, Ordering::Relaxed);
}

/// Whether slabs may be allocated at all.
pub fn enabled() -> bool {
    LIMIT.load(Ordering::Relaxed) != 0
}

/// One exported device allocation of this process.
#[derive(Debug)]
struct Slab {
    ptr: usize,
    cap: usize,
    handle: Handle,
    /// The context it lives in (the key of sluice's per-context state).
    ctx: usize,
}

/// Idle slabs, and the bytes of all slabs ever allocated (idle or leased).
static POOL: Mutex<(Vec<Slab>, usize)> = Mutex::new((Vec::new(), 0));
/// The probe: a small exported allocation (see the module comment), made once.
static PROBE: Mutex<Option<Handle>> = Mutex::new(None);

/// A slab leased to one transfer; back to the pool when dropped.
#[derive(Debug)]
pub struct Lease(Option<Slab>);

impl Lease {
    /// The slab's handle, for the receiver.
    pub fn handle(&self) -> &Handle {
        &self.0.as_ref().expect("leased slab").handle
    }

    /// Its first byte (a device address).
    pub fn ptr(&self) -> usize {
        self.0.as_ref().expect("leased slab").ptr
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            POOL.lock().unwrap_or_else(|e| e.into_inner()).0.push(s);
        }
    }
}

fn class(len: usize) -> usize {
    len.max(MIN_SLAB).checked_next_power_of_two().unwrap_or(len)
}

/// Allocates `cap` bytes of device memory in the current context and exports it.
fn export(cap: usize) -> Result<(usize, Handle), CudaError> {
    let mut p: sys::CUdeviceptr = 0;
    // SAFETY: allocates in the context the caller made current (kept for the life of the process).
    check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, cap) })?;
    let mut h = std::mem::MaybeUninit::<sys::CUipcMemHandle>::zeroed();
    // SAFETY: writes the handle of the allocation just made.
    check("cuIpcGetMemHandle", unsafe { sys::cuIpcGetMemHandle(h.as_mut_ptr(), p) })?;
    // SAFETY: written above (and zeroed before).
    let h = unsafe { h.assume_init() };
    let mut handle = [0u8; HANDLE];
    for (d, s) in handle.iter_mut().zip(h.reserved.iter()) {
        *d = *s as u8;
    }
    Ok((p as usize, handle))
}

/// The probe's handle, exported in `range`'s context the first time.
pub fn probe(range: &DeviceRange) -> Result<Handle, CudaError> {
    let mut g = PROBE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = *g {
        return Ok(h);
    }
    let (_, h) = with_lane(range, |_, _| export(MIN_SLAB))?;
    *g = Some(h);
    Ok(h)
}

/// A slab of at least `len` bytes in `range`'s context (contents unspecified); `None` when the
/// pool is off or full (the transfer then takes another route).
pub fn lease(len: usize, range: &DeviceRange) -> Option<Result<Lease, CudaError>> {
    let cap = class(len);
    let limit = LIMIT.load(Ordering::Relaxed);
    if cap > limit {
        return None;
    }
    let r = with_lane(range, |_, ctx| {
        {
            let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
            let (idle, total) = &mut *g;
            match idle.iter().position(|s| s.ctx == ctx && s.cap == cap) {
                Some(i) => return Ok(Some(Lease(Some(idle.swap_remove(i))))),
                None if *total + cap <= limit => *total += cap,
                None => return Ok(None),
            }
        }
        match export(cap) {
            Ok((ptr, handle)) => Ok(Some(Lease(Some(Slab { ptr, cap, handle, ctx })))),
            Err(e) => {
                POOL.lock().unwrap_or_else(|e| e.into_inner()).1 -= cap;
                Err(e)
            }
        }
    });
    r.transpose()
}

/// Queues a copy of `len` bytes from device address `src` (inside `range`) to device address
/// `dst` (a slab of the same context) on sluice's stream of that context; [`settled`] tells when
/// it is done.
///
/// # Safety
/// `[src, src + len)` lies inside `range` and stays unchanged until the copy is done; `dst` is a
/// leased slab of at least `len` bytes.
pub unsafe fn queue_copy(dst: usize, src: usize, len: usize, range: &DeviceRange) -> Result<(), CudaError> {
    with_lane(range, |stream, _| {
        // SAFETY: forwarded contract.
        check("cuMemcpyAsync (device to device)", unsafe { sys::cuMemcpyAsync(dst as _, src as _, len, stream) })
    })
}

/// Whether everything queued on sluice's stream of `range`'s context is done (`block`: waits
/// for it).
pub fn settled(range: &DeviceRange, block: bool) -> Result<bool, CudaError> {
    with_lane(range, |stream, _| {
        if block {
            // SAFETY: a stream of this context.
            return check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream) }).map(|()| true);
        }
        // SAFETY: a stream of this context.
        match unsafe { sys::cuStreamQuery(stream) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(CudaError { what: "cuStreamQuery", code }),
        }
    })
}

/// Copies `len` bytes from `src` (another process's memory opened with [`open_for`] in
/// `range`'s context) to device address `dst` (inside `range`), device to device, and waits.
///
/// # Safety
/// `[dst, dst + len)` lies inside `range`; `[src, src + len)` lies inside the opened slab.
pub unsafe fn copy_opened(dst: usize, src: usize, len: usize, range: &DeviceRange) -> Result<(), CudaError> {
    // SAFETY: forwarded contract.
    unsafe { copy_in_lane("cuMemcpyAsync (peer device to device)", dst, src, len, range) }
}

/// The first byte of `from` opened in `range`'s context (a device address there).
pub fn open_for(range: &DeviceRange, from: &PeerBytes) -> Result<usize, CudaError> {
    with_lane(range, |_, ctx| open_current(from.sender, &from.handle, ctx).map(|p| p + from.offset))
}

/// Bytes of another process's slab: its world rank, the slab's handle and an offset in it.
#[derive(Clone, Copy, Debug)]
pub struct PeerBytes {
    pub sender: i32,
    pub handle: Handle,
    pub offset: usize,
}

/// A slab of another process opened in one of this process's contexts.
struct Opened {
    sender: i32,
    handle: Handle,
    ctx: usize,
    ptr: usize,
}

static OPENED: Mutex<Vec<Opened>> = Mutex::new(Vec::new());

/// `handle` of world rank `sender` opened in context `ctx` (current on this thread): once, then
/// from the cache (the sender never frees an exported allocation).
fn open_current(sender: i32, handle: &Handle, ctx: usize) -> Result<usize, CudaError> {
    let mut g = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(o) = g.iter().find(|o| o.sender == sender && o.ctx == ctx && o.handle == *handle) {
        return Ok(o.ptr);
    }
    let mut h = sys::CUipcMemHandle { reserved: [0 as c_char; HANDLE] };
    for (d, s) in h.reserved.iter_mut().zip(handle.iter()) {
        *d = *s as c_char;
    }
    let mut p: sys::CUdeviceptr = 0;
    let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as std::ffi::c_uint;
    // SAFETY: maps the exporter's allocation into the current context; kept for the process's life.
    check("cuIpcOpenMemHandle", unsafe { sys::cuIpcOpenMemHandle_v2(&mut p, h, flags) })?;
    g.push(Opened { sender, handle: *handle, ctx, ptr: p as usize });
    Ok(p as usize)
}

/// The primary context of device `ordinal`, as a range the lanes accept.
fn on_device(ordinal: i32) -> DeviceRange {
    DeviceRange { base: 0, len: 0, ordinal, ctx: 0 }
}

/// Opens `handle` of world rank `sender` on device `ordinal` (the probe of a pair).
pub fn try_open(sender: i32, handle: &Handle, ordinal: i32) -> Result<(), CudaError> {
    with_lane(&on_device(ordinal), |_, ctx| open_current(sender, handle, ctx).map(|_| ()))
}

/// Copies `len` bytes of `from` to host memory at `dst`, through device `ordinal`'s primary
/// context.
///
/// # Safety
/// `dst` is valid for `len` bytes of writes; the sender's slab holds `from.offset + len` bytes.
pub unsafe fn peer_to_host(dst: *mut u8, from: &PeerBytes, len: usize, ordinal: i32) -> Result<(), CudaError> {
    let device = on_device(ordinal);
    let src = open_for(&device, from)?;
    // SAFETY: forwarded contract; `src` is the slab opened in that device's primary context.
    unsafe { copy_in_lane("cuMemcpyAsync (peer device to host)", dst as usize, src, len, &device) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_come_in_powers_of_two_from_two_mebibytes() {
        assert_eq!(class(1), MIN_SLAB);
        assert_eq!(class(MIN_SLAB), MIN_SLAB);
        assert_eq!(class(MIN_SLAB + 1), 2 * MIN_SLAB);
        assert_eq!(class(100 << 20), 128 << 20);
    }

    #[test]
    fn an_off_pool_leases_nothing_and_calls_no_driver() {
        configure(0);
        let r = DeviceRange { base: 4096, len: 4096, ordinal: 0, ctx: 0 };
        assert!(lease(16, &r).is_none());
        assert!(!enabled());
    }
}
