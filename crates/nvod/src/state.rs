//! The desired state: what the operator asked for through the API (networks with their flood
//! lists and static FDB entries, ports), persisted in `state.json` and re-applied at start.
//!
//! Learned FDB entries and counters are not state: they are rebuilt by traffic. How it is kept
//! on disk (a snapshot and a journal of the writes since, in a locked directory of mode 0700)
//! is the store's business ([`store`]); the records of the journal are in [`journal`]. A file
//! that does not parse or does not make sense is refused with its path named; it is never
//! silently discarded, since that would drop every network on the host.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use nvo_encap::spec::ProfileSpec;
use serde::{Deserialize, Serialize};

use crate::values;

mod journal;
mod store;

pub use store::Store;

/// Version of the snapshot's format, written into it. Version 2 has a journal beside it
/// (`state.journal`); a version 1 file (no journal) is read and rewritten as version 2, and an
/// older nvod refuses a version 2 file rather than miss the journal's writes.
pub const FORMAT_VERSION: u32 = 2;

/// Everything nvod restores at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// File format version ([`FORMAT_VERSION`]).
    pub version: u32,
    /// Networks by VNI.
    pub networks: BTreeMap<u32, NetworkState>,
    /// Ports by interface name.
    pub ports: BTreeMap<String, PortState>,
    /// User-defined encapsulation profiles added through the API, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, ProfileSpec>,
    /// The names in `profiles` that cluster mode made (issue 19); the others were added
    /// through the API. Files written before cluster mode have none.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub cluster_profiles: BTreeSet<String>,
    /// Key bindings (NSH service paths) by profile name, then by key in lowercase hex.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub keys: BTreeMap<String, BTreeMap<String, KeyTarget>>,
    /// The routed overlay: this node's ID (when set through the API), nodes and routes.
    #[serde(default, skip_serializing_if = "OverlayState::is_empty")]
    pub overlay: OverlayState,
    /// The EVPN speaker's configuration, when set through the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bgp: Option<nvo_api::BgpConfig>,
    /// BGP was turned off through the API (so the config file's `[bgp]` no longer applies).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bgp_off: bool,
    /// QoS profiles by name (attached by name from ports and virtual ports).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub qos: BTreeMap<String, QosState>,
    /// Flow-table meters by number (control/meters.rs): rate in bit/s and burst in bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meters: BTreeMap<u32, MeterState>,
    /// Flow-table rules without timeouts (control/flows.rs), in the flow syntax with ports by
    /// name, by their identity (`priority=P,MATCH`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flows: BTreeMap<String, String>,
    /// ACL profiles by name: their rules in the flow syntax without `in_port`
    /// (control/acl.rs). Their installed rules are not in `flows`: they follow from these and
    /// `acl_attached`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub acls: BTreeMap<String, Vec<String>>,
    /// Which ACL profile each port or virtual port (`PORT/MAC`) has, by that name (removed
    /// with the port or virtual port).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub acl_attached: BTreeMap<String, String>,
    /// Identity policies by network (issue 18), as resolved from what was applied.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub policies: BTreeMap<u32, nvo_policy::PolicySpec>,
    /// Labels of ports, by port name (removed with the port).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub port_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// Labels of addresses, by network, then address.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub addr_labels: BTreeMap<u32, BTreeMap<IpAddr, BTreeMap<String, String>>>,
}

/// The routed overlay as stored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlayState {
    /// This node's ID when set through the API (else the config's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own: Option<u32>,
    /// Locators by node ID.
    #[serde(default)]
    pub nodes: BTreeMap<u32, Vec<nvo_api::LocatorSpec>>,
    /// Routes by application name, then destination: next hops.
    #[serde(default)]
    pub routes: BTreeMap<String, BTreeMap<u32, Vec<u32>>>,
    /// The IDs in `nodes` cluster mode made (issue 19); the others came through the API.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub cluster_nodes: BTreeSet<u32>,
    /// The (application, destination) pairs in `routes` cluster mode made.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cluster_routes: BTreeMap<String, BTreeSet<u32>>,
}

