//! Receive-side coalescing: consecutive TCP segments of one flow, decapsulated from the
//! underlay one by one, put back together into one large frame that a port with the
//! virtio-net header takes whole ([`crate::FramePort::send_meta`] with a TCPV4/TCPV6
//! [`FrameMeta`]), so the receiving stack sees one 64 KiB frame instead of ~45 — what the
//! kernel's GRO does for a NIC and wireguard-go's TUN offload does for its TUN device.
//!
//! ```text
//!   push(dest, frame) ─► TCP segment that may be merged?  no ─► flush the held frame of its
//!          │                     │ yes                          flow (if any), emit it as is
//!          │                     ▼
//!          │          held frame of the same flow and dest that it extends? ─ yes ─► append
//!          │                     │ no
//!          │                     ▼
//!          │          flush that flow's held frame (if any); hold this one (a free slot,
//!          │          else the oldest held frame is flushed to make room)
//!   flush() ─► every held frame out: one segment as it came, more as a GSO frame
//! ```
//!
//! A segment is merged only as the kernel's `tcp_gro_receive` / `inet_gro_receive` would:
//! - same destination (`dest`: the caller's port), same Ethernet header (MACs, VLAN tags), same
//!   IP addresses and TCP ports (the caller keys per network: a port belongs to one);
//! - IPv4 without options or fragmentation, with the same TOS, TTL and DF bit, and an ID that
//!   counts up by one per segment (the kernel's TSO makes it so when it cuts the frame again);
//!   IPv6 without extension headers, with the same traffic class, flow label and hop limit;
//! - TCP flags ACK, or ACK|PSH (PSH closes the frame: nothing is appended after it); the same
//!   acknowledgement number, window, header length and options; the sequence number where the
//!   held frame ends; a payload of the held frame's segment size, or a smaller one that closes
//!   the frame;
//! - an IPv4 header checksum and a TCP checksum that verify. The merged frame leaves with a
//!   partial checksum (`NEEDS_CSUM`) that the receiving stack trusts, so a segment whose
//!   checksum was wrong would be made right: such a segment, like one whose checksum cannot be
//!   checked because its sender left it partial (a kernel VTEP's veth peer), goes as it is;
//! - at most [`MAX_COALESCED`] bytes of IP packet.
//!
//! At most `max_flows` frames are held (each in a buffer of [`crate::MAX_FRAME`] bytes,
//! allocated when the coalescer is made); the caller flushes after every receive batch, so a
//! segment waits at most one batch.

use nvo_wire::EtherType;

use crate::meta::{FrameMeta, Gso, GsoKind};
use crate::vnet::{fold, ip_offset, sum_words_fast};
use crate::MAX_FRAME;

/// Largest IP packet a coalesced frame carries (the IPv4 total length field's limit).
pub const MAX_COALESCED: usize = 65_535;

/// What a frame given to [`Coalescer::push`] turned out to be; for counters and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Held: it starts a new frame.
    Started,
    /// Held: appended to a held frame of its flow.
    Appended,
    /// Emitted as it is (not a segment that may be merged).
    Passed,
}

/// One frame the coalescer emits: `frame` with `meta` (a GSO frame when `segments > 1`).
#[derive(Debug)]
pub struct Coalesced<'a> {
    /// Where it goes: the `dest` it was pushed with.
    pub dest: u32,
    /// The frame.
    pub frame: &'a [u8],
    /// [`FrameMeta::COMPLETE`] for one segment; TCP GSO with a partial checksum for more.
    pub meta: FrameMeta,
    /// How many received segments it holds.
    pub segments: usize,
    /// Length of the headers (Ethernet to the end of TCP) each segment had.
    pub headers: usize,
}

impl<'a> Coalesced<'a> {
    /// `frame` as it came: one segment with `headers` bytes of headers, checksums complete.
    fn single(dest: u32, frame: &'a [u8], headers: usize) -> Self {
        Coalesced {
            dest,
            frame,
            meta: FrameMeta::COMPLETE,
            segments: 1,
            headers,
        }
    }

    /// The length of each received segment it holds, in order (for per-segment counters).
    pub fn segment_lens(&self) -> impl Iterator<Item = usize> + '_ {
        let payload = self.frame.len() - self.headers;
        let mss = self
            .meta
            .gso
            .map_or(payload, |g| usize::from(g.size))
            .max(1);
        (0..self.segments).map(move |k| self.headers + payload.saturating_sub(k * mss).min(mss))
    }
}

