//! This node's routes as UPDATE messages: attributes per RFC 7432 / RFC 8365 and packing of
//! many routes into each message (at most 4096 bytes, RFC 4271 §4.1).
//!
//! A type 2 route carries ORIGIN IGP, AS_PATH (empty towards iBGP peers, our AS towards eBGP
//! ones), LOCAL_PREF 100 (iBGP), MP_REACH_NLRI (AFI 25 / SAFI 70, next hop = the VTEP), and
//! extended communities: the export route targets, the encapsulation (tunnel type VXLAN) and MAC
//! mobility when the sequence is above 0. A type 3 route adds the PMSI tunnel attribute (ingress
//! replication, label = VNI, endpoint = the VTEP).

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_bgp::attribute::{segment_type, AsPathSegment, Origin, PMSI_INGRESS_REPLICATION};
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::evpn::{AFI_L2VPN, SAFI_EVPN};
use nvo_bgp::{
    AttributeValue, EvpnRoute, ExtendedCommunity, MpReach, MpUnreach, PathAttribute, PmsiTunnel,
    UpdateRepr,
};

use super::rib::{Advert, OutAttrs};
use super::settings::Settings;

/// Room for NLRI in one UPDATE: 4096 minus the header (19), the section lengths (4) and a
/// generous allowance for the attributes around them.
const NLRI_BUDGET: usize = 3600;

/// How the routes are sent to one peer.
#[derive(Debug, Clone, Copy)]
pub struct PeerKind {
    /// iBGP (same AS): LOCAL_PREF, empty AS_PATH.
    pub ibgp: bool,
}

/// The UPDATEs announcing and withdrawing `changes`, in as few messages as fit.
pub fn updates(settings: &Settings, peer: PeerKind, changes: &[Advert]) -> Vec<UpdateRepr> {
    let mut out = Vec::new();
    let withdrawn: Vec<&EvpnRoute> = changes
        .iter()
        .filter_map(|c| match c {
            Advert::Withdraw(r) => Some(r),
            Advert::Announce(..) => None,
        })
        .collect();
    for chunk in pack(&withdrawn) {
        out.push(UpdateRepr {
            withdrawn: vec![],
            attributes: vec![PathAttribute::new(AttributeValue::MpUnreach(MpUnreach {
                afi: AFI_L2VPN,
                safi: SAFI_EVPN,
                withdrawn: chunk,
            }))],
            nlri: vec![],
        });
    }
    // Routes with the same attributes share messages.
    let mut groups: BTreeMap<(u32, u32, bool), Vec<&EvpnRoute>> = BTreeMap::new();
    for c in changes {
        if let Advert::Announce(route, attrs) = c {
            let imet = matches!(route, EvpnRoute::InclusiveMulticast(_));
            groups
                .entry((attrs.vni, attrs.seq, imet))
                .or_default()
                .push(route);
        }
    }
    for ((vni, seq, imet), routes) in groups {
        for chunk in pack(&routes) {
            let attrs = attributes(settings, peer, OutAttrs { vni, seq }, imet, chunk);
            out.push(UpdateRepr {
                withdrawn: vec![],
                attributes: attrs,
                nlri: vec![],
            });
        }
    }
    out
}

/// Routes encoded and cut into NLRI fields of at most [`NLRI_BUDGET`] bytes.
fn pack(routes: &[&EvpnRoute]) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut current = Vec::new();
    for route in routes {
        let mut one = Vec::new();
        if let Err(e) = route.emit(&mut one) {
            log::error!("evpn: cannot encode one of this node's routes ({e}); left out");
            continue;
        }
        if !current.is_empty() && current.len() + one.len() > NLRI_BUDGET {
            chunks.push(std::mem::take(&mut current));
        }
        current.extend_from_slice(&one);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

fn attributes(
    settings: &Settings,
    peer: PeerKind,
    out: OutAttrs,
    imet: bool,
    nlri: Vec<u8>,
) -> Vec<PathAttribute> {
    let next_hop = match settings.next_hop {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    };
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
    let mut attrs = vec![
        PathAttribute::new(AttributeValue::Origin(Origin::Igp)),
        PathAttribute::new(AttributeValue::AsPath(path)),
    ];
    if peer.ibgp {
        attrs.push(PathAttribute::new(AttributeValue::LocalPref(100)));
    }
    attrs.push(PathAttribute::new(AttributeValue::MpReach(MpReach {
        afi: AFI_L2VPN,
        safi: SAFI_EVPN,
        next_hop,
        nlri,
    })));
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
