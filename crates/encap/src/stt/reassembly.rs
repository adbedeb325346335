//! Putting STT frames back together from their segments (draft-davie-stt-08 §4), bounded.
//!
//! Frames are keyed by (outer source, outer destination, frame ID), as Open vSwitch keys them
//! (`struct pkt_key` in its `stt.c`: saddr, daddr, ack_seq and the skb mark, which nvo has no
//! use for). The source port is not part of the key: it is flow entropy, the same for every
//! segment of a frame, and a sender's frame IDs are already unique among its frames in flight.
//!
//! Rules, checked in this order on every segment:
//! - at least the 20-byte TCP-like header and one byte of data, data offset ≥ 5, both
//!   addresses in one family, else `malformed`; the payload always starts after 20 bytes, as
//!   in OVS and Wireshark;
//! - destination port 7471, else `not_stt` (a raw TCP socket also sees the host's own TCP);
//! - a correct TCP checksum over the outer pseudo-header, else `bad_checksum` (OVS
//!   `validate_checksum`, before reassembly). A checksum field holding the bare pseudo-header
//!   sum for the segment's length ([`super::pseudo_header_sum`]) is taken as correct too: that
//!   is what the kernel leaves in a segment whose checksum it verified or trusts and did not
//!   finish — one GRO merged from several (`tcp4_gro_complete`), or one its GSO cut from a
//!   local sender's frame that crossed a veth with checksum offload (nvod's own offloaded STT,
//!   `SttTso`). OVS, in the kernel, reads the same from `skb->ip_summed`; a raw socket has
//!   only the bytes. A segment corrupted on a wire into exactly that value is let through,
//!   as one corrupted into any other valid checksum would be;
//! - frame length ≥ 18, offset + data ≤ frame length, and the same frame length as the
//!   frame's earlier segments, else `malformed` (the segment is dropped, the frame kept).
//!
//! A frame in one segment is returned as a slice of that segment, without copying. Otherwise
//! the data is copied into a buffer for the frame. Segments may come in any order. A segment
//! lying entirely over received bytes with the same content is a `duplicate` and ignored; any
//! other overlap drops the whole frame (`overlaps`; RFC 5722's rule for IPv6 fragments, where
//! OVS drops only the overlapping segment). A frame whose received bytes would form more than
//! [`super::MAX_SPANS`] separate ranges is dropped (`too_many_holes`).
//!
//! Bounds: a frame expires `timeout` after its first segment arrived (RFC 791's reassembly
//! timer; OVS `FRAG_EXP_TIME`, 30 s), checked lazily on every push and by [`Reassembler::expire`].
//! At most `max_frames` frames and `max_bytes` bytes of declared frame length are in progress;
//! a new frame that would exceed either evicts the least recently touched frames first
//! (`evicted`), and a frame longer than `max_bytes` by itself is refused (`too_large`).

use super::coverage::{Coverage, Place};
use super::list::{Links, List};
use super::pool::Pool;
use super::pseudo::pseudo_header_sum;
use nvo_wire::ports;
use nvo_wire::std_wire::IpAddress;
use nvo_wire::stt::{SttSegmentPacket, STT_HEADER_LEN, TCP_HEADER_LEN};
use serde::Serialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How much reassembly state one node keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyLimits {
    /// Most bytes of frames in progress (their declared lengths). Default 16 MiB.
    pub max_bytes: usize,
    /// Most frames in progress. Default 1024.
    pub max_frames: usize,
    /// How long a frame may take from its first segment on. Default 30 s.
    pub timeout: Duration,
}

