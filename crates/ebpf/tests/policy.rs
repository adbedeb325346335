//! Identity policy in the kernel (issue 18, bpf/policy.h) against the pipeline's
//! (nvo_pipeline::policy), packet for packet through BPF_PROG_RUN: the same verdicts and drop
//! reasons, the same bytes out (VXLAN-GBP's group and A bit included), and afterwards the same
//! policy counters (the kernel's added to the mirrored pipeline's, as `nvo policy show` adds
//! them). See tests/common for the fixture. Needs root, as the rest of the suite.
//!
//! ```text
//!   ports 1..4 (web, db, cache, unlabelled by default)   remote hosts behind R2 (.21, .22)
//!   10.0.0.1..4, MACs 02::01..04                         MACs 02::21, 02::22, tagged or not
//!                 └──────── network 100, vxlan-gbp (or vxlan) ────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::sync::Arc;

use common::*;
use nvo_pipeline::policy::{PolicyCommand, PolicyCounters, PolicyReply, SharedConntrack};
use nvo_pipeline::{DropReason, PortId, Vni};
use nvo_policy::{Labels, Policy, PolicySpec};
use proptest::prelude::*;

const VNI: u32 = 100;

/// A host: its MAC, address, and where it is (a port, or behind R2).
#[derive(Debug, Clone, Copy)]
struct Host {
    mac: [u8; 6],
    ip: [u8; 4],
    port: Option<u32>,
}

const HOSTS: [Host; 6] = [
    host(1, Some(1)),
    host(2, Some(2)),
    host(3, Some(3)),
    host(4, Some(4)),
    host(0x21, None),
    host(0x22, None),
];

const fn host(n: u8, port: Option<u32>) -> Host {
    Host {
        mac: [2, 0, 0, 0, 0, n],
        ip: [10, 0, 0, n],
        port,
    }
}

/// What a packet carries above IPv4.
#[derive(Debug, Clone, Copy)]
enum L4 {
    Tcp { sport: u16, dport: u16, fin: bool },
    Udp { sport: u16, dport: u16 },
    Echo { id: u16, reply: bool },
    Unreachable,
}

impl L4 {
    fn reversed(self) -> L4 {
        match self {
            L4::Tcp { sport, dport, fin } => L4::Tcp {
                sport: dport,
                dport: sport,
                fin,
            },
            L4::Udp { sport, dport } => L4::Udp {
                sport: dport,
                dport: sport,
            },
            L4::Echo { id, reply } => L4::Echo { id, reply: !reply },
            L4::Unreachable => L4::Unreachable,
        }
    }
}

/// A host's IPv6 address: fd00::N.
fn v6(ip: [u8; 4]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xfd;
    a[15] = ip[3];
    a
}

fn ip_frame(dst_mac: [u8; 6], src: &Host, dst: &Host, l4: L4, ipv6: bool) -> Vec<u8> {
    let eth = etherparse::PacketBuilder::ethernet2(src.mac, dst_mac);
    let b = if ipv6 {
        eth.ipv6(v6(src.ip), v6(dst.ip), 64)
    } else {
        eth.ipv4(src.ip, dst.ip, 64)
    };
    let mut v = Vec::new();
    let payload = [0x5au8; 24];
    match l4 {
        L4::Tcp { sport, dport, fin } => {
            let t = b.tcp(sport, dport, 1, 1000);
            let t = if fin { t.fin() } else { t.syn() };
            t.write(&mut v, &payload).unwrap();
        }
        L4::Udp { sport, dport } => b.udp(sport, dport).write(&mut v, &payload).unwrap(),
        L4::Echo { id, reply } if ipv6 => {
            let b = if reply {
                b.icmpv6_echo_reply(id, 1)
            } else {
                b.icmpv6_echo_request(id, 1)
            };
            b.write(&mut v, &payload).unwrap()
        }
        L4::Unreachable if ipv6 => b.icmpv6_raw(1, 0, [0; 4]).write(&mut v, &payload).unwrap(),
        L4::Echo { id, reply: false } => b
            .icmpv4_echo_request(id, 1)
            .write(&mut v, &payload)
            .unwrap(),
        L4::Echo { id, reply: true } => b.icmpv4_echo_reply(id, 1).write(&mut v, &payload).unwrap(),
        L4::Unreachable => b.icmpv4_raw(3, 1, [0; 4]).write(&mut v, &payload).unwrap(),
    }
    v
}

