//! The paper's micro-benchmark patterns (Section VI-A) as communication matrices: a 2-D 5-point
//! and a 3-D 7-point stencil (each process exchanges with its two neighbours along every
//! dimension, no wrap-around), optionally weighted (3x the bytes along the first dimension), and
//! an all-to-all inside sub-communicators along the first dimension of a 3-D grid. Grids are
//! balanced as `MPI_Dims_create` makes them and ranks are laid out as `MPI_Cart_create` lays
//! them out (row-major: the last dimension varies fastest).

use super::matrix::{CommMatrix, Kind};

/// One pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Stencil2d {
        weighted: bool,
    },
    Stencil3d {
        weighted: bool,
    },
    /// `MPI_Alltoall` inside each group of processes along the first dimension of a 3-D grid.
    SubcommAlltoall,
}

impl Pattern {
    /// The patterns of the paper's combinations (X-Y: X on the CPUs, Y on the GPUs).
    pub const ALL: [Pattern; 5] = [
        Pattern::Stencil2d { weighted: false },
        Pattern::Stencil2d { weighted: true },
        Pattern::Stencil3d { weighted: false },
        Pattern::Stencil3d { weighted: true },
        Pattern::SubcommAlltoall,
    ];

    /// "2d", "2d-w", "3d", "3d-w", "col".
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Stencil2d { weighted: false } => "2d",
            Pattern::Stencil2d { weighted: true } => "2d-w",
            Pattern::Stencil3d { weighted: false } => "3d",
            Pattern::Stencil3d { weighted: true } => "3d-w",
            Pattern::SubcommAlltoall => "col",
        }
    }

    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == s)
    }

    /// Adds one iteration of the pattern with `bytes` per message to `m` as `kind` traffic.
    pub fn add_to(self, m: &mut CommMatrix, kind: Kind, bytes: f64) {
        let n = m.ranks();
        match self {
            Pattern::Stencil2d { weighted } | Pattern::Stencil3d { weighted } => {
                let nd = if matches!(self, Pattern::Stencil2d { .. }) { 2 } else { 3 };
                let dims = dims_create(n, nd);
                for r in 0..n {
                    let c = coords(r, &dims);
                    for d in 0..nd {
                        let w = if weighted && d == 0 { 3.0 * bytes } else { bytes };
                        for step in [-1i64, 1] {
                            let x = c[d] as i64 + step;
                            if x >= 0 && (x as usize) < dims[d] {
                                let mut o = c.clone();
                                o[d] = x as usize;
                                m.add(kind, r, rank(&o, &dims), w, 1);
                            }
                        }
                    }
                }
            }
            Pattern::SubcommAlltoall => {
                let dims = dims_create(n, 3);
                for r in 0..n {
                    let c = coords(r, &dims);
                    for x in 0..dims[0] {
                        let mut o = c.clone();
                        o[0] = x;
                        m.add(kind, r, rank(&o, &dims), bytes, 1);
                    }
                }
            }
        }
    }
}

/// A CPU pattern and a GPU pattern on `ranks` processes, `bytes` per message.
pub fn combination(ranks: usize, cpu: Pattern, gpu: Pattern, bytes: f64) -> CommMatrix {
    let mut m = CommMatrix::new(ranks);
    cpu.add_to(&mut m, Kind::Cpu, bytes);
    gpu.add_to(&mut m, Kind::Gpu, bytes);
    m
}

/// Balanced dimensions, largest first, as `MPI_Dims_create` gives them (prime factors dealt
/// out largest first to the currently smallest dimension).
pub fn dims_create(n: usize, nd: usize) -> Vec<usize> {
    let mut f = Vec::new();
    let mut x = n.max(1);
    let mut p = 2;
    while p * p <= x {
        while x % p == 0 {
            f.push(p);
            x /= p;
        }
        p += 1;
    }
    if x > 1 {
        f.push(x);
    }
    let mut dims = vec![1; nd];
    for &p in f.iter().rev() {
        let k = (0..nd).min_by_key(|&k| dims[k]).unwrap_or(0);
        dims[k] *= p;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

fn coords(mut r: usize, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = r % dims[d];
        r /= dims[d];
    }
    c
}

fn rank(c: &[usize], dims: &[usize]) -> usize {
    c.iter().zip(dims).fold(0, |r, (&x, &d)| r * d + x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_balanced() {
        assert_eq!(dims_create(64, 2), [8, 8]);
        assert_eq!(dims_create(64, 3), [4, 4, 4]);
        assert_eq!(dims_create(12, 2), [4, 3]);
        assert_eq!(dims_create(7, 2), [7, 1]);
    }

    #[test]
    fn stencils_and_groups_have_the_papers_shape() {
        let mut m = CommMatrix::new(64);
        Pattern::Stencil2d { weighted: true }.add_to(&mut m, Kind::Cpu, 10.0);
        // Rank 9 = (1, 1) of 8x8: neighbours 1 and 17 along dimension 0 (3x), 8 and 10.
        assert_eq!(m.get(Kind::Cpu, 9, 1).bytes, 30.0);
        assert_eq!(m.get(Kind::Cpu, 9, 17).bytes, 30.0);
        assert_eq!(m.get(Kind::Cpu, 9, 8).bytes, 10.0);
        assert_eq!(m.get(Kind::Cpu, 9, 10).bytes, 10.0);
        assert_eq!(m.get(Kind::Cpu, 8, 7).bytes, 0.0, "no wrap-around");
        let mut c = CommMatrix::new(64);
        Pattern::SubcommAlltoall.add_to(&mut c, Kind::Gpu, 5.0);
        // Groups along the first dimension of 4x4x4: stride 16.
        assert_eq!(c.get(Kind::Gpu, 3, 19).bytes, 5.0);
        assert_eq!(c.get(Kind::Gpu, 3, 51).bytes, 5.0);
        assert_eq!(c.get(Kind::Gpu, 3, 4).bytes, 0.0);
        assert_eq!(c.iter().count(), 64 * 3);
        let mut s = CommMatrix::new(64);
        Pattern::Stencil3d { weighted: false }.add_to(&mut s, Kind::Cpu, 1.0);
        assert_eq!(s.iter().count(), 2 * 3 * 4 * 4 * 3, "edges of a 4x4x4 mesh, both ways");
    }
}
