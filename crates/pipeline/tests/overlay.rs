//! The routed overlay's tables (docs/design/overlay.md): weighted, consistent locator picks,
//! replication with a local copy, split horizon, direct delivery without a route, TTL on relay,
//! limits and errors — checked against a deliberately naive reference — and the pipeline's side:
//! FDB entries pointing at nodes, BUM to an overlay tree, learning behind the source node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::time::Instant;

use common::*;
use nvo_pipeline::overlay::{
    App, Hop, Locator, NodeId, OverlayDrop, OverlayError, OverlayLimits, OverlayTables,
};
use nvo_pipeline::{
    Action, Actions, BumMode, Decapsulated, DropReason, FdbDest, Limits, Mac, NetworkSpec,
    Pipeline, ProfileTag, TableError,
};
use nvo_wire::overlay::{Application, OverlayPacket, OverlayRepr, HEADER_LEN};
use proptest::prelude::*;

const OWN: NodeId = NodeId(1);
const B: NodeId = NodeId(2);
const C: NodeId = NodeId(3);
const TREE: NodeId = NodeId(0xff00_0001);
const ETH: App = App::Ethernet;

fn loc(addr: &str, weight: u16) -> Locator {
    Locator {
        addr: ip(addr),
        weight,
    }
}

fn tables() -> OverlayTables {
    let mut t = OverlayTables::new(OWN, OverlayLimits::default());
    t.set_locators(OWN, vec![loc("192.0.2.1", 1)]).unwrap();
    t.set_locators(B, vec![loc("192.0.2.2", 1)]).unwrap();
    t.set_locators(C, vec![loc("192.0.2.3", 1)]).unwrap();
    t
}

fn forward(t: &mut OverlayTables, dst: NodeId, flow: u32, exclude: Option<IpAddr>) -> Vec<Hop> {
    let mut out = Vec::new();
    t.forward(ETH, dst, flow, exclude, &mut out);
    out
}

/// A flow hash spread like a real one (SplitMix64), so that no test leans on `flow % total`
/// meeting consecutive numbers.
fn flows(n: usize) -> impl Iterator<Item = u32> {
    (0..n as u64).map(|i| {
        let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u32
    })
}

#[test]
fn weights_three_to_one_split_flows_75_25() {
    let mut t = tables();
    t.set_locators(B, vec![loc("192.0.2.2", 300), loc("198.51.100.2", 100)])
        .unwrap();
    let n = 20_000;
    let first = flows(n)
        .filter(|&f| forward(&mut t, B, f, None) == [Hop::Locator(ip("192.0.2.2"))])
        .count();
    let share = first as f64 / n as f64;
    assert!((0.70..=0.80).contains(&share), "share {share}");
    assert_eq!(t.counters().forwarded, n as u64);
}

#[test]
fn drained_locator_is_never_picked_and_all_drained_is_no_locator() {
    let mut t = tables();
    t.set_locators(B, vec![loc("192.0.2.2", 0), loc("198.51.100.2", 5)])
        .unwrap();
    for f in flows(2000) {
        assert_eq!(
            forward(&mut t, B, f, None),
            [Hop::Locator(ip("198.51.100.2"))]
        );
    }
    t.set_locators(B, vec![loc("192.0.2.2", 0), loc("198.51.100.2", 0)])
        .unwrap();
    assert!(forward(&mut t, B, 7, None).is_empty());
    let c = t.counters();
    assert_eq!((c.no_locator, c.no_route), (1, 1));
}

#[test]
fn without_a_route_the_destination_is_the_next_hop() {
    let mut t = tables();
    assert_eq!(forward(&mut t, C, 9, None), [Hop::Locator(ip("192.0.2.3"))]);
    assert_eq!(forward(&mut t, OWN, 9, None), [Hop::Local]);
    // Not in the LIB: nowhere to go.
    assert!(forward(&mut t, NodeId(77), 9, None).is_empty());
    let c = t.counters();
    assert_eq!(
        (c.forwarded, c.local, c.no_locator, c.no_route),
        (1, 1, 1, 1)
    );
    // A route through B wins over the direct path; removing it restores the direct path.
    t.set_route(ETH, C, vec![B]).unwrap();
    assert_eq!(forward(&mut t, C, 9, None), [Hop::Locator(ip("192.0.2.2"))]);
    // Routes are per application.
    let mut out = Vec::new();
    t.forward(App::Ipv4, C, 9, None, &mut out);
    assert_eq!(out, [Hop::Locator(ip("192.0.2.3"))]);
    t.remove_route(ETH, C).unwrap();
    assert_eq!(forward(&mut t, C, 9, None), [Hop::Locator(ip("192.0.2.3"))]);
}

