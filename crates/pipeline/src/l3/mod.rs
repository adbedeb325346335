//! L3 networks: tenant IPv4 and IPv6 routed between hosts inside tunnels that carry IP, not
//! Ethernet (VXLAN-GPE with Next Protocol IPv4 or IPv6 — the kernel's `external gpe` device —,
//! IP-in-IP for IPv4, ip6ip6 for IPv6).
//!
//! ```text
//!  from a port (an L3 network's containers route through the gateway nvod plays):
//!   over the network's MTU → too_big, with "fragmentation needed" / "packet too big" back
//!                             from the gateway MAC when one may be sent (icmp.rs; checked
//!                             in Pipeline::port_frame before this module, as on L2)
//!   ARP request for any address but the sender's own → ARP reply from the gateway MAC
//!                                                        (proxy ARP), sender learned
//!   NS for any address but the sender's own, not DAD → NA from the gateway MAC (router,
//!                                                        solicited, override), sender
//!                                                        learned; NA → target learned (v6)
//!   IPv4 or IPv6 to the gateway MAC → family not carried by the profile → profile_mismatch
//!       → sender learned (IP → port, MAC)
//!       → destination in the neighbour table (a local container) → Reply: frame rewritten
//!       → longest-prefix route of its family → EncapL3 { remote }: the IP packet, Ethernet
//!         header off (an ILA network: SendIla { locator }, no tunnel — see `ila`)
//!   anything else → dropped (no_destination): also a container's router solicitations and
//!                    MLD reports, multicast no gateway here answers (no drop reason fits
//!                    them better)
//!  from the underlay (an IP packet; the tunnel said which family: ip protocol 4 / 41, the
//!  GPE Next Protocol):
//!   destination in the neighbour table → Reply: Ethernet header (container MAC ← gateway) +
//!   packet, built in the scratch buffer; else a probe on every port of the network — an ARP
//!   request from 0.0.0.0, or an NS from the gateway's link-local address (v6.rs) — and
//!   no_destination: the answer fills the table
//! ```
//!
//! The gateway does not decrement the IPv4 TTL or the IPv6 hop limit: it is one hop of a
//! virtual wire between the container and the remote tunnel end. Both tables are bounded:
//! routes (both families together) by [`MAX_ROUTES`], neighbours (both families together) by
//! the network's `max_learned`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nvo_wire::std_wire::ArpOperation;

use crate::actions::{Action, Actions};
use crate::arp::Arp;
use crate::frame::{self, Eth};
use crate::hash::FlowHasher;
use crate::network::Network;
use crate::{DropReason, Mac, PortId};
use nvo_wire::EtherType;

pub mod ila;
pub mod ila4;
pub(crate) mod tables;
mod v6;

pub use tables::{mask, prefix_of, Route, MAX_ROUTES};

/// The IPv6 address of an L3 network's gateway at `gw`: the link-local address its MAC gives
/// by modified EUI-64, which it solicits from and which containers may route through.
pub fn gateway_ipv6(gw: Mac) -> Ipv6Addr {
    crate::nd::link_local(gw)
}

