//! Oversized frames: the ICMP fragmentation-needed (RFC 792, RFC 1191) and packet-too-big
//! (RFC 4443) replies, checked by parsing them back with smoltcp — an implementation separate
//! from etherparse, which builds the offending frames — including every checksum.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use common::*;
use nvo_pipeline::{Action, Actions, DropReason, Limits, Mac, NetworkSpec, Pipeline};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, Icmpv4Message, Icmpv4Packet, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv6Packet,
};

const MTU: u16 = 1400;
const SENDER: Mac = Mac([0x02, 0, 0, 0, 0, 0x0a]);
const TARGET: Mac = Mac([0x02, 0, 0, 0, 0, 0x0b]);

fn pipeline(mtu: u16) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        mtu,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    p
}

/// An IPv4/UDP frame whose IP packet is `ip_len` bytes, DF as given.
fn v4(ip_len: usize, df: bool, dst: [u8; 4]) -> Vec<u8> {
    let mut header =
        etherparse::Ipv4Header::new(0, 64, etherparse::IpNumber::UDP, [10, 0, 0, 1], dst).unwrap();
    header.dont_fragment = df;
    header.identification = 0x1234;
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(SENDER.0, TARGET.0)
        .ip(etherparse::IpHeaders::Ipv4(header, Default::default()))
        .udp(40000, 5001)
        .write(&mut v, &vec![0x5a; ip_len - 28])
        .unwrap();
    v
}

/// An IPv6/UDP (or other next header) frame whose IP packet is `ip_len` bytes.
fn v6(ip_len: usize, dst: [u8; 16]) -> Vec<u8> {
    let src = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets();
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(SENDER.0, TARGET.0)
        .ipv6(src, dst, 64)
        .udp(40000, 5001)
        .write(&mut v, &vec![0x5a; ip_len - 48])
        .unwrap();
    v
}

fn v6_target() -> [u8; 16] {
    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).octets()
}

/// Sends `frame` from port 1 and returns the reply bytes, asserting the frame itself was dropped.
fn reply(p: &mut Pipeline, frame: &[u8]) -> Vec<u8> {
    let mut a = Actions::new();
    p.from_port(P1, frame, Instant::now(), &mut a);
    match a.as_slice() {
        [Action::Reply { port, len }, Action::Drop(DropReason::TooBig)] => {
            assert_eq!(*port, P1);
            p.scratch()[..*len].to_vec()
        }
        other => panic!("expected a reply and a too_big drop, got {other:?}"),
    }
}

/// The actions for an IPv4 frame with DF exactly at the MTU from port 1.
fn at_the_mtu(p: &mut Pipeline) -> Vec<Action> {
    let mut a = Actions::new();
    let frame = v4(usize::from(MTU), true, [10, 0, 0, 2]);
    p.from_port(P1, &frame, Instant::now(), &mut a);
    a.as_slice().to_vec()
}

fn only_dropped(p: &mut Pipeline, frame: &[u8]) {
    let mut a = Actions::new();
    p.from_port(P1, frame, Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::TooBig)]);
}

#[test]
fn ipv4_with_df_gets_frag_needed_from_the_destination() {
    let mut p = pipeline(MTU);
    let frame = v4(1500, true, [10, 0, 0, 2]);
    let bytes = reply(&mut p, &frame);

    let eth = EthernetFrame::new_checked(&bytes[..]).unwrap();
    assert_eq!(eth.dst_addr().0, SENDER.0);
    assert_eq!(eth.src_addr().0, TARGET.0);
    assert_eq!(eth.ethertype(), EthernetProtocol::Ipv4);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(ip.src_addr(), Ipv4Addr::new(10, 0, 0, 2));
    assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 0, 0, 1));
    assert_eq!(ip.next_header(), IpProtocol::Icmp);
    assert_eq!(usize::from(ip.total_len()), 20 + 8 + 28);
    let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!(icmp.msg_type(), Icmpv4Message::DstUnreachable);
    assert_eq!(icmp.msg_code(), 4);
    // RFC 1191 §4: unused (0) then the next-hop MTU.
    assert_eq!(&ip.payload()[4..8], &[0, 0, (MTU >> 8) as u8, MTU as u8]);
    // RFC 792: the original IP header and the first 8 data bytes (the UDP header).
    assert_eq!(icmp.data(), &frame[14..14 + 28]);

    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::TooBig), 1);
    assert_eq!(c.ports[&P1].drops, 1);
}

