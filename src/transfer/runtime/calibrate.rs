//! Calibration: measures this host's channels with the channels themselves and writes a machine
//! model (`sluice-info --calibrate`). Memcpy is measured converting layouts whose contiguous runs
//! are the request size (a strided layout packed in blocks, as a copy runs it); DiskRead and
//! DiskWrite reading and writing a scratch file in requests of each size (files in the page
//! cache, as most copies of recently written data are). Each point is the median of five runs.
//! The MPI's own paths are measured by `transfer::mpi_calibrate` when `sluice-info --calibrate`
//! runs as two MPI ranks, and join the model here.

use std::fmt::Write as _;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::channel::{Channel, Step, View};
use super::disk::{DiskRead, DiskWrite};
use super::memcpy::Memcpy;
use crate::datatype::compiled::CompiledType;
use crate::datatype::DataLoop;
use crate::transfer::mpi_calibrate::MpiCurves;

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
    let mut s = String::new();
    let _ = writeln!(s, "# sluice machine model of host {host}, measured by sluice-info --calibrate (docs/runtime.md).");
    let _ = writeln!(s, "# Memcpy: packing runs of the request size; disk: a file in {} (page cache).", scratch.display());
    let _ = writeln!(s, "threshold = 16777216");
    if mpi.is_some() {
        let _ = writeln!(s, "mpi = \"{}\"", crate::ffi::FLAVOR);
    }
    let _ = writeln!(s);
    for (name, kind) in [("SYS0", "sys"), ("DSK0", "dsk")] {
        let _ = writeln!(s, "[[memory]]\nname = \"{name}\"\nkind = \"{kind}\"\nnode = 0\n");
    }
    let mut channels = vec![("memcpy", "SYS0", "SYS0", &mem), ("disk_read", "DSK0", "SYS0", &read), ("disk_write", "SYS0", "DSK0", &write)];
    if let Some(m) = mpi {
        let (name, node) = if m.peer_kind == "peer" { ("PEER0", 0) } else { ("REMOTE0", 1) };
        let _ =
            writeln!(s, "# {name}: world rank 1's memory, reached through the MPI ({} node).", if node == 0 { "same" } else { "another" });
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
    Ok(s)
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
}
