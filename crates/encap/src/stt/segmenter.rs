//! Cutting an STT frame into segments (draft-davie-stt-08 §3-§4), as Open vSwitch's STT sends
//! them after TSO/GSO.
//!
//! Every segment carries the same TCP-like header but for the offset: data offset 5, window
//! 0xffff, ACK on every segment and PSH on the last only (OVS sets ACK|PSH on the whole frame
//! in `__push_stt_header`; segmentation, `tcp_gso_segment` or the NIC, clears PSH on all but
//! the last), sequence number = frame length << 16 | offset, acknowledgement number = frame
//! ID, and a full TCP checksum over the outer pseudo-header (the datapath has no checksum
//! offload for raw sockets, so it is computed here).

use super::pseudo::pseudo_header_sum;
use super::{SttError, MAX_FRAME_LEN};
use nvo_wire::ports;
use nvo_wire::std_wire::IpAddress;
use nvo_wire::stt::{tcp_flags, SttSegmentPacket, SttSegmentRepr, STT_HEADER_LEN, TCP_HEADER_LEN};
use std::net::IpAddr;

/// The most frame bytes one segment carries: the segment must fit the 16-bit length the TCP
/// checksum's pseudo-header (and an IPv4 total length) allows.
const MAX_CHUNK: usize = MAX_FRAME_LEN - TCP_HEADER_LEN;

/// Cuts STT frames into segments, numbering frames from a counter.
///
/// The segments of the last frame live in one reusable buffer; once it has grown to the
/// largest frame seen, segmenting allocates nothing.
#[derive(Debug, Default)]
pub struct Segmenter {
    next_frame_id: u32,
    buf: Vec<u8>,
}

impl Segmenter {
    /// A segmenter whose first frame gets ID `first_frame_id`. Seed it from something that
    /// differs across restarts (time, randomness) so that a restarted sender does not reuse
    /// the IDs of frames a receiver may still be reassembling.
    pub fn new(first_frame_id: u32) -> Self {
        Segmenter {
            next_frame_id: first_frame_id,
            buf: Vec::new(),
        }
    }

    /// The ID the next frame will get.
    pub fn next_frame_id(&self) -> u32 {
        self.next_frame_id
    }

    /// Cuts `stt_frame` (the 18-byte STT header, then the inner Ethernet frame) into segments
    /// carrying at most `max_payload` frame bytes each, from `src` to `dst` with `src_port` as
    /// flow entropy. `max_payload` is the underlay MTU less the IP header and the 20-byte
    /// TCP-like header; values above 65515 are treated as 65515.
    ///
    /// Returns the segments, each the payload of one IP packet (protocol 6), in order.
    pub fn segment(
        &mut self,
        stt_frame: &[u8],
        src: IpAddr,
        dst: IpAddr,
        src_port: u16,
        max_payload: usize,
    ) -> Result<Segments<'_>, SttError> {
        let len = stt_frame.len();
        if len < STT_HEADER_LEN {
            return Err(SttError::FrameTooShort { len });
        }
        let Ok(frame_len) = u16::try_from(len) else {
            return Err(SttError::FrameTooLong { len });
        };
        if max_payload == 0 {
            return Err(SttError::MaxPayload { max_payload });
        }
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(SttError::AddressFamilies { src, dst });
        }
        let chunk_len = max_payload.min(MAX_CHUNK);
        let frame_id = self.next_frame_id;
        self.next_frame_id = frame_id.wrapping_add(1);

        let (src_ip, dst_ip) = (IpAddress::from(src), IpAddress::from(dst));
        let count = len.div_ceil(chunk_len);
        self.buf.clear();
        self.buf.reserve(count * TCP_HEADER_LEN + len);
        for (i, chunk) in stt_frame.chunks(chunk_len).enumerate() {
            let repr = SttSegmentRepr {
                src_port,
                dst_port: ports::STT,
                frame_len,
                // The offset is below `len`, itself at most 65535.
                fragment_offset: (i * chunk_len) as u16,
                frame_id,
            };
            let start = self.buf.len();
            self.buf.extend_from_slice(&[0; TCP_HEADER_LEN]);
            self.buf.extend_from_slice(chunk);
            let Some(bytes) = self.buf.get_mut(start..) else {
                continue;
            };
            let mut segment = SttSegmentPacket::new_unchecked(bytes);
            repr.emit(&mut segment)?;
            if i + 1 < count {
                segment.set_tcp_flags(tcp_flags::ACK);
            }
            segment.fill_checksum(&src_ip, &dst_ip)?;
        }
        Ok(Segments {
            buf: &self.buf,
            chunk_len,
            frame_id,
        })
    }
}

