//! Issue 15, items 0 and 4: tunnel packets only from remotes the network knows
//! (`unknown_remote`), sticky local MACs (`learn_local_conflict`), and learning bounded per
//! port and per remote (`learn_limit`, `learn_limit_port`, `learn_limit_remote`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use nvo_pipeline::{
    AcceptRemotes, Actions, BumMode, DropReason, FdbDest, Limits, Mac, NetworkSpec, Pipeline, Vni,
};

fn stranger() -> std::net::IpAddr {
    ip("192.0.2.66")
}

fn many(i: u16) -> Mac {
    let [a, b] = i.to_be_bytes();
    Mac([0x02, 0x77, 0, 0, a, b])
}

#[test]
fn a_stranger_neither_steals_a_mac_nor_reaches_a_port() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    // The owner of mac(0xc) is behind r1.
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc))),
        t,
        &mut a,
    );
    // A host that is in no list sends frames as mac(0xc): dropped, nothing learned, nothing
    // delivered.
    for dst in [Mac::BROADCAST, mac(0xa)] {
        p.receive_vxlan(
            stranger(),
            &vxlan(100, None, &frame(dst, mac(0xc))),
            t,
            &mut a,
        );
        assert_eq!(
            plain(&a),
            [nvo_pipeline::Action::Drop(DropReason::UnknownRemote)]
        );
    }
    assert_eq!(
        p.fdb_get(VNI, mac(0xc)).map(|e| e.0),
        Some(FdbDest::Remote(r1()))
    );
    assert_eq!(p.counters().drops.get(DropReason::UnknownRemote), 2);
    assert_eq!(p.network(VNI).unwrap().accept_remotes, AcceptRemotes::Known);
    // Traffic to the owner still goes to r1.
    p.from_port(P1, &frame(mac(0xc), mac(0xa)), t, &mut a);
    assert_eq!(plain(&a), [encap(r1(), VNI)]);
}

#[test]
fn static_and_evpn_remotes_are_known_and_forgotten_with_their_entries() {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec::new(VNI)).unwrap();
    p.add_port(P1, VNI).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    let bcast = |src| vxlan(100, None, &frame(Mac::BROADCAST, src));
    // Head-end with an empty flood list: known (the EVPN case before any type-3 route).
    p.receive_vxlan(r1(), &bcast(mac(0xc)), t, &mut a);
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::UnknownRemote)]
    );
    p.fdb_add_static(VNI, mac(0xd), FdbDest::Remote(r1()))
        .unwrap();
    p.receive_vxlan(r1(), &bcast(mac(0xc)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    p.evpn_apply(&[nvo_pipeline::EvpnChange::FdbSet {
        vni: VNI,
        mac: mac(0xe),
        remote: r2(),
    }]);
    p.receive_vxlan(r2(), &bcast(mac(0xf)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    p.fdb_remove(VNI, mac(0xd)).unwrap();
    p.receive_vxlan(r1(), &bcast(mac(0xc)), t, &mut a);
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::UnknownRemote)]
    );
    assert_eq!(p.known_remotes(VNI).unwrap(), Some(vec![r2()]));
    // Overlay nodes' locators are known to every network.
    p.set_overlay_locators([r1()]);
    p.receive_vxlan(r1(), &bcast(mac(0xc)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
}

#[test]
fn multicast_flood_and_learn_takes_any_remote_unless_told() {
    let group = ip("239.1.1.1");
    let mut p = Pipeline::new(Limits::default());
    let mut spec = NetworkSpec::new(VNI);
    spec.bum = BumMode::Multicast(group);
    p.add_network(spec).unwrap();
    p.add_port(P1, VNI).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    let bcast = vxlan(100, None, &frame(Mac::BROADCAST, mac(0xc)));
    assert_eq!(p.network(VNI).unwrap().accept_remotes, AcceptRemotes::Any);
    p.receive_vxlan(stranger(), &bcast, t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    assert_eq!(p.known_remotes(VNI).unwrap(), None);
    // Listing the group's members makes it `known`.
    p.flood_add(VNI, r1()).unwrap();
    p.receive_vxlan(stranger(), &bcast, t, &mut a);
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::UnknownRemote)]
    );
    p.receive_vxlan(r1(), &bcast, t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    // And an explicit `any` keeps a head-end network open (what a kernel VXLAN peer in
    // learning mode needs when it is not listed).
    let mut q = Pipeline::new(Limits::default());
    let mut spec = NetworkSpec::new(Vni(7));
    spec.accept_remotes = Some(AcceptRemotes::Any);
    q.add_network(spec).unwrap();
    q.add_port(P1, Vni(7)).unwrap();
    q.receive_vxlan(
        stranger(),
        &vxlan(7, None, &frame(Mac::BROADCAST, mac(1))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1)]);
}

