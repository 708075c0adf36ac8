//! The dataloop IR: an MPI datatype as a tree of loops over contiguous byte runs.
//!
//! Pure Rust, no MPI. Every node caches what the interpreter and the normalizer ask for again and
//! again (packed size, bounds, contiguity, depth), so they are computed once at construction.
//! All node kinds reduce to one shape, a list of *blocks* `(displacement, blocklen, child)`: a
//! block is `blocklen` copies of `child`, copy `j` at `displacement + j * child.extent`. The
//! typemap (and so the packed stream) is the blocks in list order, which is MPI's order.

/// The shape of one node.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Leaf: `n` contiguous bytes at offset 0 (one or more basic-type values).
    Bytes(usize),
    /// `count` copies of `child`, one extent apart.
    Contig { count: usize, child: Box<DataLoop> },
    /// `count` blocks of `blocklen` children, blocks `stride_bytes` apart.
    Vector { count: usize, blocklen: usize, stride_bytes: i64, child: Box<DataLoop> },
    /// Blocks of equal length at arbitrary byte displacements.
    BlockIndexed { blocklen: usize, displs_bytes: Vec<i64>, child: Box<DataLoop> },
    /// Blocks of varying length at arbitrary byte displacements.
    Indexed { blocklens: Vec<usize>, displs_bytes: Vec<i64>, child: Box<DataLoop> },
    /// Blocks of varying length and type.
    Struct { blocklens: Vec<usize>, displs: Vec<i64>, children: Vec<DataLoop> },
}

/// A node with its cached properties.
#[derive(Clone, PartialEq)]
pub struct DataLoop {
    pub kind: Kind,
    /// Packed bytes of one element.
    pub size: usize,
    /// MPI lower bound and extent (may be set explicitly: resized types, MPI's own values).
    pub lb: i64,
    pub extent: i64,
    /// Bounds of the bytes actually touched.
    pub true_lb: i64,
    pub true_ub: i64,
    /// The packed stream of one element is memory `[true_lb, true_lb + size)` in order.
    pub contiguous: bool,
    /// Levels of loops above the leaves (a leaf has depth 0).
    pub depth: u32,
    /// Prefix sums of packed bytes for the kinds whose blocks differ in size (indexed, struct):
    /// `block_ends[i]` is the stream offset where block `i` ends; empty for the other kinds,
    /// whose blocks are found by division. Lets a seek find its block by binary search.
    block_ends: Box<[usize]>,
}

impl std::fmt::Debug for DataLoop {
    // The prefix sums are derived from `kind`; leaving them out keeps failure output readable.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataLoop")
            .field("kind", &self.kind)
            .field("size", &self.size)
            .field("lb", &self.lb)
            .field("extent", &self.extent)
            .field("true_lb", &self.true_lb)
            .field("true_ub", &self.true_ub)
            .field("contiguous", &self.contiguous)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

/// One block: `(displacement, blocklen, child)`.
pub type Block<'a> = (i64, usize, &'a DataLoop);

impl DataLoop {
    /// A leaf of `n` bytes.
    pub fn bytes(n: usize) -> Self {
        Self::build(Kind::Bytes(n))
    }

    pub fn contig(count: usize, child: DataLoop) -> Self {
        Self::build(Kind::Contig { count, child: Box::new(child) })
    }

    pub fn vector(count: usize, blocklen: usize, stride_bytes: i64, child: DataLoop) -> Self {
        Self::build(Kind::Vector { count, blocklen, stride_bytes, child: Box::new(child) })
    }

    pub fn block_indexed(blocklen: usize, displs_bytes: Vec<i64>, child: DataLoop) -> Self {
        Self::build(Kind::BlockIndexed { blocklen, displs_bytes, child: Box::new(child) })
    }

    pub fn indexed(blocklens: Vec<usize>, displs_bytes: Vec<i64>, child: DataLoop) -> Self {
        assert_eq!(blocklens.len(), displs_bytes.len());
        Self::build(Kind::Indexed { blocklens, displs_bytes, child: Box::new(child) })
    }

    pub fn structure(blocklens: Vec<usize>, displs: Vec<i64>, children: Vec<DataLoop>) -> Self {
        assert!(blocklens.len() == displs.len() && displs.len() == children.len());
        Self::build(Kind::Struct { blocklens, displs, children })
    }

    /// The same typemap with MPI bounds `lb`/`extent` (MPI_Type_create_resized); true bounds,
    /// size and contiguity do not change.
    pub fn resized(mut self, lb: i64, extent: i64) -> Self {
        self.lb = lb;
        self.extent = extent;
        self
    }

    /// Number of blocks of this node (a leaf has none).
    pub fn nblocks(&self) -> usize {
        match &self.kind {
            Kind::Bytes(_) => 0,
            Kind::Contig { .. } => 1,
            Kind::Vector { count, .. } => *count,
            Kind::BlockIndexed { displs_bytes, .. } => displs_bytes.len(),
            Kind::Indexed { displs_bytes, .. } => displs_bytes.len(),
            Kind::Struct { displs, .. } => displs.len(),
        }
    }

