//! `sluice-rwcp-bench`: checkpointed parallel datatype processing (src/datatype/parallel.rs)
//! against the serial specialized kernel, reproducing the paper's Fig. 8, 13a, 13b and 18 on
//! this machine. Pure Rust, no MPI calls.
//!
//! - `fig8`: unpack throughput of a 4 MiB vector (stride = 2 x block) vs block size: specialized
//!   kernel (1 thread), RW-CP, RO-CP, HPU-local (interpreter chunks) and the range kernel
//!   (`Stream::kernel`, no checkpoints) on `--workers` workers.
//! - `fig13a`: the same at 2 KiB blocks vs 1..4 workers.
//! - `fig13b`: checkpoint memory vs block size (Δr from the model, P = `--workers` and 16).
//! - `suite`: pack and unpack of the ddt suite's shapes (built here as dataloops, the irregular
//!   ones with this binary's own seed) with the range kernel on 1 and `--workers` workers (what
//!   MPI_Pack/MPI_Unpack run), and RW-CP with 1 and `--workers` workers, catch-up counted.
//! - `fig18`: reuses needed to amortize checkpoint creation, per suite case.
//!
//! Every engine's output is compared with serial processing before anything is timed. Samples
//! of all engines of one case are interleaved in a rotating order, each timed run preceded by an
//! untimed one of the same engine; median and best are reported (shared cores).
//!
//! Usage: sluice-rwcp-bench [--out DIR] [--samples N] [--workers P] [--chunk BYTES]

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use sluice::datatype::checkpoint::{Checkpoints, IntervalModel, DEFAULT_CHUNK, DEFAULT_LINK_BW};
use sluice::datatype::compiled::CompiledType;
use sluice::datatype::parallel::{self, Counters, Strategy, Stream};
use sluice::datatype::DataLoop;

const EPSILON: f64 = 0.2;
const MEMORY: usize = 16 << 20;

struct Args {
    out: Option<String>,
    samples: usize,
    workers: usize,
    chunk: usize,
}

fn args() -> Args {
    let mut a = Args { out: None, samples: 15, workers: 2, chunk: DEFAULT_CHUNK };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let num = |s: &str| s.parse::<usize>().unwrap_or_else(|_| usage());
    let mut i = 0;
    while i < v.len() {
        let val = v.get(i + 1).map(String::as_str).unwrap_or_else(|| usage());
        match v[i].as_str() {
            "--out" => a.out = Some(val.to_string()),
            "--samples" => a.samples = num(val).max(1),
            "--workers" => a.workers = num(val).max(1),
            "--chunk" => a.chunk = num(val).max(1),
            _ => usage(),
        }
        i += 2;
    }
    a
}

fn usage() -> ! {
    eprintln!("usage: sluice-rwcp-bench [--out DIR] [--samples N] [--workers P] [--chunk BYTES]");
    std::process::exit(2)
}

/// splitmix64 for the irregular cases.
struct Rng(u64);
impl Rng {
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        lo + ((z ^ (z >> 31)) % (hi - lo) as u64) as i64
    }
}

