//! UPDATE, path attribute and EVPN NLRI tests: round trips both ways, RFC 7606 error scopes,
//! and proptests that arbitrary bytes never panic and that whatever parses re-emits stably.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use common::*;
use nvo_bgp::attribute::attr_type;
use nvo_bgp::update_subcode as sub;
use nvo_bgp::*;
use proptest::prelude::*;

fn round_trip(msg: &Message) -> Vec<u8> {
    let bytes = emit(msg);
    let parsed = Message::parse(&bytes).unwrap();
    assert_eq!(&parsed, msg);
    assert_eq!(
        emit(&parsed),
        bytes,
        "parse -> emit must give the same bytes"
    );
    bytes
}

#[test]
fn evpn_update_round_trips() {
    let msg = Message::Update(evpn_update(&[mac_ip_route(), multicast_route()]));
    round_trip(&msg);
    let Message::Update(update) = msg else {
        unreachable!()
    };
    let mp = update.mp_reach().unwrap();
    assert_eq!(mp.next_hop_ip(), Some(IpAddr::V4(VTEP)));
    let routes = mp.evpn_routes().unwrap().unwrap();
    assert_eq!(routes, vec![mac_ip_route(), multicast_route()]);
    round_trip(&Message::Update(withdraw_update()));
}

#[test]
fn ipv4_update_and_end_of_rib() {
    let update = UpdateRepr {
        withdrawn: vec![Ipv4Prefix {
            addr: Ipv4Addr::new(10, 1, 0, 0),
            len: 16,
        }],
        attributes: vec![
            PathAttribute::new(AttributeValue::NextHop(VTEP)),
            // MED, kept raw with its flags.
            PathAttribute {
                flags: 0x80,
                value: AttributeValue::Raw {
                    type_code: 4,
                    value: vec![0, 0, 0, 9],
                },
            },
        ],
        nlri: vec![
            Ipv4Prefix {
                addr: Ipv4Addr::new(0, 0, 0, 0),
                len: 0,
            },
            Ipv4Prefix {
                addr: Ipv4Addr::new(10, 2, 3, 0),
                len: 24,
            },
        ],
    };
    round_trip(&Message::Update(update));
    let eor = UpdateRepr::default();
    assert!(eor.is_end_of_rib());
    assert_eq!(emit(&Message::Update(eor)).len(), 23);
    let evpn_eor = UpdateRepr {
        attributes: vec![PathAttribute::new(AttributeValue::MpUnreach(MpUnreach {
            afi: 25,
            safi: 70,
            withdrawn: vec![],
        }))],
        ..Default::default()
    };
    assert!(evpn_eor.is_end_of_rib());
    assert!(!evpn_update(&[]).is_end_of_rib());
}

#[test]
fn mandatory_attributes() {
    let full = evpn_update(&[multicast_route()]);
    assert_eq!(full.missing_mandatory(true), None);
    let mut no_pref = full.clone();
    no_pref
        .attributes
        .retain(|a| a.value.type_code() != attr_type::LOCAL_PREF);
    assert_eq!(no_pref.missing_mandatory(false), None);
    assert_eq!(no_pref.missing_mandatory(true), Some(attr_type::LOCAL_PREF));
    let mut no_origin = full.clone();
    no_origin
        .attributes
        .retain(|a| a.value.type_code() != attr_type::ORIGIN);
    assert_eq!(no_origin.missing_mandatory(false), Some(attr_type::ORIGIN));
    // IPv4 NLRI also needs NEXT_HOP; a pure withdraw needs nothing.
    let mut v4 = full;
    v4.nlri.push(Ipv4Prefix {
        addr: Ipv4Addr::new(10, 0, 0, 0),
        len: 8,
    });
    assert_eq!(v4.missing_mandatory(true), Some(attr_type::NEXT_HOP));
    assert_eq!(withdraw_update().missing_mandatory(true), None);
}

