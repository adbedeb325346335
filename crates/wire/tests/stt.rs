//! STT against independent implementations. scapy has no STT layer, so:
//! - the STT packet that tests/vectors/gen_scapy.py builds by hand (stt_sample(), with the TCP
//!   checksum computed by scapy) is read from samples/tunnels.pcap, parsed, and re-emitted
//!   byte for byte;
//! - tshark's STT dissector reads back every field of frames nvo emits, reassembles a frame
//!   nvo split in two segments, and tshark's TCP dissector checks nvo's checksums.

// Helpers outside #[test] functions fail the test by panicking, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use nvo_wire::std_wire::{EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv4Packet};
use nvo_wire::stt::{
    frame_len, tcp_flags, SttFlags, SttPacket, SttRepr, SttSegmentPacket, SttSegmentRepr,
    STT_HEADER_LEN, TCP_HEADER_LEN,
};
use proptest::prelude::*;

fn outer_addrs() -> (IpAddress, IpAddress) {
    (IpAddress::Ipv4(OUTER_SRC), IpAddress::Ipv4(OUTER_DST))
}

/// The IPv4 payload of an Ethernet frame, if it carries protocol `proto`.
fn ipv4_payload(frame: &[u8], proto: IpProtocol) -> Option<Vec<u8>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    (ip.next_header() == proto).then(|| ip.payload().to_vec())
}

#[test]
fn scapy_sample_parses_and_re_emits() {
    let frames = read_pcap(&repo_root().join("samples/tunnels.pcap"));
    let segment = frames
        .iter()
        .filter_map(|f| ipv4_payload(f, IpProtocol::Tcp))
        .find(|s| s.len() >= 4 && s[2..4] == 7471u16.to_be_bytes())
        .expect("samples/tunnels.pcap holds gen_scapy.py's stt_sample()");
    let (src, dst) = outer_addrs();

    // The values stt_sample() packs.
    let p = SttSegmentPacket::new_checked(&segment[..]).unwrap();
    assert!(p.verify_checksum(&src, &dst), "scapy's TCP checksum");
    let inner_len = segment.len() - TCP_HEADER_LEN - STT_HEADER_LEN;
    let seg = SttSegmentRepr {
        src_port: 50030,
        dst_port: 7471,
        frame_len: frame_len(inner_len).unwrap(),
        fragment_offset: 0,
        frame_id: 0xabcd,
    };
    assert_eq!(SttSegmentRepr::parse(&p), Ok(seg));
    let stt = SttPacket::new_checked(p.payload()).unwrap();
    let hdr = SttRepr {
        flags: SttFlags::default(),
        l4_offset: 0,
        mss: 0,
        vlan: None,
        context_id: 0x1122_3344_5566_7788,
    };
    assert_eq!(SttRepr::parse(&stt), Ok(hdr));
    assert_eq!(&stt.payload()[6..12], &[0x52, 0x54, 0x00, 0xaa, 0xbb, 0x01]);

    // scapy's flags="PA" and window=0xFFFF are what nvo sends: the whole segment, checksum
    // included, comes out identical.
    let out = emit_segment(&seg, Some(&hdr), stt.payload());
    assert_eq!(out, segment);
}

/// One STT segment: the TCP-like header, the STT header if `hdr` is given, then `data`, with
/// the checksum filled for the common outer addresses.
fn emit_segment(seg: &SttSegmentRepr, hdr: Option<&SttRepr>, data: &[u8]) -> Vec<u8> {
    let stt_len = hdr.map_or(0, SttRepr::buffer_len);
    let mut buf = vec![0u8; seg.buffer_len() + stt_len + data.len()];
    let mut p = SttSegmentPacket::new_unchecked(&mut buf[..]);
    seg.emit(&mut p).unwrap();
    if let Some(hdr) = hdr {
        let mut stt = SttPacket::new_unchecked(p.payload_mut());
        hdr.emit(&mut stt).unwrap();
        stt.payload_mut().copy_from_slice(data);
    } else {
        p.payload_mut().copy_from_slice(data);
    }
    let (src, dst) = outer_addrs();
    p.fill_checksum(&src, &dst).unwrap();
    buf
}

