//! GRE (RFC 2784) with the Key and Sequence Number extensions (RFC 2890), and NVGRE (RFC 7637).
//!
//! Four fixed bytes, then up to three optional words in a fixed order, each present when its
//! flag is set: checksum (C), key (K), sequence number (S). NVGRE is GRE with the K bit set,
//! Protocol Type 0x6558 (Transparent Ethernet Bridging) and the key split into a 24-bit Virtual
//! Subnet ID and an 8-bit FlowID ([`NvgreKey`]).
//!
//! ```text
//! RFC 2784 §2.1 with RFC 2890 §2, GRE header:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |C| |K|S| Reserved0       | Ver |         Protocol Type         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Checksum (optional)      |       Reserved1 (Optional)    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         Key (optional)                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Sequence Number (Optional)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! RFC 7637 §3.2, NVGRE (C and S are 0, K is 1):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |0| |1|0|   Reserved0     | Ver |   Protocol Type 0x6558        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |               Virtual Subnet ID (VSID)        |    FlowID     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! RFC 2784 §2.3: Ver MUST be 0 (1 is PPTP's enhanced GRE), and a receiver that does not
//! implement RFC 1701 MUST discard a packet with any of bits 1-5 set. RFC 2890 gives bits 2 and 3
//! (K, S) a meaning, so bit 1 (Routing), bit 4 (Strict Source Route) and bit 5 still make
//! [`GreRepr::parse`] fail. Bits 6-12 and Reserved1 are sent as zero and ignored on receipt.
//!
//! The checksum (RFC 2784 §2.5) covers the GRE header and its payload, so it can only be
//! checked or filled on a buffer that ends where the GRE payload ends: call
//! [`GrePacket::verify_checksum`] on receipt (parsing does not) and
//! [`GrePacket::fill_checksum`] (or [`GreRepr::emit_with_payload`]) when sending.

use core::fmt;

use crate::field;
use crate::header::header;
use crate::std_wire::checksum;
use crate::{Error, EtherType, Result};

/// Length of the fixed part of the GRE header.
pub const BASE_HEADER_LEN: usize = 4;
/// Length of the header with checksum, key and sequence number.
pub const MAX_HEADER_LEN: usize = BASE_HEADER_LEN + 3 * 4;
/// Where the checksum word (checksum, then Reserved1) sits when the C flag is set.
const CHECKSUM: usize = BASE_HEADER_LEN;
const RESERVED1: usize = CHECKSUM + 2;

/// Protocol Type of Transparent Ethernet Bridging: an Ethernet frame follows (NVGRE).
pub const PROTO_TEB: u16 = EtherType::Teb.value();
/// Protocol Type of an IPv4 payload.
pub const PROTO_IPV4: u16 = EtherType::Ipv4.value();
/// Protocol Type of an IPv6 payload.
pub const PROTO_IPV6: u16 = EtherType::Ipv6.value();

header! {
    /// A read/write wrapper around a GRE header and its payload.
    pub struct GrePacket in layout, pub flags {
        /// The first 16 bits: flags, reserved bits and version.
        FLAGS_VERSION @ 0..2 => flags_and_version / set_flags_and_version: u16 {
            /// C: the checksum word is present (RFC 2784). Setting it moves the optional words
            /// after it: set flags before values.
            C = 0x8000 => checksum_present / set_checksum_present: bool;
            /// R: routing present (RFC 1701 only; discarded here).
            R = 0x4000 => routing_present: bool;
            /// K: the key word is present (RFC 2890). Setting it moves the sequence number word.
            K = 0x2000 => key_present / set_key_present: bool;
            /// S: the sequence number word is present (RFC 2890).
            S = 0x1000 => sequence_present / set_sequence_present: bool;
            /// s: strict source route (RFC 1701 only; discarded here).
            STRICT_SOURCE_ROUTE = 0x0800;
            /// Bits 1, 4 and 5: RFC 2784 §2.3 says to discard a packet with any of them set.
            MUST_BE_ZERO = R | STRICT_SOURCE_ROUTE | 0x0400;
            /// The three-bit version (0 for GRE).
            VERSION = 0x0007 => version / set_version: u8;
        }
        /// The Protocol Type: the EtherType of the payload.
        PROTOCOL @ 2..4 => protocol / set_protocol: u16;
    }
    /// Ensures that no accessor will panic: the fixed part and every optional word the C, K
    /// and S flags announce are in the buffer.
    check_len("gre header", BASE_HEADER_LEN; "gre optional fields", header_len);
    /// The encapsulated packet or frame, after the optional words.
    payload(after header_len);
}

