//! The pipelined forms of staging: a device buffer's host copy that crosses PCIe piece by piece
//! while the MPI moves the pieces already across (the isometry model's FBM -> REG -> network ->
//! REG -> FBM path with pipelining, docs/gpu.md). A send's copy is filled in pieces and sent as
//! it arrives ([`ArrivingCopy`], through the pipelined protocol's `Source::Arriving`); a blocking
//! receive's copy goes back to the device chunk by chunk as the pipelined protocol lands it
//! ([`Feed`], through its `incoming::watching`).

use std::sync::{Arc, Mutex};

use super::{fills_prefix, Packed, Staged};
use crate::ffi::mpi;
use crate::protocol::p2p::pipeline::incoming::{Watch, Watcher};
use crate::protocol::p2p::pipeline::send::Arriving;
use crate::transfer::gpu::{self, ipc, mover, HostBuffer};

/// A staged send buffer whose host copy is filled in pieces while the pipelined protocol sends
/// it ([`Staged::into_arriving`]): its first chunks go to the MPI while later ones still cross
/// PCIe. The pipeline keeps it until its chunks are sent; the pieces are waited for before the
/// host memory goes back to the pool (field order: `pieces` drops first).
#[derive(Debug)]
pub struct ArrivingCopy {
    pieces: Mutex<gpu::Pieces>,
    host: HostBuffer,
    /// The size of the pieces after the first.
    piece: usize,
}

impl ArrivingCopy {
    /// The first failed copy, if any.
    pub fn error(&self) -> Option<gpu::CudaError> {
        self.pieces.lock().unwrap_or_else(|e| e.into_inner()).error().cloned()
    }
}

impl Arriving for ArrivingCopy {
    fn bytes(&self) -> *const u8 {
        self.host.as_ptr()
    }

    fn piece(&self) -> usize {
        self.piece
    }

    fn wait(&self, upto: usize) {
        // A failure stays in `pieces` for the owner's `error`.
        let _ = self.pieces.lock().unwrap_or_else(|e| e.into_inner()).wait(upto);
    }
}

impl Staged {
    /// Whether the host copy is one run of bytes in stream order: the packed form, or the span
    /// of `count` elements of a contiguous type (`dt`, the application's).
    pub fn is_stream(&self, dt: mpi::MPI_Datatype) -> bool {
        self.packed.is_some() || fills_prefix(dt)
    }

    /// Starts filling the host copy in pieces (the first of `first` bytes, then `piece` each)
    /// and hands it over as a stream that arrives while it is sent. Only for a stream
    /// ([`Staged::is_stream`]) that was staged without filling.
    pub fn into_arriving(self, first: usize, piece: usize) -> Result<Arc<ArrivingCopy>, gpu::CudaError> {
        let pieces = match &self.packed {
            // SAFETY: as in `fill`; the host buffer lives in the result, beside the pieces,
            // which are waited for before it is dropped.
            Some(p) => unsafe { mover::pack_in_pieces(self.host.as_ptr(), self.dev, &p.shape, &self.range, first, piece)? },
            None => {
                let mut pieces = gpu::Pieces::new(&self.range);
                // SAFETY: as in `fill`, and as above for the host buffer's life.
                unsafe { pieces.push_all(self.host.as_ptr() as usize, self.dev, self.len, first, piece)? };
                pieces
            }
        };
        Ok(Arc::new(ArrivingCopy { pieces: Mutex::new(pieces), host: self.host, piece }))
    }
}

/// A staged receive buffer (one run of bytes: [`Staged::is_stream`]) whose bytes go back to the
/// device as a pipelined message lands them ([`Staged::feed`]): the receive's watcher queues
/// each newly landed range at once ([`Feed::watcher`]), and [`Feed::finish`] queues what is left
/// of the delivered bytes and waits. A receive that gets an ordinary message never calls the
/// watcher: everything is copied at the finish, as for a receive staged the plain way.
#[derive(Clone, Debug)]
pub struct Feed(Arc<Mutex<FeedState>>);

#[derive(Debug)]
struct FeedState {
    /// Where the bytes go (`None` once finished).
    to: Option<Target>,
    /// The host copy's first byte, and its length.
    host: usize,
    len: usize,
}

#[derive(Debug)]
enum Target {
    /// Straight into the device bytes at `dev` (a contiguous type's span).
    Span { pieces: gpu::Pieces, dev: usize },
    /// Into a packed device buffer, scattered by the kernel at the finish (the packed form).
    Packed { unpacking: mover::Unpacking, form: Arc<Packed> },
}