#[test]
fn a_tree_replicates_with_a_local_copy() {
    let mut t = tables();
    t.set_route(ETH, TREE, vec![B, OWN, C]).unwrap();
    assert_eq!(
        forward(&mut t, TREE, 5, None),
        [
            Hop::Locator(ip("192.0.2.2")),
            Hop::Local,
            Hop::Locator(ip("192.0.2.3"))
        ]
    );
    let c = t.counters();
    assert_eq!((c.forwarded, c.local, c.replicated), (1, 1, 2));
    // Two next hops sharing a locator get one copy.
    t.set_locators(NodeId(4), vec![loc("192.0.2.3", 1)])
        .unwrap();
    t.set_route(ETH, TREE, vec![C, NodeId(4)]).unwrap();
    assert_eq!(
        forward(&mut t, TREE, 5, None),
        [Hop::Locator(ip("192.0.2.3"))]
    );
}

#[test]
fn split_horizon_skips_the_node_a_packet_came_from() {
    let mut t = tables();
    t.set_locators(B, vec![loc("192.0.2.2", 1), loc("198.51.100.2", 1)])
        .unwrap();
    t.set_route(ETH, TREE, vec![B, C]).unwrap();
    // From B's second locator: no copy to B at either of its locators.
    for f in flows(64) {
        assert_eq!(
            forward(&mut t, TREE, f, Some(ip("198.51.100.2"))),
            [Hop::Locator(ip("192.0.2.3"))]
        );
    }
    assert_eq!(t.counters().split_horizon, 64);
}

#[test]
fn forward_does_not_allocate_once_out_has_capacity() {
    let mut t = tables();
    t.set_route(ETH, TREE, vec![B, OWN, C]).unwrap();
    let mut out = Vec::with_capacity(OverlayLimits::default().max_next_hops);
    let before = (out.as_ptr(), out.capacity());
    for f in flows(100) {
        t.forward(ETH, TREE, f, None, &mut out);
        assert_eq!(out.len(), 3);
    }
    assert_eq!((out.as_ptr(), out.capacity()), before);
}

