//! VXLAN-GPE against independent implementations: scapy's vectors parse to scapy's values,
//! tshark reads back what nvo emits, and arbitrary bytes never panic.

mod common;

use common::*;
use nvo_wire::nsh::{NshPacket, NshRepr};
use nvo_wire::std_wire::IpProtocol;
use nvo_wire::vxlan_gpe::{flags, NextProtocol, VxlanGpePacket, VxlanGpeRepr, HEADER_LEN};
use nvo_wire::{ports, Error};
use proptest::prelude::*;

fn expected(v: &Vector) -> VxlanGpeRepr {
    VxlanGpeRepr {
        vni: v.u64("vni") as u32,
        next_protocol: NextProtocol::from(v.u64("next_protocol") as u8),
        oam: v.bool("oam"),
        // gen_scapy.py never sets B.
        bum: false,
    }
}

#[test]
fn scapy_vectors_parse_to_scapy_values() {
    let vectors = scapy_vectors("vxlan_gpe");
    for v in &vectors {
        let bytes = v.header();
        let packet = VxlanGpePacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(u64::from(packet.version()), v.u64("version"), "{}", v.name);
        assert!(
            packet.vni_valid() && packet.next_protocol_present(),
            "{}",
            v.name
        );
        let repr = VxlanGpeRepr::parse(&packet).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(repr, expected(v), "{}", v.name);
        // The payload starts right after the header and is what Next Protocol says.
        let inner = packet.payload();
        match repr.next_protocol {
            NextProtocol::Ethernet => assert_eq!(&inner[..6], &[0x52, 0x54, 0, 0xaa, 0xbb, 2]),
            NextProtocol::Ipv4 => assert_eq!(inner[0], 0x45, "{}", v.name),
            NextProtocol::Ipv6 => assert_eq!(inner[0] >> 4, 6, "{}", v.name),
            NextProtocol::Nsh => {
                let nsh = NshRepr::parse(&NshPacket::new_checked(inner).unwrap()).unwrap();
                assert_eq!((nsh.spi, nsh.si), (0x10, 255), "{}", v.name);
            }
            other => panic!("{}: unexpected next protocol {other}", v.name),
        }
    }
    // Every Next Protocol and both O values appear among the vectors.
    for np in [1, 2, 3, 4] {
        assert!(
            vectors.iter().any(|v| v.u64("next_protocol") == np),
            "no vector for {np}"
        );
    }
    assert!(vectors.iter().any(|v| v.bool("oam")));
}

#[test]
fn emit_reproduces_scapy_bytes() {
    for v in scapy_vectors("vxlan_gpe") {
        let bytes = v.header();
        let mut out = [0xffu8; HEADER_LEN];
        expected(&v)
            .emit(&mut VxlanGpePacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(&out[..], &bytes[..HEADER_LEN], "{}", v.name);
    }
}

/// An IPv6 header with no payload (Next Header 59) from fd00::1 to fd00::2, built by hand.
fn inner_ipv6() -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    h
}

/// A payload that matches `np`, so that tshark dissects what follows the header.
fn inner_for(np: NextProtocol) -> Vec<u8> {
    match np {
        // common::ipv4_frame minus its Ethernet header: an IPv4 packet from 192.0.2.1.
        NextProtocol::Ipv4 => ipv4_frame(IpProtocol::Udp, &[0; 8])[14..].to_vec(),
        NextProtocol::Ipv6 => inner_ipv6(),
        NextProtocol::Nsh => {
            let mut nsh = vec![0x0f, 0xc6, 0x01, 0x03, 0x00, 0x12, 0x34, 0xfe];
            nsh.extend_from_slice(&[0u8; 16]);
            nsh.extend(inner_frame(
                [0x52, 0x54, 0, 0, 0, 1],
                [0x52, 0x54, 0, 0, 0, 2],
            ));
            nsh
        }
        _ => inner_frame([0x52, 0x54, 0, 0, 0, 1], [0x52, 0x54, 0, 0, 0, 2]),
    }
}

