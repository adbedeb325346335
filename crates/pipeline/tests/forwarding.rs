//! Forwarding rules of the pipeline, one behaviour per test: flood and learn, split horizon,
//! hairpin, learning limits, ageing, moves, static entries, the GBP D bit, drops and counters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use nvo_pipeline::{
    Action, Actions, BumMode, DropReason, FdbDest, FlushScope, Limits, Mac, NetworkSpec, Origin,
    Pipeline, PortId, TxOutcome, TxTarget, Vni,
};

#[test]
fn flood_then_learn_then_unicast() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    let (ma, mb, mc) = (mac(0xa), mac(0xb), mac(0xc));

    // A → B, B unknown: every other port and every flood remote.
    p.from_port(P1, &frame(mb, ma), t, &mut a);
    assert_eq!(
        plain(&a),
        [deliver(P2), deliver(P3), encap(r1(), VNI), encap(r2(), VNI)]
    );
    // B answers from port 2: A was learned on port 1, so only port 1.
    p.from_port(P2, &frame(ma, mb), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    // A → B again: unicast to port 2.
    p.from_port(P1, &frame(mb, ma), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    // C, behind r1, talks to A: C is learned behind r1, the frame goes to port 1.
    p.receive_vxlan(r1(), &vxlan(100, None, &frame(ma, mc)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    // A → C: one VXLAN copy to r1.
    p.from_port(P1, &frame(mc, ma), t, &mut a);
    assert_eq!(plain(&a), [encap(r1(), VNI)]);

    let c = p.counters().networks[&VNI];
    assert_eq!(
        (c.learned, c.encap_unicast, c.encap_flood, c.delivered),
        (3, 1, 2, 5)
    );
    assert_eq!((c.rx_port_frames, c.rx_underlay_frames), (4, 1));
}

#[test]
fn underlay_frames_never_go_back_to_the_underlay() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    // Broadcast and unknown unicast from r1: local ports only.
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1), deliver(P2), deliver(P3)]);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(mac(0x99), mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1), deliver(P2), deliver(P3)]);
    // D is behind r2; r1 sending to D is not relayed.
    p.receive_vxlan(
        r2(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xd))),
        t,
        &mut a,
    );
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(mac(0xd), mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::RemoteToRemote)]);
    assert_eq!(p.counters().drops.get(DropReason::RemoteToRemote), 1);
    assert_eq!(p.counters().networks[&VNI].encap_flood, 0);
}

#[test]
fn frame_to_its_own_port_is_a_hairpin_drop() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.from_port(P1, &frame(mac(0xa), mac(0xb)), t, &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::Hairpin)]);
    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::Hairpin), 1);
    assert_eq!(c.ports[&P1].drops, 1);
    assert_eq!(c.ports[&P1].rx_frames, 2);
}

#[test]
fn learning_limit_stops_learning_in_that_network_only() {
    let mut p = Pipeline::new(Limits::default());
    for (vni, port) in [(Vni(1), PortId(1)), (Vni(2), PortId(2))] {
        p.add_network(NetworkSpec {
            max_learned: 2,
            ..NetworkSpec::new(vni)
        })
        .unwrap();
        p.add_port(port, vni).unwrap();
        p.flood_add(vni, r1()).unwrap();
    }
    let t = Instant::now();
    let mut a = Actions::new();
    for n in 1..=3 {
        p.from_port(PortId(1), &frame(Mac::BROADCAST, mac(n)), t, &mut a);
        // Still forwarded, learned or not.
        assert_eq!(plain(&a), [encap(r1(), Vni(1))]);
    }
    let learned: Vec<Mac> = p
        .fdb_entries(Vni(1), t)
        .unwrap()
        .iter()
        .map(|e| e.mac)
        .collect();
    assert_eq!(learned, [mac(1), mac(2)]);
    assert_eq!(p.counters().networks[&Vni(1)].learn_limit, 1);
    // A known MAC is still refreshed at the limit, without counting.
    p.from_port(PortId(1), &frame(Mac::BROADCAST, mac(2)), t, &mut a);
    assert_eq!(p.counters().networks[&Vni(1)].learn_limit, 1);
    // The other network is untouched.
    for n in 1..=2 {
        p.from_port(PortId(2), &frame(Mac::BROADCAST, mac(n)), t, &mut a);
    }
    assert_eq!(p.fdb_entries(Vni(2), t).unwrap().len(), 2);
    assert_eq!(p.counters().networks[&Vni(2)].learn_limit, 0);
}

