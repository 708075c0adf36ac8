//! The DiskRead and DiskWrite channels: file to host memory and back, with `pread`/`pwrite` on
//! the channel's worker thread (positioned I/O: requests of one descriptor from several
//! transfers never share a file offset). Short transfers are continued, `EINTR` retried; end of
//! file before the range is complete is an error (a copy names bytes that must exist).

use super::channel::{Channel, Step};
use crate::transfer::plan::ChannelKind;

pub struct DiskRead;
pub struct DiskWrite;

impl Channel for DiskRead {
    fn kind(&self) -> ChannelKind {
        ChannelKind::DiskRead
    }

    unsafe fn perform(&self, step: &Step) -> Result<(), String> {
        let &Step::Read { fd, offset, into, len } = step else {
            return Err(format!("disk-read channel cannot perform {step:?}"));
        };
        let mut done = 0usize;
        while done < len {
            // SAFETY: the caller's contract: `into` is writable for `len` bytes.
            let n = unsafe { libc::pread(fd, into.add(done).cast(), len - done, (offset + done as u64) as libc::off_t) };
            match n {
                0 => return Err(format!("file descriptor {fd}: end of file at byte {} of a {len}-byte read at offset {offset}", done)),
                n if n > 0 => done += n as usize,
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(format!("file descriptor {fd}: read of {len} bytes at offset {offset}: {e}"));
                    }
                }
            }
        }
        Ok(())
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
        let mut done = 0usize;
        while done < len {
            // SAFETY: the caller's contract: `from` is readable for `len` bytes.
            let n = unsafe { libc::pwrite(fd, from.add(done).cast(), len - done, (offset + done as u64) as libc::off_t) };
            if n > 0 {
                done += n as usize;
                continue;
            }
            if n == 0 {
                return Err(format!("file descriptor {fd}: write of {len} bytes at offset {offset} made no progress"));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("file descriptor {fd}: write of {len} bytes at offset {offset}: {e}"));
            }
        }
        Ok(())
    }
}
