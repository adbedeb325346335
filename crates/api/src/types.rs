//! Request and answer bodies of the control API.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

/// `GET /v1/node`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node's 32-bit overlay ID.
    pub node_id: u32,
    /// The underlay address tunnels are sent from.
    pub locator: IpAddr,
    /// The UDP port VXLAN is received on and sent to.
    pub vxlan_port: u16,
    /// MTU of the underlay; tenant MTUs default to this minus the encapsulation overhead.
    pub underlay_mtu: u16,
    /// Offloads the kernel accepted at start.
    pub offloads: Offloads,
    /// The datapath forwarding this node's networks: `ebpf` or `userspace`.
    #[serde(default = "userspace")]
    pub datapath: String,
    /// Why that one: the configuration, or what refused the other.
    #[serde(default)]
    pub datapath_reason: String,
    /// Where overlay packets for other nodes are relayed: `xdp driver on IF`, `xdp generic
    /// on IF`, `tc on IF` (the kernel path) or `userspace`.
    #[serde(default = "userspace")]
    pub relay: String,
    /// nvod's version.
    pub version: String,
    /// Where the metrics and the status page are served (`http_listen`); absent when off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_listen: Option<SocketAddr>,
    /// Cluster mode's link to etcd; absent when cluster mode is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<NodeCluster>,
    /// How many userspace datapath workers forward (nvod's `workers`; 1 while the kernel
    /// path runs).
    #[serde(default = "one")]
    pub workers: usize,
    /// Packets (tunnel datagrams and port frames) each worker received, worker 0 first.
    #[serde(default)]
    pub worker_packets: Vec<u64>,
}

fn one() -> usize {
    1
}

/// `cluster` in `GET /v1/node`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCluster {
    /// Whether nvod is connected to etcd and watching.
    pub connected: bool,
    /// The etcd revision last applied (0: none yet).
    pub revision: i64,
}

/// `GET /v1/cluster`: cluster mode's view. With cluster mode off, `enabled` is false and
/// every other field is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClusterStatus {
    /// Whether cluster mode is on (`[cluster]` in the config).
    pub enabled: bool,
    /// The etcd endpoints.
    #[serde(default)]
    pub endpoints: Vec<String>,
    /// The key prefix.
    #[serde(default)]
    pub prefix: String,
    /// This host's name in the cluster.
    #[serde(default)]
    pub name: String,
    /// Whether nvod is connected to etcd and watching.
    #[serde(default)]
    pub connected: bool,
    /// The etcd revision last applied (0: none yet).
    #[serde(default)]
    pub revision: i64,
    /// The last error of the link to etcd (kept after reconnecting), or null.
    #[serde(default)]
    pub last_error: Option<String>,
    /// The networks cluster mode made here (cluster-owned), by VNI.
    #[serde(default)]
    pub networks: Vec<u32>,
    /// The encapsulation profiles cluster mode made here (cluster-owned), by name.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// The overlay nodes cluster mode made here (cluster-owned), by ID.
    #[serde(default)]
    pub overlay_nodes: Vec<u32>,
    /// The overlay routes cluster mode made here, as "APP DST" ("ipv4 9").
    #[serde(default)]
    pub overlay_routes: Vec<String>,
    /// The registered hosts, as last read from etcd.
    #[serde(default)]
    pub hosts: Vec<ClusterHost>,
    /// The objects skipped now, with why.
    #[serde(default)]
    pub skipped: Vec<ClusterSkipped>,
}

/// A registered host (`PREFIX hosts/NAME`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterHost {
    /// Its name.
    pub name: String,
    /// Its locator.
    pub locator: IpAddr,
    /// Its overlay node ID.
    pub node_id: u32,
}

/// An object cluster mode skips.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSkipped {
    /// Its key.
    pub key: String,
    /// Why it is not applied.
    pub error: String,
}

fn userspace() -> String {
    "userspace".to_owned()
}

/// Socket offloads in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Offloads {
    /// UDP generic receive offload on the underlay socket.
    pub gro: bool,
    /// UDP generic segmentation offload on the underlay sockets.
    pub gso: bool,
}