/// A VXLAN-GBP header (draft-smith-vxlan-group-policy-05 §2.1): G and I set, A as asked.
fn gbp_header(group: u16, applied: bool) -> Vec<u8> {
    let g = group.to_be_bytes();
    let v = VNI.to_be_bytes();
    vec![
        0x88,
        if applied { 0x08 } else { 0 },
        g[0],
        g[1],
        v[1],
        v[2],
        v[3],
        0,
    ]
}

fn labels(app: &str) -> Labels {
    if app.is_empty() {
        Labels::default()
    } else {
        Labels::new([("app", app)]).unwrap()
    }
}

fn policy(rules: &str) -> PolicySpec {
    let text = format!(
        r#"{{"groups": [
            {{"id": 10, "name": "web", "selector": "app=web"}},
            {{"id": 20, "name": "db", "selector": "app=db"}},
            {{"id": 30, "name": "cache", "selector": "app=cache"}}],
          "rules": [{rules}]}}"#
    );
    serde_json::from_str(&text).unwrap()
}

fn set_policy(fx: &mut Fixture, spec: &PolicySpec) {
    let spec = spec.clone();
    fx.both(move |p, _| {
        let policy = Arc::new(Policy::new(spec.clone()).unwrap());
        let set = PolicyCommand::Set(Vni(VNI), policy, SharedConntrack::default());
        p.policy_command(set).unwrap();
    });
}

fn label_port(fx: &mut Fixture, port: u32, app: &str) {
    let l = labels(app);
    fx.both(move |p, _| {
        p.policy_command(PolicyCommand::LabelPort(PortId(port), l.clone()))
            .unwrap();
    });
}

fn label_addr(fx: &mut Fixture, ip: impl Into<IpAddr>, app: &str) {
    let (l, ip) = (labels(app), ip.into());
    fx.both(move |p, _| {
        let cmd = PolicyCommand::LabelAddr(Vni(VNI), ip, l.clone());
        p.policy_command(cmd).unwrap();
    });
}

/// The network with its ports, and every host's MAC learned (ARP, which policy leaves alone).
fn setup(tag: &str, profile: &str) -> Fixture {
    let mut fx = Fixture::new(tag);
    let params: &[(&str, u64)] = if profile == "vxlan-gbp" {
        &[("group", 0x77)]
    } else {
        &[]
    };
    fx.network(VNI, profile, &[R2], &[1, 2, 3, 4], params);
    learn_hosts(&mut fx, profile);
    fx
}

fn learn_hosts(fx: &mut Fixture, profile: &str) {
    for h in &HOSTS {
        let arp = arp_request(h.mac, h.ip, [10, 0, 0, 200]);
        match h.port {
            Some(port) => {
                fx.port_frame(port, &arp);
            }
            None => {
                let p = tunnel_packet(&mut fx.ref_engine, R2, profile, VNI, &arp);
                fx.tunnel_packet_in(&p);
            }
        }
    }
}

/// A packet from `src` to `dst` (its MAC, or broadcast), through both paths.
fn send(
    fx: &mut Fixture,
    src: usize,
    dst: usize,
    bcast: bool,
    l4: L4,
    tag: Option<(u16, bool)>,
) -> (Result, Result) {
    send_ip(fx, (src, dst, bcast, false), l4, tag)
}

