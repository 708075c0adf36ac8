//! `sluice-map`: where should each rank run? Reads a communication matrix (the profiler's, or a
//! pattern of the MAGC paper), maps it onto a cluster topology with MAGC and its baselines,
//! prints their maximum link congestion side by side, and writes the launch files of the chosen
//! mapping (docs/mapping.md).
//!
//! ```text
//! sluice-map MATRIX [--topology FILE | --cluster magc-a|magc-b|host] [--nodes N] [--network-gbs G]
//!            [--strategy magc|strategy1|strategy2|default] [--heuristic greedy|scotch|both]
//!            [--no-refine] [--rankfile FILE] [--hostfile FILE] [--assignment FILE] [--plot PNG]
//! sluice-map --pattern CPU-GPU --ranks N [--bytes B] [--write-matrix FILE] ...
//! sluice-map --bench OUTDIR
//! ```

mod bench;
mod output;

use std::process::ExitCode;
use std::time::Instant;

use sluice::mapping::magc::{self, Heuristic, Options, Strategy};
use sluice::mapping::matrix::CommMatrix;
use sluice::mapping::patterns::{combination, Pattern};
use sluice::mapping::placement::{Congestion, Placement};
use sluice::mapping::topology::Cluster;

const USAGE: &str = "usage: sluice-map MATRIX [--topology FILE | --cluster magc-a|magc-b|host] [--nodes N] [--network-gbs G]
                  [--strategy magc|strategy1|strategy2|default] [--heuristic greedy|scotch|both]
                  [--no-refine] [--rankfile FILE] [--hostfile FILE] [--assignment FILE] [--plot PNG]
       sluice-map --pattern CPU-GPU --ranks N [--bytes B] [--write-matrix FILE] [same options]
                  (patterns: 2d 2d-w 3d 3d-w col; e.g. --pattern col-2d-w)
       sluice-map --bench OUTDIR
--heuristic: what places processes on cores and GPUs inside each node (phases 2 and 3) before the
refinement: the paper's greedy heuristic (default), Scotch's graph mapping, or both (the better wins)";

#[derive(Default)]
struct Args {
    matrix: Option<String>,
    pattern: Option<(Pattern, Pattern)>,
    ranks: Option<usize>,
    bytes: f64,
    write_matrix: Option<String>,
    topology: Option<String>,
    cluster: Option<String>,
    nodes: Option<usize>,
    network_gbs: f64,
    strategy: Option<Strategy>,
    heuristic: Option<Heuristic>,
    refine: bool,
    rankfile: Option<String>,
    hostfile: Option<String>,
    assignment: Option<String>,
    plot: Option<String>,
    bench: Option<String>,
}

/// "col-2d-w" -> (col, 2d-w).
fn parse_combination(s: &str) -> Option<(Pattern, Pattern)> {
    (1..s.len()).filter(|&i| s.as_bytes()[i] == b'-').find_map(|i| Some((Pattern::parse(&s[..i])?, Pattern::parse(&s[i + 1..])?)))
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut a = Args { bytes: 1048576.0, refine: true, network_gbs: 1.25, ..Args::default() };
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| it.next().cloned().ok_or_else(|| format!("{arg} needs {what}"));
        match arg.as_str() {
            "--pattern" => {
                let v = value("CPU-GPU")?;
                a.pattern =
                    Some(parse_combination(&v).ok_or_else(|| format!("--pattern {v:?}: expected CPU-GPU from 2d 2d-w 3d 3d-w col"))?);
            }
            "--ranks" => a.ranks = Some(value("N")?.parse().ok().filter(|&n| n > 0).ok_or("--ranks needs a count >= 1")?),
            "--bytes" => {
                a.bytes = value("B")?.parse().ok().filter(|b: &f64| b.is_finite() && *b > 0.0).ok_or("--bytes needs a size > 0")?
            }
            "--write-matrix" => a.write_matrix = Some(value("FILE")?),
            "--topology" => a.topology = Some(value("FILE")?),
            "--cluster" => a.cluster = Some(value("NAME")?),
            "--nodes" => a.nodes = Some(value("N")?.parse().ok().filter(|&n| n > 0).ok_or("--nodes needs a count >= 1")?),
            "--network-gbs" => {
                a.network_gbs =
                    value("GB/s")?.parse().ok().filter(|b: &f64| b.is_finite() && *b > 0.0).ok_or("--network-gbs needs a bandwidth > 0")?
            }
            "--strategy" => {
                let v = value("NAME")?;
                a.strategy = Some(Strategy::ALL.into_iter().find(|s| s.name() == v).ok_or_else(|| format!("unknown strategy {v:?}"))?);
            }
            "--heuristic" => {
                let v = value("greedy|scotch|both")?;
                a.heuristic = Some(Heuristic::parse(&v).ok_or_else(|| format!("unknown heuristic {v:?} (greedy, scotch, both)"))?);
            }
            "--no-refine" => a.refine = false,
            "--rankfile" => a.rankfile = Some(value("FILE")?),
            "--hostfile" => a.hostfile = Some(value("FILE")?),
            "--assignment" => a.assignment = Some(value("FILE")?),
            "--plot" => a.plot = Some(value("PNG")?),
            "--bench" => a.bench = Some(value("OUTDIR")?),
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s:?}")),
            s if a.matrix.is_none() => a.matrix = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s:?}")),
        }
    }
    if a.bench.is_none() && a.matrix.is_some() == a.pattern.is_some() {
        return Err("give a MATRIX file or --pattern (not both)".into());
    }
    if a.pattern.is_some() && a.ranks.is_none() {
        return Err("--pattern needs --ranks".into());
    }
    Ok(a)
}

