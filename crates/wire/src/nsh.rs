//! NSH, the Network Service Header of service function chaining (RFC 8300).
//!
//! An NSH is a Base Header and a Service Path Header (eight bytes, [`BASE_LEN`]) followed by
//! context metadata whose format the MD Type names: sixteen opaque bytes for MD Type 1, a list of
//! variable-length TLVs for MD Type 2. The Length field counts the whole header in 4-byte words,
//! so the payload (an IPv4 or IPv6 packet, an Ethernet frame, another NSH, MPLS: the shared
//! [`NextProtocol`]) starts at `Length * 4` whatever the MD Type.
//!
//! ```text
//! RFC 8300 §2.2 and §2.3, Base Header and Service Path Header:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ver|O|U|    TTL    |   Length  |U|U|U|U|MD Type| Next Protocol |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Service Path Identifier (SPI)        | Service Index |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~     Fixed-Length (MD Type 1, 16 bytes) or Variable-Length     ~
//! ~               (MD Type 2, TLVs) Context Headers               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! RFC 8300 §2.5.1, one Variable-Length Context Header (TLV):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Metadata Class       |      Type     |U|    Length   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                   Variable-Length Metadata                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! - [`NshPacket::check_len`] proves the Length field is at least 2 words (the two mandatory
//!   headers), fits the buffer, and is exactly 6 for MD Type 1 (§2.2).
//! - [`NshRepr::parse`] rejects a version other than 0 (§2.2: the packet MUST be discarded), MD
//!   Types other than 1 and 2 (§2.2: 0x0 is reserved and 0xF experimental, both SHOULD be
//!   silently discarded; other values have no defined layout), and MD Type 2 metadata whose TLVs
//!   do not walk to the end of the header. A forwarder configured for an experimental MD Type can
//!   still forward such packets through [`NshPacket`], which only needs the Length field.
//! - Unassigned (U) bits are zero when nvo originates a header and are otherwise ignored; the
//!   [`NshPacket`] setters leave them alone, since §2.2 says they MUST be preserved unmodified.
//! - TLV Length counts bytes of the value; the value is padded to 4 bytes (§2.5.1).

use crate::field;
use crate::header::{header, numbered};
use crate::{Error, Result};

pub use crate::vxlan_gpe::NextProtocol;

/// Length of the Base Header and the Service Path Header, the smallest NSH.
pub const BASE_LEN: usize = 8;
/// Length of the Fixed-Length Context Header of MD Type 1 (§2.4).
pub const MD1_CONTEXT_LEN: usize = 16;
/// The smallest Length field: the Base Header and the Service Path Header (§2.2).
pub const MIN_LEN_WORDS: u8 = 2;
/// The Length field of every MD Type 1 header, in 4-byte words (§2.2).
pub const MD1_LEN_WORDS: u8 = 6;
/// The largest header the 6-bit Length field can describe, in bytes.
pub const MAX_HEADER_LEN: usize = 63 * 4;
/// The only version RFC 8300 defines.
pub const VERSION: u8 = 0;
/// The largest TTL (6 bits), also the default initial TTL (§2.2).
pub const TTL_MAX: u8 = 63;
/// Length of a TLV's Class, Type and Length fields.
pub const TLV_HEADER_LEN: usize = 4;
/// The largest TLV value: the Length field has 7 bits.
pub const TLV_VALUE_MAX: usize = 127;

/// The Length field of a TLV's fourth byte (the bit above it is unassigned).
const TLV_LENGTH: u8 = 0x7f;

numbered! {
    /// The format of the metadata after the Service Path Header (§2.2, registry in §11.2).
    pub enum MdType {
        /// 0x1: a 16-byte Fixed-Length Context Header.
        Type1 = 1 => "1",
        /// 0x2: zero or more Variable-Length Context Headers (TLVs).
        Type2 = 2 => "2",
    }
    /// 0x0 (reserved), 0xF (experimental) or an unassigned value.
    Unknown(u8) => "{}";
}

