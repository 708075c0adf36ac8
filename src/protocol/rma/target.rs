//! The target side of firehose moves: a move request names remote buckets an initiator no
//! longer needs (unmap) and buckets it wants (map); the target unpins and detaches the first,
//! checks, pins (as remote references of its bucket table) and attaches the second, and answers.
//! Served by the progress engine (`Service::serve`), from the service thread or any thread
//! that drives the engine.

use std::collections::HashMap;

use crate::ffi::mpi;
use crate::pin::backend::{Backend, Mlock};
use crate::pin::{self, Use};

/// The answer's status: every bucket mapped, writable.
pub const OK_WRITABLE: u64 = 0;
/// Every bucket mapped, but some are read-only (gets only).
pub const OK_READ_ONLY: u64 = 1;
/// Some bucket is not mapped in the target's memory (or not readable).
pub const NOT_MAPPED: u64 = 2;
/// The target's firehose memory (M) is exhausted, or the pin failed.
pub const NO_ROOM: u64 = 3;
/// The MPI refused to attach the memory to the window.
pub const ATTACH_FAILED: u64 = 4;

/// How a move request maps its buckets (the request's mode word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Firehoses: pinned as remote references of the bucket table (bounded by `M`).
    Firehose,
    /// The baselines: pinned with `mlock` outside the table (unbounded, as the paper's baselines
    /// are) until unmapped; rendezvous without unpin never unmaps (its references only grow).
    Raw,
}

/// References on one bucket of this process.
#[derive(Clone, Copy, Debug, Default)]
struct Refs {
    /// Firehoses mapped onto it (each a remote reference in the bucket table).
    table: u32,
    /// Baseline handshakes that mapped it (one `mlock` while any).
    raw: u32,
}

/// The target's attachments: bucket -> the references that keep it attached. A bucket is
/// attached to the window once, while any reference holds it.
#[derive(Default)]
pub struct Attached {
    refs: HashMap<usize, Refs>,
}

impl Attached {
    /// Firehoses mapped onto this process's buckets, in all.
    pub fn firehoses(&self) -> usize {
        self.refs.values().map(|r| r.table as usize).sum()
    }

    /// Serves one move request: unmaps `unmap`, maps `map` (all or none), returns the status.
    pub fn serve(&mut self, win: mpi::MPI_Win, bucket: usize, mode: Mode, unmap: &[usize], map: &[usize]) -> u64 {
        for &b in unmap {
            self.unmap(win, bucket, mode, b);
        }
        let perms = match permissions(map, bucket) {
            Some(p) => p,
            None => return NOT_MAPPED,
        };
        for (i, &b) in map.iter().enumerate() {
            let status = self.map(win, bucket, mode, b);
            if status != OK_WRITABLE {
                for &done in &map[..i] {
                    self.unmap(win, bucket, mode, done);
                }
                return status;
            }
        }
        if perms {
            OK_WRITABLE
        } else {
            OK_READ_ONLY
        }
    }

    fn map(&mut self, win: mpi::MPI_Win, bucket: usize, mode: Mode, b: usize) -> u64 {
        let r = self.refs.get(&b).copied().unwrap_or_default();
        let pinned = match mode {
            Mode::Firehose => pin::pin(b * bucket, bucket, Use::Remote).is_ok(),
            Mode::Raw if r.raw > 0 => true,
            Mode::Raw => Mlock.pin(b * bucket, bucket).is_ok(),
        };
        if !pinned {
            return NO_ROOM;
        }
        if r.table + r.raw == 0 {
            // SAFETY: attaches memory this process holds mapped and pinned (checked above) to
            // sluice's own dynamic window.
            let rc = unsafe { mpi::PMPI_Win_attach(win, (b * bucket) as *mut std::ffi::c_void, bucket as mpi::MPI_Aint) };
            if rc != 0 {
                match mode {
                    Mode::Firehose => pin::unpin(b * bucket, bucket, Use::Remote),
                    Mode::Raw => drop(Mlock.unpin(b * bucket, bucket)),
                }
                return ATTACH_FAILED;
            }
        }
        let e = self.refs.entry(b).or_default();
        match mode {
            Mode::Firehose => e.table += 1,
            Mode::Raw => e.raw += 1,
        }
        OK_WRITABLE
    }

    fn unmap(&mut self, win: mpi::MPI_Win, bucket: usize, mode: Mode, b: usize) {
        let Some(r) = self.refs.get_mut(&b) else { return };
        match mode {
            Mode::Firehose if r.table > 0 => {
                r.table -= 1;
                pin::unpin(b * bucket, bucket, Use::Remote);
            }
            Mode::Raw if r.raw > 0 => {
                r.raw -= 1;
                // `mlock` does not nest: leave the pages locked while the table holds them.
                if r.raw == 0 && r.table == 0 {
                    let _ = Mlock.unpin(b * bucket, bucket);
                }
            }
            _ => return,
        }
        if r.table + r.raw == 0 {
            self.refs.remove(&b);
            // SAFETY: detaches a region this module attached at this base.
            unsafe { mpi::PMPI_Win_detach(win, (b * bucket) as *const std::ffi::c_void) };
        }
    }

    /// Detaches and unpins everything (the service closes).
    pub fn clear(&mut self, win: mpi::MPI_Win, bucket: usize) {
        for (b, r) in self.refs.drain() {
            // SAFETY: as in `unmap`.
            unsafe { mpi::PMPI_Win_detach(win, (b * bucket) as *const std::ffi::c_void) };
            for _ in 0..r.table {
                pin::unpin(b * bucket, bucket, Use::Remote);
            }
            if r.raw > 0 && r.table == 0 {
                let _ = Mlock.unpin(b * bucket, bucket);
            }
        }
    }
}

