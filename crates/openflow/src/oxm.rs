//! OXM (OpenFlow Extensible Match, §7.2.3): `ofp_match` with OXM TLVs read into an
//! [`nvo_flow::Match`] and written back from one.
//!
//! ```text
//!  ofp_match:  type = 1 (OXM) (16) | length (16, without padding) | OXM TLVs | pad to 8
//!  OXM TLV:    class (16) | field (7) | hasmask (1) | length (8) | value [| mask]
//!              class 0x8000: OpenFlow basic;  class 0xffff: experimenter, then a 32-bit
//!              experimenter ID — ONF's (0x4f4e4600) carries TCP flags (field 42), as Open
//!              vSwitch sends them in OpenFlow 1.3
//! ```
//!
//! Each field's prerequisites (§7.2.3.6) are checked against the match as a whole, so a rule
//! never matches the zeros a key holds for fields a packet lacks. Fields nvo does not match on
//! (IN_PHY_PORT, METADATA, ECN, MPLS, PBB, IPv6 flow label/ND/extension headers, ARP
//! hardware addresses, VLAN PCP) are refused with BAD_FIELD. Transport ports may be masked
//! (OpenFlow 1.3 does not allow it; Open vSwitch sends such masks and nvo's table takes them).

use nvo_flow::key::{ethertype, proto};
use nvo_flow::{Field, Match};

use crate::wire::{pad8, OfError, Reader};

/// OXM class: OpenFlow basic.
pub const CLASS_BASIC: u16 = 0x8000;
/// OXM class: experimenter.
pub const CLASS_EXPERIMENTER: u16 = 0xffff;
/// Nicira extension class 1 (NXM_1): tunnel addresses.
pub const CLASS_NXM1: u16 = 0x0001;
/// ONF's experimenter ID.
pub const ONF: u32 = 0x4f4e_4600;

/// OpenFlow basic field numbers (§7.2.3.7, `oxm_ofb_match_fields`).
#[allow(missing_docs)]
pub mod ofb {
    pub const IN_PORT: u8 = 0;
    pub const ETH_DST: u8 = 3;
    pub const ETH_SRC: u8 = 4;
    pub const ETH_TYPE: u8 = 5;
    pub const VLAN_VID: u8 = 6;
    pub const VLAN_PCP: u8 = 7;
    pub const IP_DSCP: u8 = 8;
    pub const IP_PROTO: u8 = 10;
    pub const IPV4_SRC: u8 = 11;
    pub const IPV4_DST: u8 = 12;
    pub const TCP_SRC: u8 = 13;
    pub const TCP_DST: u8 = 14;
    pub const UDP_SRC: u8 = 15;
    pub const UDP_DST: u8 = 16;
    pub const SCTP_SRC: u8 = 17;
    pub const SCTP_DST: u8 = 18;
    pub const ICMPV4_TYPE: u8 = 19;
    pub const ICMPV4_CODE: u8 = 20;
    pub const ARP_OP: u8 = 21;
    pub const ARP_SPA: u8 = 22;
    pub const ARP_TPA: u8 = 23;
    pub const IPV6_SRC: u8 = 26;
    pub const IPV6_DST: u8 = 27;
    pub const ICMPV6_TYPE: u8 = 29;
    pub const ICMPV6_CODE: u8 = 30;
    pub const TUNNEL_ID: u8 = 38;
    /// TCP flags: an OpenFlow 1.5 field, sent in 1.3 as ONF's experimenter field.
    pub const TCP_FLAGS: u8 = 42;
}

/// NXM_1 field: the tunnel's IPv4 destination (`tun_dst`; 31 is `tun_src`), as `ovs-ofctl`
/// sends it in a SET_FIELD: class 0x0001, field 32, 4 bytes.
pub const NXM_TUN_IPV4_DST: u8 = 32;
/// NXM_1 field: the tunnel's IPv6 destination (`tun_ipv6_dst`; 109 is `tun_ipv6_src`):
/// class 0x0001, field 110, 16 bytes.
pub const NXM_TUN_IPV6_DST: u8 = 110;

