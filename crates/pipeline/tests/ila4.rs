//! IPv4 tenants of ILA networks (l3::ila4): two pipelines stand for two hosts, locators
//! fd00:1a:0:1::/64 (h1) and fd00:1a:0:2::/64 (h2), each with two ILA networks, VNI 900 and
//! 901, whose containers have the SAME IPv4 addresses (10.9.0.1 on h1, 10.9.0.2 on h2).
//! The packets are tests/vectors/siit.json's (built by hand in scapy from RFC 7915, checksums
//! by scapy): h1 turns each IPv4 packet into scapy's IPv6 packet byte for byte, h2 turns that
//! back into the IPv4 packet, delivered to the container of the right tenant only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};

use common::ila_bed::{ila_host, ila_network, send, C1, C2, GW};
use common::{P1, P2};
use nvo_pipeline::l3::ila::{sir_to_ila, upper64, vni_of};
use nvo_pipeline::l3::ila4::{identifier, ila_address, translate_egress};
use nvo_pipeline::{Action, Actions, DropReason, Pipeline, Vni};

const RED: Vni = Vni(900);
const BLUE: Vni = Vni(901);
const H1: &str = "fd00:1a:0:1::";
const H2: &str = "fd00:1a:0:2::";

fn vectors() -> Vec<serde_json::Value> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/siit.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file["vectors"].as_array().unwrap().clone()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A host at `locator`: networks RED on P1 and BLUE on P2, and the lab's mappings: 10.9.0.1
/// at h1, 10.9.0.2 at h2, in both.
fn host(locator: &str) -> Pipeline {
    let mut p = ila_host(locator);
    let mappings = [
        ("10.9.0.1", 32, "fd00:1a:0:1::1"),
        ("10.9.0.2", 32, "fd00:1a:0:2::1"),
    ];
    for (vni, port) in [(RED, P1), (BLUE, P2)] {
        ila_network(&mut p, (vni, None), &[port], &mappings);
    }
    p
}

fn loc(s: &str) -> u64 {
    upper64(s.parse().unwrap())
}

/// h2's containers (C2 in both tenants) speak first, so that h2 knows them.
fn hosts() -> (Pipeline, Pipeline) {
    let (h1, mut h2) = (host(H1), host(H2));
    let reply = vectors()
        .into_iter()
        .find(|v| v["name"] == "udp")
        .map(|v| unhex(v["v4"].as_str().unwrap()))
        .unwrap();
    for port in [P1, P2] {
        let actions = send(&mut h2, port, C2, &reply);
        assert!(
            matches!(actions[..], [Action::SendIla { .. }]),
            "{actions:?}"
        );
    }
    (h1, h2)
}

#[test]
fn the_identifier_carries_the_vni_and_the_ipv4_address_and_is_not_the_ipv6_type() {
    let a = ila_address(loc(H2), RED, Ipv4Addr::new(10, 9, 0, 2));
    assert_eq!(a, "fd00:1a:0:2:4000:384:a09:2".parse::<Ipv6Addr>().unwrap());
    assert_eq!(identifier(a), Some((RED, Ipv4Addr::new(10, 9, 0, 2))));
    assert_eq!(vni_of(a), None, "not nvo's IPv6 identifier (type 3 with C)");
    let six = sir_to_ila("fd10::2".parse().unwrap(), loc(H2), RED).unwrap();
    assert_eq!(identifier(six), None);
}