/// The ddt suite's shapes (shared/bench/ddt-suite.md) as dataloops: (name, type, count).
fn suite() -> Vec<(&'static str, DataLoop, usize)> {
    let d = || DataLoop::bytes(8);
    let vec = |n: usize, b: usize, s: i64| DataLoop::vector(n, b, s * 8, d());
    let grid = 256 * 256 * 64 * 8;
    let mut r = Rng(0x0dd7_5eed);
    // Increasing offsets with random gaps (lammps: 24-96 bytes; specfem: 3-12 floats).
    let mut offsets = |n: usize, lo: i64, hi: i64, unit: i64| {
        let mut at = 0i64;
        (0..n)
            .map(|_| {
                let o = at;
                at += unit * r.range(lo, hi + 1);
                o
            })
            .collect::<Vec<i64>>()
    };
    let lammps = offsets(1 << 15, 24, 96, 1);
    let specfem = offsets(1 << 17, 3, 12, 4);
    let field = DataLoop::vector(64, 1, 64 * 40 * 4, DataLoop::bytes(3 * 40 * 4)).resized(0, 64 * 64 * 40 * 4);
    vec![
        ("contig", DataLoop::contig(1 << 19, d()), 1),
        ("vec-1", vec(1 << 19, 1, 2), 1),
        ("vec-2", vec(1 << 18, 2, 4), 1),
        ("vec-8", vec(1 << 16, 8, 16), 1),
        ("vec-64", vec(1 << 13, 64, 128), 1),
        ("vec-256", vec(1 << 11, 256, 512), 1),
        ("face-x", DataLoop::vector(256 * 256, 1, 64 * 8, d()).resized(0, grid), 1),
        ("face-y", DataLoop::vector(256, 1, 256 * 64 * 8, DataLoop::bytes(64 * 8)).resized(0, grid), 1),
        ("face-z", DataLoop::bytes(256 * 64 * 8).resized(0, grid), 1),
        ("lu-5", DataLoop::contig(16, vec(4096, 5, 40)), 1),
        ("milc", DataLoop::vector(16, 1, 16 * 16 * 16 * 16 * 24, DataLoop::vector(256, 16, 256 * 24, DataLoop::bytes(24))), 1),
        ("wrf", DataLoop::structure(vec![1; 4], (0..4).map(|i| i * 64 * 64 * 40 * 4).collect(), vec![field; 4]), 4),
        ("fft-t", DataLoop::vector(1024, 1, 1024 * 16, DataLoop::bytes(16)).resized(0, 16), 1024),
        ("lammps", DataLoop::block_indexed(3, lammps, d()), 1),
        ("specfem", DataLoop::block_indexed(3, specfem, DataLoop::bytes(4)), 1),
        (
            "struct-mix",
            DataLoop::structure(vec![1, 1, 5], vec![0, 8, 16], vec![DataLoop::bytes(4), d(), DataLoop::bytes(1)]).resized(0, 24),
            1 << 17,
        ),
    ]
}

/// A buffer covering `count` elements of `dl` (displacements here are never negative).
fn buffer(dl: &DataLoop, count: usize) -> Vec<u8> {
    let len = (count.max(1) as i64 - 1) * dl.extent + dl.true_ub;
    (0..len.max(1) as usize).map(|i| (i * 31 + 7) as u8).collect()
}

/// The checkpoint table a strategy uses for `P` workers (HPU-local: only the start).
fn table(dl: &DataLoop, count: usize, s: Strategy, workers: usize, chunk: usize) -> Arc<Checkpoints> {
    let total = dl.size * count;
    let interval = match s {
        Strategy::HpuLocal => total.max(1),
        _ => IntervalModel::for_type(dl, count, chunk, workers, DEFAULT_LINK_BW, EPSILON, MEMORY).interval(),
    };
    Arc::new(Checkpoints::build(dl, count, interval))
}

/// One engine of a comparison.
#[derive(Clone)]
enum Engine {
    Specialized,
    Par(Strategy, usize, Arc<Checkpoints>),
    /// The range kernel on this many workers.
    Kernel(usize),
}

impl Engine {
    fn label(&self) -> String {
        match self {
            Engine::Specialized => "specialized".into(),
            Engine::Par(s, p, _) => format!("{}-p{p}", s.name()),
            Engine::Kernel(p) => format!("kernel-p{p}"),
        }
    }

    /// One operation; returns the counters of the stream (zero for the kernel).
    fn run(&self, ct: &CompiledType, count: usize, chunk: usize, pack: bool, mem: &mut [u8], packed: &mut [u8]) -> Counters {
        let dl = ct.dataloop();
        match self {
            Engine::Specialized => {
                // SAFETY: `mem` covers the typemap (built by `buffer`), `packed` is separate.
                unsafe {
                    if pack {
                        ct.pack(mem.as_ptr(), count, packed)
                    } else {
                        ct.unpack(packed, count, mem.as_mut_ptr())
                    }
                }
                Counters::default()
            }
            Engine::Par(..) | Engine::Kernel(_) => {
                let st = match self {
                    Engine::Par(s, p, t) => Stream::new(dl, count, *s, chunk, *p, t.clone()),
                    Engine::Kernel(p) => Stream::kernel(ct, count, chunk, *p),
                    Engine::Specialized => unreachable!("matched above"),
                };
                // SAFETY: as above; the suite's typemaps address no byte twice.
                unsafe {
                    if pack {
                        parallel::pack(&st, mem.as_ptr(), packed)
                    } else {
                        parallel::unpack(&st, packed, mem.as_mut_ptr())
                    }
                }
                st.counters()
            }
        }
    }
}

struct Sample {
    median: f64,
    best: f64,
    counters: Counters,
}

