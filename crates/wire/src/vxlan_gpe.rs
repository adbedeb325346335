//! VXLAN-GPE, the Generic Protocol Extension for VXLAN (draft-ietf-nvo3-vxlan-gpe-13).
//!
//! VXLAN-GPE reuses the eight bytes of the VXLAN header and gives meaning to bits VXLAN reserves:
//! a version, a Next Protocol field saying what follows (IPv4, IPv6, Ethernet, NSH, ...), and the
//! B (ingress-replicated BUM traffic) and O (OAM) flags. It runs on UDP port 4790
//! ([`crate::ports::VXLAN_GPE`]), never on VXLAN's 4789.
//!
//! ```text
//! draft-ietf-nvo3-vxlan-gpe-13 §3.1, VXLAN-GPE header:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |R|R|Ver|I|P|B|O|       Reserved                |Next Protocol  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                VXLAN Network Identifier (VNI) |   Reserved    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! What [`VxlanGpeRepr::parse`] accepts, and why:
//! - Version 0 only: §3.1 says a receiver that does not support the version MUST drop the packet.
//! - The I bit set: §3.1 says it MUST be set to indicate a valid VNI (as in RFC 7348).
//! - The P bit set: §3.2 says it MUST be 1 for the Next Protocol field to be present. A header with
//!   P clear is, by the same section, plain RFC 7348 VXLAN carrying Ethernet with Next Protocol 0;
//!   a caller that wants to accept it on port 4790 can read it with [`crate::vxlan::VxlanRepr`].
//! - The R bits and both Reserved fields are sent as zero and ignored on receipt (§3.1).
//! - An unknown Next Protocol is not an error: it parses as [`NextProtocol::Unknown`]. Dropping
//!   a payload nobody here understands is a forwarding decision for the caller, not a parse error.

use crate::field;
use crate::header::{header, numbered, write_flags};
use crate::{Error, Result};

/// Length of the VXLAN-GPE header.
pub const HEADER_LEN: usize = 8;

/// The only version the draft defines (§3.1: "The initial version is 0").
pub const VERSION: u8 = 0;

numbered! {
    /// What follows a VXLAN-GPE or NSH header.
    ///
    /// VXLAN-GPE (draft §3.2) and NSH (RFC 8300 §2.2, registry in §11.2) number their payloads
    /// the same way, so both modules share this type. MPLS (5) is in the NSH registry; the final
    /// VXLAN-GPE drafts dropped it, but earlier ones and OpenBSD use 5 for MPLS too. Every other
    /// value (0, the experimental 0xFE and 0xFF, unassigned ones) is [`NextProtocol::Unknown`]:
    /// `Unknown` only ever holds a value that has no variant of its own.
    pub enum NextProtocol {
        /// 0x1: an IPv4 packet.
        Ipv4 = 1 => "IPv4",
        /// 0x2: an IPv6 packet.
        Ipv6 = 2 => "IPv6",
        /// 0x3: an Ethernet frame.
        Ethernet = 3 => "Ethernet",
        /// 0x4: a Network Service Header (RFC 8300), see [`crate::nsh`].
        Nsh = 4 => "NSH",
        /// 0x5: an MPLS label stack.
        Mpls = 5 => "MPLS",
    }
    /// Any other value.
    Unknown(u8) => "{:#04x}";
}

header! {
    /// A read/write wrapper around a VXLAN-GPE header and its payload.
    pub struct VxlanGpePacket in layout, pub flags {
        /// The flags byte (R, Ver, I, P, B and O).
        FLAGS @ 0..1 => flags / set_flags: u8 {
            /// Ver: the two version bits.
            VERSION = 0x30 => version / set_version: u8;
            /// I: the VNI is valid (MUST be 1).
            I = 0x08 => vni_valid / set_vni_valid: bool;
            /// P: the Next Protocol field is present (MUST be 1).
            P = 0x04 => next_protocol_present / set_next_protocol_present: bool;
            /// B: the packet carries ingress-replicated broadcast, unknown-unicast or multicast
            /// traffic.
            B = 0x02 => bum / set_bum: bool;
            /// O: the packet is an OAM packet.
            O = 0x01 => oam / set_oam: bool;
        }
        /// The 16 reserved bits after the flags.
        RESERVED @ 1..3 => reserved: u16;
        /// The Next Protocol field (meaningful only when [`Self::next_protocol_present`]).
        NEXT_PROTOCOL @ 3..4 => next_protocol / set_next_protocol: NextProtocol;
        /// The 24-bit VXLAN Network Identifier.
        VNI @ 4..7 => vni / set_vni: u32;
        RESERVED_LOW @ 7..8;
    }
    /// Ensures that no accessor will panic.
    check_len("vxlan-gpe header", HEADER_LEN);
    /// What follows the header: an IPv4 or IPv6 packet, an Ethernet frame, an NSH, ...
    payload(at HEADER_LEN);
    /// Clears both Reserved fields.
    fn clear_reserved() zeroes RESERVED, RESERVED_LOW;
}

