//! IPv6 Neighbor Discovery (RFC 4861): reading a frame's Neighbor Solicitation or Advertisement,
//! writing the solicited Advertisement that ND suppression (and an L3 network's gateway)
//! answers with, and the Solicitation an L3 network's gateway asks with.
//!
//! A message counts only if it passes RFC 4861 §7.1's checks that can be made on the frame
//! alone: ICMPv6 right behind the IPv6 header (extension headers are not walked), hop limit 255
//! (it was not forwarded by a router), code 0, a valid checksum, a target that is not multicast.
//! Parsing goes through smoltcp's checked packets; nothing here allocates.

use std::net::Ipv6Addr;

use nvo_wire::std_wire::{
    Icmpv6Message, Icmpv6Packet, IpProtocol, Ipv6Packet, NdiscNeighborFlags, NdiscRepr,
    RawHardwareAddress,
};

use crate::frame::{self, Eth};
use crate::Mac;
use nvo_wire::EtherType;

/// RFC 4861 §7.1: ND messages are sent, and must arrive, with hop limit 255.
const HOP_LIMIT: u8 = 255;
const IPV6_HEADER_LEN: usize = 40;

/// A Neighbor Solicitation or Advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nd {
    /// Who has `target`? Asked by `src` (:: for duplicate address detection), whose MAC the
    /// source link-layer address option gives, if present.
    Solicit {
        src: Ipv6Addr,
        target: Ipv6Addr,
        slla: Option<Mac>,
    },
    /// `target` is at the target link-layer address option's MAC, if present.
    Advert { target: Ipv6Addr, tlla: Option<Mac> },
}

impl Nd {
    /// The NS or NA in `frame`, when it carries a valid one.
    pub(crate) fn parse(frame: &[u8], eth: &Eth) -> Option<Nd> {
        if eth.ethertype != EtherType::Ipv6 {
            return None;
        }
        let ip = Ipv6Packet::new_checked(frame.get(eth.l3..)?).ok()?;
        if ip.next_header() != IpProtocol::Icmpv6 || ip.hop_limit() != HOP_LIMIT {
            return None;
        }
        let icmp = Icmpv6Packet::new_checked(ip.payload()).ok()?;
        // The type first: every other ICMPv6 message leaves before the checksum is summed.
        let nd = matches!(
            icmp.msg_type(),
            Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert
        );
        if !nd || icmp.msg_code() != 0 || !icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()) {
            return None;
        }
        let nd = match NdiscRepr::parse(&icmp).ok()? {
            NdiscRepr::NeighborSolicit {
                target_addr,
                lladdr,
            } => Nd::Solicit {
                src: ip.src_addr(),
                target: target_addr,
                slla: lladdr.and_then(ethernet),
            },
            NdiscRepr::NeighborAdvert {
                target_addr,
                lladdr,
                ..
            } => Nd::Advert {
                target: target_addr,
                tlla: lladdr.and_then(ethernet),
            },
            _ => return None,
        };
        let target = match nd {
            Nd::Solicit { target, .. } | Nd::Advert { target, .. } => target,
        };
        (!target.is_multicast()).then_some(nd)
    }
}

/// Writes into `out` the solicited advertisement (RFC 4861 §7.2.4) that `target` is at `mac`,
/// from `target` to `to` (the solicitation's source) in a frame to `eth_dst`, behind the tag
/// `vlan_tci` if any: flags solicited and override (and router when `router`: an L3 network's
/// gateway answers as the router it is), a target link-layer address option, hop limit 255,
/// the ICMPv6 checksum filled. Returns the frame's length, or None when `out` is short.
pub(crate) fn advert(
    out: &mut [u8],
    (eth_dst, vlan_tci): (Mac, Option<u16>),
    target: Ipv6Addr,
    mac: Mac,
    to: Ipv6Addr,
    router: bool,
) -> Option<usize> {
    let mut flags = NdiscNeighborFlags::SOLICITED | NdiscNeighborFlags::OVERRIDE;
    if router {
        flags |= NdiscNeighborFlags::ROUTER;
    }
    let repr = NdiscRepr::NeighborAdvert {
        flags,
        target_addr: target,
        lladdr: Some(RawHardwareAddress::from_bytes(&mac.0)),
    };
    let l2 = frame::write_header(out, eth_dst, mac, vlan_tci, EtherType::Ipv6)?;
    emit(out, l2, &repr, (target, to))
}

