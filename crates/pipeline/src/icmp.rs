//! ICMP errors for frames too big for their network: IPv4 "fragmentation needed and DF set"
//! (RFC 792, next-hop MTU per RFC 1191 §4) and ICMPv6 "packet too big" (RFC 4443 §3.2).
//!
//! The overlay has no router of its own, so the error is written from the point of view of the
//! frame's destination: source IP and MAC are the frame's destination IP and MAC, and the reply is
//! addressed back to the sender (its IP and MAC), behind the same 802.1Q tag if there was one. The
//! sender's path-MTU discovery then lowers its MTU for that destination, which is all it needs.
//!
//! No error is built (the frame is only dropped) where RFC 1122 §3.2.2 and RFC 4443 §2.4(e) forbid
//! one or where the reply could not be addressed: an IPv4 packet without DF or a non-initial
//! fragment, an ICMP error message, a source that is not a unicast address, or a destination that
//! is not unicast (it would become the reply's source).

use std::net::{Ipv4Addr, Ipv6Addr};

use nvo_wire::std_wire::{
    Icmpv4DstUnreachable, Icmpv4Message, Icmpv4Packet, Icmpv6Message, Icmpv6Packet, IpProtocol,
    Ipv4Packet, Ipv6Packet,
};

use crate::frame::{self, Eth};
use nvo_wire::EtherType;

/// The size of the scratch buffer: room for the largest reply, an 802.1Q-tagged frame holding a
/// 1280-byte IPv6 packet (the IPv6 minimum MTU, the cap of RFC 4443 §2.4(c)).
pub(crate) const SCRATCH_LEN: usize = 18 + IPV6_MIN_MTU;

const IPV4_HEADER_LEN: usize = 20;
const IPV6_HEADER_LEN: usize = 40;
const ICMP_HEADER_LEN: usize = 8;
const IPV6_MIN_MTU: usize = 1280;
/// RFC 792: the quoted datagram is its IP header and the first 64 bits of its data.
const IPV4_QUOTE_DATA: usize = 8;
const REPLY_HOP_LIMIT: u8 = 64;

/// Writes into `out` the ICMP error for an oversized `frame` whose network MTU is `mtu`.
/// Returns the reply's length, or `None` when no reply may be sent.
pub(crate) fn too_big_reply(frame: &[u8], eth: &Eth, mtu: u16, out: &mut [u8]) -> Option<usize> {
    // The reply's source MAC is the frame's destination: it must be an individual address.
    if !eth.dst.is_unicast() {
        return None;
    }
    let l3 = frame.get(eth.l3..)?;
    match eth.ethertype {
        EtherType::Ipv4 => frag_needed(l3, eth, mtu, out),
        EtherType::Ipv6 => packet_too_big(l3, eth, mtu, out),
        _ => None,
    }
}