header! {
    /// A read/write wrapper around an NSH, its metadata and its payload.
    pub struct NshPacket in layout {
        /// The two-bit version.
        VERSION @ 0..2 & 0xc000 => version / set_version: u8;
        /// The O bit: an OAM packet.
        O @ 0..2 & 0x2000 => oam / set_oam: bool;
        /// The six-bit TTL: SFF hops left on the service path.
        TTL @ 0..2 & 0x0fc0 => ttl / set_ttl: u8;
        /// The Length field: the whole header in 4-byte words.
        LENGTH @ 0..2 & 0x003f => length_words / set_length_words: u8;
        /// The MD Type (low four bits of the third byte).
        MD_TYPE @ 2..3 & 0x0f => md_type / set_md_type: MdType;
        /// The Next Protocol field.
        NEXT_PROTOCOL @ 3..4 => next_protocol / set_next_protocol: NextProtocol;
        /// The 24-bit Service Path Identifier.
        SPI @ 4..7 => spi / set_spi: u32;
        /// The Service Index: the position on the service path.
        SI @ 7..8 => si / set_si: u8;
        UNASSIGNED @ 0..2 & 0x1000;
        MD_TYPE_UNASSIGNED @ 2..3 & 0xf0;
    }
    /// Ensures that no accessor will panic: the buffer holds the base headers, and the Length
    /// field is at least 2 words, fits the buffer, and is 6 for MD Type 1 (§2.2).
    check_len("nsh header", BASE_LEN, check_length_field; "nsh header (length field)", header_len);
    /// What follows the header, as the Length field places it.
    payload(after header_len);
    /// Clears the unassigned bits, as an originator must (§2.2).
    fn clear_unassigned() zeroes UNASSIGNED, MD_TYPE_UNASSIGNED;
}

impl<T: AsRef<[u8]>> NshPacket<T> {
    fn check_length_field(&self, _len: usize) -> Result<()> {
        let words = self.length_words();
        if words < MIN_LEN_WORDS {
            return Err(Error::invalid("nsh length", words.into()));
        }
        if self.md_type() == MdType::Type1 && words != MD1_LEN_WORDS {
            return Err(Error::invalid("nsh length (md type 1)", words.into()));
        }
        Ok(())
    }

    /// The whole header (base, service path and metadata) in bytes.
    pub fn header_len(&self) -> usize {
        usize::from(self.length_words()) * 4
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> NshPacket<&'a T> {
    /// The context headers: the bytes between the Service Path Header and the payload.
    pub fn metadata(&self) -> &'a [u8] {
        &self.buffer.as_ref()[BASE_LEN..self.header_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NshPacket<T> {
    /// Decrements the Service Index, as a service function or SFC proxy does after performing
    /// its service (§2.3), and returns the new value.
    ///
    /// Fails on an SI of 0, which cannot be decremented without wrapping onto another hop.
    pub fn decrement_si(&mut self) -> Result<u8> {
        let si = self.si();
        let next = si
            .checked_sub(1)
            .ok_or(Error::invalid("nsh service index", 0))?;
        self.set_si(next);
        Ok(next)
    }

    /// Decrements the TTL, as every SFF does before its forwarding lookup (§2.2), and returns
    /// the new value: 0 wraps to 63, as §2.2 specifies. The packet MUST NOT be forwarded when
    /// this returns 0.
    pub fn decrement_ttl(&mut self) -> u8 {
        let ttl = self.ttl().wrapping_sub(1) & TTL_MAX;
        self.set_ttl(ttl);
        ttl
    }

    /// The context headers, mutable.
    pub fn metadata_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[BASE_LEN..end]
    }
}

/// The context metadata of an NSH.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum NshMetadata<'a> {
    /// MD Type 1: the 16-byte Fixed-Length Context Header, opaque to NSH (§2.4).
    Type1([u8; MD1_CONTEXT_LEN]),
    /// MD Type 2: the raw Variable-Length Context Headers, a multiple of 4 bytes that
    /// [`NshTlvs`] walks (§2.5). Empty when the header has none.
    Type2(&'a [u8]),
}

impl<'a> NshMetadata<'a> {
    /// The MD Type this metadata is carried under.
    pub const fn md_type(&self) -> MdType {
        match self {
            NshMetadata::Type1(_) => MdType::Type1,
            NshMetadata::Type2(_) => MdType::Type2,
        }
    }

    /// The metadata as it sits on the wire.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            NshMetadata::Type1(ctx) => ctx,
            NshMetadata::Type2(tlvs) => tlvs,
        }
    }

    /// The TLVs of MD Type 2 metadata; none for MD Type 1.
    pub fn tlvs(&self) -> NshTlvs<'a> {
        match *self {
            NshMetadata::Type1(_) => NshTlvs::new(&[]),
            NshMetadata::Type2(tlvs) => NshTlvs::new(tlvs),
        }
    }
}

/// A high-level representation of an NSH. Unassigned bits are not represented: they are
/// emitted as zero.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct NshRepr<'a> {
    /// O: an OAM packet.
    pub oam: bool,
    /// Six-bit TTL.
    pub ttl: u8,
    /// What follows the header.
    pub next_protocol: NextProtocol,
    /// 24-bit Service Path Identifier.
    pub spi: u32,
    /// Service Index.
    pub si: u8,
    /// The context metadata; its variant gives the MD Type.
    pub metadata: NshMetadata<'a>,
}

