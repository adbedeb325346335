//! The data-plane half of EVPN (docs/design/evpn.md): Evpn-origin FDB entries and their
//! precedence against learned and static ones, the neighbour table, `evpn_apply`'s per-change
//! semantics, the local hosts and their generation, and suppression from snooped entries.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use common::*;
use etherparse::{ArpHardwareId, ArpOperation, ArpPacket, EtherType, PacketBuilder};
use nvo_pipeline::{
    Action, Actions, EvpnApplied, EvpnChange, FdbDest, FlushScope, Limits, LocalHost, Mac,
    NetworkSpec, Origin, Pipeline, PortId, TableError,
};

/// An ARP packet from `mac`/`ip` (op 1 request, 2 reply) about `target`, broadcast.
fn arp(op: u16, mac: Mac, ip: &str, target: &str) -> Vec<u8> {
    let (IpAddr::V4(ip), IpAddr::V4(target)) = (self::ip(ip), self::ip(target)) else {
        panic!("ipv4 only");
    };
    let packet = ArpPacket::new(
        ArpHardwareId::ETHERNET,
        EtherType::IPV4,
        ArpOperation(op),
        &mac.0,
        &ip.octets(),
        &[0; 6],
        &target.octets(),
    )
    .unwrap();
    let mut v = Vec::new();
    PacketBuilder::ethernet2(mac.0, [0xff; 6])
        .arp(packet)
        .write(&mut v)
        .unwrap();
    v
}

fn fdb_set(mac: Mac, remote: IpAddr) -> EvpnChange {
    EvpnChange::FdbSet {
        vni: VNI,
        mac,
        remote,
    }
}

fn neigh_set(ip: &str, mac: Mac) -> EvpnChange {
    EvpnChange::NeighSet {
        vni: VNI,
        ip: self::ip(ip),
        mac,
    }
}

fn applied(n: usize) -> EvpnApplied {
    EvpnApplied {
        applied: n,
        ..EvpnApplied::default()
    }
}

fn send(p: &mut Pipeline, port: PortId, frame: &[u8], now: Instant) -> Vec<Action> {
    let mut actions = Actions::new();
    p.from_port(port, frame, now, &mut actions);
    plain(&actions)
}

fn entry(p: &Pipeline, mac: Mac) -> Option<(FdbDest, Origin)> {
    let views = p.fdb_entries(VNI, Instant::now()).unwrap();
    views
        .iter()
        .find(|v| v.mac == mac)
        .map(|v| (v.dest, v.origin))
}

#[test]
fn evpn_entries_forward_and_never_age() {
    let mut p = setup();
    let t0 = Instant::now();
    assert_eq!(p.evpn_apply(&[fdb_set(mac(9), r1())]), applied(1));
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Remote(r1()), Origin::Evpn))
    );
    assert_eq!(
        send(&mut p, P1, &frame(mac(9), mac(1)), t0),
        [encap(r1(), VNI)]
    );
    assert_eq!(
        p.age(t0 + Duration::from_secs(100_000)),
        1,
        "only mac 1 ages"
    );
    assert_eq!(p.network(VNI).unwrap().evpn_fdb, 1);
    // Replaced by another set; removed by a remove.
    p.evpn_apply(&[fdb_set(mac(9), r2())]);
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Remote(r2()), Origin::Evpn))
    );
    p.evpn_apply(&[EvpnChange::FdbRemove {
        vni: VNI,
        mac: mac(9),
    }]);
    assert_eq!(entry(&p, mac(9)), None);
    let json = serde_json::to_value(p.network(VNI).unwrap()).unwrap();
    assert!(json.get("evpn_fdb").is_none(), "zero counts are not shown");
}