impl FeedState {
    /// Bytes queued towards the device so far.
    fn queued(&self) -> usize {
        match &self.to {
            Some(Target::Span { pieces, .. }) => pieces.queued(),
            Some(Target::Packed { unpacking, .. }) => unpacking.queued(),
            None => self.len,
        }
    }

    /// Queues the host copy's bytes from the last queued one up to `upto`.
    fn to(&mut self, upto: usize) -> Result<(), gpu::CudaError> {
        let from = self.queued();
        let upto = upto.min(self.len);
        if upto <= from {
            return Ok(());
        }
        let src = self.host + from;
        match &mut self.to {
            // SAFETY: `[from, upto)` of the host copy has landed and stays until the finish;
            // the device range was checked against the allocation when staged.
            Some(Target::Span { pieces, dev }) => unsafe { pieces.push(*dev + from, src, upto - from) },
            // SAFETY: as above; the packed buffer holds the whole stream.
            Some(Target::Packed { unpacking, form }) => unsafe { unpacking.push(src as *const u8, upto - from, &form.shape) },
            None => Ok(()),
        }
    }
}

impl Feed {
    /// The host copy's first byte: where the receive lands a pipelined message.
    pub fn base(&self) -> *const u8 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).host as *const u8
    }

    /// Told how many of the host copy's first bytes have landed: queues them towards the
    /// device. A failed copy is kept for [`Feed::finish`] to report.
    pub fn watcher(&self) -> Watcher {
        Box::new(self.clone())
    }

    /// After the receive delivered `n` bytes (its status; on truncation what the MPI leaves in
    /// a host buffer): queues what is left of them, then waits until every byte queued is on
    /// the device (bytes a pipelined message landed before a truncation included: they are in
    /// the host copy as in a host buffer).
    pub fn finish(self, n: usize) -> Result<(), gpu::CudaError> {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.to(n)?;
        let limit = g.queued();
        let state = g.to.take();
        drop(g);
        match state {
            Some(Target::Span { mut pieces, .. }) => pieces.wait_all(),
            Some(Target::Packed { unpacking, form }) => unpacking.finish(limit, &form.shape),
            None => Ok(()),
        }
    }
}

impl Watch for Feed {
    fn landed(&mut self, upto: usize) {
        let _ = self.0.lock().unwrap_or_else(|e| e.into_inner()).to(upto);
    }

    /// A device target with nothing queued yet takes the bytes device to device (a span: into
    /// place; the packed form: into its packed device buffer, which the finish scatters); the
    /// host copy is then not used. Declines when the sender's slab does not open in the
    /// target's context (the bytes then come through the host copy).
    fn take_from_peer(&mut self, from: &ipc::PeerBytes, len: usize) -> Option<Result<(), gpu::CudaError>> {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if len > g.len {
            return None;
        }
        match &mut g.to {
            Some(Target::Span { pieces, dev }) if pieces.queued() == 0 => {
                let range = *pieces.range();
                let src = ipc::open_for(&range, from).ok()?;
                // SAFETY: `[dev, dev + len)` lies inside the staged span, checked against the
                // allocation when staged; the sender's slab holds `len` bytes from `src` until
                // this receive marks it read, after the copy.
                let r = unsafe { ipc::copy_opened(*dev, src, len, &range) };
                if r.is_ok() {
                    g.to = None; // everything the receive delivers is on the device
                }
                Some(r)
            }
            Some(Target::Packed { unpacking, form }) if unpacking.queued() == 0 => {
                let src = ipc::open_for(unpacking.range(), from).ok()?;
                // SAFETY: as above, into the packed device buffer of the stream's length.
                let r = unsafe { unpacking.push(src as *const u8, len, &form.shape) }.and_then(|()| unpacking.wait());
                Some(r)
            }
            _ => None,
        }
    }
}

impl Staged {
    /// The receiving side of [`Staged::into_arriving`]: a [`Feed`] that takes the host copy's
    /// bytes to the device as they land. Only for a stream ([`Staged::is_stream`]) staged
    /// without filling; the staged value must outlive the feed's finish (it owns the host copy).
    pub fn feed(&self) -> Result<Feed, gpu::CudaError> {
        let to = match &self.packed {
            Some(p) => Target::Packed { unpacking: mover::Unpacking::new(self.dev, &p.shape, &self.range)?, form: p.clone() },
            None => Target::Span { pieces: gpu::Pieces::new(&self.range), dev: self.dev },
        };
        Ok(Feed(Arc::new(Mutex::new(FeedState { to: Some(to), host: self.host.as_ptr() as usize, len: self.len }))))
    }
}
