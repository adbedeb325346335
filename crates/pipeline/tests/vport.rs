//! Virtual ports per MAC (VM-VP): a hypervisor's uplink S carries VM A and VM B (untagged, in
//! network 100) and VM C (VLAN 20, in network 200), beside an ordinary port of network 100.
//! Frames are assigned by source MAC (and VLAN), floods leave S once per network and segment
//! and never go back to the segment they came from, unknown MACs are dropped and counted.
//!
//! ```text
//!   shared S (id 10) ─ mac a        → VP A (id 11) ─┐ network 100 ── port P1, remote r1
//!                    ├ mac b        → VP B (id 12) ─┘
//!                    └ mac c vlan 20 → VP C (id 13) ── network 200 ── remote r2
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Instant;

use common::*;
use nvo_pipeline::vlan::{self, VlanTag, TPID_8021Q};
use nvo_pipeline::vport::{Vport, MAX_VPORTS_PER_PORT};
use nvo_pipeline::{
    Action, Actions, DropReason, Limits, Mac, NetworkSpec, Pipeline, PortId, TableError, Vni,
};

const S: PortId = PortId(10);
const VA: PortId = PortId(11);
const VB: PortId = PortId(12);
const VC: PortId = PortId(13);
const V200: Vni = Vni(200);
const V300: Vni = Vni(300);

fn vp(port: PortId, m: u8, vid: Option<u16>, vni: Vni) -> Vport {
    Vport {
        port,
        mac: mac(m),
        vid,
        vni,
    }
}

fn hypervisor(default: Option<(PortId, Vni)>) -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    for vni in [VNI, V200, V300] {
        p.add_network(NetworkSpec::new(vni)).unwrap();
    }
    p.add_port(P1, VNI).unwrap();
    p.flood_add(VNI, r1()).unwrap();
    p.flood_add(V200, r2()).unwrap();
    p.add_shared(S, default).unwrap();
    p.add_vport(S, vp(VA, 0xa, None, VNI)).unwrap();
    p.add_vport(S, vp(VB, 0xb, None, VNI)).unwrap();
    p.add_vport(S, vp(VC, 0xc, Some(20), V200)).unwrap();
    p
}

fn tagged(vid: u16, untagged: &[u8]) -> Vec<u8> {
    let mut out = vec![0; untagged.len() + 4];
    let tag = VlanTag {
        tpid: TPID_8021Q,
        vid,
    };
    let n = vlan::push(untagged, tag, &mut out).unwrap();
    out.truncate(n);
    out
}

/// A frame from S through `from_shared` and `from_port` on its virtual port, as the datapath
/// runs it: the virtual port and the frame the actions refer to.
fn from_shared(p: &mut Pipeline, frame: &[u8], a: &mut Actions) -> Option<(PortId, Vec<u8>)> {
    let mut out = vec![0; frame.len()];
    let c = p.from_shared(S, frame, &mut out, a)?;
    let f = match c.popped {
        Some(len) => out[..len].to_vec(),
        None => frame.to_vec(),
    };
    p.from_port(c.vport, &f, Instant::now(), a);
    Some((c.vport, f))
}

