//! An explicit, resumable segment: the interpreter's position in the packed stream as a stack of
//! loop positions, the state that checkpoints snapshot (paper §3.2.4, Fig. 5).
//!
//! [`SegState`] holds offsets only (stream position, element index, per level the block and copy
//! index and the memory offset of that level's origin relative to the buffer), never addresses
//! or references, so one snapshot serves every buffer and can be stored apart from the type.
//! [`Cursor`] binds a state to its dataloop to move it: [`Cursor::process`] emits the memory runs
//! of the next bytes and advances; [`Cursor::catch_up`] advances without emitting (the paper's
//! catch-up phase, linear in the runs skipped); [`SegState::seek`] builds the state at any stream
//! position from the root in O(depth · log n) with [`DataLoop::block_at`], which is how
//! checkpoints are created.

use super::ir::DataLoop;

/// One loop level: block `i` of the node, copy `j` of that block's child (0 when the whole block
/// is one run), `base` the memory offset of the node's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Frame {
    i: usize,
    j: usize,
    base: i64,
}

/// A position in the packed stream of `count` elements of one dataloop (see the module doc).
/// Plain data: `Clone` is the checkpoint copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegState {
    /// Stream position.
    pos: usize,
    /// Element index (`count` at the end of the stream).
    k: usize,
    /// Loop levels from the element's root down to the level holding the current run; empty when
    /// the element is contiguous or at the end.
    frames: Vec<Frame>,
    /// Bytes of the current run already consumed.
    run_off: usize,
}

impl SegState {
    /// The state at stream byte `pos` of `count` elements of `dl` (`pos <= dl.size * count`).
    pub fn seek(dl: &DataLoop, count: usize, pos: usize) -> SegState {
        let total = dl.size * count;
        assert!(pos <= total, "position {pos} outside the stream of {total} bytes");
        let mut st = SegState { pos, k: count, frames: Vec::with_capacity(dl.depth as usize), run_off: 0 };
        if pos == total {
            return st;
        }
        st.k = pos / dl.size;
        let mut skip = pos % dl.size;
        if dl.contiguous {
            st.run_off = skip;
            return st;
        }
        let (mut node, mut base) = (dl, st.k as i64 * dl.extent);
        loop {
            // `skip < node.size`, so the block found is non-empty.
            let (i, s) = node.block_at(skip);
            let (d, bl, c) = node.block(i);
            if DataLoop::block_contiguous(bl, c) {
                st.frames.push(Frame { i, j: 0, base });
                st.run_off = s;
                return st;
            }
            let j = s / c.size;
            st.frames.push(Frame { i, j, base });
            if c.contiguous {
                st.run_off = s % c.size;
                return st;
            }
            (node, base, skip) = (c, base + d + j as i64 * c.extent, s % c.size);
        }
    }

    /// Stream position.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes this snapshot occupies (the `C` of the checkpoint-interval model).
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.frames.capacity() * std::mem::size_of::<Frame>()
    }
}

/// A [`SegState`] bound to its dataloop, with the node of every level at hand.
pub struct Cursor<'a, 's> {
    dl: &'a DataLoop,
    count: usize,
    st: &'s mut SegState,
    /// `nodes[l]` is the node whose loop `st.frames[l]` walks.
    nodes: Vec<&'a DataLoop>,
}

impl<'a, 's> Cursor<'a, 's> {
    /// Binds `st`, a state of `count` elements of `dl`, to move it (O(depth)).
    pub fn new(dl: &'a DataLoop, count: usize, st: &'s mut SegState) -> Self {
        let mut nodes = Vec::with_capacity(st.frames.len());
        let mut node = dl;
        for f in &st.frames {
            nodes.push(node);
            node = node.block(f.i).2;
        }
        Cursor { dl, count, st, nodes }
    }

    /// Stream position.
    pub fn pos(&self) -> usize {
        self.st.pos
    }

    /// The current run `(offset, len)`, whole (`run_off` not applied); `None` at the end.
    fn run(&self) -> Option<(i64, usize)> {
        if self.st.k >= self.count {
            return None;
        }
        let Some(f) = self.st.frames.last() else {
            // A contiguous element is one run.
            return Some((self.st.k as i64 * self.dl.extent + self.dl.true_lb, self.dl.size));
        };
        let (d, bl, c) = self.nodes[self.nodes.len() - 1].block(f.i);
        Some(if DataLoop::block_contiguous(bl, c) {
            (f.base + d + c.true_lb, bl * c.size)
        } else {
            (f.base + d + f.j as i64 * c.extent + c.true_lb, c.size)
        })
    }

    /// Pushes the levels down to the first run of `node` at `base` from block `i`, copy `j`;
    /// false (nothing pushed) when the node has no bytes left there.
    fn descend(&mut self, node: &'a DataLoop, base: i64, mut i: usize, mut j: usize) -> bool {
        while i < node.nblocks() {
            let (d, bl, c) = node.block(i);
            if bl == 0 || c.size == 0 || (j >= bl) {
                (i, j) = (i + 1, 0);
                continue;
            }
            self.st.frames.push(Frame { i, j, base });
            self.nodes.push(node);
            if DataLoop::block_contiguous(bl, c) || c.contiguous || self.descend(c, base + d + j as i64 * c.extent, 0, 0) {
                return true;
            }
            self.st.frames.pop();
            self.nodes.pop();
            j += 1;
        }
        false
    }