/// A high-level representation of a VXLAN-GPE header.
///
/// The I and P flags are implied: every header this type stands for has both set.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct VxlanGpeRepr {
    /// The 24-bit VNI.
    pub vni: u32,
    /// What follows the header.
    pub next_protocol: NextProtocol,
    /// O: the packet is an OAM packet.
    pub oam: bool,
    /// B: the packet is ingress-replicated broadcast, unknown-unicast or multicast traffic.
    pub bum: bool,
}

impl VxlanGpeRepr {
    /// Parses a checked packet; see the module documentation for what it rejects and why.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &VxlanGpePacket<&T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::invalid("vxlan-gpe version", packet.version().into()));
        }
        if !packet.vni_valid() {
            return Err(Error::invalid(
                "vxlan-gpe flags (I bit clear)",
                packet.flags().into(),
            ));
        }
        if !packet.next_protocol_present() {
            return Err(Error::invalid(
                "vxlan-gpe flags (P bit clear)",
                packet.flags().into(),
            ));
        }
        Ok(VxlanGpeRepr {
            vni: packet.vni(),
            next_protocol: packet.next_protocol(),
            oam: packet.oam(),
            bum: packet.bum(),
        })
    }

    /// Length of the header this representation emits.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (version 0, I and P set, reserved fields zero) into the first
    /// `buffer_len()` bytes of the packet.
    ///
    /// Fails (rather than truncating) when the VNI does not fit in 24 bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut VxlanGpePacket<T>) -> Result<()> {
        packet.check_len()?;
        field::check_u24("vxlan-gpe vni", self.vni)?;
        let mut f = flags::I | flags::P;
        if self.bum {
            f |= flags::B;
        }
        if self.oam {
            f |= flags::O;
        }
        packet.set_flags(f);
        packet.clear_reserved();
        packet.set_next_protocol(self.next_protocol);
        packet.set_vni(self.vni);
        Ok(())
    }
}

