//! Strategies and the range-kernel stream against serial processing, and their counters.

use super::Strategy;
use super::*;
use crate::datatype::interp;
use crate::datatype::testgen::{arb_dl, span};
use proptest::prelude::*;

/// Whether the typemap of `count` elements addresses no byte twice.
fn disjoint(dl: &DataLoop, count: usize) -> bool {
    let mut runs = vec![];
    interp::for_each_run(dl, count, 0, dl.size * count, |o, l| runs.push((o, o + l as i64)));
    runs.sort();
    runs.windows(2).all(|w| w[0].1 <= w[1].0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Every strategy and the range kernel, 1..4 workers, chunks in random order with
    /// duplicates (each worker takes its own chunks, so duplicates of a chunk never run
    /// concurrently): the packed bytes and the unpacked memory equal serial processing.
    #[test]
    fn strategies_match_serial(
        dl in arb_dl(),
        count in 1usize..5,
        chunk in 1usize..48,
        interval_chunks in 1usize..5,
        workers in 1usize..5,
        seed in any::<u64>(),
    ) {
        let (origin, len) = span(&dl, count);
        let total = dl.size * count;
        let src: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
        let mut want = vec![0u8; total];
        // SAFETY: `span` covers the typemap around `origin`.
        unsafe { interp::pack(&dl, count, src.as_ptr().add(origin), 0, total, &mut want) };
        let ckpts = Arc::new(Checkpoints::build(&dl, count, chunk * interval_chunks));
        let ct = CompiledType::new(&dl);
        // The strategies, then the range kernel (`None`).
        let how = Strategy::ALL.map(Some).into_iter().chain([None]);
        let new_stream = |s: Option<Strategy>| match s {
            Some(s) => Stream::new(&dl, count, s, chunk, workers, ckpts.clone()),
            None => Stream::kernel(&ct, count, chunk, workers),
        };
        for strategy in how {
            let stream = new_stream(strategy);
            let mut got = vec![0u8; total];
            // SAFETY: as above.
            unsafe { pack(&stream, src.as_ptr().add(origin), &mut got) };
            prop_assert_eq!(&got, &want, "{:?} in order", strategy);
            // In order, RW-CP never catches up and never resets.
            if strategy == Some(Strategy::RwCp) {
                let c = stream.counters();
                prop_assert_eq!((c.catch_up_bytes, c.resets), (0, 0));
            }

            // Random order with duplicates, per worker, on a fresh stream.
            let stream = new_stream(strategy);
            let mut rng = seed;
            let mut next = move || { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; rng };
            let plans: Vec<Vec<(usize, usize)>> = (0..workers).map(|w| {
                let mut v = stream.chunks_of(w);
                for i in 0..v.len() {
                    if next() % 3 == 0 { v.push(v[i]); }
                }
                for i in (1..v.len()).rev() { v.swap(i, next() as usize % (i + 1)); }
                v
            }).collect();
            let got = Mutex::new(vec![0u8; total]);
            let srcp = Shared(src.as_ptr().cast_mut());
            run_workers(workers, &|w| {
                for &(a, b) in &plans[w] {
                    let mut piece = vec![0u8; b - a];
                    // SAFETY: as above; `src` is only read.
                    unsafe { stream.pack(srcp.get().add(origin), a, b, &mut piece) };
                    got.lock().unwrap()[a..b].copy_from_slice(&piece);
                }
            });
            prop_assert_eq!(&*got.lock().unwrap(), &want, "{:?} shuffled", strategy);

            if disjoint(&dl, count) {
                let unpacked = |f: &dyn Fn(*mut u8)| {
                    let mut dst = vec![0u8; len];
                    f(dst.as_mut_ptr());
                    dst
                };
                // SAFETY: `span` covers the typemap; the typemap is disjoint (checked).
                let serial = unpacked(&|d| unsafe { interp::unpack(&dl, count, d.add(origin), 0, total, &want) });
                let stream = new_stream(strategy);
                // SAFETY: as above.
                let par = unpacked(&|d| unsafe { unpack(&stream, &want, d.add(origin)) });
                prop_assert_eq!(&par, &serial, "{:?} unpack", strategy);
                let stream = new_stream(strategy);
                let dp = |d: *mut u8| {
                    let d = Shared(d);
                    run_workers(workers, &|w| {
                        for &(a, b) in &plans[w] {
                            // SAFETY: as above; duplicates of a chunk stay on one worker.
                            unsafe { stream.unpack(d.get().add(origin), a, b, &want[a..b]) };
                        }
                    });
                };
                prop_assert_eq!(&unpacked(&dp), &serial, "{:?} unpack shuffled", strategy);
            }
        }
    }
}

/// A kernel stream gives each worker one run of whole chunks and does no catch-up work.
#[test]
fn kernel_stream_shares() {
    let dl = DataLoop::vector(1000, 1, 16, DataLoop::bytes(8));
    let ct = CompiledType::new(&dl);
    let st = Stream::kernel(&ct, 1, 512, 3);
    // 8000 bytes in 3 shares of ceil(2667 / 512) = 6 chunks.
    assert_eq!(st.chunks_of(0).first(), Some(&(0, 512)));
    assert_eq!(st.chunks_of(1), (6..12).map(|c| (512 * c, 512 * c + 512)).collect::<Vec<_>>());
    assert_eq!(st.chunks_of(2).last(), Some(&(7680, 8000)));
    let src: Vec<u8> = (0..16 * 1000).map(|i| i as u8).collect();
    let mut out = vec![0u8; st.len()];
    // SAFETY: `src` covers the 16000-byte extent.
    unsafe { pack(&st, src.as_ptr(), &mut out) };
    assert!(out.chunks(8).enumerate().all(|(i, b)| b == &src[16 * i..16 * i + 8]));
    assert_eq!(st.counters(), Counters::default());
}

#[test]
fn counters_show_each_strategy_s_overheads() {
    let dl = DataLoop::vector(1024, 1, 16, DataLoop::bytes(8));
    let src = vec![7u8; 16 * 1024];
    let (chunk, workers) = (512, 2);
    let ckpts = Arc::new(Checkpoints::build(&dl, 1, 4 * chunk));
    let run = |s| {
        let st = Stream::new(&dl, 1, s, chunk, workers, ckpts.clone());
        let mut out = vec![0u8; st.len()];
        // SAFETY: `src` covers the 16 KiB extent.
        unsafe { pack(&st, src.as_ptr(), &mut out) };
        st.counters()
    };
    // 8 KiB stream, 16 chunks, 4 checkpoints.
    assert_eq!(run(Strategy::RwCp), Counters { catch_up_bytes: 0, resets: 0, copies: 4 });
    let ro = run(Strategy::RoCp);
    assert_eq!((ro.copies, ro.catch_up_bytes), (16, 4 * (512 + 1024 + 1536)));
    // Each worker skips the other's chunk before each of its chunks but worker 0's first.
    let local = run(Strategy::HpuLocal);
    assert_eq!(local, Counters { catch_up_bytes: 15 * 512, resets: 0, copies: 2 });
    // A chunk behind RW-CP's working copy resets it from the master.
    let st = Stream::new(&dl, 1, Strategy::RwCp, chunk, workers, ckpts.clone());
    let mut out = vec![0u8; chunk];
    // SAFETY: as above.
    unsafe {
        st.pack(src.as_ptr(), 1024, 1536, &mut out);
        st.pack(src.as_ptr(), 512, 1024, &mut out);
    }
    assert_eq!(st.counters(), Counters { catch_up_bytes: 1024 + 512, resets: 1, copies: 1 });
}
