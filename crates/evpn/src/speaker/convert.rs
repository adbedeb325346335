//! The speaker's translations: a received route into what the table keeps, the table's data
//! path changes into the pipeline's, session state and counters into the API's.

use std::net::IpAddr;

use nvo_api as api;
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::session::{self, RouteAttrs};
use nvo_bgp::{EvpnRoute, ExtendedCommunity};
use nvo_pipeline::{EvpnChange, Vni};

use crate::rib::{Install, Received};

/// What the table keeps of a received route; None for routes it does not use (other route
/// types, another encapsulation, no usable VTEP).
pub(super) fn received(route: &EvpnRoute, attrs: &RouteAttrs) -> Option<Received> {
    let mut seq = 0;
    let mut sticky = false;
    let mut group = 0;
    let mut rts = Vec::new();
    for c in &attrs.communities {
        match *c {
            ExtendedCommunity::RouteTarget(rt) => rts.push(rt),
            ExtendedCommunity::Encapsulation(t) if t != TUNNEL_TYPE_VXLAN => return None,
            ExtendedCommunity::MacMobility { sequence, .. } => {
                seq = sequence;
                sticky = c.is_sticky();
            }
            // Scope 0: the route's own network (another scope names nothing nvo knows).
            ExtendedCommunity::GroupPolicy { scope: 0, group: g } => group = g,
            _ => {}
        }
    }
    let (vni, vtep) = match route {
        EvpnRoute::MacIp(r) => (r.vni(), attrs.next_hop),
        EvpnRoute::InclusiveMulticast(r) => match &attrs.pmsi {
            Some(p) => {
                let endpoint = match p.tunnel_id.len() {
                    4 => <[u8; 4]>::try_from(&p.tunnel_id[..]).ok().map(IpAddr::from),
                    16 => <[u8; 16]>::try_from(&p.tunnel_id[..])
                        .ok()
                        .map(IpAddr::from),
                    _ => None,
                };
                let vni = if p.label != 0 {
                    p.label
                } else {
                    r.ethernet_tag
                };
                (vni, endpoint.unwrap_or(r.originator))
            }
            None => (r.ethernet_tag, r.originator),
        },
        EvpnRoute::Other { .. } => return None,
    };
    if !(1..=0x00ff_ffff).contains(&vni) || vtep.is_unspecified() || vtep.is_multicast() {
        return None;
    }
    Some(Received {
        vni,
        vtep,
        seq,
        sticky,
        rts,
        group,
    })
}

pub(super) fn change(i: Install) -> EvpnChange {
    match i {
        Install::FdbSet(v, mac, remote) => EvpnChange::FdbSet {
            vni: Vni(v),
            mac,
            remote,
        },
        Install::FdbRemove(v, mac) => EvpnChange::FdbRemove { vni: Vni(v), mac },
        Install::NeighSet(v, ip, mac) => EvpnChange::NeighSet {
            vni: Vni(v),
            ip,
            mac,
        },
        Install::NeighRemove(v, ip) => EvpnChange::NeighRemove { vni: Vni(v), ip },
        Install::FloodAdd(v, remote) => EvpnChange::FloodAdd {
            vni: Vni(v),
            remote,
        },
        Install::FloodRemove(v, remote) => EvpnChange::FloodRemove {
            vni: Vni(v),
            remote,
        },
        Install::IdentitySet(v, ip, group) => EvpnChange::IdentitySet {
            vni: Vni(v),
            ip,
            group,
        },
        Install::IdentityRemove(v, ip) => EvpnChange::IdentityRemove { vni: Vni(v), ip },
    }
}

pub(super) fn state(s: session::SessionState) -> api::SessionState {
    use session::SessionState as S;
    match s {
        S::Idle => api::SessionState::Idle,
        S::Connect => api::SessionState::Connect,
        S::Active => api::SessionState::Active,
        S::OpenSent => api::SessionState::OpenSent,
        S::OpenConfirm => api::SessionState::OpenConfirm,
        S::Established => api::SessionState::Established,
    }
}

pub(super) fn counts(c: session::MessageCounts) -> api::MessageCounts {
    api::MessageCounts {
        open: c.open,
        update: c.update,
        notification: c.notification,
        keepalive: c.keepalive,
        route_refresh: c.route_refresh,
    }
}

/// An IPv4-mapped IPv6 address as IPv4 (a dual-stack listener reports those).
pub(super) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}
