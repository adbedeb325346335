//! Tests of the EVPN table: import, install, advertisement, mobility, duplicates, graceful
//! restart and bounds.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use nvo_api as api;
use nvo_bgp::{EvpnRoute, InclusiveMulticastRoute, RouteTarget};
use nvo_pipeline::Mac;

use super::rib::{mac_route, Advert, Install, LocalRoute, Received, Rib, Taken};
use super::settings::{default_rd, Settings};

const VNI: u32 = 100;
const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn rib() -> Rib {
    let config = api::BgpConfig {
        router_id: Ipv4Addr::new(192, 0, 2, 1),
        dup_moves: Some(3),
        dup_window_s: Some(60),
        neighbors: vec![],
        ..super::settings::tests::base()
    };
    let settings = Settings::resolve(&config, ip("192.0.2.1")).unwrap();
    let mut rib = Rib::new(settings, 8);
    rib.set_networks(&networks(BTreeMap::from([(VNI, BTreeSet::new())])));
    rib
}

/// The speaker's networks: `flood` (VXLAN ones), none ILA.
fn networks(flood: BTreeMap<u32, BTreeSet<IpAddr>>) -> crate::Networks {
    crate::Networks {
        flood,
        ila: BTreeMap::new(),
    }
}

fn got(vtep: &str, seq: u32) -> Received {
    Received {
        vni: VNI,
        vtep: ip(vtep),
        seq,
        sticky: false,
        rts: vec![RouteTarget::TwoOctetAs {
            asn: 65000,
            value: VNI,
        }],
        group: 0,
    }
}

/// Local host `mac` of network VNI with addresses `ips` and no group.
fn host(mac: Mac, ips: &[&str]) -> LocalRoute {
    LocalRoute {
        vni: VNI,
        mac,
        ips: ips.iter().map(|s| ip(s)).collect(),
        group: 0,
    }
}

fn remote_mac(vtep: &str, mac: Mac, addr: Option<&str>) -> EvpnRoute {
    let rd = default_rd(vtep.parse().unwrap(), VNI);
    mac_route(rd, VNI, mac, addr.map(ip))
}

fn imet(vtep: &str) -> EvpnRoute {
    EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
        rd: default_rd(vtep.parse().unwrap(), VNI),
        ethernet_tag: 0,
        originator: ip(vtep),
    })
}

fn announced_seq(changes: &[Advert], mac: Mac) -> Option<u32> {
    changes.iter().find_map(|a| match a {
        Advert::Announce(EvpnRoute::MacIp(r), attrs) if r.mac == mac.0 && r.ip.is_none() => {
            Some(attrs.seq)
        }
        _ => None,
    })
}

fn withdrew(changes: &[Advert], mac: Mac) -> bool {
    changes
        .iter()
        .any(|a| matches!(a, Advert::Withdraw(EvpnRoute::MacIp(r)) if r.mac == mac.0))
}

#[test]
fn remote_routes_install_and_withdraw() {
    let mut rib = rib();
    let now = Instant::now();
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 0));
    rib.receive(
        0,
        &remote_mac("192.0.2.2", A, Some("10.0.0.2")),
        got("192.0.2.2", 0),
    );
    rib.receive(0, &imet("192.0.2.2"), got("192.0.2.2", 0));
    let c = rib.take_changes(now);
    assert!(c
        .install
        .contains(&Install::FdbSet(VNI, A, ip("192.0.2.2"))));
    assert!(c
        .install
        .contains(&Install::NeighSet(VNI, ip("10.0.0.2"), A)));
    assert!(c.install.contains(&Install::FloodAdd(VNI, ip("192.0.2.2"))));
    rib.withdraw(0, &remote_mac("192.0.2.2", A, Some("10.0.0.2")));
    let c = rib.take_changes(now);
    assert_eq!(c.install, vec![Install::NeighRemove(VNI, ip("10.0.0.2"))]);
    rib.withdraw(0, &remote_mac("192.0.2.2", A, None));
    rib.withdraw(0, &imet("192.0.2.2"));
    let c = rib.take_changes(now);
    assert!(c.install.contains(&Install::FdbRemove(VNI, A)));
    assert!(c
        .install
        .contains(&Install::FloodRemove(VNI, ip("192.0.2.2"))));
    assert_eq!(rib.counts().1, 0);
}

