//! STT reassembly rules and bounds: malformed, foreign and overlapping segments, duplicates,
//! expiry at exactly the timeout, LRU eviction order, and a flood of never-completed frames
//! that stays within `max_bytes` while a good frame still gets through.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nvo_encap::stt::{Reassembler, ReassemblyLimits, Segmenter, SttDrop, MAX_SPANS};
use nvo_wire::std_wire::IpAddress;
use nvo_wire::stt::{SttSegmentPacket, SttSegmentRepr, TCP_HEADER_LEN};
use std::net::IpAddr;
use std::time::{Duration, Instant};

fn src() -> IpAddr {
    "198.51.100.1".parse().unwrap()
}

fn dst() -> IpAddr {
    "198.51.100.2".parse().unwrap()
}

/// A segment with a correct checksum and any header values, however inconsistent.
fn craft(frame_id: u32, frame_len: u16, offset: u16, data: &[u8]) -> Vec<u8> {
    craft_port(7471, frame_id, frame_len, offset, data)
}

fn craft_port(port: u16, frame_id: u32, frame_len: u16, offset: u16, data: &[u8]) -> Vec<u8> {
    let mut buf = vec![0; TCP_HEADER_LEN + data.len()];
    let mut p = SttSegmentPacket::new_unchecked(&mut buf[..]);
    let repr = SttSegmentRepr {
        src_port: 1234,
        dst_port: port,
        frame_len,
        fragment_offset: offset,
        frame_id,
    };
    repr.emit(&mut p).unwrap();
    p.payload_mut().copy_from_slice(data);
    p.fill_checksum(&IpAddress::from(src()), &IpAddress::from(dst()))
        .unwrap();
    buf
}

/// A frame's segments (three of 100 bytes for the default 300-byte frame).
fn frame_segments(frame_id: u32, len: u16) -> (Vec<u8>, Vec<Vec<u8>>) {
    let data: Vec<u8> = (0..len).map(|i| (i as u8) ^ (frame_id as u8)).collect();
    let segs = (0..len)
        .step_by(100)
        .map(|o| {
            let end = (o + 100).min(len);
            craft(frame_id, len, o, &data[usize::from(o)..usize::from(end)])
        })
        .collect();
    (data, segs)
}

fn push(r: &mut Reassembler, seg: &[u8], t: Instant) -> Result<Option<Vec<u8>>, SttDrop> {
    r.push(src(), dst(), seg, t).map(|o| o.map(<[u8]>::to_vec))
}

#[test]
fn single_segment_frame_is_returned_without_copying() {
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let seg = craft(5, 60, 0, &[0xab; 60]);
    let out = r.push(src(), dst(), &seg, Instant::now()).unwrap().unwrap();
    assert_eq!(out.as_ptr(), seg[TCP_HEADER_LEN..].as_ptr());
    assert_eq!(r.counters().frames_single, 1);
}

#[test]
fn malformed_and_foreign_segments_are_dropped_and_counted() {
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let t = Instant::now();
    let mut low_offset = craft(1, 60, 0, &[0; 60]);
    low_offset[12] = 0x40; // data offset 4 (the checksum does not matter: checked first)
    let cases = [
        craft(1, 60, 0, &[0; 60])[..19].to_vec(), // shorter than the TCP-like header
        craft(1, 60, 0, &[]),                     // no data
        low_offset,
        craft(1, 17, 0, &[0; 17]),  // frame shorter than the STT header
        craft(1, 60, 50, &[0; 20]), // past the frame length
    ];
    for seg in &cases {
        assert_eq!(push(&mut r, seg, t), Err(SttDrop::Malformed));
    }
    let v6: IpAddr = "2001:db8::1".parse().unwrap();
    let good = craft(1, 60, 0, &[0; 60]);
    assert_eq!(r.push(v6, dst(), &good, t), Err(SttDrop::Malformed));
    let ssh = craft_port(22, 1, 60, 0, &[0; 60]);
    assert_eq!(push(&mut r, &ssh, t), Err(SttDrop::NotStt));
    let c = r.counters();
    assert_eq!((c.malformed, c.not_stt, c.segments), (6, 1, 7));
    assert_eq!(c.in_progress, 0);
}