#[test]
fn tunnel_learning_never_overrides_evpn_a_local_port_does() {
    let mut p = setup();
    let t0 = Instant::now();
    p.evpn_apply(&[fdb_set(mac(9), r1())]);
    let mut actions = Actions::new();
    let inner = frame(mac(1), mac(9));
    p.receive_vxlan(r2(), &vxlan(VNI.0, None, &inner), t0, &mut actions);
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Remote(r1()), Origin::Evpn))
    );
    assert_eq!(p.counters().networks[&VNI].moves, 0);

    // The MAC shows up on port 2: it moved here, and becomes a learned local entry at once.
    let before = p.hosts_generation();
    send(&mut p, P2, &frame(mac(1), mac(9)), t0);
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Port(P2), Origin::Learned))
    );
    let net = p.counters().networks[&VNI];
    assert_eq!((net.moves, net.evpn_moves), (1, 1));
    assert!(p.hosts_generation() > before);
    let view = p.network(VNI).unwrap();
    assert_eq!((view.evpn_fdb, view.learned), (0, 1));
    // A withdrawal of the remote route now leaves the local entry alone.
    p.evpn_apply(&[EvpnChange::FdbRemove {
        vni: VNI,
        mac: mac(9),
    }]);
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Port(P2), Origin::Learned))
    );
}

#[test]
fn local_move_of_an_evpn_mac_respects_max_learned() {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec {
        max_learned: 1,
        ..NetworkSpec::new(VNI)
    })
    .unwrap();
    p.add_port(P1, VNI).unwrap();
    p.evpn_apply(&[fdb_set(mac(9), r1())]);
    let t0 = Instant::now();
    send(&mut p, P1, &frame(mac(2), mac(1)), t0);
    send(&mut p, P1, &frame(mac(2), mac(9)), t0);
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Remote(r1()), Origin::Evpn))
    );
    assert_eq!(p.counters().networks[&VNI].learn_limit, 1);
}

#[test]
fn static_wins_over_evpn_both_ways() {
    let mut p = setup();
    p.evpn_apply(&[fdb_set(mac(9), r1())]);
    p.fdb_add_static(VNI, mac(9), FdbDest::Remote(r2()))
        .unwrap();
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Remote(r2()), Origin::Static))
    );
    let view = p.network(VNI).unwrap();
    assert_eq!((view.evpn_fdb, view.static_entries), (0, 1));
    // An EVPN set over it is refused; the rest of the batch still goes in.
    let done = p.evpn_apply(&[fdb_set(mac(9), r1()), fdb_set(mac(8), r1())]);
    assert_eq!(done.applied, 1);
    assert_eq!(done.refused, 1);
    assert_eq!(
        done.last_error,
        Some(TableError::StaticHolds {
            vni: VNI,
            mac: mac(9)
        })
    );
    assert_eq!(
        entry(&p, mac(9)),
        Some((FdbDest::Remote(r2()), Origin::Static))
    );
    // A removal of the EVPN route leaves the static entry.
    p.evpn_apply(&[EvpnChange::FdbRemove {
        vni: VNI,
        mac: mac(9),
    }]);
    assert!(entry(&p, mac(9)).is_some());
    // fdb_flush(Learned) keeps EVPN entries, fdb_flush(All) does not.
    assert_eq!(p.fdb_flush(VNI, FlushScope::Learned).unwrap(), 0);
    assert_eq!(p.fdb_flush(VNI, FlushScope::All).unwrap(), 2);
}

#[test]
fn evpn_set_replaces_a_learned_entry() {
    let mut p = setup();
    send(&mut p, P1, &frame(mac(2), mac(1)), Instant::now());
    let before = p.hosts_generation();
    assert_eq!(p.evpn_apply(&[fdb_set(mac(1), r1())]), applied(1));
    assert_eq!(
        entry(&p, mac(1)),
        Some((FdbDest::Remote(r1()), Origin::Evpn))
    );
    assert!(p.hosts_generation() > before, "a local host went away");
    let view = p.network(VNI).unwrap();
    assert_eq!((view.learned, view.evpn_fdb), (0, 1));
}