#[test]
fn learned_entries_age_out_static_ones_stay() {
    let mut p = setup();
    let t0 = Instant::now();
    let mut a = Actions::new();
    p.fdb_add_static(VNI, mac(0xe), FdbDest::Remote(r2()))
        .unwrap();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t0, &mut a);
    p.from_port(P2, &frame(Mac::BROADCAST, mac(0xb)), t0, &mut a);
    // B is heard again later: its timer restarts.
    p.from_port(
        P2,
        &frame(Mac::BROADCAST, mac(0xb)),
        t0 + Duration::from_secs(200),
        &mut a,
    );

    assert_eq!(
        p.age(t0 + Duration::from_secs(300)),
        0,
        "exactly the ageing time is not idle longer"
    );
    let at = t0 + Duration::from_secs(301);
    let ages: Vec<_> = p
        .fdb_entries(VNI, at)
        .unwrap()
        .iter()
        .map(|e| (e.mac, e.age))
        .collect();
    assert_eq!(ages[0], (mac(0xa), Duration::from_secs(301)));
    assert_eq!(p.age(at), 1);
    let left: Vec<_> = p
        .fdb_entries(VNI, at)
        .unwrap()
        .iter()
        .map(|e| (e.mac, e.origin))
        .collect();
    assert_eq!(
        left,
        [(mac(0xb), Origin::Learned), (mac(0xe), Origin::Static)]
    );
    assert_eq!(p.age(t0 + Duration::from_secs(100_000)), 1);
    assert_eq!(p.fdb_entries(VNI, at).unwrap().len(), 1);
    assert_eq!(p.counters().networks[&VNI].aged, 2);
}

#[test]
fn a_mac_that_shows_up_elsewhere_moves() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.from_port(P2, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.from_port(P3, &frame(mac(0xa), mac(0xb)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xa))),
        t,
        &mut a,
    );
    // Local MACs are sticky: the tunnel's claim leaves the entry on port 2 (counted).
    p.from_port(P3, &frame(mac(0xa), mac(0xb)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    let c = p.counters().networks[&VNI];
    assert_eq!((c.learned, c.moves, c.learn_local_conflict), (2, 1, 1));
    // A MAC learned behind a remote moves to a port where it shows up.
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xc)), t, &mut a);
    p.from_port(P3, &frame(mac(0xc), mac(0xb)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    assert_eq!(p.counters().networks[&VNI].moves, 2);
}

#[test]
fn static_entries_win_over_learning() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    p.fdb_add_static(VNI, mac(0xa), FdbDest::Remote(r1()))
        .unwrap();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.receive_vxlan(
        r2(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xa))),
        t,
        &mut a,
    );
    p.from_port(P2, &frame(mac(0xa), mac(0xb)), t, &mut a);
    assert_eq!(plain(&a), [encap(r1(), VNI)]);
    let e = p.fdb_entries(VNI, t).unwrap();
    assert_eq!(
        (e[0].mac, e[0].dest, e[0].origin),
        (mac(0xa), FdbDest::Remote(r1()), Origin::Static)
    );
    assert_eq!(p.counters().networks[&VNI].moves, 0);
    // A static entry replaces a learned one.
    p.fdb_add_static(VNI, mac(0xb), FdbDest::Port(P3)).unwrap();
    assert_eq!(p.network(VNI).unwrap().learned, 0);
    assert_eq!(p.network(VNI).unwrap().static_entries, 2);
}

