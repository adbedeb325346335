//! The flow table's tunnel output (flow_tunnel.rs): `set_tunnel`, `set_field:…->tun_dst` and
//! `output:tunnel` (port 65279) make one `Encap` into the network of the rule's VNI, with that
//! network's profile and the entropy normal forwarding gives the same frame; the checks at
//! install and the counted drop at run time.
//!
//! ```text
//!   port P1 ─┐
//!   port P2 ─┼─ network 100 (vxlan) ── remotes r1, r2
//!   port P3 ─┘
//!              network 200 (profile 3), network 300 (L3)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Instant;

use common::*;
use nvo_flow::syntax::parse;
use nvo_pipeline::flows::{check_here, TunnelError};
use nvo_pipeline::{
    Action, Actions, DropReason, FdbDest, FlowError, NetworkSpec, Pipeline, PortId, ProfileTag, Vni,
};

const V200: Vni = Vni(200);
const GENEVE_LIKE: ProfileTag = ProfileTag(3);

fn rule(text: &str) -> nvo_flow::syntax::Flow {
    parse(text, &|n| (n == "tunnel").then_some(PortId::TUNNEL.0)).unwrap()
}

/// The standard setup and network 200 on profile 3, network 300 an L3 network.
fn lab() -> Pipeline {
    let mut p = setup();
    let mut spec = NetworkSpec::new(V200);
    spec.profile = GENEVE_LIKE;
    p.add_network(spec).unwrap();
    let mut l3 = NetworkSpec::new(Vni(300));
    l3.l3_gateway = Some(mac(0xfe));
    p.add_network(l3).unwrap();
    p
}

fn with(rules: &[&str]) -> Pipeline {
    let mut p = lab();
    for r in rules {
        p.flow_insert(rule(r), Instant::now()).unwrap();
    }
    p
}

fn run(p: &mut Pipeline, port: PortId, f: &[u8]) -> (nvo_pipeline::FlowVerdict, Actions) {
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    let v = p.from_port_flows(port, f, &mut out, Instant::now(), &mut a);
    (v, a)
}

/// The entropy normal forwarding gives `f` from P1 towards a remote.
fn normal_entropy(f: &[u8]) -> u16 {
    let mut p = setup();
    p.fdb_add_static(VNI, mac(2), FdbDest::Remote(r1()))
        .unwrap();
    let mut a = Actions::new();
    p.from_port(P1, f, Instant::now(), &mut a);
    match a.as_slice() {
        [Action::Encap { entropy, .. }] => *entropy,
        other => panic!("normal forwarding gave {other:?}"),
    }
}

#[test]
fn output_tunnel_encapsulates_into_the_rules_vni_with_its_networks_profile() {
    let mut p =
        with(&["in_port=1,udp,actions=set_tunnel:200,set_field:192.0.2.50->tun_dst,output:tunnel"]);
    let f = udp4(mac(2), mac(1), (40000, 53), 20);
    let (v, a) = run(&mut p, P1, &f);
    assert!(!v.normal && v.rewritten.is_none());
    assert_eq!(
        a.as_slice(),
        [Action::Encap {
            remote: ip("192.0.2.50"),
            vni: V200,
            entropy: normal_entropy(&f),
            profile: GENEVE_LIKE,
        }]
    );
    // Counted on the port it came from and on the network it went into.
    let c = p.counters();
    assert_eq!(c.ports[&P1].rx_frames, 1);
    assert_eq!(c.ports[&P1].drops, 0);
    assert_eq!(c.networks[&V200].encap_unicast, 1);
    assert_eq!(p.flow_table().rules()[0].2.packets, 1);
    // Another flow, another entropy (the outer source port spreads flows).
    let g = udp4(mac(2), mac(1), (40001, 53), 20);
    let (_, b) = run(&mut p, P1, &g);
    assert_eq!(b.as_slice().len(), 1);
    assert_ne!(a.as_slice(), b.as_slice());
}

