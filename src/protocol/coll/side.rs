//! One buffer argument of a converted collective: per peer, a block of `count` elements of a
//! datatype at a displacement from the buffer, turned into what the MPI sees: a base address
//! and per-peer byte counts and displacements.
//!
//! When every block is one contiguous run of bytes the side stays in the application's buffer
//! (displacements become bytes, honouring each type's true lower bound): zero copy. Otherwise
//! the blocks are laid out back to back in one staging buffer, in peer order; non-contiguous
//! blocks are packed/unpacked by the engine, contiguous ones copied.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::datatype::compiled::CompiledType;
use crate::ffi::{consts, errclass, mpi};
use crate::protocol::datatype::lookup;
use crate::protocol::layout::Layout;
use crate::transfer::staging::{self, Staging};

/// What one datatype's elements look like in memory.
#[derive(Clone)]
struct TypeInfo {
    datatype: mpi::MPI_Datatype,
    size: usize,
    extent: i64,
    true_lb: i64,
    /// One element's packed bytes are memory `[true_lb, true_lb + size)` in order.
    contiguous: bool,
    compiled: Option<Arc<CompiledType>>,
}

impl TypeInfo {
    /// `None` when the call must go to the MPI unchanged: `MPI_DATATYPE_NULL`, or a type that
    /// is neither compiled by sluice nor predefined (uncommitted: an error the MPI reports; or
    /// declined by the decoder).
    fn of(t: mpi::MPI_Datatype) -> Option<TypeInfo> {
        if t == consts::datatype_null() {
            return None;
        }
        if let Some(ct) = lookup(t) {
            let dl = ct.dataloop();
            let (size, extent, true_lb, contiguous) = (dl.size, dl.extent, dl.true_lb, dl.contiguous);
            return Some(TypeInfo { datatype: t, size, extent, true_lb, contiguous, compiled: Some(ct) });
        }
        let (mut ni, mut na, mut nt, mut combiner) = (0, 0, 0, -1);
        let (mut size, mut lb, mut extent, mut tlb, mut textent) = (0, 0, 0, 0, 0);
        // SAFETY: a non-null datatype handle of the application; each query writes its outputs.
        let ok = unsafe {
            mpi::PMPI_Type_get_envelope(t, &mut ni, &mut na, &mut nt, &mut combiner) == errclass::SUCCESS
                && combiner == mpi::SLUICE_COMBINER_NAMED as c_int
                && mpi::PMPI_Type_size(t, &mut size) == errclass::SUCCESS
                && mpi::PMPI_Type_get_extent(t, &mut lb, &mut extent) == errclass::SUCCESS
                && mpi::PMPI_Type_get_true_extent(t, &mut tlb, &mut textent) == errclass::SUCCESS
        };
        (ok && size >= 0).then_some(TypeInfo {
            datatype: t,
            size: size as usize,
            extent: extent as i64,
            true_lb: tlb as i64,
            // Predefined pair types (MPI_SHORT_INT, ...) have holes: true extent > size.
            contiguous: textent as i64 == size as i64,
            compiled: None,
        })
    }
}

/// How one peer's block travels.
#[derive(Debug)]
enum Piece {
    /// Nothing (count 0 or an empty type).
    Empty,
    /// `bytes` contiguous bytes at `at` from the buffer.
    Run { at: isize, bytes: usize },
    /// Through the engine: the elements start at `at` from the buffer.
    Engine { at: isize, layout: Layout },
}

impl Piece {
    /// `count` elements of `info` at `disp` bytes from the buffer; `None`: not expressible.
    fn of(info: &TypeInfo, count: c_int, disp: i64) -> Option<Piece> {
        if count < 0 {
            return None;
        }
        let bytes = info.size.checked_mul(count as usize)?;
        if bytes == 0 {
            return Some(Piece::Empty);
        }
        if bytes > c_int::MAX as usize {
            return None;
        }
        if info.contiguous && (count == 1 || info.extent == info.size as i64) {
            let at = disp.checked_add(info.true_lb)?;
            return Some(Piece::Run { at: isize::try_from(at).ok()?, bytes });
        }
        let layout = Layout::new(info.compiled.clone()?, count as usize, info.datatype)?;
        Some(Piece::Engine { at: isize::try_from(disp).ok()?, layout })
    }

    fn bytes(&self) -> usize {
        match self {
            Piece::Empty => 0,
            Piece::Run { bytes, .. } => *bytes,
            Piece::Engine { layout, .. } => layout.bytes(),
        }
    }
}

