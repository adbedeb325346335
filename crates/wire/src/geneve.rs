//! Geneve, Generic Network Virtualization Encapsulation (RFC 8926).
//!
//! An eight-byte fixed header, then `Opt Len` four-byte words of TLV options, then the payload
//! whose kind the Protocol Type (an EtherType) names. [`GenevePacket`] reads and writes the
//! fields; [`GeneveRepr`] keeps the options as raw bytes, borrowed from the packet, so that
//! parsing allocates nothing and re-emitting reproduces them exactly. [`GeneveOptions`] walks
//! those bytes option by option, and [`GeneveOption::emit`] / [`emit_options`] build them.
//!
//! ```text
//! RFC 8926 §3.4, Geneve header:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Virtual Network Identifier (VNI)       |    Reserved   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! ~                    Variable-Length Options                    ~
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! RFC 8926 §3.5, one option (Length counts 4-byte words of data, header excluded):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Option Class         |      Type     |R|R|R| Length  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! ~                  Variable-Length Option Data                  ~
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! RFC 8926 §3.4: a packet with an unknown version MUST be dropped, so only version 0 parses.
//! Reserved bits (Rsvd., the byte after the VNI, the R bits of options) are sent as zero and
//! ignored on receipt. Parsing also rejects an option list that does not walk as whole TLVs
//! ending exactly at `Opt Len`: an endpoint cannot find the critical options in it (§3.5.1).
//! Parsing does not check that the C bit agrees with the options' critical bits; a receiver
//! that honours C must look at the options itself ([`GeneveRepr::has_critical_option`]).

use core::fmt;
use core::iter::FusedIterator;

use crate::field;
use crate::header::{header, write_flags};
use crate::{Error, Result};

/// Length of the fixed Geneve header, options excluded.
pub const HEADER_LEN: usize = 8;
/// Largest options area: `Opt Len` is six bits of four-byte words (RFC 8926 §3.4).
pub const MAX_OPTIONS_LEN: usize = 0x3f * 4;
/// Length of an option's own header (class, type, length).
pub const OPTION_HEADER_LEN: usize = 4;
/// Largest option data: `Length` is five bits of four-byte words (RFC 8926 §3.5).
pub const MAX_OPTION_DATA_LEN: usize = 0x1f * 4;

/// Inside one option.
mod option_fields {
    use crate::field::Field;
    pub const CLASS: Field = 0..2;
    pub const TYPE: usize = 2;
    pub const LEN: usize = 3;
}

/// Protocol Type values: EtherTypes of the payload (RFC 8926 §3.4).
pub mod protocol {
    use crate::EtherType;
    /// Transparent Ethernet Bridging: the payload is an Ethernet frame.
    pub const ETHERNET: u16 = EtherType::Teb.value();
    /// The payload is an IPv4 packet.
    pub const IPV4: u16 = EtherType::Ipv4.value();
    /// The payload is an IPv6 packet.
    pub const IPV6: u16 = EtherType::Ipv6.value();
}

/// nvo's identity option (issue 18, docs/policy.md): the source group of the frame and whether
/// the sender applied policy, sent by networks with an identity policy. Its class is one of the
/// experimental range of the IANA "Geneve Option Class" registry (0xFFF0–0xFFFF, Experimental
/// Use; RFC 8926 §7), and its type has the critical bit clear (§3.5), so that a receiver that
/// does not know it skips it. The flags byte has A ("policy applied") where VXLAN-GBP has it
/// (draft-smith-vxlan-group-policy-05 §2.1); the other bits are reserved, zero on send.
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |    Option Class = 0xFFF0      | Type = 0x01   |R|R|R|Len = 1  |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |           Group ID            |R|R|R|R|A|R|R|R|   Reserved    |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
pub mod identity {
    use super::{GeneveOption, GeneveOptions, OPTION_HEADER_LEN};
    use crate::{Error, Result};

