//! The target side of firehose moves: a move request names remote buckets an initiator no
//! longer needs (unmap) and buckets it wants (map); the target unpins and detaches the first,
//! checks, pins (as remote references of its bucket table) and attaches the second, and answers.
//! Served by the progress engine (`Service::serve`), from the service thread or any thread
//! that drives the engine.

use std::collections::HashMap;

use crate::ffi::mpi;
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

/// The target's attachments: bucket -> firehoses (of every initiator) mapped onto it. A bucket
/// is attached to the window once, while any firehose maps it.
#[derive(Default)]
pub struct Attached {
    count: HashMap<usize, u32>,
}

impl Attached {
    /// Firehoses mapped onto this process's buckets, in all.
    pub fn firehoses(&self) -> usize {
        self.count.values().map(|c| *c as usize).sum()
    }

    /// Serves one move request: unmaps `unmap`, maps `map` (all or none), returns the status.
    pub fn serve(&mut self, win: mpi::MPI_Win, bucket: usize, unmap: &[usize], map: &[usize]) -> u64 {
        for &b in unmap {
            self.unmap(win, bucket, b);
        }
        let perms = match permissions(map, bucket) {
            Some(p) => p,
            None => return NOT_MAPPED,
        };
        for (i, &b) in map.iter().enumerate() {
            let status = self.map(win, bucket, b);
            if status != OK_WRITABLE {
                for &done in &map[..i] {
                    self.unmap(win, bucket, done);
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

    fn map(&mut self, win: mpi::MPI_Win, bucket: usize, b: usize) -> u64 {
        if pin::pin(b * bucket, bucket, Use::Remote).is_err() {
            return NO_ROOM;
        }
        let c = self.count.entry(b).or_default();
        if *c == 0 {
            // SAFETY: attaches memory this process holds mapped and pinned (checked above) to
            // sluice's own dynamic window.
            let rc = unsafe { mpi::PMPI_Win_attach(win, (b * bucket) as *mut std::ffi::c_void, bucket as mpi::MPI_Aint) };
            if rc != 0 {
                self.count.remove(&b);
                pin::unpin(b * bucket, bucket, Use::Remote);
                return ATTACH_FAILED;
            }
        }
        *self.count.entry(b).or_default() += 1;
        OK_WRITABLE
    }

    fn unmap(&mut self, win: mpi::MPI_Win, bucket: usize, b: usize) {
        let Some(c) = self.count.get_mut(&b) else { return };
        *c -= 1;
        if *c == 0 {
            self.count.remove(&b);
            // SAFETY: detaches a region this module attached at this base.
            unsafe { mpi::PMPI_Win_detach(win, (b * bucket) as *const std::ffi::c_void) };
        }
        pin::unpin(b * bucket, bucket, Use::Remote);
    }

    /// Detaches and unpins everything (the service closes).
    pub fn clear(&mut self, win: mpi::MPI_Win, bucket: usize) {
        for (b, c) in self.count.drain() {
            // SAFETY: as in `unmap`.
            unsafe { mpi::PMPI_Win_detach(win, (b * bucket) as *const std::ffi::c_void) };
            for _ in 0..c {
                pin::unpin(b * bucket, bucket, Use::Remote);
            }
        }
    }
}

/// Whether `len` bytes at `addr` of this process are mapped readable (and writable, with
/// `write`): a put or get to this process itself copies directly after this check.
pub fn accessible(addr: usize, len: usize, write: bool, page: usize) -> bool {
    let buckets: Vec<usize> = (addr / page..(addr + len - 1) / page + 1).collect();
    permissions(&buckets, page).is_some_and(|w| w || !write)
}

/// Whether every bucket of `map` lies in readable mappings of this process (`None`: not), and
/// whether all are writable, from `/proc/self/maps`.
fn permissions(map: &[usize], bucket: usize) -> Option<bool> {
    if map.is_empty() {
        return Some(true);
    }
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
    for &b in map {
        // Buckets are whole pages: each lies in one run of VMAs; walk them in order.
        let (mut at, end) = (b * bucket, (b + 1) * bucket);
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
        // SAFETY: unmaps what is left.
        unsafe { libc::munmap(p as *mut libc::c_void, 2 * page) };
    }
}
