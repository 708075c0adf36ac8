//! Calibration: measures this host's channels with the channels themselves and writes a machine
//! model (`sluice-info --calibrate`). Memcpy is measured converting layouts whose contiguous runs
//! are the request size (a strided layout packed in blocks, as a copy runs it); DiskRead and
//! DiskWrite reading and writing a scratch file in requests of each size (files in the page
//! cache, as most copies of recently written data are). Each point is the median of five runs.
//! The MPI's own paths are measured by `transfer::mpi_calibrate` when `sluice-info --calibrate`
//! runs as two MPI ranks, and join the model here.
//!
//! The cost of one runtime request besides its bytes (`request_cost`) is not a channel's: a
//! channel kept busy pays under a microsecond per request, a worker woken for each one 9-30 us
//! (2-core VM), and which a copy pays depends on whether its hops keep each other busy. So it is
//! fitted to whole copies through the runtime at forced block sizes, on three paths (file ->
//! converted memory, memory -> memory conversion, memory -> file through a packed buffer): the
//! cost whose predictions follow the measured times across block sizes best (in shape: each
//! path's level is free, since the block choice depends only on how time varies with the block).

use std::fmt::Write as _;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::channel::{Channel, Step, View};
use super::disk::{DiskRead, DiskWrite};
use super::engine::Runtime;
use super::memcpy::Memcpy;
use super::path::Path as CopyPath;
use super::place::{Memory, Place};
use crate::datatype::compiled::CompiledType;
use crate::datatype::DataLoop;
use crate::transfer::mpi_calibrate::MpiCurves;
use crate::transfer::plan::Model;

/// Bytes moved per measurement.
const DATA: usize = 16 << 20;
/// Block of a conversion request stream (as the runtime cuts copies).
const BLOCK: usize = 256 << 10;
const RUNS: [usize; 6] = [8, 64, 512, 4096, 65536, 1 << 20];
const REQUESTS: [usize; 5] = [4096, 65536, 1 << 20, 4 << 20, 16 << 20];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Throughput (bytes/s) of `f`, which moves `bytes`: the median of five runs after one warm-up.
fn rate(bytes: usize, mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    f()?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64().max(1e-9));
    }
    Ok(bytes as f64 / median(times))
}

/// Memcpy: packing runs of `run` bytes every `2 * run` bytes, in blocks.
fn memcpy_point(run: usize) -> Result<f64, String> {
    let ty = Arc::new(CompiledType::new(&DataLoop::vector(DATA / run, run, 2 * run as i64, DataLoop::bytes(1))));
    let src = vec![1u8; 2 * DATA];
    let mut out = vec![0u8; DATA];
    rate(DATA, || {
        for a in (0..DATA).step_by(BLOCK) {
            let from = View::Typed { base: src.as_ptr().cast_mut(), ty: ty.clone(), count: 1 };
            let to = View::Packed { at: out[a..].as_mut_ptr() };
            // SAFETY: both buffers hold the whole stream.
            unsafe { Memcpy.perform(&Step::Convert { from, to, first: a, last: (a + BLOCK).min(DATA) })? };
        }
        Ok(())
    })
}

/// DiskRead or DiskWrite of the scratch file in requests of `request` bytes.
fn disk_point(fd: i32, buf: &mut [u8], request: usize, write: bool) -> Result<f64, String> {
    rate(DATA, || {
        for off in (0..DATA).step_by(request) {
            let len = request.min(DATA - off);
            let at = buf[off..].as_mut_ptr();
            // SAFETY: `buf` holds DATA bytes; the file is ours.
            unsafe {
                if write {
                    DiskWrite.perform(&Step::Write { fd, offset: off as u64, from: at, len })?;
                } else {
                    DiskRead.perform(&Step::Read { fd, offset: off as u64, into: at, len })?;
                }
            }
        }
        Ok(())
    })
}

/// Block sizes the request cost is fitted over.
const FIT_BLOCKS: [usize; 5] = [16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];
/// Contiguous run of the fitted copies' strided layout (a conversion's request).
const FIT_RUN: usize = 512;

/// Request costs tried (seconds): none, then 0.1 us to 200 us in steps of 10^(1/16).
fn cost_grid() -> impl Iterator<Item = f64> {
    std::iter::once(0.0).chain((0..=53).map(|i| 1e-7 * 10f64.powf(f64::from(i) / 16.0)))
}