#[test]
fn table_changes_are_validated_and_refusals_change_nothing() {
    let limits = OverlayLimits {
        max_nodes: 2,
        max_locators: 2,
        max_routes: 1,
        max_next_hops: 2,
    };
    let mut t = OverlayTables::new(OWN, limits);
    let (a, b) = (ip("192.0.2.2"), ip("192.0.2.3"));
    let err = |r: Result<(), OverlayError>| r.unwrap_err();
    assert_eq!(
        err(t.set_locators(NodeId(0), vec![loc("192.0.2.2", 1)])),
        OverlayError::InvalidNode(NodeId(0))
    );
    assert_eq!(err(t.set_locators(B, vec![])), OverlayError::NoLocators(B));
    assert_eq!(
        err(t.set_locators(B, vec![loc("192.0.2.2", 1001)])),
        OverlayError::InvalidWeight {
            node: B,
            addr: a,
            weight: 1001
        }
    );
    assert_eq!(
        err(t.set_locators(B, vec![loc("192.0.2.2", 1), loc("192.0.2.2", 2)])),
        OverlayError::DuplicateLocator { node: B, addr: a }
    );
    assert_eq!(
        err(t.set_locators(B, vec![loc("239.1.1.1", 1)])),
        OverlayError::InvalidLocator {
            node: B,
            addr: ip("239.1.1.1")
        }
    );
    let three = vec![loc("192.0.2.2", 1), loc("192.0.2.3", 1), loc("::1", 1)];
    assert_eq!(
        err(t.set_locators(B, three)),
        OverlayError::TooManyLocators {
            node: B,
            count: 3,
            limit: 2
        }
    );
    assert!(t.nodes().is_empty());
    t.set_locators(B, vec![loc("192.0.2.2", 1000), loc("2001:db8::2", 0)])
        .unwrap();
    t.set_locators(C, vec![loc("192.0.2.3", 1)]).unwrap();
    assert_eq!(
        err(t.set_locators(NodeId(4), vec![loc("192.0.2.4", 1)])),
        OverlayError::TableFull {
            table: "node",
            limit: 2
        }
    );
    // Replacing an existing node is allowed at the limit.
    t.set_locators(C, vec![Locator { addr: b, weight: 7 }])
        .unwrap();
    assert_eq!(t.locators(C), Some(&[Locator { addr: b, weight: 7 }][..]));
    assert_eq!(t.nodes().iter().map(|n| n.0).collect::<Vec<_>>(), [B, C]);
    assert_eq!(
        err(t.remove_node(NodeId(9))),
        OverlayError::NoSuchNode(NodeId(9))
    );
    t.remove_node(C).unwrap();
    assert_eq!(t.locators(C), None);

    assert_eq!(
        err(t.set_route(ETH, NodeId(0), vec![B])),
        OverlayError::InvalidNode(NodeId(0))
    );
    assert_eq!(
        err(t.set_route(ETH, C, vec![B, NodeId(0)])),
        OverlayError::InvalidNode(NodeId(0))
    );
    assert_eq!(
        err(t.set_route(ETH, C, vec![])),
        OverlayError::NoNextHops { app: ETH, dst: C }
    );
    assert_eq!(
        err(t.set_route(ETH, C, vec![B, B])),
        OverlayError::DuplicateNextHop {
            app: ETH,
            dst: C,
            hop: B
        }
    );
    assert_eq!(
        err(t.set_route(ETH, C, vec![B, OWN, NodeId(5)])),
        OverlayError::TooManyNextHops {
            app: ETH,
            dst: C,
            count: 3,
            limit: 2
        }
    );
    t.set_route(ETH, C, vec![B, OWN]).unwrap();
    assert_eq!(
        err(t.set_route(ETH, TREE, vec![B])),
        OverlayError::TableFull {
            table: "route",
            limit: 1
        }
    );
    // Another application has its own RIB and its own limit.
    t.set_route(App::Ipv6, TREE, vec![B]).unwrap();
    t.set_route(ETH, C, vec![B]).unwrap();
    assert_eq!(t.routes(ETH), [(C, vec![B])]);
    assert_eq!(t.route(App::Ipv6, TREE), Some(&[B][..]));
    assert_eq!(
        err(t.remove_route(App::Ipv4, C)),
        OverlayError::NoSuchRoute {
            app: App::Ipv4,
            dst: C
        }
    );
    assert_eq!(
        err(t.set_own(NodeId(0))),
        OverlayError::InvalidNode(NodeId(0))
    );
    assert_eq!(t.own(), OWN);
    t.set_own(NodeId(42)).unwrap();
    assert_eq!(t.own(), NodeId(42));
}

#[test]
fn error_messages_name_the_values() {
    let e = OverlayError::InvalidWeight {
        node: B,
        addr: ip("192.0.2.2"),
        weight: 1001,
    };
    assert_eq!(
        e.to_string(),
        "weight 1001 of locator 192.0.2.2 of node 2 is out of range; use 0..=1000 (0 drains it)"
    );
    assert_eq!(
        OverlayError::NoSuchRoute {
            app: App::Ipv6,
            dst: C
        }
        .to_string(),
        "no ipv6 route to node 3"
    );
}

