//! Datatype pack and unpack on the device (the isometry model's GPUCopy channel for layouts):
//! non-contiguous device data is gathered into a packed device buffer by a kernel and crosses
//! PCIe as one copy of the packed bytes, instead of its whole span (gaps included) or one copy
//! per block.
//!
//! The kernels are `move.ptx` beside this file, compiled from LLVM IR by
//! `scripts/gen_gpu_kernels.py` (see there why PTX and not NVRTC); the driver JIT-compiles them
//! once per context, at the first use. They walk a [`DeviceShape`]; its leaf table lives in device
//! memory, cached per shape and context. Packed device buffers come from a small per-context
//! pool: `cuMemAlloc` costs tens of microseconds and `cuMemFree` waits for the device.
//!
//! Like the copies in the parent module, both directions are synchronous towards the caller and
//! run on sluice's stream of the buffer's context.

use std::ffi::{c_uint, c_void};
use std::sync::Mutex;

use cudarc::driver::sys;

use super::pieces::Pieces;
use super::{check, with_lane, CudaError, DeviceRange};
use crate::datatype::device_shape::DeviceShape;

/// The kernels' PTX, NUL-terminated as `cuModuleLoadData` wants it.
static PTX: &str = concat!(include_str!("move.ptx"), "\0");
/// Kernel names by access width 1, 2, 4, 8, 16 bytes.
const NAMES: [&[u8]; 5] = [b"sluice_move_w1\0", b"sluice_move_w2\0", b"sluice_move_w4\0", b"sluice_move_w8\0", b"sluice_move_w16\0"];
/// Threads per block.
const THREADS: usize = 256;
/// Most blocks a launch asks for (the kernels loop over rows, so fewer always suffice).
const MAX_BLOCKS: usize = 8192;
/// Leaf tables kept on the device.
const TABLES: usize = 32;
/// Most idle packed device bytes kept per process.
const POOL_BYTES: usize = 256 << 20;

/// The loaded kernels of one context (`None`: the module did not load there; never retried).
static KERNELS: Mutex<Vec<(usize, Option<[usize; 5]>)>> = Mutex::new(Vec::new());
/// Leaf tables on the device: (context, table, device address), most recent last.
static TABLE_CACHE: Mutex<Vec<Table>> = Mutex::new(Vec::new());
/// Idle packed device buffers: (context, address, capacity).
static SCRATCH: Mutex<Vec<(usize, usize, usize)>> = Mutex::new(Vec::new());

/// The kernels of context `ctx` (current on this thread), loaded on first use.
fn kernels(ctx: usize) -> Option<[usize; 5]> {
    let mut g = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, k)) = g.iter().find(|(c, _)| *c == ctx) {
        return k;
    }
    let load = || -> Result<[usize; 5], CudaError> {
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: a NUL-terminated PTX image; the module lives as long as the process.
        check("cuModuleLoadData (sluice's move kernels)", unsafe { sys::cuModuleLoadData(&mut module, PTX.as_ptr().cast()) })?;
        let mut out = [0usize; 5];
        for (slot, name) in out.iter_mut().zip(NAMES) {
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: a NUL-terminated name of a kernel the module defines.
            check("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr().cast()) })?;
            *slot = f as usize;
        }
        Ok(out)
    };
    let k = match load() {
        Ok(k) => Some(k),
        Err(e) => {
            log::warn!("GPU pack kernels unavailable, device data moves by span copies: {e}");
            None
        }
    };
    g.push((ctx, k));
    k
}

/// Whether the kernels load in `range`'s context (loads them the first time). Asked once per
/// staged buffer: a context already tried is answered from [`KERNELS`] without making it
/// current (allocations made in the device's primary context report none, so those go through
/// [`with_lane`], which finds it).
pub fn ready(range: &DeviceRange) -> bool {
    if range.ctx != 0 {
        let g = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, k)) = g.iter().find(|(c, _)| *c == range.ctx) {
            return k.is_some();
        }
    }
    with_lane(range, |_, ctx| Ok(kernels(ctx).is_some())).unwrap_or(false)
}

/// A shape's leaf table on the device, and the launches in flight that read it.
struct Table {
    ctx: usize,
    shape: u64,
    at: usize,
    users: usize,
}