#[test]
fn evpn_fdb_and_neighbors_have_bounds_of_their_own() {
    let limits = Limits {
        max_evpn_fdb: 2,
        max_neighbors: 2,
        max_static_fdb: 1,
        ..Limits::default()
    };
    let mut p = Pipeline::new(limits);
    p.add_network(NetworkSpec::new(VNI)).unwrap();
    p.add_port(P1, VNI).unwrap();
    p.fdb_add_static(VNI, mac(7), FdbDest::Port(P1)).unwrap();
    let done = p.evpn_apply(&[
        fdb_set(mac(8), r1()),
        fdb_set(mac(9), r1()),
        fdb_set(mac(10), r1()),
        // Replacing one at the bound is fine.
        fdb_set(mac(9), r2()),
    ]);
    assert_eq!((done.applied, done.refused), (3, 1));
    let full = |table| TableError::TableFull { table, limit: 2 };
    assert_eq!(done.last_error, Some(full("evpn fdb")));
    // Learning still has its own room.
    send(&mut p, P1, &frame(mac(2), mac(1)), Instant::now());
    let view = p.network(VNI).unwrap();
    assert_eq!(
        (view.evpn_fdb, view.static_entries, view.learned),
        (2, 1, 1)
    );

    let done = p.evpn_apply(&[
        neigh_set("10.0.0.8", mac(8)),
        neigh_set("fd00::9", mac(9)),
        neigh_set("10.0.0.10", mac(10)),
        neigh_set("fd00::9", mac(8)),
    ]);
    assert_eq!((done.applied, done.refused), (3, 1));
    assert_eq!(done.last_error, Some(full("neighbor")));
    // A full table snoops nothing new.
    send(
        &mut p,
        P1,
        &arp(1, mac(1), "10.0.0.1", "10.0.0.8"),
        Instant::now(),
    );
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 2);
    assert!(p.local_hosts().hosts.iter().all(|h| h.ips.is_empty()));
}

#[test]
fn apply_refuses_bad_changes_one_by_one() {
    let mut p = setup();
    let other = nvo_pipeline::Vni(7);
    let cases = [
        (
            EvpnChange::FdbSet {
                vni: other,
                mac: mac(9),
                remote: r1(),
            },
            TableError::NoSuchNetwork(other),
        ),
        (
            EvpnChange::FdbRemove {
                vni: other,
                mac: mac(9),
            },
            TableError::NoSuchNetwork(other),
        ),
        (
            EvpnChange::FloodAdd {
                vni: other,
                remote: r1(),
            },
            TableError::NoSuchNetwork(other),
        ),
        (
            fdb_set(Mac::BROADCAST, r1()),
            TableError::InvalidMac(Mac::BROADCAST),
        ),
        (
            fdb_set(mac(9), ip("239.1.1.1")),
            TableError::InvalidRemote(ip("239.1.1.1")),
        ),
        (
            neigh_set("0.0.0.0", mac(9)),
            TableError::InvalidNeighbor(ip("0.0.0.0")),
        ),
        (
            neigh_set("ff02::1", mac(9)),
            TableError::InvalidNeighbor(ip("ff02::1")),
        ),
        (
            neigh_set("10.0.0.9", Mac::ZERO),
            TableError::InvalidMac(Mac::ZERO),
        ),
    ];
    for (change, error) in cases {
        let done = p.evpn_apply(&[change, neigh_set("10.0.0.1", mac(1))]);
        assert_eq!(done.applied, 1, "{change:?}");
        assert_eq!(done.refused, 1, "{change:?}");
        assert_eq!(done.last_error, Some(error), "{change:?}");
    }
    assert_eq!(p.network(VNI).unwrap().evpn_fdb, 0);
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 1);
}

#[test]
fn flood_changes_are_idempotent() {
    let mut p = setup();
    let r3 = ip("192.0.2.13");
    let add = EvpnChange::FloodAdd {
        vni: VNI,
        remote: r3,
    };
    let remove = EvpnChange::FloodRemove {
        vni: VNI,
        remote: r3,
    };
    assert_eq!(p.evpn_apply(&[add, add]), applied(2));
    assert_eq!(p.flood_list(VNI).unwrap(), [r1(), r2(), r3]);
    assert_eq!(p.evpn_apply(&[remove, remove]), applied(2));
    assert_eq!(p.flood_list(VNI).unwrap(), [r1(), r2()]);
}

