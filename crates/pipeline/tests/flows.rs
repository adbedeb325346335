//! The flow table in front of normal forwarding (flows.rs): drop, normal, output and
//! set-field actions on frames from the ports of the standard setup, the rules' counters and
//! timeouts, and the table's bounds. Rules are written in the flow syntax (nvo_flow::syntax),
//! frames built and read back with etherparse.
//!
//! ```text
//!   port P1 ─┐
//!   port P2 ─┼─ network 100 ── remotes r1, r2
//!   port P3 ─┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use nvo_flow::syntax::parse;
use nvo_pipeline::{Action, Actions, DropReason, FlowError, FlowVerdict, Pipeline, MAX_FLOWS};

fn rule(text: &str) -> nvo_flow::syntax::Flow {
    parse(text, &|_| None).unwrap()
}

fn with(rules: &[&str]) -> Pipeline {
    let mut p = setup();
    for r in rules {
        p.flow_insert(rule(r), Instant::now()).unwrap();
    }
    p
}

/// The frame through the table: the verdict, the actions and the buffer the frame is in then.
fn run(p: &mut Pipeline, port: nvo_pipeline::PortId, f: &[u8]) -> (FlowVerdict, Actions, Vec<u8>) {
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    let v = p.from_port_flows(port, f, &mut out, Instant::now(), &mut a);
    let frame = match v.rewritten {
        Some(len) => out[..len].to_vec(),
        None => f.to_vec(),
    };
    (v, a, frame)
}

fn stats(p: &Pipeline) -> Vec<(u64, u64)> {
    p.flow_table()
        .rules()
        .iter()
        .map(|(_, _, s)| (s.packets, s.bytes))
        .collect()
}

#[test]
fn without_rules_frames_go_on_untouched() {
    let mut p = setup();
    assert!(!p.has_flows());
    let f = frame(mac(2), mac(1));
    let (v, a, _) = run(&mut p, P1, &f);
    assert_eq!((v.rewritten, v.normal), (None, true));
    assert!(a.is_empty());
    assert_eq!(p.flow_lookups(), (0, 0));
}

#[test]
fn a_drop_rule_drops_and_counts_what_it_matches_only() {
    let mut p = with(&["priority=100,udp,tp_dst=53,actions=drop"]);
    let dns = udp4(mac(2), mac(1), (40000, 53), 20);
    let (v, a, _) = run(&mut p, P1, &dns);
    assert!(!v.normal);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::FlowDrop)]);
    let other = udp4(mac(2), mac(1), (40000, 5201), 20);
    let (v, a, _) = run(&mut p, P1, &other);
    assert!(v.normal && a.is_empty());
    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::FlowDrop), 1);
    assert_eq!(
        c.ports[&P1].rx_frames, 1,
        "the dropped frame counts on its port"
    );
    assert_eq!(c.ports[&P1].drops, 1);
    assert_eq!(stats(&p), [(1, dns.len() as u64)]);
    assert_eq!(p.flow_lookups(), (2, 1));
}

#[test]
fn in_port_limits_a_rule_to_its_port() {
    let mut p = with(&["in_port=2,udp,actions=drop"]);
    assert!(p.flows_cover(P2) && !p.flows_cover(P1));
    let f = frame(mac(2), mac(1));
    assert!(run(&mut p, P1, &f).0.normal);
    assert!(!run(&mut p, P2, &f).0.normal);
    let p = with(&["udp,actions=drop"]);
    assert!(p.flows_cover(P1) && p.flows_cover(P3));
}

#[test]
fn output_sends_to_the_port_named_and_nowhere_else() {
    let mut p = with(&["in_port=1,actions=output:3"]);
    let f = frame(mac(2), mac(1));
    let (v, a, out) = run(&mut p, P1, &f);
    assert!(!v.normal && v.rewritten.is_none());
    assert_eq!(a.as_slice(), [deliver(P3)]);
    assert_eq!(out, f);
    assert_eq!(p.counters().ports[&P1].rx_frames, 1);
    // output and normal: both.
    let mut p = with(&["in_port=1,actions=output:3,normal"]);
    let (v, a, _) = run(&mut p, P1, &f);
    assert!(v.normal);
    assert_eq!(a.as_slice(), [deliver(P3)]);
}

#[test]
fn set_field_rewrites_macs_dscp_and_ttl_with_a_valid_checksum() {
    let mut p = with(&[
        "udp,actions=mod_dl_dst:02:00:00:00:00:09,mod_dl_src:02:00:00:00:00:08,mod_nw_tos:184,mod_nw_ttl:9,normal",
    ]);
    let f = udp4(mac(2), mac(1), (40000, 53), 20);
    let (v, a, out) = run(&mut p, P1, &f);
    assert!(v.normal && a.is_empty());
    assert_eq!(v.rewritten, Some(f.len()));
    let (eth, rest) = etherparse::Ethernet2Header::from_slice(&out).unwrap();
    assert_eq!(eth.destination, mac(9).0);
    assert_eq!(eth.source, mac(8).0);
    let (ip, _) = etherparse::Ipv4Header::from_slice(rest).unwrap();
    assert_eq!(ip.time_to_live, 9);
    assert_eq!(ip.dscp.value(), 46);
    assert_eq!(ip.header_checksum, ip.calc_header_checksum());
    assert_ne!(ip.header_checksum, {
        let (orig, _) = etherparse::Ipv4Header::from_slice(&f[14..]).unwrap();
        orig.header_checksum
    });
    // Normal forwarding of the rewritten frame: to the new destination (unknown: flooded).
    let mut a = Actions::new();
    p.from_port(P1, &out, Instant::now(), &mut a);
    assert!(a.as_slice().contains(&deliver(P2)));
}

