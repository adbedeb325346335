//! Differential tests for issue 15 (items 0 and 4): the kernel programs and the pipeline agree
//! packet for packet, and afterwards on the FDB and the counters, on tunnel packets from
//! unknown remotes (`unknown_remote`), sticky local MACs (`learn_local_conflict`) and the
//! per-port and per-remote learning bounds (`learn_limit*`). Needs root, as the rest of the
//! suite.
//!
//! ```text
//!   ports p1..p3 ── [ nvo_port | nvo_underlay on ul0 10.9.0.1 ] ── ul1 (R2 10.9.0.2 listed,
//!                                                                  R3 10.9.0.3 not)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_pipeline::{AcceptRemotes, DropReason, NetworkSpec, Vni};

const C1: [u8; 6] = [2, 0, 0, 0, 0, 1];
const C2: [u8; 6] = [2, 0, 0, 0, 0, 2];
const FAR: [u8; 6] = [2, 0, 0, 0, 0, 0x99];
const BCAST: [u8; 6] = [0xff; 6];

fn random(i: u8) -> [u8; 6] {
    [2, 0x77, 0, 0, 0, i]
}

/// The same verdict, drop reason and copies from both, the kernel's own (not handed to nvod);
/// returns the drop.
fn same(what: &str, (kernel, reference): (Result, Result)) -> Option<u16> {
    assert!(!kernel.punted, "{what}: handed to nvod");
    assert_eq!(
        kernel.drop, reference.drop,
        "{what}: drop reason (kernel vs pipeline)"
    );
    assert_eq!(
        kernel.outs, reference.outs,
        "{what}: copies (kernel, then pipeline)"
    );
    reference.drop
}

/// Whether the underlay program left no packet to nvod's socket.
fn all_in_kernel(fx: &Fixture) {
    assert_eq!(
        fx.mirror.node_counters().passed,
        0,
        "packets passed to nvod"
    );
}

fn agree(fx: &Fixture, vni: u32) {
    let (m, r) = fx.fdb(vni);
    assert_eq!(
        m, r,
        "FDB of {vni}: kernel path's (mirrored) vs the pipeline's"
    );
    let (m, r) = fx.counters();
    assert_eq!(m.drops, r.drops, "drop counters");
    assert_eq!(m.networks, r.networks, "network counters");
    for (port, rc) in &r.ports {
        let mc = m.ports.get(port).copied().unwrap_or_default();
        assert_eq!(
            (mc.rx_frames, mc.drops, mc.learn_limit),
            (rc.rx_frames, rc.drops, rc.learn_limit),
            "port {port} counters"
        );
    }
}

#[test]
fn a_stranger_is_dropped_as_unknown_remote_and_learns_nothing() {
    let mut fx = Fixture::new("zv1");
    fx.network(100, "vxlan", &[R2], &[1, 2], &[]);
    // C1 speaks on port 1; FAR is behind R2.
    same("C1 out", fx.port_frame(1, &udp_frame(BCAST, C1, 1, 2, 60)));
    let p = tunnel_packet(
        &mut fx.ref_engine,
        R2,
        "vxlan",
        100,
        &udp_frame(BCAST, FAR, 1, 2, 60),
    );
    assert_eq!(same("FAR in from R2", fx.tunnel_packet_in(&p)), None);
    // R3 is in no list: it claims FAR and C1, to port 1 and flooded.
    for (dst, src) in [(C1, FAR), (BCAST, FAR), (C2, C1), (BCAST, C2)] {
        let f = udp_frame(dst, src, 3, 4, 60);
        let p = tunnel_packet(&mut fx.ref_engine, R3, "vxlan", 100, &f);
        assert_eq!(
            same("from the stranger", fx.tunnel_packet_in(&p)),
            Some(DropReason::UnknownRemote.code())
        );
    }
    agree(&fx, 100);
    all_in_kernel(&fx);
    let (m, _) = fx.counters();
    assert_eq!(m.drops.get(DropReason::UnknownRemote), 4);
    // A static entry makes R3 known; removing it forgets it again.
    fx.static_remote(100, [2, 0, 0, 0, 0, 0x33], R3);
    let p = tunnel_packet(
        &mut fx.ref_engine,
        R3,
        "vxlan",
        100,
        &udp_frame(BCAST, C2, 3, 4, 60),
    );
    assert_eq!(same("R3 pinned", fx.tunnel_packet_in(&p)), None);
    fx.both(|p, _| {
        p.fdb_remove(Vni(100), nvo_pipeline::Mac([2, 0, 0, 0, 0, 0x33]))
            .unwrap()
    });
    let p = tunnel_packet(
        &mut fx.ref_engine,
        R3,
        "vxlan",
        100,
        &udp_frame(BCAST, C2, 3, 4, 60),
    );
    assert_eq!(
        same("R3 forgotten", fx.tunnel_packet_in(&p)),
        Some(DropReason::UnknownRemote.code())
    );
    agree(&fx, 100);
}