#[test]
fn mac_ip_variants_round_trip() {
    let base = match mac_ip_route() {
        EvpnRoute::MacIp(m) => m,
        _ => unreachable!(),
    };
    let v6 = Some(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)));
    for (ip, label2, len) in [
        (None, None, 33),
        (None, Some(20000), 36),
        (v6, Some(1), 52),
        (v6, None, 49),
    ] {
        let route = EvpnRoute::MacIp(MacIpRoute {
            ip,
            label2,
            ..base.clone()
        });
        let mut bytes = Vec::new();
        route.emit(&mut bytes).unwrap();
        assert_eq!(
            usize::from(bytes[1]),
            len,
            "route length for {ip:?} {label2:?}"
        );
        assert_eq!(EvpnRoute::parse_all(&bytes).unwrap(), vec![route]);
    }
}

#[test]
fn evpn_bytes_by_hand_rfc7432() {
    // Type 3, RD 192.0.2.1:2, tag 0, originator 192.0.2.1: laid out from RFC 7432 §7.3.
    let bytes = [
        3, 17, 0, 1, 192, 0, 2, 1, 0, 2, 0, 0, 0, 0, 32, 192, 0, 2, 1,
    ];
    assert_eq!(
        EvpnRoute::parse_all(&bytes).unwrap(),
        vec![multicast_route()]
    );
    // An Ethernet Segment route (type 4) is kept and skipped, then the type 3 still parses.
    let mut with_other = vec![4, 3, 9, 9, 9];
    with_other.extend_from_slice(&bytes);
    let routes = EvpnRoute::parse_all(&with_other).unwrap();
    assert_eq!(
        routes[0],
        EvpnRoute::Other {
            route_type: 4,
            value: vec![9, 9, 9]
        }
    );
    assert_eq!(routes[1], multicast_route());
    // Bad MAC length, bad IP length, length overrun: errors, never panics.
    let mut mac = Vec::new();
    mac_ip_route().emit(&mut mac).unwrap();
    let mut bad = mac.clone();
    bad[2 + 22] = 47;
    assert!(EvpnRoute::parse_all(&bad).is_err());
    let mut bad = mac.clone();
    bad[2 + 29] = 31;
    assert!(EvpnRoute::parse_all(&bad).is_err());
    assert!(EvpnRoute::parse_all(&mac[..mac.len() - 1]).is_err());
    assert!(EvpnRoute::parse_all(&bytes[..18]).is_err());
}

#[test]
fn route_distinguishers() {
    let rds = [
        (
            RouteDistinguisher::As2 {
                asn: 65001,
                value: 7,
            },
            [0, 0, 0xfd, 0xe9, 0, 0, 0, 7],
        ),
        (
            RouteDistinguisher::Ipv4 {
                addr: VTEP,
                value: 2,
            },
            [0, 1, 192, 0, 2, 1, 0, 2],
        ),
        (
            RouteDistinguisher::As4 {
                asn: 4_200_000_000,
                value: 3,
            },
            [0, 2, 0xfa, 0x56, 0xea, 0, 0, 3],
        ),
        (
            RouteDistinguisher::Unknown([0, 9, 1, 2, 3, 4, 5, 6]),
            [0, 9, 1, 2, 3, 4, 5, 6],
        ),
    ];
    for (rd, bytes) in rds {
        assert_eq!(rd.to_bytes(), bytes);
        assert_eq!(RouteDistinguisher::from_bytes(bytes), rd);
    }
}

/// An UPDATE body holding only `attrs` (raw attribute bytes).
fn body_with(attrs: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0];
    b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    b.extend_from_slice(attrs);
    b
}

