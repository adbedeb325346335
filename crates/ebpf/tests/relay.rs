//! The overlay relay in the kernel against `OverlayTables::receive`: the same overlay packets
//! through the XDP relay and the tc underlay program (BPF_PROG_RUN) and through the pipeline's
//! overlay tables. Where the kernel relays, it sends exactly the packet nvod's relay sends (the
//! pipeline's locator, TTL − 1, nothing else of the header or payload changed, the outer headers
//! nvod's overlay socket writes, a valid UDP checksum); where it does not, the packet goes on
//! to nvod whole — and the kernel must relay every packet the relay map covers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::*;
use nvo_ebpf::layout;
use nvo_ebpf::mirror::relay_entries as entries;
use nvo_ebpf::testrun::{XDP_PASS, XDP_TX};
use nvo_pipeline::overlay::{App, Hop, Locator, NodeId, OverlayLimits, OverlayTables};
use proptest::prelude::*;

const OVERLAY_PORT: u16 = 60002;
const R5: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 5);
const STRANGER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 7);
/// The overlay socket's source ports in these tests.
const SPORTS: [u16; 8] = [50000, 50001, 50002, 50003, 50004, 50005, 50006, 50007];

fn loc(addr: Ipv4Addr, weight: u16) -> Locator {
    Locator {
        addr: IpAddr::V4(addr),
        weight,
    }
}

/// Node 1 (this one) with a LIB and routes of every shape the relay meets.
fn tables() -> OverlayTables {
    let mut t = OverlayTables::new(NodeId(1), OverlayLimits::default());
    t.set_locators(NodeId(1), vec![loc(LOCATOR, 1)]).unwrap();
    t.set_locators(NodeId(2), vec![loc(R2, 1)]).unwrap();
    t.set_locators(NodeId(3), vec![loc(R3, 1), loc(R4, 3)])
        .unwrap();
    t.set_locators(NodeId(5), vec![loc(R5, 0)]).unwrap(); // drained
    t.set_locators(
        NodeId(6),
        vec![Locator {
            addr: "fd00::6".parse().unwrap(),
            weight: 1,
        }],
    )
    .unwrap();
    let eth = App::Ethernet;
    t.set_route(eth, NodeId(9), vec![NodeId(3)]).unwrap(); // through one relay
    t.set_route(eth, NodeId(10), vec![NodeId(2), NodeId(3)])
        .unwrap(); // a tree
    t.set_route(eth, NodeId(11), vec![NodeId(1)]).unwrap(); // here
    t.set_route(eth, NodeId(12), vec![NodeId(7)]).unwrap(); // a hop without locators
    t.set_route(App::Ipv4, NodeId(2), vec![NodeId(3)]).unwrap(); // per application
    t
}

/// One overlay packet as it arrives: Ethernet to the underlay's MAC, IPv4 from `from` to the
/// locator, UDP to the overlay port (with a checksum unless `csum` is false), the header.
#[derive(Debug, Clone)]
struct Arrival {
    from: Ipv4Addr,
    version: u8,
    app: u8,
    ttl: u8,
    flow: u32,
    dst: u32,
    src: u32,
    payload: Vec<u8>,
    csum: bool,
}

fn udp_checksum(src: [u8; 4], dst: [u8; 4], udp: &[u8]) -> u16 {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
    pseudo.extend_from_slice(udp);
    match checksum(&pseudo) {
        0 => 0xffff,
        c => c,
    }
}

/// The UDP payload: the overlay header, then the payload.
fn overlay(a: &Arrival) -> Vec<u8> {
    let mut h = vec![a.version, a.app, a.ttl, 0, 0, 0x12, 0x34, 0];
    h.extend_from_slice(&a.flow.to_be_bytes());
    h.extend_from_slice(&a.dst.to_be_bytes());
    h.extend_from_slice(&a.src.to_be_bytes());
    h.extend_from_slice(&a.payload);
    h
}

/// Ethernet + IPv4 + UDP around `payload`, from `src` to `dst`.
#[allow(clippy::too_many_arguments)]
fn frame(
    dmac: [u8; 6],
    smac: [u8; 6],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
    sport: u16,
    payload: &[u8],
    csum: bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&dmac);
    out.extend_from_slice(&smac);
    out.extend_from_slice(&[0x08, 0x00]);
    let total = 28 + payload.len();
    let mut ip = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        ttl,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&ip);
    let mut udp = Vec::new();
    udp.extend_from_slice(&sport.to_be_bytes());
    udp.extend_from_slice(&OVERLAY_PORT.to_be_bytes());
    udp.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    if csum {
        let c = udp_checksum(src.octets(), dst.octets(), &udp);
        udp[6..8].copy_from_slice(&c.to_be_bytes());
    }
    out.extend_from_slice(&udp);
    out
}

