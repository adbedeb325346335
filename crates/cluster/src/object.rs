//! The objects under the prefix, parsed and validated. [`parse_network`] and
//! [`parse_profile`] are the one check both `nvo --etcd network|profile add` (before writing)
//! and nvod (on what it reads) run: an object they refuse is never written by the CLI and
//! never applied by nvod.
//!
//! What needs a running nvod (the profile exists, the MTU fits its underlay, its limits, a
//! profile name its config file already uses) is checked by nvod when it applies the object,
//! with the same result: the object is skipped.

use std::collections::BTreeSet;
use std::net::IpAddr;

use nvo_api::{Bum, NetworkSpec, ProfileSpec};
use nvo_encap::engine::{Engine, EngineError, Limits};
use serde::{Deserialize, Serialize};

/// The largest VNI (24 bits).
pub const MAX_VNI: u32 = (1 << 24) - 1;
/// The smallest tenant MTU nvod accepts (as nvod's `values::MIN_MTU`).
pub const MIN_MTU: u16 = 576;
/// The largest tenant MTU (the pipeline's `NetworkSpec::MAX_MTU`: an IPv4 datagram's limit
/// less the smallest encapsulation).
pub const MAX_MTU: u16 = u16::MAX - 54;

/// Why an object is invalid; the message names the value and is what `nvo cluster status`
/// shows next to the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The key's last segment is not a decimal VNI.
    #[error("key segment {0:?} is not a decimal vni")]
    BadKey(String),
    /// Not JSON, wrong types or unknown fields (serde's words, with line and column).
    #[error("not a network object: {0}")]
    Json(String),
    /// The VNI is 0 or does not fit in 24 bits.
    #[error("vni {0} is out of range; use 1..=16777215")]
    Vni(u64),
    /// The object's `vni` differs from its key's.
    #[error("vni {body} in the object differs from vni {key} of its key")]
    VniMismatch {
        /// The key's VNI.
        key: u32,
        /// The body's VNI.
        body: u32,
    },
    /// The MTU is out of range.
    #[error("mtu {0} is out of range; use {MIN_MTU}..={MAX_MTU}")]
    Mtu(u16),
    /// Options that contradict each other or a value that can never be right.
    #[error("{0}")]
    Invalid(String),
    /// The key's last segment is not one profile name.
    #[error("key segment {0:?} is not a profile name")]
    BadProfileKey(String),
    /// Not JSON of a profile's shape (serde's words).
    #[error("not a profile object: {0}")]
    ProfileJson(String),
    /// The object's `name` differs from its key's.
    #[error("profile name {body:?} in the object differs from {key:?} of its key")]
    ProfileName {
        /// The key's name.
        key: String,
        /// The body's name.
        body: String,
    },
    /// A profile nvod's encapsulation engine refuses (the words of `POST /v1/profiles`).
    #[error("{0}")]
    Profile(String),
    /// An overlay node or route object that is not one (the words say which and why).
    #[error("{0}")]
    Overlay(String),
    /// A host record that is not `{"name", "locator", "node_id"}` or names another host.
    #[error("not a host record: {0}")]
    Host(String),
}

/// Parses the object stored at `networks/<key_vni>`: JSON of [`NetworkSpec`] whose `vni` is
/// `key_vni`, then [`validate_network`].
pub fn parse_network(key_vni: u32, bytes: &[u8]) -> Result<NetworkSpec, ObjectError> {
    // The VNI is checked on the raw value first, so that 2^24 or 2^40 gets the range message
    // rather than serde's.
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ObjectError::Json(e.to_string()))?;
    // serde would also take a struct from an array (`[100, 1400]`): only an object is one.
    if !value.is_object() {
        return Err(ObjectError::Json(format!(
            "expected a JSON object, found {}",
            kind(&value)
        )));
    }
    if let Some(vni) = value.get("vni").and_then(serde_json::Value::as_u64) {
        if vni == 0 || vni > u64::from(MAX_VNI) {
            return Err(ObjectError::Vni(vni));
        }
    }
    let spec: NetworkSpec =
        serde_json::from_value(value).map_err(|e| ObjectError::Json(e.to_string()))?;
    if spec.vni != key_vni {
        return Err(ObjectError::VniMismatch {
            key: key_vni,
            body: spec.vni,
        });
    }
    validate_network(&spec)?;
    Ok(spec)
}

fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// What can be checked of a network without an nvod: VNI and MTU ranges, option
/// combinations, the BUM mode's values, the flood list.
pub fn validate_network(spec: &NetworkSpec) -> Result<(), ObjectError> {
    let invalid = |why: String| Err(ObjectError::Invalid(why));
    if spec.vni == 0 || spec.vni > MAX_VNI {
        return Err(ObjectError::Vni(u64::from(spec.vni)));
    }
    if let Some(mtu) = spec.mtu {
        if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
            return Err(ObjectError::Mtu(mtu));
        }
    }
    match (spec.learning, spec.learn_ports, spec.learn_tunnels) {
        (Some(false), Some(true), _) => {
            return invalid("learning false with learn_ports true".into())
        }
        (Some(false), _, Some(true)) => {
            return invalid("learning false with learn_tunnels true".into())
        }
        (Some(true), Some(false), Some(false)) => {
            return invalid("learning true with learn_ports and learn_tunnels false".into())
        }
        _ => {}
    }
    match spec.bum {
        Some(Bum::Multicast { group }) if !group.is_multicast() => {
            return invalid(format!("bum group {group} is not a multicast address"));
        }
        Some(Bum::Overlay { node: 0 }) => {
            return invalid("bum overlay node 0 is not a node id; use 1..=4294967295".into())
        }
        _ => {}
    }
    if spec.max_learned == Some(0) {
        return invalid(
            "max_learned 0: a network must be able to learn one entry (or turn learning off)"
                .into(),
        );
    }
    if spec.ageing_s == Some(0) {
        return invalid("ageing_s 0 is out of range; use 1 or more".into());
    }
    for (what, value) in [
        ("max_learned_per_port", spec.max_learned_per_port),
        ("max_learned_per_remote", spec.max_learned_per_remote),
    ] {
        match (value, spec.max_learned) {
            (Some(0), _) => return invalid(format!("{what} 0 is out of range; use 1 or more")),
            (Some(v), Some(max)) if v > max => {
                return invalid(format!("{what} {v} is more than max_learned {max}"))
            }
            _ => {}
        }
    }
    let mut seen = BTreeSet::new();
    for ip in spec.flood.iter().flatten() {
        if ip.is_unspecified() || ip.is_multicast() || ip.is_loopback() {
            return invalid(format!("flood remote {ip} is not a unicast VTEP address"));
        }
        if !seen.insert(*ip) {
            return invalid(format!("flood remote {ip} is listed twice"));
        }
    }
    if let Some(encap) = &spec.encap {
        if encap.is_empty() {
            return invalid("encap \"\" names no profile; leave it out for vxlan".into());
        }
    }
    Ok(())
}

/// Parses the object stored at `profiles/<key_name>`: JSON of [`ProfileSpec`] whose `name`
/// is `key_name`, then [`validate_profile`].
pub fn parse_profile(key_name: &str, bytes: &[u8]) -> Result<ProfileSpec, ObjectError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ObjectError::ProfileJson(e.to_string()))?;
    if !value.is_object() {
        return Err(ObjectError::ProfileJson(format!(
            "expected a JSON object, found {}",
            kind(&value)
        )));
    }
    let spec: ProfileSpec =
        serde_json::from_value(value).map_err(|e| ObjectError::ProfileJson(e.to_string()))?;
    if spec.name != key_name {
        return Err(ObjectError::ProfileName {
            key: key_name.to_owned(),
            body: spec.name,
        });
    }
    validate_profile(&spec)?;
    Ok(spec)
}

/// What `POST /v1/profiles` checks without nvod's state: the spec makes a valid profile
/// (`ProfileSpec::to_profile`), and an engine holding only the built-ins takes it (its name
/// is not a built-in's, its transport is not reserved: IP protocol 6 is STT's, 0, 1, 17, 58
/// and 255 are not tunnels).
pub fn validate_profile(spec: &ProfileSpec) -> Result<(), ObjectError> {
    let profile = spec
        .to_profile()
        .map_err(|e| ObjectError::Profile(e.to_string()))?;
    // Few keys and templates: only the profile table is exercised.
    let limits = Limits {
        max_profiles: usize::MAX,
        max_keys: 1,
        max_templates: 1,
    };
    let name = &spec.name;
    Engine::new(limits)
        .add_profile(profile)
        .map(|_| ())
        .map_err(|e| {
            ObjectError::Profile(match e {
                EngineError::DuplicateName(_) => {
                    format!("profile {name} is built into nvod; choose another name")
                }
                EngineError::Invalid(e) => e.to_string(),
                e => format!("profile {name}: {e}"),
            })
        })
}