impl Default for ReassemblyLimits {
    fn default() -> Self {
        ReassemblyLimits {
            max_bytes: 16 << 20,
            max_frames: 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// What reassembly has done, for the API. All counts since creation, except the two gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReassemblyCounters {
    /// Segments pushed, whatever became of them.
    pub segments: u64,
    /// Frames that arrived in one segment.
    pub frames_single: u64,
    /// Frames put together from several segments.
    pub frames_reassembled: u64,
    /// Segments ignored as exact duplicates.
    pub duplicates: u64,
    /// Frames dropped for a segment overlapping received bytes with other content.
    pub overlaps: u64,
    /// Segments dropped for a wrong TCP checksum.
    pub bad_checksum: u64,
    /// Segments dropped for an impossible header or length.
    pub malformed: u64,
    /// Segments not to the STT port (other TCP).
    pub not_stt: u64,
    /// Frames dropped unfinished when their time ran out.
    pub expired: u64,
    /// Frames dropped unfinished to make room for a new one.
    pub evicted: u64,
    /// Frames refused for a declared length above `max_bytes`.
    pub too_large: u64,
    /// Frames dropped for having too many holes at once.
    pub too_many_holes: u64,
    /// Gauge: frames in progress.
    pub in_progress: u64,
    /// Gauge: bytes of frames in progress (declared lengths).
    pub bytes_buffered: u64,
}

/// Why [`Reassembler::push`] dropped a segment; each has the counter of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum SttDrop {
    /// Impossible header or length.
    #[error("malformed stt segment")]
    Malformed,
    /// Not to the STT port.
    #[error("tcp segment not to the stt port")]
    NotStt,
    /// Wrong TCP checksum.
    #[error("stt segment with a bad checksum")]
    BadChecksum,
    /// Exact duplicate of received bytes (harmless).
    #[error("duplicate stt segment")]
    Duplicate,
    /// Overlaps received bytes with other content: the frame is dropped.
    #[error("overlapping stt segment, frame dropped")]
    Overlap,
    /// The frame is longer than `max_bytes`.
    #[error("stt frame longer than the reassembly limit")]
    TooLarge,
    /// The frame would have too many holes: it is dropped.
    #[error("stt frame with too many holes, dropped")]
    TooManyHoles,
}

impl SttDrop {
    /// The snake_case name, as the counter is named.
    pub const fn name(self) -> &'static str {
        match self {
            SttDrop::Malformed => "malformed",
            SttDrop::NotStt => "not_stt",
            SttDrop::BadChecksum => "bad_checksum",
            SttDrop::Duplicate => "duplicates",
            SttDrop::Overlap => "overlaps",
            SttDrop::TooLarge => "too_large",
            SttDrop::TooManyHoles => "too_many_holes",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    frame_id: u32,
}

/// A checked segment.
struct Segment<'a> {
    key: Key,
    frame_len: u16,
    offset: u16,
    data: &'a [u8],
}

/// One frame in progress. Idle slots keep their coverage array for the next frame.
#[derive(Debug)]
struct Slot {
    key: Key,
    frame_len: u16,
    created: Instant,
    buf: Vec<u8>,
    coverage: Coverage,
}

/// Reassembles STT frames; see the module documentation for the rules.
#[derive(Debug)]
pub struct Reassembler {
    limits: ReassemblyLimits,
    index: HashMap<Key, usize>,
    slots: Vec<Slot>,
    free_slots: Vec<usize>,
    /// Least recently touched first.
    lru: List,
    lru_links: Vec<Links>,
    /// Oldest first.
    age: List,
    age_links: Vec<Links>,
    pool: Pool,
    /// The buffer of the frame the last push completed, lent out until the next call.
    completed: Vec<u8>,
    counters: ReassemblyCounters,
    bytes_buffered: usize,
}

impl Reassembler {
    /// An empty reassembler. The index is sized for `max_frames` up front (up to 64 Ki), so
    /// only slots and buffers are allocated while warming up.
    pub fn new(limits: ReassemblyLimits) -> Self {
        let index_capacity = limits.max_frames.saturating_mul(2).min(1 << 16);
        Reassembler {
            limits,
            index: HashMap::with_capacity(index_capacity),
            slots: Vec::new(),
            free_slots: Vec::new(),
            lru: List::default(),
            lru_links: Vec::new(),
            age: List::default(),
            age_links: Vec::new(),
            pool: Pool::new(limits.max_bytes),
            completed: Vec::new(),
            counters: ReassemblyCounters::default(),
            bytes_buffered: 0,
        }
    }