/// [`send`] with the family chosen: (source, destination, broadcast, IPv6).
fn send_ip(
    fx: &mut Fixture,
    (src, dst, bcast, ipv6): (usize, usize, bool, bool),
    l4: L4,
    tag: Option<(u16, bool)>,
) -> (Result, Result) {
    let (s, d) = (HOSTS[src], HOSTS[dst]);
    let dst_mac = if bcast { [0xff; 6] } else { d.mac };
    let f = ip_frame(dst_mac, &s, &d, l4, ipv6);
    match s.port {
        Some(port) => fx.port_frame(port, &f),
        None => {
            let p = match tag {
                Some((g, a)) => raw_tunnel_packet(
                    R2,
                    nvo_encap::profile::Transport::Udp(4789),
                    &gbp_header(g, a),
                    &f,
                ),
                None => tunnel_packet(&mut fx.ref_engine, R2, "vxlan", VNI, &f),
            };
            fx.tunnel_packet_in(&p)
        }
    }
}

fn same(what: &str, (kernel, reference): &(Result, Result)) {
    if kernel.punted {
        return; // handed to nvod, which ran the pipeline on it
    }
    assert!(
        !reference.punted,
        "{what}: the pipeline answers itself, the kernel did not hand it over"
    );
    assert_eq!(
        kernel.drop, reference.drop,
        "{what}: drop reason (kernel vs pipeline)"
    );
    assert_eq!(
        kernel.outs, reference.outs,
        "{what}: copies (kernel, then pipeline)"
    );
}

fn policy_counters(fx: &mut Fixture) -> (PolicyCounters, PolicyCounters) {
    let show =
        |p: &mut nvo_pipeline::Pipeline| match p.policy_command(PolicyCommand::Show(Vni(VNI))) {
            Ok(PolicyReply::Counters(c)) => c,
            other => panic!("{other:?}"),
        };
    let mut mirrored = show(&mut fx.mirrored);
    fx.mirror.add_policy_counters(Vni(VNI), &mut mirrored);
    (mirrored, show(&mut fx.reference))
}

/// The tables and counters both paths end with.
fn agree(fx: &mut Fixture) {
    let (mut m, r) = policy_counters(fx);
    assert!(m.in_kernel, "the kernel enforces the policy");
    m.in_kernel = false;
    // How often nvod asked the kernel's table: the reference pipeline has none to ask.
    (m.kernel_lookups, m.kernel_lookups_skipped) = (0, 0);
    assert_eq!(
        m, r,
        "policy counters (kernel + mirrored pipeline vs pipeline)"
    );
    let (m, r) = fx.counters();
    assert_eq!(m.drops, r.drops, "drop counters");
    assert_eq!(m.networks, r.networks, "network counters");
    let (m, r) = fx.fdb(VNI);
    assert_eq!(m, r, "FDB");
}

const WEB_TO_DB: &str = r#"{"name": "web-db", "from": ["web"], "to": ["db"], "action": "allow",
    "protocol": "tcp", "ports": ["5432"]}"#;