impl OverlayState {
    /// Nothing stored.
    pub fn is_empty(&self) -> bool {
        self.own.is_none()
            && self.nodes.is_empty()
            && self.routes.is_empty()
            && self.cluster_nodes.is_empty()
            && self.cluster_routes.is_empty()
    }
}

/// Where a bound key leads, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum KeyTarget {
    /// Delivered into the local network with this VNI.
    Local(u32),
    /// Relayed to this remote.
    Forward(IpAddr),
}

impl Default for State {
    fn default() -> Self {
        State {
            version: FORMAT_VERSION,
            networks: BTreeMap::new(),
            ports: BTreeMap::new(),
            profiles: BTreeMap::new(),
            cluster_profiles: BTreeSet::new(),
            keys: BTreeMap::new(),
            overlay: OverlayState::default(),
            bgp: None,
            bgp_off: false,
            qos: BTreeMap::new(),
            meters: BTreeMap::new(),
            flows: BTreeMap::new(),
            acls: BTreeMap::new(),
            acl_attached: BTreeMap::new(),
            policies: BTreeMap::new(),
            port_labels: BTreeMap::new(),
            addr_labels: BTreeMap::new(),
        }
    }
}

/// A network with every default resolved, so a later change of a default does not change an
/// existing network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkState {
    /// Tenant MTU.
    pub mtu: u16,
    /// Whether the network learns from traffic: `learn_ports || learn_tunnels`, and both of
    /// them in files written before those existed.
    pub learning: bool,
    /// Learning from local ports (absent: `learning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learn_ports: Option<bool>,
    /// Learning from tunnels (absent: `learning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learn_tunnels: Option<bool>,
    /// BUM handling.
    pub bum: BumState,
    /// Most learned entries.
    pub max_learned: u32,
    /// Ageing time of learned entries, seconds.
    pub ageing_s: u32,
    /// Flood list, in the order it was built.
    pub flood: Vec<IpAddr>,
    /// Static FDB entries by MAC (lowercase, colon-separated).
    pub fdb: BTreeMap<String, StaticDest>,
    /// Addresses of the hosts behind static port entries, by MAC (the same keys as `fdb`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fdb_ips: BTreeMap<String, Vec<IpAddr>>,
    /// The encapsulation profile's name (files written before profiles existed: vxlan).
    #[serde(default = "default_encap")]
    pub encap: String,
    /// Values of the profile's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, u64>,
    /// An L3 network (tunnels carry IPv4; nvod is the containers' gateway).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub l3: bool,
    /// An L3 network's routes: "a.b.c.d/len" → remote.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, IpAddr>,
    /// `accept_remotes` as set; absent: the default, which follows the BUM mode and flood list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_remotes: Option<nvo_api::AcceptRemotes>,
    /// Most learned entries per local port (files written before it: max_learned / 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_learned_per_port: Option<u32>,
    /// Most learned entries per remote VTEP (files written before it: max_learned / 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_learned_per_remote: Option<u32>,
    /// Made by cluster mode from an etcd object (files written before it, and networks made
    /// through the local API: false); only such networks are changed or deleted by it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster: bool,
}

impl NetworkState {
    /// Whether the network learns from local ports.
    pub fn learns_ports(&self) -> bool {
        self.learn_ports.unwrap_or(self.learning)
    }

    /// Whether the network learns from tunnels.
    pub fn learns_tunnels(&self) -> bool {
        self.learn_tunnels.unwrap_or(self.learning)
    }
}

/// Whether the EVPN speaker serves a network of profile `encap` (while BGP is configured): the
/// VXLAN L2 networks (RFC 8365), whose MACs it advertises and whose remotes it learns — so such a
/// network does not learn from tunnels by default.
pub fn evpn_serves(encap: &str, l3: bool) -> bool {
    encap == "vxlan" && !l3
}

fn default_encap() -> String {
    crate::values::DEFAULT_ENCAP.to_owned()
}

/// BUM handling as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum BumState {
    /// Head-end replication to the flood list.
    HeadEnd,
    /// One copy to an underlay multicast group.
    Multicast {
        /// The group.
        group: IpAddr,
    },
    /// One copy to an overlay tree node.
    Overlay {
        /// The node ID.
        node: u32,
    },
}

