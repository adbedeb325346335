//! The plain values the tables are made of: VNIs, MAC addresses, port identifiers, FDB
//! destinations, network specifications and the table limits.
//!
//! These are the pipeline's internal types. The API and the configuration file have their own
//! types and convert at the edge; the serde implementations here exist so that views and counters
//! can be shown as they are (a MAC as `"02:00:00:00:00:01"`, a VNI as a number).

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use crate::{NodeId, TableError};

/// A 24-bit VXLAN Network Identifier, RFC 7348 §5.
///
/// The field is public so that a VNI read off the wire can be looked up as it is; only
/// `1..=Vni::MAX` can name a network (`add_network` refuses anything else), so a lookup of any
/// other value simply finds nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Vni(pub u32);

impl Vni {
    /// The largest VNI: 24 bits.
    pub const MAX: u32 = nvo_wire::VNI_MAX;

    /// A VNI that can name a network, or [`TableError::InvalidVni`].
    pub fn new(value: u32) -> Result<Vni, TableError> {
        let vni = Vni(value);
        if vni.is_valid() {
            Ok(vni)
        } else {
            Err(TableError::InvalidVni(value))
        }
    }

    /// Whether the value is in `1..=Vni::MAX`. VNI 0 is left out: the kernel and most hardware
    /// VTEPs reserve it, and it is what an uninitialised header carries.
    pub const fn is_valid(self) -> bool {
        self.0 >= 1 && self.0 <= Vni::MAX
    }
}

impl fmt::Display for Vni {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The encapsulation profile a network uses, as an opaque number the datapath chose (nvod uses
/// the engine's profile index; `nvo-encap` registers `vxlan` first, so 0 is VXLAN). The
/// pipeline only copies it into `Action::Encap` and checks it on decapsulated frames.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct ProfileTag(pub u16);

impl ProfileTag {
    /// VXLAN (RFC 7348), the default.
    pub const VXLAN: ProfileTag = ProfileTag(0);
}

/// The identifier of a local port (a veth or TAP the datapath opened). The datapath chooses the
/// numbers; the pipeline only compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PortId(pub u32);

impl PortId {
    /// The tunnel as a port of the flow table (as a tunnel port of an Open vSwitch bridge):
    /// frames decapsulated from the underlay come in on it (`in_port=tunnel`, with `tun_id`
    /// the VNI they arrived with), and `output:tunnel` sends a frame into the tunnel. The
    /// highest port number Open vSwitch's tools accept (its OFPP_MAX is 0xff00: `ovs-ofctl`
    /// refuses `in_port`/`output` numbers between that and OpenFlow 1.3's reserved range);
    /// nvod never gives a port this number.
    pub const TUNNEL: PortId = PortId(0xfeff);
}

impl fmt::Display for PortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

pub use nvo_wire::{Mac, MacParseError};

/// Where an FDB entry sends frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FdbDest {
    /// A local port of the same network.
    Port(PortId),
    /// A remote VTEP, by its underlay address (the UDP port is node-wide).
    Remote(IpAddr),
    /// A node of the routed overlay, by its ID: the datapath finds the way there in its
    /// overlay tables (`Action::EncapNode`).
    Node(NodeId),
}

/// How an FDB entry got there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Put there through the API; never aged, never overwritten by learning.
    Static,
    /// Learned from a frame's source address; aged, moved when the MAC shows up elsewhere.
    Learned,
    /// Installed by the EVPN control plane for a remote MAC (`Pipeline::evpn_apply`); never
    /// aged, never overwritten by learning from a tunnel, replaced by a learned entry when the
    /// MAC shows up on a local port (it moved here).
    Evpn,
}

/// How a network sends broadcast, unknown unicast and multicast (BUM) frames to other VTEPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BumMode {
    /// One copy to every remote in the network's flood list (head-end replication).
    HeadEnd,
    /// One copy to this underlay multicast group; the underlay replicates (RFC 7348 §4.2).
    Multicast(IpAddr),
    /// One copy to this overlay node ID, whose routes form the replication tree.
    Overlay(NodeId),
}

impl Serialize for BumMode {
    /// `{"mode": "head_end"}`, `{"mode": "multicast", "group": "239.1.1.1"}` or
    /// `{"mode": "overlay", "node": 4278190081}`, as in the API.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match self {
            BumMode::HeadEnd => {
                let mut s = serializer.serialize_struct("BumMode", 1)?;
                s.serialize_field("mode", "head_end")?;
                s.end()
            }
            BumMode::Multicast(group) => {
                let mut s = serializer.serialize_struct("BumMode", 2)?;
                s.serialize_field("mode", "multicast")?;
                s.serialize_field("group", group)?;
                s.end()
            }
            BumMode::Overlay(node) => {
                let mut s = serializer.serialize_struct("BumMode", 2)?;
                s.serialize_field("mode", "overlay")?;
                s.serialize_field("node", node)?;
                s.end()
            }
        }
    }
}

