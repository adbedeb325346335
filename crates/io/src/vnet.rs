//! The virtio-net header (`struct virtio_net_hdr`, `include/uapi/linux/virtio_net.h`) that
//! AF_PACKET (`PACKET_VNET_HDR`) and TAP (`IFF_VNET_HDR`) put before each frame, and the
//! software fallbacks for what it asks of the reader.
//!
//! A frame a container sends through a veth with checksum offload arrives with
//! `CHECKSUM_PARTIAL`: the L4 checksum field holds only the pseudo-header sum and the header
//! says `NEEDS_CSUM` with `csum_start`/`csum_offset`; [`complete_checksum`] finishes it as
//! the kernel's `skb_checksum_help` would. A TCP sender with TSO hands over one frame of up to
//! 64 KiB with `gso_type` TCPV4/TCPV6 (UDP_L4 for UDP GSO) and `gso_size` = MSS; a
//! [`Segmenter`] cuts it into MTU-sized frames as the kernel's `tcp_gso_segment` would
//! (sequence numbers advanced, FIN/PSH only on the last segment, CWR only on the first, IPv4
//! ID incremented, lengths and checksums recomputed).
//!
//! ```text
//! struct virtio_net_hdr (10 bytes, host byte order for the legacy header used here)
//!   u8 flags        1 = NEEDS_CSUM, 2 = DATA_VALID
//!   u8 gso_type     0 NONE, 1 TCPV4, 3 UDP (UFO), 4 TCPV6, 5 UDP_L4; | 0x80 ECN
//!   u16 hdr_len     length of the headers to copy to each segment (a hint)
//!   u16 gso_size    payload bytes per segment
//!   u16 csum_start  offset from the frame start where checksumming starts (the L4 header)
//!   u16 csum_offset where, after csum_start, the checksum goes
//! ```

use nvo_wire::ip_proto::{TCP as PROTO_TCP, UDP as PROTO_UDP};
use nvo_wire::EtherType;

/// Length of the header before each frame.
pub const VNET_HDR_LEN: usize = 10;

/// A header that asks for nothing: sent before frames whose checksums are complete.
pub(crate) const VNET_HDR_NONE: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

pub(crate) const F_NEEDS_CSUM: u8 = 1;
pub(crate) const GSO_NONE: u8 = 0;
pub(crate) const GSO_TCPV4: u8 = 1;
pub(crate) const GSO_TCPV6: u8 = 4;
pub(crate) const GSO_UDP_L4: u8 = 5;
pub(crate) const GSO_ECN: u8 = 0x80;

/// Why a frame with a virtio-net header could not be made ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VnetError {
    /// Offsets or lengths that do not fit the frame.
    Malformed,
    /// A GSO type nvo does not segment (UFO, unknown).
    UnsupportedGso(u8),
}

/// A parsed virtio-net header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct VnetHdr {
    pub(crate) flags: u8,
    pub(crate) gso_type: u8,
    pub(crate) hdr_len: u16,
    pub(crate) gso_size: u16,
    pub(crate) csum_start: u16,
    pub(crate) csum_offset: u16,
}

impl VnetHdr {
    pub(crate) fn parse(b: &[u8; VNET_HDR_LEN]) -> Self {
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    pub(crate) fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }

    pub(crate) fn needs_checksum(&self) -> bool {
        self.flags & F_NEEDS_CSUM != 0
    }

    pub(crate) fn emit(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }
}

/// Moves the offsets of the virtio-net header in `head` (its first [`VNET_HDR_LEN`] bytes)
/// `by` bytes on, for a frame that grew by that much in front of them (a VLAN tag put back).
pub(crate) fn shift_offsets(head: &mut [u8], by: u16) {
    let Some(b) = head.get_mut(..VNET_HDR_LEN) else {
        return;
    };
    let Ok(fixed) = <&[u8; VNET_HDR_LEN]>::try_from(&*b) else {
        return;
    };
    let mut h = VnetHdr::parse(fixed);
    if h.needs_checksum() {
        h.csum_start = h.csum_start.saturating_add(by);
    }
    if h.is_gso() {
        h.hdr_len = h.hdr_len.saturating_add(by);
    }
    b.copy_from_slice(&h.emit());
}

/// Adds `data` as big-endian 16-bit words to `acc` (RFC 1071), an odd last byte padded.
fn sum_words(data: &[u8], mut acc: u64) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Adds `data` to `acc` as RFC 1071 does, 64 bits at a time with the carry added back in
/// (end-around carry): the one's complement sum of big-endian 64-bit words folds to the same 16
/// bits as that of 16-bit words (RFC 1071 §2 (B)). For the per-byte work of checksumming every
/// segment nvo cuts or merges. `acc` and the result are unfolded sums for [`fold`].
pub(crate) fn sum_words_fast(data: &[u8], acc: u64) -> u64 {
    let mut acc = acc;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let word = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        let (sum, carry) = acc.overflowing_add(word);
        acc = sum + u64::from(carry);
    }
    let rest = sum_words(words.remainder(), 0);
    let (sum, carry) = acc.overflowing_add(rest);
    sum + u64::from(carry)
}

