//! The multi-level runtime interface (Sequoia, `../shared/papers/sequoia-multilevel-runtime.md`,
//! Figure 2; docs/levels.md): one API per pair of memory levels, composable.
//!
//! A [`Runtime`] straddles a parent level (the top: one memory) and its children. What is common
//! to every level pair lives here and in [`runtime`]: the array registry (descriptors, bounds,
//! double frees), the task table and task calls, range barriers, transfer lists checked against
//! the arrays, the memory bound, statistics. What differs is one trait, [`Level`]: where the top's
//! arrays live, how children run, how a transfer list moves data. Its implementations:
//! - [`smp`]: host memory over worker threads; transfers are copies through the transfer
//!   runtime's Memcpy channel (indexed layouts converted by the datatype engine), elided where
//!   both sides are the same memory.
//! - [`disk`]: files over this process; asynchronous positioned I/O ([`io`]).
//! - the cluster level (`protocol::levels`, which owns MPI): the ranks of `MPI_COMM_WORLD`,
//!   arrays distributed over them, transfers by one-sided puts and gets; installed with
//!   [`install_cluster`].
//!
//! A composition ([`Spec`]) is a list of level kinds, top first; a child opens the runtime of the
//! next pair below it ([`Runtime::below`]), whose top is the child's own memory.

pub mod array;
pub mod barrier;
pub mod disk;
pub mod exec;
mod host;
pub mod io;
pub mod runtime;
pub mod smp;
pub mod spec;
#[cfg(test)]
mod tests;
pub mod xfer;

use std::fmt;

pub use array::{pieces, ArrayInfo, Desc, Part, Shape, Storage, LOCAL};
pub use runtime::{install_cluster, Change, Child, Level, RemoteCall, Runtime, Stats, Task, TaskCall};
pub use spec::{Kind, LevelSpec, Spec};
pub use xfer::{Dir, XferList};

/// Why a call of the levels API failed; nothing was allocated, registered, written or started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// A null pointer, a zero or negative size, a bad range (`SLUICE_ERR_ARG`).
    Arg(String),
    /// Unknown descriptor, or one already in use (`SLUICE_LEVELS_ERR_DESC`).
    Desc(String),
    /// A transfer reaches past the end of an array (`SLUICE_LEVELS_ERR_BOUNDS`).
    Bounds(String),
    /// A child id or range outside the runtime's children (`SLUICE_LEVELS_ERR_CHILD`).
    Child(String),
    /// Past the level's memory bound, or no space for a file (`SLUICE_LEVELS_ERR_NOMEM`).
    NoMem(String),
    /// The composition string cannot be parsed (`SLUICE_LEVELS_ERR_SPEC`).
    Spec(String),
    /// A top call on a child's handle or the reverse (`SLUICE_LEVELS_ERR_ROLE`).
    Role(String),
    /// Unknown task id or arguments too large (`SLUICE_LEVELS_ERR_TASK`).
    Task(String),
    /// The array was freed already (`SLUICE_LEVELS_ERR_FREED`).
    Freed(String),
    /// A file could not be created, read or written (`SLUICE_ERR_IO`).
    Io(String),
    /// The level needs something this process lacks (MPI, a thread level).
    Unavailable(i32, String),
}

impl Error {
    /// The C API's error code (include/sluice_levels.h).
    pub fn code(&self) -> i32 {
        match self {
            Error::Arg(_) => -2,
            Error::Io(_) => -6,
            Error::Desc(_) => -20,
            Error::Bounds(_) => -21,
            Error::Child(_) => -22,
            Error::NoMem(_) => -23,
            Error::Spec(_) => -24,
            Error::Role(_) => -25,
            Error::Task(_) => -26,
            Error::Freed(_) => -27,
            Error::Unavailable(c, _) => *c,
        }
    }

    fn message(&self) -> &str {
        match self {
            Error::Arg(m)
            | Error::Desc(m)
            | Error::Bounds(m)
            | Error::Child(m)
            | Error::NoMem(m)
            | Error::Spec(m)
            | Error::Role(m)
            | Error::Task(m)
            | Error::Freed(m)
            | Error::Io(m)
            | Error::Unavailable(_, m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Opens the runtime of `spec`'s top level pair with `tasks`.
pub fn open(spec: Spec, tasks: std::sync::Arc<Vec<Task>>) -> Result<Option<std::sync::Arc<Runtime>>, Error> {
    Runtime::open(std::sync::Arc::new(spec), 0, tasks)
}
