//! The disk level pair (Sequoia 3.2): the top is the file system, its one child this process
//! (which runs the task itself: the disk has no processor). An array is a temporary file of its
//! size, unlinked at once (it disappears with the descriptor, also when the process dies), with
//! its blocks reserved (`posix_fallocate`; where the file system cannot, a sentinel byte written
//! at the end): no space is an allocation error, not a failed write later. Transfer lists become
//! batches of positioned reads or writes, one per run ([`super::io`]): runs of different children
//! never share a read-modify-write, so children may write neighbouring runs concurrently.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use super::array::{Desc, Shape, Storage};
use super::exec::Job;
use super::io::{self, Op};
use super::runtime::{Level, RemoteCall};
use super::spec::Kind;
use super::xfer::{Dir, XferList};
use super::Error;
use crate::transfer::runtime::Event;

pub struct Disk {
    dir: String,
}

/// Where array files go: `SLUICE_LEVELS_DIR`, else `$TMPDIR`, else `/tmp`.
fn directory() -> String {
    ["SLUICE_LEVELS_DIR", "TMPDIR"].iter().find_map(|v| std::env::var(v).ok().filter(|d| !d.is_empty())).unwrap_or_else(|| "/tmp".into())
}

impl Disk {
    pub fn new() -> Result<Disk, Error> {
        let dir = directory();
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(Disk { dir }),
            _ => Err(Error::Io(format!("disk level: {dir} is not a directory (SLUICE_LEVELS_DIR, TMPDIR)"))),
        }
    }

    /// A new unlinked file of `bytes` reserved bytes.
    fn file(&self, bytes: usize) -> Result<OwnedFd, Error> {
        let template =
            CString::new(format!("{}/sluice-array-XXXXXX", self.dir)).map_err(|_| Error::Io("directory name holds a NUL byte".into()))?;
        let mut path = template.into_bytes_with_nul();
        // SAFETY: a writable NUL-terminated template ending in XXXXXX.
        let fd = unsafe { libc::mkostemp(path.as_mut_ptr().cast(), libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(Error::Io(format!("disk level: cannot create a file in {}: {}", self.dir, std::io::Error::last_os_error())));
        }
        // SAFETY: a descriptor we just opened and own.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the path mkostemp filled in.
        unsafe { libc::unlink(path.as_ptr().cast()) };
        // SAFETY: a valid descriptor; reserves the file's blocks.
        let r = unsafe { libc::posix_fallocate(fd, 0, bytes as libc::off_t) };
        match r {
            0 => Ok(owned),
            libc::ENOSPC | libc::EFBIG => Err(Error::NoMem(format!("disk level: no space for {bytes} bytes in {}", self.dir))),
            libc::EOPNOTSUPP | libc::EINVAL => {
                // No reservation here: the sentinel byte at the end at least proves the size.
                let zero = 0u8;
                // SAFETY: one byte from a local, positioned write on our descriptor.
                let n = unsafe { libc::pwrite(fd, (&zero as *const u8).cast(), 1, bytes as libc::off_t - 1) };
                if n == 1 {
                    Ok(owned)
                } else {
                    Err(Error::NoMem(format!(
                        "disk level: the sentinel write at byte {} failed: {}",
                        bytes - 1,
                        std::io::Error::last_os_error()
                    )))
                }
            }
            e => Err(Error::Io(format!("disk level: reserving {bytes} bytes: {}", std::io::Error::from_raw_os_error(e)))),
        }
    }
}

impl Level for Disk {
    fn kind(&self) -> Kind {
        Kind::Disk
    }

    fn children(&self) -> usize {
        1
    }

    fn allocate(&self, shape: &Shape, _desc: Desc, _align: usize, _block_rows: usize) -> Result<Storage, Error> {
        let bytes = shape.bytes();
        Ok(Storage::File { fd: self.file(bytes.max(1))?, len: bytes })
    }

    /// The child is this process: the task runs on the caller's thread (a task call returns when
    /// it did), so tasks may call MPI at any thread level.
    fn spawn(&self, _child: usize, _remote: RemoteCall, job: Job) {
        job();
    }

    fn transfer(&self, top: &Arc<Storage>, list: &XferList) -> Result<(Vec<Event>, usize), Error> {
        let fd = top.fd().ok_or_else(|| Error::Arg("a disk array without a file".into()))?;
        let write = list.dir == Dir::Put;
        let ops = list.runs.iter().map(|&(t, l, n)| Op { fd, offset: t as u64, mem: list.local.wrapping_add(l), len: n, write }).collect();
        Ok((vec![io::submit(ops, top.clone())], 0))
    }

    fn stop(&self) {}
}