const INNER_SRC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x11];
const INNER_DST: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x22];

fn flags(bits: u8) -> SttFlags {
    SttFlags::from_bits(bits)
}

/// Whole (single-segment) frames covering every field tshark shows.
fn whole_cases() -> Vec<(SttSegmentRepr, SttRepr)> {
    let seg = |src_port, frame_id| SttSegmentRepr {
        src_port,
        dst_port: nvo_wire::ports::STT,
        frame_len: 0, // set from the inner frame below
        fragment_offset: 0,
        frame_id,
    };
    vec![
        // The bytes of the unit test in src/stt.rs.
        (
            seg(50000, 0xabcd),
            SttRepr {
                flags: flags(0x02 | 0x04 | 0x08),
                l4_offset: 34,
                mss: 1448,
                vlan: Some((3, 100)),
                context_id: 0x1122_3344_5566_7788,
            },
        ),
        (
            seg(40000, 0),
            SttRepr {
                flags: flags(0),
                l4_offset: 0,
                mss: 0,
                vlan: None,
                context_id: 0,
            },
        ),
        (
            seg(49152, 1),
            SttRepr {
                flags: flags(0x01 | 0x04 | 0x08),
                l4_offset: 0,
                mss: 0,
                vlan: Some((3, 100)),
                context_id: 1,
            },
        ),
        (
            seg(65535, 0xffff_ffff),
            SttRepr {
                flags: flags(0x02 | 0x04 | 0x08),
                l4_offset: 34,
                mss: 1448,
                vlan: Some((7, 4095)),
                context_id: u64::MAX,
            },
        ),
        (
            seg(1, 0x8000_0000),
            SttRepr {
                flags: flags(0x02 | 0x08),
                l4_offset: 54,
                mss: 1440,
                vlan: Some((0, 1)),
                context_id: 0x8000_0000_0000_0000,
            },
        ),
        (
            seg(60000, 0x0102_0304),
            SttRepr {
                flags: flags(0x04),
                l4_offset: 0,
                mss: 0,
                vlan: Some((5, 0)),
                context_id: 0xdead_beef,
            },
        ),
    ]
}

const STT_FIELDS: [&str; 18] = [
    "stt.stream_id",
    "stt.dport",
    "stt.pkt_len",
    "stt.seg_off",
    "stt.pkt_id",
    "stt.tcp.flags.ack",
    "stt.tcp.flags.psh",
    "stt.tcp.window",
    "stt.version",
    "stt.flags.csum_verified",
    "stt.flags.csum_partial",
    "stt.flags.ipv4",
    "stt.flags.tcp",
    "stt.l4offset",
    "stt.mss",
    "stt.vlan.v",
    "stt.context_id",
    "eth.src",
];
// Checked separately: the VLAN word's parts, and the length of a frame tshark reassembled.
const MORE_FIELDS: [&str; 3] = ["stt.vlan.pcp", "stt.vlan.id", "stt.reassembled.length"];

fn stt_tshark(tag: &str, frames: &[Vec<u8>], extra: &[&str]) -> Vec<Vec<String>> {
    let fields: Vec<&str> = STT_FIELDS.iter().chain(&MORE_FIELDS).copied().collect();
    let mut args = vec!["-o", "ip.try_heuristic_first:TRUE"];
    args.extend_from_slice(extra);
    tshark_fields(tag, frames, &fields, &args)
}

