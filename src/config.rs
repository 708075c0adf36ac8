//! Every `SLUICE_*` environment variable, declared once (name, default, accepted values, doc),
//! parsed once at `MPI_Init` into a typed [`Config`], and validated: a bad value is a
//! [`ConfigError`] that names the variable, the value and what is accepted.
//!
//! `sluice-info` prints [`PARAMS`]; docs/configuration.md documents the same table.

use std::fmt;

/// Declaration of one configuration variable.
#[derive(Debug)]
pub struct Param {
    /// Environment variable name.
    pub name: &'static str,
    /// Value used when the variable is unset.
    pub default: &'static str,
    /// What the parser accepts, as shown in error messages.
    pub accepted: &'static str,
    /// One-line description.
    pub doc: &'static str,
}

const BOOL: &str = "0, 1, no, yes, false, true, off, on";

/// All configuration variables sluice reads.
pub const PARAMS: &[Param] = &[
    Param {
        name: "SLUICE_DISABLE",
        default: "0",
        accepted: BOOL,
        doc: "Pure pass-through: every intercepted call goes straight to the MPI; no other SLUICE_* variable is read.",
    },
    Param {
        name: "SLUICE_STATS",
        default: "0",
        accepted: BOOL,
        doc: "Count calls, bytes and time per call family; rank 0 prints the job-wide table at MPI_Finalize.",
    },
    Param {
        name: "SLUICE_PROFILE",
        default: "",
        accepted: "a path prefix (empty: off)",
        doc: "Record bytes and messages each rank sends to every other (world ranks), CPU and GPU traffic apart, from point-to-point calls and the collectives of fixed pattern; at MPI_Finalize rank 0 writes the job's communication matrix to <prefix>.matrix (docs/mapping.md), which sluice-map reads.",
    },
    Param {
        name: "SLUICE_LOG",
        default: "warn",
        accepted: "off, error, warn, info, debug, trace; plus `plan`, alone or after a comma (plan, debug,plan)",
        doc: "Log level; each line is prefixed with the rank and written with a single write(2). `plan` also logs each new plan once: a copy's path (sluice_copy) with its predicted throughput per hop, each route a send or receive takes (staged, pipelined in chunks or through the shared-memory arena) per datatype and size class, and how each collective is converted.",
    },
    Param {
        name: "SLUICE_DATATYPE",
        default: "1",
        accepted: BOOL,
        doc: "Compile committed datatypes with sluice's engine and serve MPI_Pack/MPI_Unpack/MPI_Pack_size with it; 0 leaves them to the MPI.",
    },
    Param {
        name: "SLUICE_P2P",
        default: "1",
        accepted: BOOL,
        doc: "Point-to-point protocol: sends and receives of non-contiguous datatypes are packed/unpacked by sluice's engine and travel as contiguous bytes; 0 leaves them to the MPI (needs SLUICE_DATATYPE=1).",
    },
    Param {
        name: "SLUICE_COLL",
        default: "1",
        accepted: BOOL,
        doc: "Collective protocol: data-movement collectives (and their nonblocking forms) with a non-contiguous buffer are packed/unpacked by sluice's engine and run on contiguous bytes; 0 leaves them to the MPI (needs SLUICE_DATATYPE=1).",
    },
    Param {
        name: "SLUICE_P2P_MPI_ABOVE",
        default: "auto",
        accepted: "auto, off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 4M",
        doc: "Point-to-point messages of at least this many packed bytes whose type's smallest contiguous block is at least SLUICE_P2P_MPI_BLOCK bytes are left to the MPI's own engine, which moves large blocks well; auto = 0 (every size) with Open MPI; with MPICH, below the pipeline threshold blocks of 256 B and more (not a struct's), above it only to or from a peer on another node (or with SLUICE_SHM_ARENA=off) from 512K on (measured, docs/benchmarks.md \"Automatic path\"); a byte count applies that rule to both MPIs and every peer; off never.",
    },
    Param {
        name: "SLUICE_P2P_LEARN",
        default: "1",
        accepted: BOOL,
        doc: "With SLUICE_P2P_MPI_ABOVE=auto, sends of 32 KiB and more to a rank of the same node learn per datatype and size which of the MPI's engine and sluice's path is faster, from the application's own blocking sends (docs/protocol.md, \"Learned per type\"); 0 keeps the rules alone.",
    },
    Param {
        name: "SLUICE_P2P_MPI_BLOCK",
        default: "64",
        accepted: "a byte count with optional K, M or G suffix (powers of 1024), e.g. 64",
        doc: "Smallest contiguous block (bytes) that makes a large message go to the MPI's engine (see SLUICE_P2P_MPI_ABOVE).",
    },
    Param {
        name: "SLUICE_REORDER",
        default: "cart",
        accepted: "cart, all, off (also 1/on/yes/true = all, 0/no/false = off)",
        doc: "Topology constructors called with reorder = true on a communicator that spans nodes: sluice places the topology's vertices so that its edges (weighted where the call gives weights) cross between nodes as little as possible (docs/mapping.md). cart: MPI_Cart_create and MPI_Graph_create; all: also MPI_Dist_graph_create and MPI_Dist_graph_create_adjacent (vertex v goes to new rank v with the edges it was given: a program that keeps its data by process instead of by rank gets another vertex's neighbours). Where sluice does not reorder, the MPI's constructor runs with reorder = false. off passes such calls to the MPI unchanged.",
    },
    Param {
        name: "SLUICE_REORDER_MATRIX",
        default: "",
        accepted: "a path to a communication matrix (sluice-matrix 1, as SLUICE_PROFILE writes it; empty: none)",
        doc: "Reordering in the topology constructors weighs the pairs of the communicator by the bytes this matrix records between their world ranks instead of by the call's edges (when it records any traffic among them): profile a run with SLUICE_REORDER=off and SLUICE_PROFILE, then pass its .matrix here. Read by the communicator's rank 0 at each reordering call; a file that cannot be read or parsed, or whose rank count is not the job's, is reported in a warning and the call's edges are used.",
    },
    Param {
        name: "SLUICE_COLL_MPI_BLOCK",
        default: "64",
        accepted: "off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 512",
        doc: "Collective blocks whose type's smallest contiguous block is at least this many bytes are left to the MPI's own engine: a call with no smaller block goes to the MPI unchanged, and MPI_Alltoallw/MPI_Neighbor_alltoallw pass such blocks with the application's own type while staging the others (measured with the halo exchange on both MPIs, docs/benchmarks.md); off stages every non-contiguous block.",
    },
    Param {
        name: "SLUICE_COLL_REMOTE_SPLIT",
        default: "auto",
        accepted: "auto, off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 64K",
        doc: "Staged MPI_Alltoallw/MPI_Neighbor_alltoallw blocks of at least this many bytes whose peer is on another node (and every staged block of an MPI_Alltoall/MPI_Allgather with such a peer: one type for all peers) are laid out in two runs with a gap, so that the MPI sees a non-contiguous buffer and Open MPI's ob1 sends them by its copy pipeline instead of its RDMA protocol, which stalls in exchanges over TCP (docs/protocol.md, \"Collectives\"); auto = 64K when the MPI's point-to-point layer is Open MPI's ob1, off otherwise.",
    },
    Param {
        name: "SLUICE_P2P_REMOTE_SPLIT",
        default: "auto",
        accepted: "auto, off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 64K",
        doc: "Messages of at least this many bytes that sluice sends itself to a rank on another node (a pipelined transfer's chunks, staged messages) are laid out in two runs with a gap, as SLUICE_COLL_REMOTE_SPLIT does for collectives: Open MPI's ob1 then sends them by its copy pipeline instead of its RDMA protocol, whose extra round trip per message shows on a link with latency (docs/protocol.md); the bytes the receiver gets are the same. Staged receives from a rank on another node land the same way in two runs (under MPICH's UCX, which otherwise completes a window of contiguous messages together at its end, so that each unpack waits for the last byte); auto = sends from 64K when the MPI's point-to-point layer is Open MPI's ob1, receives from 64K when it is not (MPICH), only when the job spans nodes; a byte count applies to both.",
    },
    Param {
        name: "SLUICE_STAGING_CACHE",
        default: "64M",
        accepted: "a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 65536, 64M",
        doc: "Bytes of idle staging buffers the point-to-point protocol keeps for reuse (per process); buffers beyond it are returned to the system.",
    },
    Param {
        name: "SLUICE_PIPELINE_THRESHOLD",
        default: "256K",
        accepted: "off, or a byte count from 128 with optional K, M or G suffix (powers of 1024), e.g. 256K; the same on every rank",
        doc: "Point-to-point messages of at least this many packed bytes of a non-contiguous type travel pipelined (pack, transfer and unpack overlap in chunks; docs/protocol.md). The size rounded up to an odd number is reserved: a message of exactly that many bytes is always pipelined. Must be equal on all ranks (checked at MPI_Init); off never pipelines.",
    },
    Param {
        name: "SLUICE_PIPELINE_CHUNK",
        default: "128K",
        accepted: "a byte count from 64 to 1G with optional K, M or G suffix (powers of 1024), e.g. 128K",
        doc: "Chunk size of a pipelined transfer, chosen by the sender.",
    },
    Param {
        name: "SLUICE_PIPELINE_DEPTH",
        default: "4",
        accepted: "a chunk count from 1 to 64",
        doc: "Chunks a pipelined receive has in flight at once (its staging ring, in chunks).",
    },
    Param {
        name: "SLUICE_PIPELINE_REMOTE_CHUNKS",
        default: "8",
        accepted: "off, or a chunk count from 1 to 1024",
        doc: "A pipelined message to a rank on another node is cut into at most this many chunks (each still at least SLUICE_PIPELINE_CHUNK): every chunk is one message of the MPI's network transport, with a rendezvous of its own, and over a link with latency those round trips add up (measured with MPICH at 1 Gbit/s + 50 us: a 4 MiB vect:8:4 ping-pong 1.035x the bare MPI's time in 32 chunks of 128 KiB, 0.994x in 8; docs/protocol.md); off uses SLUICE_PIPELINE_CHUNK as within a node.",
    },
    Param {
        name: "SLUICE_SHM_ARENA",
        default: "256M",
        accepted: "off, or a byte count from 1M with optional K, M, G suffix",
        doc: "Shared-memory arena per process that pipelined transfers to ranks on the same node pack into (the receiver unpacks from it); off: their chunks travel through the MPI.",
    },
    Param {
        name: "SLUICE_PROGRESS_THREAD",
        default: "0",
        accepted: BOOL,
        doc: "A thread per process drives sluice's progress engine (pipelined chunks, freed requests) while the application computes; sluice then initializes the MPI at MPI_THREAD_MULTIPLE, and MPI_Init fails (MPI_ERR_ARG, as for any bad setting) when the MPI cannot give it.",
    },
    Param {
        name: "SLUICE_THREADS",
        default: "auto",
        accepted: "auto, or a worker count from 1 to 1024",
        doc: "Worker threads for parallel (checkpointed) datatype processing; auto = one per physical core (hwloc); 1 disables it.",
    },
    Param {
        name: "SLUICE_PARALLEL_MIN",
        default: "off",
        accepted: "off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 65536, 4M",
        doc: "MPI_Pack/MPI_Unpack of at least this many packed bytes run on SLUICE_THREADS workers (RW-CP), unless the type's SLUICE_HINT_PARALLEL is off or epsilon says waking the workers does not pay; off (default until range kernels exist: the chunk path is slower than the serial kernels, docs/benchmarks.md) never.",
    },
    Param {
        name: "SLUICE_PACK_ENGINE",
        default: "auto",
        accepted: "auto, sluice, mpi",
        doc: "Who packs and unpacks a committed type's whole elements (MPI_Pack/MPI_Unpack; a type that learned the MPI's engine both ways also has its point-to-point messages left to the MPI): auto = per type and direction, the faster of sluice's kernel and the MPI's engine, timed on the type's first calls of at least 2 KiB (docs/architecture.md, \"Engine choice\"); sluice or mpi = always that one (the MPI's only for calls within its int sizes).",
    },
    Param {
        name: "SLUICE_CKPT_EPSILON",
        default: "0.2",
        accepted: "a decimal number greater than 0 and at most 10, e.g. 0.2",
        doc: "RW-CP: tolerated scheduling overhead as a fraction of the processing time (the paper's epsilon): decides whether waking the workers pays and picks the checkpoint interval; a type's SLUICE_HINT_EPSILON overrides it.",
    },
    Param {
        name: "SLUICE_CKPT_MEMORY",
        default: "16M",
        accepted: "a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 65536, 16M",
        doc: "Bytes all datatypes' checkpoint tables may take together (per process); least recently used tables are evicted first.",
    },
    Param {
        name: "SLUICE_GPU",
        default: "auto",
        accepted: "auto or off",
        doc: "Device buffers in MPI calls (docs/gpu.md): auto = when a CUDA driver is present, every intercepted call checks its buffers and stages device memory through pinned host memory, so a non-CUDA-aware MPI never sees a device pointer (the fast path is closed then); off = never (a host-only application on a GPU node pays nothing).",
    },
    Param {
        name: "SLUICE_GPU_PACK_MIN",
        default: "128K",
        accepted: "off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 4K, 1M",
        doc: "Point-to-point calls and block collectives (Bcast, Gather, Scatter, Allgather, Alltoall, Neighbor_allgather/alltoall) on device buffers of a non-contiguous datatype with at least this many packed bytes pack and unpack on the GPU (sluice's move kernels): only the packed bytes cross PCIe and the MPI moves them as a contiguous run of the type's one predefined element type (the same type signature); smaller ones, types built through struct constructors, the v/w collectives and reductions, and all with off copy the type's whole span (gaps included) through host memory. Measured on an H100 (docs/benchmarks.md): a kernel launch costs ~10 us a side, so the span copy wins up to 64 KiB and the kernels win 1.9-3.4x from 1 MiB.",
    },
    Param {
        name: "SLUICE_GPU_PIPELINE_MIN",
        default: if cfg!(sluice_mpi = "mpich") { "1M" } else { "off" },
        accepted: "off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 4M",
        doc: "Point-to-point sends from device buffers whose host copy is one run of bytes (a contiguous type, or the packed form of SLUICE_GPU_PACK_MIN) and at least this many bytes (and at least the pipeline threshold) travel pipelined as they cross PCIe: the copy out of the device goes in pieces and each chunk goes to the MPI as soon as its piece has landed (docs/gpu.md); smaller ones are copied whole, then sent as one message. The default depends on the MPI, measured on an H200 (docs/benchmarks.md): MPICH 1M (5-26% faster than the whole copy at 1-64 MiB), Open MPI off (its own single-copy path for one contiguous message beats sluice's pipeline at every size, by 1.3-2.2x).",
    },
    Param {
        name: "SLUICE_GPU_IPC_POOL",
        default: "256M",
        accepted: "off, or a byte count with optional K, M or G suffix (powers of 1024), e.g. 64M, 1G",
        doc: "Device memory each process may set aside for same-node device-to-device transfers (docs/gpu.md): a point-to-point send from a device buffer of a contiguous type, of at least the pipeline threshold, to a rank of this node that has shown it can open this process's CUDA IPC memory, is copied on the device into a region of this pool and the receiver copies it out of there (device to device, or device to host for a host receive); the pool's regions are exported once through CUDA IPC and reused. Larger sends than the pool, a full pool, other ranks and off: the sends cross PCIe through pinned host memory as before.",
    },
    Param {
        name: "SLUICE_FIREHOSE_M",
        default: "256M",
        accepted: "a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 64M, 1G",
        doc: "Registration manager (docs/firehose.md): the most memory remote firehoses may keep pinned in this process (the paper's M; whole buckets). M + MAXVICTIM is the most memory sluice pins at any instant; with mlock it is scaled down, with a warning, to what RLIMIT_MEMLOCK allows. 0 together with SLUICE_FIREHOSE_MAXVICTIM=0: nothing is pinned.",
    },
    Param {
        name: "SLUICE_FIREHOSE_MAXVICTIM",
        default: "64M",
        accepted: "a byte count with optional K, M or G suffix (powers of 1024), e.g. 0, 16M",
        doc: "Registration manager: the most pinned memory no operation or firehose uses that stays pinned for reuse (the victim FIFO; least recently released unpinned first). 0: unpin as soon as the last user is done.",
    },
    Param {
        name: "SLUICE_FIREHOSE_BUCKET",
        default: "4K",
        accepted: "a power of two, at least the page size, with optional K or M suffix, e.g. 4K, 64K",
        doc: "Registration manager: the bucket, the unit in which memory is pinned, cached and invalidated (the paper's bucket size). Larger buckets mean fewer table entries and pin calls but pin memory around the bytes used, which must be mapped.",
    },
    Param {
        name: "SLUICE_LEVELS",
        default: "smp",
        accepted: "a composition of level pairs, top first: LEVEL('/'LEVEL)*, LEVEL = smp[:THREADS] | disk | cluster, each with an optional @BYTES memory bound (K/M/G), e.g. disk/smp:2@64M",
        doc: "The composition sluice_levels_open(NULL, ...) opens (include/sluice_levels.h, docs/levels.md): smp = host memory over worker threads (default: the CPUs this process may run on), disk = files over this process, cluster = the ranks of MPI_COMM_WORLD (the top only; needs MPI_THREAD_MULTIPLE); @BYTES bounds what that level's top may allocate. Read when the runtime is opened; a bad value makes sluice_levels_open return SLUICE_LEVELS_ERR_SPEC with a message.",
    },
    Param {
        name: "SLUICE_LEVELS_MOVES",
        default: "auto",
        accepted: "auto, messages",
        doc: "How the cluster level of sluice_levels moves remote pieces of arrays: auto = sluice's one-sided gets and puts (firehoses) where every rank has an RMA window, else messages served by the owning rank (Open MPI 4.1 between nodes over TCP); messages = always messages. Read when a cluster level opens; another value makes sluice_levels_open return SLUICE_LEVELS_ERR_SPEC.",
    },
    Param {
        name: "SLUICE_LEVELS_DIR",
        default: "$TMPDIR or /tmp",
        accepted: "a directory",
        doc: "Where the disk level of sluice_levels creates its array files (temporary, unlinked at creation, blocks reserved with posix_fallocate).",
    },
    Param {
        name: "SLUICE_CALIBRATION",
        default: "auto",
        accepted: "auto, or the path of a machine-model file (TOML)",
        doc: "The machine model sluice_copy plans with (docs/runtime.md): auto = $XDG_CACHE_HOME/sluice/model-<host name>.toml (~/.cache/sluice/... without XDG_CACHE_HOME) when that file exists, else the built-in model of one host (docs/runtime.md); a file that cannot be read or parsed gives a warning and the built-in model.",
    },
    Param {
        name: "SLUICE_TEST_PANIC",
        default: "",
        accepted: "empty, or the name of an intercepted C function (e.g. MPI_Send)",
        doc: "Testing only: make that function panic inside sluice to exercise the MPI_ERR_INTERN path.",
    },
    Param {
        name: "SLUICE_TEST_CHUNK_FAULT",
        default: "0",
        accepted: "0 (off), or N >= 1",
        doc: "Testing only: the N-th pipelined chunk this process receives through the MPI is posted one byte short, so that the MPI fails it (truncation): exercises the path that completes the application's receive with the chunk's error.",
    },
];

