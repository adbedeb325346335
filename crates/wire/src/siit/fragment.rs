//! IPv4 fragments ⇄ IPv6 Fragment Header (RFC 7915 §4.1, §5.1; RFC 8200 §4.5): a fragment
//! crosses as a fragment, with its offset, its more-fragments flag and its Identification
//! (IPv4's 16 bits as the low 16 of IPv6's 32, and back), so the receiving container reassembles
//! the datagram itself. Nothing is reassembled or cut here.
//!
//! ```text
//!  IPv6 Fragment Header (RFC 8200 §4.5)
//!  |  Next Header  |   Reserved    |      Fragment Offset    |Res|M|
//!  |                         Identification                        |
//! ```
//!
//! Only the first fragment (offset 0) holds the transport header: its TCP or UDP checksum, which
//! covers the whole datagram, is adjusted for the new addresses as a whole packet's is. What
//! needs the whole datagram is refused: a UDP fragment without a checksum (§4.5 would compute
//! one) and ICMP in fragments (ICMPv6's checksum covers the datagram's length, which no fragment
//! knows). DF is 0 on the way back (§5.1.1).

use super::{
    adjust, header_v4, header_v6, nonzero, put, transport_min, untranslated, word, SiitError, ICMP,
    ICMPV6, IPV4_HEADER_LEN, IPV6_HEADER_LEN, TCP, UDP,
};
use crate::std_wire::checksum;
use crate::Error;

/// IPv6's Fragment Header (next header 44).
pub(super) const FRAGMENT: u8 = 44;
/// Its length.
const LEN: usize = 8;

/// Checks the transport part `l4` of an IPv4 fragment of protocol `protocol` whose flags and
/// offset word (without DF) is `field`.
pub(super) fn check_v4(protocol: u8, field: u16, l4: &[u8]) -> Result<(), SiitError> {
    check(protocol == ICMP, protocol, field & 0x1fff, l4)
}

/// Checks an IPv6 packet's Fragment Header and what follows (`rest`: the payload from the
/// Fragment Header on).
pub(super) fn check_v6(rest: &[u8]) -> Result<(), SiitError> {
    if rest.len() < LEN {
        return Err(Error::truncated("ipv6 fragment header", LEN, rest.len()).into());
    }
    let next = rest[0];
    if super::EXTENSIONS.contains(&next) || next == FRAGMENT {
        return Err(untranslated("ipv6 extension header", u32::from(next)));
    }
    check(
        next == ICMPV6 || next == ICMP,
        next,
        word(rest, 2) >> 3,
        &rest[LEN..],
    )
}

fn check(icmp: bool, protocol: u8, offset: u16, l4: &[u8]) -> Result<(), SiitError> {
    if icmp {
        return Err(untranslated("icmp fragment", u32::from(protocol)));
    }
    if offset != 0 {
        return Ok(());
    }
    let need = transport_min(protocol);
    if l4.len() < need {
        return Err(Error::truncated("transport header", need, l4.len()).into());
    }
    if protocol == UDP && word(l4, 6) == 0 {
        return Err(untranslated("udp fragment without checksum", 0));
    }
    Ok(())
}

/// Translates the IPv4 fragment `v4` (header `ihl` bytes, `total` long, checked) into `out`:
/// IPv6 header, Fragment Header, the fragment's data. Returns the length.
pub(super) fn v4_to_v6(
    v4: &[u8],
    (ihl, total): (usize, usize),
    (src, dst): (&[u8; 16], &[u8; 16]),
    out: &mut [u8],
) -> Result<usize, SiitError> {
    let data = &v4[ihl..total];
    let len = IPV6_HEADER_LEN + LEN + data.len();
    if out.len() < len {
        return Err(Error::truncated("ipv6 output buffer", len, out.len()).into());
    }
    header_v6(v4, (LEN + data.len(), FRAGMENT), (src, dst), out);
    let field = word(v4, 6);
    let (offset, more) = (field & 0x1fff, field & 0x2000 != 0);
    let header = &mut out[IPV6_HEADER_LEN..IPV6_HEADER_LEN + LEN];
    header[0] = v4[9];
    header[1] = 0;
    put(header, 2, offset << 3 | u16::from(more));
    put(header, 4, 0);
    put(header, 6, word(v4, 4));
    let l4 = &mut out[IPV6_HEADER_LEN + LEN..len];
    l4.copy_from_slice(data);
    if offset == 0 {
        let removed = checksum::data(&v4[12..20]);
        let added = checksum::combine(&[checksum::data(src), checksum::data(dst)]);
        first(l4, v4[9], (removed, added));
    }
    Ok(len)
}

/// Translates the IPv6 fragment `v6` (payload `payload` bytes, checked) into `out`: IPv4
/// header with the fragment's offset, MF and Identification, DF clear; the data. Returns the
/// length.
pub(super) fn v6_to_v4(
    v6: &[u8],
    payload: usize,
    (src, dst): (&[u8; 4], &[u8; 4]),
    out: &mut [u8],
) -> Result<usize, SiitError> {
    let header = &v6[IPV6_HEADER_LEN..IPV6_HEADER_LEN + LEN];
    let data = &v6[IPV6_HEADER_LEN + LEN..IPV6_HEADER_LEN + payload];
    let len = IPV4_HEADER_LEN + data.len();
    if out.len() < len {
        return Err(Error::truncated("ipv4 output buffer", len, out.len()).into());
    }
    let protocol = header[0];
    header_v4(v6, (len, protocol), (src, dst), out);
    let (offset, more) = (word(header, 2) >> 3, word(header, 2) & 1);
    // §5.1.1: the low 16 bits of the Identification, MF = M, DF = 0.
    put(out, 4, word(header, 6));
    put(out, 6, more << 13 | offset);
    put(out, 10, 0);
    put(out, 10, !checksum::data(&out[..IPV4_HEADER_LEN]));
    let l4 = &mut out[IPV4_HEADER_LEN..len];
    l4.copy_from_slice(data);
    if offset == 0 {
        let removed = checksum::data(&v6[8..40]);
        let added = checksum::combine(&[checksum::data(src), checksum::data(dst)]);
        first(l4, protocol, (removed, added));
    }
    Ok(len)
}

/// The first fragment's transport checksum (TCP, UDP; checked present) adjusted for addresses
/// whose sum went from `removed` to `added` (RFC 1624): it covers the whole datagram, which the
/// other fragments do not change.
fn first(l4: &mut [u8], protocol: u8, (removed, added): (u16, u16)) {
    match protocol {
        TCP => put(l4, 16, adjust(word(l4, 16), removed, added)),
        UDP => put(l4, 6, nonzero(adjust(word(l4, 6), removed, added))),
        _ => {}
    }
}