fn assert_segment_row(seg: &SttSegmentRepr, row: &[String]) {
    let ctx = format!("{seg:?}: {row:?}");
    assert_eq!(tshark_num(&row[0]), u64::from(seg.src_port), "{ctx}");
    assert_eq!(tshark_num(&row[1]), u64::from(seg.dst_port), "{ctx}");
    assert_eq!(tshark_num(&row[2]), u64::from(seg.frame_len), "{ctx}");
    assert_eq!(tshark_num(&row[3]), u64::from(seg.fragment_offset), "{ctx}");
    assert_eq!(tshark_num(&row[4]), u64::from(seg.frame_id), "{ctx}");
    assert!(
        tshark_bool(&row[5]) && tshark_bool(&row[6]),
        "ACK|PSH {ctx}"
    );
    assert_eq!(tshark_num(&row[7]), 0xffff, "window {ctx}");
}

fn assert_header_row(hdr: &SttRepr, row: &[String]) {
    let ctx = format!("{hdr:?}: {row:?}");
    assert_eq!(tshark_num(&row[8]), 0, "version {ctx}");
    assert_eq!(tshark_bool(&row[9]), hdr.flags.checksum_verified, "{ctx}");
    assert_eq!(tshark_bool(&row[10]), hdr.flags.checksum_partial, "{ctx}");
    assert_eq!(tshark_bool(&row[11]), hdr.flags.ipv4, "{ctx}");
    assert_eq!(tshark_bool(&row[12]), hdr.flags.tcp, "{ctx}");
    assert_eq!(tshark_num(&row[13]), u64::from(hdr.l4_offset), "{ctx}");
    assert_eq!(tshark_num(&row[14]), u64::from(hdr.mss), "{ctx}");
    assert_eq!(tshark_num(&row[15]) != 0, hdr.vlan.is_some(), "V {ctx}");
    assert_eq!(tshark_num(&row[16]), hdr.context_id, "{ctx}");
    // The inner frame was handed to the Ethernet dissector.
    assert!(row[17].contains("52:54:00:00:00:11"), "inner frame {ctx}");
    // PCP and VLAN ID are decoded from the same word whether V is set or not.
    let (pcp, vid) = hdr.vlan.unwrap_or((0, 0));
    assert_eq!(tshark_num(&row[18]), u64::from(pcp), "pcp {ctx}");
    assert_eq!(tshark_num(&row[19]), u64::from(vid), "vlan id {ctx}");
}

#[test]
fn tshark_reads_what_nvo_emits() {
    let inner = inner_frame(INNER_SRC, INNER_DST);
    let cases: Vec<_> = whole_cases()
        .into_iter()
        .map(|(mut seg, hdr)| {
            seg.frame_len = frame_len(inner.len()).unwrap();
            (seg, hdr)
        })
        .collect();
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|(seg, hdr)| ipv4_frame(IpProtocol::Tcp, &emit_segment(seg, Some(hdr), &inner)))
        .collect();
    let rows = stt_tshark("stt", &frames, &[]);
    for ((seg, hdr), row) in cases.iter().zip(&rows) {
        assert_segment_row(seg, row);
        assert_header_row(hdr, row);
        // The frame length counts the STT header and the inner frame: exactly what follows the
        // TCP-like header, so tshark sees a whole frame and reassembles nothing.
        let after_tcp_header = STT_HEADER_LEN + inner.len();
        assert_eq!(tshark_num(&row[2]), after_tcp_header as u64, "{row:?}");
        assert_eq!(row[20], "", "whole frame reassembled: {row:?}");
    }
    assert_checksums_good("stt-csum", &frames);
}

/// tshark's TCP dissector (the STT heuristic off) validates nvo's checksums. Wireshark 4.0's
/// own STT checksum check is not used: it compares the folded sum of a correct segment (0)
/// with the checksum field and so calls every correct checksum bad, scapy's included.
fn assert_checksums_good(tag: &str, frames: &[Vec<u8>]) {
    let rows = tshark_fields(
        tag,
        frames,
        &["tcp.checksum.status"],
        &["-o", "tcp.check_checksum:TRUE"],
    );
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], "1", "frame {i}: tcp checksum status (1 = good)");
    }
}

