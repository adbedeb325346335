//! UPDATE path attributes (RFC 4271 §4.3, §5) with their RFC 7606 error handling.
//!
//! ```text
//! RFC 4271 §4.3, one path attribute:
//!  0                   1
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Attr. Flags  |Attr. Type Code|  then Attribute Length: 1 octet,
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  or 2 with the Extended Length bit
//!  O T P E 0 0 0 0                   (Optional, Transitive, Partial, Extended length)
//!
//! RFC 6514 §5, PMSI Tunnel attribute:
//! +---------------------------------+
//! |  Flags (1 octet)                |
//! +---------------------------------+
//! |  Tunnel Type (1 octet)          |
//! +---------------------------------+
//! |  MPLS Label (3 octets)          |
//! +---------------------------------+
//! |  Tunnel Identifier (variable)   |
//! +---------------------------------+
//! ```
//!
//! Known attributes are decoded; every other one (MED, ATOMIC_AGGREGATE, AGGREGATOR,
//! COMMUNITIES, unknown optional ones) is kept as [`AttributeValue::Raw`] with its flags, so it
//! can be passed on. AS_PATH is read with 4-octet AS numbers (RFC 6793, always negotiated by nvo).
//! Errors say which attribute failed and, following RFC 7606 §7, how far the failure reaches.

use std::net::Ipv4Addr;

use crate::community::ExtendedCommunity;
use crate::error::{update_subcode as sub, Scope};
use crate::reader::{self, Reader};
use crate::{Error, Result};

/// Path attribute type codes.
pub mod attr_type {
    /// ORIGIN (well-known mandatory).
    pub const ORIGIN: u8 = 1;
    /// AS_PATH (well-known mandatory).
    pub const AS_PATH: u8 = 2;
    /// NEXT_HOP (well-known mandatory for IPv4 unicast NLRI).
    pub const NEXT_HOP: u8 = 3;
    /// MULTI_EXIT_DISC (optional non-transitive).
    pub const MED: u8 = 4;
    /// LOCAL_PREF (well-known, iBGP).
    pub const LOCAL_PREF: u8 = 5;
    /// ATOMIC_AGGREGATE (well-known discretionary).
    pub const ATOMIC_AGGREGATE: u8 = 6;
    /// AGGREGATOR (optional transitive).
    pub const AGGREGATOR: u8 = 7;
    /// ORIGINATOR_ID (RFC 4456).
    pub const ORIGINATOR_ID: u8 = 9;
    /// CLUSTER_LIST (RFC 4456).
    pub const CLUSTER_LIST: u8 = 10;
    /// MP_REACH_NLRI (RFC 4760).
    pub const MP_REACH_NLRI: u8 = 14;
    /// MP_UNREACH_NLRI (RFC 4760).
    pub const MP_UNREACH_NLRI: u8 = 15;
    /// EXTENDED_COMMUNITIES (RFC 4360).
    pub const EXTENDED_COMMUNITIES: u8 = 16;
    /// PMSI_TUNNEL (RFC 6514).
    pub const PMSI_TUNNEL: u8 = 22;
}

/// Attribute flag bits.
pub mod attr_flags {
    /// Optional.
    pub const OPTIONAL: u8 = 0x80;
    /// Transitive.
    pub const TRANSITIVE: u8 = 0x40;
    /// Partial.
    pub const PARTIAL: u8 = 0x20;
    /// Extended Length: the length field has two octets.
    pub const EXTENDED_LENGTH: u8 = 0x10;
}

/// ORIGIN values (RFC 4271 §5.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// IGP.
    Igp,
    /// EGP.
    Egp,
    /// INCOMPLETE.
    Incomplete,
}

/// AS_PATH segment types (RFC 4271 §4.3, RFC 5065 §3).
pub mod segment_type {
    /// AS_SET.
    pub const AS_SET: u8 = 1;
    /// AS_SEQUENCE.
    pub const AS_SEQUENCE: u8 = 2;
    /// AS_CONFED_SEQUENCE.
    pub const AS_CONFED_SEQUENCE: u8 = 3;
    /// AS_CONFED_SET.
    pub const AS_CONFED_SET: u8 = 4;
}