/// The IP families an L3 network's tunnels carry. The profile decides: vxlan-gpe announces
/// either in its Next Protocol field, so it carries both; ipip (IP protocol 4) carries IPv4
/// only, ip6ip6 (IP protocol 41) IPv6 only, whatever the underlay's family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct IpFamilies {
    /// IPv4 packets.
    pub ipv4: bool,
    /// IPv6 packets.
    pub ipv6: bool,
}

impl IpFamilies {
    /// Both families.
    pub const BOTH: IpFamilies = IpFamilies {
        ipv4: true,
        ipv6: true,
    };

    /// Whether the family of an IP packet whose version nibble is `version` is carried.
    pub fn carries(self, version: u8) -> bool {
        match version {
            4 => self.ipv4,
            6 => self.ipv6,
            _ => false,
        }
    }
}

/// What a network is: everything `add_network` needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkSpec {
    /// The network's VNI, `1..=Vni::MAX`.
    pub vni: Vni,
    /// The tenant MTU: the largest IP packet a port may send, without the Ethernet header.
    pub mtu: u16,
    /// Whether source MACs of frames from local ports are learned (a bridge port's learning).
    pub learn_ports: bool,
    /// Whether inner source MACs of tunnel packets are learned behind their remote (the
    /// opposite of the kernel VXLAN device's `nolearning`).
    pub learn_tunnels: bool,
    /// How BUM frames reach other VTEPs.
    pub bum: BumMode,
    /// How many learned FDB entries the network may hold; at this count it stops learning.
    pub max_learned: u32,
    /// How long a learned entry lives without a frame from its MAC.
    pub ageing: Duration,
    /// The encapsulation profile of the network's tunnelled frames.
    pub profile: ProfileTag,
    /// Set for an L3 network (its tunnels carry IPv4 packets, not frames): the MAC of the
    /// gateway nvod plays for its containers. See the `l3` module.
    pub l3_gateway: Option<Mac>,
    /// The IP families an L3 network's tunnels carry (both by default); the datapath sets them
    /// from the profile. A packet of another family from a port is dropped (profile_mismatch).
    pub l3_families: IpFamilies,
    /// Which remotes the network takes tunnel packets from; `None`: the default
    /// ([`NetworkSpec::accepts`]).
    pub accept_remotes: Option<AcceptRemotes>,
    /// How many learned entries one local port may hold; `None`: no bound of its own (the
    /// network's `max_learned` only). nvod sets it, by default to `max_learned / 4`.
    pub max_learned_per_port: Option<u32>,
    /// How many learned entries one remote VTEP (or overlay node) may hold; `None`: no bound
    /// of its own.
    pub max_learned_per_remote: Option<u32>,
}

impl NetworkSpec {
    /// A 1500-byte underlay minus IPv4 + UDP + VXLAN + inner Ethernet (RFC 7348 §4.3).
    pub const DEFAULT_MTU: u16 = 1450;
    /// The default learned-entry limit per network.
    pub const DEFAULT_MAX_LEARNED: u32 = 4096;
    /// The default ageing time, the bridge and VXLAN default of the Linux kernel.
    pub const DEFAULT_AGEING: Duration = Duration::from_secs(300);
    /// The smallest MTU accepted: the IPv4 minimum (RFC 791).
    pub const MIN_MTU: u16 = 68;
    /// The largest MTU accepted: what still fits, behind an 802.1Q-tagged inner Ethernet header,
    /// in a VXLAN packet inside the largest IPv4 datagram (65535 − 20 − 8 − 8 − 18).
    pub const MAX_MTU: u16 = u16::MAX - 54;

    /// A spec with every default: learning, head-end replication, 1450-byte MTU.
    pub fn new(vni: Vni) -> NetworkSpec {
        NetworkSpec {
            vni,
            mtu: NetworkSpec::DEFAULT_MTU,
            learn_ports: true,
            learn_tunnels: true,
            bum: BumMode::HeadEnd,
            max_learned: NetworkSpec::DEFAULT_MAX_LEARNED,
            ageing: NetworkSpec::DEFAULT_AGEING,
            profile: ProfileTag::VXLAN,
            l3_gateway: None,
            l3_families: IpFamilies::BOTH,
            accept_remotes: None,
            max_learned_per_port: None,
            max_learned_per_remote: None,
        }
    }

    /// Which remotes the network takes tunnel packets from, given whether it lists any
    /// (`listed`: a flood list, which for a multicast network is the list of the group's
    /// members). Unless set, `known`, but for a multicast network that lists no member:
    /// plain flood-and-learn (RFC 7348 §4.2), where any member of the group may speak.
    pub fn accepts(&self, listed: bool) -> AcceptRemotes {
        match (self.accept_remotes, self.bum) {
            (Some(a), _) => a,
            (None, BumMode::Multicast(_)) if !listed => AcceptRemotes::Any,
            (None, _) => AcceptRemotes::Known,
        }
    }
}

