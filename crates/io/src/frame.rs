//! Ethernet ports of the datapath and the batch they receive into.
//!
//! [`FramePort`] is what the datapath needs of a port, whatever the kernel object behind it:
//! an AF_PACKET socket on the host end of a veth ([`crate::PacketPort`]) or a TAP device
//! ([`crate::TapPort`]). Frames leave a port complete (checksums valid, at most the MTU) and
//! come out of a [`FrameBatch`] the same way: when the port uses the virtio-net header, partial
//! checksums are finished and GSO frames are cut into segments while the batch is read, one
//! segment at a time into a scratch buffer, so nothing is allocated and nothing is dropped for
//! lack of room.
//!
//! Keeping large frames is the reader's choice, frame by frame: [`Frames::next_frame_meta`]
//! hands a GSO frame over whole and a partial checksum unfinished, with a [`FrameMeta`] that
//! says so, and [`FramePort::send_meta`] gives both to the next port, whose kernel then
//! segments (or not, if that port's peer takes large frames too). Ports without the
//! virtio-net header only ever yield complete frames; sent to such a port, a large frame is
//! finished in software first ([`FrameMeta::finish`]).
//!
//! One `FrameBatch` can serve every port in turn: ports do not own batches.

use std::fmt;
use std::io;
use std::os::fd::AsFd;

use crate::meta::FrameMeta;
use crate::sys::MAX_BATCH;
use crate::vnet::{self, Segmenter, VnetError, VnetHdr, VNET_HDR_LEN};

pub use crate::meta::MAX_FRAME;

/// What a port can do; implemented by [`crate::PacketPort`] and [`crate::TapPort`].
pub trait FramePort: AsFd + fmt::Debug {
    /// Interface name.
    fn name(&self) -> &str;
    /// Interface index in the port's network namespace.
    fn ifindex(&self) -> u32;
    /// The interface's current MTU (SIOCGIFMTU).
    fn mtu(&self) -> io::Result<u32>;
    /// Whether frames carry a virtio-net header on the wire between kernel and nvo.
    fn vnet_hdr(&self) -> bool;
    /// Receives what is queued, up to the batch capacity, without blocking; returns the number
    /// of frames received (before GSO segmentation; 0 when nothing was queued).
    fn recv_batch(&self, batch: &mut FrameBatch) -> io::Result<usize>;
    /// Sends one complete frame.
    fn send(&self, frame: &[u8]) -> io::Result<()>;
    /// Sends frames until the iterator ends or the kernel's queue is full; then the frames not
    /// yet sent are dropped (the iterator may have been read up to [`MAX_BATCH`] further). A
    /// frame refused for another reason (e.g. larger than the MTU) is skipped. Returns how many
    /// were sent; `Err` only when none was and the cause was not a full queue.
    fn send_batch(&self, frames: &mut dyn Iterator<Item = &[u8]>) -> io::Result<usize>;
    /// Sends one frame with its metadata, e.g. a GSO frame from [`Frames::next_frame_meta`].
    /// A port with the virtio-net header writes it once with a header that says what is left
    /// to do (the kernel takes GSO frames larger than the MTU that way). Without the header,
    /// the frame is finished in software ([`FrameMeta::finish`], a scratch buffer per thread)
    /// and its segments are sent one by one, stopping at the first that fails. `InvalidInput`
    /// when the metadata does not fit the frame.
    fn send_meta(&self, frame: &[u8], meta: &FrameMeta) -> io::Result<()> {
        meta.finish_here(frame, &mut |f| self.send(f)).map(drop)
    }
}

/// What the last receive into a [`FrameBatch`] and its reading dropped or changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameBatchStats {
    /// Frames larger than a batch slot, dropped.
    pub truncated: u64,
    /// GSO frames cut into segments.
    pub gso_segmented: u64,
    /// Frames whose checksum nvo completed in software.
    pub checksum_completed: u64,
    /// Frames dropped for a virtio-net header that does not fit the frame.
    pub vnet_malformed: u64,
    /// Frames dropped for a GSO type nvo does not segment (UFO).
    pub gso_unsupported: u64,
    /// GSO frames handed over whole by [`Frames::next_frame_meta`].
    pub gso_kept: u64,
}