impl<T: AsRef<[u8]>> GrePacket<T> {
    /// Length of the header: four bytes plus four per optional word present.
    pub fn header_len(&self) -> usize {
        let words = usize::from(self.checksum_present())
            + usize::from(self.key_present())
            + usize::from(self.sequence_present());
        BASE_HEADER_LEN + 4 * words
    }

    /// Where the key word sits, whether or not it is present.
    fn key_offset(&self) -> usize {
        BASE_HEADER_LEN + if self.checksum_present() { 4 } else { 0 }
    }

    /// Where the sequence number word sits, whether or not it is present.
    fn sequence_offset(&self) -> usize {
        self.key_offset() + if self.key_present() { 4 } else { 0 }
    }

    /// The checksum, when the C flag is set.
    pub fn checksum(&self) -> Option<u16> {
        self.checksum_present()
            .then(|| field::read_u16(&self.buffer.as_ref()[CHECKSUM..]))
    }

    /// The key, when the K flag is set.
    pub fn key(&self) -> Option<u32> {
        let at = self.key_offset();
        self.key_present()
            .then(|| field::read_u32(&self.buffer.as_ref()[at..]))
    }

    /// The sequence number, when the S flag is set.
    pub fn sequence(&self) -> Option<u32> {
        let at = self.sequence_offset();
        self.sequence_present()
            .then(|| field::read_u32(&self.buffer.as_ref()[at..]))
    }

    /// Checks the checksum over the whole buffer (header and payload, RFC 2784 §2.5).
    ///
    /// The buffer must end where the GRE payload ends (the end of the IP payload, not of an
    /// Ethernet frame with padding). A packet without the C flag has nothing to check and
    /// verifies.
    pub fn verify_checksum(&self) -> bool {
        !self.checksum_present() || checksum::data(self.buffer.as_ref()) == !0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> GrePacket<T> {
    /// Sets the checksum field. Does nothing unless the C flag is set.
    pub fn set_checksum(&mut self, value: u16) {
        if self.checksum_present() {
            field::write_u16(&mut self.buffer.as_mut()[CHECKSUM..], value);
        }
    }

    /// Sets the key. Does nothing unless the K flag is set (its offset depends on C).
    pub fn set_key(&mut self, value: u32) {
        if self.key_present() {
            let at = self.key_offset();
            field::write_u32(&mut self.buffer.as_mut()[at..], value);
        }
    }

    /// Sets the sequence number. Does nothing unless the S flag is set.
    pub fn set_sequence(&mut self, value: u32) {
        if self.sequence_present() {
            let at = self.sequence_offset();
            field::write_u32(&mut self.buffer.as_mut()[at..], value);
        }
    }

    /// Clears Reserved0 (bits 1 and 4-12) and, when the C flag is set, Reserved1.
    pub fn clear_reserved(&mut self) {
        let keep = flags::C | flags::K | flags::S | flags::VERSION;
        let word = self.flags_and_version() & keep;
        self.set_flags_and_version(word);
        if self.checksum_present() {
            field::write_u16(&mut self.buffer.as_mut()[RESERVED1..], 0);
        }
    }

    /// Computes the checksum over the whole buffer and stores it; does nothing unless the C
    /// flag is set. The buffer must end where the payload ends (see `verify_checksum`).
    pub fn fill_checksum(&mut self) {
        if !self.checksum_present() {
            return;
        }
        self.set_checksum(0);
        let sum = !checksum::data(self.buffer.as_ref());
        self.set_checksum(sum);
    }
}

/// An NVGRE key: the 24-bit Virtual Subnet ID and the 8-bit FlowID (RFC 7637 §3.2).
#[derive(Debug, PartialEq, Eq, Clone, Copy, Hash)]
pub struct NvgreKey {
    /// Virtual Subnet ID: the tenant's layer-2 segment. 0-0xfff are reserved (RFC 7637 §3.2).
    pub vsid: u32,
    /// FlowID: per-flow entropy for ECMP; it does not change the segment.
    pub flow_id: u8,
}

impl NvgreKey {
    /// Splits a GRE key: the VSID is its top 24 bits, the FlowID its low 8.
    pub const fn from_key(key: u32) -> Self {
        NvgreKey {
            vsid: key >> 8,
            flow_id: key as u8,
        }
    }

    /// A key from a VSID and FlowID, failing when the VSID does not fit in 24 bits.
    pub fn new(vsid: u32, flow_id: u8) -> Result<Self> {
        if vsid > field::U24_MAX {
            return Err(Error::invalid("nvgre vsid", vsid.into()));
        }
        Ok(NvgreKey { vsid, flow_id })
    }

    /// The GRE key: `vsid << 8 | flow_id`. VSID bits above the 24th are dropped.
    pub const fn key(self) -> u32 {
        ((self.vsid & field::U24_MAX) << 8) | self.flow_id as u32
    }
}

/// A high-level representation of a GRE header (version 0).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct GreRepr {
    /// Protocol Type: the EtherType of the payload.
    pub protocol: u16,
    /// Whether the header carries a checksum word.
    pub checksum: bool,
    /// The key, when the K flag is set.
    pub key: Option<u32>,
    /// The sequence number, when the S flag is set.
    pub sequence: Option<u32>,
}

impl GreRepr {
    /// An NVGRE header as RFC 7637 §3.2 sends it: K set, C and S clear, Protocol Type 0x6558.
    /// The VSID is 24 bits; higher bits are dropped (use [`NvgreKey::new`] to check first).
    pub const fn nvgre(vsid: u32, flow_id: u8) -> GreRepr {
        GreRepr {
            protocol: PROTO_TEB,
            checksum: false,
            key: Some(NvgreKey { vsid, flow_id }.key()),
            sequence: None,
        }
    }