/// The request cost whose predictions on `model` best follow measured copies of `total` bytes:
/// `paths` holds, per path, (seconds measured, the path planned at that block size). Each
/// path's predictions may be off by a constant factor (its curves' level); the cost is fitted
/// to the shape, least squares of the log ratios about their mean per path. Ties go to the
/// smaller cost.
pub(crate) fn fit_request_cost(model: &Model, total: usize, paths: &[Vec<(f64, CopyPath)>]) -> f64 {
    let misfit = |cost: f64| -> f64 {
        paths
            .iter()
            .filter(|p| p.len() >= 2)
            .map(|p| {
                let r: Vec<f64> = p.iter().map(|(secs, path)| (secs / path.predicted_time(model, total, cost)).ln()).collect();
                let mean = r.iter().sum::<f64>() / r.len() as f64;
                r.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
            })
            .sum()
    };
    let mut best = (f64::INFINITY, 0.0);
    for c in cost_grid() {
        let m = misfit(c);
        if m < best.0 * (1.0 - 1e-9) {
            best = (m, c);
        }
    }
    best.1
}

/// Times copies through a runtime on `model` at each of [`FIT_BLOCKS`], on three paths of
/// `DATA` bytes: the scratch file `fd` (one run) into strided memory, strided memory into packed
/// memory, strided memory into the file. Each point the median of five copies after one.
fn copy_points(model: Model, fd: i32) -> Result<Vec<Vec<(f64, CopyPath)>>, String> {
    let rt = Runtime::new(model, usize::MAX / 4);
    let strided = Arc::new(CompiledType::new(&DataLoop::vector(DATA / FIT_RUN, FIT_RUN, 2 * FIT_RUN as i64, DataLoop::bytes(1))));
    let bytes = Arc::new(CompiledType::new(&DataLoop::bytes(1)));
    let mut spread = vec![3u8; 2 * DATA];
    let mut packed = vec![5u8; DATA];
    let spread_at = spread.as_mut_ptr();
    let packed_at = packed.as_mut_ptr();
    let file = || Place::new(Memory::File { fd, offset: 0 }, bytes.clone(), DATA);
    let spread_place = || Place::new(Memory::Host(spread_at), strided.clone(), 1);
    let packed_place = || Place::new(Memory::Host(packed_at), bytes.clone(), DATA);
    type Make<'a> = &'a dyn Fn() -> Place;
    let cases: [(Make, Make); 3] = [(&file, &spread_place), (&spread_place, &packed_place), (&spread_place, &file)];
    let mut out = Vec::new();
    for (src, dst) in cases {
        let mut points = Vec::new();
        for block in FIT_BLOCKS {
            let path = super::path::plan_at(rt.model(), &src(), &dst(), block).map_err(|e| e.to_string())?;
            let secs = DATA as f64
                / rate(DATA, || {
                    // The places' memory (`spread`, `packed`) and the file outlive the copy,
                    // which is waited for here.
                    rt.copy_at_block(src(), dst(), block).map_err(|e| e.to_string())?.wait()
                })?;
            points.push((secs, path));
        }
        out.push(points);
    }
    drop((spread, packed));
    Ok(out)
}

fn curve(points: &[(usize, f64)]) -> String {
    let p: Vec<String> = points.iter().map(|(r, t)| format!("[{r}, {:.4e}]", t)).collect();
    format!("[{}]", p.join(", "))
}