/// The issue's example, by hand: web → db TCP 5432 allowed, everything else to db denied;
/// replies of allowed flows pass, replies of denied ones do not; every decision is the
/// kernel's (nothing handed over), the GBP header carries the group and the A bit.
#[test]
fn web_to_db_is_enforced_in_the_kernel() {
    let mut fx = setup("pk1", "vxlan-gbp");
    let deny_udp = r#"{"name": "no-dns", "from": ["any"], "to": ["cache"], "action": "deny",
        "protocol": "udp", "ports": ["53"]}"#;
    // db → web UDP 9 makes web a selected group too: what reaches it is denied unless allowed
    // or a reply of a flow allowed before.
    let db_web = r#"{"name": "db-web", "from": ["db"], "to": ["web"], "action": "allow",
        "protocol": "udp", "ports": ["9"]}"#;
    set_policy(
        &mut fx,
        &policy(&format!("{WEB_TO_DB}, {deny_udp}, {db_web}")),
    );
    label_port(&mut fx, 1, "web");
    label_port(&mut fx, 2, "db");
    label_port(&mut fx, 3, "cache");
    let syn = L4::Tcp {
        sport: 40000,
        dport: 5432,
        fin: false,
    };
    let denied = PolicyDenied;
    for (what, src, dst, l4, want) in [
        ("web → db 5432", 0, 1, syn, None),
        ("its reply", 1, 0, syn.reversed(), None),
        (
            "web → db 22",
            0,
            1,
            L4::Tcp {
                sport: 40001,
                dport: 22,
                fin: false,
            },
            Some(denied),
        ),
        (
            "its reply",
            1,
            0,
            L4::Tcp {
                sport: 22,
                dport: 40001,
                fin: false,
            },
            Some(denied),
        ),
        (
            "cache → db 5432",
            2,
            1,
            L4::Tcp {
                sport: 40002,
                dport: 5432,
                fin: false,
            },
            Some(denied),
        ),
        ("db → web udp 9", 1, 0, L4::Udp { sport: 9, dport: 9 }, None),
        (
            "db → web udp 10",
            1,
            0,
            L4::Udp {
                sport: 9,
                dport: 10,
            },
            Some(denied),
        ),
        (
            "web → cache udp 53",
            0,
            2,
            L4::Udp {
                sport: 5353,
                dport: 53,
            },
            Some(denied),
        ),
        ("ICMP error to db", 2, 1, L4::Unreachable, None),
        (
            "ping db",
            3,
            1,
            L4::Echo {
                id: 7,
                reply: false,
            },
            Some(denied),
        ),
        (
            "web → db 5432 FIN",
            0,
            1,
            L4::Tcp {
                sport: 40000,
                dport: 5432,
                fin: true,
            },
            None,
        ),
    ] {
        let r = send(&mut fx, src, dst, false, l4, None);
        assert!(
            !r.0.punted,
            "{what}: decided in the kernel, not handed over"
        );
        assert_eq!(
            r.0.drop,
            want.map(|w: DropReason| w.code()),
            "{what}: the kernel's verdict"
        );
        same(what, &r);
    }
    // To a remote: web's frames carry group 10 with the A bit (db's address is labelled),
    // unlabelled port 4's carry group 0 without it (the remote's identity is unknown).
    label_addr(&mut fx, HOSTS[4].ip, "db");
    let r = send(&mut fx, 0, 4, false, syn, None);
    assert!(!r.0.punted);
    let Some(Out::Underlay(bytes)) = r.0.outs.first() else {
        panic!("web → remote db: {r:?}")
    };
    assert_eq!(
        &bytes[14 + 20 + 8..14 + 20 + 8 + 4],
        &[0x88, 0x08, 0, 10],
        "GBP flags, group"
    );
    same("web → remote db", &r);
    let r = send(&mut fx, 3, 5, false, L4::Udp { sport: 1, dport: 2 }, None);
    same("unlabelled → unknown remote", &r);
    agree(&mut fx);
}

use DropReason::PolicyDenied;

/// From the tunnel: the GBP group is the source's identity, the A bit means the sender
/// decided, and the group is remembered for the address (the ipcache) for the way back.
#[test]
fn tunnel_tags_decide_at_ingress() {
    let mut fx = setup("pk2", "vxlan-gbp");
    set_policy(&mut fx, &policy(WEB_TO_DB));
    label_port(&mut fx, 2, "db");
    let syn = |sport| L4::Tcp {
        sport,
        dport: 5432,
        fin: false,
    };
    for (what, src, tag, l4) in [
        ("tagged web → db", 4, Some((10, false)), syn(1000)),
        ("tagged cache → db", 4, Some((30, false)), syn(1001)),
        ("untagged (group 0) → db", 5, Some((0, false)), syn(1002)),
        ("A bit: the sender decided", 5, Some((30, true)), syn(1003)),
        (
            "A bit with group 0 is no tag",
            5,
            Some((0, true)),
            syn(1004),
        ),
        (
            "tagged ping web → db",
            4,
            Some((10, false)),
            L4::Echo {
                id: 3,
                reply: false,
            },
        ),
    ] {
        let r = send(&mut fx, src, 1, false, l4, tag);
        same(what, &r);
    }
    // The way back from db to .21: learned as web from its tag, so the egress decides
    // without the A bit (the receiver decides again).
    let r = send(&mut fx, 1, 4, false, L4::Udp { sport: 5, dport: 6 }, None);
    same("db → learned web", &r);
    // A flood to an unknown MAC whose identity is unknown: the pipeline decides each local
    // copy (handed over).
    let r = send(&mut fx, 0, 1, true, L4::Udp { sport: 7, dport: 8 }, None);
    assert!(
        r.0.punted,
        "a flood left to the receiver goes to nvod: {r:?}"
    );
    agree(&mut fx);
}