    /// Option Class: the first of the experimental range.
    pub const CLASS: u16 = 0xfff0;
    /// Type, critical bit (0x80) clear.
    pub const TYPE: u8 = 0x01;
    /// Length of the option data.
    pub const DATA_LEN: usize = 4;
    /// Length of the whole option on the wire (header and data): what it adds to a header.
    pub const LEN: usize = OPTION_HEADER_LEN + DATA_LEN;
    /// A ("policy applied"), in the flags byte (the third of the data).
    pub const APPLIED: u8 = 0x08;

    /// The identity an option carries.
    #[derive(Debug, PartialEq, Eq, Clone, Copy)]
    pub struct Identity {
        /// The source endpoint's group ID (0: in no group).
        pub group: u16,
        /// The sender applied policy (A).
        pub applied: bool,
    }

    impl Identity {
        /// Reads `option`: `None` when it is another option (another class, or another type,
        /// including this type with the critical bit set), an error when it is this option with
        /// data of another length.
        pub fn parse(option: &GeneveOption<'_>) -> Result<Option<Identity>> {
            if option.class != CLASS || option.kind != TYPE {
                return Ok(None);
            }
            let [g0, g1, flags, _] = *option.data else {
                return Err(Error::invalid(
                    "geneve identity option length",
                    option.data.len() as u64,
                ));
            };
            Ok(Some(Identity {
                group: u16::from_be_bytes([g0, g1]),
                applied: flags & APPLIED != 0,
            }))
        }

        /// The first identity option in a run of option bytes (reserved bits ignored, other
        /// options skipped), or `None`. Fails when the bytes do not walk as whole options or
        /// the identity option is malformed.
        pub fn find(options: &[u8]) -> Result<Option<Identity>> {
            for option in GeneveOptions::new(options) {
                if let Some(id) = Identity::parse(&option?)? {
                    return Ok(Some(id));
                }
            }
            Ok(None)
        }

        /// Writes the option into the first [`LEN`] bytes of `buf`, reserved bits zero.
        pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
            let [g0, g1] = self.group.to_be_bytes();
            let flags = if self.applied { APPLIED } else { 0 };
            GeneveOption {
                class: CLASS,
                kind: TYPE,
                data: &[g0, g1, flags, 0],
            }
            .emit(buf)
        }
    }
}

header! {
    /// A read/write wrapper around a Geneve header, its options and its payload.
    pub struct GenevePacket in layout, pub flags {
        /// Ver and Opt Len.
        VERSION_OPT_LEN @ 0..1: u8 {
            /// Version, top two bits of the first byte (0 is the only one defined).
            VERSION = 0xc0 => version / set_version: u8;
            /// Opt Len, low six bits of the first byte: the options in four-byte words.
            OPT_LEN = 0x3f;
        }
        /// The O and C bits and the reserved ones.
        O_C_RSVD @ 1..2: u8 {
            /// O: control (OAM) packet for the tunnel endpoint, not to be forwarded to tenants
            /// (§3.4).
            O = 0x80 => oam / set_oam: bool;
            /// C: one or more options have the critical bit set (§3.4).
            C = 0x40 => critical / set_critical: bool;
        }
        RSVD @ 1..2 & 0x3f;
        /// The Protocol Type: the EtherType of the payload (see [`protocol`]).
        PROTOCOL @ 2..4 => protocol / set_protocol: u16;
        /// The 24-bit Virtual Network Identifier.
        VNI @ 4..7 => vni / set_vni: u32;
        RESERVED @ 7..8;
    }
    /// Ensures that no accessor will panic: the fixed header and `Opt Len * 4` bytes of options
    /// are in the buffer.
    check_len("geneve header", HEADER_LEN; "geneve options", header_len);
    /// The encapsulated packet or frame, after the options.
    payload(after header_len);
    /// Clears the reserved bits of the fixed header (Rsvd. and the byte after the VNI).
    fn clear_reserved() zeroes RSVD, RESERVED;
    flags {
        /// The critical bit of an option's Type (§3.5).
        pub const OPTION_CRITICAL: u8 = 0x80;
        /// The Length field of an option's fourth byte; the three bits above it are reserved.
        pub const OPTION_LEN: u8 = 0x1f;
    }
}

