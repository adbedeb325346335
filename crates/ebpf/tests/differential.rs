//! Differential tests: the same frames through the kernel programs (BPF_PROG_RUN) and through
//! the userspace pipeline give the same bytes out, in the same order, the same verdicts and the
//! same drop reasons; and afterwards the same FDB and counters (see tests/common for the
//! fixture). Needs root (BPF, namespaces), as the rest of the suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_ebpf::layout;
use proptest::prelude::*;

const C1: [u8; 6] = [2, 0, 0, 0, 0, 1];
const C2: [u8; 6] = [2, 0, 0, 0, 0, 2];
const FAR: [u8; 6] = [2, 0, 0, 0, 0, 0x99];
const FAR2: [u8; 6] = [2, 0, 0, 0, 0, 0x98];
const BCAST: [u8; 6] = [0xff; 6];

fn same(what: &str, (kernel, reference): (Result, Result)) {
    if kernel.punted {
        // Handed to nvod, which ran the pipeline on it: nothing for the kernel to match.
        return;
    }
    assert!(
        !reference.punted,
        "{what}: the pipeline answers this frame itself (ARP/ND, ICMP) but the kernel did not hand it over: {kernel:?}"
    );
    assert_eq!(
        kernel.drop, reference.drop,
        "{what}: drop reason (kernel vs pipeline)"
    );
    assert_eq!(
        kernel.outs.len(),
        reference.outs.len(),
        "{what}: copies sent\nkernel: {:?}\npipeline: {:?}",
        kernel.outs,
        reference.outs
    );
    for (i, (k, r)) in kernel.outs.iter().zip(&reference.outs).enumerate() {
        assert_eq!(k, r, "{what}: copy {i} differs (kernel, then pipeline)");
    }
}

fn agree(fx: &Fixture, vnis: &[u32]) {
    for &vni in vnis {
        let (m, r) = fx.fdb(vni);
        assert_eq!(
            m, r,
            "FDB of {vni}: kernel path's (mirrored) vs the pipeline's"
        );
    }
    let (m, r) = fx.counters();
    assert_eq!(m.drops, r.drops, "drop counters");
    assert_eq!(m.networks, r.networks, "network counters");
    for (port, rc) in &r.ports {
        let mc = m.ports.get(port).copied().unwrap_or_default();
        assert_eq!(
            (mc.rx_frames, mc.rx_bytes, mc.drops),
            (rc.rx_frames, rc.rx_bytes, rc.drops),
            "port {port} rx counters"
        );
    }
    assert_eq!(
        (m.underlay.rx_packets, m.underlay.rx_bytes),
        (r.underlay.rx_packets, r.underlay.rx_bytes),
        "underlay rx counters"
    );
}

#[test]
fn programs_pass_the_verifier_and_attach() {
    let fx = Fixture::new("dv");
    assert!(fx
        .mirror
        .kernel()
        .attached(nvo_io::iface::interface("ul0").unwrap().ifindex));
}

