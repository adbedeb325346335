//! Issue 18: identity policy in the pipeline — egress at the sender, ingress at the receiver
//! (source identity from the GBP tag, else from the labelled or learned source address),
//! default deny for selected destinations, replies through connection tracking, policy changes
//! that leave established flows alone, per-rule and per-verdict counters, and the trace.
//!
//! ```text
//!   P1 web 10.0.0.1 (app=web, group 10) ─┐
//!   P2 db  10.0.0.2 (app=db,  group 20) ─┤ network 100 ── r1 (remote VTEP)
//!   P3 unlabelled 10.0.0.3              ─┘
//!   rules: 0 allow web→db tcp 5432 · 1 allow db→web udp 53 (which selects web too)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::policy_bed::*;
use common::*;
use nvo_pipeline::policy::{GroupTag, PolicyCommand, PolicyReply, SharedConntrack, TraceQuery};
use nvo_pipeline::{
    Action, Actions, Decapsulated, DropReason, EvpnChange, Mac, Pipeline, ProfileTag,
};
use nvo_policy::{Labels, Policy, PolicySpec, Reason};

fn icmp_echo(dst: Mac, src: Mac, ips: (&str, &str), reply: bool) -> Vec<u8> {
    let (IpAddr::V4(s), IpAddr::V4(d)) = (ip(ips.0), ip(ips.1)) else {
        panic!("v4 only")
    };
    let mut v = Vec::new();
    let b = etherparse::PacketBuilder::ethernet2(src.0, dst.0).ipv4(s.octets(), d.octets(), 64);
    let b = if reply {
        b.icmpv4_echo_reply(7, 1)
    } else {
        b.icmpv4_echo_request(7, 1)
    };
    b.write(&mut v, b"ping").unwrap();
    v
}

fn spec(json: &str) -> Arc<Policy> {
    let spec: PolicySpec = serde_json::from_str(json).unwrap();
    Arc::new(Policy::new(spec).unwrap())
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::new(pairs.iter().copied()).unwrap()
}

/// setup() with web on P1 and db on P2, their MACs learned, the policy applied.
fn policed() -> (Pipeline, SharedConntrack) {
    let mut p = setup();
    let ct = SharedConntrack::default();
    let t = Instant::now();
    let mut a = Actions::new();
    // Learn mac(1) on P1, mac(2) on P2, mac(3) on P3 before any policy.
    for (port, m) in [(P1, 1), (P2, 2), (P3, 3)] {
        p.from_port(port, &frame(Mac::BROADCAST, mac(m)), t, &mut a);
    }
    p.policy_command(PolicyCommand::LabelPort(P1, labels(&[("app", "web")])))
        .unwrap();
    p.policy_command(PolicyCommand::LabelPort(P2, labels(&[("app", "db")])))
        .unwrap();
    p.policy_command(PolicyCommand::Set(VNI, spec(WEB_DB), ct.clone()))
        .unwrap();
    (p, ct)
}

