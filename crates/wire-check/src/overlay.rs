//! parse → emit → parse on arbitrary bytes: never panics, and what parses re-emits to bytes that
//! parse to the same value. decrement_ttl never wraps.

use nvo_wire::overlay::{OverlayPacket, OverlayRepr};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(packet) = OverlayPacket::new_checked(data) else {
        return;
    };
    let _ = (
        packet.app(),
        packet.vni(),
        packet.flow_hash(),
        packet.payload(),
    );
    let mut copy = OverlayPacket::new_unchecked(data.to_vec());
    let ttl = copy.ttl();
    assert_eq!(copy.decrement_ttl(), ttl.checked_sub(1));
    let Ok(repr) = OverlayRepr::parse(&packet) else {
        return;
    };
    let _ = repr.to_string();
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut OverlayPacket::new_unchecked(&mut out[..]))
        .expect("emit into buffer_len bytes");
    let again =
        OverlayRepr::parse(&OverlayPacket::new_checked(&out[..]).expect("emitted header checks"))
            .expect("emitted header parses");
    assert_eq!(repr, again);
}