#[test]
fn frames_belong_to_the_virtual_port_of_their_source_mac_and_vlan() {
    let mut p = hypervisor(None);
    let mut a = Actions::new();
    let bcast = frame(Mac::BROADCAST, mac(0xa));
    let (vport, f) = from_shared(&mut p, &bcast, &mut a).unwrap();
    assert_eq!((vport, f), (VA, bcast));
    // A's broadcast: P1 and r1 in network 100, not back to S (A and B's segment).
    assert_eq!(plain(&a), [deliver(P1), encap(r1(), VNI)]);

    let inner = frame(Mac::BROADCAST, mac(0xc));
    let (vport, f) = from_shared(&mut p, &tagged(20, &inner), &mut a).unwrap();
    assert_eq!((vport, f), (VC, inner.clone()), "the tag is popped");
    assert_eq!(plain(&a), [encap(r2(), V200)]);

    // C's MAC untagged, or in another VLAN, is no frame of C's, nor of anyone's.
    assert!(from_shared(&mut p, &inner, &mut a).is_none());
    assert_eq!(plain(&a), [Action::Drop(DropReason::UnknownVport)]);
    assert!(from_shared(&mut p, &tagged(21, &inner), &mut a).is_none());
    // An unknown MAC without a default network.
    assert!(from_shared(&mut p, &frame(Mac::BROADCAST, mac(0xd)), &mut a).is_none());
    assert_eq!(plain(&a), [Action::Drop(DropReason::UnknownVport)]);
    // A runt.
    assert!(from_shared(&mut p, &[0u8; 13], &mut a).is_none());
    assert_eq!(plain(&a), [Action::Drop(DropReason::MalformedFrame)]);

    let c = p.counters();
    assert_eq!(c.drops.get(DropReason::UnknownVport), 3);
    let s = c.ports[&S];
    assert_eq!((s.rx_frames, s.drops), (6, 4));
    assert_eq!(c.ports[&VA].rx_frames, 1);
    assert_eq!(c.ports[&VC].rx_frames, 1);
    assert_eq!(c.ports[&VB].rx_frames, 0);
}

#[test]
fn a_flood_leaves_the_shared_port_once_per_network_and_segment() {
    let mut p = hypervisor(None);
    let t = Instant::now();
    let mut a = Actions::new();
    // From the tunnel in 100: P1 and one copy to S (A and B are one segment).
    let bcast = frame(Mac::BROADCAST, mac(0x1));
    p.receive_vxlan(r1(), &vxlan(100, None, &bcast), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1), deliver(VA)]);
    // In 200: C's copy (tagged by the datapath); nothing of 100's reaches C.
    p.receive_vxlan(r2(), &vxlan(200, None, &bcast), t, &mut a);
    assert_eq!(plain(&a), [deliver(VC)]);
    // From P1: S once, and the tunnel.
    p.from_port(P1, &frame(Mac::BROADCAST, mac(0x2)), t, &mut a);
    assert_eq!(plain(&a), [deliver(VA), encap(r1(), VNI)]);

    // A goes: B takes its place in 100's flood list.
    p.remove_vport(S, mac(0xa)).unwrap();
    p.receive_vxlan(r1(), &vxlan(100, None, &bcast), t, &mut a);
    assert_eq!(plain(&a), [deliver(P1), deliver(VB)]);
    assert_eq!(
        p.remove_vport(S, mac(0xa)),
        Err(TableError::NoSuchVport {
            shared: S,
            mac: mac(0xa)
        })
    );
}

#[test]
fn a_vm_mac_is_known_by_configuration_and_never_hairpins() {
    let mut p = hypervisor(None);
    let t = Instant::now();
    let mut a = Actions::new();
    // Before B ever sent a frame, the tunnel reaches it: its MAC is a static entry.
    p.receive_vxlan(
        r1(),
        &vxlan(100, None, &frame(mac(0xb), mac(0x1))),
        t,
        &mut a,
    );
    assert_eq!(plain(&a), [deliver(VB)]);
    // A to B: same segment, the hypervisor's switch delivered it already.
    assert!(from_shared(&mut p, &frame(mac(0xb), mac(0xa)), &mut a).is_some());
    assert_eq!(plain(&a), [Action::Drop(DropReason::Hairpin)]);
    // A to C (network 200): unknown in 100, flooded there — P1 and r1, never C.
    assert!(from_shared(&mut p, &frame(mac(0xc), mac(0xa)), &mut a).is_some());
    assert_eq!(plain(&a), [deliver(P1), encap(r1(), VNI)]);
    // A flood on a network with nothing else: no_destination.
    let mut q = Pipeline::new(Limits::default());
    q.add_network(NetworkSpec::new(VNI)).unwrap();
    q.add_shared(S, None).unwrap();
    q.add_vport(S, vp(VA, 0xa, None, VNI)).unwrap();
    q.add_vport(S, vp(VB, 0xb, None, VNI)).unwrap();
    let mut out = [0u8; 64];
    let bcast = frame(Mac::BROADCAST, mac(0xa));
    let c = q.from_shared(S, &bcast, &mut out, &mut a).unwrap();
    q.from_port(c.vport, &bcast, t, &mut a);
    assert_eq!(plain(&a), [Action::Drop(DropReason::NoDestination)]);
    assert_eq!(q.counters().ports[&VA].drops, 1);
}