#[test]
fn vxlan_port_side_unicast_flood_local_and_drops() {
    let mut fx = Fixture::new("d1");
    fx.network(100, "vxlan", &[R2, R3], &[1, 2], &[]);
    // Broadcast: the other port, then both flood remotes.
    let f = udp_frame(BCAST, C1, 1000, 53, 40);
    same("broadcast", fx.port_frame(1, &f));
    // Unknown unicast floods likewise; C1 is now learned on port 1.
    let f = udp_frame(FAR, C2, 2000, 80, 100);
    same("unknown unicast from port 2", fx.port_frame(2, &f));
    // Known: C1 is on port 1.
    let f = udp_frame(C1, C2, 2000, 80, 100);
    same("to a local port", fx.port_frame(2, &f));
    // Hairpin: C1 sends to itself.
    let f = udp_frame(C1, C1, 1, 2, 10);
    same("hairpin", fx.port_frame(1, &f));
    // Remote unicast through a static entry; IPv6 TCP too.
    fx.static_remote(100, FAR, R3);
    for sport in [1u16, 2, 3, 40000] {
        let f = udp_frame(FAR, C1, sport, 80, 64);
        same("to a remote", fx.port_frame(1, &f));
        let f = tcp6_frame(FAR, C1, sport);
        same("IPv6 to a remote", fx.port_frame(1, &f));
    }
    // Bad sources and short frames.
    let f = udp_frame(C2, BCAST, 1, 2, 10);
    same("broadcast source", fx.port_frame(1, &f));
    // A minimum-size frame claiming IPv4 with a header that is not one (IHL 3, total length
    // beyond the frame): hashed on its MACs alone by both.
    let mut bogus = FAR.to_vec();
    bogus.extend_from_slice(&C1);
    bogus.extend_from_slice(&[0x08, 0x00, 0x43, 0, 0xff, 0xff]);
    bogus.resize(60, 0);
    same("bogus IPv4 header", fx.port_frame(1, &bogus));
    // ARP goes to nvod (snooping, suppression) — and gets the same treatment there.
    let f = arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 2]);
    let (k, _) = fx.port_frame(1, &f);
    assert!(k.punted, "ARP must be handed to nvod");
    // Too big for the MTU: nvod answers with ICMP.
    let f = udp_frame(FAR, C1, 1, 2, 1500);
    let (k, _) = fx.port_frame(1, &f);
    assert!(k.punted, "an oversized frame must be handed to nvod");
    agree(&fx, &[100]);
}

#[test]
fn arp_suppression_answers_in_the_kernel_as_the_pipeline_does() {
    let mut fx = Fixture::new("da");
    fx.network(100, "vxlan", &[R2], &[1, 2, 3], &[]);
    fx.network(101, "vxlan", &[R2], &[4, 5], &[]);
    let vni = nvo_pipeline::Vni(100);
    fx.both(|p, _| p.set_arp_suppression(vni, true).unwrap());
    // C2 on port 2 asks for an address nobody knows: handed over; the pipeline snoops C2.
    let (k, _) = fx.port_frame(2, &arp_request(C2, [10, 0, 0, 2], [10, 0, 0, 9]));
    assert!(k.punted, "an unknown target is nvod's");
    // C1 asks for C2's address: the kernel answers from its copy of the table.
    let r = fx.port_frame(1, &arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 2]));
    assert!(!r.0.punted && r.1.replied, "answered in the kernel: {r:?}");
    same("ARP answered", r);
    // C2 asks for C1's, which the pipeline snooped from the answered request.
    let r = fx.port_frame(2, &arp_request(C2, [10, 0, 0, 2], [10, 0, 0, 1]));
    assert!(
        !r.0.punted,
        "C1 was snooped from the request the kernel answered"
    );
    same("ARP answered from a snooped request", r);
    // A static host's address behind port 3.
    let mac3 = nvo_pipeline::Mac([2, 0, 0, 0, 0, 3]);
    let ip3: std::net::IpAddr = "10.0.0.3".parse().unwrap();
    fx.both(|p, _| {
        p.fdb_add_static_host(vni, mac3, nvo_pipeline::PortId(3), &[ip3])
            .unwrap()
    });
    same(
        "ARP for a static host",
        fx.port_frame(1, &arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 3])),
    );
    // Not answered: asked from behind the target's own port, gratuitous, a probe.
    for (what, port, frame) in [
        (
            "same port",
            2,
            arp_request(FAR, [10, 0, 0, 7], [10, 0, 0, 2]),
        ),
        (
            "gratuitous",
            1,
            arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 1]),
        ),
        ("probe", 1, arp_request(C1, [0, 0, 0, 0], [10, 0, 0, 2])),
    ] {
        let (k, _) = fx.port_frame(port, &frame);
        assert!(k.punted, "{what}: must be nvod's");
    }
    // A network that does not suppress hands every request over.
    let (k, _) = fx.port_frame(4, &arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 2]));
    assert!(k.punted, "no suppression in 101");
    // Suppression switched off: the kernel stops answering at the next sync.
    fx.both(|p, _| p.set_arp_suppression(vni, false).unwrap());
    let (k, _) = fx.port_frame(1, &arp_request(C1, [10, 0, 0, 1], [10, 0, 0, 2]));
    assert!(k.punted, "suppression off");
    agree(&fx, &[100, 101]);
}

