//! parse → emit → parse on arbitrary bytes, for both STT headers: never panics, and what parses
//! re-emits to bytes that parse to the same value. The input is read as one segment (TCP-like
//! header and payload), and its payload as an STT frame.

use nvo_wire::std_wire::{IpAddress, Ipv4Address, Ipv6Address};
use nvo_wire::stt::{SttPacket, SttRepr, SttSegmentPacket, SttSegmentRepr};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(segment) = SttSegmentPacket::new_checked(data) else {
        return;
    };
    let _ = (
        segment.seq_number(),
        segment.header_len(),
        segment.tcp_flags(),
        segment.window(),
    );
    let v4 = IpAddress::Ipv4(Ipv4Address::new(192, 0, 2, 1));
    let v6 = IpAddress::Ipv6(Ipv6Address::LOCALHOST);
    let _ = (
        segment.verify_checksum(&v4, &v4),
        segment.verify_checksum(&v4, &v6),
    );
    if let Ok(repr) = SttSegmentRepr::parse(&segment) {
        let _ = repr.to_string();
        let mut out = vec![0u8; repr.buffer_len()];
        let mut packet = SttSegmentPacket::new_unchecked(&mut out[..]);
        repr.emit(&mut packet).expect("emit into buffer_len bytes");
        assert!(packet.fill_checksum(&v4, &v6).is_err());
        packet
            .fill_checksum(&v4, &v4)
            .expect("same-family checksum");
        let again = SttSegmentRepr::parse(
            &SttSegmentPacket::new_checked(&out[..]).expect("emitted header checks"),
        )
        .expect("emitted header parses");
        assert_eq!(repr, again);
    }

    let Ok(frame) = SttPacket::new_checked(segment.payload()) else {
        return;
    };
    let _ = (
        frame.pcp(),
        frame.vlan_id(),
        frame.context_id(),
        frame.payload(),
    );
    let Ok(repr) = SttRepr::parse(&frame) else {
        return;
    };
    let _ = repr.to_string();
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut SttPacket::new_unchecked(&mut out[..]))
        .expect("emit into buffer_len bytes");
    let again = SttRepr::parse(&SttPacket::new_checked(&out[..]).expect("emitted header checks"))
        .expect("emitted header parses");
    assert_eq!(repr, again);
}
