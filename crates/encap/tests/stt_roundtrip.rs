//! STT segmentation → reassembly round trips: every frame size 18..=65535, IPv4 and IPv6
//! underlays, segments reordered, duplicated and lost; segment checksums checked with smoltcp's
//! own TCP implementation, independently of nvo.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nvo_encap::stt::{stt_header, Reassembler, ReassemblyLimits, Segmenter, SttDrop, SttMeta};
use proptest::prelude::*;
use smoltcp::wire::{IpAddress, TcpPacket};
use std::net::IpAddr;
use std::time::{Duration, Instant};

const V4: (&str, &str) = ("192.0.2.1", "192.0.2.2");
const V6: (&str, &str) = ("2001:db8::1", "2001:db8::2");

fn addrs(v6: bool) -> (IpAddr, IpAddr) {
    let (a, b) = if v6 { V6 } else { V4 };
    (a.parse().unwrap(), b.parse().unwrap())
}

/// An STT frame of `len` bytes: a real header, then a patterned "inner frame".
fn frame(len: usize, context: u64) -> Vec<u8> {
    let mut f = stt_header(context, SttMeta::default()).unwrap().to_vec();
    f.extend((0..len - f.len()).map(|i| (i * 7 + i / 251) as u8));
    f
}

/// A deterministic shuffle (xorshift), so that proptest shrinks on the seed.
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

fn segments(frame: &[u8], v6: bool, max_payload: usize) -> Vec<Vec<u8>> {
    let (src, dst) = addrs(v6);
    let mut s = Segmenter::new(0xdead_beef);
    let segs = s.segment(frame, src, dst, 49152, max_payload).unwrap();
    segs.map(<[u8]>::to_vec).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn frames_survive_reordering_and_duplication(
        len in prop_oneof![18usize..200, 200usize..=65535, Just(65535usize)],
        max_payload in prop_oneof![512usize..9000, Just(65515usize)],
        v6 in any::<bool>(),
        seed in any::<u64>(),
        dups in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let f = frame(len, 42);
        let (src, dst) = addrs(v6);
        let mut order = segments(&f, v6, max_payload);
        let count = order.len();
        prop_assert_eq!(count, len.div_ceil(max_payload));
        shuffle(&mut order, seed);
        // Duplicates of earlier segments, each right after its original: all before the
        // last original, which is the one that completes the frame.
        let last = order.pop().unwrap();
        for d in &dups {
            if !order.is_empty() {
                let p = d.index(order.len());
                order.insert(p + 1, order[p].clone());
            }
        }
        let mut r = Reassembler::new(ReassemblyLimits::default());
        let t = Instant::now();
        for seg in &order {
            match r.push(src, dst, seg, t) {
                Ok(None) | Err(SttDrop::Duplicate) => {}
                other => prop_assert!(false, "early result {:?}", other.map(|o| o.map(<[u8]>::len))),
            }
        }
        let out = r.push(src, dst, &last, t).unwrap().map(<[u8]>::to_vec);
        prop_assert_eq!(out.as_deref(), Some(&f[..]));
        let c = r.counters();
        let dup_count = (order.len() + 1 - count) as u64;
        prop_assert_eq!(c.duplicates, if count > 1 { dup_count } else { 0 });
        prop_assert_eq!((c.frames_single, c.frames_reassembled), if count == 1 { (1, 0) } else { (0, 1) });
        prop_assert_eq!((c.in_progress, c.bytes_buffered), (0, 0));
        prop_assert_eq!(c.segments, order.len() as u64 + 1);
    }

    #[test]
    fn a_lost_segment_never_completes_and_expires(
        len in 1000usize..=65535,
        seed in any::<u64>(),
        lost in any::<prop::sample::Index>(),
    ) {
        let f = frame(len, 7);
        let (src, dst) = addrs(false);
        let mut order = segments(&f, false, 900);
        order.remove(lost.index(order.len()));
        shuffle(&mut order, seed);
        let mut r = Reassembler::new(ReassemblyLimits::default());
        let t = Instant::now();
        for seg in &order {
            prop_assert_eq!(r.push(src, dst, seg, t), Ok(None));
        }
        prop_assert_eq!(r.counters().bytes_buffered, len as u64);
        prop_assert_eq!(r.expire(t + Duration::from_secs(30)), 1);
        let c = r.counters();
        prop_assert_eq!((c.expired, c.in_progress, c.bytes_buffered), (1, 0, 0));
        prop_assert_eq!(c.frames_reassembled, 0);
    }

    #[test]
    fn smoltcp_accepts_every_checksum(len in 18usize..=65535, max_payload in 100usize..9000, v6 in any::<bool>()) {
        let (src, dst) = addrs(v6);
        let (s, d) = (IpAddress::from(src), IpAddress::from(dst));
        for seg in segments(&frame(len, 1), v6, max_payload) {
            prop_assert!(TcpPacket::new_checked(&seg[..]).unwrap().verify_checksum(&s, &d));
        }
    }
}

