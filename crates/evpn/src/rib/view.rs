//! The table as the API lists it (`GET /v1/evpn/routes`, `nvo evpn routes`).

use std::net::IpAddr;

use nvo_api as api;
use nvo_bgp::{EvpnRoute, RouteDistinguisher, RouteTarget};
use nvo_pipeline::Mac;

use super::nlri::route_of;
use super::{NlriKey, PeerId, Rib};
use crate::settings::{show_rd, show_rt};

impl Rib {
    /// The routes as the API lists them; `source` names a peer.
    pub fn routes(
        &self,
        vni: Option<u32>,
        route_type: Option<u8>,
        source: impl Fn(PeerId) -> String,
    ) -> Vec<api::EvpnRoute> {
        let mut list = Vec::new();
        let export = |v: u32| self.settings.vni(v).export;
        for (route, attrs) in self.adj_out.values() {
            let dup = match route {
                EvpnRoute::MacIp(r) => self
                    .history
                    .get(&(attrs.vni, Mac(r.mac)))
                    .is_some_and(|h| h.duplicate_since.is_some()),
                _ => false,
            };
            let mut shown = show(
                route,
                attrs.vni,
                attrs.next_hop,
                "local".into(),
                attrs.seq,
                false,
                &export(attrs.vni),
                true,
                false,
                dup,
            );
            shown.group = attrs.group;
            list.push(shown);
        }
        for (&peer, table) in &self.adj_in {
            for (key, path) in table {
                let route = route_of(key, path.got.vni);
                let best = match key {
                    NlriKey::Mac { mac, .. } => {
                        self.installed.fdb.get(&(path.got.vni, *mac)) == Some(&path.got.vtep)
                    }
                    NlriKey::Imet { .. } => self
                        .installed
                        .flood
                        .get(&path.got.vni)
                        .is_some_and(|s| s.contains(&path.got.vtep)),
                };
                let dup = match key {
                    NlriKey::Mac { mac, .. } => self
                        .history
                        .get(&(path.got.vni, *mac))
                        .is_some_and(|h| h.duplicate_since.is_some()),
                    NlriKey::Imet { .. } => false,
                };
                let mut shown = show(
                    &route,
                    path.got.vni,
                    path.got.vtep,
                    source(peer),
                    path.got.seq,
                    path.got.sticky,
                    &path.got.rts,
                    best,
                    path.stale,
                    dup,
                );
                shown.group = path.got.group;
                list.push(shown);
            }
        }
        list.retain(|r| {
            vni.is_none_or(|v| v == r.vni) && route_type.is_none_or(|t| t == r.route_type)
        });
        list.sort_by(|a, b| {
            (a.vni, a.route_type, &a.mac, a.ip, a.vtep, &a.source).cmp(&(
                b.vni,
                b.route_type,
                &b.mac,
                b.ip,
                b.vtep,
                &b.source,
            ))
        });
        list
    }
}

#[allow(clippy::too_many_arguments)]
fn show(
    route: &EvpnRoute,
    vni: u32,
    vtep: IpAddr,
    source: String,
    seq: u32,
    sticky: bool,
    rts: &[RouteTarget],
    best: bool,
    stale: bool,
    duplicate: bool,
) -> api::EvpnRoute {
    let (route_type, rd, mac, ip) = match route {
        EvpnRoute::MacIp(r) => (2, r.rd, Some(Mac(r.mac).to_string()), r.ip),
        EvpnRoute::InclusiveMulticast(r) => (3, r.rd, None, None),
        EvpnRoute::Other { route_type, .. } => {
            (*route_type, RouteDistinguisher::Unknown([0; 8]), None, None)
        }
    };
    api::EvpnRoute {
        route_type,
        rd: show_rd(&rd),
        vni,
        mac,
        ip,
        vtep,
        source,
        seq,
        sticky,
        rt: rts.iter().map(show_rt).collect(),
        best,
        stale,
        duplicate,
        group: 0,
    }
}
