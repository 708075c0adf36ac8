//! Transfer lists: runs between an array of a runtime's top and an array in a child's memory,
//! checked once when the list is made, then run as often as the application likes.

use super::array::{ArrayInfo, Desc, LOCAL};
use super::Error;

/// Which way a list moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From the top's array into the child's memory.
    Get,
    /// From the child's memory into the top's array.
    Put,
}

/// A checked transfer list. Runs are in bytes: (offset in the top array, offset in the local
/// memory, length); adjacent runs that continue each other on both sides are merged.
#[derive(Clone, Debug)]
pub struct XferList {
    pub dir: Dir,
    /// The top array's descriptor.
    pub desc: Desc,
    /// Element 0 of the local array.
    pub local: *mut u8,
    pub runs: Vec<(usize, usize, usize)>,
    /// Bytes moved by one run of the list.
    pub bytes: usize,
    /// The top side's runs as an indexed layout of the datatype engine (built on first use).
    pub layout: std::sync::OnceLock<std::sync::Arc<crate::datatype::compiled::CompiledType>>,
}

// SAFETY: `local` is the application's memory, which it keeps valid while transfers of the list
// run (the API's rule); the list itself only describes it.
unsafe impl Send for XferList {}
// SAFETY: as above.
unsafe impl Sync for XferList {}

impl XferList {
    /// Checks and builds a list: `top` is the registered array of the runtime's top (as looked up
    /// by descriptor), `local` a local array; runs `(dst_idx[i], src_idx[i], lengths[i])` in
    /// elements; `dir` says which of the two is the destination.
    pub fn new(
        dir: Dir,
        top: &ArrayInfo,
        local: &ArrayInfo,
        dst_idx: &[usize],
        src_idx: &[usize],
        lengths: &[usize],
    ) -> Result<XferList, Error> {
        if local.desc != LOCAL {
            return Err(Error::Desc(format!(
                "descriptor {}: one side of a transfer must be a local array (SLUICE_ARRAY_LOCAL)",
                local.desc
            )));
        }
        let Some(base) = local.data else {
            return Err(Error::Arg("the local array has no address".into()));
        };
        let e = top.shape.elem_size;
        if local.shape.elem_size != e {
            return Err(Error::Arg(format!("element sizes differ: {} bytes at the top, {} locally", e, local.shape.elem_size)));
        }
        let (top_n, local_n) = (top.shape.elements(), local.shape.elements());
        let (top_idx, local_idx) = match dir {
            Dir::Get => (src_idx, dst_idx),
            Dir::Put => (dst_idx, src_idx),
        };
        let mut runs: Vec<(usize, usize, usize)> = Vec::with_capacity(lengths.len());
        let mut bytes = 0usize;
        for (i, ((&t, &l), &n)) in top_idx.iter().zip(local_idx).zip(lengths).enumerate() {
            if n == 0 {
                continue;
            }
            let fits = |at: usize, len: usize| at.checked_add(n).is_some_and(|end| end <= len);
            if !fits(t, top_n) {
                return Err(Error::Bounds(format!(
                    "run {i}: elements {t} .. {t}+{n} of array {} reach past its {top_n} elements",
                    top.desc
                )));
            }
            if !fits(l, local_n) {
                return Err(Error::Bounds(format!(
                    "run {i}: elements {l} .. {l}+{n} of the local array reach past its {local_n} elements"
                )));
            }
            let (t, l, n) = (t * e, l * e, n * e);
            bytes += n;
            match runs.last_mut() {
                Some(r) if r.0 + r.2 == t && r.1 + r.2 == l => r.2 += n,
                _ => runs.push((t, l, n)),
            }
        }
        Ok(XferList { dir, desc: top.desc, local: base, runs, bytes, layout: Default::default() })
    }
}