    /// Block `i` (`i < nblocks()`).
    pub fn block(&self, i: usize) -> Block<'_> {
        match &self.kind {
            Kind::Bytes(_) => unreachable!("a leaf has no blocks"),
            Kind::Contig { count, child } => (0, *count, child),
            Kind::Vector { blocklen, stride_bytes, child, .. } => (i as i64 * stride_bytes, *blocklen, child),
            Kind::BlockIndexed { blocklen, displs_bytes, child } => (displs_bytes[i], *blocklen, child),
            Kind::Indexed { blocklens, displs_bytes, child } => (displs_bytes[i], blocklens[i], child),
            Kind::Struct { blocklens, displs, children } => (displs[i], blocklens[i], &children[i]),
        }
    }

    /// The block holding stream byte `skip` of one element and the offset into that block;
    /// `(nblocks(), 0)` when `skip >= size`. O(1) for equal-sized blocks, O(log n) otherwise.
    pub fn block_at(&self, skip: usize) -> (usize, usize) {
        if skip >= self.size {
            return (self.nblocks(), 0);
        }
        match &self.kind {
            // A leaf is one run; a contig is one block.
            Kind::Bytes(_) | Kind::Contig { .. } => (0, skip),
            Kind::Vector { blocklen, child, .. } | Kind::BlockIndexed { blocklen, child, .. } => {
                let b = blocklen * child.size;
                (skip / b, skip % b)
            }
            Kind::Indexed { .. } | Kind::Struct { .. } => {
                // The first block ending after `skip` (empty blocks end where they start).
                let i = self.block_ends.partition_point(|&e| e <= skip);
                (i, skip - i.checked_sub(1).map_or(0, |p| self.block_ends[p]))
            }
        }
    }

    /// Whether block `(_, bl, child)` is one contiguous run in memory.
    pub fn block_contiguous(bl: usize, child: &DataLoop) -> bool {
        child.contiguous && (bl <= 1 || child.extent == child.size as i64)
    }

    /// Computes the cached properties from the blocks (natural MPI bounds, no padding).
    fn build(kind: Kind) -> Self {
        let mut n =
            DataLoop { kind, size: 0, lb: 0, extent: 0, true_lb: 0, true_ub: 0, contiguous: true, depth: 0, block_ends: Box::default() };
        if let Kind::Bytes(b) = n.kind {
            n.size = b;
            n.extent = b as i64;
            n.true_ub = b as i64;
            return n;
        }
        let (mut lb, mut ub, mut tlb, mut tub) = (i64::MAX, i64::MIN, i64::MAX, i64::MIN);
        let mut size = 0usize;
        let mut depth = 0;
        // End of the previous non-empty run, to decide contiguity.
        let mut run_end: Option<i64> = None;
        let mut contiguous = true;
        let varying = matches!(n.kind, Kind::Indexed { .. } | Kind::Struct { .. });
        let mut ends = Vec::with_capacity(if varying { n.nblocks() } else { 0 });
        for i in 0..n.nblocks() {
            let (d, bl, c) = n.block(i);
            depth = depth.max(c.depth + 1);
            if varying {
                ends.push(size + bl * c.size);
            }
            if bl == 0 {
                continue;
            }
            // Copies sit at d + j*ext, j in 0..bl; with a negative extent the last is lowest.
            let span = (bl as i64 - 1) * c.extent;
            let (lo, hi) = (d + span.min(0), d + span.max(0));
            lb = lb.min(lo + c.lb);
            ub = ub.max(hi + c.lb + c.extent);
            size += bl * c.size;
            if c.size == 0 {
                continue;
            }
            tlb = tlb.min(lo + c.true_lb);
            tub = tub.max(hi + c.true_ub);
            let start = d + c.true_lb;
            contiguous &= Self::block_contiguous(bl, c) && run_end.is_none_or(|e| e == start);
            run_end = Some(start + (bl * c.size) as i64);
        }
        if lb == i64::MAX {
            (lb, ub) = (0, 0);
        }
        if tlb == i64::MAX {
            (tlb, tub) = (0, 0);
        }
        n.size = size;
        n.lb = lb;
        n.extent = ub - lb;
        n.true_lb = tlb;
        n.true_ub = tub;
        n.contiguous = contiguous;
        n.depth = depth;
        n.block_ends = ends.into_boxed_slice();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_properties() {
        let v = DataLoop::vector(3, 2, 32, DataLoop::bytes(8));
        assert_eq!((v.size, v.lb, v.extent, v.true_lb, v.true_ub), (48, 0, 80, 0, 80));
        assert!(!v.contiguous);
        assert_eq!(v.depth, 1);
        let c = DataLoop::vector(3, 2, 16, DataLoop::bytes(8));
        assert!(c.contiguous);
    }

    #[test]
    fn resized_keeps_true_bounds() {
        let r = DataLoop::bytes(8).resized(-4, 16);
        assert_eq!((r.lb, r.extent, r.true_lb, r.true_ub, r.size), (-4, 16, 0, 8, 8));
        // Two resized copies are no longer adjacent.
        assert!(!DataLoop::contig(2, r).contiguous);
    }

    #[test]
    fn struct_bounds_and_order() {
        let s = DataLoop::structure(vec![1, 2], vec![16, 0], vec![DataLoop::bytes(4), DataLoop::bytes(4)]);
        assert_eq!((s.size, s.lb, s.extent), (12, 0, 20));
        // Typemap order (16 first) is not memory order: not contiguous.
        assert!(!s.contiguous);
    }
}
