//! [`OverlayTables`]: the own node ID, the LIB (node → weighted locators), one RIB per
//! application (destination → next hops) and the forwarding decision over them.

use std::collections::HashMap;
use std::net::IpAddr;

use nvo_wire::overlay::{OverlayPacket, OverlayRepr};
use serde::Serialize;

use super::{App, Hop, Locator, NodeId, OverlayDrop, OverlayError, OverlayLimits, MAX_WEIGHT};
use crate::types::is_unicast_ip;
use crate::Vni;

/// What the overlay did with packets, since the tables were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OverlayCounters {
    /// Packets sent from this node (by `forward`) with at least one copy to a locator.
    pub forwarded: u64,
    /// Received packets sent on (by `receive`) to at least one next hop, TTL − 1.
    pub relayed: u64,
    /// Packets with a copy for this node (the destination, or a member of the tree).
    pub local: u64,
    /// Received packets whose relay copies were dropped because their TTL ran out.
    pub ttl_expired: u64,
    /// Packets that went nowhere: no next hop had a usable locator.
    pub no_route: u64,
    /// Next hops skipped for want of a locator: not in the LIB, or every locator drained.
    pub no_locator: u64,
    /// Next hops skipped because the packet came from them (split horizon).
    pub split_horizon: u64,
    /// Copies beyond the first one of a packet (replication along a tree).
    pub replicated: u64,
    /// Received packets whose header was refused.
    pub malformed: u64,
}

/// What `receive` read from a packet's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// What the payload is.
    pub app: App,
    /// The VNI.
    pub vni: Vni,
    /// The node that sent it: what the FDB learns inner source MACs behind.
    pub src: NodeId,
    /// The node it is going to.
    pub dst: NodeId,
    /// The flow hash.
    pub flow: u32,
    /// The TTL it arrived with (the packet now holds one less when it is relayed).
    pub ttl: u8,
}

/// The overlay tables of one node. Owned by the datapath thread, like the pipeline.
#[derive(Debug, Clone)]
pub struct OverlayTables {
    own: NodeId,
    limits: OverlayLimits,
    lib: HashMap<NodeId, Vec<Locator>>,
    ribs: [HashMap<NodeId, Vec<NodeId>>; 3],
    counters: OverlayCounters,
    /// Bumped by every change of the own ID, the LIB or a RIB: what a mirror of the tables
    /// (the kernel path's relay map) compares to know it is current.
    generation: u64,
}

impl OverlayTables {
    /// Empty tables for node `own`. `own` comes from validated configuration; were it 0, no
    /// packet would be local until `set_own`.
    pub fn new(own: NodeId, limits: OverlayLimits) -> OverlayTables {
        OverlayTables {
            own,
            limits,
            lib: HashMap::new(),
            ribs: Default::default(),
            counters: OverlayCounters::default(),
            generation: 0,
        }
    }

    /// This node's ID.
    pub fn own(&self) -> NodeId {
        self.own
    }

    /// Changes this node's ID; 0 is refused.
    pub fn set_own(&mut self, id: NodeId) -> Result<(), OverlayError> {
        self.own = NodeId::new(id.0)?;
        self.generation += 1;
        Ok(())
    }

    /// A number that changes whenever the own ID, the LIB or a RIB does.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The limits the tables were made with.
    pub fn limits(&self) -> OverlayLimits {
        self.limits
    }

    /// Sets (adds or replaces) the locators of `node`, in the order flows are spread over them.
    /// The own node's locators are the addresses it is reached at.
    pub fn set_locators(&mut self, node: NodeId, locs: Vec<Locator>) -> Result<(), OverlayError> {
        NodeId::new(node.0)?;
        if locs.is_empty() {
            return Err(OverlayError::NoLocators(node));
        }
        if locs.len() > self.limits.max_locators {
            return Err(OverlayError::TooManyLocators {
                node,
                count: locs.len(),
                limit: self.limits.max_locators,
            });
        }
        for (i, l) in locs.iter().enumerate() {
            let addr = l.addr;
            if !is_unicast_ip(addr) {
                return Err(OverlayError::InvalidLocator { node, addr });
            }
            if l.weight > MAX_WEIGHT {
                let weight = l.weight;
                return Err(OverlayError::InvalidWeight { node, addr, weight });
            }
            if locs[..i].iter().any(|m| m.addr == addr) {
                return Err(OverlayError::DuplicateLocator { node, addr });
            }
        }
        if !self.lib.contains_key(&node) && self.lib.len() >= self.limits.max_nodes {
            return Err(full("node", self.limits.max_nodes));
        }
        self.lib.insert(node, locs);
        self.generation += 1;
        Ok(())
    }

