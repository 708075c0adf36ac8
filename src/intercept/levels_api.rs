//! The multi-level runtime interface's C API (`include/sluice_levels.h`): translates handles and
//! arguments, reports refusals (a warning and the error code), and forwards to [`crate::levels`].
//! No call unwinds into C: a panic (a bug in sluice) becomes `SLUICE_ERR_ARG`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

use super::api::api;
use crate::levels::{self, ArrayInfo, Child, Error, Runtime, Shape, Spec, Task, TaskCall, XferList};

const SUCCESS: c_int = 0;
const ERR_ARG: c_int = -2;

/// `sluice_level_t`: a runtime seen from its top or from one child.
pub struct Handle {
    rt: Arc<Runtime>,
    /// `None`: the top; `Some(i)`: child `i`.
    child: Option<usize>,
}

/// `sluice_array_t`.
#[repr(C)]
pub struct CArray {
    desc: i64,
    data: *mut c_void,
    elem_size: usize,
    ndims: c_int,
    dims: [usize; 4],
}

/// `sluice_level_stats_t`.
#[repr(C)]
pub struct CStats {
    tasks: u64,
    xfers: u64,
    bytes: u64,
    elided_bytes: u64,
    busy_ns: u64,
    alive_ns: u64,
    peak_bytes: u64,
}

type CTask = unsafe extern "C" fn(level: *mut Handle, arg: *const c_void, len: usize);

/// A transfer in flight (`sluice_xfer_t`).
pub struct CXfer(levels::runtime::Xfer);

/// Reports a refusal of `function`: the message at warning level, the code.
fn refuse(function: &str, e: Error) -> c_int {
    log::warn!("{function}: {e}");
    e.code()
}

fn run(function: &str, f: impl FnOnce() -> Result<(), Error>) -> c_int {
    api(ERR_ARG, || match f() {
        Ok(()) => SUCCESS,
        Err(e) => refuse(function, e),
    })
}

/// The handle behind a `sluice_level_t`.
///
/// # Safety
/// `h` is null or a handle from this API that was not closed.
unsafe fn handle<'a>(h: *mut Handle) -> Result<&'a Handle, Error> {
    // SAFETY: the caller's contract.
    unsafe { h.as_ref() }.ok_or_else(|| Error::Arg("null level handle".into()))
}

fn top(h: &Handle, what: &str) -> Result<(), Error> {
    match h.child {
        None => Ok(()),
        Some(i) => Err(Error::Role(format!("{what} is a call of the top, and this is child {i}'s handle"))),
    }
}

fn child(h: &Handle, what: &str) -> Result<Child, Error> {
    match h.child {
        Some(id) => Ok(Child { rt: h.rt.clone(), id }),
        None => Err(Error::Role(format!("{what} is a call of a child, and this is the top's handle"))),
    }
}

fn to_c(info: &ArrayInfo) -> CArray {
    let mut dims = [0usize; 4];
    dims[..info.shape.ndims].copy_from_slice(&info.shape.dims[..info.shape.ndims]);
    CArray {
        desc: info.desc,
        data: info.data.map_or(std::ptr::null_mut(), |p| p.cast()),
        elem_size: info.shape.elem_size,
        ndims: info.shape.ndims as c_int,
        dims,
    }
}

fn from_c(a: &CArray) -> Result<ArrayInfo, Error> {
    let n =
        usize::try_from(a.ndims).ok().filter(|n| (1..=4).contains(n)).ok_or_else(|| Error::Arg(format!("ndims {} (1 to 4)", a.ndims)))?;
    let shape = Shape::new(a.elem_size, &a.dims[..n])?;
    Ok(ArrayInfo { desc: a.desc, shape, data: (!a.data.is_null()).then_some(a.data.cast()) })
}

/// The table of C tasks as the engine's tasks: each gets a child handle on its stack.
fn tasks_of(table: &[Option<CTask>]) -> Arc<Vec<Task>> {
    Arc::new(
        table
            .iter()
            .map(|&f| -> Task {
                Arc::new(move |c: &Child, arg: &[u8]| {
                    let Some(f) = f else { return log::warn!("sluice_task_call: task slot is NULL") };
                    let mut h = Handle { rt: c.rt.clone(), child: Some(c.id) };
                    // SAFETY: the application's task, called with a live handle and its argument.
                    unsafe { f(&mut h, arg.as_ptr().cast(), arg.len()) }
                })
            })
            .collect(),
    )
}

