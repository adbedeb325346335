//! A TCP byte stream from a BGP peer, cut into messages the way the session reads it
//! ([`frame_len`], then [`Message::parse`] on each whole message): never panics; every message
//! that parses re-emits, and the emitted bytes parse to the same message and are a fixed point
//! (emitting what they parse to gives them back).

use nvo_bgp::message::{HEADER_LEN, MAX_MESSAGE_LEN};
use nvo_bgp::{frame_len, Message, UpdateRepr};

/// Runs the check on one input; panics when the message code misbehaves.
pub fn check(data: &[u8]) {
    let mut stream = data;
    // A stream stops at the first framing error, as the session does (it sends a NOTIFICATION).
    while let Ok(Some(len)) = frame_len(stream) {
        assert!(
            (HEADER_LEN..=MAX_MESSAGE_LEN).contains(&len),
            "frame_len {len} is not a message length"
        );
        let Some(message) = stream.get(..len) else {
            return; // the rest has not arrived yet
        };
        check_message(message);
        stream = &stream[len..];
    }
}

/// One whole message, header included.
pub fn check_message(bytes: &[u8]) {
    let Ok(message) = Message::parse(bytes) else {
        return;
    };
    assert_eq!(
        frame_len(bytes).ok(),
        Some(Some(bytes.len())),
        "a message that parses frames to its own length"
    );
    if let Message::Update(update) = &message {
        if let Some(body) = bytes.get(HEADER_LEN..) {
            lenient_agrees(body, update);
        }
    }
    let mut out = Vec::new();
    message
        .emit(&mut out)
        .unwrap_or_else(|e| panic!("{message:?} parsed but does not emit: {e}"));
    let again = Message::parse(&out)
        .unwrap_or_else(|e| panic!("{message:?} emitted {out:02x?}, which does not parse: {e}"));
    assert_eq!(message, again, "parse -> emit -> parse changed the message");
    let mut out2 = Vec::new();
    again.emit(&mut out2).expect("re-emit");
    assert_eq!(out, out2, "emitted bytes are not a fixed point");
}

/// RFC 7606 parsing of an UPDATE body that strict parsing accepted gives the same routes, and
/// the same attributes but those its extra length checks (MED, ATOMIC_AGGREGATE, AGGREGATOR,
/// COMMUNITIES: types 4, 6, 7, 8) refuse.
pub fn lenient_agrees(body: &[u8], strict: &UpdateRepr) {
    let lenient = UpdateRepr::parse_lenient(body)
        .unwrap_or_else(|e| panic!("strict parse accepts, lenient refuses: {e}"));
    assert_eq!(lenient.update.withdrawn, strict.withdrawn);
    assert_eq!(lenient.update.nlri, strict.nlri);
    let dropped: Vec<u8> = lenient
        .errors
        .iter()
        .map(|e| {
            e.attribute_type()
                .unwrap_or_else(|| panic!("lenient error names no attribute: {e}"))
        })
        .collect();
    assert!(
        dropped.iter().all(|c| [4, 6, 7, 8].contains(c)),
        "lenient refused more than the raw length checks: {:?}",
        lenient.errors
    );
    let mut kept = strict.attributes.clone();
    kept.retain(|a| !dropped.contains(&a.value.type_code()));
    assert_eq!(lenient.update.attributes, kept);
    if lenient.errors.is_empty() {
        assert_eq!(lenient.verdict, nvo_bgp::Verdict::Accept);
    }
}
