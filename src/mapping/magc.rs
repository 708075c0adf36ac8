//! MAGC's three phases (Section V of the paper) and the baselines it is compared with.
//!
//! 1. Processes to nodes, on the network tree, with the combined CPU + GPU pattern (Strategy 1
//!    and 2: the CPU pattern only), each node taking as many processes as the default mapping
//!    gives it.
//! 2. Processes to cores inside every node, on the node's CPU tree, with the CPU traffic among
//!    the node's processes; their CPU traffic with other nodes loads the path to the node's
//!    root (the paper's phase 2 sees only the node's own traffic).
//! 3. GPUs to processes inside every node, likewise with the GPU pattern and tree (Strategy 2:
//!    the i-th process of a node gets GPU i).
//!
//! Each phase runs the greedy heuristic (Algorithm 1) and then, unless turned off, the
//! refinement pass, which never raises the phase's maximum congestion. Phases 2 and 3 can start
//! from Scotch's graph mapping instead, or from both ([`Heuristic`]; phase 1 always uses the
//! greedy heuristic).

use std::fmt;

use super::assign::{better, Assignment, Problem};
use super::matrix::{CommMatrix, Graph, Kind};
use super::placement::Placement;
use super::topology::Cluster;
use super::tree::Tree;
use super::{greedy, refine, scotch};

/// How ranks are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Ranks in order, block by block (no mapping).
    Default,
    /// The paper's approach: the combined pattern across nodes, then cores, then GPUs.
    Magc,
    /// Phases 1-3, but phase 1 sees the CPU pattern only.
    Strategy1,
    /// CPU-only mapping (phases 1 and 2 on the CPU pattern); GPUs by local rank.
    Strategy2,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [Strategy::Default, Strategy::Strategy1, Strategy::Strategy2, Strategy::Magc];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Default => "default",
            Strategy::Magc => "magc",
            Strategy::Strategy1 => "strategy1",
            Strategy::Strategy2 => "strategy2",
        }
    }
}

/// What builds the placement that phases 2 and 3 refine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heuristic {
    /// The paper's congestion-based greedy heuristic (Algorithm 1).
    Greedy,
    /// Scotch's graph mapping onto the node's tree ([`scotch`]).
    Scotch,
    /// Both, each refined; the better wins.
    Both,
}

impl Heuristic {
    pub const ALL: [Heuristic; 3] = [Heuristic::Greedy, Heuristic::Scotch, Heuristic::Both];

    pub fn name(self) -> &'static str {
        match self {
            Heuristic::Greedy => "greedy",
            Heuristic::Scotch => "scotch",
            Heuristic::Both => "both",
        }
    }

    pub fn parse(s: &str) -> Option<Heuristic> {
        Heuristic::ALL.into_iter().find(|h| h.name() == s)
    }
}

/// Tuning of the phases.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Run the refinement pass after the heuristic.
    pub refine: bool,
    /// Moves the refinement may try per problem.
    pub budget: usize,
    /// The heuristic of phases 2 and 3.
    pub phase: Heuristic,
}

impl Default for Options {
    fn default() -> Options {
        Options { refine: true, budget: 200_000, phase: Heuristic::Greedy }
    }
}

/// Why a mapping cannot be made.
#[derive(Clone, Debug, PartialEq)]
pub struct MapError(pub String);

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mapping: {}", self.0)
    }
}

impl std::error::Error for MapError {}

/// Processes per node under the default mapping (ranks spread evenly, node by node), checked
/// against the places a node has.
pub fn per_node(c: &Cluster, ranks: usize) -> Result<usize, MapError> {
    let gpus = c.node.gpu.is_some();
    let per = ranks.div_ceil(c.nodes());
    let slots = c.slots_per_node(gpus);
    if per > slots {
        return Err(MapError(format!(
            "{ranks} ranks do not fit on {} nodes of {slots} places ({} cores{})",
            c.nodes(),
            c.node.cpu.leaf_count(),
            c.node.gpu.as_ref().map_or(String::new(), |g| format!(", {} GPUs", g.leaf_count()))
        )));
    }
    Ok(per.max(1))
}

