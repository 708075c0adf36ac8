//! A committed datatype compiled for packing: the normalized dataloop plus the kernel chosen for
//! it. This is what the protocol layer caches per MPI datatype handle.
//!
//! The kernel ([`kernel::compile`]) is a specialized loop for contiguous, strided (nested
//! vectors), block-indexed, small-runs and indexed shapes, or the general interpreter otherwise.

use super::choice::EngineChoice;
use super::grain::Grain;
use super::interp;
use super::ir::DataLoop;
use super::kernel::{self, BlockCopy, Isa, Kernel, Prefetch, Stores, Tuning};
use super::normalize::normalize;

/// Whether `dl` has a struct node anywhere.
fn has_struct(dl: &DataLoop) -> bool {
    use super::ir::Kind;
    match &dl.kind {
        Kind::Bytes(_) => false,
        Kind::Struct { .. } => true,
        Kind::Contig { child, .. } | Kind::Vector { child, .. } | Kind::BlockIndexed { child, .. } | Kind::Indexed { child, .. } => {
            has_struct(child)
        }
    }
}

/// Source of [`CompiledType::id`].
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A datatype ready to pack and unpack whole elements or any byte range of its stream.
#[derive(Debug)]
pub struct CompiledType {
    dl: DataLoop,
    kernel: Kernel,
    /// The instruction-set level the kernel runs at on this CPU, detected once per type.
    isa: Isa,
    /// Unpack stores when set (benchmarks); else chosen per operation by its size.
    stores: Option<Stores>,
    /// The CPU family's tactics (prefetch policy, block copy), detected once per process.
    tuning: Tuning,
    /// The typemap came through a struct node (a struct constructor, or a predefined pair type
    /// such as `MPI_DOUBLE_INT`), so its elements may mix basic types; normalization may have
    /// merged the struct away, so it is noted before.
    from_struct: bool,
    /// Where the predefined elements end in the stream, taken before normalization merges them
    /// (MPICH's engine never unpacks part of one: [`CompiledType::whole_prefix`]).
    grain: Grain,
    id: u64,
    /// Whether sluice's kernel or the MPI's engine serves this type's whole-element operations,
    /// learned per direction on this machine ([`EngineChoice`]).
    choice: EngineChoice,
}

impl CompiledType {
    /// Normalizes `dl` (a typemap as decoded: its leaves are predefined elements) and picks its
    /// kernel.
    pub fn new(dl: &DataLoop) -> Self {
        let from_struct = has_struct(dl);
        let grain = Grain::of(dl);
        let dl = normalize(dl);
        let kernel = kernel::compile(&dl);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CompiledType {
            dl,
            kernel,
            isa: Isa::host(),
            stores: None,
            tuning: Tuning::host(),
            from_struct,
            grain,
            id,
            choice: EngineChoice::new(),
        }
    }

    /// Which engine serves this type's operations, per direction.
    pub fn choice(&self) -> &EngineChoice {
        &self.choice
    }

    /// Whether the type was built through a struct node (see the field): its elements may mix
    /// basic types.
    pub fn from_struct(&self) -> bool {
        self.from_struct
    }

    /// The longest prefix of at most `n` bytes of a stream of this type's elements that ends
    /// between two predefined elements ([`Grain::whole_prefix`]).
    pub fn whole_prefix(&self, n: usize) -> usize {
        self.grain.whole_prefix(n)
    }

    /// The same type with its element boundaries `grain` (`Grain::Unknown` for a typemap read
    /// back from the MPI, whose leaves are merged runs).
    pub fn with_grain(mut self, grain: Grain) -> Self {
        self.grain = grain;
        self
    }

    /// A process-unique id, never reused: the key of this type's checkpoint tables
    /// ([`super::checkpoint::CheckpointCache`]), which outlive no type they could be confused with.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The same type run at instruction-set level `isa` instead of the best one (benchmarks
    /// compare levels with it). Panics when this CPU does not run `isa`.
    pub fn with_isa(mut self, isa: Isa) -> Self {
        assert!(Isa::available().contains(&isa), "this CPU does not run {isa:?}");
        self.isa = isa;
        self
    }

    /// The same type prefetching as `prefetch` says instead of this CPU's policy (benchmarks
    /// compare policies with it). Panics when this CPU does not run `prefetch`.
    pub fn with_prefetch(mut self, prefetch: Prefetch) -> Self {
        assert!(Prefetch::available().contains(&prefetch), "this CPU does not run {prefetch:?}");
        self.tuning.prefetch = prefetch;
        self
    }

    /// The same type copying large blocks as `block_copy` says instead of this CPU's choice
    /// (benchmarks compare them with it).
    pub fn with_block_copy(mut self, block_copy: BlockCopy) -> Self {
        self.tuning.block_copy = block_copy;
        self
    }

    /// The CPU-family tactics the kernel runs with.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// The same type unpacking with `stores` whatever the size (benchmarks compare them).
    pub fn with_stores(mut self, stores: Stores) -> Self {
        self.stores = Some(stores);
        self
    }

    /// The stores an unpack of `count` elements (or of any range of them) uses: streaming
    /// when the whole operation writes enough that its destination would not stay cached
    /// ([`Stores::for_unpack`]).
    pub fn unpack_stores(&self, count: usize) -> Stores {
        self.stores.unwrap_or_else(|| Stores::for_unpack(self.dl.size.saturating_mul(count)))
    }