#[test]
fn gbp_dont_learn_bit_is_respected() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    p.receive_vxlan(
        r1(),
        &vxlan(100, Some(true), &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1), deliver(P2), deliver(P3)]);
    assert!(p.fdb_entries(VNI, t).unwrap().is_empty());
    p.receive_vxlan(
        r1(),
        &vxlan(100, Some(false), &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(
        p.fdb_entries(VNI, t).unwrap()[0].dest,
        FdbDest::Remote(r1())
    );
}

#[test]
fn a_network_without_learning_learns_nothing() {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        learn_ports: false,
        learn_tunnels: false,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    p.from_port(P2, &frame(mac(0xa), mac(0xb)), t, &mut a);
    assert_eq!(
        plain(&a),
        [deliver(P1)],
        "unknown unicast floods to the other port"
    );
    assert!(p.fdb_entries(VNI, t).unwrap().is_empty());
}

/// Network 100 with ports 1–3 and r1 in its flood list, learning from ports and from tunnels
/// as given: where it learned A (a frame from port 1) and C (a packet from r1).
fn learn_split(learn_ports: bool, learn_tunnels: bool) -> (Option<FdbDest>, Option<FdbDest>) {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        learn_ports,
        learn_tunnels,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    for port in [P1, P2, P3] {
        p.add_port(port, VNI).unwrap();
    }
    p.flood_add(VNI, r1()).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    let dest = |m| {
        p.fdb_entries(VNI, t)
            .unwrap()
            .iter()
            .find(|e| e.mac == m)
            .map(|e| e.dest)
    };
    (dest(mac(0xa)), dest(mac(0xc)))
}

#[test]
fn port_learning_without_tunnel_learning_learns_local_macs_only() {
    assert_eq!(learn_split(true, false), (Some(FdbDest::Port(P1)), None));
}

#[test]
fn tunnel_learning_without_port_learning_learns_remote_macs_only() {
    assert_eq!(
        learn_split(false, true),
        (None, Some(FdbDest::Remote(r1())))
    );
}

#[test]
fn both_learning_settings_on_learn_both() {
    assert_eq!(
        learn_split(true, true),
        (Some(FdbDest::Port(P1)), Some(FdbDest::Remote(r1())))
    );
}

#[test]
fn multicast_bum_mode_sends_one_copy_to_the_group() {
    let mut p = Pipeline::new(Limits::default());
    let group = ip("239.1.1.1");
    p.add_network(NetworkSpec {
        bum: BumMode::Multicast(group),
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.flood_add(VNI, r1()).unwrap(); // kept, but not used for BUM in this mode
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), Instant::now(), &mut a);
    assert_eq!(plain(&a), [encap(group, VNI)]);
    assert_eq!(p.counters().networks[&VNI].encap_flood, 1);
}

#[test]
fn flood_with_nowhere_to_go_is_no_destination() {
    let mut p = Pipeline::new(Limits::default());
    // No flood list: `any`, so that r1's frame gets as far as flooding.
    let mut spec = NetworkSpec::new(VNI);
    spec.accept_remotes = Some(nvo_pipeline::AcceptRemotes::Any);
    p.add_network(spec).unwrap();
    p.add_port(P1, VNI).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    p.remove_port(P1).unwrap();
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::NoDestination)]);
    assert_eq!(p.counters().drops.get(DropReason::NoDestination), 2);
}