fn arriving(fx: &Fixture, a: &Arrival) -> Vec<u8> {
    let far = [2, 0, 0, 0, 8, a.from.octets()[3]];
    frame(
        fx.ul_mac,
        far,
        a.from,
        LOCATOR,
        63,
        41000,
        &overlay(a),
        a.csum,
    )
}

/// What the pipeline's relay does with `a`: the packet nvod's socket sends, if it sends
/// exactly one copy (the only case the kernel may take), and whether the relay map covers it.
fn reference(fx: &Fixture, t: &OverlayTables, a: &Arrival) -> (Option<Vec<u8>>, bool) {
    let mut t = t.clone();
    let mut packet = overlay(a);
    let mut hops = Vec::new();
    let ok = t
        .receive(&mut packet, IpAddr::V4(a.from), &mut hops)
        .is_ok();
    let covered = entries(&t).contains_key(&layout::RelayKey {
        dst: a.dst,
        app: a.app,
        pad: [0; 3],
    });
    let sent = match (ok, hops.as_slice()) {
        (true, [Hop::Locator(IpAddr::V4(to))]) => {
            let sport = SPORTS[usize::from(a.flow as u16) % SPORTS.len()];
            Some(frame(
                remote_mac(*to),
                fx.ul_mac,
                LOCATOR,
                *to,
                64,
                sport,
                &packet,
                a.csum,
            ))
        }
        _ => None,
    };
    (sent, covered)
}

/// The kernel's output against the reference's; checksums checked for validity (a sender's
/// checksum is updated, not recomputed, so equal bytes are expected too).
/// `xdp`: the XDP relay sends no UDP checksum (it cannot tell a partial one from a full one).
fn check(what: &str, out: Option<&[u8]>, expected: &Option<Vec<u8>>, covered: bool, xdp: bool) {
    match (out, expected) {
        (Some(k), Some(r)) => {
            let mut r = r.clone();
            if xdp {
                r[40] = 0;
                r[41] = 0;
            }
            assert_eq!(k, &r[..], "{what}: relayed packet (kernel, then pipeline)");
            let c = u16::from_be_bytes([k[40], k[41]]);
            if c != 0 {
                let mut udp = k[34..].to_vec();
                udp[6] = 0;
                udp[7] = 0;
                let want = udp_checksum(
                    k[26..30].try_into().unwrap(),
                    k[30..34].try_into().unwrap(),
                    &udp,
                );
                assert_eq!(c, want, "{what}: UDP checksum");
            }
        }
        (Some(k), None) => panic!("{what}: the kernel relayed what nvod would not: {k:02x?}"),
        (None, Some(_)) if covered => {
            panic!("{what}: the relay map covers this packet but the kernel left it to nvod")
        }
        (None, _) => {}
    }
}

fn fixture(tag: &str) -> (Fixture, OverlayTables) {
    let mut fx = Fixture::new(tag);
    let t = tables();
    fx.mirror.set_overlay_socket(OVERLAY_PORT, &SPORTS).unwrap();
    fx.mirror.sync_relay(&t);
    (fx, t)
}

/// Both kernel paths on one packet: (XDP's output, tc's output), None where they passed it.
fn kernel(fx: &Fixture, packet: &[u8]) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let ul0 = nvo_io::iface::interface("ul0").unwrap().ifindex;
    let x = fx.mirror.kernel().run_relay(packet, ul0).unwrap();
    let xdp = match x.retval {
        XDP_TX => Some(x.data),
        XDP_PASS => {
            assert_eq!(x.data, packet, "XDP_PASS must leave the packet as it was");
            None
        }
        other => panic!("XDP relay returned {other}"),
    };
    let r = fx
        .mirror
        .kernel()
        .run("nvo_underlay", packet, ul0, 0)
        .unwrap();
    let tc = (r.verdict[0] == layout::VERDICT_REMOTE).then_some(r.data);
    (xdp, tc)
}

fn base() -> Arrival {
    Arrival {
        from: R2,
        version: 1,
        app: 7,
        ttl: 8,
        flow: 0x0102_0304,
        dst: 9,
        src: 2,
        payload: vec![0xab; 60],
        csum: true,
    }
}

