//! What `sluice-map` writes: launch files for both MPIs, the assignment table and the plot.

use std::io::Write;
use std::process::{Command, Stdio};

use sluice::mapping::matrix::CommMatrix;
use sluice::mapping::placement::Placement;
use sluice::mapping::topology::Cluster;

/// "1.5 GiB".
pub fn bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut u) = (b, 0);
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

/// Open MPI's rankfile (`mpirun --map-by rankfile:file=FILE`, or `-rf FILE` before 5.0): each
/// rank on its host and logical core.
pub fn rankfile(c: &Cluster, p: &Placement) -> String {
    let mut s = String::from("# written by sluice-map\n");
    for r in 0..p.node.len() {
        s += &format!("rank {r}={} slot={}\n", c.hosts[p.node[r] as usize], p.core[r]);
    }
    s
}

/// Hydra's host file (`mpiexec -f FILE`): one line per rank in rank order, so that rank r
/// starts on its node (hydra gives the entries' slots to ranks in order).
pub fn hostfile(c: &Cluster, p: &Placement) -> String {
    let mut s = String::from("# written by sluice-map: one line per rank, in rank order\n");
    for &n in &p.node {
        s += &format!("{}:1\n", c.hosts[n as usize]);
    }
    s
}

/// The whole assignment, one rank a line: `rank host core gpu` (`-` without a GPU). The GPU is
/// the index of the device in the node's GPU tree, which a launcher exports as the rank's
/// device list (`CUDA_VISIBLE_DEVICES`; docs/mapping.md).
pub fn assignment(c: &Cluster, p: &Placement) -> String {
    let mut s = String::from("# rank host core gpu\n");
    for r in 0..p.node.len() {
        let gpu = p.gpu[r].map_or("-".to_string(), |g| g.to_string());
        s += &format!("{r} {} {} {gpu}\n", c.hosts[p.node[r] as usize], p.core[r]);
    }
    s
}

/// The Python that draws: Debian's (with matplotlib) when present, else the first on PATH.
pub fn python() -> &'static str {
    if std::path::Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// Writes `png`: each strategy's busiest link split by kind, and the load of every network
/// link, drawn by scripts/plot_map.py (embedded; needs python3 with matplotlib).
pub fn plot(c: &Cluster, m: &CommMatrix, rows: &[(String, Placement)], png: &str) -> Result<(), String> {
    let mut csv = String::from("strategy,kind,link,congestion_s\n");
    for (name, p) in rows {
        let l = p.loads(c, m);
        for v in 1..c.network.vertices() as u32 {
            csv += &format!("{name},network,{},{}\n", c.network.label(v), l.network.congestion(&c.network, v));
        }
        let mut kinds = vec![("cpu", &c.node.cpu, &l.cpu)];
        if let Some(g) = &c.node.gpu {
            kinds.push(("gpu", g, &l.gpu));
        }
        for (kind, tree, loads) in kinds {
            for (n, load) in loads.iter().enumerate() {
                for v in 1..tree.vertices() as u32 {
                    csv += &format!("{name},{kind},{}/{},{}\n", c.hosts[n], tree.label(v), load.congestion(tree, v));
                }
            }
        }
    }
    let data = format!("{png}.csv");
    std::fs::write(&data, csv).map_err(|e| format!("{data}: {e}"))?;
    let script = include_str!("../../../scripts/plot_map.py");
    let mut child = Command::new(python())
        .args(["-", &data, png, &c.name])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("--plot needs python3 with matplotlib: {e}"))?;
    child.stdin.take().expect("piped").write_all(script.as_bytes()).map_err(|e| format!("python3: {e}"))?;
    let status = child.wait().map_err(|e| format!("python3: {e}"))?;
    if !status.success() {
        return Err(format!("the plot failed (python3 with matplotlib needed; data left in {data})"));
    }
    let _ = std::fs::remove_file(&data);
    Ok(())
}
