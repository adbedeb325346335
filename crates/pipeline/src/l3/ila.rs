//! ILA networks (draft-herbert-intarea-ila-01): an L3 network whose IPv6 packets cross the
//! underlay with no tunnel header. Containers use SIR addresses; the gateway nvod plays
//! rewrites the destination into an ILA address — the locator of the host the destination
//! lives on, then an identifier that carries the network's VNI — checksum-neutrally, and hands
//! the packet to the kernel, which routes it on the underlay like any IPv6 packet. The
//! receiving host routes its own locator /64 to nvod, which finds the network by the VNI in
//! the identifier, puts the SIR address back and delivers.
//!
//! ```text
//!  container ── IPv6 to the gateway MAC ──► from_port (l3::route)
//!     destination a local neighbour           → Reply (delivered, not translated)
//!     route (mapping) SIR/len → locator L      → L is this host's locator: NS probe,
//!                                                no_destination (the container has not spoken)
//!                                              → SendIla { locator: L, vni }: the datapath
//!                                                translates (egress) and writes the packet
//!                                                to the kernel, which routes L::/64
//!     no mapping, but an EVPN MAC+IP route     → its next hop's /64 is the locator (see below)
//!     neither                                  → no_destination (counted)
//!     bits 64..96 of the destination not zero  → profile_mismatch (no identifier for it)
//!  kernel ── IPv6 to this host's locator /64 ──► Pipeline::from_ila
//!     an identifier of the IPv4 type (2) → an IPv4 tenant's packet: `super::ila4`
//!     not IPv6, or cut short → malformed_tunnel; another destination, an identifier that is
//!     not type 3 with C, a VNI that is no ILA network here → no_destination (counted)
//!     each SIR prefix of the network's mappings: ILA → SIR names a neighbour → Reply (gateway
//!     MAC as source); a mapping to this host but no neighbour yet → NS probe, no_destination
//! ```
//!
//! # The identifier: nvo's mapping of (VNI, SIR address)
//!
//! Two tenants may use the same addresses, so the identifier on the wire must name the tenant.
//! nvo uses the draft's virtual-network identifier for IPv6 unicast (type 3, ila.rst "Identifier
//! formats": a VNI and the low-order 32 bits of the tenant address) with the C bit set:
//!
//! ```text
//!  SIR address (tenant):  | SIR prefix (64)  | 0 (32)                   | low 32 of the host |
//!  ILA address (wire):    | locator (64)     | 011 | C=1 | VNI (28)      | high 16 | adj 16   |
//! ```
//!
//! The low 16 bits absorb what the other bits added to the address's one's complement sum (the
//! C bit's checksum-neutral mapping, extended to the type and VNI word), so no transport
//! checksum changes and the transport header is never read; the receiver, which knows the SIR
//! prefix from its mappings and the zero word, computes the low 16 bits back. What this asks of
//! the tenants: addresses whose bits 64..96 are zero (`fd10::1`, `fd10::a:b` — any address
//! with an identifier under 2^32); others are dropped as `profile_mismatch`. As in
//! `nvo_wire::ila`, one's complement has two zeros: a SIR address ending in `ffff` comes back
//! ending in `0000`.
//!
//! Mappings are the network's routes: `SIR/len → locator` says that the identifiers under
//! `SIR/len` live at the host whose locator is the upper 64 bits of the route's remote (so
//! `nvo route add VNI fd10::2/128 fd00:2::1` maps one identifier). They are bounded, stored and
//! journaled as routes are. A destination no mapping covers is looked up in what EVPN installed
//! (its MAC+IP route: IP → MAC → VTEP): the upper 64 bits of the route's next hop are the
//! locator, so a host that advertises an address of its locator /64 as its EVPN next hop is
//! reached by ILA, and a container whose route moves is re-mapped with it. The SIR prefixes a
//! received ILA address is translated back with are those of the mappings and of the
//! addresses the local containers announced (at most [`super::tables::MAX_SIR_PREFIXES`]).
//!
//! Only the destination is translated: the source stays the sender's SIR address, as in the
//! draft's host-to-network translation (§4.3) and Linux's `ila` lwtunnel.

use std::net::{IpAddr, Ipv6Addr};

use nvo_wire::std_wire::checksum;

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

/// The identifier's upper 32 bits in nvo's mapping: type 3 (VNID, IPv6 unicast), C, the VNI.
fn vnid_word(vni: Vni) -> u32 {
    (3 << 29) | (1 << 28) | (vni.0 & 0x0fff_ffff)
}

/// The seven upper 16-bit words of an address (all but the low one).
fn upper_words(addr: u128) -> [u16; 7] {
    core::array::from_fn(|i| (addr >> (112 - 16 * i)) as u16)
}

/// `addr` with its upper 112 bits replaced by those of `upper` and the low 16 bits adjusted so
/// that the one's complement sum of the address stays what it was.
fn neutral(addr: u128, upper: u128, positive_zero: bool) -> u128 {
    let mut words = difference(upper_words(addr), upper_words(upper));
    words = checksum::combine(&[words, addr as u16]);
    if positive_zero && words == 0xffff {
        words = 0;
    }
    (upper & !0xffff) | u128::from(words)
}