/// A leaf table in device memory of context `ctx` (current), uploaded on first use and held
/// until [`release`]: a table is freed only when no launch reads it.
fn table(ctx: usize, shape: &DeviceShape) -> Result<usize, CudaError> {
    let leaf = shape.leaf.as_slice();
    let mut g = TABLE_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = g.iter().position(|t| t.ctx == ctx && t.shape == shape.id) {
        let mut t = g.remove(i);
        t.users += 1;
        let at = t.at;
        g.push(t);
        return Ok(at);
    }
    let bytes = std::mem::size_of_val(leaf);
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: allocates in the current context.
    check("cuMemAlloc (leaf table)", unsafe { sys::cuMemAlloc_v2(&mut d, bytes) })?;
    // SAFETY: `leaf` holds `bytes` bytes; `d` is a fresh allocation of that size.
    if let Err(e) = check("cuMemcpyHtoD (leaf table)", unsafe { sys::cuMemcpyHtoD_v2(d, leaf.as_ptr().cast(), bytes) }) {
        // SAFETY: the allocation above, unused.
        unsafe { sys::cuMemFree_v2(d) };
        return Err(e);
    }
    if g.len() >= TABLES {
        if let Some(i) = g.iter().position(|t| t.users == 0) {
            let old = g.remove(i);
            // SAFETY: a table no launch reads (no users); cuMemFree takes an address of any
            // context.
            unsafe { sys::cuMemFree_v2(old.at as sys::CUdeviceptr) };
        }
    }
    g.push(Table { ctx, shape: shape.id, at: d as usize, users: 1 });
    Ok(d as usize)
}

/// The launch that took the table at `at` is over.
fn release(at: usize) {
    let mut g = TABLE_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = g.iter_mut().find(|t| t.at == at) {
        t.users = t.users.saturating_sub(1);
    }
}

/// A packed device buffer of at least `len` bytes in context `ctx` (current).
fn take_scratch(ctx: usize, len: usize) -> Result<(usize, usize), CudaError> {
    {
        let mut g = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        let best = g.iter().enumerate().filter(|(_, s)| s.0 == ctx && s.2 >= len).min_by_key(|(_, s)| s.2).map(|(i, _)| i);
        if let Some(i) = best {
            let (_, at, cap) = g.swap_remove(i);
            return Ok((at, cap));
        }
    }
    let cap = super::size_class(len);
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: allocates in the current context.
    check("cuMemAlloc (packed buffer)", unsafe { sys::cuMemAlloc_v2(&mut d, cap) })?;
    Ok((d as usize, cap))
}

/// Returns a packed device buffer to the pool, or frees it past the pool's bound.
fn give_scratch(ctx: usize, at: usize, cap: usize) {
    let mut g = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    let idle: usize = g.iter().map(|s| s.2).sum();
    if idle + cap <= POOL_BYTES {
        g.push((ctx, at, cap));
        return;
    }
    drop(g);
    // SAFETY: an allocation of this module with no work pending (its stream was synchronized).
    unsafe { sys::cuMemFree_v2(at as sys::CUdeviceptr) };
}

/// Launches the move kernel over stream bytes `[0, limit)` of `shape` between the strided
/// buffer at device address `strided` and the packed device buffer at `packed`. Returns the leaf
/// table it reads, to [`release`] once the stream is synchronized.
fn launch(
    stream: sys::CUstream,
    ctx: usize,
    shape: &DeviceShape,
    strided: usize,
    packed: usize,
    limit: usize,
    unpack: bool,
) -> Result<usize, CudaError> {
    let Some(k) = kernels(ctx) else {
        return Err(CudaError { what: "loading sluice's move kernels", code: sys::CUresult::CUDA_ERROR_INVALID_PTX });
    };
    let w = shape.width(strided, packed, limit);
    let f = k[w.trailing_zeros() as usize] as sys::CUfunction;
    let lanes_log2 = shape.lanes_log2(w);
    let leaf = table(ctx, shape)?;
    let [(_, sa), (nb, sb), (nc, sc), (nd, sd)] = shape.levels;
    let mut a64: [u64; 14] = [
        strided as u64,
        packed as u64,
        leaf as u64,
        shape.leaf.len() as u64,
        sa as u64,
        nb as u64,
        sb as u64,
        nc as u64,
        sc as u64,
        nd as u64,
        sd as u64,
        shape.inst_bytes as u64,
        shape.rows as u64,
        limit as u64,
    ];
    let mut a32: [u32; 2] = [lanes_log2, unpack as u32];
    let mut params: [*mut c_void; 16] = [std::ptr::null_mut(); 16];
    for (p, v) in params.iter_mut().zip(a64.iter_mut()) {
        *p = (v as *mut u64).cast();
    }
    for (p, v) in params[14..].iter_mut().zip(a32.iter_mut()) {
        *p = (v as *mut u32).cast();
    }
    let threads = shape.rows.saturating_mul(1 << lanes_log2);
    let blocks = threads.div_ceil(THREADS).clamp(1, MAX_BLOCKS);
    // SAFETY: a kernel of this context; `params` points at 16 values of the kernel's parameter
    // types (14 x u64/i64/pointer, 2 x u32), alive until the launch returns (the driver copies
    // them at launch). The addresses lie in allocations the callers checked.
    let rc = check("cuLaunchKernel (sluice_move)", unsafe {
        sys::cuLaunchKernel(f, blocks as c_uint, 1, 1, THREADS as c_uint, 1, 1, 0, stream, params.as_mut_ptr(), std::ptr::null_mut())
    });
    match rc {
        Ok(()) => Ok(leaf),
        Err(e) => {
            release(leaf);
            Err(e)
        }
    }
}