/// # Safety
/// As include/sluice_levels.h: `spec` null or a C string, `tasks` holds `ntasks` entries, `top`
/// writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_levels_open(
    spec: *const c_char,
    tasks: *const Option<CTask>,
    ntasks: c_int,
    top: *mut *mut Handle,
) -> c_int {
    if crate::runtime::config().is_none() && log::max_level() == log::LevelFilter::Off {
        // Used without MPI (smp and disk compositions): refusals still reach stderr.
        crate::logging::init(log::LevelFilter::Warn);
    }
    run("sluice_levels_open", || {
        let out = top.out_ok()?;
        *out = std::ptr::null_mut();
        let n = usize::try_from(ntasks).map_err(|_| Error::Arg(format!("ntasks {ntasks}")))?;
        if tasks.is_null() && n > 0 {
            return Err(Error::Arg("null task table".into()));
        }
        let spec = if spec.is_null() {
            Spec::from_env()?
        } else {
            // SAFETY: a C string (the caller's contract).
            let text = unsafe { CStr::from_ptr(spec) }.to_str().map_err(|_| Error::Spec("the composition is not UTF-8".into()))?;
            Spec::parse(text)?
        };
        levels::install_cluster(crate::protocol::levels::make);
        // SAFETY: `n` entries (checked non-null when n > 0).
        let table = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(tasks, n) } };
        if let Some(rt) = levels::open(spec, tasks_of(table))? {
            *out = Box::into_raw(Box::new(Handle { rt, child: None }));
        }
        Ok(())
    })
}

/// Null-checked out-parameters.
trait OutPtr<T> {
    fn out_ok<'a>(self) -> Result<&'a mut T, Error>;
}

impl<T> OutPtr<T> for *mut T {
    fn out_ok<'a>(self) -> Result<&'a mut T, Error> {
        // SAFETY: every API function's contract: out-parameters are null or writable.
        unsafe { self.as_mut() }.ok_or_else(|| Error::Arg("null output pointer".into()))
    }
}

/// # Safety
/// `level` a live handle; `below` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_below(level: *mut Handle, below: *mut *mut Handle) -> c_int {
    run("sluice_level_below", || {
        let out = below.out_ok()?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let c = child(unsafe { handle(level) }?, "sluice_level_below")?;
        if let Some(rt) = c.below()? {
            *out = Box::into_raw(Box::new(Handle { rt, child: None }));
        }
        Ok(())
    })
}

/// # Safety
/// `top` points to a top handle (or NULL).
#[no_mangle]
pub unsafe extern "C" fn sluice_level_close(top: *mut *mut Handle) -> c_int {
    run("sluice_level_close", || {
        let slot = top.out_ok()?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(*slot) }?;
        self::top(h, "sluice_level_close")?;
        h.rt.close();
        // SAFETY: made by Box::into_raw in open/below; the slot is reset so it is freed once.
        drop(unsafe { Box::from_raw(*slot) });
        *slot = std::ptr::null_mut();
        Ok(())
    })
}

/// # Safety
/// `level` a live handle.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_id(level: *mut Handle) -> c_int {
    // SAFETY: forwarded contract.
    api(-1, || unsafe { level.as_ref() }.and_then(|h| h.child).map_or(-1, |i| i as c_int))
}

/// # Safety
/// `level` a live handle.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_siblings(level: *mut Handle) -> c_int {
    // SAFETY: forwarded contract.
    api(ERR_ARG, || unsafe { level.as_ref() }.map_or(ERR_ARG, |h| h.rt.children() as c_int))
}

