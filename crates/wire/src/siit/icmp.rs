//! ICMP error messages across the translation (RFC 7915 §4.2/§4.3 and §5.2/§5.3), so that path
//! MTU discovery, port unreachable and time exceeded work between an IPv4 tenant and the IPv6
//! underlay: the type and code are mapped, the MTU of a "fragmentation needed" ⇄ "packet too
//! big" moves by the 20 bytes the headers differ, and the embedded packet (the start of the one
//! that caused the error) is translated as the outer one is, with the addresses the caller's
//! `inner` function gives.
//!
//! ```text
//!  ICMPv4 error (RFC 792)                 ICMPv6 error (RFC 4443 §3)
//!  | type | code | checksum      |   ──►   | type | code | checksum             |
//!  | unused / MTU (16) / pointer |   ◄──   | MTU (32) / pointer (32) / unused     |
//!  | IPv4 header + 8+ bytes      |         | IPv6 header + as much as fits 1280   |
//! ```
//!
//! The outer checksum is verified, then computed anew over the translated message (the
//! embedded packet is cut, so no incremental adjustment could give it); the embedded packet's
//! own transport checksum is adjusted incrementally for its new addresses (RFC 1624), as for a
//! whole packet. An ICMPv6 error stays within 1280 bytes (RFC 4443 §2.4 (c)). What the RFC
//! says to drop (redirects, source quench, codes and pointers with no counterpart, an error
//! inside an error, an embedded fragment) is `Untranslated`.

use super::{
    adjust, nonzero, pseudo6, put, untranslated, word, SiitError, ICMP, ICMPV6, IPV4_HEADER_LEN,
    IPV6_HEADER_LEN, TCP, UDP,
};
use crate::std_wire::checksum;
use crate::Error;

/// The ICMP header before the embedded packet: type, code, checksum, 4 bytes.
const HEADER: usize = 8;
/// The most an ICMPv6 error may be, IPv6 header included (RFC 4443 §2.4 (c)).
const ICMPV6_ERROR_MAX: usize = 1280;
/// RFC 1191 §7's plateaus, for an ICMPv4 "fragmentation needed" whose MTU field is 0.
const PLATEAUS: [u16; 11] = [
    65535, 32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68,
];

/// Whether ICMPv4 (type, code) is an error §4.2 translates (echo is not an error).
pub(super) fn v4_error(kind: u8, code: u8) -> bool {
    type_v4_to_v6(kind, code).is_some()
}

/// Whether ICMPv6 (type, code) is an error §5.2 translates.
pub(super) fn v6_error(kind: u8, code: u8) -> bool {
    type_v6_to_v4(kind, code).is_some()
}

/// RFC 7915 §4.2: ICMPv4 error (type, code) → ICMPv6 (type, code).
fn type_v4_to_v6(kind: u8, code: u8) -> Option<(u8, u8)> {
    match (kind, code) {
        // Destination unreachable: net, host, source route failed, and the administrative
        // and unknown codes → no route (1, 0); port → port (1, 4); protocol → parameter
        // problem, unrecognized next header (4, 1); fragmentation needed → packet too big;
        // prohibited (9, 10, 13, 15) → administratively prohibited (1, 1).
        (3, 0 | 1 | 5 | 6 | 7 | 8 | 11 | 12) => Some((1, 0)),
        (3, 2) => Some((4, 1)),
        (3, 3) => Some((1, 4)),
        (3, 4) => Some((2, 0)),
        (3, 9 | 10 | 13 | 15) => Some((1, 1)),
        (11, 0 | 1) => Some((3, code)),
        (12, 0 | 2) => Some((4, 0)),
        _ => None,
    }
}

/// RFC 7915 §5.2: ICMPv6 error (type, code) → ICMPv4 (type, code).
fn type_v6_to_v4(kind: u8, code: u8) -> Option<(u8, u8)> {
    match (kind, code) {
        (1, 0 | 2 | 3) => Some((3, 1)),
        (1, 1) => Some((3, 10)),
        (1, 4) => Some((3, 3)),
        (2, 0) => Some((3, 4)),
        (3, 0 | 1) => Some((11, code)),
        (4, 0) => Some((12, 0)),
        (4, 1) => Some((3, 2)),
        _ => None,
    }
}

/// RFC 7915 §4.2 Figure 3: an IPv4 header's byte offset → the IPv6 header's.
fn pointer_v4_to_v6(p: u8) -> Option<u32> {
    Some(match p {
        0 | 1 => u32::from(p),
        2 | 3 => 4,
        8 => 7,
        9 => 6,
        12..=15 => 8,
        16..=19 => 24,
        _ => return None,
    })
}

