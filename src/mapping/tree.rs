//! A topology tree: the hierarchy of links between processing elements (the paper's topology
//! tree T of Algorithm 1). Every vertex but the root has one *uplink* to its parent with a
//! bandwidth; the leaves are the processing elements (cores, GPUs, or whole nodes in the
//! network tree). Traffic between two leaves crosses the uplinks of every vertex on the path
//! up to their lowest common ancestor and down again.

/// One level of a regular tree: every vertex of the level above has `arity` children, each
/// joined to it by a link of `gbs` GB/s (10^9 bytes per second).
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub name: String,
    pub arity: u32,
    pub gbs: f64,
}

/// Index of a vertex in its [`Tree`].
pub type Vertex = u32;

const NONE: Vertex = Vertex::MAX;

/// A rooted tree with bandwidths on its links. Built once; the mappers only read it.
#[derive(Clone, Debug)]
pub struct Tree {
    parent: Vec<Vertex>,
    /// Bytes per second of the vertex's uplink (the root's is infinite: it has none).
    bw: Vec<f64>,
    depth: Vec<u16>,
    /// "package1/core3": the level names and indices from the root (plots, messages).
    label: Vec<String>,
    leaves: Vec<Vertex>,
}

impl Tree {
    /// A tree of one vertex, which is also its only leaf.
    pub fn single() -> Tree {
        Tree { parent: vec![NONE], bw: vec![f64::INFINITY], depth: vec![0], label: vec![String::new()], leaves: vec![0] }
    }

    /// The regular tree of `levels`, root first; its leaves are the vertices of the last level,
    /// in order (leaf `i` of a two-level tree of arities (2, 12) is core `i % 12` of package
    /// `i / 12`). No levels: [`Tree::single`].
    pub fn from_levels(levels: &[Level]) -> Tree {
        let mut t = Tree::single();
        let mut frontier = vec![0];
        for (d, level) in levels.iter().enumerate() {
            let mut next = Vec::with_capacity(frontier.len() * level.arity as usize);
            for &p in &frontier {
                for k in 0..level.arity {
                    let v = t.parent.len() as Vertex;
                    t.parent.push(p);
                    t.bw.push(level.gbs * 1e9);
                    t.depth.push(d as u16 + 1);
                    let up = &t.label[p as usize];
                    t.label.push(if up.is_empty() { format!("{}{k}", level.name) } else { format!("{up}/{}{k}", level.name) });
                    next.push(v);
                }
            }
            frontier = next;
        }
        t.leaves = frontier;
        t
    }

    /// Number of vertices (the root included; links are the vertices but the root).
    pub fn vertices(&self) -> usize {
        self.parent.len()
    }

    /// Number of leaves.
    pub fn leaf_count(&self) -> usize {
        self.leaves.len()
    }

    /// The vertex of leaf `i`.
    pub fn leaf(&self, i: usize) -> Vertex {
        self.leaves[i]
    }

    /// Bytes per second of `v`'s uplink.
    pub fn bandwidth(&self, v: Vertex) -> f64 {
        self.bw[v as usize]
    }

    /// Where `v` is ("package1/core3"; the root: "").
    pub fn label(&self, v: Vertex) -> &str {
        &self.label[v as usize]
    }

    pub fn root(&self) -> Vertex {
        0
    }

    /// The vertex above `v` (the root's parent is not a vertex).
    pub fn parent(&self, v: Vertex) -> Vertex {
        self.parent[v as usize]
    }

    /// Calls `f` with every vertex whose uplink the traffic between `a` and `b` crosses (none
    /// when `a == b`).
    #[inline]
    pub fn path(&self, mut a: Vertex, mut b: Vertex, mut f: impl FnMut(Vertex)) {
        while self.depth[a as usize] > self.depth[b as usize] {
            f(a);
            a = self.parent[a as usize];
        }
        while self.depth[b as usize] > self.depth[a as usize] {
            f(b);
            b = self.parent[b as usize];
        }
        while a != b {
            f(a);
            f(b);
            a = self.parent[a as usize];
            b = self.parent[b as usize];
        }
    }
}

/// The load on every link of a tree, in bytes; congestion is load over bandwidth (seconds: the
/// time the link needs for its traffic).
#[derive(Clone, Debug)]
pub struct Loads {
    pub bytes: Vec<f64>,
}

impl Loads {
    pub fn new(t: &Tree) -> Loads {
        Loads { bytes: vec![0.0; t.vertices()] }
    }

    /// Adds `bytes` between leaves-or-vertices `a` and `b`.
    #[inline]
    pub fn add(&mut self, t: &Tree, a: Vertex, b: Vertex, bytes: f64) {
        t.path(a, b, |v| self.bytes[v as usize] += bytes);
    }

    /// The congestion of `v`'s uplink.
    #[inline]
    pub fn congestion(&self, t: &Tree, v: Vertex) -> f64 {
        self.bytes[v as usize] / t.bandwidth(v)
    }

    /// The largest congestion of any link and its vertex (0 and the root when nothing flows).
    pub fn max(&self, t: &Tree) -> (f64, Vertex) {
        let mut best = (0.0, t.root());
        for v in 1..t.vertices() as Vertex {
            let c = self.congestion(t, v);
            if c > best.0 {
                best = (c, v);
            }
        }
        best
    }

    /// The sum of the squared congestions (the refinement's tie-break: how evenly the load is
    /// spread once the maximum cannot fall).
    pub fn sum_sq(&self, t: &Tree) -> f64 {
        (1..t.vertices() as Vertex).map(|v| self.congestion(t, v).powi(2)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_sockets() -> Tree {
        Tree::from_levels(&[Level { name: "package".into(), arity: 2, gbs: 10.0 }, Level { name: "core".into(), arity: 3, gbs: 5.0 }])
    }

    #[test]
    fn regular_tree_shape_and_labels() {
        let t = two_sockets();
        assert_eq!(t.vertices(), 1 + 2 + 6);
        assert_eq!(t.leaf_count(), 6);
        assert_eq!(t.label(t.leaf(4)), "package1/core1");
        assert_eq!(t.bandwidth(t.leaf(0)), 5e9);
    }

    #[test]
    fn paths_cross_the_links_below_the_common_ancestor() {
        let t = two_sockets();
        let mut seen = Vec::new();
        t.path(t.leaf(0), t.leaf(1), |v| seen.push(t.label(v).to_string()));
        seen.sort();
        assert_eq!(seen, ["package0/core0", "package0/core1"]);
        seen.clear();
        t.path(t.leaf(0), t.leaf(5), |v| seen.push(t.label(v).to_string()));
        seen.sort();
        assert_eq!(seen, ["package0", "package0/core0", "package1", "package1/core2"]);
        seen.clear();
        t.path(t.leaf(2), t.root(), |v| seen.push(t.label(v).to_string()));
        assert_eq!(seen, ["package0/core2", "package0"]);
        seen.clear();
        t.path(t.leaf(2), t.leaf(2), |v| seen.push(t.label(v).to_string()));
        assert!(seen.is_empty());
    }

    #[test]
    fn congestion_is_load_over_bandwidth() {
        let t = two_sockets();
        let mut l = Loads::new(&t);
        l.add(&t, t.leaf(0), t.leaf(5), 1e9);
        let (c, v) = l.max(&t);
        assert_eq!(c, 0.2); // a core link: 1 GB at 5 GB/s
        assert!(t.label(v).contains("core"));
    }
}