#[test]
fn tshark_reads_what_nvo_emits() {
    let gpe = |vni, next_protocol, oam, bum| VxlanGpeRepr {
        vni,
        next_protocol,
        oam,
        bum,
    };
    let cases = [
        gpe(1, NextProtocol::Ethernet, false, false),
        gpe(0xabcdef, NextProtocol::Ipv4, false, true),
        gpe(0xffffff, NextProtocol::Ipv6, true, false),
        gpe(0, NextProtocol::Nsh, false, false),
        gpe(4242, NextProtocol::Ethernet, true, true),
        gpe(77, NextProtocol::Mpls, false, false),
        gpe(78, NextProtocol::Unknown(0x7e), false, false),
    ];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|r| {
            let inner = inner_for(r.next_protocol);
            let mut payload = vec![0u8; r.buffer_len() + inner.len()];
            let mut p = VxlanGpePacket::new_unchecked(&mut payload[..]);
            r.emit(&mut p).unwrap();
            p.payload_mut().copy_from_slice(&inner);
            udp_frame(50000, ports::VXLAN_GPE, &payload)
        })
        .collect();
    let rows = tshark_fields(
        "vxlan-gpe",
        &frames,
        &[
            "vxlan.flags",
            "vxlan.ver",
            "vxlan.i_bit",
            "vxlan.p_bit",
            "vxlan.o_bit",
            "vxlan.next_proto",
            "vxlan.vni",
            "eth.src",
            "ip.src",
            "ipv6.src",
            "nsh.spi",
        ],
        &[],
    );
    for (r, row) in cases.iter().zip(rows) {
        let mut f = flags::I | flags::P;
        if r.bum {
            f |= flags::B;
        }
        if r.oam {
            f |= flags::O;
        }
        // tshark 4.0 has no field for B: the whole flags byte covers it.
        assert_eq!(tshark_num(&row[0]), u64::from(f), "flags of {r:?}: {row:?}");
        assert_eq!(tshark_num(&row[1]), 0, "version of {r:?}: {row:?}");
        assert!(tshark_bool(&row[2]), "I bit of {r:?}: {row:?}");
        assert!(tshark_bool(&row[3]), "P bit of {r:?}: {row:?}");
        assert_eq!(tshark_bool(&row[4]), r.oam, "O bit of {r:?}: {row:?}");
        let np = u64::from(u8::from(r.next_protocol));
        assert_eq!(tshark_num(&row[5]), np, "next protocol of {r:?}: {row:?}");
        assert_eq!(
            tshark_num(&row[6]),
            u64::from(r.vni),
            "vni of {r:?}: {row:?}"
        );
        // tshark followed Next Protocol into the payload nvo put there.
        match r.next_protocol {
            NextProtocol::Ethernet => assert!(row[7].contains("52:54:00:00:00:01"), "{row:?}"),
            NextProtocol::Ipv4 => assert_eq!(row[8], "192.0.2.1,192.0.2.1", "{row:?}"),
            NextProtocol::Ipv6 => assert_eq!(row[9], "fd00::1", "{row:?}"),
            NextProtocol::Nsh => {
                assert_eq!(tshark_num(&row[10]), 0x1234, "{row:?}");
                assert!(row[7].contains("52:54:00:00:00:01"), "{row:?}");
            }
            _ => assert!(!row[7].contains("52:54:00:00:00:01"), "{row:?}"),
        }
    }
}

fn repr_strategy() -> impl Strategy<Value = VxlanGpeRepr> {
    (0..=0xff_ffffu32, any::<u8>(), any::<bool>(), any::<bool>()).prop_map(|(vni, np, oam, bum)| {
        VxlanGpeRepr {
            vni,
            next_protocol: NextProtocol::from(np),
            oam,
            bum,
        }
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
        let Ok(packet) = VxlanGpePacket::new_checked(&bytes[..]) else {
            prop_assert!(bytes.len() < HEADER_LEN);
            return Ok(());
        };
        let _ = (packet.flags(), packet.version(), packet.bum(), packet.oam(), packet.reserved());
        let _ = (packet.next_protocol(), packet.vni(), packet.payload());
        match VxlanGpeRepr::parse(&packet) {
            Ok(repr) => {
                let mut out = [0u8; HEADER_LEN];
                repr.emit(&mut VxlanGpePacket::new_unchecked(&mut out[..])).unwrap();
                let again = VxlanGpeRepr::parse(&VxlanGpePacket::new_checked(&out[..]).unwrap());
                prop_assert_eq!(again, Ok(repr));
            }
            Err(Error::Invalid { .. }) => {
                let ok = packet.version() == 0 && packet.vni_valid() && packet.next_protocol_present();
                prop_assert!(!ok, "rejected a valid header: {:02x?}", bytes);
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn valid_reprs_round_trip(repr in repr_strategy(), payload in proptest::collection::vec(any::<u8>(), 0..16)) {
        let mut buf = vec![0xa5u8; HEADER_LEN + payload.len()];
        let mut p = VxlanGpePacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&payload);
        let packet = VxlanGpePacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(VxlanGpeRepr::parse(&packet), Ok(repr));
        prop_assert_eq!(packet.payload(), &payload[..]);
        prop_assert_eq!(packet.reserved(), 0);
    }
}