/// Log verbosity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Nothing at all.
    Off,
    /// Errors only.
    Error,
    /// Errors and warnings (default).
    Warn,
    /// Lifecycle events.
    Info,
    /// Per-decision details.
    Debug,
    /// Per-call details.
    Trace,
}

impl LogLevel {
    /// The `log` crate's filter for this level.
    pub fn filter(self) -> log::LevelFilter {
        match self {
            LogLevel::Off => log::LevelFilter::Off,
            LogLevel::Error => log::LevelFilter::Error,
            LogLevel::Warn => log::LevelFilter::Warn,
            LogLevel::Info => log::LevelFilter::Info,
            LogLevel::Debug => log::LevelFilter::Debug,
            LogLevel::Trace => log::LevelFilter::Trace,
        }
    }
}

/// The parsed configuration of one process.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `SLUICE_DISABLE`.
    pub disable: bool,
    /// `SLUICE_STATS`.
    pub stats: bool,
    /// `SLUICE_PROFILE`: the path prefix of the communication matrix (`None`: not profiling).
    pub profile: Option<String>,
    /// `SLUICE_LOG`: the level.
    pub log: LogLevel,
    /// `SLUICE_LOG` holds `plan`: log each new plan once.
    pub log_plans: bool,
    /// `SLUICE_DATATYPE`.
    pub datatype_engine: bool,
    /// `SLUICE_P2P`.
    pub p2p: bool,
    /// `SLUICE_COLL`.
    pub coll: bool,
    /// `SLUICE_REORDER`.
    pub reorder: Reorder,
    /// `SLUICE_REORDER_MATRIX`: a communication matrix that weighs reordering (`None`: the
    /// call's edges).
    pub reorder_matrix: Option<String>,
    /// `SLUICE_P2P_MPI_ABOVE`, bytes (`usize::MAX`: off).
    pub p2p_mpi_above: usize,
    /// `SLUICE_P2P_MPI_ABOVE=auto` (on MPICH a rule by size, block and peer instead of
    /// `p2p_mpi_above`: `protocol::layout`).
    pub p2p_mpi_auto: bool,
    /// `SLUICE_P2P_LEARN`: sends to this node learn their path per type (`p2p::contest`).
    pub p2p_learn: bool,
    /// `SLUICE_P2P_MPI_BLOCK`, bytes.
    pub p2p_mpi_block: usize,
    /// `SLUICE_COLL_MPI_BLOCK`, bytes (`usize::MAX`: off).
    pub coll_mpi_block: usize,
    /// `SLUICE_COLL_REMOTE_SPLIT`.
    pub coll_remote_split: RemoteSplit,
    /// `SLUICE_P2P_REMOTE_SPLIT`.
    pub p2p_remote_split: RemoteSplit,
    /// `SLUICE_STAGING_CACHE`, bytes.
    pub staging_cache: usize,
    /// `SLUICE_PIPELINE_THRESHOLD`, bytes (`usize::MAX`: off).
    pub pipeline_threshold: usize,
    /// `SLUICE_PIPELINE_CHUNK`, bytes.
    pub pipeline_chunk: usize,
    /// `SLUICE_PIPELINE_DEPTH`, chunks.
    pub pipeline_depth: usize,
    /// `SLUICE_PIPELINE_REMOTE_CHUNKS`, chunks (`usize::MAX`: off).
    pub pipeline_remote_chunks: usize,
    /// `SLUICE_SHM_ARENA`, bytes (`usize::MAX`: off).
    pub shm_arena: usize,
    /// `SLUICE_PROGRESS_THREAD`.
    pub progress_thread: bool,
    /// `SLUICE_THREADS`: `None` is `auto` (the cores hwloc reports).
    pub threads: Option<usize>,
    /// `SLUICE_PARALLEL_MIN`, packed bytes.
    pub parallel_min: usize,
    /// `SLUICE_PACK_ENGINE`.
    pub pack_engine: crate::datatype::choice::Policy,
    /// `SLUICE_CKPT_EPSILON`.
    pub ckpt_epsilon: f64,
    /// `SLUICE_CKPT_MEMORY`, bytes.
    pub ckpt_memory: usize,
    /// `SLUICE_GPU`: look for device buffers when a CUDA driver is present.
    pub gpu: bool,
    /// `SLUICE_GPU_PACK_MIN`, packed bytes (`usize::MAX`: off).
    pub gpu_pack_min: usize,
    /// `SLUICE_GPU_PIPELINE_MIN`, bytes (`usize::MAX`: off).
    pub gpu_pipeline_min: usize,
    /// `SLUICE_GPU_IPC_POOL`, bytes (0: off).
    pub gpu_ipc_pool: usize,
    /// `SLUICE_FIREHOSE_M`, `SLUICE_FIREHOSE_MAXVICTIM`, `SLUICE_FIREHOSE_BUCKET`, bytes.
    pub firehose: crate::pin::Limits,
    /// `SLUICE_CALIBRATION`: `None` = auto, else the model file's path.
    pub calibration: Option<String>,
    /// `SLUICE_TEST_PANIC`.
    pub test_panic: Option<String>,
    /// `SLUICE_TEST_CHUNK_FAULT` (0: off).
    pub test_chunk_fault: usize,
}