/// IPv4: type 3 code 4 with the next-hop MTU, quoting the IP header and 8 bytes of data.
fn frag_needed(l3: &[u8], eth: &Eth, mtu: u16, out: &mut [u8]) -> Option<usize> {
    let ip = Ipv4Packet::new_checked(l3).ok()?;
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if ip.version() != 4 || !ip.dont_frag() || ip.frag_offset() != 0 {
        return None;
    }
    if !unicast_v4(src) || !unicast_v4(dst) {
        return None;
    }
    // RFC 1122 §3.2.2: never an ICMP error about an ICMP error (types 3, 4, 5, 11, 12).
    if ip.next_header() == IpProtocol::Icmp
        && matches!(ip.payload().first(), Some(3 | 4 | 5 | 11 | 12))
    {
        return None;
    }
    let quote_len =
        (usize::from(ip.header_len()) + IPV4_QUOTE_DATA).min(usize::from(ip.total_len()));
    let quote = l3.get(..quote_len)?;
    let icmp_len = ICMP_HEADER_LEN + quote.len();
    let ip_len = IPV4_HEADER_LEN + icmp_len;
    let l2 = write_eth(eth, EtherType::Ipv4, out)?;
    let out = out.get_mut(l2..l2 + ip_len)?;

    let mut reply = Ipv4Packet::new_unchecked(&mut *out);
    reply.set_version(4);
    reply.set_header_len(IPV4_HEADER_LEN as u8);
    reply.set_dscp(0);
    reply.set_ecn(0);
    reply.set_total_len(ip_len as u16);
    reply.set_ident(0);
    reply.clear_flags();
    reply.set_frag_offset(0);
    reply.set_hop_limit(REPLY_HOP_LIMIT);
    reply.set_next_header(IpProtocol::Icmp);
    reply.set_src_addr(dst);
    reply.set_dst_addr(src);
    reply.fill_checksum();

    // RFC 1191 §4: bytes 4-5 unused (zero), bytes 6-7 the next-hop MTU. smoltcp's packet type
    // names these bytes after the echo fields, so they are written by offset.
    let icmp = &mut out[IPV4_HEADER_LEN..];
    icmp[4..6].fill(0);
    icmp[6..8].copy_from_slice(&mtu.to_be_bytes());
    icmp[ICMP_HEADER_LEN..].copy_from_slice(quote);
    let mut icmp = Icmpv4Packet::new_unchecked(icmp);
    icmp.set_msg_type(Icmpv4Message::DstUnreachable);
    icmp.set_msg_code(Icmpv4DstUnreachable::FragRequired.into());
    icmp.fill_checksum();
    Some(l2 + ip_len)
}

/// IPv6: type 2 with the MTU, quoting as much of the packet as fits in 1280 bytes (RFC 4443
/// §2.4(c)) and in the network MTU.
fn packet_too_big(l3: &[u8], eth: &Eth, mtu: u16, out: &mut [u8]) -> Option<usize> {
    let ip = Ipv6Packet::new_checked(l3).ok()?;
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if ip.version() != 6 || !unicast_v6(src) || !unicast_v6(dst) {
        return None;
    }
    // RFC 4443 §2.4(e.1): no error about an error message (types 0-127). Extension headers in
    // front of ICMPv6 are not walked: such a packet gets its reply.
    if ip.next_header() == IpProtocol::Icmpv6 && ip.payload().first().is_some_and(|t| *t < 128) {
        return None;
    }
    let room = IPV6_MIN_MTU
        .min(usize::from(mtu))
        .saturating_sub(IPV6_HEADER_LEN + ICMP_HEADER_LEN);
    let quote = l3.get(..ip.total_len().min(room))?;
    let icmp_len = ICMP_HEADER_LEN + quote.len();
    let l2 = write_eth(eth, EtherType::Ipv6, out)?;
    let out = out.get_mut(l2..l2 + IPV6_HEADER_LEN + icmp_len)?;

    let mut reply = Ipv6Packet::new_unchecked(&mut *out);
    reply.set_version(6);
    reply.set_traffic_class(0);
    reply.set_flow_label(0);
    reply.set_payload_len(icmp_len as u16);
    reply.set_next_header(IpProtocol::Icmpv6);
    reply.set_hop_limit(REPLY_HOP_LIMIT);
    reply.set_src_addr(dst);
    reply.set_dst_addr(src);

    let mut icmp = Icmpv6Packet::new_unchecked(reply.payload_mut());
    icmp.set_msg_type(Icmpv6Message::PktTooBig);
    icmp.set_msg_code(0);
    icmp.set_pkt_too_big_mtu(u32::from(mtu));
    icmp.payload_mut().copy_from_slice(quote);
    icmp.fill_checksum(&dst, &src);
    Some(l2 + IPV6_HEADER_LEN + icmp_len)
}

/// Writes the reply's Ethernet header (and tag) into `out`, back to the frame's sender from its
/// destination; returns its length.
fn write_eth(eth: &Eth, ethertype: EtherType, out: &mut [u8]) -> Option<usize> {
    frame::write_header(out, eth.src, eth.dst, eth.vlan_tci, ethertype)
}

fn unicast_v4(a: Ipv4Addr) -> bool {
    !a.is_unspecified() && !a.is_multicast() && !a.is_broadcast()
}

fn unicast_v6(a: Ipv6Addr) -> bool {
    !a.is_unspecified() && !a.is_multicast()
}
