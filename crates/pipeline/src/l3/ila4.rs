//! IPv4 tenants of ILA networks: an IPv4 packet crosses the IPv6 underlay translated into IPv6
//! (SIIT, RFC 7915, `nvo_wire::siit`), both its addresses made ILA addresses whose identifier
//! is the draft's virtual networking identifier for IPv4 (draft-herbert-intarea-ila-01
//! "Identifier types": type 2, a VNI and the IPv4 address); the receiver translates it back.
//!
//! ```text
//!  ILA address:  | locator (64)          | 010 | C=0 | VNI (28)          | IPv4 address (32) |
//!                  destination: the host the mapping names;  source: this host's locator
//!
//!  container ── IPv4 to the gateway MAC (proxy ARP) ──► l3::route
//!     a local neighbour → delivered untranslated (as on every L3 network)
//!     an ICMP fragment or a UDP one without checksum, an unexpired source route, ICMP other
//!       than echo and the errors RFC 7915 §4.2 translates → profile_mismatch (a fragment
//!       crosses as one, with a Fragment Header: nvo_wire::siit)
//!     mapping (route 10.0.0.2/32 → an address of the locator /64), or an EVPN MAC+IP route
//!       → SendIla { locator }: the datapath translates ([`translate_egress`]) each segment
//!       → this host's locator: ARP probe on every port, no_destination
//!     none → no_destination
//!  kernel ── IPv6 to this host's locator, identifier type 2 ──► Pipeline::from_ila
//!     source not a type-2 identifier of the same VNI and not an ICMPv6 error, no ILA network
//!     with the VNI, nobody owns the IPv4 destination → no_destination (an ARP probe when it
//!     is mapped here); an ICMPv6 error from elsewhere (an underlay router's or this host's
//!     kernel's Packet Too Big) comes from 192.0.0.8 (RFC 7600 §4.8);
//!     cut short or malformed → malformed_tunnel; an extension header, ICMPv6 other than
//!     echo and the errors §5.2 translates, an error about another tenant's packet →
//!     profile_mismatch; else IPv4 behind an Ethernet header from the gateway MAC
//! ```
//!
//! Why the source is this host's locator and not a SIR prefix: the receiver must recover the
//! sender's IPv4 address and the VNI from the source, so the source carries the same kind of
//! identifier; with the sender's locator in front it is a routable address of the sending host
//! (an ICMPv6 error from the underlay comes back to its nvod, which translates it for the
//! container: path MTU discovery works), and nvo has no SIR prefix for an IPv4 network to put there. The C bit is clear: the transport checksums are adjusted by
//! the translation anyway (the pseudo-header changes family), so nothing needs to be neutral.
//!
//! The tenant MTU for IPv4 is the underlay's minus 28 (the IPv6 header is 20 bytes longer, a
//! Fragment Header 8 more; `nvo lab` sets it on the containers' IPv4 route): a longer packet is translated, the kernel
//! refuses it on the underlay with an ICMPv6 Packet Too Big to the sender's ILA address, and
//! nvod hands that to the container as "fragmentation needed" with the MTU minus 20.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nvo_wire::siit::{self, SiitError};

use crate::actions::{Action, Actions};
use crate::frame;
use crate::network::Network;
use crate::pipeline::{reject, Pipeline};
use crate::{DropReason, Mac, Vni};

/// The identifier's upper four bits in nvo's IPv4 mapping: type 2 (VNID, IPv4), C clear.
const TYPE_V4: u64 = 0b0100;

/// The ILA address of IPv4 address `addr` of network `vni` at `locator`.
pub fn ila_address(locator: u64, vni: Vni, addr: Ipv4Addr) -> Ipv6Addr {
    let identifier =
        (TYPE_V4 << 60) | (u64::from(vni.0 & 0x0fff_ffff) << 32) | u64::from(u32::from(addr));
    Ipv6Addr::from((u128::from(locator) << 64) | u128::from(identifier))
}

/// The VNI and IPv4 address an ILA address's identifier carries, when it is nvo's IPv4 type.
pub fn identifier(ila: Ipv6Addr) -> Option<(Vni, Ipv4Addr)> {
    let id = u128::from(ila) as u64;
    (id >> 60 == TYPE_V4).then(|| {
        let vni = Vni(((id >> 32) as u32) & 0x0fff_ffff);
        (vni, Ipv4Addr::from(id as u32))
    })
}

/// Egress translation of the IPv4 packet `v4` of network `vni` into `out`: an IPv6 packet from
/// this host's locator `here` to `there` (RFC 7915 §4); returns its length.
pub fn translate_egress(
    v4: &[u8],
    (here, there): (u64, u64),
    vni: Vni,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    let (src, dst) = addresses(v4).ok_or(nvo_wire::Error::Truncated {
        what: "ipv4 header",
        need: siit::IPV4_HEADER_LEN,
        have: v4.len(),
    })?;
    let src6 = ila_address(here, vni, src).octets();
    let dst6 = ila_address(there, vni, dst).octets();
    // An ICMPv4 error's embedded packet went between the same two containers, the other way
    // (RFC 7915 §4.3): its addresses are the outer ones swapped; any other is not translated.
    let inner = |a: [u8; 4]| match Ipv4Addr::from(a) {
        a if a == src => Some(src6),
        a if a == dst => Some(dst6),
        _ => None,
    };
    siit::v4_to_v6(v4, (&src6, &dst6), &inner, out)
}