/// A variable whose value could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Variable name.
    pub name: &'static str,
    /// The offending value.
    pub value: String,
    /// What would have been accepted.
    pub accepted: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid value {}={:?}; accepted values: {}", self.name, self.value, self.accepted)
    }
}

impl std::error::Error for ConfigError {}

fn param(name: &str) -> &'static Param {
    PARAMS.iter().find(|p| p.name == name).expect("undeclared SLUICE_* parameter")
}

fn parse_bool(p: &'static Param, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Ok(true),
        "0" | "no" | "false" | "off" => Ok(false),
        _ => Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted }),
    }
}

/// `SLUICE_REORDER`: which topology constructors sluice reorders (`protocol::reorder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reorder {
    /// None: every constructor goes to the MPI unchanged.
    Off,
    /// `MPI_Cart_create` and `MPI_Graph_create`, whose arguments describe the whole topology
    /// the same on every process: reordering is unambiguous.
    Cart,
    /// Also the distributed graphs, where each process gives edges: vertex `v` (the edges
    /// given by old rank `v`) goes to new rank `v`.
    All,
}

fn parse_reorder(p: &'static Param, v: &str) -> Result<Reorder, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "cart" => Ok(Reorder::Cart),
        "all" | "1" | "yes" | "true" | "on" => Ok(Reorder::All),
        "off" | "0" | "no" | "false" => Ok(Reorder::Off),
        _ => Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted }),
    }
}