    /// The limits it was made with.
    pub fn limits(&self) -> ReassemblyLimits {
        self.limits
    }

    /// The counters, gauges up to date.
    pub fn counters(&self) -> ReassemblyCounters {
        ReassemblyCounters {
            in_progress: self.index.len() as u64,
            bytes_buffered: self.bytes_buffered as u64,
            ..self.counters
        }
    }

    /// Takes one segment (the IP payload: TCP-like header and data) from `src` to `dst`.
    /// Returns the STT frame (STT header and inner Ethernet frame) when this segment completes
    /// one, `None` while it is still incomplete, or why the segment was dropped.
    pub fn push<'a>(
        &'a mut self,
        src: IpAddr,
        dst: IpAddr,
        segment: &'a [u8],
        now: Instant,
    ) -> Result<Option<&'a [u8]>, SttDrop> {
        self.release_completed();
        self.expire(now);
        self.counters.segments += 1;
        let result = match check(src, dst, segment) {
            Ok(seg) if seg.offset == 0 && seg.data.len() == usize::from(seg.frame_len) => {
                self.counters.frames_single += 1;
                return Ok(Some(seg.data));
            }
            Ok(seg) => self.add(seg, now),
            Err(drop) => Err(drop),
        };
        match result {
            Ok(true) => {
                self.counters.frames_reassembled += 1;
                Ok(Some(&self.completed))
            }
            Ok(false) => Ok(None),
            Err(drop) => {
                self.count(drop);
                Err(drop)
            }
        }
    }

    /// Drops every frame whose first segment arrived `timeout` or longer before `now`.
    /// Returns how many. [`Self::push`] does this too.
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut expired = 0;
        while let Some(i) = self.age.front() {
            let Some(slot) = self.slots.get(i) else {
                break;
            };
            if now.saturating_duration_since(slot.created) < self.limits.timeout {
                break;
            }
            self.discard(i);
            expired += 1;
        }
        self.counters.expired += expired as u64;
        expired
    }

    fn count(&mut self, drop: SttDrop) {
        let c = &mut self.counters;
        let counter = match drop {
            SttDrop::Malformed => &mut c.malformed,
            SttDrop::NotStt => &mut c.not_stt,
            SttDrop::BadChecksum => &mut c.bad_checksum,
            SttDrop::Duplicate => &mut c.duplicates,
            SttDrop::Overlap => &mut c.overlaps,
            SttDrop::TooLarge => &mut c.too_large,
            SttDrop::TooManyHoles => &mut c.too_many_holes,
        };
        *counter += 1;
    }

    /// Adds a segment of a multi-segment frame; true when the frame is now complete (and in
    /// `self.completed`).
    fn add(&mut self, seg: Segment<'_>, now: Instant) -> Result<bool, SttDrop> {
        let i = match self.index.get(&seg.key) {
            Some(&i) => i,
            None => self.start(seg.key, seg.frame_len, now)?,
        };
        let Some(slot) = self.slots.get_mut(i) else {
            return Err(SttDrop::Malformed);
        };
        if slot.frame_len != seg.frame_len {
            return Err(SttDrop::Malformed);
        }
        let start = usize::from(seg.offset);
        let end = start + seg.data.len();
        let (start32, end32) = (u32::from(seg.offset), end as u32);
        match slot.coverage.place(start32, end32) {
            Place::Covered if slot.buf.get(start..end) == Some(seg.data) => {
                return Err(SttDrop::Duplicate)
            }
            Place::Covered | Place::Overlap => {
                self.discard(i);
                return Err(SttDrop::Overlap);
            }
            Place::Missing { at } => {
                if !slot.coverage.insert(start32, end32, at) {
                    self.discard(i);
                    return Err(SttDrop::TooManyHoles);
                }
            }
        }
        // `check` bounded end by the frame length, and the buffer holds the frame.
        if let Some(dst) = slot.buf.get_mut(start..end) {
            dst.copy_from_slice(seg.data);
        }
        if !slot.coverage.complete(u32::from(slot.frame_len)) {
            self.lru.move_to_back(&mut self.lru_links, i);
            return Ok(false);
        }
        let len = usize::from(slot.frame_len);
        let mut buf = std::mem::take(&mut slot.buf);
        buf.truncate(len);
        self.discard(i);
        self.completed = buf;
        Ok(true)
    }

    /// Makes room for and starts a new frame; returns its slot.
    fn start(&mut self, key: Key, frame_len: u16, now: Instant) -> Result<usize, SttDrop> {
        let len = usize::from(frame_len);
        if len > self.limits.max_bytes {
            return Err(SttDrop::TooLarge);
        }
        while self.index.len() >= self.limits.max_frames
            || self.bytes_buffered + len > self.limits.max_bytes
        {
            let Some(victim) = self.lru.front() else {
                // Only with max_frames == 0: reassembly is off.
                return Err(SttDrop::TooLarge);
            };
            self.discard(victim);
            self.counters.evicted += 1;
        }
        let buf = self.pool.take(len);
        let i = match self.free_slots.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    key,
                    frame_len,
                    created: now,
                    buf: Vec::new(),
                    coverage: Coverage::default(),
                });
                self.lru_links.push(Links::default());
                self.age_links.push(Links::default());
                self.slots.len() - 1
            }
        };
        let Some(slot) = self.slots.get_mut(i) else {
            return Err(SttDrop::Malformed);
        };
        slot.key = key;
        slot.frame_len = frame_len;
        slot.created = now;
        slot.buf = buf;
        slot.coverage.clear();
        self.index.insert(key, i);
        self.lru.push_back(&mut self.lru_links, i);
        self.age.push_back(&mut self.age_links, i);
        self.bytes_buffered += len;
        Ok(i)
    }

    /// Forgets the frame in slot `i`, returning its buffer (if still there) to the pool.
    fn discard(&mut self, i: usize) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if self.index.remove(&slot.key).is_none() {
            return;
        }
        self.bytes_buffered = self
            .bytes_buffered
            .saturating_sub(usize::from(slot.frame_len));
        self.pool.give(std::mem::take(&mut slot.buf));
        self.lru.remove(&mut self.lru_links, i);
        self.age.remove(&mut self.age_links, i);
        self.free_slots.push(i);
    }

    fn release_completed(&mut self) {
        if self.completed.capacity() > 0 {
            let mut buf = std::mem::take(&mut self.completed);
            // Restore the class size `Pool::take` handed out.
            buf.resize(buf.capacity(), 0);
            self.pool.give(buf);
        }
    }
}

