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

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use crate::actions::{Action, Actions};
use crate::frame::Eth;
use crate::network::Network;
use crate::{Mac, PortId};

/// Most routes one L3 network holds.
pub const MAX_ROUTES: usize = 1024;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const ETH_LEN: usize = 14;
const ARP_LEN: usize = 28;

/// A route: IPv4 prefix → the remote tunnel end behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Route {
    /// The prefix (host bits zero).
    pub prefix: Ipv4Addr,
    /// Its length, 0..=32.
    pub len: u8,
    /// The remote.
    pub remote: IpAddr,
}

impl Route {
    fn contains(&self, ip: Ipv4Addr) -> bool {
        mask(self.len) & u32::from(ip) == u32::from(self.prefix)
    }
}

/// The netmask of a prefix length.
pub fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// An L3 network's tables.
#[derive(Debug, Default)]
pub(crate) struct L3Tables {
    pub(crate) routes: Vec<Route>,
    pub(crate) neighbours: HashMap<Ipv4Addr, (PortId, Mac)>,
}

impl L3Tables {
    /// The longest-prefix route for `ip`.
    fn route(&self, ip: Ipv4Addr) -> Option<&Route> {
        self.routes
            .iter()
            .filter(|r| r.contains(ip))
            .max_by_key(|r| r.len)
    }

    fn learn(&mut self, ip: Ipv4Addr, port: PortId, mac: Mac, max: usize) {
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return;
        }
        if self.neighbours.len() < max || self.neighbours.contains_key(&ip) {
            self.neighbours.insert(ip, (port, mac));
        }
    }

    /// Forgets what a port's containers announced (the port is going).
    pub(crate) fn forget_port(&mut self, port: PortId) {
        self.neighbours.retain(|_, (p, _)| *p != port);
    }
}

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
        ETHERTYPE_ARP => {
            let Some(arp) = frame.get(l3..l3 + ARP_LEN) else {
                return PortVerdict::NoDestination;
            };
            // Ethernet/IPv4 ARP (RFC 826): htype 1, ptype 0x0800, hlen 6, plen 4.
            if arp[..6] != [0, 1, 8, 0, 6, 4] {
                return PortVerdict::NoDestination;
            }
            let op = u16::from_be_bytes([arp[6], arp[7]]);
            let sender_mac = mac_at(arp, 8);
            let sender_ip = ip_at(arp, 14);
            let target_ip = ip_at(arp, 24);
            net.l3.learn(sender_ip, port, sender_mac, max);
            // A request for the sender's own address is a duplicate-address probe or a
            // gratuitous announcement: nobody answers it.
            if op != 1 || target_ip == sender_ip || target_ip.is_unspecified() {
                return PortVerdict::NoDestination;
            }
            let len = arp_reply(gw, target_ip, sender_mac, sender_ip, scratch);
            net.counters.arp_replies += 1;
            actions.push(Action::Reply { port, len });
            PortVerdict::Done
        }
        ETHERTYPE_IPV4 if eth.dst == gw => {
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
        let len = arp_request(gw, dst, scratch);
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

/// A broadcast ARP request (RFC 826) from the gateway for `ip`. The gateway has no address of
/// its own in the tenant's subnet: it asks from 0.0.0.0 as an ARP probe does (RFC 5227 §2.1.1),
/// which every host answers.
fn arp_request(gw: Mac, ip: Ipv4Addr, out: &mut [u8]) -> usize {
    let mut frame = [0u8; ETH_LEN + ARP_LEN];
    frame[..6].copy_from_slice(&[0xff; 6]);
    frame[6..12].copy_from_slice(&gw.0);
    frame[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    let arp = &mut frame[ETH_LEN..];
    arp[..6].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
    arp[6..8].copy_from_slice(&1u16.to_be_bytes());
    arp[8..14].copy_from_slice(&gw.0);
    arp[24..28].copy_from_slice(&ip.octets());
    let n = frame.len().min(out.len());
    out[..n].copy_from_slice(&frame[..n]);
    n
}

/// Writes an Ethernet header (dst, src, IPv4) and `packet` into `out`.
fn with_ethernet(dst: Mac, src: Mac, packet: &[u8], out: &mut [u8]) -> Option<usize> {
    let len = ETH_LEN + packet.len();
    let buf = out.get_mut(..len)?;
    buf[..6].copy_from_slice(&dst.0);
    buf[6..12].copy_from_slice(&src.0);
    buf[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    buf[ETH_LEN..].copy_from_slice(packet);
    Some(len)
}

/// An ARP reply (RFC 826) from the gateway: `ip` is at `gw`, to `to_mac`/`to_ip`.
fn arp_reply(gw: Mac, ip: Ipv4Addr, to_mac: Mac, to_ip: Ipv4Addr, out: &mut [u8]) -> usize {
    let mut frame = [0u8; ETH_LEN + ARP_LEN];
    frame[..6].copy_from_slice(&to_mac.0);
    frame[6..12].copy_from_slice(&gw.0);
    frame[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    let arp = &mut frame[ETH_LEN..];
    arp[..6].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
    arp[6..8].copy_from_slice(&2u16.to_be_bytes());
    arp[8..14].copy_from_slice(&gw.0);
    arp[14..18].copy_from_slice(&ip.octets());
    arp[18..24].copy_from_slice(&to_mac.0);
    arp[24..28].copy_from_slice(&to_ip.octets());
    let n = frame.len().min(out.len());
    out[..n].copy_from_slice(&frame[..n]);
    n
}

fn mac_at(b: &[u8], at: usize) -> Mac {
    let mut m = [0u8; 6];
    if let Some(s) = b.get(at..at + 6) {
        m.copy_from_slice(s);
    }
    Mac(m)
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
    let mut h: u32 = 0x811c_9dc5;
    let ports = packet.get(ihl..ihl + 4).unwrap_or_default();
    for &b in packet
        .get(9..10)
        .into_iter()
        .chain(packet.get(12..20))
        .flatten()
        .chain(ports)
    {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 16)) as u16
}