#[test]
fn every_kernel_profile_encapsulates_like_the_engine() {
    let mut fx = Fixture::new("d2");
    let spec: nvo_encap::spec::ProfileSpec = serde_json::from_str(
        r#"{"name": "mytun", "udp_port": 7777, "template": "4e56 0000 0000 0000 0000",
            "vni": {"offset": 4, "len": 3}, "entropy": {"offset": 8, "len": 2},
            "matches": [{"offset": 0, "mask": "ffff", "value": "4e56"}]}"#,
    )
    .unwrap();
    let user = spec.to_profile().unwrap();
    fx.both(|_, e| {
        e.add_profile(user.clone()).unwrap();
    });
    type Case<'a> = (u32, &'a str, &'a [(&'a str, u64)]);
    let cases: [Case<'_>; 7] = [
        (100, "vxlan", &[]),
        (101, "vxlan-gbp", &[("group", 0x1234)]),
        (102, "vxlan-gpe", &[]),
        (103, "geneve", &[]),
        (104, "nvgre", &[]),
        (105, "overlay", &[]),
        (106, "mytun", &[]),
    ];
    for (i, (vni, profile, params)) in cases.iter().enumerate() {
        let port = i as u32 + 1;
        fx.network(*vni, profile, &[R2, R4], &[port], params);
        for sport in [7u16, 99, 4242] {
            let f = udp_frame(BCAST, C1, sport, 53, 80);
            same(&format!("{profile}: flood"), fx.port_frame(port, &f));
        }
        fx.static_remote(*vni, FAR, R4);
        let f = udp_frame(FAR, C1, 5, 6, 300);
        same(&format!("{profile}: unicast"), fx.port_frame(port, &f));
    }
    agree(&fx, &[100, 101, 102, 103, 104, 105, 106]);
}

#[test]
fn multicast_bum_goes_once_to_the_group() {
    let mut fx = Fixture::new("d3");
    fx.network(200, "vxlan", &[], &[1, 2], &[]);
    fx.both(|p, _| {
        // Recreate as a multicast network: remove, add with the group.
        p.remove_port(nvo_pipeline::PortId(1)).unwrap();
        p.remove_port(nvo_pipeline::PortId(2)).unwrap();
        p.remove_network(nvo_pipeline::Vni(200)).unwrap();
        let mut spec = nvo_pipeline::NetworkSpec::new(nvo_pipeline::Vni(200));
        spec.bum = nvo_pipeline::BumMode::Multicast(std::net::IpAddr::V4(GROUP));
        p.add_network(spec).unwrap();
        p.add_port(nvo_pipeline::PortId(1), nvo_pipeline::Vni(200))
            .unwrap();
        p.add_port(nvo_pipeline::PortId(2), nvo_pipeline::Vni(200))
            .unwrap();
    });
    let f = udp_frame(BCAST, C1, 1, 2, 30);
    same("flood to a group", fx.port_frame(1, &f));
    agree(&fx, &[200]);
}

