//! parse → emit → parse on arbitrary bytes: never panics, and what parses re-emits to bytes that
//! parse to the same value; a re-emitted packet with its payload carries a valid checksum.

use nvo_wire::gre::{GrePacket, GreRepr};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(packet) = GrePacket::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.protocol(),
        packet.checksum(),
        packet.key(),
        packet.sequence(),
    );
    let _ = (packet.verify_checksum(), packet.payload());
    let Ok(repr) = GreRepr::parse(&packet) else {
        return;
    };
    let _ = (repr.to_string(), repr.as_nvgre());
    let payload = packet.payload();
    let mut out = vec![0u8; repr.buffer_len() + payload.len()];
    let n = repr
        .emit_with_payload(&mut out, payload)
        .expect("emit into buffer_len + payload bytes");
    let emitted = GrePacket::new_checked(&out[..n]).expect("emitted header checks");
    assert!(emitted.verify_checksum());
    assert_eq!(emitted.payload(), payload);
    let again = GreRepr::parse(&emitted).expect("emitted header parses");
    assert_eq!(repr, again);
}
