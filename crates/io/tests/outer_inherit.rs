//! Per-datagram outer values ([`SendBatch::push_outer`]): every datagram of one batch leaves
//! with its own TOS / traffic class and TTL / hop limit, over IPv4 and IPv6, from a
//! UdpUnderlay (GSO on and off) and a RawUnderlay; `None` keeps the socket's `set_outer`.
//! Frames are captured whole (GSO frames uncut) with a PacketPort on the far end, so the test
//! also sees which datagrams UDP GSO coalesced: only neighbours with equal values.
//!
//! ```text
//!   ns nvo-oia-PID                               ns nvo-oib-PID
//!  ┌────────────────────────────┐              ┌─────────────────────────────┐
//!  │ UdpUnderlay :4789, 1 port  │              │ PacketPort on vb (vnet_hdr) │
//!  │ RawUnderlay (protocol 47)  │              │ captures every frame vb     │
//!  │ va 10.81.0.1  fd81::1      ├────veth──────┤ vb 10.81.0.2  fd81::2       │
//!  └────────────────────────────┘              └─────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::time::Duration;

use common::{wait_for, VethPair};
use nvo_io::netns::run_in;
use nvo_io::{
    FrameBatch, FramePort, OuterValues, PacketPort, Poller, RawUnderlay, SendBatch, UdpUnderlay,
};

/// Marks the test's datagrams: magic, round, index.
const MAGIC: [u8; 2] = [0x4f, 0x56];
/// Every datagram has the same size, so UDP GSO would coalesce all of them if let.
const PAYLOAD: usize = 300;
/// What `set_outer` gives the sockets: the value of a `None` field.
const SOCKET_TTL: u8 = 100;
const SOCKET_TOS: u8 = 0x20;

fn values(tos: Option<u8>, ttl: Option<u8>) -> OuterValues {
    OuterValues { tos, ttl }
}

/// The batch every case sends, in order: DSCP EF with ECT(0), then CE with another DSCP, then
/// nothing (the socket's values), TTL 0 (counts as nothing), one field at a time.
fn sequence() -> Vec<OuterValues> {
    let ef = values(Some(0xba), Some(9));
    let ce = values(Some(0x03), Some(9));
    let none = values(None, None);
    vec![
        ef,
        ef,
        ce,
        ce,
        ce,
        none,
        none,
        values(None, Some(0)),
        values(Some(0x01), None),
        values(None, Some(33)),
    ]
}

/// Datagrams of `sequence()` that UDP GSO sends as one message (equal values; TTL 0 = none).
const GSO_GROUPS: [&[u8]; 5] = [&[0, 1], &[2, 3, 4], &[5, 6, 7], &[8], &[9]];
/// Every datagram its own message: GSO off, or a raw socket.
const SINGLES: [&[u8]; 10] = [&[0], &[1], &[2], &[3], &[4], &[5], &[6], &[7], &[8], &[9]];

/// One captured datagram: its outer fields and the number of the frame it came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    tos: u8,
    ttl: u8,
    frame: usize,
}

/// The outer (tos, ttl, protocol) and the IP payload of an Ethernet frame, if it is IP.
fn parse_ip(frame: &[u8]) -> Option<(u8, u8, u8, &[u8])> {
    let ip = frame.get(14..)?;
    match [frame[12], frame[13]] {
        [0x08, 0x00] => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            Some((ip[1], ip[8], ip[9], &ip[ihl..]))
        }
        [0x86, 0xdd] => Some(((ip[0] << 4) | (ip[1] >> 4), ip[7], ip[6], &ip[40..])),
        _ => None,
    }
}