impl<'a> NshRepr<'a> {
    /// Parses a checked packet; see the module documentation for what it rejects and why.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &NshPacket<&'a T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::invalid("nsh version", packet.version().into()));
        }
        let raw = packet.metadata();
        let metadata = match packet.md_type() {
            MdType::Type1 => {
                // check_len proved Length == 6, so the context is exactly 16 bytes.
                let ctx = <[u8; MD1_CONTEXT_LEN]>::try_from(raw)
                    .map_err(|_| Error::invalid("nsh length (md type 1)", raw.len() as u64))?;
                NshMetadata::Type1(ctx)
            }
            MdType::Type2 => {
                check_tlvs(raw)?;
                NshMetadata::Type2(raw)
            }
            MdType::Unknown(n) => return Err(Error::invalid("nsh md type", n.into())),
        };
        Ok(NshRepr {
            oam: packet.oam(),
            ttl: packet.ttl(),
            next_protocol: packet.next_protocol(),
            spi: packet.spi(),
            si: packet.si(),
            metadata,
        })
    }

    /// Length of the header this representation emits.
    pub fn buffer_len(&self) -> usize {
        BASE_LEN + self.metadata.as_bytes().len()
    }

    /// Writes the header (version 0, unassigned bits zero) into the first `buffer_len()` bytes
    /// of the packet; the Length field comes from the metadata.
    ///
    /// Fails (rather than truncating) on a TTL over 63, an SPI over 24 bits, or MD Type 2
    /// metadata that is not whole TLVs or too long for the Length field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut NshPacket<T>) -> Result<()> {
        let len = self.buffer_len();
        let have = packet.buffer.as_ref().len();
        if have < len {
            return Err(Error::truncated("nsh header", len, have));
        }
        if self.ttl > TTL_MAX {
            return Err(Error::invalid("nsh ttl", self.ttl.into()));
        }
        field::check_u24("nsh spi", self.spi)?;
        if let NshMetadata::Type2(tlvs) = self.metadata {
            if len > MAX_HEADER_LEN || !len.is_multiple_of(4) {
                return Err(Error::invalid("nsh metadata length", tlvs.len() as u64));
            }
            check_tlvs(tlvs)?;
        }
        // Version 0 and every unassigned bit zero, then the fields.
        packet.buffer.as_mut()[..BASE_LEN].fill(0);
        packet.set_oam(self.oam);
        packet.set_ttl(self.ttl);
        // len <= MAX_HEADER_LEN (Type 1 is 24 bytes), so the word count fits six bits.
        packet.set_length_words((len / 4) as u8);
        packet.set_md_type(self.metadata.md_type());
        packet.set_next_protocol(self.next_protocol);
        packet.set_spi(self.spi);
        packet.set_si(self.si);
        packet.buffer.as_mut()[BASE_LEN..len].copy_from_slice(self.metadata.as_bytes());
        Ok(())
    }
}

impl core::fmt::Display for NshRepr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "NSH spi={} si={} md={} next={} ttl={}",
            self.spi,
            self.si,
            self.metadata.md_type(),
            self.next_protocol,
            self.ttl
        )?;
        if self.oam {
            f.write_str(" O")?;
        }
        Ok(())
    }
}

/// Fails with the first error of the TLVs in `bytes`.
fn check_tlvs(bytes: &[u8]) -> Result<()> {
    NshTlvs::new(bytes).try_for_each(|t| t.map(|_| ()))
}

/// One Variable-Length Context Header of MD Type 2 (§2.5.1).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct NshTlv<'a> {
    /// Metadata Class: the namespace of `kind` (IANA registry, §11.2).
    pub class: u16,
    /// Type, defined by the owner of the class.
    pub kind: u8,
    /// The value, without padding (at most 127 bytes).
    pub value: &'a [u8],
}

impl NshTlv<'_> {
    /// Bytes this TLV takes on the wire, padding included.
    pub const fn buffer_len(&self) -> usize {
        TLV_HEADER_LEN + self.value.len().div_ceil(4) * 4
    }

    /// Writes the TLV, its U bit clear and its padding zero, into the first `buffer_len()` bytes
    /// of `buf`. Fails on a value over 127 bytes or a short buffer.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.value.len();
        if n > TLV_VALUE_MAX {
            return Err(Error::invalid("nsh tlv length", n as u64));
        }
        let need = self.buffer_len();
        if buf.len() < need {
            return Err(Error::truncated("nsh tlv", need, buf.len()));
        }
        field::write_u16(&mut buf[0..2], self.class);
        buf[2] = self.kind;
        buf[3] = n as u8;
        buf[TLV_HEADER_LEN..TLV_HEADER_LEN + n].copy_from_slice(self.value);
        buf[TLV_HEADER_LEN + n..need].fill(0);
        Ok(())
    }
}