#[test]
fn the_kernel_relays_as_the_pipeline_does_and_leaves_it_the_rest() {
    let (fx, t) = fixture("rl1");
    let cases: Vec<(&str, Arrival)> = vec![
        ("through one relay", base()),
        (
            "without a UDP checksum",
            Arrival {
                csum: false,
                ..base()
            },
        ),
        (
            "another flow, the other locator",
            Arrival { flow: 2, ..base() },
        ),
        (
            "direct to a node",
            Arrival {
                dst: 2,
                from: R3,
                ..base()
            },
        ),
        ("the last hop it may take", Arrival { ttl: 2, ..base() }),
        ("TTL 1: expired, nvod's", Arrival { ttl: 1, ..base() }),
        ("TTL 0", Arrival { ttl: 0, ..base() }),
        ("split horizon", Arrival { from: R4, ..base() }),
        ("a tree", Arrival { dst: 10, ..base() }),
        ("for this node by route", Arrival { dst: 11, ..base() }),
        ("for this node", Arrival { dst: 1, ..base() }),
        ("hop without locators", Arrival { dst: 12, ..base() }),
        ("drained", Arrival { dst: 5, ..base() }),
        ("IPv6 locator", Arrival { dst: 6, ..base() }),
        ("unknown node", Arrival { dst: 99, ..base() }),
        ("plain tunnel (dst 0)", Arrival { dst: 0, ..base() }),
        ("source node 0", Arrival { src: 0, ..base() }),
        (
            "version 2",
            Arrival {
                version: 2,
                ..base()
            },
        ),
        ("unknown application", Arrival { app: 9, ..base() }),
        (
            "IPv4 application, its own route",
            Arrival {
                app: 4,
                dst: 2,
                ..base()
            },
        ),
        (
            "IPv6 application, direct",
            Arrival {
                app: 6,
                dst: 3,
                ..base()
            },
        ),
        (
            "no payload",
            Arrival {
                payload: vec![],
                ..base()
            },
        ),
        (
            "odd payload",
            Arrival {
                payload: vec![1, 2, 3],
                ..base()
            },
        ),
        (
            "from a stranger",
            Arrival {
                from: STRANGER,
                ..base()
            },
        ),
    ];
    let mut relayed = 0;
    for (what, a) in &cases {
        let packet = arriving(&fx, a);
        let (expected, covered) = reference(&fx, &t, a);
        let (xdp, tc) = kernel(&fx, &packet);
        check(
            &format!("{what} (XDP)"),
            xdp.as_deref(),
            &expected,
            covered,
            true,
        );
        check(
            &format!("{what} (tc)"),
            tc.as_deref(),
            &expected,
            covered,
            false,
        );
        relayed += usize::from(xdp.is_some());
    }
    assert!(
        relayed >= 8,
        "the kernel relayed only {relayed} of the cases"
    );
    // Both programs count what they relay as nvod counts it.
    let n = fx.mirror.node_counters();
    assert_eq!(n.relayed as usize, 2 * relayed, "relayed counter");
}

/// `nvo monitor --type trace`: each packet a kernel relay sends is one trace record (kind
/// TRACE_RELAY, the next hop's locator, the packet as sent) while traces are asked for, and
/// none otherwise — from the XDP relay and from the tc one alike.
#[test]
fn relayed_packets_are_traced_while_traces_are_asked_for() {
    let (mut fx, t) = fixture("rl4");
    let a = base();
    let packet = arriving(&fx, &a);
    let (expected, _) = reference(&fx, &t, &a);
    let expected = expected.expect("the reference relays the base packet");
    let to = u32::from_ne_bytes(expected[30..34].try_into().unwrap());
    let records = |fx: &mut Fixture| {
        let mut out = Vec::new();
        fx.mirror
            .drain_monitor(|hdr, _, bytes| out.push((*hdr, bytes.to_vec())));
        out
    };

    fx.mirror.set_monitor_bits(layout::MONITOR_ON_EVENTS);
    let (xdp, tc) = kernel(&fx, &packet);
    assert!(xdp.is_some() && tc.is_some(), "both relay it");
    assert!(records(&mut fx).is_empty(), "events only: no traces");

    fx.mirror.set_monitor_bits(layout::MONITOR_ON_TRACES);
    let (xdp, tc) = kernel(&fx, &packet);
    let got = records(&mut fx);
    assert_eq!(got.len(), 2, "one trace per relay program: {got:?}");
    for ((hdr, bytes), sent) in got.iter().zip([xdp.unwrap(), tc.unwrap()]) {
        assert_eq!(hdr.kind, layout::MONITOR_TRACE, "{hdr:?}");
        assert_eq!(hdr.arg, layout::TRACE_RELAY, "{hdr:?}");
        assert_eq!(hdr.target, to, "to the next hop's locator");
        assert_eq!(hdr.len as usize, sent.len());
        let n = sent.len().min(layout::MONITOR_CAPTURE);
        assert_eq!(&bytes[..], &sent[..n], "the packet as sent");
    }

    fx.mirror.set_monitor_bits(0);
    kernel(&fx, &packet);
    assert!(records(&mut fx).is_empty(), "off: nothing recorded");
}

