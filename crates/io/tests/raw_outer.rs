//! `set_outer` on RawUnderlay and UdpUnderlay: the TTL / hop limit, TOS / traffic class and DF
//! bit of the datagrams as they cross the wire, captured with a PacketPort on the far end.
//!
//! ```text
//!   ns nvo-<t>a-PID                              ns nvo-<t>b-PID
//!  ┌────────────────────────────┐              ┌────────────────────────────┐
//!  │ RawUnderlay (protocol 47)  │              │ PacketPort on vb: captures │
//!  │ UdpUnderlay :4789          │              │ every frame vb receives    │
//!  │ va 10.80.0.1  fd80::1      ├────veth──────┤ vb 10.80.0.2  fd80::2      │
//!  └────────────────────────────┘              └────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::time::Duration;

use common::{wait_for, VethPair};
use nvo_io::netns::run_in;
use nvo_io::{FrameBatch, FramePort, PacketPort, Poller, RawUnderlay, SendBatch, UdpUnderlay};

/// Outer fields of one captured IP datagram.
#[derive(Debug, PartialEq, Eq)]
struct Outer {
    protocol: u8,
    ttl: u8,
    tos: u8,
    /// IPv4: the DF bit; IPv6: always false (no such bit).
    df: bool,
}

/// Captures frames on `port` until one carries IP `protocol` with `marker` in its payload.
fn capture(port: &PacketPort, protocol: u8, marker: &[u8]) -> Outer {
    let mut batch = FrameBatch::default();
    let mut poller = Poller::with_capacity(1);
    poller.add(port.as_fd());
    let mut found = None;
    wait_for(Duration::from_secs(5), || {
        poller.wait(Some(Duration::from_millis(50))).unwrap();
        port.recv_batch(&mut batch).unwrap();
        let mut frames = batch.frames();
        while let Some(f) = frames.next_frame() {
            let ip = &f[14..];
            let outer = match [f[12], f[13]] {
                [0x08, 0x00] => Outer {
                    protocol: ip[9],
                    ttl: ip[8],
                    tos: ip[1],
                    df: ip[6] & 0x40 != 0,
                },
                [0x86, 0xdd] => Outer {
                    protocol: ip[6],
                    ttl: ip[7],
                    tos: (ip[0] << 4) | (ip[1] >> 4),
                    df: false,
                },
                _ => continue,
            };
            if outer.protocol == protocol && f.windows(marker.len()).any(|w| w == marker) {
                found = Some(outer);
            }
        }
        found.is_some()
    });
    found.unwrap_or_else(|| panic!("no protocol {protocol} datagram with {marker:?} captured"))
}

#[test]
fn outer_fields_are_on_the_wire() {
    let net = VethPair::new("ro");
    net.address("10.80.0", "fd80");
    let port = run_in(net.b.name(), || PacketPort::open_with("vb", false))
        .unwrap()
        .unwrap();
    for (local, remote) in [("10.80.0.1", "10.80.0.2"), ("fd80::1", "fd80::2")] {
        let local: IpAddr = local.parse().unwrap();
        let remote: IpAddr = remote.parse().unwrap();
        let v4 = local.is_ipv4();
        let raw = run_in(net.a.name(), || RawUnderlay::bind(local, 47))
            .unwrap()
            .unwrap();
        let udp = run_in(net.a.name(), || UdpUnderlay::bind(local, 4789, 4))
            .unwrap()
            .unwrap();
        let mut batch = SendBatch::default();
        let cases = [
            (7, 0xb8, true, b"raw-first".as_slice()),
            (200, 0x22, false, b"raw-second".as_slice()),
        ];
        for (ttl, tos, df, marker) in cases {
            raw.set_outer(Some(ttl), Some(tos), Some(df)).unwrap();
            batch.clear();
            assert!(batch.push(SocketAddr::new(remote, 0), 0, marker, &[0; 32]));
            assert_eq!(raw.send_batch(&batch).unwrap(), 1);
            let want = Outer {
                protocol: 47,
                ttl,
                tos,
                df: df && v4,
            };
            assert_eq!(capture(&port, 47, marker), want, "raw to {remote}");
        }
        // `None` leaves a field alone.
        raw.set_outer(None, Some(0x04), None).unwrap();
        batch.clear();
        assert!(batch.push(SocketAddr::new(remote, 0), 0, b"raw-third", &[0; 32]));
        raw.send_batch(&batch).unwrap();
        let got = capture(&port, 47, b"raw-third");
        assert_eq!((got.ttl, got.tos, got.df), (200, 0x04, false));

        // Every entropy socket of the UDP underlay takes the fields.
        for (ttl, tos, df, marker) in [
            (5, 0x10, true, b"udp-first".as_slice()),
            (64, 0, false, b"udp-second".as_slice()),
        ] {
            udp.set_outer(Some(ttl), Some(tos), Some(df)).unwrap();
            for entropy in 0..4u16 {
                batch.clear();
                let mut m = marker.to_vec();
                m.push(b'0' + entropy as u8);
                assert!(batch.push(SocketAddr::new(remote, 4789), entropy, &m, &[0; 32]));
                assert_eq!(udp.send_batch(&batch).unwrap(), 1);
                let want = Outer {
                    protocol: 17,
                    ttl,
                    tos,
                    df: df && v4,
                };
                assert_eq!(
                    capture(&port, 17, &m),
                    want,
                    "udp entropy {entropy} to {remote}"
                );
            }
        }
    }
}
