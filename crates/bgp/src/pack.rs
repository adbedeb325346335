//! EVPN routes packed into as few UPDATE messages as fit (RFC 4271 §4.1: at most 4096 bytes).
//!
//! An announcement is MP_REACH_NLRI first (RFC 7606 §5.1 asks for it to come first) followed by
//! the attributes the routes share; a withdrawal is a lone MP_UNREACH_NLRI (RFC 4760 §4). Both
//! MP attributes carry the Extended Length flag, so a message's size is its empty size plus the
//! bytes of its NLRI and messages are filled by arithmetic alone: every message but the last
//! is full (one more route would not fit).

use std::net::IpAddr;

use crate::attribute::attr_flags;
use crate::evpn::{AFI_L2VPN, SAFI_EVPN};
use crate::message::{HEADER_LEN, MAX_MESSAGE_LEN};
use crate::{AttributeValue, EvpnRoute, MpReach, MpUnreach, PathAttribute, Result, UpdateRepr};

/// UPDATEs announcing `routes` with next hop `next_hop` and the attributes `shared` (which must
/// not hold MP_REACH_NLRI).
pub fn announcements(
    next_hop: IpAddr,
    shared: &[PathAttribute],
    routes: &[EvpnRoute],
) -> Result<Vec<UpdateRepr>> {
    let build = |nlri: Vec<u8>| -> Result<UpdateRepr> {
        let mut mp = MpReach::evpn(next_hop, &[])?;
        mp.nlri = nlri;
        let mut attributes = vec![extended(AttributeValue::MpReach(mp))];
        attributes.extend_from_slice(shared);
        Ok(update(attributes))
    };
    pack(routes, build)
}

/// UPDATEs withdrawing `routes`.
pub fn withdrawals(routes: &[EvpnRoute]) -> Result<Vec<UpdateRepr>> {
    pack(routes, |withdrawn| {
        Ok(update(vec![extended(AttributeValue::MpUnreach(
            MpUnreach {
                afi: AFI_L2VPN,
                safi: SAFI_EVPN,
                withdrawn,
            },
        ))]))
    })
}

/// The End-of-RIB marker for L2VPN EVPN (RFC 4724 §2): an UPDATE with only an empty
/// MP_UNREACH_NLRI.
pub fn end_of_rib() -> UpdateRepr {
    update(vec![PathAttribute::new(AttributeValue::MpUnreach(
        MpUnreach {
            afi: AFI_L2VPN,
            safi: SAFI_EVPN,
            withdrawn: Vec::new(),
        },
    ))])
}

fn extended(value: AttributeValue) -> PathAttribute {
    let mut attr = PathAttribute::new(value);
    attr.flags |= attr_flags::EXTENDED_LENGTH;
    attr
}

fn update(attributes: Vec<PathAttribute>) -> UpdateRepr {
    UpdateRepr {
        withdrawn: Vec::new(),
        attributes,
        nlri: Vec::new(),
    }
}

/// The length of `update` as a whole message.
fn message_len(update: &UpdateRepr) -> Result<usize> {
    let mut body = Vec::with_capacity(MAX_MESSAGE_LEN);
    update.emit(&mut body)?;
    Ok(HEADER_LEN + body.len())
}

/// Splits `routes` into NLRI fields that fill messages made by `build` up to 4096 bytes.
fn pack(
    routes: &[EvpnRoute],
    build: impl Fn(Vec<u8>) -> Result<UpdateRepr>,
) -> Result<Vec<UpdateRepr>> {
    let room = MAX_MESSAGE_LEN.saturating_sub(message_len(&build(Vec::new())?)?);
    let mut messages = Vec::new();
    let mut nlri = Vec::with_capacity(room);
    let mut one = Vec::with_capacity(256);
    for route in routes {
        one.clear();
        route.emit(&mut one)?;
        if !nlri.is_empty() && nlri.len() + one.len() > room {
            messages.push(build(std::mem::replace(
                &mut nlri,
                Vec::with_capacity(room),
            ))?);
        }
        nlri.extend_from_slice(&one);
    }
    if !nlri.is_empty() {
        messages.push(build(nlri)?);
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::evpn::{MacIpRoute, RouteDistinguisher};

    fn route(i: u32) -> EvpnRoute {
        let b = i.to_be_bytes();
        EvpnRoute::MacIp(MacIpRoute {
            rd: RouteDistinguisher::Ipv4 {
                addr: Ipv4Addr::new(192, 0, 2, 1),
                value: 100,
            },
            esi: [0; 10],
            ethernet_tag: 0,
            mac: [2, 0xbb, b[0], b[1], b[2], b[3]],
            ip: i.is_multiple_of(2).then(|| IpAddr::V4(Ipv4Addr::from(i))),
            label1: 100,
            label2: None,
        })
    }

    #[test]
    fn messages_are_full_and_hold_every_route_once() {
        let routes: Vec<EvpnRoute> = (0..1000).map(route).collect();
        let shared = vec![PathAttribute::new(AttributeValue::LocalPref(100))];
        let next_hop = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let updates = announcements(next_hop, &shared, &routes).unwrap();
        let mut back = Vec::new();
        for (i, u) in updates.iter().enumerate() {
            let len = message_len(u).unwrap();
            assert!(len <= MAX_MESSAGE_LEN, "{len}");
            if i + 1 < updates.len() {
                assert!(len + 40 > MAX_MESSAGE_LEN, "message {i} is not full: {len}");
            }
            let mp = u.mp_reach().unwrap();
            assert_eq!(mp.next_hop_ip(), Some(next_hop));
            assert_eq!(u.attributes[1].value, AttributeValue::LocalPref(100));
            back.extend(mp.evpn_routes().unwrap().unwrap());
        }
        assert_eq!(back, routes);
        let gone = withdrawals(&routes).unwrap();
        let back: Vec<EvpnRoute> = gone
            .iter()
            .flat_map(|u| EvpnRoute::parse_all(&u.mp_unreach().unwrap().withdrawn).unwrap())
            .collect();
        assert_eq!(back, routes);
        assert!(end_of_rib().is_end_of_rib());
        assert!(announcements(next_hop, &shared, &[]).unwrap().is_empty());
    }
}