    /// The kernel chosen for this type.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The instruction-set level the kernel runs at.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The normalized dataloop.
    pub fn dataloop(&self) -> &DataLoop {
        &self.dl
    }

    /// Packed bytes of one element.
    pub fn size(&self) -> usize {
        self.dl.size
    }

    /// Where `count` elements lie as one contiguous run of `count * size` bytes, as an offset
    /// from the buffer address: a contiguous kernel whose elements follow each other (extent
    /// equal to size, or one element).
    #[inline]
    pub fn contiguous_at(&self, count: usize) -> Option<i64> {
        match &self.kernel {
            Kernel::Strided(s) if s.levels().is_empty() && (count <= 1 || self.dl.extent == self.dl.size as i64) => Some(s.off),
            _ => None,
        }
    }

    /// Packs `count` whole elements at `src` into `out[..count * size]`.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `src` must be
    /// readable and must not overlap `out`.
    pub unsafe fn pack(&self, src: *const u8, count: usize, out: &mut [u8]) {
        let n = self.dl.size * count;
        assert!(out.len() >= n, "output too short");
        if let Some(at) = self.contiguous_at(count) {
            // One run: one `memcpy`, without the kernel's dispatch (30 ns of a 4.5 KiB pack,
            // 0.6x of both MPIs' engines in the shape sweep).
            // SAFETY: forwarded contract: the `n` bytes at `src + at` are the typemap.
            unsafe { std::ptr::copy_nonoverlapping(src.wrapping_offset(at as isize), out.as_mut_ptr(), n) };
            return;
        }
        if let Kernel::Interp = self.kernel {
            // SAFETY: forwarded contract.
            return unsafe { interp::pack(&self.dl, count, src, 0, n, out) };
        }
        // SAFETY: forwarded contract; `out` holds the `n` stream bytes (checked above); `isa` is
        // this CPU's (detected in `new`). The kernel only reads through `src` when packing.
        unsafe { self.kernel.run::<true>(self.isa, Stores::Cached, self.tuning, &self.dl, src.cast_mut(), count, out.as_mut_ptr()) }
    }

    /// Unpacks `input[..count * size]` into `count` elements at `dst`.
    ///
    /// # Safety
    /// Every byte the typemap of the `count` elements addresses relative to `dst` must be
    /// writable and must not overlap `input`.
    pub unsafe fn unpack(&self, input: &[u8], count: usize, dst: *mut u8) {
        let n = self.dl.size * count;
        assert!(input.len() >= n, "input too short");
        if let (Some(at), Stores::Cached) = (self.contiguous_at(count), self.unpack_stores(count)) {
            // As in `pack` (large unpacks keep the kernel's streaming stores).
            // SAFETY: forwarded contract: the `n` bytes at `dst + at` are the typemap.
            unsafe { std::ptr::copy_nonoverlapping(input.as_ptr(), dst.wrapping_offset(at as isize), n) };
            return;
        }
        if let Kernel::Interp = self.kernel {
            // SAFETY: forwarded contract.
            return unsafe { interp::unpack(&self.dl, count, dst, 0, n, input) };
        }
        // SAFETY: forwarded contract; `input` holds the `n` stream bytes (checked above); `isa` is
        // this CPU's (detected in `new`). The kernel only reads through the buffer pointer
        // when unpacking.
        unsafe {
            self.kernel.run::<false>(self.isa, self.unpack_stores(count), self.tuning, &self.dl, dst, count, input.as_ptr().cast_mut())
        }
    }

    /// Packs stream bytes `[first, last)` of `count` elements at `src` into `out[..last - first]`
    /// (a range kernel, [`Kernel::run_range`]; the interpreter for interpreter types).
    ///
    /// # Safety
    /// As [`CompiledType::pack`] for the bytes of the range.
    pub unsafe fn pack_range(&self, src: *const u8, count: usize, first: usize, last: usize, out: &mut [u8]) {
        assert!(first <= last && last <= self.dl.size * count, "range [{first}, {last}) outside the stream");
        assert!(out.len() >= last - first, "output too short");
        // SAFETY: forwarded contract; `out` holds the range (checked above); `isa` is this
        // CPU's. The kernel only reads through `src` when packing.
        unsafe {
            self.kernel.run_range::<true>(
                self.isa,
                Stores::Cached,
                self.tuning,
                &self.dl,
                src.cast_mut(),
                count,
                first,
                last,
                out.as_mut_ptr(),
            )
        }
    }

    /// Unpacks `input[..last - first]`, stream bytes `[first, last)` of `count` elements, into
    /// the elements at `dst`.
    ///
    /// # Safety
    /// As [`CompiledType::unpack`] for the bytes of the range.
    pub unsafe fn unpack_range(&self, input: &[u8], count: usize, first: usize, last: usize, dst: *mut u8) {
        assert!(first <= last && last <= self.dl.size * count, "range [{first}, {last}) outside the stream");
        assert!(input.len() >= last - first, "input too short");
        // SAFETY: forwarded contract; the kernel only reads through the buffer pointer when
        // unpacking.
        unsafe {
            self.kernel.run_range::<false>(
                self.isa,
                self.unpack_stores(count),
                self.tuning,
                &self.dl,
                dst,
                count,
                first,
                last,
                input.as_ptr().cast_mut(),
            )
        }
    }
}
