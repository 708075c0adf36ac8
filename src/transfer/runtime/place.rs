//! Where a copy's data lives and how it is laid out there: host memory or a file, each with a
//! layout of `count` elements of a compiled datatype. The data of a copy is the type's packed
//! stream (signature order); every hop of a path moves one range of that stream.

use std::os::fd::RawFd;
use std::sync::Arc;

use crate::datatype::compiled::CompiledType;
use crate::datatype::segment::{Cursor, SegState};
use crate::datatype::DataLoop;

/// The memory a place is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// Host memory; the elements are addressed from this base, as an MPI buffer argument.
    Host(*mut u8),
    /// A file, read and written with `pread`/`pwrite` on the descriptor; `offset` is the file
    /// position the layout's displacements are relative to (the buffer address of a host place).
    File { fd: RawFd, offset: i64 },
}

/// A span of memory, relative to a place's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub lo: i64,
    pub hi: i64,
}

impl Span {
    pub fn len(&self) -> usize {
        (self.hi - self.lo) as usize
    }
}

/// One end of a copy.
#[derive(Clone, Debug)]
pub struct Place {
    pub memory: Memory,
    pub ty: Arc<CompiledType>,
    pub count: usize,
    /// The stream goes up through memory (see [`monotone`]): a range's window is the memory
    /// between its first and last byte, not its whole elements.
    monotone: bool,
}

/// Runs of one element looked at before a layout is taken as not monotone (a safe answer:
/// windows of whole elements).
const MONOTONE_RUNS: usize = 1 << 16;

/// Whether the stream of `count` elements of `dl` visits memory in increasing order without
/// overlap: each element's runs go up, and each element ends before the next begins.
fn monotone(dl: &DataLoop, count: usize) -> bool {
    if dl.size == 0 || dl.contiguous {
        return count <= 1 || (dl.extent > 0 && dl.true_ub - dl.true_lb <= dl.extent);
    }
    if count > 1 && (dl.extent <= 0 || dl.true_ub - dl.true_lb > dl.extent) {
        return false;
    }
    let mut st = SegState::seek(dl, 1, 0);
    let mut cur = Cursor::new(dl, 1, &mut st);
    let (mut end, mut runs, mut up) = (i64::MIN, 0usize, true);
    while up && cur.pos() < dl.size {
        if runs > MONOTONE_RUNS {
            return false;
        }
        cur.process(64 << 10, |off, len| {
            up &= off >= end;
            end = off + len as i64;
            runs += 1;
        });
    }
    up
}

// SAFETY: a host place's base is the application's buffer, which it promises to keep valid and
// untouched until the copy's event completes (the MPI rule for nonblocking buffers); the
// runtime's worker threads access it only through the steps of that copy.
unsafe impl Send for Place {}
// SAFETY: as above; shared references only read the description.
unsafe impl Sync for Place {}

impl Place {
    pub fn new(memory: Memory, ty: Arc<CompiledType>, count: usize) -> Place {
        let monotone = monotone(ty.dataloop(), count);
        Place { memory, ty, count, monotone }
    }

    fn dl(&self) -> &DataLoop {
        self.ty.dataloop()
    }

    /// Bytes of the packed stream.
    pub fn bytes(&self) -> usize {
        self.ty.size() * self.count
    }

    /// Where the stream lies as one run of memory, if it does: stream byte `a` is at base offset
    /// `dense() + a`.
    pub fn dense(&self) -> Option<i64> {
        let dl = self.dl();
        (dl.contiguous && (self.count <= 1 || dl.extent == dl.size as i64)).then_some(dl.true_lb)
    }

    pub fn is_file(&self) -> bool {
        matches!(self.memory, Memory::File { .. })
    }

    /// Packed bytes of one element.
    pub fn element(&self) -> usize {
        self.dl().size
    }

    /// Memory offset (from the base) of stream byte `p`.
    fn offset(&self, p: usize) -> i64 {
        let dl = self.dl();
        let mut st = SegState::seek(dl, self.count, p);
        let mut at = 0;
        Cursor::new(dl, self.count, &mut st).process(1, |off, _| at = off);
        at
    }