impl<T: AsRef<[u8]>> GenevePacket<T> {
    /// Length of the options in bytes (`Opt Len` counts four-byte words).
    pub fn options_len(&self) -> usize {
        layout::OPT_LEN.read(self.buffer.as_ref()) as usize * 4
    }

    /// Length of the fixed header and the options: where the payload starts.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options_len()
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> GenevePacket<&'a T> {
    /// The raw option TLVs (`options_len()` bytes).
    pub fn options(&self) -> &'a [u8] {
        let end = self.header_len();
        &self.buffer.as_ref()[HEADER_LEN..end]
    }

    /// Walks the options one TLV at a time.
    pub fn option_iter(&self) -> GeneveOptions<'a> {
        GeneveOptions::new(self.options())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> GenevePacket<T> {
    /// Sets `Opt Len` from a length in bytes. The length must be a multiple of four and at most
    /// [`MAX_OPTIONS_LEN`]; other bits are dropped ([`GeneveRepr::emit`] checks them).
    pub fn set_options_len(&mut self, bytes: usize) {
        layout::OPT_LEN.write(self.buffer.as_mut(), (bytes / 4) as u64);
    }

    /// The options area, mutable (`options_len()` bytes).
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// One Geneve option (RFC 8926 §3.5), borrowing its data.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct GeneveOption<'a> {
    /// Option Class: the namespace of `kind` (IANA registry, §7.2).
    pub class: u16,
    /// Type, including the critical bit in its high bit.
    pub kind: u8,
    /// The option data: a multiple of four bytes, at most [`MAX_OPTION_DATA_LEN`].
    pub data: &'a [u8],
}

impl GeneveOption<'_> {
    /// The critical bit (high bit of Type): a receiver that does not understand the option
    /// MUST drop the packet (§3.5).
    pub const fn critical(&self) -> bool {
        self.kind & flags::OPTION_CRITICAL != 0
    }

    /// Length of the option on the wire: its header and data.
    pub const fn buffer_len(&self) -> usize {
        OPTION_HEADER_LEN + self.data.len()
    }

    /// Writes the option into the first `buffer_len()` bytes of `buf`, reserved bits zero.
    ///
    /// Fails when the data is not a whole number of four-byte words or is longer than
    /// [`MAX_OPTION_DATA_LEN`], or when `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let len = self.data.len();
        if !len.is_multiple_of(4) || len > MAX_OPTION_DATA_LEN {
            return Err(Error::invalid("geneve option data length", len as u64));
        }
        let need = self.buffer_len();
        if buf.len() < need {
            return Err(Error::truncated("geneve option buffer", need, buf.len()));
        }
        field::write_u16(&mut buf[option_fields::CLASS], self.class);
        buf[option_fields::TYPE] = self.kind;
        buf[option_fields::LEN] = (len / 4) as u8;
        buf[OPTION_HEADER_LEN..need].copy_from_slice(self.data);
        Ok(())
    }
}

impl fmt::Display for GeneveOption<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "class={:#06x} type={:#04x} len={}",
            self.class,
            self.kind,
            self.data.len()
        )?;
        if self.critical() {
            f.write_str(" critical")?;
        }
        Ok(())
    }
}

/// Writes `options` one after another at the start of `buf`, returning the bytes written: the
/// slice to use as [`GeneveRepr::options`]. Nothing is allocated.
///
/// Fails when an option is malformed (see [`GeneveOption::emit`]), when the whole list would be
/// longer than [`MAX_OPTIONS_LEN`], or when `buf` is too short.
pub fn emit_options(options: &[GeneveOption<'_>], buf: &mut [u8]) -> Result<usize> {
    let total: usize = options.iter().map(GeneveOption::buffer_len).sum();
    if total > MAX_OPTIONS_LEN {
        return Err(Error::invalid("geneve options length", total as u64));
    }
    if buf.len() < total {
        return Err(Error::truncated("geneve options buffer", total, buf.len()));
    }
    let mut at = 0;
    for option in options {
        option.emit(&mut buf[at..])?;
        at += option.buffer_len();
    }
    Ok(at)
}

/// Iterates over the options in a run of option bytes.
///
/// Yields each whole option; on an option that runs past the end of the bytes it yields one
/// `Err` and then stops.
#[derive(Debug, Clone)]
pub struct GeneveOptions<'a> {
    rest: &'a [u8],
}

