//! The protocols nvo speaks out of the box, each written as a [`Profile`] value.
//!
//! Offsets and bits cite the RFC or draft section they come from; the byte diagrams are in the
//! matching `nvo_wire` modules, whose emitters the engine tests compare these templates against.
//! Templates hold the payload field's value for the default payload (Ethernet), so that they
//! read as the header sent. [`all`] lists them in the order [`crate::engine::Engine::new`] registers them, so their
//! [`ProfileId`]s are the constants in [`ids`]. On a transport shared by several built-ins, the
//! one whose matches test more bits is tried first (vxlan-gbp before vxlan). Built-ins cannot be
//! removed.

use nvo_wire::{gre, ip_proto, overlay, ports, stt, vxlan, vxlan_gpe};

use crate::profile::{
    ByteField, HeaderLen, Match, Param, Payload, PayloadField, Profile, Transport,
};

/// Names of the built-in profiles.
pub mod names {
    /// VXLAN, RFC 7348.
    pub const VXLAN: &str = "vxlan";
    /// VXLAN Group Policy, draft-smith-vxlan-group-policy-05.
    pub const VXLAN_GBP: &str = "vxlan-gbp";
    /// VXLAN-GPE, draft-ietf-nvo3-vxlan-gpe-12.
    pub const VXLAN_GPE: &str = "vxlan-gpe";
    /// Geneve, RFC 8926.
    pub const GENEVE: &str = "geneve";
    /// NVGRE, RFC 7637.
    pub const NVGRE: &str = "nvgre";
    /// nvo's routed overlay header (`nvo_wire::overlay`).
    pub const OVERLAY: &str = "overlay";
    /// IPv4 in IPv4, RFC 2003.
    pub const IPIP: &str = "ipip";
    /// IPv6 in IPv6, RFC 2473.
    pub const IP6IP6: &str = "ip6ip6";
    /// STT, draft-davie-stt-08.
    pub const STT: &str = "stt";
    /// NSH (RFC 8300) over VXLAN-GPE, keyed by service path and index.
    pub const VXLAN_GPE_NSH: &str = "vxlan-gpe-nsh";
    /// ILA, draft-herbert-intarea-ila-01: no header at all ([`super::ila_profile`]).
    pub const ILA: &str = "ila";
}

/// The ids [`crate::engine::Engine::new`] gives the built-ins (their index in [`all`]).
pub mod ids {
    use crate::profile::ProfileId;
    /// `vxlan`.
    pub const VXLAN: ProfileId = ProfileId(0);
    /// `vxlan-gbp`.
    pub const VXLAN_GBP: ProfileId = ProfileId(1);
    /// `vxlan-gpe`.
    pub const VXLAN_GPE: ProfileId = ProfileId(2);
    /// `geneve`.
    pub const GENEVE: ProfileId = ProfileId(3);
    /// `nvgre`.
    pub const NVGRE: ProfileId = ProfileId(4);
    /// `overlay`.
    pub const OVERLAY: ProfileId = ProfileId(5);
    /// `ipip`.
    pub const IPIP: ProfileId = ProfileId(6);
    /// `ip6ip6`.
    pub const IP6IP6: ProfileId = ProfileId(7);
    /// `stt`.
    pub const STT: ProfileId = ProfileId(8);
    /// `vxlan-gpe-nsh`.
    pub const VXLAN_GPE_NSH: ProfileId = ProfileId(9);
}

/// Every built-in, in registration (id) order.
pub fn all() -> Vec<Profile> {
    vec![
        vxlan_profile(),
        vxlan_gbp_profile(),
        vxlan_gpe_profile(),
        geneve_profile(),
        nvgre_profile(),
        overlay_profile(),
        ipip_profile(),
        ip6ip6_profile(),
        stt_profile(),
        vxlan_gpe_nsh_profile(),
    ]
}

/// Whether `name` is a built-in's.
pub fn is_builtin(name: &str) -> bool {
    [
        names::VXLAN,
        names::VXLAN_GBP,
        names::VXLAN_GPE,
        names::GENEVE,
        names::NVGRE,
        names::OVERLAY,
        names::IPIP,
        names::IP6IP6,
        names::STT,
        names::VXLAN_GPE_NSH,
        names::ILA,
    ]
    .contains(&name)
}

