//! IPv6 Neighbor Discovery on an L3 network: the gateway's half of RFC 4861 that IPv4 does with
//! proxy ARP.
//!
//! ```text
//!  NS from a container (hop limit 255, checksum right):
//!    sender (src → port, source link-layer option or Ethernet source) learned
//!    src ::  (duplicate address detection)      → no answer
//!    target = src (the sender's own address)    → no answer
//!    any other target → NA from the gateway MAC: router, solicited, override, target
//!                       link-layer option = gateway MAC, to the sender's address and MAC
//!  NA from a container → its target learned (target link-layer option or Ethernet source)
//!  a packet out of the tunnel for an address nobody announced
//!    → NS for it on every port, from the gateway's link-local address (EUI-64 of its MAC);
//!      the solicited NA that comes back teaches the table
//! ```
//!
//! The probe comes from a link-local address, not from `::` as an ARP probe comes from
//! 0.0.0.0: an NS from `::` is duplicate address detection (RFC 4862 §5.4.3), and would make
//! a container whose address is still tentative give it up.

use std::net::{IpAddr, Ipv6Addr};

use nvo_wire::std_wire::Ipv6Packet;

use crate::actions::{Action, Actions};
use crate::frame::Eth;
use crate::nd::{self, Nd};
use crate::network::Network;
use crate::{Mac, PortId};

/// A Neighbor Solicitation or Advertisement from `port`: learns the sender, answers an NS
/// (Some(true): a Reply was pushed; Some(false): nothing to answer). None when `frame` is
/// not valid ND.
pub(super) fn from_port(
    net: &mut Network,
    (gw, port): (Mac, PortId),
    frame: &[u8],
    eth: &Eth,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> Option<bool> {
    let max = usize::try_from(net.spec.max_learned).unwrap_or(usize::MAX);
    match Nd::parse(frame, eth)? {
        Nd::Advert { target, tlla } => {
            let mac = tlla.unwrap_or(eth.src);
            net.l3.learn(IpAddr::V6(target), port, mac, max);
            Some(false)
        }
        Nd::Solicit { src, target, slla } => {
            let mac = slla.unwrap_or(eth.src);
            net.l3.learn(IpAddr::V6(src), port, mac, max);
            if src.is_unspecified() || target == src || !mac.is_unicast() {
                return Some(false);
            }
            let len = nd::advert(scratch, (mac, None), target, gw, src, true)?;
            net.counters.nd_replies += 1;
            actions.push(Action::Reply { port, len });
            Some(true)
        }
    }
}

/// Whether `frame` is an ICMPv6 link-control message the gateway does not take part in:
/// an MLD query or report (types 130-132, 143: RFC 2710 §3, RFC 3810 §5, sent behind a
/// Hop-by-Hop Router Alert option, RFC 3810 §5), a router solicitation or advertisement or a
/// redirect (133, 134, 137: RFC 4861 §4). Neighbour solicitations and advertisements are
/// [`from_port`]'s; one that does not parse (a bad checksum) is none of these.
pub(super) fn link_control(frame: &[u8], eth: &Eth) -> bool {
    let Some(ip) = frame
        .get(eth.l3..)
        .and_then(|l3| Ipv6Packet::new_checked(l3).ok())
    else {
        return false;
    };
    let payload = ip.payload();
    let (mut next, mut at) = (u8::from(ip.next_header()), 0);
    if next == 0 {
        // Hop-by-Hop Options (RFC 8200 §4.3): next header, length in 8-octet units beyond
        // the first 8.
        let (Some(&n), Some(&len)) = (payload.first(), payload.get(1)) else {
            return false;
        };
        (next, at) = (n, (usize::from(len) + 1) * 8);
    }
    next == 58 && matches!(payload.get(at), Some(130..=134 | 137 | 143))
}

/// Asks every port of `net` who has `dst` (nobody announced it): an NS from the gateway's
/// link-local address, built once in `scratch`. Returns whether it was sent.
pub(super) fn probe(
    net: &mut Network,
    gw: Mac,
    dst: Ipv6Addr,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> bool {
    if net.ports.is_empty() || dst.is_unspecified() || dst.is_multicast() {
        return false;
    }
    let Some(len) = nd::solicit(scratch, gw, super::gateway_ipv6(gw), dst) else {
        return false;
    };
    for &port in &net.ports {
        actions.push(Action::Reply { port, len });
    }
    net.counters.nd_requests += 1;
    true
}
