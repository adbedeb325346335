//! The symmetric inner-flow hash of `nvo_io::steer`, run by the kernel: a port's packet fanout
//! group (crafted frames sent over a veth between two private namespaces) and a UDP reuseport
//! group on loopback (crafted tunnel payloads), each checked against the Rust function, and a
//! flow against its reverse.
//!
//! ```text
//!   ns a: n PacketPorts on va, one fanout group ◄──veth── ns b: a PacketPort on vb sends
//!   loopback: n UdpUnderlays on one port, reuseport program ◄── a UdpSocket sends
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

use common::VethPair;
use nvo_io::netns::run_in;
use nvo_io::steer::{frame_index, ip_index, tunnel_index, TunnelShape};
use nvo_io::{FrameBatch, FramePort, PacketPort, UdpUnderlay};

/// One inner flow: (IP version, protocol, source, destination, ports).
#[derive(Clone, Copy, Debug)]
struct Flow {
    v6: bool,
    proto: u8,
    src: u8,
    dst: u8,
    ports: (u16, u16),
    /// IPv4 only: one word of options (IHL 6), or the More Fragments flag.
    options: bool,
    fragment: bool,
}

impl Flow {
    fn reverse(self) -> Flow {
        Flow {
            src: self.dst,
            dst: self.src,
            ports: (self.ports.1, self.ports.0),
            ..self
        }
    }

    /// The IP packet, `mark` in its last two bytes.
    fn ip(&self, mark: u16) -> Vec<u8> {
        let mut l4 = match self.proto {
            1 | 58 => vec![8, 0, 0, 0, 0, 1, 0, 1],
            _ => {
                let mut h = Vec::new();
                h.extend(self.ports.0.to_be_bytes());
                h.extend(self.ports.1.to_be_bytes());
                h.extend([0; 16]);
                h
            }
        };
        l4.extend([0x55; 20]);
        l4.extend(mark.to_be_bytes());
        if self.v6 {
            let mut p = vec![0x60, 0, 0, 0];
            p.extend((l4.len() as u16).to_be_bytes());
            p.extend([self.proto, 64]);
            for host in [self.src, self.dst] {
                p.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, host]);
            }
            p.extend(l4);
            p
        } else {
            let ihl = if self.options { 6 } else { 5 };
            let total = 4 * ihl + l4.len();
            let flags: u16 = if self.fragment { 0x2000 } else { 0x4000 };
            let mut p = vec![0x40 | ihl as u8, 0];
            p.extend((total as u16).to_be_bytes());
            p.extend([0, 0]);
            p.extend(flags.to_be_bytes());
            p.extend([64, self.proto, 0, 0]);
            p.extend([10, 0, 1, self.src, 10, 0, 2, self.dst]);
            if self.options {
                p.extend([1, 1, 1, 0]);
            }
            p.extend(l4);
            p
        }
    }

    fn ethertype(&self) -> u16 {
        if self.v6 {
            0x86dd
        } else {
            0x0800
        }
    }

    /// The Ethernet frame, with an 802.1Q tag when `tagged`.
    fn frame(&self, mark: u16, tagged: bool) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 0xaa, 0x02, 0, 0, 0, 0, 0xbb];
        if tagged {
            f.extend([0x81, 0, 0, 7]);
        }
        f.extend(self.ethertype().to_be_bytes());
        f.extend(self.ip(mark));
        f
    }
}

fn flows() -> Vec<Flow> {
    let base = Flow {
        v6: false,
        proto: 6,
        src: 1,
        dst: 2,
        ports: (40000, 5201),
        options: false,
        fragment: false,
    };
    let mut all = Vec::new();
    for v6 in [false, true] {
        for proto in [6, 17, 132, if v6 { 58 } else { 1 }] {
            for (src, dst, ports) in [(1, 2, (40000, 5201)), (3, 9, (53, 33333)), (7, 7, (1, 2))] {
                all.push(Flow {
                    v6,
                    proto,
                    src,
                    dst,
                    ports,
                    ..base
                });
            }
        }
    }
    all.push(Flow {
        options: true,
        ..base
    });
    all.push(Flow {
        fragment: true,
        proto: 17,
        ..base
    });
    // Many source ports: the index must take more than one value (a program returning a
    // constant would pass every other check).
    for sport in 0..12 {
        all.push(Flow {
            ports: (41000 + sport * 7, 5201),
            ..base
        });
    }
    all
}

#[test]
fn the_rust_hash_is_symmetric_and_spreads() {
    for n in 1..=5 {
        let mut seen = std::collections::HashSet::new();
        for flow in flows() {
            let (a, b) = (flow.ip(0), flow.reverse().ip(0));
            let index = ip_index(flow.ethertype(), &a, n);
            assert_eq!(index, ip_index(flow.ethertype(), &b, n), "{flow:?} n={n}");
            assert!(index < n);
            seen.insert(index);
        }
        assert_eq!(seen.len(), n as usize, "every index used, n={n}");
    }
    assert_eq!(ip_index(0x0806, &[0; 28], 2), 0, "non-IP: index 0");
    assert_eq!(ip_index(0x0800, &[0x45; 10], 2), 0, "truncated: index 0");
}

