//! SIIT (RFC 7915) translation against implementations nobody on nvo wrote:
//!
//! - scapy (tests/vectors/gen_siit_scapy.py) built, field by field, the IPv6 packet each IPv4
//!   packet must become and computed every checksum; nvo must produce it byte for byte, and
//!   the IPv4 packet again from it (the vectors marked `both`);
//! - smoltcp verifies the checksums of what nvo translated in the round-trip property below.

// clippy.toml's allow-*-in-tests covers #[test] bodies only; the helpers and the proptest
// bodies below are test code too, and a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{repo_root, unhex};
use nvo_wire::siit::{v4_to_v6, v6_to_v4, DF_ABOVE};
use nvo_wire::std_wire::{checksum, IpAddress, Ipv6Address, Ipv6Packet, TcpPacket, UdpPacket};
use proptest::prelude::*;

fn vectors() -> Vec<serde_json::Value> {
    let path = repo_root().join("tests/vectors/siit.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let v = file["vectors"].as_array().unwrap().clone();
    assert!(v.len() >= 8, "{path:?} has {} vectors", v.len());
    v
}

/// The vector's map of the embedded packet's addresses (ICMP errors), IPv4 → IPv6.
fn inner_map(v: &serde_json::Value) -> Vec<([u8; 4], [u8; 16])> {
    let map = v["inner"].as_object().unwrap();
    map.iter()
        .map(|(a4, a6)| {
            let a4: std::net::Ipv4Addr = a4.parse().unwrap();
            let a6: std::net::Ipv6Addr = a6.as_str().unwrap().parse().unwrap();
            (a4.octets(), a6.octets())
        })
        .collect()
}

fn addr6(v: &serde_json::Value, field: &str) -> [u8; 16] {
    let a: std::net::Ipv6Addr = v[field].as_str().unwrap().parse().unwrap();
    a.octets()
}

#[test]
fn ipv4_becomes_scapys_ipv6_byte_for_byte() {
    for v in vectors().into_iter().filter(|v| v["v6_only"] != true) {
        let (v4, v6) = (
            unhex(v["v4"].as_str().unwrap()),
            unhex(v["v6"].as_str().unwrap()),
        );
        let map = inner_map(&v);
        let inner = |a: [u8; 4]| map.iter().find(|m| m.0 == a).map(|m| m.1);
        let mut out = [0u8; 2048];
        let n = v4_to_v6(
            &v4,
            (&addr6(&v, "src6"), &addr6(&v, "dst6")),
            &inner,
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v["name"]));
        assert_eq!(&out[..n], &v6[..], "{}", v["name"]);
    }
}

#[test]
fn scapys_ipv6_becomes_the_ipv4_packet_again() {
    let mut checked = 0;
    for v in vectors()
        .into_iter()
        .filter(|v| v["both"] == true || v["v6_only"] == true)
    {
        let (v4, v6) = (
            unhex(v["v4"].as_str().unwrap()),
            unhex(v["v6"].as_str().unwrap()),
        );
        let src: [u8; 4] = v4[12..16].try_into().unwrap();
        let dst: [u8; 4] = v4[16..20].try_into().unwrap();
        let map = inner_map(&v);
        let inner = |a: &[u8; 16]| map.iter().find(|m| &m.1 == a).map(|m| m.0);
        let mut out = [0u8; 2048];
        let n = v6_to_v4(&v6, (&src, &dst), &inner, &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", v["name"]));
        assert_eq!(&out[..n], &v4[..], "{}", v["name"]);
        checked += 1;
    }
    assert!(checked >= 12);
}

#[test]
fn trailing_ethernet_padding_is_not_translated() {
    let v = &vectors()[0];
    let mut v4 = unhex(v["v4"].as_str().unwrap());
    v4.extend_from_slice(&[0; 6]);
    let mut out = [0u8; 2048];
    let n = v4_to_v6(
        &v4,
        (&addr6(v, "src6"), &addr6(v, "dst6")),
        &|_| None,
        &mut out,
    )
    .unwrap();
    assert_eq!(&out[..n], &unhex(v["v6"].as_str().unwrap())[..]);
}

/// An IPv4 packet with valid checksums, as a container sends it (ID 0; DF as RFC 7915 §5.1
/// would set it, so that the way back can give the same bytes).
fn ipv4_packet(proto: u8, tos: u8, ttl: u8, addrs: [u8; 8], body: &[u8]) -> Vec<u8> {
    let header = match proto {
        6 => 20,
        17 => 8,
        _ => 8,
    };
    let total = 20 + header + body.len();
    let df = if total > DF_ABOVE { 0x40 } else { 0 };
    let mut p = vec![0x45, tos];
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, df, 0, ttl, proto, 0, 0]);
    p.extend_from_slice(&addrs);
    let mut l4 = vec![0u8; header];
    match proto {
        6 => {
            l4[..4].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
            l4[12] = 0x50;
            l4[13] = 0x18;
        }
        17 => {
            l4[..4].copy_from_slice(&[0x30, 0x39, 0x00, 0x35]);
            l4[4..6].copy_from_slice(&((header + body.len()) as u16).to_be_bytes());
        }
        _ => l4[..8].copy_from_slice(&[8, 0, 0, 0, 0x12, 0x34, 0, 7]),
    }
    l4.extend_from_slice(body);
    let at = match proto {
        6 => 16,
        17 => 6,
        _ => 2,
    };
    let pseudo = if proto == 1 {
        0
    } else {
        checksum::combine(&[checksum::data(&addrs), u16::from(proto), l4.len() as u16])
    };
    let sum = !checksum::combine(&[pseudo, checksum::data(&l4)]);
    let sum = if proto == 17 && sum == 0 { 0xffff } else { sum };
    l4[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    let h = !checksum::data(&p[..20]);
    p[10..12].copy_from_slice(&h.to_be_bytes());
    p.extend_from_slice(&l4);
    p
}

