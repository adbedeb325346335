//! The data path: a frame from a port, or a frame the datapath decapsulated from the underlay
//! (the encapsulation engine took the tunnel header off and refused what no profile accepts:
//! `drop_underlay`), in; actions out.
//!
//! ```text
//!  from_port(port, frame)                      from_decapsulated(decap, inner)
//!   port known? ─ no → unknown_port              network for the vni? ─ no → unknown_vni
//!   ethernet header? ─ no → malformed_frame      network's profile? ─ no → profile_mismatch
//!   source unicast? ─ no → invalid_source_mac    remote known (accept_remotes)? ─ no →
//!   L3 network? → too_big as below, then l3.rs     unknown_remote
//!   learn src → Port(port)                       ethernet header? ─ no → malformed_frame
//!   snoop ARP/ND → neighbour table               source unicast? ─ no → invalid_source_mac
//!   longer than mtu + L2? → reply + too_big
//!   ARP/NS answered by suppression? → Reply
//!   dst in fdb:                                  learn src → Remote(src), or Node(src_node)
//!     this port → hairpin                          from an overlay header (unless GBP D bit)
//!     other port → Deliver                       dst in fdb:
//!     remote → Encap                               port → Deliver
//!     node → EncapNode                             remote, node → remote_to_remote
//!   else flood: Deliver to every other port,       (split horizon)
//!     Encap to each flood remote or the group,   else flood: Deliver to every port,
//!     or EncapNode to the network's overlay tree   never back to the underlay
//!   nothing to do → no_destination               nothing to do → no_destination
//! ```
//!
//! Learning is bounded three ways (fdb.rs): per network (`max_learned`), per local port
//! (`max_learned_per_port`) and per remote VTEP or overlay node (`max_learned_per_remote`);
//! a refusal counts `learn_limit` in the network and, for a port's frame, in the port; a port's
//! frame refused by the port's own bound is dropped (`port_learn_limit`), so that a MAC flood
//! from one port reaches no other host beyond its share. A MAC
//! learned on a local port is not moved by a tunnel while its entry lives
//! (`learn_local_conflict`); the frame is still delivered.
//!
//! Time is passed in as `now: Instant`; the pipeline never reads a clock. Every drop goes through
//! [`count_drop`], the one place that counts drops. Nothing here allocates once `Actions` and the FDB
//! have grown to their working size.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::Instant;

use crate::actions::{Action, Actions};
use crate::counters::{DropCounters, PortCounters, RemoteTable, UnderlayCounters};
use crate::fdb::{Bounds, Learned};
use crate::fdb_events::{FdbChange, FdbEvent, FdbEvents};
use crate::frame::{self, Eth};
use crate::icmp;
use crate::l3;
use crate::network::Network;
use crate::qos::Policer;
use crate::suppress;
use crate::vlan::{self, Trunk};
use crate::vport::SharedPorts;
use crate::{
    AcceptRemotes, BumMode, DropReason, FdbDest, Limits, Mac, NodeId, PortId, ProfileTag, Vni,
};

/// A port in the pipeline's table.
#[derive(Debug)]
pub(crate) struct Port {
    pub(crate) vni: Vni,
    pub(crate) counters: PortCounters,
}

