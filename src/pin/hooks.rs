//! Invalidation: every way an address range leaves the process or changes its pages reaches the
//! bucket table before the kernel acts, so no pinned bucket outlives its memory.
//!
//! Mechanism: entry-point patching of the C library's system-call wrappers, in the style of
//! UCX's memory hooks (`ucm` "bistro"): the first 13 bytes of each wrapper become
//! `movabs r11, hook; jmp r11`, and the hook invalidates, then makes the system call itself.
//! Patching the code, not a symbol table, is what catches the C library's internal calls: glibc's
//! `free`/`realloc`/`malloc_trim` call the same `__munmap`, `__madvise`, `__mmap` and `__brk`
//! code directly, past `LD_PRELOAD` and past every GOT. Written by hand because no crate patches
//! function entries (the kernel's userfaultfd unmap/remove/remap events were the alternative:
//! they need every pinned range registered in missing-page mode with a monitor thread serving
//! page faults, and are disabled for unprivileged processes on many systems).
//!
//! Caught, each before the system call: `munmap`; `mremap` (the old range; the new one with
//! `MREMAP_FIXED`); `madvise` with `MADV_DONTNEED`, `MADV_DONTNEED_LOCKED`, `MADV_FREE`,
//! `MADV_REMOVE`; `brk` lowering the break (so `sbrk` and the allocator's heap trim, which call
//! it); `mmap` with `MAP_FIXED` over a range (which replaces its pages); `shmdt` (the segment's
//! extent read from `/proc/self/maps`). Not caught: system calls made without the C library
//! (inline `syscall` instructions, `syscall(SYS_munmap, ...)`), the dynamic loader's own unmaps
//! (`dlclose`), other processes' `process_madvise`. x86-64 with glibc only; elsewhere
//! [`install`] fails and the cache keeps nothing pinned between operations.
//!
//! The hooks run inside the allocator, with its locks held: they take the bucket table's lock
//! and call the backend, neither of which allocates (`bucket`, `backend`).

use std::sync::OnceLock;

/// Whether the hooks are in place (`Err`: why not). Installed once, at the first pin.
pub fn install() -> Result<(), &'static str> {
    static DONE: OnceLock<Result<(), &'static str>> = OnceLock::new();
    *DONE.get_or_init(imp::install_all)
}

