//! One buffer argument of a converted collective: per peer, a block of `count` elements of a
//! datatype at a displacement from the buffer, turned into what the MPI sees: a base address
//! and per-peer byte counts and displacements.
//!
//! When no block needs sluice's engine (every block is one contiguous run of bytes, or of a type
//! whose blocks the MPI's own engine moves at memory speed: `SLUICE_COLL_MPI_BLOCK`) the side
//! passes the application's own arguments: zero copy, and the MPI's exact behaviour. Otherwise
//! the blocks are laid out back to back in one staging buffer, in peer order; non-contiguous
//! blocks are packed/unpacked by the engine, contiguous ones copied. A side whose per-peer
//! displacements are addresses (`MPI_Neighbor_alltoallw`: `MPI_Aint` byte displacements and a
//! type per peer) can mix the two ([`Side::plan_mixed`]): only the blocks that need the engine
//! are staged, the others stay in the application's buffer with its own types.
//!
//! A staged block of a w-variant whose peer is on another node can be laid out in two runs with
//! a gap ([`SplitRule`], `transfer::netpath`): the MPI then sees a non-contiguous buffer and
//! takes the network path the application's own non-contiguous types would have taken. A
//! uniform side (one type for all peers) splits all its blocks alike or none.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::datatype::compiled::CompiledType;
use crate::ffi::{consts, errclass, mpi};
use crate::protocol::datatype::lookup;
use crate::protocol::layout::Layout;
use crate::transfer::netpath;
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
    /// Through the engine: the elements start at `at` from the buffer. `mpi_ok`: the MPI's own
    /// engine moves this block as fast (its smallest contiguous block is at least
    /// `SLUICE_COLL_MPI_BLOCK`), so it is staged only when a side cannot mix. (A type whose
    /// engine choice picked the MPI's engine is still staged: that engine then packs or unpacks
    /// the staging, `Layout::pack_into`; handing the type to the MPI's collective would also
    /// hand it the MPI's transport of non-contiguous data, which the choice never measured.)
    Engine { at: isize, layout: Layout, mpi_ok: bool },
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
        let mpi_block = crate::runtime::config().map_or(usize::MAX, |c| c.coll_mpi_block);
        let mpi_ok = layout.min_block().is_some_and(|b| b >= mpi_block);
        Some(Piece::Engine { at: isize::try_from(disp).ok()?, layout, mpi_ok })
    }

    /// Whether sluice's engine must move this block (the MPI would move it slower).
    fn needs_engine(&self) -> bool {
        matches!(self, Piece::Engine { mpi_ok: false, .. })
    }

    fn bytes(&self) -> usize {
        match self {
            Piece::Empty => 0,
            Piece::Run { bytes, .. } => *bytes,
            Piece::Engine { layout, .. } => layout.bytes(),
        }
    }
}

/// A block's bytes in staging: the piece, where its packed stream starts in staging, and where
/// the stream is split (0: not split; else bytes `[0, split)` at `off` and the rest at
/// `off + split + GAP`).
#[derive(Debug)]
struct Staged {
    piece: Piece,
    off: usize,
    split: usize,
}

impl Staged {
    /// Up to two runs: (offset in staging, first and last byte of the stream).
    fn runs(&self) -> impl Iterator<Item = (usize, usize, usize)> {
        let b = self.piece.bytes();
        let (first, second) = if self.split == 0 {
            ((self.off, 0, b), None)
        } else {
            ((self.off, 0, self.split), Some((self.off + self.split + netpath::GAP, self.split, b)))
        };
        std::iter::once(first).chain(second).filter(|r| r.2 > r.1)
    }

    /// Staging bytes the block takes.
    fn footprint(&self) -> usize {
        self.piece.bytes() + if self.split == 0 { 0 } else { netpath::GAP }
    }
}

/// Which staged blocks of a w-variant side are split (`transfer::netpath`): those of at least
/// `min` bytes whose peer is on another node.
#[derive(Debug)]
pub struct SplitRule {
    min: usize,
    /// Per peer slot of the side.
    remote: Vec<bool>,
}

impl SplitRule {
    /// The rule for a side whose peer slots are `ranks` of `comm`; `None` when nothing would be
    /// split (the setting, a job on one node, or no peer elsewhere).
    pub fn for_peers(comm: mpi::MPI_Comm, ranks: &[c_int]) -> Option<SplitRule> {
        let min = netpath::split_min()?;
        let remote = netpath::remote(comm, ranks);
        remote.iter().any(|&r| r).then_some(SplitRule { min, remote })
    }