/// A flow the kernel allowed and tracked (web → remote db), whose replies reach nvod's socket
/// instead (what the program leaves to the stack: a UDP-GSO batch from a userspace-datapath
/// peer, an inner 802.1Q frame): nvod's pipeline misses, asks the programs' `pol_flows`, and
/// the reply passes as tracked — as in the pipeline alone — where the rules would deny it (web
/// is selected, db → web TCP allowed by none). The second reply hits nvod's own table.
#[test]
fn replies_nvod_meets_pass_as_the_kernel_tracked_them() {
    let mut fx = setup("pk4", "vxlan");
    let db_web = r#"{"name": "db-web", "from": ["db"], "to": ["web"], "action": "allow",
        "protocol": "udp", "ports": ["9"]}"#;
    set_policy(&mut fx, &policy(&format!("{WEB_TO_DB}, {db_web}")));
    label_port(&mut fx, 1, "web");
    label_addr(&mut fx, HOSTS[4].ip, "db");
    let syn = L4::Tcp {
        sport: 40000,
        dport: 5432,
        fin: false,
    };
    let r = send(&mut fx, 0, 4, false, syn, None);
    assert!(!r.0.punted, "web → remote db: decided in the kernel");
    assert_eq!(r.0.drop, None, "web → remote db: allowed");
    same("web → remote db", &r);
    let asked = fx.mirror.kernel_flows().stats();
    let reply = |fx: &mut Fixture, l4: L4| {
        let f = ip_frame(HOSTS[0].mac, &HOSTS[4], &HOSTS[0], l4, false);
        let p = tunnel_packet(&mut fx.ref_engine, R2, "vxlan", VNI, &f);
        fx.socket_packet_in(&p)
    };
    for what in ["its reply, at nvod's socket", "the next reply"] {
        let r = reply(&mut fx, syn.reversed());
        assert_eq!(
            r.0.drop, None,
            "{what}: passes as the kernel tracked the flow"
        );
        same(what, &r);
    }
    let found = fx.mirror.kernel_flows().stats();
    assert_eq!(
        (found.asked - asked.asked, found.found - asked.found),
        (1, 1),
        "asked the kernel once; the next reply hit nvod's own table"
    );
    // A "reply" of a flow nobody tracked is decided by the rules: denied (web is selected).
    let stray = L4::Tcp {
        sport: 5432,
        dport: 40009,
        fin: false,
    };
    let r = reply(&mut fx, stray);
    assert_eq!(r.0.drop, Some(PolicyDenied.code()), "untracked: denied");
    same("untracked", &r);
    agree(&mut fx);
}

