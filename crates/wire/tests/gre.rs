//! GRE and NVGRE against independent implementations: scapy's vectors parse to scapy's values
//! and re-emit to scapy's bytes (checksum included), and tshark reads back what nvo emits.
//! Property tests cover arbitrary input and arbitrary valid headers.

mod common;

use common::*;
use nvo_wire::gre::{GrePacket, GreRepr, NvgreKey, PROTO_IPV4, PROTO_TEB};
use nvo_wire::std_wire::IpProtocol;
use proptest::prelude::*;

const IP_PROTO_GRE: IpProtocol = IpProtocol::Unknown(nvo_wire::ports::IP_PROTO_GRE);

fn expected(v: &Vector) -> GreRepr {
    GreRepr {
        protocol: v.u64("protocol") as u16,
        checksum: v.bool("checksum_present"),
        key: v.bool("key_present").then(|| v.u64("key") as u32),
        sequence: v.bool("sequence_present").then(|| v.u64("sequence") as u32),
    }
}

#[test]
fn scapy_vectors_parse_to_scapy_values() {
    for v in scapy_vectors("nvgre") {
        let bytes = v.header();
        let packet = GrePacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            packet.checksum_present(),
            v.bool("checksum_present"),
            "{}",
            v.name
        );
        assert_eq!(packet.key_present(), v.bool("key_present"), "{}", v.name);
        assert_eq!(
            packet.sequence_present(),
            v.bool("sequence_present"),
            "{}",
            v.name
        );
        let repr = GreRepr::parse(&packet).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(repr, expected(&v), "{}", v.name);
        // scapy computed the checksum of the vector that has one; the others have nothing to check.
        assert!(packet.verify_checksum(), "{}", v.name);
        match repr.as_nvgre() {
            Some(k) => {
                assert_eq!(u64::from(k.vsid), v.u64("vsid"), "{}", v.name);
                assert_eq!(u64::from(k.flow_id), v.u64("flow_id"), "{}", v.name);
                assert_eq!(
                    &packet.payload()[6..12],
                    &[0x52, 0x54, 0, 0xaa, 0xbb, 0x01],
                    "{}",
                    v.name
                );
            }
            None => {
                assert!(v.fields.get("vsid").is_none(), "{}: not NVGRE", v.name);
                assert_eq!(repr.protocol, PROTO_IPV4, "{}", v.name);
                assert_eq!(&packet.payload()[12..16], &[10, 1, 0, 1], "{}", v.name);
            }
        }
    }
}

#[test]
fn scapy_checksum_catches_corruption() {
    let v = scapy_vectors("nvgre")
        .into_iter()
        .find(|v| v.name == "gre-checksum-key-sequence")
        .unwrap();
    let bytes = v.header();
    for i in [0, 4, 9, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[i] ^= 0x10;
        let p = GrePacket::new_checked(&bad[..]).unwrap();
        assert!(!p.verify_checksum(), "byte {i} flipped");
    }
}

#[test]
fn emit_reproduces_scapy_bytes() {
    for v in scapy_vectors("nvgre") {
        let bytes = v.header();
        let repr = expected(&v);
        let payload = &bytes[repr.buffer_len()..];
        let mut out = vec![0xa5u8; bytes.len()];
        let n = repr.emit_with_payload(&mut out, payload).unwrap();
        assert_eq!(n, bytes.len(), "{}", v.name);
        // Whole packets: the checksum nvo fills must equal scapy's.
        assert_eq!(out, bytes, "{}", v.name);

        if let Some(k) = repr.as_nvgre() {
            assert_eq!(NvgreKey::from_key(k.key()), k, "{}", v.name);
            if !repr.checksum && repr.sequence.is_none() {
                assert_eq!(GreRepr::nvgre(k.vsid, k.flow_id), repr, "{}", v.name);
            }
        }
    }
}