#[test]
fn a_routes_group_is_installed_for_its_ips_and_a_local_hosts_goes_out() {
    let mut rib = rib();
    let now = Instant::now();
    let with_group = |g| Received {
        group: g,
        ..got("192.0.2.2", 0)
    };
    let b = Mac([2, 0, 0, 0, 0, 0xb]);
    rib.receive(
        0,
        &remote_mac("192.0.2.2", A, Some("10.0.0.2")),
        with_group(20),
    );
    rib.receive(
        0,
        &remote_mac("192.0.2.2", b, Some("10.0.0.4")),
        got("192.0.2.2", 0),
    );
    let c = rib.take_changes(now);
    assert!(c
        .install
        .contains(&Install::IdentitySet(VNI, ip("10.0.0.2"), 20)));
    // A route without the community gives no identity.
    assert!(!c
        .install
        .iter()
        .any(|i| matches!(i, Install::IdentitySet(_, a, _) if *a == ip("10.0.0.4"))));
    // The same route again: nothing; with another group: that one.
    rib.receive(
        0,
        &remote_mac("192.0.2.2", A, Some("10.0.0.2")),
        with_group(20),
    );
    assert!(rib.take_changes(now).install.is_empty());
    rib.receive(
        0,
        &remote_mac("192.0.2.2", A, Some("10.0.0.2")),
        with_group(30),
    );
    let c = rib.take_changes(now);
    assert_eq!(
        c.install,
        vec![Install::IdentitySet(VNI, ip("10.0.0.2"), 30)]
    );
    // Withdrawn: the address and its identity go.
    rib.withdraw(0, &remote_mac("192.0.2.2", A, Some("10.0.0.2")));
    let c = rib.take_changes(now);
    assert!(c
        .install
        .contains(&Install::IdentityRemove(VNI, ip("10.0.0.2"))));
    assert!(rib.installed().identity.is_empty());

    // A local host's group goes out with its routes, and a new group re-announces them.
    let mut h = host(Mac([2, 0, 0, 0, 0, 0xc]), &["10.0.0.9"]);
    h.group = 10;
    rib.set_local(std::slice::from_ref(&h), false);
    let c = rib.take_changes(now);
    let groups: Vec<u16> = c
        .advert
        .iter()
        .filter_map(|a| match a {
            Advert::Announce(EvpnRoute::MacIp(_), attrs) => Some(attrs.group),
            _ => None,
        })
        .collect();
    assert_eq!(groups, [10, 10], "the MAC route and the MAC/IP route");
    h.group = 11;
    rib.set_local(&[h], false);
    let c = rib.take_changes(now);
    assert!(c
        .advert
        .iter()
        .all(|a| matches!(a, Advert::Announce(_, attrs) if attrs.group == 11)));
    assert_eq!(c.advert.len(), 2);
}

#[test]
fn foreign_route_targets_and_own_routes_are_not_installed() {
    let mut rib = rib();
    let mut other = got("192.0.2.2", 0);
    other.rts = vec![RouteTarget::TwoOctetAs {
        asn: 65000,
        value: 999,
    }];
    assert_eq!(
        rib.receive(0, &remote_mac("192.0.2.2", A, None), other),
        Taken::Stored
    );
    assert_eq!(
        rib.receive(0, &imet("192.0.2.1"), got("192.0.2.1", 0)),
        Taken::Unused
    );
    let c = rib.take_changes(Instant::now());
    assert!(c.install.is_empty(), "{:?}", c.install);
}

#[test]
fn local_hosts_and_networks_are_advertised() {
    let mut rib = rib();
    rib.set_local(&[host(A, &["10.0.0.1"])], false);
    let c = rib.take_changes(Instant::now());
    assert_eq!(announced_seq(&c.advert, A), Some(0));
    let types: Vec<u8> = c
        .advert
        .iter()
        .filter_map(|a| match a {
            Advert::Announce(r, _) => Some(r.route_type()),
            Advert::Withdraw(_) => None,
        })
        .collect();
    assert_eq!(
        types.iter().filter(|&&t| t == 2).count(),
        2,
        "MAC and MAC+IP"
    );
    assert_eq!(types.iter().filter(|&&t| t == 3).count(), 1);
    rib.set_local(&[], false);
    let c = rib.take_changes(Instant::now());
    assert!(withdrew(&c.advert, A));
}

