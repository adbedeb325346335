//! VXLAN (RFC 7348) with the Group Based Policy extension (draft-smith-vxlan-group-policy-05).
//!
//! The same eight bytes carry both: plain VXLAN leaves everything but the I flag and the VNI
//! reserved, and VXLAN-GBP gives meaning to the G, D and A bits and to the 16 bits after the flags.
//! A packet with the G bit clear parses with `gbp: None`; one with it set carries a [`Gbp`].
//!
//! ```text
//! RFC 7348 §5, VXLAN header:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |R|R|R|R|I|R|R|R|            Reserved                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                VXLAN Network Identifier (VNI) |   Reserved    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! draft-smith-vxlan-group-policy-05 §2.1, VXLAN-GBP header:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |G|R|R|R|I|R|R|R|R|D|R|R|A|R|R|R|        Group Policy ID        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          VXLAN Network Identifier (VNI)       |   Reserved    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! RFC 7348 §5: the I flag MUST be 1; reserved bits are sent as zero and ignored on receipt.
//! A header without the I flag therefore does not parse.

use crate::field;
use crate::header::{header, write_flags};
use crate::{Error, Result};

/// Length of the VXLAN header.
pub const HEADER_LEN: usize = 8;

/// Bytes VXLAN adds around a tenant's IP packet, which is what a tenant MTU is measured on:
/// outer IP (20 or 40), UDP (8), VXLAN (8) and the inner Ethernet header (14) — 50 over an IPv4
/// underlay, 70 over IPv6 (RFC 7348 §4.3 asks for an underlay MTU that leaves room for them).
pub const fn overhead(ipv6_underlay: bool) -> u16 {
    let outer_ip = if ipv6_underlay { 40 } else { 20 };
    outer_ip + 8 + HEADER_LEN as u16 + 14
}

header! {
    /// A read/write wrapper around a VXLAN header and its payload.
    pub struct VxlanPacket in layout, pub flags {
        /// The first flags byte (G and I bits).
        FLAGS @ 0..1 => flags / set_flags: u8 {
            /// G: a Group Policy ID is present (GBP).
            G = 0x80 => gbp: bool;
            /// I: the VNI is valid (RFC 7348: MUST be 1).
            I = 0x08 => vni_valid: bool;
        }
        /// The second flags byte (D and A bits in GBP, reserved otherwise).
        GBP_FLAGS @ 1..2 => gbp_flags / set_gbp_flags: u8 {
            /// D: the receiver must not learn the inner source address (GBP).
            D = 0x40 => dont_learn: bool;
            /// A: policy has already been applied to this packet (GBP).
            A = 0x08 => policy_applied: bool;
        }
        /// The 16-bit Group Policy ID (GBP; reserved in plain VXLAN).
        GROUP_POLICY_ID @ 2..4 => group_policy_id / set_group_policy_id: u16;
        /// The 24-bit VXLAN Network Identifier.
        VNI @ 4..7 => vni / set_vni: u32;
        RESERVED @ 7..8;
    }
    /// Ensures that no accessor will panic.
    check_len("vxlan header", HEADER_LEN);
    /// The encapsulated Ethernet frame.
    payload(at HEADER_LEN);
    /// Clears the reserved byte after the VNI.
    fn clear_reserved() zeroes RESERVED;
}

/// The Group Based Policy part of a VXLAN-GBP header.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Default)]
pub struct Gbp {
    /// D: do not learn the inner source address.
    pub dont_learn: bool,
    /// A: policy has already been applied.
    pub policy_applied: bool,
    /// The sender's group (identity) of the inner source.
    pub group_policy_id: u16,
}

/// A high-level representation of a VXLAN header.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct VxlanRepr {
    /// The 24-bit VNI.
    pub vni: u32,
    /// The Group Based Policy extension, present when the G bit is set.
    pub gbp: Option<Gbp>,
}

