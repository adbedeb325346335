//! TapPort: created up, frames both ways (seen through a PacketPort on the same device),
//! gone when closed; with the virtio-net header, the kernel's offloads on and every frame read
//! finished (checksums) and segmented (GSO) by FrameBatch.
//!
//! ```text
//!   ns nvo-<t>-PID
//!  ┌─────────────────────────────────────────────────────┐
//!  │  TapPort (fd) ══ nvotap0 (kernel) ── PacketPort     │
//!  │   write → kernel receives on nvotap0 → PacketPort   │
//!  │   PacketPort sends on nvotap0 → kernel → TapPort    │
//!  └─────────────────────────────────────────────────────┘
//!
//! Offloads: the test thread bridges the TAP to a veth, checking every frame it reads.
//!   ns nvo-toa-PID                                             ns nvo-tob-PID
//!  ┌──────────────────────────────────────────────────┐       ┌─────────────────────────┐
//!  │ TCP / UDP-GSO senders                            │       │ TCP listener, UDP socket│
//!  │ nvotap0 10.78.0.1 fd78::1                        │       │ vb 10.78.0.2  fd78::2   │
//!  │   ║ TapPort ── test thread ── PacketPort ── va ─┼─veth──┤                         │
//!  └──────────────────────────────────────────────────┘       └─────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::process::Command;
use std::thread;
use std::time::Duration;

use common::{wait_for, VethPair};
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use nvo_io::netns::{run_in, unique_name, NamedNetns};
use nvo_io::{
    FrameBatch, FrameBatchStats, FramePort, PacketPort, Poller, SendBatch, TapOffloads, TapPort,
    UdpUnderlay,
};

fn test_frame(src: u8, seq: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xff, 0x02, 0, 0, 0, 0, src, 0x88, 0xb5];
    f.extend(std::iter::repeat_n(seq, 100));
    f
}

fn receive_test_frame(port: &dyn FramePort, batch: &mut FrameBatch) -> Option<Vec<u8>> {
    let mut poller = Poller::with_capacity(1);
    poller.add(port.as_fd());
    let mut got = None;
    wait_for(Duration::from_secs(5), || {
        poller.wait(Some(Duration::from_millis(20))).unwrap();
        port.recv_batch(batch).unwrap();
        let mut frames = batch.frames();
        while let Some(f) = frames.next_frame() {
            if f[12..14] == [0x88, 0xb5] {
                got = Some(f.to_vec());
            }
        }
        got.is_some()
    });
    got
}

#[test]
fn tap_ports_come_up_carry_frames_and_vanish_when_closed() {
    for vnet in [false, true] {
        let ns = NamedNetns::create(&unique_name(if vnet { "tv" } else { "tp" })).unwrap();
        let tap = run_in(ns.name(), || TapPort::create("nvotap0", vnet))
            .unwrap()
            .unwrap();
        assert_eq!(
            (tap.name(), tap.vnet_hdr(), tap.mtu().unwrap()),
            ("nvotap0", vnet, 1500)
        );
        if !vnet {
            assert_eq!(
                tap.offloads(),
                TapOffloads::default(),
                "no header, no offload"
            );
        }
        let link = ns.ip(&["-o", "link", "show", "nvotap0"]).unwrap();
        assert!(link.contains(",UP"), "link is up: {link}");
        let peer = run_in(ns.name(), || PacketPort::open("nvotap0"))
            .unwrap()
            .unwrap();
        assert_eq!(peer.ifindex(), tap.ifindex());
        let mut batch = FrameBatch::default();

        tap.send(&test_frame(1, 1)).unwrap();
        assert_eq!(
            receive_test_frame(&peer, &mut batch),
            Some(test_frame(1, 1)),
            "tap write reaches the kernel"
        );
        let frames = [test_frame(2, 2), test_frame(2, 3)];
        assert_eq!(
            peer.send_batch(&mut frames.iter().map(Vec::as_slice))
                .unwrap(),
            2
        );
        assert_eq!(
            receive_test_frame(&tap, &mut batch),
            Some(test_frame(2, 3)),
            "kernel transmit reaches tap reads"
        );

        drop(peer);
        drop(tap);
        assert!(
            ns.ip(&["link", "show", "nvotap0"]).is_err(),
            "the device is gone with its fd"
        );
    }
}

#[test]
fn kernel_picks_a_name_when_none_is_given() {
    let ns = NamedNetns::create(&unique_name("tn")).unwrap();
    let tap = run_in(ns.name(), || TapPort::create("", false))
        .unwrap()
        .unwrap();
    assert!(tap.name().starts_with("tap"), "{}", tap.name());
    assert!(run_in(ns.name(), || TapPort::create(
        "this-name-is-too-long",
        false
    ))
    .unwrap()
    .is_err());
}

/// The TAP bridged to a veth by the test thread, and what crossed from the TAP.
struct Lab {
    tap: TapPort,
    wire: PacketPort,
    batch: FrameBatch,
    poller: Poller,
    seen: Seen,
    /// Last: deleting the namespaces after the descriptors in them are closed.
    net: VethPair,
}