#[test]
fn every_small_size_round_trips_in_order() {
    let (src, dst) = addrs(true);
    let mut s = Segmenter::new(1);
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let t = Instant::now();
    for len in 18..=400 {
        let f = frame(len, len as u64);
        let segs: Vec<Vec<u8>> = s
            .segment(&f, src, dst, 1, 64)
            .unwrap()
            .map(<[u8]>::to_vec)
            .collect();
        let (last, rest) = segs.split_last().unwrap();
        for seg in rest {
            assert_eq!(r.push(src, dst, seg, t), Ok(None));
        }
        assert_eq!(r.push(src, dst, last, t), Ok(Some(&f[..])), "len {len}");
    }
    assert_eq!(r.counters().in_progress, 0);
}

#[test]
fn checksum_is_over_the_outer_pseudo_header() {
    let (src, dst) = addrs(false);
    let segs = segments(&frame(3000, 9), false, 1400);
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let t = Instant::now();
    // Same bytes, addresses swapped: the pseudo-header differs only in order, which the
    // ones'-complement sum cannot see, so use a different destination instead.
    let other: IpAddr = "192.0.2.3".parse().unwrap();
    assert_eq!(r.push(src, other, &segs[0], t), Err(SttDrop::BadChecksum));
    let mut corrupt = segs[1].clone();
    corrupt[700] ^= 0x40;
    assert_eq!(r.push(src, dst, &corrupt, t), Err(SttDrop::BadChecksum));
    assert_eq!(r.counters().bad_checksum, 2);
    assert_eq!(r.counters().in_progress, 0, "bad segments start no frame");
    let smol = TcpPacket::new_checked(&corrupt[..]).unwrap();
    assert!(!smol.verify_checksum(&src.into(), &dst.into()));
}

/// What a raw socket gets after GRO merged segments (or after the kernel's GSO cut a local
/// frame that crossed a veth with checksum offload): one segment covering several, whose
/// checksum field holds the bare pseudo-header sum for its length. Taken as verified; the
/// same form for another length or address is a bad checksum.
#[test]
fn a_partial_checksum_over_the_segments_length_is_accepted() {
    use nvo_encap::stt::pseudo_header_sum;
    for v6 in [false, true] {
        let (src, dst) = addrs(v6);
        let f = frame(60_000, 5);
        let segs = segments(&f, v6, 1400);
        // Merge the first 20 segments as tcp_gro_receive would: first header, payloads joined.
        let mut merged = segs[0][..20].to_vec();
        for seg in &segs[..20] {
            merged.extend_from_slice(&seg[20..]);
        }
        let mut r = Reassembler::new(ReassemblyLimits::default());
        let t = Instant::now();
        let mut wrong = merged.clone();
        let bad = pseudo_header_sum(src, dst, merged.len() as u32 + 1).unwrap();
        wrong[16..18].copy_from_slice(&bad.to_be_bytes());
        assert_eq!(
            r.push(src, dst, &wrong, t),
            Err(SttDrop::BadChecksum),
            "v6 {v6}"
        );
        let partial = pseudo_header_sum(src, dst, merged.len() as u32).unwrap();
        merged[16..18].copy_from_slice(&partial.to_be_bytes());
        let other: IpAddr = if v6 { "2001:db8::3" } else { "192.0.2.3" }
            .parse()
            .unwrap();
        assert_eq!(r.push(src, other, &merged, t), Err(SttDrop::BadChecksum));
        assert_eq!(r.push(src, dst, &merged, t), Ok(None));
        for seg in &segs[20..segs.len() - 1] {
            assert_eq!(r.push(src, dst, seg, t), Ok(None));
        }
        let last = segs.last().unwrap();
        assert_eq!(r.push(src, dst, last, t), Ok(Some(&f[..])), "v6 {v6}");
        assert_eq!(r.counters().bad_checksum, 2);
    }
}
