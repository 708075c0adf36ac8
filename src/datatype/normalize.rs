//! Rewrite rules that shrink a dataloop without changing its typemap (the packed stream and the
//! memory it maps to) or its MPI bounds. Applied bottom-up; each rewritten node keeps the
//! original's lb/extent, which is what makes every rule safe for resized types.
//!
//! The rules: a contiguous node becomes one run; count-1 and one-block nodes become their
//! child; nested contigs multiply; a vector of plain runs folds the blocklen into the leaf;
//! nested vectors whose strides tile become one vector (the inner stride is hoisted); indexed
//! and struct levels drop empty blocks and merge blocks that touch in memory, equal blocks
//! become block-indexed, equally spaced ones a vector; a struct of one repeated type becomes
//! indexed, and a small struct (at most [`FLAT_RUNS`] runs) is flattened into its runs.

use super::interp;
use super::ir::{DataLoop, Kind};

/// Most memory runs a struct may have to be flattened into an indexed list of runs.
pub const FLAT_RUNS: usize = 16;

/// Normalizes `dl` bottom-up.
pub fn normalize(dl: &DataLoop) -> DataLoop {
    let kind = match &dl.kind {
        Kind::Bytes(n) => Kind::Bytes(*n),
        Kind::Contig { count, child } => Kind::Contig { count: *count, child: Box::new(normalize(child)) },
        Kind::Vector { count, blocklen, stride_bytes, child } => {
            Kind::Vector { count: *count, blocklen: *blocklen, stride_bytes: *stride_bytes, child: Box::new(normalize(child)) }
        }
        Kind::BlockIndexed { blocklen, displs_bytes, child } => {
            Kind::BlockIndexed { blocklen: *blocklen, displs_bytes: displs_bytes.clone(), child: Box::new(normalize(child)) }
        }
        Kind::Indexed { blocklens, displs_bytes, child } => {
            Kind::Indexed { blocklens: blocklens.clone(), displs_bytes: displs_bytes.clone(), child: Box::new(normalize(child)) }
        }
        Kind::Struct { blocklens, displs, children } => {
            Kind::Struct { blocklens: blocklens.clone(), displs: displs.clone(), children: children.iter().map(normalize).collect() }
        }
    };
    let node = rebuild(kind);
    simplify(node).resized(dl.lb, dl.extent)
}

fn rebuild(kind: Kind) -> DataLoop {
    match kind {
        Kind::Bytes(n) => DataLoop::bytes(n),
        Kind::Contig { count, child } => DataLoop::contig(count, *child),
        Kind::Vector { count, blocklen, stride_bytes, child } => DataLoop::vector(count, blocklen, stride_bytes, *child),
        Kind::BlockIndexed { blocklen, displs_bytes, child } => DataLoop::block_indexed(blocklen, displs_bytes, *child),
        Kind::Indexed { blocklens, displs_bytes, child } => DataLoop::indexed(blocklens, displs_bytes, *child),
        Kind::Struct { blocklens, displs, children } => DataLoop::structure(blocklens, displs, children),
    }
}

/// Whether `c` is a plain run: a leaf whose bounds are its bytes (copies of it tile memory).
fn plain(c: &DataLoop) -> bool {
    matches!(c.kind, Kind::Bytes(_)) && c.lb == 0 && c.extent == c.size as i64
}

/// A fully contiguous node as a single run at its true lb.
fn as_run(dl: &DataLoop) -> DataLoop {
    let leaf = DataLoop::bytes(dl.size);
    if dl.true_lb == 0 {
        leaf
    } else {
        DataLoop::block_indexed(1, vec![dl.true_lb], leaf)
    }
}