/// What the test thread read from the TAP.
#[derive(Debug, Default)]
struct Seen {
    frames: usize,
    tcp: usize,
    udp: usize,
    largest: usize,
    stats: FrameBatchStats,
}

impl Lab {
    fn new() -> Self {
        let net = VethPair::new("to");
        let tap = run_in(net.a.name(), || TapPort::create("nvotap0", true))
            .unwrap()
            .unwrap();
        let wire = run_in(net.a.name(), || PacketPort::open("va"))
            .unwrap()
            .unwrap();
        for (ns, dev, host) in [(&net.a, "nvotap0", 1), (&net.b, "vb", 2)] {
            ns.ip(&["addr", "add", &format!("10.78.0.{host}/24"), "dev", dev])
                .unwrap();
            let v6 = format!("fd78::{host}/64");
            ns.ip(&["addr", "add", &v6, "dev", dev, "nodad"]).unwrap();
        }
        let mut poller = Poller::with_capacity(2);
        poller.add(tap.as_fd());
        poller.add(wire.as_fd());
        Lab {
            tap,
            wire,
            batch: FrameBatch::default(),
            poller,
            seen: Seen::default(),
            net,
        }
    }

    /// Moves what is queued across, both ways, checking each frame read from the TAP.
    fn forward(&mut self) {
        self.poller.wait(Some(Duration::from_millis(10))).unwrap();
        let limit = self.tap.mtu().unwrap() as usize + 14;
        self.tap.recv_batch(&mut self.batch).unwrap();
        let mut frames = self.batch.frames();
        while let Some(frame) = frames.next_frame() {
            let seen = &mut self.seen;
            assert!(frame.len() <= limit, "{} bytes > {limit}", frame.len());
            seen.frames += 1;
            seen.largest = seen.largest.max(frame.len());
            match check_frame(frame) {
                Some(6) => seen.tcp += 1,
                Some(17) => seen.udp += 1,
                _ => {}
            }
            // A full queue drops the frame, as a switch would: TCP sends it again.
            let _ = self.wire.send(frame);
        }
        add_stats(&mut self.seen.stats, self.batch.stats());
        self.wire.recv_batch(&mut self.batch).unwrap();
        let mut frames = self.batch.frames();
        while let Some(frame) = frames.next_frame() {
            let _ = self.tap.send(frame);
        }
    }
}

fn add_stats(sum: &mut FrameBatchStats, s: FrameBatchStats) {
    sum.truncated += s.truncated;
    sum.gso_segmented += s.gso_segmented;
    sum.checksum_completed += s.checksum_completed;
    sum.vnet_malformed += s.vnet_malformed;
    sum.gso_unsupported += s.gso_unsupported;
}

/// Panics on a wrong IPv4, TCP or UDP checksum; returns the IP protocol of an IP frame.
fn check_frame(frame: &[u8]) -> Option<u8> {
    let p = SlicedPacket::from_ethernet(frame).unwrap();
    let (src, dst): (Vec<u8>, Vec<u8>) = match p.net? {
        NetSlice::Ipv4(ip) => {
            let h = ip.header();
            let sum = h.to_header().calc_header_checksum();
            assert_eq!(sum, h.header_checksum(), "ipv4 header checksum");
            (h.source().to_vec(), h.destination().to_vec())
        }
        NetSlice::Ipv6(ip) => {
            let h = ip.header();
            (h.source().to_vec(), h.destination().to_vec())
        }
        _ => return None,
    };
    let (v4, v6) = (
        |a: &[u8]| <[u8; 4]>::try_from(a).unwrap(),
        |a: &[u8]| <[u8; 16]>::try_from(a).unwrap(),
    );
    match p.transport? {
        TransportSlice::Tcp(tcp) => {
            let want = if src.len() == 4 {
                tcp.calc_checksum_ipv4(v4(&src), v4(&dst))
            } else {
                tcp.calc_checksum_ipv6(v6(&src), v6(&dst))
            };
            assert_eq!(tcp.checksum(), want.unwrap(), "tcp checksum");
            Some(6)
        }
        TransportSlice::Udp(udp) => {
            let h = udp.to_header();
            let want = if src.len() == 4 {
                h.calc_checksum_ipv4_raw(v4(&src), v4(&dst), udp.payload())
            } else {
                h.calc_checksum_ipv6_raw(v6(&src), v6(&dst), udp.payload())
            };
            assert_eq!(udp.checksum(), want.unwrap(), "udp checksum");
            Some(17)
        }
        _ => None,
    }
}