#[test]
fn apps_node_ids_and_counters_as_the_api_shows_them() {
    for (app, n, name) in [
        (App::Ethernet, 7, "ethernet"),
        (App::Ipv4, 4, "ipv4"),
        (App::Ipv6, 6, "ipv6"),
    ] {
        assert_eq!((App::from_number(n), app.number()), (Some(app), n));
        assert_eq!(app.to_string(), name);
        assert_eq!(name.parse::<App>().unwrap(), app);
        assert_eq!(n.to_string().parse::<App>().unwrap(), app);
        assert_eq!(serde_json::to_value(app).unwrap(), name);
        assert_eq!(
            serde_json::from_value::<App>(serde_json::json!(name)).unwrap(),
            app
        );
    }
    assert_eq!(App::from_number(5), None);
    assert_eq!(
        "ipx".parse::<App>(),
        Err(OverlayError::UnknownApp("ipx".into()))
    );
    assert_eq!(serde_json::to_value(NodeId(7)).unwrap(), 7);
    assert_eq!(NodeId(7).to_string(), "7");
    assert_eq!(NodeId::new(0), Err(OverlayError::InvalidNode(NodeId(0))));
    assert_eq!(
        serde_json::to_value(loc("192.0.2.2", 3)).unwrap(),
        serde_json::json!({"addr": "192.0.2.2", "weight": 3})
    );
    let json = serde_json::to_value(tables().counters()).unwrap();
    for key in [
        "forwarded",
        "relayed",
        "local",
        "ttl_expired",
        "no_route",
        "no_locator",
        "split_horizon",
        "replicated",
        "malformed",
    ] {
        assert_eq!(json[key], 0, "{key}");
    }
}

/// An overlay packet (header + a 4-byte payload) from `src` to `dst`.
fn packet(app: u8, ttl: u8, dst: NodeId, src: NodeId, flow: u32) -> Vec<u8> {
    let mut v = vec![0u8; HEADER_LEN + 4];
    let repr = OverlayRepr {
        app: Application::from(app),
        ttl,
        flags: 0,
        vni: 100,
        flow_hash: flow,
        dst_node: dst.0,
        src_node: src.0,
    };
    repr.emit(&mut OverlayPacket::new_unchecked(&mut v[..]))
        .unwrap();
    v[HEADER_LEN..].copy_from_slice(b"data");
    v
}

#[test]
fn a_relay_takes_one_off_the_ttl_and_touches_nothing_else() {
    let mut t = tables();
    let mut out = Vec::new();
    let mut p = packet(7, 5, C, B, 0xcafe);
    let before = p.clone();
    let arrival = t.receive(&mut p, ip("192.0.2.2"), &mut out).unwrap();
    assert_eq!(
        (arrival.app, arrival.src, arrival.dst, arrival.ttl),
        (ETH, B, C, 5)
    );
    assert_eq!((arrival.vni.0, arrival.flow), (100, 0xcafe));
    assert_eq!(out, [Hop::Locator(ip("192.0.2.3"))]);
    assert_eq!(p[2], 4);
    assert_eq!((&p[..2], &p[3..]), (&before[..2], &before[3..]));
    assert_eq!(t.counters().relayed, 1);
    // For this node: a local copy and no TTL change.
    let mut p = packet(7, 1, OWN, B, 1);
    t.receive(&mut p, ip("192.0.2.2"), &mut out).unwrap();
    assert_eq!((out.as_slice(), p[2]), (&[Hop::Local][..], 1));
}

#[test]
fn ttl_one_or_zero_on_arrival_stops_relaying_but_not_the_local_copy() {
    let mut t = tables();
    let mut out = Vec::new();
    for ttl in [0, 1] {
        let mut p = packet(7, ttl, C, B, 3);
        let before = p.clone();
        assert_eq!(
            t.receive(&mut p, ip("192.0.2.2"), &mut out),
            Err(OverlayDrop::TtlExpired { ttl })
        );
        assert_eq!(
            OverlayDrop::TtlExpired { ttl }.reason(),
            DropReason::HopLimit
        );
        assert!(out.is_empty());
        assert_eq!(p, before);
    }
    // A tree member at the end of the TTL keeps its copy.
    t.set_route(ETH, TREE, vec![OWN, C]).unwrap();
    let mut p = packet(7, 1, TREE, B, 3);
    t.receive(&mut p, ip("192.0.2.2"), &mut out).unwrap();
    assert_eq!(out, [Hop::Local]);
    let c = t.counters();
    assert_eq!((c.ttl_expired, c.relayed, c.local), (3, 0, 1));
}