/// RFC 7915 §5.2 Figure 6: an IPv6 header's byte offset → the IPv4 header's.
fn pointer_v6_to_v4(p: u32) -> Option<u8> {
    Some(match p {
        0 | 1 => p as u8,
        4 | 5 => 2,
        6 => 9,
        7 => 8,
        8..=23 => 12,
        24..=39 => 16,
        _ => return None,
    })
}

/// The ICMPv6 MTU for an ICMPv4 "fragmentation needed" with MTU `mtu` about a packet of
/// `total` bytes: `mtu` + 20 (§4.2); a router that sent 0 (pre-RFC 1191) gets the plateau
/// below the packet's length (RFC 1191 §7).
fn mtu_v4_to_v6(mtu: u16, total: u16) -> u32 {
    let mtu = if mtu == 0 {
        PLATEAUS.into_iter().find(|&p| p < total).unwrap_or(68)
    } else {
        mtu
    };
    u32::from(mtu) + 20
}

/// The ICMPv4 MTU for an ICMPv6 "packet too big" with MTU `mtu`: `mtu` − 20 (§5.2; the IPv4
/// next hop's MTU is not this translator's to know), never below IPv4's 68 (RFC 791) nor
/// above what the field holds.
fn mtu_v6_to_v4(mtu: u32) -> u16 {
    mtu.saturating_sub(20).clamp(68, u32::from(u16::MAX)) as u16
}

/// Translates the ICMPv4 error `l4` (header and embedded packet) into the ICMPv6 error at
/// `out`, sent from `src` to `dst`; `inner` maps the embedded packet's IPv4 addresses.
/// Returns the ICMPv6 message's length.
pub(super) fn v4_to_v6(
    l4: &[u8],
    (src, dst): (&[u8; 16], &[u8; 16]),
    inner: &dyn Fn([u8; 4]) -> Option<[u8; 16]>,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    if l4.len() < HEADER + IPV4_HEADER_LEN {
        return Err(Error::truncated("icmpv4 error", HEADER + IPV4_HEADER_LEN, l4.len()).into());
    }
    if checksum::data(l4) != 0xffff {
        return Err(Error::invalid("icmpv4 checksum", u64::from(word(l4, 2))).into());
    }
    let (kind, code) =
        type_v4_to_v6(l4[0], l4[1]).ok_or_else(|| untranslated("icmpv4 type", u32::from(l4[0])))?;
    let embedded = &l4[HEADER..];
    let rest: u32 = match (l4[0], l4[1]) {
        (3, 4) => mtu_v4_to_v6(word(l4, 6), word(embedded, 2)),
        (3, 2) => 6, // the next header field (§4.2)
        (12, _) => pointer_v4_to_v6(l4[4])
            .ok_or_else(|| untranslated("icmpv4 pointer", u32::from(l4[4])))?,
        _ => 0,
    };
    let room = out.len().min(ICMPV6_ERROR_MAX - IPV6_HEADER_LEN);
    let body = out
        .get_mut(HEADER..room)
        .ok_or_else(|| Error::truncated("ipv6 output buffer", HEADER, room))?;
    let n = embedded_v4_to_v6(embedded, inner, body)?;
    let len = HEADER + n;
    out[..4].copy_from_slice(&[kind, code, 0, 0]);
    out[4..HEADER].copy_from_slice(&rest.to_be_bytes());
    let sum = checksum::combine(&[pseudo6(src, dst, len, ICMPV6), checksum::data(&out[..len])]);
    put(out, 2, !sum);
    Ok(len)
}

