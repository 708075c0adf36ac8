//! The registration manager's own costs (docs/benchmarks.md, "Firehose"), in one process:
//! - a cache hit: `pin::pin` + `pin::unpin` of one bucket that is pinned already (a local
//!   operation's reference on a victim), per pair;
//! - the invalidation hook on `munmap` of a range that holds no registration: `munmap` through
//!   the patched C library against the raw system call, alternating, each on a fresh 4 KiB
//!   mapping, with buckets pinned elsewhere (so the hook's range test runs).
//!
//! Prints `hit <ns>` and `munmap <round> <hooked_ns> <raw_ns>` lines. Usage:
//!   sluice-pin-bench [ROUNDS (default 9)] [N per round (default 20000)]

use std::time::Instant;

use sluice::pin::{self, Limits, Use};

fn map(len: usize) -> *mut libc::c_void {
    // SAFETY: a private anonymous mapping; unmapped by the caller.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap failed");
    p
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let rounds = args.first().copied().unwrap_or(9);
    let n = args.get(1).copied().unwrap_or(20000);
    let page = pin::page_size();
    pin::configure(Limits { m: 64 << 20, max_victim: 16 << 20, bucket: page });

    // Buckets pinned around the mappings the munmap loop makes (hooks installed by the first pin).
    let held = map(256 * page);
    pin::pin(held as usize, 256 * page, Use::Local).expect("pin");
    pin::unpin(held as usize, 256 * page, Use::Local);
    assert!(pin::snapshot().is_some_and(|s| s.caching), "invalidation hooks not installed");

    for round in 0..rounds {
        let b = held as usize + (round % 256) * page;
        let t = Instant::now();
        for _ in 0..n {
            pin::pin(b, 8, Use::Local).expect("hit");
            pin::unpin(b, 8, Use::Local);
        }
        println!("hit {:.1}", t.elapsed().as_nanos() as f64 / n as f64);

        let (mut hooked, mut raw) = (0u128, 0u128);
        for i in 0..n {
            let p = map(page);
            let t = Instant::now();
            if i % 2 == 0 {
                // SAFETY: our own mapping, through the patched C library.
                unsafe { libc::munmap(p, page) };
                hooked += t.elapsed().as_nanos();
            } else {
                // SAFETY: our own mapping, by the raw system call (no hook).
                unsafe { libc::syscall(libc::SYS_munmap, p, page) };
                raw += t.elapsed().as_nanos();
            }
        }
        let half = (n / 2) as f64;
        println!("munmap {round} {:.1} {:.1}", hooked as f64 / half, raw as f64 / half);
    }
    let s = pin::snapshot().expect("pinned");
    assert!(s.counters.hits >= (rounds * n) as u64, "the loop did not hit");
    // SAFETY: our own mapping.
    unsafe { libc::munmap(held, 256 * page) };
}