/// A thousand rules (bench/policy_cost.py's largest case) are scanned in the kernel: the last
/// one decides, in the kernel, as in the pipeline.
#[test]
fn a_thousand_rules_are_scanned_in_the_kernel() {
    let mut fx = setup("pk3", "vxlan-gbp");
    let mut rules: Vec<String> = (0..999)
        .map(|i| {
            format!(
                r#"{{"name": "r{i}", "from": ["web"], "to": ["db"], "action": "allow",
                    "protocol": "tcp", "ports": ["{}"]}}"#,
                10000 + i
            )
        })
        .collect();
    rules.push(
        r#"{"name": "last", "from": ["web"], "to": ["db"], "action": "allow",
            "protocol": "tcp", "ports": ["5201"]}"#
            .to_owned(),
    );
    set_policy(&mut fx, &policy(&rules.join(", ")));
    label_port(&mut fx, 1, "web");
    label_port(&mut fx, 2, "db");
    for (what, dport, want) in [
        ("the last rule", 5201, None),
        ("rule 500", 10500, None),
        ("no rule", 22, Some(PolicyDenied.code())),
    ] {
        let l4 = L4::Tcp {
            sport: 33000 + dport % 100,
            dport,
            fin: false,
        };
        let r = send(&mut fx, 0, 1, false, l4, None);
        assert!(!r.0.punted, "{what}: decided in the kernel");
        assert_eq!(r.0.drop, want, "{what}");
        same(what, &r);
    }
    let (m, _) = policy_counters(&mut fx);
    assert_eq!(
        (m.rules[999], m.rules[500]),
        (1, 1),
        "{:?}",
        &m.rules[495..]
    );
    agree(&mut fx);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Random policies, labels, tags and traffic (with replies, IPv4 and IPv6): every packet
    /// the same in the kernel and in the pipeline, and the same counters at the end.
    #[test]
    fn random_policies_agree(
        rules in prop::collection::vec((0usize..4, 0usize..4, any::<bool>(), 0usize..4, 0usize..3), 0..5),
        port_apps in prop::collection::vec(0usize..4, 4),
        addr_app in 0usize..4,
        gbp in any::<bool>(),
        packets in prop::collection::vec(
            (0usize..6, 0usize..6, 0usize..5, any::<u16>(), 0usize..6, any::<bool>(), any::<bool>(), 0usize..8, any::<bool>()),
            1..24),
    ) {
        let profile = if gbp { "vxlan-gbp" } else { "vxlan" };
        let mut fx = setup("pkp", profile);
        let peers = ["[\"any\"]", "[\"web\"]", "[\"db\"]", "[\"web\", \"cache\"]"];
        let protos = ["any", "tcp", "udp", "icmp"];
        let ports = ["[]", "[\"5432\"]", "[\"53\", \"8000-8080\"]"];
        let text: Vec<String> = rules
            .iter()
            .enumerate()
            .map(|(i, &(from, to, allow, proto, port))| {
                let port = if matches!(proto, 1 | 2) { ports[port] } else { "[]" };
                format!(
                    r#"{{"name": "r{i}", "from": {}, "to": {}, "action": "{}", "protocol": "{}", "ports": {port}}}"#,
                    peers[from], peers[to], if allow { "allow" } else { "deny" }, protos[proto]
                )
            })
            .collect();
        set_policy(&mut fx, &policy(&text.join(", ")));
        let apps = ["", "web", "db", "cache"];
        for (i, &a) in port_apps.iter().enumerate() {
            label_port(&mut fx, i as u32 + 1, apps[a]);
        }
        label_addr(&mut fx, HOSTS[5].ip, apps[addr_app]);
        label_addr(&mut fx, v6(HOSTS[5].ip), apps[addr_app]);
        let mut last: Option<(usize, usize, L4, bool)> = None;
        for (src, dst, kind, port, tag, applied, bcast, reply, ipv6) in packets {
            let l4 = match kind {
                0 => L4::Tcp { sport: 40000 + port % 4, dport: [5432, 22, 8080, 53][usize::from(port % 4)], fin: port % 7 == 0 },
                1 => L4::Udp { sport: 1000 + port % 3, dport: [53, 8000, 9][usize::from(port % 3)] },
                2 => L4::Echo { id: port % 3, reply: false },
                3 => L4::Unreachable,
                _ => L4::Tcp { sport: port, dport: 5432, fin: false },
            };
            // Now and then the reply of the packet before.
            let (src, dst, l4, ipv6) = match last {
                Some((s, d, l, six)) if reply == 0 => (d, s, l.reversed(), six),
                _ => (src, dst, l4, ipv6),
            };
            last = Some((src, dst, l4, ipv6));
            if src == dst {
                continue;
            }
            let groups = [0u16, 10, 20, 30, 99, 0];
            let tag = gbp.then_some((groups[tag], applied));
            let r = send_ip(&mut fx, (src, dst, bcast && reply == 1, ipv6), l4, tag);
            same("random", &r);
        }
        agree(&mut fx);
    }
}