/// A frame nvo splits into two segments: tshark reassembles it from frame length, offset and
/// frame id, which only works if nvo's frame_len / fragment_offset mean what the draft says.
#[test]
fn tshark_reassembles_two_segments() {
    let mut inner = inner_frame(INNER_SRC, INNER_DST);
    inner.extend((0..140u8).map(|i| i.wrapping_mul(7)));
    let hdr = SttRepr {
        flags: flags(0x01 | 0x04),
        l4_offset: 0,
        mss: 0,
        vlan: Some((2, 42)),
        context_id: 0x0a0b_0c0d_0e0f_1011,
    };
    let mut stt_frame = vec![0u8; STT_HEADER_LEN + inner.len()];
    let mut p = SttPacket::new_unchecked(&mut stt_frame[..]);
    hdr.emit(&mut p).unwrap();
    p.payload_mut().copy_from_slice(&inner);
    let split = 100;
    let first = SttSegmentRepr {
        src_port: 51000,
        dst_port: nvo_wire::ports::STT,
        frame_len: frame_len(inner.len()).unwrap(),
        fragment_offset: 0,
        frame_id: 0x1234_5678,
    };
    let second = SttSegmentRepr {
        fragment_offset: split as u16,
        ..first
    };
    let segments = [
        emit_segment(&first, None, &stt_frame[..split]),
        emit_segment(&second, None, &stt_frame[split..]),
    ];
    for s in &segments {
        let p = SttSegmentPacket::new_checked(&s[..]).unwrap();
        let repr = SttSegmentRepr::parse(&p).unwrap();
        assert_eq!(repr.is_first(), repr == first);
    }
    let frames: Vec<Vec<u8>> = segments
        .iter()
        .map(|s| ipv4_frame(IpProtocol::Tcp, s))
        .collect();

    let rows = stt_tshark("stt-reasm", &frames, &[]);
    assert_segment_row(&first, &rows[0]);
    assert_eq!(
        rows[0][16], "",
        "no STT header before reassembly: {:?}",
        rows[0]
    );
    assert_segment_row(&second, &rows[1]);
    assert_header_row(&hdr, &rows[1]);
    let stt_frame_len = (STT_HEADER_LEN + inner.len()) as u64;
    assert_eq!(tshark_num(&rows[0][2]), stt_frame_len, "{:?}", rows[0]);
    // Wireshark keeps the first segment's TCP-like header in the reassembled buffer.
    let reassembled = TCP_HEADER_LEN + STT_HEADER_LEN + inner.len();
    assert_eq!(
        tshark_num(&rows[1][20]),
        reassembled as u64,
        "{:?}",
        rows[1]
    );

    // Without reassembly tshark reads the first segment's STT header in place.
    let rows = stt_tshark("stt-noreasm", &frames, &["-o", "stt.reassemble:FALSE"]);
    assert_eq!(tshark_num(&rows[0][16]), hdr.context_id, "{:?}", rows[0]);
    assert_eq!(rows[1][16], "", "{:?}", rows[1]);
    assert_checksums_good("stt-reasm-csum", &frames);
}

#[test]
fn display() {
    let (seg, hdr) = &whole_cases()[0];
    assert_eq!(
        hdr.to_string(),
        "STT context=0x1122334455667788 mss=1448 l4=34 csum-partial ipv4 tcp vlan=100 pcp=3"
    );
    let seg = SttSegmentRepr {
        frame_len: 78,
        ..*seg
    };
    assert_eq!(
        seg.to_string(),
        "STT segment 50000 > 7471 frame=0xabcd len=78 off=0"
    );
}

#[test]
fn emitted_tcp_flags_are_ack_psh() {
    let seg = SttSegmentRepr {
        src_port: 1,
        dst_port: 2,
        frame_len: 18,
        fragment_offset: 0,
        frame_id: 3,
    };
    let out = emit_segment(&seg, None, &[]);
    let p = SttSegmentPacket::new_checked(&out[..]).unwrap();
    assert_eq!(p.tcp_flags(), tcp_flags::ACK | tcp_flags::PSH);
    assert_eq!((p.data_offset(), p.window()), (5, 0xffff));
}

