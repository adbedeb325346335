//! The VLAN gateway (AC-VP): a trunk whose VLANs 10 and 20 are circuits of networks 100 and
//! 200, beside an ordinary port of network 100. Tags come off towards the tunnel and the other
//! ports, floods reach a circuit only in its own network, untagged and unmapped frames are
//! dropped and counted in the trunk.
//!
//! ```text
//!   trunk T (id 10) ── vlan 10 → circuit C10 (id 11) ─┐ network 100 ── port P1, remote r1
//!                   └─ vlan 20 → circuit C20 (id 12) ─┘ network 200 ── remote r2
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Instant;

use common::*;
use nvo_pipeline::vlan::{self, Circuit, VlanTag, TPID_8021AD, TPID_8021Q};
use nvo_pipeline::{Actions, DropReason, Limits, NetworkSpec, Pipeline, PortId, TableError, Vni};

const T: PortId = PortId(10);
const C10: PortId = PortId(11);
const C20: PortId = PortId(12);
const V200: Vni = Vni(200);

fn gateway(tpid: u16) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec::new(VNI)).unwrap();
    p.add_network(NetworkSpec::new(V200)).unwrap();
    p.add_port(P1, VNI).unwrap();
    p.flood_add(VNI, r1()).unwrap();
    p.flood_add(V200, r2()).unwrap();
    let circuits = [
        Circuit {
            vid: 10,
            port: C10,
            vni: VNI,
        },
        Circuit {
            vid: 20,
            port: C20,
            vni: V200,
        },
    ];
    p.add_trunk(T, tpid, &circuits).unwrap();
    p
}

fn tagged(tpid: u16, vid: u16, untagged: &[u8]) -> Vec<u8> {
    let mut out = vec![0; untagged.len() + 4];
    let n = vlan::push(untagged, VlanTag { tpid, vid }, &mut out).unwrap();
    out.truncate(n);
    out
}

/// A frame from the trunk through `from_trunk` and `from_port` on its circuit, as the datapath
/// runs it: the circuit and the frame the actions refer to.
fn from_trunk(p: &mut Pipeline, frame: &[u8], a: &mut Actions) -> Option<(PortId, Vec<u8>)> {
    let mut out = vec![0; frame.len()];
    let (circuit, len) = p.from_trunk(T, frame, &mut out, a)?;
    p.from_port(circuit, &out[..len], Instant::now(), a);
    Some((circuit, out[..len].to_vec()))
}

#[test]
fn a_tagged_broadcast_floods_its_own_network_untagged() {
    let mut p = gateway(TPID_8021Q);
    let mut a = Actions::new();
    let inner = frame(nvo_pipeline::Mac::BROADCAST, mac(0xa));
    let (circuit, untagged) = from_trunk(&mut p, &tagged(TPID_8021Q, 10, &inner), &mut a).unwrap();
    assert_eq!(circuit, C10);
    assert_eq!(untagged, inner, "the tag is popped before anything else");
    assert_eq!(plain(&a), [deliver(P1), encap(r1(), VNI)]);

    let (circuit, _) = from_trunk(&mut p, &tagged(TPID_8021Q, 20, &inner), &mut a).unwrap();
    assert_eq!(circuit, C20);
    assert_eq!(plain(&a), [encap(r2(), V200)]);
}

#[test]
fn floods_and_learned_macs_reach_the_circuit_of_their_network_only() {
    let mut p = gateway(TPID_8021Q);
    let t = Instant::now();
    let mut a = Actions::new();
    // A broadcast from r1 in network 100: port 1 and circuit 10, not circuit 20.
    let bcast = frame(nvo_pipeline::Mac::BROADCAST, mac(0xc));
    p.receive_vxlan(r1(), &vxlan(100, None, &bcast), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1), deliver(C10)]);
    // A in VLAN 10 answers: learned behind circuit 10 in network 100 only.
    from_trunk(
        &mut p,
        &tagged(TPID_8021Q, 10, &frame(mac(0xc), mac(0xa))),
        &mut a,
    )
    .unwrap();
    assert_eq!(plain(&a), [encap(r1(), VNI)]);
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(mac(0xa), mac(0xc))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(C10)]);
    // The same MAC in network 200 is unknown there: flooded to circuit 20 (from r2).
    p.receive_vxlan(
        r2(),
        &vxlan(200, None, &frame(mac(0xa), mac(0xd))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(C20)]);
}