    /// The NVGRE key, when this is a keyed GRE header carrying Ethernet.
    ///
    /// RFC 7637 §3.2 has senders clear C and S; a header that carries them anyway is still
    /// read as NVGRE, as tolerant receivers (and tshark) do.
    pub const fn as_nvgre(&self) -> Option<NvgreKey> {
        match self.key {
            Some(key) if self.protocol == PROTO_TEB => Some(NvgreKey::from_key(key)),
            _ => None,
        }
    }

    /// Parses a checked packet. The checksum is not verified here: the header alone does not
    /// cover the payload; call [`GrePacket::verify_checksum`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &GrePacket<&T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != 0 {
            return Err(Error::invalid("gre version", packet.version().into()));
        }
        let word = packet.flags_and_version();
        if word & flags::MUST_BE_ZERO != 0 {
            return Err(Error::invalid(
                "gre flags (rfc 1701 routing, strict source route or recursion)",
                word.into(),
            ));
        }
        Ok(GreRepr {
            protocol: packet.protocol(),
            checksum: packet.checksum_present(),
            key: packet.key(),
            sequence: packet.sequence(),
        })
    }

    /// Length of the header this representation emits.
    pub const fn buffer_len(&self) -> usize {
        let mut len = BASE_HEADER_LEN;
        if self.checksum {
            len += 4;
        }
        if self.key.is_some() {
            len += 4;
        }
        if self.sequence.is_some() {
            len += 4;
        }
        len
    }

    /// Writes the header into the first `buffer_len()` bytes of the packet's buffer, version 0
    /// and reserved bits zero.
    ///
    /// With `checksum` set this writes a zero checksum: once the payload is in place, call
    /// [`GrePacket::fill_checksum`] on a buffer that ends with it, or use
    /// [`emit_with_payload`](Self::emit_with_payload) which does both.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut GrePacket<T>) -> Result<()> {
        // The buffer's flags are garbage until written: check the raw length.
        let have = packet.buffer.as_ref().len();
        if have < self.buffer_len() {
            return Err(Error::truncated("gre header", self.buffer_len(), have));
        }
        let mut word = 0;
        if self.checksum {
            word |= flags::C;
        }
        if self.key.is_some() {
            word |= flags::K;
        }
        if self.sequence.is_some() {
            word |= flags::S;
        }
        packet.set_flags_and_version(word);
        packet.set_protocol(self.protocol);
        packet.set_checksum(0);
        packet.clear_reserved();
        if let Some(key) = self.key {
            packet.set_key(key);
        }
        if let Some(sequence) = self.sequence {
            packet.set_sequence(sequence);
        }
        Ok(())
    }

    /// Writes the header followed by `payload` into the start of `buf` and, when `checksum` is
    /// set, fills the checksum over exactly those bytes. Returns the number of bytes written.
    pub fn emit_with_payload(&self, buf: &mut [u8], payload: &[u8]) -> Result<usize> {
        let header = self.buffer_len();
        let total = header + payload.len();
        let have = buf.len();
        let Some(buf) = buf.get_mut(..total) else {
            return Err(Error::truncated("gre packet", total, have));
        };
        let mut packet = GrePacket::new_unchecked(buf);
        self.emit(&mut packet)?;
        packet.payload_mut().copy_from_slice(payload);
        packet.fill_checksum();
        Ok(total)
    }
}