fn addresses(v4: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let a: [u8; 8] = v4.get(12..20)?.try_into().ok()?;
    Some((
        Ipv4Addr::new(a[0], a[1], a[2], a[3]),
        Ipv4Addr::new(a[4], a[5], a[6], a[7]),
    ))
}

/// The drop reason for a packet the translation refused: `malformed` for broken packets.
fn reason(e: SiitError, malformed: DropReason) -> DropReason {
    match e {
        SiitError::Malformed(_) => malformed,
        SiitError::Untranslated { .. } => DropReason::ProfileMismatch,
    }
}

/// The egress decision for the IPv4 `packet` to `dst` that no local neighbour has: the locator
/// of the host its mapping (or else its EVPN route: `evpn_remote`, `l3::ila`'s) names, or why
/// it is dropped.
pub(super) fn egress(
    net: &mut Network,
    gw: Mac,
    (dst, packet): (Ipv4Addr, &[u8]),
    evpn_remote: impl FnOnce(&Network) -> Option<IpAddr>,
    (scratch, actions): (&mut [u8], &mut Actions),
) -> Result<u64, DropReason> {
    let Some(here) = net.l3.ila_locator else {
        return Err(DropReason::NoDestination);
    };
    siit::check_v4(packet).map_err(|e| reason(e, DropReason::MalformedFrame))?;
    let mapped = net.l3.route(IpAddr::V4(dst)).map(|r| r.remote);
    let remote = match mapped.or_else(|| evpn_remote(net)) {
        Some(IpAddr::V6(remote)) => remote,
        _ => return Err(DropReason::NoDestination),
    };
    let locator = (u128::from(remote) >> 64) as u64;
    if locator == here {
        // Mapped here, but the container has not spoken yet: ask for it.
        super::probe_v4(net, gw, dst, scratch, actions);
        return Err(DropReason::NoDestination);
    }
    net.counters.encap_unicast += 1;
    Ok(locator)
}

/// A packet from the TUN whose destination identifier is the IPv4 type ([`identifier`]): the
/// IPv4 packet, translated back, to the local container owning `dst` in network `vni`.
fn receive(
    net: &mut Network,
    (dst, packet): (Ipv4Addr, &[u8]),
    scratch: &mut [u8],
    actions: &mut Actions,
) -> Result<(), DropReason> {
    let gw = net.spec.l3_gateway.ok_or(DropReason::NoDestination)?;
    let src6: [u8; 16] = packet
        .get(8..24)
        .and_then(|s| s.try_into().ok())
        .ok_or(DropReason::MalformedTunnel)?;
    let vni = net.spec.vni;
    let src = match identifier(Ipv6Addr::from(src6)) {
        Some((v, src)) if v == vni => src,
        // An ICMPv6 error from the underlay (a router's, or this host's kernel's Packet Too
        // Big) about a packet this tenant sent: from RFC 7600 §4.8's IPv4 dummy address, as
        // RFC 7915 §5.2 lets a translator do for a source with no IPv4 form.
        _ if icmpv6_error(packet) => DUMMY_V4,
        _ => return Err(DropReason::NoDestination),
    };
    let Some(&(port, mac)) = net.l3.neighbours.get(&IpAddr::V4(dst)) else {
        if net.l3.route(IpAddr::V4(dst)).is_some() {
            super::probe_v4(net, gw, dst, scratch, actions);
        }
        return Err(DropReason::NoDestination);
    };
    let l2 = frame::write_header(scratch, mac, gw, None, nvo_wire::EtherType::Ipv4)
        .ok_or(DropReason::NoDestination)?;
    let out = scratch.get_mut(l2..).ok_or(DropReason::NoDestination)?;
    // The embedded packet's addresses are this tenant's ILA addresses (§5.3).
    let inner = |a: &[u8; 16]| match identifier(Ipv6Addr::from(*a)) {
        Some((v, a4)) if v == vni => Some(a4.octets()),
        _ => None,
    };
    let n = siit::v6_to_v4(packet, (&src.octets(), &dst.octets()), &inner, out)
        .map_err(|e| reason(e, DropReason::MalformedTunnel))?;
    net.counters.rx_underlay_frames += 1;
    net.counters.delivered += 1;
    actions.push(Action::Reply { port, len: l2 + n });
    Ok(())
}

/// RFC 7600 §4.8: the IPv4 source of an ICMP error translated from an IPv6 address with no
/// IPv4 form (192.0.0.8).
pub const DUMMY_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 0, 8);

/// Whether IPv6 `packet` (no extension headers) is an ICMPv6 error message (RFC 4443 §2.1:
/// types below 128).
fn icmpv6_error(packet: &[u8]) -> bool {
    packet.get(6) == Some(&58) && packet.get(40).is_some_and(|&t| t < 128)
}

impl Pipeline {
    /// This host's ILA locator (upper 64 bits), when it has one: the source locator of the
    /// IPv4 packets it translates.
    pub fn ila_locator(&self) -> Option<u64> {
        self.ila_locator
    }

    /// `from_ila` for a destination whose identifier is the IPv4 type (see the module docs).
    pub(super) fn receive_ila4(
        &mut self,
        (vni, dst): (Vni, Ipv4Addr),
        packet: &[u8],
        actions: &mut Actions,
    ) {
        let Pipeline {
            networks,
            drops,
            scratch,
            ..
        } = self;
        let found = networks.get_mut(&vni).filter(|net| net.l3.ila);
        let Some(net) = found else {
            return reject(drops, None, DropReason::NoDestination, actions);
        };
        if let Err(reason) = receive(net, (dst, packet), scratch, actions) {
            reject(drops, None, reason, actions);
        }
    }
}
