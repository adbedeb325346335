//! A TSO frame sent as UDP GSO super-datagrams is split by the kernel exactly as nvo's software
//! segmentation cuts it: every datagram a plain socket (no GRO) reads back is the tunnel header
//! followed by segment k of `FrameMeta::finish`, byte for byte, in order — for tunnel headers of
//! the lengths nvo's UDP profiles use (VXLAN, VXLAN-GBP and -GPE 8, Geneve 8 + options, the
//! overlay header 20, user-defined ones).
//!
//! ```text
//!   ns nvo-gsa-PID                               ns nvo-gsb-PID
//!  ┌──────────────────────────────┐            ┌──────────────────────────────┐
//!  │ UdpUnderlay (GSO)  10.78.0.1 ├───veth─────┤ UdpSocket :4789   10.78.0.2  │
//!  │   TSO frame → segments →     │            │   (no UDP_GRO: one datagram  │
//!  │   header + segment each →    │            │   per read)                  │
//!  │   one sendmmsg               │            │                              │
//!  └──────────────────────────────┘            └──────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use common::VethPair;
use etherparse::PacketBuilder;
use nvo_io::netns::run_in;
use nvo_io::{FrameMeta, Gso, GsoKind, SendBatch, UdpUnderlay, MAX_FRAME};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// A TSO frame as a container's TCP hands it over, with its metadata.
fn tso_frame(v6: bool, payload: usize, mss: u16, seed: u8) -> (Vec<u8>, FrameMeta) {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let b = if v6 {
        b.ipv6([0xfd; 16], [0xfe; 16], 64)
    } else {
        b.ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
    };
    let data: Vec<u8> = (0..payload)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    let mut frame = Vec::new();
    b.tcp(40000, 5201, 1_000_000, 500)
        .ack(5)
        .psh()
        .write(&mut frame, &data)
        .unwrap();
    let l4 = if v6 { 54 } else { 34 };
    let meta = FrameMeta {
        gso: Some(Gso {
            kind: if v6 { GsoKind::Tcp6 } else { GsoKind::Tcp4 },
            size: mss,
            ecn: false,
        }),
        csum: Some((l4, 16)),
    };
    (frame, meta)
}

#[test]
fn gso_sends_split_exactly_as_software_segmentation() {
    let net = VethPair::new("gs");
    net.address("10.78.0", "fd78");
    let sender = run_in(net.a.name(), || {
        UdpUnderlay::bind("10.78.0.1".parse().unwrap(), 4789, 4)
    })
    .unwrap()
    .unwrap();
    let plain = run_in(net.b.name(), || UdpSocket::bind("10.78.0.2:4789"))
        .unwrap()
        .unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(sender.offloads().gso, "the kernel offers UDP GSO");
    let dst: SocketAddr = "10.78.0.2:4789".parse().unwrap();

    let cases = (
        any::<bool>(),
        // Tunnel header lengths of nvo's UDP profiles.
        prop::sample::select(vec![8usize, 16, 20, 24, 32]),
        // Segment sizes whose datagrams fit the veth's 1500 bytes (the tenant MTU sees to it).
        300u16..1367,
        1usize..40_000,
        any::<u8>(),
    );
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&cases, |(v6, header_len, mss, payload, seed)| {
            // At most 64 segments: one batch.
            let payload = payload.min(usize::from(mss) * 60);
            let (mut scratch, mut buf) = (vec![0; MAX_FRAME], vec![0; 65536]);
            let mut batch = SendBatch::default();
            let (frame, meta) = tso_frame(v6, payload, mss, seed);
            let mut segments = Vec::new();
            meta.finish(&frame, &mut scratch, &mut |s| {
                segments.push(s.to_vec());
                Ok(())
            })
            .unwrap();
            let header: Vec<u8> = (0..header_len).map(|i| seed ^ i as u8).collect();
            for s in &segments {
                prop_assert!(batch.push(dst, 7, &header, s));
            }
            let before = sender.stats().gso_sends;
            prop_assert_eq!(sender.send_batch(&batch).unwrap(), segments.len());
            let messages = sender.stats().gso_sends - before;
            if segments.len() > 1 {
                // One sendmmsg of super-datagrams, each at most 64 KiB.
                let total = segments.len() * (header_len + segments[0].len());
                prop_assert!(messages >= 1 && messages as usize <= total / 60_000 + 1);
            }
            for (k, s) in segments.iter().enumerate() {
                let (n, src) = plain.recv_from(&mut buf).unwrap();
                prop_assert_eq!(src.port(), sender.source_port(7));
                prop_assert_eq!(&buf[..header_len], &header[..], "segment {}: header", k);
                prop_assert_eq!(&buf[header_len..n], &s[..], "segment {}: bytes", k);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(sender.stats().gso_fallbacks, 0);
}