    /// The rule for a uniform call over the ranks `0..n` of `comm` (`MPI_Alltoall`,
    /// `MPI_Allgather`): one datatype describes every peer's block, so when any peer is on
    /// another node every block is split, the ones for this node's ranks too (the MPI's
    /// shared-memory copy of a two-run buffer costs less than the stall it avoids between
    /// nodes). `None` when nothing would be split.
    pub fn everywhere(comm: mpi::MPI_Comm, n: usize) -> Option<SplitRule> {
        let ranks: Vec<c_int> = (0..c_int::try_from(n).ok()?).collect();
        let rule = SplitRule::for_peers(comm, &ranks)?;
        Some(SplitRule { min: rule.min, remote: vec![true; n] })
    }

    /// Where a staged block of `bytes` bytes for `peer` is split (0: not).
    fn at(rule: Option<&SplitRule>, peer: usize, bytes: usize) -> usize {
        match rule {
            Some(r) if bytes >= r.min && bytes >= 2 && r.remote.get(peer) == Some(&true) => netpath::split_at(bytes),
            _ => 0,
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

/// One side of a converted collective: the buffer arguments the MPI gets for it. Either the
/// application's own (a pass-through side), or sluice's staging buffer with byte counts,
/// byte displacements and `MPI_BYTE` types, or (mixed) per peer one of the two.
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
    /// The application's buffer, and per peer its piece and place in staging.
    user: *mut u8,
    pieces: Vec<Staged>,
    /// Types sluice made for split blocks, freed with the side.
    split_types: Vec<mpi::MPI_Datatype>,
    /// Some block needs the engine (else converting the call gains nothing).
    engine: bool,
    /// The MPI writes this side.
    recv: bool,
}

// SAFETY: the raw pointers are the application's buffer (which MPI requires to stay valid until
// the collective completes) and sluice's own staging; a pending collective is finished by the
// one thread that completes its request (MPI forbids concurrent completion of one request).
unsafe impl Send for Side {}

/// Which arguments a side may keep as the application gave them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One type for all peers (every call but the w-variants): the side is all bytes whenever
    /// the call is converted. The MPIs choose their algorithm from one side's type size times
    /// the other side's counts (Open MPI's `MPI_Allgatherv` does), so a rank that mixed bytes
    /// on one side with elements on the other would choose differently from its peers and
    /// deadlock.
    Bytes,
    /// A type per peer and `int` byte displacements (`MPI_Alltoallw`): a side none of whose
    /// blocks needs the engine keeps the application's arguments, whatever the other side.
    Typed,
    /// A type per peer and `MPI_Aint` byte displacements (`MPI_Neighbor_alltoallw`): as
    /// `Typed`, and a side can mix staged blocks with blocks left in place.
    Mixed,
}

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
        Side::plan_with(buf, n, disp, uniform, recv, Shape::Bytes, None, block)
    }

    /// As [`Side::plan`] for a side of a uniform call (one pointer, count and type for all
    /// peers; displacements in elements) whose staged blocks may all be split by `split` (made
    /// by [`SplitRule::everywhere`]): the side's MPI arguments are then one block of the split
    /// type per peer ([`Side::count`], [`Side::uniform_type`]).
    pub fn plan_uniform(
        buf: *const c_void,
        n: usize,
        recv: bool,
        split: Option<&SplitRule>,
        block: impl Fn(usize) -> (c_int, i64, mpi::MPI_Datatype),
    ) -> Option<Side> {
        Side::plan_with(buf, n, Disp::Elements, true, recv, Shape::Bytes, split, block)
    }

    /// As [`Side::plan`] for a side of `MPI_Alltoallw` (a type per peer, byte displacements):
    /// when no block needs the engine the side keeps the application's arguments even if the
    /// other side is converted. Neither MPI chooses an alltoallw algorithm by message size.
    /// `split`: which staged blocks are laid out in two runs.
    pub fn plan_typed(
        buf: *const c_void,
        n: usize,
        recv: bool,
        split: Option<&SplitRule>,
        block: impl Fn(usize) -> (c_int, i64, mpi::MPI_Datatype),
    ) -> Option<Side> {
        Side::plan_with(buf, n, Disp::Bytes, false, recv, Shape::Typed, split, block)
    }

    /// As [`Side::plan_typed`] for a side of `MPI_Neighbor_alltoallw` (`MPI_Aint` byte
    /// displacements): blocks that do not need the engine stay in the application's buffer
    /// with its types and only the others are staged. Staged blocks are addressed by their
    /// displacement from the application's buffer: MPI computes `buf + displacement`, and the
    /// difference of two addresses is a valid `MPI_Aint`.
    pub fn plan_mixed(
        buf: *const c_void,
        n: usize,
        recv: bool,
        split: Option<&SplitRule>,
        block: impl Fn(usize) -> (c_int, i64, mpi::MPI_Datatype),
    ) -> Option<Side> {
        Side::plan_with(buf, n, Disp::Bytes, false, recv, Shape::Mixed, split, block)
    }

    #[allow(clippy::too_many_arguments)]
    fn plan_with(
        buf: *const c_void,
        n: usize,
        disp: Disp,
        uniform: bool,
        recv: bool,
        shape: Shape,
        split: Option<&SplitRule>,
        block: impl Fn(usize) -> (c_int, i64, mpi::MPI_Datatype),
    ) -> Option<Side> {
        let mut info: Option<TypeInfo> = None;
        let mut pieces = Vec::with_capacity(n);
        let mut args = Vec::with_capacity(n);
        for i in 0..n {
            let (count, d, t) = block(i);
            args.push((count, d, t));
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
        let user = buf as *mut u8;
        let engine = pieces.iter().any(Piece::needs_engine);
        if shape != Shape::Bytes && !engine {
            return Some(Side::passthrough(user, &args, recv));
        }
        if shape == Shape::Mixed && pieces.iter().any(|p| !matches!(p, Piece::Empty) && !p.needs_engine()) {
            return Side::mixed(user, pieces, &args, recv, split);
        }
        let counts: Vec<c_int> = pieces.iter().map(|p| p.bytes() as c_int).collect();
        let types = vec![consts::byte(); n];
        if pieces.iter().all(|p| !matches!(p, Piece::Engine { .. })) {
            if let Some(displs) = in_place_displs(&pieces, uniform) {
                let aint_displs = displs.iter().map(|&d| d as mpi::MPI_Aint).collect();
                return Some(Side {
                    base: user,
                    counts,
                    displs,
                    aint_displs,
                    types,
                    staging: None,
                    user,
                    pieces: Vec::new(),
                    split_types: Vec::new(),
                    engine,
                    recv,
                });
            }
        }
        let mut counts = counts;
        let mut types = types;
        let mut split_types = Vec::new();
        let mut displs = Vec::with_capacity(n);
        let mut staged = Vec::with_capacity(n);
        let mut total = 0usize;
        // The split type of the previous split block, and its (bytes, split): blocks of one
        // size share one type (every block of a uniform side does).
        let mut last_split: Option<(usize, usize, mpi::MPI_Datatype)> = None;
        for (peer, piece) in pieces.into_iter().enumerate() {
            // A block gets a type of its own on a side with a type per peer, or on a uniform
            // side whose rule splits every block alike (`SplitRule::everywhere`); the
            // v-variants' sides have one type and per-peer byte counts: never split.
            let at = if shape == Shape::Bytes && !uniform { 0 } else { SplitRule::at(split, peer, piece.bytes()) };
            let block = Staged { piece, off: total, split: at };
            if at != 0 {
                let bytes = block.piece.bytes();
                let t = match last_split {
                    Some((b, a, t)) if (b, a) == (bytes, at) => t,
                    _ => match netpath::split_type(bytes, at) {
                        Some(t) => {
                            split_types.push(t);
                            last_split = Some((bytes, at, t));
                            t
                        }
                        None => return Side::freeing(split_types),
                    },
                };
                (counts[peer], types[peer]) = (1, t);
            }
            displs.push(total as c_int);
            total += block.footprint();
            staged.push(block);
            if total > c_int::MAX as usize {
                return Side::freeing(split_types);
            }
        }
        let mut staging = (total > 0).then(|| if recv { staging::take_for_receive(total) } else { staging::take(total) });
        let base = staging.as_mut().map_or(user, |s| s.as_mut_ptr());
        let aint_displs = displs.iter().map(|&d| d as mpi::MPI_Aint).collect();
        Some(Side { base, counts, displs, aint_displs, types, staging, user, pieces: staged, split_types, engine, recv })
    }

    /// Gives up planning: frees the split types made so far; always `None`.
    fn freeing(split_types: Vec<mpi::MPI_Datatype>) -> Option<Side> {
        split_types.into_iter().for_each(netpath::free_type);
        None
    }

    /// The application's own arguments (a w-variant side none of whose blocks needs the engine).
    fn passthrough(user: *mut u8, args: &[(c_int, i64, mpi::MPI_Datatype)], recv: bool) -> Side {
        Side {
            base: user,
            counts: args.iter().map(|a| a.0).collect(),
            // Byte displacements as the application gave them, from its `int` or `MPI_Aint` array.
            displs: args.iter().map(|a| a.1 as c_int).collect(),
            aint_displs: args.iter().map(|a| a.1 as mpi::MPI_Aint).collect(),
            types: args.iter().map(|a| a.2).collect(),
            staging: None,
            user,
            pieces: Vec::new(),
            split_types: Vec::new(),
            engine: false,
            recv,
        }
    }

    /// Per peer: staged bytes for the blocks that need the engine, the application's own
    /// (count, byte displacement, type) for the others.
    fn mixed(
        user: *mut u8,
        pieces: Vec<Piece>,
        args: &[(c_int, i64, mpi::MPI_Datatype)],
        recv: bool,
        split: Option<&SplitRule>,
    ) -> Option<Side> {
        let mut staged = Vec::with_capacity(pieces.len());
        let mut total = 0usize;
        for (peer, p) in pieces.into_iter().enumerate() {
            let (piece, at) = if p.needs_engine() {
                let at = SplitRule::at(split, peer, p.bytes());
                (p, at)
            } else {
                (Piece::Empty, 0) // the MPI moves it in place
            };
            let block = Staged { piece, off: total, split: at };
            total = total.checked_add(block.footprint())?;
            staged.push(block);
        }
        let mut staging = if recv { staging::take_for_receive(total) } else { staging::take(total) };
        let st = staging.as_mut_ptr();
        let n = staged.len();
        let (mut counts, mut aint_displs, mut types, mut split_types) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
        for (block, &(count, d, t)) in staged.iter().zip(args) {
            if matches!(block.piece, Piece::Empty) {
                counts.push(count);
                aint_displs.push(d as mpi::MPI_Aint);
                types.push(t);
                continue;
            }
            // The staged block's address relative to the application's buffer.
            aint_displs.push((st as isize).wrapping_add(block.off as isize).wrapping_sub(user as isize) as mpi::MPI_Aint);
            if block.split == 0 {
                counts.push(block.piece.bytes() as c_int);
                types.push(consts::byte());
            } else {
                let Some(t) = netpath::split_type(block.piece.bytes(), block.split) else { return Side::freeing(split_types) };
                counts.push(1);
                types.push(t);
                split_types.push(t);
            }
        }
        Some(Side {
            base: user,
            counts,
            displs: vec![0; n], // `int` displacements cannot express a mixed side (not used)
            aint_displs,
            types,
            staging: Some(staging),
            user,
            pieces: staged,
            split_types,
            engine: true,
            recv,
        })
    }

    /// Whether some block goes through the engine.
    pub fn uses_engine(&self) -> bool {
        self.engine
    }

    /// Bytes of the application's data this side moves (every peer's block).
    pub fn staged_bytes(&self) -> usize {
        self.pieces.iter().map(|b| b.piece.bytes()).sum()
    }

    /// The buffer argument of a uniform side (peer 0's bytes).
    pub fn ptr(&self) -> *mut c_void {
        let d = self.displs.first().copied().unwrap_or(0) as isize;
        self.base.wrapping_offset(d).cast()
    }

    /// The per-peer count of a uniform side: bytes, or 1 when its blocks are split.
    pub fn count(&self) -> c_int {
        self.counts.first().copied().unwrap_or(0)
    }

    /// The datatype of a uniform side's count: `MPI_BYTE`, or the split type of its blocks.
    pub fn uniform_type(&self) -> mpi::MPI_Datatype {
        self.types.first().copied().unwrap_or_else(consts::byte)
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

    /// The per-peer types (w-variants): `MPI_BYTE` for staged blocks.
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
            if let Some(block) = self.pieces.get_mut(p) {
                block.piece = Piece::Empty;
            }
        }
    }

    /// The bytes of each staged block laid out in two runs (statistics: `coll-split`).
    pub fn split_blocks(&self) -> impl Iterator<Item = usize> + '_ {
        self.pieces.iter().filter(|b| b.split != 0).map(|b| b.piece.bytes())
    }

    /// Copies/packs the application's blocks of `slots` into staging, inside the application's
    /// call (whole blocks by the engine chosen for their type: `Layout::pack_into`).
    ///
    /// # Safety
    /// The application's buffer is readable for those blocks' typemaps; inside the call that
    /// got this side's datatype handles.
    pub unsafe fn pack(&mut self, slots: Slots) {
        let Some(st) = self.staging.as_mut() else { return };
        let out = st.bytes_mut();
        for (peer, block) in self.pieces.iter().enumerate() {
            if !slots.has(peer) {
                continue;
            }
            let whole = block.split == 0;
            for (off, first, last) in block.runs() {
                let dst = &mut out[off..off + (last - first)];
                // SAFETY: the caller guarantees the blocks are readable; `dst` is sluice's
                // memory; `first..last` lies in the block's stream.
                unsafe {
                    match &block.piece {
                        Piece::Empty => {}
                        Piece::Run { at, .. } => {
                            std::ptr::copy_nonoverlapping(self.user.wrapping_offset(*at + first as isize), dst.as_mut_ptr(), dst.len())
                        }
                        Piece::Engine { at, layout, .. } if whole => layout.pack_into(self.user.wrapping_offset(*at).cast(), dst),
                        Piece::Engine { at, layout, .. } => layout.pack_range(self.user.wrapping_offset(*at).cast(), first, last, dst),
                    }
                }
            }
        }
    }

    /// Moves this side's block of `peer` straight into `dst`'s block of `dst_peer` (a rank's
    /// own block of an alltoall: staged, it would be packed, copied by the MPI and unpacked, three
    /// passes over memory, where this is one pass through a cache-sized bounce buffer), and takes
    /// both out of the staging work. `false` (nothing done): either block is not staged or
    /// their sizes differ (an erroneous call whose error the MPI reports).
    ///
    /// # Safety
    /// This side's application buffer is readable and `dst`'s writable for those blocks, and
    /// they do not overlap (MPI forbids aliased send and receive buffers).
    pub unsafe fn copy_block(&mut self, peer: usize, dst: &mut Side, dst_peer: usize) -> bool {
        /// Bounce buffer size: both halves of the copy stay in the L2 cache (1 MiB here), and a
        /// chunk holds whole tiles of an FFT transpose's columns (8 columns of 2048 elements of
        /// 16 bytes: N = 4096 on 2 ranks). With 64 KiB the transpose's chunks were partial tiles
        /// and ran the kernel's per-element loop: twice the time of unpacking the same bytes
        /// (profile in docs/benchmarks.md, "What moved the Open MPI transpose").
        const CHUNK: usize = 256 << 10;
        // A split block is copied all the same: the copy reads and writes the application's
        // blocks, never the staged runs.
        let (Some(Staged { piece: from, .. }), Some(Staged { piece: to, .. })) = (self.pieces.get(peer), dst.pieces.get(dst_peer)) else {
            return false; // not staged
        };
        let n = from.bytes();
        if n == 0 || n != to.bytes() {
            return false;
        }
        // From the staging pool: no allocation or zeroing per call.
        let mut bounce = staging::take(CHUNK.min(n));
        let mut first = 0;
        while first < n {
            let last = (first + CHUNK).min(n);
            let chunk = &mut bounce.bytes_mut()[..last - first];
            // SAFETY: the caller guarantees both blocks; `chunk` is sluice's memory and the
            // ranges lie inside both blocks' streams of `n` bytes.
            unsafe {
                match from {
                    Piece::Run { at, .. } => {
                        std::ptr::copy_nonoverlapping(self.user.wrapping_offset(*at + first as isize), chunk.as_mut_ptr(), chunk.len())
                    }
                    Piece::Engine { at, layout, .. } => layout.pack_range(self.user.wrapping_offset(*at).cast(), first, last, chunk),
                    Piece::Empty => unreachable!("a block of {n} bytes"),
                }
                match to {
                    Piece::Run { at, .. } => {
                        std::ptr::copy_nonoverlapping(chunk.as_ptr(), dst.user.wrapping_offset(*at + first as isize), chunk.len())
                    }
                    Piece::Engine { at, layout, .. } => layout.unpack_range(chunk, first, dst.user.wrapping_offset(*at).cast()),
                    Piece::Empty => unreachable!("a block of {n} bytes"),
                }
            }
            first = last;
        }
        self.pieces[peer].piece = Piece::Empty;
        dst.pieces[dst_peer].piece = Piece::Empty;
        true
    }

    /// After [`Side::copy_block`] moved `peer`'s block: keeps the MPI from copying its staged
    /// bytes, which nobody reads. A side with per-peer counts (v-variants) gets a count of 0
    /// for it: only this rank pairs its own send and receive slot, so this changes nothing any
    /// other rank sees. A uniform side (one count for all) cannot, and gets staging whose slot
    /// is backed by a ring of a few pages instead ([`staging::take_hollow`]), so that the MPI's
    /// copy of it runs in the cache. Call before packing: the staged bytes are not kept.
    pub fn skip_staged_block(&mut self, peer: usize, uniform: bool) {
        let (Some(st), Some(&displ)) = (self.staging.as_ref(), self.displs.get(peer)) else {
            return;
        };
        if !uniform {
            self.counts[peer] = 0;
            return;
        }
        // The slot's staging bytes (a split block's count is 1 of its split type): up to the
        // next block, or to the end.
        let next = self.displs.get(peer + 1).map_or(st.len(), |&d| d as usize);
        let (off, len) = (displ as usize, next.saturating_sub(displ as usize));
        if let Some(mut hollow) = staging::take_hollow(st.len(), off..off + len, self.recv) {
            self.base = hollow.as_mut_ptr();
            self.staging = Some(hollow); // the ordinary buffer goes back to the pool untouched
        }
    }

    /// Copies/unpacks the staged bytes of `slots` into the application's blocks; whole blocks by
    /// the engine chosen for their type when `in_call` (`Layout::unpack_from`).
    ///
    /// # Safety
    /// The application's buffer is writable for those blocks' typemaps; `in_call` only inside
    /// the call that got this side's datatype handles.
    pub unsafe fn unpack(&mut self, slots: Slots, in_call: bool) {
        let Some(st) = self.staging.as_ref() else { return };
        let input = st.bytes();
        for (peer, block) in self.pieces.iter().enumerate() {
            if !slots.has(peer) {
                continue;
            }
            let whole = block.split == 0;
            for (off, first, last) in block.runs() {
                let src = &input[off..off + (last - first)];
                // SAFETY: the caller guarantees the blocks are writable; `src` is sluice's
                // memory; `first..last` lies in the block's stream.
                unsafe {
                    match &block.piece {
                        Piece::Empty => {}
                        Piece::Run { at, .. } => {
                            std::ptr::copy_nonoverlapping(src.as_ptr(), self.user.wrapping_offset(*at + first as isize), src.len())
                        }
                        Piece::Engine { at, layout, .. } if whole => {
                            layout.unpack_from(src, self.user.wrapping_offset(*at).cast(), in_call)
                        }
                        Piece::Engine { at, layout, .. } => layout.unpack_range(src, first, self.user.wrapping_offset(*at).cast()),
                    }
                }
            }
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        self.split_types.drain(..).for_each(netpath::free_type);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::choice::{Dir, Engine};
    use crate::datatype::ir::DataLoop;

    #[test]
    fn a_block_is_staged_whichever_engine_packs_it() {
        let ct = Arc::new(CompiledType::new(&DataLoop::vector(64, 1, 16, DataLoop::bytes(8))));
        let dl = ct.dataloop();
        let info = TypeInfo {
            // SAFETY: a handle is an integer or a pointer, for which zero is a valid value; it is
            // only carried here, never passed to the MPI.
            datatype: unsafe { std::mem::zeroed() },
            size: dl.size,
            extent: dl.extent,
            true_lb: dl.true_lb,
            contiguous: false,
            compiled: Some(ct.clone()),
        };
        let needs = || Piece::of(&info, 4, 0).is_some_and(|p| p.needs_engine());
        assert!(needs(), "learning: staged");
        ct.choice().force(Dir::Unpack, Engine::Mpi);
        ct.choice().force(Dir::Pack, Engine::Mpi);
        assert!(needs(), "the MPI's engine packs and unpacks the staging; the block is still staged");
    }
}