/// How a network sends broadcast, unknown unicast and multicast (BUM) frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Bum {
    /// One unicast copy to every remote in the flood list (head-end replication).
    #[default]
    HeadEnd,
    /// One copy to an underlay multicast group.
    Multicast {
        /// The group address.
        group: IpAddr,
    },
    /// One copy to an overlay node ID whose routes form the replication tree (networks on the
    /// `overlay` profile).
    Overlay {
        /// The tree's node ID.
        node: u32,
    },
}

/// `POST /v1/networks`: a network to create. Only `vni` is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// The 24-bit VXLAN network identifier, 1 to 16777215.
    pub vni: u32,
    /// Tenant MTU; default: underlay MTU minus the VXLAN overhead (50 over IPv4, 70 over IPv6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    /// The old form of `learn_ports` + `learn_tunnels`: false turns both off; true changes
    /// no default (but refuses both being off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning: Option<bool>,
    /// Learn the source MACs of local ports' frames (default true; false with `learning: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learn_ports: Option<bool>,
    /// Learn inner source MACs of tunnel packets behind their remote (default true; false with
    /// `learning: false`, and false for a VXLAN L2 network created while nvod has a BGP
    /// configuration: EVPN serves it, as FRR's `nolearning` VXLAN devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learn_tunnels: Option<bool>,
    /// BUM handling (default head-end replication).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bum: Option<Bum>,
    /// Most learned MAC addresses kept for this network (default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_learned: Option<u32>,
    /// Seconds a learned entry lives without traffic (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ageing_s: Option<u32>,
    /// Initial flood list (remote VTEP addresses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flood: Option<Vec<IpAddr>>,
    /// Encapsulation profile by name (default "vxlan"); `GET /v1/profiles` lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encap: Option<String>,
    /// Values of the profile's parameters, e.g. {"group": 100} for vxlan-gbp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<BTreeMap<String, u64>>,
    /// An L3 network: its tunnels carry the containers' IPv4 packets (vxlan-gpe with next
    /// protocol IPv4, ipip), nvod is their gateway (answers ARP) and routes by prefix
    /// (`/v1/networks/{vni}/routes`). Default: true for ipip, false otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l3: Option<bool>,
    /// Which remote VTEPs the network takes tunnel packets from. Default: `known`, but `any`
    /// for a multicast network whose flood list (its listed members) is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_remotes: Option<AcceptRemotes>,
    /// Most learned entries one local port may hold (default: nvod's `learn_port_percent`,
    /// 25 % of max_learned, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_learned_per_port: Option<u32>,
    /// Most learned entries one remote VTEP may hold (default: nvod's
    /// `learn_remote_percent`, 50 % of max_learned, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_learned_per_remote: Option<u32>,
}

/// Which remote VTEPs a network takes tunnel packets from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcceptRemotes {
    /// Its flood list (EVPN type-3 senders, a multicast network's listed members), the
    /// remotes of its static and EVPN FDB entries, the overlay nodes' locators; others are
    /// dropped as `unknown_remote`.
    Known,
    /// Any remote (plain flood-and-learn).
    Any,
}

/// `POST /v1/networks/{vni}/routes`: an IPv4 prefix of an L3 network behind a remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The prefix, "10.0.0.2/32".
    pub prefix: String,
    /// The remote tunnel end.
    pub remote: IpAddr,
}

