//! parse → emit → parse on arbitrary bytes: never panics, and what parses re-emits to bytes that
//! parse to the same value.

use nvo_wire::vxlan::{VxlanPacket, VxlanRepr};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(packet) = VxlanPacket::new_checked(data) else {
        return;
    };
    let _ = (packet.vni(), packet.group_policy_id(), packet.payload());
    let Ok(repr) = VxlanRepr::parse(&packet) else {
        return;
    };
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut VxlanPacket::new_unchecked(&mut out[..]))
        .expect("emit into buffer_len bytes");
    let again =
        VxlanRepr::parse(&VxlanPacket::new_checked(&out[..]).expect("emitted header checks"))
            .expect("emitted header parses");
    assert_eq!(repr, again);
}
