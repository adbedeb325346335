//! Tests of the coalescer: what it merges comes apart again, by the kernel's rules
//! (`FrameMeta::finish`, which cuts as `tcp_gso_segment` does), into exactly the segments that
//! went in; what TCP would not merge is never merged.

use super::*;
use crate::vnet::tests::ip_builder;
use crate::vnet::{Segmenter, VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6};
use proptest::prelude::*;

/// A flow's TSO frame of `payload` bytes from sequence number `seq`, cut by the kernel's rules
/// into segments of `mss` (IPv4 IDs counting up from `id`, PSH on the last if `psh`).
fn segments(v6: bool, payload: usize, mss: u16, seq: u32, id: u16, psh: bool) -> Vec<Vec<u8>> {
    let mut b = ip_builder(v6).tcp(40000, 5201, seq, 502).ack(77);
    if psh {
        b = b.psh();
    }
    let data: Vec<u8> = (0..payload).map(|i| (i * 7 + 3) as u8).collect();
    let mut frame = Vec::new();
    b.write(&mut frame, &data).unwrap();
    let l4 = if v6 { 54 } else { 34 };
    if !v6 {
        frame[18..20].copy_from_slice(&id.to_be_bytes());
        frame[20] = 0x40; // DF
    }
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        gso_size: mss,
        csum_start: l4 as u16,
        csum_offset: 16,
        ..VnetHdr::default()
    };
    let seg = Segmenter::new(&frame, &hdr).unwrap();
    let mut out = vec![0; MAX_FRAME];
    (0..seg.count())
        .map(|k| {
            let len = seg.write(&frame, k, &mut out).unwrap();
            out[..len].to_vec()
        })
        .collect()
}

/// Recomputes the IPv4 header checksum and the TCP checksum of an (untagged) frame.
fn fix_checksums(frame: &mut [u8]) {
    let v4 = frame[12..14] == [0x08, 0x00];
    let (l3, l4) = (14, if v4 { 34 } else { 54 });
    if v4 {
        frame[l3 + 10..l3 + 12].fill(0);
        let s = !fold(sum_words_fast(&frame[l3..l3 + 20], 0));
        frame[l3 + 10..l3 + 12].copy_from_slice(&s.to_be_bytes());
    }
    frame[l4 + 16..l4 + 18].fill(0);
    let addrs = if v4 {
        l3 + 12..l3 + 20
    } else {
        l3 + 8..l3 + 40
    };
    let acc = sum_words_fast(&frame[addrs], 6 + (frame.len() - l4) as u64);
    let s = !fold(sum_words_fast(&frame[l4..], acc));
    frame[l4 + 16..l4 + 18].copy_from_slice(&s.to_be_bytes());
}

/// Pushes every frame to `dest` 1 and flushes; returns what came out, each re-cut by the
/// kernel's rules into complete segments, with the number of segments it held.
fn run(frames: &[Vec<u8>]) -> Vec<(Vec<Vec<u8>>, usize)> {
    run_to(&frames.iter().map(|f| (1, f.clone())).collect::<Vec<_>>())
        .into_iter()
        .map(|(_, segs, n)| (segs, n))
        .collect()
}

fn run_to(frames: &[(u32, Vec<u8>)]) -> Vec<(u32, Vec<Vec<u8>>, usize)> {
    let mut c = Coalescer::new(4);
    let mut out = Vec::new();
    let mut emit = |e: Coalesced<'_>| {
        let mut segs = Vec::new();
        let mut scratch = vec![0; MAX_FRAME];
        e.meta
            .finish(e.frame, &mut scratch, &mut |f| {
                segs.push(f.to_vec());
                Ok(())
            })
            .unwrap();
        assert_eq!(segs.len(), e.segments, "segments as counted");
        let lens: Vec<usize> = e.segment_lens().collect();
        assert_eq!(lens, segs.iter().map(Vec::len).collect::<Vec<_>>());
        out.push((e.dest, segs, e.segments));
    };
    for (dest, f) in frames {
        c.push(*dest, f, &mut emit);
    }
    c.flush(&mut emit);
    assert!(c.is_empty());
    out
}

#[test]
fn a_flow_becomes_one_frame_and_comes_apart_as_it_went_in() {
    for v6 in [false, true] {
        let segs = segments(v6, 20_000, 1400, 1_000, 9, true);
        assert_eq!(segs.len(), 15);
        let out = run(&segs);
        assert_eq!(out.len(), 1, "one frame (v6 {v6})");
        assert_eq!(out[0].1, 15);
        assert_eq!(out[0].0, segs, "byte-equal segments (v6 {v6})");
    }
}