/// `capacity` slots of [`VNET_HDR_LEN`] + `frame_len` bytes; see the module docs.
pub struct FrameBatch {
    slot_len: usize,
    data: Box<[u8]>,
    lens: Box<[usize]>,
    len: usize,
    /// Whether the frames of the last receive start with a virtio-net header.
    vnet: bool,
    scratch: Box<[u8]>,
    stats: FrameBatchStats,
}

impl fmt::Debug for FrameBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameBatch")
            .field("capacity", &self.capacity())
            .field("frame_len", &self.frame_len())
            .field("len", &self.len)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Default for FrameBatch {
    /// 64 slots of [`MAX_FRAME`] bytes (4 MiB): room for GSO frames.
    fn default() -> Self {
        FrameBatch::new(64, MAX_FRAME)
    }
}

impl FrameBatch {
    /// `capacity` slots (clamped to 1..=[`MAX_BATCH`]) for frames of up to `frame_len` bytes
    /// (at least 64). Ports with a virtio-net header hand over GSO frames of up to
    /// [`MAX_FRAME`]: with shorter slots those are dropped as truncated.
    pub fn new(capacity: usize, frame_len: usize) -> Self {
        let capacity = capacity.clamp(1, MAX_BATCH);
        let slot_len = VNET_HDR_LEN + frame_len.max(64);
        FrameBatch {
            slot_len,
            data: vec![0; capacity * slot_len].into_boxed_slice(),
            lens: vec![0; capacity].into_boxed_slice(),
            len: 0,
            vnet: false,
            scratch: vec![0; slot_len].into_boxed_slice(),
            stats: FrameBatchStats::default(),
        }
    }

    /// Slots per receive.
    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// Largest frame a slot holds.
    pub fn frame_len(&self) -> usize {
        self.slot_len - VNET_HDR_LEN
    }

    /// Frames received by the last receive, before GSO segmentation.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the last receive got nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops and fixes since the last receive (reading with [`FrameBatch::frames`] adds to it).
    pub fn stats(&self) -> FrameBatchStats {
        self.stats
    }

    /// A cursor over the frames of the last receive, ready to forward; see the module docs.
    pub fn frames(&mut self) -> Frames<'_> {
        Frames {
            batch: self,
            slot: 0,
            segmenter: None,
            segment: 0,
        }
    }

    /// Starts a receive: forgets the last one.
    pub(crate) fn reset(&mut self, vnet: bool) {
        self.len = 0;
        self.vnet = vnet;
        self.stats = FrameBatchStats::default();
    }

    /// The receive buffers: whole slots with a virtio-net header, else each slot after its
    /// headroom (so frames sit at the same place either way).
    pub(crate) fn slots(&mut self) -> impl Iterator<Item = &mut [u8]> {
        let skip = if self.vnet { 0 } else { VNET_HDR_LEN };
        self.data
            .chunks_exact_mut(self.slot_len)
            .map(move |slot| &mut slot[skip..])
    }

    /// Puts the 802.1Q/802.1ad tag `tag` (TPID and TCI) back between the MACs and the
    /// ethertype of the last frame pushed, which the kernel took out of it on receive (into
    /// `skb->vlan_tci`, reported in `PACKET_AUXDATA`); a virtio-net header's offsets move with
    /// the frame. A frame with no room left for the tag is dropped as truncated.
    pub(crate) fn restore_tag(&mut self, tag: [u8; 4]) {
        let Some(at) = self.len.checked_sub(1) else {
            return;
        };
        let len = self.lens[at];
        let slot = &mut self.data[at * self.slot_len..(at + 1) * self.slot_len];
        if len < 12 || VNET_HDR_LEN + len + 4 > slot.len() {
            if len != 0 {
                self.stats.truncated += 1;
                self.lens[at] = 0;
            }
            return;
        }
        let frame = &mut slot[VNET_HDR_LEN..VNET_HDR_LEN + len + 4];
        frame.copy_within(12..len, 16);
        frame[12..16].copy_from_slice(&tag);
        self.lens[at] = len + 4;
        if self.vnet {
            crate::vnet::shift_offsets(&mut slot[..VNET_HDR_LEN], 4);
        }
    }

    /// Records that slot `self.len()` holds a message of `len` bytes (header included).
    pub(crate) fn push(&mut self, len: usize, truncated: bool) {
        let room = if self.vnet {
            self.slot_len
        } else {
            self.slot_len - VNET_HDR_LEN
        };
        if truncated || len > room || (self.vnet && len < VNET_HDR_LEN) {
            self.stats.truncated += 1;
            self.lens[self.len] = 0;
        } else {
            self.lens[self.len] = if self.vnet { len - VNET_HDR_LEN } else { len };
        }
        self.len += 1;
    }
}