/// Checks one segment against the rules in the module documentation.
fn check(src: IpAddr, dst: IpAddr, bytes: &[u8]) -> Result<Segment<'_>, SttDrop> {
    let packet = SttSegmentPacket::new_checked(bytes).map_err(|_| SttDrop::Malformed)?;
    if bytes.len() <= TCP_HEADER_LEN
        || bytes.len() > usize::from(u16::MAX)
        || packet.data_offset() < 5
        || src.is_ipv4() != dst.is_ipv4()
    {
        return Err(SttDrop::Malformed);
    }
    if packet.dst_port() != ports::STT {
        return Err(SttDrop::NotStt);
    }
    let partial = pseudo_header_sum(src, dst, bytes.len() as u32);
    if partial != Some(packet.checksum())
        && !packet.verify_checksum(&IpAddress::from(src), &IpAddress::from(dst))
    {
        return Err(SttDrop::BadChecksum);
    }
    let data = packet.payload();
    let (frame_len, offset) = (packet.frame_len(), packet.fragment_offset());
    if usize::from(frame_len) < STT_HEADER_LEN
        || usize::from(offset) + data.len() > usize::from(frame_len)
    {
        return Err(SttDrop::Malformed);
    }
    let frame_id = packet.frame_id();
    Ok(Segment {
        key: Key { src, dst, frame_id },
        frame_len,
        offset,
        data,
    })
}