/// Every table of the data plane and the logic between them. Owned by one thread; see the
/// crate documentation.
#[derive(Debug)]
pub struct Pipeline {
    pub(crate) limits: Limits,
    pub(crate) networks: HashMap<Vni, Network>,
    pub(crate) ports: HashMap<PortId, Port>,
    /// VLAN trunks by their interface's id (vlan.rs); their circuits are in `ports`.
    pub(crate) trunks: HashMap<PortId, Trunk>,
    /// Shared ports and their virtual ports per MAC (vport.rs); virtual ports are in `ports`.
    pub(crate) vports: SharedPorts,
    /// QoS policers of ports (qos.rs, policing.rs).
    pub(crate) policers: HashMap<PortId, Policer>,
    pub(crate) drops: DropCounters,
    pub(crate) underlay: UnderlayCounters,
    /// Tunnel traffic per remote address.
    pub(crate) remotes: RemoteTable,
    /// Bumped on every change of the set of local hosts (`Pipeline::local_hosts`).
    pub(crate) hosts_generation: u64,
    /// Whether new networks journal their FDB changes (`Pipeline::set_fdb_journal`).
    pub(crate) fdb_journal: bool,
    /// The overlay nodes' locators (`Pipeline::set_overlay_locators`): remotes every network
    /// knows.
    pub(crate) overlay_locators: HashSet<IpAddr>,
    /// Learned, moved and aged MACs for a monitor, when on (fdb_events.rs).
    pub(crate) fdb_events: FdbEvents,
    /// The flow table every port's frames meet first (flows.rs).
    pub(crate) flows: crate::flows::Flows,
    /// Identity policy per network (policy.rs).
    pub(crate) policy: crate::policy::Policies,
    /// This host's ILA locator, upper 64 bits (`Pipeline::set_ila_locator`).
    pub(crate) ila_locator: Option<u64>,
    pub(crate) scratch: Box<[u8]>,
}

impl Pipeline {
    /// An empty pipeline with these limits.
    pub fn new(limits: Limits) -> Pipeline {
        Pipeline {
            limits,
            networks: Default::default(),
            ports: Default::default(),
            trunks: Default::default(),
            vports: Default::default(),
            policers: Default::default(),
            drops: DropCounters::default(),
            underlay: UnderlayCounters::default(),
            remotes: RemoteTable::default(),
            // 1, so that a poller starting from 0 gets the first set, even an empty one.
            hosts_generation: 1,
            fdb_journal: false,
            overlay_locators: HashSet::new(),
            fdb_events: FdbEvents::default(),
            flows: Default::default(),
            policy: Default::default(),
            ila_locator: None,
            // Big enough for an ICMP error and for an L3 network's largest packet with an
            // Ethernet header in front.
            scratch: vec![0; icmp::SCRATCH_LEN.max(usize::from(u16::MAX) + 18)].into_boxed_slice(),
        }
    }

    /// The limits the pipeline was made with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The buffer `Action::Reply { len, .. }` refers to: send `&scratch()[..len]`. Its content is
    /// valid until the next `from_port`.
    pub fn scratch(&self) -> &[u8] {
        &self.scratch
    }

    /// Decides what happens to `frame`, received on `port` at `now`. Clears `actions` first.
    pub fn from_port(&mut self, port: PortId, frame: &[u8], now: Instant, actions: &mut Actions) {
        self.from_port_gso(port, frame, frame.len(), now, actions);
    }

    /// [`Pipeline::from_port`] for a frame the port handed over whole although the sender
    /// asked for segmentation (a TSO/GSO frame): `segment_len` is the length of the largest
    /// frame it will be cut into, which is what the network's MTU is checked against. The
    /// datapath segments it (or carries it whole, as STT does) when it performs the actions.
    pub fn from_port_gso(
        &mut self,
        port: PortId,
        frame: &[u8],
        segment_len: usize,
        now: Instant,
        actions: &mut Actions,
    ) {
        if !self.policers.is_empty() && self.police(port, frame.len(), now, actions) {
            return;
        }
        self.port_frame(port, frame, segment_len, now, actions, false);
        if self.vports.any() {
            self.horizon(port, actions);
        }
    }

    /// [`Pipeline::from_port`] for an ARP request that a datapath answered from the neighbour
    /// table itself (the kernel path, which mirrors `arp_neighbors`): counted, learned and
    /// snooped as any frame, counted `arp_suppressed`, and nothing more — the reply is out.
    /// Should the frame not be a question this pipeline would take, `actions` forward it as
    /// usual. Clears `actions` first.
    pub fn from_port_answered(
        &mut self,
        port: PortId,
        frame: &[u8],
        now: Instant,
        actions: &mut Actions,
    ) {
        self.port_frame(port, frame, frame.len(), now, actions, true);
        if self.vports.any() {
            self.horizon(port, actions);
        }
    }