/// Reads a [`FrameBatch`]: `while let Some(frame) = frames.next_frame() { ... }`, or
/// `next_frame_meta` to keep large frames (see the module docs); the two may be mixed. A
/// lending cursor rather than an `Iterator` because a GSO segment lives in the batch's scratch
/// buffer only until the next call.
#[derive(Debug)]
pub struct Frames<'a> {
    batch: &'a mut FrameBatch,
    slot: usize,
    segmenter: Option<Segmenter>,
    segment: usize,
}

impl Frames<'_> {
    /// The next frame, checksums complete, at most `gso_size` of payload per TCP/UDP segment.
    pub fn next_frame(&mut self) -> Option<&[u8]> {
        loop {
            if let Some(len) = self.next_segment() {
                return Some(&self.batch.scratch[..len]);
            }
            if self.slot >= self.batch.len {
                return None;
            }
            match self.prepare() {
                Ok(None) => {
                    let frame = self.batch.frame(self.slot);
                    self.slot += 1;
                    return Some(frame);
                }
                Ok(Some(seg)) => {
                    self.batch.stats.gso_segmented += 1;
                    self.segmenter = Some(seg);
                    self.segment = 0;
                }
                Err(()) => self.slot += 1,
            }
        }
    }

    /// The next frame as the sender handed it over, GSO frames whole and partial checksums
    /// unfinished, with what remains to be done ([`FrameMeta::COMPLETE`] for ports without
    /// the virtio-net header). Frames whose header does not fit are dropped and counted as by
    /// [`Frames::next_frame`]. After a `next_frame` that started cutting a GSO frame, the
    /// rest of its segments come first (complete).
    pub fn next_frame_meta(&mut self) -> Option<(&[u8], FrameMeta)> {
        if let Some(len) = self.next_segment() {
            return Some((&self.batch.scratch[..len], FrameMeta::COMPLETE));
        }
        while self.slot < self.batch.len {
            let slot = self.slot;
            self.slot += 1;
            if let Ok(meta) = self.inspect(slot) {
                return Some((self.batch.frame(slot), meta));
            }
        }
        None
    }

    /// Writes the next segment of the GSO frame being cut into the scratch buffer and returns
    /// its length; `None` when no frame is being cut (any more).
    fn next_segment(&mut self) -> Option<usize> {
        let seg = self.segmenter?;
        while self.segment < seg.count() {
            let k = self.segment;
            self.segment += 1;
            let b = &mut *self.batch;
            let frame = &b.data[self.slot * b.slot_len + VNET_HDR_LEN..][..b.lens[self.slot]];
            if let Some(len) = seg.write(frame, k, &mut b.scratch) {
                return Some(len);
            }
        }
        self.segmenter = None;
        self.slot += 1;
        None
    }

    /// Makes the current slot's frame ready: `Ok(None)` to hand it over as it is,
    /// `Ok(Some(_))` to segment it, `Err` to skip it (already counted).
    fn prepare(&mut self) -> Result<Option<Segmenter>, ()> {
        let Some(VnetSlot { hdr, frame, stats }) = self.batch.vnet_slot(self.slot)? else {
            return Ok(None);
        };
        let result = if hdr.is_gso() {
            Segmenter::new(frame, &hdr).map(Some)
        } else if hdr.needs_checksum() {
            stats.checksum_completed += 1;
            vnet::complete_checksum(frame, &hdr).map(|()| None)
        } else {
            Ok(None)
        };
        result.map_err(|e| stats.count(e))
    }

    /// Reads slot `slot`'s header into a [`FrameMeta`]; `Err` to skip the frame (counted).
    fn inspect(&mut self, slot: usize) -> Result<FrameMeta, ()> {
        let Some(VnetSlot { hdr, frame, stats }) = self.batch.vnet_slot(slot)? else {
            return Ok(FrameMeta::COMPLETE);
        };
        let meta = FrameMeta::from_vnet(&hdr, frame).map_err(|e| stats.count(e))?;
        if meta.gso.is_some() {
            stats.gso_kept += 1;
        }
        Ok(meta)
    }
}