#[test]
fn inconsistent_frame_length_drops_the_segment_only() {
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let t = Instant::now();
    let (data, segs) = frame_segments(9, 300);
    assert_eq!(push(&mut r, &segs[0], t), Ok(None));
    let liar = craft(9, 400, 100, &data[100..200]);
    assert_eq!(push(&mut r, &liar, t), Err(SttDrop::Malformed));
    assert_eq!(push(&mut r, &segs[1], t), Ok(None));
    assert_eq!(push(&mut r, &segs[2], t), Ok(Some(data)));
}

#[test]
fn duplicates_are_ignored_and_overlaps_drop_the_frame() {
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let t = Instant::now();
    let (data, segs) = frame_segments(3, 300);
    assert_eq!(push(&mut r, &segs[1], t), Ok(None));
    assert_eq!(push(&mut r, &segs[1], t), Err(SttDrop::Duplicate));
    // A sub-range with the same bytes is a duplicate too.
    let inside = craft(3, 300, 120, &data[120..150]);
    assert_eq!(push(&mut r, &inside, t), Err(SttDrop::Duplicate));
    assert_eq!(push(&mut r, &segs[0], t), Ok(None));
    assert_eq!(push(&mut r, &segs[2], t), Ok(Some(data.clone())));
    assert_eq!(r.counters().duplicates, 2);

    // Partial overlap: the frame goes.
    assert_eq!(push(&mut r, &segs[0], t), Ok(None));
    let straddle = craft(3, 300, 50, &data[50..150]);
    assert_eq!(push(&mut r, &straddle, t), Err(SttDrop::Overlap));
    assert_eq!(r.counters().in_progress, 0);
    // Same range, other bytes: the frame goes.
    assert_eq!(push(&mut r, &segs[0], t), Ok(None));
    let forged = craft(3, 300, 0, &[0xee; 100]);
    assert_eq!(push(&mut r, &forged, t), Err(SttDrop::Overlap));
    // What is left of the frame starts afresh and cannot complete without the first part.
    assert_eq!(push(&mut r, &segs[1], t), Ok(None));
    assert_eq!(push(&mut r, &segs[2], t), Ok(None));
    let c = r.counters();
    assert_eq!((c.overlaps, c.frames_reassembled, c.in_progress), (2, 1, 1));
}

#[test]
fn too_many_holes_drop_the_frame() {
    let mut r = Reassembler::new(ReassemblyLimits::default());
    let t = Instant::now();
    // Every other byte of a 1000-byte frame: each arrival is one more range.
    for i in 0..MAX_SPANS as u16 {
        assert_eq!(push(&mut r, &craft(4, 1000, i * 2, &[0]), t), Ok(None));
    }
    let one_more = craft(4, 1000, MAX_SPANS as u16 * 2, &[0]);
    assert_eq!(push(&mut r, &one_more, t), Err(SttDrop::TooManyHoles));
    let c = r.counters();
    assert_eq!(
        (c.too_many_holes, c.in_progress, c.bytes_buffered),
        (1, 0, 0)
    );
}

#[test]
fn frames_expire_exactly_at_the_timeout_counted_from_the_first_segment() {
    let timeout = Duration::from_secs(30);
    let limits = ReassemblyLimits {
        timeout,
        ..ReassemblyLimits::default()
    };
    let mut r = Reassembler::new(limits);
    let t0 = Instant::now();
    let (data, segs) = frame_segments(11, 300);
    assert_eq!(push(&mut r, &segs[0], t0), Ok(None));
    let just_before = t0 + timeout - Duration::from_nanos(1);
    assert_eq!(r.expire(just_before), 0);
    // Touching the frame does not extend its life.
    assert_eq!(push(&mut r, &segs[1], just_before), Ok(None));
    assert_eq!(r.expire(t0 + timeout), 1);
    assert_eq!(r.counters().expired, 1);

    // Lazily, on push: the last segment then starts a new frame instead of completing one.
    assert_eq!(push(&mut r, &segs[0], t0), Ok(None));
    assert_eq!(push(&mut r, &segs[1], t0), Ok(None));
    assert_eq!(push(&mut r, &segs[2], t0 + timeout), Ok(None));
    let c = r.counters();
    assert_eq!((c.expired, c.in_progress, c.bytes_buffered), (2, 1, 300));
    // In time, it completes.
    assert_eq!(push(&mut r, &segs[0], t0 + timeout), Ok(None));
    assert_eq!(push(&mut r, &segs[1], t0 + timeout), Ok(Some(data)));
}

