//! The DiskRead and DiskWrite channels: file to host memory and back, with `pread`/`pwrite` on
//! the channel's worker thread (positioned I/O: requests of one descriptor from several
//! transfers never share a file offset). Short transfers are continued, `EINTR` retried; end of
//! file before the range is complete is an error (a copy names bytes that must exist).

use super::channel::{Channel, Step};
use crate::transfer::plan::ChannelKind;

pub struct DiskRead;
pub struct DiskWrite;

/// Moves `len` bytes with `io(done)` (one `pread`/`pwrite` of the bytes from `done` on) until all
/// are moved; `what` names the request in errors.
fn all(len: usize, what: impl Fn() -> String, mut io: impl FnMut(usize) -> isize) -> Result<(), String> {
    let mut done = 0usize;
    while done < len {
        match io(done) {
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
        all(
            len,
            || format!("file descriptor {fd}: read of {len} bytes at offset {offset}"),
            |done| {
                // SAFETY: the caller's contract: `into` is writable for `len` bytes.
                unsafe { libc::pread(fd, into.add(done).cast(), len - done, (offset + done as u64) as libc::off_t) }
            },
        )
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
        all(
            len,
            || format!("file descriptor {fd}: write of {len} bytes at offset {offset}"),
            |done| {
                // SAFETY: the caller's contract: `from` is readable for `len` bytes.
                unsafe { libc::pwrite(fd, from.add(done).cast(), len - done, (offset + done as u64) as libc::off_t) }
            },
        )
    }
}
