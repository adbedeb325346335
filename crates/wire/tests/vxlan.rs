//! VXLAN and VXLAN-GBP against independent implementations:
//! scapy's vectors parse to scapy's values, and tshark reads back what nvo emits.

mod common;

use common::*;
use nvo_wire::vxlan::{Gbp, VxlanPacket, VxlanRepr, HEADER_LEN};

fn expected(v: &Vector) -> VxlanRepr {
    VxlanRepr {
        vni: v.u64("vni") as u32,
        gbp: v.bool("gbp").then(|| Gbp {
            dont_learn: v.bool("dont_learn"),
            policy_applied: v.bool("policy_applied"),
            group_policy_id: v.u64("group_policy_id") as u16,
        }),
    }
}

#[test]
fn scapy_vectors_parse_to_scapy_values() {
    for v in scapy_vectors("vxlan") {
        let bytes = v.header();
        let packet = VxlanPacket::new_checked(&bytes[..]).unwrap();
        let repr = VxlanRepr::parse(&packet).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(repr, expected(&v), "{}", v.name);
        // The inner frame starts right after the header: its addresses are scapy's.
        let inner = packet.payload();
        assert_eq!(
            mac(&inner[0..6]),
            v.fields["inner_dst"].as_str().unwrap(),
            "{}",
            v.name
        );
        assert_eq!(
            mac(&inner[6..12]),
            v.fields["inner_src"].as_str().unwrap(),
            "{}",
            v.name
        );
    }
}

#[test]
fn emit_reproduces_scapy_bytes() {
    for v in scapy_vectors("vxlan") {
        let bytes = v.header();
        let mut out = [0u8; HEADER_LEN];
        expected(&v)
            .emit(&mut VxlanPacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(&out[..], &bytes[..HEADER_LEN], "{}", v.name);
    }
}

fn mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[test]
fn tshark_reads_what_nvo_emits() {
    let cases = [
        VxlanRepr { vni: 1, gbp: None },
        VxlanRepr {
            vni: 0xabcdef,
            gbp: None,
        },
        VxlanRepr {
            vni: 0xffffff,
            gbp: None,
        },
        VxlanRepr {
            vni: 4242,
            gbp: Some(Gbp {
                dont_learn: true,
                policy_applied: false,
                group_policy_id: 0x1234,
            }),
        },
        VxlanRepr {
            vni: 7,
            gbp: Some(Gbp {
                dont_learn: false,
                policy_applied: true,
                group_policy_id: 0xffff,
            }),
        },
    ];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|r| {
            let inner = inner_frame([0x52, 0x54, 0, 0, 0, 1], [0x52, 0x54, 0, 0, 0, 2]);
            let mut payload = vec![0u8; r.buffer_len() + inner.len()];
            let mut p = VxlanPacket::new_unchecked(&mut payload[..]);
            r.emit(&mut p).unwrap();
            p.payload_mut().copy_from_slice(&inner);
            udp_frame(50000, nvo_wire::ports::VXLAN, &payload)
        })
        .collect();
    let rows = tshark_fields(
        "vxlan",
        &frames,
        &[
            "vxlan.vni",
            "vxlan.flag_i",
            "vxlan.flag_g",
            "vxlan.flag_d",
            "vxlan.flag_a",
            "vxlan.gbp",
            "eth.src",
        ],
        &[],
    );
    for (r, row) in cases.iter().zip(rows) {
        assert_eq!(
            tshark_num(&row[0]),
            u64::from(r.vni),
            "vni of {r:?}: {row:?}"
        );
        assert!(tshark_bool(&row[1]), "I flag of {r:?}: {row:?}");
        assert_eq!(
            tshark_bool(&row[2]),
            r.gbp.is_some(),
            "G flag of {r:?}: {row:?}"
        );
        if let Some(g) = r.gbp {
            assert_eq!(
                tshark_bool(&row[3]),
                g.dont_learn,
                "D flag of {r:?}: {row:?}"
            );
            assert_eq!(
                tshark_bool(&row[4]),
                g.policy_applied,
                "A flag of {r:?}: {row:?}"
            );
            assert_eq!(
                tshark_num(&row[5]),
                u64::from(g.group_policy_id),
                "gbp of {r:?}: {row:?}"
            );
        }
        // Both the outer and the inner Ethernet source: tshark dissected the inner frame.
        assert!(
            row[6].contains("52:54:00:00:00:01"),
            "inner frame of {r:?}: {row:?}"
        );
    }
}