/// Which remote VTEPs a network takes tunnel packets from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcceptRemotes {
    /// Only the remotes it knows: its flood list (with the EVPN type-3 senders, and a
    /// multicast network's listed members), the remotes of its static and EVPN FDB entries,
    /// and the overlay nodes' locators. Packets from others are dropped as `unknown_remote`.
    Known,
    /// Any remote (plain flood-and-learn).
    Any,
}

/// Bounds on every table the pipeline holds. A table at its bound refuses new entries with
/// [`TableError::TableFull`]; the learned part of an FDB stops learning instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Networks in the pipeline.
    pub max_networks: usize,
    /// Ports, over all networks.
    pub max_ports: usize,
    /// Remotes in one network's flood list.
    pub max_flood: usize,
    /// Static FDB entries in one network.
    pub max_static_fdb: usize,
    /// The largest `NetworkSpec::max_learned` a network may ask for (an addition to the design
    /// page's four limits: without it an API client could unbound the learned table).
    pub max_learned_fdb: u32,
    /// EVPN-installed FDB entries in one network (docs/design/evpn.md), apart from the static
    /// and learned ones.
    pub max_evpn_fdb: usize,
    /// Entries of one network's neighbour table (IP → MAC, for ARP/ND suppression), installed
    /// and snooped together.
    pub max_neighbors: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_networks: 4096,
            max_ports: 1024,
            max_flood: 256,
            max_static_fdb: 16384,
            max_learned_fdb: 1 << 16,
            max_evpn_fdb: 1 << 18,
            max_neighbors: 1 << 18,
        }
    }
}

/// Which entries `fdb_flush` removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlushScope {
    /// Learned entries only; static ones stay.
    Learned,
    /// Every entry.
    All,
}

/// Whether an IP address can be a unicast underlay destination (a VTEP or a sender).
pub(crate) fn is_unicast_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !v4.is_unspecified() && !v4.is_multicast() && !v4.is_broadcast(),
        IpAddr::V6(v6) => !v6.is_unspecified() && !v6.is_multicast(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_text_round_trip_and_rejects() {
        let mac: Mac = "02:0a:FF:00:00:01".parse().unwrap();
        assert_eq!(mac, Mac([0x02, 0x0a, 0xff, 0, 0, 1]));
        assert_eq!(mac.to_string(), "02:0a:ff:00:00:01");
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:01:02",
            "02:00:00:00:00:1g",
            "002:00:00:00:00:01",
            "02::00:00:00:01",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
    }

    #[test]
    fn mac_kinds() {
        assert!(Mac([2, 0, 0, 0, 0, 1]).is_unicast());
        assert!(!Mac::ZERO.is_unicast());
        assert!(Mac::BROADCAST.is_multicast() && Mac::BROADCAST.is_broadcast());
        assert!(Mac([0x01, 0, 0x5e, 0, 0, 1]).is_multicast());
        assert!(Mac([0x33, 0x33, 0, 0, 0, 1]).is_multicast());
    }

    #[test]
    fn vni_range() {
        assert_eq!(Vni::new(0), Err(TableError::InvalidVni(0)));
        assert_eq!(Vni::new(1 << 24), Err(TableError::InvalidVni(1 << 24)));
        assert_eq!(Vni::new(Vni::MAX), Ok(Vni(Vni::MAX)));
    }

    #[test]
    fn serde_shapes() {
        assert_eq!(
            serde_json::to_string(&Mac([2, 0, 0, 0, 0, 1])).unwrap(),
            "\"02:00:00:00:00:01\""
        );
        let mac: Mac = serde_json::from_str("\"02:00:00:00:00:01\"").unwrap();
        assert_eq!(mac, Mac([2, 0, 0, 0, 0, 1]));
        assert!(serde_json::from_str::<Mac>("\"nope\"").is_err());
        assert_eq!(
            serde_json::to_string(&BumMode::HeadEnd).unwrap(),
            r#"{"mode":"head_end"}"#
        );
        let group = BumMode::Multicast("239.1.1.1".parse().unwrap());
        assert_eq!(
            serde_json::to_string(&group).unwrap(),
            r#"{"mode":"multicast","group":"239.1.1.1"}"#
        );
        assert_eq!(
            serde_json::to_string(&BumMode::Overlay(NodeId(0xff00_0001))).unwrap(),
            r#"{"mode":"overlay","node":4278190081}"#
        );
        assert_eq!(
            serde_json::to_string(&FdbDest::Node(NodeId(3))).unwrap(),
            r#"{"node":3}"#
        );
    }
}