#[test]
fn rfc7606_scopes() {
    let cases: [(&[u8], u8, u8, Scope); 9] = [
        (
            &[0x40, 1, 1, 3],
            attr_type::ORIGIN,
            sub::INVALID_ORIGIN,
            Scope::TreatAsWithdraw,
        ),
        (
            &[0x40, 1, 2, 0, 0],
            attr_type::ORIGIN,
            sub::ATTRIBUTE_LENGTH,
            Scope::TreatAsWithdraw,
        ),
        (
            &[0x80, 1, 1, 0],
            attr_type::ORIGIN,
            sub::ATTRIBUTE_FLAGS,
            Scope::TreatAsWithdraw,
        ),
        (
            &[0x40, 2, 2, 2, 0],
            attr_type::AS_PATH,
            sub::MALFORMED_AS_PATH,
            Scope::TreatAsWithdraw,
        ),
        (
            &[0x40, 3, 3, 1, 2, 3],
            attr_type::NEXT_HOP,
            sub::ATTRIBUTE_LENGTH,
            Scope::TreatAsWithdraw,
        ),
        (
            &[0xc0, 16, 4, 0, 2, 0, 1],
            attr_type::EXTENDED_COMMUNITIES,
            sub::OPTIONAL_ATTRIBUTE,
            Scope::TreatAsWithdraw,
        ),
        (
            &[0x80, 14, 2, 0, 25],
            attr_type::MP_REACH_NLRI,
            sub::OPTIONAL_ATTRIBUTE,
            Scope::Session,
        ),
        (
            &[0x40, 99, 0],
            99,
            sub::UNRECOGNIZED_WELL_KNOWN,
            Scope::Session,
        ),
        (
            &[0x40, 1, 5, 0],
            attr_type::ORIGIN,
            sub::ATTRIBUTE_LENGTH,
            Scope::Session,
        ),
    ];
    for (attrs, type_code, subcode, scope) in cases {
        let err = UpdateRepr::parse(&body_with(attrs)).unwrap_err();
        assert_eq!(err.attribute_type(), Some(type_code), "{attrs:?}: {err}");
        assert_eq!(err.notification(), (3, subcode), "{attrs:?}: {err}");
        assert_eq!(err.scope(), scope, "{attrs:?}: {err}");
    }
    // Duplicate ORIGIN: the second is dropped; duplicate MP_UNREACH resets.
    let dup = UpdateRepr::parse(&body_with(&[0x40, 1, 1, 0, 0x40, 1, 1, 2])).unwrap();
    assert_eq!(dup.attributes.len(), 1);
    let mp = [0x80, 15, 3, 0, 25, 70];
    let err = UpdateRepr::parse(&body_with(&[mp, mp].concat())).unwrap_err();
    assert_eq!(err.scope(), Scope::Session);
    // Withdrawn length past the end and prefix length 33 reset the session.
    assert_eq!(
        UpdateRepr::parse(&[0, 5, 0, 0]).unwrap_err().notification(),
        (3, 1)
    );
    assert_eq!(
        UpdateRepr::parse(&[0, 0, 0, 0, 33, 1, 2, 3, 4, 5])
            .unwrap_err()
            .notification(),
        (3, 10)
    );
}

#[test]
fn extended_length_flag_is_kept() {
    // LOCAL_PREF sent with a 2-byte length: legal, and re-emitted the same way.
    let attrs = [0x50, 5, 0, 4, 0, 0, 0, 100];
    let update = UpdateRepr::parse(&body_with(&attrs)).unwrap();
    let mut out = Vec::new();
    update.emit(&mut out).unwrap();
    assert_eq!(out, body_with(&attrs));
    // A raw optional attribute longer than 255 bytes gets the flag on emit.
    let long = PathAttribute {
        flags: 0xc0,
        value: AttributeValue::Raw {
            type_code: 200,
            value: vec![7; 300],
        },
    };
    let update = UpdateRepr {
        attributes: vec![long],
        ..Default::default()
    };
    let bytes = emit(&Message::Update(update));
    let Message::Update(parsed) = Message::parse(&bytes).unwrap() else {
        panic!()
    };
    assert_eq!(parsed.attributes[0].flags, 0xd0);
}

