//! Invalidation of the registration cache (`sluice::pin`), in this process, with the `mlock`
//! backend and the hooks installed: every way memory leaves the process or changes its pages,
//! then reuse of the same addresses, checked against the kernel's own view (`Locked:` of the
//! mappings in /proc/self/smaps, `VmLck` of /proc/self/status).

use std::sync::Mutex;

use sluice::pin::{self, Limits, Use};

/// One scenario at a time: they share the process's cache and its locked-memory count.
static SERIAL: Mutex<()> = Mutex::new(());

fn page() -> usize {
    pin::page_size()
}

fn setup() -> std::sync::MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    pin::configure(Limits { m: 64 << 20, max_victim: 16 << 20, bucket: page() });
    pin::drain();
    g
}

/// Bytes the kernel reports locked in the mappings inside `[addr, addr + len)`.
fn locked_in(addr: usize, len: usize) -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    let mut total = 0;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo < addr + len && hi > addr;
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("Locked:") {
                total += v.trim().trim_end_matches("kB").trim().parse::<usize>().unwrap() << 10;
            }
        }
    }
    total
}

/// `VmLck` of this process.
fn vm_locked() -> usize {
    pin::backend::locked_bytes()
}

/// What the cache holds pinned now.
fn pinned() -> usize {
    pin::snapshot().map_or(0, |s| s.pinned)
}

fn map(len: usize) -> *mut u8 {
    // SAFETY: a private anonymous mapping; the tests unmap it.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(p, libc::MAP_FAILED);
    p.cast()
}