#[test]
fn egress_allows_the_rule_denies_the_rest_and_replies_pass_by_conntrack() {
    let (mut p, _) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &tcp(mac(2), mac(1), WEB, (40000, 5432)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    p.from_port(P1, &tcp(mac(2), mac(1), WEB, (40001, 22)), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // The reply: db → web is selected (rule 1 names web) and no rule allows TCP: only the
    // connection table lets it through.
    p.from_port(P2, &tcp(mac(1), mac(2), DB, (5432, 40000)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    // An unsolicited db → web TCP connection is denied.
    p.from_port(P2, &tcp(mac(1), mac(2), DB, (5432, 40002)), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // The unlabelled P3 is in no group: denied to db, and web (selected) is closed to it too.
    p.from_port(
        P3,
        &tcp(mac(2), mac(3), ("10.0.0.3", "10.0.0.2"), (1, 5432)),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    let c = counters(&mut p);
    assert_eq!(c.rules, [1, 0]);
    assert_eq!((c.allowed, c.default_denied, c.tracked), (1, 3, 1));
    assert_eq!(p.counters().drops.get(DropReason::PolicyDenied), 3);
}

#[test]
fn icmp_echo_is_a_flow_and_arp_passes() {
    let (mut p, _) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    // web → db echo: no rule allows ICMP to db.
    p.from_port(P1, &icmp_echo(mac(2), mac(1), WEB, false), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // db → web is selected too; allow db's echo by a new rule, then web's reply passes by
    // conntrack although nothing allows web → db ICMP.
    let json = WEB_DB.replace(
        r#""protocol": "udp", "ports": ["53"]}"#,
        r#""protocol": "udp", "ports": ["53"]},
            {"name": "ping-web", "from": ["db"], "to": ["web"], "action": "allow",
             "protocol": "icmp"}"#,
    );
    p.policy_command(PolicyCommand::Set(
        VNI,
        spec(&json),
        SharedConntrack::default(),
    ))
    .unwrap();
    p.from_port(P2, &icmp_echo(mac(1), mac(2), DB, false), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1)]);
    p.from_port(P1, &icmp_echo(mac(2), mac(1), WEB, true), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    // ARP (not IP) is never policy's.
    let mut arp = frame(Mac::BROADCAST, mac(3));
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    p.from_port(P3, &arp, t, &mut a);
    assert!(a.dropped().is_none(), "{:?}", plain(&a));
    assert_eq!(counters(&mut p).rules, [0, 0, 1]);
}

fn decap() -> Decapsulated {
    Decapsulated {
        src: r1(),
        vni: VNI,
        profile: ProfileTag::VXLAN,
        dont_learn: false,
        src_node: None,
    }
}

#[test]
fn ingress_takes_the_source_identity_from_the_tag_or_the_address() {
    let (mut p, _) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    let remote = ("10.0.0.9", "10.0.0.2");
    let pkt = |sport| tcp(mac(2), mac(9), remote, (sport, 5432));
    // Unknown source, no tag: identity 0, denied to db.
    p.from_decapsulated_tagged(decap(), None, 100, &pkt(1), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // The same packet with GBP group 10 (web), policy not applied by the sender: allowed.
    let web = GroupTag {
        group: 10,
        applied: false,
    };
    p.from_decapsulated_tagged(decap(), Some(web), 100, &pkt(2), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    // Group 20 (db → db) is not allowed.
    let db = GroupTag {
        group: 20,
        applied: false,
    };
    p.from_decapsulated_tagged(decap(), Some(db), 100, &pkt(3), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // With the A bit the sender decided: passed (and tracked).
    let applied = GroupTag {
        group: 20,
        applied: true,
    };
    p.from_decapsulated_tagged(decap(), Some(applied), 100, &pkt(4), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    // Without a tag, a labelled source address is web (the ipcache, per tenant).
    let other = ("10.0.0.8", "10.0.0.2");
    p.policy_command(PolicyCommand::LabelAddr(
        VNI,
        ip("10.0.0.8"),
        labels(&[("app", "web")]),
    ))
    .unwrap();
    p.from_decapsulated_tagged(
        decap(),
        None,
        100,
        &tcp(mac(2), mac(8), other, (5, 5432)),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P2)]);
    // The same address in another network is nobody there.
    assert!(p
        .policy_command(PolicyCommand::Show(nvo_pipeline::Vni(200)))
        .is_err());
    let c = counters(&mut p);
    assert_eq!(c.rules, [2, 0]);
    assert_eq!((c.sender_applied, c.default_denied), (1, 2));
}

#[test]
fn an_evpn_route_gives_a_source_its_identity_and_a_local_port_its_group() {
    let (mut p, _) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    let pkt = |sport| tcp(mac(2), mac(9), ("10.0.0.9", "10.0.0.2"), (sport, 5432));
    // No tag, nothing known of 10.0.0.9: denied to db.
    p.from_decapsulated_tagged(decap(), None, 100, &pkt(1), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // A route says 10.0.0.9 is web (group 10): its packets pass, at once (no cached verdict).
    let set = EvpnChange::IdentitySet {
        vni: VNI,
        ip: ip("10.0.0.9"),
        group: 10,
    };
    assert_eq!(p.evpn_apply(&[set]).applied, 1);
    p.from_decapsulated_tagged(decap(), None, 100, &pkt(2), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    let traced = p
        .policy_command(PolicyCommand::Trace(
            VNI,
            TraceQuery {
                src: ip("10.0.0.9"),
                dst: ip("10.0.0.2"),
                proto: 6,
                dport: 5432,
            },
        ))
        .unwrap();
    assert!(
        matches!(&traced, PolicyReply::Trace(r) if r.src_group == Some(10) && r.allow),
        "{traced:?}"
    );
    // Withdrawn: a new flow from it is nobody's again. A network that does not exist
    // refuses the change.
    let remove = EvpnChange::IdentityRemove {
        vni: VNI,
        ip: ip("10.0.0.9"),
    };
    assert_eq!(p.evpn_apply(&[remove]).applied, 1);
    p.from_decapsulated_tagged(decap(), None, 100, &pkt(3), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    let elsewhere = EvpnChange::IdentitySet {
        vni: nvo_pipeline::Vni(999),
        ip: ip("10.0.0.9"),
        group: 10,
    };
    assert_eq!(p.evpn_apply(&[elsewhere]).refused, 1);

    // The local hosts EVPN advertises carry their port's group; a label change moves the
    // generation, so the speaker reads them again.
    let hosts = p.local_hosts().hosts;
    let group_of = |hosts: &[nvo_pipeline::LocalHost], m: u8| {
        hosts.iter().find(|h| h.mac == mac(m)).map(|h| h.group)
    };
    assert_eq!(
        (
            group_of(&hosts, 1),
            group_of(&hosts, 2),
            group_of(&hosts, 3)
        ),
        (Some(10), Some(20), Some(0))
    );
    let gen = p.hosts_generation();
    p.policy_command(PolicyCommand::LabelPort(P3, labels(&[("app", "db")])))
        .unwrap();
    assert!(p.hosts_generation() > gen);
    assert_eq!(group_of(&p.local_hosts().hosts, 3), Some(20));
}

#[test]
fn the_sender_tags_frames_for_the_wire() {
    let (mut p, _) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    // db's address lives behind r1: its identity is learned from a tagged packet.
    p.from_decapsulated_tagged(
        decap(),
        Some(GroupTag {
            group: 20,
            applied: true,
        }),
        100,
        &tcp(mac(1), mac(7), ("10.0.0.7", "10.0.0.1"), (5432, 9)),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(P1)]);
    p.from_port(
        P1,
        &tcp(mac(7), mac(1), ("10.0.0.1", "10.0.0.7"), (41000, 5432)),
        t,
        &mut a,
    );
    // Allowed at the sender on an identity learned from the wire: tagged, but the receiver
    // decides again (no A bit).
    assert_eq!(plain(&a), [encap(r1(), VNI)]);
    assert_eq!(
        a.group(),
        Some(GroupTag {
            group: 10,
            applied: false
        })
    );
    // Denied at the sender on the same knowledge: dropped early.
    p.from_port(
        P1,
        &tcp(mac(7), mac(1), ("10.0.0.1", "10.0.0.7"), (41001, 22)),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    // A labelled destination is this host's own knowledge: the A bit is set.
    p.policy_command(PolicyCommand::LabelAddr(
        VNI,
        ip("10.0.0.7"),
        labels(&[("app", "db")]),
    ))
    .unwrap();
    p.from_port(
        P1,
        &tcp(mac(7), mac(1), ("10.0.0.1", "10.0.0.7"), (41002, 5432)),
        t,
        &mut a,
    );
    assert_eq!(
        a.group(),
        Some(GroupTag {
            group: 10,
            applied: true
        })
    );
    // A destination whose identity nobody knows: tagged, but left to the receiver.
    p.from_port(
        P1,
        &tcp(Mac::BROADCAST, mac(1), ("10.0.0.1", "10.0.0.66"), (1, 80)),
        t,
        &mut a,
    );
    assert_eq!(
        a.group(),
        Some(GroupTag {
            group: 10,
            applied: false
        })
    );
    assert_eq!(counters(&mut p).unknown_destination, 1);
    // A network without a policy tags nothing.
    p.policy_command(PolicyCommand::Remove(VNI)).unwrap();
    p.from_port(P1, &tcp(mac(7), mac(1), WEB, (1, 80)), t, &mut a);
    assert_eq!(a.group(), None);
}

#[test]
fn a_policy_change_applies_at_once_and_established_flows_survive() {
    let (mut p, ct) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    let open = tcp(mac(2), mac(1), WEB, (40000, 5432));
    p.from_port(P1, &open, t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    // Rule 0 now denies: a new connection is refused, the established one continues.
    let deny = WEB_DB.replacen(r#""action": "allow""#, r#""action": "deny""#, 1);
    p.policy_command(PolicyCommand::Set(VNI, spec(&deny), ct.clone()))
        .unwrap();
    p.from_port(P1, &tcp(mac(2), mac(1), WEB, (40001, 5432)), t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
    p.from_port(P1, &open, t + Duration::from_secs(1), &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    assert_eq!(counters(&mut p).rules, [1, 0]);
    // Idle past TCP's timeout, the flow (and db's MAC) is forgotten and the new policy applies
    // to it: the flood's copy to db is denied, the one to the unlabelled P3 passes (P3 is in
    // no group nothing selects), the remotes decide for their own ports.
    let later = t + Duration::from_secs(3700);
    p.age(later);
    p.from_port(P1, &open, later, &mut a);
    assert_eq!(plain(&a), [deliver(P3), encap(r1(), VNI), encap(r2(), VNI)]);
    assert_eq!(counters(&mut p).rules, [2, 0]);
}

#[test]
fn a_busy_flow_passes_from_the_cache_but_a_removed_policy_forgets_its_flows_at_once() {
    let (mut p, ct) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    p.from_port(P1, &tcp(mac(2), mac(1), WEB, (40000, 5432)), t, &mut a);
    assert_eq!(plain(&a), [deliver(P2)]);
    // db's replies: the first through the shared table, the next ones from the worker's
    // cache (counted as tracked all the same).
    let reply = tcp(mac(1), mac(2), DB, (5432, 40000));
    for ms in [0, 1, 2] {
        p.from_port(P2, &reply, t + Duration::from_millis(ms), &mut a);
        assert_eq!(plain(&a), [deliver(P1)]);
    }
    assert_eq!(counters(&mut p).tracked, 3);
    // The policy goes and comes back: its flows were flushed, so the reply (an unsolicited
    // db -> web TCP packet now) is denied even a moment after it was cached.
    p.policy_command(PolicyCommand::Remove(VNI)).unwrap();
    p.policy_command(PolicyCommand::Set(VNI, spec(WEB_DB), ct.clone()))
        .unwrap();
    p.from_port(P2, &reply, t + Duration::from_millis(3), &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::PolicyDenied)]);
}

#[test]
fn trace_names_the_deciding_rule() {
    let (mut p, _) = policed();
    let t = Instant::now();
    let mut a = Actions::new();
    // The snooped neighbours: 10.0.0.1 behind P1, 10.0.0.2 behind P2 (their ARP replies).
    for (port, m, addr) in [(P1, 1, [10, 0, 0, 1]), (P2, 2, [10, 0, 0, 2])] {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2(mac(m).0, Mac::BROADCAST.0)
            .arp(
                etherparse::ArpPacket::new(
                    etherparse::ArpHardwareId::ETHERNET,
                    etherparse::EtherType::IPV4,
                    etherparse::ArpOperation::REPLY,
                    &mac(m).0,
                    &addr,
                    &mac(9).0,
                    &[10, 0, 0, 9],
                )
                .unwrap(),
            )
            .write(&mut v)
            .unwrap();
        p.from_port(port, &v, t, &mut a);
    }
    let trace = |p: &mut Pipeline, dport| {
        let q = TraceQuery {
            src: ip("10.0.0.1"),
            dst: ip("10.0.0.2"),
            proto: 6,
            dport,
        };
        match p.policy_command(PolicyCommand::Trace(VNI, q)).unwrap() {
            PolicyReply::Trace(r) => r,
            other => panic!("{other:?}"),
        }
    };
    let r = trace(&mut p, 5432);
    assert_eq!((r.src_group, r.dst_group), (Some(10), Some(20)));
    assert!(r.allow);
    assert_eq!(r.reason, Reason::Rule(0));
    let r = trace(&mut p, 22);
    assert!(!r.allow);
    assert_eq!(r.reason, Reason::DefaultDeny);
    // A trace counts nothing.
    assert_eq!(counters(&mut p).rules, [0, 0]);
}