/// Maps the ranks of `m` onto `c` with strategy `s`.
pub fn map(c: &Cluster, m: &CommMatrix, s: Strategy, o: Options) -> Result<Placement, MapError> {
    let n = m.ranks();
    let per = per_node(c, n)?;
    let gpus = c.node.gpu.is_some();
    if s == Strategy::Default {
        return Ok(Placement::block(n, per, gpus));
    }
    let cpu = m.graph(&[Kind::Cpu]);
    let gpu = m.graph(&[Kind::Gpu]);
    // Phase 1.
    let node: Vec<u32> = if c.nodes() == 1 {
        vec![0; n]
    } else if s == Strategy::Magc {
        // The combined pattern. Its search also starts from the placements each pattern alone
        // gets (what Strategy 1 does with the CPU pattern): a placement good for one of the two
        // summands is a natural start for their sum, and so phase 1 never ends with more network
        // congestion than a mapping that saw only one of them.
        let both = m.graph(&[Kind::Cpu, Kind::Gpu]);
        let alone = [&cpu, &gpu].map(|g| solve(g, &[], &c.network, per as u32, Vec::new(), o, Heuristic::Greedy));
        solve(&both, &[], &c.network, per as u32, alone.into_iter().collect::<Result<_, _>>()?, o, Heuristic::Greedy)?
    } else {
        solve(&cpu, &[], &c.network, per as u32, Vec::new(), o, Heuristic::Greedy)?
    };
    // Phases 2 and 3, node by node.
    let mut p = Placement { node, core: vec![0; n], gpu: vec![None; n] };
    for k in 0..c.nodes() as u32 {
        let members: Vec<usize> = (0..n).filter(|&r| p.node[r] == k).collect();
        if members.is_empty() {
            continue;
        }
        let (g, ext) = cpu.induced(&members);
        for (i, core) in solve(&g, &ext, &c.node.cpu, 1, Vec::new(), o, o.phase)?.into_iter().enumerate() {
            p.core[members[i]] = core;
        }
        if let Some(t) = &c.node.gpu {
            let gpus: Vec<u32> = if s == Strategy::Strategy2 {
                (0..members.len() as u32).collect()
            } else {
                let (g, ext) = gpu.induced(&members);
                solve(&g, &ext, t, 1, Vec::new(), o, o.phase)?
            };
            for (i, g) in gpus.into_iter().enumerate() {
                p.gpu[members[i]] = Some(g);
            }
        }
    }
    debug_assert!(gpus || p.gpu.iter().all(Option::is_none));
    Ok(p)
}

/// One phase's problem: `g` onto `tree`'s leaves, `cap` processes each. The search starts
/// from the placement of heuristic `h` (greedy, Scotch, or both) and from the best (by `g`'s
/// congestion) of the block placement (processes in order, leaf by leaf: the default mapping)
/// and `starts`; the better result wins. So a phase never ends worse than the default placement
/// of its processes, nor than any of `starts`, nor than its heuristic's own placement.
fn solve(
    g: &Graph,
    external: &[f64],
    tree: &Tree,
    cap: u32,
    mut starts: Vec<Vec<u32>>,
    o: Options,
    h: Heuristic,
) -> Result<Vec<u32>, MapError> {
    let capacity = vec![cap; tree.leaf_count()];
    let p = Problem { graph: g, external, tree, capacity: &capacity };
    let mut primary = Vec::with_capacity(2);
    if h != Heuristic::Scotch {
        primary.push(greedy::map(&p));
    }
    if h != Heuristic::Greedy {
        primary.push(scotch::map(&p)?);
    }
    starts.push((0..g.len() as u32).map(|i| i / cap).collect());
    // Refining costs more than every start together: refine the heuristics' placements, and the
    // best of the others only where it starts better than the best refined one ends. The result
    // is never worse than any start.
    let score = |l: &[u32]| Assignment::with(&p, l).score();
    let mut other = starts.swap_remove(0);
    let mut other_score = score(&other);
    for s in starts {
        let sc = score(&s);
        if better(sc, other_score) {
            (other, other_score) = (s, sc);
        }
    }
    let mut best: Option<((f64, f64), Vec<u32>)> = None;
    for mut leaf_of in primary {
        if o.refine {
            refine::refine(&p, &mut leaf_of, o.budget);
        }
        let sc = score(&leaf_of);
        if best.as_ref().is_none_or(|(b, _)| better(sc, *b)) {
            best = Some((sc, leaf_of));
        }
    }
    let mut best = best.expect("one heuristic at least");
    if better(other_score, best.0) {
        if o.refine {
            refine::refine(&p, &mut other, o.budget);
        }
        let sc = score(&other);
        if better(sc, best.0) {
            best = (sc, other);
        }
    }
    Ok(best.1)
}