#[test]
fn eviction_takes_the_least_recently_touched_frame() {
    let limits = ReassemblyLimits {
        max_frames: 3,
        ..ReassemblyLimits::default()
    };
    let mut r = Reassembler::new(limits);
    let t = Instant::now();
    let frames: Vec<_> = (0..5).map(|id| frame_segments(id, 300)).collect();
    // Start A, B, C; touch A; start D (evicts B) and E (evicts C).
    for f in &frames[..3] {
        assert_eq!(push(&mut r, &f.1[0], t), Ok(None));
    }
    assert_eq!(push(&mut r, &frames[0].1[1], t), Ok(None));
    assert_eq!(push(&mut r, &frames[3].1[0], t), Ok(None));
    assert_eq!(push(&mut r, &frames[4].1[0], t), Ok(None));
    assert_eq!(r.counters().evicted, 2);
    // A, D and E are still there: each completes.
    assert_eq!(
        push(&mut r, &frames[0].1[2], t),
        Ok(Some(frames[0].0.clone()))
    );
    for f in &frames[3..] {
        assert_eq!(push(&mut r, &f.1[1], t), Ok(None));
        assert_eq!(push(&mut r, &f.1[2], t), Ok(Some(f.0.clone())));
    }
    // B lost its first part: it cannot complete.
    assert_eq!(push(&mut r, &frames[1].1[1], t), Ok(None));
    assert_eq!(push(&mut r, &frames[1].1[2], t), Ok(None));
    assert_eq!(r.counters().frames_reassembled, 3);
}

#[test]
fn a_frame_longer_than_max_bytes_is_refused() {
    let limits = ReassemblyLimits {
        max_bytes: 1000,
        ..ReassemblyLimits::default()
    };
    let mut r = Reassembler::new(limits);
    let seg = craft(1, 1001, 0, &[0; 500]);
    assert_eq!(push(&mut r, &seg, Instant::now()), Err(SttDrop::TooLarge));
    // A single-segment frame needs no buffer and is not limited.
    let single = craft(2, 1400, 0, &[0; 1400]);
    assert!(push(&mut r, &single, Instant::now()).unwrap().is_some());
    let c = r.counters();
    assert_eq!((c.too_large, c.in_progress), (1, 0));
}

#[test]
fn a_flood_of_unfinished_frames_stays_bounded_and_a_good_frame_gets_through() {
    let max_bytes = 1 << 20;
    let limits = ReassemblyLimits {
        max_bytes,
        ..ReassemblyLimits::default()
    };
    let mut r = Reassembler::new(limits);
    let t = Instant::now();
    let (src, dst) = (src(), dst());
    let good: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
    let mut s = Segmenter::new(1 << 31);
    let good_segs: Vec<Vec<u8>> = s
        .segment(&good, src, dst, 9, 1400)
        .unwrap()
        .map(<[u8]>::to_vec)
        .collect();
    let mut result = None;
    let mut flood_id = 0u32;
    for seg in &good_segs {
        // Between two good segments, many more new frames than fit, each never finished.
        for _ in 0..10 {
            let lure = craft(flood_id, 60_000, 0, &[0x55; 1400]);
            flood_id += 1;
            assert_eq!(r.push(src, dst, &lure, t), Ok(None));
            assert!(r.counters().bytes_buffered <= max_bytes as u64);
        }
        if let Some(frame) = r.push(src, dst, seg, t).unwrap() {
            result = Some(frame.to_vec());
        }
    }
    assert_eq!(result.as_deref(), Some(&good[..]));
    let c = r.counters();
    assert!(c.evicted > 0 && c.bytes_buffered <= max_bytes as u64);
    assert_eq!(c.in_progress * 60_000, c.bytes_buffered);
    assert_eq!(c.frames_reassembled, 1);
}

#[test]
fn counters_serialize_with_stable_names() {
    let r = Reassembler::new(ReassemblyLimits::default());
    let json = serde_json::to_value(r.counters()).unwrap();
    let names: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for drop in [
        SttDrop::Malformed,
        SttDrop::NotStt,
        SttDrop::BadChecksum,
        SttDrop::Duplicate,
        SttDrop::Overlap,
        SttDrop::TooLarge,
        SttDrop::TooManyHoles,
    ] {
        assert!(names.contains(&drop.name()), "{}", drop.name());
    }
    for gauge in [
        "in_progress",
        "bytes_buffered",
        "expired",
        "evicted",
        "segments",
    ] {
        assert!(names.contains(&gauge));
    }
}