/// Where a static FDB entry points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StaticDest {
    /// A local port, by name.
    Port(String),
    /// A remote VTEP.
    Remote(IpAddr),
    /// An overlay node.
    Node(u32),
}

/// A port as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortState {
    /// Its network.
    pub vni: u32,
    /// Its kind.
    pub kind: PortKindState,
    /// Its offload settings (the API's form: every field optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloads: Option<nvo_api::PortOffloads>,
    /// Its VLAN mode; absent for an untagged port (and in state files written before VLANs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<VlanState>,
    /// Its virtual ports per MAC, if it is a shared port (`vni` 0); absent otherwise (and in
    /// state files written before shared ports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedState>,
    /// The QoS profile attached to it, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
}

/// A QoS profile as stored (nvo_pipeline::qos).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosState {
    /// Rate in bit/s.
    pub rate: u64,
    /// Burst in bytes.
    pub burst: u64,
    /// DSCP mark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// DSCP trust.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
}

/// A flow-table meter as stored (nvo_pipeline::meters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeterState {
    /// Rate in bit/s.
    pub rate: u64,
    /// Burst in bytes.
    pub burst: u64,
}

/// A shared port as stored (nvo_pipeline::vport).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedState {
    /// The network of untagged frames from MACs no virtual port names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_vni: Option<u32>,
    /// MAC (as written by nvod, lowercase) → its virtual port.
    #[serde(default)]
    pub vports: BTreeMap<String, VportState>,
}

/// A virtual port as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VportState {
    /// Its network.
    pub vni: u32,
    /// Its 802.1Q VLAN ID, if tagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// The QoS profile attached to it, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
}

/// A tagged port as stored: an access port is `vni` with one VLAN mapped to it, a trunk has
/// `vni` 0 and any number of VLANs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanState {
    /// The outer tag's TPID (0x8100 or 0x88a8).
    pub ethertype: u16,
    /// VLAN ID → VNI.
    pub vlans: BTreeMap<u16, u32>,
    /// An access port (one VLAN, the port's `vni`) rather than a trunk.
    #[serde(default)]
    pub access: bool,
    /// A trunk's circuits' QoS profiles, by VLAN ID (an access port's is the port's `qos`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub qos: BTreeMap<u16, String>,
}

/// How circuit `vid` of trunk `trunk` is named (in `port_ids`, FDB entries, counters and
/// ACL attachments): `eth1.10`, Linux's VLAN sub-interface notation.
pub fn circuit_name(trunk: &str, vid: u16) -> String {
    format!("{trunk}.{vid}")
}

impl State {
    /// Removes the ACL attachments of port `name`, of its virtual ports (`name/MAC`) and of
    /// its VLAN circuits (`name.VID`); call it before the port leaves `ports`.
    pub fn forget_acls_of(&mut self, name: &str) {
        let circuits: Vec<String> = self
            .ports
            .get(name)
            .and_then(|p| p.vlan.as_ref())
            .map(|v| v.vlans.keys().map(|&vid| circuit_name(name, vid)).collect())
            .unwrap_or_default();
        let vports = format!("{name}/");
        self.acl_attached.retain(|target, _| {
            target != name && !target.starts_with(&vports) && !circuits.contains(target)
        });
    }
}

impl PortState {
    /// The networks the port carries: its `vni`, a trunk's mapped VNIs, or a shared port's
    /// virtual ports' (and default) networks.
    pub fn vnis(&self) -> Vec<u32> {
        match (&self.vlan, &self.shared) {
            (Some(v), _) => v.vlans.values().copied().collect(),
            (None, Some(s)) => {
                let mut vnis: Vec<u32> = s.vports.values().map(|v| v.vni).collect();
                vnis.extend(s.default_vni);
                vnis.sort_unstable();
                vnis.dedup();
                vnis
            }
            (None, None) => vec![self.vni],
        }
    }
}

/// Port kinds as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortKindState {
    /// An existing interface, opened with AF_PACKET.
    Veth,
    /// A TAP device nvod creates.
    Tap,
}

impl fmt::Display for BumState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BumState::HeadEnd => f.write_str("head-end replication"),
            BumState::Multicast { group } => write!(f, "multicast group {group}"),
            BumState::Overlay { node } => write!(f, "overlay tree node {node}"),
        }
    }
}