#[test]
fn underlay_decapsulates_learns_and_drops_like_the_pipeline() {
    let mut fx = Fixture::new("d4");
    fx.network(100, "vxlan", &[R2], &[1, 2], &[]);
    fx.network(103, "geneve", &[R2], &[3], &[]);
    fx.network(104, "nvgre", &[R2], &[4], &[]);
    // A broadcast from a remote floods to the ports and teaches FAR behind R2.
    let f = udp_frame(BCAST, FAR, 1, 2, 60);
    let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", 100, &f);
    same("vxlan broadcast in", fx.tunnel_packet_in(&p));
    // C1 speaks, then the remote answers it: one copy to port 1.
    let f = udp_frame(FAR, C1, 3, 4, 60);
    same("C1 to FAR", fx.port_frame(1, &f));
    let f = udp_frame(C1, FAR, 4, 3, 60);
    let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", 100, &f);
    same("vxlan unicast in", fx.tunnel_packet_in(&p));
    // Frames to a remote MAC from a remote: split horizon.
    let f = udp_frame(FAR, FAR2, 4, 3, 60);
    let p = tunnel_packet(&mut fx.ref_engine, R3, "vxlan", 100, &f);
    same("remote to remote", fx.tunnel_packet_in(&p));
    for (vni, profile) in [(103, "geneve"), (104, "nvgre")] {
        let f = udp_frame(BCAST, FAR2, 9, 9, 70);
        let p = tunnel_packet(&mut fx.ref_engine, R2, profile, vni, &f);
        same(&format!("{profile} in"), fx.tunnel_packet_in(&p));
    }
    // Malformed and unknown.
    let f = udp_frame(BCAST, FAR, 1, 2, 60);
    let vxlan = nvo_encap::profile::Transport::Udp(4789);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "unknown vni",
            raw_tunnel_packet(R2, vxlan, &[8, 0, 0, 0, 0, 0, 77, 0], &f),
        ),
        (
            "I flag clear",
            raw_tunnel_packet(R2, vxlan, &[0, 0, 0, 0, 0, 0, 100, 0], &f),
        ),
        (
            "truncated vxlan",
            raw_tunnel_packet(R2, vxlan, &[8, 0, 0], &[]),
        ),
        (
            "short inner frame",
            raw_tunnel_packet(R2, vxlan, &[8, 0, 0, 0, 0, 0, 100, 0], &f[..10]),
        ),
        (
            "multicast source",
            raw_tunnel_packet(
                R2,
                vxlan,
                &[8, 0, 0, 0, 0, 0, 100, 0],
                &udp_frame(C1, BCAST, 1, 1, 50),
            ),
        ),
        (
            "geneve critical option",
            raw_tunnel_packet(
                R2,
                nvo_encap::profile::Transport::Udp(6081),
                &[0x01, 0x40, 0x65, 0x58, 0, 0, 103, 0, 0, 1, 0x80, 0],
                &f,
            ),
        ),
    ];
    for (what, p) in cases {
        same(what, fx.tunnel_packet_in(&p));
    }
    agree(&fx, &[100, 103, 104]);
}

