//! UdpUnderlay and underlay multicast: a joined receiver gets what is sent to the group, a
//! host that did not join does not, the sender does not hear itself, a leave stops it all, and
//! unicast datagrams stay on the unicast socket. Over a bridge with IGMP snooping off (it
//! floods every group to every port), with snooping on and a querier (it forwards a group only
//! to ports whose host reported a membership: the joins must really go out on eth0), and over
//! IPv6 (MLD; snooping off).
//!
//! ```text
//!   ns nvo-<t>0-PID        ns nvo-<t>1-PID          ns nvo-<t>2-PID
//!   sender, joined too     receiver, joined         bystander, not joined
//!   .1 / ::1 eth0          .2 / ::2 eth0            .3 / ::3 eth0
//!            \                  |                    /
//!             p0 ──────── br0 (ns nvo-<t>s-PID) ─── p2
//!                               p1
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use common::Bridged;
use nvo_io::netns::run_in;
use nvo_io::{SendBatch, UdpUnderlay, MAX_GROUPS};

const PORT: u16 = 4789;

/// Which socket a datagram came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    Unicast,
    Group(IpAddr),
}

/// Datagrams as received: socket, source, payload.
type Got = Vec<(On, SocketAddr, Vec<u8>)>;

/// Everything queued on the underlay's sockets now, without waiting.
fn drain(u: &UdpUnderlay) -> Got {
    let mut batch = u.new_recv_batch(64);
    let mut got = Vec::new();
    while u.recv_batch(&mut batch).unwrap() > 0 {
        got.extend(batch.iter().map(|(s, d)| (On::Unicast, s, d.to_vec())));
    }
    let groups: Vec<IpAddr> = u.groups().collect();
    for (i, group) in groups.into_iter().enumerate() {
        while u.recv_group_batch(i, &mut batch).unwrap() > 0 {
            got.extend(batch.iter().map(|(s, d)| (On::Group(group), s, d.to_vec())));
        }
    }
    got
}

fn send(u: &UdpUnderlay, dst: IpAddr, payload: &[u8]) {
    let mut batch = SendBatch::default();
    assert!(batch.push(SocketAddr::new(dst, PORT), 3, b"", payload));
    assert_eq!(u.send_batch(&batch).unwrap(), 1, "sent to {dst}");
}

/// Sends to `group` every 100 ms until `receiver` has a datagram (the first ones may go out
/// before the bridge has learnt the membership); returns what each underlay got meanwhile.
fn send_until_received(
    sender: &UdpUnderlay,
    group: IpAddr,
    receiver: &UdpUnderlay,
    others: &[&UdpUnderlay],
) -> (Got, Vec<Got>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.is_empty() && Instant::now() < deadline {
        send(sender, group, b"to the group");
        std::thread::sleep(Duration::from_millis(100));
        got = drain(receiver);
    }
    // Give stray copies to the others time to show up.
    std::thread::sleep(Duration::from_millis(200));
    (got, others.iter().map(|u| drain(u)).collect())
}

fn bind(ns: &str, local: IpAddr, join: Option<IpAddr>) -> UdpUnderlay {
    run_in(ns, || {
        let mut u = UdpUnderlay::bind(local, PORT, 4)?;
        if let Some(group) = join {
            u.join(group)?;
        }
        io::Result::Ok(u)
    })
    .unwrap()
    .unwrap()
}

