//! parse → emit → parse on arbitrary bytes: never panics, and what parses re-emits to bytes that
//! parse to the same value, options included; nvo's identity option, when there, re-emits to
//! the same identity.

use nvo_wire::geneve::identity::{self, Identity};
use nvo_wire::geneve::{GenevePacket, GeneveRepr};

/// Runs the check on one input; panics when the header code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(packet) = GenevePacket::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.oam(),
        packet.critical(),
        packet.protocol(),
        packet.vni(),
    );
    let _ = (packet.options(), packet.payload());
    for option in packet.option_iter() {
        let Ok(option) = option else { break };
        let _ = (option.critical(), option.buffer_len());
    }
    let Ok(repr) = GeneveRepr::parse(&packet) else {
        return;
    };
    let _ = repr.to_string();
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut GenevePacket::new_unchecked(&mut out[..]))
        .expect("emit into buffer_len bytes");
    let again =
        GeneveRepr::parse(&GenevePacket::new_checked(&out[..]).expect("emitted header checks"))
            .expect("emitted header parses");
    assert_eq!(repr, again);
    assert!(repr.option_iter().eq(again.option_iter()));
    if let Ok(Some(id)) = Identity::find(repr.options) {
        let mut option = [0u8; identity::LEN];
        id.emit(&mut option).expect("emit into LEN bytes");
        assert_eq!(Identity::find(&option), Ok(Some(id)));
    }
}