#[test]
fn untagged_unmapped_and_short_frames_are_dropped_and_counted_in_the_trunk() {
    let mut p = gateway(TPID_8021Q);
    let mut a = Actions::new();
    let inner = frame(mac(0xb), mac(0xa));
    assert!(from_trunk(&mut p, &inner, &mut a).is_none());
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::VlanUntagged)]
    );
    assert!(from_trunk(&mut p, &tagged(TPID_8021Q, 30, &inner), &mut a).is_none());
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::UnknownVlan)]
    );
    // An 802.1ad tag on an 802.1Q trunk is not its tag: untagged, as far as it goes.
    assert!(from_trunk(&mut p, &tagged(TPID_8021AD, 10, &inner), &mut a).is_none());
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::VlanUntagged)]
    );
    assert!(from_trunk(&mut p, &tagged(TPID_8021Q, 10, &inner)[..16], &mut a).is_none());
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::MalformedFrame)]
    );

    // A circuit removed on its own leaves its VLAN unmapped, not pointing nowhere.
    p.remove_port(C20).unwrap();
    assert!(from_trunk(&mut p, &tagged(TPID_8021Q, 20, &inner), &mut a).is_none());
    assert_eq!(
        plain(&a),
        [nvo_pipeline::Action::Drop(DropReason::UnknownVlan)]
    );

    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::VlanUntagged), 2);
    assert_eq!(c.drops.get(DropReason::UnknownVlan), 2);
    assert_eq!((c.ports[&T].rx_frames, c.ports[&T].drops), (5, 5));
    assert_eq!(c.ports[&C10].rx_frames, 0);
}

#[test]
fn qinq_maps_the_s_tag_and_carries_the_c_tag_through() {
    let mut p = gateway(TPID_8021AD);
    let mut a = Actions::new();
    let customer = tagged(TPID_8021Q, 777, &frame(mac(0xb), mac(0xa)));
    let (circuit, inner) = from_trunk(&mut p, &tagged(TPID_8021AD, 20, &customer), &mut a).unwrap();
    assert_eq!(circuit, C20);
    assert_eq!(inner, customer, "only the S-tag comes off");
    assert_eq!(plain(&a), [encap(r2(), V200)]);
}

#[test]
fn a_trunk_is_all_or_nothing_and_goes_with_its_circuits() {
    let mut p = gateway(TPID_8021Q);
    // Circuit 30's port is taken by port 1: nothing of the new trunk stays.
    let clash = [
        Circuit {
            vid: 5,
            port: PortId(40),
            vni: VNI,
        },
        Circuit {
            vid: 30,
            port: P1,
            vni: V200,
        },
    ];
    assert!(matches!(
        p.add_trunk(PortId(41), TPID_8021Q, &clash),
        Err(TableError::PortExists { .. })
    ));
    assert!(!p.is_trunk(PortId(41)));
    assert_eq!(p.network(VNI).unwrap().ports, [P1, C10]);
    // A trunk's id is no port, and no second trunk.
    assert!(p.add_port(T, VNI).is_err());
    assert!(p.add_trunk(T, TPID_8021Q, &clash[..1]).is_err());
    p.remove_trunk(T).unwrap();
    assert_eq!(p.network(VNI).unwrap().ports, [P1]);
    assert!(p.network(V200).unwrap().ports.is_empty());
    assert_eq!(p.remove_trunk(T), Err(TableError::NoSuchPort(T)));
}
