//! A user-defined encapsulation profile as `POST /v1/profiles` takes it (JSON; nvod's config
//! file and `profiles:` of a lab topology give the same [`ProfileSpec`]), converted and validated
//! by [`ProfileSpec::to_profile`] and compiled into an engine: never panics; a valid spec goes
//! spec → profile → spec → profile unchanged; the engine takes every valid profile unless its
//! transport or name is reserved, and the header it builds for a bound network decaps, by that
//! profile, to that network and to the whole header.

use std::net::{IpAddr, Ipv6Addr};

use nvo_encap::engine::{Engine, EngineError, Limits, Target};
use nvo_encap::spec::ProfileSpec;

const REMOTE: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

/// Runs the check on one input; panics when the profile code misbehaves.
pub fn check(data: &[u8]) {
    let Ok(spec) = serde_json::from_slice::<ProfileSpec>(data) else {
        return;
    };
    let Ok(profile) = spec.to_profile() else {
        return;
    };
    let shown = ProfileSpec::from(&profile);
    let again = shown
        .to_profile()
        .unwrap_or_else(|e| panic!("{profile:?} shows as {shown:?}, which is refused: {e}"));
    assert_eq!(
        profile, again,
        "spec -> profile -> spec -> profile changed it"
    );

    let mut engine = Engine::new(Limits::default());
    // Alone on its transport, the profile must read back every header it writes.
    let alone = !engine
        .receive_order()
        .any(|(transport, _)| transport == profile.transport);
    let id = match engine.add_profile(profile.clone()) {
        Ok(id) => id,
        Err(
            EngineError::TransportTaken { .. }
            | EngineError::ReservedTransport(_)
            | EngineError::DuplicateName(_),
        ) => return,
        Err(e) => panic!("{profile:?} is valid but the engine refuses it: {e}"),
    };
    let _ = engine.decap(profile.transport, data);
    let widest = profile.vni.map_or(0, |f| f.max_value());
    for vni in [0, 1, widest.min(0xff_ffff)] {
        let Ok(vni) = u32::try_from(vni) else {
            continue;
        };
        if engine.bind_local(id, vni, &[]).is_err() {
            continue;
        }
        for inner_len in [0, 1400, 70_000] {
            let Ok(header) = engine.header(id, vni, REMOTE, 0xbeef, inner_len) else {
                continue;
            };
            let mut header = header.to_vec();
            match engine.decap(profile.transport, &header) {
                Ok(d) if d.profile == id => {
                    assert_eq!(d.target, Target::Local { vni }, "{profile:?}");
                    assert_eq!(d.header_len, header.len(), "{profile:?}");
                }
                // A built-in on the same transport reads its own packets first.
                other => assert!(
                    !alone,
                    "{profile:?} wrote {header:02x?} for vni {vni}, which decaps as {other:?}"
                ),
            }
            let _ = engine.relay(id, &mut header);
        }
    }
}