#[test]
fn a_local_mac_stays_on_its_port() {
    let mut fx = Fixture::new("zv2");
    fx.network(100, "vxlan", &[R2], &[1, 2], &[]);
    same("C1 out", fx.port_frame(1, &udp_frame(BCAST, C1, 1, 2, 60)));
    // R2, a known remote, claims C1: delivered to port 2 as a flood, C1 stays on port 1.
    let p = tunnel_packet(
        &mut fx.ref_engine,
        R2,
        "vxlan",
        100,
        &udp_frame(C2, C1, 1, 2, 60),
    );
    same("C1 claimed from R2", fx.tunnel_packet_in(&p));
    same("to C1", fx.port_frame(2, &udp_frame(C1, C2, 1, 2, 60)));
    agree(&fx, 100);
    all_in_kernel(&fx);
    let (m, _) = fx.counters();
    assert_eq!(m.networks[&Vni(100)].learn_local_conflict, 1);
    assert_eq!(m.networks[&Vni(100)].moves, 0);
}

#[test]
fn learning_is_bounded_per_port_and_per_remote() {
    let mut fx = Fixture::new("zv3");
    let mut spec = NetworkSpec::new(Vni(100));
    spec.max_learned = 16;
    spec.max_learned_per_port = Some(4);
    spec.max_learned_per_remote = Some(3);
    fx.network_spec(spec, "vxlan", &[R2], &[1, 2], &[]);
    for i in 0..10 {
        same(
            "flood from port 1",
            fx.port_frame(1, &udp_frame(BCAST, random(i), 1, 2, 60)),
        );
        let f = udp_frame(BCAST, random(100 + i), 1, 2, 60);
        let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", 100, &f);
        same("flood from R2", fx.tunnel_packet_in(&p));
    }
    // A new host on port 2 is learned at once; a MAC does not move onto the full port 1.
    same("C2 out", fx.port_frame(2, &udp_frame(BCAST, C2, 1, 2, 60)));
    same(
        "C2 on port 1",
        fx.port_frame(1, &udp_frame(BCAST, C2, 1, 2, 60)),
    );
    same(
        "to C2",
        fx.port_frame(1, &udp_frame(C2, random(0), 1, 2, 60)),
    );
    agree(&fx, 100);
    all_in_kernel(&fx);
    let (m, r) = fx.counters();
    let n = r.networks[&Vni(100)];
    assert_eq!((n.learn_limit_port, n.learn_limit_remote), (7, 7));
    assert_eq!(m.ports[&nvo_pipeline::PortId(1)].learn_limit, 7);
    assert_eq!(fx.reference.network(Vni(100)).unwrap().learned, 8);
}

#[test]
fn a_network_open_to_any_remote_learns_new_remotes_through_nvod() {
    let mut fx = Fixture::new("zv4");
    let mut spec = NetworkSpec::new(Vni(100));
    spec.accept_remotes = Some(AcceptRemotes::Any);
    spec.max_learned_per_remote = Some(2);
    fx.network_spec(spec, "vxlan", &[], &[1, 2], &[]);
    for i in 0..4 {
        for r in [R3, R4] {
            let f = udp_frame(BCAST, random(i + if r == R3 { 0 } else { 50 }), 1, 2, 60);
            let p = tunnel_packet(&mut fx.ref_engine, r, "vxlan", 100, &f);
            assert_eq!(same("from anyone", fx.tunnel_packet_in(&p)), None);
        }
    }
    agree(&fx, 100);
    let (m, _) = fx.counters();
    assert_eq!(m.networks[&Vni(100)].learn_limit_remote, 4);
    assert!(
        fx.mirror.node_counters().passed >= 2,
        "first packets went to nvod"
    );
}
