//! Whatever bytes arrive, the pipeline answers with actions and never panics: random frames from
//! a port (including oversized ones that reach the ICMP builders with garbage IP headers) and
//! random VXLAN payloads from the underlay, and the same for an L3 network (frames to its
//! gateway, ARP and ND; IP packets of either family out of its tunnel). Every outcome is either forwarding or exactly one
//! counted drop, and a `Reply` always fits the scratch buffer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Instant;

use common::*;
use nvo_pipeline::{
    Action, Actions, Decapsulated, Limits, Mac, NetworkSpec, Pipeline, ProfileTag, Vni,
};
use proptest::prelude::*;

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    // A small MTU so that many random frames take the too-big path.
    p.add_network(NetworkSpec {
        mtu: 68,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    p.flood_add(VNI, r1()).unwrap();
    p
}

const GW: Mac = Mac([0x02, 0x6e, 0x76, 0, 0, 100]);

fn l3_pipeline() -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        l3_gateway: Some(GW),
        profile: ProfileTag(2),
        max_learned: 8,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    p.route_add(VNI, "::".parse().unwrap(), 0, r1()).unwrap();
    p.route_add(VNI, "0.0.0.0".parse().unwrap(), 0, r1())
        .unwrap();
    p
}

/// A frame with a unicast source and an ethertype the pipeline looks into, then random bytes.
fn frame_bytes() -> impl Strategy<Value = Vec<u8>> {
    let ethertype = prop_oneof![
        Just([0x08u8, 0x00]),
        Just([0x86, 0xdd]),
        Just([0x81, 0x00]),
        any::<[u8; 2]>()
    ];
    (
        any::<[u8; 6]>(),
        ethertype,
        proptest::collection::vec(any::<u8>(), 0..1600),
    )
        .prop_map(|(dst, ethertype, rest)| {
            let mut f = dst.to_vec();
            f.extend_from_slice(&mac(0xa).0);
            f.extend_from_slice(&ethertype);
            if ethertype == [0x81, 0x00] {
                f.extend_from_slice(&[0x00, 0x05, 0x08, 0x00]);
            }
            f.extend_from_slice(&rest);
            f
        })
}

fn check(p: &Pipeline, a: &Actions) {
    let drops = a.iter().filter(|x| matches!(x, Action::Drop(_))).count();
    assert!(drops <= 1, "{a:?}");
    assert!(!a.is_empty());
    for action in a {
        if let Action::Reply { len, .. } = action {
            assert!(*len <= p.scratch().len());
        }
    }
}

proptest! {
    #[test]
    fn random_port_frames(frames in proptest::collection::vec(frame_bytes(), 1..20)) {
        let mut p = pipeline();
        let mut a = Actions::new();
        for f in &frames {
            p.from_port(P1, f, Instant::now(), &mut a);
            check(&p, &a);
            p.from_port(P1, &f[..f.len() / 2], Instant::now(), &mut a);
            check(&p, &a);
        }
        let c = p.counters();
        prop_assert_eq!(c.ports[&P1].rx_frames, 2 * frames.len() as u64);
    }

    #[test]
    fn random_underlay_payloads(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..20),
        vni in prop_oneof![Just(100u32), any::<u32>().prop_map(|v| v & Vni::MAX)],
    ) {
        let mut p = pipeline();
        let mut a = Actions::new();
        for bytes in &payloads {
            p.receive_vxlan(r1(), bytes, Instant::now(), &mut a);
            check(&p, &a);
            // The same bytes behind a valid VXLAN header, to reach the inner frame parsing.
            p.receive_vxlan(r1(), &vxlan(vni, None, bytes), Instant::now(), &mut a);
            check(&p, &a);
        }
        prop_assert_eq!(p.counters().underlay.rx_packets, 2 * payloads.len() as u64);
    }

    #[test]
    fn random_l3_frames_and_packets(
        frames in proptest::collection::vec(frame_bytes(), 1..20),
        to_gateway in any::<bool>(),
        version in prop_oneof![Just(4u8), Just(6u8)],
    ) {
        let mut p = l3_pipeline();
        let mut a = Actions::new();
        let d = Decapsulated {
            src: r1(),
            vni: VNI,
            profile: ProfileTag(2),
            dont_learn: false,
            src_node: None,
        };
        for f in &frames {
            let mut f = f.clone();
            if to_gateway {
                f[..6].copy_from_slice(&GW.0);
            }
            if let Some(b) = f.get_mut(14) {
                // An IP version nibble that agrees with the ethertype now and then.
                *b = (*b & 0x0f) | (version << 4);
            }
            p.from_port(P1, &f, Instant::now(), &mut a);
            check(&p, &a);
            p.from_decapsulated_ip(d, f.len(), (version, &f[14.min(f.len())..]), &mut a);
            check(&p, &a);
        }
        prop_assert!(p.network(VNI).unwrap().neighbours <= 8);
    }

    /// An ILA network: random frames from a port, and random packets from the TUN — most with
    /// this host's locator and nvo's identifier word (type 3, C, VNI 100) so that they reach the
    /// translation — never panic, give at most one counted drop and keep the tables bounded.
    #[test]
    fn random_ila_frames_and_packets(
        frames in proptest::collection::vec(frame_bytes(), 1..20),
        aimed in any::<bool>(),
    ) {
        let mut p = l3_pipeline();
        p.set_ila(VNI).unwrap();
        p.set_ila_locator(Some("fd00:a::".parse().unwrap()));
        p.route_add(VNI, "fd10::".parse().unwrap(), 64, "fd00:a::1".parse().unwrap()).unwrap();
        let mut a = Actions::new();
        for f in &frames {
            let mut f = f.clone();
            f[..6].copy_from_slice(&GW.0);
            if let Some(b) = f.get_mut(14) {
                *b = (*b & 0x0f) | 0x60;
            }
            p.from_port(P1, &f, Instant::now(), &mut a);
            check(&p, &a);
            let at = 14.min(f.len());
            let packet = &mut f[at..];
            if aimed && packet.len() >= 40 {
                packet[24..32].copy_from_slice(&[0xfd, 0, 0, 0x0a, 0, 0, 0, 0]);
                packet[32..36].copy_from_slice(&[0x70, 0, 0, 100]);
            }
            p.from_ila(packet, &mut a);
            check(&p, &a);
        }
        prop_assert!(p.network(VNI).unwrap().neighbours <= 8);
    }
}
