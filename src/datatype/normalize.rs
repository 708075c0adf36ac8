//! Rewrite rules that shrink a dataloop without changing its typemap (the packed stream and the
//! memory it maps to) or its MPI bounds. Applied bottom-up; each rewritten node keeps the
//! original's lb/extent, which is what makes every rule safe for resized types.

use super::ir::{DataLoop, Kind};

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
        Kind::Indexed { blocklens, displs_bytes, child } => Kind::Indexed {
            blocklens: blocklens.clone(),
            displs_bytes: displs_bytes.clone(),
            child: Box::new(normalize(child)),
        },
        Kind::Struct { blocklens, displs, children } => Kind::Struct {
            blocklens: blocklens.clone(),
            displs: displs.clone(),
            children: children.iter().map(normalize).collect(),
        },
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
        // natural-extent contig multiplies the counts.
        Kind::Contig { count, child } => match child.kind {
            Kind::Contig { count: c2, child: g } if child.extent == c2 as i64 * g.extent && child.lb == 0 && g.lb == 0 => {
                DataLoop::contig(count * c2, *g)
            }
            _ => DataLoop::contig(count, *child),
        },
        // Rule: a one-block vector is a contig.
        Kind::Vector { count: 1, blocklen, child, .. } => simplify(DataLoop::contig(blocklen, *child)),
        // Rule: a vector of plain-run blocks moves the blocklen into the leaf.
        Kind::Vector { count, blocklen, stride_bytes, child } if blocklen > 1 && plain(&child) => {
            DataLoop::vector(count, 1, stride_bytes, DataLoop::bytes(blocklen * child.size))
        }
        Kind::Vector { count, blocklen, stride_bytes, child } => DataLoop::vector(count, blocklen, stride_bytes, *child),
        Kind::BlockIndexed { blocklen, displs_bytes, child } => {
            indexed_runs(vec![blocklen; displs_bytes.len()], displs_bytes, *child)
        }
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
        let v = DataLoop::vector(ds.len(), b, stride, child);
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
    DataLoop::structure(bl, ds, cs)
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
        let s = DataLoop::structure(vec![1, 2, 1], vec![0, 4, 40], vec![b(4), b(8), b(2)]);
        let n = normalize(&s);
        assert_eq!(n.kind, Kind::Struct { blocklens: vec![1, 1], displs: vec![0, 40], children: vec![b(20), b(2)] });
        assert_eq!((n.lb, n.extent), (s.lb, s.extent));
    }

    #[test]
    fn resized_bounds_survive() {
        let r = DataLoop::vector(2, 1, 16, b(8)).resized(-8, 64);
        let n = normalize(&r);
        assert_eq!((n.lb, n.extent, n.size), (-8, 64, 16));
    }
}