/// A network as nvod has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Network {
    /// VNI.
    pub vni: u32,
    /// Tenant MTU.
    pub mtu: u16,
    /// Whether the network learns MAC addresses from traffic at all: `learn_ports` or
    /// `learn_tunnels` (the old form).
    pub learning: bool,
    /// Whether it learns the source MACs of local ports' frames.
    pub learn_ports: bool,
    /// Whether it learns inner source MACs of tunnel packets.
    pub learn_tunnels: bool,
    /// BUM handling.
    pub bum: Bum,
    /// Most learned entries.
    pub max_learned: u32,
    /// Ageing time of learned entries, in seconds.
    pub ageing_s: u32,
    /// Flood list.
    pub flood: Vec<IpAddr>,
    /// Local ports attached.
    pub ports: Vec<String>,
    /// Learned FDB entries now.
    pub learned: u32,
    /// Static FDB entries now.
    #[serde(rename = "static")]
    pub static_entries: u32,
    /// Encapsulation profile.
    #[serde(default)]
    pub encap: String,
    /// Values of the profile's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, u64>,
    /// An L3 network.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub l3: bool,
    /// An L3 network's gateway MAC (what its containers' ARP requests are answered with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_mac: Option<String>,
    /// An L3 network's gateway IPv6 address: the link-local address (EUI-64 of the gateway
    /// MAC) it solicits from, and a next hop for its containers' IPv6 default route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ipv6: Option<std::net::Ipv6Addr>,
    /// An L3 network's routes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteSpec>,
    /// Which remotes the network takes tunnel packets from now: the setting, or its default.
    #[serde(default = "default_accept")]
    pub accept_remotes: AcceptRemotes,
    /// Whether `accept_remotes` was set (false: the default, which follows the flood list).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub accept_remotes_set: bool,
    /// Most learned entries per local port.
    #[serde(default)]
    pub max_learned_per_port: u32,
    /// Most learned entries per remote VTEP.
    #[serde(default)]
    pub max_learned_per_remote: u32,
}

fn default_accept() -> AcceptRemotes {
    AcceptRemotes::Known
}

/// The form of a user-defined encapsulation profile (`POST /v1/profiles`), also how every
/// profile is shown.
pub use nvo_encap::spec::ProfileSpec;

/// `POST /v1/profiles/{name}/keys`: what a received key of the profile leads to — exactly one
/// of `local` (deliver into the network with this VNI) and `forward` (relay the packet, header
/// and payload untouched but for its hop count, to this underlay address).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyBinding {
    /// The key bytes, hex (spaces allowed): for vxlan-gpe-nsh the SPI (3 bytes) and SI (1).
    pub key: String,
    /// Deliver to the local network with this VNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<u32>,
    /// Relay to this remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<IpAddr>,
}

/// `GET /v1/profiles`: one profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileInfo {
    /// Built into nvod (cannot be removed) or user-defined.
    pub builtin: bool,
    /// The description.
    #[serde(flatten)]
    pub spec: ProfileSpec,
}

/// What kind of interface a port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortKind {
    /// An existing interface in nvod's namespace (typically the host end of a veth pair whose
    /// other end is in a container), read and written with AF_PACKET.
    #[default]
    Veth,
    /// A TAP device nvod creates with this name, for a VM or a container.
    Tap,
}

/// `POST /v1/ports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    /// Interface name (at most 15 bytes).
    pub name: String,
    /// Network the port belongs to; left out (0) for a VLAN trunk, whose networks are in
    /// `vlan.trunk`.
    #[serde(default)]
    pub vni: u32,
    /// Interface kind (default veth).
    #[serde(default)]
    pub kind: PortKind,
    /// Offload settings (default: large frames kept, the interface's own offloads untouched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloads: Option<PortOffloads>,
    /// A VLAN-tagged port: an access port of one VLAN or a trunk (default: untagged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<crate::PortVlan>,
    /// A shared port, whose frames belong to virtual ports by source MAC (`vni` left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<crate::SharedPort>,
}

/// Offload knobs of a port, so that their effect can be measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortOffloads {
    /// Keep TSO/GSO frames from the port whole (STT carries them as one frame; other
    /// profiles segment them in software) and hand GSO frames to the port whole (default
    /// true). false: segment at receive and deliver only finished frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_frames: Option<bool>,
    /// TCP segmentation offload of the interface (ethtool tso), set when nvod opens it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tso: Option<bool>,
    /// Generic segmentation offload of the interface (ethtool gso).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<bool>,
    /// Generic receive offload of the interface (ethtool gro).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<bool>,
    /// Transmit checksum offload of the interface (ethtool tx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_checksum: Option<bool>,
}