impl fmt::Display for StaticDest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StaticDest::Port(name) => write!(f, "port {name}"),
            StaticDest::Remote(ip) => write!(f, "remote {ip}"),
            StaticDest::Node(n) => write!(f, "node {n}"),
        }
    }
}

impl fmt::Display for PortKindState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortKindState::Veth => "veth",
            PortKindState::Tap => "tap",
        })
    }
}

impl State {
    /// Names of the ports attached to `vni`, sorted.
    pub fn ports_of(&self, vni: u32) -> Vec<String> {
        self.ports
            .iter()
            .filter(|(_, p)| p.vnis().contains(&vni))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Checks that the state makes sense as a whole; used on a loaded file.
    fn check(&self) -> Result<(), Corruption> {
        if self.version != FORMAT_VERSION {
            return Err(Corruption::Version(self.version));
        }
        for (&vni, net) in &self.networks {
            let in_network = |source| Corruption::Network { vni, source };
            values::check_vni(vni).map_err(in_network)?;
            values::check_mtu(net.mtu).map_err(in_network)?;
            for (mac, dest) in &net.fdb {
                values::parse_mac(mac).map_err(in_network)?;
                if let StaticDest::Port(name) = dest {
                    if self.ports.get(name).map(|p| p.vni) != Some(vni) {
                        return Err(Corruption::StaticPort {
                            vni,
                            mac: mac.clone(),
                            port: name.clone(),
                        });
                    }
                }
            }
        }
        for (name, port) in &self.ports {
            values::check_ifname(name).map_err(|source| Corruption::Port {
                name: name.clone(),
                source,
            })?;
            if let Some(&vni) = port.vnis().iter().find(|v| !self.networks.contains_key(v)) {
                return Err(Corruption::PortNetwork {
                    name: name.clone(),
                    vni,
                });
            }
            for mac in port.shared.iter().flat_map(|s| s.vports.keys()) {
                values::parse_mac(mac).map_err(|source| Corruption::Port {
                    name: name.clone(),
                    source,
                })?;
            }
            let vport_qos = port.shared.iter().flat_map(|s| s.vports.values());
            let circuit_qos = port.vlan.iter().flat_map(|v| v.qos.values());
            let profiles = port
                .qos
                .iter()
                .chain(vport_qos.filter_map(|v| v.qos.as_ref()))
                .chain(circuit_qos);
            if let Some(profile) = profiles.into_iter().find(|q| !self.qos.contains_key(*q)) {
                return Err(Corruption::PortQos {
                    name: name.clone(),
                    profile: profile.clone(),
                });
            }
        }
        if let Some((name, profile)) = self
            .acl_attached
            .iter()
            .find(|(_, p)| !self.acls.contains_key(*p))
        {
            return Err(Corruption::PortAcl {
                name: name.clone(),
                profile: profile.clone(),
            });
        }
        Ok(())
    }
}

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A file system operation failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What nvod was doing.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The state directory is not safe to use.
    #[error(
        "state directory {path} {why}; fix its owner and mode (chown to nvod's user, chmod \
         0700) or set another state_dir"
    )]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Another process holds the directory's lock.
    #[error(
        "state directory {dir} is in use by another nvod{holder}; stop it, or give this nvod \
         another state_dir"
    )]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// " (pid N)" when the lock file says.
        holder: String,
    },
    /// The file does not parse or does not make sense.
    #[error(
        "state file {path} is corrupt: {source}; repair it, or move it away to start with no \
         networks (nvod does not discard it by itself)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: Corruption,
    },
}