/// Packs the whole stream of `shape` from the device buffer at `buf` (the application's buffer
/// address, inside `range`) into host memory at `dst`: the kernel gathers it on the device, then
/// one copy brings the packed bytes over.
///
/// # Safety
/// `dst` is valid for `shape.bytes()` bytes of writes; every byte the shape addresses from `buf`
/// lies inside `range`.
pub unsafe fn pack_to_host(dst: *mut u8, buf: usize, shape: &DeviceShape, range: &DeviceRange) -> Result<(), CudaError> {
    let len = shape.bytes();
    with_lane(range, |s, ctx| {
        let (scratch, cap) = take_scratch(ctx, len)?;
        let launched = launch(s, ctx, shape, buf, scratch, len, false);
        let r = launched.clone().and_then(|_| {
            // SAFETY: forwarded contract for `dst`; the scratch holds `len` bytes.
            check("cuMemcpyAsync (packed, device to host)", unsafe {
                sys::cuMemcpyAsync(dst as sys::CUdeviceptr, scratch as sys::CUdeviceptr, len, s)
            })
        });
        // SAFETY: a stream of this context; synchronized even after a failed step, so that the
        // scratch and the table are idle before they go back.
        let done = check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(s) });
        if let Ok(t) = launched {
            release(t);
        }
        give_scratch(ctx, scratch, cap);
        r.and(done)
    })
}

/// [`pack_to_host`] in pieces: the kernel gathers the whole stream on the device, then the
/// packed bytes come over as pieces (the first of `first` bytes, then `piece` each), which the
/// returned [`Pieces`] waits for one by one. The packed device buffer goes back to the pool once
/// every piece is done.
///
/// # Safety
/// As [`pack_to_host`], and `dst` stays valid until the returned value is dropped.
pub unsafe fn pack_in_pieces(
    dst: *mut u8,
    buf: usize,
    shape: &DeviceShape,
    range: &DeviceRange,
    first: usize,
    piece: usize,
) -> Result<Pieces, CudaError> {
    let len = shape.bytes();
    let (ctx, scratch, cap, table) = with_lane(range, |s, ctx| {
        let (scratch, cap) = take_scratch(ctx, len)?;
        match launch(s, ctx, shape, buf, scratch, len, false) {
            Ok(t) => Ok((ctx, scratch, cap, t)),
            Err(e) => {
                // SAFETY: a stream of this context: the scratch is idle before it goes back.
                unsafe { sys::cuStreamSynchronize(s) };
                give_scratch(ctx, scratch, cap);
                Err(e)
            }
        }
    })?;
    // The copies queue behind the kernel on the same stream.
    let mut p = Pieces::new(range).then(Box::new(move || {
        release(table);
        give_scratch(ctx, scratch, cap);
    }));
    // SAFETY: forwarded contract for `dst`; the scratch holds `len` packed bytes.
    unsafe { p.push_all(dst as usize, scratch, len, first, piece)? };
    Ok(p)
}

