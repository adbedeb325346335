//! ILA networks (l3::ila): two pipelines stand for two hosts with locators fd00:a::/64 and
//! fd00:b::/64 and the same mappings. A container's TCP, UDP and ICMPv6 packets to a remote
//! SIR address leave as `SendIla` to the remote's locator; translated (egress) they carry the
//! locator and the C bit, the same source, and transport checksums that still verify with the
//! new address; translated back at the other host they are byte for byte what was sent, in a
//! frame from the gateway MAC to the owner. Unknown identifiers and foreign locators are
//! counted drops; local destinations are delivered untranslated.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::Ipv6Addr;
use std::time::Instant;

use common::ila_bed::*;
use common::*;
use nvo_pipeline::l3::ila::{sir_to_ila, translate_egress, translate_ingress, upper64, vni_of};
use nvo_pipeline::{
    Action, Actions, DropReason, IpFamilies, Mac, NetworkSpec, Pipeline, TableError,
};

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// A host with locator `locator`, ILA network VNI (ports P1, P2) and the lab's mappings:
/// fd10::1 and fd10::3 at fd00:a::1, fd10::2 at fd00:b::1.
fn host(locator: &str) -> Pipeline {
    let mut p = ila_host(locator);
    let v6_only = IpFamilies {
        ipv4: false,
        ipv6: true,
    };
    let mappings = [
        ("fd10::1", 128, "fd00:a::1"),
        ("fd10::3", 128, "fd00:a::1"),
        ("fd10::2", 128, "fd00:b::1"),
    ];
    ila_network(&mut p, (VNI, Some(v6_only)), &[P1, P2], &mappings);
    p
}

/// The one's complement sum of `b` (16-bit big-endian words, an odd byte padded).
fn sum(b: &[u8], acc: u32) -> u32 {
    let mut s = acc;
    for c in b.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Whether the transport checksum of IPv6 `packet` (no extension headers) verifies: the sum
/// over pseudo-header (RFC 8200 §8.1) and upper-layer packet is 0xffff.
fn checksum_ok(packet: &[u8]) -> bool {
    let len = packet.len() - 40;
    let pseudo = sum(&[0, 0, (len >> 8) as u8, len as u8, 0, 0, 0, packet[6]], 0);
    fold(sum(&packet[40..], sum(&packet[8..40], pseudo))) == 0xffff
}

/// An IPv6 packet `from` → `to` of next header `nh` with `l4` (checksum field at `at`,
/// filled in).
fn packet(from: &str, to: &str, nh: u8, mut l4: Vec<u8>, at: usize) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    p.extend_from_slice(&[nh, 64]);
    p.extend_from_slice(&v6(from).octets());
    p.extend_from_slice(&v6(to).octets());
    let len = l4.len();
    let pseudo = sum(&[0, 0, (len >> 8) as u8, len as u8, 0, 0, 0, nh], 0);
    let c = !fold(sum(&l4, sum(&p[8..40], pseudo)));
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&l4);
    assert!(checksum_ok(&p));
    p
}

fn tcp(from: &str, to: &str) -> Vec<u8> {
    let mut l4 = vec![
        0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff,
    ];
    l4.extend_from_slice(&[0, 0, 0, 0]);
    l4.extend_from_slice(b"hello ila");
    packet(from, to, 6, l4, 16)
}

fn udp(from: &str, to: &str) -> Vec<u8> {
    let mut l4 = vec![0x30, 0x39, 0x00, 0x35, 0, 13, 0, 0];
    l4.extend_from_slice(b"dns?!");
    packet(from, to, 17, l4, 6)
}

fn echo(from: &str, to: &str) -> Vec<u8> {
    let mut l4 = vec![128, 0, 0, 0, 0x12, 0x34, 0, 1];
    l4.extend_from_slice(&[0xab; 21]);
    packet(from, to, 58, l4, 2)
}