/// One AS_PATH segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsPathSegment {
    /// Segment type ([`segment_type`]).
    pub kind: u8,
    /// AS numbers, 1 to 255 of them.
    pub asns: Vec<u32>,
}

/// MP_REACH_NLRI (RFC 4760 §3); the NLRI is kept as bytes and decoded by family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpReach {
    /// Address family.
    pub afi: u16,
    /// Subsequent address family.
    pub safi: u8,
    /// Network address of the next hop (4 bytes IPv4, 16 or 32 IPv6).
    pub next_hop: Vec<u8>,
    /// NLRI of the family; for EVPN see [`crate::evpn::EvpnRoute::parse_all`].
    pub nlri: Vec<u8>,
}

/// MP_UNREACH_NLRI (RFC 4760 §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpUnreach {
    /// Address family.
    pub afi: u16,
    /// Subsequent address family.
    pub safi: u8,
    /// Withdrawn routes of the family, as bytes.
    pub withdrawn: Vec<u8>,
}

/// PMSI Tunnel attribute (RFC 6514 §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmsiTunnel {
    /// Flags; 0x01 is Leaf Information Required.
    pub flags: u8,
    /// Tunnel type; 6 is ingress replication (RFC 6514 §5, used by RFC 8365 §9).
    pub tunnel_type: u8,
    /// The 24-bit label field; it carries the VNI for VXLAN (RFC 8365 §5.1.3).
    pub label: u32,
    /// Tunnel identifier; for ingress replication, the IP address of the sender.
    pub tunnel_id: Vec<u8>,
}

/// PMSI tunnel type of ingress replication.
pub const PMSI_INGRESS_REPLICATION: u8 = 6;

/// A decoded attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    /// ORIGIN.
    Origin(Origin),
    /// AS_PATH, 4-octet AS numbers.
    AsPath(Vec<AsPathSegment>),
    /// NEXT_HOP.
    NextHop(Ipv4Addr),
    /// LOCAL_PREF.
    LocalPref(u32),
    /// ORIGINATOR_ID.
    OriginatorId(Ipv4Addr),
    /// CLUSTER_LIST.
    ClusterList(Vec<Ipv4Addr>),
    /// MP_REACH_NLRI.
    MpReach(MpReach),
    /// MP_UNREACH_NLRI.
    MpUnreach(MpUnreach),
    /// EXTENDED_COMMUNITIES.
    ExtendedCommunities(Vec<ExtendedCommunity>),
    /// PMSI_TUNNEL.
    PmsiTunnel(PmsiTunnel),
    /// Any other attribute, as received.
    Raw {
        /// Type code.
        type_code: u8,
        /// Value.
        value: Vec<u8>,
    },
}

impl AttributeValue {
    /// The type code.
    pub fn type_code(&self) -> u8 {
        match self {
            AttributeValue::Origin(_) => attr_type::ORIGIN,
            AttributeValue::AsPath(_) => attr_type::AS_PATH,
            AttributeValue::NextHop(_) => attr_type::NEXT_HOP,
            AttributeValue::LocalPref(_) => attr_type::LOCAL_PREF,
            AttributeValue::OriginatorId(_) => attr_type::ORIGINATOR_ID,
            AttributeValue::ClusterList(_) => attr_type::CLUSTER_LIST,
            AttributeValue::MpReach(_) => attr_type::MP_REACH_NLRI,
            AttributeValue::MpUnreach(_) => attr_type::MP_UNREACH_NLRI,
            AttributeValue::ExtendedCommunities(_) => attr_type::EXTENDED_COMMUNITIES,
            AttributeValue::PmsiTunnel(_) => attr_type::PMSI_TUNNEL,
            AttributeValue::Raw { type_code, .. } => *type_code,
        }
    }
}

