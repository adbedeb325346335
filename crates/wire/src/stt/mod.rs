//! STT, the Stateless Transport Tunneling protocol (draft-davie-stt-08 §3).
//!
//! An STT *frame* (18-byte STT header, then the tenant's Ethernet frame) travels in one or more
//! *segments*: IP packets (protocol 6) whose 20-byte header is laid out like TCP's but reused.
//! The sequence number holds the frame length (upper 16 bits) and this segment's offset in the
//! frame (lower 16 bits); the acknowledgement number identifies the frame for reassembly; the
//! source port carries flow entropy and the destination port is 7471. [`SttSegmentPacket`]
//! reads that header in any segment, [`SttPacket`] the STT header that starts the frame (only
//! the segment at offset 0 has it). Segmentation and reassembly live elsewhere.
//!
//! ```text
//! draft-davie-stt-08 §3, TCP-like header (RFC 793 layout, fields reused by STT):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Source Port (entropy)       |   Destination Port (7471)     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     STT Frame Length          |      Fragment Offset          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |              Acknowledgement Number (Frame Identifier)        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Data |     |N|C|E|U|A|P|R|S|F|                               |
//! | Offset| Rsvd|S|W|C|R|C|S|S|Y|I|            Window             |
//! |       |     | |R|E|G|K|H|T|N|N|                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Checksum            |         Urgent Pointer        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! draft-davie-stt-08 §3, STT frame header (first segment only):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Version      | Flags         |  L4 Offset    |  Reserved     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Max. Segment Size          | PCP |V|     VLAN ID           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                     Context ID (64 bits)                      +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Padding                   |    Data (Ethernet frame) ...  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Version must be 0. §3 numbers the flags from the least significant bit, as Open vSwitch (by
//! the draft's authors) and Wireshark read them; see [`flags`]. Checksum verified and partial
//! "cannot both be set in the same header", so such a header does not parse. PCP and VLAN ID
//! mean something only when V is set. The STT frame length counts the 18-byte STT header and
//! the inner frame, not the TCP-like header (Open vSwitch `__push_stt_header`).

mod frame;
mod segment;

pub use frame::*;
pub use segment::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    // draft-davie-stt-08 has no example packet: these bytes were written by hand from the §3
    // diagrams. crates/wire/tests/stt.rs emits the same two headers (its first tshark case,
    // with a 60-byte inner frame) and checks that tshark's STT dissector reads every field
    // back, and that tshark's TCP dissector accepts the checksum nvo fills.
    #[rustfmt::skip]
    static SEGMENT: [u8; 20] = [
        0xc3, 0x50, 0x1d, 0x2f, // source port 50000, destination port 7471
        0x00, 0x4e, 0x00, 0x00, // frame length 78 (18 + 60), fragment offset 0
        0x00, 0x00, 0xab, 0xcd, // frame id 0xabcd
        0x50, 0x18, 0xff, 0xff, // data offset 5, ACK|PSH, window 65535
        0x00, 0x00, 0x00, 0x00, // checksum (not filled yet), urgent pointer
    ];
    #[rustfmt::skip]
    static HEADER: [u8; 18] = [
        0x00, 0x0e, 0x22, 0x00, // version 0, flags partial|ipv4|tcp, l4 offset 34, reserved
        0x05, 0xa8, 0x70, 0x64, // mss 1448, pcp 3, V, vlan 100
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // context id
        0x00, 0x00, // padding
    ];

    fn header_repr() -> SttRepr {
        SttRepr {
            flags: SttFlags::from_bits(flags::CHECKSUM_PARTIAL | flags::IPV4 | flags::TCP),
            l4_offset: 34,
            mss: 1448,
            vlan: Some((3, 100)),
            context_id: 0x1122_3344_5566_7788,
        }
    }

    fn segment_repr() -> SttSegmentRepr {
        SttSegmentRepr {
            src_port: 50000,
            dst_port: 7471,
            frame_len: 78,
            fragment_offset: 0,
            frame_id: 0xabcd,
        }
    }

    fn segment(b: &[u8]) -> SttSegmentPacket<&[u8]> {
        SttSegmentPacket::new_checked(b).unwrap()
    }

    fn header(b: &[u8]) -> SttPacket<&[u8]> {
        SttPacket::new_checked(b).unwrap()
    }

    #[test]
    fn deconstruct() {
        let p = segment(&SEGMENT);
        assert_eq!(
            (p.src_port(), p.dst_port(), p.frame_id()),
            (50000, 7471, 0xabcd)
        );
        assert_eq!(
            (p.frame_len(), p.fragment_offset(), p.seq_number()),
            (78, 0, 78 << 16)
        );
        assert_eq!(
            (p.data_offset(), p.header_len(), p.window()),
            (5, 20, 0xffff)
        );
        assert_eq!(p.tcp_flags(), tcp_flags::ACK | tcp_flags::PSH);
        assert!(p.payload().is_empty());

        let p = header(&HEADER);
        assert_eq!((p.version(), p.l4_offset(), p.mss()), (0, 34, 1448));
        assert!(!p.checksum_verified() && p.checksum_partial() && p.ipv4() && p.tcp());
        assert!(p.vlan_present() && p.pcp() == 3 && p.vlan_id() == 100);
        assert_eq!(p.context_id(), 0x1122_3344_5566_7788);
        assert_eq!(SttRepr::parse(&p), Ok(header_repr()));
        assert_eq!(
            SttSegmentRepr::parse(&segment(&SEGMENT)),
            Ok(segment_repr())
        );
    }

    #[test]
    fn construct() {
        let mut seg = [0xffu8; 20];
        segment_repr()
            .emit(&mut SttSegmentPacket::new_unchecked(&mut seg[..]))
            .unwrap();
        assert_eq!(seg, SEGMENT);
        let mut hdr = [0xffu8; 18];
        header_repr()
            .emit(&mut SttPacket::new_unchecked(&mut hdr[..]))
            .unwrap();
        assert_eq!(hdr, HEADER);
    }

    #[test]
    fn rejects_truncated_bad_version_and_both_checksum_flags() {
        let short = SttPacket::new_checked(&HEADER[..17]);
        assert_eq!(short, Err(Error::truncated("stt header", 18, 17)));
        let short = SttSegmentPacket::new_checked(&SEGMENT[..19]);
        assert_eq!(short, Err(Error::truncated("stt tcp-like header", 20, 19)));
        let mut b = HEADER;
        b[0] = 1;
        assert_eq!(
            SttRepr::parse(&header(&b)),
            Err(Error::invalid("stt version", 1))
        );
        let mut b = HEADER;
        b[1] = flags::CHECKSUM_VERIFIED | flags::CHECKSUM_PARTIAL;
        assert!(matches!(
            SttRepr::parse(&header(&b)),
            Err(Error::Invalid { .. })
        ));
    }
}
