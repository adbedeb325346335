//! parse → emit → parse on arbitrary bytes: never panics, what parses re-emits to bytes that
//! parse to the same value, and the TLV walk stops after its first error.

use nvo_wire::nsh::{NshPacket, NshRepr, NshTlvs};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let mut tlvs = NshTlvs::new(data);
    while let Some(tlv) = tlvs.next() {
        if tlv.is_err() {
            assert!(tlvs.next().is_none(), "TLV walk went on after an error");
        }
    }
    let Ok(packet) = NshPacket::new_checked(data) else {
        return;
    };
    let _ = (packet.ttl(), packet.md_type(), packet.spi(), packet.si());
    let _ = (packet.metadata(), packet.payload());
    let Ok(repr) = NshRepr::parse(&packet) else {
        return;
    };
    assert_eq!(repr.buffer_len(), packet.header_len());
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut NshPacket::new_unchecked(&mut out[..]))
        .expect("emit into buffer_len bytes");
    let emitted = NshPacket::new_checked(&out[..]).expect("emitted header checks");
    let again = NshRepr::parse(&emitted).expect("emitted header parses");
    assert_eq!(repr, again);
}