#[test]
fn malformed_outer_headers_go_to_nvod() {
    let (fx, _) = fixture("rl2");
    let good = arriving(&fx, &base());
    assert!(
        kernel(&fx, &good).0.is_some(),
        "the unchanged packet is relayed"
    );
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut p = good.clone();
    p[14] = 0x46; // IP options
    cases.push(("IP options", p));
    let mut p = good.clone();
    p[20] = 0x20; // more fragments
    cases.push(("fragment", p));
    let mut p = good.clone();
    p[37] = 0x01; // another UDP port
    cases.push(("other port", p));
    let mut p = good.clone();
    p[39] = p[39].wrapping_add(1); // UDP length disagrees
    cases.push(("UDP length", p));
    let mut p = good.clone();
    p.push(0); // trailing byte beyond the IP length
    cases.push(("IP length", p));
    let mut p = good.clone();
    p[33] = 9; // to another address
    cases.push(("not to the locator", p));
    cases.push(("truncated header", good[..50].to_vec()));
    for (what, p) in cases {
        let (xdp, tc) = kernel(&fx, &p);
        assert!(xdp.is_none() && tc.is_none(), "{what}: must go to nvod");
    }
}

#[test]
fn the_relay_map_follows_the_tables() {
    let (mut fx, mut t) = fixture("rl3");
    let a = base();
    assert!(kernel(&fx, &arriving(&fx, &a)).0.is_some());
    // The route to 9 becomes a tree: nvod's from now on.
    t.set_route(App::Ethernet, NodeId(9), vec![NodeId(2), NodeId(3)])
        .unwrap();
    fx.mirror.sync_relay(&t);
    assert!(kernel(&fx, &arriving(&fx, &a)).0.is_none());
    // Removed: 9 is reached directly, and has no locators.
    t.remove_route(App::Ethernet, NodeId(9)).unwrap();
    fx.mirror.sync_relay(&t);
    assert!(kernel(&fx, &arriving(&fx, &a)).0.is_none());
    // Node 9 gets a locator: relayed straight to it.
    t.set_locators(NodeId(9), vec![loc(R5, 1)]).unwrap();
    fx.mirror.sync_relay(&t);
    let (expected, covered) = reference(&fx, &t, &a);
    assert!(covered);
    check(
        "to node 9 directly",
        kernel(&fx, &arriving(&fx, &a)).0.as_deref(),
        &expected,
        covered,
        true,
    );
    assert_eq!(fx.mirror.relay_entries(), entries(&t).len());
}

fn arrival() -> impl Strategy<Value = Arrival> {
    (
        prop::sample::select(vec![R2, R3, R4, R5, STRANGER]),
        prop::sample::select(vec![1u8, 1, 1, 2]),
        prop::sample::select(vec![7u8, 7, 4, 6, 0]),
        0u8..5,
        any::<u32>(),
        prop::sample::select(vec![0u32, 1, 2, 3, 5, 6, 9, 10, 11, 12, 99]),
        prop::sample::select(vec![0u32, 2, 8]),
        prop::collection::vec(any::<u8>(), 0..80),
        any::<bool>(),
    )
        .prop_map(
            |(from, version, app, ttl, flow, dst, src, payload, csum)| Arrival {
                from,
                version,
                app,
                ttl,
                flow,
                dst,
                src,
                payload,
                csum,
            },
        )
}

/// Random packets, 400 of them, through one fixture (a namespace per case would cost more
/// than the runs).
#[test]
fn random_overlay_packets() {
    use proptest::test_runner::{Config, TestRunner};
    let (fx, t) = fixture("rlp");
    let mut runner = TestRunner::new(Config {
        cases: 400,
        ..Config::default()
    });
    runner
        .run(&arrival(), |a| {
            let packet = arriving(&fx, &a);
            let (expected, covered) = reference(&fx, &t, &a);
            let (xdp, tc) = kernel(&fx, &packet);
            check(
                &format!("{a:?} (XDP)"),
                xdp.as_deref(),
                &expected,
                covered,
                true,
            );
            check(
                &format!("{a:?} (tc)"),
                tc.as_deref(),
                &expected,
                covered,
                false,
            );
            Ok(())
        })
        .unwrap();
}
