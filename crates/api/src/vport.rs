//! Shared ports and their virtual ports per MAC (VM-VP): a port whose frames belong to
//! networks by source MAC (and VLAN where tagged), e.g. a hypervisor's uplink.
//!
//! ```json
//! POST /v1/ports                  {"name": "hv0", "shared": {"default_vni": 300}}
//! POST /v1/ports/hv0/vports       {"mac": "02:00:00:00:01:01", "vni": 100}
//! POST /v1/ports/hv0/vports       {"mac": "02:00:00:00:01:03", "vni": 200, "vlan": 20}
//! GET  /v1/ports/hv0/vports       → [Vport, …]
//! DELETE /v1/ports/hv0/vports/02:00:00:00:01:01
//! ```

use serde::{Deserialize, Serialize};

/// A port's shared-port settings (`POST /v1/ports` `shared`; the port's `vni` is left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPort {
    /// The network of untagged frames from MACs no virtual port names; without it they are
    /// dropped (`unknown_vport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_vni: Option<u32>,
}

/// `POST /v1/ports/{port}/vports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VportSpec {
    /// The VM's MAC (unicast), unique on its shared port.
    pub mac: String,
    /// The network its frames belong to.
    pub vni: u32,
    /// The 802.1Q VLAN ID its frames carry on the shared port (1..=4094); absent: untagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
}

/// A virtual port as shown, with its counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vport {
    /// Its shared port.
    pub port: String,
    /// Its name in FDB entries, counters and metrics: `PORT/MAC`, or `PORT/default` for the
    /// default one.
    pub name: String,
    /// The VM's MAC; absent for the default virtual port (every other MAC, untagged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Its network.
    pub vni: u32,
    /// Its VLAN ID on the wire, if tagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// The QoS profile attached to it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The ACL profile attached to it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<String>,
    /// Frames received from it.
    #[serde(default)]
    pub rx_frames: u64,
    /// Their bytes (untagged).
    #[serde(default)]
    pub rx_bytes: u64,
    /// Frames sent to it (a flood leaves its shared port once per network and VLAN, counted
    /// on one of that network's virtual ports there).
    #[serde(default)]
    pub tx_frames: u64,
    /// Their bytes (untagged).
    #[serde(default)]
    pub tx_bytes: u64,
    /// Frames from it dropped, and frames to it that failed to go out.
    #[serde(default)]
    pub drops: u64,
}