/// # Safety
/// `level` a live handle.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_kind(level: *mut Handle) -> *const c_char {
    // SAFETY: forwarded contract.
    let kind = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { level.as_ref() }.map(|h| h.rt.kind()))).ok().flatten();
    match kind {
        Some(levels::Kind::Smp) => c"smp".as_ptr(),
        Some(levels::Kind::Disk) => c"disk".as_ptr(),
        Some(levels::Kind::Cluster) => c"cluster".as_ptr(),
        None => c"".as_ptr(),
    }
}

/// # Safety
/// `level` a live handle.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_memory(level: *mut Handle) -> usize {
    // SAFETY: forwarded contract.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { level.as_ref() }.map_or(0, |h| h.rt.memory_left()))).unwrap_or(0)
}

/// # Safety
/// `level` a live handle; `stats` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_stats(level: *mut Handle, stats: *mut CStats) -> c_int {
    run("sluice_level_stats", || {
        let out = stats.out_ok()?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(level) }?;
        let s = if h.child.is_none() { h.rt.stats_all() } else { h.rt.stats() };
        *out = CStats {
            tasks: s.tasks,
            xfers: s.xfers,
            bytes: s.bytes,
            elided_bytes: s.elided_bytes,
            busy_ns: s.busy_ns,
            alive_ns: s.alive_ns,
            peak_bytes: s.peak_bytes,
        };
        Ok(())
    })
}

/// # Safety
/// `top` a live handle, `dims` holds `ndims` extents, `array` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_alloc(
    top: *mut Handle,
    elem_size: usize,
    ndims: c_int,
    dims: *const usize,
    desc: i64,
    alignment: usize,
    array: *mut CArray,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { alloc("sluice_array_alloc", top, elem_size, ndims, dims, desc, alignment, 0, array) }
}

/// # Safety
/// As [`sluice_array_alloc`].
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn sluice_array_alloc_cyclic(
    top: *mut Handle,
    elem_size: usize,
    ndims: c_int,
    dims: *const usize,
    desc: i64,
    alignment: usize,
    block_rows: usize,
    array: *mut CArray,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { alloc("sluice_array_alloc_cyclic", top, elem_size, ndims, dims, desc, alignment, block_rows, array) }
}

/// Both allocation calls.
///
/// # Safety
/// `top` a live handle, `dims` holds `ndims` extents, `array` writable.
#[allow(clippy::too_many_arguments)]
unsafe fn alloc(
    function: &str,
    top: *mut Handle,
    elem_size: usize,
    ndims: c_int,
    dims: *const usize,
    desc: i64,
    alignment: usize,
    block_rows: usize,
    array: *mut CArray,
) -> c_int {
    run(function, || {
        let out = array.out_ok()?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(top) }?;
        self::top(h, function)?;
        let n = usize::try_from(ndims).ok().filter(|n| (1..=4).contains(n)).ok_or_else(|| Error::Arg(format!("ndims {ndims} (1 to 4)")))?;
        if dims.is_null() {
            return Err(Error::Arg("null dims".into()));
        }
        // SAFETY: `ndims` extents (the caller's contract).
        let d = unsafe { std::slice::from_raw_parts(dims, n) };
        let info = h.rt.alloc_cyclic(Shape::new(elem_size, d)?, desc, alignment, block_rows)?;
        *out = to_c(&info);
        Ok(())
    })
}

/// # Safety
/// `top` a live handle, `array` readable and writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_free(top: *mut Handle, array: *mut CArray) -> c_int {
    run("sluice_array_free", || {
        let a = array.out_ok()?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(top) }?;
        self::top(h, "sluice_array_free")?;
        // Matched by descriptor and shape (a copy freed once has lost its address).
        h.rt.free(&from_c(a)?)?;
        a.data = std::ptr::null_mut();
        Ok(())
    })
}

/// # Safety
/// `top` a live handle, `array` readable.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_add(top: *mut Handle, array: *const CArray) -> c_int {
    run("sluice_array_add", || {
        // SAFETY: forwarded contract.
        let a = unsafe { array.as_ref() }.ok_or_else(|| Error::Arg("null array".into()))?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(top) }?;
        self::top(h, "sluice_array_add")?;
        h.rt.add(&from_c(a)?)
    })
}