    fn port_frame(
        &mut self,
        port: PortId,
        frame: &[u8],
        segment_len: usize,
        now: Instant,
        actions: &mut Actions,
        answered: bool,
    ) {
        actions.clear();
        let Pipeline {
            limits,
            networks,
            ports,
            drops,
            scratch,
            hosts_generation,
            fdb_events,
            policy,
            ..
        } = self;
        let Some(p) = ports.get_mut(&port) else {
            return reject(drops, None, DropReason::UnknownPort, actions);
        };
        p.counters.rx_frames += 1;
        p.counters.rx_bytes += frame.len() as u64;
        let pc = &mut p.counters;
        let Some(net) = networks.get_mut(&p.vni) else {
            // A port always belongs to a network (remove_network refuses while ports are
            // attached); should that ever break, the port is as good as unknown.
            return reject(drops, Some(pc), DropReason::UnknownPort, actions);
        };
        net.counters.rx_port_frames += 1;
        let Some(eth) = Eth::parse(frame) else {
            return reject(drops, Some(pc), DropReason::MalformedFrame, actions);
        };
        if !eth.src.is_unicast() {
            return reject(drops, Some(pc), DropReason::InvalidSourceMac, actions);
        }
        let mtu = net.spec.mtu;
        if let Some(gw) = net.spec.l3_gateway {
            // The gateway is the container's next hop: a packet over the network's MTU gets its
            // "fragmentation needed" / "packet too big" back from the gateway MAC, written from
            // the packet's destination address as on an L2 network (icmp.rs).
            if too_big(port, frame, &eth, segment_len, mtu, scratch, actions) {
                return reject(drops, Some(pc), DropReason::TooBig, actions);
            }
            let before = net.l3.changes;
            let verdict = l3::from_port(net, gw, port, frame, &eth, scratch, actions);
            if net.l3.ila && net.l3.changes != before {
                // An ILA network's neighbours are local hosts (`Pipeline::local_hosts`).
                *hosts_generation += 1;
            }
            return match verdict {
                l3::PortVerdict::Done => {}
                l3::PortVerdict::Drop(reason) => reject(drops, Some(pc), reason, actions),
            };
        }
        if net.spec.learn_ports {
            let dest = FdbDest::Port(port);
            let noted = (&mut *hosts_generation, &mut *fdb_events);
            let learned = learn_into(net, eth.src, dest, now, noted, Some(&mut *pc));
            if learned == Learned::DestLimit {
                return reject(drops, Some(pc), DropReason::PortLearnLimit, actions);
            }
        }
        let snooped = suppress::Snoop {
            port,
            now,
            max: limits.max_neighbors,
        };
        let question = snooped.frame(net, frame, &eth, hosts_generation);

        if too_big(port, frame, &eth, segment_len, mtu, scratch, actions) {
            return reject(drops, Some(pc), DropReason::TooBig, actions);
        }
        if let Some(q) = &question {
            if answered && suppress::count_answered(net, q) {
                return;
            }
            if suppress::answer(net, port, q, &eth, scratch, actions) {
                return;
            }
        }
        match policy.egress(net, port, frame, &eth, now) {
            Ok(tag) => actions.set_group(tag),
            Err(reason) => return reject(drops, Some(pc), reason, actions),
        }
        if let Err(reason) = forward_from_port(net, port, frame, &eth, question.as_ref(), actions) {
            reject(drops, Some(pc), reason, actions);
        } else if !policy.flood_filter(net, frame, &eth, now, actions) {
            reject(drops, Some(pc), DropReason::PolicyDenied, actions);
        }
    }

    /// Whether `port` is a VLAN trunk's interface: its frames go to [`Pipeline::from_trunk`].
    pub fn is_trunk(&self, port: PortId) -> bool {
        self.trunks.contains_key(&port)
    }