/// A profile with a fixed-length header, no key of its own, no params, patches or payload field.
fn fixed(name: &str, transport: Transport, template: Vec<u8>, payload: Payload) -> Profile {
    Profile {
        name: name.to_string(),
        transport,
        header_len: HeaderLen::Fixed(template.len() as u16),
        template,
        vni: None,
        key: None,
        entropy: None,
        matches: Vec::new(),
        payload,
        payload_field: None,
        params: Vec::new(),
        patches: Vec::new(),
        dont_learn: None,
        hop: None,
    }
}

/// VXLAN, RFC 7348 §5: I flag (0x08 of byte 0) MUST be 1; VNI in bytes 4..7; every other bit
/// reserved, sent as zero and ignored on receipt. UDP port 4789 (§5, IANA).
pub fn vxlan_profile() -> Profile {
    let mut template = vec![0u8; vxlan::HEADER_LEN];
    template[0] = vxlan::flags::I;
    Profile {
        vni: Some(ByteField::new(4, 3)),
        matches: vec![Match::new(0, &[vxlan::flags::I], &[vxlan::flags::I])],
        ..fixed(
            names::VXLAN,
            Transport::Udp(ports::VXLAN),
            template,
            Payload::Ethernet,
        )
    }
}

/// VXLAN-GBP, draft-smith-vxlan-group-policy-05 §2.1: G (0x80) and I (0x08) in byte 0; D, don't
/// learn, is 0x40 of byte 1; the Group Policy ID is bytes 2..4; VNI as VXLAN. Same UDP port.
pub fn vxlan_gbp_profile() -> Profile {
    let flags = vxlan::flags::G | vxlan::flags::I;
    let mut template = vec![0u8; vxlan::HEADER_LEN];
    template[0] = flags;
    Profile {
        vni: Some(ByteField::new(4, 3)),
        matches: vec![Match::new(0, &[flags], &[flags])],
        params: vec![Param {
            name: "group".to_string(),
            field: ByteField::new(2, 2),
        }],
        dont_learn: Some(Match::new(1, &[vxlan::flags::D], &[vxlan::flags::D])),
        hop: None,
        ..fixed(
            names::VXLAN_GBP,
            Transport::Udp(ports::VXLAN),
            template,
            Payload::Ethernet,
        )
    }
}

/// VXLAN-GPE, draft-ietf-nvo3-vxlan-gpe-12 §3.1: byte 0 holds Ver (0x30, must be 0), I (0x08)
/// and P (0x04), both set; Next Protocol is byte 3 (§3.2: IPv4 1, IPv6 2, Ethernet 3, NSH 4);
/// VNI bytes 4..7. The B and O bits are not tested. UDP port 4790 (§3.2).
pub fn vxlan_gpe_profile() -> Profile {
    let flags = vxlan_gpe::flags::I | vxlan_gpe::flags::P;
    let tested = vxlan_gpe::flags::VERSION | flags;
    let mut template = vec![0u8; vxlan_gpe::HEADER_LEN];
    template[0] = flags;
    template[3] = 3;
    Profile {
        vni: Some(ByteField::new(4, 3)),
        matches: vec![Match::new(0, &[tested], &[flags])],
        payload_field: Some(PayloadField {
            field: ByteField::new(3, 1),
            ethernet: Some(3),
            ipv4: Some(1),
            ipv6: Some(2),
            nsh: Some(4),
        }),
        ..fixed(
            names::VXLAN_GPE,
            Transport::Udp(ports::VXLAN_GPE),
            template,
            Payload::Ethernet,
        )
    }
}

