//! Why a control operation on the tables was refused.
//!
//! A refused operation changes nothing. Each message names the offending value and says what to
//! do, so that the API can hand it to the user as it is.

use std::net::IpAddr;
use std::time::Duration;

use crate::{Mac, NodeId, PortId, Vni};

/// A control operation on the pipeline's tables that was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// `add_network` for a VNI that already has a network.
    #[error("network {0} already exists; remove it first or choose another vni")]
    NetworkExists(Vni),
    /// An operation on a VNI without a network.
    #[error("no network with vni {0}; create it first")]
    NoSuchNetwork(Vni),
    /// A VNI outside `1..=16777215`.
    #[error("vni {0} is out of range; a vni is 1..=16777215")]
    InvalidVni(u32),
    /// `remove_network` while ports are still attached.
    #[error("network {vni} still has {ports} port(s) attached; remove them first")]
    NetworkHasPorts {
        /// The network.
        vni: Vni,
        /// How many ports are attached.
        ports: usize,
    },
    /// `add_port` for a port that is already attached.
    #[error("port {port} is already attached to network {vni}; remove it first")]
    PortExists {
        /// The port.
        port: PortId,
        /// The network it is attached to.
        vni: Vni,
    },
    /// An operation on a port that is not attached.
    #[error("no port {0}; attach it first")]
    NoSuchPort(PortId),
    /// A static FDB entry pointing at a port of another network.
    #[error("port {port} belongs to network {port_vni}, not {vni}; an fdb entry can only point at a port of its own network")]
    PortInOtherNetwork {
        /// The port.
        port: PortId,
        /// The network of the FDB entry.
        vni: Vni,
        /// The network the port belongs to.
        port_vni: Vni,
    },
    /// A table at its limit.
    #[error("the {table} table is full ({limit} entries); remove entries or raise the limit")]
    TableFull {
        /// Which table: "networks", "ports", "flood list", "static fdb", "evpn fdb", "neighbor".
        table: &'static str,
        /// Its limit.
        limit: usize,
    },
    /// `fdb_remove` for a MAC the network does not know.
    #[error("network {vni} has no fdb entry for {mac}")]
    NoSuchEntry {
        /// The network.
        vni: Vni,
        /// The MAC.
        mac: Mac,
    },
    /// A static FDB entry for a group or all-zero MAC.
    #[error("mac {0} is not a unicast address; an fdb entry needs an individual, non-zero mac")]
    InvalidMac(Mac),
    /// A network MTU out of range.
    #[error("mtu {mtu} is out of range; use {min}..={max}")]
    InvalidMtu {
        /// The MTU asked for.
        mtu: u16,
        /// The smallest accepted.
        min: u16,
        /// The largest accepted.
        max: u16,
    },
    /// A zero ageing time.
    #[error("ageing time {0:?} is too short; use at least one second")]
    InvalidAgeing(Duration),
    /// A `max_learned` above the pipeline's `Limits::max_learned_fdb`.
    #[error("max_learned {requested} is above the limit of {limit} learned entries per network; ask for fewer")]
    InvalidMaxLearned {
        /// What the network asked for.
        requested: u32,
        /// The pipeline's limit.
        limit: u32,
    },
    /// A remote VTEP address that is not unicast.
    #[error("remote {0} is not a unicast address; a remote vtep needs one")]
    InvalidRemote(IpAddr),
    /// A BUM multicast group that is not a multicast address.
    #[error("group {0} is not a multicast address; use e.g. 239.1.1.1 or ff0e::1")]
    InvalidGroup(IpAddr),
    /// `flood_add` for a remote already in the list.
    #[error("remote {remote} is already in the flood list of network {vni}")]
    FloodExists {
        /// The network.
        vni: Vni,
        /// The remote.
        remote: IpAddr,
    },
    /// `flood_remove` for a remote not in the list.
    #[error("remote {remote} is not in the flood list of network {vni}")]
    NoSuchFlood {
        /// The network.
        vni: Vni,
        /// The remote.
        remote: IpAddr,
    },
    /// A route on a network that is not an L3 network.
    #[error("network {0} is not an l3 network; routes belong to l3 networks")]
    NotL3(Vni),
    /// A prefix with host bits set or a length above 32 (IPv4) or 128 (IPv6).
    #[error(
        "prefix {prefix}/{len} is invalid; use a network address and a length of 0 to 32 \
         (ipv4) or 0 to 128 (ipv6)"
    )]
    InvalidPrefix {
        /// The prefix.
        prefix: std::net::IpAddr,
        /// Its length.
        len: u8,
    },
    /// `route_remove` for a route the network does not have.
    #[error("network {vni} has no route {prefix}/{len}")]
    NoSuchRoute {
        /// The network.
        vni: Vni,
        /// The prefix.
        prefix: std::net::IpAddr,
        /// Its length.
        len: u8,
    },
    /// Node ID 0 in an FDB entry or as a network's BUM tree.
    #[error("node id {0} is not a node; use 1..=4294967295")]
    InvalidNode(NodeId),
    /// An EVPN FDB entry for a MAC a static entry holds: the operator's entry wins.
    #[error("network {vni} has a static fdb entry for {mac}; the evpn route for it is not installed (remove the static entry to let evpn install it)")]
    StaticHolds {
        /// The network.
        vni: Vni,
        /// The MAC.
        mac: Mac,
    },
    /// A neighbour (IP → MAC) entry for an address that is not unicast.
    #[error("neighbor address {0} is not a unicast address; a neighbor entry needs one")]
    InvalidNeighbor(IpAddr),
    /// A trunk TPID other than 802.1Q's or 802.1ad's.
    #[error("ethertype {0:#06x} is not a vlan tag; use 0x8100 (802.1q) or 0x88a8 (802.1ad)")]
    InvalidTpid(u16),
    /// A VLAN ID outside `1..=4094`.
    #[error("vlan id {0} is out of range; a vlan id is 1..=4094 (0 and 4095 are reserved)")]
    InvalidVid(u16),
    /// The same VLAN ID twice in one trunk.
    #[error("vlan {0} is mapped twice on the trunk; map each vlan id once")]
    DuplicateVid(u16),
    /// One network behind two VLANs of one trunk: its frames could not leave under one tag.
    #[error("network {vni} is mapped to vlans {first} and {second} of one trunk; map each network once per trunk")]
    VniMappedTwice {
        /// The network.
        vni: Vni,
        /// The first VLAN mapped to it.
        first: u16,
        /// The second.
        second: u16,
    },
    /// A trunk with no VLAN or too many.
    #[error("a trunk maps 1 to {max} vlans, not {vlans}")]
    TrunkSize {
        /// How many were asked for.
        vlans: usize,
        /// The most a trunk takes.
        max: usize,
    },
    /// A virtual-port operation on a port that is not a shared port.
    #[error("port {0} is not a shared port; add it as one (shared) first")]
    NotShared(PortId),
    /// A second virtual port for one MAC on a shared port.
    #[error("shared port {shared} already has a virtual port for {mac}; delete it first")]
    VportExists {
        /// The shared port.
        shared: PortId,
        /// The MAC.
        mac: Mac,
    },
    /// A virtual port that does not exist.
    #[error("shared port {shared} has no virtual port for {mac}")]
    NoSuchVport {
        /// The shared port.
        shared: PortId,
        /// The MAC.
        mac: Mac,
    },
    /// A QoS profile with values out of range.
    #[error(transparent)]
    Qos(#[from] crate::qos::QosError),
}
