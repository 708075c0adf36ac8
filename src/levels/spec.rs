//! A composition of level pairs, parsed from `SLUICE_LEVELS` or `sluice_levels_open`'s argument:
//! `LEVEL ('/' LEVEL)*`, top first; `LEVEL = KIND [':' CHILDREN] ['@' MEMORY]`.

use super::Error;

/// The kind of a level pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Host memory over worker threads.
    Smp,
    /// Files over this process.
    Disk,
    /// The ranks of `MPI_COMM_WORLD` (arrays distributed over them).
    Cluster,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Smp => "smp",
            Kind::Disk => "disk",
            Kind::Cluster => "cluster",
        }
    }
}

/// One level pair of a composition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelSpec {
    pub kind: Kind,
    /// Children asked for (`None`: the kind's default).
    pub children: Option<usize>,
    /// Bytes the top may allocate (`None`: no bound).
    pub memory: Option<usize>,
}

/// A composition, top first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub levels: Vec<LevelSpec>,
}

/// Most children one level may have (threads; a sanity bound on a typo).
const MAX_CHILDREN: usize = 4096;

fn bytes(text: &str, whole: &str) -> Result<usize, Error> {
    let bad =
        || Error::Spec(format!("SLUICE_LEVELS \"{whole}\": memory \"{text}\" is not a byte count (digits with an optional K, M or G)"));
    let t = text.trim();
    let (digits, shift) = match t.chars().last() {
        Some(c @ ('k' | 'K' | 'm' | 'M' | 'g' | 'G')) => (
            &t[..t.len() - 1],
            match c.to_ascii_lowercase() {
                'k' => 10,
                'm' => 20,
                _ => 30,
            },
        ),
        _ => (t, 0),
    };
    let n: usize = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(1usize << shift) {
        Some(0) | None => Err(bad()),
        Some(v) => Ok(v),
    }
}

impl Spec {
    /// Parses a composition string (see the module's doc).
    pub fn parse(text: &str) -> Result<Spec, Error> {
        let whole = text.trim();
        if whole.is_empty() {
            return Err(Error::Spec("SLUICE_LEVELS: empty composition (e.g. \"smp:4\", \"disk/smp:2@64M\", \"cluster/smp:2\")".into()));
        }
        let mut levels = Vec::new();
        for part in whole.split('/') {
            let (head, memory) = match part.split_once('@') {
                Some((h, m)) => (h, Some(bytes(m, whole)?)),
                None => (part, None),
            };
            let (kind, children) = match head.split_once(':') {
                Some((k, c)) => (k, Some(c)),
                None => (head, None),
            };
            let kind = match kind.trim().to_ascii_lowercase().as_str() {
                "smp" => Kind::Smp,
                "disk" => Kind::Disk,
                "cluster" => Kind::Cluster,
                other => {
                    return Err(Error::Spec(format!("SLUICE_LEVELS \"{whole}\": unknown level kind \"{other}\" (smp, disk, cluster)")))
                }
            };
            let children = match children {
                None => None,
                Some(c) => match c.trim().parse::<usize>() {
                    Ok(n @ 1..=MAX_CHILDREN) => Some(n),
                    _ => {
                        return Err(Error::Spec(format!(
                            "SLUICE_LEVELS \"{whole}\": children \"{c}\" of {} is not a number from 1 to {MAX_CHILDREN}",
                            kind.name()
                        )))
                    }
                },
            };
            if kind == Kind::Disk && children.is_some_and(|n| n != 1) {
                return Err(Error::Spec(format!("SLUICE_LEVELS \"{whole}\": a disk level has one child (this process)")));
            }
            if kind == Kind::Cluster && children.is_some() {
                return Err(Error::Spec(format!("SLUICE_LEVELS \"{whole}\": a cluster level's children are the ranks (mpirun -np)")));
            }
            levels.push(LevelSpec { kind, children, memory });
        }
        if levels.iter().skip(1).any(|l| l.kind == Kind::Cluster) {
            return Err(Error::Spec(format!("SLUICE_LEVELS \"{whole}\": a cluster level must be the top (its children are the ranks)")));
        }
        Ok(Spec { levels })
    }

    /// The composition `SLUICE_LEVELS` names, `smp` when unset.
    pub fn from_env() -> Result<Spec, Error> {
        match std::env::var("SLUICE_LEVELS") {
            Ok(v) => Spec::parse(&v),
            Err(_) => Spec::parse("smp"),
        }
    }

    /// The text form (as parsed; `children`/`memory` only where given).
    pub fn text(&self) -> String {
        self.levels
            .iter()
            .map(|l| {
                let mut s = l.kind.name().to_string();
                if let Some(c) = l.children {
                    s += &format!(":{c}");
                }
                if let Some(m) = l.memory {
                    s += &format!("@{m}");
                }
                s
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}
