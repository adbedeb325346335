//! TABLE_FEATURES (§7.3.5.5): what nvo's one table matches, applies and sets — what Open
//! vSwitch's ovs-ofctl asks for before it sends a flow.

use crate::oxm::{ofb, oxm_header, CLASS_BASIC, CLASS_EXPERIMENTER, CLASS_NXM1, NXM_TUN_IPV4_DST};
use crate::wire::pad8;

/// The matchable fields: (class, field, maskable, value length).
const MATCH: [(u16, u8, bool, u8); 26] = [
    (CLASS_BASIC, ofb::IN_PORT, false, 4),
    (CLASS_BASIC, ofb::ETH_DST, true, 6),
    (CLASS_BASIC, ofb::ETH_SRC, true, 6),
    (CLASS_BASIC, ofb::ETH_TYPE, false, 2),
    (CLASS_BASIC, ofb::VLAN_VID, true, 2),
    (CLASS_BASIC, ofb::IP_DSCP, false, 1),
    (CLASS_BASIC, ofb::IP_PROTO, false, 1),
    (CLASS_BASIC, ofb::IPV4_SRC, true, 4),
    (CLASS_BASIC, ofb::IPV4_DST, true, 4),
    (CLASS_BASIC, ofb::TCP_SRC, true, 2),
    (CLASS_BASIC, ofb::TCP_DST, true, 2),
    (CLASS_BASIC, ofb::UDP_SRC, true, 2),
    (CLASS_BASIC, ofb::UDP_DST, true, 2),
    (CLASS_BASIC, ofb::SCTP_SRC, true, 2),
    (CLASS_BASIC, ofb::SCTP_DST, true, 2),
    (CLASS_BASIC, ofb::ICMPV4_TYPE, false, 1),
    (CLASS_BASIC, ofb::ICMPV4_CODE, false, 1),
    (CLASS_BASIC, ofb::ARP_OP, false, 2),
    (CLASS_BASIC, ofb::ARP_SPA, true, 4),
    (CLASS_BASIC, ofb::ARP_TPA, true, 4),
    (CLASS_BASIC, ofb::IPV6_SRC, true, 16),
    (CLASS_BASIC, ofb::IPV6_DST, true, 16),
    (CLASS_BASIC, ofb::ICMPV6_TYPE, false, 1),
    (CLASS_BASIC, ofb::ICMPV6_CODE, false, 1),
    (CLASS_BASIC, ofb::TUNNEL_ID, true, 8),
    (CLASS_EXPERIMENTER, ofb::TCP_FLAGS, true, 2),
];

/// The fields SET_FIELD takes.
const SET: [(u16, u8, u8); 7] = [
    (CLASS_BASIC, ofb::ETH_DST, 6),
    (CLASS_BASIC, ofb::ETH_SRC, 6),
    (CLASS_BASIC, ofb::VLAN_VID, 2),
    (CLASS_BASIC, ofb::VLAN_PCP, 1),
    (CLASS_BASIC, ofb::IP_DSCP, 1),
    (CLASS_BASIC, ofb::TUNNEL_ID, 8),
    (CLASS_NXM1, NXM_TUN_IPV4_DST, 4),
];

fn property(out: &mut Vec<u8>, kind: u16, body: &[u8]) {
    let len = 4 + body.len();
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + pad8(len), 0);
}

/// The one table's `ofp_table_features`, for at most `max_entries` rules.
pub fn table_features(max_entries: u32) -> Vec<u8> {
    let mut e = vec![0, 0, 0, 0, 0, 0, 0, 0];
    let mut name = [0u8; 32];
    name[..3].copy_from_slice(b"nvo");
    e.extend_from_slice(&name);
    e.extend_from_slice(&[0; 16]); // metadata match, write
    e.extend_from_slice(&0u32.to_be_bytes()); // config
    e.extend_from_slice(&max_entries.to_be_bytes());
    // INSTRUCTIONS: APPLY_ACTIONS, METER.
    property(&mut e, 0, &[0, 4, 0, 4, 0, 6, 0, 4]);
    property(&mut e, 2, &[]); // NEXT_TABLES
    property(&mut e, 4, &[]); // WRITE_ACTIONS
                              // APPLY_ACTIONS: OUTPUT, PUSH_VLAN, POP_VLAN, SET_NW_TTL, DEC_NW_TTL, SET_FIELD.
    let apply: Vec<u8> = [0u16, 17, 18, 23, 24, 25]
        .iter()
        .flat_map(|t| [t.to_be_bytes(), 4u16.to_be_bytes()].concat())
        .collect();
    property(&mut e, 6, &apply);
    let mut fields = Vec::new();
    let mut wild = Vec::new();
    for (class, f, mask, len) in MATCH {
        oxm_header(&mut fields, class, f, mask, len);
        oxm_header(&mut wild, class, f, false, len);
    }
    property(&mut e, 8, &fields); // MATCH
    property(&mut e, 10, &wild); // WILDCARDS: every field may be left out
    property(&mut e, 12, &[]); // WRITE_SETFIELD
    let mut set = Vec::new();
    for (class, f, len) in SET {
        oxm_header(&mut set, class, f, false, len);
    }
    property(&mut e, 14, &set); // APPLY_SETFIELD
    let len = e.len() as u16;
    e[0..2].copy_from_slice(&len.to_be_bytes());
    e
}