#[test]
fn packets_cross_translated_and_come_back_byte_exact() {
    let (mut a, mut b) = (host("fd00:a::"), host("fd00:b::"));
    // fd10::2 speaks first on B (so B knows where it is).
    send(&mut b, P1, C2, &udp("fd10::2", "fd10::1"));
    for original in [
        tcp("fd10::1", "fd10::2"),
        udp("fd10::1", "fd10::2"),
        echo("fd10::1", "fd10::2"),
    ] {
        let actions = send(&mut a, P1, C1, &original);
        let [Action::SendIla {
            locator,
            vni: VNI,
            offset: 14,
        }] = actions[..]
        else {
            panic!("{actions:?}")
        };
        assert_eq!(locator, upper64(v6("fd00:b::")));
        let mut wire = original.clone();
        translate_egress(&mut wire, locator, VNI).unwrap();
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&wire[24..40]).unwrap());
        assert_eq!(
            upper64(dst),
            locator,
            "the locator is the destination prefix"
        );
        assert_eq!(
            wire[32] >> 5,
            3,
            "type 3: virtual network identifier, IPv6 unicast"
        );
        assert_ne!(wire[32] & 0x10, 0, "the C bit is set");
        assert_eq!(wire[33..36], [0, 0, 100], "the VNI");
        assert_eq!(
            wire[36..38],
            original[36..38],
            "bits 96..112 of the SIR address"
        );
        assert_eq!(
            wire[8..24],
            original[8..24],
            "the source stays a SIR address"
        );
        assert_eq!(
            wire[40..],
            original[40..],
            "the transport header is not touched"
        );
        assert!(checksum_ok(&wire), "checksum-neutral: valid on the wire");

        let mut got = Actions::new();
        b.from_ila(&wire, &mut got);
        let [Action::Reply { port: P1, len }] = got.as_slice() else {
            panic!("{:?}", got.as_slice())
        };
        let frame = &b.scratch()[..*len];
        assert_eq!(frame[..6], C2.0);
        assert_eq!(frame[6..12], GW.0);
        assert_eq!(
            frame[14..],
            original[..],
            "SIR → ILA → SIR gives the packet back"
        );
        assert!(checksum_ok(&frame[14..]));
    }
    assert_eq!(b.counters().networks[&VNI].delivered, 3);
    assert_eq!(a.counters().networks[&VNI].encap_unicast, 3);
}

#[test]
fn translate_ingress_undoes_translate_egress() {
    let original = tcp("fd10::1", "fd10::2");
    let mut p = original.clone();
    translate_egress(&mut p, upper64(v6("fd00:b::")), VNI).unwrap();
    assert_eq!(
        vni_of(Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).unwrap())),
        Some(VNI)
    );
    let sir = translate_ingress(&mut p, upper64(v6("fd10::"))).unwrap();
    assert_eq!(sir, v6("fd10::2"));
    assert_eq!(p, original);
    // Bits 64..96 set: nvo's identifier has no room for them.
    let mut q = tcp("fd10::1", "fd10::1:0:2");
    let before = q.clone();
    assert!(translate_egress(&mut q, upper64(v6("fd00:b::")), VNI).is_none());
    assert_eq!(q, before);
}

/// Every low word, both SIR prefixes' sums and VNIs: the ILA address has the SIR address's
/// one's complement sum and comes back as it was (0xffff as 0x0000: the two zeros).
#[test]
fn translation_is_checksum_neutral_and_reversible_for_every_low_word() {
    let sum = |a: Ipv6Addr| fold(super_sum(&a.octets()));
    for (prefix, locator, vni) in [
        ("fd10::", "fd00:b::", 100),
        ("2001:db8:ffff:ffff::", "fd00:1a:0:2::", 0x00ff_ffff),
        ("fd10::", "::", 1),
    ] {
        for low in 0..=u32::from(u16::MAX) {
            let sir = Ipv6Addr::from(u128::from(v6(prefix)) | 0xabcd_0000 | u128::from(low));
            let ila = sir_to_ila(sir, upper64(v6(locator)), nvo_pipeline::Vni(vni)).unwrap();
            assert_eq!(sum(ila), sum(sir), "{sir} → {ila}");
            let back = nvo_pipeline::l3::ila::ila_to_sir(ila, upper64(v6(prefix)));
            let want = if low == 0xffff {
                u128::from(sir) & !0xffff
            } else {
                u128::from(sir)
            };
            assert_eq!(u128::from(back), want, "{sir} → {ila} → {back}");
        }
    }
}

