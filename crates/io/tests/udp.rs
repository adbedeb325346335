//! UdpUnderlay between two namespaces: batches, entropy source ports, GRO/GSO.
//!
//! ```text
//!   ns nvo-<t>a-PID                              ns nvo-<t>b-PID
//!  ┌────────────────────────────┐              ┌────────────────────────────┐
//!  │ sender UdpUnderlay         │              │ receiver UdpUnderlay :4789 │
//!  │   16 send sockets 49152..  │              │ (+ a plain UdpSocket :4790 │
//!  │ va 10.77.0.1  fd77::1      ├────veth──────┤ vb 10.77.0.2  fd77::2      │
//!  └────────────────────────────┘              └────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

use common::{wait_for, VethPair};
use nvo_io::netns::run_in;
use nvo_io::{Poller, SendBatch, UdpUnderlay};

/// Receives until `want` datagrams arrived or 5 s passed; also returns the buffer count.
fn receive(underlay: &UdpUnderlay, want: usize) -> (Vec<(SocketAddr, Vec<u8>)>, usize) {
    let mut batch = underlay.new_recv_batch(64);
    let mut poller = Poller::with_capacity(1);
    poller.add(underlay.as_fd());
    let (mut got, mut buffers) = (Vec::new(), 0);
    wait_for(Duration::from_secs(5), || {
        poller.wait(Some(Duration::from_millis(100))).unwrap();
        underlay.recv_batch(&mut batch).unwrap();
        buffers += batch.len();
        got.extend(batch.iter().map(|(src, d)| (src, d.to_vec())));
        got.len() >= want
    });
    (got, buffers)
}

fn datagram(i: usize) -> (Vec<u8>, Vec<u8>) {
    let header = (i as u64).to_be_bytes().to_vec();
    let payload = vec![i as u8; 100 + i];
    (header, payload)
}

fn hundred_datagrams(tag: &str, local: &str, remote: &str) {
    let net = VethPair::new(tag);
    net.address("10.77.0", "fd77");
    let local: IpAddr = local.parse().unwrap();
    let remote: IpAddr = remote.parse().unwrap();
    let sender = run_in(net.a.name(), || UdpUnderlay::bind(local, 4789, 16))
        .unwrap()
        .unwrap();
    let receiver = run_in(net.b.name(), || UdpUnderlay::bind(remote, 4789, 16))
        .unwrap()
        .unwrap();
    println!(
        "offloads: sender {:?}, receiver {:?}",
        sender.offloads(),
        receiver.offloads()
    );
    assert_eq!(sender.source_ports().len(), 16);

    let dst = SocketAddr::new(remote, 4789);
    let mut batch = SendBatch::default();
    for i in 0..100 {
        let (header, payload) = datagram(i);
        assert!(batch.push(dst, (i * 7) as u16, &header, &payload));
    }
    assert_eq!(sender.send_batch(&batch).unwrap(), 100);

    let (got, _) = receive(&receiver, 100);
    assert_eq!(got.len(), 100, "every datagram arrives");
    let mut seen = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for (src, data) in &got {
        assert_eq!(src.ip(), local);
        let i = u64::from_be_bytes(data[..8].try_into().unwrap()) as usize;
        let (header, payload) = datagram(i);
        assert_eq!(&data[..8], &header[..]);
        assert_eq!(&data[8..], &payload[..], "datagram {i} intact");
        assert_eq!(
            src.port(),
            sender.source_port((i * 7) as u16),
            "entropy picks the source port"
        );
        seen.insert(i);
        ports.insert(src.port());
    }
    assert_eq!(seen.len(), 100, "no duplicates");
    assert_eq!(
        ports.len(),
        16,
        "the entropy spreads over every source port: {ports:?}"
    );
    assert_eq!(sender.stats(), Default::default());
}

#[test]
fn hundred_datagrams_ipv4() {
    hundred_datagrams("u4", "10.77.0.1", "10.77.0.2");
}

#[test]
fn hundred_datagrams_ipv6() {
    hundred_datagrams("u6", "fd77::1", "fd77::2");
}

#[test]
fn unspecified_local_receives_on_every_address_and_zero_entropy_ports_send_from_the_receive_socket()
{
    let net = VethPair::new("uz");
    net.address("10.77.0", "fd77");
    let sender = run_in(net.a.name(), || {
        UdpUnderlay::bind("0.0.0.0".parse().unwrap(), 4789, 0)
    })
    .unwrap()
    .unwrap();
    let receiver = run_in(net.b.name(), || {
        UdpUnderlay::bind("0.0.0.0".parse().unwrap(), 4789, 2)
    })
    .unwrap()
    .unwrap();
    assert_eq!(sender.source_ports(), &[4789]);
    let mut batch = SendBatch::default();
    assert!(batch.push(
        "10.77.0.2:4789".parse().unwrap(),
        5,
        b"hdr",
        b"to the address"
    ));
    assert!(batch.push(
        "127.0.0.1:4789".parse().unwrap(),
        6,
        b"hdr",
        b"to nobody here"
    ));
    assert_eq!(sender.send_batch(&batch).unwrap(), 2);
    let (got, _) = receive(&receiver, 1);
    assert_eq!(
        got,
        vec![(
            "10.77.0.1:4789".parse().unwrap(),
            b"hdrto the address".to_vec()
        )]
    );
}