/// The Optional and Transitive bits a known attribute must carry, and the scope of its errors.
fn expected(type_code: u8) -> Option<(u8, Scope)> {
    use attr_flags::{OPTIONAL as O, TRANSITIVE as T};
    use attr_type::*;
    match type_code {
        ORIGIN | AS_PATH | NEXT_HOP | LOCAL_PREF | ATOMIC_AGGREGATE => {
            Some((T, Scope::TreatAsWithdraw))
        }
        ORIGINATOR_ID | CLUSTER_LIST => Some((O, Scope::TreatAsWithdraw)),
        EXTENDED_COMMUNITIES | PMSI_TUNNEL => Some((O | T, Scope::TreatAsWithdraw)),
        // RFC 7606 §7.11: a bad MP_REACH/MP_UNREACH leaves no NLRI to withdraw.
        MP_REACH_NLRI | MP_UNREACH_NLRI => Some((O, Scope::Session)),
        _ => None,
    }
}

/// One path attribute: its flags as received (or chosen) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathAttribute {
    /// Flags byte; the Extended Length bit is also set on emit when the value needs it.
    pub flags: u8,
    /// The value.
    pub value: AttributeValue,
}

impl PathAttribute {
    /// An attribute with the flags its type requires (Optional/Transitive per RFC).
    pub fn new(value: AttributeValue) -> Self {
        let flags = match expected(value.type_code()) {
            Some((flags, _)) => flags,
            None => attr_flags::OPTIONAL | attr_flags::TRANSITIVE,
        };
        PathAttribute { flags, value }
    }

    /// Reads one attribute from the attributes section.
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<PathAttribute> {
        let flags = r.u8("attribute flags")?;
        let type_code = r.u8("attribute type")?;
        // A framing error loses the place of every later attribute, MP_REACH included.
        let frame = |_| Error::Attribute {
            type_code,
            what: "length overruns the attributes",
            value: u32::from(flags),
            subcode: sub::ATTRIBUTE_LENGTH,
            scope: Scope::Session,
        };
        let len = if flags & attr_flags::EXTENDED_LENGTH != 0 {
            usize::from(r.u16("attribute length").map_err(frame)?)
        } else {
            usize::from(r.u8("attribute length").map_err(frame)?)
        };
        let value = r.take(len, "attribute value").map_err(frame)?;
        let scope = match expected(type_code) {
            Some((bits, scope)) => {
                if flags & (attr_flags::OPTIONAL | attr_flags::TRANSITIVE) != bits {
                    let what = "optional/transitive flags";
                    let err = Error::attribute(type_code, what, flags.into(), sub::ATTRIBUTE_FLAGS);
                    return Err(with_scope(err, scope));
                }
                scope
            }
            None if flags & attr_flags::OPTIONAL == 0 => {
                return Err(Error::Attribute {
                    type_code,
                    what: "unrecognized well-known attribute",
                    value: u32::from(flags),
                    subcode: sub::UNRECOGNIZED_WELL_KNOWN,
                    scope: Scope::Session,
                });
            }
            None => Scope::AttributeDiscard,
        };
        let value = decode(type_code, value).map_err(|e| with_scope(e, scope))?;
        Ok(PathAttribute { flags, value })
    }

    /// Appends the attribute.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) -> Result<()> {
        let mut value = Vec::new();
        encode(&self.value, &mut value)?;
        let long = value.len() > 255 || self.flags & attr_flags::EXTENDED_LENGTH != 0;
        let flags = if long {
            self.flags | attr_flags::EXTENDED_LENGTH
        } else {
            self.flags
        };
        out.extend_from_slice(&[flags, self.value.type_code()]);
        let len = reader::len_since(&value, 0, usize::from(u16::MAX), "attribute length")?;
        if long {
            out.extend_from_slice(&len.to_be_bytes());
        } else {
            out.push(len as u8);
        }
        out.extend_from_slice(&value);
        Ok(())
    }
}