#[test]
fn neighbor_removal_touches_only_evpn_entries() {
    let mut p = setup();
    let t0 = Instant::now();
    send(&mut p, P1, &arp(1, mac(1), "10.0.0.1", "10.0.0.2"), t0);
    p.evpn_apply(&[neigh_set("10.0.0.2", mac(2))]);
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 2);
    let remove = |s: &str| EvpnChange::NeighRemove {
        vni: VNI,
        ip: ip(s),
    };
    assert_eq!(
        p.evpn_apply(&[remove("10.0.0.1"), remove("10.0.0.2"), remove("10.0.0.3")]),
        applied(3)
    );
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 1);
    assert_eq!(p.local_hosts().hosts[0].ips, [ip("10.0.0.1")]);
}

#[test]
fn local_hosts_list_local_macs_with_their_snooped_ips() {
    let mut p = setup();
    let t0 = Instant::now();
    p.add_network(NetworkSpec::new(nvo_pipeline::Vni(200)))
        .unwrap();
    p.add_port(PortId(4), nvo_pipeline::Vni(200)).unwrap();
    send(&mut p, P2, &arp(1, mac(2), "10.0.0.2", "10.0.0.9"), t0);
    send(&mut p, P1, &arp(2, mac(1), "10.0.0.1", "10.0.0.2"), t0);
    send(&mut p, P1, &arp(1, mac(1), "10.0.0.11", "10.0.0.2"), t0);
    send(
        &mut p,
        PortId(4),
        &arp(1, mac(1), "10.0.0.1", "10.0.0.2"),
        t0,
    );
    p.fdb_add_static(VNI, mac(3), FdbDest::Port(P3)).unwrap();
    // Remote MACs are not local hosts, EVPN neighbours not local IPs.
    p.evpn_apply(&[fdb_set(mac(9), r1()), neigh_set("10.0.0.9", mac(9))]);
    send(&mut p, P1, &frame(mac(1), mac(8)), t0);
    let mut actions = Actions::new();
    let from_tunnel = vxlan(VNI.0, None, &frame(mac(1), mac(7)));
    p.receive_vxlan(r1(), &from_tunnel, t0, &mut actions);

    let host = |vni: u32, n: u8, port: u32, ips: &[&str]| LocalHost {
        vni: nvo_pipeline::Vni(vni),
        mac: mac(n),
        port: PortId(port),
        group: 0,
        ips: ips.iter().map(|s| ip(s)).collect(),
    };
    assert_eq!(
        p.local_hosts().hosts,
        [
            host(100, 1, 1, &["10.0.0.1", "10.0.0.11"]),
            host(100, 2, 2, &["10.0.0.2"]),
            host(100, 3, 3, &[]),
            host(100, 8, 1, &[]),
            host(200, 1, 4, &["10.0.0.1"]),
        ]
    );
}