/// `hosts/<name>`: one nvod's registration, written under its lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostRecord {
    /// The host's name in the cluster (its key's last segment).
    pub name: String,
    /// Its underlay locator: where the others send its tunnel packets.
    pub locator: IpAddr,
    /// Its overlay node ID.
    pub node_id: u32,
}

/// Parses the record at `hosts/<name>`.
pub fn parse_host(name: &str, bytes: &[u8]) -> Result<HostRecord, ObjectError> {
    let host: HostRecord =
        serde_json::from_slice(bytes).map_err(|e| ObjectError::Host(e.to_string()))?;
    if host.name != name {
        return Err(ObjectError::Host(format!(
            "name {:?} differs from {name:?} of its key",
            host.name
        )));
    }
    if host.locator.is_unspecified() || host.locator.is_multicast() {
        return Err(ObjectError::Host(format!(
            "locator {} is not a unicast address",
            host.locator
        )));
    }
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(vni: u32, text: &str) -> Result<NetworkSpec, ObjectError> {
        parse_network(vni, text.as_bytes())
    }

    #[test]
    fn accepts_the_body_of_post_networks() {
        let spec = parse(
            100,
            r#"{"vni": 100, "mtu": 1400, "flood": ["10.0.0.2"], "encap": "vxlan"}"#,
        )
        .unwrap();
        assert_eq!(spec.vni, 100);
        assert_eq!(spec.mtu, Some(1400));
        assert_eq!(spec.flood, Some(vec!["10.0.0.2".parse().unwrap()]));
        let round = serde_json::to_vec(&spec).unwrap();
        assert_eq!(parse_network(100, &round).unwrap(), spec);
    }

    #[test]
    fn refuses_garbage_and_wrong_types() {
        for text in [
            "",
            "garbage",
            "[1,2]",
            "{\"vni\": \"100\"}",
            "{\"vni\": 100, \"mtu\": \"x\"}",
            "{\"vni\": 100, \"flood\": [\"not-an-ip\"]}",
            "{\"vni\": -1}",
            "{}",
            "null",
            "{\"vni\": 100, \"bum\": {\"mode\": \"carrier-pigeon\"}}",
        ] {
            let e = parse(100, text).unwrap_err();
            assert!(
                matches!(e, ObjectError::Json(_) | ObjectError::Vni(_)),
                "{text}: {e}"
            );
        }
        assert!(parse(100, "garbage")
            .unwrap_err()
            .to_string()
            .starts_with("not a network object: "));
    }

    #[test]
    fn refuses_unknown_fields() {
        let e = parse(100, r#"{"vni": 100, "colour": "blue"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn refuses_vni_out_of_range() {
        assert_eq!(parse(0, r#"{"vni": 0}"#).unwrap_err(), ObjectError::Vni(0));
        assert_eq!(
            parse(16777216, r#"{"vni": 16777216}"#).unwrap_err(),
            ObjectError::Vni(16777216)
        );
        assert_eq!(
            parse(100, r#"{"vni": 1099511627776}"#).unwrap_err(),
            ObjectError::Vni(1 << 40)
        );
        assert!(parse(16777215, r#"{"vni": 16777215}"#).is_ok());
        assert_eq!(
            parse(16777215, r#"{"vni": 16777216}"#)
                .unwrap_err()
                .to_string(),
            "vni 16777216 is out of range; use 1..=16777215"
        );
    }

    #[test]
    fn refuses_key_vni_mismatch() {
        assert_eq!(
            parse(7, r#"{"vni": 100}"#).unwrap_err(),
            ObjectError::VniMismatch { key: 7, body: 100 }
        );
    }

    #[test]
    fn refuses_contradictions() {
        for text in [
            r#"{"vni": 5, "mtu": 100}"#,
            r#"{"vni": 5, "mtu": 65500}"#,
            r#"{"vni": 5, "learning": false, "learn_ports": true}"#,
            r#"{"vni": 5, "learning": true, "learn_ports": false, "learn_tunnels": false}"#,
            r#"{"vni": 5, "bum": {"mode": "multicast", "group": "10.0.0.1"}}"#,
            r#"{"vni": 5, "bum": {"mode": "overlay", "node": 0}}"#,
            r#"{"vni": 5, "flood": ["10.0.0.2", "10.0.0.2"]}"#,
            r#"{"vni": 5, "flood": ["0.0.0.0"]}"#,
            r#"{"vni": 5, "max_learned": 10, "max_learned_per_port": 11}"#,
            r#"{"vni": 5, "ageing_s": 0}"#,
        ] {
            assert!(parse(5, text).is_err(), "{text}");
        }
        assert!(parse(
            5,
            r#"{"vni": 5, "bum": {"mode": "multicast", "group": "239.1.1.1"}}"#
        )
        .is_ok());
    }

    const MYTUN: &str = r#"{"name": "mytun", "udp_port": 7777,
        "template": "0800 0000 0000 0000", "vni": {"offset": 4, "len": 3},
        "matches": [{"offset": 0, "mask": "08", "value": "08"}]}"#;

    #[test]
    fn accepts_the_body_of_post_profiles() {
        let spec = parse_profile("mytun", MYTUN.as_bytes()).unwrap();
        assert_eq!(spec.name, "mytun");
        assert_eq!(spec.udp_port, Some(7777));
        let round = serde_json::to_vec(&spec).unwrap();
        assert_eq!(parse_profile("mytun", &round).unwrap(), spec);
    }

    #[test]
    fn refuses_bad_profiles() {
        let parse = |name: &str, text: &str| parse_profile(name, text.as_bytes());
        for text in ["", "garbage", "[1]", "null", r#"{"name": 5}"#, "{}"] {
            let e = parse("mytun", text).unwrap_err();
            assert!(matches!(e, ObjectError::ProfileJson(_)), "{text}: {e}");
        }
        let e = parse(
            "mytun",
            r#"{"name": "mytun", "udp_port": 7777, "colour": 1}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `colour`"), "{e}");
        assert_eq!(
            parse("other", MYTUN).unwrap_err(),
            ObjectError::ProfileName {
                key: "other".into(),
                body: "mytun".into()
            }
        );
        let cases = [
            // Neither transport.
            (
                r#"{"name": "t", "template": "00"}"#,
                "exactly one of udp_port",
            ),
            // Not hex.
            (
                r#"{"name": "t", "udp_port": 1, "template": "zz"}"#,
                "not hex",
            ),
            // A VNI field outside the template.
            (
                r#"{"name": "t", "udp_port": 1, "template": "00", "vni": {"offset": 4, "len": 3}}"#,
                "t",
            ),
            // A built-in's name, a reserved transport.
            (
                r#"{"name": "vxlan", "udp_port": 7777, "template": "00"}"#,
                "vxlan",
            ),
            (
                r#"{"name": "t", "ip_protocol": 17, "template": "00"}"#,
                "17",
            ),
            (
                r#"{"name": "t", "ip_protocol": 6, "template": "00"}"#,
                "stt",
            ),
        ];
        for (text, words) in cases {
            let name = serde_json::from_str::<serde_json::Value>(text).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_owned();
            let e = parse(&name, text).unwrap_err();
            assert!(matches!(e, ObjectError::Profile(_)), "{text}: {e:?}");
            assert!(e.to_string().contains(words), "{text}: {e}");
        }
    }

    #[test]
    fn parses_host_records() {
        let h = parse_host(
            "h1",
            br#"{"name": "h1", "locator": "10.100.0.1", "node_id": 1}"#,
        )
        .unwrap();
        assert_eq!(h.locator, "10.100.0.1".parse::<IpAddr>().unwrap());
        assert!(parse_host(
            "h2",
            br#"{"name": "h1", "locator": "10.100.0.1", "node_id": 1}"#
        )
        .is_err());
        assert!(parse_host("h1", br#"{"name": "h1", "locator": "x", "node_id": 1}"#).is_err());
        assert!(parse_host("h1", b"garbage").is_err());
        assert!(parse_host(
            "h1",
            br#"{"name": "h1", "locator": "0.0.0.0", "node_id": 1}"#
        )
        .is_err());
    }
}