/// One level of rules; children are already normalized.
fn simplify(dl: DataLoop) -> DataLoop {
    if matches!(dl.kind, Kind::Bytes(_)) {
        return dl;
    }
    // Rule: a fully contiguous type is one run.
    if dl.contiguous {
        return as_run(&dl);
    }
    match dl.kind {
        // Rule: count 1 is the child itself (its own bounds are irrelevant once placed).
        Kind::Contig { count: 1, child } => *child,
        // Rule: contig of a plain run is a bigger run (caught by contiguity above); contig of a
        // natural-extent contig multiplies the counts; contig of a vector whose extent is a
        // whole number of its strides is one longer vector.
        Kind::Contig { count, child } => match child.kind {
            Kind::Contig { count: c2, child: g } if child.extent == c2 as i64 * g.extent && child.lb == 0 && g.lb == 0 => {
                DataLoop::contig(count * c2, *g)
            }
            Kind::Vector { count: m, blocklen, stride_bytes, child: g } if child.extent == m as i64 * stride_bytes => {
                simplify(DataLoop::vector(count * m, blocklen, stride_bytes, *g))
            }
            _ => DataLoop::contig(count, *child),
        },
        // Rule: a one-block vector is a contig.
        Kind::Vector { count: 1, blocklen, child, .. } => simplify(DataLoop::contig(blocklen, *child)),
        // Rule: a vector of plain-run blocks moves the blocklen into the leaf.
        Kind::Vector { count, blocklen, stride_bytes, child } if blocklen > 1 && plain(&child) => {
            DataLoop::vector(count, 1, stride_bytes, DataLoop::bytes(blocklen * child.size))
        }
        // Rule: a vector of one-copy blocks of a vector whose stride tiles the outer stride
        // (S = m * T) is one vector of stride T.
        Kind::Vector { count, blocklen: 1, stride_bytes, child } if matches!(child.kind, Kind::Vector { count: m, stride_bytes: t, .. } if stride_bytes == m as i64 * t) =>
        {
            let Kind::Vector { count: m, blocklen, stride_bytes: t, child: g } = child.kind else { unreachable!() };
            simplify(DataLoop::vector(count * m, blocklen, t, *g))
        }
        Kind::Vector { count, blocklen, stride_bytes, child } => DataLoop::vector(count, blocklen, stride_bytes, *child),
        Kind::BlockIndexed { blocklen, displs_bytes, child } => indexed_runs(vec![blocklen; displs_bytes.len()], displs_bytes, *child),
        Kind::Indexed { blocklens, displs_bytes, child } => indexed_runs(blocklens, displs_bytes, *child),
        Kind::Struct { blocklens, displs, children } => structure(blocklens, displs, children),
        Kind::Bytes(_) => unreachable!(),
    }
}

/// Indexed rules: drop empty blocks; with a plain-run child merge blocks that touch in memory
/// and move block lengths into the leaf; equal lengths become block-indexed; equally spaced
/// blocks become a vector.
fn indexed_runs(blocklens: Vec<usize>, displs: Vec<i64>, child: DataLoop) -> DataLoop {
    let mut bl: Vec<usize> = Vec::new();
    let mut ds: Vec<i64> = Vec::new();
    let s = child.size;
    for (b, d) in blocklens.into_iter().zip(displs) {
        if b == 0 {
            continue;
        }
        if plain(&child) {
            if let (Some(lb), Some(ld)) = (bl.last_mut(), ds.last()) {
                if *ld + (*lb * s) as i64 == d {
                    *lb += b;
                    continue;
                }
            }
        }
        bl.push(b);
        ds.push(d);
    }
    if bl.is_empty() {
        return DataLoop::contig(0, child);
    }
    let equal = bl.iter().all(|&b| b == bl[0]);
    if !equal {
        return DataLoop::indexed(bl, ds, child);
    }
    let (b, child) = if plain(&child) { (1, DataLoop::bytes(bl[0] * s)) } else { (bl[0], child) };
    if ds.len() == 1 {
        return DataLoop::block_indexed(b, ds, child);
    }
    let stride = ds[1] - ds[0];
    if ds.windows(2).all(|w| w[1] - w[0] == stride) {
        let v = simplify(DataLoop::vector(ds.len(), b, stride, child));
        return if ds[0] == 0 { v } else { DataLoop::block_indexed(1, vec![ds[0]], v) };
    }
    DataLoop::block_indexed(b, ds, child)
}

/// Struct rules: drop empty members; merge adjacent members that are plain runs touching in
/// memory; a struct whose members all have the same type becomes indexed.
fn structure(blocklens: Vec<usize>, displs: Vec<i64>, children: Vec<DataLoop>) -> DataLoop {
    let mut bl: Vec<usize> = Vec::new();
    let mut ds: Vec<i64> = Vec::new();
    let mut cs: Vec<DataLoop> = Vec::new();
    for ((b, d), c) in blocklens.into_iter().zip(displs).zip(children) {
        if b == 0 || c.size == 0 {
            continue;
        }
        if plain(&c) {
            if let (Some(lb), Some(ld), Some(lc)) = (bl.last_mut(), ds.last(), cs.last_mut()) {
                if plain(lc) && *ld + (*lb * lc.size) as i64 == d {
                    *lc = DataLoop::bytes(*lb * lc.size + b * c.size);
                    *lb = 1;
                    continue;
                }
            }
        }
        bl.push(b);
        ds.push(d);
        cs.push(c);
    }
    if cs.is_empty() {
        return DataLoop::structure(vec![], vec![], vec![]);
    }
    if cs.iter().all(|c| *c == cs[0]) {
        let c = cs.swap_remove(0);
        return indexed_runs(bl, ds, c);
    }
    let s = DataLoop::structure(bl, ds, cs);
    flatten(&s).unwrap_or(s)
}