impl fmt::Display for GreRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_nvgre() {
            Some(k) => write!(f, "NVGRE vsid={} flow={}", k.vsid, k.flow_id)?,
            None => {
                write!(f, "GRE proto={:#06x}", self.protocol)?;
                if let Some(key) = self.key {
                    write!(f, " key={key:#x}")?;
                }
            }
        }
        if let Some(sequence) = self.sequence {
            write!(f, " seq={sequence}")?;
        }
        if self.checksum {
            f.write_str(" csum")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    // RFC 2784/2890/7637 have no example packets. These bytes follow the diagrams above by hand
    // and are the headers of scapy's "gre-ipv4-no-key", "nvgre-vsid-1193046-flow-120" and
    // "gre-checksum-key-sequence" in tests/vectors/nvgre.json (checked in crates/wire/tests/).
    static PLAIN: [u8; 4] = [0x00, 0x00, 0x08, 0x00];
    static NVGRE: [u8; 8] = [0x20, 0x00, 0x65, 0x58, 0x12, 0x34, 0x56, 0x78];
    static FULL: [u8; 16] = [
        0xb0, 0x00, 0x65, 0x58, // C K S, TEB
        0xbd, 0x57, 0x00, 0x00, // checksum (scapy's, over header and its inner frame)
        0x00, 0x00, 0x09, 0x01, // key: VSID 9, FlowID 1
        0x00, 0x00, 0x00, 0x4d, // sequence 77
    ];

    #[test]
    fn deconstruct() {
        let p = GrePacket::new_checked(&PLAIN[..]).unwrap();
        assert!(!p.checksum_present() && !p.key_present() && !p.sequence_present());
        assert_eq!(
            (p.version(), p.protocol(), p.header_len()),
            (0, PROTO_IPV4, 4)
        );
        assert_eq!((p.checksum(), p.key(), p.sequence()), (None, None, None));

        let p = GrePacket::new_checked(&NVGRE[..]).unwrap();
        assert!(p.key_present() && !p.checksum_present());
        assert_eq!((p.key(), p.header_len()), (Some(0x1234_5678), 8));

        let p = GrePacket::new_checked(&FULL[..]).unwrap();
        assert_eq!(p.header_len(), 16);
        assert_eq!(p.checksum(), Some(0xbd57));
        assert_eq!(p.key(), Some(0x0901));
        assert_eq!(p.sequence(), Some(77));
        assert!(p.payload().is_empty());
    }

    #[test]
    fn sequence_without_key_follows_checksum() {
        let b = [0x90, 0x00, 0x08, 0x00, 0, 0, 0, 0, 0, 0, 0, 5];
        let p = GrePacket::new_checked(&b[..]).unwrap();
        assert_eq!((p.key(), p.sequence(), p.header_len()), (None, Some(5), 12));
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = [0xffu8; 8];
        GreRepr::nvgre(0x123456, 0x78)
            .emit(&mut GrePacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, NVGRE);
        let mut buf = [0xffu8; 4];
        let plain = GreRepr {
            protocol: PROTO_IPV4,
            checksum: false,
            key: None,
            sequence: None,
        };
        plain
            .emit(&mut GrePacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, PLAIN);
        let mut buf = [0xffu8; 16];
        let full = GreRepr {
            protocol: PROTO_TEB,
            checksum: true,
            key: Some(0x901),
            sequence: Some(77),
        };
        full.emit(&mut GrePacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(&buf[..4], &FULL[..4]);
        assert_eq!(&buf[4..8], &[0, 0, 0, 0], "checksum left for fill_checksum");
        assert_eq!(&buf[8..], &FULL[8..]);
    }

    #[test]
    fn parse_round_trip() {
        for bytes in [&PLAIN[..], &NVGRE[..]] {
            let repr = GreRepr::parse(&GrePacket::new_checked(bytes).unwrap()).unwrap();
            let mut out = [0u8; 8];
            let out = &mut out[..repr.buffer_len()];
            repr.emit(&mut GrePacket::new_unchecked(&mut out[..]))
                .unwrap();
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn checksum_fill_and_verify() {
        let payload = [0x45, 0x00, 0x12, 0x34, 0x56];
        let repr = GreRepr {
            protocol: PROTO_IPV4,
            checksum: true,
            key: Some(7),
            sequence: None,
        };
        let mut buf = [0u8; 32];
        let n = repr.emit_with_payload(&mut buf, &payload).unwrap();
        assert_eq!(n, 12 + payload.len());
        let p = GrePacket::new_checked(&buf[..n]).unwrap();
        assert!(p.verify_checksum());
        assert_ne!(p.checksum(), Some(0));
        assert_eq!(p.payload(), &payload);
        let mut bad = buf;
        bad[n - 1] ^= 1;
        assert!(!GrePacket::new_checked(&bad[..n]).unwrap().verify_checksum());
        assert!(repr.emit_with_payload(&mut buf[..n - 1], &payload).is_err());
    }

    #[test]
    fn check_len_counts_optional_words() {
        assert_eq!(
            GrePacket::new_checked(&PLAIN[..3]),
            Err(Error::truncated("gre header", 4, 3))
        );
        assert_eq!(
            GrePacket::new_checked(&FULL[..15]),
            Err(Error::truncated("gre optional fields", 16, 15))
        );
    }

    #[test]
    fn rejects_version_and_rfc1701_bits() {
        for (word, field) in [
            (0x0001u16, "gre version"),
            (
                0x4000,
                "gre flags (rfc 1701 routing, strict source route or recursion)",
            ),
            (
                0x0800,
                "gre flags (rfc 1701 routing, strict source route or recursion)",
            ),
            (
                0x0400,
                "gre flags (rfc 1701 routing, strict source route or recursion)",
            ),
        ] {
            let mut b = [0u8; 8];
            b[..2].copy_from_slice(&word.to_be_bytes());
            let p = GrePacket::new_checked(&b[..]).unwrap();
            assert_eq!(GreRepr::parse(&p), Err(Error::invalid(field, word.into())));
        }
    }

    #[test]
    fn reserved_bits_ignored_on_receipt() {
        let mut b = FULL;
        b[0] |= 0x03; // recursion bits 6-7
        b[1] |= 0xf8; // flag bits 8-12
        b[6] = 0xff; // Reserved1
        let repr = GreRepr::parse(&GrePacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            GreRepr {
                protocol: PROTO_TEB,
                checksum: true,
                key: Some(0x901),
                sequence: Some(77)
            }
        );
    }

    #[test]
    fn nvgre_key() {
        let k = NvgreKey::from_key(0x1234_5678);
        assert_eq!(
            k,
            NvgreKey {
                vsid: 0x123456,
                flow_id: 0x78
            }
        );
        assert_eq!(k.key(), 0x1234_5678);
        assert!(NvgreKey::new(1 << 24, 0).is_err());
        assert_eq!(
            GreRepr::nvgre(9, 1).as_nvgre(),
            Some(NvgreKey {
                vsid: 9,
                flow_id: 1
            })
        );
        let ip = GreRepr {
            protocol: PROTO_IPV4,
            checksum: false,
            key: Some(5),
            sequence: None,
        };
        assert_eq!(ip.as_nvgre(), None);
        let keyless = GreRepr {
            key: None,
            ..GreRepr::nvgre(9, 1)
        };
        assert_eq!(keyless.as_nvgre(), None);
    }

    #[test]
    fn display() {
        assert_eq!(
            GreRepr::nvgre(4242, 3).to_string(),
            "NVGRE vsid=4242 flow=3"
        );
        let ip = GreRepr {
            protocol: PROTO_IPV4,
            checksum: true,
            key: Some(0x2a),
            sequence: Some(9),
        };
        assert_eq!(ip.to_string(), "GRE proto=0x0800 key=0x2a seq=9 csum");
    }
}