/// sum(old) − sum(new), one's complement.
fn difference(old: [u16; 7], new: [u16; 7]) -> u16 {
    let mut all = [0u16; 14];
    for i in 0..7 {
        all[i] = old[i];
        all[7 + i] = !new[i];
    }
    checksum::combine(&all)
}

/// The ILA address of SIR address `sir` in network `vni` at `locator`; None when bits 64..96
/// of `sir` are not zero (nvo's mapping has no room for them).
pub fn sir_to_ila(sir: Ipv6Addr, locator: u64, vni: Vni) -> Option<Ipv6Addr> {
    let a = u128::from(sir);
    if (a >> 32) as u32 != 0 {
        return None;
    }
    let upper =
        (u128::from(locator) << 64) | (u128::from(vnid_word(vni)) << 32) | (a & 0xffff_ffff);
    Some(Ipv6Addr::from(neutral(a, upper, false)))
}

/// The VNI an ILA address's identifier carries, when it is nvo's (type 3 with C).
pub fn vni_of(ila: Ipv6Addr) -> Option<Vni> {
    let word = (u128::from(ila) >> 32) as u32;
    (word >> 28 == 0b0111).then_some(Vni(word & 0x0fff_ffff))
}

/// The SIR address under `sir_prefix` that ILA address `ila` stands for.
pub fn ila_to_sir(ila: Ipv6Addr, sir_prefix: u64) -> Ipv6Addr {
    let a = u128::from(ila);
    let upper = (u128::from(sir_prefix) << 64) | (a & 0xffff_ffff);
    Ipv6Addr::from(neutral(a, upper, true))
}

/// Egress translation of an IPv6 packet of network `vni` bound for the ILA domain: its
/// destination becomes [`sir_to_ila`]'s. None (the packet untouched) when it is not IPv6 or
/// the destination has no ILA address.
pub fn translate_egress(packet: &mut [u8], locator: u64, vni: Vni) -> Option<()> {
    let ila = sir_to_ila(destination(packet)?, locator, vni)?;
    packet.get_mut(DST)?.copy_from_slice(&ila.octets());
    Some(())
}

/// Ingress translation: the destination becomes the SIR address under `sir_prefix`
/// ([`ila_to_sir`]), which is returned.
pub fn translate_ingress(packet: &mut [u8], sir_prefix: u64) -> Option<Ipv6Addr> {
    let sir = ila_to_sir(destination(packet)?, sir_prefix);
    packet.get_mut(DST)?.copy_from_slice(&sir.octets());
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

/// The SIR prefixes a received ILA address of `net` may be translated back with: those of its
/// mappings (/64 or longer) and of the IPv6 addresses its containers announced
/// ([`super::tables::L3Tables::note_sir_prefix`]).
pub(crate) fn sir_prefixes(net: &Network) -> impl Iterator<Item = u64> + '_ {
    net.l3.sir_prefixes.iter().copied()
}

/// Where EVPN says `dst` lives: the VTEP of the MAC its MAC+IP route names (the route's next
/// hop), as the EVPN control plane installed them (`EvpnChange::NeighSet`, `FdbSet`).
pub(super) fn evpn_remote(net: &Network, dst: IpAddr) -> Option<IpAddr> {
    let mac = net.neigh.lookup(dst)?.mac;
    match net.fdb.lookup(mac)? {
        crate::FdbDest::Remote(remote) => Some(remote),
        _ => None,
    }
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
    let mapped = net.l3.route(dst).map(|r| r.remote);
    let remote = match mapped.or_else(|| evpn_remote(net, dst)) {
        Some(IpAddr::V6(remote)) => remote,
        _ => return Err(DropReason::NoDestination),
    };
    let locator = upper64(remote);
    if sir_to_ila(dst6, locator, net.spec.vni).is_none() {
        return Err(DropReason::ProfileMismatch);
    }
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
        if let Some(v4) = super::ila4::identifier(dst) {
            return self.receive_ila4(v4, packet, actions);
        }
        let found = vni_of(dst)
            .and_then(|vni| networks.get_mut(&vni))
            .filter(|net| net.l3.ila);
        let Some(net) = found else {
            return reject(drops, None, DropReason::NoDestination, actions);
        };
        let Some(gw) = net.spec.l3_gateway else {
            return reject(drops, None, DropReason::NoDestination, actions);
        };
        let mut wanted = None;
        let mut hit = None;
        for sir in sir_prefixes(net).map(|p| ila_to_sir(dst, p)) {
            let ip = IpAddr::V6(sir);
            if let Some(&n) = net.l3.neighbours.get(&ip) {
                hit = Some((sir, n));
                break;
            }
            if wanted.is_none() && net.l3.route(ip).is_some() {
                wanted = Some(sir);
            }
        }
        if let Some((sir, (port, mac))) = hit {
            net.counters.rx_underlay_frames += 1;
            let delivered = super::deliver(net, (port, mac, gw), packet, scratch, actions);
            let at = ETH_HEADER_LEN + DST.start..ETH_HEADER_LEN + DST.end;
            match scratch.get_mut(at) {
                Some(d) if delivered.is_some() => d.copy_from_slice(&sir.octets()),
                _ => return reject(drops, None, DropReason::NoDestination, actions),
            }
            return;
        }
        if let Some(sir) = wanted {
            super::v6::probe(net, gw, sir, scratch, actions);
        }
        reject(drops, None, DropReason::NoDestination, actions);
    }
}
