//! Keeping large frames: a forwarder in the middle namespace reads with `next_frame_meta` and
//! writes with `send_meta`, so a TCP stream crosses it as GSO frames larger than the MTU, and
//! the data arrives intact. Second run: the far port has no virtio-net header, so `send_meta`
//! cuts and checksums in software and the receiving kernel checks every segment.
//!
//! ```text
//!   ns nvo-<t>a-PID            ns nvo-<t>m-PID                         ns nvo-<t>b-PID
//!  ┌──────────────────┐      ┌──────────────────────────────────┐      ┌──────────────────┐
//!  │ a0 10.81.0.1     │      │ PacketPort pa ⇄ forwarder ⇄ pb   │      │ b0 10.81.0.2     │
//!  │    fd81::1       ├─veth─┤ pa  (vnet)          pb (vnet, or ├─veth─┤    fd81::2       │
//!  │ TCP client       │      │     next_frame_meta   no vnet)   │      │ TCP server :5001 │
//!  └──────────────────┘      │     → send_meta                  │      └──────────────────┘
//!                            └──────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvo_io::ethtool::{set_offload, Offload};
use nvo_io::netns::{run_in, unique_name, NamedNetns};
use nvo_io::{FrameBatch, FramePort, GsoKind, PacketPort, Poller};

/// Three namespaces in a row; dropping it deletes them (and the veths).
struct Line {
    a: NamedNetns,
    m: NamedNetns,
    b: NamedNetns,
}

impl Line {
    fn new(tag: &str) -> Self {
        let a = NamedNetns::create(&unique_name(&format!("{tag}a"))).expect("run as root");
        let m = NamedNetns::create(&unique_name(&format!("{tag}m"))).unwrap();
        let b = NamedNetns::create(&unique_name(&format!("{tag}b"))).unwrap();
        for (ns, dev, peer) in [(&a, "a0", "pa"), (&b, "b0", "pb")] {
            ns.ip(&[
                "link",
                "add",
                dev,
                "type",
                "veth",
                "peer",
                "name",
                peer,
                "netns",
                m.name(),
            ])
            .unwrap();
            ns.ip(&["link", "set", "lo", "up"]).unwrap();
            ns.ip(&["link", "set", dev, "up"]).unwrap();
            m.ip(&["link", "set", peer, "up"]).unwrap();
        }
        for (ns, dev, host) in [(&a, "a0", 1), (&b, "b0", 2)] {
            ns.ip(&["addr", "add", &format!("10.81.0.{host}/24"), "dev", dev])
                .unwrap();
            ns.ip(&[
                "addr",
                "add",
                &format!("fd81::{host}/64"),
                "dev",
                dev,
                "nodad",
            ])
            .unwrap();
        }
        Line { a, m, b }
    }
}

#[derive(Default)]
struct Seen {
    /// GSO frames larger than a 1500-byte MTU frame, by kind.
    tcp4: AtomicU64,
    tcp6: AtomicU64,
    largest: AtomicU64,
    send_errors: AtomicU64,
}

/// Forwards every frame between two ports until dropped; joins its thread on drop.
struct Forwarder {
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
    thread: Option<JoinHandle<()>>,
}