/// Writes into `out` a Neighbor Solicitation (RFC 4861 §7.2.2) for `target` from `src` at
/// `mac` (a source link-layer address option), to the target's solicited-node multicast
/// address (RFC 4291 §2.7.1) and its Ethernet group (RFC 2464 §7). Returns the frame's length,
/// or None when `out` is short.
pub(crate) fn solicit(out: &mut [u8], mac: Mac, src: Ipv6Addr, target: Ipv6Addr) -> Option<usize> {
    let t = target.octets();
    let group = Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(t[13]),
        u16::from_be_bytes([t[14], t[15]]),
    );
    let eth_dst = Mac([0x33, 0x33, 0xff, t[13], t[14], t[15]]);
    let repr = NdiscRepr::NeighborSolicit {
        target_addr: target,
        lladdr: Some(RawHardwareAddress::from_bytes(&mac.0)),
    };
    let l2 = frame::write_header(out, eth_dst, mac, None, EtherType::Ipv6)?;
    emit(out, l2, &repr, (src, group))
}

/// The IPv6 link-local address a MAC gives by modified EUI-64 (RFC 4291 §2.5.1, app. A).
pub(crate) fn link_local(mac: Mac) -> Ipv6Addr {
    let m = mac.0;
    let mut a = [0u8; 16];
    a[0] = 0xfe;
    a[1] = 0x80;
    a[8..16].copy_from_slice(&[m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]);
    Ipv6Addr::from(a)
}

/// The IPv6 header (hop limit 255) and the ND message `repr` from `src` to `dst`, at `l2` in
/// `out`, with the ICMPv6 checksum filled: the frame's length.
fn emit(
    out: &mut [u8],
    l2: usize,
    repr: &NdiscRepr<'_>,
    (src, dst): (Ipv6Addr, Ipv6Addr),
) -> Option<usize> {
    let icmp_len = repr.buffer_len();
    let len = l2 + IPV6_HEADER_LEN + icmp_len;
    let mut ip = Ipv6Packet::new_unchecked(out.get_mut(l2..len)?);
    ip.set_version(6);
    ip.set_traffic_class(0);
    ip.set_flow_label(0);
    ip.set_payload_len(u16::try_from(icmp_len).ok()?);
    ip.set_next_header(IpProtocol::Icmpv6);
    ip.set_hop_limit(HOP_LIMIT);
    ip.set_src_addr(src);
    ip.set_dst_addr(dst);
    let mut icmp = Icmpv6Packet::new_unchecked(ip.payload_mut());
    repr.emit(&mut icmp);
    icmp.fill_checksum(&src, &dst);
    Some(len)
}

/// A link-layer address option's MAC, when it is an Ethernet one.
fn ethernet(lladdr: RawHardwareAddress) -> Option<Mac> {
    <[u8; 6]>::try_from(lladdr.as_bytes()).ok().map(Mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
    const B: Mac = Mac([2, 0, 0, 0, 0, 0xb]);

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn advert_parses_back() {
        let mut buf = [0u8; 128];
        let len = advert(&mut buf, (A, None), v6("fd00::2"), B, v6("fd00::1"), false).unwrap();
        assert_eq!(len, 14 + 40 + 32);
        let eth = Eth::parse(&buf[..len]).unwrap();
        assert_eq!((eth.dst, eth.src), (A, B));
        assert_eq!(
            Nd::parse(&buf[..len], &eth),
            Some(Nd::Advert {
                target: v6("fd00::2"),
                tlla: Some(B)
            })
        );
        assert_eq!(
            advert(
                &mut buf[..85],
                (A, None),
                v6("fd00::2"),
                B,
                v6("fd00::1"),
                false
            ),
            None
        );
    }

    #[test]
    fn bad_checksum_or_hop_limit_is_not_nd() {
        let mut buf = [0u8; 128];
        let len = advert(
            &mut buf,
            (A, Some(7)),
            v6("fd00::2"),
            B,
            v6("fd00::1"),
            false,
        )
        .unwrap();
        let eth = Eth::parse(&buf[..len]).unwrap();
        assert!(Nd::parse(&buf[..len], &eth).is_some());
        let mut bad = buf;
        bad[len - 1] ^= 1;
        assert_eq!(Nd::parse(&bad[..len], &eth), None);
        let mut forwarded = buf;
        forwarded[eth.l3 + 7] = 254;
        assert_eq!(Nd::parse(&forwarded[..len], &eth), None);
    }
}