/// The parts of a TCP segment the merge rules look at.
#[derive(Clone, Copy, Debug)]
struct Segment {
    l3: usize,
    l4: usize,
    /// End of the TCP header: where the payload starts.
    headers: usize,
    ipv4: bool,
    seq: u32,
    flags: u8,
    payload: usize,
    /// Whether the segment may be merged at all (flags, checksums, IP fields).
    mergeable: bool,
}

const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// A held frame.
#[derive(Debug)]
struct Held {
    dest: u32,
    buf: Box<[u8]>,
    len: usize,
    seg: Segment,
    /// Payload bytes of the first segment: the GSO size.
    mss: usize,
    segments: usize,
    /// Sequence number of the next byte expected.
    next_seq: u32,
    /// Nothing more may be appended (PSH seen, or a segment shorter than the MSS).
    closed: bool,
}

/// Holds TCP segments per flow and emits them merged; see the module docs.
#[derive(Debug)]
pub struct Coalescer {
    /// Oldest first (frames are added at the end and removed in place): the first is flushed
    /// first when slots run out.
    held: Vec<Held>,
    /// Free buffers (one per slot not in use).
    spare: Vec<Box<[u8]>>,
    merged: u64,
}

impl Coalescer {
    /// A coalescer that holds at most `max_flows` frames (clamped to 1..=64) at once.
    pub fn new(max_flows: usize) -> Self {
        let n = max_flows.clamp(1, 64);
        Coalescer {
            held: Vec::with_capacity(n),
            spare: (0..n)
                .map(|_| vec![0; MAX_FRAME].into_boxed_slice())
                .collect(),
            merged: 0,
        }
    }

    /// Whether no frame is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Segments appended to a held frame since the coalescer was made.
    pub fn merged(&self) -> u64 {
        self.merged
    }