/// `SLUICE_LOG`: a level and/or `plan`, comma-separated (the level defaults to `warn`).
fn parse_log(p: &'static Param, v: &str) -> Result<(LogLevel, bool), ConfigError> {
    let err = || ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted };
    let (mut level, mut plans) = (None, false);
    for word in v.split(',').map(|w| w.trim().to_ascii_lowercase()) {
        let l = match word.as_str() {
            "plan" | "plans" if !plans => {
                plans = true;
                continue;
            }
            "off" | "none" => LogLevel::Off,
            "error" => LogLevel::Error,
            "warn" | "warning" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => return Err(err()),
        };
        if level.replace(l).is_some() {
            return Err(err());
        }
    }
    Ok((level.unwrap_or(LogLevel::Warn), plans))
}

fn parse_bytes(p: &'static Param, v: &str) -> Result<usize, ConfigError> {
    let err = || ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted };
    let t = v.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&t[..i], 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&t[..i], 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: usize = digits.parse().map_err(|_| err())?;
    n.checked_mul(1usize << shift).ok_or_else(err)
}

/// `auto` (true) or `off` (false).
fn parse_auto_off(p: &'static Param, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "auto" => Ok(true),
        "off" => Ok(false),
        _ => Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted }),
    }
}

/// `off`, or a byte count (`off` is `usize::MAX`: no operation is that large).
fn parse_bytes_or_off(p: &'static Param, v: &str) -> Result<usize, ConfigError> {
    if v.trim().eq_ignore_ascii_case("off") {
        return Ok(usize::MAX);
    }
    parse_bytes(p, v)
}

