//! The device route of the pipelined protocol (docs/protocol.md, "Device-to-device chunks"): a
//! send from device memory to a rank of this node that can open this process's CUDA IPC
//! memory puts its whole stream in an exported slab (`transfer::gpu::ipc`) and names it in a
//! small region of the shared-memory arena; M0 carries the header and no stream data. The
//! receiver copies the stream out of the slab (device to device when its blocking receive is
//! into device memory, else device to host) and marks the region read, which gives the slab
//! back. The sender never waits for the receiver, as on the other routes.
//!
//! Whether the receiver can open the sender's memory is established before any transfer
//! depends on it: a sender that has device sends for a peer publishes a probe handle in its
//! arena and flags its pipelined messages to that peer as an *offer*; the receiver, once it
//! is a CUDA process itself, tries to open the probe and records the answer in its own arena,
//! where the sender reads it ([`answer_offer`], [`usable`]). Until the answer is yes, device
//! sends take the host route.

use std::ffi::c_int;

use crate::transfer::gpu::{self, ipc, DeviceRange};
use crate::transfer::shm::{self, PeerRegion, Pull, Region};

/// Bytes of the descriptor in the arena region: the slab's handle, the stream's offset in it
/// and its length.
pub const DESCRIPTOR: usize = ipc::HANDLE + 16;

/// Where a device stream is: in the sender's exported slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub handle: ipc::Handle,
    pub offset: u64,
    pub len: u64,
}

