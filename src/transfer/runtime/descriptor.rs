//! A transfer descriptor: one copy in flight along its path. The stream is cut into blocks;
//! block `k` goes through the hops in order, and the hops pipeline (while hop 2 converts block
//! `k`, hop 1 reads block `k + 1`). Each intermediate buffer has `depth` slots, block `k` in
//! slot `k % depth`; a block may enter a buffer once the block `depth` before it has left it
//! (finished the last hop that uses the buffer). A failed request stops new requests; the event
//! completes with the first failure once the requests in flight are done.

use std::sync::{Arc, Mutex, Weak};

use super::channel::{Step, View};
use super::engine::Runtime;
use super::event::Event;
use super::path::{Action, Buffer, Path, Side, Vw};
use super::place::{Memory, Place};
use crate::transfer::staging::{self, Staging};

/// Where an intermediate buffer's slots start (the staging pool's buffers are only 16-byte
/// aligned). Measured on the 8 MiB file -> converted memory copy (`bench/runtime/copy_stages.c`,
/// AMD EPYC VM): slots 16 bytes past a cache line took 3.0-3.6 ms, page-aligned 1.8-2.0 ms (the
/// kernel's copy from the page cache and the conversion both run on aligned lines). The extra
/// page can put a buffer in the pool's next size class; the pages past the slots are never
/// touched, so they cost address space, not memory.
const SLAB_ALIGN: usize = 4096;

struct State {
    /// `done[h][k]`: block `k` finished hop `h`.
    done: Vec<Vec<bool>>,
    /// Next block each hop issues (in order).
    issued: Vec<usize>,
    in_flight: usize,
    finished: usize,
    error: Option<String>,
    /// The intermediate buffers' memory, one per buffer with all its slots: from the staging pool
    /// (`transfer::staging`), so a copy reuses the memory of the last one of its size instead of
    /// allocating, clearing and faulting in fresh pages, and shares the pool's budget and leak
    /// count with the protocols' staging. Slots start at a page boundary ([`SLAB_ALIGN`]).
    slabs: Vec<Staging>,
}

pub struct Transfer {
    runtime: Weak<Runtime>,
    src: Place,
    dst: Place,
    path: Arc<Path>,
    priority: i32,
    /// When the copy started among this runtime's copies (its place in first-come order).
    arrival: u64,
    blocks: usize,
    /// For each intermediate buffer: the hop that first writes it and the last hop that uses it.
    writer: Vec<usize>,
    last_use: Vec<usize>,
    state: Mutex<State>,
    event: Event,
}

fn buffers_of(a: Action) -> Vec<usize> {
    let b = |v: Vw| match v {
        Vw::Buf(j) => Some(j),
        Vw::Place(_) => None,
    };
    match a {
        Action::Read { into, .. } => b(into).into_iter().collect(),
        Action::Write { from, .. } => b(from).into_iter().collect(),
        Action::Convert { from, to } => b(from).into_iter().chain(b(to)).collect(),
    }
}

impl Transfer {
    pub fn new(runtime: Weak<Runtime>, src: Place, dst: Place, path: Arc<Path>, priority: i32, arrival: u64) -> Transfer {
        let blocks = src.bytes().div_ceil(path.block);
        let n = path.buffers.len();
        let (mut writer, mut last_use) = (vec![usize::MAX; n], vec![0; n]);
        for (h, hop) in path.hops.iter().enumerate() {
            for j in buffers_of(hop.action) {
                writer[j] = writer[j].min(h);
                last_use[j] = h;
            }
        }
        let hops = path.hops.len();
        let state = State {
            done: vec![vec![false; blocks]; hops],
            issued: vec![0; hops],
            in_flight: 0,
            finished: 0,
            error: None,
            slabs: Vec::new(),
        };
        Transfer { runtime, src, dst, path, priority, arrival, blocks, writer, last_use, state: Mutex::new(state), event: Event::new() }
    }

    pub fn event(&self) -> Event {
        self.event.clone()
    }

    pub fn priority(&self) -> i32 {
        self.priority
    }

    pub fn arrival(&self) -> u64 {
        self.arrival
    }

    /// Bytes of intermediate buffers this transfer holds while it runs.
    pub fn space(&self) -> usize {
        self.path.slot.iter().sum::<usize>() * self.path.depth
    }

    /// The channels this transfer's hops use, each once.
    fn channels(&self) -> Vec<usize> {
        self.path.channels()
    }

    /// The budget admitted it: allocate the slots, suspend lower priorities on its channels and
    /// issue the first requests.
    pub fn start(self: &Arc<Self>) {
        if let Some(rt) = self.runtime.upgrade() {
            rt.using(&self.channels(), self.priority, true);
        }
        let slabs = self.path.slot.iter().map(|&s| staging::take(s * self.path.depth + SLAB_ALIGN)).collect();
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.slabs = slabs;
        self.pump(&mut g);
    }

    fn ready(&self, g: &State, h: usize, k: usize) -> bool {
        if h > 0 && !g.done[h - 1][k] {
            return false;
        }
        let d = self.path.depth;
        for j in buffers_of(self.path.hops[h].action) {
            if self.writer[j] == h && k >= d && !g.done[self.last_use[j]][k - d] {
                return false;
            }
        }
        !(self.path.serial && h == 0 && k > 0 && !g.done[self.path.hops.len() - 1][k - 1])
    }