fn with_scope(err: Error, new_scope: Scope) -> Error {
    match err {
        Error::Attribute {
            type_code,
            what,
            value,
            subcode,
            ..
        } => Error::Attribute {
            type_code,
            what,
            value,
            subcode,
            scope: new_scope,
        },
        other => other,
    }
}

fn exact<const N: usize>(type_code: u8, value: &[u8]) -> Result<[u8; N]> {
    <[u8; N]>::try_from(value).map_err(|_| {
        Error::attribute(
            type_code,
            "length",
            value.len() as u32,
            sub::ATTRIBUTE_LENGTH,
        )
    })
}

fn decode(type_code: u8, value: &[u8]) -> Result<AttributeValue> {
    use attr_type::*;
    let optional =
        |what, v: usize| Error::attribute(type_code, what, v as u32, sub::OPTIONAL_ATTRIBUTE);
    Ok(match type_code {
        ORIGIN => AttributeValue::Origin(match exact::<1>(type_code, value)? {
            [0] => Origin::Igp,
            [1] => Origin::Egp,
            [2] => Origin::Incomplete,
            [v] => {
                return Err(Error::attribute(
                    type_code,
                    "origin",
                    v.into(),
                    sub::INVALID_ORIGIN,
                ))
            }
        }),
        AS_PATH => AttributeValue::AsPath(decode_as_path(value)?),
        NEXT_HOP => AttributeValue::NextHop(Ipv4Addr::from(exact::<4>(type_code, value)?)),
        LOCAL_PREF => AttributeValue::LocalPref(u32::from_be_bytes(exact::<4>(type_code, value)?)),
        ORIGINATOR_ID => {
            AttributeValue::OriginatorId(Ipv4Addr::from(exact::<4>(type_code, value)?))
        }
        CLUSTER_LIST if !value.is_empty() && value.len().is_multiple_of(4) => {
            AttributeValue::ClusterList(
                value
                    .chunks_exact(4)
                    .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
                    .collect(),
            )
        }
        CLUSTER_LIST => return Err(optional("cluster list length", value.len())),
        EXTENDED_COMMUNITIES if value.len().is_multiple_of(8) => {
            AttributeValue::ExtendedCommunities(
                value
                    .chunks_exact(8)
                    .map(|c| {
                        let mut raw = [0u8; 8];
                        raw.copy_from_slice(c);
                        ExtendedCommunity::from_bytes(raw)
                    })
                    .collect(),
            )
        }
        EXTENDED_COMMUNITIES => return Err(optional("extended communities length", value.len())),
        PMSI_TUNNEL => {
            let mut r = Reader::new(value);
            let short = |_| optional("pmsi tunnel length", value.len());
            AttributeValue::PmsiTunnel(PmsiTunnel {
                flags: r.u8("pmsi flags").map_err(short)?,
                tunnel_type: r.u8("pmsi tunnel type").map_err(short)?,
                label: r.u24("pmsi label").map_err(short)?,
                tunnel_id: r.rest().to_vec(),
            })
        }
        MP_REACH_NLRI => {
            decode_mp_reach(value).map_err(|_| optional("mp_reach_nlri", value.len()))?
        }
        MP_UNREACH_NLRI => {
            let mut r = Reader::new(value);
            let short = |_| optional("mp_unreach_nlri", value.len());
            AttributeValue::MpUnreach(MpUnreach {
                afi: r.u16("mp_unreach afi").map_err(short)?,
                safi: r.u8("mp_unreach safi").map_err(short)?,
                withdrawn: r.rest().to_vec(),
            })
        }
        _ => AttributeValue::Raw {
            type_code,
            value: value.to_vec(),
        },
    })
}

