//! EVPN NLRI (RFC 7432 §7) for AFI 25 / SAFI 70, with VXLAN use of the label fields
//! (RFC 8365 §5.1.3: the 24-bit field carries the VNI), and route distinguishers (RFC 4364 §4.2).
//!
//! ```text
//! RFC 7432 §7, EVPN NLRI:              §7.2, MAC/IP Advertisement (type 2):
//! +-----------------------------------+ +---------------------------------------+
//! |    Route Type (1 octet)           | |  RD (8 octets)                        |
//! +-----------------------------------+ |  Ethernet Segment Identifier (10)     |
//! |     Length (1 octet)              | |  Ethernet Tag ID (4 octets)           |
//! +-----------------------------------+ |  MAC Address Length (1 octet) = 48    |
//! | Route Type specific (variable)    | |  MAC Address (6 octets)               |
//! +-----------------------------------+ |  IP Address Length (1 octet) 0/32/128 |
//!                                       |  IP Address (0, 4, or 16 octets)      |
//! §7.3, Inclusive Multicast (type 3):   |  MPLS Label1 (3 octets)               |
//! +---------------------------------+   |  MPLS Label2 (0 or 3 octets)          |
//! |  RD (8 octets)                  |   +---------------------------------------+
//! |  Ethernet Tag ID (4 octets)     |
//! |  IP Address Length (1 octet)    |
//! |  Originating Router's IP Addr   |
//! |          (4 or 16 octets)       |
//! +---------------------------------+
//! ```
//!
//! Route types other than 2 and 3 are kept as (type, bytes): their length octet lets a parser
//! skip them safely. A route whose length disagrees with its fields is an error for the whole
//! NLRI (RFC 7606 §5.4: NLRI that cannot be parsed resets the session or disables the family).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::attribute::MpReach;
use crate::error::update_subcode as sub;
use crate::reader::{self, Reader};
use crate::{Error, Result};

/// AFI of L2VPN.
pub const AFI_L2VPN: u16 = 25;
/// SAFI of EVPN.
pub const SAFI_EVPN: u8 = 70;

/// Route type codes.
pub mod route_type {
    /// Ethernet Auto-discovery.
    pub const ETHERNET_AD: u8 = 1;
    /// MAC/IP Advertisement.
    pub const MAC_IP: u8 = 2;
    /// Inclusive Multicast Ethernet Tag.
    pub const INCLUSIVE_MULTICAST: u8 = 3;
    /// Ethernet Segment.
    pub const ETHERNET_SEGMENT: u8 = 4;
    /// IP Prefix (RFC 9136).
    pub const IP_PREFIX: u8 = 5;
}

/// A route distinguisher (RFC 4364 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteDistinguisher {
    /// Type 0: 2-octet AS, 4-octet number.
    As2 {
        /// AS.
        asn: u16,
        /// Assigned number.
        value: u32,
    },
    /// Type 1: IPv4 address, 2-octet number (what FRR uses: router-id:index).
    Ipv4 {
        /// Address.
        addr: Ipv4Addr,
        /// Assigned number.
        value: u16,
    },
    /// Type 2: 4-octet AS, 2-octet number.
    As4 {
        /// AS.
        asn: u32,
        /// Assigned number.
        value: u16,
    },
    /// Any other type, as received.
    Unknown([u8; 8]),
}

impl RouteDistinguisher {
    /// Decodes eight bytes; never fails.
    pub fn from_bytes(b: [u8; 8]) -> Self {
        let [t0, t1, v0, v1, v2, v3, v4, v5] = b;
        match u16::from_be_bytes([t0, t1]) {
            0 => RouteDistinguisher::As2 {
                asn: u16::from_be_bytes([v0, v1]),
                value: u32::from_be_bytes([v2, v3, v4, v5]),
            },
            1 => RouteDistinguisher::Ipv4 {
                addr: Ipv4Addr::new(v0, v1, v2, v3),
                value: u16::from_be_bytes([v4, v5]),
            },
            2 => RouteDistinguisher::As4 {
                asn: u32::from_be_bytes([v0, v1, v2, v3]),
                value: u16::from_be_bytes([v4, v5]),
            },
            _ => RouteDistinguisher::Unknown(b),
        }
    }

    /// Encodes eight bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        match *self {
            RouteDistinguisher::As2 { asn, value } => {
                b[2..4].copy_from_slice(&asn.to_be_bytes());
                b[4..].copy_from_slice(&value.to_be_bytes());
            }
            RouteDistinguisher::Ipv4 { addr, value } => {
                b[1] = 1;
                b[2..6].copy_from_slice(&addr.octets());
                b[6..].copy_from_slice(&value.to_be_bytes());
            }
            RouteDistinguisher::As4 { asn, value } => {
                b[1] = 2;
                b[2..6].copy_from_slice(&asn.to_be_bytes());
                b[6..].copy_from_slice(&value.to_be_bytes());
            }
            RouteDistinguisher::Unknown(raw) => b = raw,
        }
        b
    }
}