    /// Removes a node and its locators. Routes through it stay (and count `no_locator`).
    pub fn remove_node(&mut self, node: NodeId) -> Result<(), OverlayError> {
        self.lib
            .remove(&node)
            .ok_or(OverlayError::NoSuchNode(node))?;
        self.generation += 1;
        Ok(())
    }

    /// The locators of a node, in table order.
    pub fn locators(&self, node: NodeId) -> Option<&[Locator]> {
        self.lib.get(&node).map(Vec::as_slice)
    }

    /// Every node with its locators, sorted by node ID.
    pub fn nodes(&self) -> Vec<(NodeId, Vec<Locator>)> {
        let mut nodes: Vec<_> = self.lib.iter().map(|(&n, l)| (n, l.clone())).collect();
        nodes.sort_unstable_by_key(|(n, _)| *n);
        nodes
    }

    /// Sets (adds or replaces) the route of `app` to `dst`. The own node may be a next hop: it
    /// gets a local copy (a member of the tree `dst` names).
    pub fn set_route(
        &mut self,
        app: App,
        dst: NodeId,
        next_hops: Vec<NodeId>,
    ) -> Result<(), OverlayError> {
        NodeId::new(dst.0)?;
        if next_hops.is_empty() {
            return Err(OverlayError::NoNextHops { app, dst });
        }
        let limit = self.limits.max_next_hops;
        if next_hops.len() > limit {
            let count = next_hops.len();
            return Err(OverlayError::TooManyNextHops {
                app,
                dst,
                count,
                limit,
            });
        }
        for (i, &hop) in next_hops.iter().enumerate() {
            NodeId::new(hop.0)?;
            if next_hops[..i].contains(&hop) {
                return Err(OverlayError::DuplicateNextHop { app, dst, hop });
            }
        }
        let rib = &mut self.ribs[app.index()];
        if !rib.contains_key(&dst) && rib.len() >= self.limits.max_routes {
            return Err(full("route", self.limits.max_routes));
        }
        rib.insert(dst, next_hops);
        self.generation += 1;
        Ok(())
    }

    /// Removes the route of `app` to `dst`: packets for `dst` go to it directly again.
    pub fn remove_route(&mut self, app: App, dst: NodeId) -> Result<(), OverlayError> {
        self.ribs[app.index()]
            .remove(&dst)
            .ok_or(OverlayError::NoSuchRoute { app, dst })?;
        self.generation += 1;
        Ok(())
    }

    /// The next hops of the route of `app` to `dst`, if there is one.
    pub fn route(&self, app: App, dst: NodeId) -> Option<&[NodeId]> {
        self.ribs[app.index()].get(&dst).map(Vec::as_slice)
    }