/// How blocks' displacements are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disp {
    /// In elements of the block's type (multiplied by its extent).
    Elements,
    /// In bytes (the w-variants).
    Bytes,
}

/// Which peers' slots an operation touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slots {
    Nothing,
    All,
    Only(usize),
    AllBut(usize),
}

impl Slots {
    fn has(self, peer: usize) -> bool {
        match self {
            Slots::Nothing => false,
            Slots::All => true,
            Slots::Only(p) => p == peer,
            Slots::AllBut(p) => p != peer,
        }
    }
}

/// One side of a converted collective. Its pointers are the application's buffer or sluice's
/// staging buffer; `counts`/`displs` are bytes, `types` all `MPI_BYTE` (for the w-variants).
#[derive(Debug)]
pub struct Side {
    base: *mut u8,
    counts: Vec<c_int>,
    displs: Vec<c_int>,
    /// `displs` as `MPI_Aint` (`MPI_Neighbor_alltoallw`).
    aint_displs: Vec<mpi::MPI_Aint>,
    types: Vec<mpi::MPI_Datatype>,
    /// Staging (None: in place in the application's buffer).
    staging: Option<Staging>,
    /// The application's buffer, and per peer its piece and offset in staging.
    user: *mut u8,
    pieces: Vec<(Piece, usize)>,
    engine: bool,
}

// SAFETY: the raw pointers are the application's buffer (which MPI requires to stay valid until
// the collective completes) and sluice's own staging; a pending collective is finished by the
// one thread that completes its request (MPI forbids concurrent completion of one request).
unsafe impl Send for Side {}

impl Side {
    /// Plans a side over `n` peers: block `i` is `block(i)` = (count, displacement, datatype),
    /// displacements as `disp` says, relative to `buf`. `uniform`: the MPI call takes one
    /// pointer and one count for all peers (peer `i` at `i * count` bytes), so an in-place side
    /// must have its runs back to back. `recv`: the MPI writes this side. `None`: the call
    /// cannot be converted exactly (see the module docs of `coll`).
    pub fn plan(
        buf: *const c_void,
        n: usize,
        disp: Disp,
        uniform: bool,
        recv: bool,
        block: impl Fn(usize) -> (c_int, i64, mpi::MPI_Datatype),
    ) -> Option<Side> {
        let mut info: Option<TypeInfo> = None;
        let mut pieces = Vec::with_capacity(n);
        for i in 0..n {
            let (count, d, t) = block(i);
            if count < 0 {
                return None;
            }
            if count == 0 {
                pieces.push(Piece::Empty);
                continue;
            }
            if info.as_ref().is_none_or(|x| x.datatype != t) {
                info = Some(TypeInfo::of(t)?);
            }
            let ti = info.as_ref()?;
            let d = match disp {
                Disp::Elements => d.checked_mul(ti.extent)?,
                Disp::Bytes => d,
            };
            let p = Piece::of(ti, count, d)?;
            if !matches!(p, Piece::Empty) && buf.is_null() {
                return None; // MPI_BOTTOM with absolute addresses: the MPI's own business
            }
            pieces.push(p);
        }
        let engine = pieces.iter().any(|p| matches!(p, Piece::Engine { .. }));
        let counts: Vec<c_int> = pieces.iter().map(|p| p.bytes() as c_int).collect();
        let user = buf as *mut u8;
        if !engine {
            if let Some(displs) = in_place_displs(&pieces, uniform) {
                let aint_displs = displs.iter().map(|&d| d as mpi::MPI_Aint).collect();
                let types = vec![consts::byte(); n];
                return Some(Side { base: user, counts, displs, aint_displs, types, staging: None, user, pieces: Vec::new(), engine });
            }
        }
        let mut displs = Vec::with_capacity(n);
        let mut total = 0usize;
        for c in &counts {
            displs.push(total as c_int);
            total += *c as usize;
            if total > c_int::MAX as usize {
                return None;
            }
        }
        let mut staging = (total > 0).then(|| if recv { staging::take_for_receive(total) } else { staging::take(total) });
        let base = staging.as_mut().map_or(user, |s| s.as_mut_ptr());
        let pieces = pieces.into_iter().zip(displs.iter().map(|&d| d as usize)).collect();
        let aint_displs = displs.iter().map(|&d| d as mpi::MPI_Aint).collect();
        let types = vec![consts::byte(); n];
        Some(Side { base, counts, displs, aint_displs, types, staging, user, pieces, engine })
    }

