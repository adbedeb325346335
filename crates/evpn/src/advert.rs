//! This node's routes as UPDATE messages: attributes per RFC 7432 / RFC 8365 and packing of
//! many routes into each message (at most 4096 bytes, RFC 4271 §4.1).
//!
//! A type 2 route carries ORIGIN IGP, AS_PATH (empty towards iBGP peers, our AS towards eBGP
//! ones), LOCAL_PREF 100 (iBGP), MP_REACH_NLRI (AFI 25 / SAFI 70, next hop = the VTEP), and
//! extended communities: the export route targets, the encapsulation (tunnel type VXLAN), MAC
//! mobility when the sequence is above 0 and the host's Group Policy ID when it has a group. A type 3 route adds the PMSI tunnel attribute (ingress
//! replication, label = VNI, endpoint = the VTEP).

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_bgp::attribute::{segment_type, AsPathSegment, Origin, PMSI_INGRESS_REPLICATION};
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::{
    pack, AttributeValue, EvpnRoute, ExtendedCommunity, PathAttribute, PmsiTunnel, UpdateRepr,
};

use super::rib::{Advert, OutAttrs};
use super::settings::Settings;

/// How the routes are sent to one peer.
#[derive(Debug, Clone, Copy)]
pub struct PeerKind {
    /// iBGP (same AS): LOCAL_PREF, empty AS_PATH.
    pub ibgp: bool,
}

/// The UPDATEs announcing and withdrawing `changes`, in as few messages as fit
/// (`nvo_bgp::pack`).
pub fn updates(settings: &Settings, peer: PeerKind, changes: &[Advert]) -> Vec<UpdateRepr> {
    let mut out = Vec::new();
    let withdrawn: Vec<EvpnRoute> = changes
        .iter()
        .filter_map(|c| match c {
            Advert::Withdraw(r) => Some(r.clone()),
            Advert::Announce(..) => None,
        })
        .collect();
    match pack::withdrawals(&withdrawn) {
        Ok(updates) => out.extend(updates),
        Err(e) => log::error!("evpn: cannot encode withdrawals ({e}); left out"),
    }
    // Routes with the same attributes share messages.
    let mut batches: BTreeMap<(u32, u32, u16, bool, IpAddr), Vec<EvpnRoute>> = BTreeMap::new();
    for c in changes {
        if let Advert::Announce(route, attrs) = c {
            let imet = matches!(route, EvpnRoute::InclusiveMulticast(_));
            batches
                .entry((attrs.vni, attrs.seq, attrs.group, imet, attrs.next_hop))
                .or_default()
                .push(route.clone());
        }
    }
    for ((vni, seq, group, imet, next_hop), routes) in batches {
        let attrs = OutAttrs {
            vni,
            seq,
            group,
            next_hop,
        };
        let shared = attributes(settings, peer, attrs, imet);
        match pack::announcements(next_hop, &shared, &routes) {
            Ok(updates) => out.extend(updates),
            Err(e) => log::error!(
                "evpn: cannot encode {} route(s) of vni {vni} ({e}); left out",
                routes.len()
            ),
        }
    }
    out
}