#[test]
fn the_default_network_takes_unknown_macs_until_a_virtual_port_names_them() {
    let d = PortId(19);
    let mut p = hypervisor(Some((d, V300)));
    let t = Instant::now();
    let mut a = Actions::new();
    let from_d = frame(Mac::BROADCAST, mac(0xd));
    let (vport, _) = from_shared(&mut p, &from_d, &mut a).unwrap();
    assert_eq!(vport, d);
    assert!(p
        .fdb_entries(V300, t)
        .unwrap()
        .iter()
        .any(|e| e.mac == mac(0xd)));
    // C's MAC untagged does not fall to the default network.
    assert!(from_shared(&mut p, &frame(Mac::BROADCAST, mac(0xc)), &mut a).is_none());
    // Tagged frames of unknown MACs neither.
    assert!(from_shared(&mut p, &tagged(20, &from_d), &mut a).is_none());

    // D becomes a VM of network 100: network 300 forgets it.
    p.add_vport(S, vp(PortId(14), 0xd, None, VNI)).unwrap();
    assert!(!p
        .fdb_entries(V300, t)
        .unwrap()
        .iter()
        .any(|e| e.mac == mac(0xd)));
    let (vport, _) = from_shared(&mut p, &from_d, &mut a).unwrap();
    assert_eq!(vport, PortId(14));

    // Removing the shared port removes every virtual port and its FDB entries.
    p.remove_shared(S).unwrap();
    assert!(!p.is_shared(S));
    assert!(p.port_network(VA).is_none() && p.port_network(d).is_none());
    assert!(!p
        .fdb_entries(VNI, t)
        .unwrap()
        .iter()
        .any(|e| e.mac == mac(0xa)));
    p.remove_network(V300).unwrap();
}

#[test]
fn refusals_name_the_offending_value_and_change_nothing() {
    let mut p = hypervisor(None);
    assert_eq!(
        p.add_vport(S, vp(PortId(20), 0xa, None, V200)),
        Err(TableError::VportExists {
            shared: S,
            mac: mac(0xa)
        })
    );
    assert_eq!(
        p.add_vport(P1, vp(PortId(20), 0xe, None, VNI)),
        Err(TableError::NotShared(P1))
    );
    assert_eq!(
        p.add_vport(S, vp(PortId(20), 0xe, Some(4095), VNI)),
        Err(TableError::InvalidVid(4095))
    );
    assert_eq!(
        p.add_vport(S, vp(PortId(20), 0xe, None, Vni(999))),
        Err(TableError::NoSuchNetwork(Vni(999)))
    );
    let multicast = Vport {
        mac: Mac::BROADCAST,
        ..vp(PortId(20), 0, None, VNI)
    };
    assert_eq!(
        p.add_vport(S, multicast),
        Err(TableError::InvalidMac(Mac::BROADCAST))
    );
    assert!(matches!(
        p.add_vport(S, vp(P1, 0xe, None, VNI)),
        Err(TableError::PortExists { .. })
    ));
    assert!(p.port_network(PortId(20)).is_none());
    assert_eq!(p.vports(S).unwrap().vports.len(), 3);

    // Bounded per shared port.
    let mut q = Pipeline::new(Limits {
        max_ports: 4096,
        ..Limits::default()
    });
    q.add_network(NetworkSpec::new(VNI)).unwrap();
    q.add_shared(S, None).unwrap();
    for i in 0..MAX_VPORTS_PER_PORT as u32 {
        let [_, _, h, l] = i.to_be_bytes();
        let v = Vport {
            port: PortId(100 + i),
            mac: Mac([2, 0, 0, 1, h, l]),
            vid: None,
            vni: VNI,
        };
        q.add_vport(S, v).unwrap();
    }
    let one_more = Vport {
        port: PortId(99),
        mac: Mac([2, 0, 0, 2, 0, 0]),
        vid: None,
        vni: VNI,
    };
    assert!(matches!(
        q.add_vport(S, one_more),
        Err(TableError::TableFull { .. })
    ));
}