#[test]
fn the_emitted_frame_carries_tso_metadata() {
    let segs = segments(false, 5000, 1000, 1, 0, false);
    let mut c = Coalescer::new(2);
    for s in &segs {
        c.push(3, s, &mut |_| panic!("nothing out before the flush"));
    }
    let mut seen = 0;
    c.flush(&mut |e| {
        seen += 1;
        assert_eq!(e.dest, 3);
        let gso = e.meta.gso.unwrap();
        assert_eq!((gso.kind, gso.size), (GsoKind::Tcp4, 1000));
        assert_eq!(e.meta.csum, Some((34, 16)));
        assert_eq!(e.frame.len(), 54 + 5000);
        // The header the port writes says the same; IPv4 total length covers the frame.
        let hdr = VnetHdr::parse(&e.meta.vnet_header(e.frame).unwrap());
        assert_eq!(
            (hdr.gso_type, hdr.gso_size, hdr.hdr_len),
            (GSO_TCPV4, 1000, 54)
        );
        assert_eq!(
            u16::from_be_bytes([e.frame[16], e.frame[17]]),
            20 + 20 + 5000
        );
        assert_eq!(
            fold(sum_words_fast(&e.frame[14..34], 0)),
            0xffff,
            "ip checksum"
        );
    });
    assert_eq!((seen, c.merged()), (1, 4));
}

/// A named change to one segment.
type Change = (&'static str, fn(&mut Vec<u8>));

/// Each change of one segment (its checksums fixed after) that TCP would not merge, and the
/// segment it is made to (index 2 of 5).
fn refused_changes() -> Vec<Change> {
    vec![
        ("syn", |f| f[47] |= 0x02),
        ("fin", |f| f[47] |= 0x01),
        ("rst", |f| f[47] |= 0x04),
        ("urg", |f| f[47] |= 0x20),
        ("ece", |f| f[47] |= 0x40),
        ("cwr", |f| f[47] |= 0x80),
        ("no ack", |f| f[47] &= !0x10),
        ("other source port", |f| f[34] ^= 1),
        ("other destination address", |f| f[33] ^= 1),
        ("other source mac", |f| f[11] ^= 1),
        ("other ack number", |f| f[45] ^= 1),
        ("other window", |f| f[49] ^= 1),
        ("tos", |f| f[15] ^= 4),
        ("ttl", |f| f[22] -= 1),
        ("df", |f| f[20] ^= 0x40),
        ("ip id not counting up", |f| f[19] ^= 0x10),
        ("sequence gap", |f| f[41] ^= 0x10),
        ("ip fragment", |f| f[20] |= 0x20),
    ]
}

#[test]
fn what_tcp_would_not_merge_stays_apart() {
    for (what, change) in refused_changes() {
        let mut segs = segments(false, 5 * 1000, 1000, 5000, 100, false);
        change(&mut segs[2]);
        fix_checksums(&mut segs[2]);
        let out = run(&segs);
        let back: Vec<Vec<u8>> = out.iter().flat_map(|(s, _)| s.clone()).collect();
        // The changed segment leaves alone and as it came; the rest still merge around it.
        assert!(
            out.iter().any(|(s, n)| *n == 1 && s[0] == segs[2]),
            "{what}: the changed segment alone"
        );
        assert!(
            out.iter().all(|(s, n)| *n == 1 || !s.contains(&segs[2])),
            "{what}"
        );
        if !matches!(what, "sequence gap") {
            assert_eq!(back.len(), 5, "{what}");
        }
        let mut sorted_in = segs.clone();
        let mut sorted_out = back.clone();
        sorted_in.sort();
        sorted_out.sort();
        assert_eq!(sorted_in, sorted_out, "{what}: every byte as it came");
        assert_eq!(out[0].1, 2, "{what}: the two before merge");
    }
}

#[test]
fn other_options_or_a_bad_checksum_are_not_merged() {
    // Options: a timestamp option whose value differs in one segment.
    let mut segs = segments(false, 3000, 1000, 1, 0, false);
    for s in &mut segs {
        // Grow the TCP header by 12 bytes: NOP NOP TS(10).
        let mut opt = vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        s.splice(54..54, opt.drain(..));
        s[46] = 8 << 4;
        let total = (s.len() - 14) as u16;
        s[16..18].copy_from_slice(&total.to_be_bytes());
    }
    segs[1][63] = 9;
    for s in &mut segs {
        fix_checksums(s);
    }
    let out = run(&segs);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![1, 1, 1]);

    // A TCP checksum that does not verify: the segment goes as it is (with its bad checksum,
    // for the receiver to drop), never inside a frame whose checksum the kernel would remake.
    let mut segs = segments(true, 3000, 1000, 1, 0, false);
    segs[1][70] ^= 0xff;
    let out = run(&segs);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![1, 1, 1]);
    assert_eq!(out[1].0[0], segs[1]);
    // An IPv4 header checksum that does not verify.
    let mut segs = segments(false, 3000, 1000, 1, 0, false);
    segs[2][24] ^= 1;
    let out = run(&segs);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![2, 1]);
}