#[test]
fn tshark_reads_what_nvo_emits() {
    let cases = [
        GreRepr::nvgre(1, 0),
        GreRepr::nvgre(0xff_ffff, 0xff),
        GreRepr::nvgre(0x12_3456, 0x78),
        GreRepr {
            protocol: PROTO_TEB,
            checksum: true,
            key: Some(
                NvgreKey {
                    vsid: 4242,
                    flow_id: 3,
                }
                .key(),
            ),
            sequence: Some(0xdead_beef),
        },
        GreRepr {
            protocol: PROTO_IPV4,
            checksum: false,
            key: None,
            sequence: None,
        },
        GreRepr {
            protocol: PROTO_IPV4,
            checksum: true,
            key: None,
            sequence: Some(1),
        },
        GreRepr {
            protocol: PROTO_IPV4,
            checksum: false,
            key: Some(0xcafe_f00d),
            sequence: None,
        },
    ];
    let inner_eth = inner_frame([0x52, 0x54, 0, 0, 0, 1], [0x52, 0x54, 0, 0, 0, 2]);
    // An IPv4 packet whose source (192.0.2.1) tshark shows as a second ip.src.
    let inner_ip = ipv4_frame(IpProtocol::Udp, &[0u8; 8])[14..].to_vec();
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|r| {
            let inner = if r.protocol == PROTO_TEB {
                &inner_eth
            } else {
                &inner_ip
            };
            let mut gre = vec![0u8; r.buffer_len() + inner.len()];
            r.emit_with_payload(&mut gre, inner).unwrap();
            ipv4_frame(IP_PROTO_GRE, &gre)
        })
        .collect();
    let rows = tshark_fields(
        "gre",
        &frames,
        &[
            "gre.flags.checksum",
            "gre.flags.key",
            "gre.flags.sequence_number",
            "gre.flags.routing",
            "gre.flags.version",
            "gre.proto",
            "gre.key",
            "gre.sequence_number",
            // 1 = Good: tshark recomputed the checksum and agrees.
            "gre.checksum.status",
            "eth.src",
            "ip.src",
        ],
        &[],
    );
    for (r, row) in cases.iter().zip(rows) {
        assert_eq!(tshark_bool(&row[0]), r.checksum, "C of {r}: {row:?}");
        assert_eq!(tshark_bool(&row[1]), r.key.is_some(), "K of {r}: {row:?}");
        assert_eq!(
            tshark_bool(&row[2]),
            r.sequence.is_some(),
            "S of {r}: {row:?}"
        );
        assert!(!tshark_bool(&row[3]), "R of {r}: {row:?}");
        assert_eq!(tshark_num(&row[4]), 0, "version of {r}: {row:?}");
        assert_eq!(
            tshark_num(&row[5]),
            u64::from(r.protocol),
            "proto of {r}: {row:?}"
        );
        match r.key {
            Some(key) => assert_eq!(tshark_num(&row[6]), u64::from(key), "key of {r}: {row:?}"),
            None => assert_eq!(row[6], "", "key of {r}: {row:?}"),
        }
        match r.sequence {
            Some(s) => assert_eq!(tshark_num(&row[7]), u64::from(s), "seq of {r}: {row:?}"),
            None => assert_eq!(row[7], "", "seq of {r}: {row:?}"),
        }
        if r.checksum {
            assert_eq!(tshark_num(&row[8]), 1, "checksum of {r}: {row:?}");
        } else {
            assert_eq!(row[8], "", "checksum of {r}: {row:?}");
        }
        // tshark found the payload right after the optional words and dissected it.
        if r.protocol == PROTO_TEB {
            assert!(
                row[9].contains("52:54:00:00:00:01"),
                "inner frame of {r}: {row:?}"
            );
        } else {
            assert_eq!(
                row[10].split(',').count(),
                2,
                "inner packet of {r}: {row:?}"
            );
        }
    }
}

fn arb_repr() -> impl Strategy<Value = GreRepr> {
    (
        any::<u16>(),
        any::<bool>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
    )
        .prop_map(|(protocol, checksum, key, sequence)| GreRepr {
            protocol,
            checksum,
            key,
            sequence,
        })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(p) = GrePacket::new_checked(&bytes[..]) {
            let _ = (p.version(), p.protocol(), p.checksum(), p.key(), p.sequence());
            let _ = p.verify_checksum();
            prop_assert_eq!(p.payload().len(), bytes.len() - p.header_len());
            if let Ok(repr) = GreRepr::parse(&p) {
                let _ = repr.to_string();
                prop_assert_eq!(repr.buffer_len(), p.header_len());
            }
        }
    }

    #[test]
    fn valid_reprs_round_trip(
        repr in arb_repr(),
        payload in prop::collection::vec(any::<u8>(), 0..48),
    ) {
        let mut buf = vec![0xffu8; repr.buffer_len() + payload.len() + 3];
        let n = repr.emit_with_payload(&mut buf, &payload).unwrap();
        let p = GrePacket::new_checked(&buf[..n]).unwrap();
        prop_assert_eq!(GreRepr::parse(&p).unwrap(), repr);
        prop_assert_eq!(p.payload(), &payload[..]);
        prop_assert!(p.verify_checksum());
    }

    #[test]
    fn nvgre_keys_round_trip(vsid in 0u32..=0xff_ffff, flow_id in any::<u8>()) {
        let repr = GreRepr::nvgre(vsid, flow_id);
        prop_assert_eq!(repr.as_nvgre(), Some(NvgreKey { vsid, flow_id }));
        let mut buf = [0u8; 8];
        repr.emit(&mut GrePacket::new_unchecked(&mut buf[..])).unwrap();
        let parsed = GreRepr::parse(&GrePacket::new_checked(&buf[..]).unwrap()).unwrap();
        prop_assert_eq!(parsed.as_nvgre(), Some(NvgreKey { vsid, flow_id }));
    }
}
