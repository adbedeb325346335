//! L3 networks: the gateway answers ARP (checked by parsing the reply with smoltcp), routes
//! IPv4 by longest prefix into the tunnel without the Ethernet header, and delivers decapsulated
//! packets to the container that owns the destination, behind a rebuilt Ethernet header.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use common::*;
use nvo_pipeline::{
    Action, Actions, Decapsulated, DropReason, Limits, Mac, NetworkSpec, Pipeline, ProfileTag,
    TableError,
};
use smoltcp::wire::{ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame};

const GW: Mac = Mac([0x02, 0x6e, 0x76, 0, 0, 100]);
const C1: Mac = Mac([0x02, 0, 0, 0, 0, 1]);
const C2: Mac = Mac([0x02, 0, 0, 0, 0, 2]);
const GPE: ProfileTag = ProfileTag(2);

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        l3_gateway: Some(GW),
        profile: GPE,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    p
}

fn arp_request(from: Mac, from_ip: [u8; 4], to_ip: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&from.0);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&from.0);
    f.extend_from_slice(&from_ip);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&to_ip);
    f
}

fn ipv4_frame(dst: Mac, src: Mac, from: [u8; 4], to: [u8; 4]) -> Vec<u8> {
    let mut f = dst.0.to_vec();
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&[0x08, 0x00]);
    let h = etherparse::Ipv4Header::new(8, 64, etherparse::IpNumber::UDP, from, to).unwrap();
    f.extend_from_slice(&h.to_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0]);
    f
}

#[test]
fn gateway_answers_arp_for_any_address() {
    let mut p = pipeline();
    let mut a = Actions::new();
    p.from_port(
        P1,
        &arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 9]),
        Instant::now(),
        &mut a,
    );
    let [Action::Reply { port, len }] = a.as_slice() else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!(*port, P1);
    let frame = EthernetFrame::new_checked(&p.scratch()[..*len]).unwrap();
    assert_eq!(frame.dst_addr(), EthernetAddress(C1.0));
    assert_eq!(frame.src_addr(), EthernetAddress(GW.0));
    let arp = ArpRepr::parse(&ArpPacket::new_checked(frame.payload()).unwrap()).unwrap();
    let ArpRepr::EthernetIpv4 {
        operation,
        source_hardware_addr,
        source_protocol_addr,
        target_hardware_addr,
        target_protocol_addr,
    } = arp
    else {
        panic!()
    };
    assert_eq!(operation, ArpOperation::Reply);
    assert_eq!(source_hardware_addr, EthernetAddress(GW.0));
    assert_eq!(source_protocol_addr, Ipv4Addr::new(10, 0, 0, 9));
    assert_eq!(target_hardware_addr, EthernetAddress(C1.0));
    assert_eq!(target_protocol_addr, Ipv4Addr::new(10, 0, 0, 1));
    // A probe for the sender's own address gets no answer.
    p.from_port(
        P1,
        &arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 1]),
        Instant::now(),
        &mut a,
    );
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
}

#[test]
fn routes_by_longest_prefix_and_delivers_locally() {
    let mut p = pipeline();
    let (r1, r2): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
    p.route_add(VNI, Ipv4Addr::new(10, 0, 0, 0).into(), 24, r1)
        .unwrap();
    p.route_add(VNI, Ipv4Addr::new(10, 0, 0, 7).into(), 32, r2)
        .unwrap();
    assert_eq!(
        p.route_add(VNI, Ipv4Addr::new(10, 0, 0, 1).into(), 24, r1),
        Err(TableError::InvalidPrefix {
            prefix: Ipv4Addr::new(10, 0, 0, 1).into(),
            len: 24
        })
    );
    let mut a = Actions::new();
    let now = Instant::now();
    p.from_port(
        P1,
        &ipv4_frame(GW, C1, [10, 0, 0, 1], [10, 0, 0, 7]),
        now,
        &mut a,
    );
    assert!(
        matches!(a.as_slice(), [Action::EncapL3 { remote, offset: 14, profile: GPE, .. }] if *remote == r2)
    );
    p.from_port(
        P1,
        &ipv4_frame(GW, C1, [10, 0, 0, 1], [10, 0, 0, 8]),
        now,
        &mut a,
    );
    assert!(matches!(a.as_slice(), [Action::EncapL3 { remote, .. }] if *remote == r1));
    // Not to the gateway MAC: not routed.
    p.from_port(
        P1,
        &ipv4_frame(C2, C1, [10, 0, 0, 1], [10, 0, 0, 8]),
        now,
        &mut a,
    );
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    // C2 announces itself; C1's packet to it is delivered locally behind a new header.
    p.from_port(
        P2,
        &arp_request(C2, [10, 0, 0, 2], [10, 0, 0, 1]),
        now,
        &mut a,
    );
    p.from_port(
        P1,
        &ipv4_frame(GW, C1, [10, 0, 0, 1], [10, 0, 0, 2]),
        now,
        &mut a,
    );
    let [Action::Reply { port, len }] = a.as_slice() else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!(*port, P2);
    assert_eq!(&p.scratch()[..6], &C2.0);
    assert_eq!(&p.scratch()[6..12], &GW.0);
    assert_eq!(*len, 14 + 28);
}

#[test]
fn decapsulated_packets_reach_the_owner_of_the_address() {
    let mut p = pipeline();
    let mut a = Actions::new();
    let now = Instant::now();
    p.from_port(
        P2,
        &arp_request(C2, [10, 0, 0, 2], [10, 0, 0, 1]),
        now,
        &mut a,
    );
    let d = Decapsulated {
        src: "192.0.2.1".parse().unwrap(),
        vni: VNI,
        profile: GPE,
        dont_learn: false,
        src_node: None,
    };
    let packet = ipv4_frame(GW, C1, [10, 0, 0, 9], [10, 0, 0, 2])[14..].to_vec();
    p.from_decapsulated_ip(d, packet.len() + 16, (4, &packet), &mut a);
    let [Action::Reply { port, len }] = a.as_slice() else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!((*port, *len), (P2, 14 + packet.len()));
    assert_eq!(&p.scratch()[14..*len], &packet[..]);
    // Nobody has 10.0.0.3: the gateway asks on both ports, and drops the packet.
    let other = ipv4_frame(GW, C1, [10, 0, 0, 9], [10, 0, 0, 3])[14..].to_vec();
    p.from_decapsulated_ip(d, 40, (4, &other), &mut a);
    let [Action::Reply { port: q1, len }, Action::Reply { port: q2, .. }, Action::Drop(DropReason::NoDestination)] =
        a.as_slice()
    else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!((*q1, *q2), (P1, P2));
    let frame = EthernetFrame::new_checked(&p.scratch()[..*len]).unwrap();
    let arp = ArpRepr::parse(&ArpPacket::new_checked(frame.payload()).unwrap()).unwrap();
    assert!(
        matches!(arp, ArpRepr::EthernetIpv4 { operation: ArpOperation::Request, target_protocol_addr, .. }
        if target_protocol_addr == Ipv4Addr::new(10, 0, 0, 3))
    );
    p.from_decapsulated_ip(
        Decapsulated {
            profile: ProfileTag(0),
            ..d
        },
        40,
        (4, &packet),
        &mut a,
    );
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::ProfileMismatch)]);
    // A frame for an L3 network from an Ethernet tunnel is refused too.
    let frame = ipv4_frame(C2, C1, [10, 0, 0, 9], [10, 0, 0, 2]);
    p.from_decapsulated(d, 60, &frame, now, &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::ProfileMismatch)]);
}