/// `SLUICE_COLL_REMOTE_SPLIT` / `SLUICE_P2P_REMOTE_SPLIT`: which staged collective blocks, and
/// which messages sluice sends or receives itself, for peers on other nodes are split
/// (`transfer::netpath`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteSplit {
    /// At least 64 KiB: sends and collective blocks when the MPI is Open MPI with its ob1
    /// point-to-point layer, point-to-point receives when it is not.
    Auto,
    Off,
    /// Blocks of at least this many bytes.
    Above(usize),
}

fn parse_pack_engine(p: &'static Param, v: &str) -> Result<crate::datatype::choice::Policy, ConfigError> {
    use crate::datatype::choice::Policy;
    match v.trim().to_ascii_lowercase().as_str() {
        "auto" => Ok(Policy::Auto),
        "sluice" => Ok(Policy::Sluice),
        "mpi" => Ok(Policy::Mpi),
        _ => Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted }),
    }
}

fn parse_remote_split(p: &'static Param, v: &str) -> Result<RemoteSplit, ConfigError> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(RemoteSplit::Auto);
    }
    if t.eq_ignore_ascii_case("off") {
        return Ok(RemoteSplit::Off);
    }
    parse_bytes(p, v).map(RemoteSplit::Above)
}

/// `SLUICE_P2P_MPI_ABOVE=auto`: Open MPI moves large blocks at memory speed at every size
/// (sluice's copies only add work there, bandwidth 0.4-0.5x at 64 KiB-1 MiB for 64-byte
/// blocks); MPICH's engine is slower on small messages, so sluice keeps them below 512 KiB.
pub const MPI_ABOVE_AUTO: usize = if cfg!(sluice_mpi = "mpich") { 512 << 10 } else { 0 };

fn parse_mpi_above(p: &'static Param, v: &str) -> Result<usize, ConfigError> {
    if v.trim().eq_ignore_ascii_case("auto") {
        return Ok(MPI_ABOVE_AUTO);
    }
    parse_bytes_or_off(p, v)
}

/// A byte count (or plain count) in `[min, max]`; `off` (`usize::MAX`) where `off_ok`.
fn parse_bytes_in(p: &'static Param, v: &str, min: usize, max: usize, off_ok: bool) -> Result<usize, ConfigError> {
    let n = if off_ok { parse_bytes_or_off(p, v)? } else { parse_bytes(p, v)? };
    if (off_ok && n == usize::MAX) || (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted })
    }
}

/// The registration manager's limits; the bucket must be a power-of-two multiple of the page.
fn parse_firehose(value: &dyn Fn(&str) -> String) -> Result<crate::pin::Limits, ConfigError> {
    let m = parse_bytes(param("SLUICE_FIREHOSE_M"), &value("SLUICE_FIREHOSE_M"))?;
    let max_victim = parse_bytes(param("SLUICE_FIREHOSE_MAXVICTIM"), &value("SLUICE_FIREHOSE_MAXVICTIM"))?;
    let p = param("SLUICE_FIREHOSE_BUCKET");
    let v = value(p.name);
    let mut bucket = parse_bytes(p, &v)?;
    if v == p.default {
        // One page on hosts whose pages are larger than 4 KiB.
        bucket = bucket.max(crate::pin::page_size());
    }
    crate::pin::Limits { m, max_victim, bucket }.check().map_err(|_| ConfigError { name: p.name, value: v.clone(), accepted: p.accepted })
}

fn parse_threads(p: &'static Param, v: &str) -> Result<Option<usize>, ConfigError> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    match t.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(Some(n)),
        _ => Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted }),
    }
}

fn parse_epsilon(p: &'static Param, v: &str) -> Result<f64, ConfigError> {
    match v.trim().parse::<f64>() {
        Ok(e) if e > 0.0 && e <= 10.0 => Ok(e),
        _ => Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted }),
    }
}

fn parse_fn_name(p: &'static Param, v: &str, known: &dyn Fn(&str) -> bool) -> Result<Option<String>, ConfigError> {
    let v = v.trim();
    if v.is_empty() {
        Ok(None)
    } else if known(v) {
        Ok(Some(v.to_string()))
    } else {
        Err(ConfigError { name: p.name, value: v.to_string(), accepted: p.accepted })
    }
}

