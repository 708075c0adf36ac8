//! The communication matrix: bytes and messages from every rank to every other (world ranks),
//! kept apart for CPU traffic and GPU traffic (device buffers). The profiler writes it, the
//! mapper reads it; the file format is line-oriented text (docs/mapping.md):
//!
//! ```text
//! sluice-matrix 1
//! ranks 64
//! # kind from to bytes messages
//! cpu 0 1 1048576 16
//! gpu 0 8 4194304 4
//! ```
//!
//! `#` starts a comment; entries for the same (kind, from, to) add up; absent pairs are zero.

use std::collections::BTreeMap;
use std::fmt;

/// CPU traffic (host buffers) or GPU traffic (device buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Cpu,
    Gpu,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Gpu => "gpu",
        }
    }
}

/// Bytes and messages of one directed pair.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Traffic {
    pub bytes: f64,
    pub messages: u64,
}

/// Who sends how much to whom.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommMatrix {
    ranks: usize,
    entries: BTreeMap<(Kind, u32, u32), Traffic>,
}

/// A symmetric weighted graph over the ranks: `adj[i]` lists (j, bytes between i and j in both
/// directions), j != i, each neighbour once.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub adj: Vec<Vec<(u32, f64)>>,
}

impl Graph {
    pub fn len(&self) -> usize {
        self.adj.len()
    }

    pub fn is_empty(&self) -> bool {
        self.adj.is_empty()
    }

    /// Total bytes of `i` with everyone.
    pub fn volume(&self, i: usize) -> f64 {
        self.adj[i].iter().map(|&(_, w)| w).sum()
    }

    /// The graph among `members` only (distinct vertices of this graph), renumbered: vertex `i`
    /// of the result is `members[i]`; and each member's traffic with vertices outside the list.
    /// The mapping phases solve one node at a time this way; reordering a sub-communicator's
    /// topology reads the job's profile (world ranks) this way.
    pub fn induced(&self, members: &[usize]) -> (Graph, Vec<f64>) {
        let mut local = vec![u32::MAX; self.len()];
        for (i, &v) in members.iter().enumerate() {
            local[v] = i as u32;
        }
        let mut sub = Graph { adj: vec![Vec::new(); members.len()] };
        let mut external = vec![0.0; members.len()];
        for (i, &v) in members.iter().enumerate() {
            for &(u, w) in &self.adj[v] {
                match local[u as usize] {
                    u32::MAX => external[i] += w,
                    lu => sub.adj[i].push((lu, w)),
                }
            }
        }
        (sub, external)
    }
}

/// What is wrong with a matrix file.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "communication matrix, line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

impl CommMatrix {
    pub fn new(ranks: usize) -> CommMatrix {
        CommMatrix { ranks, entries: BTreeMap::new() }
    }

    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Records `bytes` in `messages` messages from `from` to `to`. Traffic of a rank to itself
    /// moves nothing between processing elements and is not recorded.
    pub fn add(&mut self, kind: Kind, from: usize, to: usize, bytes: f64, messages: u64) {
        assert!(from < self.ranks && to < self.ranks, "rank out of range");
        if from == to || (bytes == 0.0 && messages == 0) {
            return;
        }
        let t = self.entries.entry((kind, from as u32, to as u32)).or_default();
        t.bytes += bytes;
        t.messages += messages;
    }

    /// The traffic from `from` to `to`.
    pub fn get(&self, kind: Kind, from: usize, to: usize) -> Traffic {
        self.entries.get(&(kind, from as u32, to as u32)).copied().unwrap_or_default()
    }

