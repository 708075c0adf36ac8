//! Copies between device and host memory queued in pieces, each followed by an event, so that
//! the next hop takes the first pieces while later ones are still crossing PCIe: the pipelined
//! FBM -> REG and REG -> FBM hops of the isometry model (the paper's Figure 1 path). A sender
//! hands the MPI chunk i while chunk i+1 is still being copied out of the device; a receiver
//! copies chunk i into the device while chunk i+1 is still arriving.
//!
//! Pieces run in order on sluice's stream of the buffer's context, so "every piece up to byte
//! n has landed" is one event wait. Dropping a [`Pieces`] waits for everything it queued, so the
//! memory on both sides may be reused at once.

use cudarc::driver::sys;

use super::{check, with_lane, CudaError, DeviceRange};

/// Work that must wait until every queued piece is done (the packed form gives its packed device
/// buffer and leaf table back then).
pub type Then = Box<dyn FnOnce() + Send>;

/// Copies queued in pieces on sluice's stream of one context.
pub struct Pieces {
    range: DeviceRange,
    /// Bytes queued so far, and for each piece in order: the byte its copy ends at, its event
    /// (a driver handle kept as an integer, used from whichever thread with its context pushed).
    queued: usize,
    marks: Vec<(usize, usize)>,
    /// Pieces known to be done (their events were waited for and destroyed).
    done: usize,
    /// Bytes known to have landed.
    landed: usize,
    /// The first failure; every later wait reports it too.
    error: Option<CudaError>,
    then: Option<Then>,
}

impl std::fmt::Debug for Pieces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pieces").field("queued", &self.queued).field("landed", &self.landed).field("error", &self.error).finish()
    }
}

impl Pieces {
    /// Nothing queued yet, on `range`'s context.
    pub fn new(range: &DeviceRange) -> Pieces {
        Pieces { range: *range, queued: 0, marks: Vec::new(), done: 0, landed: 0, error: None, then: None }
    }

    /// The device allocation the pieces go to or come from.
    pub fn range(&self) -> &DeviceRange {
        &self.range
    }

    /// Runs `then` once every piece (queued now or later) is done.
    pub fn then(mut self, then: Then) -> Pieces {
        self.then = Some(then);
        self
    }

    /// Bytes queued so far: the next piece is counted from there.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Queues the next piece: `len` bytes from `src` to `dst` (device or host addresses, the
    /// driver tells them apart: unified addressing), followed by an event.
    ///
    /// # Safety
    /// `src` is readable and `dst` writable for `len` bytes until the piece is done (a wait that
    /// covers it, or the drop); device addresses lie inside `range`.
    pub unsafe fn push(&mut self, dst: usize, src: usize, len: usize) -> Result<(), CudaError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if len == 0 {
            return Ok(());
        }
        let r = with_lane(&self.range, |s, _| {
            // SAFETY: forwarded contract; the copy is ordered before the event recorded next.
            check("cuMemcpyAsync (piece)", unsafe { sys::cuMemcpyAsync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, len, s) })?;
            let mut ev: sys::CUevent = std::ptr::null_mut();
            // SAFETY: creates an event in the current context (no timing: the cheapest kind).
            check("cuEventCreate", unsafe { sys::cuEventCreate(&mut ev, sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32) })?;
            // SAFETY: an event and a stream of the current context.
            if let Err(e) = check("cuEventRecord", unsafe { sys::cuEventRecord(ev, s) }) {
                // SAFETY: the event just created, never recorded.
                unsafe { sys::cuEventDestroy_v2(ev) };
                return Err(e);
            }
            Ok(ev as usize)
        });
        match r {
            Ok(ev) => {
                self.queued += len;
                self.marks.push((self.queued, ev));
                Ok(())
            }
            Err(e) => {
                self.error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Queues `len` bytes from `src` to `dst` as pieces: the first of `first` bytes, the others
    /// of `piece` bytes (the last one shorter).
    ///
    /// # Safety
    /// As [`Pieces::push`], for the whole range.
    pub unsafe fn push_all(&mut self, dst: usize, src: usize, len: usize, first: usize, piece: usize) -> Result<(), CudaError> {
        let mut off = 0;
        while off < len {
            let n = if off == 0 { first } else { piece }.max(1).min(len - off);
            // SAFETY: forwarded contract, a sub-range.
            unsafe { self.push(dst + off, src + off, n)? };
            off += n;
        }
        Ok(())
    }

    /// Returns once the first `upto` queued bytes have landed (every piece ending at or before
    /// the first piece that reaches `upto`), or the first failure.
    pub fn wait(&mut self, upto: usize) -> Result<(), CudaError> {
        while self.landed < upto.min(self.queued) && self.error.is_none() {
            let (end, ev) = self.marks[self.done];
            let r = with_lane(&self.range, |_, _| {
                // SAFETY: a recorded event of this context.
                let r = check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(ev as sys::CUevent) });
                // SAFETY: waited for (or failed): destroyed once, never used again.
                unsafe { sys::cuEventDestroy_v2(ev as sys::CUevent) };
                r
            });
            self.done += 1;
            match r {
                Ok(()) => self.landed = end,
                Err(e) => self.error = Some(e),
            }
        }
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Waits for every piece queued.
    pub fn wait_all(&mut self) -> Result<(), CudaError> {
        self.wait(self.queued)
    }

    /// The first failure, if any.
    pub fn error(&self) -> Option<&CudaError> {
        self.error.as_ref()
    }
}

impl Drop for Pieces {
    fn drop(&mut self) {
        if self.done < self.marks.len() || self.error.is_some() {
            // After a failure the remaining events are not waited one by one: the stream is
            // (a copy may also have been queued whose event failed, so it has no mark).
            let _ = with_lane(&self.range, |s, _| {
                // SAFETY: sluice's stream of this context; afterwards no piece touches memory.
                let r = check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(s) });
                for &(_, ev) in &self.marks[self.done..] {
                    // SAFETY: recorded events of this context, destroyed once.
                    unsafe { sys::cuEventDestroy_v2(ev as sys::CUevent) };
                }
                r
            });
            self.done = self.marks.len();
        }
        if let Some(f) = self.then.take() {
            f();
        }
    }
}