    /// Reads the outer tag of `frame`, received on trunk `trunk`, and writes the frame without
    /// it into `out` (at least as long as `frame`): the circuit it came in on and the untagged
    /// frame's length, for [`Pipeline::from_port`] on that circuit. `None` when it goes nowhere:
    /// `actions` then hold the drop (`vlan_untagged`, `unknown_vlan`, `malformed_frame`,
    /// `unknown_port`), counted in the trunk. Clears `actions` first.
    pub fn from_trunk(
        &mut self,
        trunk: PortId,
        frame: &[u8],
        out: &mut [u8],
        actions: &mut Actions,
    ) -> Option<(PortId, usize)> {
        actions.clear();
        let Some(t) = self.trunks.get_mut(&trunk) else {
            reject(&mut self.drops, None, DropReason::UnknownPort, actions);
            return None;
        };
        t.counters.rx_frames += 1;
        t.counters.rx_bytes += frame.len() as u64;
        let popped = vlan::classify(t, frame)
            .and_then(|c| Ok((c, vlan::pop(frame, out).ok_or(DropReason::MalformedFrame)?)));
        match popped {
            Ok(done) => Some(done),
            Err(reason) => {
                reject(&mut self.drops, Some(&mut t.counters), reason, actions);
                None
            }
        }
    }

    /// Counts a packet the datapath received on a tunnel transport but could not decapsulate
    /// (no profile accepted its header): one `reason` drop and one underlay packet.
    pub fn drop_underlay(&mut self, len: usize, reason: DropReason, actions: &mut Actions) {
        actions.clear();
        self.underlay.count_rx(len);
        reject(&mut self.drops, None, reason, actions);
    }

    /// Counts a packet the datapath relays to a next hop as it is (an NSH service path hop):
    /// one underlay packet in, one relayed. The send is reported with `count_tx` as usual.
    pub fn count_relayed(&mut self, len: usize) {
        self.underlay.count_rx(len);
        self.underlay.relayed += 1;
    }

    /// Decides what happens to `inner`, a frame the datapath took out of a tunnel header of
    /// `decap.profile` carrying `decap.vni`, sent from `decap.src`. `outer_len` is the length
    /// of the tunnel packet, for the underlay byte counter. Clears `actions` first; `Deliver`
    /// actions refer to `inner`. The network must use that profile (`profile_mismatch`).
    pub fn from_decapsulated(
        &mut self,
        decap: Decapsulated,
        outer_len: usize,
        inner: &[u8],
        now: Instant,
        actions: &mut Actions,
    ) {
        self.from_decapsulated_tagged(decap, None, outer_len, inner, now, actions);
    }

    /// [`Pipeline::from_decapsulated`] for a header that carried the sender's identity
    /// (VXLAN-GBP's group policy ID and A bit, or nvo's Geneve identity option), which the
    /// network's policy uses.
    pub fn from_decapsulated_tagged(
        &mut self,
        decap: Decapsulated,
        tag: Option<crate::policy::GroupTag>,
        outer_len: usize,
        inner: &[u8],
        now: Instant,
        actions: &mut Actions,
    ) {
        actions.clear();
        self.underlay.count_rx(outer_len);
        self.deliver_inner(decap, tag, outer_len, inner, now, actions);
    }

