//! STT frames cut by the kernel's TCP segmentation ([`nvo_io::SttTso`]) against nvod's own
//! segmenter on the same frames: the segments on the wire are byte-equal but for the IPv4 ID
//! and the IP header checksum that follows from it; and the receiver's raw socket and
//! reassembler put frames back together from segments with partial checksums and from the
//! large pieces GRO makes of them.
//! Needs root.
//!
//! ```text
//!   ns nvo-nvsttXa-PID                              ns nvo-nvsttXb-PID
//!  ┌─────────────────────────────────┐            ┌──────────────────────────────────┐
//!  │ nvostt0 (TUN) ─ip_forward─┐     │            │ capture (AF_PACKET) on vb         │
//!  │ raw socket (IP 6) ────────┤     │            │ raw socket (IP 6) + Reassembler   │
//!  │                           va 10.81.0.1 ──veth── vb 10.81.0.2                     │
//!  └─────────────────────────────────┘            └──────────────────────────────────┘
//!   test 1: va with tso and tx checksumming off: the kernel segments and checksums in software
//!   test 2: va as created (tso, checksum offload on): whole frames or segments, with
//!           partial checksums; then va tso off, vb gro on: GRO merges the segments back
//!   test 3: a namespace with net.ipv4.conf.all.rp_filter = 1: the TUN is refused
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;
use std::process::Command;
use std::time::{Duration, Instant};

use nvo_encap::stt::{
    pseudo_header_sum, stt_header, Reassembler, ReassemblyLimits, Segmenter, SttMeta,
};
use nvo_io::netns::{run_in, unique_name, NamedNetns};
use nvo_io::{CaptureSocket, Poller, RawUnderlay, SendBatch, SttTso, TsoOuter, MAX_TSO_FRAME};

const A: Ipv4Addr = Ipv4Addr::new(10, 81, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 81, 0, 2);
/// Frame bytes per segment on a 1500-byte underlay: 1500 − 20 (IP) − 20 (TCP-like).
const MSS: u16 = 1460;
const SPORT: u16 = 0xc123;

struct Net {
    a: NamedNetns,
    b: NamedNetns,
}

fn net(tag: &str) -> Net {
    let a = NamedNetns::create(&unique_name(&format!("nvstt{tag}a"))).expect("root needed");
    let b = NamedNetns::create(&unique_name(&format!("nvstt{tag}b"))).unwrap();
    a.ip(&[
        "link",
        "add",
        "va",
        "type",
        "veth",
        "peer",
        "name",
        "vb",
        "netns",
        b.name(),
    ])
    .unwrap();
    for (ns, dev, addr) in [(&a, "va", A), (&b, "vb", B)] {
        ns.ip(&["link", "set", "lo", "up"]).unwrap();
        ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", dev])
            .unwrap();
        ns.ip(&["link", "set", dev, "up"]).unwrap();
    }
    Net { a, b }
}

fn ethtool(ns: &NamedNetns, args: &[&str]) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns.name(), "ethtool"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "ethtool {args:?}: {out:?}");
}

/// An STT frame of `len` bytes: a real header, then a patterned inner frame.
/// A frame as nvod hands it to the TUN: its STT header (18 bytes) and the rest apart.
fn pieces(f: &[u8]) -> [&[u8]; 2] {
    let (stt, inner) = f.split_at(f.len().min(18));
    [stt, inner]
}

fn frame(len: usize) -> Vec<u8> {
    let mut f = stt_header(300, SttMeta::default()).unwrap().to_vec();
    f.extend((0..len - f.len()).map(|i| (i * 13 + i / 253) as u8));
    f
}

