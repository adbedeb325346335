//! Tunnel ingress through the flow table (tunnel_flows.rs): frames decapsulated for network
//! 100 or 200 meet the rules as frames in on port `tunnel` with `tun_id` their VNI, before
//! normal delivery (`from_decapsulated`), which follows on `normal` or a miss.
//!
//! ```text
//!   port P1 ─┐                          ┌─ remote r1 (VNI 100 and 200's flood lists)
//!   port P2 ─┼─ network 100 ── tunnel ──┤
//!   port P3 ─┘                          └─ remote r2
//!   port P4 ─── network 200 ─┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Instant;

use common::*;
use nvo_flow::syntax::parse;
use nvo_pipeline::{
    Action, Actions, Decapsulated, DropReason, FlowVerdict, NetworkSpec, Pipeline, PortId,
    ProfileTag, Vni,
};

const VNI2: Vni = Vni(200);
const P4: PortId = PortId(4);

fn with(rules: &[&str]) -> Pipeline {
    let mut p = setup();
    p.add_network(NetworkSpec::new(VNI2)).unwrap();
    p.add_port(P4, VNI2).unwrap();
    p.flood_add(VNI2, r1()).unwrap();
    for r in rules {
        let rule = parse(r, &|n| (n == "tunnel").then_some(PortId::TUNNEL.0)).unwrap();
        p.flow_insert(rule, Instant::now()).unwrap();
    }
    p
}

fn decap(vni: Vni, src: std::net::IpAddr) -> Decapsulated {
    Decapsulated {
        src,
        vni,
        profile: ProfileTag::VXLAN,
        dont_learn: false,
        src_node: None,
    }
}

/// A frame from r1 for `vni` through the table: the verdict, the actions and the frame
/// then (rewritten or not).
fn tunnel(p: &mut Pipeline, vni: Vni, f: &[u8]) -> (FlowVerdict, Actions, Vec<u8>) {
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    let d = decap(vni, r1());
    let v = p.from_underlay_flows(&d, f.len() + 50, f, &mut out, Instant::now(), &mut a);
    let frame = match v.rewritten {
        Some(len) => out[..len].to_vec(),
        None => f.to_vec(),
    };
    (v, a, frame)
}

/// Normal delivery after the table, as the datapath does on `normal`.
fn deliver_normally(p: &mut Pipeline, vni: Vni, f: &[u8]) -> Actions {
    let mut a = Actions::new();
    p.from_decapsulated(decap(vni, r1()), f.len() + 50, f, Instant::now(), &mut a);
    a
}

fn packets(p: &Pipeline) -> Vec<u64> {
    p.flow_table()
        .rules()
        .iter()
        .map(|(_, _, s)| s.packets)
        .collect()
}

#[test]
fn without_rules_tunnel_frames_go_on_untouched() {
    let mut p = with(&[]);
    let f = frame(mac(1), mac(9));
    let (v, a, _) = tunnel(&mut p, VNI, &f);
    assert_eq!((v.rewritten, v.normal), (None, true));
    assert!(a.is_empty());
    assert_eq!(
        p.flow_lookups(),
        (0, 0),
        "no lookup when the table is empty"
    );
    assert_eq!(
        p.counters().underlay.rx_packets,
        0,
        "counted by normal delivery only"
    );
    assert!(!p.tunnel_covers(VNI) && !p.tunnel_cover().covers(VNI));
}

#[test]
fn a_tun_id_rule_matches_its_vni_only_and_never_a_port_frame() {
    let mut p = with(&["priority=200,tun_id=100,udp,tp_dst=53,actions=drop"]);
    let f = udp4(mac(1), mac(9), (40000, 53), 20);
    let (v, a, _) = tunnel(&mut p, VNI, &f);
    assert!(!v.normal);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::FlowDrop)]);
    // The same frame in network 200: normal delivery.
    let (v, a, _) = tunnel(&mut p, VNI2, &f);
    assert!(v.normal && a.is_empty());
    // The same frame from a local port: a port's frames have tun_id 0.
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    let v = p.from_port_flows(P1, &f, &mut out, Instant::now(), &mut a);
    assert!(v.normal && a.is_empty());
    assert_eq!(packets(&p), [1]);
    assert!(p.tunnel_covers(VNI) && !p.tunnel_covers(VNI2));
    let cover = p.tunnel_cover();
    assert!(cover.covers(VNI) && !cover.covers(VNI2) && !cover.all);
    // A masked tun_id admits every VNI it fits: 0x64 (100) and 0xc8 (200) share bit 6.
    let p = with(&["tun_id=0x40/0x40,actions=drop"]);
    assert!(p.tunnel_covers(VNI) && p.tunnel_covers(VNI2) && !p.tunnel_covers(Vni(1)));
}

#[test]
fn in_port_tunnel_matches_tunnel_frames_and_a_local_in_port_never_does() {
    let f = frame(mac(1), mac(9));
    let mut p = with(&["in_port=1,actions=drop"]);
    assert!(tunnel(&mut p, VNI, &f).0.normal);
    assert!(
        !p.tunnel_covers(VNI),
        "a rule naming a local port covers no tunnel"
    );
    let mut p = with(&["in_port=tunnel,actions=drop"]);
    assert!(!tunnel(&mut p, VNI, &f).0.normal);
    assert!(!tunnel(&mut p, VNI2, &f).0.normal);
    assert!(
        p.tunnel_cover().all,
        "in_port=tunnel without tun_id: every network"
    );
    // ... and never a port's frame.
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    assert!(
        p.from_port_flows(P1, &f, &mut out, Instant::now(), &mut a)
            .normal
    );
    // A rule without in_port covers ports and the tunnel alike.
    let mut p = with(&["udp,actions=drop"]);
    assert!(!tunnel(&mut p, VNI2, &f).0.normal);
    assert!(p.tunnel_covers(VNI) && p.tunnel_covers(VNI2));
}