#[test]
fn dec_ttl_drops_at_one_and_decrements_otherwise() {
    let mut p = with(&["udp,actions=dec_ttl,output:2"]);
    let mut f = udp4(mac(2), mac(1), (40000, 53), 20);
    let (_, a, out) = run(&mut p, P1, &f);
    assert_eq!(a.as_slice(), [deliver(P2)]);
    assert_eq!(out[14 + 8], 63);
    f[14 + 8] = 1;
    let (_, a, _) = run(&mut p, P1, &f);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::HopLimit)]);
}

#[test]
fn vlan_tags_are_pushed_set_and_popped() {
    let mut p = with(&["in_port=1,actions=mod_vlan_vid:10,mod_vlan_pcp:5,output:2"]);
    let f = frame(mac(2), mac(1));
    let (_, a, tagged) = run(&mut p, P1, &f);
    assert_eq!(a.as_slice(), [deliver(P2)]);
    assert_eq!(tagged.len(), f.len() + 4);
    assert_eq!(&tagged[12..16], &[0x81, 0x00, 0xa0, 0x0a]);
    assert_eq!(&tagged[16..], &f[12..]);
    let mut p = with(&["in_port=2,actions=pop_vlan,output:1"]);
    let (_, _, popped) = run(&mut p, P2, &tagged);
    assert_eq!(popped, f);
    // push_vlan copies the outer tag's TCI.
    let mut p = with(&["in_port=2,actions=push_vlan:0x88a8,output:1"]);
    let (_, _, qinq) = run(&mut p, P2, &tagged);
    assert_eq!(
        &qinq[12..20],
        &[0x88, 0xa8, 0xa0, 0x0a, 0x81, 0x00, 0xa0, 0x0a]
    );
}

#[test]
fn the_highest_priority_rule_wins() {
    let mut p = with(&[
        "priority=10,udp,actions=drop",
        "priority=20,udp,tp_dst=53,actions=normal",
    ]);
    assert!(run(&mut p, P1, &udp4(mac(2), mac(1), (1, 53), 4)).0.normal);
    assert!(!run(&mut p, P1, &udp4(mac(2), mac(1), (1, 54), 4)).0.normal);
}

#[test]
fn timeouts_remove_rules_and_traffic_keeps_an_idle_one() {
    let mut p = setup();
    let t0 = Instant::now();
    p.flow_insert(rule("hard_timeout=5,udp,tp_dst=1,actions=drop"), t0)
        .unwrap();
    p.flow_insert(rule("idle_timeout=2,udp,tp_dst=2,actions=drop"), t0)
        .unwrap();
    let mut a = Actions::new();
    let mut out = vec![0; 200];
    let f = udp4(mac(2), mac(1), (9, 2), 4);
    assert_eq!(p.expire_flows(t0 + Duration::from_secs(1)), 0);
    p.from_port_flows(P1, &f, &mut out, t0 + Duration::from_secs(1), &mut a);
    assert_eq!(a.dropped(), Some(DropReason::FlowDrop));
    // Idle 2 s counts from its last packet (1 s): still there at 2.5 s.
    assert_eq!(p.expire_flows(t0 + Duration::from_millis(2500)), 0);
    assert_eq!(p.expire_flows(t0 + Duration::from_secs(3)), 1);
    assert_eq!(p.flow_table().len(), 1);
    assert_eq!(p.expire_flows(t0 + Duration::from_secs(5)), 1);
    assert!(!p.has_flows());
    let (v, _, _) = run(&mut p, P1, &f);
    assert!(v.normal, "an expired rule no longer drops");
}

#[test]
fn the_table_is_bounded_and_unsendable_actions_are_refused() {
    let mut p = setup();
    let now = Instant::now();
    for i in 0..MAX_FLOWS {
        let r = rule(&format!(
            "udp,tp_dst={},tp_src={},actions=drop",
            i % 60000,
            i / 60000
        ));
        p.flow_insert(r, now).unwrap();
    }
    assert_eq!(
        p.flow_insert(rule("tcp,actions=drop"), now),
        Err(FlowError::Full(MAX_FLOWS))
    );
    // A replacement (same match and priority) still goes in.
    assert!(p
        .flow_insert(rule("udp,tp_dst=7,tp_src=0,actions=normal"), now)
        .is_ok());
    let mut p = setup();
    // An output into the tunnel with no remote to send to (flow_tunnel.rs tests the rest).
    let e = p
        .flow_insert(rule("udp,actions=set_tunnel:5,output:65279"), now)
        .unwrap_err();
    assert_eq!(
        e,
        FlowError::Tunnel(nvo_pipeline::flows::TunnelError::NoDst)
    );
    assert!(!p.has_flows());
}

#[test]
fn a_rewrite_into_a_buffer_too_short_is_a_drop_not_a_panic() {
    let mut p = with(&["udp,actions=mod_nw_ttl:9,normal"]);
    let f = frame(mac(2), mac(1));
    let mut a = Actions::new();
    let mut out = vec![0; 10];
    let v = p.from_port_flows(P1, &f, &mut out, Instant::now(), &mut a);
    assert!(!v.normal);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::TooBig)]);
}

#[test]
fn a_frame_from_an_unknown_port_is_left_to_normal_forwarding() {
    let mut p = with(&["actions=drop"]);
    let (v, a, _) = run(&mut p, nvo_pipeline::PortId(99), &frame(mac(2), mac(1)));
    assert!(v.normal && a.is_empty());
}