#[test]
fn a_mac_that_moves_here_gets_a_higher_sequence_and_back() {
    let mut rib = rib();
    let now = Instant::now();
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 4));
    rib.take_changes(now);
    // The MAC shows up on a local port: advertised with 5, the remote entry removed.
    rib.set_local(&[host(A, &[])], false);
    let c = rib.take_changes(now);
    assert_eq!(announced_seq(&c.advert, A), Some(5));
    assert!(c.install.contains(&Install::FdbRemove(VNI, A)));
    // It moves on to a third VTEP with 6: local route withdrawn, remote installed.
    rib.receive(1, &remote_mac("192.0.2.3", A, None), got("192.0.2.3", 6));
    let c = rib.take_changes(now);
    assert!(withdrew(&c.advert, A));
    assert!(c
        .install
        .contains(&Install::FdbSet(VNI, A, ip("192.0.2.3"))));
}

#[test]
fn a_mac_whose_old_vtep_withdrew_first_still_moves_here_with_a_higher_sequence() {
    let mut rib = rib();
    let t = Instant::now();
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 4));
    rib.take_changes(t);
    // The old VTEP saw the MAC's frames come through the tunnel and withdrew before the MAC
    // showed up here: still a move from 192.0.2.2, advertised with 5.
    rib.withdraw(0, &remote_mac("192.0.2.2", A, None));
    let c = rib.take_changes(t);
    assert!(c.install.contains(&Install::FdbRemove(VNI, A)));
    rib.set_local(&[host(A, &[])], false);
    let c = rib.take_changes(t + Duration::from_secs(1));
    assert_eq!(announced_seq(&c.advert, A), Some(5));
}

#[test]
fn a_withdrawn_remote_mac_is_forgotten_after_the_window() {
    let mut rib = rib();
    let t = Instant::now();
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 4));
    rib.take_changes(t);
    rib.withdraw(0, &remote_mac("192.0.2.2", A, None));
    rib.take_changes(t);
    // The window (60 s) has passed: the MAC that shows up is new, sequence 0.
    rib.take_changes(t + Duration::from_secs(61));
    rib.set_local(&[host(A, &[])], false);
    let c = rib.take_changes(t + Duration::from_secs(62));
    assert_eq!(announced_seq(&c.advert, A), Some(0));
}

#[test]
fn equal_sequences_go_to_the_lowest_vtep() {
    let mut rib = rib();
    rib.receive(0, &remote_mac("192.0.2.9", A, None), got("192.0.2.9", 2));
    rib.receive(1, &remote_mac("192.0.2.5", A, None), got("192.0.2.5", 2));
    let c = rib.take_changes(Instant::now());
    assert!(c
        .install
        .contains(&Install::FdbSet(VNI, A, ip("192.0.2.5"))));
}

#[test]
fn a_flapping_mac_is_marked_duplicate_and_frozen() {
    let mut rib = rib();
    let t = Instant::now();
    let mut seq = 0;
    // Moves between the local port and 192.0.2.2, each side outbidding the other.
    for round in 0..3 {
        rib.set_local(&[host(A, &[])], false);
        rib.take_changes(t + Duration::from_secs(round));
        seq += 2;
        rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", seq));
        rib.take_changes(t + Duration::from_secs(round));
        rib.set_local(&[], false);
    }
    assert_eq!(rib.duplicates(), 1);
    // Frozen: a higher sequence no longer moves it.
    let before = rib.installed().fdb.get(&(VNI, A)).copied();
    rib.receive(1, &remote_mac("192.0.2.3", A, None), got("192.0.2.3", 99));
    let c = rib.take_changes(t + Duration::from_secs(5));
    assert!(c.install.is_empty(), "{:?}", c.install);
    assert_eq!(rib.installed().fdb.get(&(VNI, A)).copied(), before);
    // After the window it is evaluated again.
    rib.take_changes(t + Duration::from_secs(70));
    let c = rib.take_changes(t + Duration::from_secs(71));
    assert!(
        c.install
            .contains(&Install::FdbSet(VNI, A, ip("192.0.2.3"))),
        "{:?}",
        c.install
    );
    assert_eq!(rib.duplicates(), 0);
}