/// A MAC/IP Advertisement route (type 2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MacIpRoute {
    /// Route distinguisher.
    pub rd: RouteDistinguisher,
    /// Ethernet Segment Identifier; all zero for a single-homed host.
    pub esi: [u8; 10],
    /// Ethernet tag; 0 for VLAN-based service (RFC 8365 §5.1.2).
    pub ethernet_tag: u32,
    /// MAC address.
    pub mac: [u8; 6],
    /// IP address bound to the MAC, if known.
    pub ip: Option<IpAddr>,
    /// Label1: the layer-2 VNI (24 bits).
    pub label1: u32,
    /// Label2: the layer-3 VNI for symmetric IRB, if present.
    pub label2: Option<u32>,
}

impl MacIpRoute {
    /// The layer-2 VNI (RFC 8365 §5.1.3: the whole 24-bit label field).
    pub fn vni(&self) -> u32 {
        self.label1
    }
}

/// An Inclusive Multicast Ethernet Tag route (type 3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InclusiveMulticastRoute {
    /// Route distinguisher.
    pub rd: RouteDistinguisher,
    /// Ethernet tag.
    pub ethernet_tag: u32,
    /// The originating router's IP address (the VTEP to replicate to).
    pub originator: IpAddr,
}

/// One EVPN route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EvpnRoute {
    /// Type 2.
    MacIp(MacIpRoute),
    /// Type 3.
    InclusiveMulticast(InclusiveMulticastRoute),
    /// Any other type, kept so it can be skipped or passed on.
    Other {
        /// Route type.
        route_type: u8,
        /// Route-type-specific bytes.
        value: Vec<u8>,
    },
}

fn malformed(what: &'static str, value: usize) -> Error {
    Error::Update {
        what,
        value: value as u32,
        subcode: sub::OPTIONAL_ATTRIBUTE,
    }
}

fn parse_ip(r: &mut Reader<'_>, bits: u8, what: &'static str) -> Result<Option<IpAddr>> {
    Ok(match bits {
        0 => None,
        32 => Some(IpAddr::V4(Ipv4Addr::from(r.array::<4>(what)?))),
        128 => Some(IpAddr::V6(Ipv6Addr::from(r.array::<16>(what)?))),
        other => return Err(malformed(what, other.into())),
    })
}

fn emit_ip(ip: Option<IpAddr>, out: &mut Vec<u8>) {
    match ip {
        None => out.push(0),
        Some(IpAddr::V4(a)) => {
            out.push(32);
            out.extend_from_slice(&a.octets());
        }
        Some(IpAddr::V6(a)) => {
            out.push(128);
            out.extend_from_slice(&a.octets());
        }
    }
}

fn emit_label(label: u32, out: &mut Vec<u8>) -> Result<()> {
    if label > 0x00ff_ffff {
        return Err(Error::Emit {
            what: "evpn label",
            value: label as usize,
        });
    }
    reader::put_u24(out, label);
    Ok(())
}

impl EvpnRoute {
    /// Parses every route of an MP_REACH or MP_UNREACH NLRI field of AFI 25 / SAFI 70.
    pub fn parse_all(nlri: &[u8]) -> Result<Vec<EvpnRoute>> {
        let mut r = Reader::new(nlri);
        let mut routes = Vec::new();
        while !r.is_empty() {
            let route_type = r.u8("evpn route type")?;
            let len = usize::from(r.u8("evpn route length")?);
            let value = r
                .take(len, "evpn route")
                .map_err(|_| malformed("evpn route length", len))?;
            routes.push(Self::parse_one(route_type, value)?);
        }
        Ok(routes)
    }