    /// Every route of `app`, sorted by destination.
    pub fn routes(&self, app: App) -> Vec<(NodeId, Vec<NodeId>)> {
        let rib = &self.ribs[app.index()];
        let mut routes: Vec<_> = rib.iter().map(|(&d, h)| (d, h.clone())).collect();
        routes.sort_unstable_by_key(|(d, _)| *d);
        routes
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> OverlayCounters {
        self.counters
    }

    /// Where a packet of `app` for `dst`, sent from this node, goes: clears `out` and fills it
    /// with `Local` (this node is a next hop, or `dst` is this node without a route) and one
    /// `Locator` per other next hop, picked by weight on `flow`. A next hop owning the locator
    /// `exclude` is skipped. An empty `out` means the packet goes nowhere (counted `no_route`).
    pub fn forward(
        &mut self,
        app: App,
        dst: NodeId,
        flow: u32,
        exclude: Option<IpAddr>,
        out: &mut Vec<Hop>,
    ) {
        self.route_into(app, dst, flow, exclude, out);
        if out.iter().any(|h| matches!(h, Hop::Locator(_))) {
            self.counters.forwarded += 1;
        }
        self.count_copies(out);
    }

    /// What happens to `packet`, an overlay header and its payload (the UDP payload) received
    /// from the underlay address `from`: clears `out` and fills it as `forward` does, `from`
    /// excluded. When there are copies to relay the TTL in `packet` is decremented in place;
    /// a packet that arrives with a TTL of 0 or 1 keeps only its local copy (`ttl_expired`).
    /// The payload is never touched. On `Err`, `out` is empty and the drop is counted here.
    pub fn receive(
        &mut self,
        packet: &mut [u8],
        from: IpAddr,
        out: &mut Vec<Hop>,
    ) -> Result<Arrival, OverlayDrop> {
        out.clear();
        let Some(arrival) = parse(packet) else {
            self.counters.malformed += 1;
            return Err(OverlayDrop::Malformed);
        };
        self.route_into(arrival.app, arrival.dst, arrival.flow, Some(from), out);
        let relays = out.iter().filter(|h| matches!(h, Hop::Locator(_))).count();
        let mut expired = false;
        if relays > 0 {
            if arrival.ttl <= 1 {
                out.retain(|h| *h == Hop::Local);
                self.counters.ttl_expired += 1;
                expired = true;
            } else {
                OverlayPacket::new_unchecked(&mut *packet).set_ttl(arrival.ttl - 1);
                self.counters.relayed += 1;
            }
        }
        self.count_copies(out);
        match (out.is_empty(), expired) {
            (false, _) => Ok(arrival),
            (true, true) => Err(OverlayDrop::TtlExpired { ttl: arrival.ttl }),
            // Counted `no_route` by count_copies.
            (true, false) => Err(OverlayDrop::NoRoute(arrival.dst)),
        }
    }

    /// The common part of `forward` and `receive`: fills `out`, counting skipped next hops.
    fn route_into(
        &mut self,
        app: App,
        dst: NodeId,
        flow: u32,
        exclude: Option<IpAddr>,
        out: &mut Vec<Hop>,
    ) {
        out.clear();
        let OverlayTables {
            own,
            lib,
            ribs,
            counters,
            ..
        } = self;
        let next_hops = match ribs[app.index()].get(&dst) {
            Some(hops) => hops.as_slice(),
            None => std::slice::from_ref(&dst),
        };
        for &hop in next_hops {
            if hop == *own {
                push_once(out, Hop::Local);
                continue;
            }
            let Some(locs) = lib.get(&hop) else {
                counters.no_locator += 1;
                continue;
            };
            if exclude.is_some_and(|x| locs.iter().any(|l| l.addr == x)) {
                counters.split_horizon += 1;
                continue;
            }
            match pick(locs, flow) {
                Some(addr) => push_once(out, Hop::Locator(addr)),
                None => counters.no_locator += 1,
            }
        }
    }

    fn count_copies(&mut self, out: &[Hop]) {
        if out.is_empty() {
            self.counters.no_route += 1;
            return;
        }
        if out.contains(&Hop::Local) {
            self.counters.local += 1;
        }
        self.counters.replicated += (out.len() - 1) as u64;
    }
}

/// The locator a flow takes: `flow % Σweights` in the cumulative weights, in table order.
/// `None` when every locator is drained. Public so that a datapath sending to a chosen node's
/// locator (overlay probes through a relay) picks exactly as forwarding does.
pub fn pick(locs: &[Locator], flow: u32) -> Option<IpAddr> {
    let total: u32 = locs.iter().map(|l| u32::from(l.weight)).sum();
    let mut point = flow.checked_rem(total)?;
    for l in locs {
        let weight = u32::from(l.weight);
        if point < weight {
            return Some(l.addr);
        }
        point -= weight;
    }
    None
}

/// Two next hops may share a locator (or the own node appear twice through one): one copy.
fn push_once(out: &mut Vec<Hop>, hop: Hop) {
    if !out.contains(&hop) {
        out.push(hop);
    }
}

/// The header of a received packet, when it is one this node accepts.
fn parse(packet: &[u8]) -> Option<Arrival> {
    let checked = OverlayPacket::new_checked(packet).ok()?;
    let repr = OverlayRepr::parse(&checked).ok()?;
    let src = NodeId::new(repr.src_node).ok()?;
    let dst = NodeId::new(repr.dst_node).ok()?;
    Some(Arrival {
        app: App::from_number(u8::from(repr.app))?,
        vni: Vni(repr.vni),
        src,
        dst,
        flow: repr.flow_hash,
        ttl: repr.ttl,
    })
}

fn full(table: &'static str, limit: usize) -> OverlayError {
    OverlayError::TableFull { table, limit }
}