#[test]
fn graceful_restart_keeps_stale_routes_until_swept() {
    let mut rib = rib();
    let now = Instant::now();
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 0));
    rib.take_changes(now);
    rib.peer_down(0, true);
    assert_eq!(rib.peer_counts(0), (1, 1));
    assert!(
        rib.take_changes(now).install.is_empty(),
        "stale routes stay installed"
    );
    // The peer comes back and re-announces: no longer stale; its End-of-RIB sweeps nothing.
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 0));
    assert_eq!(rib.sweep(0, true), 0);
    rib.peer_down(0, true);
    assert_eq!(rib.sweep(0, true), 1);
    assert!(rib
        .take_changes(now)
        .install
        .contains(&Install::FdbRemove(VNI, A)));
    // Without graceful restart everything goes at once.
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 0));
    rib.take_changes(now);
    rib.peer_down(0, false);
    assert!(rib
        .take_changes(now)
        .install
        .contains(&Install::FdbRemove(VNI, A)));
}

#[test]
fn received_routes_are_bounded() {
    let mut rib = rib();
    let taken: Vec<Taken> = (0..10u8)
        .map(|i| {
            let mac = Mac([2, 0, 0, 0, 1, i]);
            rib.receive(0, &remote_mac("192.0.2.2", mac, None), got("192.0.2.2", 0))
        })
        .collect();
    assert_eq!(rib.counts().1, 8);
    assert_eq!(taken.iter().filter(|&&t| t == Taken::Full).count(), 2);
    // A replacement of a stored route is taken at the limit.
    let first = remote_mac("192.0.2.2", Mac([2, 0, 0, 0, 1, 0]), None);
    assert_eq!(rib.receive(0, &first, got("192.0.2.2", 1)), Taken::Stored);
}

#[test]
fn a_restart_keeps_restored_entries_until_reconciled() {
    let mut rib = rib();
    let mut installed = super::rib::Installed::default();
    installed.fdb.insert((VNI, A), ip("192.0.2.2"));
    let b = Mac([2, 0, 0, 0, 0, 0xb]);
    installed.fdb.insert((VNI, b), ip("192.0.2.3"));
    rib.restore(installed, vec![(VNI, Mac([2, 0, 0, 0, 0, 0xc]), vec![], 7)]);
    let c = rib.take_changes(Instant::now());
    assert_eq!(announced_seq(&c.advert, Mac([2, 0, 0, 0, 0, 0xc])), Some(7));
    assert!(c.install.is_empty(), "{:?}", c.install);
    // The peer re-sends A only; after its End-of-RIB, B goes.
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 0));
    rib.take_changes(Instant::now());
    rib.reconcile();
    let c = rib.take_changes(Instant::now());
    assert_eq!(c.install, vec![Install::FdbRemove(VNI, b)]);
}

#[test]
fn listing_marks_best_and_source() {
    let mut rib = rib();
    rib.receive(
        0,
        &remote_mac("192.0.2.2", A, Some("10.0.0.2")),
        got("192.0.2.2", 0),
    );
    rib.receive(0, &remote_mac("192.0.2.2", A, None), got("192.0.2.2", 0));
    rib.take_changes(Instant::now());
    let routes = rib.routes(Some(VNI), Some(2), |_| "192.0.2.250".into());
    assert_eq!(routes.len(), 2);
    assert!(routes.iter().all(|r| r.best && r.source == "192.0.2.250"));
    assert_eq!(routes[0].rt, vec!["65000:100".to_owned()]);
}