#[test]
fn ipv4_frag_needed_cross_checked_by_etherparse() {
    let mut p = pipeline(MTU);
    let bytes = reply(&mut p, &v4(1500, true, [10, 0, 0, 2]));
    let sliced = etherparse::SlicedPacket::from_ethernet(&bytes).unwrap();
    let Some(etherparse::TransportSlice::Icmpv4(icmp)) = sliced.transport else {
        panic!("not icmpv4: {:?}", sliced.transport);
    };
    assert_eq!(
        icmp.icmp_type(),
        etherparse::Icmpv4Type::DestinationUnreachable(
            etherparse::icmpv4::DestUnreachableHeader::FragmentationNeeded { next_hop_mtu: MTU }
        )
    );
}

#[test]
fn ipv4_frame_exactly_at_the_mtu_passes() {
    let mut p = pipeline(MTU);
    assert_eq!(at_the_mtu(&mut p), [Action::Deliver { port: P2 }]);
}

#[test]
fn no_reply_where_the_rfcs_forbid_one() {
    let mut p = pipeline(MTU);
    // Without DF the sender expects routers to fragment: nothing to tell it.
    only_dropped(&mut p, &v4(1500, false, [10, 0, 0, 2]));
    // A multicast or broadcast destination cannot be the reply's source.
    only_dropped(&mut p, &v4(1500, true, [239, 1, 1, 1]));
    only_dropped(&mut p, &v4(1500, true, [255, 255, 255, 255]));
    // An ICMP error about an ICMP error (RFC 1122 §3.2.2): a big dest-unreachable.
    let mut icmp_err = v4(1500, true, [10, 0, 0, 2]);
    icmp_err[14 + 9] = 1; // protocol ICMP
    icmp_err[14 + 20] = 3; // type: destination unreachable
    let mut ip = Ipv4Packet::new_unchecked(&mut icmp_err[14..]);
    ip.fill_checksum();
    only_dropped(&mut p, &icmp_err);
    // A broadcast destination MAC cannot be the reply's source MAC.
    let mut bcast = v4(1500, true, [10, 0, 0, 2]);
    bcast[..6].copy_from_slice(&[0xff; 6]);
    only_dropped(&mut p, &bcast);
    // A truncated IP header.
    only_dropped(&mut p, &v4(1500, true, [10, 0, 0, 2])[..1450 + 14 + 1]);
    assert_eq!(p.counters().drops.get(DropReason::TooBig), 6);
}

#[test]
fn tagged_ipv4_reply_keeps_the_tag() {
    let mut p = pipeline(MTU);
    let plain = v4(1500, true, [10, 0, 0, 2]);
    let mut tagged = plain[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
    tagged.extend_from_slice(&plain[12..]);
    let bytes = reply(&mut p, &tagged);
    assert_eq!(&bytes[12..18], &[0x81, 0x00, 0x00, 0x2a, 0x08, 0x00]);
    let ip = Ipv4Packet::new_checked(&bytes[18..]).unwrap();
    assert!(ip.verify_checksum());
    assert!(Icmpv4Packet::new_checked(ip.payload())
        .unwrap()
        .verify_checksum());
}

#[test]
fn ipv6_gets_packet_too_big_capped_at_1280_bytes() {
    let mut p = pipeline(MTU);
    let frame = v6(1500, v6_target());
    let bytes = reply(&mut p, &frame);
    assert_eq!(
        bytes.len(),
        14 + 1280,
        "the reply fills exactly the IPv6 minimum MTU"
    );

    let eth = EthernetFrame::new_checked(&bytes[..]).unwrap();
    assert_eq!((eth.dst_addr().0, eth.src_addr().0), (SENDER.0, TARGET.0));
    assert_eq!(eth.ethertype(), EthernetProtocol::Ipv6);
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
    assert_eq!(ip.src_addr(), Ipv6Addr::from(v6_target()));
    assert_eq!(
        ip.dst_addr(),
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)
    );
    assert_eq!(ip.next_header(), IpProtocol::Icmpv6);
    let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
    let repr = Icmpv6Repr::parse(
        &ip.src_addr(),
        &ip.dst_addr(),
        &icmp,
        &ChecksumCapabilities::default(),
    )
    .unwrap();
    let Icmpv6Repr::PktTooBig { mtu, header, data } = repr else {
        panic!("not packet too big: {repr:?}");
    };
    assert_eq!(mtu, u32::from(MTU));
    assert_eq!(header.dst_addr, Ipv6Addr::from(v6_target()));
    assert_eq!(header.payload_len, 1460);
    // The quote is the invoking packet, cut at 1280 − 40 − 8 bytes.
    assert_eq!(icmp.payload(), &frame[14..14 + 1232]);
    assert_eq!(data.len(), 1232 - 40);
}

