//! The indexed kernel's loop: an element's table of `(offset, len)` runs, element after element,
//! in stream order. It runs through an [`super::exec::Entries`] instance so that its block moves
//! are compiled for the instruction-set level like the other kernels' (inlined into the
//! portable `body`, 192-byte runs moved as 16-byte pieces on an AVX2 machine).

use super::copy::xfer;

/// Moves `count` elements `ext` apart, each the runs `runs` (offsets from the element's
/// origin), between `mem` and the packed `buf`; returns the end of the buffer bytes moved.
///
/// # Safety
/// Every run of the `count` elements valid for the access at `mem`, `buf` valid for the sum of
/// their lengths times `count`, the two not overlapping.
#[inline(always)]
pub(super) unsafe fn runs<const PACK: bool>(mem: *mut u8, count: usize, ext: i64, runs: &[(i64, usize)], buf: *mut u8) -> *mut u8 {
    let mut q = buf;
    let Some((&first, rest)) = runs.split_first() else { return q };
    for k in 0..count {
        let base = mem.wrapping_offset((k as i64 * ext) as isize);
        // Each run's entry is read before the previous run's stores: read after them, an entry
        // whose address shares its low 12 bits with a store's waited for that store (the CPU
        // guesses a dependence from those bits alone), and a table that happened to sit so
        // against the packed buffer made a 16-run pack 2.5x slower (AMD EPYC: 64 against 26 ns,
        // one build of the library to the next).
        let (mut o, mut l) = first;
        for &next in rest {
            // SAFETY: run `(o, l)` of element `k` and its place in the buffer (caller's contract).
            unsafe { xfer::<0, PACK>(base.wrapping_offset(o as isize), q, l) };
            q = q.wrapping_add(l);
            (o, l) = next;
        }
        // SAFETY: the last run, as above.
        unsafe { xfer::<0, PACK>(base.wrapping_offset(o as isize), q, l) };
        q = q.wrapping_add(l);
    }
    q
}
