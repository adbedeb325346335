//! Frame builders and a standard setup shared by the integration tests. Frames are built with
//! etherparse, an implementation independent of the smoltcp code the pipeline parses with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::net::IpAddr;

use nvo_pipeline::{Action, Actions, Limits, Mac, NetworkSpec, Pipeline, PortId, Vni};
use nvo_wire::vxlan::{Gbp, VxlanPacket, VxlanRepr};

pub mod ila_bed;
pub mod policy_bed;
pub mod scapy;
mod vxlan_rx;
#[allow(unused_imports)] // not every test binary receives VXLAN
pub use vxlan_rx::ReceiveVxlan;

pub const VNI: Vni = Vni(100);
pub const P1: PortId = PortId(1);
pub const P2: PortId = PortId(2);
pub const P3: PortId = PortId(3);

/// A locally administered unicast MAC ending in `n`.
pub fn mac(n: u8) -> Mac {
    Mac([0x02, 0, 0, 0, 0, n])
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub fn r1() -> IpAddr {
    ip("192.0.2.11")
}

pub fn r2() -> IpAddr {
    ip("192.0.2.12")
}

/// An Ethernet + IPv4 + UDP frame of `payload` bytes of UDP data.
pub fn udp4(dst: Mac, src: Mac, ports: (u16, u16), payload: usize) -> Vec<u8> {
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(src.0, dst.0)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(ports.0, ports.1)
        .write(&mut v, &vec![0xab; payload])
        .unwrap();
    v
}

/// A small frame from `src` to `dst`.
pub fn frame(dst: Mac, src: Mac) -> Vec<u8> {
    udp4(dst, src, (40000, 53), 18)
}

/// A VXLAN payload (header + inner frame) for `vni`, optionally GBP with the D bit.
pub fn vxlan(vni: u32, gbp: Option<bool>, inner: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; 8];
    let repr = VxlanRepr {
        vni,
        gbp: gbp.map(|dont_learn| Gbp {
            dont_learn,
            policy_applied: false,
            group_policy_id: 7,
        }),
    };
    repr.emit(&mut VxlanPacket::new_unchecked(&mut v[..]))
        .unwrap();
    v.extend_from_slice(inner);
    v
}

/// A pipeline with network 100 (defaults: learning, head-end, MTU 1450), ports 1, 2 and 3 in it,
/// and remotes r1 and r2 in its flood list.
pub fn setup() -> Pipeline {
    let mut p = Pipeline::new(Limits::default());
    p.add_network(NetworkSpec::new(VNI)).unwrap();
    for port in [P1, P2, P3] {
        p.add_port(port, VNI).unwrap();
    }
    p.flood_add(VNI, r1()).unwrap();
    p.flood_add(VNI, r2()).unwrap();
    p
}

/// The actions with every entropy (`Encap`, `EncapNode`) set to zero, to compare forwarding
/// decisions.
pub fn plain(actions: &Actions) -> Vec<Action> {
    actions
        .iter()
        .map(|a| match *a {
            Action::Encap {
                remote,
                vni,
                profile,
                ..
            } => Action::Encap {
                remote,
                vni,
                entropy: 0,
                profile,
            },
            Action::EncapNode {
                node, vni, profile, ..
            } => Action::EncapNode {
                node,
                vni,
                entropy: 0,
                profile,
            },
            other => other,
        })
        .collect()
}

pub fn deliver(port: PortId) -> Action {
    Action::Deliver { port }
}

pub fn encap(remote: IpAddr, vni: Vni) -> Action {
    Action::Encap {
        remote,
        vni,
        entropy: 0,
        profile: nvo_pipeline::ProfileTag::VXLAN,
    }
}
