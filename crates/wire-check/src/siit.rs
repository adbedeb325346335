//! SIIT (RFC 7915, `nvo_wire::siit`) on arbitrary bytes, read both as an IPv4 and as an IPv6
//! packet: nothing panics, and an IPv4 packet that translates to IPv6 translates back to IPv4
//! of the same length (minus its options), protocol, TOS and TTL. An ICMP error also carries
//! the start of another packet, translated too (RFC 7915 §4.3): 20 more bytes each way; a
//! fragment gets an IPv6 Fragment Header (§4.1): 8 more.

use nvo_wire::siit::{check_v6, v4_to_v6, v6_to_v4, IPV4_HEADER_LEN, IPV6_HEADER_LEN};

const SRC6: [u8; 16] = [0xfd, 0, 0, 0x1a, 0, 0, 0, 1, 0x40, 0, 3, 0x84, 10, 9, 0, 1];
const DST6: [u8; 16] = [0xfd, 0, 0, 0x1a, 0, 0, 0, 2, 0x40, 0, 3, 0x84, 10, 9, 0, 2];

/// The embedded packet's addresses: SRC6's locator and identifier with the IPv4 address.
fn inner6(a: [u8; 4]) -> Option<[u8; 16]> {
    let mut x = SRC6;
    x[12..].copy_from_slice(&a);
    Some(x)
}

fn inner4(a: &[u8; 16]) -> Option<[u8; 4]> {
    a[12..].try_into().ok()
}

/// Runs the check on one input; panics when the translation misbehaves.
pub fn check(data: &[u8]) {
    let mut out = [0u8; 65_536 + 64];
    let _ = v6_to_v4(data, (&[10, 9, 0, 1], &[10, 9, 0, 2]), &inner4, &mut out);
    let Ok(n) = v4_to_v6(data, (&SRC6, &DST6), &inner6, &mut out) else {
        return;
    };
    let v6 = &out[..n];
    assert!(
        n >= IPV6_HEADER_LEN,
        "translated packet shorter than its header"
    );
    assert!(
        check_v6(v6).is_ok(),
        "translated packet not valid IPv6: {:?}",
        check_v6(v6)
    );
    let mut back = [0u8; 65_536 + 64];
    let m = v6_to_v4(v6, (&[10, 9, 0, 1], &[10, 9, 0, 2]), &inner4, &mut back)
        .unwrap_or_else(|e| panic!("translated packet does not translate back: {e}"));
    // An ICMPv6 error (type below 128) has two headers translated, the outer and the embedded;
    // a fragment has its Fragment Header (8 bytes) besides.
    let error = v6[6] == 58 && v6[IPV6_HEADER_LEN] < 128;
    let headers = if error { 2 } else { 1 };
    let fragment_header = if v6[6] == 44 { 8 } else { 0 };
    assert_eq!(
        m + headers * IPV6_HEADER_LEN + fragment_header,
        n + headers * IPV4_HEADER_LEN,
        "length changed"
    );
    assert_eq!(back[1], data[1], "tos");
    assert_eq!(back[8], data[8], "ttl");
    assert_eq!(back[9], data[9], "protocol");
}