/// Bytes `tlvs` take on the wire, padding included.
pub fn tlvs_buffer_len(tlvs: &[NshTlv<'_>]) -> usize {
    tlvs.iter().map(NshTlv::buffer_len).sum()
}

/// Writes `tlvs` one after another at the start of `buf`, for [`NshMetadata::Type2`], and
/// returns the number of bytes written.
pub fn emit_tlvs(tlvs: &[NshTlv<'_>], buf: &mut [u8]) -> Result<usize> {
    let mut at = 0;
    for tlv in tlvs {
        let rest = buf.get_mut(at..).unwrap_or_default();
        tlv.emit(rest)?;
        at += tlv.buffer_len();
    }
    Ok(at)
}

/// Walks MD Type 2 metadata, one [`NshTlv`] at a time.
///
/// A TLV whose header or padded value runs past the end yields an error, after which the
/// iterator is done: what follows cannot be located.
#[derive(Debug, Clone)]
pub struct NshTlvs<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> NshTlvs<'a> {
    /// Walks `bytes` (typically [`NshPacket::metadata`] of an MD Type 2 header).
    pub const fn new(bytes: &'a [u8]) -> Self {
        NshTlvs {
            rest: bytes,
            failed: false,
        }
    }
}

impl<'a> Iterator for NshTlvs<'a> {
    type Item = Result<NshTlv<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        let have = self.rest.len();
        let Some(header) = self.rest.get(..TLV_HEADER_LEN) else {
            self.failed = true;
            return Some(Err(Error::truncated(
                "nsh tlv header",
                TLV_HEADER_LEN,
                have,
            )));
        };
        // §2.5.1: the U bit is ignored on receipt; the value is padded to 4 bytes.
        let n = usize::from(header[3] & TLV_LENGTH);
        let need = TLV_HEADER_LEN + n.div_ceil(4) * 4;
        let Some(value) = self.rest.get(TLV_HEADER_LEN..TLV_HEADER_LEN + n) else {
            self.failed = true;
            return Some(Err(Error::truncated("nsh tlv", need, have)));
        };
        let tlv = NshTlv {
            class: field::read_u16(header),
            kind: header[2],
            value,
        };
        match self.rest.get(need..) {
            Some(rest) => self.rest = rest,
            None => {
                self.failed = true;
                return Some(Err(Error::truncated("nsh tlv padding", need, have)));
            }
        }
        Some(Ok(tlv))
    }
}

