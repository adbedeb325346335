//! RFC 7606 revised error handling through `UpdateRepr::parse_lenient`: treat-as-withdraw keeps
//! every NLRI of the UPDATE, attribute discard drops only the attribute, framing and MP_* errors
//! reset the session; proptests check it never panics and agrees with the strict `parse`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::Ipv4Addr;

use common::*;
use nvo_bgp::attribute::attr_type;
use nvo_bgp::update::{ParsedUpdate, Verdict};
use nvo_bgp::*;
use proptest::prelude::*;

fn prefix(a: u8, len: u8) -> Ipv4Prefix {
    Ipv4Prefix {
        addr: Ipv4Addr::new(10, a, 0, 0),
        len,
    }
}

/// An EVPN UPDATE that also withdraws and announces IPv4 prefixes, with the attribute of type
/// `drop` left out and the raw attribute bytes `bad` appended to the attributes section.
fn body(drop: u8, bad: &[u8]) -> Vec<u8> {
    let mut update = evpn_update(&[mac_ip_route(), multicast_route()]);
    update.attributes.retain(|a| a.value.type_code() != drop);
    update.withdrawn = vec![prefix(1, 16)];
    update.nlri = vec![prefix(2, 24)];
    with_extra(&update, bad)
}

/// `update` emitted with `extra` appended to its attributes section.
fn with_extra(update: &UpdateRepr, extra: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    update.emit(&mut out).unwrap();
    let wlen = usize::from(u16::from_be_bytes([out[0], out[1]]));
    let at = 2 + wlen;
    let alen = usize::from(u16::from_be_bytes([out[at], out[at + 1]])) + extra.len();
    out[at..at + 2].copy_from_slice(&(alen as u16).to_be_bytes());
    let end = at + 2 + alen - extra.len();
    out.splice(end..end, extra.iter().copied());
    out
}

fn lenient(body: &[u8]) -> ParsedUpdate {
    UpdateRepr::parse_lenient(body).unwrap()
}

#[test]
fn treat_as_withdraw_keeps_every_route() {
    let cases: [(u8, &[u8]); 5] = [
        (attr_type::ORIGIN, &[0x40, 1, 1, 3]),
        (attr_type::LOCAL_PREF, &[0x40, 5, 3, 0, 0, 100]),
        (attr_type::EXTENDED_COMMUNITIES, &[0xc0, 16, 4, 0, 2, 0, 1]),
        (attr_type::AS_PATH, &[0x40, 2, 2, 2, 0]),
        // MED of 3 octets (RFC 7606 §7.4), kept raw by the strict parser.
        (attr_type::MED, &[0x80, 4, 3, 0, 0, 1]),
    ];
    for (code, bad) in cases {
        let bytes = body(code, bad);
        let parsed = lenient(&bytes);
        assert_eq!(parsed.verdict, Verdict::TreatAsWithdraw, "{bad:?}");
        assert_eq!(parsed.errors.len(), 1, "{:?}", parsed.errors);
        assert_eq!(parsed.errors[0].attribute_type(), Some(code));
        assert_eq!(parsed.errors[0].scope(), Scope::TreatAsWithdraw);
        let update = &parsed.update;
        assert!(update.attribute(code).is_none(), "{bad:?} left in");
        assert_eq!(update.withdrawn, vec![prefix(1, 16)]);
        assert_eq!(update.nlri, vec![prefix(2, 24)]);
        let routes = update.mp_reach().unwrap().evpn_routes().unwrap().unwrap();
        assert_eq!(routes, vec![mac_ip_route(), multicast_route()]);
        if code != attr_type::MED {
            assert_eq!(UpdateRepr::parse(&bytes).unwrap_err(), parsed.errors[0]);
        }
    }
    // MP_UNREACH routes are returned alongside a malformed ORIGIN too.
    let parsed = lenient(&with_extra(&withdraw_update(), &[0x40, 1, 1, 9]));
    assert_eq!(parsed.verdict, Verdict::TreatAsWithdraw);
    assert_eq!(parsed.update.mp_unreach(), withdraw_update().mp_unreach());
}

#[test]
fn attribute_discard_accepts_without_it() {
    let good_aggregator = [0xc0, 7, 8, 0, 0, 0xfd, 0xe9, 192, 0, 2, 1];
    for bad in [
        // AGGREGATOR of 6 octets: 2-octet AS, but nvo always negotiates 4 (RFC 7606 §7.7).
        &[0xc0, 7, 6, 0xfd, 0xe9, 192, 0, 2, 1][..],
        // ATOMIC_AGGREGATE with a value (§7.6).
        &[0x40, 6, 1, 0][..],
    ] {
        let parsed = lenient(&body(0, bad));
        assert_eq!(parsed.verdict, Verdict::Accept, "{bad:?}");
        assert_eq!(parsed.errors.len(), 1);
        assert_eq!(parsed.errors[0].scope(), Scope::AttributeDiscard);
        assert_eq!(parsed.update.attribute(bad[1]), None);
        let full = evpn_update(&[]);
        assert_eq!(parsed.update.attributes.len(), full.attributes.len());
    }
    let parsed = lenient(&body(0, &good_aggregator));
    assert_eq!((parsed.verdict, parsed.errors.len()), (Verdict::Accept, 0));
    assert!(parsed.update.attribute(attr_type::AGGREGATOR).is_some());
}

