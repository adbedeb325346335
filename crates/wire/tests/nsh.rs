//! NSH against independent implementations: scapy's vectors (MD Type 2 TLVs packed by hand per
//! RFC 8300 §2.5.1, see gen_scapy.py) parse to scapy's values, tshark reads back what nvo emits,
//! and arbitrary bytes never panic.
// clippy.toml's allow-*-in-tests covers #[test] bodies only; the vector helpers and the proptest
// strategy below fail the test just the same when they panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use nvo_wire::nsh::*;
use nvo_wire::std_wire::IpProtocol;
use nvo_wire::vxlan_gpe::{VxlanGpePacket, VxlanGpeRepr};
use nvo_wire::{ports, Error};
use proptest::prelude::*;

fn invalid(field: &'static str, value: u64) -> Error {
    Error::Invalid { field, value }
}

/// The TLVs a vector lists, as (class, type, value).
fn vector_tlvs(v: &Vector) -> Vec<(u16, u8, Vec<u8>)> {
    let list = v.fields["tlvs"].as_array().expect("tlvs is a list");
    list.iter()
        .map(|t| {
            let class = t["class"].as_u64().expect("class") as u16;
            let kind = t["type"].as_u64().expect("type") as u8;
            (class, kind, unhex(t["value"].as_str().expect("value")))
        })
        .collect()
}

fn as_tlvs(list: &[(u16, u8, Vec<u8>)]) -> Vec<NshTlv<'_>> {
    list.iter()
        .map(|(class, kind, value)| NshTlv {
            class: *class,
            kind: *kind,
            value,
        })
        .collect()
}

/// The Repr a vector describes; MD Type 2 metadata is written into `tlv_buf` with nvo's writer.
fn expected<'a>(v: &Vector, tlv_buf: &'a mut Vec<u8>) -> NshRepr<'a> {
    let metadata = match v.u64("md_type") {
        1 => NshMetadata::Type1(v.hex("context").try_into().expect("16-byte context")),
        _ => {
            let list = vector_tlvs(v);
            let tlvs = as_tlvs(&list);
            tlv_buf.resize(tlvs_buffer_len(&tlvs), 0);
            emit_tlvs(&tlvs, tlv_buf).unwrap();
            NshMetadata::Type2(tlv_buf)
        }
    };
    NshRepr {
        oam: v.bool("oam"),
        ttl: v.u64("ttl") as u8,
        next_protocol: NextProtocol::from(v.u64("next_protocol") as u8),
        spi: v.u64("spi") as u32,
        si: v.u64("si") as u8,
        metadata,
    }
}

#[test]
fn scapy_vectors_parse_to_scapy_values() {
    let vectors = scapy_vectors("nsh");
    for v in &vectors {
        let bytes = v.header();
        let p = NshPacket::new_checked(&bytes[..]).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(u64::from(p.version()), v.u64("version"), "{}", v.name);
        assert_eq!(u64::from(p.length_words()), v.u64("length"), "{}", v.name);
        assert_eq!(
            u64::from(u8::from(p.md_type())),
            v.u64("md_type"),
            "{}",
            v.name
        );
        let repr = NshRepr::parse(&p).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let mut tlv_buf = Vec::new();
        assert_eq!(repr, expected(v, &mut tlv_buf), "{}", v.name);
        // Each TLV reads back as scapy's, value unpadded.
        let got: Vec<_> = repr.metadata.tlvs().map(Result::unwrap).collect();
        assert_eq!(got, as_tlvs(&vector_tlvs(v)), "{}", v.name);
        // The payload starts where Length says, and is what Next Protocol says.
        let inner = p.payload();
        match repr.next_protocol {
            NextProtocol::Ethernet => assert_eq!(&inner[..6], &[0x52, 0x54, 0, 0xaa, 0xbb, 2]),
            NextProtocol::Ipv4 => assert_eq!(inner[0], 0x45, "{}", v.name),
            NextProtocol::Ipv6 => assert_eq!(inner[0] >> 4, 6, "{}", v.name),
            other => panic!("{}: unexpected next protocol {other}", v.name),
        }
    }
    assert!(vectors
        .iter()
        .any(|v| v.u64("md_type") == 2 && v.u64("length") > 2));
}