#[test]
fn ipv6_reply_fits_a_network_mtu_below_1280() {
    // The reply goes out of a port of the same network, so it is cut to the network MTU too.
    let mut p = pipeline(1000);
    let bytes = reply(&mut p, &v6(1100, v6_target()));
    assert_eq!(bytes.len(), 14 + 1000);
    let ip = Ipv6Packet::new_checked(&bytes[14..]).unwrap();
    assert_eq!(usize::from(ip.payload_len()), 1000 - 40);
    let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
    assert_eq!(icmp.pkt_too_big_mtu(), 1000);
}

#[test]
fn no_ipv6_reply_to_errors_or_multicast() {
    let mut p = pipeline(MTU);
    only_dropped(
        &mut p,
        &v6(1500, Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1).octets()),
    );
    // An ICMPv6 error (type < 128) that is too big.
    let mut err = v6(1500, v6_target());
    err[14 + 6] = 58; // next header ICMPv6
    err[14 + 40] = 1; // destination unreachable
    only_dropped(&mut p, &err);
    // An echo request (type 128) does get a reply.
    err[14 + 40] = 128;
    reply(&mut p, &err);
}

/// An L3 network whose gateway MAC is TARGET: the frames above are then packets routed
/// through the gateway.
fn l3_pipeline(mtu: u16) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        mtu,
        l3_gateway: Some(TARGET),
        profile: nvo_pipeline::ProfileTag(2),
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p
}

#[test]
fn l3_network_answers_too_big_from_the_gateway() {
    let mut p = l3_pipeline(MTU);
    // IPv4 with DF: fragmentation needed from the gateway's MAC, the destination's address.
    let bytes = reply(&mut p, &v4(1500, true, [10, 0, 0, 2]));
    let eth = EthernetFrame::new_checked(&bytes[..]).unwrap();
    assert_eq!((eth.dst_addr().0, eth.src_addr().0), (SENDER.0, TARGET.0));
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 0, 0, 1));
    let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum());
    assert_eq!(
        (icmp.msg_type(), icmp.msg_code()),
        (Icmpv4Message::DstUnreachable, 4)
    );
    assert_eq!(&ip.payload()[6..8], &MTU.to_be_bytes());
    // IPv6: packet too big with the network's MTU.
    let bytes = reply(&mut p, &v6(1500, v6_target()));
    let eth = EthernetFrame::new_checked(&bytes[..]).unwrap();
    assert_eq!(eth.src_addr().0, TARGET.0);
    let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
    let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
    assert!(icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
    assert_eq!(icmp.pkt_too_big_mtu(), u32::from(MTU));
    // Without DF only the drop; at the MTU the packet is routed as before (here to no route).
    only_dropped(&mut p, &v4(1500, false, [10, 0, 0, 2]));
    assert_eq!(
        at_the_mtu(&mut p),
        [Action::Drop(DropReason::NoDestination)]
    );
    assert_eq!(p.counters().drops.get(DropReason::TooBig), 3);
}