/// The attributes besides MP_REACH_NLRI.
fn attributes(
    settings: &Settings,
    peer: PeerKind,
    out: OutAttrs,
    imet: bool,
) -> Vec<PathAttribute> {
    let path = if peer.ibgp {
        vec![]
    } else {
        vec![AsPathSegment {
            kind: segment_type::AS_SEQUENCE,
            asns: vec![settings.asn],
        }]
    };
    let vni = settings.vni(out.vni);
    let mut communities: Vec<ExtendedCommunity> = vni
        .export
        .iter()
        .map(|&rt| ExtendedCommunity::RouteTarget(rt))
        .collect();
    communities.push(ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN));
    if out.seq > 0 {
        communities.push(ExtendedCommunity::MacMobility {
            flags: 0,
            sequence: out.seq,
        });
    }
    if out.group != 0 {
        communities.push(ExtendedCommunity::GroupPolicy {
            scope: 0,
            group: out.group,
        });
    }
    let mut attrs = vec![
        PathAttribute::new(AttributeValue::Origin(Origin::Igp)),
        PathAttribute::new(AttributeValue::AsPath(path)),
    ];
    if peer.ibgp {
        attrs.push(PathAttribute::new(AttributeValue::LocalPref(100)));
    }
    attrs.push(PathAttribute::new(AttributeValue::ExtendedCommunities(
        communities,
    )));
    if imet {
        let tunnel_id = match settings.next_hop {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        attrs.push(PathAttribute::new(AttributeValue::PmsiTunnel(PmsiTunnel {
            flags: 0,
            tunnel_type: PMSI_INGRESS_REPLICATION,
            label: out.vni,
            tunnel_id,
        })));
    }
    attrs
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use nvo_bgp::{InclusiveMulticastRoute, RouteTarget};
    use nvo_pipeline::Mac;

    use super::*;
    use crate::rib::mac_route;
    use crate::settings::{default_rd, tests::base};

    #[test]
    fn announcements_carry_the_evpn_attributes() {
        let settings = Settings::resolve(&base(), "10.0.0.1".parse().unwrap()).unwrap();
        let rd = default_rd(Ipv4Addr::new(10, 0, 0, 1), 100);
        let mac = mac_route(rd, 100, Mac([2, 0, 0, 0, 0, 1]), None);
        let imet = EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
            rd,
            ethernet_tag: 0,
            originator: settings.next_hop,
        });
        let changes = vec![
            Advert::Announce(
                mac.clone(),
                OutAttrs {
                    vni: 100,
                    seq: 3,
                    group: 10,
                    next_hop: settings.next_hop,
                },
            ),
            Advert::Announce(
                imet,
                OutAttrs {
                    vni: 100,
                    seq: 0,
                    group: 0,
                    next_hop: settings.next_hop,
                },
            ),
            Advert::Withdraw(mac_route(rd, 100, Mac([2, 0, 0, 0, 0, 2]), None)),
        ];
        let built = updates(&settings, PeerKind { ibgp: true }, &changes);
        assert_eq!(built.len(), 3, "one withdrawal, two attribute groups");
        assert!(built[0].mp_unreach().is_some());
        // Groups go out in (vni, seq, type 3 or not) order: the type 3 route (seq 0) first.
        let type2 = &built[2];
        assert_eq!(
            type2.mp_reach().unwrap().evpn_routes().unwrap().unwrap(),
            vec![mac]
        );
        let Some(AttributeValue::ExtendedCommunities(c)) = type2.attribute(16) else {
            panic!("no extended communities")
        };
        assert!(
            c.contains(&ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs {
                asn: 65000,
                value: 100
            }))
        );
        assert!(c.contains(&ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN)));
        assert!(c.contains(&ExtendedCommunity::MacMobility {
            flags: 0,
            sequence: 3
        }));
        assert!(c.contains(&ExtendedCommunity::GroupPolicy {
            scope: 0,
            group: 10
        }));
        assert_eq!(type2.attribute(5), Some(&AttributeValue::LocalPref(100)));
        // The type 3 route carries no group.
        let Some(AttributeValue::ExtendedCommunities(c3)) = built[1].attribute(16) else {
            panic!("no extended communities on the type 3 route")
        };
        assert!(!c3
            .iter()
            .any(|c| matches!(c, ExtendedCommunity::GroupPolicy { .. })));
        let Some(AttributeValue::PmsiTunnel(p)) = built[1].attribute(22) else {
            panic!("no PMSI tunnel on the type 3 route")
        };
        assert_eq!((p.tunnel_type, p.label), (PMSI_INGRESS_REPLICATION, 100));
        // eBGP: our AS in the path, no LOCAL_PREF.
        let ebgp = updates(&settings, PeerKind { ibgp: false }, &changes[..1]);
        assert_eq!(ebgp[0].attribute(5), None);
        assert!(
            matches!(ebgp[0].attribute(2), Some(AttributeValue::AsPath(p)) if p[0].asns == vec![65000])
        );
    }
}