/// IPv4 packets of STT segments (TCP to port 7471) received on the capture, until `want`
/// or two seconds.
fn captured(cap: &CaptureSocket, want: usize) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 70_000];
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while got.len() < want && Instant::now() < deadline {
        match cap.recv(&mut buf).unwrap() {
            Some(c) if !c.outgoing => {
                let f = &buf[..c.len];
                let ip = &f[14..];
                let stt = f[12..14] == [0x08, 0x00] && ip[9] == 6 && ip[22..24] == [0x1d, 0x2f];
                if stt {
                    got.push(ip.to_vec());
                }
            }
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    got
}

/// The kernel's segments of frames of these sizes equal nvod's (IPv4 ID and header checksum
/// aside): TSO on the TUN side, software GSO at the veth with full checksums.
#[test]
fn kernel_segments_equal_software_segments() {
    let net = net("eq");
    ethtool(&net.a, &["-K", "va", "tso", "off", "tx", "off"]);
    let tso = run_in(net.a.name(), SttTso::open).unwrap().unwrap();
    let raw = run_in(net.a.name(), || RawUnderlay::bind(IpAddr::V4(A), 6))
        .unwrap()
        .unwrap();
    let cap = run_in(net.b.name(), || CaptureSocket::open("vb", None))
        .unwrap()
        .unwrap();
    let outer = TsoOuter {
        src: A,
        dst: B,
        ttl: tso.default_ttl(),
        tos: 0,
        df: tso.default_df(),
    };
    let (src, dst) = (IpAddr::V4(A), IpAddr::V4(B));
    for len in [100, 1460, 1461, 3000, 20_000, 65_000, MAX_TSO_FRAME] {
        let f = frame(len);
        let mut soft = Segmenter::new(0x5170_0000 + len as u32);
        let mut kern = Segmenter::new(0x5170_0000 + len as u32);
        let ours: Vec<Vec<u8>> = soft
            .segment(&f, src, dst, SPORT, usize::from(MSS))
            .unwrap()
            .map(<[u8]>::to_vec)
            .collect();
        let mut batch = SendBatch::default();
        for s in &ours {
            assert!(batch.push(std::net::SocketAddr::new(dst, 0), 0, &[], s));
        }
        assert_eq!(raw.send_batch(&batch).unwrap(), ours.len());
        let software = captured(&cap, ours.len());
        let header = kern.offload_header(f.len(), src, dst, SPORT).unwrap();
        tso.send(&outer, &header, pieces(&f), MSS).unwrap();
        let kernel = captured(&cap, ours.len());
        assert_eq!(
            software.len(),
            ours.len(),
            "len {len}: software segments captured"
        );
        assert_eq!(
            kernel.len(),
            ours.len(),
            "len {len}: kernel segments captured"
        );
        for (i, ((k, s), o)) in kernel.iter().zip(&software).zip(&ours).enumerate() {
            assert_eq!(
                &s[20..],
                &o[..],
                "len {len} segment {i}: the raw socket sent ours"
            );
            assert_eq!(k.len(), s.len(), "len {len} segment {i}");
            assert!(k.len() <= 1500, "len {len} segment {i}: {} bytes", k.len());
            // The TCP-like header and payload: byte-equal, checksum included.
            assert_eq!(&k[20..], &s[20..], "len {len} segment {i}");
            // The IPv4 header: equal but for the ID (GSO counts up from 0; the raw socket's
            // DF datagrams all have 0) and the header checksum.
            let mask = |h: &[u8]| {
                let mut h = h[..20].to_vec();
                h[4..6].fill(0);
                h[10..12].fill(0);
                h
            };
            assert_eq!(mask(k), mask(s), "len {len} segment {i}: ip header");
            assert_eq!(
                u16::from_be_bytes([k[4], k[5]]),
                i as u16,
                "len {len}: ip id"
            );
        }
    }
}

/// Receives from `raw` into `reassembler` until a frame completes or two seconds pass; the
/// frame and the length of every piece the socket got.
fn receive(
    raw: &RawUnderlay,
    reassembler: &mut Reassembler,
    dst: IpAddr,
    partial: &mut usize,
) -> (Option<Vec<u8>>, Vec<usize>) {
    let mut batch = raw.new_recv_batch(64);
    let mut poller = Poller::with_capacity(1);
    poller.add(raw.as_fd());
    let (mut pieces, mut done) = (Vec::new(), None);
    let deadline = Instant::now() + Duration::from_secs(2);
    while done.is_none() && Instant::now() < deadline {
        poller.wait(Some(Duration::from_millis(50))).unwrap();
        raw.recv_batch(&mut batch).unwrap();
        for (from, segment) in batch.iter() {
            pieces.push(segment.len());
            let sum = pseudo_header_sum(from.ip(), dst, segment.len() as u32).unwrap();
            if segment[16..18] == sum.to_be_bytes() {
                *partial += 1;
            }
            let now = Instant::now();
            if let Some(frame) = reassembler.push(from.ip(), dst, segment, now).unwrap() {
                done = Some(frame.to_vec());
            }
        }
    }
    (done, pieces)
}

/// With the veth's offloads as created (TSO and checksum offload on) a frame crosses the veth
/// as one GSO packet when it fits the veth's gso_max_size, and arrives whole, with a partial
/// checksum; the largest frame does not fit and is cut before the veth, its segments'
/// checksums left partial. The receiver's reassembler takes both. Then with GRO on the receiving
/// veth the kernel merges the segments again: the raw socket gets each frame in one piece of up
/// to 64 KiB (checksum partial, from `tcp4_gro_complete`), reassembled alike.
#[test]
fn kernel_cut_frames_are_reassembled_with_partial_checksums() {
    let net = net("rx");
    let tso = run_in(net.a.name(), SttTso::open).unwrap().unwrap();
    let raw = run_in(net.b.name(), || RawUnderlay::bind(IpAddr::V4(B), 6))
        .unwrap()
        .unwrap();
    let outer = TsoOuter {
        src: A,
        dst: B,
        ttl: 64,
        tos: 0,
        df: true,
    };
    let (src, dst) = (IpAddr::V4(A), IpAddr::V4(B));
    let mut kern = Segmenter::new(7);
    let mut reassembler = Reassembler::new(ReassemblyLimits::default());
    let mut partial = 0;
    for gro in [false, true] {
        if gro {
            // veth_xmit hands a frame to the peer's GRO only when the sending veth cannot
            // send GSO frames (veth_skb_is_eligible_for_gro): TSO off on va, GRO on on vb.
            ethtool(&net.a, &["-K", "va", "tso", "off"]);
            ethtool(&net.b, &["-K", "vb", "gro", "on"]);
        }
        for len in [MAX_TSO_FRAME, 40_000, 500] {
            let f = frame(len);
            let header = kern.offload_header(f.len(), src, dst, SPORT).unwrap();
            tso.send(&outer, &header, pieces(&f), MSS).unwrap();
            let (done, pieces) = receive(&raw, &mut reassembler, dst, &mut partial);
            assert_eq!(
                done.as_deref(),
                Some(&f[..]),
                "gro {gro} len {len}: pieces {pieces:?}"
            );
            let segments = len.div_ceil(usize::from(MSS));
            let cut = pieces.len() == segments && pieces.iter().all(|&p| p <= 1480);
            match (gro, len) {
                // 65535 bytes of IP and 14 of Ethernet exceed the veth's gso_max_size
                // (65536): segmented before the veth (gso_features_check), in MSS pieces.
                (false, MAX_TSO_FRAME) => assert!(cut, "len {len}: {pieces:?}"),
                // Smaller: the GSO packet crosses the veth whole, one 40 KiB datagram.
                (false, _) => assert_eq!(pieces, [20 + len], "len {len}"),
                // GRO on the receiving veth merges the segments again into a few pieces.
                (true, 500) => assert_eq!(pieces, [520]),
                (true, _) => {
                    assert!(pieces.len() < segments, "gro merged nothing: {pieces:?}");
                    assert!(pieces.iter().any(|&p| p > 1480), "len {len}: {pieces:?}");
                }
            }
            println!("gro {gro} frame {len}: pieces {pieces:?}");
        }
    }
    let c = reassembler.counters();
    assert_eq!((c.bad_checksum, c.in_progress), (0, 0), "{c:?}");
    assert_eq!(c.frames_single + c.frames_reassembled, 6, "{c:?}");
    assert!(
        partial > 0,
        "no piece came with a partial checksum: the case is not tested"
    );
}

/// With `net.ipv4.conf.all.rp_filter` on, the kernel would drop every frame written to the
/// TUN (an address-less device fails the reverse-path check): the TUN is refused at open, with
/// the sysctl named, and nothing is left behind; nvod then segments in software.
#[test]
fn open_refuses_when_rp_filter_is_on() {
    let ns = NamedNetns::create(&unique_name("nvsttrp")).expect("root needed");
    let sysctl = |value: &str| {
        let out = Command::new("ip")
            .args(["netns", "exec", ns.name(), "sysctl", "-w"])
            .arg(format!("net.ipv4.conf.all.rp_filter={value}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    sysctl("1");
    let err = run_in(ns.name(), SttTso::open).unwrap().unwrap_err();
    assert!(err.to_string().contains("rp_filter is 1"), "{err}");
    assert!(!ns.ip(&["link", "show"]).unwrap().contains("nvostt"));
    sysctl("0");
    let tso = run_in(ns.name(), SttTso::open).unwrap().unwrap();
    let links = ns.ip(&["link", "show", tso.name()]).unwrap();
    assert!(links.contains("UP"), "{links}");
    drop(tso);
    assert!(
        !ns.ip(&["link", "show"]).unwrap().contains("nvostt"),
        "the tun outlived its fd"
    );
}