/// The embedded IPv4 packet of an error (§4.3) as IPv6 in `out`, cut to fit: its header as
/// §4.1 translates it (lengths from its own header: it is usually cut), its transport header's
/// checksum adjusted. Returns the bytes written.
fn embedded_v4_to_v6(
    v4: &[u8],
    inner: &dyn Fn([u8; 4]) -> Option<[u8; 16]>,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    if v4[0] >> 4 != 4 {
        return Err(Error::invalid("embedded version", u64::from(v4[0] >> 4)).into());
    }
    let ihl = usize::from(v4[0] & 0x0f) * 4;
    let total = usize::from(word(v4, 2));
    if ihl < IPV4_HEADER_LEN || v4.len() < ihl || total < ihl {
        return Err(Error::invalid("embedded ihl", u64::from(v4[0] & 0x0f)).into());
    }
    let fragment = word(v4, 6) & 0x3fff;
    if fragment != 0 {
        return Err(untranslated("embedded fragment", u32::from(fragment)));
    }
    let addr = |at: usize| -> Result<[u8; 16], SiitError> {
        let a = [v4[at], v4[at + 1], v4[at + 2], v4[at + 3]];
        inner(a).ok_or_else(|| untranslated("embedded address", u32::from_be_bytes(a)))
    };
    let (s6, d6) = (addr(12)?, addr(16)?);
    let protocol = v4[9];
    if protocol == ICMPV6 || super::EXTENSIONS.contains(&protocol) {
        return Err(untranslated("embedded protocol", u32::from(protocol)));
    }
    let mut head = [0u8; IPV6_HEADER_LEN];
    head[..4].copy_from_slice(&[0x60 | v4[1] >> 4, v4[1] << 4, 0, 0]);
    put(&mut head, 4, (total - ihl) as u16);
    head[6] = if protocol == ICMP { ICMPV6 } else { protocol };
    head[7] = v4[8];
    head[8..24].copy_from_slice(&s6);
    head[24..40].copy_from_slice(&d6);
    let l4 = &v4[ihl..];
    let n = (IPV6_HEADER_LEN + l4.len()).min(out.len());
    if n < IPV6_HEADER_LEN {
        return Err(Error::truncated("ipv6 output buffer", IPV6_HEADER_LEN, n).into());
    }
    out[..IPV6_HEADER_LEN].copy_from_slice(&head);
    let t = &mut out[IPV6_HEADER_LEN..n];
    t.copy_from_slice(&l4[..t.len()]);
    let removed = checksum::data(&v4[12..20]);
    let added = checksum::combine(&[checksum::data(&s6), checksum::data(&d6)]);
    transport_inner(t, protocol, (removed, added), || {
        pseudo6(&s6, &d6, total - ihl, ICMPV6)
    })?;
    Ok(n)
}

/// Adjusts what of an embedded transport header is there (TCP's checksum needs 18 bytes, UDP's
/// 8, ICMP's 4) for addresses whose sum went from `removed` to `added`; an embedded ICMP echo
/// changes type too (its checksum then gains or loses ICMPv6's pseudo-header, `pseudo`), any
/// other embedded ICMP message is an error inside an error: refused (§4.3, §5.3).
fn transport_inner(
    t: &mut [u8],
    protocol: u8,
    (removed, added): (u16, u16),
    pseudo: impl Fn() -> u16,
) -> Result<(), SiitError> {
    match protocol {
        TCP if t.len() >= 18 => put(t, 16, adjust(word(t, 16), removed, added)),
        UDP if t.len() >= 8 && word(t, 6) != 0 => {
            put(t, 6, nonzero(adjust(word(t, 6), removed, added)))
        }
        ICMP | ICMPV6 if t.len() >= 4 => {
            let old = word(t, 0);
            t[0] = match t[0] {
                8 => 128,
                0 => 129,
                128 => 8,
                129 => 0,
                other => return Err(untranslated("embedded icmp type", u32::from(other))),
            };
            let new = word(t, 0);
            let sum = if protocol == ICMP {
                adjust(word(t, 2), old, checksum::combine(&[new, pseudo()]))
            } else {
                adjust(word(t, 2), checksum::combine(&[old, pseudo()]), new)
            };
            put(t, 2, sum);
        }
        _ => {}
    }
    Ok(())
}

/// Translates the ICMPv6 error `l4` (header and embedded packet; `(s6, d6)` the outer IPv6
/// addresses, for its checksum) into the ICMPv4 error at `out`; `inner` maps the embedded
/// packet's IPv6 addresses. Returns the ICMPv4 message's length.
pub(super) fn v6_to_v4(
    l4: &[u8],
    (s6, d6): (&[u8; 16], &[u8; 16]),
    inner: &dyn Fn(&[u8; 16]) -> Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    if l4.len() < HEADER + IPV6_HEADER_LEN {
        return Err(Error::truncated("icmpv6 error", HEADER + IPV6_HEADER_LEN, l4.len()).into());
    }
    let sum = checksum::combine(&[pseudo6(s6, d6, l4.len(), ICMPV6), checksum::data(l4)]);
    if sum != 0xffff {
        return Err(Error::invalid("icmpv6 checksum", u64::from(word(l4, 2))).into());
    }
    let (kind, code) =
        type_v6_to_v4(l4[0], l4[1]).ok_or_else(|| untranslated("icmpv6 type", u32::from(l4[0])))?;
    let field = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
    let rest: [u8; 4] = match (l4[0], l4[1]) {
        (2, _) => {
            let [a, b] = mtu_v6_to_v4(field).to_be_bytes();
            [0, 0, a, b]
        }
        (4, 0) => {
            let p = pointer_v6_to_v4(field).ok_or_else(|| untranslated("icmpv6 pointer", field))?;
            [p, 0, 0, 0]
        }
        _ => [0; 4],
    };
    let body = out
        .get_mut(HEADER..)
        .ok_or_else(|| Error::truncated("ipv4 output buffer", HEADER, 0))?;
    let n = embedded_v6_to_v4(&l4[HEADER..], inner, body)?;
    let len = HEADER + n;
    out[..4].copy_from_slice(&[kind, code, 0, 0]);
    out[4..HEADER].copy_from_slice(&rest);
    put(out, 2, !checksum::data(&out[..len]));
    Ok(len)
}

