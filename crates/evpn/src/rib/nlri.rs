//! The NLRI keys of the table: a route's key, and the routes this node builds for a MAC.

use std::net::IpAddr;

use nvo_bgp::{EvpnRoute, InclusiveMulticastRoute, MacIpRoute, RouteDistinguisher};
use nvo_pipeline::Mac;

use super::NlriKey;

/// A type 2 route of this node.
pub fn mac_route(rd: RouteDistinguisher, vni: u32, mac: Mac, ip: Option<IpAddr>) -> EvpnRoute {
    EvpnRoute::MacIp(MacIpRoute {
        rd,
        esi: [0; 10],
        ethernet_tag: 0,
        mac: mac.0,
        ip,
        label1: vni,
        label2: None,
    })
}

/// The key of a route; None for types this table does not use.
pub fn key_of(route: &EvpnRoute) -> Option<NlriKey> {
    match route {
        EvpnRoute::MacIp(r) => Some(NlriKey::Mac {
            rd: r.rd.to_bytes(),
            tag: r.ethernet_tag,
            mac: Mac(r.mac),
            ip: r.ip,
        }),
        EvpnRoute::InclusiveMulticast(r) => Some(NlriKey::Imet {
            rd: r.rd.to_bytes(),
            tag: r.ethernet_tag,
            originator: r.originator,
        }),
        EvpnRoute::Other { .. } => None,
    }
}

/// A route rebuilt from its key (for listing and withdrawing).
pub fn route_of(key: &NlriKey, vni: u32) -> EvpnRoute {
    match *key {
        NlriKey::Mac { rd, tag, mac, ip } => EvpnRoute::MacIp(MacIpRoute {
            rd: RouteDistinguisher::from_bytes(rd),
            esi: [0; 10],
            ethernet_tag: tag,
            mac: mac.0,
            ip,
            label1: vni,
            label2: None,
        }),
        NlriKey::Imet {
            rd,
            tag,
            originator,
        } => EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
            rd: RouteDistinguisher::from_bytes(rd),
            ethernet_tag: tag,
            originator,
        }),
    }
}