/// What is wrong with a state file that nvod refuses to load.
#[derive(Debug, thiserror::Error)]
pub enum Corruption {
    /// Not JSON of the state's shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A journal line that is not a record, before the last line.
    #[error("line {line}: {why}")]
    Journal {
        /// The line's number, from 1.
        line: usize,
        /// Why it does not read.
        why: String,
    },
    /// A format version this nvod does not read.
    #[error("format version {0} (this nvod reads versions 1 and {FORMAT_VERSION})")]
    Version(u32),
    /// A network with a bad VNI, MTU or static MAC.
    #[error("network {vni}: {source}")]
    Network {
        /// The network.
        vni: u32,
        /// The value at fault.
        source: values::ValueError,
    },
    /// A static FDB entry pointing at a port of another network.
    #[error(
        "network {vni}: static entry {mac} points at port {port:?}, which is not a port of this \
         network"
    )]
    StaticPort {
        /// The network.
        vni: u32,
        /// The entry's MAC, as stored.
        mac: String,
        /// The port it names.
        port: String,
    },
    /// A port with a name Linux would refuse.
    #[error("port {name:?}: {source}")]
    Port {
        /// The port.
        name: String,
        /// What is wrong with the name.
        source: values::ValueError,
    },
    /// A port of a network that is not defined.
    #[error("port {name:?} belongs to network {vni}, which is not defined")]
    PortNetwork {
        /// The port.
        name: String,
        /// Its network.
        vni: u32,
    },
    /// A port (or one of its virtual ports) with a QoS profile that is not defined.
    #[error("port {name:?} has qos profile {profile:?}, which is not defined")]
    PortQos {
        /// The port.
        name: String,
        /// The profile it names.
        profile: String,
    },
    /// A port or virtual port with an ACL profile that is not defined.
    #[error("port {name:?} has acl profile {profile:?}, which is not defined")]
    PortAcl {
        /// The port or virtual port (`PORT/MAC`).
        name: String,
        /// The profile it names.
        profile: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_port(mac: &str, qos: Option<&str>) -> State {
        let mut s = State::default();
        let net: NetworkState = serde_json::from_value(serde_json::json!({
            "mtu": 1450, "learning": true, "bum": {"mode": "head_end"}, "max_learned": 1024,
            "ageing_s": 300, "encap": "vxlan", "flood": [], "fdb": {}, "fdb_ips": {},
            "params": {}, "l3": false, "routes": {}
        }))
        .unwrap();
        s.networks.insert(100, net);
        let mut vports = BTreeMap::new();
        vports.insert(
            mac.to_owned(),
            VportState {
                vni: 100,
                vlan: None,
                qos: qos.map(str::to_owned),
            },
        );
        s.ports.insert(
            "hv0".into(),
            PortState {
                vni: 0,
                kind: PortKindState::Veth,
                offloads: None,
                vlan: None,
                shared: Some(SharedState {
                    default_vni: None,
                    vports,
                }),
                qos: None,
            },
        );
        s
    }

    #[test]
    fn virtual_ports_with_bad_macs_or_unknown_qos_profiles_are_corruption() {
        assert!(shared_port("02:00:00:00:01:01", None).check().is_ok());
        let bad_mac = shared_port("nope", None).check().unwrap_err();
        assert!(bad_mac.to_string().contains("hv0"), "{bad_mac}");
        let dangling = shared_port("02:00:00:00:01:01", Some("gold"))
            .check()
            .unwrap_err();
        assert_eq!(
            dangling.to_string(),
            "port \"hv0\" has qos profile \"gold\", which is not defined"
        );
        let mut fine = shared_port("02:00:00:00:01:01", Some("gold"));
        fine.qos.insert(
            "gold".into(),
            QosState {
                rate: 1_000_000,
                burst: 65536,
                dscp: None,
                trust: false,
            },
        );
        assert!(fine.check().is_ok());
        // No network for a virtual port: refused as any port's.
        let mut orphan = shared_port("02:00:00:00:01:01", None);
        orphan.networks.clear();
        assert!(orphan.check().is_err());
    }

    #[test]
    fn an_acl_attachment_naming_no_profile_is_corruption() {
        let mut s = shared_port("02:00:00:00:01:01", None);
        s.acl_attached
            .insert("hv0/02:00:00:00:01:01".into(), "no-ssh".into());
        let e = s.check().unwrap_err();
        assert_eq!(
            e.to_string(),
            "port \"hv0/02:00:00:00:01:01\" has acl profile \"no-ssh\", which is not defined"
        );
        s.acls
            .insert("no-ssh".into(), vec!["priority=1,actions=drop".into()]);
        assert!(s.check().is_ok());
    }
}
