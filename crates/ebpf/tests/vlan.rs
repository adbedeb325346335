//! VLAN trunks (issue 17) on the kernel path, differentially: the kernel programs never take
//! a trunk's frames (nvod reads the trunk itself) and hand every frame for one of its VLANs
//! (a circuit port) to nvod, which pushes the tag; so a tunnel packet for a network with a
//! circuit leaves the trunk with the same tagged bytes whichever datapath carried it, floods
//! reach only the circuit of their own network, and tagged frames in are the pipeline's
//! (popped, forwarded, or dropped as unknown_vlan / vlan_untagged) on both.
//!
//! ```text
//!   p1 (port, VNI 100)        p8: trunk, no program      ul0 ── R2 (flood remote of 100, 200)
//!                              ├ VLAN 10 → circuit 11 (VNI 100)
//!                              └ VLAN 20 → circuit 12 (VNI 200)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_ebpf::PortInfo;
use nvo_pipeline::vlan::{self, Circuit, VlanTag, TPID_8021Q};
use nvo_pipeline::{Action, Actions, DropReason, PortId, Vni};

const TRUNK: u32 = 8;
const C10: u32 = 11;
const C20: u32 = 12;
const HOST: [u8; 6] = [2, 0, 0, 0, 0x0a, 0x10];
const FAR: [u8; 6] = [2, 0, 0, 0, 0, 0x99];
const BCAST: [u8; 6] = [0xff; 6];

/// Frames on the wire: (interface's port id, bytes).
type Wire = Vec<(u32, Vec<u8>)>;

fn tag(port: u32) -> Option<VlanTag> {
    let vid = match port {
        C10 => 10,
        C20 => 20,
        _ => return None,
    };
    Some(VlanTag {
        tpid: TPID_8021Q,
        vid,
    })
}

/// What leaves which interface: a circuit's frames leave the trunk's, tagged (what nvod's
/// `Ports::send` does for a circuit).
fn on_the_wire(port: u32, frame: &[u8]) -> (u32, Vec<u8>) {
    match tag(port) {
        Some(t) => {
            let mut out = vec![0; frame.len() + vlan::TAG_LEN];
            let n = vlan::push(frame, t, &mut out).unwrap();
            out.truncate(n);
            (TRUNK, out)
        }
        None => (port, frame.to_vec()),
    }
}

fn gateway(tag: &str) -> Fixture {
    let mut fx = Fixture::new(tag);
    fx.network(100, "vxlan", &[R2], &[1], &[]);
    fx.network(200, "vxlan", &[R2], &[], &[]);
    let trunk = fx.ports.pop().unwrap();
    assert_eq!(trunk.id, PortId(TRUNK));
    for (id, vni) in [(C10, 100), (C20, 200)] {
        fx.ports.push(PortInfo {
            id: PortId(id),
            vni: Vni(vni),
            name: trunk.name.clone(),
            ifindex: trunk.ifindex,
            veth: false,
            tapped: false,
        });
    }
    let circuits = [
        Circuit {
            vid: 10,
            port: PortId(C10),
            vni: Vni(100),
        },
        Circuit {
            vid: 20,
            port: PortId(C20),
            vni: Vni(200),
        },
    ];
    fx.both(|p, _| p.add_trunk(PortId(TRUNK), TPID_8021Q, &circuits).unwrap());
    fx
}

/// A tunnel packet through both paths: (kernel, pipeline) frames on the wire, sorted.
fn tunnel_in(fx: &mut Fixture, vni: u32, frame: &[u8]) -> (Wire, Wire) {
    fx.delivered.clear();
    let packet = tunnel_packet(&mut fx.engine, R2, "vxlan", vni, frame);
    let (kernel, reference) = fx.tunnel_packet_in(&packet);
    assert!(!kernel.punted && kernel.drop.is_none(), "{kernel:?}");
    let ports = |r: &Result| -> Wire {
        r.outs
            .iter()
            .map(|o| match o {
                Out::Port(p, f) => on_the_wire(*p, f),
                Out::Underlay(_) => panic!("a tunnel packet never goes back to the underlay"),
            })
            .collect()
    };
    let mut k = ports(&kernel);
    k.extend(fx.delivered.iter().map(|(p, f)| on_the_wire(*p, f)));
    let mut r = ports(&reference);
    // The kernel program took the packet (it was not left to nvod's socket): each copy for a
    // circuit came through the punt ring.
    let circuits = reference
        .outs
        .iter()
        .filter(|o| matches!(o, Out::Port(p, _) if tag(*p).is_some()))
        .count();
    assert_eq!(
        fx.delivered.len(),
        circuits,
        "copies the kernel handed to nvod"
    );
    k.sort();
    r.sort();
    (k, r)
}