    fn parse_one(route_type: u8, value: &[u8]) -> Result<EvpnRoute> {
        let mut r = Reader::new(value);
        let short = |_| malformed("evpn route truncated", value.len());
        let route = match route_type {
            route_type::MAC_IP => {
                let rd = RouteDistinguisher::from_bytes(r.array("rd").map_err(short)?);
                let esi = r.array("esi").map_err(short)?;
                let ethernet_tag = r.u32("ethernet tag").map_err(short)?;
                let mac_bits = r.u8("mac length").map_err(short)?;
                if mac_bits != 48 {
                    return Err(malformed("evpn mac length", mac_bits.into()));
                }
                let mac = r.array("mac").map_err(short)?;
                let ip_bits = r.u8("ip length").map_err(short)?;
                let ip = parse_ip(&mut r, ip_bits, "evpn ip length").map_err(|e| match e {
                    Error::Truncated { .. } => short(e),
                    other => other,
                })?;
                let label1 = r.u24("label1").map_err(short)?;
                let label2 = match r.remaining() {
                    0 => None,
                    3 => Some(r.u24("label2").map_err(short)?),
                    n => return Err(malformed("evpn mac/ip route trailing bytes", n)),
                };
                EvpnRoute::MacIp(MacIpRoute {
                    rd,
                    esi,
                    ethernet_tag,
                    mac,
                    ip,
                    label1,
                    label2,
                })
            }
            route_type::INCLUSIVE_MULTICAST => {
                let rd = RouteDistinguisher::from_bytes(r.array("rd").map_err(short)?);
                let ethernet_tag = r.u32("ethernet tag").map_err(short)?;
                let ip_bits = r.u8("ip length").map_err(short)?;
                let originator = match parse_ip(&mut r, ip_bits, "evpn originator length") {
                    Ok(Some(ip)) => ip,
                    Ok(None) => return Err(malformed("evpn originator length", 0)),
                    Err(Error::Truncated { .. }) => {
                        return Err(malformed("evpn route truncated", value.len()))
                    }
                    Err(e) => return Err(e),
                };
                if !r.is_empty() {
                    return Err(malformed(
                        "evpn multicast route trailing bytes",
                        r.remaining(),
                    ));
                }
                EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
                    rd,
                    ethernet_tag,
                    originator,
                })
            }
            _ => EvpnRoute::Other {
                route_type,
                value: value.to_vec(),
            },
        };
        Ok(route)
    }

    /// The route type code.
    pub fn route_type(&self) -> u8 {
        match self {
            EvpnRoute::MacIp(_) => route_type::MAC_IP,
            EvpnRoute::InclusiveMulticast(_) => route_type::INCLUSIVE_MULTICAST,
            EvpnRoute::Other { route_type, .. } => *route_type,
        }
    }

    /// Appends the route (type, length, value).
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&[self.route_type(), 0]);
        let start = out.len();
        match self {
            EvpnRoute::MacIp(m) => {
                out.extend_from_slice(&m.rd.to_bytes());
                out.extend_from_slice(&m.esi);
                out.extend_from_slice(&m.ethernet_tag.to_be_bytes());
                out.push(48);
                out.extend_from_slice(&m.mac);
                emit_ip(m.ip, out);
                emit_label(m.label1, out)?;
                if let Some(label2) = m.label2 {
                    emit_label(label2, out)?;
                }
            }
            EvpnRoute::InclusiveMulticast(im) => {
                out.extend_from_slice(&im.rd.to_bytes());
                out.extend_from_slice(&im.ethernet_tag.to_be_bytes());
                emit_ip(Some(im.originator), out);
            }
            EvpnRoute::Other { value, .. } => out.extend_from_slice(value),
        }
        let len = reader::len_since(out, start, 255, "evpn route length")?;
        if let Some(b) = out.get_mut(start - 1) {
            *b = len as u8;
        }
        Ok(())
    }

    /// Encodes routes as one NLRI field.
    pub fn emit_all(routes: &[EvpnRoute], out: &mut Vec<u8>) -> Result<()> {
        routes.iter().try_for_each(|route| route.emit(out))
    }
}

impl MpReach {
    /// An EVPN MP_REACH_NLRI with `next_hop` (the local VTEP address) and `routes`.
    pub fn evpn(next_hop: IpAddr, routes: &[EvpnRoute]) -> Result<MpReach> {
        let next_hop = match next_hop {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        let mut nlri = Vec::new();
        EvpnRoute::emit_all(routes, &mut nlri)?;
        Ok(MpReach {
            afi: AFI_L2VPN,
            safi: SAFI_EVPN,
            next_hop,
            nlri,
        })
    }

    /// The next hop as an address: IPv4, IPv6, or the global one of an IPv6 global+link-local pair.
    pub fn next_hop_ip(&self) -> Option<IpAddr> {
        match self.next_hop.len() {
            4 => <[u8; 4]>::try_from(&self.next_hop[..])
                .ok()
                .map(|b| IpAddr::V4(b.into())),
            16 | 32 => <[u8; 16]>::try_from(self.next_hop.get(..16)?)
                .ok()
                .map(|b| IpAddr::V6(b.into())),
            _ => None,
        }
    }

    /// The EVPN routes, when this is AFI 25 / SAFI 70 (`None` for another family).
    pub fn evpn_routes(&self) -> Option<Result<Vec<EvpnRoute>>> {
        (self.afi == AFI_L2VPN && self.safi == SAFI_EVPN).then(|| EvpnRoute::parse_all(&self.nlri))
    }
}
