//! Arrays of a runtime's top: their shape, where their bytes live, and the registry that maps the
//! application's descriptors to them (allocated, registered, freed).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};

use super::Error;

/// The application's name for an array.
pub type Desc = i64;
/// The descriptor of an array in a child's own memory (`SLUICE_ARRAY_LOCAL`).
pub const LOCAL: Desc = -1;
/// Most dimensions (`SLUICE_LEVELS_MAX_DIMS`).
pub const MAX_DIMS: usize = 4;

/// Element size and extents (row-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub elem_size: usize,
    pub ndims: usize,
    pub dims: [usize; MAX_DIMS],
}

impl Shape {
    /// Checks the description (positive element size, 1..=4 positive extents, bytes fit).
    pub fn new(elem_size: usize, dims: &[usize]) -> Result<Shape, Error> {
        if elem_size == 0 {
            return Err(Error::Arg("element size 0".into()));
        }
        if dims.is_empty() || dims.len() > MAX_DIMS {
            return Err(Error::Arg(format!("{} dimensions (1 to {MAX_DIMS})", dims.len())));
        }
        if dims.contains(&0) {
            return Err(Error::Arg(format!("an extent is 0 ({dims:?})")));
        }
        let mut d = [1usize; MAX_DIMS];
        d[..dims.len()].copy_from_slice(dims);
        let s = Shape { elem_size, ndims: dims.len(), dims: d };
        s.elements()
            .checked_mul(elem_size)
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::Arg(format!("{dims:?} elements of {elem_size} bytes do not fit the address space")))?;
        Ok(s)
    }

    /// Elements of the flattened array.
    pub fn elements(&self) -> usize {
        self.dims[..self.ndims].iter().try_fold(1usize, |a, &d| a.checked_mul(d)).unwrap_or(usize::MAX)
    }

    pub fn bytes(&self) -> usize {
        self.elements() * self.elem_size
    }
}

/// An array as the API describes it: descriptor, shape, and element 0's address where this
/// process can address the whole array (`None`: a file, a distributed array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    pub desc: Desc,
    pub shape: Shape,
    pub data: Option<*mut u8>,
}

// SAFETY: the address is only a description handed back to the application; sluice writes
// through it only in transfers the application started (and must keep the memory valid for).
unsafe impl Send for ArrayInfo {}
// SAFETY: as above.
unsafe impl Sync for ArrayInfo {}

/// Where an array of a top lives.
#[derive(Debug)]
pub enum Storage {
    /// Host memory (zeroed, aligned as asked).
    Host(super::host::HostMemory),
    /// A file (unlinked at creation: it disappears with the descriptor), `len` bytes long.
    File { fd: OwnedFd, len: usize },
    /// Distributed over processes: `parts` sorted by their start, disjoint, covering `len`
    /// bytes (an interval map: a run finds its parts by binary search); `mine` holds this
    /// process's share.
    Parts { len: usize, parts: Vec<Part>, mine: Box<Storage> },
}

/// Bytes `start .. start + len` of a distributed array live at `addr` in process `rank`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub start: usize,
    pub len: usize,
    pub rank: usize,
    pub addr: u64,
}

/// The pieces of `parts` (sorted, disjoint) that bytes `at .. at + n` touch, as (part, offset
/// into the part, length). Every piece has at least one byte: an empty range touches no part.
pub fn pieces(parts: &[Part], at: usize, n: usize) -> impl Iterator<Item = (&Part, usize, usize)> {
    let first = parts.partition_point(|p| p.start + p.len <= at);
    let end = at + n;
    // `n > 0`: without it an empty range inside a part would yield that part with length 0.
    parts[first..].iter().take_while(move |p| n > 0 && p.start < end).map(move |p| {
        let lo = at.max(p.start);
        let hi = end.min(p.start + p.len);
        (p, lo - p.start, hi - lo)
    })
}

// SAFETY: the parts' addresses are descriptions (other processes' memory); transfers into
// `mine` and into host memory are ordered by the application (a child writes a region only through a
// transfer it waits for).
unsafe impl Send for Storage {}
// SAFETY: as above.
unsafe impl Sync for Storage {}

impl Storage {
    /// Bytes of the array.
    pub fn bytes(&self) -> usize {
        match self {
            Storage::Host(m) => m.len(),
            Storage::File { len, .. } | Storage::Parts { len, .. } => *len,
        }
    }