fn map_at(addr: *mut u8, len: usize) -> *mut u8 {
    // SAFETY: replaces our own mapping at `addr`.
    let p = unsafe {
        libc::mmap(addr.cast(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0)
    };
    assert_eq!(p.cast(), addr);
    addr
}

fn fill(p: *mut u8, len: usize, v: u8) {
    // SAFETY: `p` is a mapping of at least `len` writable bytes.
    unsafe { std::ptr::write_bytes(p, v, len) };
}

fn all(p: *const u8, len: usize, v: u8) -> bool {
    // SAFETY: `p` is a mapping of at least `len` readable bytes.
    unsafe { std::slice::from_raw_parts(p, len) }.iter().all(|&b| b == v)
}

/// Pins `len` bytes at `p` as an operation would, releases them (they stay as victims), and
/// checks that the kernel agrees.
fn pin_and_release(p: *mut u8, len: usize) {
    pin::pin(p as usize, len, Use::Local).unwrap();
    assert_eq!(locked_in(p as usize, len), len, "pinned memory is locked");
    pin::unpin(p as usize, len, Use::Local);
    let s = pin::snapshot().unwrap();
    assert!(s.caching, "the invalidation hooks are installed");
    assert_eq!(locked_in(p as usize, len), len, "released buckets stay pinned as victims");
}

/// After the memory at `p` changed: the cache holds nothing there, and pinning the new memory
/// pins it again (a stale entry would count a hit and lock nothing).
fn reuse_is_fresh(p: *mut u8, len: usize, what: &str) {
    pin::check().unwrap();
    assert_eq!(locked_in(p as usize, len), 0, "{what}: the new memory is not locked");
    let misses = pin::snapshot().unwrap().counters.misses;
    fill(p, len, 0x5a);
    pin::pin(p as usize, len, Use::Local).unwrap();
    assert_eq!(pin::snapshot().unwrap().counters.misses - misses, (len / page()) as u64, "{what}: pinned again, not a stale hit");
    assert_eq!(locked_in(p as usize, len), len, "{what}: the kernel sees the new memory locked");
    assert!(all(p, len, 0x5a), "{what}: data");
    pin::unpin(p as usize, len, Use::Local);
    pin::drain();
    assert_eq!(pinned(), 0);
}

#[test]
fn munmap_then_a_new_mapping_at_the_same_address() {
    let _g = setup();
    let len = 16 * page();
    let p = map(len);
    fill(p, len, 1);
    let before = vm_locked();
    pin_and_release(p, len);
    // SAFETY: our mapping.
    assert_eq!(unsafe { libc::munmap(p.cast(), len) }, 0);
    assert_eq!(pinned(), 0, "munmap dropped the buckets");
    assert_eq!(vm_locked(), before);
    let q = map_at(p, len);
    reuse_is_fresh(q, len, "munmap");
    // SAFETY: our mapping.
    unsafe { libc::munmap(q.cast(), len) };
}

#[test]
fn mmap_fixed_over_pinned_memory() {
    let _g = setup();
    let len = 8 * page();
    let p = map(len);
    fill(p, len, 2);
    pin_and_release(p, len);
    let q = map_at(p, len);
    assert_eq!(pinned(), 0, "MAP_FIXED replaced the pages");
    reuse_is_fresh(q, len, "mmap MAP_FIXED");
    // SAFETY: our mapping.
    unsafe { libc::munmap(q.cast(), len) };
}

#[test]
fn madvise_dontneed_of_cached_memory_succeeds_and_invalidates() {
    let _g = setup();
    let len = 8 * page();
    let p = map(len);
    fill(p, len, 3);
    pin_and_release(p, len);
    // MADV_DONTNEED fails with EINVAL on locked pages: without the hook, an application's
    // madvise would fail because sluice cached its buffer.
    // SAFETY: our mapping.
    assert_eq!(unsafe { libc::madvise(p.cast(), len, libc::MADV_DONTNEED) }, 0, "{}", std::io::Error::last_os_error());
    assert!(all(p, len, 0), "the pages were dropped");
    reuse_is_fresh(p, len, "madvise");
    // SAFETY: our mapping.
    unsafe { libc::munmap(p.cast(), len) };
}

#[test]
fn mremap_moves_the_pages() {
    let _g = setup();
    let len = 8 * page();
    let p = map(len);
    fill(p, len, 4);
    pin_and_release(p, len);
    // A hole after the mapping cannot be guaranteed: ask for a move.
    // SAFETY: our mapping; the kernel may move it.
    let q = unsafe { libc::mremap(p.cast(), len, 64 * page(), libc::MREMAP_MAYMOVE) };
    assert_ne!(q, libc::MAP_FAILED);
    assert_eq!(pinned(), 0, "mremap invalidated the old range");
    assert!(all(q.cast(), len, 4));
    reuse_is_fresh(q.cast(), 64 * page(), "mremap");
    // SAFETY: our mapping.
    unsafe { libc::munmap(q, 64 * page()) };
}

#[test]
fn shmdt_detaches_the_whole_segment() {
    let _g = setup();
    let len = 8 * page();
    // SAFETY: a private System V segment, removed below.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, len, libc::IPC_CREAT | 0o600) };
    assert!(id >= 0);
    // SAFETY: attaches the segment just made.
    let p = unsafe { libc::shmat(id, std::ptr::null(), 0) } as *mut u8;
    assert_ne!(p as isize, -1);
    fill(p, len, 5);
    // Pages 2..6 only: mlock splits the attachment into three mappings, all of which go.
    pin_and_release(p.wrapping_add(2 * page()), 4 * page());
    // SAFETY: detaches the segment attached above.
    assert_eq!(unsafe { libc::shmdt(p.cast()) }, 0);
    assert_eq!(pinned(), 0, "shmdt dropped the buckets");
    // SAFETY: marks the segment for removal.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    let q = map_at(p, len);
    reuse_is_fresh(q, len, "shmdt");
    // SAFETY: our mapping.
    unsafe { libc::munmap(q.cast(), len) };
}

#[test]
fn free_of_a_large_allocation_returns_its_pages() {
    let _g = setup();
    // Larger than glibc's largest mmap threshold (32 MiB): served by mmap, unmapped by free
    // through glibc's internal munmap.
    let len = 40 << 20;
    // SAFETY: malloc/free of our own buffer.
    let p = unsafe { libc::malloc(len) } as *mut u8;
    assert!(!p.is_null());
    fill(p, len, 6);
    let before = vm_locked();
    let start = (p as usize + page() - 1) & !(page() - 1);
    let plen = 256 * page();
    pin_and_release(start as *mut u8, plen);
    // SAFETY: frees the buffer malloc'd above.
    unsafe { libc::free(p.cast()) };
    assert_eq!(pinned(), 0, "free unmapped the pinned pages");
    assert_eq!(vm_locked(), before);
    // SAFETY: as above.
    let q = unsafe { libc::malloc(len) } as *mut u8;
    assert!(!q.is_null());
    let qs = (q as usize + page() - 1) & !(page() - 1);
    reuse_is_fresh(qs as *mut u8, plen, "free + malloc");
    // SAFETY: as above.
    unsafe { libc::free(q.cast()) };
}

/// glibc's own `sbrk`, the one its allocator calls. A process with UCX's memory hooks (MPICH's
/// ch4:ucx links libucm) resolves `sbrk` to UCX's override, which moves the break with its own
/// system call: an application's direct `sbrk` there is not caught (docs/firehose.md).
fn glibc_sbrk() -> unsafe extern "C" fn(libc::intptr_t) -> *mut libc::c_void {
    // SAFETY: looks up a function of the already loaded C library by its soname.
    unsafe {
        let libc_handle = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!libc_handle.is_null());
        let f = libc::dlsym(libc_handle, c"sbrk".as_ptr());
        assert!(!f.is_null());
        std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(libc::intptr_t) -> *mut libc::c_void>(f)
    }
}

