//! BGP extended communities (RFC 4360 §2) that EVPN uses: route targets (RFC 4360 §4,
//! RFC 5668 §2), the encapsulation community (RFC 9012 §4.1), MAC mobility (RFC 7432 §7.7)
//! and the Group Policy ID (draft-wlin-bess-group-policy-id-extended-community-03; sub-type
//! 0x17 as IANA's registry of transitive opaque sub-types assigns it).
//!
//! ```text
//! RFC 4360 §2, one extended community:
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type high    |  Type low(*)  |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+          Value                |
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! RFC 7432 §7.7, MAC Mobility:
//! | Type=0x06     | Sub-Type=0x00 |Flags(1 octet)|  Reserved=0    |
//! |                       Sequence Number                         |
//!
//! RFC 9012 §4.1, Encapsulation:
//! | Type=0x03     | Sub-Type=0x0c |       Reserved (4 octets)  ...
//! ...                             |         Tunnel Type           |
//!
//! Group Policy ID (the VXLAN-GBP group of the route's endpoint):
//! | Type=0x03     | Sub-Type=0x17 |        Policy ID Scope        |
//! |          Reserved=0           |        Group Policy ID        |
//! ```
//!
//! Decoding is total and exact: a community that is not one of the forms below, or that has
//! non-zero reserved bytes, stays [`ExtendedCommunity::Unknown`], so `to_bytes(from_bytes(b)) == b`.

use std::net::Ipv4Addr;

/// Tunnel type of VXLAN in the encapsulation community (RFC 9012 §14.5 registry).
pub const TUNNEL_TYPE_VXLAN: u16 = 8;

/// MAC mobility flag: the MAC is sticky (static) and must not move (RFC 7432 §15.2).
pub const MAC_MOBILITY_STICKY: u8 = 0x01;

/// A route target (RFC 4360 §4 for 2-octet AS and IPv4, RFC 5668 §2 for 4-octet AS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteTarget {
    /// Type 0x00: 2-octet AS and a 4-octet number.
    TwoOctetAs {
        /// AS.
        asn: u16,
        /// Assigned number.
        value: u32,
    },
    /// Type 0x01: IPv4 address and a 2-octet number.
    Ipv4 {
        /// Address.
        addr: Ipv4Addr,
        /// Assigned number.
        value: u16,
    },
    /// Type 0x02: 4-octet AS and a 2-octet number.
    FourOctetAs {
        /// AS.
        asn: u32,
        /// Assigned number.
        value: u16,
    },
}

/// One extended community.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtendedCommunity {
    /// A route target.
    RouteTarget(RouteTarget),
    /// The encapsulation community with its tunnel type ([`TUNNEL_TYPE_VXLAN`]).
    Encapsulation(u16),
    /// MAC mobility.
    MacMobility {
        /// Flags ([`MAC_MOBILITY_STICKY`]).
        flags: u8,
        /// Sequence number; the higher one wins (RFC 7432 §15.1).
        sequence: u32,
    },
    /// The group policy ID of the route's endpoint (nvo sends scope 0).
    GroupPolicy {
        /// The scope the ID is valid in (0: the route's network).
        scope: u16,
        /// The group ID.
        group: u16,
    },
    /// Anything else, as received.
    Unknown([u8; 8]),
}

const SUBTYPE_ROUTE_TARGET: u8 = 0x02;
const TYPE_OPAQUE: u8 = 0x03;
const SUBTYPE_ENCAPSULATION: u8 = 0x0c;
const SUBTYPE_GROUP_POLICY: u8 = 0x17;
const TYPE_EVPN: u8 = 0x06;
const SUBTYPE_MAC_MOBILITY: u8 = 0x00;

