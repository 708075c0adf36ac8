//! What the planner is asked (a [`Transfer`]) and what it answers (a [`Plan`]): an immutable
//! description of a multi-hop path that the runtime only instantiates, with an `EXPLAIN`-style
//! rendering so that a choice can be read and argued with.

use std::fmt::Write;

use super::layout::{prefix, Layout, LayoutError, Shape, MAX_DIMS};
use super::model::{ChannelId, MemoryId, Model};

/// A request to move an instance from one memory and layout to another.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    src: MemoryId,
    src_layout: Layout,
    dst: MemoryId,
    dst_layout: Layout,
    shape: Shape,
}

impl Transfer {
    /// A transfer of an instance with power-of-two `extents` (x first) and `field_bytes` bytes
    /// per entry; both layouts must be layouts of that index space.
    pub fn new(
        src: MemoryId,
        src_layout: Layout,
        dst: MemoryId,
        dst_layout: Layout,
        extents: &[u64],
        field_bytes: u64,
    ) -> Result<Transfer, LayoutError> {
        let shape = Shape::new(extents, field_bytes)?;
        Layout::new(src_layout.components(), shape.dims())?;
        Layout::new(dst_layout.components(), shape.dims())?;
        Ok(Transfer { src, src_layout, dst, dst_layout, shape })
    }

    pub fn src(&self) -> MemoryId {
        self.src
    }

    pub fn dst(&self) -> MemoryId {
        self.dst
    }

    pub fn src_layout(&self) -> &Layout {
        &self.src_layout
    }

    pub fn dst_layout(&self) -> &Layout {
        &self.dst_layout
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The layout changes on the way.
    pub fn converts(&self) -> bool {
        self.src_layout.converts_to(&self.dst_layout)
    }

    /// Both memories exist in `model`.
    pub(super) fn fits(&self, model: &Model) -> bool {
        let n = model.memories().len();
        (self.src.0 as usize) < n && (self.dst.0 as usize) < n
    }
}

/// One direct transfer of a plan (the paper's XD).
#[derive(Clone, Debug, PartialEq)]
pub struct Hop {
    pub channel: ChannelId,
    pub from_layout: Layout,
    pub to_layout: Layout,
    /// PREFIX: the request size the channel is sent (bytes; entries of one field when the
    /// common prefix leaves out F).
    pub request: f64,
    /// The channel's predicted throughput at that request size (bytes/s).
    pub throughput: f64,
}

/// A planned path: immutable once made, shared through the plan cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub hops: Vec<Hop>,
    /// Every buffer, source and destination included (one more than hops).
    pub buffers: Vec<(MemoryId, Layout)>,
    /// Block factor `b_d` of each dimension, for every `d_in` / `d_out` of the path.
    pub block: Vec<u64>,
    /// The slowest hop's throughput: what the pipelined path sustains (bytes/s).
    pub throughput: f64,
}

impl Plan {
    /// The plan moving `t` along `channels` with buffer layouts `layouts` (source and destination
    /// included) and block-factor exponents `u`.
    pub(super) fn build(model: &Model, t: &Transfer, channels: &[ChannelId], layouts: &[Layout], u: &[u32; MAX_DIMS]) -> Plan {
        let shape = t.shape();
        let hops: Vec<Hop> = channels
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let lr = prefix(&layouts[i], &layouts[i + 1], shape).log2_at(shape, u);
                Hop {
                    channel: c,
                    from_layout: layouts[i],
                    to_layout: layouts[i + 1],
                    request: lr.exp2(),
                    throughput: model.channel(c).curve.at_log2(lr),
                }
            })
            .collect();
        let mut buffers = vec![(t.src(), layouts[0])];
        buffers.extend(channels.iter().zip(&layouts[1..]).map(|(&c, &l)| (model.channel(c).dst, l)));
        Plan {
            throughput: hops.iter().map(|h| h.throughput).fold(f64::INFINITY, f64::min),
            hops,
            buffers,
            block: u[..shape.dims()].iter().map(|&x| 1u64 << x).collect(),
        }
    }

    /// Channels of the path, in order.
    pub fn channels(&self) -> Vec<ChannelId> {
        self.hops.iter().map(|h| h.channel).collect()
    }

    /// One line per hop, like a query planner's EXPLAIN: channel kind, memories, layouts, request
    /// size and predicted throughput; `*` marks the hops that limit the plan. `model` is the one
    /// the plan was made for.
    pub fn explain(&self, model: &Model) -> String {
        let blocks: Vec<String> = self.block.iter().enumerate().map(|(d, b)| format!("b_{}={b}", ['x', 'y', 'z'][d.min(2)])).collect();
        let mut s = format!("plan: {} over {} hop(s), block {}\n", rate(self.throughput), self.hops.len(), blocks.join(" "));
        for (i, h) in self.hops.iter().enumerate() {
            let c = model.channel(h.channel);
            let _ = writeln!(
                s,
                "{} {}. {:<13} {} -> {}  {} -> {}  request {}  {}",
                if h.throughput <= self.throughput { '*' } else { ' ' },
                i + 1,
                format!("{:?}", c.kind),
                model.memory(c.src).name,
                model.memory(c.dst).name,
                h.from_layout.show(&self.block),
                h.to_layout.show(&self.block),
                bytes(h.request),
                rate(h.throughput),
            );
        }
        s
    }
}

fn rate(bps: f64) -> String {
    format!("{:.3} GB/s", bps / 1e9)
}

fn bytes(b: f64) -> String {
    match b {
        b if b >= (1u64 << 30) as f64 => format!("{:.1} GiB", b / (1u64 << 30) as f64),
        b if b >= (1u64 << 20) as f64 => format!("{:.1} MiB", b / (1u64 << 20) as f64),
        b if b >= 1024.0 => format!("{:.1} KiB", b / 1024.0),
        b => format!("{b:.0} B"),
    }
}
