//! A datatype's typemap in the form the GPU move kernel walks (`src/transfer/gpu/move.ll`,
//! written by `scripts/gen_gpu_kernels.py`): up to [`LEVELS`] nested strided levels around a
//! table of leaf runs. Pure Rust, no CUDA: the layer that launches the kernel
//! (`transfer::gpu::mover`) takes this shape, and [`DeviceShape::emulate`] runs the kernel's own
//! index arithmetic on the CPU so the tests can hold it against the interpreter.
//!
//! Why a shape of its own rather than the CPU kernels' forms: a GPU thread must find its run from
//! its row number alone (no cursor, no checkpoint), so the layout has to be a fixed product of
//! levels times a table; the nesting the normalizer left is kept as levels where it is regular
//! (contiguous and vector nodes) and flattened into the table where it is not (indexed and struct
//! nodes, levels past the fourth).

use super::ir::{DataLoop, Kind};

/// Strided levels the kernel decomposes a row into (the elements' own level included).
pub const LEVELS: usize = 4;

/// Rows of the kernel for `count` elements of a type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceShape {
    /// `(count, stride in bytes)` from the outermost level (the elements) to the innermost; unused
    /// outer levels are `(1, 0)`.
    pub levels: [(usize, i64); LEVELS],
    /// The leaf runs of one instance of the levels: `[offset, length, stream prefix]`, the offset
    /// as `i64` bits (the kernel's table layout).
    pub leaf: Vec<[u64; 3]>,
    /// Stream bytes of one instance (the sum of the leaf lengths).
    pub inst_bytes: usize,
    /// Instances times leaf runs: the kernel's row count.
    pub rows: usize,
    /// Longest leaf run in bytes.
    pub max_run: usize,
    /// Largest power of two (at most 16) dividing every offset, stride, length and prefix: the
    /// widest access every row allows, before the buffer addresses are considered.
    pub align: usize,
    /// A process-unique id, never reused: the key of the shape's copies in device memory.
    pub id: u64,
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// One level or the remaining subtree, as the builder walks down.
struct Builder {
    levels: Vec<(usize, i64)>,
    runs: Vec<(i64, usize)>,
    max_leaf: usize,
}

impl Builder {
    /// Adds a run, merged with the previous one when it continues it in memory.
    fn run(&mut self, off: i64, len: usize) -> Option<()> {
        if len == 0 {
            return Some(());
        }
        if let Some(last) = self.runs.last_mut() {
            if last.0.checked_add(last.1 as i64) == Some(off) {
                last.1 += len;
                return Some(());
            }
        }
        if self.runs.len() >= self.max_leaf {
            return None;
        }
        self.runs.push((off, len));
        Some(())
    }

    /// Every run of one element of `dl` placed at `base`, in stream order, into the table.
    fn flatten(&mut self, dl: &DataLoop, base: i64) -> Option<()> {
        if dl.size == 0 {
            return Some(());
        }
        if dl.contiguous {
            return self.run(base.checked_add(dl.true_lb)?, dl.size);
        }
        for i in 0..dl.nblocks() {
            let (d, bl, c) = dl.block(i);
            let at = base.checked_add(d)?;
            if DataLoop::block_contiguous(bl, c) {
                self.run(at.checked_add(c.true_lb)?, bl.checked_mul(c.size)?)?;
            } else {
                for j in 0..bl {
                    self.flatten(c, at.checked_add((j as i64).checked_mul(c.extent)?)?)?;
                }
            }
        }
        Some(())
    }

    /// `dl`'s element as levels while they are regular and room is left, then a table.
    fn walk(&mut self, dl: &DataLoop) -> Option<()> {
        if dl.contiguous {
            return self.run(dl.true_lb, dl.size);
        }
        let room = LEVELS - self.levels.len();
        match &dl.kind {
            Kind::Contig { count, child } if room >= 1 => {
                self.levels.push((*count, child.extent));
                self.walk(child)
            }
            Kind::Vector { count, blocklen, stride_bytes, child } if room >= 1 => {
                if DataLoop::block_contiguous(*blocklen, child) {
                    self.levels.push((*count, *stride_bytes));
                    self.run(child.true_lb, blocklen.checked_mul(child.size)?)
                } else if room >= 2 {
                    self.levels.push((*count, *stride_bytes));
                    self.levels.push((*blocklen, child.extent));
                    self.walk(child)
                } else {
                    self.flatten(dl, 0)
                }
            }
            _ => self.flatten(dl, 0),
        }
    }
}

fn pow2_align(x: u64) -> usize {
    if x == 0 {
        16
    } else {
        (1usize << x.trailing_zeros().min(4)).min(16)
    }
}

