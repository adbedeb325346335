//! IPv6 on L3 networks: the gateway answers Neighbor Solicitations with the exact NA scapy
//! builds (tests/vectors/l3_v6.json, written by l3_v6_vectors.py), ignores DAD and
//! self-solicitations, learns senders, routes IPv6 by longest prefix into the tunnel, delivers
//! decapsulated IPv6 to the owner of the address (else solicits it with the NS scapy builds and
//! drops), and refuses the family a profile does not carry. Router solicitations, MLD reports
//! and the ND it consumes without an answer are dropped as `link_control`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::time::Instant;

use common::*;
use nvo_pipeline::{
    Action, Actions, Decapsulated, DropReason, IpFamilies, Limits, Mac, NetworkSpec, Pipeline,
    ProfileTag, TableError,
};

const GW: Mac = Mac([0x02, 0x6e, 0x76, 0, 0, 100]);
const C1: Mac = Mac([0x02, 0, 0, 0, 0, 1]);
const C2: Mac = Mac([0x02, 0, 0, 0, 0, 2]);
const GPE: ProfileTag = ProfileTag(2);

fn pipeline_with(families: IpFamilies, max_learned: u32) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        l3_gateway: Some(GW),
        l3_families: families,
        profile: GPE,
        max_learned,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    p
}

fn pipeline() -> Pipeline {
    pipeline_with(IpFamilies::BOTH, 4096)
}

fn vector(name: &str) -> Vec<u8> {
    let path = common::scapy::vector_path().join("l3_v6.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(file["source"].as_str().unwrap().starts_with("scapy "));
    let hex = file[name].as_str().unwrap();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// An Ethernet frame (dst, src) carrying an IPv6 UDP packet from `from` to `to`.
fn ipv6_frame(dst: Mac, src: Mac, from: &str, to: &str) -> Vec<u8> {
    let mut f = dst.0.to_vec();
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 8, 17, 64]);
    for a in [from, to] {
        let IpAddr::V6(a) = ip(a) else { panic!() };
        f.extend_from_slice(&a.octets());
    }
    f.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0]);
    f
}

fn decap() -> Decapsulated {
    Decapsulated {
        src: ip("2001:db8::1"),
        vni: VNI,
        profile: GPE,
        dont_learn: false,
        src_node: None,
    }
}