    /// Whether some block goes through the engine.
    pub fn uses_engine(&self) -> bool {
        self.engine
    }

    /// The buffer argument of a uniform side (peer 0's bytes).
    pub fn ptr(&self) -> *mut c_void {
        let d = self.displs.first().copied().unwrap_or(0) as isize;
        self.base.wrapping_offset(d).cast()
    }

    /// The per-peer byte count of a uniform side.
    pub fn count(&self) -> c_int {
        self.counts.first().copied().unwrap_or(0)
    }

    /// The base address for per-peer displacements (v- and w-variants).
    pub fn base(&self) -> *mut c_void {
        self.base.cast()
    }

    pub fn counts(&self) -> *const c_int {
        self.counts.as_ptr()
    }

    pub fn displs(&self) -> *const c_int {
        self.displs.as_ptr()
    }

    /// `MPI_BYTE` for every peer (w-variants).
    pub fn types(&self) -> *const mpi::MPI_Datatype {
        self.types.as_ptr()
    }

    /// The byte displacements as `MPI_Aint` (`MPI_Neighbor_alltoallw`).
    pub fn aint_displs(&self) -> *const mpi::MPI_Aint {
        self.aint_displs.as_ptr()
    }

    /// Leaves the blocks of `peers` alone (neighbors that are `MPI_PROC_NULL`: the MPI moves
    /// nothing for them, so their staged bytes are neither packed nor unpacked).
    pub fn drop_peers(&mut self, peers: &[usize]) {
        for &p in peers {
            if let Some((piece, _)) = self.pieces.get_mut(p) {
                *piece = Piece::Empty;
            }
        }
    }

    /// Copies/packs the application's blocks of `slots` into staging.
    ///
    /// # Safety
    /// The application's buffer is readable for those blocks' typemaps.
    pub unsafe fn pack(&mut self, slots: Slots) {
        let Some(st) = self.staging.as_mut() else { return };
        let out = st.bytes_mut();
        for (peer, (piece, off)) in self.pieces.iter().enumerate() {
            if !slots.has(peer) {
                continue;
            }
            let dst = &mut out[*off..*off + piece.bytes()];
            // SAFETY: the caller guarantees the blocks are readable; `dst` is sluice's memory.
            unsafe {
                match piece {
                    Piece::Empty => {}
                    Piece::Run { at, bytes } => {
                        std::ptr::copy_nonoverlapping(self.user.wrapping_offset(*at), dst.as_mut_ptr(), *bytes)
                    }
                    Piece::Engine { at, layout } => layout.pack_into(self.user.wrapping_offset(*at).cast(), dst),
                }
            }
        }
    }

    /// Copies/unpacks the staged bytes of `slots` into the application's blocks.
    ///
    /// # Safety
    /// The application's buffer is writable for those blocks' typemaps.
    pub unsafe fn unpack(&mut self, slots: Slots) {
        let Some(st) = self.staging.as_ref() else { return };
        let input = st.bytes();
        for (peer, (piece, off)) in self.pieces.iter().enumerate() {
            if !slots.has(peer) {
                continue;
            }
            let src = &input[*off..*off + piece.bytes()];
            // SAFETY: the caller guarantees the blocks are writable; `src` is sluice's memory.
            unsafe {
                match piece {
                    Piece::Empty => {}
                    Piece::Run { at, bytes } => {
                        std::ptr::copy_nonoverlapping(src.as_ptr(), self.user.wrapping_offset(*at), *bytes)
                    }
                    Piece::Engine { at, layout } => layout.unpack_from(src, self.user.wrapping_offset(*at).cast()),
                }
            }
        }
    }
}

/// Byte displacements of contiguous pieces used in place, if they fit the MPI's arguments (and,
/// for a uniform side, lie back to back from peer 0's).
fn in_place_displs(pieces: &[Piece], uniform: bool) -> Option<Vec<c_int>> {
    let mut displs = Vec::with_capacity(pieces.len());
    for (i, p) in pieces.iter().enumerate() {
        let d = match p {
            Piece::Empty => 0,
            Piece::Run { at, bytes } => {
                if uniform {
                    let first = match &pieces[0] {
                        Piece::Run { at, .. } => *at,
                        _ => return None,
                    };
                    if *at != first + (i * bytes) as isize {
                        return None;
                    }
                }
                c_int::try_from(*at).ok()?
            }
            Piece::Engine { .. } => return None,
        };
        displs.push(d);
    }
    Some(displs)
}
