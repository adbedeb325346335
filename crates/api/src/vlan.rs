//! The VLAN mode of a port (`POST /v1/ports` `vlan`): an access port of one VLAN whose frames
//! are tagged on the wire, or a trunk whose VLAN IDs map to networks.
//!
//! ```json
//! {"name": "eth1", "vni": 100, "vlan": {"access": 10}}
//! {"name": "eth1", "vlan": {"trunk": {"10": 100, "20": 200}, "ethertype": "0x88a8"}}
//! ```
//!
//! The trunk map keeps every pair as written (a VLAN ID given twice is kept twice) so that nvod
//! can refuse duplicates instead of a JSON parser silently keeping the last one.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A port's VLAN mode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortVlan {
    /// An access port: its frames carry this VLAN ID on the wire and belong to the port's `vni`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<u16>,
    /// A trunk: VLAN ID → VNI (the port's `vni` is then left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trunk: Option<TrunkMap>,
    /// The outer tag's ethertype: 0x8100 (802.1Q, the default) or 0x88a8 (802.1ad), as a
    /// number or a string such as "0x88a8".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ethertype: Option<Ethertype>,
}

/// A trunk's VLAN ID → VNI pairs, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrunkMap(pub Vec<(u16, u32)>);

impl Serialize for TrunkMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (vid, vni) in &self.0 {
            map.serialize_entry(&vid.to_string(), vni)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for TrunkMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TrunkMap, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = TrunkMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of vlan id (\"1\"..\"4094\") to vni")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<TrunkMap, A::Error> {
                let mut pairs = Vec::new();
                while let Some((key, vni)) = access.next_entry::<String, u32>()? {
                    let vid = key.trim().parse::<u16>().map_err(|_| {
                        de::Error::custom(format!(
                            "trunk key {key:?} is not a vlan id; use \"1\"..\"4094\""
                        ))
                    })?;
                    // Bounded before the pipeline's own check: a request cannot make nvod
                    // hold more than a few thousand pairs.
                    if pairs.len() > 4096 {
                        return Err(de::Error::custom("a trunk maps at most 4094 vlans"));
                    }
                    pairs.push((vid, vni));
                }
                Ok(TrunkMap(pairs))
            }
        }
        deserializer.deserialize_map(Pairs)
    }
}

/// An outer tag's ethertype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ethertype(pub u16);

impl Serialize for Ethertype {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{:#06x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Ethertype {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ethertype, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Number(u16),
            Text(String),
        }
        match Form::deserialize(deserializer)? {
            Form::Number(n) => Ok(Ethertype(n)),
            Form::Text(t) => t.parse().map_err(de::Error::custom),
        }
    }
}

impl std::str::FromStr for Ethertype {
    type Err = String;

    /// `0x8100`, `0x88a8` (any hex number with `0x`), or `802.1q` / `802.1ad`.
    fn from_str(s: &str) -> Result<Ethertype, String> {
        let t = s.trim().to_ascii_lowercase();
        let parsed = match t.as_str() {
            "802.1q" | "8021q" | "dot1q" => Some(0x8100),
            "802.1ad" | "8021ad" | "qinq" => Some(0x88a8),
            _ => t
                .strip_prefix("0x")
                .and_then(|h| u16::from_str_radix(h, 16).ok()),
        };
        parsed.map(Ethertype).ok_or_else(|| {
            format!(
                "ethertype {s:?} is not a vlan tag type; use 0x8100 (802.1q) or 0x88a8 (802.1ad)"
            )
        })
    }
}

impl fmt::Display for Ethertype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_round_trip_and_duplicates_survive_parsing() {
        let v: PortVlan = serde_json::from_str(
            r#"{"trunk": {"10": 100, "20": 200, "10": 300}, "ethertype": "0x88a8"}"#,
        )
        .unwrap();
        assert_eq!(
            v.trunk,
            Some(TrunkMap(vec![(10, 100), (20, 200), (10, 300)]))
        );
        assert_eq!(v.ethertype, Some(Ethertype(0x88a8)));
        let v: PortVlan = serde_json::from_str(r#"{"access": 10, "ethertype": 33024}"#).unwrap();
        assert_eq!((v.access, v.ethertype), (Some(10), Some(Ethertype(0x8100))));
        let out = serde_json::to_string(&PortVlan {
            access: None,
            trunk: Some(TrunkMap(vec![(10, 100)])),
            ethertype: Some(Ethertype(0x8100)),
        })
        .unwrap();
        assert_eq!(out, r#"{"trunk":{"10":100},"ethertype":"0x8100"}"#);
        for bad in [
            r#"{"trunk": {"x": 100}}"#,
            r#"{"trunk": {"70000": 100}}"#,
            r#"{"ethertype": "ipv4"}"#,
            r#"{"native": 1}"#,
        ] {
            assert!(serde_json::from_str::<PortVlan>(bad).is_err(), "{bad}");
        }
    }
}
