//! Routes → whole UPDATE messages as bytes (header included), packed by `nvo_bgp::pack`: each
//! at most 4096 bytes (RFC 4271 §4.1), holding as many EVPN NLRI as fit.

use std::net::IpAddr;

use nvo_bgp::message::MAX_MESSAGE_LEN;
use nvo_bgp::{pack, EvpnRoute, Message, PathAttribute, UpdateRepr};

/// Announcements of `routes` with next hop `next_hop` and the attributes `shared`.
pub fn announcements(
    next_hop: IpAddr,
    shared: &[PathAttribute],
    routes: &[EvpnRoute],
) -> nvo_bgp::Result<Vec<Vec<u8>>> {
    pack::announcements(next_hop, shared, routes)?
        .into_iter()
        .map(message)
        .collect()
}

/// Withdrawals of `routes`.
pub fn withdrawals(routes: &[EvpnRoute]) -> nvo_bgp::Result<Vec<Vec<u8>>> {
    pack::withdrawals(routes)?
        .into_iter()
        .map(message)
        .collect()
}

/// End-of-RIB for L2VPN EVPN (RFC 4724 §2): an UPDATE with only an empty MP_UNREACH_NLRI.
pub fn end_of_rib() -> nvo_bgp::Result<Vec<u8>> {
    message(pack::end_of_rib())
}

fn message(update: UpdateRepr) -> nvo_bgp::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(MAX_MESSAGE_LEN);
    Message::Update(update).emit(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::routes::Plan;
    use nvo_bgp::AttributeValue;

    fn plan(routes: u64, vnis: Vec<u32>) -> Plan {
        Plan {
            first: 7,
            ..crate::routes::tests::plan(routes, vnis)
        }
    }

    fn parse(bytes: &[u8]) -> UpdateRepr {
        assert!(bytes.len() <= MAX_MESSAGE_LEN, "{} bytes", bytes.len());
        match Message::parse(bytes).unwrap() {
            Message::Update(u) => u,
            other => panic!("not an update: {other:?}"),
        }
    }

    #[test]
    fn every_route_once_in_full_messages() {
        let p = plan(10_000, vec![100, 200, 300]);
        let mut seen = HashSet::new();
        let mut messages = 0;
        for group in p.build().unwrap() {
            let msgs = announcements(p.next_hop, &group.attributes, &group.macs).unwrap();
            for (i, bytes) in msgs.iter().enumerate() {
                let update = parse(bytes);
                // Every message but the last of a group is full: one more route would not fit.
                if i + 1 < msgs.len() {
                    assert!(bytes.len() + 35 > MAX_MESSAGE_LEN, "{} bytes", bytes.len());
                }
                let mp = update.mp_reach().unwrap();
                assert_eq!(mp.next_hop_ip(), Some(p.next_hop));
                assert_eq!(update.missing_mandatory(true), None);
                assert_eq!(update.attributes[0].value.type_code(), 14);
                for route in mp.evpn_routes().unwrap().unwrap() {
                    let EvpnRoute::MacIp(m) = &route else {
                        panic!("not a mac route")
                    };
                    assert_eq!(m.label1, group.vni);
                    assert!(seen.insert(m.mac), "{:?} twice", m.mac);
                }
                messages += 1;
            }
        }
        assert_eq!(seen.len(), 10_000);
        // A MAC-only route is 35 bytes; about 115 fit next to the attributes.
        assert!(messages <= 10_000 / 110 + 3, "{messages} messages");
    }

    #[test]
    fn withdrawals_carry_every_route_once() {
        let p = plan(1_000, vec![5]);
        let group = p.build().unwrap().remove(0);
        let msgs = withdrawals(&group.macs).unwrap();
        let mut routes = Vec::new();
        for bytes in &msgs {
            let update = parse(bytes);
            assert!(update.mp_reach().is_none());
            let mp = update.mp_unreach().unwrap();
            routes.extend(EvpnRoute::parse_all(&mp.withdrawn).unwrap());
        }
        assert_eq!(routes, group.macs);
    }

    #[test]
    fn type3_carries_pmsi_and_end_of_rib_is_recognised() {
        let p = plan(0, vec![4097]);
        let group = p.build().unwrap().remove(0);
        assert!(group.macs.is_empty());
        let inclusive = group.inclusive.clone().unwrap();
        let attrs = group.inclusive_attributes(p.next_hop);
        let msgs = announcements(p.next_hop, &attrs, std::slice::from_ref(&inclusive)).unwrap();
        assert_eq!(msgs.len(), 1);
        let update = parse(&msgs[0]);
        let Some(AttributeValue::PmsiTunnel(pmsi)) = update.attribute(22) else {
            panic!("no pmsi tunnel attribute")
        };
        assert_eq!(pmsi.label, 4097);
        assert_eq!(pmsi.tunnel_id, vec![10, 0, 0, 9]);
        let routes = update.mp_reach().unwrap().evpn_routes().unwrap().unwrap();
        assert_eq!(routes, vec![inclusive]);
        assert!(parse(&end_of_rib().unwrap()).is_end_of_rib());
        assert!(announcements(p.next_hop, &attrs, &[]).unwrap().is_empty());
    }
}