impl Config {
    /// Parses the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok(), &crate::ffi::next::is_intercepted)
    }

    /// Parses from any variable lookup; `known_fn` tells which function names exist.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, known_fn: &dyn Fn(&str) -> bool) -> Result<Config, ConfigError> {
        let value = |name: &str| get(name).unwrap_or_else(|| param(name).default.to_string());
        let disable = parse_bool(param("SLUICE_DISABLE"), &value("SLUICE_DISABLE"))?;
        if disable {
            // A disabled sluice reads nothing else, so a broken setting elsewhere can be bypassed.
            return Ok(Config {
                disable,
                stats: false,
                profile: None,
                log: LogLevel::Warn,
                log_plans: false,
                datatype_engine: false,
                p2p: false,
                coll: false,
                reorder: Reorder::Off,
                reorder_matrix: None,
                p2p_mpi_above: usize::MAX,
                p2p_mpi_auto: false,
                p2p_learn: false,
                p2p_mpi_block: 64,
                coll_mpi_block: usize::MAX,
                coll_remote_split: RemoteSplit::Off,
                p2p_remote_split: RemoteSplit::Off,
                staging_cache: 0,
                pipeline_threshold: usize::MAX,
                pipeline_chunk: 128 << 10,
                pipeline_depth: 4,
                pipeline_remote_chunks: usize::MAX,
                shm_arena: usize::MAX,
                progress_thread: false,
                threads: Some(1),
                parallel_min: usize::MAX,
                pack_engine: crate::datatype::choice::Policy::Sluice,
                ckpt_epsilon: 0.2,
                ckpt_memory: 0,
                gpu: false,
                gpu_pack_min: usize::MAX,
                gpu_pipeline_min: usize::MAX,
                gpu_ipc_pool: 0,
                firehose: crate::pin::Limits { m: 0, max_victim: 0, bucket: crate::pin::page_size() },
                calibration: None,
                test_panic: None,
                test_chunk_fault: 0,
            });
        }
        let (log, log_plans) = parse_log(param("SLUICE_LOG"), &value("SLUICE_LOG"))?;
        Ok(Config {
            disable,
            stats: parse_bool(param("SLUICE_STATS"), &value("SLUICE_STATS"))?,
            profile: Some(value("SLUICE_PROFILE")).filter(|v| !v.trim().is_empty()),
            log,
            log_plans,
            datatype_engine: parse_bool(param("SLUICE_DATATYPE"), &value("SLUICE_DATATYPE"))?,
            p2p: parse_bool(param("SLUICE_P2P"), &value("SLUICE_P2P"))?,
            coll: parse_bool(param("SLUICE_COLL"), &value("SLUICE_COLL"))?,
            reorder: parse_reorder(param("SLUICE_REORDER"), &value("SLUICE_REORDER"))?,
            reorder_matrix: Some(value("SLUICE_REORDER_MATRIX")).filter(|v| !v.trim().is_empty()),
            p2p_mpi_above: parse_mpi_above(param("SLUICE_P2P_MPI_ABOVE"), &value("SLUICE_P2P_MPI_ABOVE"))?,
            p2p_mpi_auto: value("SLUICE_P2P_MPI_ABOVE").trim().eq_ignore_ascii_case("auto"),
            p2p_learn: parse_bool(param("SLUICE_P2P_LEARN"), &value("SLUICE_P2P_LEARN"))?,
            p2p_mpi_block: parse_bytes(param("SLUICE_P2P_MPI_BLOCK"), &value("SLUICE_P2P_MPI_BLOCK"))?,
            coll_mpi_block: parse_bytes_or_off(param("SLUICE_COLL_MPI_BLOCK"), &value("SLUICE_COLL_MPI_BLOCK"))?,
            coll_remote_split: parse_remote_split(param("SLUICE_COLL_REMOTE_SPLIT"), &value("SLUICE_COLL_REMOTE_SPLIT"))?,
            p2p_remote_split: parse_remote_split(param("SLUICE_P2P_REMOTE_SPLIT"), &value("SLUICE_P2P_REMOTE_SPLIT"))?,
            staging_cache: parse_bytes(param("SLUICE_STAGING_CACHE"), &value("SLUICE_STAGING_CACHE"))?,
            pipeline_threshold: parse_bytes_in(
                param("SLUICE_PIPELINE_THRESHOLD"),
                &value("SLUICE_PIPELINE_THRESHOLD"),
                128,
                usize::MAX,
                true,
            )?,
            pipeline_chunk: parse_bytes_in(param("SLUICE_PIPELINE_CHUNK"), &value("SLUICE_PIPELINE_CHUNK"), 64, 1 << 30, false)?,
            pipeline_depth: parse_bytes_in(param("SLUICE_PIPELINE_DEPTH"), &value("SLUICE_PIPELINE_DEPTH"), 1, 64, false)?,
            pipeline_remote_chunks: parse_bytes_in(
                param("SLUICE_PIPELINE_REMOTE_CHUNKS"),
                &value("SLUICE_PIPELINE_REMOTE_CHUNKS"),
                1,
                1024,
                true,
            )?,
            shm_arena: parse_bytes_in(param("SLUICE_SHM_ARENA"), &value("SLUICE_SHM_ARENA"), 1 << 20, usize::MAX - 1, true)?,
            progress_thread: parse_bool(param("SLUICE_PROGRESS_THREAD"), &value("SLUICE_PROGRESS_THREAD"))?,
            threads: parse_threads(param("SLUICE_THREADS"), &value("SLUICE_THREADS"))?,
            parallel_min: parse_bytes_or_off(param("SLUICE_PARALLEL_MIN"), &value("SLUICE_PARALLEL_MIN"))?,
            pack_engine: parse_pack_engine(param("SLUICE_PACK_ENGINE"), &value("SLUICE_PACK_ENGINE"))?,
            ckpt_epsilon: parse_epsilon(param("SLUICE_CKPT_EPSILON"), &value("SLUICE_CKPT_EPSILON"))?,
            ckpt_memory: parse_bytes(param("SLUICE_CKPT_MEMORY"), &value("SLUICE_CKPT_MEMORY"))?,
            gpu: parse_auto_off(param("SLUICE_GPU"), &value("SLUICE_GPU"))?,
            gpu_pack_min: parse_bytes_or_off(param("SLUICE_GPU_PACK_MIN"), &value("SLUICE_GPU_PACK_MIN"))?,
            gpu_pipeline_min: parse_bytes_or_off(param("SLUICE_GPU_PIPELINE_MIN"), &value("SLUICE_GPU_PIPELINE_MIN"))?,
            gpu_ipc_pool: match parse_bytes_or_off(param("SLUICE_GPU_IPC_POOL"), &value("SLUICE_GPU_IPC_POOL"))? {
                usize::MAX => 0,
                n => n,
            },
            firehose: parse_firehose(&value)?,
            calibration: Some(value("SLUICE_CALIBRATION")).filter(|v| v != "auto" && !v.is_empty()),
            test_panic: parse_fn_name(param("SLUICE_TEST_PANIC"), &value("SLUICE_TEST_PANIC"), known_fn)?,
            test_chunk_fault: parse_bytes(param("SLUICE_TEST_CHUNK_FAULT"), &value("SLUICE_TEST_CHUNK_FAULT"))?,
        })
    }

    /// `SLUICE_*` variables set in `vars` that sluice does not know (likely typos).
    pub fn unknown_vars(vars: impl Iterator<Item = String>) -> Vec<String> {
        vars.filter(|k| k.starts_with("SLUICE_") && !PARAMS.iter().any(|p| p.name == k))
            // SLUICE_MPI selects the flavor at build time; scripts may leave it exported, and
            // SLUICE_CLUSTER_* belong to scripts/cluster.sh, whose launches pass the launcher's
            // environment on to the ranks of the first node.
            .filter(|k| k != "SLUICE_MPI" && !k.starts_with("SLUICE_CLUSTER_"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| m.get(k).cloned(), &|n| n == "MPI_Send")
    }

    #[test]
    fn reorder_levels() {
        for (v, want) in [("cart", Reorder::Cart), ("ALL", Reorder::All), ("1", Reorder::All), ("off", Reorder::Off), ("0", Reorder::Off)] {
            assert_eq!(parse(&[("SLUICE_REORDER", v)]).unwrap().reorder, want, "{v}");
        }
        assert_eq!(parse(&[("SLUICE_REORDER", "maybe")]).unwrap_err().name, "SLUICE_REORDER");
        assert!(Reorder::Off < Reorder::Cart && Reorder::Cart < Reorder::All);
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        let want = Config {
            disable: false,
            stats: false,
            profile: None,
            log: LogLevel::Warn,
            log_plans: false,
            datatype_engine: true,
            p2p: true,
            coll: true,
            reorder: Reorder::Cart,
            reorder_matrix: None,
            p2p_mpi_above: MPI_ABOVE_AUTO,
            p2p_mpi_auto: true,
            p2p_learn: true,
            p2p_mpi_block: 64,
            coll_mpi_block: 64,
            coll_remote_split: RemoteSplit::Auto,
            p2p_remote_split: RemoteSplit::Auto,
            staging_cache: 64 << 20,
            pipeline_threshold: 256 << 10,
            pipeline_chunk: 128 << 10,
            pipeline_depth: 4,
            pipeline_remote_chunks: 8,
            shm_arena: 256 << 20,
            progress_thread: false,
            threads: None,
            parallel_min: usize::MAX,
            pack_engine: crate::datatype::choice::Policy::Auto,
            ckpt_epsilon: 0.2,
            ckpt_memory: 16 << 20,
            gpu: true,
            gpu_pack_min: 128 << 10,
            gpu_pipeline_min: if cfg!(sluice_mpi = "mpich") { 1 << 20 } else { usize::MAX },
            gpu_ipc_pool: 256 << 20,
            firehose: crate::pin::Limits { m: 256 << 20, max_victim: 64 << 20, bucket: 4096 },
            calibration: None,
            test_panic: None,
            test_chunk_fault: 0,
        };
        assert_eq!(c, want);
    }

    #[test]
    fn byte_counts_take_suffixes_and_reject_garbage() {
        assert_eq!(parse(&[("SLUICE_STAGING_CACHE", "0")]).unwrap().staging_cache, 0);
        assert_eq!(parse(&[("SLUICE_STAGING_CACHE", "4096")]).unwrap().staging_cache, 4096);
        assert_eq!(parse(&[("SLUICE_STAGING_CACHE", "8k")]).unwrap().staging_cache, 8192);
        assert_eq!(parse(&[("SLUICE_STAGING_CACHE", " 2G ")]).unwrap().staging_cache, 2 << 30);
        for bad in ["", "-1", "1.5M", "M", "12Q", "99999999999999999999G"] {
            let e = parse(&[("SLUICE_STAGING_CACHE", bad)]).unwrap_err();
            assert_eq!(e.name, "SLUICE_STAGING_CACHE", "{bad:?}");
        }
        assert!(!parse(&[("SLUICE_P2P", "off")]).unwrap().p2p);
        assert_eq!(parse(&[("SLUICE_P2P_MPI_ABOVE", "off")]).unwrap().p2p_mpi_above, usize::MAX);
        assert_eq!(parse(&[("SLUICE_P2P_MPI_ABOVE", "4M")]).unwrap().p2p_mpi_above, 4 << 20);
        assert_eq!(parse(&[("SLUICE_P2P_MPI_ABOVE", "AUTO")]).unwrap().p2p_mpi_above, MPI_ABOVE_AUTO);
        assert_eq!(parse(&[("SLUICE_COLL_MPI_BLOCK", "off")]).unwrap().coll_mpi_block, usize::MAX);
        assert_eq!(parse(&[("SLUICE_COLL_MPI_BLOCK", "1K")]).unwrap().coll_mpi_block, 1 << 10);
        assert!(parse(&[("SLUICE_COLL_MPI_BLOCK", "big")]).is_err());
        assert_eq!(parse(&[("SLUICE_COLL_REMOTE_SPLIT", "off")]).unwrap().coll_remote_split, RemoteSplit::Off);
        assert_eq!(parse(&[("SLUICE_COLL_REMOTE_SPLIT", "AUTO")]).unwrap().coll_remote_split, RemoteSplit::Auto);
        assert_eq!(parse(&[("SLUICE_COLL_REMOTE_SPLIT", "1")]).unwrap().coll_remote_split, RemoteSplit::Above(1));
        assert_eq!(parse(&[("SLUICE_COLL_REMOTE_SPLIT", "64K")]).unwrap().coll_remote_split, RemoteSplit::Above(64 << 10));
        assert!(parse(&[("SLUICE_COLL_REMOTE_SPLIT", "split")]).is_err());
        assert_eq!(parse(&[("SLUICE_P2P_MPI_BLOCK", "x")]).unwrap_err().name, "SLUICE_P2P_MPI_BLOCK");
        assert_eq!(parse(&[("SLUICE_P2P", "sometimes")]).unwrap_err().name, "SLUICE_P2P");
        assert!(!parse(&[("SLUICE_COLL", "0")]).unwrap().coll);
        assert_eq!(parse(&[("SLUICE_COLL", "2")]).unwrap_err().name, "SLUICE_COLL");
    }

    #[test]
    fn pipeline_settings_are_range_checked() {
        assert_eq!(parse(&[("SLUICE_PIPELINE_THRESHOLD", "off")]).unwrap().pipeline_threshold, usize::MAX);
        assert_eq!(parse(&[("SLUICE_PIPELINE_THRESHOLD", "128")]).unwrap().pipeline_threshold, 128);
        assert_eq!(parse(&[("SLUICE_PIPELINE_CHUNK", "64")]).unwrap().pipeline_chunk, 64);
        assert_eq!(parse(&[("SLUICE_PIPELINE_DEPTH", "64")]).unwrap().pipeline_depth, 64);
        assert_eq!(parse(&[]).unwrap().pipeline_remote_chunks, 8);
        assert_eq!(parse(&[("SLUICE_PIPELINE_REMOTE_CHUNKS", "1024")]).unwrap().pipeline_remote_chunks, 1024);
        assert_eq!(parse(&[("SLUICE_PIPELINE_REMOTE_CHUNKS", "Off")]).unwrap().pipeline_remote_chunks, usize::MAX);
        assert_eq!(parse(&[("SLUICE_SHM_ARENA", "off")]).unwrap().shm_arena, usize::MAX);
        assert_eq!(parse(&[("SLUICE_SHM_ARENA", "1M")]).unwrap().shm_arena, 1 << 20);
        for (var, bad) in [
            ("SLUICE_SHM_ARENA", "1023K"),
            ("SLUICE_SHM_ARENA", "lots"),
            ("SLUICE_PIPELINE_THRESHOLD", "127"),
            ("SLUICE_PIPELINE_THRESHOLD", "big"),
            ("SLUICE_PIPELINE_CHUNK", "63"),
            ("SLUICE_PIPELINE_CHUNK", "2G"),
            ("SLUICE_PIPELINE_CHUNK", "off"),
            ("SLUICE_PIPELINE_DEPTH", "0"),
            ("SLUICE_PIPELINE_DEPTH", "65"),
            ("SLUICE_PIPELINE_REMOTE_CHUNKS", "0"),
            ("SLUICE_PIPELINE_REMOTE_CHUNKS", "1025"),
            ("SLUICE_PIPELINE_REMOTE_CHUNKS", "8K"),
        ] {
            assert_eq!(parse(&[(var, bad)]).unwrap_err().name, var, "{bad:?}");
        }
    }

    #[test]
    fn typed_values() {
        let c = parse(&[("SLUICE_STATS", "Yes"), ("SLUICE_LOG", "debug"), ("SLUICE_TEST_PANIC", "MPI_Send")]).unwrap();
        assert!(c.stats);
        assert_eq!(c.log, LogLevel::Debug);
        assert!(!c.log_plans);
        assert_eq!(c.test_panic.as_deref(), Some("MPI_Send"));
        assert_eq!(c.profile, None);
        assert_eq!(parse(&[("SLUICE_PROFILE", "/tmp/app")]).unwrap().profile.as_deref(), Some("/tmp/app"));
        assert_eq!(parse(&[("SLUICE_PROFILE", " ")]).unwrap().profile, None);
        for (v, level, plans) in [
            ("plan", LogLevel::Warn, true),
            ("debug, Plan", LogLevel::Debug, true),
            ("plan,off", LogLevel::Off, true),
            ("info", LogLevel::Info, false),
        ] {
            let c = parse(&[("SLUICE_LOG", v)]).unwrap();
            assert_eq!((c.log, c.log_plans), (level, plans), "{v:?}");
        }
        for bad in ["plan,plan", "warn,info", "plan,", "plans,loud"] {
            assert_eq!(parse(&[("SLUICE_LOG", bad)]).unwrap_err().name, "SLUICE_LOG", "{bad:?}");
        }
    }

    #[test]
    fn bad_values_name_variable_value_and_accepted() {
        let e = parse(&[("SLUICE_STATS", "maybe")]).unwrap_err();
        assert_eq!(e.name, "SLUICE_STATS");
        let msg = e.to_string();
        assert!(msg.contains("SLUICE_STATS=\"maybe\"") && msg.contains("yes"), "{msg}");
        assert_eq!(parse(&[("SLUICE_LOG", "loud")]).unwrap_err().name, "SLUICE_LOG");
        assert_eq!(parse(&[("SLUICE_TEST_PANIC", "MPI_Nope")]).unwrap_err().name, "SLUICE_TEST_PANIC");
        assert_eq!(parse(&[("SLUICE_DISABLE", "2")]).unwrap_err().name, "SLUICE_DISABLE");
    }

    #[test]
    fn parallel_processing_settings() {
        let c =
            parse(&[("SLUICE_THREADS", "2"), ("SLUICE_CKPT_EPSILON", "0.05"), ("SLUICE_CKPT_MEMORY", "1M"), ("SLUICE_PARALLEL_MIN", "0")])
                .unwrap();
        assert_eq!((c.threads, c.ckpt_epsilon, c.ckpt_memory, c.parallel_min), (Some(2), 0.05, 1 << 20, 0));
        assert_eq!(parse(&[("SLUICE_PARALLEL_MIN", "4x")]).unwrap_err().name, "SLUICE_PARALLEL_MIN");
        assert_eq!(parse(&[("SLUICE_PARALLEL_MIN", " OFF ")]).unwrap().parallel_min, usize::MAX);
        assert_eq!(parse(&[("SLUICE_PARALLEL_MIN", "4M")]).unwrap().parallel_min, 4 << 20);
        use crate::datatype::choice::Policy;
        assert_eq!(parse(&[("SLUICE_PACK_ENGINE", " MPI ")]).unwrap().pack_engine, Policy::Mpi);
        assert_eq!(parse(&[("SLUICE_PACK_ENGINE", "sluice")]).unwrap().pack_engine, Policy::Sluice);
        assert_eq!(parse(&[("SLUICE_PACK_ENGINE", "fast")]).unwrap_err().name, "SLUICE_PACK_ENGINE");
        assert_eq!(parse(&[("SLUICE_THREADS", " AUTO ")]).unwrap().threads, None);
        for bad in ["0", "-1", "1025", "two", ""] {
            assert_eq!(parse(&[("SLUICE_THREADS", bad)]).unwrap_err().name, "SLUICE_THREADS", "{bad:?}");
        }
        for bad in ["0", "-0.1", "11", "NaN", "inf", "x"] {
            assert_eq!(parse(&[("SLUICE_CKPT_EPSILON", bad)]).unwrap_err().name, "SLUICE_CKPT_EPSILON", "{bad:?}");
        }
        assert_eq!(parse(&[("SLUICE_CKPT_MEMORY", "lots")]).unwrap_err().name, "SLUICE_CKPT_MEMORY");
        let page = crate::pin::page_size();
        let f = parse(&[("SLUICE_FIREHOSE_M", "1M"), ("SLUICE_FIREHOSE_MAXVICTIM", "100000"), ("SLUICE_FIREHOSE_BUCKET", "64K")])
            .unwrap()
            .firehose;
        assert_eq!(f, crate::pin::Limits { m: 1 << 20, max_victim: 65536, bucket: 65536 }, "rounded down to whole buckets");
        assert_eq!(parse(&[]).unwrap().firehose, crate::pin::Limits { m: 256 << 20, max_victim: 64 << 20, bucket: 4096.max(page) });
        for bad in ["3000", "6K", "0", "big"] {
            assert_eq!(parse(&[("SLUICE_FIREHOSE_BUCKET", bad)]).unwrap_err().name, "SLUICE_FIREHOSE_BUCKET", "{bad:?}");
        }
        assert_eq!(parse(&[("SLUICE_FIREHOSE_M", "-1")]).unwrap_err().name, "SLUICE_FIREHOSE_M");
    }

    #[test]
    fn disable_skips_everything_else() {
        let c = parse(&[("SLUICE_DISABLE", "1"), ("SLUICE_STATS", "garbage")]).unwrap();
        assert!(c.disable && !c.stats);
    }

    #[test]
    fn unknown_variables_are_reported() {
        let vars = ["SLUICE_STAT", "SLUICE_LOG", "PATH", "SLUICE_MPI", "SLUICE_CLUSTER_NODES"].iter().map(|s| s.to_string());
        assert_eq!(Config::unknown_vars(vars), vec!["SLUICE_STAT".to_string()]);
    }

    #[test]
    fn every_param_has_doc_and_accepted() {
        for p in PARAMS {
            assert!(p.name.starts_with("SLUICE_") && !p.doc.is_empty() && !p.accepted.is_empty());
        }
    }
}