impl<'a> GeneveOptions<'a> {
    /// Walks `bytes`, usually [`GenevePacket::options`] or [`GeneveRepr::options`].
    pub const fn new(bytes: &'a [u8]) -> Self {
        GeneveOptions { rest: bytes }
    }
}

impl<'a> Iterator for GeneveOptions<'a> {
    type Item = Result<GeneveOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.rest;
        if rest.is_empty() {
            return None;
        }
        if rest.len() < OPTION_HEADER_LEN {
            self.rest = &[];
            return Some(Err(Error::truncated(
                "geneve option header",
                OPTION_HEADER_LEN,
                rest.len(),
            )));
        }
        // The three bits above Length are reserved: ignored on receipt (§3.5).
        let data_len = usize::from(rest[option_fields::LEN] & flags::OPTION_LEN) * 4;
        let end = OPTION_HEADER_LEN + data_len;
        if rest.len() < end {
            self.rest = &[];
            return Some(Err(Error::truncated("geneve option", end, rest.len())));
        }
        self.rest = &rest[end..];
        Some(Ok(GeneveOption {
            class: field::read_u16(&rest[option_fields::CLASS]),
            kind: rest[option_fields::TYPE],
            data: &rest[OPTION_HEADER_LEN..end],
        }))
    }
}

impl FusedIterator for GeneveOptions<'_> {}

/// Checks that `options` is a valid options area: whole words, not too long, whole TLVs.
fn check_options(options: &[u8]) -> Result<()> {
    if !options.len().is_multiple_of(4) || options.len() > MAX_OPTIONS_LEN {
        return Err(Error::invalid(
            "geneve options length",
            options.len() as u64,
        ));
    }
    GeneveOptions::new(options).try_for_each(|o| o.map(drop))
}

/// A high-level representation of a Geneve header (version 0).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct GeneveRepr<'a> {
    /// O: a control (OAM) packet.
    pub oam: bool,
    /// C: critical options are present.
    pub critical: bool,
    /// Protocol Type of the payload (see [`protocol`]).
    pub protocol: u16,
    /// The 24-bit VNI.
    pub vni: u32,
    /// The raw option TLVs: a multiple of four bytes, at most [`MAX_OPTIONS_LEN`].
    pub options: &'a [u8],
}

impl<'a> GeneveRepr<'a> {
    /// Parses a checked packet. The options are borrowed from it, unchanged.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &GenevePacket<&'a T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != 0 {
            return Err(Error::invalid("geneve version", packet.version().into()));
        }
        let options = packet.options();
        check_options(options)?;
        Ok(GeneveRepr {
            oam: packet.oam(),
            critical: packet.critical(),
            protocol: packet.protocol(),
            vni: packet.vni(),
            options,
        })
    }

    /// Walks the options one TLV at a time.
    pub fn option_iter(&self) -> GeneveOptions<'a> {
        GeneveOptions::new(self.options)
    }

    /// Whether any option has its critical bit set; an encapsulator sets `critical` to this
    /// (§3.4). A malformed option list counts as critical, so that a caller who drops packets
    /// with critical options it cannot read drops it too.
    pub fn has_critical_option(&self) -> bool {
        self.option_iter().any(|o| o.map_or(true, |o| o.critical()))
    }

    /// Length of the header and options this representation emits.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header and options into the first `buffer_len()` bytes of the packet's
    /// buffer, with version 0 and reserved bits zero.
    ///
    /// Fails (rather than truncating) when the VNI does not fit in 24 bits, when the options
    /// are not a valid options area, or when the buffer is shorter than `buffer_len()`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut GenevePacket<T>) -> Result<()> {
        field::check_u24("geneve vni", self.vni)?;
        check_options(self.options)?;
        // The buffer's own Opt Len is garbage until written: check the raw length.
        let have = packet.buffer.as_ref().len();
        if have < self.buffer_len() {
            return Err(Error::truncated("geneve header", self.buffer_len(), have));
        }
        packet.set_version(0);
        packet.set_options_len(self.options.len());
        packet.clear_reserved();
        packet.set_oam(self.oam);
        packet.set_critical(self.critical);
        packet.set_protocol(self.protocol);
        packet.set_vni(self.vni);
        packet.options_mut().copy_from_slice(self.options);
        Ok(())
    }
}

