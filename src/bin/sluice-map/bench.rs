//! `sluice-map --bench OUTDIR`: issue 25's mapping targets on the paper's setting. Every
//! CPU-GPU combination of the micro-benchmark patterns (weighted and not), 64 processes and
//! 1 MiB messages, on the built-in models of Cluster A and B: the maximum congestion of the
//! default mapping, Strategy 1, Strategy 2 and MAGC, and MAGC's mapping time; then the mapping
//! time of 1,024 processes on 64 nodes like Cluster A's. Writes map.csv, map.md (tables and
//! verdicts) and map.png.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use sluice::mapping::magc::{self, Options, Strategy};
use sluice::mapping::matrix::CommMatrix;
use sluice::mapping::patterns::{combination, Pattern};
use sluice::mapping::topology::Cluster;

/// Median of `runs` timings of MAGC on (c, m), and the slowest, in seconds.
fn time_magc(c: &Cluster, m: &CommMatrix, runs: usize) -> Result<(f64, f64), String> {
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        let s = Instant::now();
        magc::map(c, m, Strategy::Magc, Options::default()).map_err(|e| e.to_string())?;
        t.push(s.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok((t[t.len() / 2], t[t.len() - 1]))
}

pub fn run(out: &str) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{out}: {e}"))?;
    let mut csv = String::from("cluster,cpu,gpu,default,strategy1,strategy2,magc,magc_median_s,magc_max_s\n");
    let mut md = String::new();
    let (mut worse_default, mut worse_best, mut combos, mut slowest64) = (0, 0, 0, 0.0f64);
    let mut colcol = Vec::new();
    for name in ["magc-a", "magc-b"] {
        let c = Cluster::builtin(name).expect("built in");
        let _ = writeln!(
            md,
            "\n### {} ({} nodes x {} cores, {} GPUs each), 64 processes, 1 MiB messages\n",
            c.name,
            c.nodes(),
            c.node.cpu.leaf_count(),
            c.node.gpu.as_ref().map_or(0, |g| g.leaf_count())
        );
        md += "Maximum congestion (ms: the busiest link's bytes over its bandwidth, one iteration); improvement over the default in brackets.\n\n";
        md +=
            "| CPU-GPU | default | Strategy 1 | Strategy 2 | MAGC | MAGC time (ms, median / max of 21) |\n|---|---:|---:|---:|---:|---:|\n";
        for cpu in Pattern::ALL {
            for gpu in Pattern::ALL {
                let m = combination(64, cpu, gpu, 1048576.0);
                let mut cong = Vec::new();
                for s in Strategy::ALL {
                    let p = magc::map(&c, &m, s, Options::default()).map_err(|e| e.to_string())?;
                    p.check(&c)?;
                    cong.push(p.congestion(&c, &m).max);
                }
                let (d, s1, s2, g) = (cong[0], cong[1], cong[2], cong[3]);
                let (med, max) = time_magc(&c, &m, 21)?;
                slowest64 = slowest64.max(med);
                combos += 1;
                worse_default += usize::from(g > d * (1.0 + 1e-9));
                worse_best += usize::from(g > s1.min(s2) * (1.0 + 1e-9));
                if cpu == Pattern::SubcommAlltoall && gpu == Pattern::SubcommAlltoall {
                    colcol.push((name, 1.0 - g / d));
                }
                let imp = |x: f64| format!("{:.3} ({:+.0}%)", x * 1e3, (1.0 - x / d) * 100.0);
                let _ = writeln!(
                    md,
                    "| {}-{} | {:.3} | {} | {} | **{}** | {:.3} / {:.3} |",
                    cpu.name(),
                    gpu.name(),
                    d * 1e3,
                    imp(s1),
                    imp(s2),
                    imp(g),
                    med * 1e3,
                    max * 1e3
                );
                let _ = writeln!(csv, "{name},{},{},{d},{s1},{s2},{g},{med},{max}", cpu.name(), gpu.name());
            }
        }
    }
    // Scale: 1,024 processes on 64 nodes like Cluster A's.
    let big = Cluster::builtin("magc-a").expect("built in").with_nodes(64);
    md += "\n### 1,024 processes on 64 nodes like Cluster A's (64 KiB messages)\n\n| CPU-GPU | MAGC time (ms, median / max of 5) | max congestion: default -> MAGC (ms) |\n|---|---:|---:|\n";
    let mut slowest1k = 0.0f64;
    for (cpu, gpu) in [
        (Pattern::Stencil3d { weighted: true }, Pattern::SubcommAlltoall),
        (Pattern::SubcommAlltoall, Pattern::SubcommAlltoall),
        (Pattern::Stencil2d { weighted: true }, Pattern::Stencil3d { weighted: false }),
    ] {
        let m = combination(1024, cpu, gpu, 65536.0);
        let (med, max) = time_magc(&big, &m, 5)?;
        slowest1k = slowest1k.max(med);
        let d = magc::map(&big, &m, Strategy::Default, Options::default()).map_err(|e| e.to_string())?.congestion(&big, &m).max;
        let g = magc::map(&big, &m, Strategy::Magc, Options::default()).map_err(|e| e.to_string())?.congestion(&big, &m).max;
        let _ = writeln!(md, "| {}-{} | {:.1} / {:.1} | {:.3} -> {:.3} |", cpu.name(), gpu.name(), med * 1e3, max * 1e3, d * 1e3, g * 1e3);
        let _ = writeln!(csv, "magc-a-x64-1024,{},{},{d},,,{g},{med},{max}", cpu.name(), gpu.name());
    }
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let colcol_ok = colcol.iter().all(|&(_, i)| i > 0.8);
    let head = format!(
        "## Verdict\n\n\
         - MAGC <= default on every combination: {} ({worse_default} of {combos} worse)\n\
         - MAGC <= min(Strategy 1, Strategy 2) on every combination: {} ({worse_best} of {combos} worse)\n\
         - COL-COL improvement over the default > 80%: {} ({})\n\
         - mapping time, 64 processes < 1 ms: {} (slowest median {:.3} ms)\n\
         - mapping time, 1,024 processes < 100 ms: {} (slowest median {:.1} ms)\n",
        verdict(worse_default == 0),
        verdict(worse_best == 0),
        verdict(colcol_ok),
        colcol.iter().map(|(n, i)| format!("{n} {:.1}%", i * 100.0)).collect::<Vec<_>>().join(", "),
        verdict(slowest64 < 1e-3),
        slowest64 * 1e3,
        verdict(slowest1k < 0.1),
        slowest1k * 1e3
    );
    let md = head + &md;
    std::fs::write(format!("{out}/map.md"), &md).map_err(|e| format!("{out}/map.md: {e}"))?;
    std::fs::write(format!("{out}/map.csv"), &csv).map_err(|e| format!("{out}/map.csv: {e}"))?;
    print!("{md}");
    plot(out)
}

fn plot(out: &str) -> Result<(), String> {
    let script = include_str!("../../../scripts/plot_map_bench.py");
    let mut child = Command::new(super::output::python())
        .args(["-", &format!("{out}/map.csv"), &format!("{out}/map.png")])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the plot needs python3 with matplotlib: {e}"))?;
    child.stdin.take().expect("piped").write_all(script.as_bytes()).map_err(|e| format!("python3: {e}"))?;
    match child.wait() {
        Ok(s) if s.success() => Ok(()),
        _ => Err(format!("the plot failed (python3 with matplotlib needed; data in {out}/map.csv)")),
    }
}