impl Descriptor {
    fn encode(&self) -> [u8; DESCRIPTOR] {
        let mut b = [0u8; DESCRIPTOR];
        b[..ipc::HANDLE].copy_from_slice(&self.handle);
        b[ipc::HANDLE..ipc::HANDLE + 8].copy_from_slice(&self.offset.to_le_bytes());
        b[ipc::HANDLE + 8..].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Descriptor> {
        if b.len() < DESCRIPTOR {
            return None;
        }
        let mut handle = [0u8; ipc::HANDLE];
        handle.copy_from_slice(&b[..ipc::HANDLE]);
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Some(Descriptor { handle, offset: word(ipc::HANDLE), len: word(ipc::HANDLE + 8) })
    }

    /// The descriptor the sender publishes in `r`, waiting for it: the sender publishes it
    /// right after its own device copy, whatever the copy's outcome, without waiting for this
    /// process.
    pub fn read(r: &PeerRegion) -> Option<Descriptor> {
        let mut idle = 0u32;
        while r.packed() < DESCRIPTOR {
            idle += 1;
            if idle < 256 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Descriptor::decode(r.bytes(0, DESCRIPTOR))
    }

    /// The stream's bytes as the receiver opens them.
    pub fn bytes_of(&self, sender: c_int) -> ipc::PeerBytes {
        ipc::PeerBytes { sender, handle: self.handle, offset: self.offset as usize }
    }
}

/// Whether M0 of a pipelined send to world rank `peer` offers this process's probe.
pub fn offer(peer: c_int) -> bool {
    gpu::armed() && shm::probe_published() && shm::reaches(peer) && shm::peer_pulls(peer) == Pull::Unknown
}

/// A receiver's answer to an offer of world rank `sender`: tries to open its probe (once, and
/// only in a process that uses CUDA itself) and records the result for the sender to read.
pub fn answer_offer(sender: c_int) {
    if shm::own_pull(sender) != Pull::Unknown {
        return;
    }
    let Some(ordinal) = gpu::seen_ordinal() else {
        return; // not a CUDA process (yet): opening would create a context it does not have
    };
    let Some(h) = shm::peer_probe(sender) else { return };
    let p = match ipc::try_open(sender, &h, ordinal) {
        Ok(()) => {
            log::info!("device memory of world rank {sender} opens here (CUDA IPC): its device sends come device to device");
            Pull::Yes
        }
        Err(e) => {
            log::info!("device memory of world rank {sender} does not open here ({e}): its device sends cross host memory");
            Pull::No
        }
    };
    shm::set_own_pull(sender, p);
}

/// What a device send to a peer does about the device route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Take it.
    Yes,
    /// Not yet: travel pipelined the other way, so that M0 carries the offer of this process's
    /// probe and the peer answers.
    Offer,
    /// Not to this peer.
    No,
}

/// Device sends to one peer that are made to travel pipelined to carry the offer (`Use::Offer`)
/// while the peer has not answered. Bounded: a peer that never answers (it does not use CUDA)
/// must not keep every device send to it on the pipelined form, which is slower than a whole
/// copy on Open MPI; pipelined messages still carry the offer when they go that way anyway.
const FORCED_OFFERS: u32 = 4;

/// Forced offers made so far, per peer.
static OFFERED: std::sync::Mutex<Vec<(c_int, u32)>> = std::sync::Mutex::new(Vec::new());

/// Whether one more device send to `peer` may be made to carry the offer (and counts it).
fn force_offer(peer: c_int) -> bool {
    let mut g = OFFERED.lock().unwrap_or_else(|e| e.into_inner());
    let i = match g.iter().position(|(p, _)| *p == peer) {
        Some(i) => i,
        None => {
            g.push((peer, 0));
            g.len() - 1
        }
    };
    let n = &mut g[i].1;
    *n = n.saturating_add(1);
    *n <= FORCED_OFFERS
}

/// Whether a device send (in `range`) to world rank `peer` may take the device route now.
/// The first time a peer of this node is asked about, publishes this process's probe.
pub fn usable(peer: c_int, range: &DeviceRange) -> Use {
    if !ipc::enabled() || !shm::reaches(peer) {
        return Use::No;
    }
    match shm::peer_pulls(peer) {
        Pull::Yes => Use::Yes,
        Pull::No => Use::No,
        Pull::Unknown => {
            if !shm::probe_published() {
                match ipc::probe(range) {
                    Ok(h) => {
                        shm::publish_probe(&h);
                    }
                    Err(e) => {
                        log::info!("no device memory probe ({e}): device sends cross host memory");
                        return Use::No;
                    }
                }
            }
            if force_offer(peer) {
                Use::Offer
            } else {
                Use::No
            }
        }
    }
}

/// A device stream on its way into a slab, with the arena region that will name it.
pub struct Prepared {
    /// The receiver's world rank.
    pub peer: c_int,
    pub lease: ipc::Lease,
    pub region: Region,
    /// The allocation (and so the context) whose stream fills the slab.
    range: DeviceRange,
    len: usize,
}

/// A slab of `len` bytes in `range`'s context, which `fill` fills (given the slab's device
/// address, it queues the bytes on sluice's stream of that context, or copies them at once),
/// and a region for world rank `peer`. `None`: no slab or no region free now (the send takes
/// another route); an error: the fill failed. The descriptor is published by
/// [`Prepared::publish`], once the bytes are there.
pub fn prepare(
    peer: c_int,
    len: usize,
    range: &DeviceRange,
    fill: impl FnOnce(usize) -> Result<(), gpu::CudaError>,
) -> Option<Result<Prepared, gpu::CudaError>> {
    let region = shm::reserve(peer, DESCRIPTOR)?;
    let lease = match ipc::lease(len, range)? {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    let p = Prepared { peer, lease, region, range: *range, len };
    if let Err(e) = fill(p.lease.ptr()) {
        p.settle();
        return Some(Err(e));
    }
    Some(Ok(p))
}

impl Prepared {
    /// Waits until the slab holds the stream, calling `progress` meanwhile (M0 is on its way:
    /// the MPI moves it while the device copies), then publishes the descriptor. After a failed
    /// copy the descriptor names no stream a receiver accepts (its receive fails, and still
    /// marks the region read) and the error is returned.
    pub fn publish(&self, mut progress: impl FnMut()) -> Result<(), gpu::CudaError> {
        let r = loop {
            match ipc::settled(&self.range, false) {
                Ok(true) => break Ok(()),
                Ok(false) => progress(),
                Err(e) => break Err(e),
            }
        };
        let len = if r.is_ok() { self.len as u64 } else { u64::MAX };
        let d = Descriptor { handle: *self.lease.handle(), offset: 0, len };
        // SAFETY: the region holds at least DESCRIPTOR bytes and is this transfer's alone.
        unsafe { std::ptr::copy_nonoverlapping(d.encode().as_ptr(), self.region.as_mut_ptr(), DESCRIPTOR) };
        self.region.publish(DESCRIPTOR);
        r
    }

    /// Waits until nothing is queued for the slab (before it goes back unused).
    pub fn settle(&self) {
        let _ = ipc::settled(&self.range, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_short_bytes_are_none() {
        let mut handle = [0u8; ipc::HANDLE];
        for (i, b) in handle.iter_mut().enumerate() {
            *b = i as u8 ^ 0xa5;
        }
        let d = Descriptor { handle, offset: 4096, len: (1 << 30) + 7 };
        assert_eq!(Descriptor::decode(&d.encode()), Some(d));
        assert_eq!(Descriptor::decode(&d.encode()[..DESCRIPTOR - 1]), None);
    }

    #[test]
    fn a_peer_gets_a_bounded_number_of_forced_offers() {
        let peer = 123_456;
        let forced = (0..10).filter(|_| force_offer(peer)).count();
        assert_eq!(forced, FORCED_OFFERS as usize);
        assert!(force_offer(peer + 1), "another peer has its own count");
    }

    #[test]
    fn without_a_node_arena_nothing_is_offered_or_usable() {
        // No MPI_Init in unit tests: no arena, so no probe, no region, no route.
        assert!(!offer(1));
        assert!(!shm::reaches(1));
        assert_eq!(shm::peer_pulls(1), Pull::Unknown);
    }
}