fn cluster(a: &Args) -> Result<Cluster, String> {
    let c = match (&a.topology, &a.cluster) {
        (Some(_), Some(_)) => return Err("give --topology or --cluster, not both".into()),
        (Some(path), None) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            Cluster::from_toml_str(&text).map_err(|e| format!("{path}: {e}"))?
        }
        (None, Some(name)) if name == "host" => {
            let (c, notes) = Cluster::this_host_with_notes(a.nodes.unwrap_or(1), a.network_gbs).map_err(|e| e.to_string())?;
            // What the host model guessed (nominal bandwidths, folded uneven levels) goes to stderr.
            notes.iter().for_each(|n| eprintln!("sluice-map: note: {n}"));
            return Ok(c);
        }
        (None, Some(name)) => Cluster::builtin(name).ok_or_else(|| format!("unknown cluster {name:?} (built in: magc-a, magc-b, host)"))?,
        (None, None) => return Err("give --topology FILE or --cluster magc-a|magc-b|host".into()),
    };
    Ok(match a.nodes {
        Some(n) => c.with_nodes(n),
        None => c,
    })
}

fn matrix(a: &Args) -> Result<CommMatrix, String> {
    if let Some(path) = &a.matrix {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        return CommMatrix::parse(&text).map_err(|e| format!("{path}: {e}"));
    }
    let (cpu, gpu) = a.pattern.expect("checked in parse_args");
    let m = combination(a.ranks.expect("checked in parse_args"), cpu, gpu, a.bytes);
    if let Some(path) = &a.write_matrix {
        std::fs::write(path, m.to_text()).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(m)
}

/// A strategy's mapping, its congestion and the time it took.
struct Outcome {
    strategy: Strategy,
    placement: Placement,
    congestion: Congestion,
    seconds: f64,
}

fn run(a: &Args) -> Result<(), String> {
    let c = cluster(a)?;
    let m = matrix(a)?;
    let d = Options::default();
    let o = Options { refine: a.refine, phase: a.heuristic.unwrap_or(d.phase), ..d };
    let mut outcomes = Vec::new();
    for s in Strategy::ALL {
        let t = Instant::now();
        let placement = magc::map(&c, &m, s, o).map_err(|e| e.to_string())?;
        let seconds = t.elapsed().as_secs_f64();
        let congestion = placement.congestion(&c, &m);
        outcomes.push(Outcome { strategy: s, placement, congestion, seconds });
    }
    let chosen = a.strategy.unwrap_or(Strategy::Magc);
    println!(
        "{} ranks on {} ({} nodes x {} cores{}); phases 2-3: {}{}; congestion = the busiest link's bytes / bandwidth",
        m.ranks(),
        c.name,
        c.nodes(),
        c.node.cpu.leaf_count(),
        c.node.gpu.as_ref().map_or(String::new(), |g| format!(", {} GPUs", g.leaf_count())),
        o.phase.name(),
        if o.refine { " + refinement" } else { "" }
    );
    println!(
        "{:<10} {:>14} {:>12} {:>12} {:>12} {:>16} {:>10}",
        "strategy", "max (ms)", "network", "cpu", "gpu", "between nodes", "time (ms)"
    );
    let default = outcomes[0].congestion.max;
    for x in &outcomes {
        let g = x.congestion;
        let vs = if default > 0.0 { format!(" ({:+.0}%)", (g.max / default - 1.0) * 100.0) } else { String::new() };
        println!(
            "{:<10} {:>14} {:>12.4} {:>12.4} {:>12.4} {:>16} {:>10.3}{}",
            x.strategy.name(),
            format!("{:.4}{vs}", g.max * 1e3),
            g.network * 1e3,
            g.cpu * 1e3,
            g.gpu * 1e3,
            output::bytes(g.inter_node),
            x.seconds * 1e3,
            if x.strategy == chosen { "  <- written" } else { "" }
        );
    }
    let pick = &outcomes.iter().find(|x| x.strategy == chosen).expect("every strategy ran").placement;
    if let Some(path) = &a.rankfile {
        std::fs::write(path, output::rankfile(&c, pick)).map_err(|e| format!("{path}: {e}"))?;
    }
    if let Some(path) = &a.hostfile {
        std::fs::write(path, output::hostfile(&c, pick)).map_err(|e| format!("{path}: {e}"))?;
        let runs = 1 + pick.node.windows(2).filter(|w| w[0] != w[1]).count();
        let nodes = pick.node.iter().collect::<std::collections::BTreeSet<_>>().len();
        if runs > nodes {
            eprintln!(
                "sluice-map: warning: {path}: the ranks of a node are not consecutive ({runs} runs of lines for {nodes} nodes); \
                 hydra starts a proxy per run and MPICH then takes each for a node of its own, without shared memory \
                 between them (docs/mapping.md): prefer reordering inside the application (MPI_Cart_create/\
                 MPI_Dist_graph_create with reorder = true under sluice)"
            );
        }
    }
    if let Some(path) = &a.assignment {
        std::fs::write(path, output::assignment(&c, pick)).map_err(|e| format!("{path}: {e}"))?;
    }
    if let Some(png) = &a.plot {
        let rows: Vec<(String, Placement)> = outcomes.iter().map(|x| (x.strategy.name().to_string(), x.placement.clone())).collect();
        output::plot(&c, &m, &rows, png)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("sluice-map: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) };
        }
    };
    let r = match &args.bench {
        Some(out) => bench::run(out),
        None => run(&args),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice-map: {e}");
            ExitCode::FAILURE
        }
    }
}
