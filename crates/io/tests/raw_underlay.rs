//! RawUnderlay between two namespaces: batches of GRE-like (47), IP-in-IP (4) and TCP-numbered
//! (6) datagrams over IPv4 and IPv6; only the bound protocol and address are received; DF.
//!
//! ```text
//!   ns nvo-<t>a-PID                              ns nvo-<t>b-PID
//!  ┌────────────────────────────┐              ┌────────────────────────────┐
//!  │ sender RawUnderlay         │              │ receiver RawUnderlay       │
//!  │   (protocol P, and 99)     │              │   (protocol P, bound to .2)│
//!  │ va 10.79.0.1  fd79::1      ├────veth──────┤ vb 10.79.0.2  fd79::2      │
//!  │                            │              │    10.79.0.3  fd79::3      │
//!  └────────────────────────────┘              └────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::time::Duration;

use common::{wait_for, VethPair};
use nvo_io::netns::run_in;
use nvo_io::{Poller, RawUnderlay, SendBatch};

/// Receives until `want` datagrams arrived or `timeout` passed.
fn receive(raw: &RawUnderlay, want: usize, timeout: Duration) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut batch = raw.new_recv_batch(16);
    let mut poller = Poller::with_capacity(1);
    poller.add(raw.as_fd());
    let mut got = Vec::new();
    wait_for(timeout, || {
        poller.wait(Some(Duration::from_millis(50))).unwrap();
        raw.recv_batch(&mut batch).unwrap();
        got.extend(batch.iter().map(|(src, d)| (src, d.to_vec())));
        got.len() >= want
    });
    got
}

fn payload(protocol: u8, i: usize) -> Vec<u8> {
    let mut p = vec![protocol, i as u8];
    p.extend((0..40 + 37 * i).map(|k| (k * 3 + i) as u8));
    p
}

fn net(tag: &str) -> VethPair {
    let net = VethPair::new(tag);
    net.address("10.79.0", "fd79");
    net.b
        .ip(&["addr", "add", "10.79.0.3/24", "dev", "vb"])
        .unwrap();
    net.b
        .ip(&["addr", "add", "fd79::3/64", "dev", "vb", "nodad"])
        .unwrap();
    net
}

fn exchange(tag: &str, v6: bool) {
    let net = net(tag);
    let (local, remote, other): (IpAddr, IpAddr, IpAddr) = if v6 {
        (
            "fd79::1".parse().unwrap(),
            "fd79::2".parse().unwrap(),
            "fd79::3".parse().unwrap(),
        )
    } else {
        (
            "10.79.0.1".parse().unwrap(),
            "10.79.0.2".parse().unwrap(),
            "10.79.0.3".parse().unwrap(),
        )
    };
    for protocol in [47u8, 4, 6] {
        let sender = run_in(net.a.name(), || RawUnderlay::bind(local, protocol))
            .unwrap()
            .unwrap();
        let stranger = run_in(net.a.name(), || RawUnderlay::bind(local, 99))
            .unwrap()
            .unwrap();
        let receiver = run_in(net.b.name(), || RawUnderlay::bind(remote, protocol))
            .unwrap()
            .unwrap();
        assert_eq!(
            (receiver.local_addr(), receiver.protocol()),
            (remote, protocol)
        );

        // Another protocol to the locator, and this protocol to another address of the
        // receiver's namespace: neither reaches the receiver.
        let mut batch = SendBatch::default();
        assert!(batch.push(SocketAddr::new(remote, 0), 0, b"other", b" protocol"));
        assert_eq!(stranger.send_batch(&batch).unwrap(), 1);
        batch.clear();
        assert!(batch.push(SocketAddr::new(other, 0), 0, b"other", b" address"));
        assert_eq!(sender.send_batch(&batch).unwrap(), 1);

        // A batch of 20: header and payload split differently, a port that must be ignored.
        batch.clear();
        for i in 0..20 {
            let p = payload(protocol, i);
            let (head, rest) = p.split_at(i.min(p.len()));
            assert!(batch.push(SocketAddr::new(remote, 4789), i as u16, head, rest));
        }
        assert_eq!(
            sender.send_batch(&batch).unwrap(),
            20,
            "protocol {protocol}"
        );
        let got = receive(&receiver, 20, Duration::from_secs(5));
        let want: Vec<(SocketAddr, Vec<u8>)> = (0..20)
            .map(|i| (SocketAddr::new(local, 0), payload(protocol, i)))
            .collect();
        assert_eq!(
            got, want,
            "protocol {protocol} over {remote}: in order, intact, nothing else"
        );
        assert!(
            receive(&receiver, 1, Duration::from_millis(300)).is_empty(),
            "nothing more arrives"
        );
        assert_eq!(receiver.stats(), nvo_io::RawStats::default());
        assert_eq!(sender.stats(), nvo_io::RawStats::default());
    }
}

#[test]
fn raw_batches_cross_ipv4() {
    exchange("r4", false);
}

#[test]
fn raw_batches_cross_ipv6() {
    exchange("r6", true);
}

/// DF on: a datagram larger than the MTU is refused (EMSGSIZE) and counted; DF off: the kernel
/// fragments it and the receiver gets it whole (reassembled before raw delivery).
#[test]
fn dont_fragment_decides_between_refusal_and_fragmentation() {
    let net = net("rdf");
    for (local, remote) in [("10.79.0.1", "10.79.0.2"), ("fd79::1", "fd79::2")] {
        let local: IpAddr = local.parse().unwrap();
        let remote: IpAddr = remote.parse().unwrap();
        let sender = run_in(net.a.name(), || RawUnderlay::bind(local, 47))
            .unwrap()
            .unwrap();
        let receiver = run_in(net.b.name(), || RawUnderlay::bind(remote, 47))
            .unwrap()
            .unwrap();
        let big: Vec<u8> = (0..4000u32).map(|i| (i * 7) as u8).collect();
        let mut batch = SendBatch::default();
        assert!(batch.push(SocketAddr::new(remote, 0), 0, &[], &big));

        sender.set_outer(None, None, Some(true)).unwrap();
        let err = sender.send_batch(&batch).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EMSGSIZE), "{err}");
        assert_eq!(sender.stats().send_errors, 1);

        sender.set_outer(None, None, Some(false)).unwrap();
        assert_eq!(sender.send_batch(&batch).unwrap(), 1);
        let got = receive(&receiver, 1, Duration::from_secs(5));
        assert_eq!(
            got,
            vec![(SocketAddr::new(local, 0), big)],
            "reassembled over {remote}"
        );
    }
}

#[test]
fn ttl_zero_is_refused() {
    let net = VethPair::new("rz");
    let raw = run_in(net.a.name(), || {
        RawUnderlay::bind("127.0.0.1".parse().unwrap(), 47)
    })
    .unwrap()
    .unwrap();
    let err = raw.set_outer(Some(0), None, None).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("ttl 0"), "{err}");
}
