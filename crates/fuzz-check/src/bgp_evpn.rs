//! The NLRI field of an EVPN MP_REACH_NLRI or MP_UNREACH_NLRI (RFC 7432 §7, AFI 25 / SAFI 70):
//! never panics; routes that parse emit the very bytes they were parsed from (every field,
//! unknown route types and route distinguishers included, is kept as received).

use nvo_bgp::EvpnRoute;

/// Runs the check on one input; panics when the EVPN code misbehaves.
pub fn check(nlri: &[u8]) {
    let Ok(routes) = EvpnRoute::parse_all(nlri) else {
        return;
    };
    let mut out = Vec::new();
    EvpnRoute::emit_all(&routes, &mut out)
        .unwrap_or_else(|e| panic!("{routes:?} parsed but do not emit: {e}"));
    assert_eq!(
        out, nlri,
        "{routes:?} emitted other bytes than they were parsed from"
    );
}