impl core::fmt::Display for VxlanGpeRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "VXLAN-GPE vni={} next={}", self.vni, self.next_protocol)?;
        write_flags(f, &[(self.bum, " B"), (self.oam, " O")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    // The draft has no example packet; these bytes follow §3.1 by hand and are cross-checked
    // against scapy's VXLAN-GPE layer in tests/vectors/vxlan_gpe.json (see crates/wire/tests/).
    static ETHERNET: [u8; 8] = [0x0c, 0x00, 0x00, 0x03, 0x0a, 0xbc, 0xde, 0x00];
    static NSH_OAM_BUM: [u8; 8] = [0x0f, 0x00, 0x00, 0x04, 0x00, 0x00, 0x2a, 0x00];

    #[test]
    fn deconstruct() {
        let p = VxlanGpePacket::new_checked(&ETHERNET[..]).unwrap();
        assert_eq!(p.version(), 0);
        assert!(p.vni_valid() && p.next_protocol_present());
        assert!(!p.bum() && !p.oam());
        assert_eq!(p.next_protocol(), NextProtocol::Ethernet);
        assert_eq!(p.vni(), 0x0abcde);
        assert!(p.payload().is_empty());

        let p = VxlanGpePacket::new_checked(&NSH_OAM_BUM[..]).unwrap();
        assert!(p.bum() && p.oam());
        assert_eq!(p.next_protocol(), NextProtocol::Nsh);
        assert_eq!(p.vni(), 42);
    }

    #[test]
    fn construct_and_emit() {
        let ethernet = VxlanGpeRepr {
            vni: 0x0abcde,
            next_protocol: NextProtocol::Ethernet,
            oam: false,
            bum: false,
        };
        let nsh_oam_bum = VxlanGpeRepr {
            vni: 42,
            next_protocol: NextProtocol::Nsh,
            oam: true,
            bum: true,
        };
        for (repr, bytes) in [(ethernet, ETHERNET), (nsh_oam_bum, NSH_OAM_BUM)] {
            let mut buf = [0xffu8; 8];
            repr.emit(&mut VxlanGpePacket::new_unchecked(&mut buf[..]))
                .unwrap();
            assert_eq!(buf, bytes);
        }
    }

    #[test]
    fn setters_touch_only_their_bits() {
        let mut buf = [0u8; 8];
        let mut p = VxlanGpePacket::new_unchecked(&mut buf[..]);
        p.set_version(3);
        p.set_oam(true);
        p.set_bum(true);
        assert_eq!(p.flags(), 0x33);
        p.set_version(1);
        p.set_oam(false);
        p.set_vni_valid(true);
        p.set_next_protocol_present(true);
        assert_eq!(p.flags(), 0x1e);
        assert_eq!(p.version(), 1);
    }

    #[test]
    fn parse_round_trip() {
        for bytes in [&ETHERNET, &NSH_OAM_BUM] {
            let repr =
                VxlanGpeRepr::parse(&VxlanGpePacket::new_checked(&bytes[..]).unwrap()).unwrap();
            let mut out = [0u8; 8];
            repr.emit(&mut VxlanGpePacket::new_unchecked(&mut out[..]))
                .unwrap();
            assert_eq!(&out, bytes);
        }
    }

    #[test]
    fn rejects_truncated_version_and_missing_flags() {
        assert_eq!(
            VxlanGpePacket::new_checked(&ETHERNET[..7]),
            Err(Error::truncated("vxlan-gpe header", 8, 7))
        );
        let parse = |b: [u8; 8]| VxlanGpeRepr::parse(&VxlanGpePacket::new_checked(&b[..]).unwrap());
        let mut v1 = ETHERNET;
        v1[0] |= 0x10;
        assert_eq!(parse(v1), Err(Error::invalid("vxlan-gpe version", 1)));
        let mut no_i = ETHERNET;
        no_i[0] &= !flags::I;
        assert_eq!(
            parse(no_i),
            Err(Error::invalid("vxlan-gpe flags (I bit clear)", 0x04))
        );
        let mut no_p = ETHERNET;
        no_p[0] &= !flags::P;
        assert_eq!(
            parse(no_p),
            Err(Error::invalid("vxlan-gpe flags (P bit clear)", 0x08))
        );
    }

    #[test]
    fn reserved_bits_ignored_and_unknown_protocol_kept() {
        let mut b = ETHERNET;
        b[0] |= 0xc0; // both R bits
        b[1] = 0xff;
        b[2] = 0xff;
        b[3] = 0xfe; // Experiment 1
        b[7] = 0xff;
        let repr = VxlanGpeRepr::parse(&VxlanGpePacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            VxlanGpeRepr {
                vni: 0x0abcde,
                next_protocol: NextProtocol::Unknown(0xfe),
                oam: false,
                bum: false
            }
        );
    }

    #[test]
    fn next_protocol_numbers() {
        for n in 0..=255u8 {
            let p = NextProtocol::from(n);
            assert_eq!(u8::from(p), n);
            assert_eq!(matches!(p, NextProtocol::Unknown(_)), !(1..=5).contains(&n));
        }
        assert_eq!(NextProtocol::from(5), NextProtocol::Mpls);
    }

    #[test]
    fn emit_rejects_wide_vni_and_short_buffer() {
        let mut buf = [0u8; 8];
        let mut repr = VxlanGpeRepr {
            vni: 1 << 24,
            next_protocol: NextProtocol::Ipv4,
            oam: false,
            bum: false,
        };
        assert_eq!(
            repr.emit(&mut VxlanGpePacket::new_unchecked(&mut buf[..])),
            Err(Error::invalid("vxlan-gpe vni", 1 << 24))
        );
        repr.vni = 1;
        assert!(repr
            .emit(&mut VxlanGpePacket::new_unchecked(&mut buf[..4]))
            .is_err());
    }

    #[test]
    fn display() {
        let repr = VxlanGpeRepr {
            vni: 9,
            next_protocol: NextProtocol::Ethernet,
            oam: true,
            bum: false,
        };
        assert_eq!(repr.to_string(), "VXLAN-GPE vni=9 next=Ethernet O");
        let repr = VxlanGpeRepr {
            vni: 1,
            next_protocol: NextProtocol::Unknown(0x7e),
            oam: false,
            bum: true,
        };
        assert_eq!(repr.to_string(), "VXLAN-GPE vni=1 next=0x7e B");
    }
}