impl core::iter::FusedIterator for NshTlvs<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    // RFC 8300 has no example packets; these follow §2.2-§2.5.1 by hand and are cross-checked
    // against scapy's NSH layer in tests/vectors/nsh.json (see crates/wire/tests/nsh.rs, which
    // also covers the TLV writer, the decrement helpers and emit's errors).
    static MD1: [u8; 24] = [
        0x0f, 0xc6, 0x01, 0x03, 0x12, 0x34, 0x56, 0xff, // ttl 63, len 6, md 1, Ethernet
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    ];
    static MD2: [u8; 24] = [
        0x2f, 0xc5, 0x02, 0x01, 0x00, 0x00, 0x42, 0xc8, // O, ttl 63, len 5, md 2, IPv4
        0x01, 0x02, 0x03, 0x03, b'a', b'b', b'c', 0x00, // class 0x0102 type 3 "abc" + pad
        0xff, 0xff, 0x80, 0x00, // class 0xffff type 0x80, empty
        0xee, 0xee, 0xee, 0xee, // payload
    ];

    const fn tlv(class: u16, kind: u8, value: &[u8]) -> NshTlv<'_> {
        NshTlv { class, kind, value }
    }

    #[test]
    fn deconstruct_md1() {
        let p = NshPacket::new_checked(&MD1[..]).unwrap();
        assert_eq!((p.version(), p.oam(), p.ttl()), (0, false, 63));
        assert_eq!((p.length_words(), p.header_len()), (6, 24));
        assert_eq!(p.md_type(), MdType::Type1);
        assert_eq!(p.next_protocol(), NextProtocol::Ethernet);
        assert_eq!((p.spi(), p.si()), (0x123456, 255));
        assert_eq!(p.metadata(), &MD1[8..]);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn deconstruct_md2() {
        let p = NshPacket::new_checked(&MD2[..]).unwrap();
        assert!(p.oam());
        assert_eq!((p.header_len(), p.md_type()), (20, MdType::Type2));
        assert_eq!(p.next_protocol(), NextProtocol::Ipv4);
        assert_eq!((p.spi(), p.si()), (0x42, 200));
        assert_eq!(p.payload(), &[0xee; 4]);
        let tlvs: Vec<_> = NshTlvs::new(p.metadata()).collect();
        assert_eq!(
            tlvs,
            [Ok(tlv(0x0102, 3, b"abc")), Ok(tlv(0xffff, 0x80, b""))]
        );
    }

    #[test]
    fn parse_emit_round_trip() {
        for bytes in [&MD1[..], &MD2[..20]] {
            let repr = NshRepr::parse(&NshPacket::new_checked(bytes).unwrap()).unwrap();
            assert_eq!(repr.buffer_len(), bytes.len());
            let mut out = [0x55u8; 24];
            let mut packet = NshPacket::new_unchecked(&mut out[..bytes.len()]);
            repr.emit(&mut packet).unwrap();
            assert_eq!(&out[..bytes.len()], bytes);
        }
    }

    #[test]
    fn check_len_enforces_length_field() {
        let err = |b: &[u8]| NshPacket::new_checked(b).err();
        assert_eq!(err(&MD1[..7]), Some(Error::truncated("nsh header", 8, 7)));
        let long = Error::truncated("nsh header (length field)", 24, 23);
        assert_eq!(err(&MD1[..23]), Some(long));
        let mut b = MD1;
        b[1] = (b[1] & 0xc0) | 1;
        assert_eq!(err(&b), Some(Error::invalid("nsh length", 1)));
        b[1] = (b[1] & 0xc0) | 5;
        assert_eq!(err(&b), Some(Error::invalid("nsh length (md type 1)", 5)));
        b[2] = 2; // the same Length is fine for MD Type 2 ...
        let p = NshPacket::new_checked(&b[..]).unwrap();
        // ... but the context bytes are not TLVs that end where the header does.
        assert!(matches!(NshRepr::parse(&p), Err(Error::Truncated { .. })));
    }

    #[test]
    fn parse_rejects_version_and_md_types() {
        fn parse(b: &[u8]) -> Result<NshRepr<'_>> {
            NshRepr::parse(&NshPacket::new_checked(b).unwrap())
        }
        let mut b = MD1;
        b[0] |= 0x40;
        assert_eq!(parse(&b), Err(Error::invalid("nsh version", 1)));
        for md in [0x0, 0x3, 0xf] {
            let mut b = MD1;
            b[2] = md;
            assert_eq!(parse(&b), Err(Error::invalid("nsh md type", md.into())));
        }
    }

    #[test]
    fn unassigned_bits_ignored_and_preserved() {
        let mut b = MD1;
        b[0] |= 0x10;
        b[2] |= 0xf0;
        let repr = NshRepr::parse(&NshPacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            NshRepr::parse(&NshPacket::new_checked(&MD1[..]).unwrap()).unwrap()
        );
        let mut p = NshPacket::new_unchecked(&mut b[..]);
        p.set_ttl(5);
        p.set_si(7);
        p.set_oam(true);
        p.set_md_type(MdType::Type1);
        assert_eq!(&p.into_inner()[..4], &[0x31, 0x46, 0xf1, 0x03]);
        let mut p = NshPacket::new_unchecked(&mut b[..]);
        p.clear_unassigned();
        assert_eq!(&p.into_inner()[..4], &[0x21, 0x46, 0x01, 0x03]);
    }

    #[test]
    fn tlv_walk_errors_stop_the_iterator() {
        // A 5-byte value needs 8 bytes after the header; only 4 are there.
        let mut it = NshTlvs::new(&[0, 1, 2, 5, 1, 2, 3, 4]);
        assert_eq!(it.next(), Some(Err(Error::truncated("nsh tlv", 12, 8))));
        assert_eq!(it.next(), None);
        // The value fits but its padding does not.
        let mut it = NshTlvs::new(&[0, 1, 2, 3, 1, 2, 3]);
        assert_eq!(
            it.next(),
            Some(Err(Error::truncated("nsh tlv padding", 8, 7)))
        );
        assert_eq!(it.next(), None);
        let header = Error::truncated("nsh tlv header", 4, 2);
        assert_eq!(NshTlvs::new(&[0, 1]).next(), Some(Err(header)));
        // The U bit is not part of the length.
        let u = [0, 1, 2, 0x80];
        assert_eq!(NshTlvs::new(&u).next(), Some(Ok(tlv(1, 2, b""))));
    }
}