/// Geneve, RFC 8926 §3.4: Ver (0xc0 of byte 0) must be 0; Opt Len (0x3f) counts 4-byte words of
/// options, so the header is 8 + 4 × Opt Len and options are skipped; the O (control) and C
/// (critical options) bits of byte 1 must be clear, because a control packet's payload MUST NOT
/// be forwarded (§3.4) and nvo understands no critical option (§3.5: such packets MUST be
/// dropped); Protocol Type bytes 2..4 is the payload's EtherType (0x6558 Ethernet); VNI bytes
/// 4..7. UDP port 6081 (§3.3). Sent without options.
pub fn geneve_profile() -> Profile {
    use nvo_wire::geneve::{protocol, HEADER_LEN};
    let mut template = vec![0u8; HEADER_LEN];
    template[2..4].copy_from_slice(&protocol::ETHERNET.to_be_bytes());
    Profile {
        vni: Some(ByteField::new(4, 3)),
        matches: vec![Match::new(0, &[0xc0, 0xc0], &[0x00, 0x00])],
        header_len: HeaderLen::Field {
            offset: 0,
            mask: 0x3f,
            scale: 4,
            base: HEADER_LEN as u16,
        },
        payload_field: Some(PayloadField {
            field: ByteField::new(2, 2),
            ethernet: Some(protocol::ETHERNET.into()),
            ipv4: Some(protocol::IPV4.into()),
            ipv6: Some(protocol::IPV6.into()),
            nsh: None,
        }),
        ..fixed(
            names::GENEVE,
            Transport::Udp(ports::GENEVE),
            template,
            Payload::Ethernet,
        )
    }
}

/// NVGRE, RFC 7637 §3.2 over GRE (RFC 2784 §2, RFC 2890 §2): K (0x20 of byte 0) set, C (0x80)
/// and S (0x10) clear so that the key is at bytes 4..8; R, s and Recur (RFC 2784 §2.3: bits 1-5
/// MUST be zero) and Ver (0x07 of byte 1) zero; Protocol Type 0x6558 (Transparent Ethernet
/// Bridging). The key is the 24-bit VSID (bytes 4..7) and the FlowID (byte 7), which carries
/// flow entropy. IP protocol 47.
pub fn nvgre_profile() -> Profile {
    let k = (gre::flags::K >> 8) as u8;
    let [tb_hi, tb_lo] = gre::PROTO_TEB.to_be_bytes();
    let template = vec![k, 0, tb_hi, tb_lo, 0, 0, 0, 0];
    Profile {
        vni: Some(ByteField::new(4, 3)),
        entropy: Some(ByteField::new(7, 1)),
        matches: vec![Match::new(
            0,
            &[0xfc, 0x07, 0xff, 0xff],
            &[k, 0x00, tb_hi, tb_lo],
        )],
        ..fixed(
            names::NVGRE,
            Transport::Ip(ip_proto::GRE),
            template,
            Payload::Ethernet,
        )
    }
}

/// NSH (RFC 8300) over VXLAN-GPE (draft-ietf-nvo3-vxlan-gpe-12), as one 16-byte header: the
/// GPE header with Next Protocol 4 (NSH, §3.2), then NSH's base header (§2.2: Ver 0, O 0,
/// TTL 63, Length 2 words — MD type 2 without context headers, §2.5 — Next Protocol 3,
/// Ethernet) and service path header (§2.3: SPI bytes 12..15, SI byte 15). The lookup key is
/// SPI and SI together, so a node looks up where a service path goes next; SI is the hop field
/// a relay decrements (§2.3: "decremented by service functions"). Params `spi` and `si` (255
/// unless set) name the path a network's frames start on. The header length comes from NSH's
/// Length field (6 bits of byte 9, in 4-byte words) after the 8-byte GPE header.
pub fn vxlan_gpe_nsh_profile() -> Profile {
    let flags = vxlan_gpe::flags::I | vxlan_gpe::flags::P;
    let tested = vxlan_gpe::flags::VERSION | flags;
    let mut template = vec![0u8; 16];
    template[0] = flags;
    template[3] = 4;
    // Ver 0, O 0, U 0, TTL 63 (6 bits), Length 2 (6 bits): 00 0 0 111111 000010.
    template[8] = 0x0f;
    template[9] = 0xc2;
    template[10] = 2;
    template[11] = 3;
    template[15] = 255;
    let param = |name: &str, offset, len| Param {
        name: name.to_string(),
        field: ByteField::new(offset, len),
    };
    Profile {
        vni: Some(ByteField::new(4, 3)),
        key: Some(ByteField::new(12, 4)),
        matches: vec![
            Match::new(0, &[tested, 0, 0, 0xff], &[flags, 0, 0, 4]),
            Match::new(8, &[0xc0, 0, 0x0f, 0xff], &[0, 0, 2, 3]),
        ],
        header_len: HeaderLen::Field {
            offset: 9,
            mask: 0x3f,
            scale: 4,
            base: 8,
        },
        params: vec![param("spi", 12, 3), param("si", 15, 1)],
        hop: Some(ByteField::new(15, 1)),
        ..fixed(
            names::VXLAN_GPE_NSH,
            Transport::Udp(ports::VXLAN_GPE),
            template,
            Payload::Ethernet,
        )
    }
}