/// Checks every engine against the kernel, then times them interleaved: GB/s of packed bytes.
fn measure(dl: &DataLoop, count: usize, engines: &[Engine], pack: bool, a: &Args) -> Vec<Sample> {
    let ct = CompiledType::new(dl);
    let total = dl.size * count;
    let mut mem = buffer(dl, count);
    let mut want = vec![0u8; total];
    // SAFETY: `mem` covers the typemap.
    unsafe { ct.pack(mem.as_ptr(), count, &mut want) };
    let want_mem = {
        let mut m = vec![0u8; mem.len()];
        // SAFETY: as above.
        unsafe { ct.unpack(&want, count, m.as_mut_ptr()) };
        m
    };
    let mut packed = want.clone();
    let mut counters = vec![Counters::default(); engines.len()];
    for (e, c) in engines.iter().zip(&mut counters) {
        if pack {
            packed.fill(0);
            *c = e.run(&ct, count, a.chunk, true, &mut mem, &mut packed);
            assert!(packed == want, "{}: packed bytes differ from the kernel's", e.label());
        } else {
            mem.fill(0);
            *c = e.run(&ct, count, a.chunk, false, &mut mem, &mut packed);
            assert!(mem == want_mem, "{}: unpacked memory differs from the kernel's", e.label());
        }
    }
    let mut times = vec![vec![]; engines.len()];
    for s in 0..a.samples {
        // The order rotates every sample: an engine timed right after a parallel one ran up to
        // 2x slower here (even after an untimed run of its own), so each engine follows each
        // other one equally often.
        for k in 0..engines.len() {
            let i = (k + s) % engines.len();
            let e = &engines[i];
            // One untimed run first, so the timed one starts from this engine's own cache state.
            black_box(e.run(&ct, count, a.chunk, pack, &mut mem, &mut packed));
            let t0 = Instant::now();
            black_box(e.run(&ct, count, a.chunk, pack, &mut mem, &mut packed));
            times[i].push(t0.elapsed().as_secs_f64());
        }
    }
    times
        .into_iter()
        .zip(counters)
        .map(|(mut t, counters)| {
            t.sort_by(f64::total_cmp);
            Sample { median: total as f64 / t[t.len() / 2] / 1e9, best: total as f64 / t[0] / 1e9, counters }
        })
        .collect()
}

/// Output: markdown to stdout, CSV rows to `DIR/<name>.csv`.
struct Out {
    dir: Option<String>,
}

impl Out {
    fn table(&self, name: &str, title: &str, header: &[&str], rows: &[Vec<String>]) {
        println!("\n### {title}\n\n| {} |\n|{}", header.join(" | "), "---|".repeat(header.len()));
        for r in rows {
            println!("| {} |", r.join(" | "));
        }
        if let Some(d) = &self.dir {
            let mut f = std::fs::File::create(format!("{d}/{name}.csv")).expect("create csv");
            writeln!(f, "{}", header.join(",")).expect("write csv");
            for r in rows {
                writeln!(f, "{}", r.join(",")).expect("write csv");
            }
        }
    }
}

fn strategies(dl: &DataLoop, count: usize, p: usize, chunk: usize) -> Vec<Engine> {
    let mut v = vec![Engine::Specialized];
    v.extend(Strategy::ALL.map(|s| Engine::Par(s, p, table(dl, count, s, p, chunk))));
    v.push(Engine::Kernel(p));
    v
}

fn g(x: f64) -> String {
    format!("{x:.2}")
}