    /// Takes `frame` (an Ethernet frame with complete checksums) for `dest`: holds it, appends
    /// it to a held frame, or emits it as it is — in every case after emitting, first, any held
    /// frame of its flow it cannot follow, so that a flow's bytes leave in order.
    pub fn push(&mut self, dest: u32, frame: &[u8], emit: &mut dyn FnMut(Coalesced<'_>)) -> Pushed {
        let Some(seg) = parse(frame) else {
            emit(Coalesced::single(dest, frame, frame.len()));
            return Pushed::Passed;
        };
        let found = self
            .held
            .iter()
            .position(|h| h.dest == dest && same_flow(&h.buf[..h.len], &h.seg, frame, &seg));
        if let Some(i) = found {
            if seg.mergeable && self.append(i, frame, &seg) {
                self.merged += 1;
                return Pushed::Appended;
            }
            self.emit_at(i, emit);
        }
        if !seg.mergeable || frame.len() > MAX_FRAME {
            emit(Coalesced::single(dest, frame, seg.headers));
            return Pushed::Passed;
        }
        if self.spare.is_empty() {
            self.emit_at(0, emit);
        }
        let Some(mut buf) = self.spare.pop() else {
            // Not reached: a slot was just freed; emitting keeps the frame anyway.
            emit(Coalesced::single(dest, frame, seg.headers));
            return Pushed::Passed;
        };
        buf[..frame.len()].copy_from_slice(frame);
        self.held.push(Held {
            dest,
            buf,
            len: frame.len(),
            seg,
            mss: seg.payload,
            segments: 1,
            next_seq: seg.seq.wrapping_add(seg.payload as u32),
            closed: seg.flags & PSH != 0,
        });
        Pushed::Started
    }

    /// Emits every held frame, oldest first.
    pub fn flush(&mut self, emit: &mut dyn FnMut(Coalesced<'_>)) {
        while !self.held.is_empty() {
            self.emit_at(0, emit);
        }
    }

    /// Emits the held frame of `frame`'s flow to `dest`, if one is held: for a caller about to
    /// send `frame` some other way (with its own metadata), so that it does not overtake.
    pub fn flush_flow(&mut self, dest: u32, frame: &[u8], emit: &mut dyn FnMut(Coalesced<'_>)) {
        let Some(seg) = parse(frame) else {
            return;
        };
        if let Some(i) = self
            .held
            .iter()
            .position(|h| h.dest == dest && same_flow(&h.buf[..h.len], &h.seg, frame, &seg))
        {
            self.emit_at(i, emit);
        }
    }

    /// Appends `frame` to held frame `i` if the rules allow; false, changing nothing, if not.
    fn append(&mut self, i: usize, frame: &[u8], seg: &Segment) -> bool {
        let h = &mut self.held[i];
        let held = &h.buf[..h.len];
        let fits = !h.closed
            && seg.seq == h.next_seq
            && seg.payload <= h.mss
            && seg.headers == h.seg.headers
            && h.len + seg.payload - h.seg.l3 <= MAX_COALESCED
            && h.len + seg.payload <= MAX_FRAME
            && same_fields(held, &h.seg, frame, seg, h.segments);
        if !fits {
            return false;
        }
        h.buf[h.len..h.len + seg.payload].copy_from_slice(&frame[seg.headers..]);
        h.len += seg.payload;
        h.segments += 1;
        h.next_seq = h.next_seq.wrapping_add(seg.payload as u32);
        if seg.flags & PSH != 0 {
            h.buf[h.seg.l4 + 13] |= PSH;
            h.closed = true;
        }
        if seg.payload < h.mss {
            h.closed = true;
        }
        true
    }

    /// Emits held frame `i` and frees its slot, keeping the others in order.
    fn emit_at(&mut self, i: usize, emit: &mut dyn FnMut(Coalesced<'_>)) {
        let mut h = self.held.remove(i);
        let seg = h.seg;
        let frame = &mut h.buf[..h.len];
        let meta = if h.segments > 1 {
            finish_headers(frame, &seg);
            FrameMeta {
                gso: Some(Gso {
                    kind: if seg.ipv4 {
                        GsoKind::Tcp4
                    } else {
                        GsoKind::Tcp6
                    },
                    size: h.mss as u16,
                    ecn: false,
                }),
                csum: Some((seg.l4 as u16, 16)),
            }
        } else {
            FrameMeta::COMPLETE
        };
        emit(Coalesced {
            dest: h.dest,
            frame,
            meta,
            segments: h.segments,
            headers: seg.headers,
        });
        self.spare.push(h.buf);
    }
}

/// Parses a TCP segment of an untagged or VLAN-tagged IPv4/IPv6 frame; `None` for anything
/// else (no flow to keep in order). `mergeable` says whether the merge rules allow it at all.
fn parse(frame: &[u8]) -> Option<Segment> {
    let (l3, ipv4) = match ip_offset(frame)? {
        (l3, EtherType::Ipv4) => (l3, true),
        (l3, EtherType::Ipv6) => (l3, false),
        _ => return None,
    };
    let ip = frame.get(l3..)?;
    let (l4, ip_len, ip_ok) = if ipv4 {
        let ihl = usize::from(ip.first()? & 0x0f) * 4;
        if ip.first()? >> 4 != 4 || ihl < 20 || *ip.get(9)? != 6 {
            return None;
        }
        let frag = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]);
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        // No options, no fragment (MF or an offset), a header checksum that verifies.
        let ok =
            ihl == 20 && frag & 0x3fff == 0 && fold(sum_words_fast(ip.get(..20)?, 0)) == 0xffff;
        (l3 + ihl, total, ok)
    } else {
        if ip.first()? >> 4 != 6 || *ip.get(6)? != 6 {
            return None;
        }
        let payload = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
        (l3 + 40, 40 + payload, true)
    };
    let tcp = frame.get(l4..)?;
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    let headers = l4 + doff;
    if doff < 20 || headers > frame.len() || l3 + ip_len != frame.len() {
        // Padding after the IP packet, or a length that lies: not merged, but still a flow.
        let seq = u32::from_be_bytes(tcp.get(4..8)?.try_into().ok()?);
        return Some(Segment {
            l3,
            l4,
            headers: headers.min(frame.len()),
            ipv4,
            seq,
            flags: *tcp.get(13)?,
            payload: 0,
            mergeable: false,
        });
    }
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    let flags = tcp[13];
    let payload = frame.len() - headers;
    let flags_ok = flags & !PSH == ACK;
    let mergeable = ip_ok && flags_ok && payload > 0 && tcp_checksum_ok(frame, l3, l4, ipv4);
    Some(Segment {
        l3,
        l4,
        headers,
        ipv4,
        seq,
        flags,
        payload,
        mergeable,
    })
}

/// Whether the TCP checksum verifies (the folded sum over pseudo-header and segment is
/// 0xffff, RFC 1071).
fn tcp_checksum_ok(frame: &[u8], l3: usize, l4: usize, ipv4: bool) -> bool {
    let addrs = if ipv4 {
        &frame[l3 + 12..l3 + 20]
    } else {
        &frame[l3 + 8..l3 + 40]
    };
    let len = (frame.len() - l4) as u64;
    let acc = sum_words_fast(addrs, 6 + len);
    fold(sum_words_fast(&frame[l4..], acc)) == 0xffff
}

/// Same destination flow: Ethernet header, IP addresses, TCP ports.
fn same_flow(a: &[u8], sa: &Segment, b: &[u8], sb: &Segment) -> bool {
    if sa.l3 != sb.l3 || sa.ipv4 != sb.ipv4 || sa.l4 != sb.l4 || a[..sa.l3] != b[..sb.l3] {
        return false;
    }
    let addrs = if sa.ipv4 { 12..20 } else { 8..40 };
    let (la, lb) = (sa.l3, sb.l3);
    a[la + addrs.start..la + addrs.end] == b[lb + addrs.start..lb + addrs.end]
        && a.get(sa.l4..sa.l4 + 4) == b.get(sb.l4..sb.l4 + 4)
}

/// The IP and TCP fields that must agree for `b` to follow held frame `a` of `count` segments:
/// everything of the headers but lengths, checksums, the IPv4 ID (which must count up), the
/// sequence number and PSH.
fn same_fields(a: &[u8], sa: &Segment, b: &[u8], sb: &Segment, count: usize) -> bool {
    let (la, lb) = (sa.l3, sb.l3);
    let ip_same = if sa.ipv4 {
        let id_a = u16::from_be_bytes([a[la + 4], a[la + 5]]);
        let id_b = u16::from_be_bytes([b[lb + 4], b[lb + 5]]);
        a[la..la + 2] == b[lb..lb + 2] // version, IHL, TOS
            && a[la + 6..la + 10] == b[lb + 6..lb + 10] // flags (DF), fragment offset, TTL, protocol
            && id_b == id_a.wrapping_add(count as u16)
    } else {
        a[la..la + 4] == b[lb..lb + 4] // version, traffic class, flow label
            && a[la + 6..la + 8] == b[lb + 6..lb + 8] // next header, hop limit
    };
    let (ta, tb) = (sa.l4, sb.l4);
    ip_same
        && a[ta + 8..ta + 12] == b[tb + 8..tb + 12] // acknowledgement number
        && a[ta + 12] == b[tb + 12] // data offset
        && a[ta + 14..ta + 16] == b[tb + 14..tb + 16] // window
        && a[ta + 18..sa.headers] == b[tb + 18..sb.headers] // urgent pointer, options
}

/// Makes the headers of a merged frame say its new length: IP length (and the IPv4 header
/// checksum), and the TCP checksum field set to the pseudo-header sum, as a TSO sender leaves
/// it (`CHECKSUM_PARTIAL`).
fn finish_headers(frame: &mut [u8], seg: &Segment) {
    let l3 = seg.l3;
    let l4_len = frame.len() - seg.l4;
    let addrs = if seg.ipv4 {
        let total = (frame.len() - l3) as u16;
        frame[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
        frame[l3 + 10..l3 + 12].fill(0);
        let sum = !fold(sum_words_fast(&frame[l3..l3 + 20], 0));
        frame[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
        l3 + 12..l3 + 20
    } else {
        let payload = (frame.len() - l3 - 40) as u16;
        frame[l3 + 4..l3 + 6].copy_from_slice(&payload.to_be_bytes());
        l3 + 8..l3 + 40
    };
    let pseudo = fold(sum_words_fast(&frame[addrs], 6 + l4_len as u64));
    let field = seg.l4 + 16;
    frame[field..field + 2].copy_from_slice(&pseudo.to_be_bytes());
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