/// Whether `len` bytes at `addr` of this process are mapped readable (and writable, with
/// `write`): a put or get to this process itself copies directly after this check.
pub fn accessible(addr: usize, len: usize, write: bool) -> bool {
    range_permissions(&[(addr, addr + len)]).is_some_and(|w| w || !write)
}

/// Whether every bucket of `map` lies in readable mappings of this process (`None`: not), and
/// whether all are writable. Asks the kernel for each mapping (`PROCMAP_QUERY`, Linux 6.11+:
/// `mlock` splits mappings per bucket, so `/proc/self/maps` grows to thousands of lines and
/// reading it whole cost milliseconds per move); parses `/proc/self/maps` on older kernels.
fn permissions(map: &[usize], bucket: usize) -> Option<bool> {
    // Adjacent buckets are one range: each mapping is asked about once.
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &b in map {
        match ranges.last_mut() {
            Some(r) if r.1 == b * bucket => r.1 += bucket,
            _ => ranges.push((b * bucket, (b + 1) * bucket)),
        }
    }
    range_permissions(&ranges)
}

/// [`permissions`] of address ranges `[lo, hi)`.
fn range_permissions(ranges: &[(usize, usize)]) -> Option<bool> {
    if ranges.is_empty() {
        return Some(true);
    }
    match query_permissions(ranges) {
        Ok(p) => p,
        Err(()) => parse_permissions(ranges),
    }
}

/// The kernel's `struct procmap_query` (include/uapi/linux/fs.h).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// `_IOWR('f', 17, struct procmap_query)`.
const PROCMAP_QUERY: u64 = 0xC068_6611;
const VMA_READABLE: u64 = 1;
const VMA_WRITABLE: u64 = 2;

/// [`permissions`] through `PROCMAP_QUERY`; `Err` when the kernel does not have it.
fn query_permissions(ranges: &[(usize, usize)]) -> Result<Option<bool>, ()> {
    // SAFETY: opens a file by a NUL-terminated path; closed below.
    let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(());
    }
    let mut writable = true;
    let mut answer = Ok(Some(true));
    'ranges: for &(mut at, end) in ranges {
        while at < end {
            let mut q = ProcmapQuery { size: std::mem::size_of::<ProcmapQuery>() as u64, query_addr: at as u64, ..Default::default() };
            // SAFETY: the ioctl reads and writes one procmap_query (its size in the struct).
            let rc = unsafe { libc::ioctl(fd, PROCMAP_QUERY as _, &mut q) };
            if rc != 0 {
                let e = std::io::Error::last_os_error().raw_os_error();
                answer = if e == Some(libc::ENOENT) { Ok(None) } else { Err(()) };
                break 'ranges;
            }
            if q.vma_flags & VMA_READABLE == 0 {
                answer = Ok(None);
                break 'ranges;
            }
            writable &= q.vma_flags & VMA_WRITABLE != 0;
            at = q.vma_end as usize;
        }
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(fd) };
    answer.map(|a| a.map(|_| writable))
}

/// [`permissions`] from the text of `/proc/self/maps`.
fn parse_permissions(ranges: &[(usize, usize)]) -> Option<bool> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let vmas: Vec<(usize, usize, bool, bool)> = maps
        .lines()
        .filter_map(|l| {
            let (range, rest) = l.split_once(' ')?;
            let (lo, hi) = range.split_once('-')?;
            let p = rest.as_bytes();
            Some((
                usize::from_str_radix(lo, 16).ok()?,
                usize::from_str_radix(hi, 16).ok()?,
                p.first() == Some(&b'r'),
                p.get(1) == Some(&b'w'),
            ))
        })
        .collect();
    let mut writable = true;
    for &(mut at, end) in ranges {
        while at < end {
            let &(_, hi, r, w) = vmas.iter().find(|(lo, hi, _, _)| *lo <= at && at < *hi)?;
            if !r {
                return None;
            }
            writable &= w;
            at = hi;
        }
    }
    Some(writable)
}

#[cfg(test)]
mod tests {
    #[test]
    fn permissions_follow_the_mappings() {
        let page = crate::pin::page_size();
        // SAFETY: a private mapping of three pages, the middle one read-only, the last removed.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), 3 * page, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        } as usize;
        // SAFETY: our own pages.
        unsafe {
            libc::mprotect((p + page) as *mut libc::c_void, page, libc::PROT_READ);
            libc::munmap((p + 2 * page) as *mut libc::c_void, page);
        }
        let b = p / page;
        assert_eq!(super::permissions(&[b], page), Some(true));
        assert_eq!(super::permissions(&[b, b + 1], page), Some(false));
        assert_eq!(super::permissions(&[b + 2], page), None);
        assert_eq!(super::parse_permissions(&[(p, p + page)]), Some(true));
        assert_eq!(super::parse_permissions(&[(p, p + 2 * page)]), Some(false));
        assert_eq!(super::parse_permissions(&[(p + page, p + 3 * page)]), None);
        if let Ok(q) = super::query_permissions(&[(p, p + 2 * page)]) {
            assert_eq!(q, Some(false), "PROCMAP_QUERY (Linux 6.11+) agrees with the text");
        }
        assert!(super::accessible(p + 10, page, false) && !super::accessible(p + 10, page, true));
        // SAFETY: unmaps what is left.
        unsafe { libc::munmap(p as *mut libc::c_void, 2 * page) };
    }
}
