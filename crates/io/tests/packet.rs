//! PacketPort on the ends of a veth: frames both ways, no loop-back of our own frames, and
//! frames from a kernel with checksum offload and TSO arrive complete and MTU-sized.
//!
//! ```text
//!   ns nvo-<t>a-PID                          ns nvo-<t>b-PID
//!  ┌───────────────────────────┐           ┌───────────────────────────┐
//!  │ PacketPort on va          │           │ PacketPort on vb          │
//!  │ (kernel: 10.78.0.1,       ├───veth────┤ (kernel: 10.78.0.2, sends │
//!  │  TCP listener :5000)      │           │  UDP and a TCP stream)    │
//!  └───────────────────────────┘           └───────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

use common::{wait_for, VethPair};
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use nvo_io::netns::run_in;
use nvo_io::{FrameBatch, FramePort, PacketPort, Poller};

/// Ethertype for local experiments (IEEE 802 local experimental 1).
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

fn test_frame(src: u8, seq: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xff, 0x02, 0, 0, 0, 0, src];
    f.extend_from_slice(&TEST_ETHERTYPE);
    f.extend(std::iter::repeat_n(seq, 60 + usize::from(seq)));
    f
}

/// Test frames received within `timeout`, as (source MAC last byte, sequence).
fn receive_test_frames(
    port: &PacketPort,
    batch: &mut FrameBatch,
    want: usize,
    timeout: Duration,
) -> Vec<(u8, u8)> {
    let mut poller = Poller::with_capacity(1);
    poller.add(port.as_fd());
    let mut got = Vec::new();
    wait_for(timeout, || {
        poller.wait(Some(Duration::from_millis(20))).unwrap();
        port.recv_batch(batch).unwrap();
        let mut frames = batch.frames();
        while let Some(f) = frames.next_frame() {
            if f[12..14] == TEST_ETHERTYPE {
                assert_eq!(f, &test_frame(f[11], f[14])[..], "frame intact");
                got.push((f[11], f[14]));
            }
        }
        got.len() >= want
    });
    got
}

#[test]
fn frames_cross_the_veth_both_ways_and_are_not_looped_back() {
    let net = VethPair::new("pf");
    let a = run_in(net.a.name(), || PacketPort::open("va"))
        .unwrap()
        .unwrap();
    let b = run_in(net.b.name(), || PacketPort::open("vb"))
        .unwrap()
        .unwrap();
    assert!(a.vnet_hdr() && b.vnet_hdr());
    assert_eq!((a.name(), a.mtu().unwrap()), ("va", 1500));
    assert!(a.ifindex() > 0);
    let mut batch = FrameBatch::default();

    let from_a: Vec<Vec<u8>> = (0..10).map(|i| test_frame(0x0a, i)).collect();
    assert_eq!(
        a.send_batch(&mut from_a.iter().map(Vec::as_slice)).unwrap(),
        10
    );
    let got = receive_test_frames(&b, &mut batch, 10, Duration::from_secs(5));
    assert_eq!(got, (0..10).map(|i| (0x0a, i)).collect::<Vec<_>>());

    for i in 0..10 {
        b.send(&test_frame(0x0b, i)).unwrap();
    }
    // Waiting the whole time: a looped-back frame of a's own would show up too.
    let got = receive_test_frames(&a, &mut batch, usize::MAX, Duration::from_millis(500));
    assert_eq!(
        got,
        (0..10).map(|i| (0x0b, i)).collect::<Vec<_>>(),
        "b's frames, none of a's own"
    );

    let too_big = vec![0u8; 3000];
    assert!(a.send(&too_big).is_err(), "a frame over the MTU is refused");
}

#[test]
fn offloaded_checksums_and_tso_frames_arrive_complete() {
    let net = VethPair::new("po");
    net.address("10.78.0", "fd78");
    let port = run_in(net.a.name(), || PacketPort::open("va"))
        .unwrap()
        .unwrap();
    let listener = run_in(net.a.name(), || TcpListener::bind("10.78.0.1:5000"))
        .unwrap()
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut all = Vec::new();
        stream.read_to_end(&mut all).unwrap();
        all.len()
    });
    let stream_len = 4 << 20;
    let client = {
        let ns = net.b.name().to_owned();
        std::thread::spawn(move || {
            run_in(&ns, || {
                let udp = UdpSocket::bind("10.78.0.2:0").unwrap();
                udp.send_to(&[7; 300], "10.78.0.1:9").unwrap();
                let mut tcp = TcpStream::connect("10.78.0.1:5000").unwrap();
                tcp.write_all(&vec![0x5a; stream_len]).unwrap();
            })
            .unwrap();
        })
    };

    let mut batch = FrameBatch::default();
    let mut poller = Poller::with_capacity(1);
    poller.add(port.as_fd());
    let (mut udp_seen, mut tcp_payload, mut segmented, mut completed) = (0, 0, 0, 0);
    wait_for(Duration::from_secs(10), || {
        poller.wait(Some(Duration::from_millis(20))).unwrap();
        port.recv_batch(&mut batch).unwrap();
        let mut frames = batch.frames();
        while let Some(f) = frames.next_frame() {
            assert!(
                f.len() <= 1514,
                "a frame of {} bytes is larger than the MTU",
                f.len()
            );
            let p = SlicedPacket::from_ethernet(f).unwrap();
            let Some(NetSlice::Ipv4(ip)) = p.net else {
                continue;
            };
            let h = ip.header().to_header();
            match p.transport {
                Some(TransportSlice::Udp(udp)) => {
                    assert_eq!(
                        udp.checksum(),
                        udp.to_header()
                            .calc_checksum_ipv4(&h, udp.payload())
                            .unwrap(),
                        "udp checksum"
                    );
                    udp_seen += 1;
                }
                Some(TransportSlice::Tcp(tcp)) => {
                    assert_eq!(
                        tcp.checksum(),
                        tcp.to_header()
                            .calc_checksum_ipv4(&h, tcp.payload())
                            .unwrap(),
                        "tcp checksum"
                    );
                    tcp_payload += tcp.payload().len();
                }
                _ => {}
            }
        }
        let stats = batch.stats();
        assert_eq!(
            (stats.vnet_malformed, stats.gso_unsupported, stats.truncated),
            (0, 0, 0)
        );
        segmented += stats.gso_segmented;
        completed += stats.checksum_completed;
        client.is_finished() && server.is_finished()
    });
    client.join().unwrap();
    assert_eq!(server.join().unwrap(), stream_len);
    println!("udp {udp_seen}, tcp payload {tcp_payload}, gso frames segmented {segmented}, checksums completed {completed}");
    assert_eq!(udp_seen, 1);
    assert!(tcp_payload > 0);
    assert!(
        completed > 0,
        "the veth's checksum offload left partial checksums to complete"
    );
    assert!(
        segmented > 0,
        "the veth's TSO handed over GSO frames to segment"
    );
}