#[test]
fn generation_moves_on_every_change_of_the_local_hosts_only() {
    let mut p = setup();
    let t0 = Instant::now();
    let g0 = p.hosts_generation();
    assert_eq!(g0, 1);
    assert_eq!(p.local_hosts_since(0).unwrap().generation, g0);
    assert_eq!(p.local_hosts_since(g0), None);

    let changed = |p: &mut Pipeline, what: &str, f: &dyn Fn(&mut Pipeline)| {
        let before = p.hosts_generation();
        f(p);
        let after = p.local_hosts_since(before).map(|h| h.generation);
        assert!(
            after.is_some_and(|g| g > before),
            "{what}: no new generation"
        );
    };
    changed(&mut p, "new local mac", &|p| {
        send(p, P1, &frame(mac(2), mac(1)), t0);
    });
    changed(&mut p, "new local ip", &|p| {
        send(p, P1, &arp(1, mac(1), "10.0.0.1", "10.0.0.2"), t0);
    });
    send(&mut p, P1, &frame(mac(2), mac(5)), t0);
    changed(&mut p, "changed local ip", &|p| {
        send(p, P1, &arp(1, mac(5), "10.0.0.1", "10.0.0.2"), t0);
    });
    changed(&mut p, "moved local mac", &|p| {
        send(p, P2, &frame(mac(2), mac(1)), t0);
    });
    changed(&mut p, "static local mac", &|p| {
        p.fdb_add_static(VNI, mac(3), FdbDest::Port(P3)).unwrap();
    });
    changed(&mut p, "removed local mac", &|p| {
        p.fdb_remove(VNI, mac(3)).unwrap();
    });

    let unchanged = |p: &mut Pipeline, what: &str, f: &dyn Fn(&mut Pipeline)| {
        let before = p.hosts_generation();
        f(p);
        assert_eq!(p.local_hosts_since(before), None, "{what}");
    };
    unchanged(&mut p, "refreshed mac", &|p| {
        send(p, P2, &frame(mac(2), mac(1)), t0);
    });
    unchanged(&mut p, "refreshed ip", &|p| {
        send(p, P1, &arp(1, mac(5), "10.0.0.1", "10.0.0.2"), t0);
    });
    unchanged(&mut p, "remote mac", &|p| {
        let mut actions = Actions::new();
        let from_tunnel = vxlan(VNI.0, None, &frame(mac(1), mac(7)));
        p.receive_vxlan(r1(), &from_tunnel, t0, &mut actions);
    });
    unchanged(&mut p, "evpn entries", &|p| {
        p.evpn_apply(&[fdb_set(mac(9), r1()), neigh_set("10.0.0.9", mac(9))]);
    });
    unchanged(&mut p, "nothing old enough to age", &|p| {
        p.age(t0 + Duration::from_secs(300));
    });

    changed(&mut p, "aged", &|p| {
        p.age(t0 + Duration::from_secs(301));
    });
    send(&mut p, P3, &frame(mac(2), mac(4)), t0);
    changed(&mut p, "port removed", &|p| p.remove_port(P3).unwrap());
}

#[test]
fn snooped_neighbors_age_installed_ones_do_not() {
    let mut p = setup();
    let t0 = Instant::now();
    send(&mut p, P1, &arp(1, mac(1), "10.0.0.1", "10.0.0.2"), t0);
    p.evpn_apply(&[neigh_set("10.0.0.2", mac(2))]);
    let later = t0 + Duration::from_secs(200);
    send(&mut p, P2, &arp(2, mac(3), "10.0.0.3", "10.0.0.1"), later);
    p.age(t0 + Duration::from_secs(300));
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 3);
    p.age(t0 + Duration::from_secs(301));
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 2);
    p.age(later + Duration::from_secs(301));
    assert_eq!(
        p.network(VNI).unwrap().evpn_neighbors,
        1,
        "the evpn one stays"
    );
    // Removing a port takes the neighbours snooped on it.
    send(&mut p, P2, &arp(2, mac(3), "10.0.0.3", "10.0.0.1"), later);
    p.remove_port(P2).unwrap();
    assert_eq!(p.network(VNI).unwrap().evpn_neighbors, 1);
}

#[test]
fn suppression_answers_for_other_ports_not_for_the_requesters_own() {
    let mut p = setup();
    p.set_arp_suppression(VNI, true).unwrap();
    assert!(p.network(VNI).unwrap().arp_suppression);
    let t0 = Instant::now();
    // Host 2 on port 2 speaks: its address is snooped.
    send(&mut p, P2, &arp(2, mac(2), "10.0.0.2", "10.0.0.9"), t0);
    // Asked from port 1: answered from the snooped entry.
    let request = arp(1, mac(1), "10.0.0.1", "10.0.0.2");
    let actions = send(&mut p, P1, &request, t0);
    let [Action::Reply { port: P1, len }] = actions[..] else {
        panic!("not answered: {actions:?}");
    };
    assert_eq!(&p.scratch()[..12], [mac(1).0, mac(2).0].concat());
    assert_eq!(len, 42);
    // Asked from port 2, where host 2 answers for itself: flooded.
    let request = arp(1, mac(4), "10.0.0.4", "10.0.0.2");
    let actions = send(&mut p, P2, &request, t0);
    assert!(actions.contains(&deliver(P1)), "{actions:?}");
    // An EVPN entry for a MAC learned behind the asking port is not answered either.
    p.evpn_apply(&[neigh_set("10.0.0.5", mac(5))]);
    send(&mut p, P3, &frame(mac(1), mac(5)), t0);
    let actions = send(&mut p, P3, &arp(1, mac(6), "10.0.0.6", "10.0.0.5"), t0);
    assert!(actions.contains(&deliver(P1)), "{actions:?}");
    let net = p.counters().networks[&VNI];
    assert_eq!((net.arp_suppressed, net.arp_flooded), (1, 2));
    // Switched off: flooded.
    p.set_arp_suppression(VNI, false).unwrap();
    let actions = send(&mut p, P1, &arp(1, mac(1), "10.0.0.1", "10.0.0.2"), t0);
    assert!(actions.contains(&deliver(P2)), "{actions:?}");
    assert_eq!(
        p.set_arp_suppression(nvo_pipeline::Vni(7), true),
        Err(TableError::NoSuchNetwork(nvo_pipeline::Vni(7)))
    );
}