fn super_sum(b: &[u8]) -> u32 {
    sum(b, 0)
}

/// Two tenants, the same addresses: the ILA addresses differ by VNI and each packet reaches
/// its own tenant's container.
#[test]
fn tenants_with_the_same_addresses_stay_apart() {
    const VNI2: nvo_pipeline::Vni = nvo_pipeline::Vni(200);
    let tenant2 = |p: &mut Pipeline| {
        let mappings = [("fd10::1", 128, "fd00:a::1"), ("fd10::2", 128, "fd00:b::1")];
        ila_network(p, (VNI2, None), &[P3], &mappings);
    };
    let (mut a, mut b) = (host("fd00:a::"), host("fd00:b::"));
    tenant2(&mut a);
    tenant2(&mut b);
    // fd10::2 of both tenants speak at B: tenant 1's on P1, tenant 2's on P3.
    send(&mut b, P1, C2, &udp("fd10::2", "fd10::1"));
    send(&mut b, P3, C3, &udp("fd10::2", "fd10::1"));
    let original = tcp("fd10::1", "fd10::2");
    let mut wires = Vec::new();
    for (port, vni, owner, at) in [(P1, VNI, C2, P1), (P3, VNI2, C3, P3)] {
        let actions = send(&mut a, port, C1, &original);
        let [Action::SendIla {
            locator, vni: v, ..
        }] = actions[..]
        else {
            panic!("{actions:?}")
        };
        assert_eq!(v, vni);
        let mut wire = original.clone();
        translate_egress(&mut wire, locator, v).unwrap();
        assert!(checksum_ok(&wire));
        let mut got = Actions::new();
        b.from_ila(&wire, &mut got);
        let [Action::Reply { port, len }] = got.as_slice() else {
            panic!("{:?}", got.as_slice())
        };
        assert_eq!(
            (*port, &b.scratch()[..6]),
            (at, &owner.0[..]),
            "vni {vni:?}"
        );
        assert_eq!(b.scratch()[14..*len], original[..]);
        wires.push(wire[24..40].to_vec());
    }
    assert_ne!(wires[0], wires[1], "the tenants' ILA addresses differ");
    // A VNI the host has no ILA network for: a counted drop, no delivery.
    let mut stray = original.clone();
    translate_egress(&mut stray, upper64(v6("fd00:b::")), nvo_pipeline::Vni(300)).unwrap();
    let mut got = Actions::new();
    b.from_ila(&stray, &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::NoDestination)]);
}

#[test]
fn local_destinations_are_delivered_untranslated() {
    let mut a = host("fd00:a::");
    send(&mut a, P2, C3, &udp("fd10::3", "fd10::1"));
    let original = tcp("fd10::1", "fd10::3");
    let actions = send(&mut a, P1, C1, &original);
    let [Action::Reply { port: P2, len }] = actions[..] else {
        panic!("{actions:?}")
    };
    assert_eq!(a.scratch()[14..len], original[..]);
}

#[test]
fn a_local_mapping_not_yet_heard_is_solicited() {
    let mut a = host("fd00:a::");
    // fd10::3 maps to this host but never spoke: NS on every port, the packet dropped.
    let actions = send(&mut a, P1, C1, &tcp("fd10::1", "fd10::3"));
    assert!(
        matches!(
            actions[..],
            [
                Action::Reply { port: P1, .. },
                Action::Reply { port: P2, .. },
                Action::Drop(DropReason::NoDestination)
            ]
        ),
        "{actions:?}"
    );
    // Received for it: the same.
    let mut wire = tcp("fd10::2", "fd10::3");
    translate_egress(&mut wire, upper64(v6("fd00:a::")), VNI).unwrap();
    let mut got = Actions::new();
    a.from_ila(&wire, &mut got);
    assert!(matches!(
        got.as_slice().last(),
        Some(Action::Drop(DropReason::NoDestination))
    ));
    assert_eq!(got.len(), 3, "{:?}", got.as_slice());
}

