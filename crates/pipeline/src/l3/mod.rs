//! L3 networks: tenant IPv4 routed between hosts inside tunnels that carry IP, not Ethernet
//! (VXLAN-GPE with Next Protocol IPv4 — the kernel's `external gpe` device —, IP-in-IP).
//!
//! ```text
//!  from a port (an L3 network's containers route through the gateway nvod plays):
//!   ARP request for any address but the sender's own → ARP reply from the gateway MAC
//!                                                        (proxy ARP), sender learned
//!   IPv4 to the gateway MAC → sender learned (IP → port, MAC)
//!       → destination in the neighbour table (a local container) → Reply: frame rewritten
//!       → longest-prefix route → EncapL3 { remote }: the IP packet, Ethernet header off
//!   anything else → dropped (no_destination)
//!  from the underlay (an IPv4 packet):
//!   destination in the neighbour table → Reply: Ethernet header (container MAC ← gateway) +
//!   packet, built in the scratch buffer; else an ARP request for it on every port of the
//!   network (from 0.0.0.0, as a probe) and no_destination — the answer fills the table
//! ```
//!
//! The gateway does not decrement the IP TTL: it is one hop of a virtual wire between the
//! container and the remote tunnel end. Only IPv4 is routed today; IPv6 and ND on an L3
//! network are dropped. Both tables are bounded: routes by [`MAX_ROUTES`], neighbours by the
//! network's `max_learned`.

use std::net::Ipv4Addr;

use nvo_wire::std_wire::ArpOperation;

use crate::actions::{Action, Actions};
use crate::arp::Arp;
use crate::frame::{self, Eth};
use crate::hash::FlowHasher;
use crate::network::Network;
use crate::{Mac, PortId};
use nvo_wire::EtherType;

pub(crate) mod tables;

pub use tables::{mask, Route, MAX_ROUTES};

/// What the L3 path decided for a frame from a port.
pub(crate) enum PortVerdict {
    /// Actions pushed.
    Done,
    /// Nothing to do with it.
    NoDestination,
}

/// A frame from `port` on L3 network `net` (gateway MAC `gw`).
pub(crate) fn from_port(
    net: &mut Network,
    gw: Mac,
    port: PortId,
    frame: &[u8],
    eth: &Eth,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> PortVerdict {
    let max = usize::try_from(net.spec.max_learned).unwrap_or(usize::MAX);
    let l3 = eth.l3;
    match eth.ethertype {
        EtherType::Arp => {
            let Some(arp) = Arp::parse(frame, eth) else {
                return PortVerdict::NoDestination;
            };
            net.l3.learn(arp.sender_ip, port, arp.sender_mac, max);
            // A request for the sender's own address is a duplicate-address probe or a
            // gratuitous announcement: nobody answers it.
            if arp.op != ArpOperation::Request
                || arp.target_ip == arp.sender_ip
                || arp.target_ip.is_unspecified()
            {
                return PortVerdict::NoDestination;
            }
            let Some(len) = arp.reply(gw).emit(arp.sender_mac, None, scratch) else {
                return PortVerdict::NoDestination;
            };
            net.counters.arp_replies += 1;
            actions.push(Action::Reply { port, len });
            PortVerdict::Done
        }
        EtherType::Ipv4 if eth.dst == gw => {
            let Some(ip) = frame.get(l3..l3 + 20) else {
                return PortVerdict::NoDestination;
            };
            let (src, dst) = (ip_at(ip, 12), ip_at(ip, 16));
            net.l3.learn(src, port, eth.src, max);
            if let Some(&(out, mac)) = net.l3.neighbours.get(&dst) {
                if out == port {
                    return PortVerdict::NoDestination;
                }
                let Some(len) = with_ethernet(mac, gw, &frame[l3..], scratch) else {
                    return PortVerdict::NoDestination;
                };
                net.counters.delivered += 1;
                actions.push(Action::Reply { port: out, len });
                return PortVerdict::Done;
            }
            let Some(route) = net.l3.route(dst) else {
                return PortVerdict::NoDestination;
            };
            net.counters.encap_unicast += 1;
            actions.push(Action::EncapL3 {
                remote: route.remote,
                vni: net.spec.vni,
                entropy: ip_entropy(&frame[l3..]),
                profile: net.spec.profile,
                offset: l3,
            });
            PortVerdict::Done
        }
        _ => PortVerdict::NoDestination,
    }
}

/// An IPv4 packet out of a tunnel for L3 network `net`: a Reply with the frame built in
/// `scratch`, or None when no local container has its destination.
pub(crate) fn from_underlay(
    net: &mut Network,
    gw: Mac,
    packet: &[u8],
    scratch: &mut [u8],
    actions: &mut Actions,
) -> Option<()> {
    let header = packet.get(..20)?;
    if header[0] >> 4 != 4 {
        return None;
    }
    let dst = ip_at(header, 16);
    let Some(&(port, mac)) = net.l3.neighbours.get(&dst) else {
        // Nobody has announced the address yet (a container that has not spoken): ask on every
        // port, as a router would; the answer teaches the table, the packet is dropped.
        if net.ports.is_empty() || dst.is_unspecified() {
            return None;
        }
        // The gateway has no address of its own in the tenant's subnet: it asks from 0.0.0.0
        // as an ARP probe does (RFC 5227 §2.1.1), which every host answers.
        let request = Arp::request(gw, Ipv4Addr::UNSPECIFIED, dst);
        let len = request.emit(Mac::BROADCAST, None, scratch)?;
        for &port in &net.ports {
            actions.push(Action::Reply { port, len });
        }
        net.counters.arp_requests += 1;
        return None;
    };
    let len = with_ethernet(mac, gw, packet, scratch)?;
    net.counters.delivered += 1;
    actions.push(Action::Reply { port, len });
    Some(())
}

/// Writes an Ethernet header (dst, src, IPv4) and `packet` into `out`.
fn with_ethernet(dst: Mac, src: Mac, packet: &[u8], out: &mut [u8]) -> Option<usize> {
    let l2 = frame::write_header(out, dst, src, None, EtherType::Ipv4)?;
    let len = l2 + packet.len();
    out.get_mut(l2..len)?.copy_from_slice(packet);
    Some(len)
}

fn ip_at(b: &[u8], at: usize) -> Ipv4Addr {
    match b.get(at..at + 4) {
        Some(&[a, c, d, e]) => Ipv4Addr::new(a, c, d, e),
        _ => Ipv4Addr::UNSPECIFIED,
    }
}

/// A 16-bit hash of the IPv4 addresses, protocol and (for TCP/UDP) ports: one flow, one
/// outer source port.
fn ip_entropy(packet: &[u8]) -> u16 {
    let ihl = usize::from(packet.first().map_or(5, |b| b & 0x0f)) * 4;
    let mut h = FlowHasher::new();
    h.bytes(packet.get(9..10).unwrap_or_default());
    h.bytes(packet.get(12..20).unwrap_or_default());
    h.bytes(packet.get(ihl..ihl + 4).unwrap_or_default());
    h.finish16()
}