/// The receiving side of [`pack_in_pieces`]: packed bytes that land in host memory piece by
/// piece cross into a packed device buffer as they come ([`Unpacking::push`]), and the kernel
/// scatters them into the application's buffer at the end ([`Unpacking::finish`]).
pub struct Unpacking {
    pieces: Pieces,
    scratch: usize,
    ctx: usize,
    buf: usize,
    range: DeviceRange,
}

impl std::fmt::Debug for Unpacking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unpacking").field("pieces", &self.pieces).finish()
    }
}

impl Unpacking {
    /// Ready to take up to `shape.bytes()` packed bytes for the device buffer at `buf` (the
    /// application's buffer address, inside `range`).
    pub fn new(buf: usize, shape: &DeviceShape, range: &DeviceRange) -> Result<Unpacking, CudaError> {
        let (ctx, scratch, cap) = with_lane(range, |_, ctx| take_scratch(ctx, shape.bytes().max(1)).map(|(a, c)| (ctx, a, c)))?;
        let pieces = Pieces::new(range).then(Box::new(move || give_scratch(ctx, scratch, cap)));
        Ok(Unpacking { pieces, scratch, ctx, buf, range: *range })
    }

    /// Packed bytes queued so far.
    pub fn queued(&self) -> usize {
        self.pieces.queued()
    }

    /// The application's device allocation.
    pub fn range(&self) -> &DeviceRange {
        &self.range
    }

    /// Waits until every byte queued is in the packed device buffer.
    pub fn wait(&mut self) -> Result<(), CudaError> {
        self.pieces.wait_all()
    }

    /// Queues the next `len` packed bytes, from memory at `src` (host memory, or device memory
    /// of this context: unified addressing tells the copy's direction), into the packed device
    /// buffer (at most the stream's length in all).
    ///
    /// # Safety
    /// `src` stays readable for `len` bytes until [`Unpacking::finish`] or the drop.
    pub unsafe fn push(&mut self, src: *const u8, len: usize, shape: &DeviceShape) -> Result<(), CudaError> {
        let len = len.min(shape.bytes().saturating_sub(self.queued()));
        let at = self.scratch + self.queued();
        // SAFETY: forwarded contract; the scratch holds `shape.bytes()` bytes.
        unsafe { self.pieces.push(at, src as usize, len) }
    }

    /// Scatters the first `limit` packed bytes (all queued before) into the application's
    /// buffer and waits for it; bytes past them and the type's gaps stay as they are.
    pub fn finish(mut self, limit: usize, shape: &DeviceShape) -> Result<(), CudaError> {
        let limit = limit.min(self.queued());
        if limit == 0 {
            return self.pieces.wait_all();
        }
        let (buf, scratch, ctx) = (self.buf, self.scratch, self.ctx);
        let r = with_lane(&self.range, |s, _| {
            let t = launch(s, ctx, shape, buf, scratch, limit, true)?;
            // SAFETY: a stream of this context; the kernel follows every piece on it.
            let done = check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(s) });
            release(t);
            done
        });
        self.pieces.wait_all().and(r)
    }
}

/// Unpacks the first `limit` stream bytes of `shape` from host memory at `src` into the device
/// buffer at `buf` (inside `range`): one copy of the packed bytes, then the kernel scatters them.
/// Bytes of the buffer past the stream's first `limit` bytes (and the type's gaps) stay as they are.
///
/// # Safety
/// `src` is valid for `limit` bytes of reads; every byte the shape addresses from `buf` lies
/// inside `range`.
pub unsafe fn unpack_from_host(
    buf: usize,
    src: *const u8,
    limit: usize,
    shape: &DeviceShape,
    range: &DeviceRange,
) -> Result<(), CudaError> {
    let limit = limit.min(shape.bytes());
    if limit == 0 {
        return Ok(());
    }
    with_lane(range, |s, ctx| {
        let (scratch, cap) = take_scratch(ctx, limit)?;
        // SAFETY: forwarded contract for `src`; the scratch holds `limit` bytes.
        let r = check("cuMemcpyAsync (packed, host to device)", unsafe {
            sys::cuMemcpyAsync(scratch as sys::CUdeviceptr, src as sys::CUdeviceptr, limit, s)
        })
        .and_then(|()| launch(s, ctx, shape, buf, scratch, limit, true));
        // SAFETY: a stream of this context (see `pack_to_host`).
        let done = check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(s) });
        if let Ok(t) = r {
            release(t);
        }
        give_scratch(ctx, scratch, cap);
        r.map(|_| ()).and(done)
    })
}