/// The index of the first of `n` receivers that has the packet sent (`got(i)` reads receiver
/// i and says whether it has it), polling for up to 3 s.
fn landed(mut got: impl FnMut(usize) -> bool, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Some(i) = (0..n).find(|&i| got(i)) {
            return i;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("nothing received");
}

/// The index of the port socket the frame ending in `tail` reached.
fn port_landed(ports: &[PacketPort], batch: &mut FrameBatch, tail: &[u8]) -> usize {
    landed(
        |i| {
            ports[i].recv_batch(batch).unwrap();
            let mut frames = batch.frames();
            let mut hit = false;
            while let Some(f) = frames.next_frame() {
                hit |= f.ends_with(tail);
            }
            hit
        },
        ports.len(),
    )
}

#[test]
fn the_fanout_program_picks_the_rust_index_for_a_flow_and_its_reverse() {
    let net = VethPair::new("sf");
    for (n, group) in [(2usize, 0x5a01u16), (3, 0x5a02)] {
        let ports: Vec<PacketPort> = (0..n)
            .map(|_| {
                let p = run_in(net.a.name(), || PacketPort::open("va"))
                    .unwrap()
                    .unwrap();
                p.join_fanout(group, n).unwrap();
                p
            })
            .collect();
        let sender = run_in(net.b.name(), || PacketPort::open("vb"))
            .unwrap()
            .unwrap();
        let mut batch = FrameBatch::default();
        let mut mark = 0u16;
        let mut seen = std::collections::HashSet::new();
        for flow in flows() {
            for (tagged, dir) in [(false, flow), (false, flow.reverse()), (true, flow)] {
                mark += 1;
                let frame = dir.frame(mark, tagged);
                sender.send(&frame).unwrap();
                let at = port_landed(&ports, &mut batch, &mark.to_be_bytes());
                let want = frame_index(&frame, n as u32);
                assert_eq!(at as u32, want, "{dir:?} tagged={tagged} n={n}");
                seen.insert(at);
            }
        }
        assert_eq!(seen.len(), n, "every socket got some flow, n={n}");
        // ARP goes to the first socket.
        let mut arp = vec![0xff; 6];
        arp.extend([0x02, 0, 0, 0, 0, 0xbb, 0x08, 0x06]);
        arp.extend([0u8; 26]);
        arp.extend([0xa5, 0x5a]);
        sender.send(&arp).unwrap();
        let at = port_landed(&ports, &mut batch, &[0xa5, 0x5a]);
        assert_eq!(at, 0, "ARP to socket 0");
    }
}

/// The tunnel payloads of `flow`'s frame for `shape`, several header variants each.
fn tunnel_payloads(shape: TunnelShape, flow: &Flow, mark: u16) -> Vec<Vec<u8>> {
    let frame = flow.frame(mark, false);
    let tagged = flow.frame(mark, true);
    let with = |header: &[u8], body: &[u8]| [header, body].concat();
    match shape {
        TunnelShape::Vxlan => vec![
            with(&[0x08, 0, 0, 0, 0, 0, 100, 0], &frame),
            with(&[0x88, 0, 0, 9, 0, 0, 100, 0], &tagged),
        ],
        TunnelShape::Gpe => {
            let next = if flow.v6 { 2 } else { 1 };
            vec![
                with(&[0x0c, 0, 0, 3, 0, 0, 100, 0], &frame),
                with(&[0x0c, 0, 0, next, 0, 0, 100, 0], &flow.ip(mark)),
            ]
        }
        TunnelShape::Geneve => {
            let [t0, t1] = flow.ethertype().to_be_bytes();
            vec![
                with(&[0, 0, 0x65, 0x58, 0, 0, 100, 0], &frame),
                with(
                    &[2, 0, 0x65, 0x58, 0, 0, 100, 0, 1, 2, 3, 4, 5, 6, 7, 8],
                    &tagged,
                ),
                with(&[1, 0, t0, t1, 0, 0, 100, 0, 9, 9, 9, 9], &flow.ip(mark)),
            ]
        }
    }
}

#[test]
fn the_reuseport_program_picks_the_rust_index_for_each_tunnel() {
    for shape in [TunnelShape::Vxlan, TunnelShape::Gpe, TunnelShape::Geneve] {
        for n in [2usize, 3] {
            let first = UdpUnderlay::bind_shared(Ipv4Addr::LOCALHOST.into(), 0, 0, true).unwrap();
            let port = first.local_addr().port();
            let mut group = vec![first];
            for _ in 1..n {
                group.push(
                    UdpUnderlay::bind_shared(Ipv4Addr::LOCALHOST.into(), port, 0, true).unwrap(),
                );
            }
            for u in &group {
                u.steer_by_inner_flow(shape, n).unwrap();
            }
            let mut batch = group[0].new_recv_batch(8);
            let mut seen = std::collections::HashSet::new();
            let mut mark = 0u16;
            for flow in flows() {
                for dir in [flow, flow.reverse()] {
                    mark += 1;
                    for payload in tunnel_payloads(shape, &dir, mark) {
                        // Several source ports: the outer tuple must not matter.
                        for sport_at in 0..2 {
                            let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
                            sender
                                .send_to(&payload, (Ipv4Addr::LOCALHOST, port))
                                .unwrap();
                            let at = landed(
                                |i| {
                                    group[i].recv_batch(&mut batch).unwrap();
                                    batch.iter().any(|(_, d)| d == &payload[..])
                                },
                                n,
                            );
                            let want = tunnel_index(shape, &payload, n as u32);
                            assert_eq!(
                                at as u32, want,
                                "{shape:?} {dir:?} n={n} sender {sport_at}"
                            );
                            let fwd = frame_index(&flow.frame(0, false), n as u32);
                            assert_eq!(want, fwd, "the port's index for the same flow");
                            seen.insert(at);
                        }
                    }
                }
            }
            assert_eq!(seen.len(), n, "{shape:?}: every socket got some flow");
            // A payload the program cannot parse still lands (on socket 0).
            let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            sender
                .send_to(&[0xee; 3], (Ipv4Addr::LOCALHOST, port))
                .unwrap();
            let at = landed(
                |i| {
                    group[i].recv_batch(&mut batch).unwrap();
                    batch.iter().any(|(_, d)| d == [0xee; 3])
                },
                n,
            );
            assert_eq!(at, 0);
        }
    }
}
