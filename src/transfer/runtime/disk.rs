//! The DiskRead and DiskWrite channels: file to host memory and back, with `pread`/`pwrite` on
//! the channel's worker thread (positioned I/O: requests of one descriptor from several
//! transfers never share a file offset). Short transfers are continued, `EINTR` retried; end of
//! file before the range is complete is an error (a copy names bytes that must exist).

use super::channel::{Channel, Step};
use crate::transfer::plan::ChannelKind;

pub struct DiskRead;
pub struct DiskWrite;

/// Moves all `len` bytes between `mem` and file offset `offset` of `fd` with positioned I/O
/// (`write`: memory to file): short transfers are continued, `EINTR` retried, end of file before
/// the range is complete is an error. Also the multi-level interface's file I/O
/// (`levels::io`).
///
/// # Safety
/// `mem` is valid for `len` bytes: readable for a write, writable for a read.
pub unsafe fn positioned(fd: i32, offset: u64, mem: *mut u8, len: usize, write: bool) -> Result<(), String> {
    let what = || format!("file descriptor {fd}: {} of {len} bytes at offset {offset}", if write { "write" } else { "read" });
    let mut done = 0usize;
    while done < len {
        let (at, off) = (mem.wrapping_add(done), (offset + done as u64) as libc::off_t);
        // SAFETY: `at .. mem + len` lies in the caller's memory (the contract above).
        let n = unsafe {
            if write {
                libc::pwrite(fd, at.cast(), len - done, off)
            } else {
                libc::pread(fd, at.cast(), len - done, off)
            }
        };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(format!("{}: end of file (or no progress) after {done} bytes", what())),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(format!("{}: {e}", what()));
                }
            }
        }
    }
    Ok(())
}

impl Channel for DiskRead {
    fn kind(&self) -> ChannelKind {
        ChannelKind::DiskRead
    }

    unsafe fn perform(&self, step: &Step) -> Result<(), String> {
        let &Step::Read { fd, offset, into, len } = step else {
            return Err(format!("disk-read channel cannot perform {step:?}"));
        };
        // SAFETY: the caller's contract: `into` is writable for `len` bytes.
        unsafe { positioned(fd, offset, into, len, false) }
    }
}

impl Channel for DiskWrite {
    fn kind(&self) -> ChannelKind {
        ChannelKind::DiskWrite
    }

    unsafe fn perform(&self, step: &Step) -> Result<(), String> {
        let &Step::Write { fd, offset, from, len } = step else {
            return Err(format!("disk-write channel cannot perform {step:?}"));
        };
        // SAFETY: the caller's contract: `from` is readable for `len` bytes.
        unsafe { positioned(fd, offset, from.cast_mut(), len, true) }
    }
}
