//! QoS profiles (`/v1/qos`): a token-bucket policer (rate, burst) with optional DSCP marking
//! or trust, attached to ports and virtual ports by name.
//!
//! ```json
//! POST /v1/qos                              {"name": "gold", "rate": 100000000, "burst": 65536, "dscp": 46}
//! PUT  /v1/ports/c1/qos                     {"profile": "gold"}
//! PUT  /v1/ports/hv0/vports/02:00:00:00:01:01/qos  {"profile": "gold"}
//! DELETE /v1/ports/c1/qos
//! ```

use serde::{Deserialize, Serialize};

/// `POST /v1/qos`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosSpec {
    /// The profile's name.
    pub name: String,
    /// The committed rate in bit/s (8000 to 10^12).
    pub rate: u64,
    /// The burst in bytes (1518 to 64 MiB).
    pub burst: u64,
    /// The DSCP (0-63) IP frames from the port are marked with; their tunnel packets' outer
    /// TOS follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// Without dscp: the outer TOS of the port's tunnel packets is the inner packet's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
}

/// A QoS profile as shown: its settings, where it is attached and what its policers counted
/// (summed over them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Qos {
    /// Its settings.
    #[serde(flatten)]
    pub spec: QosSpec,
    /// The ports, virtual ports (`PORT/MAC`) and trunk VLANs (`PORT.VID`) it is attached to.
    #[serde(default)]
    pub attached: Vec<String>,
    /// Frames that conformed.
    #[serde(default)]
    pub conformed_frames: u64,
    /// Their bytes.
    #[serde(default)]
    pub conformed_bytes: u64,
    /// Frames dropped by the policer (`qos_policed`).
    #[serde(default)]
    pub policed_frames: u64,
    /// Their bytes.
    #[serde(default)]
    pub policed_bytes: u64,
}

/// `PUT /v1/ports/{port}/qos` (and `…/vports/{mac}/qos`, `…/vlans/{vid}/qos`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosAttach {
    /// The profile's name.
    pub profile: String,
}
