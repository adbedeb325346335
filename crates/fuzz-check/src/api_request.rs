//! The JSON body of every request nvod's API accepts (`POST`/`PUT` on /v1/…; nvod's
//! `api::error::Body` decodes each with `serde_json::from_slice`): never panics; a body that
//! decodes re-encodes to JSON that decodes to the same value.

use serde::de::DeserializeOwned;
use serde::Serialize;

use nvo_api as api;

/// Runs the check on one input, decoded as each request type; panics when one misbehaves.
pub fn check(data: &[u8]) {
    // Not JSON at all is refused the same way by every type; find out once.
    if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_err() {
        return;
    }
    round_trip::<api::NetworkSpec>(data);
    round_trip::<api::PortSpec>(data);
    round_trip::<api::FdbAdd>(data);
    round_trip::<api::FlushRequest>(data);
    round_trip::<api::FloodAdd>(data);
    round_trip::<api::ProfileSpec>(data);
    round_trip::<api::KeyBinding>(data);
    round_trip::<api::RouteSpec>(data);
    round_trip::<api::OverlayInfo>(data);
    round_trip::<api::NodeLocators>(data);
    round_trip::<api::RouteNextHops>(data);
    round_trip::<api::ProbeRequest>(data);
    round_trip::<api::BgpConfig>(data);
}

fn round_trip<T>(data: &[u8])
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let Ok(value) = serde_json::from_slice::<T>(data) else {
        return;
    };
    let name = std::any::type_name::<T>();
    let json = serde_json::to_vec(&value)
        .unwrap_or_else(|e| panic!("{name} {value:?} decoded but does not encode: {e}"));
    let again: T = serde_json::from_slice(&json).unwrap_or_else(|e| {
        panic!(
            "{name} {value:?} encoded as {}, which does not decode: {e}",
            String::from_utf8_lossy(&json)
        )
    });
    assert_eq!(
        value, again,
        "{name}: decode -> encode -> decode changed it"
    );
}
