//! The full planner's frontier: partial paths by upper bound, highest first; among equal
//! bounds fewer hops, then the smaller channel sequence.
//!
//! Bounds take few distinct values (each is some channel's throughput), and a path's extensions
//! never have a higher bound or fewer hops. So paths go into buckets (one per bound, one list per
//! length) without any ordering work, and a list is sorted by channel sequence only when popping
//! reaches it: a list of the current bucket and length gains nothing while it is popped (its
//! paths' extensions are one hop longer), and most paths pushed are never popped (their bound is
//! below the answer).

use super::full::MAX_HOPS;

/// A path from the source: its channels, the memories it has visited (a bitmask, so the full
/// planner takes models of at most 128 memories), its slowest channel and where it ends.
#[derive(Clone, Copy)]
pub(super) struct Path {
    pub(super) seq: [u16; MAX_HOPS],
    pub(super) visited: u128,
    pub(super) slowest: f64,
    pub(super) at: u16,
    pub(super) hops: u8,
    pub(super) kind: Kind,
}

/// What a frontier entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// The path itself (and its extensions, when it is expanded).
    Open,
    /// A complete path known to fall short of its slowest channel: back in the frontier with a
    /// lower bound, solved exactly if that bound is still the highest.
    Short,
    /// The extensions of the path not pushed yet, whose bounds are below its own: pushed when
    /// their bound is the highest (most never are).
    Rest,
}

impl Path {
    pub(super) fn channels(&self) -> &[u16] {
        &self.seq[..self.hops as usize]
    }

    /// The order plans are preferred in among equal throughputs: fewer hops, then the smaller
    /// channel sequence.
    pub(super) fn key(&self) -> (u8, &[u16]) {
        (self.hops, self.channels())
    }
}

/// Paths of one bound, by length.
struct Bucket {
    bound: f64,
    levels: Vec<Level>,
    /// First level with paths left.
    next: usize,
}

#[derive(Default)]
struct Level {
    paths: Vec<Path>,
    /// Next path to pop; the list is sorted once popping starts.
    next: usize,
    sorted: bool,
}

#[derive(Default)]
pub(super) struct Frontier {
    /// By bound, highest first.
    buckets: Vec<Bucket>,
    /// First bucket with paths left.
    next: usize,
}

impl Frontier {
    pub(super) fn push(&mut self, bound: f64, path: Path) {
        // Buckets at or after `next` only: an extension's bound is never above the current one.
        let i = self.next + self.buckets[self.next..].partition_point(|b| b.bound > bound);
        if self.buckets.get(i).is_none_or(|b| b.bound != bound) {
            self.buckets.insert(i, Bucket { bound, levels: Vec::new(), next: 0 });
        }
        let b = &mut self.buckets[i];
        let h = path.hops as usize;
        if b.levels.len() <= h {
            b.levels.resize_with(h + 1, Level::default);
        }
        b.levels[h].paths.push(path);
    }

    /// The first path and its bound.
    pub(super) fn pop(&mut self) -> Option<(f64, Path)> {
        while let Some(b) = self.buckets.get_mut(self.next) {
            while let Some(level) = b.levels.get_mut(b.next) {
                if level.next < level.paths.len() {
                    if !level.sorted {
                        level.paths.sort_unstable_by(|x, y| x.channels().cmp(y.channels()));
                        level.sorted = true;
                    }
                    level.next += 1;
                    return Some((b.bound, level.paths[level.next - 1]));
                }
                b.next += 1;
            }
            self.next += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_bound_then_hops_then_sequence() {
        let mut f = Frontier::default();
        let path = |seq: &[u16]| {
            let mut p = Path { seq: [0; MAX_HOPS], visited: 0, slowest: 0.0, at: 0, hops: seq.len() as u8, kind: Kind::Open };
            p.seq[..seq.len()].copy_from_slice(seq);
            p
        };
        let items: [(f64, &[u16]); 7] =
            [(1.0, &[3]), (3.0, &[2, 1]), (3.0, &[1, 5]), (3.0, &[4]), (2.0, &[]), (3.0, &[1, 2, 0]), (0.5, &[9])];
        for (b, s) in items {
            f.push(b, path(s));
        }
        let mut order = Vec::new();
        while let Some((b, p)) = f.pop() {
            order.push((b, p.channels().to_vec()));
        }
        let want: Vec<(f64, Vec<u16>)> =
            [(3.0, vec![4]), (3.0, vec![1, 5]), (3.0, vec![2, 1]), (3.0, vec![1, 2, 0]), (2.0, vec![]), (1.0, vec![3]), (0.5, vec![9])]
                .into();
        assert_eq!(order, want);
    }
}
