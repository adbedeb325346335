//! ILA networks (draft-herbert-intarea-ila-01): an L3 network whose IPv6 packets cross the
//! underlay with no tunnel header. Containers use SIR addresses; the gateway nvod plays
//! rewrites the destination's SIR prefix (its upper 64 bits) into the locator of the host the
//! destination lives on, checksum-neutrally (`nvo_wire::ila`, C bit set), and hands the packet
//! to the kernel, which routes it on the underlay like any IPv6 packet. The receiving host
//! routes its own locator /64 to nvod, which puts the SIR prefix back and delivers.
//!
//! ```text
//!  container ── IPv6 to the gateway MAC ──► from_port (l3::route)
//!     destination a local neighbour           → Reply (delivered, not translated)
//!     route (mapping) SIR/len → locator L      → L is this host's locator: NS probe,
//!                                                no_destination (the container has not spoken)
//!                                              → SendIla { locator: L }: the datapath
//!                                                translates (egress) and writes the packet
//!                                                to the kernel, which routes L::/64
//!     no mapping                               → no_destination (counted)
//!  kernel ── IPv6 to this host's locator /64 ──► Pipeline::from_ila
//!     another destination → no_destination; not IPv6, or cut short → malformed_tunnel
//!     for each ILA network, each SIR prefix of its mappings: ILA → SIR (ingress) names a
//!     neighbour → Reply (gateway MAC as source); a mapping to this host but no neighbour yet
//!     → NS probe; else no_destination (counted)
//! ```
//!
//! Mappings are the network's routes: `SIR/len → locator` says that the identifiers under
//! `SIR/len` live at the host whose locator is the upper 64 bits of the route's remote (so
//! `nvo route add VNI fd10::2/128 fd00:2::1` maps one identifier). They are bounded, stored and
//! journaled as routes are. Every host holds the mappings of its own containers too: they give
//! the SIR prefixes a received ILA address is translated back with.
//!
//! Only the destination is translated: the source stays the sender's SIR address, as in the
//! draft's host-to-network translation (§4.3) and Linux's `ila` lwtunnel. Overlapping tenant
//! addresses are not supported yet: with the same SIR address in two ILA networks on one host,
//! the packet goes to one of them, which one is not defined.

use std::net::{IpAddr, Ipv6Addr};

use nvo_wire::ila::{self, ChecksumMode, IlaAddress};

use crate::actions::Actions;
use crate::frame::ETH_HEADER_LEN;
use crate::network::Network;
use crate::pipeline::{reject, Pipeline};
use crate::{DropReason, Mac, Vni};

/// Where the destination address sits in an IPv6 header (RFC 8200 §3).
const DST: std::ops::Range<usize> = 24..40;

/// The upper 64 bits of an IPv6 address: its SIR prefix or locator.
pub fn upper64(addr: Ipv6Addr) -> u64 {
    (u128::from(addr) >> 64) as u64
}

/// Egress translation of an IPv6 packet bound for the ILA domain: the destination's SIR prefix
/// (its own upper 64 bits) replaced by `locator`, checksum-neutrally with the C bit. None (the
/// packet untouched) when it is not IPv6 or its destination already has the C bit set (it is
/// no SIR address).
pub fn translate_egress(packet: &mut [u8], locator: u64) -> Option<()> {
    let dst = destination(packet)?;
    let ila = ila::sir_to_ila(dst, upper64(dst), locator, ChecksumMode::NeutralMap).ok()?;
    packet.get_mut(DST)?.copy_from_slice(&ila.0);
    Some(())
}

/// Ingress translation: the destination's `locator` replaced by `sir_prefix`, undoing the
/// adjustment when the C bit says there is one. Returns the SIR address; the packet is not
/// changed when None.
pub fn translate_ingress(packet: &mut [u8], locator: u64, sir_prefix: u64) -> Option<Ipv6Addr> {
    let sir = sir_of(packet, locator, sir_prefix)?;
    packet.get_mut(DST)?.copy_from_slice(&sir.octets());
    Some(sir)
}

/// The SIR address the ILA destination of `packet` stands for under `sir_prefix`.
fn sir_of(packet: &[u8], locator: u64, sir_prefix: u64) -> Option<Ipv6Addr> {
    let dst = destination(packet)?;
    let ila = IlaAddress::from(dst.octets());
    let sir = ila::ila_to_sir(ila, locator, sir_prefix, ChecksumMode::NeutralMap).ok()?;
    Some(sir)
}

/// The destination of an IPv6 packet whose fixed header is whole.
fn destination(packet: &[u8]) -> Option<Ipv6Addr> {
    if packet.first()? >> 4 != 6 {
        return None;
    }
    let dst: [u8; 16] = packet.get(DST)?.try_into().ok()?;
    Some(Ipv6Addr::from(dst))
}

