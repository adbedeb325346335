//! parse → emit → parse on arbitrary bytes: never panics, and what parses re-emits to bytes that
//! parse to the same value.

use nvo_wire::vxlan_gpe::{VxlanGpePacket, VxlanGpeRepr};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(packet) = VxlanGpePacket::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.next_protocol(),
        packet.vni(),
        packet.payload(),
    );
    let Ok(repr) = VxlanGpeRepr::parse(&packet) else {
        return;
    };
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut VxlanGpePacket::new_unchecked(&mut out[..]))
        .expect("emit into buffer_len bytes");
    let again =
        VxlanGpeRepr::parse(&VxlanGpePacket::new_checked(&out[..]).expect("emitted header checks"))
            .expect("emitted header parses");
    assert_eq!(repr, again);
}