/// Folds a sum to 16 bits, without complementing it.
pub(crate) fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Folds a sum to 16 bits and complements it.
fn finish(acc: u64) -> u16 {
    !fold(acc)
}

/// Finishes a `CHECKSUM_PARTIAL` frame: sums from `csum_start` to the end (the field already
/// holds the pseudo-header sum) and stores the result at `csum_start + csum_offset`. A zero
/// result is written as 0xffff, as `skb_checksum_help` does (required for UDP, RFC 768).
pub(crate) fn complete_checksum(frame: &mut [u8], hdr: &VnetHdr) -> Result<(), VnetError> {
    let start = usize::from(hdr.csum_start);
    let field = start + usize::from(hdr.csum_offset);
    if field + 2 > frame.len() {
        return Err(VnetError::Malformed);
    }
    let sum = match finish(sum_words_fast(&frame[start..], 0)) {
        0 => 0xffff,
        s => s,
    };
    frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    Ok(())
}

/// Cuts one GSO frame into segments, one at a time, into a caller's buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segmenter {
    l3: usize,
    l4: usize,
    /// Ethernet + IP + L4 header length: copied to every segment.
    headers: usize,
    ipv4: bool,
    tcp: bool,
    mss: usize,
    segments: usize,
}

impl Segmenter {
    /// Checks the frame against its header and prepares to segment it.
    pub(crate) fn new(frame: &[u8], hdr: &VnetHdr) -> Result<Self, VnetError> {
        let (tcp, want_v4) = match hdr.gso_type & !GSO_ECN {
            GSO_TCPV4 => (true, Some(true)),
            GSO_TCPV6 => (true, Some(false)),
            GSO_UDP_L4 => (false, None),
            other => return Err(VnetError::UnsupportedGso(other)),
        };
        let (l3, ethertype) = ip_offset(frame).ok_or(VnetError::Malformed)?;
        let ipv4 = match ethertype {
            EtherType::Ipv4 => true,
            EtherType::Ipv6 => false,
            _ => return Err(VnetError::Malformed),
        };
        if want_v4.is_some_and(|v4| v4 != ipv4) {
            return Err(VnetError::Malformed);
        }
        let l4 = usize::from(hdr.csum_start);
        let min_ip = if ipv4 { 20 } else { 40 };
        if l4 < l3 + min_ip || l4 + 8 > frame.len() {
            return Err(VnetError::Malformed);
        }
        if ipv4 && frame[l3 + 9] != if tcp { PROTO_TCP } else { PROTO_UDP } {
            return Err(VnetError::Malformed);
        }
        let l4_len = if tcp {
            usize::from(frame.get(l4 + 12).ok_or(VnetError::Malformed)? >> 4) * 4
        } else {
            8
        };
        let headers = l4 + l4_len;
        let mss = usize::from(hdr.gso_size);
        if l4_len < 8 || headers > frame.len() || mss == 0 {
            return Err(VnetError::Malformed);
        }
        let segments = (frame.len() - headers).div_ceil(mss).max(1);
        Ok(Segmenter {
            l3,
            l4,
            headers,
            ipv4,
            tcp,
            mss,
            segments,
        })
    }

    /// How many segments the frame yields.
    pub(crate) fn count(&self) -> usize {
        self.segments
    }

    /// Length of the headers copied to every segment (Ethernet, IP, TCP or UDP).
    pub(crate) fn headers(&self) -> usize {
        self.headers
    }

    /// Where the TCP or UDP checksum field sits, from the L4 header.
    pub(crate) fn checksum_offset(&self) -> u16 {
        if self.tcp {
            16
        } else {
            6
        }
    }

    /// Puts the pseudo-header sum of the whole frame in its L4 checksum field, as the kernel
    /// leaves a `CHECKSUM_PARTIAL` GSO frame (`~tcp_v4_check(len, ...)`): a frame coalesced by
    /// GRO carries its first segment's checksum instead, which a kernel that segments it again
    /// would start from.
    pub(crate) fn set_partial_checksum(&self, frame: &mut [u8]) {
        let l4_len = frame.len() - self.l4;
        let sum = fold(self.pseudo_header_sum(frame, l4_len));
        let field = self.l4 + usize::from(self.checksum_offset());
        frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    }