/// The embedded IPv6 packet of an error (§5.3) as IPv4 in `out`: its header as §5.1
/// translates it (total length from its payload length, DF above 1260 bytes, header checksum
/// computed), its transport header's checksum adjusted. Returns the bytes written.
fn embedded_v6_to_v4(
    v6: &[u8],
    inner: &dyn Fn(&[u8; 16]) -> Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    if v6[0] >> 4 != 6 {
        return Err(Error::invalid("embedded version", u64::from(v6[0] >> 4)).into());
    }
    let next = v6[6];
    if super::EXTENSIONS.contains(&next) || next == ICMP {
        return Err(untranslated("embedded next header", u32::from(next)));
    }
    let addr = |at: usize| -> Result<[u8; 4], SiitError> {
        let mut a = [0u8; 16];
        a.copy_from_slice(&v6[at..at + 16]);
        inner(&a).ok_or_else(|| untranslated("embedded address", u32::from(word(&a, 14))))
    };
    let (s4, d4) = (addr(8)?, addr(24)?);
    let payload = usize::from(word(v6, 4));
    let total = IPV4_HEADER_LEN + payload;
    if total > usize::from(u16::MAX) {
        return Err(untranslated("embedded payload length", payload as u32));
    }
    let l4 = &v6[IPV6_HEADER_LEN..];
    let n = IPV4_HEADER_LEN + l4.len();
    if out.len() < n {
        return Err(Error::truncated("ipv4 output buffer", n, out.len()).into());
    }
    let flags: u16 = if total > super::DF_ABOVE { 0x4000 } else { 0 };
    out[..2].copy_from_slice(&[0x45, v6[0] << 4 | v6[1] >> 4]);
    put(out, 2, total as u16);
    put(out, 4, 0);
    put(out, 6, flags);
    out[8] = v6[7];
    out[9] = if next == ICMPV6 { ICMP } else { next };
    put(out, 10, 0);
    out[12..16].copy_from_slice(&s4);
    out[16..20].copy_from_slice(&d4);
    put(out, 10, !checksum::data(&out[..IPV4_HEADER_LEN]));
    let t = &mut out[IPV4_HEADER_LEN..n];
    t.copy_from_slice(l4);
    let removed = checksum::data(&v6[8..40]);
    let added = checksum::combine(&[checksum::data(&s4), checksum::data(&d4)]);
    let (mut s6, mut d6) = ([0u8; 16], [0u8; 16]);
    s6.copy_from_slice(&v6[8..24]);
    d6.copy_from_slice(&v6[24..40]);
    transport_inner(t, next, (removed, added), || {
        pseudo6(&s6, &d6, payload, ICMPV6)
    })?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtus_move_by_twenty_and_zero_takes_a_plateau() {
        assert_eq!(mtu_v4_to_v6(1480, 1500), 1500);
        assert_eq!(mtu_v4_to_v6(0, 1500), 1492 + 20);
        assert_eq!(mtu_v4_to_v6(0, 60), 88);
        assert_eq!(mtu_v6_to_v4(1500), 1480);
        assert_eq!(mtu_v6_to_v4(1280), 1260);
        assert_eq!(mtu_v6_to_v4(40), 68);
        assert_eq!(mtu_v6_to_v4(u32::MAX), u16::MAX);
    }

    #[test]
    fn types_and_pointers_map_both_ways_as_the_rfc_tables_say() {
        assert_eq!(type_v4_to_v6(3, 4), Some((2, 0)));
        assert_eq!(type_v6_to_v4(2, 0), Some((3, 4)));
        assert_eq!(type_v4_to_v6(3, 3), Some((1, 4)));
        assert_eq!(type_v6_to_v4(1, 4), Some((3, 3)));
        assert_eq!(type_v4_to_v6(11, 0), Some((3, 0)));
        assert_eq!(type_v6_to_v4(3, 1), Some((11, 1)));
        assert_eq!(type_v4_to_v6(5, 0), None, "redirect");
        assert_eq!(type_v4_to_v6(3, 14), None);
        assert_eq!(type_v6_to_v4(4, 2), None);
        assert_eq!(pointer_v4_to_v6(9), Some(6));
        assert_eq!(pointer_v6_to_v4(6), Some(9));
        assert_eq!(pointer_v4_to_v6(16), Some(24));
        assert_eq!(pointer_v6_to_v4(30), Some(16));
        assert_eq!(
            pointer_v4_to_v6(10),
            None,
            "the header checksum has no counterpart"
        );
        assert_eq!(pointer_v6_to_v4(2), None, "nor the flow label");
    }
}