/// What the L3 path decided for a frame from a port.
pub(crate) enum PortVerdict {
    /// Actions pushed.
    Done,
    /// Dropped for this reason (not counted yet).
    Drop(DropReason),
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
    const NO_DESTINATION: PortVerdict = PortVerdict::Drop(DropReason::NoDestination);
    match eth.ethertype {
        EtherType::Arp => {
            let Some(arp) = Arp::parse(frame, eth) else {
                return NO_DESTINATION;
            };
            let max = usize::try_from(net.spec.max_learned).unwrap_or(usize::MAX);
            net.l3
                .learn(IpAddr::V4(arp.sender_ip), port, arp.sender_mac, max);
            // A request for the sender's own address is a duplicate-address probe or a
            // gratuitous announcement: nobody answers it.
            if arp.op != ArpOperation::Request
                || arp.target_ip == arp.sender_ip
                || arp.target_ip.is_unspecified()
            {
                return NO_DESTINATION;
            }
            let Some(len) = arp.reply(gw).emit(arp.sender_mac, None, scratch) else {
                return NO_DESTINATION;
            };
            net.counters.arp_replies += 1;
            actions.push(Action::Reply { port, len });
            PortVerdict::Done
        }
        EtherType::Ipv6 => match v6::from_port(net, (gw, port), frame, eth, scratch, actions) {
            Some(true) => PortVerdict::Done,
            // Learned from, nothing to answer: consumed, not lost.
            Some(false) => PortVerdict::Drop(DropReason::LinkControl),
            None if eth.dst == gw => route(net, (gw, port), frame, eth, scratch, actions),
            // A container's router solicitations and MLD reports: no router or multicast
            // routing to give them to on an L3 network.
            None if v6::link_control(frame, eth) => PortVerdict::Drop(DropReason::LinkControl),
            None => NO_DESTINATION,
        },
        EtherType::Ipv4 if eth.dst == gw => route(net, (gw, port), frame, eth, scratch, actions),
        _ => NO_DESTINATION,
    }
}