/// A tagged frame from the trunk, as nvod runs it on either datapath, on both pipelines.
fn from_trunk(fx: &mut Fixture, frame: &[u8]) -> Vec<Action> {
    let mut seen = Vec::new();
    for p in [&mut fx.reference, &mut fx.mirrored] {
        let mut actions = Actions::new();
        let mut out = vec![0; frame.len()];
        if let Some((circuit, len)) = p.from_trunk(PortId(TRUNK), frame, &mut out, &mut actions) {
            p.from_port(circuit, &out[..len], fx.now, &mut actions);
        }
        seen.push(actions.iter().copied().collect::<Vec<_>>());
    }
    fx.sync();
    assert_eq!(seen[0].len(), seen[1].len());
    seen.pop().unwrap()
}

#[test]
fn tunnel_frames_leave_the_trunk_tagged_and_only_on_their_network() {
    let mut fx = gateway("nvvla-dv1");
    // The trunk's interface carries no program: its frames are nvod's on either datapath.
    let trunk_ifindex = fx
        .ports
        .iter()
        .find(|p| p.id == PortId(C10))
        .unwrap()
        .ifindex
        .unwrap();
    assert!(!fx.mirror.kernel().attached(trunk_ifindex));
    assert!(fx.mirror.kernel().attached(fx.ifindex(1)));

    // A broadcast from R2 in 100: port 1 untagged, the trunk tagged 10; never VLAN 20.
    let f = udp_frame(BCAST, FAR, 1000, 53, 40);
    let (k, r) = tunnel_in(&mut fx, 100, &f);
    assert_eq!(k, r, "kernel vs pipeline");
    let tagged = on_the_wire(C10, &f);
    assert_eq!(r, {
        let mut v = vec![(1, f.clone()), tagged];
        v.sort();
        v
    });
    // In 200: only VLAN 20.
    let (k, r) = tunnel_in(&mut fx, 200, &f);
    assert_eq!(k, r);
    assert_eq!(r, [on_the_wire(C20, &f)]);

    // HOST answers on VLAN 10: the pipeline pops the tag, learns HOST behind circuit 10 and
    // sends the frame to R2 untagged.
    let answer = udp_frame(FAR, HOST, 53, 1000, 40);
    let (_, tagged_answer) = on_the_wire(C10, &answer);
    let actions = from_trunk(&mut fx, &tagged_answer);
    assert!(
        matches!(actions.as_slice(), [Action::Encap { vni: Vni(100), .. }]),
        "{actions:?}"
    );
    // Unicast to HOST from the tunnel: the kernel hands it over, nvod tags it — same bytes.
    let f = udp_frame(HOST, FAR, 1000, 53, 40);
    let (k, r) = tunnel_in(&mut fx, 100, &f);
    assert_eq!(k, r);
    assert_eq!(r, [on_the_wire(C10, &f)]);
    // HOST is unknown in 200: a frame to it there floods to VLAN 20 only.
    let (k, r) = tunnel_in(&mut fx, 200, &f);
    assert_eq!(k, r);
    assert_eq!(r, [on_the_wire(C20, &f)]);
    let (m, r) = fx.fdb(100);
    assert_eq!(m, r, "FDB of 100");
}

#[test]
fn untagged_and_unmapped_frames_are_dropped_alike() {
    let mut fx = gateway("nvvla-dv2");
    let f = udp_frame(FAR, HOST, 53, 1000, 40);
    assert_eq!(
        from_trunk(&mut fx, &f),
        [Action::Drop(DropReason::VlanUntagged)]
    );
    let mut unmapped = vec![0; f.len() + 4];
    let t = VlanTag {
        tpid: TPID_8021Q,
        vid: 30,
    };
    let n = vlan::push(&f, t, &mut unmapped).unwrap();
    assert_eq!(
        from_trunk(&mut fx, &unmapped[..n]),
        [Action::Drop(DropReason::UnknownVlan)]
    );
    let (m, r) = fx.counters();
    assert_eq!(m.drops, r.drops);
    assert_eq!(r.drops.get(DropReason::UnknownVlan), 1);
    assert_eq!(r.drops.get(DropReason::VlanUntagged), 1);
}