#[test]
fn a_drop_is_counted_on_the_underlay_the_network_and_the_rule() {
    let mut p = with(&["tun_id=100,actions=drop"]);
    let f = frame(mac(1), mac(9));
    let (_, a, _) = tunnel(&mut p, VNI, &f);
    assert_eq!(a.dropped(), Some(DropReason::FlowDrop));
    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::FlowDrop), 1);
    assert_eq!(c.underlay.rx_packets, 1);
    assert_eq!(c.underlay.rx_bytes, (f.len() + 50) as u64);
    assert_eq!(c.networks[&VNI].rx_underlay_frames, 1);
    assert_eq!(c.networks[&VNI].delivered, 0);
    assert_eq!(c.remotes[&r1()].rx_packets, 1);
    assert_eq!(c.ports[&P1].rx_frames, 0, "a tunnel frame is no port's");
    assert_eq!(packets(&p), [1]);
    assert_eq!(p.flow_lookups(), (1, 1));
    // Nothing was learned: learning is normal delivery's.
    let fdb = p.fdb_entries(VNI, Instant::now()).unwrap();
    assert!(fdb.is_empty(), "{fdb:?}");
}

#[test]
fn normal_goes_on_to_delivery_with_the_rewritten_frame_counted_once() {
    let mut p = with(&["tun_id=100,udp,actions=mod_nw_tos:184,normal"]);
    let f = udp4(mac(1), mac(9), (40000, 53), 20);
    let (v, a, out) = tunnel(&mut p, VNI, &f);
    assert!(v.normal && a.is_empty());
    assert_eq!(v.rewritten, Some(f.len()));
    assert_eq!(out[15], 184, "DSCP 46 in the TOS byte");
    assert_eq!(p.counters().underlay.rx_packets, 0, "not counted yet");
    // mac(1) is unknown: normal delivery floods to the network's ports, not to the tunnel.
    let a = deliver_normally(&mut p, VNI, &out);
    assert_eq!(plain(&a), [deliver(P1), deliver(P2), deliver(P3)]);
    let c = p.counters();
    assert_eq!(c.underlay.rx_packets, 1);
    assert_eq!(c.networks[&VNI].rx_underlay_frames, 1);
    assert_eq!(packets(&p), [1]);
    // A miss (network 200) goes on too.
    let (v, a, _) = tunnel(&mut p, VNI2, &f);
    assert!(v.normal && a.is_empty() && v.rewritten.is_none());
}

#[test]
fn output_delivers_to_the_port_named_and_hairpin_is_a_counted_drop() {
    let mut p = with(&["tun_id=100,actions=output:2"]);
    let f = frame(mac(1), mac(9));
    let (v, a, _) = tunnel(&mut p, VNI, &f);
    assert!(!v.normal);
    assert_eq!(a.as_slice(), [deliver(P2)]);
    let c = p.counters();
    assert_eq!(
        (c.underlay.rx_packets, c.networks[&VNI].rx_underlay_frames),
        (1, 1)
    );
    assert_eq!(c.drops.total(), 0);
    // Back into the tunnel: in_port or output:tunnel (an encapsulation to another remote,
    // in this VNI or another) are never relayed.
    for rule in [
        "tun_id=100,actions=in_port",
        "tun_id=100,actions=set_field:192.0.2.12->tun_dst,output:tunnel",
        "tun_id=100,actions=set_tunnel:200,set_field:192.0.2.12->tun_dst,output:tunnel",
    ] {
        let mut p = with(&[rule]);
        let (v, a, _) = tunnel(&mut p, VNI, &f);
        assert!(!v.normal, "{rule}");
        assert_eq!(a.as_slice(), [Action::Drop(DropReason::Hairpin)], "{rule}");
        assert_eq!(p.counters().drops.get(DropReason::Hairpin), 1, "{rule}");
    }
    // The other outputs of such a rule go on; the hairpin copy is counted.
    let mut p = with(&["tun_id=100,actions=in_port,output:3,normal"]);
    let (v, a, _) = tunnel(&mut p, VNI, &f);
    assert!(v.normal);
    assert_eq!(a.as_slice(), [deliver(P3)]);
    assert_eq!(p.counters().drops.get(DropReason::Hairpin), 1);
}

#[test]
fn frames_the_network_would_refuse_do_not_meet_the_table() {
    let mut p = with(&["actions=output:2"]);
    let f = frame(mac(1), mac(9));
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    // From a remote outside the flood list (accept_remotes: known), or for no network.
    for d in [decap(VNI, ip("192.0.2.99")), decap(Vni(300), r1())] {
        let v = p.from_underlay_flows(&d, 100, &f, &mut out, Instant::now(), &mut a);
        assert!(v.normal && a.is_empty(), "{d:?}");
        p.from_decapsulated(d, 100, &f, Instant::now(), &mut a);
        assert!(a.dropped().is_some(), "{d:?}");
    }
    assert_eq!(packets(&p), [0]);
    assert_eq!(p.flow_lookups(), (0, 0));
}
