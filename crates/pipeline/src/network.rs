//! One tenant network as the pipeline holds it: its spec, FDB, neighbour table, local ports,
//! flood list and counters, and the view of it the API shows.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use crate::counters::NetworkCounters;
use crate::fdb::{serialize_secs, Fdb};
use crate::l3::tables::{L3Tables, Route};
use crate::neigh::Neighbors;
use crate::{BumMode, NetworkSpec, PortId, Vni};

/// A network in the pipeline's table.
#[derive(Debug)]
pub(crate) struct Network {
    pub(crate) spec: NetworkSpec,
    pub(crate) fdb: Fdb,
    /// The attached ports, in the order they were added: flooding delivers in this order.
    pub(crate) ports: Vec<PortId>,
    /// Head-end replication list, in the order remotes were added.
    pub(crate) flood: Vec<IpAddr>,
    pub(crate) counters: NetworkCounters,
    /// Routes and neighbours of an L3 network (empty otherwise).
    pub(crate) l3: L3Tables,
    /// IP → MAC of an L2 network, for ARP/ND suppression (docs/design/evpn.md).
    pub(crate) neigh: Neighbors,
    /// Whether ARP requests and neighbour solicitations are answered from `neigh`.
    pub(crate) suppress: bool,
}

impl Network {
    pub(crate) fn new(spec: NetworkSpec) -> Network {
        Network {
            spec,
            fdb: Fdb::default(),
            ports: Vec::new(),
            flood: Vec::new(),
            counters: NetworkCounters::default(),
            l3: L3Tables::default(),
            neigh: Neighbors::default(),
            suppress: false,
        }
    }

    pub(crate) fn view(&self) -> NetworkView {
        let s = &self.spec;
        NetworkView {
            vni: s.vni,
            mtu: s.mtu,
            learning: s.learn_ports || s.learn_tunnels,
            learn_ports: s.learn_ports,
            learn_tunnels: s.learn_tunnels,
            bum: s.bum,
            max_learned: s.max_learned,
            ageing: s.ageing,
            flood: self.flood.clone(),
            ports: self.ports.clone(),
            learned: self.fdb.learned(),
            static_entries: self.fdb.statics(),
            profile: s.profile,
            l3_gateway: s.l3_gateway,
            routes: self.l3.routes.clone(),
            neighbours: self.l3.neighbours.len(),
            evpn_fdb: self.fdb.evpn(),
            evpn_neighbors: self.neigh.len(),
            arp_suppression: self.suppress,
            accept_remotes: s.accepts(!self.flood.is_empty()),
            max_learned_per_port: s.max_learned_per_port,
            max_learned_per_remote: s.max_learned_per_remote,
            policy: false,
            policy_shape: Default::default(),
            tunnel_flows: false,
        }
    }
}

/// A network as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkView {
    /// The VNI.
    pub vni: Vni,
    /// The tenant MTU.
    pub mtu: u16,
    /// Whether source MACs are learned at all (from ports or from tunnels).
    pub learning: bool,
    /// Whether source MACs of local ports' frames are learned.
    pub learn_ports: bool,
    /// Whether inner source MACs of tunnel packets are learned.
    pub learn_tunnels: bool,
    /// How BUM frames reach other VTEPs.
    pub bum: BumMode,
    /// The learned-entry limit.
    pub max_learned: u32,
    /// The ageing time of learned entries; serialised as whole seconds, `ageing_s`.
    #[serde(rename = "ageing_s", serialize_with = "serialize_secs")]
    pub ageing: Duration,
    /// The flood list, in the order remotes were added.
    pub flood: Vec<IpAddr>,
    /// The attached ports, in the order they were added.
    pub ports: Vec<PortId>,
    /// How many learned FDB entries the network holds.
    pub learned: usize,
    /// How many static FDB entries the network holds; serialised as `static`.
    #[serde(rename = "static")]
    pub static_entries: usize,
    /// The encapsulation profile.
    pub profile: crate::ProfileTag,
    /// The gateway MAC of an L3 network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l3_gateway: Option<crate::Mac>,
    /// An L3 network's routes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// How many containers an L3 network knows (IP → port, MAC).
    #[serde(skip_serializing_if = "is_zero")]
    pub neighbours: usize,
    /// How many FDB entries the EVPN control plane installed (the design page's `evpn`).
    #[serde(skip_serializing_if = "is_zero")]
    pub evpn_fdb: usize,
    /// How many entries the neighbour table for ARP/ND suppression holds, installed and
    /// snooped (the design page's `neighbors`; not an L3 network's `neighbours`).
    #[serde(skip_serializing_if = "is_zero")]
    pub evpn_neighbors: usize,
    /// Whether the network answers ARP requests and neighbour solicitations for the addresses
    /// it knows (`Pipeline::set_arp_suppression`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub arp_suppression: bool,
    /// Which remotes the network takes tunnel packets from now (the setting, or its default
    /// given the flood list).
    pub accept_remotes: crate::AcceptRemotes,
    /// The learned-entry bound of one local port, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_learned_per_port: Option<u32>,
    /// The learned-entry bound of one remote VTEP or overlay node, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_learned_per_remote: Option<u32>,
    /// Whether an identity policy filters the network (issue 18): its traffic must go
    /// through this pipeline (the kernel path leaves such networks to it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub policy: bool,
    /// How large that policy is (the kernel path enforces one within its bounds).
    #[serde(skip)]
    pub policy_shape: nvo_policy::Shape,
    /// Whether a flow rule may match the frames it receives from the tunnel (issue 17;
    /// tunnel_flows.rs): they must go through this pipeline (the kernel path leaves such
    /// networks to it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tunnel_flows: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
