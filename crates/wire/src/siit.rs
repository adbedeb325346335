//! Stateless IP/ICMP translation, IPv4 ⇄ IPv6 (SIIT, RFC 7915), as far as nvo's ILA IPv4
//! tenants need it (`nvo_pipeline::l3::ila4`): the header of an IPv4 packet becomes an IPv6
//! header (with a Fragment Header for a fragment) and back, the caller chooses the addresses on the other side, and
//! the transport checksums follow the pseudo-header.
//!
//! ```text
//!  IPv4 (RFC 791 §3.1)                          IPv6 (RFC 8200 §3)
//!  |Ver=4|IHL|  TOS  |  Total Length |          |Ver=6| Traffic Cl. |    Flow Label = 0     |
//!  |  Identification |Flags|Frag Off |   ──►    | Payload Length  | Next Hdr  | Hop Limit   |
//!  |  TTL  | Proto   | Header Chksum |   ◄──    |          Source Address (128)             |
//!  |      Source Address (32)        |          |       Destination Address (128)           |
//!  |    Destination Address (32)     |
//!  |    Options (ignored, §4.1)      |
//! ```
//!
//! IPv4 → IPv6 (RFC 7915 §4.1): traffic class = TOS, flow label 0, payload length = total
//! length − IHL·4, next header = protocol (ICMP 1 → ICMPv6 58), hop limit = TTL (nvo's gateway
//! is no router hop: not decremented, as for every L3 network). Options are ignored, but an
//! unexpired source route (LSRR 131, SSRR 137) is refused (§4.1). A fragment (MF or an offset)
//! gets a Fragment Header with its offset, M and Identification (`fragment`; an unfragmented
//! packet gets none, and its Identification is lost, as §4.1 says). ICMPv4
//! echo and the errors §4.2 maps are translated (errors in `icmp`, with their embedded
//! packet, §4.3); other ICMPv4 messages are refused.
//!
//! IPv6 → IPv4 (RFC 7915 §5.1): TOS = traffic class, total length = payload length + 20,
//! Identification 0, DF set only above 1260 bytes (§5.1), MF 0, TTL = hop limit, protocol =
//! next header (58 → 1), header checksum computed, no options. Extension headers (hop-by-hop,
//! routing, fragment, destination options) and ICMPv6 other than echo and the errors §5.2
//! maps are refused.
//!
//! Checksums: TCP and UDP cover a pseudo-header whose length and protocol words sum the same
//! in both families, so only the addresses change the sum: the checksum is adjusted
//! incrementally (RFC 1624 eqn. 3), never recomputed — a corrupted segment stays corrupted. A
//! zero (absent) IPv4 UDP checksum gets one computed (§4.5: IPv6 requires it); an IPv6 UDP
//! zero checksum is malformed (RFC 8200 §8.1). ICMPv4 has no pseudo-header and ICMPv6 has one
//! (RFC 4443 §2.3): the echo's checksum is adjusted by the pseudo-header's sum and the type
//! change (§4.2, §5.2).

use crate::std_wire::checksum;
use crate::Error;

mod fragment;
mod icmp;

/// The fixed IPv4 header (RFC 791 §3.1), without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// The fixed IPv6 header (RFC 8200 §3).
pub const IPV6_HEADER_LEN: usize = 40;
/// What translating an option-less IPv4 packet adds: IPv6's header is 20 bytes longer.
pub const GROWTH: usize = IPV6_HEADER_LEN - IPV4_HEADER_LEN;
/// What translating an IPv4 fragment adds: the longer header and the Fragment Header (RFC 8200
/// §4.5), 28 bytes.
pub const FRAGMENT_GROWTH: usize = GROWTH + 8;
/// RFC 7915 §5.1: an IPv4 packet translated from IPv6 gets DF only when longer than this.
pub const DF_ABOVE: usize = 1260;

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
/// IPv6 extension headers nvo does not translate (RFC 8200 §4.1).
const EXTENSIONS: [u8; 4] = [0, 43, 44, 60];

