//! An UPDATE body (RFC 4271 §4.3, after the header) with its path attributes, parsed strictly
//! and for RFC 7606 error handling: never panics; strict and lenient parsing agree where both
//! accept; an accepted UPDATE — and the well-formed part the lenient parse keeps of a malformed
//! one — emits bytes that parse to the same UPDATE.

use nvo_bgp::UpdateRepr;

use crate::bgp_message::lenient_agrees;

/// Runs the check on one input; panics when the UPDATE code misbehaves.
pub fn check(body: &[u8]) {
    let lenient = UpdateRepr::parse_lenient(body);
    if let Ok(strict) = UpdateRepr::parse(body) {
        lenient_agrees(body, &strict);
        round_trip(&strict);
    }
    if let Ok(parsed) = lenient {
        round_trip(&parsed.update);
    }
}

/// emit → parse gives `update` back, and the emitted bytes are a fixed point.
fn round_trip(update: &UpdateRepr) {
    let mut out = Vec::new();
    // An UPDATE over 4096 bytes cannot be sent, but parse_lenient takes any body length.
    if update.emit(&mut out).is_err() {
        return;
    }
    let again = UpdateRepr::parse(&out)
        .unwrap_or_else(|e| panic!("{update:?} emitted {out:02x?}, which does not parse: {e}"));
    assert_eq!(update, &again, "emit -> parse changed the UPDATE");
    let mut out2 = Vec::new();
    again.emit(&mut out2).expect("re-emit");
    assert_eq!(out, out2, "emitted bytes are not a fixed point");
}