/// One OXM field nvo knows: its number, value length, whether it may be masked, the key
/// field it sets, and what it needs (EtherTypes, then IP protocols; empty: nothing).
struct Spec {
    field: u8,
    len: usize,
    maskable: bool,
    key: Field,
    ethertypes: &'static [u16],
    protos: &'static [u8],
}

const IP: &[u16] = &[ethertype::IPV4, ethertype::IPV6];
const V4: &[u16] = &[ethertype::IPV4];
const V6: &[u16] = &[ethertype::IPV6];
const ARP: &[u16] = &[ethertype::ARP];

const SPECS: [Spec; 25] = [
    spec(ofb::IN_PORT, 4, false, Field::InPort, &[], &[]),
    spec(ofb::ETH_DST, 6, true, Field::EthDst, &[], &[]),
    spec(ofb::ETH_SRC, 6, true, Field::EthSrc, &[], &[]),
    spec(ofb::ETH_TYPE, 2, false, Field::EthType, &[], &[]),
    spec(ofb::VLAN_VID, 2, true, Field::Vlan, &[], &[]),
    spec(ofb::IP_DSCP, 1, false, Field::Dscp, IP, &[]),
    spec(ofb::IP_PROTO, 1, false, Field::IpProto, IP, &[]),
    spec(ofb::IPV4_SRC, 4, true, Field::IpSrc, V4, &[]),
    spec(ofb::IPV4_DST, 4, true, Field::IpDst, V4, &[]),
    spec(ofb::TCP_SRC, 2, true, Field::TpSrc, IP, &[proto::TCP]),
    spec(ofb::TCP_DST, 2, true, Field::TpDst, IP, &[proto::TCP]),
    spec(ofb::UDP_SRC, 2, true, Field::TpSrc, IP, &[proto::UDP]),
    spec(ofb::UDP_DST, 2, true, Field::TpDst, IP, &[proto::UDP]),
    spec(ofb::SCTP_SRC, 2, true, Field::TpSrc, IP, &[proto::SCTP]),
    spec(ofb::SCTP_DST, 2, true, Field::TpDst, IP, &[proto::SCTP]),
    spec(ofb::ICMPV4_TYPE, 1, false, Field::TpSrc, V4, &[proto::ICMP]),
    spec(ofb::ICMPV4_CODE, 1, false, Field::TpDst, V4, &[proto::ICMP]),
    spec(ofb::ARP_OP, 2, false, Field::IpProto, ARP, &[]),
    spec(ofb::ARP_SPA, 4, true, Field::IpSrc, ARP, &[]),
    spec(ofb::ARP_TPA, 4, true, Field::IpDst, ARP, &[]),
    spec(ofb::IPV6_SRC, 16, true, Field::IpSrc, V6, &[]),
    spec(ofb::IPV6_DST, 16, true, Field::IpDst, V6, &[]),
    spec(
        ofb::ICMPV6_TYPE,
        1,
        false,
        Field::TpSrc,
        V6,
        &[proto::ICMPV6],
    ),
    spec(
        ofb::ICMPV6_CODE,
        1,
        false,
        Field::TpDst,
        V6,
        &[proto::ICMPV6],
    ),
    spec(ofb::TUNNEL_ID, 8, true, Field::TunKey, &[], &[]),
];

const TCP_FLAGS: Spec = spec(ofb::TCP_FLAGS, 2, true, Field::TcpFlags, IP, &[proto::TCP]);

const fn spec(
    field: u8,
    len: usize,
    maskable: bool,
    key: Field,
    ethertypes: &'static [u16],
    protos: &'static [u8],
) -> Spec {
    Spec {
        field,
        len,
        maskable,
        key,
        ethertypes,
        protos,
    }
}