#[test]
fn unknown_identifiers_and_foreign_locators_are_counted_drops() {
    let (mut a, mut b) = (host("fd00:a::"), host("fd00:b::"));
    let actions = send(&mut a, P1, C1, &tcp("fd10::1", "fd10::99"));
    assert_eq!(actions, [Action::Drop(DropReason::NoDestination)]);
    assert_eq!(a.counters().drops.get(DropReason::NoDestination), 1);

    let mut got = Actions::new();
    // An identifier B has no mapping for.
    let mut wire = tcp("fd10::1", "fd10::99");
    translate_egress(&mut wire, upper64(v6("fd00:b::")), VNI).unwrap();
    b.from_ila(&wire, &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    // Not this host's locator.
    let mut wire = tcp("fd10::1", "fd10::2");
    translate_egress(&mut wire, upper64(v6("fd00:c::")), VNI).unwrap();
    b.from_ila(&wire, &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    // Not IPv6 at all, or cut short.
    b.from_ila(&[0x45, 0, 0, 20], &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::MalformedTunnel)]);
    b.from_ila(&wire[..30], &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::MalformedTunnel)]);
    let c = b.counters().drops;
    assert_eq!(c.get(DropReason::NoDestination), 2);
    assert_eq!(c.get(DropReason::MalformedTunnel), 2);
    // A host without a locator takes no ILA traffic.
    b.set_ila_locator(None);
    b.from_ila(&wire, &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::NoDestination)]);
}

#[test]
fn ila_mappings_have_ipv6_remotes_and_only_on_l3_networks() {
    let mut a = host("fd00:a::");
    // An IPv4 prefix maps IPv4 tenants (l3::ila4; tests/ila4.rs).
    assert_eq!(a.route_add(VNI, ip("10.0.0.0"), 8, ip("fd00:b::1")), Ok(()));
    assert!(matches!(
        a.route_add(VNI, ip("fd10::5"), 128, ip("192.0.2.1")),
        Err(TableError::InvalidRemote(_))
    ));
    a.add_network(NetworkSpec::new(nvo_pipeline::Vni(200)))
        .unwrap();
    assert!(matches!(
        a.set_ila(nvo_pipeline::Vni(200)),
        Err(TableError::NotL3(_))
    ));
    // IPv4 from a container of an ILA network: the profile does not carry it.
    let mut f = framed(
        GW,
        C1,
        &[
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ],
    );
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let mut got = Actions::new();
    a.from_port(P1, &f, Instant::now(), &mut got);
    assert_eq!(got.as_slice(), [Action::Drop(DropReason::ProfileMismatch)]);
}