#[test]
fn checksum_fills_verifies_and_refuses_mixed_families() {
    let seg = SttSegmentRepr {
        src_port: 50000,
        dst_port: 7471,
        frame_len: 78,
        fragment_offset: 0,
        frame_id: 0xabcd,
    };
    let mut buf = emit_segment(&seg, None, &[0x5a; 78]);
    let (src, dst) = outer_addrs();
    let mut p = SttSegmentPacket::new_unchecked(&mut buf[..]);
    assert!(p.checksum() != 0 && p.verify_checksum(&src, &dst));
    let elsewhere = IpAddress::Ipv4(nvo_wire::std_wire::Ipv4Address::new(192, 0, 2, 3));
    assert!(!p.verify_checksum(&src, &elsewhere));
    p.payload_mut()[40] ^= 1;
    assert!(!p.verify_checksum(&src, &dst));
    let v6 = IpAddress::Ipv6(nvo_wire::std_wire::Ipv6Address::LOCALHOST);
    assert!(p.fill_checksum(&src, &v6).is_err());
    assert!(!p.verify_checksum(&src, &v6));
}

#[test]
fn later_segment_must_end_inside_the_frame() {
    let repr = SttSegmentRepr {
        src_port: 50000,
        dst_port: 7471,
        frame_len: 78,
        fragment_offset: 68,
        frame_id: 0xabcd,
    };
    // 68 + 10 bytes end the 78-byte frame; one byte more runs past it.
    let fits = emit_segment(&repr, None, &[0; 10]);
    let p = SttSegmentPacket::new_checked(&fits[..]).unwrap();
    assert_eq!(p.seq_number(), (78 << 16) | 68);
    let parsed = SttSegmentRepr::parse(&p).unwrap();
    assert!(!parsed.is_first() && parsed == repr);
    let too_long = emit_segment(&repr, None, &[0; 11]);
    let p = SttSegmentPacket::new_checked(&too_long[..]).unwrap();
    assert!(matches!(
        SttSegmentRepr::parse(&p),
        Err(nvo_wire::Error::Invalid { .. })
    ));
}

/// A header as nvo emits it.
fn emitted_header(repr: &SttRepr) -> [u8; STT_HEADER_LEN] {
    let mut b = [0xffu8; STT_HEADER_LEN];
    repr.emit(&mut SttPacket::new_unchecked(&mut b[..]))
        .unwrap();
    b
}

#[test]
fn unused_bits_reserved_and_padding_ignored_and_vlan_needs_v() {
    let repr = whole_cases()[0].1;
    let mut b = emitted_header(&repr);
    assert_eq!(
        (b[3], b[16], b[17]),
        (0, 0, 0),
        "reserved and padding sent as zero"
    );
    b[1] |= nvo_wire::stt::flags::UNUSED;
    b[3] = 0xff;
    b[16] = 0xaa;
    let p = SttPacket::new_checked(&b[..]).unwrap();
    assert_eq!(SttRepr::parse(&p), Ok(repr));
    b[6] &= !0x10; // V clear: PCP and VLAN ID no longer mean anything
    let p = SttPacket::new_checked(&b[..]).unwrap();
    assert_eq!(SttRepr::parse(&p), Ok(SttRepr { vlan: None, ..repr }));
}

#[test]
fn emit_rejects_bad_values_and_short_buffers() {
    let good = whole_cases()[0].1;
    let both = SttFlags::from_bits(0x03);
    let mut buf = [0u8; STT_HEADER_LEN];
    for bad in [
        SttRepr {
            vlan: Some((8, 1)),
            ..good
        },
        SttRepr {
            vlan: Some((0, 4096)),
            ..good
        },
        SttRepr {
            flags: both,
            ..good
        },
    ] {
        assert!(
            bad.emit(&mut SttPacket::new_unchecked(&mut buf[..]))
                .is_err(),
            "{bad:?}"
        );
    }
    assert!(good
        .emit(&mut SttPacket::new_unchecked(&mut buf[..17]))
        .is_err());
    let seg = whole_cases()[0].0;
    let mut short = [0u8; TCP_HEADER_LEN - 1];
    assert!(seg
        .emit(&mut SttSegmentPacket::new_unchecked(&mut short[..]))
        .is_err());
    assert_eq!(frame_len(60), Ok(78));
    assert!(frame_len(usize::from(u16::MAX) - 17).is_err());
}