/// # Safety
/// `top` a live handle.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_remove(top: *mut Handle, desc: i64) -> c_int {
    run("sluice_array_remove", || {
        // SAFETY: forwarded contract.
        let h = unsafe { handle(top) }?;
        self::top(h, "sluice_array_remove")?;
        h.rt.remove(desc)
    })
}

/// # Safety
/// `level` a live handle, `array` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_get(level: *mut Handle, desc: i64, array: *mut CArray) -> c_int {
    run("sluice_array_get", || {
        let out = array.out_ok()?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(level) }?;
        *out = to_c(&h.rt.get(desc)?);
        Ok(())
    })
}

/// # Safety
/// `level` a live handle, `child` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_home(level: *mut Handle, desc: i64, index: usize, child: *mut c_int) -> c_int {
    run("sluice_array_home", || {
        let out = child.out_ok()?;
        // SAFETY: forwarded contract.
        let h = unsafe { handle(level) }?;
        *out = h.rt.home(desc, index)?.map_or(-1, |c| c as c_int);
        Ok(())
    })
}

/// # Safety
/// `dims` holds `ndims` extents, `array` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_array_local(
    data: *mut c_void,
    elem_size: usize,
    ndims: c_int,
    dims: *const usize,
    array: *mut CArray,
) -> c_int {
    run("sluice_array_local", || {
        let out = array.out_ok()?;
        if data.is_null() {
            return Err(Error::Arg("null data".into()));
        }
        let n = usize::try_from(ndims).ok().filter(|n| (1..=4).contains(n)).ok_or_else(|| Error::Arg(format!("ndims {ndims} (1 to 4)")))?;
        if dims.is_null() {
            return Err(Error::Arg("null dims".into()));
        }
        // SAFETY: `ndims` extents (the caller's contract).
        let d = unsafe { std::slice::from_raw_parts(dims, n) };
        *out = to_c(&ArrayInfo { desc: levels::LOCAL, shape: Shape::new(elem_size, d)?, data: Some(data.cast()) });
        Ok(())
    })
}

/// # Safety
/// `top` a live handle; `arg` holds `arg_len` bytes (or is NULL with 0); `task_handle` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_task_call(
    top: *mut Handle,
    task: c_int,
    start: c_int,
    end: c_int,
    arg: *const c_void,
    arg_len: usize,
    task_handle: *mut *mut TaskCall,
) -> c_int {
    run("sluice_task_call", || {
        let out = task_handle.out_ok()?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let h = unsafe { handle(top) }?;
        self::top(h, "sluice_task_call")?;
        let task = usize::try_from(task).map_err(|_| Error::Task(format!("task {task}")))?;
        let (Ok(s), Ok(e)) = (usize::try_from(start), usize::try_from(end)) else {
            return Err(Error::Child(format!("children {start} .. {end}")));
        };
        if arg.is_null() && arg_len > 0 {
            return Err(Error::Arg("null argument block".into()));
        }
        if arg_len > levels::runtime::TASK_ARG_MAX {
            return Err(Error::Task(format!("argument block of {arg_len} bytes (at most {})", levels::runtime::TASK_ARG_MAX)));
        }
        // SAFETY: `arg_len` bytes (the caller's contract).
        let bytes = if arg_len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(arg.cast::<u8>(), arg_len) } };
        let call = h.rt.call(task, s, e, bytes)?;
        *out = Box::into_raw(Box::new(call));
        Ok(())
    })
}

/// # Safety
/// `top` a live handle; `task_handle` points to a handle from `sluice_task_call` (or NULL).
#[no_mangle]
pub unsafe extern "C" fn sluice_task_wait(top: *mut Handle, task_handle: *mut *mut TaskCall) -> c_int {
    run("sluice_task_wait", || {
        let slot = task_handle.out_ok()?;
        // SAFETY: forwarded contract.
        self::top(unsafe { handle(top) }?, "sluice_task_wait")?;
        if slot.is_null() {
            return Ok(());
        }
        // SAFETY: made by Box::into_raw in sluice_task_call; the slot is reset so it is freed once.
        let call = unsafe { Box::from_raw(*slot) };
        *slot = std::ptr::null_mut();
        call.wait();
        Ok(())
    })
}