impl fmt::Display for GeneveRepr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Geneve vni={} proto={:#06x}", self.vni, self.protocol)?;
        if !self.options.is_empty() {
            write!(f, " options={}B", self.options.len())?;
        }
        write_flags(f, &[(self.oam, " O"), (self.critical, " C")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    // RFC 8926 has no example packet. These bytes follow §3.4/§3.5 by hand; the same header is
    // scapy's "geneve-three-options-critical" in tests/vectors/geneve.json (checked in
    // crates/wire/tests/geneve.rs).
    static PLAIN: [u8; 8] = [0x00, 0x00, 0x65, 0x58, 0x12, 0x34, 0x56, 0x00];
    static OPTIONS: [u8; 32] = [
        0x06, 0x40, 0x65, 0x58, 0x00, 0x01, 0x2c, 0x00, // Opt Len 6, C, TEB, VNI 300
        0x01, 0x02, 0x80, 0x01, 0x11, 0x22, 0x33, 0x44, // class 0x0102, type 0x80 (critical)
        0xff, 0xff, 0x01, 0x02, b'a', b'b', b'c', b'd', // class 0xffff, type 1, 8 bytes
        b'e', b'f', b'g', b'h', 0x00, 0x00, 0x7f, 0x00, // ... then class 0, type 0x7f, empty
    ];

    #[test]
    fn deconstruct_plain() {
        let p = GenevePacket::new_checked(&PLAIN[..]).unwrap();
        assert_eq!(p.version(), 0);
        assert_eq!(p.options_len(), 0);
        assert_eq!(p.header_len(), 8);
        assert!(!p.oam() && !p.critical());
        assert_eq!(p.protocol(), protocol::ETHERNET);
        assert_eq!(p.vni(), 0x123456);
        assert!(p.options().is_empty() && p.payload().is_empty());
    }

    #[test]
    fn deconstruct_options() {
        let mut bytes = [0u8; 34];
        bytes[..32].copy_from_slice(&OPTIONS);
        bytes[32..].copy_from_slice(&[0xaa, 0xbb]);
        let p = GenevePacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.options_len(), 24);
        assert_eq!(p.header_len(), 32);
        assert!(p.critical() && !p.oam());
        assert_eq!(p.vni(), 300);
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        let mut it = p.option_iter();
        let first = it.next().unwrap().unwrap();
        assert_eq!((first.class, first.kind), (0x0102, 0x80));
        assert_eq!(first.data, &[0x11, 0x22, 0x33, 0x44]);
        assert!(first.critical());
        let second = it.next().unwrap().unwrap();
        assert_eq!(
            (second.class, second.kind, second.data),
            (0xffff, 1, &b"abcdefgh"[..])
        );
        assert!(!second.critical());
        let third = it.next().unwrap().unwrap();
        assert_eq!((third.class, third.kind, third.data.len()), (0, 0x7f, 0));
        assert!(it.next().is_none());
    }

    #[test]
    fn construct_and_emit() {
        let opts = [
            GeneveOption {
                class: 0x0102,
                kind: 0x80,
                data: &[0x11, 0x22, 0x33, 0x44],
            },
            GeneveOption {
                class: 0xffff,
                kind: 1,
                data: b"abcdefgh",
            },
            GeneveOption {
                class: 0,
                kind: 0x7f,
                data: &[],
            },
        ];
        let mut obuf = [0u8; 64];
        let n = emit_options(&opts, &mut obuf).unwrap();
        assert_eq!(&obuf[..n], &OPTIONS[8..]);
        let repr = GeneveRepr {
            oam: false,
            critical: true,
            protocol: protocol::ETHERNET,
            vni: 300,
            options: &obuf[..n],
        };
        assert!(repr.has_critical_option());
        let mut out = [0xffu8; 32];
        repr.emit(&mut GenevePacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, OPTIONS);
        let plain = GeneveRepr {
            oam: false,
            critical: false,
            protocol: 0x6558,
            vni: 0x123456,
            options: &[],
        };
        let mut out = [0xffu8; 8];
        plain
            .emit(&mut GenevePacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, PLAIN);
    }

    #[test]
    fn parse_round_trip() {
        for bytes in [&PLAIN[..], &OPTIONS[..]] {
            let repr = GeneveRepr::parse(&GenevePacket::new_checked(bytes).unwrap()).unwrap();
            assert_eq!(repr.buffer_len(), bytes.len());
            let mut out = [0u8; 32];
            let out = &mut out[..bytes.len()];
            repr.emit(&mut GenevePacket::new_unchecked(&mut out[..]))
                .unwrap();
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn check_len_counts_options() {
        assert_eq!(
            GenevePacket::new_checked(&PLAIN[..7]),
            Err(Error::truncated("geneve header", 8, 7))
        );
        assert_eq!(
            GenevePacket::new_checked(&OPTIONS[..31]),
            Err(Error::truncated("geneve options", 32, 31))
        );
    }

    #[test]
    fn rejects_unknown_version_and_broken_options() {
        let mut v1 = PLAIN;
        v1[0] = 0x40;
        let p = GenevePacket::new_checked(&v1[..]).unwrap();
        assert_eq!(
            GeneveRepr::parse(&p),
            Err(Error::invalid("geneve version", 1))
        );

        // The third option claims four bytes of data that are not inside Opt Len.
        let mut long = OPTIONS;
        long[31] = 0x01;
        let p = GenevePacket::new_checked(&long[..]).unwrap();
        assert_eq!(
            GeneveRepr::parse(&p),
            Err(Error::truncated("geneve option", 8, 4))
        );
        let mut it = p.option_iter();
        assert!(it.nth(2).unwrap().is_err());
        assert!(it.next().is_none(), "stops after an error");
    }

    #[test]
    fn reserved_bits_ignored_on_receipt() {
        let mut b = OPTIONS;
        b[1] |= 0x3f; // Rsvd.
        b[7] = 0xff; // Reserved after the VNI
        b[11] |= 0xe0; // R bits of the first option
        let repr = GeneveRepr::parse(&GenevePacket::new_checked(&b[..]).unwrap()).unwrap();
        assert!(repr.critical && !repr.oam);
        assert_eq!(repr.vni, 300);
        let first = repr.option_iter().next().unwrap().unwrap();
        assert_eq!(first.data, &[0x11, 0x22, 0x33, 0x44]);
    }

    #[test]
    fn emit_rejects_bad_reprs_and_short_buffers() {
        let mut buf = [0u8; 16];
        let ok = GeneveRepr {
            oam: true,
            critical: false,
            protocol: 0x0800,
            vni: 1,
            options: &[],
        };
        let wide = GeneveRepr { vni: 1 << 24, ..ok };
        assert!(wide
            .emit(&mut GenevePacket::new_unchecked(&mut buf[..]))
            .is_err());
        let odd = GeneveRepr {
            options: &[0, 0, 0],
            ..ok
        };
        assert!(odd
            .emit(&mut GenevePacket::new_unchecked(&mut buf[..]))
            .is_err());
        let broken = GeneveRepr {
            options: &[0, 0, 0, 1],
            ..ok
        };
        assert!(broken
            .emit(&mut GenevePacket::new_unchecked(&mut buf[..]))
            .is_err());
        assert!(ok
            .emit(&mut GenevePacket::new_unchecked(&mut buf[..7]))
            .is_err());
        let one = GeneveRepr {
            options: &[0, 1, 2, 0],
            ..ok
        };
        assert!(one
            .emit(&mut GenevePacket::new_unchecked(&mut buf[..11]))
            .is_err());
        one.emit(&mut GenevePacket::new_unchecked(&mut buf[..12]))
            .unwrap();
        assert_eq!(&buf[..2], &[0x01, 0x80]);

        let too_long = GeneveOption {
            class: 0,
            kind: 0,
            data: &[0; 128],
        };
        assert!(too_long.emit(&mut [0u8; 256]).is_err());
        let odd = GeneveOption {
            class: 0,
            kind: 0,
            data: &[0; 2],
        };
        assert!(odd.emit(&mut [0u8; 8]).is_err());
        let big = GeneveOption {
            class: 0,
            kind: 0,
            data: &[0; 124],
        };
        // Three options of 128 bytes: 384 > 252.
        assert!(emit_options(&[big, big, big], &mut [0u8; 512]).is_err());
        assert!(emit_options(&[big], &mut [0u8; 127]).is_err());
        assert_eq!(emit_options(&[big], &mut [0u8; 128]), Ok(128));
    }

    #[test]
    fn display() {
        let repr = GeneveRepr::parse(&GenevePacket::new_checked(&OPTIONS[..]).unwrap()).unwrap();
        assert_eq!(
            repr.to_string(),
            "Geneve vni=300 proto=0x6558 options=24B C"
        );
        let oam = GeneveRepr {
            oam: true,
            critical: false,
            protocol: 0x0800,
            vni: 7,
            options: &[],
        };
        assert_eq!(oam.to_string(), "Geneve vni=7 proto=0x0800 O");
    }

    #[test]
    fn identity_option_round_trip() {
        use super::identity::{Identity, CLASS, LEN, TYPE};
        let id = Identity {
            group: 0x1234,
            applied: true,
        };
        let mut buf = [0xffu8; LEN];
        id.emit(&mut buf).unwrap();
        assert_eq!(buf, [0xff, 0xf0, 0x01, 0x01, 0x12, 0x34, 0x08, 0x00]);
        let option = GeneveOptions::new(&buf).next().unwrap().unwrap();
        assert_eq!((option.class, option.kind), (CLASS, TYPE));
        assert!(
            !option.critical(),
            "receivers that do not know it may skip it"
        );
        assert_eq!(Identity::find(&buf), Ok(Some(id)));
        let plain = Identity {
            group: 7,
            applied: false,
        };
        plain.emit(&mut buf).unwrap();
        assert_eq!(&buf[4..], &[0, 7, 0, 0]);
        assert_eq!(Identity::find(&buf), Ok(Some(plain)));
        assert!(id.emit(&mut [0u8; LEN - 1]).is_err());
    }

    #[test]
    fn identity_option_among_others() {
        use super::identity::Identity;
        // Unknown options before it are skipped; reserved bits are ignored.
        let mut bytes = [0u8; 28];
        bytes[..24].copy_from_slice(&OPTIONS[8..]);
        bytes[24..].copy_from_slice(&[0xff, 0xf0, 0x01, 0xe1]);
        assert_eq!(
            Identity::find(&bytes),
            Err(Error::truncated("geneve option", 8, 4)),
            "its data is missing"
        );
        let mut bytes = [0u8; 32];
        bytes[..24].copy_from_slice(&OPTIONS[8..]);
        bytes[24..].copy_from_slice(&[0xff, 0xf0, 0x01, 0xe1, 0, 10, 0xf7, 0xff]);
        let found = Identity::find(&bytes);
        assert_eq!(
            found,
            Ok(Some(Identity {
                group: 10,
                applied: false
            }))
        );
        // None there; the same class and type with the critical bit set is another option.
        assert_eq!(Identity::find(&OPTIONS[8..]), Ok(None));
        assert_eq!(Identity::find(&[]), Ok(None));
        bytes[26] = 0x81;
        assert_eq!(Identity::find(&bytes), Ok(None));
        // Of another length: refused, as is a list cut inside an option header.
        let long = [0xff, 0xf0, 0x01, 0x02, 0, 10, 0x08, 0, 0, 0, 0, 0];
        assert!(Identity::find(&long).is_err());
        assert!(Identity::find(&[0xff, 0xf0, 0x01, 0x01, 0, 10, 0x08]).is_err());
        assert!(Identity::find(&[0xff, 0xf0]).is_err());
    }
}