    pub fn host(&self) -> Option<*mut u8> {
        match self {
            Storage::Host(m) => Some(m.as_ptr()),
            Storage::File { .. } | Storage::Parts { .. } => None,
        }
    }

    pub fn fd(&self) -> Option<i32> {
        match self {
            Storage::File { fd, .. } => Some(fd.as_raw_fd()),
            Storage::Host(_) | Storage::Parts { .. } => None,
        }
    }
}

/// One array of a top.
struct Entry {
    info: ArrayInfo,
    storage: std::sync::Arc<Storage>,
    registered: bool,
}

/// The arrays of one top, by descriptor; freed descriptors are remembered (a second free is
/// `Freed`, not `Desc`) until the descriptor is allocated again.
#[derive(Default)]
pub struct Registry {
    arrays: HashMap<Desc, Entry>,
    freed: std::collections::HashSet<Desc>,
    /// Bytes allocated now and at most.
    pub used: usize,
    pub peak: usize,
}

impl Registry {
    /// Checks that `desc` may name a new array.
    pub fn check_new(&self, desc: Desc) -> Result<(), Error> {
        if desc < 0 {
            return Err(Error::Desc(format!("descriptor {desc}: descriptors of arrays at a top are >= 0")));
        }
        if self.arrays.contains_key(&desc) {
            return Err(Error::Desc(format!("descriptor {desc} is already allocated")));
        }
        Ok(())
    }

    pub fn insert(&mut self, info: ArrayInfo, storage: Storage) {
        self.used += storage.bytes();
        self.peak = self.peak.max(self.used);
        self.freed.remove(&info.desc);
        self.arrays.insert(info.desc, Entry { info, storage: std::sync::Arc::new(storage), registered: false });
    }

    /// Removes the array `info` describes; its storage is returned for the level to release.
    pub fn free(&mut self, info: &ArrayInfo) -> Result<std::sync::Arc<Storage>, Error> {
        match self.arrays.get(&info.desc) {
            Some(e) if e.info == *info || (e.info.desc == info.desc && e.info.shape == info.shape) => {}
            Some(_) => return Err(Error::Desc(format!("descriptor {}: the array given is not the one allocated under it", info.desc))),
            None if self.freed.contains(&info.desc) => {
                return Err(Error::Freed(format!("the array of descriptor {} was freed already", info.desc)))
            }
            None => return Err(Error::Desc(format!("descriptor {} names no array of this top", info.desc))),
        }
        let e = self.arrays.remove(&info.desc).expect("checked above");
        self.used -= e.storage.bytes();
        self.freed.insert(info.desc);
        Ok(e.storage)
    }

    pub fn add(&mut self, info: &ArrayInfo) -> Result<(), Error> {
        match self.arrays.get_mut(&info.desc) {
            Some(e) if e.info.shape == info.shape => {
                if e.registered {
                    return Err(Error::Desc(format!("descriptor {} is registered already", info.desc)));
                }
                e.registered = true;
                Ok(())
            }
            Some(_) => Err(Error::Desc(format!("descriptor {}: the array given is not the one allocated under it", info.desc))),
            None if self.freed.contains(&info.desc) => Err(Error::Freed(format!("the array of descriptor {} was freed", info.desc))),
            None => Err(Error::Desc(format!("descriptor {}: only arrays this top allocated can be registered", info.desc))),
        }
    }

    pub fn remove(&mut self, desc: Desc) -> Result<(), Error> {
        match self.arrays.get_mut(&desc) {
            Some(e) if e.registered => {
                e.registered = false;
                Ok(())
            }
            _ => Err(Error::Desc(format!("descriptor {desc} is not registered"))),
        }
    }

    /// The array `desc`, registered or not.
    pub fn get_any(&self, desc: Desc) -> Result<ArrayInfo, Error> {
        self.arrays.get(&desc).map(|e| e.info).ok_or_else(|| Error::Desc(format!("descriptor {desc} names no array")))
    }

    /// The registered array `desc` and its storage.
    pub fn get(&self, desc: Desc) -> Result<(ArrayInfo, std::sync::Arc<Storage>), Error> {
        match self.arrays.get(&desc) {
            Some(e) if e.registered => Ok((e.info, e.storage.clone())),
            _ => Err(Error::Desc(format!("descriptor {desc} is not registered with this runtime"))),
        }
    }

    /// Every array still allocated (at close).
    pub fn drain(&mut self) -> Vec<std::sync::Arc<Storage>> {
        self.used = 0;
        self.arrays.drain().map(|(_, e)| e.storage).collect()
    }
}