/// Set in the child process that runs the sbrk scenario alone.
const SBRK_CHILD: &str = "SLUICE_TEST_SBRK_CHILD";

/// Runs in a child process of this test binary holding only this test: in the parent, the test
/// harness's main thread allocates from the main heap (it prints the other tests' results) and
/// may move the break between this test's grow and shrink, which would make the shrink cut into
/// the heap's own memory.
#[test]
fn sbrk_lowering_the_break_drops_the_pages_above_it() {
    if std::env::var_os(SBRK_CHILD).is_some() {
        sbrk_scenario();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sbrk_lowering_the_break_drops_the_pages_above_it", "--test-threads=1", "--nocapture"])
        .env(SBRK_CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the sbrk scenario failed in its own process:\n{text}");
    assert!(text.contains("1 passed"), "the child ran the scenario:\n{text}");
}

fn sbrk_scenario() {
    let _g = setup();
    let sbrk = glibc_sbrk();
    let plen = 16 * page();
    // SAFETY: grows the break by whole pages; the same amount is given back below (nothing
    // else moves the main heap's break meanwhile: this process runs only this test, the
    // harness's main thread waits for its result, and the test thread allocates from its own
    // arena).
    let old = unsafe { sbrk(0) } as usize;
    let pad = old.next_multiple_of(page()) - old;
    // SAFETY: as above.
    let got = unsafe { sbrk((pad + plen) as isize) } as usize;
    assert_eq!(got, old);
    let start = old + pad;
    fill(start as *mut u8, plen, 7);
    let before = vm_locked();
    pin_and_release(start as *mut u8, plen);
    // SAFETY: gives back exactly what was taken (sbrk calls glibc's internal brk).
    assert_ne!(unsafe { sbrk(-((pad + plen) as isize)) } as isize, -1);
    // SAFETY: reads the break.
    assert_eq!(unsafe { sbrk(0) } as usize, old, "glibc's break is right after the hook");
    assert_eq!(pinned(), 0, "the pages above the new break were dropped");
    assert_eq!(vm_locked(), before);
    pin::check().unwrap();
}

#[test]
fn malloc_trim_of_freed_chunks_drops_their_pages() {
    let _g = setup();
    // Chunks below the mmap threshold from this thread's arena; pages inside them pinned, then
    // everything freed and trimmed: glibc gives whole free pages back with its internal
    // madvise(MADV_DONTNEED) (and lowers the top of the heap with brk or munmap).
    // SAFETY: malloc/free of our own small buffers.
    let chunks: Vec<*mut u8> = (0..256).map(|_| unsafe { libc::malloc(64 << 10) } as *mut u8).collect();
    let c = chunks[200] as usize;
    let start = c.next_multiple_of(page());
    let plen = 8 * page();
    fill(start as *mut u8, plen, 8);
    let before = vm_locked();
    pin_and_release(start as *mut u8, plen);
    for c in chunks {
        // SAFETY: each chunk once.
        unsafe { libc::free(c.cast()) };
    }
    // SAFETY: asks glibc to return free memory.
    unsafe { libc::malloc_trim(0) };
    assert_eq!(pinned(), 0, "the freed, trimmed pages were dropped");
    assert_eq!(vm_locked(), before);
    pin::check().unwrap();
}

#[test]
fn threads_pin_release_and_unmap_concurrently() {
    let _g = setup();
    let before = vm_locked();
    let workers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..200 {
                    let len = (1 + (i + t) % 8) * page();
                    let p = map(len);
                    fill(p, len, t as u8);
                    pin::pin(p as usize, len, Use::Local).unwrap();
                    assert!(all(p, len, t as u8));
                    pin::unpin(p as usize, len, Use::Local);
                    if i % 3 == 0 {
                        // SAFETY: this thread's mapping.
                        assert_eq!(unsafe { libc::madvise(p.cast(), len, libc::MADV_DONTNEED) }, 0);
                    }
                    // SAFETY: this thread's mapping.
                    unsafe { libc::munmap(p.cast(), len) };
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    pin::check().unwrap();
    assert_eq!(pinned(), 0, "every mapping was unmapped");
    assert_eq!(vm_locked(), before);
    let s = pin::snapshot().unwrap();
    assert!(s.counters.invalidated > 0 && s.counters.pinned_high <= s.limits.m + s.limits.max_victim);
}