fn main() {
    let a = args();
    let out = Out { dir: a.out.clone() };
    if let Some(d) = &a.out {
        std::fs::create_dir_all(d).expect("create output dir");
    }
    let msg = 4usize << 20;
    let blocks = [8usize, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 16384];

    // Fig. 8: unpack throughput vs block size.
    let mut rows = vec![];
    for &b in &blocks {
        let dl = DataLoop::vector(msg / b, 1, 2 * b as i64, DataLoop::bytes(b));
        let eng = strategies(&dl, 1, a.workers, a.chunk);
        let s = measure(&dl, 1, &eng, false, &a);
        let mut r = vec![b.to_string()];
        r.extend(s.iter().map(|x| g(x.median)));
        r.extend(s.iter().map(|x| g(x.best)));
        r.extend(s[1..4].iter().map(|x| x.counters.catch_up_bytes.to_string()));
        rows.push(r);
        eprint!(".");
    }
    let p = a.workers;
    let h8 = [
        "block".to_string(),
        "specialized".into(),
        format!("rwcp_p{p}"),
        format!("rocp_p{p}"),
        format!("local_p{p}"),
        format!("kernel_p{p}"),
        "specialized_best".into(),
        format!("rwcp_p{p}_best"),
        format!("rocp_p{p}_best"),
        format!("local_p{p}_best"),
        format!("kernel_p{p}_best"),
        "rwcp_catchup".into(),
        "rocp_catchup".into(),
        "local_catchup".into(),
    ];
    let h8: Vec<&str> = h8.iter().map(String::as_str).collect();
    out.table(
        "fig8",
        &format!("Fig. 8: unpack GB/s of a 4 MiB vector vs block size (median, best; {p} workers; catch-up bytes)"),
        &h8,
        &rows,
    );

    // Fig. 13a: vs workers, 2 KiB blocks.
    let dl = DataLoop::vector(msg / 2048, 1, 4096, DataLoop::bytes(2048));
    let mut rows = vec![];
    for p in 1..=4 {
        let eng = strategies(&dl, 1, p, a.chunk);
        let s = measure(&dl, 1, &eng, false, &a);
        let mut r = vec![p.to_string()];
        r.extend(s.iter().map(|x| g(x.median)));
        r.extend(s.iter().map(|x| g(x.best)));
        rows.push(r);
        eprint!(".");
    }
    let h = [
        "workers",
        "specialized",
        "rwcp",
        "rocp",
        "local",
        "kernel",
        "specialized_best",
        "rwcp_best",
        "rocp_best",
        "local_best",
        "kernel_best",
    ];
    out.table("fig13a", "Fig. 13a: unpack GB/s of a 4 MiB vector of 2 KiB blocks vs workers (median, best)", &h, &rows);

    // Fig. 13b: checkpoint memory vs block size.
    let mut rows = vec![];
    for &b in &blocks {
        let dl = DataLoop::vector(msg / b, 1, 2 * b as i64, DataLoop::bytes(b));
        let mut r = vec![b.to_string()];
        for p in [a.workers, 16] {
            let t = table(&dl, 1, Strategy::RwCp, p, a.chunk);
            r.extend([t.interval().to_string(), t.len().to_string(), t.bytes().to_string()]);
        }
        rows.push(r);
    }
    let (i1, n1, b1) = (format!("interval_p{p}"), format!("checkpoints_p{p}"), format!("bytes_p{p}"));
    let h = [i1.as_str(), &n1, &b1, "interval_p16", "checkpoints_p16", "bytes_p16"];
    let h: Vec<&str> = std::iter::once("block").chain(h).collect();
    out.table("fig13b", "Fig. 13b: RW-CP checkpoint interval and memory vs block size (4 MiB, chunk k, ε = 0.2)", &h, &rows);

    // Suite: RW-CP, 1 vs P workers, pack and unpack; Fig. 18: reuses to amortize creation.
    let mut rows = vec![];
    let mut rows18 = vec![];
    for (name, dl, count) in suite() {
        let ct = CompiledType::new(&dl);
        let dl = ct.dataloop().clone();
        let mut r = vec![name.to_string(), (dl.size * count).to_string()];
        let mut unpack_times = (0.0, 0.0, 0.0);
        for pack in [true, false] {
            let eng = vec![
                Engine::Specialized,
                Engine::Kernel(1),
                Engine::Kernel(a.workers),
                Engine::Par(Strategy::RwCp, 1, table(&dl, count, Strategy::RwCp, 1, a.chunk)),
                Engine::Par(Strategy::RwCp, a.workers, table(&dl, count, Strategy::RwCp, a.workers, a.chunk)),
            ];
            let s = measure(&dl, count, &eng, pack, &a);
            r.extend([g(s[0].median), g(s[1].median), g(s[2].median), g(s[2].median / s[1].median), g(s[2].best / s[1].best)]);
            r.extend([g(s[3].median), g(s[4].median), s[4].counters.catch_up_bytes.to_string()]);
            if !pack {
                let t = |gbs: f64| (dl.size * count) as f64 / (gbs * 1e9);
                unpack_times = (t(s[0].median), t(s[3].median), t(s[4].median));
            }
        }
        // Creation: median of `samples` builds of the P-worker table.
        let model = IntervalModel::for_type(&dl, count, a.chunk, a.workers, DEFAULT_LINK_BW, EPSILON, MEMORY);
        let mut c: Vec<f64> = (0..a.samples)
            .map(|_| {
                let t0 = Instant::now();
                black_box(Checkpoints::build(&dl, count, model.interval()));
                t0.elapsed().as_secs_f64()
            })
            .collect();
        c.sort_by(f64::total_cmp);
        let create = c[c.len() / 2];
        let reuses = |base: f64| {
            let gain = base - unpack_times.2;
            if gain > 0.0 {
                format!("{:.2}", create / gain)
            } else {
                "never".into()
            }
        };
        rows18.push(vec![name.to_string(), format!("{:.1}", create * 1e6), reuses(unpack_times.1), reuses(unpack_times.0)]);
        rows.push(r);
        eprint!(".");
    }
    eprintln!();
    let (a2, a7) = (format!("pack_p{p}"), format!("pack_rwcp_p{p}"));
    let (b2, b7) = (format!("unpack_p{p}"), format!("unpack_rwcp_p{p}"));
    let h = [
        "case",
        "bytes",
        "pack_specialized",
        "pack_p1",
        &a2,
        "pack_speedup",
        "pack_speedup_best",
        "pack_rwcp_p1",
        &a7,
        "pack_catchup",
        "unpack_specialized",
        "unpack_p1",
        &b2,
        "unpack_speedup",
        "unpack_speedup_best",
        "unpack_rwcp_p1",
        &b7,
        "unpack_catchup",
    ];
    let title = format!(
        "Suite: GB/s (median) with the range kernel on 1 and {p} workers, speedup = p{p}/p1 (median, best); RW-CP (interpreter chunks) on 1 and {p}, its catch-up bytes"
    );
    out.table("suite", &title, &h, &rows);
    // The ceiling the target's "where memory bandwidth allows" refers to: memcpy of each case's
    // bytes on 1 and on P threads (each thread one share; timed from a common start, spawn cost
    // excluded). A case whose memcpy does not scale cannot scale its pack/unpack either.
    let mut rows_mc = vec![];
    for (name, dl, count) in suite() {
        let bytes = dl.size * count;
        let (one, many) = (memcpy_gbs(bytes, 1, a.samples), memcpy_gbs(bytes, a.workers, a.samples));
        rows_mc.push(vec![name.to_string(), bytes.to_string(), g(one), g(many), g(many / one)]);
    }
    let h_mc = ["case", "bytes", "memcpy_p1", &format!("memcpy_p{p}"), "memcpy_speedup"];
    out.table("memcpy", &format!("Memory ceiling: memcpy GB/s of each case's bytes on 1 and {p} threads (median)"), &h_mc, &rows_mc);
    let h = ["case", "create_us", "reuses_vs_rwcp_p1", "reuses_vs_specialized"];
    out.table("fig18", "Fig. 18: checkpoint creation time and unpack reuses to amortize it", &h, &rows18);
}