impl Forwarder {
    fn start(left: PacketPort, right: PacketPort) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Seen::default());
        let (stop2, seen2) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let ports = [&left, &right];
            let mut batch = FrameBatch::default();
            let mut poller = Poller::with_capacity(2);
            for p in ports {
                poller.add(p.as_fd());
            }
            while !stop2.load(Relaxed) {
                poller.wait(Some(Duration::from_millis(20))).unwrap();
                for (from, to) in [(0, 1), (1, 0)] {
                    ports[from].recv_batch(&mut batch).unwrap();
                    let mut frames = batch.frames();
                    while let Some((frame, meta)) = frames.next_frame_meta() {
                        if let Some(gso) = meta.gso {
                            assert!(meta.csum.is_some(), "gso frames carry a partial checksum");
                            if frame.len() > 1514 {
                                let counter = match gso.kind {
                                    GsoKind::Tcp4 => &seen2.tcp4,
                                    GsoKind::Tcp6 => &seen2.tcp6,
                                    GsoKind::Udp => &seen2.largest,
                                };
                                counter.fetch_add(1, Relaxed);
                                seen2.largest.fetch_max(frame.len() as u64, Relaxed);
                            }
                        }
                        if ports[to].send_meta(frame, &meta).is_err() {
                            seen2.send_errors.fetch_add(1, Relaxed);
                        }
                    }
                }
            }
        });
        Forwarder {
            stop,
            seen,
            thread: Some(thread),
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends 8 MiB from a to b over TCP and checks every byte; returns when b read it all.
fn transfer(line: &Line, server: IpAddr, client_bind: IpAddr) {
    let listener = run_in(line.b.name(), || {
        TcpListener::bind(SocketAddr::new(server, 5001))
    })
    .unwrap()
    .unwrap();
    let client = run_in(line.a.name(), || {
        TcpStream::connect_timeout(&SocketAddr::new(server, 5001), Duration::from_secs(5))
    })
    .unwrap()
    .unwrap();
    assert_eq!(client.local_addr().unwrap().ip(), client_bind);
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let data: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    let to_send = data.clone();
    let writer = std::thread::spawn(move || {
        let mut client = client;
        client
            .set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        client.write_all(&to_send).unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
    });
    // A whole deadline, not only a read timeout: a forwarder that spoils large frames lets
    // only retransmitted single segments through, a trickle that never times a read out.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::with_capacity(data.len());
    let mut buf = vec![0; 1 << 16];
    loop {
        assert!(
            Instant::now() < deadline,
            "only {} of {} bytes in 30 s",
            got.len(),
            data.len()
        );
        match conn.read(&mut buf).expect("the stream goes on") {
            0 => break,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    writer.join().unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data, "the data arrives intact");
}

fn open(ns: &NamedNetns, dev: &str, vnet: bool) -> PacketPort {
    run_in(ns.name(), || PacketPort::open_with(dev, vnet))
        .unwrap()
        .unwrap()
}

#[test]
fn gso_frames_cross_a_forwarder_whole() {
    let line = Line::new("kl");
    let pa = open(&line.m, "pa", true);
    let pb = open(&line.m, "pb", true);
    assert!(pa.vnet_hdr() && pb.vnet_hdr());
    let fwd = Forwarder::start(pa, pb);
    transfer(
        &line,
        "10.81.0.2".parse().unwrap(),
        "10.81.0.1".parse().unwrap(),
    );
    transfer(
        &line,
        "fd81::2".parse().unwrap(),
        "fd81::1".parse().unwrap(),
    );
    let seen = &fwd.seen;
    let (tcp4, tcp6) = (seen.tcp4.load(Relaxed), seen.tcp6.load(Relaxed));
    println!(
        "gso frames forwarded whole: tcp4 {tcp4}, tcp6 {tcp6}, largest {} bytes",
        seen.largest.load(Relaxed)
    );
    assert!(tcp4 > 0 && tcp6 > 0, "tcp4 {tcp4}, tcp6 {tcp6}");
    assert!(seen.largest.load(Relaxed) > 1514);
    assert_eq!(seen.send_errors.load(Relaxed), 0);
}

#[test]
fn large_frames_are_finished_for_a_port_without_vnet_header() {
    let line = Line::new("ks");
    // b0's frames reach pb, which has no header to say a checksum is partial: b0 must send
    // complete ones (this also turns TSO off on b0).
    run_in(line.b.name(), || {
        set_offload("b0", Offload::TxChecksum, false)
    })
    .unwrap()
    .unwrap();
    let pa = open(&line.m, "pa", true);
    let pb = open(&line.m, "pb", false);
    assert!(!pb.vnet_hdr());
    let fwd = Forwarder::start(pa, pb);
    transfer(
        &line,
        "10.81.0.2".parse().unwrap(),
        "10.81.0.1".parse().unwrap(),
    );
    transfer(
        &line,
        "fd81::2".parse().unwrap(),
        "fd81::1".parse().unwrap(),
    );
    let seen = &fwd.seen;
    assert!(seen.tcp4.load(Relaxed) > 0 && seen.tcp6.load(Relaxed) > 0);
    assert_eq!(seen.send_errors.load(Relaxed), 0);
}