/// A port as nvod has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// Interface name.
    pub name: String,
    /// Network.
    pub vni: u32,
    /// Interface kind.
    pub kind: PortKind,
    /// Whether nvod has the interface open now (false while it is missing; nvod retries).
    pub up: bool,
    /// Offload settings asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloads: Option<PortOffloads>,
    /// Its VLAN mode, if tagged (a trunk's `vni` is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<crate::PortVlan>,
    /// Its shared-port settings, if it is one (its `vni` is 0; its virtual ports are at
    /// `/v1/ports/{name}/vports`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<crate::SharedPort>,
    /// The QoS profile attached to it (`PUT /v1/ports/{name}/qos`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The ACL profile attached to it (`PUT /v1/ports/{name}/acl`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<String>,
}

/// Where an FDB entry was learned or set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Set through the API; persisted; never overwritten by learning.
    Static,
    /// Learned from traffic; ages out.
    Learned,
    /// Installed by the EVPN control plane from a BGP route; never aged; a MAC that shows up
    /// on a local port replaces it (it moved here).
    Evpn,
}

/// One FDB entry: a MAC address behind a local port or a remote VTEP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdbEntry {
    /// MAC address, lowercase colon-separated.
    pub mac: String,
    /// Local port, when the MAC is local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Remote VTEP, when the MAC is remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<IpAddr>,
    /// Overlay node, when the MAC is behind a node of the routed overlay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// Static or learned.
    pub origin: Origin,
    /// Seconds since the entry was last confirmed by traffic (0 for static entries).
    pub age_s: u64,
    /// A static port entry's host addresses (answered for by ARP/ND suppression, advertised
    /// by EVPN).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpAddr>,
}

/// `POST /v1/networks/{vni}/fdb`: a static entry; exactly one of `port` and `remote`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FdbAdd {
    /// MAC address.
    pub mac: String,
    /// Local port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Remote VTEP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<IpAddr>,
    /// Overlay node (networks on the `overlay` profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// With `port`: the addresses of the host behind it (at most 16), so that ARP/ND
    /// suppression answers for them and EVPN advertises them before the host has sent a frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<Vec<IpAddr>>,
}

/// Which FDB entries a flush removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushScope {
    /// Learned entries only.
    #[default]
    Learned,
    /// Learned and static entries.
    All,
}

/// `POST /v1/networks/{vni}/fdb/flush`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlushRequest {
    /// What to remove (default learned).
    #[serde(default)]
    pub scope: FlushScope,
}

/// Answer to a flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushResult {
    /// Entries removed.
    pub flushed: u64,
}

/// `POST /v1/networks/{vni}/flood`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloodAdd {
    /// Remote VTEP to replicate BUM frames to.
    pub remote: IpAddr,
}

/// `GET /v1/counters`. Counter names are stable snake_case words; a map keeps the API
/// independent of how the data path stores them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Drops by reason name, every reason listed (zeros included).
    pub drops: BTreeMap<String, u64>,
    /// Per network, by VNI.
    pub networks: BTreeMap<u32, BTreeMap<String, u64>>,
    /// Per port, by name.
    pub ports: BTreeMap<String, BTreeMap<String, u64>>,
    /// The underlay sockets.
    pub underlay: BTreeMap<String, u64>,
    /// STT reassembly.
    #[serde(default)]
    pub stt: BTreeMap<String, u64>,
    /// The routed overlay (forwarded, relayed, local, ttl_expired, no_route, …).
    #[serde(default)]
    pub overlay: BTreeMap<String, u64>,
    /// Tunnel traffic per remote address (rx_packets, rx_bytes, tx_packets, tx_bytes), on the
    /// userspace datapath; absent on the eBPF one, which does not count per remote.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub remotes: BTreeMap<IpAddr, BTreeMap<String, u64>>,
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// One line: what failed, with what value, and what to do.
    pub error: String,
}