/// Measures the channels and returns the model file's text. `scratch` is a directory for the
/// disk measurements' file (removed at once; it lives while open); `mpi`: the MPI's paths to
/// rank 1's memory, measured in an MPI job.
pub fn measure(scratch: &Path, host: &str, mpi: Option<&MpiCurves>) -> Result<String, String> {
    let mem: Vec<(usize, f64)> = RUNS.iter().map(|&r| memcpy_point(r).map(|t| (r, t))).collect::<Result<_, _>>()?;
    let name = scratch.join(format!(".sluice-calibrate-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&name)
        .map_err(|e| format!("scratch file {}: {e}", name.display()))?;
    let _ = std::fs::remove_file(&name);
    let mut buf = vec![7u8; DATA];
    let fd = file.as_raw_fd();
    let write: Vec<(usize, f64)> = REQUESTS.iter().map(|&r| disk_point(fd, &mut buf, r, true).map(|t| (r, t))).collect::<Result<_, _>>()?;
    let read: Vec<(usize, f64)> = REQUESTS.iter().map(|&r| disk_point(fd, &mut buf, r, false).map(|t| (r, t))).collect::<Result<_, _>>()?;
    let curves = Curves { host, scratch, mpi, mem: &mem, read: &read, write: &write };
    let model = Model::from_toml_str(&curves.text(None)).map_err(|e| format!("measured model: {e}"))?;
    let points = copy_points(model.clone(), fd)?;
    let cost = fit_request_cost(&model, DATA, &points);
    let mut note = String::new();
    for (name, p) in ["file -> strided memory", "strided -> packed memory", "strided memory -> file"].iter().zip(&points) {
        let ms: Vec<String> = p.iter().map(|(secs, _)| format!("{:.2}", secs * 1e3)).collect();
        // Which of these blocks the fitted model prefers, and what that block measured against
        // the fastest one.
        let pick = p.iter().min_by(|a, b| a.1.predicted_time(&model, DATA, cost).total_cmp(&b.1.predicted_time(&model, DATA, cost)));
        let fastest = p.iter().map(|(secs, _)| *secs).fold(f64::INFINITY, f64::min);
        let _ = write!(note, "#   {name}: {} ms", ms.join(", "));
        if let Some((secs, path)) = pick {
            let _ = write!(note, "; the model picks {} KiB ({:.2}x the fastest)", path.block >> 10, secs / fastest);
        }
        let _ = writeln!(note);
    }
    Ok(curves.text(Some((cost, note))))
}

/// The measured curves, to be written as a model file.
struct Curves<'a> {
    host: &'a str,
    scratch: &'a Path,
    mpi: Option<&'a MpiCurves>,
    mem: &'a [(usize, f64)],
    read: &'a [(usize, f64)],
    write: &'a [(usize, f64)],
}

impl Curves<'_> {
    /// The model file, with `request_cost` when fitted.
    fn text(&self, request_cost: Option<(f64, String)>) -> String {
        let (host, scratch, mpi) = (self.host, self.scratch, self.mpi);
        let mut s = String::new();
        let _ = writeln!(s, "# sluice machine model of host {host}, measured by sluice-info --calibrate (docs/runtime.md).");
        let _ = writeln!(s, "# Memcpy: packing runs of the request size; disk: a file in {} (page cache).", scratch.display());
        let _ = writeln!(s, "threshold = 16777216");
        if let Some((c, times)) = request_cost {
            let _ = writeln!(s, "# request_cost: fitted to 16 MiB copies through the runtime in blocks of 16 KiB, 64 KiB, 256 KiB,");
            let _ = writeln!(s, "# 1 MiB and 4 MiB ({FIT_RUN}-byte runs every {} bytes):", 2 * FIT_RUN);
            s.push_str(&times);
            let _ = writeln!(s, "request_cost = {c:.3e}");
        }
        if mpi.is_some() {
            let _ = writeln!(s, "mpi = \"{}\"", crate::ffi::FLAVOR);
        }
        let _ = writeln!(s);
        for (name, kind) in [("SYS0", "sys"), ("DSK0", "dsk")] {
            let _ = writeln!(s, "[[memory]]\nname = \"{name}\"\nkind = \"{kind}\"\nnode = 0\n");
        }
        // (kind, source memory, destination memory, curve)
        type Row<'a> = (&'a str, &'a str, &'a str, &'a [(usize, f64)]);
        let mut channels: Vec<Row> = vec![
            ("memcpy", "SYS0", "SYS0", self.mem),
            ("disk_read", "DSK0", "SYS0", self.read),
            ("disk_write", "SYS0", "DSK0", self.write),
        ];
        if let Some(m) = mpi {
            let (name, node) = if m.peer_kind == "peer" { ("PEER0", 0) } else { ("REMOTE0", 1) };
            let _ = writeln!(
                s,
                "# {name}: world rank 1's memory, reached through the MPI ({} node).",
                if node == 0 { "same" } else { "another" }
            );
            let _ = writeln!(s, "[[memory]]\nname = \"{name}\"\nkind = \"{}\"\nnode = {node}\n", m.peer_kind);
            channels.push(("network", "SYS0", name, &m.contiguous));
            channels.push(("mpi_typed", "SYS0", name, &m.typed));
            if !m.arena.is_empty() {
                channels.push(("shm_typed", "SYS0", name, &m.arena));
            }
        }
        for (kind, src, dst, c) in channels {
            let _ = writeln!(s, "[[channel]]\nkind = \"{kind}\"\nsrc = \"{src}\"\ndst = \"{dst}\"\ncurve = {}\n", curve(c));
        }
        s
    }
}

