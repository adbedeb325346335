//! Which routes the injector advertises: MAC-only type-2 routes (RFC 7432 §7.2) whose MACs come
//! from a counter, spread round-robin over the VNIs, and optionally one type-3 route (§7.3) per
//! VNI; with the path attributes every route of a VNI shares.
//!
//! Route `i` (0-based) belongs to VNI `vnis[i % vnis.len()]` and carries MAC
//! `02:bb:` followed by the four bytes of `first + i` (big-endian), so two injectors with
//! disjoint `first..first+routes` ranges never advertise the same MAC. Per VNI the RD is
//! `router_id:vni` (type 1; `vni & 0xffff` when the VNI needs more than 16 bits, as nvod does),
//! the route target `asn:vni` (RFC 4360 type 0, or RFC 5668 type 2 for a 4-octet AS), the
//! encapsulation community says VXLAN (RFC 8365 §5.1.3) and the label is the VNI.

use std::net::{IpAddr, Ipv4Addr};

use nvo_bgp::attribute::{AsPathSegment, Origin, PMSI_INGRESS_REPLICATION};
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::{
    AttributeValue, EvpnRoute, ExtendedCommunity, InclusiveMulticastRoute, MacIpRoute,
    PathAttribute, PmsiTunnel, RouteDistinguisher, RouteTarget,
};

/// The first two bytes of every generated MAC (locally administered, unicast).
pub const MAC_PREFIX: [u8; 2] = [0x02, 0xbb];
/// Largest VNI (24 bits).
pub const VNI_MAX: u32 = 0x00ff_ffff;
/// LOCAL_PREF sent on every route (the usual default; iBGP needs one, RFC 4271 §5.1.5).
pub const LOCAL_PREF: u32 = 100;

/// Why a set of routes cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// No VNI given.
    #[error("no vni given: pass --vnis, e.g. --vnis 100 or --vnis 100-109")]
    NoVnis,
    /// A VNI outside 1..=16777215.
    #[error("vni {0} out of range: vnis are 1 to 16777215")]
    VniRange(u32),
    /// The MAC counter would pass 2^32.
    #[error("routes {first}..{end} exceed the 32-bit mac counter: lower --first or --routes")]
    CounterOverflow {
        /// The first counter value.
        first: u64,
        /// One past the last.
        end: u64,
    },
    /// A 4-octet AS leaves 16 bits for the RT's number, too few for the VNI.
    #[error("route target {asn}:{vni} cannot be encoded: a 4-octet as leaves 16 bits for the vni")]
    RouteTarget {
        /// The AS.
        asn: u32,
        /// The VNI.
        vni: u32,
    },
}

/// What to advertise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Our AS (the route target's AS part).
    pub asn: u32,
    /// Our BGP identifier (the RD's address part).
    pub router_id: Ipv4Addr,
    /// The VTEP address: MP_REACH next hop and type-3 originator.
    pub next_hop: IpAddr,
    /// The VNIs, routes spread over them round-robin.
    pub vnis: Vec<u32>,
    /// Number of type-2 routes.
    pub routes: u64,
    /// The MAC counter's first value.
    pub first: u64,
    /// Also one type-3 route per VNI.
    pub type3: bool,
}

/// The routes of one VNI and the attributes they share (MP_REACH aside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VniRoutes {
    /// The VNI.
    pub vni: u32,
    /// ORIGIN, AS_PATH, LOCAL_PREF, EXTENDED_COMMUNITIES (RT, encapsulation).
    pub attributes: Vec<PathAttribute>,
    /// The type-2 routes.
    pub macs: Vec<EvpnRoute>,
    /// The type-3 route, when asked for.
    pub inclusive: Option<EvpnRoute>,
}