/// Why a packet was not translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SiitError {
    /// The packet is not a whole, valid IPv4 or IPv6 packet.
    #[error(transparent)]
    Malformed(#[from] Error),
    /// A valid packet nvo's translation does not take (a fragment, a source route, an
    /// extension header, an ICMP message other than echo).
    #[error("not translated: {what} {value}")]
    Untranslated {
        /// What made it untranslatable.
        what: &'static str,
        /// Its value (protocol number, ICMP type, fragment offset field).
        value: u32,
    },
}

fn untranslated(what: &'static str, value: u32) -> SiitError {
    SiitError::Untranslated { what, value }
}

fn word(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// RFC 1624 eqn. 3: the checksum `old` after words summing to `removed` were replaced by words
/// summing to `added`.
fn adjust(old: u16, removed: u16, added: u16) -> u16 {
    !checksum::combine(&[!old, !removed, added])
}

/// The one's complement sum of the IPv6 pseudo-header (RFC 8200 §8.1).
fn pseudo6(src: &[u8; 16], dst: &[u8; 16], len: usize, next: u8) -> u16 {
    let len = len as u32;
    checksum::combine(&[
        checksum::data(src),
        checksum::data(dst),
        (len >> 16) as u16,
        len as u16,
        u16::from(next),
    ])
}

/// The IPv4 header of `v4` checked: (header length, total length). A fragment, a source route,
/// ICMPv4 other than echo and §4.2's errors, a protocol IPv6 would read as an extension header
/// (or ICMPv6) are `Untranslated`.
pub fn check_v4(v4: &[u8]) -> Result<(usize, usize), SiitError> {
    if v4.len() < IPV4_HEADER_LEN {
        return Err(Error::truncated("ipv4 header", IPV4_HEADER_LEN, v4.len()).into());
    }
    if v4[0] >> 4 != 4 {
        return Err(Error::invalid("version", u64::from(v4[0] >> 4)).into());
    }
    let ihl = usize::from(v4[0] & 0x0f) * 4;
    let total = usize::from(word(v4, 2));
    if ihl < IPV4_HEADER_LEN || total < ihl {
        return Err(Error::invalid("ihl", u64::from(v4[0] & 0x0f)).into());
    }
    if v4.len() < total {
        return Err(Error::truncated("ipv4 total length", total, v4.len()).into());
    }
    if checksum::data(&v4[..ihl]) != 0xffff {
        return Err(Error::invalid("header checksum", u64::from(word(v4, 10))).into());
    }
    let fragment = word(v4, 6) & 0x3fff; // MF and the offset (RFC 791 §3.1)
    source_route(&v4[IPV4_HEADER_LEN..ihl])?;
    // A protocol number IPv6 reads as an extension header, or ICMPv6 inside IPv4: the
    // translated packet would not mean what the IPv4 one did.
    if EXTENSIONS.contains(&v4[9]) || v4[9] == ICMPV6 {
        return Err(untranslated("ipv4 protocol", u32::from(v4[9])));
    }
    let l4 = &v4[ihl..total];
    if fragment != 0 {
        fragment::check_v4(v4[9], fragment, l4)?;
        return Ok((ihl, total));
    }
    let need = transport_min(v4[9]);
    if l4.len() < need {
        return Err(Error::truncated("transport header", need, l4.len()).into());
    }
    if v4[9] == ICMP && !matches!((l4[0], l4[1]), (0 | 8, 0)) && !icmp::v4_error(l4[0], l4[1]) {
        return Err(untranslated("icmpv4 type", u32::from(l4[0])));
    }
    Ok((ihl, total))
}

/// The bytes of transport header the translation reads or rewrites: TCP up to its checksum
/// (offset 16, RFC 9293 §3.1), UDP's 8-byte header (RFC 768), ICMP's type, code and checksum
/// (RFC 792, RFC 4443 §2.1); nothing of any other protocol.
fn transport_min(protocol: u8) -> usize {
    match protocol {
        TCP => 18,
        UDP => 8,
        ICMP | ICMPV6 => 4,
        _ => 0,
    }
}

/// RFC 7915 §4.1: a packet with an unexpired LSRR or SSRR option is not translated.
fn source_route(mut options: &[u8]) -> Result<(), SiitError> {
    while let Some(&kind) = options.first() {
        match kind {
            0 => return Ok(()), // end of options
            1 => options = &options[1..],
            _ => {
                let len = usize::from(*options.get(1).unwrap_or(&0));
                if len < 2 || len > options.len() {
                    return Err(Error::invalid("ipv4 option length", len as u64).into());
                }
                // Pointer (third byte) past the length: the route is used up (RFC 791 §3.1).
                let unexpired = options.get(2).is_some_and(|&p| usize::from(p) <= len);
                if matches!(kind, 131 | 137) && unexpired {
                    return Err(untranslated("ipv4 source route option", u32::from(kind)));
                }
                options = &options[len..];
            }
        }
    }
    Ok(())
}

/// Translates the IPv4 packet `v4` (trailing bytes past its total length ignored) into `out`
/// as an IPv6 packet from `src` to `dst` (RFC 7915 §4); returns its length. An ICMPv4 error
/// carries the start of another packet (§4.3): `inner` gives the IPv6 address of each of its
/// IPv4 addresses (None: not translated).
pub fn v4_to_v6(
    v4: &[u8],
    (src, dst): (&[u8; 16], &[u8; 16]),
    inner: &dyn Fn([u8; 4]) -> Option<[u8; 16]>,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    let (ihl, total) = check_v4(v4)?;
    if word(v4, 6) & 0x3fff != 0 {
        return fragment::v4_to_v6(v4, (ihl, total), (src, dst), out);
    }
    let payload = &v4[ihl..total];
    if v4[9] == ICMP && !matches!(payload[0], 0 | 8) {
        let body = out.get_mut(IPV6_HEADER_LEN..).unwrap_or_default();
        let n = icmp::v4_to_v6(payload, (src, dst), inner, body)?;
        header_v6(v4, (n, ICMPV6), (src, dst), out);
        return Ok(IPV6_HEADER_LEN + n);
    }
    let len = IPV6_HEADER_LEN + payload.len();
    if out.len() < len {
        return Err(Error::truncated("ipv6 output buffer", len, out.len()).into());
    }
    let next = match v4[9] {
        ICMP => ICMPV6,
        p => p,
    };
    header_v6(v4, (payload.len(), next), (src, dst), out);
    let l4 = &mut out[IPV6_HEADER_LEN..len];
    l4.copy_from_slice(payload);
    let old_addresses = checksum::data(&v4[12..20]);
    let new_addresses = checksum::combine(&[checksum::data(src), checksum::data(dst)]);
    match v4[9] {
        TCP => put(l4, 16, adjust(word(l4, 16), old_addresses, new_addresses)),
        UDP if word(l4, 6) == 0 => {
            put(l4, 6, 0);
            let sum = checksum::combine(&[pseudo6(src, dst, l4.len(), UDP), checksum::data(l4)]);
            put(l4, 6, nonzero(!sum));
        }
        UDP => put(
            l4,
            6,
            nonzero(adjust(word(l4, 6), old_addresses, new_addresses)),
        ),
        ICMP => {
            let old_type = word(l4, 0);
            l4[0] = if l4[0] == 8 { 128 } else { 129 };
            let added = checksum::combine(&[word(l4, 0), pseudo6(src, dst, l4.len(), ICMPV6)]);
            put(l4, 2, adjust(word(l4, 2), old_type, added));
        }
        _ => {}
    }
    Ok(len)
}

/// The IPv6 header (§4.1) of IPv4 packet `v4` at `out` (40 bytes or more), with `payload` bytes
/// of next header `next`.
fn header_v6(
    v4: &[u8],
    (payload, next): (usize, u8),
    (src, dst): (&[u8; 16], &[u8; 16]),
    out: &mut [u8],
) {
    let tos = v4[1];
    out[..4].copy_from_slice(&[0x60 | tos >> 4, tos << 4, 0, 0]);
    put(out, 4, payload as u16);
    out[6] = next;
    out[7] = v4[8];
    out[8..24].copy_from_slice(src);
    out[24..40].copy_from_slice(dst);
}

/// The IPv4 header (§5.1) of IPv6 packet `v6` at `out` (20 bytes or more), for a packet of
/// `len` bytes of protocol `protocol`.
fn header_v4(
    v6: &[u8],
    (len, protocol): (usize, u8),
    (src, dst): (&[u8; 4], &[u8; 4]),
    out: &mut [u8],
) {
    let tos = v6[0] << 4 | v6[1] >> 4;
    let flags: u16 = if len > DF_ABOVE { 0x4000 } else { 0 };
    out[..2].copy_from_slice(&[0x45, tos]);
    put(out, 2, len as u16);
    put(out, 4, 0);
    put(out, 6, flags);
    out[8] = v6[7];
    out[9] = protocol;
    put(out, 10, 0);
    out[12..16].copy_from_slice(src);
    out[16..20].copy_from_slice(dst);
    put(out, 10, !checksum::data(&out[..IPV4_HEADER_LEN]));
}

/// UDP sends a computed zero as all ones (RFC 768; RFC 8200 §8.1).
fn nonzero(sum: u16) -> u16 {
    if sum == 0 {
        0xffff
    } else {
        sum
    }
}

/// The IPv6 header of `v6` checked: its payload length. Extension headers, ICMPv6 other than
/// echo and §5.2's errors, a jumbogram are `Untranslated`.
pub fn check_v6(v6: &[u8]) -> Result<usize, SiitError> {
    if v6.len() < IPV6_HEADER_LEN {
        return Err(Error::truncated("ipv6 header", IPV6_HEADER_LEN, v6.len()).into());
    }
    if v6[0] >> 4 != 6 {
        return Err(Error::invalid("version", u64::from(v6[0] >> 4)).into());
    }
    let payload = usize::from(word(v6, 4));
    if v6.len() < IPV6_HEADER_LEN + payload {
        return Err(Error::truncated("ipv6 payload", IPV6_HEADER_LEN + payload, v6.len()).into());
    }
    if IPV4_HEADER_LEN + payload > usize::from(u16::MAX) {
        return Err(untranslated("ipv6 payload length", payload as u32));
    }
    let next = v6[6];
    if next == fragment::FRAGMENT {
        fragment::check_v6(&v6[IPV6_HEADER_LEN..IPV6_HEADER_LEN + payload])?;
        return Ok(payload);
    }
    if EXTENSIONS.contains(&next) {
        return Err(untranslated("ipv6 extension header", u32::from(next)));
    }
    let l4 = &v6[IPV6_HEADER_LEN..IPV6_HEADER_LEN + payload];
    let need = transport_min(next);
    if l4.len() < need {
        return Err(Error::truncated("transport header", need, l4.len()).into());
    }
    if next == UDP && word(l4, 6) == 0 {
        return Err(Error::invalid("udp checksum", 0).into());
    }
    if next == ICMPV6 && !matches!((l4[0], l4[1]), (128 | 129, 0)) && !icmp::v6_error(l4[0], l4[1])
    {
        return Err(untranslated("icmpv6 type", u32::from(l4[0])));
    }
    Ok(payload)
}

/// Translates the IPv6 packet `v6` into `out` as an IPv4 packet from `src` to `dst` (RFC 7915
/// §5); returns its length. An ICMPv6 error carries the start of another packet (§5.3):
/// `inner` gives the IPv4 address of each of its IPv6 addresses (None: not translated).
pub fn v6_to_v4(
    v6: &[u8],
    (src, dst): (&[u8; 4], &[u8; 4]),
    inner: &dyn Fn(&[u8; 16]) -> Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, SiitError> {
    let payload = check_v6(v6)?;
    let next = v6[6];
    if next == fragment::FRAGMENT {
        return fragment::v6_to_v4(v6, payload, (src, dst), out);
    }
    let l4 = &v6[IPV6_HEADER_LEN..IPV6_HEADER_LEN + payload];
    if next == ICMPV6 && !matches!(l4[0], 128 | 129) {
        let (mut s6, mut d6) = ([0u8; 16], [0u8; 16]);
        s6.copy_from_slice(&v6[8..24]);
        d6.copy_from_slice(&v6[24..40]);
        let body = out.get_mut(IPV4_HEADER_LEN..).unwrap_or_default();
        let n = icmp::v6_to_v4(l4, (&s6, &d6), inner, body)?;
        header_v4(v6, (IPV4_HEADER_LEN + n, ICMP), (src, dst), out);
        return Ok(IPV4_HEADER_LEN + n);
    }
    let len = IPV4_HEADER_LEN + payload;
    if out.len() < len {
        return Err(Error::truncated("ipv4 output buffer", len, out.len()).into());
    }
    let protocol = match next {
        ICMPV6 => ICMP,
        p => p,
    };
    header_v4(v6, (len, protocol), (src, dst), out);
    let l4 = &mut out[IPV4_HEADER_LEN..len];
    l4.copy_from_slice(&v6[IPV6_HEADER_LEN..IPV6_HEADER_LEN + payload]);
    let old_addresses = checksum::data(&v6[8..40]);
    let new_addresses = checksum::combine(&[checksum::data(src), checksum::data(dst)]);
    match next {
        TCP => put(l4, 16, adjust(word(l4, 16), old_addresses, new_addresses)),
        UDP => put(
            l4,
            6,
            nonzero(adjust(word(l4, 6), old_addresses, new_addresses)),
        ),
        ICMPV6 => {
            let (s6, d6) = (v6[8..24].try_into(), v6[24..40].try_into());
            let (Ok(s6), Ok(d6)) = (s6, d6) else {
                return Err(Error::truncated("ipv6 addresses", 40, v6.len()).into());
            };
            let removed = checksum::combine(&[word(l4, 0), pseudo6(s6, d6, l4.len(), ICMPV6)]);
            l4[0] = if l4[0] == 128 { 8 } else { 0 };
            put(l4, 2, adjust(word(l4, 2), removed, word(l4, 0)));
        }
        _ => {}
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icmp_fragments_and_icmp_errors_without_a_packet_are_refused() {
        let mut v4 = [0u8; 28];
        v4[..12].copy_from_slice(&[0x45, 0, 0, 28, 0, 1, 0x20, 0, 64, ICMP, 0, 0]);
        let sum = !checksum::data(&v4[..20]);
        put(&mut v4, 10, sum);
        let mut out = [0u8; 64];
        let addrs = (&[0u8; 16], &[0u8; 16]);
        assert_eq!(
            v4_to_v6(&v4, addrs, &|_| None, &mut out),
            Err(untranslated("icmp fragment", 1))
        );
        v4[6] = 0x40; // DF only: not a fragment
        put(&mut v4, 10, 0);
        let sum = !checksum::data(&v4[..20]);
        put(&mut v4, 10, sum);
        let none = |_| None;
        v4[20] = 5; // redirect: §4.2 drops it
        assert_eq!(
            v4_to_v6(&v4, addrs, &none, &mut out),
            Err(untranslated("icmpv4 type", 5))
        );
        v4[20] = 3; // destination unreachable: an error, but with no packet in it
        assert!(matches!(
            v4_to_v6(&v4, addrs, &none, &mut out),
            Err(SiitError::Malformed(_))
        ));
        v4[20] = 8;
        assert_eq!(v4_to_v6(&v4, addrs, &none, &mut out), Ok(48));
        assert_eq!(out[6], ICMPV6);
        assert_eq!(out[40], 128);
        assert!(v4_to_v6(&v4[..27], addrs, &none, &mut out).is_err());
        assert!(v4_to_v6(&v4, addrs, &none, &mut out[..47]).is_err());
    }

    #[test]
    fn an_unexpired_source_route_is_refused_an_expired_one_ignored() {
        assert!(source_route(&[131, 7, 4, 10, 0, 0, 1, 0]).is_err());
        assert!(source_route(&[1, 137, 7, 4, 10, 0, 0, 1]).is_err());
        assert!(source_route(&[131, 7, 8, 10, 0, 0, 1, 0]).is_ok());
        assert!(source_route(&[7, 3, 4, 0]).is_ok()); // record route
        assert!(source_route(&[7, 9, 4]).is_err()); // cut short
    }
}