/// How [`install`] would catch unmaps here, without installing anything (`sluice-info`).
pub fn probe() -> Result<&'static str, &'static str> {
    imp::probe()
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
mod imp {
    const WHY: &str = "invalidation hooks exist for x86-64 Linux with glibc only";
    pub fn install_all() -> Result<(), &'static str> {
        Err(WHY)
    }
    pub fn probe() -> Result<&'static str, &'static str> {
        Err(WHY)
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod imp {
    use libc::{c_int, c_long, c_void, size_t};
    use std::sync::atomic::{AtomicPtr, Ordering};

    use super::super::invalidate;

    /// glibc's `__curbrk`: its `brk` wrapper records the break there and `sbrk` reads it.
    static CURBRK: AtomicPtr<*mut c_void> = AtomicPtr::new(std::ptr::null_mut());

    const MADV_DONTNEED_LOCKED: c_int = 24;

    /// A wrapper's entry and the hook that replaces it.
    type Site = (*mut u8, usize);

    /// The patch sites: glibc's `__curbrk`, and each wrapper's entry with its hook.
    pub fn targets() -> Result<(*mut *mut c_void, [Site; 6]), &'static str> {
        // SAFETY: dlsym of a data symbol of the already loaded C library.
        let curbrk = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__curbrk".as_ptr()) };
        if curbrk.is_null() {
            return Err("the C library has no __curbrk (not glibc?)");
        }
        let hooks: [(&std::ffi::CStr, usize); 6] = [
            (c"munmap", munmap_hook as *const () as usize),
            (c"mremap", mremap_hook as *const () as usize),
            (c"madvise", madvise_hook as *const () as usize),
            (c"brk", brk_hook as *const () as usize),
            (c"mmap", mmap_hook as *const () as usize),
            (c"shmdt", shmdt_hook as *const () as usize),
        ];
        let mut sites = [(std::ptr::null_mut(), 0); 6];
        for (site, (name, hook)) in sites.iter_mut().zip(hooks) {
            // SAFETY: looks up a function of the loaded C library.
            let target = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            if target.is_null() {
                return Err("a memory function of the C library was not found");
            }
            *site = (target.cast(), hook);
        }
        Ok((curbrk.cast(), sites))
    }

    pub fn probe() -> Result<&'static str, &'static str> {
        if ucx::loaded() {
            return Ok("through UCX's memory events (libucm is loaded and hooks the same functions)");
        }
        targets()?;
        if foreign_patch()? {
            return Err("another library already hooks the C library's memory functions");
        }
        Ok("entry points of munmap, mremap, madvise, brk, mmap, shmdt can be patched")
    }

    /// Whether an entry already starts with a jump (another memory hook's patch).
    fn foreign_patch() -> Result<bool, &'static str> {
        let (_, sites) = targets()?;
        Ok(sites.iter().any(|(t, _)| {
            // SAFETY: reads the first two bytes of a C library function's code.
            let b = unsafe { std::slice::from_raw_parts(*t as *const u8, 2) };
            matches!(b, [0xe9, _] | [0xeb, _] | [0xff, 0x25] | [0x49, 0xbb] | [0x48, 0xb8])
        }))
    }

    pub fn install_all() -> Result<(), &'static str> {
        if let Some(subscribed) = ucx::subscribe() {
            return subscribed;
        }
        let (curbrk, sites) = targets()?;
        // Another memory hook (a jump at the entry) is never overwritten: its owner's cache
        // would go stale. Without UCX's event interface to join, sluice then caches nothing.
        if foreign_patch()? {
            return Err("another library already hooks the C library's memory functions");
        }
        CURBRK.store(curbrk, Ordering::Release);
        for (target, hook) in sites {
            // SAFETY: `target` is the entry of a glibc system-call wrapper of at least 16 bytes
            // into whose first 13 bytes no code jumps (checked for glibc 2.31-2.40: each starts
            // with `mov $nr, %eax` or a register move, then `syscall`); `hook` has its C
            // signature.
            unsafe { patch(target, hook)? };
        }
        Ok(())
    }

    /// UCX's memory hooks (libucm, loaded with MPICH's ch4:ucx or Open MPI's UCX components)
    /// patch the same functions, `sbrk` included, at load time: where libucm is loaded, sluice
    /// subscribes to its "memory unmapped" event instead of patching over it (UCX calls the
    /// subscribers before the memory goes: munmap, mremap, shmdt, brk/sbrk, madvise, mmap with
    /// MAP_FIXED).
    mod ucx {
        use libc::{c_int, c_void};

        /// `UCM_EVENT_VM_UNMAPPED` (ucm/api/ucm.h: `UCS_BIT(17)`).
        const VM_UNMAPPED: c_int = 1 << 17;
        type Callback = unsafe extern "C" fn(c_int, *mut c_void, *mut c_void);
        type SetHandler = unsafe extern "C" fn(c_int, c_int, Callback, *mut c_void) -> c_int;

        /// libucm, if some object of the process loaded it (the handle stays open).
        fn handle() -> Option<*mut c_void> {
            // SAFETY: RTLD_NOLOAD: only finds a library already loaded.
            let lib = unsafe { libc::dlopen(c"libucm.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            (!lib.is_null()).then_some(lib)
        }

        /// Whether libucm is loaded.
        pub fn loaded() -> bool {
            handle().is_some()
        }

        /// `None`: libucm is not loaded; else whether the subscription took.
        pub fn subscribe() -> Option<Result<(), &'static str>> {
            let lib = handle()?;
            // SAFETY: a function of the handle just obtained.
            let f = unsafe { libc::dlsym(lib, c"ucm_set_event_handler".as_ptr()) };
            if f.is_null() {
                return Some(Err("libucm without ucm_set_event_handler"));
            }
            // SAFETY: the symbol has this C signature (ucm/api/ucm.h); the handle stays open for
            // the process's life (the callback must stay reachable).
            let set = unsafe { std::mem::transmute::<*mut c_void, SetHandler>(f) };
            // SAFETY: registers a callback that only reads the event it is given.
            let status = unsafe { set(VM_UNMAPPED, 1000, unmapped, std::ptr::null_mut()) };
            Some(if status == 0 { Ok(()) } else { Err("UCX's memory hooks refused sluice's handler") })
        }

        /// UCX's event: `ucm_event_t` is a union whose `vm_unmapped` member is
        /// `{ void *address; size_t size; }` at its start.
        unsafe extern "C" fn unmapped(_kind: c_int, event: *mut c_void, _arg: *mut c_void) {
            // SAFETY: UCX passes its event; for VM_UNMAPPED the first two words are the range.
            let range = unsafe { *(event as *const [usize; 2]) };
            crate::pin::invalidate(range[0], range[1]);
        }
    }

    /// Overwrites the entry of `target` with `movabs r11, hook; jmp r11`.
    ///
    /// # Safety
    /// `target` must be a function entry whose first 13 bytes no other code jumps into, and
    /// `hook` a function with the same signature.
    unsafe fn patch(target: *mut u8, hook: usize) -> Result<(), &'static str> {
        let mut code = [0u8; 13];
        code[0] = 0x49; // REX.W+B
        code[1] = 0xBB; // mov r11, imm64
        code[2..10].copy_from_slice(&(hook as u64).to_le_bytes());
        code[10..13].copy_from_slice(&[0x41, 0xFF, 0xE3]); // jmp r11
                                                           // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let start = (target as usize) & !(page - 1);
        let len = (target as usize + code.len() - start).div_ceil(page) * page;
        let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
        // SAFETY: changes the protection of the C library's text pages holding `target` (a
        // private mapping: the write makes copy-on-write copies for this process only).
        if unsafe { libc::mprotect(start as *mut c_void, len, rwx) } != 0 {
            return Err("mprotect of the C library's text failed");
        }
        // SAFETY: the page is writable now; the caller vouches for the 13 bytes.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), target, code.len()) };
        // SAFETY: as above, back to read + execute.
        unsafe { libc::mprotect(start as *mut c_void, len, libc::PROT_READ | libc::PROT_EXEC) };
        Ok(())
    }

    /// An `int`-returning system call's result: -1 and `errno` on failure (the raw `syscall`
    /// of libc sets both already).
    fn int(r: c_long) -> c_int {
        r as c_int
    }

    unsafe extern "C" fn munmap_hook(addr: *mut c_void, len: size_t) -> c_int {
        invalidate(addr as usize, len);
        // SAFETY: the caller's own munmap, made as the wrapper would.
        int(unsafe { libc::syscall(libc::SYS_munmap, addr, len) })
    }

    unsafe extern "C" fn mremap_hook(
        old: *mut c_void,
        old_len: size_t,
        new_len: size_t,
        flags: c_int,
        new_addr: *mut c_void,
    ) -> *mut c_void {
        invalidate(old as usize, old_len);
        if flags & libc::MREMAP_FIXED != 0 {
            invalidate(new_addr as usize, new_len);
        }
        // SAFETY: the caller's own mremap; `new_addr` is ignored by the kernel without
        // MREMAP_FIXED (the variadic argument may be absent, its register is then unused).
        unsafe { libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new_addr) as *mut c_void }
    }

    unsafe extern "C" fn madvise_hook(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
        if matches!(advice, libc::MADV_DONTNEED | libc::MADV_FREE | libc::MADV_REMOVE | MADV_DONTNEED_LOCKED) {
            invalidate(addr as usize, len);
        }
        // SAFETY: the caller's own madvise.
        int(unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice) })
    }

    unsafe extern "C" fn mmap_hook(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: libc::off_t) -> *mut c_void {
        if flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) == libc::MAP_FIXED {
            invalidate(addr as usize, len);
        }
        // SAFETY: the caller's own mmap (the kernel checks the offset's alignment as glibc does).
        unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) as *mut c_void }
    }

    /// glibc's `__brk`: set the break, record it in `__curbrk`, fail with ENOMEM when the
    /// kernel did not move it as far as asked.
    unsafe extern "C" fn brk_hook(addr: *mut c_void) -> c_int {
        let cur = CURBRK.load(Ordering::Acquire);
        // SAFETY: `cur` points at glibc's `__curbrk` (install_all).
        let now = unsafe { *cur } as usize;
        if !addr.is_null() && now > addr as usize {
            invalidate(addr as usize, now - addr as usize);
        }
        // SAFETY: the brk system call; it returns the new (or unchanged) break.
        let new = unsafe { libc::syscall(libc::SYS_brk, addr) } as *mut c_void;
        // SAFETY: as above.
        unsafe { *cur = new };
        if (new as usize) < addr as usize {
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = libc::ENOMEM };
            -1
        } else {
            0
        }
    }

    unsafe extern "C" fn shmdt_hook(addr: *const c_void) -> c_int {
        if let Some(end) = mapping_end(addr as usize) {
            invalidate(addr as usize, end - addr as usize);
        }
        // SAFETY: the caller's own shmdt.
        int(unsafe { libc::syscall(libc::SYS_shmdt, addr) })
    }

    /// The end of the System V segment attached at `addr`: the mapping that starts there and the
    /// ones right after it with the same inode (`mlock` splits one attachment into several
    /// mappings), from `/proc/self/maps`, read with system calls into a stack buffer (no
    /// allocation: this may run inside the allocator).
    fn mapping_end(addr: usize) -> Option<usize> {
        // SAFETY: opens a file by a NUL-terminated path.
        let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let mut buf = [0u8; 4096];
        let mut have = 0usize;
        // (end so far, inode) once the first mapping is found; `done` when the run ended.
        let mut found: Option<(usize, u64)> = None;
        let mut done = false;
        while !done {
            // SAFETY: reads into the unused tail of `buf`.
            let n = unsafe { libc::read(fd, buf[have..].as_mut_ptr().cast(), buf.len() - have) };
            if n <= 0 {
                break;
            }
            have += n as usize;
            let mut consumed = 0;
            while let Some(nl) = buf[consumed..have].iter().position(|&b| b == b'\n') {
                let line = parse_line(&buf[consumed..consumed + nl]);
                consumed += nl + 1;
                match (found, line) {
                    (None, Some((lo, hi, inode))) if lo == addr => found = Some((hi, inode)),
                    (Some((end, inode)), Some((lo, hi, i))) if lo == end && i == inode => found = Some((hi, inode)),
                    (Some(_), _) => {
                        done = true;
                        break;
                    }
                    _ => {}
                }
            }
            buf.copy_within(consumed..have, 0);
            have -= consumed;
            if have == buf.len() {
                have = 0; // a line longer than the buffer: skip it
            }
        }
        // SAFETY: closes the descriptor opened above.
        unsafe { libc::close(fd) };
        found.map(|(end, _)| end)
    }

    /// `lo-hi perms offset dev inode ...`: the range (hexadecimal) and the inode (decimal).
    fn parse_line(line: &[u8]) -> Option<(usize, usize, u64)> {
        let (lo, hi) = parse_range(line)?;
        let inode = line.split(|&b| b == b' ').filter(|f| !f.is_empty()).nth(4)?;
        let mut v = 0u64;
        for &c in inode {
            v = v.checked_mul(10)? + (c as char).to_digit(10)? as u64;
        }
        Some((lo, hi, v))
    }

    /// `lo-hi` at the start of a maps line, in hexadecimal.
    fn parse_range(line: &[u8]) -> Option<(usize, usize)> {
        let hex = |s: &[u8]| -> Option<usize> {
            let mut v = 0usize;
            for &c in s {
                v = v.checked_mul(16)? + (c as char).to_digit(16)? as usize;
            }
            (!s.is_empty()).then_some(v)
        };
        let dash = line.iter().position(|&b| b == b'-')?;
        let space = line.iter().position(|&b| b == b' ')?;
        Some((hex(&line[..dash])?, hex(line.get(dash + 1..space)?)?))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn maps_lines_parse() {
            assert_eq!(super::parse_range(b"7f00a000-7f00c000 rw-s 00000000 00:01 5 /SYSV0"), Some((0x7f00a000, 0x7f00c000)));
            assert_eq!(super::parse_range(b"garbage"), None);
            assert_eq!(
                super::parse_line(b"7f00a000-7f00c000 rw-s 00000000 00:01 4242   /SYSV0 (deleted)"),
                Some((0x7f00a000, 0x7f00c000, 4242))
            );
        }
    }
}