/// Rule: a small struct (at most [`FLAT_RUNS`] memory runs per element) is the list of its
/// runs, in stream order, as indexed bytes; the indexed rules then merge and regularize them.
fn flatten(s: &DataLoop) -> Option<DataLoop> {
    let mut runs: Vec<(i64, usize)> = Vec::new();
    let mut more = false;
    interp::for_each_run(s, 1, 0, s.size, |o, l| {
        let full = runs.len() == FLAT_RUNS;
        match runs.last_mut() {
            Some((lo, ll)) if *lo + *ll as i64 == o => *ll += l,
            _ if full => more = true,
            _ => runs.push((o, l)),
        }
    });
    if more {
        return None;
    }
    let (offs, lens): (Vec<i64>, Vec<usize>) = runs.into_iter().unzip();
    Some(indexed_runs(lens, offs, DataLoop::bytes(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(n: usize) -> DataLoop {
        DataLoop::bytes(n)
    }

    #[test]
    fn contiguous_type_becomes_one_run() {
        let n = normalize(&DataLoop::contig(4, DataLoop::contig(3, b(8))));
        assert_eq!(n.kind, Kind::Bytes(96));
    }

    #[test]
    fn vector_with_stride_equal_block_is_contig() {
        let n = normalize(&DataLoop::vector(5, 2, 16, b(8)));
        assert_eq!(n.kind, Kind::Bytes(80));
    }

    #[test]
    fn vector_blocks_fold_into_leaf() {
        let n = normalize(&DataLoop::vector(5, 4, 64, b(8)));
        assert_eq!(n.kind, Kind::Vector { count: 5, blocklen: 1, stride_bytes: 64, child: Box::new(b(32)) });
        assert_eq!((n.lb, n.extent, n.size), (0, 4 * 64 + 32, 160));
    }

    #[test]
    fn count_one_simplifies() {
        let v = DataLoop::vector(3, 1, 32, b(8));
        assert_eq!(normalize(&DataLoop::contig(1, v.clone())).kind, v.kind);
        let n = normalize(&DataLoop::vector(1, 3, 999, DataLoop::vector(2, 1, 16, b(4))));
        assert!(matches!(n.kind, Kind::Contig { count: 3, .. }));
    }

    #[test]
    fn indexed_merges_touching_blocks_and_finds_vector() {
        let n = normalize(&DataLoop::indexed(vec![1, 1, 2, 0], vec![0, 8, 64, 200], b(8)));
        assert_eq!(n.kind, Kind::Vector { count: 2, blocklen: 1, stride_bytes: 64, child: Box::new(b(16)) });
    }

    #[test]
    fn struct_merges_adjacent_runs() {
        // More than FLAT_RUNS runs: stays a struct, with the touching plain members merged.
        let many = DataLoop::vector(20, 1, 16, b(4));
        let s = DataLoop::structure(vec![1, 2, 1, 1], vec![0, 4, 40, 64], vec![b(4), b(8), b(2), many.clone()]);
        let n = normalize(&s);
        assert_eq!(
            n.kind,
            Kind::Struct { blocklens: vec![1, 1, 1], displs: vec![0, 40, 64], children: vec![b(20), b(2), normalize(&many)] }
        );
        assert_eq!((n.lb, n.extent), (s.lb, s.extent));
    }

    /// The runs `(memory offset, length)` of two elements of `dl`, in stream order.
    fn runs(dl: &DataLoop) -> Vec<(i64, usize)> {
        let mut v = vec![];
        interp::for_each_run(dl, 2, 0, 2 * dl.size, |o, l| v.push((o, l)));
        v
    }

    #[test]
    fn struct_of_one_repeated_type_becomes_indexed() {
        // Members of one type with more runs than FLAT_RUNS, so only this rule (not flattening)
        // removes the struct level: unequal blocks become indexed, in the struct's order.
        let v = DataLoop::vector(20, 1, 16, b(4));
        let s = DataLoop::structure(vec![1, 2, 0, 1], vec![0, 1000, 77, -4000], vec![v.clone(); 4]);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::Indexed { blocklens: vec![1, 2, 1], displs_bytes: vec![0, 1000, -4000], child: Box::new(v.clone()) });
        assert_eq!((n.lb, n.extent, n.size, runs(&n)), (s.lb, s.extent, s.size, runs(&s)));
        // Equal blocks: block-indexed; equal and equally spaced: a vector.
        let s = DataLoop::structure(vec![2, 2, 2], vec![0, 1000, 3000], vec![v.clone(); 3]);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::BlockIndexed { blocklen: 2, displs_bytes: vec![0, 1000, 3000], child: Box::new(v.clone()) });
        assert_eq!((n.lb, n.extent, n.size, runs(&n)), (s.lb, s.extent, s.size, runs(&s)));
        let s = DataLoop::structure(vec![2, 2, 2], vec![0, 1000, 2000], vec![v.clone(); 3]).resized(-8, 5000);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::Vector { count: 3, blocklen: 2, stride_bytes: 1000, child: Box::new(v.clone()) });
        assert_eq!((n.lb, n.extent, n.size, runs(&n)), (s.lb, s.extent, s.size, runs(&s)));
        // Members equal only after normalization count as one type.
        let s = DataLoop::structure(vec![1, 1], vec![0, 2000], vec![DataLoop::contig(1, v.clone()), v.clone()]);
        assert_eq!(normalize(&s).kind, Kind::Vector { count: 2, blocklen: 1, stride_bytes: 2000, child: Box::new(v) });
    }

    #[test]
    fn small_struct_flattens_into_runs() {
        // Touching members merge, unequal runs become indexed bytes.
        let s = DataLoop::structure(vec![1, 2, 1], vec![0, 4, 40], vec![b(4), b(8), b(2)]);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::Indexed { blocklens: vec![20, 2], displs_bytes: vec![0, 40], child: Box::new(b(1)) });
        assert_eq!((n.lb, n.extent, n.size), (s.lb, s.extent, s.size));
        // Equal, equally spaced runs of different types (and a nested struct) become a vector.
        let inner = DataLoop::structure(vec![1, 1], vec![0, 16], vec![b(8), b(8)]);
        let s = DataLoop::structure(vec![1, 1], vec![0, 32], vec![inner, DataLoop::vector(2, 2, 16, b(4))]);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::Vector { count: 4, blocklen: 1, stride_bytes: 16, child: Box::new(b(8)) });
        assert_eq!((n.lb, n.extent, n.size), (s.lb, s.extent, s.size));
        // Stream order is kept: runs listed backwards stay backwards.
        let s = DataLoop::structure(vec![1, 1], vec![40, 0], vec![b(4), b(2)]);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::Indexed { blocklens: vec![4, 2], displs_bytes: vec![40, 0], child: Box::new(b(1)) });
    }

    #[test]
    fn nested_vectors_with_tiling_strides_merge() {
        // The outer stride is 4 inner strides: one vector of 12 blocks of stride 32.
        let v = DataLoop::vector(3, 1, 128, DataLoop::vector(4, 2, 32, b(4)).resized(0, 999));
        let n = normalize(&v);
        assert_eq!(n.kind, Kind::Vector { count: 12, blocklen: 1, stride_bytes: 32, child: Box::new(b(8)) });
        assert_eq!((n.lb, n.extent, n.size), (v.lb, v.extent, v.size));
        // Negative strides too.
        let v = DataLoop::vector(3, 1, -96, DataLoop::vector(4, 1, -24, b(8)));
        assert_eq!(normalize(&v).kind, Kind::Vector { count: 12, blocklen: 1, stride_bytes: -24, child: Box::new(b(8)) });
        // A contig of a vector resized to a whole number of strides.
        let c = DataLoop::contig(5, DataLoop::vector(2, 1, 16, b(4)).resized(0, 32));
        assert_eq!(normalize(&c).kind, Kind::Vector { count: 10, blocklen: 1, stride_bytes: 16, child: Box::new(b(4)) });
        // Strides that do not tile stay nested.
        let v = DataLoop::vector(3, 1, 100, DataLoop::vector(4, 1, 16, b(8)));
        assert!(matches!(normalize(&v).kind, Kind::Vector { count: 3, .. }));
    }

    #[test]
    fn nested_contigs_multiply() {
        let c = DataLoop::contig(3, DataLoop::contig(4, b(8).resized(0, 16)));
        let n = normalize(&c);
        assert!(matches!(&n.kind, Kind::Contig { count: 12, child } if child.extent == 16));
    }

    #[test]
    fn resized_bounds_survive() {
        let r = DataLoop::vector(2, 1, 16, b(8)).resized(-8, 64);
        let n = normalize(&r);
        assert_eq!((n.lb, n.extent, n.size), (-8, 64, 16));
    }
}