impl DeviceShape {
    /// The shape of `count` elements of the normalized `dl`; `None` when there is nothing to
    /// move, or the leaf table would pass `max_leaf` runs, or a size overflows.
    pub fn new(dl: &DataLoop, count: usize, max_leaf: usize) -> Option<DeviceShape> {
        if count == 0 || dl.size == 0 {
            return None;
        }
        let mut b = Builder { levels: vec![(count, dl.extent)], runs: Vec::new(), max_leaf: max_leaf.max(1) };
        b.walk(dl)?;
        let Builder { mut levels, mut runs, .. } = b;
        // Levels of one iteration say nothing; a level over one run that its stride continues
        // is a longer run.
        levels.retain(|&(n, _)| n != 1);
        while let (Some(&(n, s)), [(off, len)]) = (levels.last(), runs.as_slice()) {
            if s != *len as i64 {
                break;
            }
            runs = vec![(*off, len.checked_mul(n)?)];
            levels.pop();
        }
        if levels.iter().any(|&(n, _)| n == 0) || runs.is_empty() {
            return None;
        }
        let mut leaf = Vec::with_capacity(runs.len());
        let mut prefix = 0usize;
        let mut bits = 0u64;
        for &(off, len) in &runs {
            leaf.push([off as u64, len as u64, prefix as u64]);
            bits |= off.unsigned_abs() | len as u64 | prefix as u64;
            prefix = prefix.checked_add(len)?;
        }
        let inst_bytes = prefix;
        let mut padded = [(1usize, 0i64); LEVELS];
        padded[LEVELS - levels.len()..].copy_from_slice(&levels);
        let mut instances = 1usize;
        for &(n, s) in &levels {
            instances = instances.checked_mul(n)?;
            bits |= s.unsigned_abs();
        }
        if instances.checked_mul(inst_bytes)? != count.checked_mul(dl.size)? {
            return None;
        }
        bits |= inst_bytes as u64;
        let max_run = runs.iter().map(|r| r.1).max().unwrap_or(0);
        let rows = instances.checked_mul(runs.len())?;
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(DeviceShape { levels: padded, rows, leaf, inst_bytes, max_run, align: pow2_align(bits), id })
    }

    /// Stream bytes of all rows.
    pub fn bytes(&self) -> usize {
        self.rows / self.leaf.len() * self.inst_bytes
    }

    /// The access width for buffers at these addresses moving `limit` stream bytes: the largest
    /// power of two (at most 16) dividing the shape's alignment and each of them.
    pub fn width(&self, strided_addr: usize, packed_addr: usize, limit: usize) -> usize {
        let bits = strided_addr as u64 | packed_addr as u64 | limit as u64;
        self.align.min(pow2_align(bits))
    }

    /// log2 of the threads that move one row at access width `w`: enough for the longest run in
    /// one step, at most a warp.
    pub fn lanes_log2(&self, w: usize) -> u32 {
        let steps = self.max_run.div_ceil(w).clamp(1, 32);
        steps.next_power_of_two().trailing_zeros()
    }