fn decode_mp_reach(value: &[u8]) -> Result<AttributeValue> {
    let mut r = Reader::new(value);
    let afi = r.u16("mp_reach afi")?;
    let safi = r.u8("mp_reach safi")?;
    let nh_len = usize::from(r.u8("mp_reach next hop length")?);
    let next_hop = r.take(nh_len, "mp_reach next hop")?.to_vec();
    let _reserved = r.u8("mp_reach reserved")?; // RFC 4760 §3: was SNPA count, now ignored.
    Ok(AttributeValue::MpReach(MpReach {
        afi,
        safi,
        next_hop,
        nlri: r.rest().to_vec(),
    }))
}

fn decode_as_path(value: &[u8]) -> Result<Vec<AsPathSegment>> {
    let malformed = |what, v: usize| {
        Error::attribute(attr_type::AS_PATH, what, v as u32, sub::MALFORMED_AS_PATH)
    };
    let mut r = Reader::new(value);
    let mut segments = Vec::new();
    while !r.is_empty() {
        let kind = r
            .u8("as path segment type")
            .map_err(|_| malformed("segment header", 1))?;
        let count = usize::from(
            r.u8("as path segment length")
                .map_err(|_| malformed("segment header", 1))?,
        );
        // RFC 7606 §7.2: unknown segment types and empty segments are malformed.
        if !(segment_type::AS_SET..=segment_type::AS_CONFED_SET).contains(&kind) {
            return Err(malformed("segment type", kind.into()));
        }
        if count == 0 {
            return Err(malformed("empty segment", 0));
        }
        let bytes = r
            .take(count * 4, "as path segment")
            .map_err(|_| malformed("segment overrun", count))?;
        let asns = bytes
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        segments.push(AsPathSegment { kind, asns });
    }
    Ok(segments)
}

fn encode(value: &AttributeValue, out: &mut Vec<u8>) -> Result<()> {
    match value {
        AttributeValue::Origin(o) => out.push(match o {
            Origin::Igp => 0,
            Origin::Egp => 1,
            Origin::Incomplete => 2,
        }),
        AttributeValue::AsPath(segments) => {
            for s in segments {
                let count = u8::try_from(s.asns.len()).map_err(|_| Error::Emit {
                    what: "as path segment length",
                    value: s.asns.len(),
                })?;
                out.extend_from_slice(&[s.kind, count]);
                s.asns
                    .iter()
                    .for_each(|asn| out.extend_from_slice(&asn.to_be_bytes()));
            }
        }
        AttributeValue::NextHop(a) | AttributeValue::OriginatorId(a) => {
            out.extend_from_slice(&a.octets())
        }
        AttributeValue::LocalPref(v) => out.extend_from_slice(&v.to_be_bytes()),
        AttributeValue::ClusterList(ids) => {
            ids.iter().for_each(|a| out.extend_from_slice(&a.octets()))
        }
        AttributeValue::MpReach(mp) => {
            let nh_len = u8::try_from(mp.next_hop.len()).map_err(|_| Error::Emit {
                what: "next hop length",
                value: mp.next_hop.len(),
            })?;
            out.extend_from_slice(&mp.afi.to_be_bytes());
            out.extend_from_slice(&[mp.safi, nh_len]);
            out.extend_from_slice(&mp.next_hop);
            out.push(0);
            out.extend_from_slice(&mp.nlri);
        }
        AttributeValue::MpUnreach(mp) => {
            out.extend_from_slice(&mp.afi.to_be_bytes());
            out.push(mp.safi);
            out.extend_from_slice(&mp.withdrawn);
        }
        AttributeValue::ExtendedCommunities(list) => list
            .iter()
            .for_each(|c| out.extend_from_slice(&c.to_bytes())),
        AttributeValue::PmsiTunnel(p) => {
            if p.label > 0x00ff_ffff {
                return Err(Error::Emit {
                    what: "pmsi label",
                    value: p.label as usize,
                });
            }
            out.extend_from_slice(&[p.flags, p.tunnel_type]);
            reader::put_u24(out, p.label);
            out.extend_from_slice(&p.tunnel_id);
        }
        AttributeValue::Raw { value, .. } => out.extend_from_slice(value),
    }
    Ok(())
}