#[test]
fn every_malformed_input_has_its_drop_reason() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    let check = |p: &mut Pipeline, a: &mut Actions, want: DropReason| {
        assert_eq!(a.as_slice(), [Action::Drop(want)]);
        assert!(p.counters().drops.get(want) >= 1);
    };
    let ok = frame(Mac::BROADCAST, mac(0xa));
    p.from_port(PortId(9), &ok, t, &mut a);
    check(&mut p, &mut a, DropReason::UnknownPort);
    p.from_port(P1, &ok[..13], t, &mut a);
    check(&mut p, &mut a, DropReason::MalformedFrame);
    let mut tagged_runt = ok[..12].to_vec();
    tagged_runt.extend_from_slice(&[0x81, 0x00, 0x00]);
    p.from_port(P1, &tagged_runt, t, &mut a);
    check(&mut p, &mut a, DropReason::MalformedFrame);
    for bad_src in [Mac::BROADCAST, Mac([0x01, 0, 0x5e, 0, 0, 1]), Mac::ZERO] {
        p.from_port(P1, &frame(mac(0xb), bad_src), t, &mut a);
        check(&mut p, &mut a, DropReason::InvalidSourceMac);
        p.receive_vxlan(
            r1(),
            &vxlan(100, None, &frame(mac(0xb), bad_src)),
            t,
            &mut a,
        );
        check(&mut p, &mut a, DropReason::InvalidSourceMac);
    }
    p.receive_vxlan(r1(), &vxlan(100, None, &ok)[..7], t, &mut a);
    check(&mut p, &mut a, DropReason::MalformedVxlan);
    let mut no_i = vxlan(100, None, &ok);
    no_i[0] = 0;
    p.receive_vxlan(r1(), &no_i, t, &mut a);
    check(&mut p, &mut a, DropReason::VxlanFlags);
    for vni in [0, 101, 0xff_ffff] {
        p.receive_vxlan(r1(), &vxlan(vni, None, &ok), t, &mut a);
        check(&mut p, &mut a, DropReason::UnknownVni);
    }
    p.receive_vxlan(r1(), &vxlan(100, None, &ok[..13]), t, &mut a);
    check(&mut p, &mut a, DropReason::MalformedFrame);
    // Nothing was learned from any of them, and the good frame still works.
    assert!(p.fdb_entries(VNI, t).unwrap().is_empty());
    p.from_port(P1, &ok, t, &mut a);
    assert_eq!(a.len(), 4);
    // Port 1's drops count only what came in on it.
    assert_eq!(p.counters().ports[&P1].drops, 5);
}

#[test]
fn removing_a_port_removes_its_fdb_entries_removing_a_flood_remote_does_not() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    p.fdb_add_static(VNI, mac(0xb), FdbDest::Port(P1)).unwrap();
    p.from_port(P2, &frame(Mac::BROADCAST, mac(0xc)), t, &mut a);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xd))),
        t,
        &mut a,
    );
    p.remove_port(P1).unwrap();
    let macs: Vec<Mac> = p
        .fdb_entries(VNI, t)
        .unwrap()
        .iter()
        .map(|e| e.mac)
        .collect();
    assert_eq!(macs, [mac(0xc), mac(0xd)]);
    p.flood_remove(VNI, r1()).unwrap();
    assert_eq!(p.fdb_entries(VNI, t).unwrap().len(), 2);
    assert_eq!(p.flood_list(VNI).unwrap(), [r2()]);
    // The removed port is gone from flooding and from the port table.
    p.from_port(P2, &frame(Mac::BROADCAST, mac(0xc)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P3), encap(r2(), VNI)]);
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    assert_eq!(a.dropped(), Some(DropReason::UnknownPort));
    assert_eq!(p.fdb_flush(VNI, FlushScope::All).unwrap(), 2);
}

#[test]
fn vlan_tagged_frames_get_four_more_bytes() {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        mtu: 1000,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.add_port(P2, VNI).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    let tagged = |len: usize| {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&mac(0xb).0);
        f[6..12].copy_from_slice(&mac(0xa).0);
        f[12..18].copy_from_slice(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x06]); // vlan 5, ARP-sized junk
        f
    };
    p.from_port(P1, &tagged(1018), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    p.from_port(P1, &tagged(1019), t, &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::TooBig)]);
    let mut untagged = tagged(1015);
    untagged[12..14].copy_from_slice(&[0x08, 0x06]);
    p.from_port(P1, &untagged, t, &mut a);
    assert_eq!(
        a.as_slice(),
        [Action::Drop(DropReason::TooBig)],
        "no ICMP for a non-IP frame"
    );
    p.from_port(P1, &untagged[..1014], t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
}

#[test]
fn entropy_is_per_flow_and_the_same_on_every_copy() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    let entropies = |a: &Actions| -> Vec<u16> {
        a.iter()
            .filter_map(|x| match x {
                Action::Encap { entropy, .. } => Some(*entropy),
                _ => None,
            })
            .collect()
    };
    let f = udp4(Mac::BROADCAST, mac(0xa), (40000, 53), 10);
    p.from_port(P1, &f, t, &mut a);
    let first = entropies(&a);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0], first[1]);
    // The same flow with another payload length: same value.
    p.from_port(
        P1,
        &udp4(Mac::BROADCAST, mac(0xa), (40000, 53), 500),
        t,
        &mut a,
    );
    assert_eq!(entropies(&a)[0], first[0]);
    // Other source ports: different values for nearly all of them.
    let differ = (40001..40033)
        .filter(|&sp| {
            p.from_port(P1, &udp4(Mac::BROADCAST, mac(0xa), (sp, 53), 10), t, &mut a);
            entropies(&a)[0] != first[0]
        })
        .count();
    assert!(
        differ >= 31,
        "only {differ} of 32 other flows got another entropy"
    );
}