    /// Decides what happens to `packet`, an IP packet the datapath took out of a tunnel of
    /// `decap.profile` for L3 network `decap.vni`; `version` (4 or 6) is the family the tunnel
    /// announced (ip protocol 4 or 41, the VXLAN-GPE Next Protocol), which the packet must
    /// agree with (else malformed_tunnel) and the network must carry (else profile_mismatch).
    /// Clears `actions` first; a delivery is a `Reply` with the frame built in the scratch
    /// buffer.
    pub fn from_decapsulated_ip(
        &mut self,
        decap: Decapsulated,
        outer_len: usize,
        (version, packet): (u8, &[u8]),
        actions: &mut Actions,
    ) {
        actions.clear();
        self.underlay.count_rx(outer_len);
        let Pipeline {
            networks,
            drops,
            scratch,
            remotes,
            ..
        } = self;
        let Some(net) = networks.get_mut(&decap.vni) else {
            return reject(drops, None, DropReason::UnknownVni, actions);
        };
        let Some(gw) = net
            .spec
            .l3_gateway
            .filter(|_| net.spec.profile == decap.profile)
        else {
            return reject(drops, None, DropReason::ProfileMismatch, actions);
        };
        net.counters.rx_underlay_frames += 1;
        remotes.rx(decap.src, outer_len);
        if let Err(reason) = l3::from_underlay(net, gw, (version, packet), scratch, actions) {
            reject(drops, None, reason, actions);
        }
    }

    /// The common part of the receive path, once the tunnel header is off.
    fn deliver_inner(
        &mut self,
        decap: Decapsulated,
        tag: Option<crate::policy::GroupTag>,
        outer_len: usize,
        inner: &[u8],
        now: Instant,
        actions: &mut Actions,
    ) {
        let Pipeline {
            networks,
            drops,
            hosts_generation,
            overlay_locators,
            fdb_events,
            remotes,
            policy,
            ..
        } = self;
        let Some(net) = networks.get_mut(&decap.vni) else {
            return reject(drops, None, DropReason::UnknownVni, actions);
        };
        if net.spec.profile != decap.profile || net.spec.l3_gateway.is_some() {
            return reject(drops, None, DropReason::ProfileMismatch, actions);
        }
        net.counters.rx_underlay_frames += 1;
        if !accepts(net, decap.src, overlay_locators) {
            return reject(drops, None, DropReason::UnknownRemote, actions);
        }
        // Only a remote the network took the packet from gets an entry: forged sources and
        // unknown VNIs must not fill the bounded table (counters.rs).
        remotes.rx(decap.src, outer_len);
        let Some(eth) = Eth::parse(inner) else {
            return reject(drops, None, DropReason::MalformedFrame, actions);
        };
        if !eth.src.is_unicast() {
            return reject(drops, None, DropReason::InvalidSourceMac, actions);
        }
        if net.spec.learn_tunnels && !decap.dont_learn {
            // An overlay packet names the node it came from: the MAC lives there, whichever
            // relay or locator the packet took.
            let dest = match decap.src_node.filter(|n| n.is_valid()) {
                Some(node) => FdbDest::Node(node),
                None => FdbDest::Remote(decap.src),
            };
            learn_into(
                net,
                eth.src,
                dest,
                now,
                (hosts_generation, fdb_events),
                None,
            );
        }
        if let Err(reason) = policy.ingress(net, tag, inner, &eth, now) {
            return reject(drops, None, reason, actions);
        }
        match net.fdb.lookup(eth.dst) {
            Some(FdbDest::Port(out)) => {
                net.counters.delivered += 1;
                actions.push(Action::Deliver { port: out });
            }
            Some(FdbDest::Remote(_) | FdbDest::Node(_)) => {
                reject(drops, None, DropReason::RemoteToRemote, actions)
            }
            None => {
                actions.set_flooded();
                for &out in &net.ports {
                    actions.push(Action::Deliver { port: out });
                }
                net.counters.delivered += net.ports.len() as u64;
                if actions.is_empty() {
                    reject(drops, None, DropReason::NoDestination, actions);
                }
            }
        }
    }
}

/// What the datapath learned from a tunnel header it took off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decapsulated {
    /// The underlay address the packet came from.
    pub src: IpAddr,
    /// The VNI (or context) the header carried.
    pub vni: Vni,
    /// The profile that accepted the header.
    pub profile: ProfileTag,
    /// The header asked the receiver not to learn the inner source (GBP's D bit).
    pub dont_learn: bool,
    /// The overlay node the packet came from (nvo's overlay header), when it names one:
    /// source MACs are then learned behind `FdbDest::Node(src_node)` rather than the
    /// underlay address, which may be a relay's.
    pub src_node: Option<NodeId>,
}