#[test]
fn emit_reproduces_scapy_bytes() {
    for v in scapy_vectors("nsh") {
        let bytes = v.header();
        let mut tlv_buf = Vec::new();
        let repr = expected(&v, &mut tlv_buf);
        let mut out = vec![0xffu8; repr.buffer_len()];
        repr.emit(&mut NshPacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(&out[..], &bytes[..out.len()], "{}", v.name);
    }
}

#[test]
fn tshark_reads_what_nvo_emits() {
    let ctx: [u8; 16] = core::array::from_fn(|i| 0xa0 + i as u8);
    let long = [0x5au8; 127];
    let tlv = |class, kind, value| NshTlv { class, kind, value };
    let tlv_sets: [&[NshTlv<'_>]; 3] = [
        &[],
        &[
            tlv(0x0102, 3, b"\xde\xad\xbe\xef"),
            tlv(0, 1, b""),
            tlv(0xffff, 0xfe, b"x"),
        ],
        &[tlv(0x0200, 0x7f, b"12345"), tlv(0x1234, 0x80, &long)],
    ];
    let tlv_bufs: Vec<Vec<u8>> = tlv_sets
        .iter()
        .map(|set| {
            let mut b = vec![0u8; tlvs_buffer_len(set)];
            emit_tlvs(set, &mut b).unwrap();
            b
        })
        .collect();
    let nsh = |oam, ttl, next_protocol, spi, si, metadata| NshRepr {
        oam,
        ttl,
        next_protocol,
        spi,
        si,
        metadata,
    };
    let cases = [
        nsh(
            false,
            63,
            NextProtocol::Ethernet,
            1,
            255,
            NshMetadata::Type1(ctx),
        ),
        nsh(
            true,
            0,
            NextProtocol::Ipv4,
            0xffffff,
            0,
            NshMetadata::Type1([0; 16]),
        ),
        nsh(
            false,
            1,
            NextProtocol::Ethernet,
            0x42,
            200,
            NshMetadata::Type2(&tlv_bufs[0]),
        ),
        nsh(
            false,
            20,
            NextProtocol::Ethernet,
            0xabcdef,
            9,
            NshMetadata::Type2(&tlv_bufs[1]),
        ),
        nsh(
            true,
            62,
            NextProtocol::Ethernet,
            7,
            1,
            NshMetadata::Type2(&tlv_bufs[2]),
        ),
    ];
    let tlv_lists = [&[][..], &[], tlv_sets[0], tlv_sets[1], tlv_sets[2]];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|r| {
            let inner = match r.next_protocol {
                // common::ipv4_frame minus its Ethernet header: an IPv4 packet from 192.0.2.1.
                NextProtocol::Ipv4 => ipv4_frame(IpProtocol::Udp, &[0; 8])[14..].to_vec(),
                _ => inner_frame([0x52, 0x54, 0, 0, 0, 1], [0x52, 0x54, 0, 0, 0, 2]),
            };
            let gpe = VxlanGpeRepr {
                vni: 10,
                next_protocol: NextProtocol::Nsh,
                oam: false,
                bum: false,
            };
            let mut payload = vec![0u8; gpe.buffer_len() + r.buffer_len() + inner.len()];
            let mut outer = VxlanGpePacket::new_unchecked(&mut payload[..]);
            gpe.emit(&mut outer).unwrap();
            let mut p = NshPacket::new_unchecked(outer.payload_mut());
            r.emit(&mut p).unwrap();
            p.payload_mut().copy_from_slice(&inner);
            udp_frame(50000, ports::VXLAN_GPE, &payload)
        })
        .collect();
    let rows = tshark_fields(
        "nsh",
        &frames,
        &[
            "nsh.version",
            "nsh.Obit",
            "nsh.ttl",
            "nsh.length",
            "nsh.mdtype",
            "nsh.nextproto",
            "nsh.spi",
            "nsh.si",
            "nsh.contextheader",
            "nsh.metadataclass",
            "nsh.metadatatype",
            "nsh.metadatalen",
            "nsh.metadata",
            "eth.src",
            "ip.src",
        ],
        &[],
    );
    for ((r, tlvs), row) in cases.iter().zip(tlv_lists).zip(rows) {
        assert_eq!(tshark_num(&row[0]), 0, "version of {r}: {row:?}");
        assert_eq!(tshark_bool(&row[1]), r.oam, "O bit of {r}: {row:?}");
        assert_eq!(tshark_num(&row[2]), u64::from(r.ttl), "ttl of {r}: {row:?}");
        let words = (r.buffer_len() / 4) as u64;
        assert_eq!(tshark_num(&row[3]), words, "length of {r}: {row:?}");
        let md = u64::from(u8::from(r.metadata.md_type()));
        assert_eq!(tshark_num(&row[4]), md, "md type of {r}: {row:?}");
        let np = u64::from(u8::from(r.next_protocol));
        assert_eq!(tshark_num(&row[5]), np, "next protocol of {r}: {row:?}");
        assert_eq!(tshark_num(&row[6]), u64::from(r.spi), "spi of {r}: {row:?}");
        assert_eq!(tshark_num(&row[7]), u64::from(r.si), "si of {r}: {row:?}");
        match r.metadata {
            NshMetadata::Type1(c) => assert_eq!(row[8].replace(',', ""), hex(&c), "{row:?}"),
            NshMetadata::Type2(_) => assert_eq!(row[8], "", "{row:?}"),
        }
        // tshark lists each TLV field in order; it leaves out empty values.
        let joined = |f: &dyn Fn(&NshTlv<'_>) -> String| {
            tlvs.iter()
                .map(f)
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(",")
        };
        let classes: Vec<u64> = split(&row[9]).map(tshark_num).collect();
        let kinds: Vec<u64> = split(&row[10]).map(tshark_num).collect();
        let lens: Vec<u64> = split(&row[11]).map(tshark_num).collect();
        let want = |f: fn(&NshTlv<'_>) -> u64| tlvs.iter().map(f).collect::<Vec<_>>();
        assert_eq!(
            classes,
            want(|t| t.class.into()),
            "tlv classes of {r}: {row:?}"
        );
        assert_eq!(kinds, want(|t| t.kind.into()), "tlv types of {r}: {row:?}");
        assert_eq!(
            lens,
            want(|t| t.value.len() as u64),
            "tlv lengths of {r}: {row:?}"
        );
        assert_eq!(
            row[12],
            joined(&|t| hex(t.value)),
            "tlv values of {r}: {row:?}"
        );
        // tshark found the payload where Length puts it.
        match r.next_protocol {
            NextProtocol::Ipv4 => assert_eq!(row[14], "192.0.2.1,192.0.2.1", "{row:?}"),
            _ => assert!(
                row[13].contains("52:54:00:00:00:01"),
                "inner frame: {row:?}"
            ),
        }
    }
}

fn split(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').filter(|x| !x.is_empty())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn tlv_writer_pads_and_refuses_what_does_not_fit() {
    let tlvs = [
        NshTlv {
            class: 0x0102,
            kind: 3,
            value: b"abc",
        },
        NshTlv {
            class: 0xffff,
            kind: 0x80,
            value: b"",
        },
    ];
    assert_eq!(tlvs_buffer_len(&tlvs), 12);
    let mut buf = [0xaau8; 12];
    assert_eq!(emit_tlvs(&tlvs, &mut buf), Ok(12));
    assert_eq!(buf, [1, 2, 3, 3, b'a', b'b', b'c', 0, 0xff, 0xff, 0x80, 0]);
    let short = Error::Truncated {
        what: "nsh tlv",
        need: 4,
        have: 3,
    };
    assert_eq!(emit_tlvs(&tlvs, &mut buf[..11]), Err(short));
    let long = [0u8; 128];
    let big = NshTlv {
        class: 0,
        kind: 0,
        value: &long,
    };
    assert_eq!(
        big.emit(&mut [0u8; 256]),
        Err(invalid("nsh tlv length", 128))
    );
}

#[test]
fn emit_rejects_what_the_header_cannot_carry() {
    let ok = NshRepr {
        oam: false,
        ttl: 63,
        next_protocol: NextProtocol::Ethernet,
        spi: 1,
        si: 255,
        metadata: NshMetadata::Type2(&[]),
    };
    let emit =
        |r: NshRepr<'_>, len: usize| r.emit(&mut NshPacket::new_unchecked(&mut vec![0; len]));
    assert_eq!(emit(ok, 8), Ok(()));
    assert!(matches!(emit(ok, 7), Err(Error::Truncated { .. })));
    assert_eq!(
        emit(NshRepr { ttl: 64, ..ok }, 8),
        Err(invalid("nsh ttl", 64))
    );
    assert_eq!(
        emit(NshRepr { spi: 1 << 24, ..ok }, 8),
        Err(invalid("nsh spi", 1 << 24))
    );
    let odd = NshRepr {
        metadata: NshMetadata::Type2(&[0, 0, 0]),
        ..ok
    };
    assert_eq!(emit(odd, 11), Err(invalid("nsh metadata length", 3)));
    // 8 + 248 bytes would be 64 words, one more than the 6-bit Length can say.
    let big = NshRepr {
        metadata: NshMetadata::Type2(&[0; 248]),
        ..ok
    };
    assert_eq!(emit(big, 256), Err(invalid("nsh metadata length", 248)));
    let broken = NshRepr {
        metadata: NshMetadata::Type2(&[0, 0, 0, 9]),
        ..ok
    };
    assert!(matches!(emit(broken, 12), Err(Error::Truncated { .. })));
}

#[test]
fn decrement_helpers_follow_rfc_8300() {
    let mut b = [0u8; 8];
    let mut p = NshPacket::new_unchecked(&mut b[..]);
    p.set_length_words(2);
    p.set_si(1);
    assert_eq!(p.decrement_si(), Ok(0));
    assert_eq!(p.decrement_si(), Err(invalid("nsh service index", 0)));
    assert_eq!(p.si(), 0);
    p.set_ttl(2);
    assert_eq!(p.decrement_ttl(), 1);
    assert_eq!(p.decrement_ttl(), 0);
    assert_eq!(p.decrement_ttl(), 63); // §2.2: decrementing 0 gives 63
    assert_eq!((p.length_words(), p.si()), (2, 0));
}

#[test]
fn display() {
    let repr = NshRepr {
        oam: false,
        ttl: 63,
        next_protocol: NextProtocol::Ethernet,
        spi: 66,
        si: 200,
        metadata: NshMetadata::Type2(&[]),
    };
    assert_eq!(
        repr.to_string(),
        "NSH spi=66 si=200 md=2 next=Ethernet ttl=63"
    );
    let repr = NshRepr {
        oam: true,
        metadata: NshMetadata::Type1([0; 16]),
        ..repr
    };
    assert_eq!(
        repr.to_string(),
        "NSH spi=66 si=200 md=1 next=Ethernet ttl=63 O"
    );
}

/// Arbitrary valid Reprs; the TLV bytes come along, since the Repr borrows them.
fn repr_parts() -> impl Strategy<Value = (bool, u8, u8, u32, u8, Option<[u8; 16]>, Vec<u8>)> {
    let tlv = (
        any::<u16>(),
        any::<u8>(),
        proptest::collection::vec(any::<u8>(), 0..=127),
    );
    let tlvs = proptest::collection::vec(tlv, 0..6).prop_map(|list| {
        let mut out = Vec::new();
        for (class, kind, value) in list {
            let t = NshTlv {
                class,
                kind,
                value: &value,
            };
            // Keep what fits the 6-bit Length field (252 bytes in all).
            if out.len() + t.buffer_len() + BASE_LEN <= MAX_HEADER_LEN {
                let at = out.len();
                out.resize(at + t.buffer_len(), 0);
                t.emit(&mut out[at..]).unwrap();
            }
        }
        out
    });
    (
        any::<bool>(),
        0..=TTL_MAX,
        any::<u8>(),
        0..=0xff_ffffu32,
        any::<u8>(),
        proptest::option::of(any::<[u8; 16]>()),
        tlvs,
    )
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        for tlv in NshTlvs::new(&bytes) {
            let _ = tlv;
        }
        let mut tlvs = NshTlvs::new(&bytes);
        while let Some(t) = tlvs.next() {
            if t.is_err() {
                prop_assert!(tlvs.next().is_none(), "iterator went on after an error");
            }
        }
        let Ok(p) = NshPacket::new_checked(&bytes[..]) else { return Ok(()) };
        prop_assert!(p.header_len() >= BASE_LEN && p.header_len() <= bytes.len());
        let _ = (p.version(), p.oam(), p.ttl(), p.md_type(), p.next_protocol(), p.spi(), p.si());
        prop_assert_eq!(p.metadata().len() + p.payload().len() + BASE_LEN, bytes.len());
        if let Ok(repr) = NshRepr::parse(&p) {
            let mut out = vec![0u8; repr.buffer_len()];
            repr.emit(&mut NshPacket::new_unchecked(&mut out[..])).unwrap();
            let again = NshRepr::parse(&NshPacket::new_checked(&out[..]).unwrap());
            prop_assert_eq!(again, Ok(repr));
        }
    }

    #[test]
    fn valid_reprs_round_trip(
        (oam, ttl, np, spi, si, ctx, tlvs) in repr_parts(),
        payload in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let metadata = match ctx {
            Some(c) => NshMetadata::Type1(c),
            None => NshMetadata::Type2(&tlvs),
        };
        let next_protocol = NextProtocol::from(np);
        let repr = NshRepr { oam, ttl, next_protocol, spi, si, metadata };
        let mut buf = vec![0xa5u8; repr.buffer_len() + payload.len()];
        let mut p = NshPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&payload);
        let p = NshPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(p.header_len(), repr.buffer_len());
        prop_assert_eq!(NshRepr::parse(&p), Ok(repr));
        prop_assert_eq!(p.payload(), &payload[..]);
    }
}