/// Writes `text` to `path` atomically (a temporary file in the same directory, then a rename),
/// creating the directory.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{}.tmp{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("model"), std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_measured_model_loads_and_plans() {
        let dir = std::env::temp_dir();
        let text = super::measure(&dir, "test", None).unwrap();
        let m = crate::transfer::plan::Model::from_toml_str(&text).unwrap();
        assert_eq!(m.channels().len(), 3);
        let cost = m.request_cost().expect("fitted to measured copies");
        assert!((0.0..=2e-4).contains(&cost), "{text}");
        // The MPI's paths (measured in an MPI job, tests/sluice_info.rs) join as two channels
        // to a fourth memory.
        let curves = super::MpiCurves {
            peer_kind: "peer",
            contiguous: vec![(4096, 1e9), (1 << 20, 5e9)],
            typed: vec![(8, 2e8), (4096, 3e9)],
            arena: vec![(8, 1e9), (4096, 6e9)],
        };
        let with = crate::transfer::plan::Model::from_toml_str(&super::measure(&dir, "test", Some(&curves)).unwrap()).unwrap();
        assert_eq!(with.channels().len(), 6);
        let peer = with.memory_id("PEER0").unwrap();
        let kinds: Vec<_> = with.incoming(peer).iter().map(|&c| with.channel(c).kind).collect();
        use crate::transfer::plan::ChannelKind;
        assert_eq!(kinds, [ChannelKind::Network, ChannelKind::MpiTyped, ChannelKind::ShmTyped]);
        assert!(m.channels().iter().all(|c| c.curve.peak() > 1e6), "{text}");
        let path = dir.join(format!("sluice-cal-{}/model.toml", std::process::id()));
        super::write_atomically(&path, &text).unwrap();
        let (_, from) = super::super::load_model(path.to_str());
        assert_eq!(from, path.display().to_string());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    /// Times made by the model itself with a known request cost, a level of its own per path
    /// and +-2% of noise give that cost back (to the grid's step, 10^(1/16) = 1.155).
    #[test]
    fn the_fit_finds_the_request_cost_that_made_the_times() {
        use super::*;
        let model = crate::transfer::runtime::default_model();
        let total = 4 << 20;
        let strided = Arc::new(CompiledType::new(&DataLoop::vector(total / FIT_RUN, FIT_RUN, 2 * FIT_RUN as i64, DataLoop::bytes(1))));
        let bytes = Arc::new(CompiledType::new(&DataLoop::bytes(1)));
        let mut spread = vec![0u8; 2 * total];
        let mut packed = vec![0u8; total];
        let file = Place::new(Memory::File { fd: -1, offset: 0 }, bytes.clone(), total);
        let spread = Place::new(Memory::Host(spread.as_mut_ptr()), strided, 1);
        let packed = Place::new(Memory::Host(packed.as_mut_ptr()), bytes, total);
        let cases = [(&file, &spread), (&spread, &packed), (&spread, &file)];
        for truth in [0.0, 2e-6, 2e-5] {
            let mut noise = [1.0, 1.02, 0.98, 1.01, 0.99].into_iter().cycle();
            let points: Vec<Vec<(f64, CopyPath)>> = cases
                .iter()
                .zip([1.0, 1.7, 0.6])
                .map(|((s, d), level)| {
                    FIT_BLOCKS
                        .iter()
                        .map(|&b| {
                            let p = super::super::path::plan_at(&model, s, d, b).unwrap();
                            assert_eq!(p.block, b, "the block is the one asked for");
                            let n = if truth == 0.0 { 1.0 } else { noise.next().unwrap() };
                            (p.predicted_time(&model, total, truth) * level * n, p)
                        })
                        .collect()
                })
                .collect();
            let fit = fit_request_cost(&model, total, &points);
            if truth == 0.0 {
                assert_eq!(fit, 0.0);
            } else {
                assert!(fit / truth > 0.75 && fit / truth < 1.33, "fitted {fit} for {truth}");
            }
        }
    }
}