/// Whether network `net` takes tunnel packets from `src` (its `accept_remotes`): a remote it
/// knows is in its flood list (type-3 senders and a multicast network's listed members are
/// there too), behind one of its static or EVPN entries, or an overlay node's locator.
pub(crate) fn accepts(net: &Network, src: IpAddr, overlay_locators: &HashSet<IpAddr>) -> bool {
    match net.spec.accepts(!net.flood.is_empty()) {
        AcceptRemotes::Any => true,
        AcceptRemotes::Known => {
            // Cheapest first: the flood list is short; the overlay's locators often empty.
            net.flood.contains(&src)
                || net.fdb.pins(src)
                || (!overlay_locators.is_empty() && overlay_locators.contains(&src))
        }
    }
}

/// The learning bounds of `net` for a frame from `dest`.
pub(crate) fn bounds(net: &Network, dest: FdbDest) -> Bounds {
    let size = |n: Option<u32>| n.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let dest = match dest {
        FdbDest::Port(_) => size(net.spec.max_learned_per_port),
        FdbDest::Remote(_) | FdbDest::Node(_) => size(net.spec.max_learned_per_remote),
    };
    Bounds {
        network: size(Some(net.spec.max_learned)),
        dest,
    }
}

/// Learns `src` behind `dest` and counts what happened — in `port` too, the counters of the
/// port the frame came from, if it did; a change to the set of local MACs bumps `generation`
/// (see `Pipeline::local_hosts`), and a new or moved entry is noted in `events` when they are
/// on. Returns what the FDB made of it.
pub(crate) fn learn_into(
    net: &mut Network,
    src: Mac,
    dest: FdbDest,
    now: Instant,
    (generation, events): (&mut u64, &mut FdbEvents),
    port: Option<&mut PortCounters>,
) -> Learned {
    let bounds = bounds(net, dest);
    let verdict = net.fdb.learn(src, dest, now, bounds);
    if events.on {
        let change = match verdict {
            Learned::New => Some(FdbChange::Learned),
            Learned::Moved { from, .. } => Some(FdbChange::Moved { from: Some(from) }),
            _ => None,
        };
        if let Some(change) = change {
            events.push(FdbEvent {
                vni: net.spec.vni,
                mac: src,
                dest,
                change,
            });
        }
    }
    if matches!(verdict, Learned::Limit | Learned::DestLimit) {
        net.counters.learn_limit += 1;
        if let Some(p) = port {
            p.learn_limit += 1;
        }
    }
    match verdict {
        Learned::New => {
            net.counters.learned += 1;
            if matches!(dest, FdbDest::Port(_)) {
                *generation += 1;
            }
        }
        Learned::Moved { from_evpn, .. } => {
            net.counters.moves += 1;
            net.counters.evpn_moves += u64::from(from_evpn);
            // To or from a local port, most likely; a move between remotes is rare enough
            // that telling the poller once too often costs nothing.
            *generation += 1;
        }
        Learned::DestLimit if matches!(dest, FdbDest::Port(_)) => {
            net.counters.learn_limit_port += 1
        }
        Learned::DestLimit => net.counters.learn_limit_remote += 1,
        Learned::LocalConflict => net.counters.learn_local_conflict += 1,
        Learned::Limit | Learned::Refreshed | Learned::Static | Learned::Evpn => {}
    }
    verdict
}