#[test]
fn a_short_segment_or_psh_closes_the_frame_and_a_larger_one_starts_anew() {
    // 1000, 1000, 500 (closes), then 1000 more: two frames.
    let a = segments(false, 2500, 1000, 1, 0, false);
    let b = segments(false, 1000, 1000, 2501, 3, false);
    let all: Vec<Vec<u8>> = a.iter().chain(b.iter()).cloned().collect();
    let out = run(&all);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![3, 1]);
    // 500 then 1000: a larger segment than the first never follows it.
    let a = segments(false, 500, 500, 1, 0, false);
    let b = segments(false, 2000, 1000, 501, 1, false);
    let all: Vec<Vec<u8>> = a.iter().chain(b.iter()).cloned().collect();
    let out = run(&all);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![1, 2]);
    // PSH on the second of four: the frame closes after it.
    let a = segments(false, 2000, 1000, 1, 0, true);
    let b = segments(false, 2000, 1000, 2001, 2, false);
    let all: Vec<Vec<u8>> = a.iter().chain(b.iter()).cloned().collect();
    let out = run(&all);
    assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![2, 2]);
    assert_eq!(out[0].0, a);
}

#[test]
fn other_destinations_and_other_traffic_pass_and_frames_stay_bounded() {
    // The same segments to two ports, interleaved: one frame per port.
    let segs = segments(false, 4000, 1000, 1, 0, false);
    let frames: Vec<(u32, Vec<u8>)> = segs
        .iter()
        .flat_map(|s| [(0, s.clone()), (1, s.clone())])
        .collect();
    let out = run_to(&frames);
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|o| o.2 == 4 && o.1 == segs));
    assert_ne!(out[0].0, out[1].0);
    // ARP-like and UDP frames pass at once.
    let mut udp = Vec::new();
    ip_builder(false).udp(1, 2).write(&mut udp, b"x").unwrap();
    let mut c = Coalescer::new(1);
    let mut passed = 0;
    assert_eq!(c.push(1, &udp, &mut |_| passed += 1), Pushed::Passed);
    assert_eq!(c.push(1, &[0; 10], &mut |_| passed += 1), Pushed::Passed);
    assert_eq!(passed, 2);
    // A frame never grows past 64 KiB of IP packet: 60 segments of 1400 make two frames.
    let mut segs = segments(false, 40 * 1400, 1400, 1, 0, false);
    segs.extend(segments(false, 20 * 1400, 1400, 1 + 40 * 1400, 40, false));
    let out = run(&segs);
    assert_eq!(out.iter().map(|o| o.1).sum::<usize>(), 60);
    assert_eq!(out.len(), 2);
    assert!(out[0].1 == (MAX_COALESCED - 40) / 1400);
    // One slot, two interleaved flows: each push of the other flow flushes; order per flow kept.
    let a = segments(false, 3000, 1000, 1, 0, false);
    let mut b = segments(false, 3000, 1000, 1, 0, false);
    for s in &mut b {
        s[35] ^= 1; // other source port
        fix_checksums(s);
    }
    let mut c = Coalescer::new(1);
    let mut out = Vec::new();
    for (x, y) in a.iter().zip(b.iter()) {
        c.push(1, x, &mut |e| out.push(e.frame.to_vec()));
        c.push(1, y, &mut |e| out.push(e.frame.to_vec()));
    }
    c.flush(&mut |e| out.push(e.frame.to_vec()));
    let expect: Vec<Vec<u8>> = a
        .iter()
        .zip(b.iter())
        .flat_map(|(x, y)| [x.clone(), y.clone()])
        .collect();
    assert_eq!(out, expect);
}