proptest! {
    #[test]
    fn arbitrary_messages_never_panic(body in proptest::collection::vec(any::<u8>(), 0..600), t in 1u8..6) {
        let mut bytes = vec![0xff; 16];
        bytes.extend_from_slice(&((body.len() + 19) as u16).to_be_bytes());
        bytes.push(t);
        bytes.extend_from_slice(&body);
        if let Ok(msg) = Message::parse(&bytes) {
            let again = emit(&msg);
            prop_assert_eq!(Message::parse(&again).unwrap(), msg);
        }
        let _ = frame_len(&body);
        let _ = Message::parse(&body);
    }

    #[test]
    fn arbitrary_evpn_nlri_never_panics(nlri in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(routes) = EvpnRoute::parse_all(&nlri) {
            let mut out = Vec::new();
            EvpnRoute::emit_all(&routes, &mut out).unwrap();
            prop_assert_eq!(EvpnRoute::parse_all(&out).unwrap(), routes);
        }
    }

    #[test]
    fn mutated_evpn_update_never_panics(at in 19usize..200, byte in any::<u8>(), cut in 0usize..40) {
        let mut bytes = emit(&Message::Update(evpn_update(&[mac_ip_route(), multicast_route()])));
        if at < bytes.len() {
            bytes[at] = byte;
        }
        let _ = Message::parse(&bytes);
        bytes.truncate(bytes.len().saturating_sub(cut));
        let _ = Message::parse(&bytes);
    }

    #[test]
    fn communities_are_exact(raw in any::<[u8; 8]>()) {
        prop_assert_eq!(ExtendedCommunity::from_bytes(raw).to_bytes(), raw);
        prop_assert_eq!(RouteDistinguisher::from_bytes(raw).to_bytes(), raw);
    }
}

fn arb_rd() -> impl Strategy<Value = RouteDistinguisher> {
    any::<[u8; 8]>().prop_map(RouteDistinguisher::from_bytes)
}

fn arb_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|b| IpAddr::V4(b.into())),
        any::<[u8; 16]>().prop_map(|b| IpAddr::V6(b.into())),
    ]
}

fn arb_route() -> impl Strategy<Value = EvpnRoute> {
    let label = 0u32..=0x00ff_ffff;
    prop_oneof![
        (
            arb_rd(),
            any::<[u8; 10]>(),
            any::<u32>(),
            any::<[u8; 6]>(),
            proptest::option::of(arb_ip())
        )
            .prop_flat_map(move |(rd, esi, ethernet_tag, mac, ip)| {
                (label.clone(), proptest::option::of(label.clone())).prop_map(
                    move |(label1, label2)| {
                        EvpnRoute::MacIp(MacIpRoute {
                            rd,
                            esi,
                            ethernet_tag,
                            mac,
                            ip,
                            label1,
                            label2,
                        })
                    },
                )
            }),
        (arb_rd(), any::<u32>(), arb_ip()).prop_map(|(rd, ethernet_tag, originator)| {
            EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
                rd,
                ethernet_tag,
                originator,
            })
        }),
        (6u8..=255, proptest::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(route_type, value)| EvpnRoute::Other { route_type, value }),
    ]
}

proptest! {
    #[test]
    fn generated_evpn_updates_round_trip(routes in proptest::collection::vec(arb_route(), 0..20)) {
        let Message::Update(update) = Message::Update(evpn_update(&routes)) else { unreachable!() };
        let bytes = emit(&Message::Update(update.clone()));
        let Message::Update(parsed) = Message::parse(&bytes).unwrap() else { unreachable!() };
        // Emit sets the Extended Length flag when a value outgrows 255 bytes; all else is equal.
        let strip = |u: &UpdateRepr| -> Vec<_> {
            u.attributes.iter().map(|a| (a.flags & !0x10, a.value.clone())).collect()
        };
        prop_assert_eq!(strip(&parsed), strip(&update));
        prop_assert_eq!(emit(&Message::Update(parsed.clone())), bytes);
        prop_assert_eq!(parsed.mp_reach().unwrap().evpn_routes().unwrap().unwrap(), routes);
    }
}
