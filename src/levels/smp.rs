//! The SMP level pair (Sequoia 3.1): the top is host memory, the children are worker threads of
//! this process. Children can address the top's arrays (`data` is set), so a transfer whose two
//! sides are the same memory is elided; other transfers are copies made by the calling child
//! itself (each child copies on its own core, as Sequoia's `memcpy`s): a gather into (or scatter
//! from) a dense local buffer runs the datatype engine's kernel for the list's indexed layout,
//! any other list copies run by run.

use std::sync::{Arc, Mutex};

use super::array::{Desc, Shape, Storage};
use super::exec::{Job, Workers};
use super::host::HostMemory;
use super::runtime::{Level, RemoteCall};
use super::spec::Kind;
use super::xfer::{Dir, XferList};
use super::Error;
use crate::datatype::compiled::CompiledType;
use crate::datatype::DataLoop;
use crate::transfer::runtime::Event;

pub struct Smp {
    n: usize,
    workers: Mutex<Option<Workers>>,
}

impl Smp {
    /// `children` threads (`None`: the CPUs this process may run on).
    pub fn new(children: Option<usize>) -> Result<Smp, Error> {
        let n = children.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let workers = Workers::start(n, "sluice-smp").map_err(|e| Error::Unavailable(-2, e))?;
        Ok(Smp { n, workers: Mutex::new(Some(workers)) })
    }
}

/// Host memory of `bytes` bytes aligned to `align`, zeroed (so that no child ever reads memory
/// nothing wrote); from 1 MiB mapped from the kernel, not cleared by a `memset`.
pub fn host_storage(bytes: usize, align: usize) -> Result<Storage, Error> {
    HostMemory::new(bytes, align).map(Storage::Host)
}

/// Whether the list's local runs follow each other from the first one's start (a dense local
/// buffer), and where it starts.
fn dense_local(list: &XferList) -> Option<usize> {
    let first = list.runs.first()?.1;
    let mut at = first;
    for &(_, l, n) in &list.runs {
        if l != at {
            return None;
        }
        at += n;
    }
    Some(first)
}

/// Copies `list` between the top array at `top` (`top_len` bytes) and local memory; returns the
/// bytes elided.
///
/// # Safety
/// `top` holds the array the list was checked against and the list's local memory is valid.
pub unsafe fn copy(top: *mut u8, top_len: usize, list: &XferList) -> usize {
    // Address comparison only (no access): wrapping arithmetic needs no proof.
    let same = |t: usize, l: usize| top.wrapping_add(t) == list.local.wrapping_add(l);
    let elided: usize = list.runs.iter().filter(|r| same(r.0, r.1)).map(|r| r.2).sum();
    if elided == list.bytes {
        return elided;
    }
    // The engine's kernels assume the two sides apart: a local buffer inside the top array
    // (legal in a shared namespace) is copied run by run instead.
    let apart = |first: usize| {
        let (l, t) = (list.local as usize + first, top as usize);
        l + list.bytes <= t || t + top_len <= l
    };
    if let (0, Some(first), true) = (elided, dense_local(list), list.runs.len() > 1) {
        if !apart(first) {
            // SAFETY: forwarded contract.
            return unsafe { copy_runs(top, list, same) };
        }
        let ty = list.layout.get_or_init(|| {
            Arc::new(CompiledType::new(&DataLoop::indexed(
                list.runs.iter().map(|r| r.2).collect(),
                list.runs.iter().map(|r| r.0 as i64).collect(),
                DataLoop::bytes(1),
            )))
        });
        // SAFETY: the dense local run holds `list.bytes` bytes from `first`; the indexed type
        // addresses only runs checked against the top array.
        unsafe {
            let local = list.local.add(first);
            match list.dir {
                Dir::Get => ty.pack(top, 1, std::slice::from_raw_parts_mut(local, list.bytes)),
                Dir::Put => ty.unpack(std::slice::from_raw_parts(local, list.bytes), 1, top),
            }
        }
        return 0;
    }
    // SAFETY: forwarded contract.
    unsafe { copy_runs(top, list, same) }
}

/// Copies the runs one by one (skipping those whose sides are the same memory); returns the
/// bytes skipped.
///
/// # Safety
/// As [`copy`].
unsafe fn copy_runs(top: *mut u8, list: &XferList, same: impl Fn(usize, usize) -> bool) -> usize {
    let mut elided = 0;
    for &(t, l, n) in &list.runs {
        if same(t, l) {
            elided += n;
            continue;
        }
        // SAFETY: both runs lie inside their arrays (checked); `copy` allows overlap.
        unsafe {
            match list.dir {
                Dir::Get => std::ptr::copy(top.add(t), list.local.add(l), n),
                Dir::Put => std::ptr::copy(list.local.add(l), top.add(t), n),
            }
        }
    }
    elided
}

impl Level for Smp {
    fn kind(&self) -> Kind {
        Kind::Smp
    }

    fn children(&self) -> usize {
        self.n
    }

    fn allocate(&self, shape: &Shape, _desc: Desc, align: usize, _block_rows: usize) -> Result<Storage, Error> {
        host_storage(shape.bytes(), align)
    }

    fn spawn(&self, child: usize, _remote: RemoteCall, job: Job) {
        if let Some(w) = &*self.workers.lock().unwrap_or_else(|e| e.into_inner()) {
            w.run(child, job);
        }
    }

    fn transfer(&self, top: &Arc<Storage>, list: &XferList) -> Result<(Vec<Event>, usize), Error> {
        let base = top.host().ok_or_else(|| Error::Arg("an smp array without host memory".into()))?;
        // SAFETY: the storage is the registered array the list was checked against (alive: we
        // hold a reference); the local memory is the application's, valid by the API's rule.
        let elided = unsafe { copy(base, top.bytes(), list) };
        Ok((vec![Event::done(Ok(()))], elided))
    }

    fn stop(&self) {
        if let Some(mut w) = self.workers.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.stop();
        }
    }
}