impl Spec {
    /// All ones over the OXM field's width.
    fn full(&self) -> u128 {
        if self.len >= 16 {
            u128::MAX
        } else {
            (1u128 << (8 * self.len)) - 1
        }
    }
}

/// Writes an OXM TLV's header: class, field, has-mask bit, and the length of `len`-byte value
/// (twice that with a mask), plus the ONF experimenter ID for the experimenter class.
pub(crate) fn oxm_header(out: &mut Vec<u8>, class: u16, field: u8, mask: bool, len: u8) {
    out.extend_from_slice(&class.to_be_bytes());
    out.push(field << 1 | u8::from(mask));
    let exp = if class == CLASS_EXPERIMENTER { 4 } else { 0 };
    out.push(if mask { 2 * len + exp } else { len + exp });
    if class == CLASS_EXPERIMENTER {
        out.extend_from_slice(&ONF.to_be_bytes());
    }
}

fn be(bytes: &[u8]) -> u128 {
    bytes.iter().fold(0, |acc, b| acc << 8 | u128::from(*b))
}

/// Reads an `ofp_match` (padding included) from `r`.
pub fn parse_match(r: &mut Reader<'_>) -> Result<Match, OfError> {
    let kind = r.u16().ok_or(OfError::MATCH_BAD_LEN)?;
    let len = usize::from(r.u16().ok_or(OfError::MATCH_BAD_LEN)?);
    if kind != 1 {
        return Err(OfError::MATCH_BAD_TYPE);
    }
    if len < 4 {
        return Err(OfError::MATCH_BAD_LEN);
    }
    let body = r.bytes(len - 4).ok_or(OfError::MATCH_BAD_LEN)?;
    r.skip(pad8(len)).ok_or(OfError::MATCH_BAD_LEN)?;
    let mut m = Match::any();
    let mut seen: Vec<&Spec> = Vec::new();
    let mut tlvs = Reader::new(body);
    while tlvs.left() > 0 {
        let class = tlvs.u16().ok_or(OfError::MATCH_BAD_LEN)?;
        let fh = tlvs.u8().ok_or(OfError::MATCH_BAD_LEN)?;
        let tlv_len = usize::from(tlvs.u8().ok_or(OfError::MATCH_BAD_LEN)?);
        let mut payload = Reader::new(tlvs.bytes(tlv_len).ok_or(OfError::MATCH_BAD_LEN)?);
        let (field, has_mask) = (fh >> 1, fh & 1 == 1);
        let spec = match class {
            CLASS_BASIC => SPECS.iter().find(|s| s.field == field),
            CLASS_EXPERIMENTER => {
                if payload.u32() != Some(ONF) {
                    return Err(OfError::MATCH_BAD_FIELD);
                }
                (field == ofb::TCP_FLAGS).then_some(&TCP_FLAGS)
            }
            _ => None,
        }
        .ok_or(OfError::MATCH_BAD_FIELD)?;
        let want = if has_mask { 2 * spec.len } else { spec.len };
        if payload.left() != want {
            return Err(OfError::MATCH_BAD_LEN);
        }
        if has_mask && !spec.maskable {
            return Err(OfError::MATCH_BAD_MASK);
        }
        if seen.iter().any(|s| s.key == spec.key) {
            return Err(OfError::MATCH_DUP_FIELD);
        }
        let value = be(payload.bytes(spec.len).ok_or(OfError::MATCH_BAD_LEN)?);
        let full = spec.full();
        let mask = if has_mask {
            be(payload.bytes(spec.len).ok_or(OfError::MATCH_BAD_LEN)?)
        } else {
            full
        };
        if has_mask && value & !mask != 0 {
            return Err(OfError::MATCH_BAD_VALUE);
        }
        let value = match spec.field {
            // DSCP 0..63; VLAN VIDs are 13 bits with OFPVID_PRESENT.
            ofb::IP_DSCP if value > 63 => return Err(OfError::MATCH_BAD_VALUE),
            ofb::VLAN_VID if value > 0x1fff => return Err(OfError::MATCH_BAD_VALUE),
            ofb::ARP_OP if value > 0xff => return Err(OfError::MATCH_BAD_VALUE),
            _ => value,
        };
        let mask = if spec.key == Field::Vlan {
            mask & 0x1fff
        } else {
            mask
        };
        m = m.with_masked(spec.key, value, mask);
        seen.push(spec);
    }
    for s in &seen {
        prerequisites(&m, s)?;
    }
    Ok(m)
}

