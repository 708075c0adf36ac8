//! The machine model the planner searches: the paper's *transfer graph* (Section 4.1). Memories
//! are nodes, channels are directed edges with a throughput curve, and one space threshold `TH`
//! bounds every intermediate buffer. A self-loop (a channel from a memory to itself: Memcpy in
//! CPU memory, GpuCopy in a framebuffer) is an edge like any other; the planner uses it to
//! convert layouts in place.
//!
//! The planner does not interpret memory or channel kinds beyond two rules of the simple
//! algorithm (Section 4.4: conversions go to a Memcpy channel in a CPU memory); what a kind
//! means is the runtime's business. A model is validated once, when it is built, so that
//! planning never meets a dangling name or an empty curve.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;

use super::curve::{Curve, CurveError};

/// What a memory is (Table 1 of the paper, plus the two sluice adds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Unregistered CPU memory.
    Sys,
    /// CPU memory registered with the network card.
    Reg,
    /// CPU memory registered for direct GPU access (zero-copy).
    Zcm,
    /// GPU framebuffer.
    Fbm,
    /// Local disk.
    Dsk,
    /// A same-node peer's shared-memory arena.
    Peer,
    /// A remote rank's memory, reached through the MPI network.
    Remote,
}

impl MemoryKind {
    /// CPU memory, where a Memcpy channel can convert layouts (the simple algorithm's rule).
    pub fn is_cpu(self) -> bool {
        matches!(self, MemoryKind::Sys | MemoryKind::Reg | MemoryKind::Zcm)
    }
}

/// What moves the data along a channel (Table 2 of the paper, plus sluice's shared-memory
/// arena and MPI network channels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Memcpy,
    Shm,
    /// Contiguous bytes handed to the MPI (request size: the message).
    Network,
    /// A derived datatype handed to the MPI's own engine, which packs and unpacks it on the way
    /// (request size: the layout's contiguous block; `transfer::mpi_calibrate`).
    MpiTyped,
    /// A derived datatype sent through sluice's pipelined protocol over the shared-memory arena
    /// (packed and unpacked by sluice's engine; request size: the layout's contiguous block),
    /// the alternative to [`ChannelKind::MpiTyped`] between ranks of one node.
    ShmTyped,
    DiskRead,
    DiskWrite,
    GpuRead,
    GpuWrite,
    GpuCopy,
    RemoteMemcpy,
}

/// Index of a memory in its [`Model`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryId(pub u32);

/// Index of a channel in its [`Model`]; the planner's lexicographic tie-break is on these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId(pub u32);

/// One memory of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    pub name: String,
    pub kind: MemoryKind,
    pub node: u32,
}

/// One directed channel; `src == dst` is a self-loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Channel {
    pub kind: ChannelKind,
    pub src: MemoryId,
    pub dst: MemoryId,
    pub curve: Curve,
}

/// Why a model (or a model file) was rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelError {
    /// The file could not be read.
    Io { path: String, reason: String },
    /// Not TOML, or not the model's schema (the parser's message).
    Syntax(String),
    /// Two memories with one name.
    DuplicateMemory(String),
    /// A channel (its index in the file) names a memory the model does not have.
    UnknownMemory { channel: usize, name: String },
    /// A channel's curve is empty or has a non-positive value.
    BadCurve { channel: usize, reason: CurveError },
    /// A channel refers to a memory index past the end (models built in code).
    BadMemoryId { channel: usize },
    /// `threshold` must be at least one byte.
    BadThreshold,
    /// `request_cost` must be finite, at least 0 and under a second.
    BadRequestCost(f64),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Io { path, reason } => write!(f, "machine model {path}: {reason}"),
            ModelError::Syntax(msg) => write!(f, "machine model: {msg}"),
            ModelError::DuplicateMemory(name) => write!(f, "machine model: memory {name:?} is defined twice"),
            ModelError::UnknownMemory { channel, name } => write!(f, "machine model: channel {channel} names unknown memory {name:?}"),
            ModelError::BadCurve { channel, reason } => write!(f, "machine model: channel {channel}: {reason}"),
            ModelError::BadMemoryId { channel } => write!(f, "machine model: channel {channel} refers to a memory that does not exist"),
            ModelError::BadThreshold => write!(f, "machine model: threshold must be at least 1 byte"),
            ModelError::BadRequestCost(c) => write!(f, "machine model: request_cost {c} must be at least 0 and under 1 (seconds)"),
        }
    }
}