fn arb_stt_repr() -> impl Strategy<Value = SttRepr> {
    (
        0u8..16,
        any::<u8>(),
        any::<u16>(),
        prop::option::of((0u8..8, 0u16..4096)),
        any::<u64>(),
    )
        .prop_filter("verified and partial exclude each other", |t| t.0 & 3 != 3)
        .prop_map(|(bits, l4_offset, mss, vlan, context_id)| SttRepr {
            flags: SttFlags::from_bits(bits),
            l4_offset,
            mss,
            vlan,
            context_id,
        })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(p) = SttSegmentPacket::new_checked(&bytes[..]) {
            let _ = (p.src_port(), p.dst_port(), p.seq_number(), p.frame_len());
            let _ = (p.fragment_offset(), p.frame_id(), p.header_len(), p.tcp_flags());
            let _ = (p.window(), p.checksum());
            let (src, dst) = outer_addrs();
            let _ = p.verify_checksum(&src, &dst);
            prop_assert_eq!(p.payload().len(), bytes.len() - TCP_HEADER_LEN);
            if let Ok(r) = SttSegmentRepr::parse(&p) {
                let _ = r.to_string();
            }
        }
        if let Ok(p) = SttPacket::new_checked(&bytes[..]) {
            let _ = (p.version(), p.flags(), p.l4_offset(), p.mss(), p.pcp(), p.vlan_id());
            let _ = p.context_id();
            prop_assert_eq!(p.payload().len(), bytes.len() - STT_HEADER_LEN);
            if let Ok(r) = SttRepr::parse(&p) {
                let _ = r.to_string();
                prop_assert!(!(r.flags.checksum_verified && r.flags.checksum_partial));
            }
        }
    }

    #[test]
    fn valid_reprs_round_trip(
        hdr in arb_stt_repr(),
        src_port in any::<u16>(),
        dst_port in any::<u16>(),
        frame_id in any::<u32>(),
        inner in prop::collection::vec(any::<u8>(), 0..64),
        offset in any::<u16>(),
        extra in any::<u16>(),
    ) {
        // A first segment carrying the whole frame, with a valid checksum.
        let seg = SttSegmentRepr {
            src_port,
            dst_port,
            frame_len: frame_len(inner.len()).unwrap(),
            fragment_offset: 0,
            frame_id,
        };
        let out = emit_segment(&seg, Some(&hdr), &inner);
        let p = SttSegmentPacket::new_checked(&out[..]).unwrap();
        let (src, dst) = outer_addrs();
        prop_assert!(p.verify_checksum(&src, &dst));
        prop_assert_eq!(SttSegmentRepr::parse(&p).unwrap(), seg);
        let stt = SttPacket::new_checked(p.payload()).unwrap();
        prop_assert_eq!(SttRepr::parse(&stt).unwrap(), hdr);
        prop_assert_eq!(stt.payload(), &inner[..]);

        // A header-only later segment: any offset within the frame length.
        let later = SttSegmentRepr {
            frame_len: offset.saturating_add(extra),
            fragment_offset: offset,
            ..seg
        };
        let out = emit_segment(&later, None, &[]);
        let p = SttSegmentPacket::new_checked(&out[..]).unwrap();
        prop_assert_eq!(SttSegmentRepr::parse(&p).unwrap(), later);
        prop_assert_eq!(p.seq_number(), (u32::from(later.frame_len) << 16) | u32::from(offset));
    }
}