/// One network with port learning only, one with tunnel learning only: the kernel learns (and
/// reports) what the pipeline learns, and the frames that follow go the same way.
#[test]
fn port_and_tunnel_learning_are_separate_settings() {
    let mut fx = Fixture::new("lsp9");
    let ports_only = nvo_pipeline::NetworkSpec {
        learn_tunnels: false,
        ..nvo_pipeline::NetworkSpec::new(nvo_pipeline::Vni(100))
    };
    let tunnels_only = nvo_pipeline::NetworkSpec {
        learn_ports: false,
        ..nvo_pipeline::NetworkSpec::new(nvo_pipeline::Vni(101))
    };
    fx.network_spec(ports_only, "vxlan", &[R2], &[1, 2], &[]);
    fx.network_spec(tunnels_only, "vxlan", &[R2], &[3, 4], &[]);
    for (vni, first, second) in [(100, 1, 2), (101, 3, 4)] {
        // C1 speaks on a port, FAR from the remote; then frames to each of them: known
        // destinations go one way, unlearned ones flood.
        let f = udp_frame(BCAST, C1, 1, 2, 60);
        same(&format!("{vni}: C1 broadcast"), fx.port_frame(first, &f));
        let f = udp_frame(BCAST, FAR, 1, 2, 60);
        let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", vni, &f);
        same(&format!("{vni}: FAR broadcast in"), fx.tunnel_packet_in(&p));
        let f = udp_frame(FAR, C2, 3, 4, 60);
        same(&format!("{vni}: C2 to FAR"), fx.port_frame(second, &f));
        let f = udp_frame(C1, FAR, 4, 3, 60);
        let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", vni, &f);
        same(&format!("{vni}: FAR to C1"), fx.tunnel_packet_in(&p));
    }
    agree(&fx, &[100, 101]);
    // 100 learned its ports' MACs only, 101 its tunnel's only.
    let port = |n| nvo_pipeline::FdbDest::Port(nvo_pipeline::PortId(n));
    let remote = nvo_pipeline::FdbDest::Remote(R2.into());
    for (vni, want) in [
        (100, vec![(C1, port(1)), (C2, port(2))]),
        (101, vec![(FAR, remote)]),
    ] {
        let (kernel, _) = fx.fdb(vni);
        let mut got: Vec<_> = kernel.iter().map(|e| (e.mac.0, e.dest)).collect();
        got.sort_by_key(|&(mac, _)| mac);
        assert_eq!(got, want, "{vni}: {kernel:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Random traffic — MACs from a small set so entries are learned, hit, moved — through
    /// both paths: every frame the same, and the tables the same at the end.
    #[test]
    fn random_traffic_agrees(frames in prop::collection::vec(
        (0usize..4, 0usize..6, 0usize..6, any::<u16>(), 0usize..200, any::<bool>()), 1..40)) {
        let mut fx = Fixture::new("dp");
        fx.network(100, "vxlan", &[R2, R3], &[1, 2, 3], &[]);
        let macs = [C1, C2, FAR, FAR2, BCAST, [1, 0, 0x5e, 0, 0, 1]];
        for (src_at, d, s, port, len, ipv6) in frames {
            let (dst, src) = (macs[d], macs[s]);
            let f = if ipv6 { tcp6_frame(dst, src, port) } else { udp_frame(dst, src, port, 53, len) };
            if src_at < 3 {
                let r = fx.port_frame(src_at as u32 + 1, &f);
                same("random from a port", r);
            } else {
                let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", 100, &f);
                let r = fx.tunnel_packet_in(&p);
                same("random from the underlay", r);
            }
        }
        agree(&fx, &[100]);
    }

    /// Random bytes in a VXLAN or Geneve header: the same verdict and drop reason.
    #[test]
    fn random_headers_agree(header in prop::collection::vec(any::<u8>(), 0..24), geneve in any::<bool>()) {
        let mut fx = Fixture::new("dh");
        fx.network(100, "vxlan", &[R2], &[1], &[]);
        fx.network(103, "geneve", &[R2], &[2], &[]);
        let f = udp_frame(BCAST, FAR, 1, 2, 60);
        let port = if geneve { 6081 } else { 4789 };
        let p = raw_tunnel_packet(R2, nvo_encap::profile::Transport::Udp(port), &header, &f);
        let r = fx.tunnel_packet_in(&p);
        same("random header", r);
        agree(&fx, &[100, 103]);
    }
}

#[test]
fn drop_codes_reach_the_counters_under_the_pipelines_names() {
    let mut fx = Fixture::new("d5");
    fx.network(100, "vxlan", &[], &[1], &[]);
    // Nowhere to go: one port, no flood list.
    let f = udp_frame(BCAST, C1, 1, 2, 30);
    let (k, r) = fx.port_frame(1, &f);
    assert_eq!(k.drop, Some(nvo_pipeline::DropReason::NoDestination.code()));
    assert_eq!(r.drop, k.drop);
    let (m, _) = fx.counters();
    assert_eq!(m.drops.get(nvo_pipeline::DropReason::NoDestination), 1);
    assert_eq!(fx.mirror.node_counters().punted, 0);
    let _ = layout::VERDICT_DROP;
}