proptest! {
    #[test]
    fn v4_to_v6_to_v4_is_identity_with_valid_checksums(
        proto in prop::sample::select(vec![1u8, 6, 17]),
        tos in any::<u8>(),
        ttl in 1u8..,
        addrs in any::<[u8; 8]>(),
        src6 in any::<[u8; 16]>(),
        dst6 in any::<[u8; 16]>(),
        body in prop::collection::vec(any::<u8>(), 0..1400),
    ) {
        let v4 = ipv4_packet(proto, tos, ttl, addrs, &body);
        let mut v6 = [0u8; 2048];
        let n = v4_to_v6(&v4, (&src6, &dst6), &|_| None, &mut v6).unwrap();
        let packet = Ipv6Packet::new_checked(&v6[..n]).unwrap();
        let (s, d) = (
            IpAddress::Ipv6(Ipv6Address::from(src6)),
            IpAddress::Ipv6(Ipv6Address::from(dst6)),
        );
        match proto {
            6 => prop_assert!(TcpPacket::new_checked(packet.payload()).unwrap().verify_checksum(&s, &d)),
            17 => prop_assert!(UdpPacket::new_checked(packet.payload()).unwrap().verify_checksum(&s, &d)),
            _ => {
                let sum = checksum::combine(&[
                    checksum::pseudo_header(&s, &d, nvo_wire::std_wire::IpProtocol::Icmpv6, packet.payload().len() as u32),
                    checksum::data(packet.payload()),
                ]);
                prop_assert_eq!(sum, 0xffff);
                prop_assert_eq!(packet.payload()[0], 128);
            }
        }
        let mut back = [0u8; 2048];
        let src: [u8; 4] = addrs[..4].try_into().unwrap();
        let dst: [u8; 4] = addrs[4..].try_into().unwrap();
        let m = v6_to_v4(&v6[..n], (&src, &dst), &|_| None, &mut back).unwrap();
        prop_assert_eq!(&back[..m], &v4[..]);
    }
}

proptest! {
    /// A valid packet with one byte anywhere changed (the IPv4 header checksum made right
    /// again, so the change reaches the translation): no panic either way, and what translates
    /// to IPv6 translates back (the IPv6 packet 20 bytes longer, 28 with a Fragment Header). (An echo altered into an error carries no packet the embedded
    /// address map knows: refused; the fuzz target `siit` translates errors.)
    #[test]
    fn altered_packets_translate_back_or_are_refused(
        proto in prop::sample::select(vec![1u8, 6, 17]),
        body in prop::collection::vec(any::<u8>(), 0..64),
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut v4 = ipv4_packet(proto, 0, 64, [10, 9, 0, 1, 10, 9, 0, 2], &body);
        let i = at.index(v4.len());
        v4[i] = value;
        if i != 10 && i != 11 {
            v4[10..12].copy_from_slice(&[0, 0]);
            let h = !checksum::data(&v4[..20]);
            v4[10..12].copy_from_slice(&h.to_be_bytes());
        }
        let v4 = &v4[..cut.index(v4.len() + 1)];
        let (s6, d6) = ([0xfd; 16], [0xfe; 16]);
        let mut v6 = [0u8; 2048];
        let _ = v6_to_v4(v4, (&[1; 4], &[2; 4]), &|_| None, &mut v6);
        if let Ok(n) = v4_to_v6(v4, (&s6, &d6), &|_| None, &mut v6) {
            let mut back = [0u8; 2048];
            let m = v6_to_v4(&v6[..n], (&[10, 9, 0, 1], &[10, 9, 0, 2]), &|_| None, &mut back);
            // 20 bytes more in IPv6, 28 when an altered flag or offset made it a fragment
            // (RFC 7915 §5.1.1: a Fragment Header, Next Header 44).
            let grown = if v6[6] == 44 { 28 } else { 20 };
            prop_assert_eq!(m.map(|m| m + grown), Ok(n));
        }
    }
}