/// Addresses `net` and binds a GSO-capable sender on its first end (10.77.0.1:4789) and a
/// receiver on its second (10.77.0.2:4789).
fn gso_sender_and_receiver(net: &VethPair) -> (UdpUnderlay, UdpUnderlay) {
    net.address("10.77.0", "fd77");
    let sender = run_in(net.a.name(), || {
        UdpUnderlay::bind("10.77.0.1".parse().unwrap(), 4789, 4)
    })
    .unwrap()
    .unwrap();
    let receiver = run_in(net.b.name(), || {
        UdpUnderlay::bind("10.77.0.2".parse().unwrap(), 4789, 0)
    })
    .unwrap()
    .unwrap();
    (sender, receiver)
}

/// 20 equal datagrams and a short one to one destination from one socket: with GSO they leave
/// as one message; a GRO receiver gets them coalesced and splits them again, a plain socket
/// gets them segmented by the kernel. Both see the original boundaries.
#[test]
fn gso_coalesced_sends_arrive_as_separate_datagrams() {
    let net = VethPair::new("ug");
    let (sender, receiver) = gso_sender_and_receiver(&net);
    let plain = run_in(net.b.name(), || UdpSocket::bind("10.77.0.2:4790"))
        .unwrap()
        .unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    println!(
        "offloads: sender {:?}, receiver {:?}",
        sender.offloads(),
        receiver.offloads()
    );

    let sizes: Vec<usize> = (0..20).map(|_| 1000).chain([300]).collect();
    for port in [4789, 4790] {
        let dst: SocketAddr = format!("10.77.0.2:{port}").parse().unwrap();
        let mut batch = SendBatch::default();
        for (i, &size) in sizes.iter().enumerate() {
            assert!(batch.push(dst, 3, &[i as u8; 8], &vec![i as u8; size - 8]));
        }
        assert_eq!(sender.send_batch(&batch).unwrap(), sizes.len());
    }
    assert_eq!(sender.stats().gso_fallbacks, 0);

    let (got, buffers) = receive(&receiver, sizes.len());
    let lens: Vec<usize> = got.iter().map(|(_, d)| d.len()).collect();
    assert_eq!(lens, sizes, "boundaries kept through GRO");
    for (i, (_, d)) in got.iter().enumerate() {
        assert!(d.iter().all(|&b| b == i as u8), "datagram {i} intact");
    }
    if sender.offloads().gso && receiver.offloads().gro {
        assert!(
            buffers < sizes.len(),
            "the GSO send reached the GRO receiver coalesced ({buffers} buffers)"
        );
    }
    let mut buf = [0u8; 2048];
    for (i, &size) in sizes.iter().enumerate() {
        let (n, src) = plain.recv_from(&mut buf).unwrap();
        assert_eq!((n, src.port()), (size, sender.source_port(3)));
        assert!(buf[..n].iter().all(|&b| b == i as u8));
    }
}

/// The datapath stops reading an underlay socket after a batch shorter than its capacity,
/// without a second `recvmmsg` that would only say EAGAIN (crates/datapath's `Loop::underlay`):
/// that relies on `recvmmsg(MSG_DONTWAIT)` taking everything queued, up to the batch's
/// capacity, in one call.
#[test]
fn a_short_batch_takes_everything_queued() {
    let net = VethPair::new("us");
    let (sender, receiver) = gso_sender_and_receiver(&net);
    let dst: SocketAddr = "10.77.0.2:4789".parse().unwrap();
    // Five datagrams from five source ports (five flows: GRO keeps them apart).
    let mut batch = SendBatch::default();
    for i in 0..5u16 {
        assert!(batch.push(dst, i, &[i as u8; 8], &[i as u8; 200]));
    }
    assert_eq!(sender.send_batch(&batch).unwrap(), 5);
    // The veth delivers within the send; the pause only covers a softirq deferred to
    // ksoftirqd on a loaded machine. Nothing else sends to this namespace.
    std::thread::sleep(Duration::from_millis(200));
    let mut rx = receiver.new_recv_batch(64);
    let n = receiver.recv_batch(&mut rx).unwrap();
    assert_eq!(n, 5, "every queued datagram in one call");
    assert!(rx.len() < rx.capacity());
    assert_eq!(
        receiver.recv_batch(&mut rx).unwrap(),
        0,
        "nothing left after a short batch"
    );
}
