//! The test bed the benchmark binaries share: one network (VNI 100) with ports 1 and 2 and two
//! remotes in its flood list, filled with `n` learned MACs, the frames sent through it, and the
//! criterion settings of the runs.
//!
//! Learned MACs are numbered: MAC `i` is `02:00:` followed by `i` in four big-endian bytes, so a
//! benchmark can name any of them without a table of its own. MACs that start with `06:` are
//! never learned: they are the misses.
#![allow(dead_code)] // each benchmark binary uses its own part of the bed

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use criterion::Criterion;

use nvo_pipeline::{Actions, FdbDest, Limits, Mac, NetworkSpec, Pipeline, PortId, Vni};
use nvo_wire::vxlan::{VxlanPacket, VxlanRepr, HEADER_LEN};

#[path = "../../tests/common/vxlan_rx.rs"]
mod vxlan_rx;
pub use vxlan_rx::ReceiveVxlan;

pub const VNI: Vni = Vni(100);
/// The ingress port of the forwarding benchmarks.
pub const P1: PortId = PortId(1);
/// The port every numbered MAC is learned behind.
pub const P2: PortId = PortId(2);
pub const R1: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 11));
pub const R2: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 12));
/// The source of the frames sent from port 1 (learned behind it on the first frame).
pub const LOCAL: Mac = Mac([0x02, 0xaa, 0, 0, 0, 1]);
/// The MAC behind R1 that the encapsulating benchmarks send to (see [`encap_bed`]).
pub const REMOTE: Mac = Mac([0x02, 0xbb, 0, 0, 0, 1]);

/// The learned-entry limit of the bed: room for the largest size measured, 1M, plus the few
/// MACs the benchmarks add.
pub const MAX_LEARNED: u32 = 1 << 20;

/// Numbered MAC `i`, one of those [`learn_from_p2`] puts in the FDB.
pub fn learned_mac(i: u32) -> Mac {
    let [a, b, c, d] = i.to_be_bytes();
    Mac([0x02, 0x00, a, b, c, d])
}

/// A MAC no benchmark ever learns.
pub fn unknown_mac(i: u32) -> Mac {
    let [a, b, c, d] = i.to_be_bytes();
    Mac([0x06, 0x00, a, b, c, d])
}

/// An Ethernet + IPv4 + UDP frame of exactly `len` bytes (no FCS), `len >= 42`.
pub fn udp4(dst: Mac, src: Mac, len: usize) -> Vec<u8> {
    let mut frame = Vec::with_capacity(len);
    etherparse::PacketBuilder::ethernet2(src.0, dst.0)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(40000, 5201)
        .write(&mut frame, &vec![0xab; len - 42])
        .expect("a udp frame fits in a vec");
    frame
}

/// A VXLAN payload (the 8-byte header for `vni`, then `inner`), as it comes off the underlay.
pub fn vxlan(vni: Vni, inner: &[u8]) -> Vec<u8> {
    let mut payload = vec![0u8; HEADER_LEN];
    let repr = VxlanRepr {
        vni: vni.0,
        gbp: None,
    };
    repr.emit(&mut VxlanPacket::new_unchecked(&mut payload[..]))
        .expect("the header fits its buffer");
    payload.extend_from_slice(inner);
    payload
}

/// The limits of the bed: the defaults, with room for [`MAX_LEARNED`] learned entries.
pub fn limits() -> Limits {
    Limits {
        max_learned_fdb: MAX_LEARNED,
        ..Limits::default()
    }
}

/// VNI 100 with ports 1 and 2, remotes R1 and R2 in its flood list, learning up to
/// [`MAX_LEARNED`] MACs; the FDB is empty.
pub fn bed() -> Pipeline {
    let mut p = Pipeline::new(limits());
    p.add_network(NetworkSpec {
        max_learned: MAX_LEARNED,
        ..NetworkSpec::new(VNI)
    })
    .expect("the bed's network spec is valid");
    for port in [P1, P2] {
        p.add_port(port, VNI)
            .expect("two ports fit the default limits");
    }
    for remote in [R1, R2] {
        p.flood_add(VNI, remote)
            .expect("two remotes fit the flood list");
    }
    p
}

/// The bed with [`REMOTE`] behind R1 and [`LOCAL`] behind port 1, both static: a frame from
/// port 1 to `REMOTE` is one `Encap`.
pub fn encap_bed() -> Pipeline {
    let mut p = bed();
    p.fdb_add_static(VNI, REMOTE, FdbDest::Remote(R1))
        .expect("a static entry fits");
    p.fdb_add_static(VNI, LOCAL, FdbDest::Port(P1))
        .expect("a static entry fits");
    p
}

/// Short runs (1 s warm-up, 2 s measurement, 50 samples); criterion's command-line options
/// lengthen them.
pub fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
}

/// Learns numbered MACs `0..n` behind port 2 the way the data path does: one broadcast frame
/// from each of them arriving on port 2.
pub fn learn_from_p2(p: &mut Pipeline, n: u32, now: Instant) {
    let mut frame = udp4(Mac::BROADCAST, learned_mac(0), 64);
    let mut actions = Actions::new();
    for i in 0..n {
        frame[6..12].copy_from_slice(&learned_mac(i).0);
        p.from_port(P2, &frame, now, &mut actions);
    }
}

/// A cheap, deterministic stream of indices spread uniformly over `0..n` (xorshift32, then a
/// multiply-shift into the range: no division on the measured path).
#[derive(Debug, Clone)]
pub struct Spread {
    state: u32,
    n: u32,
}

impl Spread {
    pub fn new(n: u32) -> Spread {
        Spread {
            state: 0x9e37_79b9,
            n,
        }
    }

    pub fn next_index(&mut self) -> u32 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.state = x;
        ((u64::from(x) * u64::from(self.n)) >> 32) as u32
    }
}