impl VniRoutes {
    /// Attributes of the type-3 route: the shared ones plus PMSI tunnel (RFC 8365 §9: ingress
    /// replication to the originator, label = VNI).
    pub fn inclusive_attributes(&self, next_hop: IpAddr) -> Vec<PathAttribute> {
        let tunnel_id = match next_hop {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        let mut attrs = self.attributes.clone();
        attrs.push(PathAttribute::new(AttributeValue::PmsiTunnel(PmsiTunnel {
            flags: 0,
            tunnel_type: PMSI_INGRESS_REPLICATION,
            label: self.vni,
            tunnel_id,
        })));
        attrs
    }
}

/// The MAC of counter value `n` (which [`Plan::build`] keeps below 2^32).
pub fn mac(n: u32) -> [u8; 6] {
    let [a, b, c, d] = n.to_be_bytes();
    [MAC_PREFIX[0], MAC_PREFIX[1], a, b, c, d]
}

/// The route target `asn:vni`.
pub fn route_target(asn: u32, vni: u32) -> Result<RouteTarget, PlanError> {
    match u16::try_from(asn) {
        Ok(asn) => Ok(RouteTarget::TwoOctetAs { asn, value: vni }),
        Err(_) => u16::try_from(vni)
            .map(|value| RouteTarget::FourOctetAs { asn, value })
            .map_err(|_| PlanError::RouteTarget { asn, vni }),
    }
}

/// The route distinguisher `router_id:vni` (the low 16 bits of a wider VNI).
pub fn route_distinguisher(router_id: Ipv4Addr, vni: u32) -> RouteDistinguisher {
    RouteDistinguisher::Ipv4 {
        addr: router_id,
        value: (vni & 0xffff) as u16,
    }
}

impl Plan {
    /// Makes every route, grouped per VNI in the order of `vnis`.
    pub fn build(&self) -> Result<Vec<VniRoutes>, PlanError> {
        if self.vnis.is_empty() {
            return Err(PlanError::NoVnis);
        }
        if let Some(&bad) = self.vnis.iter().find(|&&v| v == 0 || v > VNI_MAX) {
            return Err(PlanError::VniRange(bad));
        }
        let end = self.first.saturating_add(self.routes);
        if end > 1 << 32 {
            return Err(PlanError::CounterOverflow {
                first: self.first,
                end,
            });
        }
        let k = self.vnis.len() as u64;
        let mut out = Vec::with_capacity(self.vnis.len());
        for (j, &vni) in self.vnis.iter().enumerate() {
            let rd = route_distinguisher(self.router_id, vni);
            // Routes j, j + k, j + 2k, ... belong to this VNI.
            let count = (self.routes + k - 1 - j as u64) / k;
            let macs = (0..count)
                .map(|m| {
                    let counter = (self.first + j as u64 + m * k) as u32;
                    EvpnRoute::MacIp(MacIpRoute {
                        rd,
                        esi: [0; 10],
                        ethernet_tag: 0,
                        mac: mac(counter),
                        ip: None,
                        label1: vni,
                        label2: None,
                    })
                })
                .collect();
            let inclusive = self.type3.then_some({
                EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
                    rd,
                    ethernet_tag: 0,
                    originator: self.next_hop,
                })
            });
            out.push(VniRoutes {
                vni,
                attributes: self.shared_attributes(vni)?,
                macs,
                inclusive,
            });
        }
        Ok(out)
    }

    fn shared_attributes(&self, vni: u32) -> Result<Vec<PathAttribute>, PlanError> {
        let communities = vec![
            ExtendedCommunity::RouteTarget(route_target(self.asn, vni)?),
            ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN),
        ];
        // iBGP: an empty AS_PATH (RFC 4271 §5.1.2), LOCAL_PREF present.
        let as_path: Vec<AsPathSegment> = Vec::new();
        Ok(vec![
            PathAttribute::new(AttributeValue::Origin(Origin::Igp)),
            PathAttribute::new(AttributeValue::AsPath(as_path)),
            PathAttribute::new(AttributeValue::LocalPref(LOCAL_PREF)),
            PathAttribute::new(AttributeValue::ExtendedCommunities(communities)),
        ])
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plan of `routes` routes over `vnis`, from MAC number 0.
    pub(crate) fn plan(routes: u64, vnis: Vec<u32>) -> Plan {
        Plan {
            asn: 65000,
            router_id: Ipv4Addr::new(10, 0, 0, 9),
            next_hop: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)),
            vnis,
            routes,
            first: 0,
            type3: true,
        }
    }

    #[test]
    fn routes_spread_round_robin_with_unique_macs() {
        let groups = plan(10, vec![100, 200, 300]).build().unwrap();
        let counts: Vec<usize> = groups.iter().map(|g| g.macs.len()).collect();
        assert_eq!(counts, vec![4, 3, 3]);
        let EvpnRoute::MacIp(first) = &groups[1].macs[0] else {
            panic!("not a mac route")
        };
        assert_eq!(first.mac, [0x02, 0xbb, 0, 0, 0, 1]);
        assert_eq!(first.label1, 200);
        assert_eq!(
            first.rd,
            RouteDistinguisher::Ipv4 {
                addr: Ipv4Addr::new(10, 0, 0, 9),
                value: 200
            }
        );
        assert!(groups.iter().all(|g| g.inclusive.is_some()));
    }

    #[test]
    fn refuses_bad_plans() {
        assert_eq!(plan(1, vec![]).build(), Err(PlanError::NoVnis));
        assert_eq!(
            plan(1, vec![1 << 24]).build(),
            Err(PlanError::VniRange(1 << 24))
        );
        let mut p = plan(2, vec![1]);
        p.first = u64::from(u32::MAX);
        assert!(matches!(p.build(), Err(PlanError::CounterOverflow { .. })));
        assert_eq!(
            route_target(4_200_000_000, 70_000),
            Err(PlanError::RouteTarget {
                asn: 4_200_000_000,
                vni: 70_000
            })
        );
        assert_eq!(
            route_target(4_200_000_000, 7),
            Ok(RouteTarget::FourOctetAs {
                asn: 4_200_000_000,
                value: 7
            })
        );
    }
}