fn prerequisites(m: &Match, s: &Spec) -> Result<(), OfError> {
    let (et, et_mask) = m.field(Field::EthType);
    let (pr, pr_mask) = m.field(Field::IpProto);
    let et_ok = s.ethertypes.is_empty()
        || (et_mask == 0xffff && s.ethertypes.iter().any(|t| u128::from(*t) == et));
    let pr_ok =
        s.protos.is_empty() || (pr_mask == 0xff && s.protos.iter().any(|p| u128::from(*p) == pr));
    if et_ok && pr_ok {
        Ok(())
    } else {
        Err(OfError::MATCH_BAD_PREREQ)
    }
}

/// Writes `m` as an `ofp_match` (padding included) to `out`.
pub fn emit_match(m: &Match, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0, 1, 0, 0]);
    let (et, et_mask) = m.field(Field::EthType);
    let et = (et_mask == 0xffff).then_some(et as u16);
    let (pr, pr_mask) = m.field(Field::IpProto);
    let pr = (pr_mask == 0xff).then_some(pr as u8);
    let arp = et == Some(ethertype::ARP);
    let v6 = et == Some(ethertype::IPV6);
    for s in SPECS.iter().chain([&TCP_FLAGS]) {
        let (value, mask) = m.field(s.key);
        if mask == 0 {
            continue;
        }
        // Several OXM fields share a key field: the one the match's protocol names.
        let fits = s.ethertypes.is_empty()
            || et.is_some_and(|t| s.ethertypes.contains(&t))
                && (s.protos.is_empty() || pr.is_some_and(|p| s.protos.contains(&p)));
        let wanted = match s.field {
            ofb::IP_PROTO => !arp,
            ofb::ARP_OP => arp,
            _ => true,
        };
        if !(fits && wanted) {
            continue;
        }
        // An IPv4 field's key bits are the low 32 of the 128: skip the IPv6 specs for IPv4
        // and the IPv4 ones for IPv6.
        if matches!(s.key, Field::IpSrc | Field::IpDst) && (s.len == 16) != v6 {
            continue;
        }
        // The whole field: the OXM's width, or the key field's where it is narrower (an
        // ARP opcode is kept in the 8-bit protocol field).
        let key_full = if s.key.bits() >= 128 {
            u128::MAX
        } else {
            (1u128 << s.key.bits()) - 1
        };
        let full = if s.key == Field::Vlan {
            0x1fff
        } else {
            s.full() & key_full
        };
        let masked = mask != full;
        let class = if s.field == ofb::TCP_FLAGS {
            CLASS_EXPERIMENTER
        } else {
            CLASS_BASIC
        };
        oxm_header(out, class, s.field, masked, s.len as u8);
        let bytes = |v: u128| v.to_be_bytes()[16 - s.len..].to_vec();
        out.extend_from_slice(&bytes(value));
        if masked {
            out.extend_from_slice(&bytes(if s.key == Field::Vlan {
                mask
            } else {
                mask & full
            }));
        }
    }
    let len = out.len() - start;
    out[start + 2..start + 4].copy_from_slice(&(len as u16).to_be_bytes());
    out.resize(out.len() + pad8(len), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ovs_ofctls_match_reads_as_the_flow_syntax_says() {
        // From `ovs-ofctl -O OpenFlow13 add-flow` of
        // priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop (a FLOW_MOD's match).
        let bytes = [
            0x00, 0x01, 0x00, 0x1d, 0x80, 0x00, 0x0a, 0x02, 0x08, 0x00, 0x80, 0x00, 0x18, 0x04,
            0x0a, 0x5b, 0x00, 0x02, 0x80, 0x00, 0x14, 0x01, 0x06, 0x80, 0x00, 0x1c, 0x02, 0x14,
            0x51, 0x00, 0x00, 0x00,
        ];
        let m = parse_match(&mut Reader::new(&bytes)).unwrap();
        let want =
            nvo_flow::syntax::parse("tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop", &|_| None)
                .unwrap()
                .pattern;
        assert_eq!(m, want);
        let mut out = Vec::new();
        emit_match(&m, &mut out);
        assert_eq!(parse_match(&mut Reader::new(&out)).unwrap(), m);
    }

    #[test]
    fn bad_matches_get_their_error() {
        let tlv = |class: u16, field: u8, mask: bool, value: &[u8]| {
            let mut t = class.to_be_bytes().to_vec();
            t.push(field << 1 | u8::from(mask));
            t.push(value.len() as u8);
            t.extend_from_slice(value);
            t
        };
        let wrap = |tlvs: &[Vec<u8>]| {
            let body: Vec<u8> = tlvs.concat();
            let mut m = vec![0, 1];
            m.extend_from_slice(&((4 + body.len()) as u16).to_be_bytes());
            m.extend_from_slice(&body);
            m.resize(m.len() + pad8(m.len()), 0);
            m
        };
        let parse = |b: Vec<u8>| parse_match(&mut Reader::new(&b));
        let ip = tlv(CLASS_BASIC, ofb::ETH_TYPE, false, &[8, 0]);
        let tcp = tlv(CLASS_BASIC, ofb::IP_PROTO, false, &[6]);
        let port = tlv(CLASS_BASIC, ofb::TCP_DST, false, &[0, 22]);
        assert!(parse(wrap(&[ip.clone(), tcp.clone(), port.clone()])).is_ok());
        assert_eq!(
            parse(wrap(std::slice::from_ref(&port))),
            Err(OfError::MATCH_BAD_PREREQ)
        );
        assert_eq!(
            parse(wrap(&[ip.clone(), port])),
            Err(OfError::MATCH_BAD_PREREQ)
        );
        assert_eq!(
            parse(wrap(&[ip.clone(), ip.clone()])),
            Err(OfError::MATCH_DUP_FIELD)
        );
        assert_eq!(
            parse(wrap(&[tlv(CLASS_BASIC, 1, false, &[0, 0, 0, 1])])),
            Err(OfError::MATCH_BAD_FIELD)
        );
        assert_eq!(
            parse(wrap(&[tlv(CLASS_BASIC, ofb::ETH_TYPE, false, &[8])])),
            Err(OfError::MATCH_BAD_LEN)
        );
        assert_eq!(
            parse(wrap(&[tlv(CLASS_BASIC, ofb::IN_PORT, true, &[0; 8])])),
            Err(OfError::MATCH_BAD_MASK)
        );
        assert_eq!(
            parse(wrap(&[
                ip.clone(),
                tlv(
                    CLASS_BASIC,
                    ofb::IPV4_DST,
                    true,
                    &[10, 0, 0, 1, 255, 255, 255, 0]
                )
            ])),
            Err(OfError::MATCH_BAD_VALUE)
        );
        // The length says more than there is.
        assert_eq!(
            parse(vec![0, 1, 0, 40, 0x80, 0]),
            Err(OfError::MATCH_BAD_LEN)
        );
        assert_eq!(
            parse(vec![0, 0, 0, 4, 0, 0, 0, 0]),
            Err(OfError::MATCH_BAD_TYPE)
        );
    }
}