/// nvo's overlay header (`nvo_wire::overlay`, version 1): Version byte 0 must be 1; Application
/// byte 1 names the payload (Ethernet 7, IPv4 4, IPv6 6); TTL byte 2 (param `ttl`, 64 unless
/// set); VNI bytes 4..7; flow hash bytes 8..12 carries entropy; destination and source node IDs
/// bytes 12..16 and 16..20 (params `dst_node`, `src_node`). UDP port 60002.
pub fn overlay_profile() -> Profile {
    let mut template = vec![0u8; overlay::HEADER_LEN];
    template[0] = overlay::VERSION;
    template[1] = 7;
    template[2] = 64;
    let param = |name: &str, offset, len| Param {
        name: name.to_string(),
        field: ByteField::new(offset, len),
    };
    Profile {
        vni: Some(ByteField::new(4, 3)),
        entropy: Some(ByteField::new(8, 4)),
        matches: vec![Match::new(0, &[0xff], &[overlay::VERSION])],
        payload_field: Some(PayloadField {
            field: ByteField::new(1, 1),
            ethernet: Some(7),
            ipv4: Some(4),
            ipv6: Some(6),
            nsh: None,
        }),
        params: vec![
            param("ttl", 2, 1),
            param("dst_node", 12, 4),
            param("src_node", 16, 4),
        ],
        hop: Some(ByteField::new(2, 1)),
        ..fixed(
            names::OVERLAY,
            Transport::Udp(ports::OVERLAY),
            template,
            Payload::Ethernet,
        )
    }
}

/// IPv4 in IPv4, RFC 2003 §3: no header between the outer and inner IP headers. IP protocol 4.
/// No VNI travels, so the key is empty: one network per engine receives on it.
pub fn ipip_profile() -> Profile {
    fixed(names::IPIP, Transport::Ip(4), Vec::new(), Payload::Ipv4)
}

/// IPv6 in IPv6, RFC 2473 §3: no header in between. IP protocol 41. Empty key, as ipip.
pub fn ip6ip6_profile() -> Profile {
    fixed(names::IP6IP6, Transport::Ip(41), Vec::new(), Payload::Ipv6)
}

/// ILA (draft-herbert-intarea-ila-01) as nvod's configuration checks see it: IPv6 packets,
/// no header, no transport of its own (the protocol number is the ip6ip6 one only to fill the
/// field: nothing is ever bound to it). Not in [`all`]: the engine never encapsulates nor
/// decapsulates ILA; nvod and the datapath take the name apart (`nvo_pipeline::l3::ila`).
pub fn ila_profile() -> Profile {
    fixed(names::ILA, Transport::Ip(41), Vec::new(), Payload::Ipv6)
}

/// STT, draft-davie-stt-08 §3: the 18-byte frame header (Version byte 0 must be 0; Flags, L4
/// Offset, Reserved, MSS, PCP/V/VLAN ID all zero here — the stt module sets them per frame;
/// Context ID bytes 8..16 = the VNI; two bytes of padding). It travels over IP protocol 6 inside
/// STT's TCP-like segments, which the stt module builds and reassembles: decap is given the
/// reassembled frame.
pub fn stt_profile() -> Profile {
    let template = vec![0u8; stt::STT_HEADER_LEN];
    Profile {
        vni: Some(ByteField::new(8, 8)),
        matches: vec![Match::new(0, &[0xff], &[stt::VERSION])],
        ..fixed(names::STT, Transport::Ip(6), template, Payload::Ethernet)
    }
}