    /// Writes segment `k` of `frame` into `out` and returns its length, or `None` when `out`
    /// is too short or `k` is out of range.
    pub(crate) fn write(&self, frame: &[u8], k: usize, out: &mut [u8]) -> Option<usize> {
        if k >= self.segments {
            return None;
        }
        let payload = frame.get(self.headers..)?;
        let start = (k * self.mss).min(payload.len());
        let chunk = &payload[start..(start + self.mss).min(payload.len())];
        let len = self.headers + chunk.len();
        let seg = out.get_mut(..len)?;
        seg[..self.headers].copy_from_slice(&frame[..self.headers]);
        seg[self.headers..].copy_from_slice(chunk);
        let (l3, l4) = (self.l3, self.l4);
        let l4_len = len - l4;
        if self.ipv4 {
            let total = (len - l3) as u16;
            seg[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
            let id = u16::from_be_bytes([seg[l3 + 4], seg[l3 + 5]]).wrapping_add(k as u16);
            seg[l3 + 4..l3 + 6].copy_from_slice(&id.to_be_bytes());
            seg[l3 + 10..l3 + 12].fill(0);
            let ihl = usize::from(seg[l3] & 0x0f) * 4;
            let sum = finish(sum_words(&seg[l3..l3 + ihl], 0));
            seg[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
        } else {
            let payload_len = (len - l3 - 40) as u16;
            seg[l3 + 4..l3 + 6].copy_from_slice(&payload_len.to_be_bytes());
        }
        let check = if self.tcp {
            let seq = u32::from_be_bytes([seg[l4 + 4], seg[l4 + 5], seg[l4 + 6], seg[l4 + 7]])
                .wrapping_add((k * self.mss) as u32);
            seg[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if k + 1 < self.segments {
                seg[l4 + 13] &= !0x09; // FIN and PSH belong to the last segment
            }
            if k > 0 {
                seg[l4 + 13] &= !0x80; // CWR belongs to the first segment
            }
            l4 + 16
        } else {
            seg[l4 + 4..l4 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
            l4 + 6
        };
        seg[check..check + 2].fill(0);
        let pseudo = self.pseudo_header_sum(seg, l4_len);
        let sum = match finish(sum_words_fast(&seg[l4..], pseudo)) {
            0 if !self.tcp => 0xffff,
            s => s,
        };
        seg[check..check + 2].copy_from_slice(&sum.to_be_bytes());
        Some(len)
    }

    fn pseudo_header_sum(&self, seg: &[u8], l4_len: usize) -> u64 {
        let proto = u64::from(if self.tcp { PROTO_TCP } else { PROTO_UDP });
        let addrs = if self.ipv4 {
            &seg[self.l3 + 12..self.l3 + 20]
        } else {
            &seg[self.l3 + 8..self.l3 + 40]
        };
        sum_words(addrs, proto + l4_len as u64)
    }
}

/// Offset of the IP header and its ethertype, after any 802.1Q/802.1ad tags.
pub(crate) fn ip_offset(frame: &[u8]) -> Option<(usize, EtherType)> {
    let mut off = 12;
    loop {
        let ethertype =
            EtherType::from(u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]));
        if !ethertype.is_vlan_tag() {
            return Some((off + 2, ethertype));
        }
        off += 4;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use etherparse::{IpHeaders, PacketBuilder, PacketBuilderStep, SlicedPacket, TransportSlice};

    /// A frame from 02::01 to 02::02 up to its IP header: 10.0.0.1 → 10.0.0.2, or
    /// 2001:db8::1 → 2001:db8::2 when `v6` (the coalescer's tests build on it too).
    pub(crate) fn ip_builder(v6: bool) -> PacketBuilderStep<IpHeaders> {
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        if v6 {
            b.ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                64,
            )
        } else {
            b.ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        }
    }

    fn tcp_frame(v6: bool, payload: &[u8], flags_fin_psh_cwr: bool) -> Vec<u8> {
        let mut b = ip_builder(v6).tcp(40000, 80, 1_000_000, 65535).ack(7);
        if flags_fin_psh_cwr {
            b = b.fin().psh().cwr();
        }
        let mut frame = Vec::new();
        b.write(&mut frame, payload).unwrap();
        frame
    }

    /// Checks IP and TCP checksums; returns (sequence, payload, (fin, psh, cwr)).
    fn check_tcp(seg: &[u8]) -> (u32, Vec<u8>, (bool, bool, bool)) {
        let p = SlicedPacket::from_ethernet(seg).unwrap();
        let Some(TransportSlice::Tcp(tcp)) = p.transport else {
            panic!("not tcp")
        };
        let payload = tcp.payload().to_vec();
        let expected = match p.net.unwrap() {
            etherparse::NetSlice::Ipv4(ip) => {
                let h = ip.header();
                assert_eq!(
                    h.to_header().calc_header_checksum(),
                    h.header_checksum(),
                    "ipv4 checksum"
                );
                tcp.to_header()
                    .calc_checksum_ipv4(&h.to_header(), &payload)
                    .unwrap()
            }
            etherparse::NetSlice::Ipv6(ip) => tcp
                .to_header()
                .calc_checksum_ipv6(&ip.header().to_header(), &payload)
                .unwrap(),
            _ => panic!("not ip"),
        };
        assert_eq!(tcp.checksum(), expected, "tcp checksum");
        (
            tcp.sequence_number(),
            payload,
            (tcp.fin(), tcp.psh(), tcp.cwr()),
        )
    }

    #[test]
    fn tso_frames_segment_like_the_kernel() {
        for v6 in [false, true] {
            let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
            let frame = tcp_frame(v6, &payload, true);
            let l4 = if v6 { 14 + 40 } else { 14 + 20 };
            let gso_type = if v6 { GSO_TCPV6 } else { GSO_TCPV4 };
            let hdr = VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type,
                gso_size: 1400,
                csum_start: l4 as u16,
                csum_offset: 16,
                ..VnetHdr::default()
            };
            let seg = Segmenter::new(&frame, &hdr).unwrap();
            assert_eq!(seg.count(), 3);
            let mut out = vec![0; 2000];
            let mut joined = Vec::new();
            for k in 0..3 {
                let len = seg.write(&frame, k, &mut out).unwrap();
                let (seq, data, (fin, psh, cwr)) = check_tcp(&out[..len]);
                assert_eq!(seq, 1_000_000 + 1400 * k as u32);
                assert_eq!(
                    (fin, psh),
                    (k == 2, k == 2),
                    "fin and psh on the last segment only"
                );
                assert_eq!(cwr, k == 0, "cwr on the first segment only");
                joined.extend_from_slice(&data);
            }
            assert_eq!(joined, payload);
            assert_eq!(seg.write(&frame, 3, &mut out), None);
        }
    }

    proptest::proptest! {
        /// The 64-bit sum folds to what RFC 1071's 16-bit one does, whatever the length and
        /// the accumulator it starts from.
        #[test]
        fn the_fast_sum_is_the_rfc_1071_sum(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            acc in 0u64..(1 << 40),
        ) {
            proptest::prop_assert_eq!(fold(sum_words_fast(&data, acc)), fold(sum_words(&data, acc)));
        }
    }

    #[test]
    fn partial_checksums_are_completed() {
        // Build a valid UDP frame, then replace its checksum with the pseudo-header sum the
        // way a CHECKSUM_PARTIAL sender leaves it.
        let mut frame = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(1234, 5678)
            .write(&mut frame, b"hello, partial checksum")
            .unwrap();
        let good = frame.clone();
        let l4 = 34;
        let udp_len = frame.len() - l4;
        let pseudo = sum_words(&frame[26..34], u64::from(PROTO_UDP) + udp_len as u64);
        let mut folded = pseudo;
        while folded >> 16 != 0 {
            folded = (folded & 0xffff) + (folded >> 16);
        }
        frame[l4 + 6..l4 + 8].copy_from_slice(&(folded as u16).to_be_bytes());
        assert_ne!(frame, good);
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: l4 as u16,
            csum_offset: 6,
            ..VnetHdr::default()
        };
        complete_checksum(&mut frame, &hdr).unwrap();
        assert_eq!(frame, good);
        let bad = VnetHdr {
            csum_start: 60000,
            ..hdr
        };
        assert_eq!(
            complete_checksum(&mut frame, &bad),
            Err(VnetError::Malformed)
        );
    }

    #[test]
    fn malformed_gso_headers_are_refused() {
        let frame = tcp_frame(false, &[0; 100], false);
        let ok = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 54,
            gso_size: 40,
            csum_start: 34,
            csum_offset: 16,
        };
        assert_eq!(Segmenter::new(&frame, &ok).unwrap().count(), 3);
        assert_eq!(VnetHdr::parse(&ok.emit()), ok);
        for bad in [
            VnetHdr {
                gso_type: GSO_TCPV6,
                ..ok
            },
            VnetHdr { gso_size: 0, ..ok },
            VnetHdr {
                csum_start: 20,
                ..ok
            },
            VnetHdr {
                csum_start: 200,
                ..ok
            },
        ] {
            assert_eq!(
                Segmenter::new(&frame, &bad).unwrap_err(),
                VnetError::Malformed,
                "{bad:?}"
            );
        }
        let ufo = VnetHdr { gso_type: 3, ..ok };
        assert_eq!(
            Segmenter::new(&frame, &ufo).unwrap_err(),
            VnetError::UnsupportedGso(3)
        );
    }
}