    /// Moves to the start of the next run (the current one is finished).
    fn next_run(&mut self) {
        self.st.run_off = 0;
        while let Some(f) = self.st.frames.pop() {
            let node = self.nodes.pop().expect("one node per frame");
            let (_, bl, c) = node.block(f.i);
            let (i, j) = if DataLoop::block_contiguous(bl, c) { (f.i + 1, 0) } else { (f.i, f.j + 1) };
            if self.descend(node, f.base, i, j) {
                return;
            }
        }
        self.st.k += 1;
        if self.st.k < self.count && !self.dl.contiguous {
            let found = self.descend(self.dl, self.st.k as i64 * self.dl.extent, 0, 0);
            debug_assert!(found, "a non-empty element has a run");
        }
    }

    /// The run after the current one when it is found without leaving the deepest level (next
    /// copy of a block, next block-contiguous block, next contiguous element): O(1), the common
    /// case. Moves there and returns it; `None` (nothing moved) otherwise.
    fn sibling(&mut self) -> Option<(i64, usize)> {
        let (Some(f), Some(node)) = (self.st.frames.last_mut(), self.nodes.last()) else {
            if self.dl.contiguous && self.st.k + 1 < self.count {
                self.st.k += 1;
                return Some((self.st.k as i64 * self.dl.extent + self.dl.true_lb, self.dl.size));
            }
            return None;
        };
        let (d, bl, c) = node.block(f.i);
        if !DataLoop::block_contiguous(bl, c) {
            if f.j + 1 >= bl {
                return None;
            }
            f.j += 1;
            return Some((f.base + d + f.j as i64 * c.extent + c.true_lb, c.size));
        }
        if f.i + 1 >= node.nblocks() {
            return None;
        }
        let (d, bl, c) = node.block(f.i + 1);
        if bl == 0 || c.size == 0 || !DataLoop::block_contiguous(bl, c) {
            return None;
        }
        f.i += 1;
        Some((f.base + d + c.true_lb, bl * c.size))
    }

    /// Emits the memory runs `(offset, len)` of the next `n` stream bytes (fewer at the end) in
    /// stream order and advances past them; returns the bytes covered.
    pub fn process(&mut self, n: usize, mut emit: impl FnMut(i64, usize)) -> usize {
        let start = self.st.pos;
        let mut budget = n;
        let mut cur = if budget > 0 { self.run() } else { None };
        while budget > 0 {
            let Some((off, len)) = cur else { break };
            let take = (len - self.st.run_off).min(budget);
            emit(off + self.st.run_off as i64, take);
            budget -= take;
            self.st.pos += take;
            if self.st.run_off + take < len {
                self.st.run_off += take;
                break;
            }
            self.st.run_off = 0;
            cur = self.sibling();
            if cur.is_none() {
                self.next_run();
                cur = self.run();
            }
        }
        self.st.pos - start
    }

    /// Advances to stream byte `pos` (`>=` the current position) without emitting: the catch-up
    /// phase. Returns the bytes skipped.
    pub fn catch_up(&mut self, pos: usize) -> usize {
        assert!(pos >= self.st.pos, "catch-up cannot go backwards");
        self.process(pos - self.st.pos, |_, _| {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::interp::for_each_run;
    use crate::datatype::testgen::arb_dl;
    use proptest::prelude::*;

    /// Memory offset of every stream byte of `[first, last)`, through the interpreter.
    fn reference(dl: &DataLoop, count: usize, first: usize, last: usize) -> Vec<i64> {
        let mut v = vec![];
        for_each_run(dl, count, first, last, |o, l| v.extend(o..o + l as i64));
        v
    }

    fn via_cursor(dl: &DataLoop, count: usize, st: &mut SegState, n: usize) -> Vec<i64> {
        let mut v = vec![];
        Cursor::new(dl, count, st).process(n, |o, l| v.extend(o..o + l as i64));
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Seeking then processing in arbitrary pieces gives the interpreter's byte offsets, and a
        /// state reached by processing equals the state built by seeking to the same position.
        #[test]
        fn resumes_like_the_interpreter(
            dl in arb_dl(),
            count in 0usize..4,
            start in any::<prop::sample::Index>(),
            pieces in prop::collection::vec(0usize..40, 1..8),
        ) {
            let total = dl.size * count;
            let first = start.index(total + 1);
            let mut st = SegState::seek(&dl, count, first);
            let mut at = first;
            for p in pieces {
                let got = via_cursor(&dl, count, &mut st, p);
                let end = (at + p).min(total);
                prop_assert_eq!(&got, &reference(&dl, count, at, end));
                at = end;
                prop_assert_eq!(st.pos(), at);
                // Equal as positions: a finished run and the start of the next are the same
                // byte, so compare what both states process next.
                let mut sought = SegState::seek(&dl, count, at);
                prop_assert_eq!(via_cursor(&dl, count, &mut sought, 16), via_cursor(&dl, count, &mut st.clone(), 16));
            }
        }

        #[test]
        fn catch_up_matches_seek(dl in arb_dl(), count in 0usize..4, a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
            let total = dl.size * count;
            let (a, b) = (a.index(total + 1), b.index(total + 1));
            let (a, b) = (a.min(b), a.max(b));
            let mut st = SegState::seek(&dl, count, a);
            prop_assert_eq!(Cursor::new(&dl, count, &mut st).catch_up(b), b - a);
            prop_assert_eq!(via_cursor(&dl, count, &mut st, total - b), reference(&dl, count, b, total));
        }
    }

    #[test]
    fn vector_runs_and_footprint() {
        let dl = DataLoop::vector(3, 2, 32, DataLoop::bytes(8));
        let mut st = SegState::seek(&dl, 2, 20);
        let mut runs = vec![];
        Cursor::new(&dl, 2, &mut st).process(40, |o, l| runs.push((o, l)));
        // Element 0: bytes 20..48 are run 1 from offset 4, run 2; element 1 (extent 80) 0..12.
        assert_eq!(runs, [(36, 12), (64, 16), (80, 12)]);
        assert!(st.footprint() >= std::mem::size_of::<SegState>());
    }
}