#[test]
fn a_routing_loop_dies_by_ttl() {
    // Nodes 1 → 2 → 4 → 1 … all route C to the next one around the ring: the packet circles
    // until its TTL runs out.
    let ring = [OWN, B, NodeId(4)];
    let addr = |n: NodeId| IpAddr::from([192, 0, 2, n.0 as u8]);
    let mut nodes: Vec<OverlayTables> = (0..3)
        .map(|i| {
            let next = ring[(i + 1) % 3];
            let mut t = OverlayTables::new(ring[i], OverlayLimits::default());
            t.set_locators(
                next,
                vec![Locator {
                    addr: addr(next),
                    weight: 1,
                }],
            )
            .unwrap();
            t.set_route(ETH, C, vec![next]).unwrap();
            t
        })
        .collect();
    let mut p = packet(7, 16, C, OWN, 1);
    let mut out = Vec::new();
    let mut hops = 0;
    loop {
        let (at, from) = ((hops + 1) % 3, ring[hops % 3]);
        match nodes[at].receive(&mut p, addr(from), &mut out) {
            Ok(_) => hops += 1,
            Err(OverlayDrop::TtlExpired { ttl: 1 }) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(hops < 16);
    }
    assert_eq!(hops, 15);
    let expired: u64 = nodes.iter().map(|t| t.counters().ttl_expired).sum();
    assert_eq!(expired, 1);
}

#[test]
fn two_nodes_routing_to_each_other_stop_at_split_horizon() {
    // B routes C back to node 1, where the packet came from: no copy goes back.
    let mut b = OverlayTables::new(B, OverlayLimits::default());
    b.set_locators(OWN, vec![loc("192.0.2.1", 1)]).unwrap();
    b.set_route(ETH, C, vec![OWN]).unwrap();
    let mut p = packet(7, 16, C, OWN, 1);
    let mut out = Vec::new();
    assert_eq!(
        b.receive(&mut p, ip("192.0.2.1"), &mut out),
        Err(OverlayDrop::NoRoute(C))
    );
    let c = b.counters();
    assert_eq!((c.split_horizon, c.no_route, c.relayed), (1, 1, 0));
}

#[test]
fn malformed_headers_are_refused_and_counted() {
    let mut t = tables();
    let mut out = vec![Hop::Local];
    let mut bad_version = packet(7, 5, C, B, 0);
    bad_version[0] = 2;
    for mut p in [
        vec![1u8; HEADER_LEN - 1],
        bad_version,
        packet(9, 5, C, B, 0),
        packet(7, 5, NodeId(0), B, 0),
        packet(7, 5, C, NodeId(0), 0),
    ] {
        let got = t.receive(&mut p, ip("192.0.2.2"), &mut out);
        assert_eq!(got, Err(OverlayDrop::Malformed));
        assert!(out.is_empty());
    }
    assert_eq!(t.counters().malformed, 5);
    let mut p = packet(7, 5, NodeId(9), B, 0);
    assert_eq!(
        t.receive(&mut p, ip("192.0.2.2"), &mut out),
        Err(OverlayDrop::NoRoute(NodeId(9)))
    );
}

/// The naive reference: the contract's words, one step at a time, with fresh allocations.
fn reference(
    own: NodeId,
    lib: &[(NodeId, Vec<Locator>)],
    route: Option<&[NodeId]>,
    dst: NodeId,
    flow: u32,
    exclude: Option<IpAddr>,
) -> Vec<Hop> {
    let next_hops = route.map(<[NodeId]>::to_vec).unwrap_or_else(|| vec![dst]);
    let mut out = Vec::new();
    for hop in next_hops {
        let h = if hop == own {
            Some(Hop::Local)
        } else {
            lib.iter().find(|(n, _)| *n == hop).and_then(|(_, locs)| {
                if locs.iter().any(|l| Some(l.addr) == exclude) {
                    return None;
                }
                // Expand every locator into `weight` slots and index them by the flow.
                let slots: Vec<IpAddr> = locs
                    .iter()
                    .flat_map(|l| std::iter::repeat_n(l.addr, usize::from(l.weight)))
                    .collect();
                (!slots.is_empty()).then(|| Hop::Locator(slots[flow as usize % slots.len()]))
            })
        };
        if let Some(h) = h.filter(|h| !out.contains(h)) {
            out.push(h);
        }
    }
    out
}

fn arb_locators() -> impl Strategy<Value = Vec<Locator>> {
    proptest::collection::btree_map(0u8..6, 0u16..=1000, 1..=4).prop_map(|m| {
        m.into_iter()
            .map(|(host, weight)| Locator {
                addr: IpAddr::from([10, 0, 0, host + 1]),
                weight,
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn forward_agrees_with_the_reference(
        lib in proptest::collection::btree_map(1u32..6, arb_locators(), 0..5),
        route in proptest::option::of(proptest::sample::subsequence(vec![1u32, 2, 3, 4, 5], 1..=5)),
        dst in 1u32..7,
        flows in proptest::collection::vec(any::<u32>(), 1..20),
        exclude in proptest::option::of(0u8..7),
    ) {
        let lib: Vec<(NodeId, Vec<Locator>)> =
            lib.into_iter().map(|(n, l)| (NodeId(n), l)).collect();
        let route: Option<Vec<NodeId>> = route.map(|r| r.into_iter().map(NodeId).collect());
        let exclude = exclude.map(|h| IpAddr::from([10, 0, 0, h + 1]));
        let mut t = OverlayTables::new(OWN, OverlayLimits::default());
        for (n, l) in &lib {
            t.set_locators(*n, l.clone()).unwrap();
        }
        if let Some(r) = &route {
            t.set_route(ETH, NodeId(dst), r.clone()).unwrap();
        }
        let mut out = Vec::new();
        for flow in flows {
            t.forward(ETH, NodeId(dst), flow, exclude, &mut out);
            let want = reference(OWN, &lib, route.as_deref(), NodeId(dst), flow, exclude);
            prop_assert_eq!(&out, &want);
            // One flow, one path: asking again changes nothing.
            let again = out.clone();
            t.forward(ETH, NodeId(dst), flow, exclude, &mut out);
            prop_assert_eq!(&out, &again);
            // A drained locator is never picked: some node has the address with a weight
            // (two nodes may share an address with different weights).
            for hop in &out {
                if let Hop::Locator(addr) = hop {
                    let live = lib.iter().flat_map(|(_, l)| l).any(|l| l.addr == *addr && l.weight > 0);
                    prop_assert!(live, "{} picked but drained everywhere", addr);
                }
            }
        }
    }
}

// ---- The pipeline's side ------------------------------------------------------------------

const OVERLAY: ProfileTag = ProfileTag(7);

fn overlay_pipeline(bum: BumMode) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    let spec = NetworkSpec {
        bum,
        profile: OVERLAY,
        ..NetworkSpec::new(VNI)
    };
    p.add_network(spec).unwrap();
    for port in [P1, P2] {
        p.add_port(port, VNI).unwrap();
    }
    p
}

fn from_node(src: IpAddr, node: Option<NodeId>) -> Decapsulated {
    Decapsulated {
        src,
        vni: VNI,
        profile: OVERLAY,
        dont_learn: false,
        src_node: node,
    }
}

fn encap_node(node: NodeId) -> Action {
    Action::EncapNode {
        node,
        vni: VNI,
        entropy: 0,
        profile: OVERLAY,
    }
}

#[test]
fn a_static_entry_at_a_node_encapsulates_to_it() {
    let mut p = overlay_pipeline(BumMode::HeadEnd);
    let t = Instant::now();
    let mut a = Actions::new();
    p.fdb_add_static(VNI, mac(0xc), FdbDest::Node(C)).unwrap();
    p.from_port(P1, &frame(mac(0xc), mac(0xa)), t, &mut a);
    assert_eq!(plain(&a), [encap_node(C)]);
    let Action::EncapNode { entropy, .. } = a.as_slice()[0] else {
        panic!("{a:?}");
    };
    // The flow hash is the one a VXLAN tunnel would carry for the same frame.
    p.fdb_add_static(VNI, mac(0xc), FdbDest::Remote(r1()))
        .unwrap();
    p.from_port(P1, &frame(mac(0xc), mac(0xa)), t, &mut a);
    assert!(matches!(a.as_slice(), [Action::Encap { entropy: e, .. }] if *e == entropy));
    p.fdb_add_static(VNI, mac(0xc), FdbDest::Node(C)).unwrap();
    assert_eq!(p.counters().networks[&VNI].encap_unicast, 2);
    let views = p.fdb_entries(VNI, t).unwrap();
    let view = views.iter().find(|v| v.mac == mac(0xc)).unwrap();
    assert_eq!(view.dest, FdbDest::Node(C));
    assert_eq!(
        serde_json::to_value(view).unwrap(),
        serde_json::json!({"mac": "02:00:00:00:00:0c", "node": 3, "origin": "static", "age_s": 0})
    );
    assert_eq!(
        p.fdb_add_static(VNI, mac(0xe), FdbDest::Node(NodeId(0))),
        Err(TableError::InvalidNode(NodeId(0)))
    );
}

#[test]
fn bum_in_overlay_mode_goes_once_to_the_tree() {
    let mut p = overlay_pipeline(BumMode::Overlay(TREE));
    // The flood list is not used in overlay mode.
    p.flood_add(VNI, r1()).unwrap();
    let mut a = Actions::new();
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0xa)), Instant::now(), &mut a);
    assert_eq!(plain(&a), [deliver(P2), encap_node(TREE)]);
    assert_eq!(p.counters().networks[&VNI].encap_flood, 1);
    let view = serde_json::to_value(p.network(VNI).unwrap()).unwrap();
    assert_eq!(
        view["bum"],
        serde_json::json!({"mode": "overlay", "node": 0xff00_0001u32})
    );
    let refused = NetworkSpec {
        bum: BumMode::Overlay(NodeId(0)),
        ..NetworkSpec::new(nvo_pipeline::Vni(200))
    };
    assert_eq!(
        p.add_network(refused),
        Err(TableError::InvalidNode(NodeId(0)))
    );
}

#[test]
fn learning_from_an_overlay_packet_stores_the_source_node() {
    let mut p = overlay_pipeline(BumMode::Overlay(TREE));
    // The overlay nodes' locators, as the datapath tells the pipeline (accept_remotes).
    p.set_overlay_locators([ip("192.0.2.2"), ip("192.0.2.3"), r1()]);
    let t = Instant::now();
    let mut a = Actions::new();
    let inner = frame(Mac::BROADCAST, mac(0xc));
    // C's frame first arrives through relay B's address, then directly: the MAC stays at C.
    p.from_decapsulated(from_node(ip("192.0.2.2"), Some(C)), 80, &inner, t, &mut a);
    assert_eq!(plain(&a), [deliver(P1), deliver(P2)]);
    p.from_decapsulated(from_node(ip("192.0.2.3"), Some(C)), 80, &inner, t, &mut a);
    let entries = p.fdb_entries(VNI, t).unwrap();
    assert_eq!(entries[0].dest, FdbDest::Node(C));
    let c = p.counters().networks[&VNI];
    assert_eq!((c.learned, c.moves), (1, 0));
    p.from_port(P1, &frame(mac(0xc), mac(0xa)), t, &mut a);
    assert_eq!(plain(&a), [encap_node(C)]);
    // Without a source node the underlay address is learned, as for any tunnel.
    p.from_decapsulated(
        from_node(r1(), None),
        80,
        &frame(mac(0xa), mac(0xd)),
        t,
        &mut a,
    );
    let entries = p.fdb_entries(VNI, t).unwrap();
    let d = entries.iter().find(|e| e.mac == mac(0xd)).unwrap();
    assert_eq!(d.dest, FdbDest::Remote(r1()));
}

#[test]
fn an_underlay_frame_for_a_node_is_not_sent_back_out() {
    let mut p = overlay_pipeline(BumMode::Overlay(TREE));
    p.set_overlay_locators([ip("192.0.2.2")]);
    let t = Instant::now();
    let mut a = Actions::new();
    p.fdb_add_static(VNI, mac(0xc), FdbDest::Node(C)).unwrap();
    p.from_decapsulated(
        from_node(ip("192.0.2.2"), Some(B)),
        80,
        &frame(mac(0xc), mac(0xb)),
        t,
        &mut a,
    );
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::RemoteToRemote)]);
}