#[test]
fn tx_reports_are_counted() {
    let mut p = setup();
    p.count_tx(TxTarget::Port(P2), 100, TxOutcome::Sent);
    p.count_tx(TxTarget::Port(P2), 60, TxOutcome::Failed);
    p.count_tx(TxTarget::Port(PortId(77)), 60, TxOutcome::QueueFull);
    p.count_tx(TxTarget::Underlay, 150, TxOutcome::Sent);
    p.count_tx(TxTarget::Underlay, 150, TxOutcome::QueueFull);
    let c = p.counters();
    assert_eq!(
        (
            c.ports[&P2].tx_frames,
            c.ports[&P2].tx_bytes,
            c.ports[&P2].drops
        ),
        (1, 100, 1)
    );
    assert_eq!(
        (
            c.underlay.tx_packets,
            c.underlay.tx_bytes,
            c.underlay.tx_errors
        ),
        (1, 150, 1)
    );
    assert_eq!(c.drops.get(DropReason::TxError), 1);
    assert_eq!(c.drops.get(DropReason::QueueFull), 2);
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["ports"]["2"]["tx_bytes"], 100);
    assert_eq!(json["drops"]["queue_full"], 2);
}

#[test]
fn tunnel_traffic_is_counted_per_remote() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    let packet = vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc)));
    p.receive_vxlan(r1(), &packet, t, &mut a);
    p.receive_vxlan(r1(), &packet, t, &mut a);
    // A packet for no network, and one from a remote network 100 does not know: counted in
    // the underlay totals, but neither makes an entry (forged sources must not fill the table).
    p.receive_vxlan(r2(), &vxlan(999, None, &frame(mac(1), mac(2))), t, &mut a);
    let stranger = ip("192.0.2.99");
    p.receive_vxlan(stranger, &packet, t, &mut a);
    assert_eq!(a.dropped(), Some(DropReason::UnknownRemote));
    p.count_tx(TxTarget::Remote(r1()), 150, TxOutcome::Sent);
    p.count_tx(TxTarget::Remote(r1()), 150, TxOutcome::Failed);
    p.count_tx(TxTarget::Underlay, 99, TxOutcome::Sent);
    let c = p.counters();
    let r = c.remotes[&r1()];
    assert_eq!(
        (r.rx_packets, r.rx_bytes, r.tx_packets, r.tx_bytes),
        (2, 2 * packet.len() as u64, 1, 150)
    );
    assert!(!c.remotes.contains_key(&r2()));
    assert!(!c.remotes.contains_key(&stranger));
    assert_eq!(c.remotes.len(), 1);
    // The totals count every packet, attributed or not.
    assert_eq!((c.underlay.tx_packets, c.underlay.tx_bytes), (2, 249));
    assert_eq!(c.underlay.rx_packets, 4);
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["remotes"][r1().to_string()]["tx_bytes"], 150);
}

#[test]
fn a_warm_actions_buffer_does_not_grow() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    // The biggest fan-out first (a flood), then a steady mix.
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    let (cap, ptr) = (a.capacity(), a.as_slice().as_ptr());
    assert!(cap >= 4);
    for i in 0..10_000u32 {
        let n = (i % 200) as u8;
        let f = frame(
            if i % 3 == 0 { Mac::BROADCAST } else { mac(0xa) },
            mac(n.max(0xb)),
        );
        p.from_port([P2, P3][i as usize % 2], &f, t, &mut a);
        p.receive_vxlan(
            r1(),
            &vxlan(100, None, &frame(mac(0xa), mac(0xc))),
            t,
            &mut a,
        );
        assert_eq!(a.capacity(), cap);
    }
    assert_eq!(a.as_slice().as_ptr(), ptr, "the buffer was reallocated");
}