#[test]
fn without_set_tunnel_the_vni_is_the_ports_network_and_tun_id_is_the_same_as_set_tunnel() {
    let mut p = with(&["in_port=2,actions=set_field:2001:db8::7->tun_dst,output:65279"]);
    let f = frame(mac(9), mac(2));
    let (_, a) = run(&mut p, P2, &f);
    assert_eq!(plain(&a), [encap(ip("2001:db8::7"), VNI)]);
    let mut p = with(&[
        "in_port=2,actions=set_field:0xc8->tun_id,set_field:192.0.2.9->tun_dst,output:tunnel",
    ]);
    let (_, a) = run(&mut p, P2, &f);
    assert!(matches!(
        a.as_slice(),
        [Action::Encap {
            vni: V200,
            profile: GENEVE_LIKE,
            ..
        }]
    ));
}

#[test]
fn a_rewrite_then_encapsulate_sends_the_rewritten_frame_with_its_entropy() {
    let mut p = with(&[
        "in_port=1,udp,actions=mod_dl_dst:02:00:00:00:00:2a,set_tunnel:200,set_field:192.0.2.50->tun_dst,output:tunnel",
    ]);
    let f = udp4(mac(2), mac(1), (40000, 53), 20);
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    let v = p.from_port_flows(P1, &f, &mut out, Instant::now(), &mut a);
    let len = v.rewritten.expect("the frame was rewritten");
    assert_eq!(&out[..6], &mac(0x2a).0);
    let mut rewritten = f.clone();
    rewritten[..6].copy_from_slice(&mac(0x2a).0);
    assert_eq!(&out[..len], &rewritten[..]);
    // The entropy is that of the frame sent (MACs are in the flow hash).
    let Action::Encap { entropy, .. } = a.as_slice()[0] else {
        panic!("{a:?}");
    };
    let mut q = setup();
    q.fdb_add_static(VNI, mac(0x2a), FdbDest::Remote(r1()))
        .unwrap();
    let mut b = Actions::new();
    q.from_port(P1, &rewritten, Instant::now(), &mut b);
    assert!(matches!(b.as_slice(), [Action::Encap { entropy: e, .. }] if *e == entropy));
    assert_ne!(entropy, normal_entropy(&f));
}

#[test]
fn several_outputs_each_act_a_port_and_two_tunnels() {
    let mut p = with(&[
        "in_port=1,actions=output:2,set_tunnel:200,set_field:192.0.2.50->tun_dst,output:tunnel,set_field:192.0.2.51->tun_dst,output:tunnel,normal",
    ]);
    let f = frame(mac(2), mac(1));
    let (v, a) = run(&mut p, P1, &f);
    assert!(v.normal, "normal after the outputs");
    let got = plain(&a);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], deliver(P2));
    let remotes: Vec<_> = got[1..]
        .iter()
        .map(|x| match x {
            Action::Encap { remote, vni, .. } => (*remote, *vni),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        remotes,
        [(ip("192.0.2.50"), V200), (ip("192.0.2.51"), V200)]
    );
}