#[test]
fn session_errors_reset() {
    // Malformed MP_REACH, alone or with a malformed MED: the worst verdict wins.
    for (extra, errors) in [
        (&[0x80, 14, 2, 0, 25][..], 1),
        (&[0x80, 14, 2, 0, 25, 0x80, 4, 3, 0, 0, 1][..], 2),
        // A second MP_UNREACH, and an unknown well-known attribute.
        (&[0x80, 15, 3, 0, 25, 70, 0x80, 15, 3, 0, 25, 70][..], 1),
        (&[0x40, 99, 0][..], 1),
    ] {
        let parsed = lenient(&body(attr_type::MP_REACH_NLRI, extra));
        assert_eq!(parsed.verdict, Verdict::SessionReset, "{extra:?}");
        assert_eq!(parsed.errors.len(), errors, "{:?}", parsed.errors);
        assert!(parsed.errors.iter().any(|e| e.scope() == Scope::Session));
        assert!(UpdateRepr::parse(&body(attr_type::MP_REACH_NLRI, extra)).is_err());
    }
    // The last attribute overrunning the section: treat-as-withdraw (RFC 7606 §4), the NLRI
    // are still found; unless it is an MP attribute, whose routes are lost.
    let overrun = lenient(&body(0, &[0x40, 1, 5, 0]));
    assert_eq!(
        overrun.verdict,
        Verdict::TreatAsWithdraw,
        "{:?}",
        overrun.errors
    );
    let mp_overrun = body(0, &[0x80, 15, 9, 0, 25, 70]);
    assert_eq!(
        UpdateRepr::parse_lenient(&mp_overrun).unwrap_err().scope(),
        Scope::Session
    );
    // Broken framing loses the NLRI: Err, the same error as the strict parse.
    let framing: [&[u8]; 4] = [
        &mp_overrun,
        &[0, 5, 0, 0],
        &[0, 0, 0, 9, 0x40, 1, 1, 0],
        &[0, 0, 0, 0, 33, 1, 2, 3, 4, 5],
    ];
    for bytes in framing {
        let err = UpdateRepr::parse_lenient(bytes).unwrap_err();
        assert_eq!(err.scope(), Scope::Session);
        assert_eq!(UpdateRepr::parse(bytes).unwrap_err(), err, "{bytes:?}");
    }
}

#[test]
fn repeated_attributes_are_dropped_unchecked() {
    // A malformed second ORIGIN is discarded before it is looked at (RFC 7606 §3 g).
    let parsed = lenient(&body(0, &[0x40, 1, 1, 7]));
    assert_eq!((parsed.verdict, parsed.errors.len()), (Verdict::Accept, 0));
    assert_eq!(
        parsed.update.attribute(attr_type::ORIGIN),
        Some(&AttributeValue::Origin(attribute::Origin::Igp))
    );
}

/// `lenient` is `strict` less the attributes whose errors come from the extra raw length checks.
fn agrees(strict: &UpdateRepr, lenient: &ParsedUpdate) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!(&lenient.update.withdrawn, &strict.withdrawn);
    prop_assert_eq!(&lenient.update.nlri, &strict.nlri);
    let raw = [4, 6, 7, 8];
    let dropped: Vec<u8> = lenient
        .errors
        .iter()
        .map(|e| e.attribute_type().unwrap())
        .collect();
    prop_assert!(
        dropped.iter().all(|c| raw.contains(c)),
        "{:?}",
        lenient.errors
    );
    let mut kept = strict.attributes.clone();
    kept.retain(|a| !dropped.contains(&a.value.type_code()));
    prop_assert_eq!(&lenient.update.attributes, &kept);
    if lenient.errors.is_empty() {
        prop_assert_eq!(lenient.verdict, Verdict::Accept);
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..600)) {
        let lenient = UpdateRepr::parse_lenient(&body);
        if let Ok(strict) = UpdateRepr::parse(&body) {
            agrees(&strict, &lenient.unwrap())?;
        }
    }

    #[test]
    fn mutated_evpn_bodies_agree(at in 0usize..200, byte in any::<u8>(), cut in 0usize..40) {
        let mut bytes = body(0, &[0xc0, 7, 8, 0, 0, 0xfd, 0xe9, 192, 0, 2, 1]);
        if at < bytes.len() {
            bytes[at] = byte;
        }
        bytes.truncate(bytes.len().saturating_sub(cut));
        let lenient = UpdateRepr::parse_lenient(&bytes);
        match UpdateRepr::parse(&bytes) {
            Ok(strict) => agrees(&strict, &lenient.unwrap())?,
            Err(e) if e.scope() == Scope::TreatAsWithdraw => match lenient {
                // Strict parse stops at the first error; the NLRI after the attributes may be
                // broken as well, which resets the session.
                Err(framing) => prop_assert_eq!(framing.scope(), Scope::Session),
                // Otherwise the routes are still there to withdraw (or a worse error resets).
                Ok(lenient) => {
                    prop_assert!(lenient.verdict >= Verdict::TreatAsWithdraw);
                    prop_assert!(lenient.errors.contains(&e));
                }
            },
            Err(_) => {}
        }
    }
}