impl VxlanRepr {
    /// Parses a checked packet. Reserved bits are ignored, as RFC 7348 §5 requires.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &VxlanPacket<&T>) -> Result<Self> {
        packet.check_len()?;
        if !packet.vni_valid() {
            return Err(Error::invalid(
                "vxlan flags (I bit clear)",
                packet.flags().into(),
            ));
        }
        let gbp = packet.gbp().then(|| Gbp {
            dont_learn: packet.dont_learn(),
            policy_applied: packet.policy_applied(),
            group_policy_id: packet.group_policy_id(),
        });
        Ok(VxlanRepr {
            vni: packet.vni(),
            gbp,
        })
    }

    /// Length of the header this representation emits.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first `buffer_len()` bytes of the packet.
    ///
    /// Fails (rather than truncating) when the VNI does not fit in 24 bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut VxlanPacket<T>) -> Result<()> {
        packet.check_len()?;
        field::check_u24("vxlan vni", self.vni)?;
        match self.gbp {
            None => {
                packet.set_flags(flags::I);
                packet.set_gbp_flags(0);
                packet.set_group_policy_id(0);
            }
            Some(gbp) => {
                packet.set_flags(flags::G | flags::I);
                let mut f = 0;
                if gbp.dont_learn {
                    f |= flags::D;
                }
                if gbp.policy_applied {
                    f |= flags::A;
                }
                packet.set_gbp_flags(f);
                packet.set_group_policy_id(gbp.group_policy_id);
            }
        }
        packet.set_vni(self.vni);
        packet.clear_reserved();
        Ok(())
    }
}

impl core::fmt::Display for VxlanRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "VXLAN vni={}", self.vni)?;
        if let Some(g) = self.gbp {
            write!(f, " gbp group={}", g.group_policy_id)?;
            write_flags(f, &[(g.dont_learn, " D"), (g.policy_applied, " A")])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7348 has no example packet; these bytes follow §5 by hand and are cross-checked
    // against scapy's VXLAN layer in tests/vectors/vxlan.json (see crates/wire/tests/).
    static PLAIN: [u8; 8] = [0x08, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x00];
    static GBP: [u8; 8] = [0x88, 0x48, 0xbe, 0xef, 0x00, 0x00, 0x2a, 0x00];

    #[test]
    fn deconstruct_plain() {
        let p = VxlanPacket::new_checked(&PLAIN[..]).unwrap();
        assert!(p.vni_valid());
        assert!(!p.gbp());
        assert_eq!(p.vni(), 0x123456);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn deconstruct_gbp() {
        let p = VxlanPacket::new_checked(&GBP[..]).unwrap();
        assert!(p.gbp() && p.dont_learn() && p.policy_applied());
        assert_eq!(p.group_policy_id(), 0xbeef);
        assert_eq!(p.vni(), 42);
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = [0xffu8; 8];
        let repr = VxlanRepr {
            vni: 0x123456,
            gbp: None,
        };
        repr.emit(&mut VxlanPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, PLAIN);
        let repr = VxlanRepr {
            vni: 42,
            gbp: Some(Gbp {
                dont_learn: true,
                policy_applied: true,
                group_policy_id: 0xbeef,
            }),
        };
        repr.emit(&mut VxlanPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, GBP);
    }

    #[test]
    fn parse_round_trip() {
        for bytes in [&PLAIN, &GBP] {
            let repr = VxlanRepr::parse(&VxlanPacket::new_checked(&bytes[..]).unwrap()).unwrap();
            let mut out = [0u8; 8];
            repr.emit(&mut VxlanPacket::new_unchecked(&mut out[..]))
                .unwrap();
            assert_eq!(&out, bytes);
        }
    }

    #[test]
    fn rejects_truncated_and_missing_i_flag() {
        assert_eq!(
            VxlanPacket::new_checked(&PLAIN[..7]),
            Err(Error::truncated("vxlan header", 8, 7))
        );
        let mut no_i = PLAIN;
        no_i[0] = 0;
        let p = VxlanPacket::new_checked(&no_i[..]).unwrap();
        assert!(matches!(VxlanRepr::parse(&p), Err(Error::Invalid { .. })));
    }

    #[test]
    fn reserved_bits_ignored_on_receipt() {
        let mut b = PLAIN;
        b[0] |= 0x77; // every reserved bit of the first byte except G
        b[3] = 0xff;
        b[7] = 0xff;
        let repr = VxlanRepr::parse(&VxlanPacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            VxlanRepr {
                vni: 0x123456,
                gbp: None
            }
        );
    }

    #[test]
    fn overhead_over_each_underlay() {
        assert_eq!((overhead(false), overhead(true)), (50, 70));
    }

    #[test]
    fn emit_rejects_wide_vni_and_short_buffer() {
        let mut buf = [0u8; 8];
        let wide = VxlanRepr {
            vni: 1 << 24,
            gbp: None,
        };
        assert!(wide
            .emit(&mut VxlanPacket::new_unchecked(&mut buf[..]))
            .is_err());
        let ok = VxlanRepr { vni: 1, gbp: None };
        assert!(ok
            .emit(&mut VxlanPacket::new_unchecked(&mut buf[..4]))
            .is_err());
    }
}