#[test]
fn flush_flow_lets_a_frame_go_another_way_without_overtaking() {
    let segs = segments(false, 3000, 1000, 1, 0, false);
    let mut c = Coalescer::new(2);
    c.push(1, &segs[0], &mut |_| panic!("held"));
    c.push(1, &segs[1], &mut |_| panic!("held"));
    let mut out = 0;
    c.flush_flow(2, &segs[2], &mut |_| out += 1);
    assert_eq!(out, 0, "another destination's flow");
    c.flush_flow(1, &segs[2], &mut |e| out += e.segments);
    assert_eq!(out, 2);
    assert!(c.is_empty());
}

proptest! {
    /// Any interleaving of two flows' segments, some changed the way TCP would refuse to merge,
    /// comes out, flow by flow, exactly as it went in once the kernel cuts it again.
    #[test]
    fn coalescing_is_invisible_after_segmentation(
        v6 in any::<bool>(),
        len_a in 1usize..30_000,
        len_b in 1usize..10_000,
        mss in 200u16..1500,
        order in proptest::collection::vec(any::<bool>(), 0..80),
        changes in proptest::collection::vec((0usize..40, 0usize..18), 0..4),
        psh in any::<bool>(),
    ) {
        let a = segments(v6, len_a, mss, 7, 1, psh);
        let mut b = segments(v6, len_b, mss, 7, 1, false);
        let port = if v6 { 54 } else { 34 };
        for s in &mut b {
            s[port + 1] ^= 0x55; // other source port: another flow
            fix_checksums(s);
        }
        let mut a = a;
        if !v6 {
            let table = refused_changes();
            for (at, which) in changes {
                if let Some(s) = a.get_mut(at) {
                    (table[which].1)(s);
                    fix_checksums(s);
                }
            }
        }
        // Interleave by `order`, then whatever is left of each.
        let (mut ia, mut ib) = (a.iter(), b.iter());
        let mut frames = Vec::new();
        for pick in order {
            if let Some(f) = if pick { ia.next() } else { ib.next() } {
                frames.push(f.clone());
            }
        }
        frames.extend(ia.cloned());
        frames.extend(ib.cloned());
        let out = run(&frames);
        let back: Vec<Vec<u8>> = out.into_iter().flat_map(|(s, _)| s).collect();
        // A flow: MACs, addresses, ports (a change may make a segment its own flow).
        let key = |f: &Vec<u8>| {
            let addrs = if v6 { 22..54 } else { 26..34 };
            [&f[..12], &f[addrs], &f[port..port + 4]].concat()
        };
        let mut flows: Vec<Vec<u8>> = frames.iter().map(key).collect();
        flows.sort();
        flows.dedup();
        for flow in flows {
            let sent: Vec<&Vec<u8>> = frames.iter().filter(|f| key(f) == flow).collect();
            let got: Vec<&Vec<u8>> = back.iter().filter(|f| key(f) == flow).collect();
            prop_assert_eq!(sent, got);
        }
        prop_assert_eq!(back.len(), frames.len());
    }
}

#[test]
fn the_oldest_held_frame_makes_room_and_flush_goes_oldest_first() {
    // Three flows (other source ports), two slots.
    let flow = |k: u8| {
        let mut segs = segments(false, 2000, 1000, 1, 0, false);
        for s in &mut segs {
            s[35] ^= k;
            fix_checksums(s);
        }
        segs
    };
    let (a, b, c) = (flow(0), flow(1), flow(2));
    let mut co = Coalescer::new(2);
    let mut out = Vec::new();
    co.push(1, &a[0], &mut |_| panic!("held"));
    co.push(1, &b[0], &mut |_| panic!("held"));
    // Appending to a does not make it younger: it was started first.
    assert_eq!(co.push(1, &a[1], &mut |_| panic!("held")), Pushed::Appended);
    co.push(1, &c[0], &mut |e| out.push((e.frame[35], e.segments)));
    assert_eq!(out, [(a[0][35], 2)], "a made room");
    co.flush(&mut |e| out.push((e.frame[35], e.segments)));
    assert_eq!(out, [(a[0][35], 2), (b[0][35], 1), (c[0][35], 1)]);
}