/// Captures on `port` until datagrams 0..n of `round` (IP `protocol`) have all been seen or
/// 5 s pass; a GSO frame is split by its segment size here, so its datagrams share a frame.
fn capture(port: &PacketPort, protocol: u8, round: u8, n: usize) -> Vec<Option<Seen>> {
    let mut batch = FrameBatch::default();
    let mut poller = Poller::with_capacity(1);
    poller.add(port.as_fd());
    let mut seen = vec![None; n];
    let mut frame_no = 0;
    wait_for(Duration::from_secs(5), || {
        poller.wait(Some(Duration::from_millis(50))).unwrap();
        port.recv_batch(&mut batch).unwrap();
        let mut frames = batch.frames();
        while let Some((frame, meta)) = frames.next_frame_meta() {
            frame_no += 1;
            let Some((tos, ttl, proto, l4)) = parse_ip(frame) else {
                continue;
            };
            if proto != protocol {
                continue;
            }
            let payload = if protocol == 17 { &l4[8..] } else { l4 };
            let size = meta.gso.map_or(payload.len(), |g| usize::from(g.size));
            for d in payload.chunks(size.max(1)) {
                if d.len() >= 4 && d[..2] == MAGIC && d[2] == round {
                    if let Some(slot) = seen.get_mut(usize::from(d[3])) {
                        assert!(slot.is_none(), "datagram {} of round {round} twice", d[3]);
                        *slot = Some(Seen {
                            tos,
                            ttl,
                            frame: frame_no,
                        });
                    }
                }
            }
        }
        seen.iter().all(Option::is_some)
    });
    seen
}

/// Checks every datagram's outer fields, and that the datagrams sharing a frame are `groups`.
fn check(seen: &[Option<Seen>], groups: &[&[u8]], what: &str) {
    for (i, (s, v)) in seen.iter().zip(sequence()).enumerate() {
        let s = s.unwrap_or_else(|| panic!("{what}: datagram {i} not captured"));
        let ttl = v.ttl.filter(|&t| t > 0).unwrap_or(SOCKET_TTL);
        let want = (v.tos.unwrap_or(SOCKET_TOS), ttl);
        assert_eq!((s.tos, s.ttl), want, "{what}: datagram {i} sent with {v:?}");
    }
    for group in groups {
        let frame = seen[usize::from(group[0])].unwrap().frame;
        for (i, s) in seen.iter().enumerate() {
            let together = s.unwrap().frame == frame;
            assert_eq!(
                together,
                group.contains(&(i as u8)),
                "{what}: datagram {i} and group {group:?} in one frame"
            );
        }
    }
}

/// Pushes `sequence()` for `round` to `dst`.
fn fill(batch: &mut SendBatch, dst: SocketAddr, round: u8) {
    batch.clear();
    for (i, v) in sequence().into_iter().enumerate() {
        let header = [MAGIC[0], MAGIC[1], round, i as u8];
        assert!(batch.push_outer(dst, 0, v, &header, &[0; PAYLOAD - 4]));
    }
}

#[test]
fn each_datagram_leaves_with_its_own_outer_values() {
    let net = VethPair::new("oi");
    net.address("10.81.0", "fd81");
    let port = run_in(net.b.name(), || PacketPort::open("vb"))
        .unwrap()
        .unwrap();
    let mut batch = SendBatch::default();
    let mut round = 0;
    for (local, remote) in [("10.81.0.1", "10.81.0.2"), ("fd81::1", "fd81::2")] {
        let local: IpAddr = local.parse().unwrap();
        let remote: IpAddr = remote.parse().unwrap();
        let udp = run_in(net.a.name(), || UdpUnderlay::bind(local, 4789, 1))
            .unwrap()
            .unwrap();
        udp.set_outer(Some(SOCKET_TTL), Some(SOCKET_TOS), None)
            .unwrap();
        let gso = udp.offloads().gso;
        for gso_on in [true, false] {
            if !gso_on {
                udp.disable_gso();
            }
            round += 1;
            fill(&mut batch, SocketAddr::new(remote, 4789), round);
            assert_eq!(udp.send_batch(&batch).unwrap(), batch.len());
            let what = format!("udp to {remote}, gso {}", gso_on && gso);
            let groups: &[&[u8]] = if gso_on && gso { &GSO_GROUPS } else { &SINGLES };
            check(&capture(&port, 17, round, batch.len()), groups, &what);
            assert_eq!(udp.stats().gso_fallbacks, 0, "{what}");
        }

        let raw = run_in(net.a.name(), || RawUnderlay::bind(local, 47))
            .unwrap()
            .unwrap();
        raw.set_outer(Some(SOCKET_TTL), Some(SOCKET_TOS), None)
            .unwrap();
        round += 1;
        fill(&mut batch, SocketAddr::new(remote, 0), round);
        assert_eq!(raw.send_batch(&batch).unwrap(), batch.len());
        let what = format!("raw to {remote}");
        check(&capture(&port, 47, round, batch.len()), &SINGLES, &what);
    }
}