impl ExtendedCommunity {
    /// Decodes eight bytes; never fails.
    pub fn from_bytes(b: [u8; 8]) -> Self {
        let [t, st, v0, v1, v2, v3, v4, v5] = b;
        match (t, st) {
            (0x00, SUBTYPE_ROUTE_TARGET) => {
                ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs {
                    asn: u16::from_be_bytes([v0, v1]),
                    value: u32::from_be_bytes([v2, v3, v4, v5]),
                })
            }
            (0x01, SUBTYPE_ROUTE_TARGET) => ExtendedCommunity::RouteTarget(RouteTarget::Ipv4 {
                addr: Ipv4Addr::new(v0, v1, v2, v3),
                value: u16::from_be_bytes([v4, v5]),
            }),
            (0x02, SUBTYPE_ROUTE_TARGET) => {
                ExtendedCommunity::RouteTarget(RouteTarget::FourOctetAs {
                    asn: u32::from_be_bytes([v0, v1, v2, v3]),
                    value: u16::from_be_bytes([v4, v5]),
                })
            }
            (TYPE_OPAQUE, SUBTYPE_ENCAPSULATION) if [v0, v1, v2, v3] == [0; 4] => {
                ExtendedCommunity::Encapsulation(u16::from_be_bytes([v4, v5]))
            }
            (TYPE_OPAQUE, SUBTYPE_GROUP_POLICY) if [v2, v3] == [0; 2] => {
                ExtendedCommunity::GroupPolicy {
                    scope: u16::from_be_bytes([v0, v1]),
                    group: u16::from_be_bytes([v4, v5]),
                }
            }
            (TYPE_EVPN, SUBTYPE_MAC_MOBILITY) if v1 == 0 => ExtendedCommunity::MacMobility {
                flags: v0,
                sequence: u32::from_be_bytes([v2, v3, v4, v5]),
            },
            _ => ExtendedCommunity::Unknown(b),
        }
    }

    /// Encodes eight bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        match *self {
            ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs { asn, value }) => {
                b[..2].copy_from_slice(&[0x00, SUBTYPE_ROUTE_TARGET]);
                b[2..4].copy_from_slice(&asn.to_be_bytes());
                b[4..].copy_from_slice(&value.to_be_bytes());
            }
            ExtendedCommunity::RouteTarget(RouteTarget::Ipv4 { addr, value }) => {
                b[..2].copy_from_slice(&[0x01, SUBTYPE_ROUTE_TARGET]);
                b[2..6].copy_from_slice(&addr.octets());
                b[6..].copy_from_slice(&value.to_be_bytes());
            }
            ExtendedCommunity::RouteTarget(RouteTarget::FourOctetAs { asn, value }) => {
                b[..2].copy_from_slice(&[0x02, SUBTYPE_ROUTE_TARGET]);
                b[2..6].copy_from_slice(&asn.to_be_bytes());
                b[6..].copy_from_slice(&value.to_be_bytes());
            }
            ExtendedCommunity::Encapsulation(tunnel_type) => {
                b[..2].copy_from_slice(&[TYPE_OPAQUE, SUBTYPE_ENCAPSULATION]);
                b[6..].copy_from_slice(&tunnel_type.to_be_bytes());
            }
            ExtendedCommunity::MacMobility { flags, sequence } => {
                b[..3].copy_from_slice(&[TYPE_EVPN, SUBTYPE_MAC_MOBILITY, flags]);
                b[4..].copy_from_slice(&sequence.to_be_bytes());
            }
            ExtendedCommunity::GroupPolicy { scope, group } => {
                b[..2].copy_from_slice(&[TYPE_OPAQUE, SUBTYPE_GROUP_POLICY]);
                b[2..4].copy_from_slice(&scope.to_be_bytes());
                b[6..].copy_from_slice(&group.to_be_bytes());
            }
            ExtendedCommunity::Unknown(raw) => b = raw,
        }
        b
    }

    /// True for a sticky MAC mobility community.
    pub fn is_sticky(&self) -> bool {
        matches!(self, ExtendedCommunity::MacMobility { flags, .. } if flags & MAC_MOBILITY_STICKY != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings() {
        // RT 65000:10100 as FRR's "route-target 65000:10100" sends it.
        let rt = ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs {
            asn: 65000,
            value: 10100,
        });
        assert_eq!(
            rt.to_bytes(),
            [0x00, 0x02, 0xfd, 0xe8, 0x00, 0x00, 0x27, 0x74]
        );
        let encap = ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN);
        assert_eq!(encap.to_bytes(), [0x03, 0x0c, 0, 0, 0, 0, 0, 8]);
        let mm = ExtendedCommunity::MacMobility {
            flags: 1,
            sequence: 7,
        };
        assert_eq!(mm.to_bytes(), [0x06, 0x00, 1, 0, 0, 0, 0, 7]);
        assert!(mm.is_sticky());
        let gp = ExtendedCommunity::GroupPolicy {
            scope: 0,
            group: 0x1234,
        };
        assert_eq!(gp.to_bytes(), [0x03, 0x17, 0, 0, 0, 0, 0x12, 0x34]);
        for c in [rt, encap, mm, gp] {
            assert_eq!(ExtendedCommunity::from_bytes(c.to_bytes()), c);
        }
    }

    #[test]
    fn reserved_bytes_keep_it_unknown() {
        // Encapsulation, and a Group Policy ID with its reserved field set (as a vendor's
        // variant with sub-type 0x0f and reserved 0x8000 would be: not ours to read).
        for b in [
            [0x03, 0x0c, 0, 1, 0, 0, 0, 8],
            [0x03, 0x17, 0, 0, 0x80, 0, 0, 10],
            [0x03, 0x0f, 0, 0, 0x80, 0, 0, 10],
        ] {
            assert_eq!(
                ExtendedCommunity::from_bytes(b),
                ExtendedCommunity::Unknown(b)
            );
            assert_eq!(ExtendedCommunity::from_bytes(b).to_bytes(), b);
        }
    }
}
