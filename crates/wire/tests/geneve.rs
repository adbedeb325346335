//! Geneve against independent implementations: scapy's vectors parse to scapy's values and
//! re-emit to scapy's bytes, and tshark reads back what nvo emits. Property tests cover
//! arbitrary input and arbitrary valid headers.

mod common;

use common::*;
use nvo_wire::geneve::identity::{self, Identity};
use nvo_wire::geneve::{
    emit_options, protocol, GeneveOption, GeneveOptions, GenevePacket, GeneveRepr, MAX_OPTIONS_LEN,
    MAX_OPTION_DATA_LEN,
};
use nvo_wire::std_wire::IpProtocol;
use proptest::prelude::*;

/// The options of a vector as (class, type, data), in order; `None` if the JSON is malformed.
fn expected_options(v: &Vector) -> Option<Vec<(u16, u8, Vec<u8>)>> {
    v.fields["options"]
        .as_array()?
        .iter()
        .map(|o| {
            Some((
                o["class"].as_u64()? as u16,
                o["type"].as_u64()? as u8,
                unhex(o["data"].as_str()?),
            ))
        })
        .collect()
}

/// Builds the options area of `options` with nvo's writer.
fn options_bytes(options: &[(u16, u8, Vec<u8>)]) -> nvo_wire::Result<Vec<u8>> {
    let opts: Vec<GeneveOption<'_>> = options
        .iter()
        .map(|(class, kind, data)| GeneveOption {
            class: *class,
            kind: *kind,
            data,
        })
        .collect();
    let mut buf = vec![0u8; MAX_OPTIONS_LEN];
    let n = emit_options(&opts, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

#[test]
fn scapy_vectors_parse_to_scapy_values() {
    for v in scapy_vectors("geneve") {
        let bytes = v.header();
        let packet = GenevePacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(u64::from(packet.version()), v.u64("version"), "{}", v.name);
        let repr = GeneveRepr::parse(&packet).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(repr.oam, v.bool("oam"), "{}", v.name);
        assert_eq!(repr.critical, v.bool("critical"), "{}", v.name);
        assert_eq!(u64::from(repr.protocol), v.u64("protocol"), "{}", v.name);
        assert_eq!(u64::from(repr.vni), v.u64("vni"), "{}", v.name);

        let options: Vec<(u16, u8, Vec<u8>)> = repr
            .option_iter()
            .map(|o| {
                let o = o.unwrap_or_else(|e| panic!("{}: {e}", v.name));
                (o.class, o.kind, o.data.to_vec())
            })
            .collect();
        let expected = expected_options(&v).expect("options in the vector");
        assert_eq!(options, expected, "{}", v.name);
        assert_eq!(
            repr.has_critical_option(),
            expected.iter().any(|o| o.1 & 0x80 != 0),
            "{}",
            v.name
        );

        // The payload starts right after the options: check it is scapy's inner packet.
        let inner = packet.payload();
        match repr.protocol {
            protocol::ETHERNET => {
                assert_eq!(
                    &inner[0..6],
                    &[0x52, 0x54, 0, 0xaa, 0xbb, 0x02],
                    "{}",
                    v.name
                );
                assert_eq!(
                    &inner[6..12],
                    &[0x52, 0x54, 0, 0xaa, 0xbb, 0x01],
                    "{}",
                    v.name
                );
            }
            protocol::IPV4 => {
                assert_eq!(inner[0] >> 4, 4, "{}", v.name);
                assert_eq!(&inner[12..16], &[10, 1, 0, 1], "{}", v.name);
            }
            protocol::IPV6 => {
                assert_eq!(inner[0] >> 4, 6, "{}", v.name);
                assert_eq!(&inner[8..10], &[0xfd, 0x00], "{}", v.name);
            }
            other => panic!("{}: unexpected protocol {other:#x}", v.name),
        }
    }
}

/// nvo's identity option as scapy built it (after an option nvo does not know): read back as
/// group 10 with the A bit, and nvo's writer gives scapy's bytes.
#[test]
fn identity_option_matches_scapy() {
    let v = scapy_vectors("geneve")
        .into_iter()
        .find(|v| v.name == "geneve-nvo-identity")
        .expect("the identity vector");
    let bytes = v.header();
    let packet = GenevePacket::new_checked(&bytes[..]).unwrap();
    let repr = GeneveRepr::parse(&packet).unwrap();
    assert!(!repr.critical && !repr.has_critical_option());
    let id = Identity {
        group: 10,
        applied: true,
    };
    assert_eq!(Identity::find(repr.options), Ok(Some(id)));
    let mut option = [0u8; identity::LEN];
    id.emit(&mut option).unwrap();
    assert_eq!(&option[..], &repr.options[8..]);
    assert_eq!(
        (identity::CLASS, identity::TYPE),
        (0xfff0, 0x01),
        "the documented class and type"
    );
}

#[test]
fn emit_reproduces_scapy_bytes() {
    for v in scapy_vectors("geneve") {
        let bytes = v.header();
        let options = options_bytes(&expected_options(&v).expect("options in the vector")).unwrap();
        let repr = GeneveRepr {
            oam: v.bool("oam"),
            critical: v.bool("critical"),
            protocol: v.u64("protocol") as u16,
            vni: v.u64("vni") as u32,
            options: &options,
        };
        let mut out = vec![0xa5u8; repr.buffer_len()];
        repr.emit(&mut GenevePacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(&out[..], &bytes[..repr.buffer_len()], "{}", v.name);
    }
}

struct Case {
    oam: bool,
    critical: bool,
    protocol: u16,
    vni: u32,
    options: Vec<(u16, u8, Vec<u8>)>,
}

#[test]
fn tshark_reads_what_nvo_emits() {
    let eth = protocol::ETHERNET;
    let cases = [
        Case {
            oam: false,
            critical: false,
            protocol: eth,
            vni: 1,
            options: vec![],
        },
        Case {
            oam: true,
            critical: true,
            protocol: eth,
            vni: 0xabcdef,
            options: vec![
                (0x0102, 0x80, vec![0x11, 0x22, 0x33, 0x44]),
                (0xffff, 0x01, b"abcdefgh".to_vec()),
            ],
        },
        Case {
            oam: false,
            critical: false,
            protocol: protocol::IPV4,
            vni: 0xffffff,
            options: vec![(0x0000, 0x7f, vec![])],
        },
        // The largest option and the largest options area: 128 + 124 = 252 bytes.
        Case {
            oam: false,
            critical: true,
            protocol: eth,
            vni: 0,
            options: vec![
                (0xfff0, 0xfe, vec![0xab; MAX_OPTION_DATA_LEN]),
                (0x0105, 0x02, vec![0xcd; MAX_OPTION_DATA_LEN - 4]),
            ],
        },
    ];
    let inner_eth = inner_frame([0x52, 0x54, 0, 0, 0, 1], [0x52, 0x54, 0, 0, 0, 2]);
    // An IPv4 packet whose source (192.0.2.1) tshark shows as a second ip.src.
    let inner_ip = ipv4_frame(IpProtocol::Udp, &[0u8; 8])[14..].to_vec();
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|c| {
            let options = options_bytes(&c.options).unwrap();
            let repr = GeneveRepr {
                oam: c.oam,
                critical: c.critical,
                protocol: c.protocol,
                vni: c.vni,
                options: &options,
            };
            let inner = if c.protocol == eth {
                &inner_eth
            } else {
                &inner_ip
            };
            let mut payload = vec![0u8; repr.buffer_len() + inner.len()];
            let mut p = GenevePacket::new_unchecked(&mut payload[..]);
            repr.emit(&mut p).unwrap();
            p.payload_mut().copy_from_slice(inner);
            udp_frame(50000, nvo_wire::ports::GENEVE, &payload)
        })
        .collect();
    let rows = tshark_fields(
        "geneve",
        &frames,
        &[
            "geneve.version",
            "geneve.flags.oam",
            "geneve.flags.critical",
            "geneve.proto_type",
            "geneve.vni",
            "geneve.option.class",
            "geneve.option.type",
            "geneve.option.type.critical",
            // The header's options length, then each option's length, all in bytes.
            "geneve.option.length",
            "geneve.option.unknown.data",
            "eth.src",
            "ip.src",
        ],
        &[],
    );
    for (c, row) in cases.iter().zip(rows) {
        let vni = c.vni;
        assert_eq!(tshark_num(&row[0]), 0, "version of vni {vni}: {row:?}");
        assert_eq!(tshark_bool(&row[1]), c.oam, "O of vni {vni}: {row:?}");
        assert_eq!(tshark_bool(&row[2]), c.critical, "C of vni {vni}: {row:?}");
        assert_eq!(
            tshark_num(&row[3]),
            u64::from(c.protocol),
            "proto of {vni}: {row:?}"
        );
        assert_eq!(tshark_num(&row[4]), u64::from(vni), "vni: {row:?}");
        let list = |s: &str| -> Vec<String> {
            if s.is_empty() {
                vec![]
            } else {
                s.split(',').map(str::to_owned).collect()
            }
        };
        let classes: Vec<u64> = list(&row[5]).iter().map(|s| tshark_num(s)).collect();
        let kinds: Vec<u64> = list(&row[6]).iter().map(|s| tshark_num(s)).collect();
        let crit: Vec<bool> = list(&row[7]).iter().map(|s| tshark_bool(s)).collect();
        let lens: Vec<u64> = list(&row[8]).iter().map(|s| tshark_num(s)).collect();
        let data = list(&row[9]);
        let want_area: usize = c.options.iter().map(|o| 4 + o.2.len()).sum();
        assert_eq!(
            lens[0], want_area as u64,
            "options length of {vni}: {row:?}"
        );
        assert_eq!(classes.len(), c.options.len(), "options of {vni}: {row:?}");
        for (i, (class, kind, bytes)) in c.options.iter().enumerate() {
            assert_eq!(classes[i], u64::from(*class), "class of {vni}: {row:?}");
            assert_eq!(kinds[i], u64::from(*kind), "type of {vni}: {row:?}");
            assert_eq!(crit[i], kind & 0x80 != 0, "critical of {vni}: {row:?}");
            assert_eq!(
                lens[i + 1],
                4 + bytes.len() as u64,
                "length of {vni}: {row:?}"
            );
            if !bytes.is_empty() {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(data[i], hex, "data of {vni}: {row:?}");
            }
        }
        // tshark found the payload right after the options and dissected it.
        if c.protocol == eth {
            assert!(
                row[10].contains("52:54:00:00:00:01"),
                "inner frame of {vni}: {row:?}"
            );
        } else {
            assert_eq!(list(&row[11]).len(), 2, "inner packet of {vni}: {row:?}");
        }
    }
}

/// Arbitrary options whose area fits in `Opt Len`.
fn arb_options() -> impl Strategy<Value = Vec<(u16, u8, Vec<u8>)>> {
    let option = (
        any::<u16>(),
        any::<u8>(),
        (0..=MAX_OPTION_DATA_LEN / 4).prop_flat_map(|w| prop::collection::vec(any::<u8>(), w * 4)),
    );
    prop::collection::vec(option, 0..6).prop_map(|mut v| {
        while v.iter().map(|o| 4 + o.2.len()).sum::<usize>() > MAX_OPTIONS_LEN {
            v.pop();
        }
        v
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(p) = GenevePacket::new_checked(&bytes[..]) {
            let _ = (p.version(), p.oam(), p.critical(), p.protocol(), p.vni());
            prop_assert_eq!(p.options().len(), p.options_len());
            prop_assert_eq!(p.payload().len(), bytes.len() - p.header_len());
            let mut walked = 0;
            for o in p.option_iter() {
                match o {
                    Ok(o) => walked += o.buffer_len(),
                    Err(_) => break,
                }
            }
            prop_assert!(walked <= p.options_len());
            if let Ok(repr) = GeneveRepr::parse(&p) {
                let _ = repr.to_string();
                prop_assert_eq!(repr.buffer_len(), p.header_len());
            }
        }
        for o in GeneveOptions::new(&bytes) {
            let _ = o.map(|o| o.to_string());
        }
        // The identity option: found only in a list that walks, and then re-emitted the same.
        if let Ok(Some(id)) = Identity::find(&bytes) {
            prop_assert!(GeneveOptions::new(&bytes).all(|o| o.is_ok()));
            let mut buf = [0u8; identity::LEN];
            id.emit(&mut buf).unwrap();
            prop_assert_eq!(Identity::find(&buf), Ok(Some(id)));
        }
    }

    #[test]
    fn identity_found_after_any_options(
        group in any::<u16>(),
        applied in any::<bool>(),
        others in prop::collection::vec((0u16..0xfff0, any::<u8>(), 0usize..4), 0..4),
    ) {
        let data = [0xa5u8; 12];
        let mut opts: Vec<GeneveOption<'_>> = others
            .iter()
            .map(|&(class, kind, words)| GeneveOption { class, kind, data: &data[..words * 4] })
            .collect();
        let id = Identity { group, applied };
        let mut body = [0u8; identity::LEN];
        id.emit(&mut body).unwrap();
        let [g0, g1] = group.to_be_bytes();
        let flags = if applied { identity::APPLIED } else { 0 };
        let mine = [g0, g1, flags, 0];
        opts.push(GeneveOption { class: identity::CLASS, kind: identity::TYPE, data: &mine });
        let mut buf = vec![0u8; MAX_OPTIONS_LEN];
        let n = emit_options(&opts, &mut buf).unwrap();
        prop_assert_eq!(&buf[n - identity::LEN..n], &body[..]);
        prop_assert_eq!(Identity::find(&buf[..n]), Ok(Some(id)));
        // Cut anywhere inside the last option: refused.
        for cut in n - identity::LEN + 1..n {
            prop_assert!(Identity::find(&buf[..cut]).is_err());
        }
    }

    #[test]
    fn valid_reprs_round_trip(
        oam in any::<bool>(),
        critical in any::<bool>(),
        protocol in any::<u16>(),
        vni in 0u32..=0xff_ffff,
        options in arb_options(),
        payload in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let area = options_bytes(&options).unwrap();
        let repr = GeneveRepr { oam, critical, protocol, vni, options: &area };
        let mut buf = vec![0xffu8; repr.buffer_len() + payload.len()];
        let mut p = GenevePacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&payload);
        let p = GenevePacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(GeneveRepr::parse(&p).unwrap(), repr);
        prop_assert_eq!(p.payload(), &payload[..]);
        let walked: Vec<(u16, u8, Vec<u8>)> = p
            .option_iter()
            .map(|o| o.map(|o| (o.class, o.kind, o.data.to_vec())).unwrap())
            .collect();
        prop_assert_eq!(walked, options);
    }
}