    /// Memory that holds stream bytes `[a, b)` (a non-empty range), relative to the base: from the
    /// first to the last byte when the layout is monotone, else the span of their whole elements
    /// (elements go downwards for a negative extent).
    pub fn window(&self, a: usize, b: usize) -> Span {
        if self.monotone && b > a {
            return Span { lo: self.offset(a), hi: self.offset(b - 1) + 1 };
        }
        let dl = self.dl();
        let size = dl.size.max(1);
        let (e0, e1) = ((a / size) as i64, (b.div_ceil(size)).max(a / size + 1) as i64);
        let first = e0 * dl.extent;
        let last = (e1 - 1) * dl.extent;
        Span { lo: first.min(last) + dl.true_lb, hi: first.max(last) + dl.true_ub }
    }

    /// The window of a typical block of `block` bytes (the first one), for planning.
    pub fn typical_window(&self, block: usize) -> usize {
        if self.monotone {
            return self.window(0, block.min(self.bytes()).max(1)).len();
        }
        self.max_window(block)
    }

    /// The largest window of any block of `block` stream bytes (what a slot must hold).
    pub fn max_window(&self, block: usize) -> usize {
        if self.monotone {
            let total = self.bytes();
            return (0..total.div_ceil(block.max(1)))
                .map(|k| self.window(k * block, ((k + 1) * block).min(total)).len())
                .max()
                .unwrap_or(0);
        }
        let dl = self.dl();
        let elements = block.div_ceil(dl.size.max(1)) as i64 + 1;
        ((elements - 1) * dl.extent.abs() + (dl.true_ub - dl.true_lb)) as usize
    }

    /// Windows of neighbouring blocks may share bytes: a read-modify-write of one block must then
    /// finish before the next one starts (windows of a monotone layout never do; element windows
    /// do when the elements interleave).
    pub fn windows_interleave(&self) -> bool {
        let dl = self.dl();
        !self.monotone && self.count > 1 && dl.true_ub - dl.true_lb > dl.extent.abs()
    }

    /// Blocks that write windows must end on element boundaries unless the windows are exact.
    pub fn window_align(&self) -> usize {
        if self.monotone {
            1
        } else {
            self.element().max(1)
        }
    }

    /// The contiguous run length the datatype engine copies at a time (a layout conversion's
    /// request size is bounded by it).
    pub fn run(&self) -> usize {
        if self.dense().is_some() {
            return self.bytes();
        }
        self.ty.kernel().min_block(self.count, self.dl().extent).unwrap_or(self.dl().size).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(dl: &DataLoop, count: usize) -> Place {
        Place::new(Memory::Host(std::ptr::null_mut()), Arc::new(CompiledType::new(dl)), count)
    }

    #[test]
    fn windows_cover_the_elements_of_a_range() {
        // vector of 4 blocks of 8 bytes at stride 16: size 32, extent 56.
        let v = DataLoop::vector(4, 8, 16, DataLoop::bytes(1));
        let p = place(&v, 10);
        assert_eq!(p.dense(), None);
        assert!(p.monotone);
        assert_eq!(p.window(0, 32), Span { lo: 0, hi: 56 });
        assert_eq!(p.window(33, 64), Span { lo: 57, hi: 112 });
        assert_eq!(p.window(0, 33), Span { lo: 0, hi: 57 });
        assert_eq!(p.window(9, 12), Span { lo: 17, hi: 20 });
        assert!(p.max_window(64) >= p.window(16, 80).len());
        assert!(!p.windows_interleave());
        // One huge element: a block's window is its own bytes, not the element.
        let big = place(&DataLoop::vector(1024, 4, 8, DataLoop::bytes(1)), 1);
        assert_eq!(big.window(4096 - 8, 4096).len(), 12);
        assert_eq!(big.max_window(64), 124);
    }

    #[test]
    fn dense_places_are_runs() {
        let c = DataLoop::bytes(8);
        let p = place(&c, 5);
        assert_eq!(p.dense(), Some(0));
        assert_eq!(p.bytes(), 40);
        assert_eq!(p.run(), 40);
    }

    #[test]
    fn interleaved_elements_are_detected() {
        // two bytes 8 apart, resized to extent 1: elements interleave.
        let v = DataLoop::vector(2, 1, 8, DataLoop::bytes(1)).resized(0, 1);
        let p = place(&v, 4);
        assert!(!p.monotone && p.windows_interleave());
        assert_eq!(p.window(2, 4), Span { lo: 1, hi: 10 });
        // Elements in decreasing memory order are not monotone either.
        let down = place(&DataLoop::bytes(4).resized(0, -4), 3);
        assert!(!down.monotone);
        assert_eq!(down.window(0, 12), Span { lo: -8, hi: 4 });
    }
}