/// The offloads `ethtool -k` reports on the TAP, or None without ethtool.
fn ethtool_offloads(ns: &str) -> Option<TapOffloads> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-k", "nvotap0"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let on = |feature: &str| text.contains(&format!("{feature}: on"));
    Some(TapOffloads {
        csum: on("tx-checksum-ip-generic"),
        tso: on("tx-tcp-segmentation") && on("tx-tcp6-segmentation"),
        uso: on("tx-udp-segmentation"),
    })
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Streams 1 MiB from `a` to `b`, forwarding meanwhile; returns the bytes `b` received.
fn tcp_stream(lab: &mut Lab, remote: IpAddr) -> Vec<u8> {
    let dst = SocketAddr::new(remote, 5001);
    let listener = run_in(lab.net.b.name(), || TcpListener::bind(dst))
        .unwrap()
        .unwrap();
    listener.set_nonblocking(true).unwrap();
    let ns = lab.net.a.name().to_owned();
    // Timeouts bound the sender thread whatever happens to the forwarding.
    let sender = thread::spawn(move || -> io::Result<()> {
        let mut s = run_in(&ns, || {
            TcpStream::connect_timeout(&dst, Duration::from_secs(10))
        })??;
        s.set_write_timeout(Some(Duration::from_secs(20)))?;
        s.write_all(&pattern(1 << 20))?;
        s.shutdown(Shutdown::Write)
    });
    let (mut conn, mut got, mut eof) = (None::<TcpStream>, Vec::new(), false);
    wait_for(Duration::from_secs(30), || {
        lab.forward();
        match conn.as_mut() {
            None => {
                if let Ok((c, _)) = listener.accept() {
                    c.set_nonblocking(true).unwrap();
                    conn = Some(c);
                }
            }
            Some(c) => {
                let mut buf = [0; 65536];
                loop {
                    match c.read(&mut buf) {
                        Ok(0) => eof = true,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => panic!("tcp receive: {e}"),
                    }
                    if eof {
                        break;
                    }
                }
            }
        }
        eof
    });
    sender.join().unwrap().unwrap();
    got
}

/// Sends 40 datagrams of 1000 bytes in one UDP GSO batch from `a`; returns how many `b` got.
fn udp_burst(lab: &mut Lab, local: IpAddr, remote: IpAddr) -> usize {
    let dst = SocketAddr::new(remote, 4789);
    let receiver = run_in(lab.net.b.name(), || UdpSocket::bind(dst))
        .unwrap()
        .unwrap();
    receiver.set_nonblocking(true).unwrap();
    let sender = run_in(lab.net.a.name(), || UdpUnderlay::bind(local, 4789, 1))
        .unwrap()
        .unwrap();
    let mut batch = SendBatch::default();
    for i in 0..40u8 {
        assert!(batch.push(dst, 7, &[i; 8], &[i; 1000]));
    }
    assert_eq!(sender.send_batch(&batch).unwrap(), 40);
    let mut got = 0;
    wait_for(Duration::from_secs(10), || {
        lab.forward();
        let mut buf = [0; 2048];
        while let Ok(n) = receiver.recv(&mut buf) {
            assert_eq!((n, buf[0]), (1008, buf[n - 1]), "datagram intact");
            got += 1;
        }
        got == 40
    });
    got
}

#[test]
fn tap_offloads_deliver_only_finished_mtu_sized_frames() {
    let mut lab = Lab::new();
    let offloads = lab.tap.offloads();
    println!("tap offloads: {offloads:?}");
    assert!(
        offloads.csum && offloads.tso,
        "any kernel since 2.6.27 offers these"
    );
    match ethtool_offloads(lab.net.a.name()) {
        Some(kernel) => assert_eq!(kernel, offloads, "ethtool -k agrees"),
        None => println!("ethtool unavailable: offloads not cross-checked"),
    }

    for (local, remote) in [("10.78.0.1", "10.78.0.2"), ("fd78::1", "fd78::2")] {
        let (local, remote) = (local.parse().unwrap(), remote.parse().unwrap());
        let before = lab.seen.stats.gso_segmented;
        let got = tcp_stream(&mut lab, remote);
        assert!(
            got == pattern(1 << 20),
            "1 MiB arrives intact ({} bytes)",
            got.len()
        );
        let tso_frames = lab.seen.stats.gso_segmented - before;
        assert!(
            tso_frames > 0,
            "{remote}: the kernel handed over TSO frames"
        );

        let before = lab.seen.stats.gso_segmented;
        assert_eq!(
            udp_burst(&mut lab, local, remote),
            40,
            "{remote}: every datagram"
        );
        let uso_frames = lab.seen.stats.gso_segmented - before;
        assert_eq!(
            uso_frames > 0,
            offloads.uso,
            "{remote}: USO frames iff offered"
        );
    }
    let seen = &lab.seen;
    println!("{seen:?}");
    assert!(
        seen.stats.checksum_completed > 0,
        "partial checksums were completed"
    );
    assert!(seen.tcp > 1400 && seen.udp >= 80, "{seen:?}");
    assert!(seen.largest > 1400, "full-size segments: {seen:?}");
    let s = seen.stats;
    assert_eq!(
        (s.truncated, s.vnet_malformed, s.gso_unsupported),
        (0, 0, 0)
    );
}