#[test]
fn ipv4_crosses_as_scapys_ipv6_and_comes_back_to_its_tenant_only() {
    let (mut h1, mut h2) = hosts();
    let mut checked = 0;
    for v in vectors() {
        let v4 = unhex(v["v4"].as_str().unwrap());
        if v4[12..16] != [10, 9, 0, 1] {
            continue; // h2's packets
        }
        let actions = send(&mut h1, P1, C1, &v4);
        let [Action::SendIla {
            locator,
            vni: RED,
            offset: 14,
        }] = actions[..]
        else {
            panic!("{}: {actions:?}", v["name"])
        };
        assert_eq!(locator, loc(H2));
        let mut wire = [0u8; 2048];
        let n = translate_egress(&v4, (loc(H1), locator), RED, &mut wire).unwrap();
        let v6 = unhex(v["v6"].as_str().unwrap());
        assert_eq!(&wire[..n], &v6[..], "{}: scapy's IPv6", v["name"]);

        let mut got = Actions::new();
        h2.from_ila(&v6, &mut got);
        let [Action::Reply { port: P1, len }] = got.as_slice() else {
            panic!("{}: {:?}", v["name"], got.as_slice())
        };
        let frame = &h2.scratch()[..*len];
        assert_eq!(frame[..6], C2.0);
        assert_eq!(frame[6..14], [GW.0[..].to_vec(), vec![8, 0]].concat()[..]);
        if v["both"] == true {
            assert_eq!(
                &frame[14..],
                &v4[..],
                "{}: the IPv4 packet again",
                v["name"]
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked}: the ICMP errors too");
}

/// Path MTU discovery across the translation: the underlay's ICMPv6 Packet Too Big (from a
/// router address, no identifier) to c1's ILA address about c1's packet reaches c1 as scapy's
/// ICMPv4 "fragmentation needed", MTU 1480, from RFC 7600's 192.0.0.8.
#[test]
fn an_underlay_packet_too_big_reaches_the_sender_as_fragmentation_needed() {
    let (mut h1, _) = hosts();
    let any = vectors()
        .into_iter()
        .find(|v| v["name"] == "tcp syn")
        .unwrap();
    send(&mut h1, P1, C1, &unhex(any["v4"].as_str().unwrap())); // c1 speaks
    let v = vectors()
        .into_iter()
        .find(|v| v["name"] == "underlay packet too big")
        .unwrap();
    let (v4, v6) = (
        unhex(v["v4"].as_str().unwrap()),
        unhex(v["v6"].as_str().unwrap()),
    );
    let mut got = Actions::new();
    h1.from_ila(&v6, &mut got);
    let [Action::Reply { port: P1, len }] = got.as_slice() else {
        panic!("{:?}", got.as_slice())
    };
    let frame = &h1.scratch()[..*len];
    assert_eq!(frame[..6], C1.0);
    assert_eq!(&frame[14..], &v4[..], "scapy's fragmentation needed");
    assert_eq!(frame[14 + 12..14 + 16], [192, 0, 0, 8]);
    assert_eq!(u16::from_be_bytes([frame[14 + 26], frame[14 + 27]]), 1480);
    // The same error about another tenant's packet is not this tenant's to see.
    let mut other = v6.clone();
    let blue = ila_address(loc(H1), BLUE, Ipv4Addr::new(10, 9, 0, 1)).octets();
    other[48 + 8..48 + 24].copy_from_slice(&blue);
    // The ICMPv6 checksum made right again (RFC 4443 §2.3), so that only the tenant differs.
    use nvo_wire::std_wire::checksum;
    other[42..44].copy_from_slice(&[0, 0]);
    let len = (other.len() - 40) as u32;
    let sum = checksum::combine(&[
        checksum::data(&other[8..40]),
        (len >> 16) as u16,
        len as u16,
        58,
        checksum::data(&other[40..]),
    ]);
    other[42..44].copy_from_slice(&(!sum).to_be_bytes());
    h1.from_ila(&other, &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::ProfileMismatch)]);
}

#[test]
fn the_same_ipv4_address_in_the_other_tenant_reaches_the_other_container() {
    let (mut h1, mut h2) = hosts();
    let v = &vectors()[0];
    let v4 = unhex(v["v4"].as_str().unwrap());
    let actions = send(&mut h1, P2, C1, &v4);
    assert!(
        matches!(actions[..], [Action::SendIla { vni: BLUE, .. }]),
        "{actions:?}"
    );
    let mut wire = [0u8; 2048];
    let n = translate_egress(&v4, (loc(H1), loc(H2)), BLUE, &mut wire).unwrap();
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&wire[24..40]).unwrap());
    assert_eq!(identifier(dst), Some((BLUE, Ipv4Addr::new(10, 9, 0, 2))));
    assert_ne!(&wire[..n], &unhex(v["v6"].as_str().unwrap())[..]);
    let mut got = Actions::new();
    h2.from_ila(&wire[..n], &mut got);
    assert!(
        matches!(got.as_slice(), [Action::Reply { port: P2, .. }]),
        "{:?}",
        got.as_slice()
    );
}

