//! The Memcpy channel: host memory to host memory, converting layouts with the datatype engine
//! (range kernels: any stream range of any compiled type, so a block may start mid-element).

use std::cell::RefCell;

use super::channel::{Channel, Step, View};
use crate::transfer::plan::ChannelKind;

/// Typed-to-typed conversions go through a scratch run this long: packed by the source's kernel
/// and unpacked by the destination's while it is still in the cache.
const SCRATCH: usize = 64 * 1024;

thread_local! {
    static SCRATCH_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

pub struct Memcpy;

impl Channel for Memcpy {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Memcpy
    }

    unsafe fn perform(&self, step: &Step) -> Result<(), String> {
        let Step::Convert { from, to, first, last } = step else {
            return Err(format!("memcpy channel cannot perform {step:?}"));
        };
        let (first, last) = (*first, *last);
        let n = last - first;
        match (from, to) {
            // SAFETY: the caller's contract: both runs hold the range's n bytes.
            (View::Packed { at: s }, View::Packed { at: d }) => unsafe { std::ptr::copy_nonoverlapping(*s, *d, n) },
            // SAFETY: as above; the typed view holds the elements of the range.
            (View::Typed { base, ty, count }, View::Packed { at }) => unsafe {
                ty.pack_range(*base, *count, first, last, std::slice::from_raw_parts_mut(*at, n))
            },
            // SAFETY: as above.
            (View::Packed { at }, View::Typed { base, ty, count }) => unsafe {
                ty.unpack_range(std::slice::from_raw_parts(*at, n), *count, first, last, *base)
            },
            (View::Typed { base: sb, ty: st, count: sc }, View::Typed { base: db, ty: dt, count: dc }) => {
                SCRATCH_BUF.with_borrow_mut(|buf| {
                    buf.resize(SCRATCH.min(n), 0);
                    let mut a = first;
                    while a < last {
                        let b = (a + SCRATCH).min(last);
                        let run = &mut buf[..b - a];
                        // SAFETY: as above, for the sub-range [a, b).
                        unsafe {
                            st.pack_range(*sb, *sc, a, b, run);
                            dt.unpack_range(run, *dc, a, b, *db);
                        }
                        a = b;
                    }
                })
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::compiled::CompiledType;
    use crate::datatype::DataLoop;
    use std::sync::Arc;

    #[test]
    fn converts_between_layouts_by_ranges() {
        // 6 elements of (2 bytes every 4) -> 6 elements of (1 byte every 3, twice).
        let a = Arc::new(CompiledType::new(&DataLoop::vector(2, 2, 4, DataLoop::bytes(1))));
        let b = Arc::new(CompiledType::new(&DataLoop::vector(4, 1, 3, DataLoop::bytes(1))));
        let src: Vec<u8> = (0..6 * 6).map(|i| i as u8).collect();
        let mut dst = vec![0xffu8; 6 * 10];
        let mut expect = dst.clone();
        let mut packed = vec![0u8; 24];
        // SAFETY: whole streams of both layouts over buffers that hold them.
        unsafe {
            a.pack(src.as_ptr(), 6, &mut packed);
            b.unpack(&packed, 6, expect.as_mut_ptr());
            for (f, l) in [(0, 5), (5, 13), (13, 24)] {
                let from = View::Typed { base: src.as_ptr().cast_mut(), ty: a.clone(), count: 6 };
                let to = View::Typed { base: dst.as_mut_ptr(), ty: b.clone(), count: 6 };
                Memcpy.perform(&Step::Convert { from, to, first: f, last: l }).unwrap();
            }
        }
        assert_eq!(dst, expect);
    }
}