#[test]
fn flood_entries_the_operator_set_are_left_alone() {
    let mut rib = rib();
    let manual = ip("192.0.2.2");
    rib.set_networks(&networks(BTreeMap::from([(VNI, BTreeSet::from([manual]))])));
    rib.receive(0, &imet("192.0.2.2"), got("192.0.2.2", 0));
    rib.receive(0, &imet("192.0.2.3"), got("192.0.2.3", 0));
    let c = rib.take_changes(Instant::now());
    assert_eq!(c.install, vec![Install::FloodAdd(VNI, ip("192.0.2.3"))]);
    rib.withdraw(0, &imet("192.0.2.2"));
    assert!(rib.take_changes(Instant::now()).install.is_empty());
    // The operator takes over an entry EVPN added: EVPN forgets it without removing it; the
    // operator drops one EVPN still wants: EVPN adds it back.
    rib.set_networks(&networks(BTreeMap::from([(
        VNI,
        BTreeSet::from([ip("192.0.2.3")]),
    )])));
    assert!(rib.take_changes(Instant::now()).install.is_empty());
    rib.set_networks(&networks(BTreeMap::from([(VNI, BTreeSet::new())])));
    let c = rib.take_changes(Instant::now());
    assert_eq!(c.install, vec![Install::FloodAdd(VNI, ip("192.0.2.3"))]);
}

/// An ILA network (docs/ila.md, "Mappings"): its routes' next hop is the locator's ::1 (the
/// VTEP is not in the locator), or the configured next hop when it lies in the locator; no
/// type 3 route goes out nor is a flood list installed; this node's routes coming back carry
/// the locator next hop and are not taken; a container that moves to another host goes there
/// by the higher sequence number, and the remote locator next hop is what is installed.
#[test]
fn ila_networks_advertise_the_locator_as_next_hop_and_move_by_sequence() {
    let mut rib = rib();
    let now = Instant::now();
    let locator: std::net::Ipv6Addr = "fd00:1a:0:1::".parse().unwrap();
    rib.set_networks(&crate::Networks {
        flood: BTreeMap::from([(VNI, BTreeSet::new())]),
        ila: BTreeMap::from([(VNI, locator)]),
    });
    let mine = ip("fd00:1a:0:1::1");
    assert_eq!(rib.next_hop(VNI), mine);
    assert_eq!(
        rib.next_hop(VNI + 1),
        ip("192.0.2.1"),
        "other networks keep the VTEP"
    );
    rib.set_local(&[host(A, &["fd10::1"])], false);
    rib.receive(0, &imet("192.0.2.2"), got("192.0.2.2", 0));
    let c = rib.take_changes(now);
    let announced: Vec<_> = c
        .advert
        .iter()
        .filter_map(|a| match a {
            Advert::Announce(r, attrs) => Some((r.clone(), *attrs)),
            Advert::Withdraw(_) => None,
        })
        .collect();
    assert_eq!(
        announced.len(),
        2,
        "MAC and MAC+IP, no type 3: {announced:?}"
    );
    assert!(announced
        .iter()
        .all(|(r, a)| matches!(r, EvpnRoute::MacIp(_)) && a.next_hop == mine && a.seq == 0));
    assert!(!c.install.iter().any(|i| matches!(i, Install::FloodAdd(..))));
    // Our own route reflected back.
    let own = Received {
        vtep: mine,
        ..got("192.0.2.2", 0)
    };
    assert_eq!(
        rib.receive(1, &remote_mac("192.0.2.1", A, Some("fd10::1")), own),
        Taken::Unused
    );
    // The container shows up at host 2 (locator fd00:1a:0:2::/64) with sequence 1.
    let there = Received {
        vtep: ip("fd00:1a:0:2::1"),
        ..got("192.0.2.2", 1)
    };
    rib.receive(
        0,
        &remote_mac("192.0.2.2", A, Some("fd10::1")),
        there.clone(),
    );
    rib.receive(0, &remote_mac("192.0.2.2", A, None), there);
    let c = rib.take_changes(now);
    assert!(withdrew(&c.advert, A));
    assert!(c
        .install
        .contains(&Install::FdbSet(VNI, A, ip("fd00:1a:0:2::1"))));
    assert!(c
        .install
        .contains(&Install::NeighSet(VNI, ip("fd10::1"), A)));
    // A next hop configured inside the locator is kept.
    let config = api::BgpConfig {
        router_id: Ipv4Addr::new(192, 0, 2, 1),
        next_hop: Some(ip("fd00:1a:0:1::77")),
        neighbors: vec![],
        ..super::settings::tests::base()
    };
    rib.set_settings(Settings::resolve(&config, ip("fd00:100::1")).unwrap());
    assert_eq!(rib.next_hop(VNI), ip("fd00:1a:0:1::77"));
}