/// The NS C1 sends for a.b.c.d::9 (from the scapy vector) with another source and target.
fn ns(src: &str, target: &str) -> Vec<u8> {
    let mut f = vector("ns");
    let (IpAddr::V6(s), IpAddr::V6(t)) = (ip(src), ip(target)) else {
        panic!()
    };
    f[22..38].copy_from_slice(&s.octets());
    f[62..78].copy_from_slice(&t.octets());
    // The ICMPv6 checksum again: one's complement sum over the pseudo-header and message.
    f[56..58].copy_from_slice(&[0, 0]);
    let mut sum: u32 = 0;
    let words = |b: &[u8], sum: &mut u32| {
        for c in b.chunks(2) {
            *sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    words(&f[22..54], &mut sum);
    words(&[0, 0, 0, 32, 0, 0, 0, 58], &mut sum);
    words(&f[54..], &mut sum);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[56..58].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f
}

#[test]
fn gateway_answers_a_solicitation_with_scapys_advertisement() {
    let mut p = pipeline();
    let mut a = Actions::new();
    p.from_port(P1, &vector("ns"), Instant::now(), &mut a);
    let [Action::Reply { port, len }] = a.as_slice() else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!(*port, P1);
    assert_eq!(p.scratch()[..*len], vector("na")[..]);
    assert_eq!(p.counters().networks[&VNI].nd_replies, 1);
    // The sender was learned: a packet out of the tunnel for it reaches P1.
    let packet = ipv6_frame(GW, C2, "fd00:2::1", "fd00:1::1")[14..].to_vec();
    p.from_decapsulated_ip(decap(), 100, (6, &packet), &mut a);
    assert!(matches!(a.as_slice(), [Action::Reply { port: P1, .. }]));
}

#[test]
fn dad_and_self_solicitations_get_no_answer() {
    let mut p = pipeline();
    let mut a = Actions::new();
    // The helper recomputes the checksum: it builds a valid NS first.
    p.from_port(P1, &ns("fd00:1::1", "fd00:1::7"), Instant::now(), &mut a);
    assert!(matches!(a.as_slice(), [Action::Reply { port: P1, .. }]));
    for (src, target) in [("::", "fd00:1::1"), ("fd00:1::1", "fd00:1::1")] {
        p.from_port(P1, &ns(src, target), Instant::now(), &mut a);
        assert_eq!(
            a.as_slice(),
            [Action::Drop(DropReason::LinkControl)],
            "{src} → {target}"
        );
    }
    // A solicitation with a bad checksum is not ND: not to the gateway MAC, not routed.
    let mut bad = vector("ns");
    bad[60] ^= 1;
    p.from_port(P1, &bad, Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    assert_eq!(p.counters().networks[&VNI].nd_replies, 1);
}

#[test]
fn routes_ipv6_by_longest_prefix_and_delivers_locally() {
    let mut p = pipeline();
    let (r1, r2) = (ip("2001:db8::1"), ip("2001:db8::2"));
    p.route_add(VNI, ip("fd00::"), 16, r1).unwrap();
    p.route_add(VNI, ip("fd00:2::7"), 128, r2).unwrap();
    p.route_add(VNI, ip("10.0.0.0"), 8, ip("192.0.2.9"))
        .unwrap();
    assert_eq!(
        p.route_add(VNI, ip("fd00::1"), 64, r1),
        Err(TableError::InvalidPrefix {
            prefix: ip("fd00::1"),
            len: 64
        })
    );
    assert!(p.route_add(VNI, ip("fd00::"), 129, r1).is_err());
    let now = Instant::now();
    let mut a = Actions::new();
    let send = |p: &mut Pipeline, a: &mut Actions, to: &str| {
        p.from_port(P1, &ipv6_frame(GW, C1, "fd00:1::1", to), now, a);
    };
    send(&mut p, &mut a, "fd00:2::7");
    assert!(
        matches!(a.as_slice(), [Action::EncapL3 { remote, offset: 14, profile: GPE, .. }] if *remote == r2)
    );
    send(&mut p, &mut a, "fd00:2::8");
    assert!(matches!(a.as_slice(), [Action::EncapL3 { remote, .. }] if *remote == r1));
    // No route: nothing matches 2001:db8:ff::1 (the IPv4 /8 is of the other family).
    send(&mut p, &mut a, "2001:db8:ff::1");
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    // C2 speaks (an IPv6 packet to the gateway teaches the table as an NS does); C1's
    // packet to it is delivered behind a new header.
    p.from_port(
        P2,
        &ipv6_frame(GW, C2, "fd00:1::2", "fd00:2::8"),
        now,
        &mut a,
    );
    send(&mut p, &mut a, "fd00:1::2");
    let [Action::Reply { port, len }] = a.as_slice() else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!(*port, P2);
    assert_eq!(&p.scratch()[..6], &C2.0);
    assert_eq!(&p.scratch()[6..12], &GW.0);
    assert_eq!(&p.scratch()[12..14], &[0x86, 0xdd]);
    assert_eq!(*len, 14 + 48);
    // The hop limit is not decremented: the gateway is a wire, not a router hop.
    assert_eq!(p.scratch()[14 + 7], 64);
}

#[test]
fn the_scapy_advertisement_teaches_the_table() {
    let mut p = pipeline();
    let mut a = Actions::new();
    // The gateway's own answer, sent back by a container, announces fd00:1::9 at GW's MAC:
    // what counts is that an NA's target is learned behind the port it came from.
    p.from_port(P2, &vector("na"), Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::LinkControl)]);
    let packet = ipv6_frame(GW, C2, "fd00:2::1", "fd00:1::9")[14..].to_vec();
    p.from_decapsulated_ip(decap(), 100, (6, &packet), &mut a);
    assert!(matches!(a.as_slice(), [Action::Reply { port: P2, .. }]));
}

#[test]
fn router_solicitations_and_mld_reports_are_link_control_not_lost() {
    let mut p = pipeline();
    let mut a = Actions::new();
    // What a Linux container sends when its interface comes up, as scapy builds it: nothing
    // on an L3 network routes it (no router advertisements, no multicast routing).
    for name in ["rs", "mld"] {
        p.from_port(P1, &vector(name), Instant::now(), &mut a);
        assert_eq!(
            a.as_slice(),
            [Action::Drop(DropReason::LinkControl)],
            "{name}"
        );
    }
    // Other multicast (here UDP to all-nodes) has nowhere to go: no_destination still.
    let mdns = ipv6_frame(Mac([0x33, 0x33, 0, 0, 0, 1]), C1, "fe80::1", "ff02::1");
    p.from_port(P1, &mdns, Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    // A truncated MLD report (its Hop-by-Hop header cut short) is no link control.
    let mld = vector("mld");
    p.from_port(P1, &mld[..14 + 40 + 1], Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    let drops = &p.counters().drops;
    assert_eq!(drops.get(DropReason::LinkControl), 2);
    assert_eq!(drops.get(DropReason::NoDestination), 2);
}

#[test]
fn unknown_destination_is_solicited_with_scapys_probe_and_dropped() {
    let mut p = pipeline();
    let mut a = Actions::new();
    let packet = ipv6_frame(GW, C1, "fd00:2::1", "fd00:1::2")[14..].to_vec();
    p.from_decapsulated_ip(decap(), 100, (6, &packet), &mut a);
    let [Action::Reply { port: q1, len }, Action::Reply { port: q2, .. }, Action::Drop(DropReason::NoDestination)] =
        a.as_slice()
    else {
        panic!("{:?}", a.as_slice())
    };
    assert_eq!((*q1, *q2), (P1, P2));
    assert_eq!(p.scratch()[..*len], vector("probe")[..]);
    assert_eq!(p.counters().networks[&VNI].nd_requests, 1);
    // The tunnel said IPv4 but the packet is IPv6: a broken tunnel packet.
    p.from_decapsulated_ip(decap(), 100, (4, &packet), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::MalformedTunnel)]);
}

#[test]
fn a_profile_carries_only_its_families() {
    let v6_only = IpFamilies {
        ipv4: false,
        ipv6: true,
    };
    let mut p = pipeline_with(v6_only, 4096);
    p.route_add(VNI, ip("0.0.0.0"), 0, ip("2001:db8::1"))
        .unwrap();
    p.route_add(VNI, ip("::"), 0, ip("2001:db8::1")).unwrap();
    let mut a = Actions::new();
    let mut v4 = GW.0.to_vec();
    v4.extend_from_slice(&C1.0);
    v4.extend_from_slice(&[0x08, 0x00]);
    let h = etherparse::Ipv4Header::new(
        8,
        64,
        etherparse::IpNumber::UDP,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
    )
    .unwrap();
    v4.extend_from_slice(&h.to_bytes());
    v4.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0]);
    p.from_port(P1, &v4, Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::ProfileMismatch)]);
    p.from_port(
        P1,
        &ipv6_frame(GW, C1, "fd00:1::1", "fd00:2::1"),
        Instant::now(),
        &mut a,
    );
    assert!(matches!(a.as_slice(), [Action::EncapL3 { .. }]));
    p.from_decapsulated_ip(decap(), 100, (4, &v4[14..]), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::ProfileMismatch)]);
}

#[test]
fn neighbours_are_bounded_by_max_learned() {
    let mut p = pipeline_with(IpFamilies::BOTH, 2);
    let mut a = Actions::new();
    for (i, src) in ["fd00:1::1", "fd00:1::2", "fd00:1::3"].iter().enumerate() {
        let mac = Mac([2, 0, 0, 0, 1, i as u8]);
        p.from_port(
            P1,
            &ipv6_frame(GW, mac, src, "fd00:9::9"),
            Instant::now(),
            &mut a,
        );
    }
    assert_eq!(p.network(VNI).unwrap().neighbours, 2);
    let third = ipv6_frame(GW, C1, "fd00:2::1", "fd00:1::3")[14..].to_vec();
    p.from_decapsulated_ip(decap(), 100, (6, &third), &mut a);
    assert_eq!(
        a.as_slice().last(),
        Some(&Action::Drop(DropReason::NoDestination))
    );
}

/// The committed vectors are what l3_v6_vectors.py writes now: they change only with it.
#[test]
fn vectors_are_what_the_script_writes() {
    common::scapy::assert_script_writes("l3_v6_vectors.py", "l3_v6.json");
}