    /// Issues every request whose dependencies are met.
    fn pump(self: &Arc<Self>, g: &mut State) {
        if g.error.is_some() {
            return;
        }
        let Some(rt) = self.runtime.upgrade() else {
            g.error = Some("the transfer runtime was shut down".into());
            return;
        };
        for h in 0..self.path.hops.len() {
            while g.issued[h] < self.blocks && self.ready(g, h, g.issued[h]) {
                let k = g.issued[h];
                g.issued[h] += 1;
                g.in_flight += 1;
                rt.submit(self.path.hops[h].channel.0 as usize, self, h, k);
            }
        }
    }

    /// A request finished.
    pub fn finished(self: &Arc<Self>, h: usize, k: usize, r: Result<(), String>) {
        let outcome = {
            let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
            g.in_flight -= 1;
            match r {
                Ok(()) => {
                    g.done[h][k] = true;
                    if h + 1 == self.path.hops.len() {
                        g.finished += 1;
                    }
                }
                Err(e) => {
                    g.error.get_or_insert(e);
                }
            }
            self.pump(&mut g);
            if g.in_flight == 0 && (g.error.is_some() || g.finished == self.blocks) {
                g.slabs.clear(); // back to the pool
                Some(g.error.clone().map_or(Ok(()), Err))
            } else {
                None
            }
        };
        if let Some(o) = outcome {
            if let Some(rt) = self.runtime.upgrade() {
                rt.using(&self.channels(), self.priority, false);
                rt.release(self.space(), self.priority);
            }
            self.event.complete(o);
        }
    }

    fn place(&self, s: Side) -> &Place {
        match s {
            Side::Src => &self.src,
            Side::Dst => &self.dst,
        }
    }

    fn range(&self, k: usize) -> (usize, usize) {
        let a = k * self.path.block;
        (a, (a + self.path.block).min(self.src.bytes()))
    }

    fn slot(&self, j: usize, k: usize) -> *mut u8 {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let at = (k % self.path.depth) * self.path.slot[j];
        let slab = &mut g.slabs[j];
        let base = slab.as_mut_ptr();
        let base = base.wrapping_add(base.align_offset(SLAB_ALIGN));
        assert!(at + self.path.slot[j] + SLAB_ALIGN <= slab.len(), "slot of block {k} past its buffer");
        base.wrapping_add(at)
    }

    fn host_base(&self, s: Side) -> *mut u8 {
        match self.place(s).memory {
            Memory::Host(p) => p,
            Memory::File { .. } => unreachable!("paths convert host memory only"),
        }
    }

    /// The layout `v` as seen by block `k`.
    fn view(&self, v: Vw, k: usize) -> View {
        let (a, b) = self.range(k);
        match v {
            Vw::Place(s) => {
                let p = self.place(s);
                View::Typed { base: self.host_base(s), ty: p.ty.clone(), count: p.count }
            }
            Vw::Buf(j) => match self.path.buffers[j] {
                Buffer::Packed => View::Packed { at: self.slot(j, k) },
                Buffer::Window(s) => {
                    let p = self.place(s);
                    let w = p.window(a, b);
                    // The slot holds memory [w.lo, w.hi) of the layout: its elements are
                    // addressed from lo bytes before the slot (only the window is touched).
                    View::Typed { base: self.slot(j, k).wrapping_offset(-w.lo as isize), ty: p.ty.clone(), count: p.count }
                }
            },
        }
    }

    /// The file bytes block `k` moves on side `s`: (fd, offset, length), and whether they are the
    /// block's window (else its packed range).
    fn file_span(&self, s: Side, k: usize) -> (i32, u64, usize) {
        let (a, b) = self.range(k);
        let p = self.place(s);
        let Memory::File { fd, offset } = p.memory else { unreachable!("file hops have file places") };
        match p.dense() {
            Some(d) => (fd, (offset + d + a as i64) as u64, b - a),
            None => {
                let w = p.window(a, b);
                (fd, (offset + w.lo) as u64, w.len())
            }
        }
    }

    /// Memory a read lands in or a write comes from.
    fn run_at(&self, v: Vw, k: usize) -> *mut u8 {
        let (a, _) = self.range(k);
        match v {
            Vw::Buf(j) => self.slot(j, k),
            Vw::Place(s) => {
                let d = self.place(s).dense().expect("runs of dense places only");
                self.host_base(s).wrapping_offset((d + a as i64) as isize)
            }
        }
    }

    /// Request (`h`, `k`) resolved to addresses.
    pub fn step(&self, h: usize, k: usize) -> Step {
        let (first, last) = self.range(k);
        match self.path.hops[h].action {
            Action::Convert { from, to } => Step::Convert { from: self.view(from, k), to: self.view(to, k), first, last },
            Action::Read { file, into } => {
                let (fd, offset, len) = self.file_span(file, k);
                Step::Read { fd, offset, into: self.run_at(into, k), len }
            }
            Action::Write { from, file } => {
                let (fd, offset, len) = self.file_span(file, k);
                Step::Write { fd, offset, from: self.run_at(from, k), len }
            }
        }
    }
}