impl FrameBatch {
    /// The frame in slot `slot`, after its headroom.
    fn frame(&self, slot: usize) -> &[u8] {
        &self.data[slot * self.slot_len + VNET_HDR_LEN..][..self.lens[slot]]
    }

    /// Slot `slot`'s virtio-net header and frame; `Ok(None)` without a header, `Err` for an
    /// empty (dropped) slot.
    fn vnet_slot(&mut self, slot: usize) -> Result<Option<VnetSlot<'_>>, ()> {
        let len = self.lens[slot];
        if len == 0 {
            return Err(());
        }
        if !self.vnet {
            return Ok(None);
        }
        let bytes = &mut self.data[slot * self.slot_len..][..VNET_HDR_LEN + len];
        let (head, frame) = bytes.split_at_mut(VNET_HDR_LEN);
        let mut raw = [0; VNET_HDR_LEN];
        raw.copy_from_slice(head);
        Ok(Some(VnetSlot {
            hdr: VnetHdr::parse(&raw),
            frame,
            stats: &mut self.stats,
        }))
    }
}

/// One received frame with its virtio-net header, and the counters to charge.
struct VnetSlot<'a> {
    hdr: VnetHdr,
    frame: &'a mut [u8],
    stats: &'a mut FrameBatchStats,
}

impl FrameBatchStats {
    fn count(&mut self, e: VnetError) {
        match e {
            VnetError::Malformed => self.vnet_malformed += 1,
            VnetError::UnsupportedGso(_) => self.gso_unsupported += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame "received" into the next slot as `recvmmsg` would write it.
    fn receive(batch: &mut FrameBatch, frame: &[u8], vnet_head: Option<[u8; VNET_HDR_LEN]>) {
        let at = batch.len;
        let slot = batch.slots().nth(at).unwrap();
        let len = match vnet_head {
            Some(h) => {
                slot[..VNET_HDR_LEN].copy_from_slice(&h);
                slot[VNET_HDR_LEN..VNET_HDR_LEN + frame.len()].copy_from_slice(frame);
                VNET_HDR_LEN + frame.len()
            }
            None => {
                slot[..frame.len()].copy_from_slice(frame);
                frame.len()
            }
        };
        batch.push(len, false);
    }

    #[test]
    fn a_tag_taken_out_by_the_kernel_is_put_back() {
        let untagged: Vec<u8> = (0u8..60).collect();
        let mut batch = FrameBatch::new(4, 64);
        batch.reset(false);
        receive(&mut batch, &untagged, None);
        batch.restore_tag([0x81, 0x00, 0x00, 0x0a]);
        // A frame with no room left for the tag is dropped as truncated, not cut.
        receive(&mut batch, &[7u8; 64], None);
        batch.restore_tag([0x88, 0xa8, 0x00, 0x14]);
        let mut frames = batch.frames();
        let got = frames.next_frame().unwrap().to_vec();
        assert_eq!(got.len(), 64);
        assert_eq!(&got[..12], &untagged[..12]);
        assert_eq!(&got[12..16], &[0x81, 0x00, 0x00, 0x0a]);
        assert_eq!(&got[16..], &untagged[12..]);
        assert!(frames.next_frame().is_none());
        assert_eq!(batch.stats().truncated, 1);
    }

    #[test]
    fn a_virtio_net_header_follows_the_tag() {
        let mut batch = FrameBatch::new(2, 128);
        batch.reset(true);
        let head = crate::vnet::VnetHdr {
            flags: crate::vnet::F_NEEDS_CSUM,
            csum_start: 34,
            csum_offset: 6,
            ..Default::default()
        };
        receive(&mut batch, &[1u8; 80], Some(head.emit()));
        batch.restore_tag([0x81, 0x00, 0x00, 0x0a]);
        let slot = batch.slots().next().unwrap();
        let moved = crate::vnet::VnetHdr::parse(slot[..VNET_HDR_LEN].try_into().unwrap());
        assert_eq!((moved.csum_start, moved.csum_offset), (38, 6));
        assert_eq!(batch.lens[0], 84);
    }
}