impl Segmenter {
    /// The TCP-like header for handing `stt_frame` whole to the kernel's TCP segmentation
    /// (TSO/GSO) instead of [`Segmenter::segment`]: the header of the first segment (offset 0,
    /// ACK|PSH), with the partial checksum a `NEEDS_CSUM` frame carries (the pseudo-header sum
    /// over the whole frame, [`pseudo_header_sum`]). The frame gets the next frame ID.
    ///
    /// Why the kernel then cuts exactly what [`Segmenter::segment`] cuts, given a segment size
    /// of `max_payload` (Linux `tcp_gso_segment`): every segment gets a copy of this header with
    /// the sequence number advanced by the payload before it, which adds the offset to the
    /// lower 16 bits (the frame length stays in the upper ones, as offsets stay below it); the
    /// acknowledgement number (frame ID), ports and window are copied; PSH is cleared on all
    /// but the last segment; each checksum is finished over its own segment. The STT header is
    /// payload, so it is in the first segment only.
    pub fn offload_header(
        &mut self,
        len: usize,
        src: IpAddr,
        dst: IpAddr,
        src_port: u16,
    ) -> Result<[u8; TCP_HEADER_LEN], SttError> {
        if len < STT_HEADER_LEN {
            return Err(SttError::FrameTooShort { len });
        }
        // The whole segment (header + frame) must fit the 16-bit IP and pseudo-header lengths.
        let (Ok(frame_len), true) = (u16::try_from(len), len <= MAX_CHUNK) else {
            return Err(SttError::FrameTooLong { len });
        };
        let tcp_len = (TCP_HEADER_LEN + len) as u32;
        let Some(partial) = pseudo_header_sum(src, dst, tcp_len) else {
            return Err(SttError::AddressFamilies { src, dst });
        };
        let frame_id = self.next_frame_id;
        self.next_frame_id = frame_id.wrapping_add(1);
        let repr = SttSegmentRepr {
            src_port,
            dst_port: ports::STT,
            frame_len,
            fragment_offset: 0,
            frame_id,
        };
        let mut header = [0u8; TCP_HEADER_LEN];
        let mut packet = SttSegmentPacket::new_unchecked(&mut header[..]);
        repr.emit(&mut packet)?;
        packet.set_checksum(partial);
        Ok(header)
    }
}

/// The segments of one frame, in order; each is a TCP-like header and its slice of the frame.
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    buf: &'a [u8],
    chunk_len: usize,
    frame_id: u32,
}

impl Segments<'_> {
    /// The ID the frame's segments carry (acknowledgement number).
    pub fn frame_id(&self) -> u32 {
        self.frame_id
    }
}

impl<'a> Iterator for Segments<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.buf.is_empty() {
            return None;
        }
        let len = self.buf.len().min(TCP_HEADER_LEN + self.chunk_len);
        let (segment, rest) = self.buf.split_at(len);
        self.buf = rest;
        Some(segment)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.buf.len().div_ceil(TCP_HEADER_LEN + self.chunk_len);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segments<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn cuts_at_max_payload_with_offsets_and_flags() {
        let frame: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
        let mut s = Segmenter::new(41);
        let segments = s.segment(&frame, A, B, 50000, 100).unwrap();
        assert_eq!((segments.frame_id(), segments.len()), (41, 3));
        let parsed: Vec<_> = segments
            .map(|b| {
                let p = SttSegmentPacket::new_checked(b).unwrap();
                let fields = (p.frame_len(), p.fragment_offset(), p.frame_id());
                (fields, p.tcp_flags(), p.payload().len(), p.window())
            })
            .collect();
        let ack = tcp_flags::ACK;
        assert_eq!(
            parsed,
            [
                ((250, 0, 41), ack, 100, 0xffff),
                ((250, 100, 41), ack, 100, 0xffff),
                ((250, 200, 41), ack | tcp_flags::PSH, 50, 0xffff),
            ]
        );
        assert_eq!(s.next_frame_id(), 42);
    }

    #[test]
    fn refuses_bad_input() {
        let mut s = Segmenter::default();
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(
            s.segment(&[0; 17], A, B, 1, 100).err(),
            Some(SttError::FrameTooShort { len: 17 })
        );
        assert_eq!(
            s.segment(&vec![0; 65536], A, B, 1, 100).err(),
            Some(SttError::FrameTooLong { len: 65536 })
        );
        assert_eq!(
            s.segment(&[0; 18], A, B, 1, 0).err(),
            Some(SttError::MaxPayload { max_payload: 0 })
        );
        assert!(matches!(
            s.segment(&[0; 18], A, v6, 1, 100),
            Err(SttError::AddressFamilies { .. })
        ));
        assert_eq!(s.next_frame_id(), 0, "refused frames use no id");
        assert_eq!(
            s.offload_header(65516, A, B, 1).err(),
            Some(SttError::FrameTooLong { len: 65516 })
        );
        assert_eq!(s.next_frame_id(), 0, "refused frames use no id");
    }

    /// The offload header is the first software segment's header but for the checksum, which
    /// holds the pseudo-header sum over the whole frame; finishing it over the header and the
    /// whole frame gives a checksum that verifies.
    #[test]
    fn offload_header_is_the_first_segments_header_with_a_partial_checksum() {
        let frame: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let mut s = Segmenter::new(9);
        let header = s.offload_header(frame.len(), A, B, 50001).unwrap();
        let first = s
            .segment(&frame, A, B, 50001, 1460)
            .unwrap()
            .next()
            .unwrap()
            .to_vec();
        let mut expected = first[..TCP_HEADER_LEN].to_vec();
        // Same fields, frame IDs 9 and 10, and ACK|PSH (the kernel clears PSH but on the last).
        expected[11] = 9;
        expected[13] = (tcp_flags::ACK | tcp_flags::PSH) as u8;
        assert_eq!(header[..16], expected[..16]);
        assert_eq!(header[18..], expected[18..]);
        let partial = pseudo_header_sum(A, B, (TCP_HEADER_LEN + frame.len()) as u32).unwrap();
        assert_eq!(u16::from_be_bytes([header[16], header[17]]), partial);
        let mut whole = header.to_vec();
        whole.extend_from_slice(&frame);
        let mut packet = SttSegmentPacket::new_unchecked(&mut whole[..]);
        let (sa, sb) = (IpAddress::from(A), IpAddress::from(B));
        assert!(
            !packet.verify_checksum(&sa, &sb),
            "a partial checksum does not verify"
        );
        packet.fill_checksum(&sa, &sb).unwrap();
        assert!(packet.verify_checksum(&sa, &sb));
    }
}