/// Sends a frame from `ingress` where its destination MAC is, or floods it; the reason when
/// it goes nowhere. `question` is the ARP/ND request the frame carries, counted when flooded.
fn forward_from_port(
    net: &mut Network,
    ingress: PortId,
    frame: &[u8],
    eth: &Eth,
    question: Option<&suppress::Question>,
    actions: &mut Actions,
) -> Result<(), DropReason> {
    let (vni, profile) = (net.spec.vni, net.spec.profile);
    match net.fdb.lookup(eth.dst) {
        Some(FdbDest::Port(out)) if out == ingress => return Err(DropReason::Hairpin),
        Some(FdbDest::Port(out)) => {
            net.counters.delivered += 1;
            actions.push(Action::Deliver { port: out });
        }
        Some(FdbDest::Remote(remote)) => {
            net.counters.encap_unicast += 1;
            let entropy = frame::entropy(frame, eth);
            actions.push(Action::Encap {
                remote,
                vni,
                entropy,
                profile,
            });
        }
        Some(FdbDest::Node(node)) => {
            net.counters.encap_unicast += 1;
            let entropy = frame::entropy(frame, eth);
            actions.push(Action::EncapNode {
                node,
                vni,
                entropy,
                profile,
            });
        }
        None => {
            if let Some(q) = question {
                suppress::count_flooded(net, q);
            }
            flood_from_port(net, ingress, frame, eth, actions);
        }
    }
    if actions.is_empty() {
        return Err(DropReason::NoDestination);
    }
    Ok(())
}

/// Broadcast, multicast and unknown unicast from a port: every other local port, then every
/// flood-list remote (head-end replication) or the multicast group once.
fn flood_from_port(
    net: &mut Network,
    ingress: PortId,
    frame: &[u8],
    eth: &Eth,
    actions: &mut Actions,
) {
    actions.set_flooded();
    for &out in net.ports.iter().filter(|&&p| p != ingress) {
        net.counters.delivered += 1;
        actions.push(Action::Deliver { port: out });
    }
    let remotes: &[IpAddr] = match &net.spec.bum {
        BumMode::HeadEnd => &net.flood,
        BumMode::Multicast(group) => std::slice::from_ref(group),
        BumMode::Overlay(node) => {
            // One copy to the tree: the overlay routes replicate it.
            let (vni, profile) = (net.spec.vni, net.spec.profile);
            let entropy = frame::entropy(frame, eth);
            actions.push(Action::EncapNode {
                node: *node,
                vni,
                entropy,
                profile,
            });
            net.counters.encap_flood += 1;
            return;
        }
    };
    if remotes.is_empty() {
        return;
    }
    let (vni, entropy, profile) = (net.spec.vni, frame::entropy(frame, eth), net.spec.profile);
    for &remote in remotes {
        actions.push(Action::Encap {
            remote,
            vni,
            entropy,
            profile,
        });
    }
    net.counters.encap_flood += remotes.len() as u64;
}

/// Whether a frame from `port` (in segments of `segment_len` bytes) is over network MTU `mtu`;
/// when it is, the ICMP error back to its sender is pushed as a Reply if one may be sent
/// (icmp.rs: RFC 1191 §4, RFC 4443 §3.2). The drop is the caller's to count.
fn too_big(
    port: PortId,
    frame: &[u8],
    eth: &Eth,
    segment_len: usize,
    mtu: u16,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> bool {
    // The MTU counts from the IP header: the L2 header (with its 802.1Q tag) comes on top.
    if segment_len <= usize::from(mtu) + eth.header_len() {
        return false;
    }
    if let Some(len) = icmp::too_big_reply(frame, eth, mtu, scratch) {
        actions.push(Action::Reply { port, len });
    }
    true
}

/// Drops a frame: counts it and tells the datapath.
pub(crate) fn reject(
    drops: &mut DropCounters,
    port: Option<&mut PortCounters>,
    reason: DropReason,
    actions: &mut Actions,
) {
    count_drop(drops, port, reason);
    actions.push(Action::Drop(reason));
}

/// The one place a drop is counted: per reason, and against the port involved, if any.
pub(crate) fn count_drop(
    drops: &mut DropCounters,
    port: Option<&mut PortCounters>,
    reason: DropReason,
) {
    drops.add(reason);
    if let Some(p) = port {
        p.drops += 1;
    }
}