/// # Safety
/// `child` a child's handle; arrays readable; index/length arrays hold `count` entries; `list`
/// writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_xfer_list_create(
    level: *mut Handle,
    dst: *const CArray,
    src: *const CArray,
    dst_idx: *const usize,
    src_idx: *const usize,
    lengths: *const usize,
    count: usize,
    list: *mut *mut XferList,
) -> c_int {
    run("sluice_xfer_list_create", || {
        let out = list.out_ok()?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let c = child(unsafe { handle(level) }?, "sluice_xfer_list_create")?;
        // SAFETY: forwarded contract.
        let (Some(d), Some(s)) = (unsafe { dst.as_ref() }, unsafe { src.as_ref() }) else {
            return Err(Error::Arg("null array".into()));
        };
        if count > 0 && (dst_idx.is_null() || src_idx.is_null() || lengths.is_null()) {
            return Err(Error::Arg("null index or length list".into()));
        }
        let slice = |p: *const usize| {
            if count == 0 {
                &[][..]
            } else {
                // SAFETY: `count` entries (the caller's contract; checked non-null).
                unsafe { std::slice::from_raw_parts(p, count) }
            }
        };
        let l = c.xfer_list(&from_c(d)?, &from_c(s)?, slice(dst_idx), slice(src_idx), slice(lengths))?;
        *out = Box::into_raw(Box::new(l));
        Ok(())
    })
}

/// # Safety
/// `list` points to a list from `sluice_xfer_list_create` (or NULL).
#[no_mangle]
pub unsafe extern "C" fn sluice_xfer_list_free(list: *mut *mut XferList) -> c_int {
    run("sluice_xfer_list_free", || {
        let slot = list.out_ok()?;
        if !slot.is_null() {
            // SAFETY: made by Box::into_raw; the slot is reset so it is freed once.
            drop(unsafe { Box::from_raw(*slot) });
            *slot = std::ptr::null_mut();
        }
        Ok(())
    })
}

/// # Safety
/// `level` a child's handle, `list` a live list, `xfer` writable.
#[no_mangle]
pub unsafe extern "C" fn sluice_xfer(level: *mut Handle, list: *mut XferList, xfer: *mut *mut CXfer) -> c_int {
    run("sluice_xfer", || {
        let out = xfer.out_ok()?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let c = child(unsafe { handle(level) }?, "sluice_xfer")?;
        // SAFETY: forwarded contract.
        let l = unsafe { list.as_ref() }.ok_or_else(|| Error::Arg("null transfer list".into()))?;
        *out = Box::into_raw(Box::new(CXfer(c.xfer(l)?)));
        Ok(())
    })
}

/// # Safety
/// `level` a child's handle; `xfer` points to a transfer from `sluice_xfer` (or NULL).
#[no_mangle]
pub unsafe extern "C" fn sluice_xfer_wait(level: *mut Handle, xfer: *mut *mut CXfer) -> c_int {
    run("sluice_xfer_wait", || {
        let slot = xfer.out_ok()?;
        // SAFETY: forwarded contract.
        let c = child(unsafe { handle(level) }?, "sluice_xfer_wait")?;
        if slot.is_null() {
            return Ok(());
        }
        // SAFETY: made by Box::into_raw in sluice_xfer; the slot is reset so it is freed once.
        let x = unsafe { Box::from_raw(*slot) };
        *slot = std::ptr::null_mut();
        c.wait(x.0)
    })
}

/// # Safety
/// `level` a child's handle.
#[no_mangle]
pub unsafe extern "C" fn sluice_level_barrier(level: *mut Handle, start: c_int, end: c_int) -> c_int {
    run("sluice_level_barrier", || {
        // SAFETY: forwarded contract.
        let c = child(unsafe { handle(level) }?, "sluice_level_barrier")?;
        let (Ok(s), Ok(e)) = (usize::try_from(start), usize::try_from(end)) else {
            return Err(Error::Child(format!("children {start} .. {end}")));
        };
        c.barrier(s, e)
    })
}