    /// Every non-zero entry, in (kind, from, to) order.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, usize, usize, Traffic)> + '_ {
        self.entries.iter().map(|(&(k, f, t), &v)| (k, f as usize, t as usize, v))
    }

    /// Whether any GPU traffic is recorded.
    pub fn has_gpu(&self) -> bool {
        self.entries.keys().any(|k| k.0 == Kind::Gpu)
    }

    /// The symmetric graph of the kinds in `kinds` (CPU, GPU, or both added: the combined
    /// pattern of the first phase).
    pub fn graph(&self, kinds: &[Kind]) -> Graph {
        let mut pairs: Vec<(u32, u32, f64)> = self
            .entries
            .iter()
            .filter(|(k, v)| kinds.contains(&k.0) && v.bytes > 0.0)
            .map(|(&(_, f, t), v)| (f.min(t), f.max(t), v.bytes))
            .collect();
        pairs.sort_unstable_by_key(|&(a, b, _)| (a, b));
        let mut adj = vec![Vec::new(); self.ranks];
        let mut k = 0;
        while k < pairs.len() {
            let (a, b, mut w) = pairs[k];
            k += 1;
            while k < pairs.len() && (pairs[k].0, pairs[k].1) == (a, b) {
                w += pairs[k].2;
                k += 1;
            }
            adj[a as usize].push((b, w));
            adj[b as usize].push((a, w));
        }
        Graph { adj }
    }

    /// Parses the text format (module docs).
    pub fn parse(text: &str) -> Result<CommMatrix, ParseError> {
        let err = |line: usize, reason: String| ParseError { line, reason };
        let mut m: Option<CommMatrix> = None;
        let mut version = false;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[0] {
                "sluice-matrix" => {
                    if words.len() != 2 || words[1] != "1" {
                        return Err(err(n, format!("unsupported format {line:?} (this sluice reads \"sluice-matrix 1\")")));
                    }
                    version = true;
                }
                "ranks" => {
                    if !version {
                        return Err(err(n, "the file must start with \"sluice-matrix 1\"".into()));
                    }
                    if m.is_some() {
                        return Err(err(n, "\"ranks\" given twice".into()));
                    }
                    let r = words.get(1).and_then(|w| w.parse::<usize>().ok()).filter(|&r| r > 0 && words.len() == 2);
                    m = Some(CommMatrix::new(r.ok_or_else(|| err(n, format!("expected \"ranks N\" with N >= 1, found {line:?}")))?));
                }
                "cpu" | "gpu" => {
                    let Some(m) = m.as_mut() else {
                        return Err(err(n, "an entry before \"ranks N\"".into()));
                    };
                    if words.len() != 5 {
                        return Err(err(n, format!("expected \"KIND FROM TO BYTES MESSAGES\", found {line:?}")));
                    }
                    let rank = |w: &str| w.parse::<usize>().ok().filter(|&r| r < m.ranks);
                    let from = rank(words[1]).ok_or_else(|| err(n, format!("rank {:?} is not in 0..{}", words[1], m.ranks)))?;
                    let to = rank(words[2]).ok_or_else(|| err(n, format!("rank {:?} is not in 0..{}", words[2], m.ranks)))?;
                    let bytes = words[3].parse::<f64>().ok().filter(|b| b.is_finite() && *b >= 0.0);
                    let bytes = bytes.ok_or_else(|| err(n, format!("bytes {:?} is not a number >= 0", words[3])))?;
                    let msgs = words[4].parse::<u64>().map_err(|_| err(n, format!("messages {:?} is not a count", words[4])))?;
                    let kind = if words[0] == "cpu" { Kind::Cpu } else { Kind::Gpu };
                    m.add(kind, from, to, bytes, msgs);
                }
                other => return Err(err(n, format!("unknown keyword {other:?} (expected sluice-matrix, ranks, cpu or gpu)"))),
            }
        }
        m.ok_or_else(|| err(text.lines().count().max(1), "no \"ranks N\" line".into()))
    }

    /// The text format (module docs); [`CommMatrix::parse`] reads it back unchanged.
    pub fn to_text(&self) -> String {
        let mut s = format!("sluice-matrix 1\nranks {}\n# kind from to bytes messages\n", self.ranks);
        for (k, f, t, v) in self.iter() {
            s += &format!("{} {f} {t} {} {}\n", k.name(), v.bytes, v.messages);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_entries_add_up() {
        let mut m = CommMatrix::new(4);
        m.add(Kind::Cpu, 0, 1, 100.0, 1);
        m.add(Kind::Cpu, 0, 1, 50.0, 2);
        m.add(Kind::Gpu, 3, 2, 7.0, 1);
        m.add(Kind::Cpu, 2, 2, 9.0, 1); // to itself: nothing between processing elements
        let back = CommMatrix::parse(&m.to_text()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.get(Kind::Cpu, 0, 1), Traffic { bytes: 150.0, messages: 3 });
        assert_eq!(back.get(Kind::Cpu, 2, 2), Traffic::default());
        assert!(back.has_gpu());
    }

    #[test]
    fn graphs_are_symmetric_and_combine_kinds() {
        let mut m = CommMatrix::new(3);
        m.add(Kind::Cpu, 0, 1, 10.0, 1);
        m.add(Kind::Cpu, 1, 0, 5.0, 1);
        m.add(Kind::Gpu, 1, 0, 1.0, 1);
        m.add(Kind::Gpu, 2, 1, 4.0, 1);
        let cpu = m.graph(&[Kind::Cpu]);
        assert_eq!(cpu.adj[0], vec![(1, 15.0)]);
        assert_eq!(cpu.adj[1], vec![(0, 15.0)]);
        assert!(cpu.adj[2].is_empty());
        let all = m.graph(&[Kind::Cpu, Kind::Gpu]);
        assert_eq!(all.adj[1], vec![(0, 16.0), (2, 4.0)]);
        assert_eq!(all.volume(1), 20.0);
        // Among ranks 2 and 1 (in that order): one edge, renumbered.
        let (sub, external) = all.induced(&[2, 1]);
        assert_eq!(sub.adj, vec![vec![(1, 4.0)], vec![(0, 4.0)]]);
        assert_eq!(external, [0.0, 16.0]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = CommMatrix::parse("sluice-matrix 1\nranks 2\ncpu 0 2 10 1\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("not in 0..2"), "{e}");
        let e = CommMatrix::parse("ranks 2\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = CommMatrix::parse("sluice-matrix 1\nranks 2\n# fine\ncpu 0 1 -3 1\n").unwrap_err();
        assert_eq!(e.line, 4);
        let e = CommMatrix::parse("sluice-matrix 1\nranks 2\nnet 0 1 3 1\n").unwrap_err();
        assert!(e.reason.contains("unknown keyword"), "{e}");
        assert!(CommMatrix::parse("sluice-matrix 2\n").is_err());
        assert!(CommMatrix::parse("").is_err());
    }
}
