//! The desired state: what the operator asked for through the API (networks with their flood
//! lists and static FDB entries, ports), persisted in `state.json` and re-applied at start.
//!
//! Learned FDB entries and counters are not state: they are rebuilt by traffic. The file is
//! written atomically (write `state.json.tmp`, fsync, rename over `state.json`, fsync the
//! directory), so a crash leaves either the old or the new file, never a torn one. A file that
//! does not parse or does not make sense is refused with its path named; it is never silently
//! discarded, since that would drop every network on the host.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use nvo_encap::spec::ProfileSpec;
use serde::{Deserialize, Serialize};

use crate::values;

/// Version of the file format, written into the file.
pub const FORMAT_VERSION: u32 = 1;

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
}

impl OverlayState {
    /// Nothing stored.
    pub fn is_empty(&self) -> bool {
        self.own.is_none() && self.nodes.is_empty() && self.routes.is_empty()
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
            keys: BTreeMap::new(),
            overlay: OverlayState::default(),
            bgp: None,
            bgp_off: false,
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
    /// Whether the network learns from traffic.
    pub learning: bool,
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
            .filter(|(_, p)| p.vni == vni)
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
            if !self.networks.contains_key(&port.vni) {
                return Err(Corruption::PortNetwork {
                    name: name.clone(),
                    vni: port.vni,
                });
            }
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
    /// A format version this nvod does not read.
    #[error("format version {0} (this nvod reads version {FORMAT_VERSION})")]
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
}

/// The state file in its directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    file: PathBuf,
    tmp: PathBuf,
}

impl Store {
    /// A store in `dir`, creating the directory if needed.
    pub fn open(dir: &Path) -> Result<Store, StateError> {
        fs::create_dir_all(dir).map_err(|source| StateError::Io {
            op: "create state directory",
            path: dir.to_owned(),
            source,
        })?;
        Ok(Store {
            dir: dir.to_owned(),
            file: dir.join("state.json"),
            tmp: dir.join("state.json.tmp"),
        })
    }

    /// Path of `state.json`.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Reads the state; a missing file is an empty state.
    pub fn load(&self) -> Result<State, StateError> {
        let text = match fs::read(&self.file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(source) => {
                return Err(StateError::Io {
                    op: "read state file",
                    path: self.file.clone(),
                    source,
                })
            }
        };
        let corrupt = |source: Corruption| StateError::Corrupt {
            path: self.file.clone(),
            source,
        };
        let state: State = serde_json::from_slice(&text).map_err(|e| corrupt(e.into()))?;
        state.check().map_err(corrupt)?;
        Ok(state)
    }

    /// Writes the state atomically and durably.
    pub fn save(&self, state: &State) -> Result<(), StateError> {
        let io = |op: &'static str, path: &Path| {
            let path = path.to_owned();
            move |source| StateError::Io { op, path, source }
        };
        let mut text = serde_json::to_vec_pretty(state).map_err(|e| StateError::Io {
            op: "encode state for",
            path: self.file.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push(b'\n');
        let mut tmp = File::create(&self.tmp).map_err(io("create", &self.tmp))?;
        tmp.write_all(&text).map_err(io("write", &self.tmp))?;
        tmp.sync_all().map_err(io("fsync", &self.tmp))?;
        drop(tmp);
        fs::rename(&self.tmp, &self.file).map_err(io("rename over", &self.file))?;
        // The rename is durable only once the directory entry is.
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io("fsync directory", &self.dir))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> State {
        let mut s = State::default();
        let mut fdb = BTreeMap::new();
        fdb.insert(
            "02:00:00:00:00:01".to_owned(),
            StaticDest::Remote("192.0.2.9".parse().unwrap()),
        );
        fdb.insert(
            "02:00:00:00:00:02".to_owned(),
            StaticDest::Port("veth1".to_owned()),
        );
        s.networks.insert(
            100,
            NetworkState {
                mtu: 1450,
                learning: true,
                bum: BumState::HeadEnd,
                max_learned: 4096,
                ageing_s: 300,
                flood: vec!["192.0.2.9".parse().unwrap()],
                fdb,
                fdb_ips: BTreeMap::from([(
                    "02:00:00:00:00:02".to_owned(),
                    vec!["10.0.0.2".parse().unwrap()],
                )]),
                encap: "geneve".to_owned(),
                params: BTreeMap::new(),
                l3: false,
                routes: BTreeMap::new(),
                accept_remotes: Some(nvo_api::AcceptRemotes::Any),
                max_learned_per_port: Some(100),
                max_learned_per_remote: None,
            },
        );
        s.ports.insert(
            "veth1".to_owned(),
            PortState {
                vni: 100,
                kind: PortKindState::Veth,
                offloads: None,
            },
        );
        s
    }

    fn scratch_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nvod-state-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn save_then_load_round_trips() {
        let dir = scratch_dir("roundtrip");
        let store = Store::open(&dir).unwrap();
        assert_eq!(store.load().unwrap(), State::default());
        store.save(&sample()).unwrap();
        assert_eq!(store.load().unwrap(), sample());
        assert!(!dir.join("state.json.tmp").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corrupt_file_is_refused_with_its_path() {
        let dir = scratch_dir("corrupt");
        let store = Store::open(&dir).unwrap();
        fs::write(store.path(), b"{\"version\": 1, \"networks\": ").unwrap();
        let e = store.load().unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("corrupt"), "{e}");
        // Well-formed JSON that does not make sense is refused too.
        let mut bad = sample();
        bad.ports.get_mut("veth1").unwrap().vni = 7;
        fs::write(store.path(), serde_json::to_vec(&bad).unwrap()).unwrap();
        let e = store.load().unwrap_err().to_string();
        assert!(e.contains("corrupt") && e.contains("veth1"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