/// Median GB/s of copying `bytes` split over `threads` threads (each copies its share between
/// its own pre-faulted buffers; an operation lasts from the common start to the last finish).
fn memcpy_gbs(bytes: usize, threads: usize, samples: usize) -> f64 {
    let share = bytes.div_ceil(threads);
    let mut bufs: Vec<(Vec<u8>, Vec<u8>)> = (0..threads).map(|_| (vec![1u8; share], vec![2u8; share])).collect();
    let mut times = vec![];
    for _ in 0..samples.max(3) + 1 {
        let start = std::sync::Barrier::new(threads);
        let t = std::thread::scope(|sc| {
            let hs: Vec<_> = bufs
                .iter_mut()
                .map(|(src, dst)| {
                    let start = &start;
                    sc.spawn(move || {
                        start.wait();
                        let t0 = Instant::now();
                        dst.copy_from_slice(src);
                        black_box(&dst);
                        (t0, Instant::now())
                    })
                })
                .collect();
            let spans: Vec<(Instant, Instant)> = hs.into_iter().map(|h| h.join().expect("memcpy thread")).collect();
            let first = spans.iter().map(|s| s.0).min().expect("a thread");
            let last = spans.iter().map(|s| s.1).max().expect("a thread");
            (last - first).as_secs_f64()
        });
        times.push(t);
    }
    times.remove(0); // warm-up
    times.sort_by(f64::total_cmp);
    bytes as f64 / times[times.len() / 2] / 1e9
}