impl std::error::Error for ModelError {}

/// A validated transfer graph. Immutable; share it between threads freely.
#[derive(Clone, Debug)]
pub struct Model {
    memories: Vec<Memory>,
    channels: Vec<Channel>,
    threshold: u64,
    by_name: HashMap<String, MemoryId>,
    /// Outgoing channels of each memory, in channel order.
    out: Vec<Vec<ChannelId>>,
    /// Incoming channels of each memory other than self-loops, in channel order.
    into: Vec<Vec<ChannelId>>,
    /// The MPI whose paths the model's MPI channels measured (`"openmpi"`, `"mpich"`), if known.
    mpi: Option<String>,
    /// What one request of the transfer runtime costs besides moving its bytes (seconds), if the
    /// model file sets one (`sluice-info --calibrate` fits it to copies: docs/runtime.md).
    request_cost: Option<f64>,
}

impl Model {
    /// A model from its parts; `threshold` is `TH` in bytes.
    pub fn new(memories: Vec<Memory>, channels: Vec<Channel>, threshold: u64) -> Result<Model, ModelError> {
        if threshold == 0 {
            return Err(ModelError::BadThreshold);
        }
        let mut by_name = HashMap::with_capacity(memories.len());
        for (i, m) in memories.iter().enumerate() {
            if by_name.insert(m.name.clone(), MemoryId(i as u32)).is_some() {
                return Err(ModelError::DuplicateMemory(m.name.clone()));
            }
        }
        let mut out = vec![Vec::new(); memories.len()];
        let mut into = vec![Vec::new(); memories.len()];
        for (i, c) in channels.iter().enumerate() {
            if c.src.0 as usize >= memories.len() || c.dst.0 as usize >= memories.len() {
                return Err(ModelError::BadMemoryId { channel: i });
            }
            out[c.src.0 as usize].push(ChannelId(i as u32));
            if c.src != c.dst {
                into[c.dst.0 as usize].push(ChannelId(i as u32));
            }
        }
        Ok(Model { memories, channels, threshold, by_name, out, into, mpi: None, request_cost: None })
    }

    pub fn memories(&self) -> &[Memory] {
        &self.memories
    }

    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// `TH`: the largest intermediate buffer (bytes).
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The MPI whose paths the MPI channels measured (a calibration names it).
    pub fn mpi(&self) -> Option<&str> {
        self.mpi.as_deref()
    }

    /// The model, its MPI channels measured with `mpi`.
    pub fn with_mpi(mut self, mpi: Option<String>) -> Model {
        self.mpi = mpi;
        self
    }

    /// The cost of one runtime request besides its bytes (seconds), if the model sets one.
    pub fn request_cost(&self) -> Option<f64> {
        self.request_cost
    }

    /// The model with `cost` as its request cost (seconds; finite, at least 0, under 1).
    pub fn with_request_cost(mut self, cost: Option<f64>) -> Result<Model, ModelError> {
        if let Some(c) = cost {
            if !(c.is_finite() && (0.0..1.0).contains(&c)) {
                return Err(ModelError::BadRequestCost(c));
            }
        }
        self.request_cost = cost;
        Ok(self)
    }

    /// The memory called `name`.
    pub fn memory_id(&self, name: &str) -> Option<MemoryId> {
        self.by_name.get(name).copied()
    }

    pub fn memory(&self, id: MemoryId) -> &Memory {
        &self.memories[id.0 as usize]
    }

    pub fn channel(&self, id: ChannelId) -> &Channel {
        &self.channels[id.0 as usize]
    }

    /// Channels leaving `m`, self-loops included, in channel order.
    pub fn outgoing(&self, m: MemoryId) -> &[ChannelId] {
        &self.out[m.0 as usize]
    }

    /// Channels entering `m` from other memories, in channel order.
    pub fn incoming(&self, m: MemoryId) -> &[ChannelId] {
        &self.into[m.0 as usize]
    }

    /// The first self-loop of `m` of kind `kind`.
    pub fn self_loop(&self, m: MemoryId, kind: ChannelKind) -> Option<ChannelId> {
        self.outgoing(m).iter().copied().find(|&c| self.channel(c).dst == m && self.channel(c).kind == kind)
    }
}