// The routed overlay (issue 6, docs/design/overlay.md): node IDs, locators, routes, events.

/// `GET/PUT /v1/overlay`: this node's overlay identity.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlayInfo {
    /// This node's 32-bit overlay ID (0 is not a node).
    pub node_id: u32,
    /// The overlay's counters by stable snake_case name (sent, relayed, local, ttl_expired,
    /// no_route, no_locator, ...), in answers only; a `PUT` leaves it out (it is ignored).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
}

/// The weight a locator gets when none is given.
pub const DEFAULT_LOCATOR_WEIGHT: u16 = 1;

fn default_locator_weight() -> u16 {
    DEFAULT_LOCATOR_WEIGHT
}

/// One underlay address a node is reached at, with its share of the node's flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocatorSpec {
    /// The underlay address (IPv4 or IPv6).
    pub addr: IpAddr,
    /// Relative share of flows, 1 to 1000 (default 1); 0 drains the locator: it stays listed
    /// but no new flow picks it.
    #[serde(default = "default_locator_weight")]
    pub weight: u16,
}

/// `PUT /v1/overlay/nodes/{id}`: a node's locators, replacing the ones it had.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeLocators {
    /// The locators, in the order flows are spread over them.
    pub locators: Vec<LocatorSpec>,
}

/// `GET /v1/overlay/nodes/{id}` and each entry of `GET /v1/overlay/nodes`: a node of the
/// locator table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayNode {
    /// The node's ID.
    pub node_id: u32,
    /// Its locators.
    pub locators: Vec<LocatorSpec>,
    /// Whether this is the node nvod runs as (its locators are where others reach it).
    pub own: bool,
}

/// `PUT /v1/overlay/routes/{app}/{dst}`: the next hops of a destination, replacing the ones it
/// had. Several next hops replicate the packet (a multicast tree); the node's own ID among
/// them delivers a copy locally.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteNextHops {
    /// Next-hop node IDs.
    pub next_hops: Vec<u32>,
}

/// Each entry of `GET /v1/overlay/routes/{app}`: one route of an application's RIB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayRoute {
    /// The application: "ethernet", "ipv4" or "ipv6" ([`OverlayApp::name`]).
    pub app: String,
    /// The destination node ID (exact match).
    pub dst: u32,
    /// Its next hops.
    pub next_hops: Vec<u32>,
}

/// The applications of the overlay header, each with its own RIB, numbered as in ovstack.
/// In paths and bodies an application is its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverlayApp {
    /// Ethernet frames (application 7).
    Ethernet,
    /// IPv4 packets (application 4).
    Ipv4,
    /// IPv6 packets (application 6).
    Ipv6,
}

impl OverlayApp {
    /// Every application, in the order listings show them.
    pub const ALL: [OverlayApp; 3] = [OverlayApp::Ethernet, OverlayApp::Ipv4, OverlayApp::Ipv6];

    /// The name used in paths and bodies.
    pub fn name(self) -> &'static str {
        match self {
            OverlayApp::Ethernet => "ethernet",
            OverlayApp::Ipv4 => "ipv4",
            OverlayApp::Ipv6 => "ipv6",
        }
    }

    /// The number in the overlay header's Application field.
    pub fn number(self) -> u8 {
        match self {
            OverlayApp::Ethernet => 7,
            OverlayApp::Ipv4 => 4,
            OverlayApp::Ipv6 => 6,
        }
    }

    /// The application with this name ("ethernet", "ipv4", "ipv6") or number ("7", "4", "6").
    pub fn parse(text: &str) -> Option<OverlayApp> {
        let text = text.trim();
        OverlayApp::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(text) || a.number().to_string() == text)
    }
}

impl std::fmt::Display for OverlayApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `POST /v1/overlay/probe`: measure the path to a node with overlay probes (VNI 0, payload
/// "NVOP"): `count` requests to `dst`, straight along the routes or first to `via`'s locator
/// (it relays them on by its own routes), then `timeout_ms` to wait for the replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeRequest {
    /// The node probed.
    pub dst: u32,
    /// The relay the probes go through first; absent: along this node's routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<u32>,
    /// Requests sent, 1 to 100 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// How long to wait for the replies, 10 to 5000 ms (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u32>,
}

