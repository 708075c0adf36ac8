//! Basic-element boundaries of a packed stream: how many of its first bytes form whole
//! predefined elements of the type.
//!
//! Why: MPICH's engine unpacks a received message element by element of the receive type's
//! predefined types and stops before a partial one, reporting `MPI_ERR_TRUNCATE` (measured: its
//! test suite's `errors/pt2pt/truncmsg2`, and `tests/c/p2p_conf_partial.c`). Where sluice
//! unpacks a message itself it must stop at the same byte. Normalization merges neighbouring
//! elements into one run, so the boundaries are taken from the typemap as decoded, whose leaves
//! are the predefined types (a pair type such as `MPI_DOUBLE_INT` a struct of its two), once per
//! compiled form.

use super::ir::{DataLoop, Kind};

/// Where a type's predefined elements begin and end in its packed stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Grain {
    /// Every predefined element has this many bytes (the common case; a copy of nothing).
    Uniform(usize),
    /// Elements of several sizes: the decoded typemap, one leaf per predefined element.
    Mixed(Box<DataLoop>),
    /// Unknown (a typemap read back from the MPI's engine, whose runs merge elements): every
    /// byte counts as a boundary, so nothing is ever cut.
    Unknown,
}

impl Grain {
    /// The grain of a decoded typemap (its leaves are predefined elements).
    pub fn of(decoded: &DataLoop) -> Grain {
        let mut size = None;
        if uniform(decoded, &mut size) {
            Grain::Uniform(size.unwrap_or(1))
        } else {
            Grain::Mixed(Box::new(decoded.clone()))
        }
    }

    /// The longest prefix of at most `n` bytes of a packed stream of elements of the type (any
    /// count) that ends on a boundary between two predefined elements.
    pub fn whole_prefix(&self, n: usize) -> usize {
        match self {
            Grain::Uniform(s) => n - n % s.max(&1),
            Grain::Mixed(dl) => repeated(dl, n),
            Grain::Unknown => n,
        }
    }
}

/// Whether every non-empty leaf under `dl` has the same size (kept in `size`).
fn uniform(dl: &DataLoop, size: &mut Option<usize>) -> bool {
    match &dl.kind {
        Kind::Bytes(0) => true,
        Kind::Bytes(n) => *size.get_or_insert(*n) == *n,
        Kind::Contig { child, .. } | Kind::Vector { child, .. } | Kind::BlockIndexed { child, .. } | Kind::Indexed { child, .. } => {
            uniform(child, size)
        }
        Kind::Struct { children, .. } => children.iter().all(|c| uniform(c, size)),
    }
}

/// [`Grain::whole_prefix`] over a stream of repeated `dl` elements.
fn repeated(dl: &DataLoop, n: usize) -> usize {
    if dl.size == 0 {
        return n;
    }
    n - n % dl.size + within(dl, n % dl.size)
}

/// The longest prefix of at most `r` bytes (below `dl.size`) of one packed `dl` element that
/// ends on an element boundary. Block `i` is `blocklen` copies of its child, in stream order.
fn within(dl: &DataLoop, r: usize) -> usize {
    if r == 0 {
        return 0;
    }
    match &dl.kind {
        Kind::Bytes(_) => 0,
        // Blocks of one size: the block holding byte `r` by division.
        Kind::Contig { child, .. } | Kind::Vector { child, .. } | Kind::BlockIndexed { child, .. } => {
            let (_, len, _) = dl.block(0);
            let block = len * child.size;
            r - r % block + repeated(child, r % block)
        }
        Kind::Indexed { .. } | Kind::Struct { .. } => {
            let mut done = 0;
            for i in 0..dl.nblocks() {
                let (_, len, child) = dl.block(i);
                let block = len * child.size;
                if r - done < block {
                    return done + repeated(child, r - done);
                }
                done += block;
            }
            done
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receive type of MPICH's `truncmsg2`: `MPI_Type_indexed({1,2,1}, {4,8,16}, MPI_INT)`.
    fn indexed_ints() -> DataLoop {
        DataLoop::indexed(vec![1, 2, 1], vec![16, 32, 64], DataLoop::bytes(4))
    }

    /// `{char, int, 2 x double, short}` at 0, 4, 8, 24, two of them as a vector (MPICH measured:
    /// boundaries 0 1 5 13 21 23 | 24 28 36 44 46, `tests/c/p2p_conf_partial.c`).
    fn mixed() -> DataLoop {
        let b = DataLoop::bytes;
        let s = DataLoop::structure(vec![1, 1, 2, 1], vec![0, 4, 8, 24], vec![b(1), b(4), b(8), b(2)]);
        let ext = s.extent;
        DataLoop::vector(2, 1, 2 * ext, s)
    }

    #[test]
    fn a_uniform_type_cuts_at_its_element_size() {
        let g = Grain::of(&indexed_ints());
        assert_eq!(g, Grain::Uniform(4));
        assert_eq!([3, 6, 15, 16, 30_001].map(|n| g.whole_prefix(n)), [0, 4, 12, 16, 30_000]);
    }

    #[test]
    fn a_mixed_type_cuts_where_mpich_does() {
        let g = Grain::of(&mixed());
        assert!(matches!(g, Grain::Mixed(_)));
        let boundaries = [0, 1, 5, 13, 21, 23, 24, 28, 36, 44, 46];
        for n in 0..=48 {
            let want = boundaries.iter().copied().filter(|&b| b <= n % 46).max().unwrap() + 46 * (n / 46);
            assert_eq!(g.whole_prefix(n), want, "prefix of {n} bytes");
        }
    }

    #[test]
    fn an_unknown_grain_never_cuts() {
        assert_eq!(Grain::Unknown.whole_prefix(7), 7);
        assert_eq!(Grain::of(&DataLoop::contig(0, DataLoop::bytes(4))).whole_prefix(3), 0);
    }
}