#[test]
fn install_refuses_what_cannot_be_sent() {
    let now = Instant::now();
    let mut p = lab();
    let refused = |p: &mut Pipeline, text: &str| p.flow_insert(rule(text), now).unwrap_err();
    let e = refused(&mut p, "actions=set_tunnel:200,output:tunnel");
    assert_eq!(e, FlowError::Tunnel(TunnelError::NoDst));
    assert!(e.to_string().contains("tun_dst before it"), "{e}");
    // The tun_dst must come before the output, as in Open vSwitch.
    let e = refused(&mut p, "actions=output:tunnel,set_field:192.0.2.1->tun_dst");
    assert_eq!(e, FlowError::Tunnel(TunnelError::NoDst));
    let e = refused(&mut p, "actions=set_field:0.0.0.0->tun_dst,output:tunnel");
    assert_eq!(e, FlowError::Tunnel(TunnelError::Dst(ip("0.0.0.0"))));
    let e = refused(
        &mut p,
        "actions=set_tunnel:0x1000000,set_field:192.0.2.1->tun_dst,output:tunnel",
    );
    assert_eq!(e, FlowError::Tunnel(TunnelError::Key(0x100_0000)));
    assert!(!p.has_flows());
    // set_tunnel alone is metadata (as in Open vSwitch): accepted.
    p.flow_insert(rule("udp,actions=set_tunnel:5,normal"), now)
        .unwrap();

    // What needs this host: the underlay's family, an L2 network of the VNI.
    let l2 = |v: Vni| matches!(v.0, 100 | 200);
    let v4 = ip("10.100.0.1");
    let acts = |t: &str| rule(&format!("actions={t}")).actions;
    assert_eq!(
        check_here(
            &acts("set_field:2001:db8::1->tun_dst,output:tunnel"),
            v4,
            &l2
        ),
        Err(TunnelError::Family {
            dst: ip("2001:db8::1"),
            locator: v4
        })
    );
    assert!(check_here(
        &acts("set_field:10.100.0.2->tun_dst,output:tunnel"),
        ip("2001:db8::9"),
        &l2
    )
    .unwrap_err()
    .to_string()
    .contains("address family"));
    assert_eq!(
        check_here(
            &acts("set_tunnel:300,set_field:10.100.0.2->tun_dst,output:tunnel"),
            v4,
            &l2
        ),
        Err(TunnelError::NoNetwork(300))
    );
    assert_eq!(
        check_here(&acts("set_tunnel:0,normal"), v4, &l2),
        Err(TunnelError::NoNetwork(0))
    );
    assert_eq!(
        check_here(
            &acts("set_tunnel:200,set_field:10.100.0.2->tun_dst,output:tunnel"),
            v4,
            &l2
        ),
        Ok(())
    );
}

#[test]
fn a_vni_that_is_no_l2_network_at_run_time_is_a_counted_drop() {
    // L3 network 300, and 400 that does not exist (installed by a table that cannot see
    // networks, or removed since).
    for vni in [300, 400] {
        let mut p = with(&[&format!(
            "in_port=1,actions=set_tunnel:{vni},set_field:192.0.2.50->tun_dst,output:tunnel"
        )]);
        let (v, a) = run(&mut p, P1, &frame(mac(2), mac(1)));
        assert!(!v.normal);
        assert_eq!(a.as_slice(), [Action::Drop(DropReason::UnknownVni)]);
        let c = p.counters();
        assert_eq!(c.drops.get(DropReason::UnknownVni), 1);
        assert_eq!(c.ports[&P1].drops, 1);
    }
}

#[test]
fn packet_out_encapsulates_too_and_needs_a_vni_without_an_in_port() {
    let mut p = lab();
    let f = frame(mac(2), mac(1));
    let acts = rule("actions=set_tunnel:200,set_field:192.0.2.50->tun_dst,output:tunnel").actions;
    let mut a = Actions::new();
    let mut out = vec![0; f.len() + 16];
    p.packet_out(None, &acts, &f, &mut out, Instant::now(), &mut a);
    assert!(matches!(a.as_slice(), [Action::Encap { vni: V200, .. }]));
    // From the controller, with no set_tunnel: no network to take the VNI from.
    let acts = rule("actions=set_field:192.0.2.50->tun_dst,output:tunnel").actions;
    p.packet_out(None, &acts, &f, &mut out, Instant::now(), &mut a);
    assert_eq!(a.as_slice(), [Action::Drop(DropReason::UnknownVni)]);
    p.packet_out(Some(P3), &acts, &f, &mut out, Instant::now(), &mut a);
    assert_eq!(plain(&a), [encap(ip("192.0.2.50"), VNI)]);
}