/// No static mapping: the EVPN MAC+IP route of fd10::7 (IP → MAC, MAC → VTEP) names the
/// locator — the /64 of its next hop — and when the route moves, so do the packets. The
/// receiving host, which has no mapping either, translates back with the SIR prefix its own
/// container announced.
#[test]
fn evpn_routes_map_identifiers_and_moves_remap_them() {
    use nvo_pipeline::EvpnChange;
    let mac7 = Mac([0x02, 0, 0, 0, 0, 7]);
    let (mut a, mut c) = (host("fd00:a::"), host("fd00:c::"));
    let route = |remote: &str| {
        [
            EvpnChange::NeighSet {
                vni: VNI,
                ip: ip("fd10::7"),
                mac: mac7,
            },
            EvpnChange::FdbSet {
                vni: VNI,
                mac: mac7,
                remote: ip(remote),
            },
        ]
    };
    let original = tcp("fd10::1", "fd10::7");
    assert_eq!(
        send(&mut a, P1, C1, &original),
        [Action::Drop(DropReason::NoDestination)]
    );
    a.evpn_apply(&route("fd00:b::1"));
    let to_b = upper64(v6("fd00:b::"));
    assert!(matches!(
        send(&mut a, P1, C1, &original)[..],
        [Action::SendIla { locator, .. }] if locator == to_b
    ));
    // fd10::7 moves to host C: its route now has C's next hop.
    a.evpn_apply(&route("fd00:c::1"));
    let to_c = upper64(v6("fd00:c::"));
    let actions = send(&mut a, P1, C1, &original);
    let [Action::SendIla { locator, vni, .. }] = actions[..] else {
        panic!("{actions:?}")
    };
    assert_eq!(locator, to_c);
    // C has no mapping for fd10::7: its container announced itself, which gives the prefix.
    send(&mut c, P2, mac7, &udp("fd10::7", "fd10::1"));
    let mut wire = original.clone();
    translate_egress(&mut wire, locator, vni).unwrap();
    let mut got = Actions::new();
    c.from_ila(&wire, &mut got);
    let [Action::Reply { port: P2, len }] = got.as_slice() else {
        panic!("{:?}", got.as_slice())
    };
    assert_eq!(c.scratch()[14..*len], original[..]);
    // The route withdrawn: nowhere to send.
    a.evpn_apply(&[EvpnChange::NeighRemove {
        vni: VNI,
        ip: ip("fd10::7"),
    }]);
    assert_eq!(
        send(&mut a, P1, C1, &original),
        [Action::Drop(DropReason::NoDestination)]
    );
}

/// What the EVPN speaker advertises of an ILA network (docs/ila.md, "Mappings"): the
/// neighbours its containers announced, one host per MAC with its addresses (link-local ones
/// left out); every change of that set moves the generation the speaker polls; a MAC whose
/// EVPN route from another host won (it moved) and a removed port's hosts are no longer local
/// (their routes are withdrawn).
#[test]
fn ila_neighbours_are_local_hosts_for_evpn() {
    let mut p = host("fd00:a::");
    let g0 = p.hosts_generation();
    assert!(p.local_hosts().hosts.is_empty());
    send(&mut p, P2, C2, &udp("fd10::2", "fd10::1"));
    let g1 = p.hosts_generation();
    assert!(g1 > g0);
    // The same packet again changes nothing: the poller is not woken for it.
    send(&mut p, P2, C2, &udp("fd10::2", "fd10::1"));
    assert_eq!(p.hosts_generation(), g1);
    assert_eq!(p.local_hosts_since(g1), None);
    send(&mut p, P2, C2, &udp("fe80::2", "fd10::1"));
    send(&mut p, P2, C2, &udp("fd10::22", "fd10::1"));
    let hosts = p.local_hosts().hosts;
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!((hosts[0].vni, hosts[0].mac, hosts[0].port), (VNI, C2, P2));
    assert_eq!(hosts[0].ips, [ip("fd10::2"), ip("fd10::22")]);
    // A host that spoke from its link-local address only maps no SIR address: not a host.
    send(&mut p, P1, C3, &udp("fe80::3", "fd10::1"));
    assert_eq!(p.local_hosts().hosts.len(), 1);
    // C2's route from another host won (it moved there): its addresses are no longer local.
    send(&mut p, P1, C1, &udp("fd10::1", "fd10::2"));
    let g = p.hosts_generation();
    p.evpn_apply(&[nvo_pipeline::EvpnChange::FdbSet {
        vni: VNI,
        mac: C2,
        remote: ip("fd00:b::1"),
    }]);
    assert!(p.hosts_generation() > g);
    let hosts = p.local_hosts().hosts;
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!(hosts[0].mac, C1);
    let g2 = p.hosts_generation();
    p.remove_port(P1).unwrap();
    assert!(p.hosts_generation() > g2);
    assert!(p.local_hosts().hosts.is_empty());
}