/// Round-trip times of the replies that came back, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RttStats {
    /// Fastest reply.
    pub min: u64,
    /// Mean over the replies.
    pub mean: u64,
    /// Slowest reply.
    pub max: u64,
}

/// The answer to `POST /v1/overlay/probe`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// The node probed.
    pub dst: u32,
    /// The relay, when the probes went through one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<u32>,
    /// Requests sent.
    pub sent: u32,
    /// Replies received before the timeout.
    pub received: u32,
    /// The share of requests without a reply, 0 to 1.
    pub loss: f64,
    /// Round-trip times; absent when no reply came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<RttStats>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overlay_bodies_have_the_documented_json_form() {
        let n: NodeLocators =
            serde_json::from_value(json!({"locators": [{"addr": "192.0.2.2", "weight": 3},
                {"addr": "fd00::2"}]}))
            .unwrap();
        assert_eq!(n.locators[1].weight, 1, "weight defaults to 1");
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            json!({"locators": [{"addr": "192.0.2.2", "weight": 3},
                {"addr": "fd00::2", "weight": 1}]})
        );
        assert_eq!(
            serde_json::to_value(OverlayInfo {
                node_id: 7,
                ..Default::default()
            })
            .unwrap(),
            json!({"node_id": 7})
        );
        // Request bodies refuse fields they do not know.
        for bad in [
            json!({"locators": [{"addr": "192.0.2.2", "wieght": 3}]}),
            json!({"next_hops": [1], "ttl": 4}),
            json!({"node": 7}),
        ] {
            let a = serde_json::from_value::<NodeLocators>(bad.clone()).is_err();
            let b = serde_json::from_value::<RouteNextHops>(bad.clone()).is_err();
            let c = serde_json::from_value::<OverlayInfo>(bad.clone()).is_err();
            assert!(a && b && c, "{bad}");
        }
    }

    #[test]
    fn applications_by_name_or_number() {
        assert_eq!(OverlayApp::parse("ethernet"), Some(OverlayApp::Ethernet));
        assert_eq!(OverlayApp::parse("IPv6"), Some(OverlayApp::Ipv6));
        assert_eq!(OverlayApp::parse("4"), Some(OverlayApp::Ipv4));
        assert_eq!(OverlayApp::parse("5"), None);
        let numbers: Vec<u8> = OverlayApp::ALL.iter().map(|a| a.number()).collect();
        assert_eq!(numbers, [7, 4, 6]);
        assert_eq!(
            serde_json::to_value(OverlayApp::Ipv4).unwrap(),
            json!("ipv4")
        );
    }

    #[test]
    fn probe_bodies_have_the_documented_json_form() {
        let r = ProbeRequest {
            dst: 3,
            via: Some(2),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            json!({"dst": 3, "via": 2})
        );
        let full: ProbeRequest =
            serde_json::from_value(json!({"dst": 3, "count": 5, "timeout_ms": 200})).unwrap();
        assert_eq!(
            (full.via, full.count, full.timeout_ms),
            (None, Some(5), Some(200))
        );
        assert!(serde_json::from_value::<ProbeRequest>(json!({"dst": 3, "ttl": 2})).is_err());
        let answer = json!({"dst": 3, "via": 2, "sent": 10, "received": 9, "loss": 0.1,
            "rtt_us": {"min": 100, "mean": 150, "max": 400}});
        let p: ProbeResult = serde_json::from_value(answer.clone()).unwrap();
        assert_eq!(p.rtt_us.map(|r| r.mean), Some(150));
        assert_eq!(serde_json::to_value(p).unwrap(), answer);
        let lost: ProbeResult =
            serde_json::from_value(json!({"dst": 3, "sent": 10, "received": 0, "loss": 1.0}))
                .unwrap();
        assert_eq!((lost.via, lost.rtt_us), (None, None));
    }
}