#[test]
fn changes_serialise_tagged_by_op() {
    let json = serde_json::to_value(fdb_set(mac(9), r1())).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"op": "fdb_set", "vni": 100, "mac": "02:00:00:00:00:09", "remote": "192.0.2.11"})
    );
    let back: EvpnChange = serde_json::from_value(json).unwrap();
    assert_eq!(back, fdb_set(mac(9), r1()));
}

#[test]
fn static_hosts_are_local_hosts_with_their_addresses_at_once() {
    let mut p = setup();
    p.set_arp_suppression(VNI, true).unwrap();
    let t0 = Instant::now();
    let gen = p.hosts_generation();
    p.fdb_add_static_host(VNI, mac(3), P3, &[ip("10.0.0.3"), ip("fd00::3")])
        .unwrap();
    assert!(p.hosts_generation() > gen);
    let hosts = p.local_hosts().hosts;
    assert_eq!(
        hosts,
        vec![LocalHost {
            vni: VNI,
            mac: mac(3),
            port: P3,
            group: 0,
            ips: vec![ip("10.0.0.3"), ip("fd00::3")],
        }]
    );
    assert_eq!(
        p.fdb_host_ips(VNI, mac(3)).unwrap(),
        vec![ip("10.0.0.3"), ip("fd00::3")]
    );
    // Before the host said a word, another port's ARP request for it is answered.
    let out = send(&mut p, P1, &arp(1, mac(1), "10.0.0.1", "10.0.0.3"), t0);
    assert!(
        matches!(out.as_slice(), [Action::Reply { port, .. }] if *port == P1),
        "{out:?}"
    );
    // EVPN cannot take the address; snooping someone else claiming it does not either.
    let done = p.evpn_apply(&[neigh_set("10.0.0.3", mac(9))]);
    assert!(
        matches!(done.last_error, Some(TableError::StaticHolds { .. })),
        "{done:?}"
    );
    send(&mut p, P2, &arp(2, mac(2), "10.0.0.3", "10.0.0.1"), t0);
    let hosts = p.local_hosts().hosts;
    let h3 = hosts.iter().find(|h| h.mac == mac(3)).unwrap();
    assert_eq!(h3.ips, vec![ip("10.0.0.3"), ip("fd00::3")]);
    let others_claim = hosts
        .iter()
        .any(|h| h.mac != mac(3) && h.ips.contains(&ip("10.0.0.3")));
    assert!(!others_claim, "{hosts:?}");
    // Bad addresses are refused, changing nothing; removing the entry takes its addresses.
    assert_eq!(
        p.fdb_add_static_host(VNI, mac(3), P3, &[ip("224.0.0.1")]),
        Err(TableError::InvalidNeighbor(ip("224.0.0.1")))
    );
    assert_eq!(p.fdb_host_ips(VNI, mac(3)).unwrap().len(), 2);
    p.fdb_remove(VNI, mac(3)).unwrap();
    assert!(p.fdb_host_ips(VNI, mac(3)).unwrap().is_empty());
    assert!(p.local_hosts().hosts.iter().all(|h| h.mac != mac(3)));
}