/// The SIR prefixes of an ILA network's mappings (routes of /64 or longer), without repeats:
/// what a received ILA address may be translated back into.
pub(crate) fn sir_prefixes(net: &Network) -> impl Iterator<Item = u64> + '_ {
    let routes = &net.l3.routes;
    routes
        .iter()
        .enumerate()
        .filter_map(move |(i, r)| match r.prefix {
            IpAddr::V6(p) if r.len >= 64 => {
                let sir = upper64(p);
                let first = !routes[..i]
                    .iter()
                    .any(|o| o.len >= 64 && matches!(o.prefix, IpAddr::V6(q) if upper64(q) == sir));
                first.then_some(sir)
            }
            _ => None,
        })
}

/// The egress decision for a packet to `dst` that no local neighbour has: the locator of its
/// mapping, or why it is dropped. A mapping to this host means the container has not spoken
/// yet: it is asked for (an NS on every port), and the packet dropped.
pub(super) fn egress(
    net: &mut Network,
    gw: Mac,
    dst: IpAddr,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> Result<u64, DropReason> {
    let IpAddr::V6(dst6) = dst else {
        return Err(DropReason::ProfileMismatch);
    };
    let remote = match net.l3.route(dst).map(|r| r.remote) {
        Some(IpAddr::V6(remote)) => remote,
        _ => return Err(DropReason::NoDestination),
    };
    let locator = upper64(remote);
    if Some(locator) == net.l3.ila_locator {
        super::v6::probe(net, gw, dst6, scratch, actions);
        return Err(DropReason::NoDestination);
    }
    net.counters.encap_unicast += 1;
    Ok(locator)
}

impl Pipeline {
    /// Sets this host's ILA locator (the upper 64 bits of its locator prefix): the packets the
    /// kernel routes to nvod with it as destination prefix are for this host's containers.
    /// None: the host takes no ILA traffic (every packet given to `from_ila` is dropped).
    pub fn set_ila_locator(&mut self, locator: Option<Ipv6Addr>) {
        self.ila_locator = locator.map(upper64);
        for net in self.networks.values_mut() {
            net.l3.ila_locator = self.ila_locator;
        }
    }

    /// Marks L3 network `vni` as an ILA network (see the module docs); fails when it is not an
    /// L3 network.
    pub fn set_ila(&mut self, vni: Vni) -> Result<(), crate::TableError> {
        let here = self.ila_locator;
        let net = self.network_mut(vni)?;
        if net.spec.l3_gateway.is_none() {
            return Err(crate::TableError::NotL3(vni));
        }
        net.l3.ila = true;
        net.l3.ila_locator = here;
        Ok(())
    }

    /// Decides what happens to `packet`, an IPv6 packet the kernel routed to nvod because its
    /// destination is in this host's locator prefix (see the module docs). Clears `actions`;
    /// a delivery is a `Reply` with the frame, translated back, in the scratch buffer.
    pub fn from_ila(&mut self, packet: &[u8], actions: &mut Actions) {
        actions.clear();
        self.underlay.count_rx(packet.len());
        let Pipeline {
            networks,
            drops,
            scratch,
            ila_locator,
            ..
        } = self;
        let Some(here) = *ila_locator else {
            return reject(drops, None, DropReason::NoDestination, actions);
        };
        let Some(dst) = destination(packet) else {
            return reject(drops, None, DropReason::MalformedTunnel, actions);
        };
        if upper64(dst) != here {
            // What the kernel itself sends on the device (multicast listener reports as it
            // comes up) and anything else not for this host's locator.
            return reject(drops, None, DropReason::NoDestination, actions);
        }
        // Networks are tried in the table's order: with overlapping SIR addresses in two ILA
        // networks, which one gets the packet is not defined (see the module docs).
        let mut wanted = None;
        for net in networks.values_mut().filter(|n| n.l3.ila) {
            let Some(gw) = net.spec.l3_gateway else {
                continue;
            };
            let found = sir_prefixes(net)
                .filter_map(|p| sir_of(packet, here, p))
                .find_map(|sir| {
                    let ip = IpAddr::V6(sir);
                    match net.l3.neighbours.get(&ip) {
                        Some(&n) => Some((sir, Some(n))),
                        None => net.l3.route(ip).map(|_| (sir, None)),
                    }
                });
            match found {
                Some((sir, Some((port, mac)))) => {
                    net.counters.rx_underlay_frames += 1;
                    let delivered = super::deliver(net, (port, mac, gw), packet, scratch, actions);
                    let at = ETH_HEADER_LEN + DST.start..ETH_HEADER_LEN + DST.end;
                    match scratch.get_mut(at) {
                        Some(d) if delivered.is_some() => d.copy_from_slice(&sir.octets()),
                        _ => return reject(drops, None, DropReason::NoDestination, actions),
                    }
                    return;
                }
                Some((sir, None)) if wanted.is_none() => wanted = Some((net.spec.vni, gw, sir)),
                _ => {}
            }
        }
        if let Some((vni, gw, sir)) = wanted {
            if let Some(net) = networks.get_mut(&vni) {
                super::v6::probe(net, gw, sir, scratch, actions);
            }
        }
        reject(drops, None, DropReason::NoDestination, actions);
    }
}