#[test]
fn a_local_mac_stays_local_while_it_is_used() {
    let mut p = setup();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), t, &mut a);
    // r1 (a known remote) claims mac(0xa): not moved, counted, the frame still delivered.
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(mac(0xb), mac(0xa))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1), deliver(P2), deliver(P3)]);
    assert_eq!(
        p.fdb_get(VNI, mac(0xa)).map(|e| e.0),
        Some(FdbDest::Port(P1))
    );
    let c = p.counters().networks[&VNI];
    assert_eq!((c.learn_local_conflict, c.moves), (1, 0));
    // Once the entry has aged out (the port fell silent), the MAC may be learned remote.
    let later = t + NetworkSpec::DEFAULT_AGEING + Duration::from_secs(1);
    p.age(later);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(mac(0xb), mac(0xa))),
        later,
        &mut a,
    );
    assert_eq!(
        p.fdb_get(VNI, mac(0xa)).map(|e| e.0),
        Some(FdbDest::Remote(r1()))
    );
}

#[test]
fn one_port_flooding_random_macs_leaves_room_for_the_others() {
    let mut p = Pipeline::new(Limits::default());
    let mut spec = NetworkSpec::new(VNI);
    spec.max_learned = 100;
    spec.max_learned_per_port = Some(25);
    spec.max_learned_per_remote = Some(25);
    p.add_network(spec).unwrap();
    for port in [P1, P2] {
        p.add_port(port, VNI).unwrap();
    }
    p.flood_add(VNI, r1()).unwrap();
    let t = Instant::now();
    let mut a = Actions::new();
    for i in 0..1000 {
        p.from_port(P1, &frame(Mac::BROADCAST, many(i)), t, &mut a);
        p.receive_vxlan(
            r1(),
            &vxlan(100, None, &frame(Mac::BROADCAST, many(5000 + i))),
            t,
            &mut a,
        );
    }
    let view = p.network(VNI).unwrap();
    assert_eq!(view.learned, 50);
    // A new host on port 2 is learned at once.
    p.from_port(P2, &frame(Mac::BROADCAST, mac(0xb)), t, &mut a);
    assert_eq!(
        p.fdb_get(VNI, mac(0xb)).map(|e| e.0),
        Some(FdbDest::Port(P2))
    );
    let c = p.counters();
    let n = c.networks[&VNI];
    assert_eq!(
        (n.learn_limit, n.learn_limit_port, n.learn_limit_remote),
        (1950, 975, 975)
    );
    assert_eq!(
        (c.ports[&P1].learn_limit, c.ports[&P2].learn_limit),
        (975, 0)
    );
    // The port's frames beyond its share were dropped, so no other host sees those MACs.
    assert_eq!(c.drops.get(DropReason::PortLearnLimit), 975);
    assert_eq!(c.ports[&P1].drops, 975);
    assert_eq!(p.learned_behind(VNI, FdbDest::Port(P1)), Some((25, 0)));
    assert_eq!(p.learned_behind(VNI, FdbDest::Remote(r1())), Some((25, 0)));
}