    /// Runs the kernel's arithmetic on the CPU, row by row: moves stream bytes `[0, limit)`
    /// between `strided` (the buffer's address is `strided[origin]`) and `packed`, at access
    /// width `w` with `2^lanes_log2` lanes a row, as the GPU would (the tests' reference).
    // The kernel's own parameters, one to one.
    #[allow(clippy::too_many_arguments)]
    pub fn emulate(&self, strided: &mut [u8], origin: usize, packed: &mut [u8], limit: usize, w: usize, lanes_log2: u32, unpack: bool) {
        let nleaf = self.leaf.len() as u64;
        let [(_, sa), (nb, sb), (nc, sc), (nd, sd)] = self.levels;
        let lanes = 1u64 << lanes_log2;
        for r in 0..self.rows as u64 {
            let inst = r / nleaf;
            let j = (r - inst * nleaf) as usize;
            let (id, t1) = (inst % nd as u64, inst / nd as u64);
            let (ic, t2) = (t1 % nc as u64, t1 / nc as u64);
            let (ib, ia) = (t2 % nb as u64, t2 / nb as u64);
            let o = (ia as i64).wrapping_mul(sa) + (ib as i64) * sb + (ic as i64) * sc + (id as i64) * sd;
            let [lofs, len, pre] = self.leaf[j];
            let soff = o.wrapping_add(lofs as i64);
            let poff = inst * self.inst_bytes as u64 + pre;
            let avail = (limit as u64).saturating_sub(poff);
            let end = len.min(avail);
            for lane in 0..lanes {
                let mut k = lane * w as u64;
                while k < end {
                    let s = (origin as i64 + soff + k as i64) as usize;
                    let p = (poff + k) as usize;
                    if unpack {
                        strided[s..s + w].copy_from_slice(&packed[p..p + w]);
                    } else {
                        packed[p..p + w].copy_from_slice(&strided[s..s + w]);
                    }
                    k += lanes * w as u64;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::interp;
    use crate::datatype::normalize::normalize;
    use crate::datatype::testgen::{arb_dl, span};
    use proptest::prelude::*;

    fn b(n: usize) -> DataLoop {
        DataLoop::bytes(n)
    }

    /// The emulated kernel against the interpreter: pack, full unpack, and an unpack of a prefix
    /// of the stream, at every width the shape allows.
    fn check(dl: &DataLoop, count: usize) -> Result<(), TestCaseError> {
        let n = normalize(dl);
        let Some(shape) = DeviceShape::new(&n, count, 1 << 12) else {
            prop_assert!(count == 0 || n.size == 0 || n.nblocks() > 0);
            return Ok(());
        };
        let (origin, len) = span(&n, count);
        let total = n.size * count;
        prop_assert_eq!(shape.bytes(), total);
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut want = vec![0u8; total];
        // SAFETY: `span` covers the typemap of `count` elements around `origin`.
        unsafe { interp::pack(&n, count, src.as_ptr().add(origin), 0, total, &mut want) };
        let stream: Vec<u8> = (0..total).map(|i| (i * 13 + 1) as u8).collect();
        let cut = total / 2 / shape.align * shape.align;
        let mut w = 1;
        while w <= shape.align {
            for lanes_log2 in [0, shape.lanes_log2(w)] {
                let mut s = src.clone();
                let mut got = vec![0u8; total];
                shape.emulate(&mut s, origin, &mut got, total, w, lanes_log2, false);
                prop_assert_eq!(&got, &want, "pack, width {}, {:?}", w, shape);
                for limit in [total, cut] {
                    let mut a = vec![0xAAu8; len];
                    // SAFETY: as above, for writing.
                    unsafe { interp::unpack(&n, count, a.as_mut_ptr().add(origin), 0, limit, &stream) };
                    let mut g = vec![0xAAu8; len];
                    let mut st = stream.clone();
                    shape.emulate(&mut g, origin, &mut st, limit, w, lanes_log2, true);
                    prop_assert_eq!(&g, &a, "unpack of {} bytes, width {}, {:?}", limit, w, shape);
                }
            }
            w *= 2;
        }
        Ok(())
    }

    #[test]
    fn vector_of_doubles_is_one_level_of_runs() {
        // vec-8 of the ddt suite: 8 doubles every 16.
        let dl = normalize(&DataLoop::vector(1024, 8, 128, b(8)));
        let s = DeviceShape::new(&dl, 1, 64).unwrap();
        assert_eq!(s.levels[LEVELS - 1], (1024, 128));
        assert_eq!(s.leaf, vec![[0, 64, 0]]);
        assert_eq!((s.rows, s.inst_bytes, s.align, s.max_run), (1024, 64, 16, 64));
        assert_eq!(s.lanes_log2(16), 2);
        assert_eq!(s.width(0x1000, 0x2000, 65536), 16);
        assert_eq!(s.width(0x1008, 0x2000, 65536), 8);
    }

    #[test]
    fn contiguous_elements_fold_into_one_run() {
        let dl = normalize(&DataLoop::contig(4, b(8)));
        let s = DeviceShape::new(&dl, 100, 64).unwrap();
        assert_eq!(s.leaf, vec![[0, 3200, 0]]);
        assert_eq!(s.rows, 1);
    }

    #[test]
    fn tables_past_the_limit_are_refused() {
        let dl = normalize(&DataLoop::indexed(vec![1; 8], (0..8).map(|i| i * i * 16).collect(), b(4)));
        assert!(DeviceShape::new(&dl, 1, 4).is_none());
        assert_eq!(DeviceShape::new(&dl, 1, 8).unwrap().leaf.len(), 8);
        assert!(DeviceShape::new(&dl, 0, 8).is_none());
    }

    #[test]
    fn deep_types_keep_four_levels_and_flatten_the_rest() {
        // A 5-level nest: vectors of vectors with gaps at every level.
        let mut dl = b(4);
        for _ in 0..5 {
            let e = dl.extent;
            dl = DataLoop::vector(2, 1, 3 * e, dl);
        }
        let n = normalize(&dl);
        let s = DeviceShape::new(&n, 3, 64).unwrap();
        assert!(s.levels.iter().all(|&(c, _)| c >= 1));
        check(&dl, 3).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]
        #[test]
        fn emulated_kernel_matches_the_interpreter(dl in arb_dl(), count in 0usize..4) {
            check(&dl, count)?;
        }
    }
}