#[test]
fn untranslatable_and_unknown_packets_are_counted_drops() {
    let (mut h1, mut h2) = hosts();
    let v4 = unhex(vectors()[0]["v4"].as_str().unwrap());
    // An ICMP fragment (MF set, header checksum fixed up): not translated (ICMPv6's checksum
    // covers the whole datagram's length, which a fragment does not know).
    let echo = vectors()
        .into_iter()
        .find(|v| v["name"] == "icmp echo request")
        .unwrap();
    let mut frag = unhex(echo["v4"].as_str().unwrap());
    frag[6] |= 0x20;
    frag[10] = frag[10].wrapping_sub(0x20);
    let a = send(&mut h1, P1, C1, &frag);
    assert!(
        matches!(a[..], [Action::Drop(DropReason::ProfileMismatch)]),
        "{a:?}"
    );
    // A broken header checksum.
    let mut bad = v4.clone();
    bad[10] ^= 1;
    let a = send(&mut h1, P1, C1, &bad);
    assert!(
        matches!(a[..], [Action::Drop(DropReason::MalformedFrame)]),
        "{a:?}"
    );
    // No mapping for 10.9.0.7.
    let mut v4_7 = v4.clone();
    v4_7[19] = 7;
    v4_7[10..12].copy_from_slice(&[0, 0]);
    let sum = !nvo_wire::std_wire::checksum::data(&v4_7[..20]);
    v4_7[10..12].copy_from_slice(&sum.to_be_bytes());
    let a = send(&mut h1, P1, C1, &v4_7);
    assert!(
        matches!(a[..], [Action::Drop(DropReason::NoDestination)]),
        "{a:?}"
    );

    let v6 = unhex(vectors()[0]["v6"].as_str().unwrap());
    let mut got = Actions::new();
    for (what, packet, reason) in [
        ("cut short", v6[..30].to_vec(), DropReason::MalformedTunnel),
        (
            "payload cut short",
            v6[..v6.len() - 1].to_vec(),
            DropReason::MalformedTunnel,
        ),
        (
            "a VNI nobody has",
            with_dst(&v6, loc(H2), Vni(777), [10, 9, 0, 2]),
            DropReason::NoDestination,
        ),
        (
            "nobody owns 10.9.0.9",
            with_dst(&v6, loc(H2), RED, [10, 9, 0, 9]),
            DropReason::NoDestination,
        ),
        (
            "another host's locator",
            with_dst(&v6, loc(H1), RED, [10, 9, 0, 2]),
            DropReason::NoDestination,
        ),
    ] {
        h2.from_ila(&packet, &mut got);
        assert_eq!(got.as_slice(), [Action::Drop(reason)], "{what}");
    }
    // A source whose identifier is another tenant's: not translated into this one.
    let mut wrong_src = v6.clone();
    wrong_src[8..24]
        .copy_from_slice(&ila_address(loc(H1), BLUE, Ipv4Addr::new(10, 9, 0, 1)).octets());
    h2.from_ila(&wrong_src, &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    // 10.9.0.1 is mapped to h1, whose container has not spoken yet: h1 asks (ARP probe).
    let mut to_h1 = with_dst(&v6, loc(H1), RED, [10, 9, 0, 1]);
    to_h1[8..24].copy_from_slice(&ila_address(loc(H2), RED, Ipv4Addr::new(10, 9, 0, 2)).octets());
    let mut fresh = host(H1);
    fresh.from_ila(&to_h1, &mut got);
    assert!(
        matches!(
            got.as_slice(),
            [
                Action::Reply { port: P1, .. },
                Action::Drop(DropReason::NoDestination)
            ]
        ),
        "{:?}",
        got.as_slice()
    );
}

/// `v6` with its destination made the IPv4 ILA address of `addr` in `vni` at `locator` (the
/// transport checksum is not fixed: these packets are dropped before it matters).
fn with_dst(v6: &[u8], locator: u64, vni: Vni, addr: [u8; 4]) -> Vec<u8> {
    let mut p = v6.to_vec();
    p[24..40].copy_from_slice(&ila_address(locator, vni, Ipv4Addr::from(addr)).octets());
    p
}
