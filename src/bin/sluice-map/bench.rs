//! `sluice-map --bench OUTDIR`: issue 25's mapping targets on the paper's setting. Every
//! CPU-GPU combination of the micro-benchmark patterns (weighted and not), 64 processes and
//! 1 MiB messages, on the built-in models of Cluster A and B: the maximum congestion of the
//! default mapping, Strategy 1, Strategy 2 and MAGC, and MAGC's mapping time; then the mapping
//! time of 1,024 processes on 64 nodes like Cluster A's. MAGC runs with each heuristic of phases
//! 2 and 3 (greedy, Scotch, both; the verdicts are for the default one) side by side. Writes
//! map.csv, map.md (tables and verdicts) and map.png.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use sluice::mapping::magc::{self, Heuristic, Options, Strategy};
use sluice::mapping::matrix::CommMatrix;
use sluice::mapping::patterns::{combination, Pattern};
use sluice::mapping::topology::Cluster;

/// MAGC with heuristic `h` in phases 2 and 3.
fn with(h: Heuristic) -> Options {
    Options { phase: h, ..Options::default() }
}

/// Median of `runs` timings of MAGC on (c, m) with `o`, and the slowest, in seconds.
fn time_magc(c: &Cluster, m: &CommMatrix, o: Options, runs: usize) -> Result<(f64, f64), String> {
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        let s = Instant::now();
        magc::map(c, m, Strategy::Magc, o).map_err(|e| e.to_string())?;
        t.push(s.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok((t[t.len() / 2], t[t.len() - 1]))
}

pub fn run(out: &str) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{out}: {e}"))?;
    let mut csv = String::from(
        "cluster,cpu,gpu,default,strategy1,strategy2,magc,magc_median_s,magc_max_s,magc_greedy,magc_scotch,magc_both,\
         greedy_median_s,scotch_median_s,both_median_s\n",
    );
    let mut md = String::new();
    let default_h = Options::default().phase;
    let (mut worse_default, mut worse_best, mut combos, mut slowest64) = (0, 0, 0, 0.0f64);
    // Per heuristic (Heuristic::ALL order): cases worse than the default mapping, cases better
    // and worse than greedy, the same by the busiest intra-node link, the slowest median time.
    let mut per_h = [(0usize, 0usize, 0usize, 0usize, 0usize, 0.0f64); 3];
    let mut side = String::new();
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
        let _ = writeln!(
            side,
            "\n#### {}: MAGC with greedy / Scotch / both in phases 2 and 3\n\n\
             Maximum congestion (ms), and in brackets the busiest intra-node link's (CPU or GPU tree: what phases 2 and 3 \
             decide).\n\n\
             | CPU-GPU | greedy (ms) | Scotch (ms) | both (ms) | time greedy / Scotch / both (ms, median of 21) |\n|---|---:|---:|---:|---:|",
            c.name
        );
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
                let (med, max) = time_magc(&c, &m, Options::default(), 21)?;
                let mut hc = [0.0; 3];
                let mut hi = [0.0; 3];
                let mut ht = [0.0; 3];
                for (k, h) in Heuristic::ALL.into_iter().enumerate() {
                    let p = magc::map(&c, &m, Strategy::Magc, with(h)).map_err(|e| e.to_string())?;
                    p.check(&c)?;
                    let x = p.congestion(&c, &m);
                    (hc[k], hi[k]) = (x.max, x.cpu.max(x.gpu));
                    ht[k] = if h == default_h { med } else { time_magc(&c, &m, with(h), 21)?.0 };
                }
                for k in 0..3 {
                    per_h[k].0 += usize::from(hc[k] > d * (1.0 + 1e-9));
                    per_h[k].1 += usize::from(hc[k] < hc[0] * (1.0 - 1e-9));
                    per_h[k].2 += usize::from(hc[k] > hc[0] * (1.0 + 1e-9));
                    per_h[k].3 += usize::from(hi[k] < hi[0] * (1.0 - 1e-9));
                    per_h[k].4 += usize::from(hi[k] > hi[0] * (1.0 + 1e-9));
                    per_h[k].5 = per_h[k].5.max(ht[k]);
                }
                let _ = writeln!(
                    side,
                    "| {}-{} | {:.3} ({:.3}) | {:.3} ({:.3}) | {:.3} ({:.3}) | {:.3} / {:.3} / {:.3} |",
                    cpu.name(),
                    gpu.name(),
                    hc[0] * 1e3,
                    hi[0] * 1e3,
                    hc[1] * 1e3,
                    hi[1] * 1e3,
                    hc[2] * 1e3,
                    hi[2] * 1e3,
                    ht[0] * 1e3,
                    ht[1] * 1e3,
                    ht[2] * 1e3
                );
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
                let _ = writeln!(
                    csv,
                    "{name},{},{},{d},{s1},{s2},{g},{med},{max},{},{},{},{},{},{}",
                    cpu.name(),
                    gpu.name(),
                    hc[0],
                    hc[1],
                    hc[2],
                    ht[0],
                    ht[1],
                    ht[2]
                );
            }
        }
    }
    // Scale: 1,024 processes on 64 nodes like Cluster A's.
    let big = Cluster::builtin("magc-a").expect("built in").with_nodes(64);
    md += "\n### 1,024 processes on 64 nodes like Cluster A's (64 KiB messages)\n\n| CPU-GPU | MAGC time (ms, median / max of 5) | max congestion: default -> MAGC (ms) |\n|---|---:|---:|\n";
    side += "\n#### 1,024 processes on 64 nodes: MAGC with greedy / Scotch / both\n\n\
             | CPU-GPU | max congestion greedy / Scotch / both (ms) | time greedy / Scotch / both (ms, median of 5) |\n|---|---:|---:|\n";
    let mut slowest1k = 0.0f64;
    let mut slowest1k_h = [0.0f64; 3];
    for (cpu, gpu) in [
        (Pattern::Stencil3d { weighted: true }, Pattern::SubcommAlltoall),
        (Pattern::SubcommAlltoall, Pattern::SubcommAlltoall),
        (Pattern::Stencil2d { weighted: true }, Pattern::Stencil3d { weighted: false }),
    ] {
        let m = combination(1024, cpu, gpu, 65536.0);
        let (med, max) = time_magc(&big, &m, Options::default(), 5)?;
        slowest1k = slowest1k.max(med);
        let (mut hc, mut ht) = ([0.0; 3], [0.0; 3]);
        for (k, h) in Heuristic::ALL.into_iter().enumerate() {
            hc[k] = magc::map(&big, &m, Strategy::Magc, with(h)).map_err(|e| e.to_string())?.congestion(&big, &m).max;
            ht[k] = if h == default_h { med } else { time_magc(&big, &m, with(h), 5)?.0 };
            slowest1k_h[k] = slowest1k_h[k].max(ht[k]);
        }
        let _ = writeln!(
            side,
            "| {}-{} | {:.3} / {:.3} / {:.3} | {:.1} / {:.1} / {:.1} |",
            cpu.name(),
            gpu.name(),
            hc[0] * 1e3,
            hc[1] * 1e3,
            hc[2] * 1e3,
            ht[0] * 1e3,
            ht[1] * 1e3,
            ht[2] * 1e3
        );
        let d = magc::map(&big, &m, Strategy::Default, Options::default()).map_err(|e| e.to_string())?.congestion(&big, &m).max;
        let g = magc::map(&big, &m, Strategy::Magc, Options::default()).map_err(|e| e.to_string())?.congestion(&big, &m).max;
        let _ = writeln!(md, "| {}-{} | {:.1} / {:.1} | {:.3} -> {:.3} |", cpu.name(), gpu.name(), med * 1e3, max * 1e3, d * 1e3, g * 1e3);
        let _ = writeln!(
            csv,
            "magc-a-x64-1024,{},{},{d},,,{g},{med},{max},{},{},{},{},{},{}",
            cpu.name(),
            gpu.name(),
            hc[0],
            hc[1],
            hc[2],
            ht[0],
            ht[1],
            ht[2]
        );
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
    let mut heads = String::from(
        "\n## Phases 2 and 3: greedy vs Scotch vs both (each refined)\n\n\
         | heuristic | worse than default | max congestion better / worse than greedy | intra-node max better / worse than greedy | slowest median, 64 processes (ms) | slowest median, 1,024 (ms) |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for (k, h) in Heuristic::ALL.into_iter().enumerate() {
        let (wd, b, w, bi, wi, t) = per_h[k];
        let _ = writeln!(
            heads,
            "| {}{} | {wd} of {combos} | {b} / {w} | {bi} / {wi} | {:.3} | {:.1} |",
            h.name(),
            if h == default_h { " (default)" } else { "" },
            t * 1e3,
            slowest1k_h[k] * 1e3
        );
    }
    let md = head + &heads + &side + &md;
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