fn joined_receiver_only(tag: &str, bridge: &str, v4: bool) {
    let net = Bridged::new(tag, 3, bridge, "10.78.0", "fd78");
    let addr = |i: usize| -> IpAddr {
        if v4 {
            format!("10.78.0.{}", i + 1).parse().unwrap()
        } else {
            format!("fd78::{}", i + 1).parse().unwrap()
        }
    };
    let group: IpAddr = if v4 { "239.1.1.1" } else { "ff0e::4:1" }.parse().unwrap();
    let ns = |i: usize| net.hosts[i].name().to_owned();
    let sender = bind(&ns(0), addr(0), Some(group));
    let mut receiver = bind(&ns(1), addr(1), Some(group));
    let bystander = bind(&ns(2), addr(2), None);
    assert_eq!(receiver.groups().collect::<Vec<_>>(), [group]);
    assert_eq!(receiver.group_fds().len(), 1);

    let (got, others) = send_until_received(&sender, group, &receiver, &[&sender, &bystander]);
    assert!(
        !got.is_empty(),
        "the joined receiver got nothing sent to {group}"
    );
    for (on, src, data) in &got {
        assert_eq!(*on, On::Group(group));
        assert_eq!(*src, SocketAddr::new(addr(0), sender.source_port(3)));
        assert_eq!(data, b"to the group");
    }
    assert_eq!(others[0], [], "the sender heard its own group datagrams");
    assert_eq!(
        others[1],
        [],
        "a host that did not join got group datagrams"
    );

    // Unicast to the receiver stays on its unicast socket.
    send(&sender, addr(1), b"to the locator");
    std::thread::sleep(Duration::from_millis(200));
    let got = drain(&receiver);
    assert_eq!(
        got,
        [(
            On::Unicast,
            SocketAddr::new(addr(0), sender.source_port(3)),
            b"to the locator".to_vec()
        )]
    );

    receiver.leave(group).unwrap();
    assert_eq!(receiver.groups().len(), 0);
    assert_eq!(
        (
            receiver.stats().multicast_joins,
            receiver.stats().multicast_leaves
        ),
        (1, 1)
    );
    for _ in 0..5 {
        send(&sender, group, b"after the leave");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(drain(&receiver), [], "datagrams arrived after the leave");
}

#[test]
fn ipv4_group_reaches_only_joined_hosts_without_snooping() {
    joined_receiver_only("mf", "mcast_snooping 0", true);
}

#[test]
fn ipv4_group_reaches_only_joined_hosts_through_a_snooping_bridge() {
    joined_receiver_only("ms", "mcast_snooping 1 mcast_querier 1", true);
}

#[test]
fn ipv6_group_reaches_only_joined_hosts() {
    joined_receiver_only("m6", "mcast_snooping 0", false);
}

#[test]
fn joins_are_checked_and_bounded() {
    let net = Bridged::new("mb", 1, "", "10.79.0", "fd79");
    let ns = net.hosts[0].name().to_owned();
    run_in(&ns, || {
        let kind = |r: io::Result<()>| r.unwrap_err().kind();
        let mut u = UdpUnderlay::bind("10.79.0.1".parse().unwrap(), PORT, 1).unwrap();
        assert_eq!(
            kind(u.join("10.1.1.1".parse().unwrap())),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(u.join("ff0e::1".parse().unwrap())),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(u.leave("239.0.0.1".parse().unwrap())),
            io::ErrorKind::NotFound
        );
        for i in 0..MAX_GROUPS {
            u.join(IpAddr::from([239, 2, 0, i as u8])).unwrap();
        }
        assert_eq!(
            kind(u.join("239.2.0.0".parse().unwrap())),
            io::ErrorKind::AlreadyExists
        );
        let err = u.join("239.3.0.0".parse().unwrap()).unwrap_err();
        assert!(err.to_string().contains("64 groups"), "{err}");
        assert_eq!(u.groups().len(), MAX_GROUPS);
        u.leave("239.2.0.5".parse().unwrap()).unwrap();
        u.join("239.3.0.0".parse().unwrap()).unwrap();
        assert_eq!(u.groups().last(), Some("239.3.0.0".parse().unwrap()));
        assert!(u
            .recv_group_batch(MAX_GROUPS, &mut u.new_recv_batch(1))
            .is_err());
        u.set_multicast_ttl(1).unwrap();

        // Without a locator there is no interface to join on.
        let mut any = UdpUnderlay::bind("0.0.0.0".parse().unwrap(), PORT + 1, 0).unwrap();
        assert_eq!(
            kind(any.join("239.1.1.1".parse().unwrap())),
            io::ErrorKind::InvalidInput
        );
    })
    .unwrap();
}