/// An IP packet from `port` to the gateway: delivered to a local container, or routed into the
/// tunnel.
fn route(
    net: &mut Network,
    (gw, port): (Mac, PortId),
    frame: &[u8],
    eth: &Eth,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> PortVerdict {
    let l3 = eth.l3;
    let packet = &frame[l3..];
    let Some((src, dst)) = addresses(packet, eth.ethertype) else {
        return PortVerdict::Drop(DropReason::MalformedFrame);
    };
    if !net.spec.l3_families.carries(version(packet)) {
        // ipip carries no IPv6, ip6ip6 no IPv4: the profile cannot take the packet.
        return PortVerdict::Drop(DropReason::ProfileMismatch);
    }
    let max = usize::try_from(net.spec.max_learned).unwrap_or(usize::MAX);
    net.l3.learn(src, port, eth.src, max);
    if let Some(&(out, mac)) = net.l3.neighbours.get(&dst) {
        if out == port {
            return PortVerdict::Drop(DropReason::NoDestination);
        }
        return match deliver(net, (out, mac, gw), packet, scratch, actions) {
            Some(()) => PortVerdict::Done,
            None => PortVerdict::Drop(DropReason::NoDestination),
        };
    }
    if net.l3.ila {
        let decided = match dst {
            IpAddr::V4(dst4) => {
                let evpn = |net: &Network| ila::evpn_remote(net, dst);
                ila4::egress(net, gw, (dst4, packet), evpn, (scratch, actions))
            }
            IpAddr::V6(_) => ila::egress(net, gw, dst, scratch, actions),
        };
        return match decided {
            Ok(locator) => {
                actions.push(Action::SendIla {
                    locator,
                    vni: net.spec.vni,
                    offset: l3,
                });
                PortVerdict::Done
            }
            Err(reason) => PortVerdict::Drop(reason),
        };
    }
    let Some(route) = net.l3.route(dst) else {
        return PortVerdict::Drop(DropReason::NoDestination);
    };
    net.counters.encap_unicast += 1;
    actions.push(Action::EncapL3 {
        remote: route.remote,
        vni: net.spec.vni,
        entropy: ip_entropy(packet),
        profile: net.spec.profile,
        offset: l3,
    });
    PortVerdict::Done
}

/// An IP packet out of a tunnel for L3 network `net`, of the family the tunnel announced
/// (`version` 4 or 6): a Reply with the frame built in `scratch`, or the reason it is dropped.
pub(crate) fn from_underlay(
    net: &mut Network,
    gw: Mac,
    (version, packet): (u8, &[u8]),
    scratch: &mut [u8],
    actions: &mut Actions,
) -> Result<(), DropReason> {
    let ethertype = match version {
        4 => EtherType::Ipv4,
        _ => EtherType::Ipv6,
    };
    // The tunnel names the family; a packet that says otherwise is a broken tunnel packet.
    let (_, dst) = addresses(packet, ethertype).ok_or(DropReason::MalformedTunnel)?;
    if !net.spec.l3_families.carries(version) {
        return Err(DropReason::ProfileMismatch);
    }
    let Some(&(port, mac)) = net.l3.neighbours.get(&dst) else {
        // Nobody has announced the address yet (a container that has not spoken): ask on every
        // port, as a router would; the answer teaches the table, the packet is dropped.
        match dst {
            IpAddr::V4(dst) => probe_v4(net, gw, dst, scratch, actions),
            IpAddr::V6(dst) => {
                v6::probe(net, gw, dst, scratch, actions);
            }
        }
        return Err(DropReason::NoDestination);
    };
    deliver(net, (port, mac, gw), packet, scratch, actions).ok_or(DropReason::NoDestination)
}

/// ARP for `dst` on every port of `net`.
fn probe_v4(net: &mut Network, gw: Mac, dst: Ipv4Addr, scratch: &mut [u8], actions: &mut Actions) {
    if net.ports.is_empty() || dst.is_unspecified() {
        return;
    }
    // The gateway has no address of its own in the tenant's subnet: it asks from 0.0.0.0
    // as an ARP probe does (RFC 5227 §2.1.1), which every host answers.
    let request = Arp::request(gw, Ipv4Addr::UNSPECIFIED, dst);
    let Some(len) = request.emit(Mac::BROADCAST, None, scratch) else {
        return;
    };
    for &port in &net.ports {
        actions.push(Action::Reply { port, len });
    }
    net.counters.arp_requests += 1;
}

/// Delivers `packet` to the local container at (`port`, `mac`): a Reply whose frame, in
/// `scratch`, is the packet behind an Ethernet header from the gateway `gw` (the packet's IP
/// ethertype). None when `scratch` is too short.
fn deliver(
    net: &mut Network,
    (port, mac, gw): (PortId, Mac, Mac),
    packet: &[u8],
    scratch: &mut [u8],
    actions: &mut Actions,
) -> Option<()> {
    let ethertype = match version(packet) {
        6 => EtherType::Ipv6,
        _ => EtherType::Ipv4,
    };
    let l2 = frame::write_header(scratch, mac, gw, None, ethertype)?;
    let len = l2 + packet.len();
    scratch.get_mut(l2..len)?.copy_from_slice(packet);
    net.counters.delivered += 1;
    actions.push(Action::Reply { port, len });
    Some(())
}

/// The IP version nibble of a packet (0 when empty).
fn version(packet: &[u8]) -> u8 {
    packet.first().map_or(0, |b| b >> 4)
}

/// The (source, destination) of an IP packet of the family `ethertype` names, when the version
/// nibble agrees and the header is whole.
fn addresses(packet: &[u8], ethertype: EtherType) -> Option<(IpAddr, IpAddr)> {
    match (ethertype, version(packet)) {
        (EtherType::Ipv4, 4) => {
            let a: [u8; 8] = packet.get(12..20)?.try_into().ok()?;
            let src = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            Some((src.into(), Ipv4Addr::new(a[4], a[5], a[6], a[7]).into()))
        }
        (EtherType::Ipv6, 6) => {
            let src: [u8; 16] = packet.get(8..24)?.try_into().ok()?;
            let dst: [u8; 16] = packet.get(24..40)?.try_into().ok()?;
            Some((Ipv6Addr::from(src).into(), Ipv6Addr::from(dst).into()))
        }
        _ => None,
    }
}

/// A 16-bit hash of the IP addresses, protocol (IPv6: next header) and, for TCP/UDP right
/// behind the header, the ports: one flow, one outer source port.
fn ip_entropy(packet: &[u8]) -> u16 {
    let (protocol, addresses, l4) = match version(packet) {
        6 => (6, 8..40, 40),
        _ => (
            9,
            12..20,
            usize::from(packet.first().map_or(5, |b| b & 0x0f)) * 4,
        ),
    };
    let mut h = FlowHasher::new();
    h.bytes(packet.get(protocol..protocol + 1).unwrap_or_default());
    h.bytes(packet.get(addresses).unwrap_or_default());
    h.bytes(packet.get(l4..l4 + 4).unwrap_or_default());
    h.finish16()
}
