//! Identifier-Locator Addressing (ILA) for IPv6, draft-herbert-intarea-ila-01.
//!
//! ILA adds no header: it gives structure to an IPv6 address. The upper 64 bits say where a node
//! is, the lower 64 bits who it is. Applications only see SIR addresses (Standard Identifier
//! Representation: a SIR prefix and the identifier); on the way into the ILA domain a translator
//! overwrites the SIR prefix with the locator of the node's current location ([`sir_to_ila`]),
//! and on the way out it puts the SIR prefix back ([`ila_to_sir`]). Nothing else in the packet
//! changes, so the network sees ordinary IPv6 (ECMP, RSS, GRO and GSO keep working).
//!
//! ```text
//! draft-herbert-intarea-ila-01, an ILA (or SIR) address; the identifier format is the one the
//! draft's author documents for Linux (Documentation/networking/ila.rst, "Identifier formats"):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Locator (or SIR prefix)                    |
//! +                                                               +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Type|C|                    Identifier                         |
//! +-+-+-+-+                       +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |  Checksum-neutral adjustment  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Type (3 bits) says what kind of identifier this is ([`IdentifierType`]); C says that
//! checksum-neutral mapping has been applied, so it is never set in a SIR address. Both fields
//! are optional (ila.rst, same section): an identifier may be an unformatted 64-bit number.
//! This module reads them when asked ([`Identifier::kind`], [`Identifier::checksum_neutral`])
//! and only relies on the C bit in [`ChecksumMode::NeutralMap`], the mode that says it is there.
//!
//! # Transport checksums
//!
//! TCP, UDP and ICMPv6 checksums cover both addresses (RFC 8200 §8.1), so rewriting a prefix
//! breaks them. [`ChecksumMode`] chooses what to do about it. The preferred answer is
//! checksum-neutral mapping: the translator also changes the low-order 16 bits of the identifier
//! by the opposite of what the prefix (and the C bit) added to the one's complement sum of the
//! address, which therefore does not change, and neither does any checksum over it. The
//! transport header is never read. [`ila_to_sir`] undoes the adjustment.
//!
//! One's complement has two zeros (0x0000 and 0xffff), so the 65536 values of the adjustment
//! field fall into 65535 classes and one pair of SIR addresses (low 16 bits 0x0000 and 0xffff,
//! all else equal) maps to the same ILA address: no translator can give both back. Like Linux
//! (`~csum_fold()` in net/ipv6/ila/ila_common.c), [`sir_to_ila`] writes a zero sum as 0xffff,
//! so nvo's ILA addresses are bit-for-bit the kernel's; [`ila_to_sir`] writes it as 0x0000,
//! where Linux writes 0xffff. So a SIR identifier ending in 0x0000 comes back unchanged (with
//! Linux it would come back as ...ffff, which its host does not own), and only one ending in
//! 0xffff comes back as 0x0000: the same one's complement number, so checksums still verify.
//!
//! The one's complement arithmetic is smoltcp's ([`checksum::combine`]), as in the rest of nvo.

use core::fmt;

use crate::field::{self, Field};
use crate::header::numbered;
use crate::std_wire::{checksum, Ipv6Address};
use crate::{Error, Result};

mod fields {
    use super::Field;
    pub const LOCATOR: Field = 0..8;
    pub const IDENTIFIER: Field = 8..16;
}

numbered! {
    /// What an identifier identifies: the Type field, the three high-order bits of an
    /// identifier. The values are Linux's `ILA_ATYPE_*` (include/uapi/linux/ila.h) and ila.rst's
    /// list.
    pub enum IdentifierType {
        /// 0: an interface identifier; the address is not an ILA address (Linux refuses ILA
        /// routes for it).
        InterfaceId = 0,
        /// 1: a locally unique identifier (LUID), a generic unformatted identifier.
        LocallyUnique = 1,
        /// 2: a virtual networking identifier for an IPv4 address.
        VirtualNetworkV4 = 2,
        /// 3: a virtual networking identifier for an IPv6 unicast address.
        VirtualNetworkV6Unicast = 3,
        /// 4: a virtual networking identifier for an IPv6 multicast address.
        VirtualNetworkV6Multicast = 4,
        /// 5: a non-local address identifier.
        NonLocalAddress = 5,
    }
    /// 6 and 7 are reserved; any other value cannot appear in the 3-bit field.
    Reserved(u8);
}

/// A 64-bit ILA identifier, the low half of an ILA or SIR address.
///
/// Every 64-bit value is an identifier (the Type and C fields are optional); the accessors read
/// them as if present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Identifier(u64);

impl Identifier {
    const TYPE_SHIFT: u32 = 61;
    /// The C bit: checksum-neutral mapping has been applied (Linux `CSUM_NEUTRAL_FLAG`).
    pub const C_BIT: u64 = 1 << 60;
    /// The bits after Type and C.
    pub const VALUE_MASK: u64 = Self::C_BIT - 1;
    /// Largest type value the 3-bit field holds.
    pub const TYPE_MAX: u8 = 7;

    /// An identifier from its 64 bits, formatted or not.
    pub const fn from_bits(bits: u64) -> Self {
        Identifier(bits)
    }

    /// A formatted identifier of type `kind` with the C bit clear, as in a SIR address.
    ///
    /// Fails when `kind` does not fit in three bits or `value` in sixty.
    pub fn new(kind: IdentifierType, value: u64) -> Result<Self> {
        let kind = u8::from(kind);
        if kind > Self::TYPE_MAX {
            return Err(Error::invalid("ila identifier type", kind.into()));
        }
        if value > Self::VALUE_MASK {
            return Err(Error::invalid("ila identifier value (over 60 bits)", value));
        }
        Ok(Identifier((u64::from(kind) << Self::TYPE_SHIFT) | value))
    }

    /// All 64 bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The Type field.
    pub fn kind(self) -> IdentifierType {
        // The shift leaves three bits: the cast cannot truncate.
        IdentifierType::from((self.0 >> Self::TYPE_SHIFT) as u8)
    }

    /// The C bit: this identifier went through checksum-neutral mapping.
    pub const fn checksum_neutral(self) -> bool {
        self.0 & Self::C_BIT != 0
    }

    /// The identifier without its Type and C fields (the low 60 bits).
    pub const fn value(self) -> u64 {
        self.0 & Self::VALUE_MASK
    }

    /// The low-order 16 bits, where checksum-neutral mapping writes its adjustment.
    pub const fn adjustment(self) -> u16 {
        self.0 as u16
    }

    /// The same identifier with the C bit set or cleared.
    pub const fn with_checksum_neutral(self, set: bool) -> Self {
        if set {
            Identifier(self.0 | Self::C_BIT)
        } else {
            Identifier(self.0 & !Self::C_BIT)
        }
    }

    /// The same identifier with other low-order 16 bits.
    pub const fn with_adjustment(self, adjustment: u16) -> Self {
        Identifier((self.0 & !0xffff) | adjustment as u64)
    }
}

impl fmt::Display for Identifier {
    /// Four groups of hex digits, the notation of `ip ila` for the halves of an address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_half(f, self.0)
    }
}

fn write_half(f: &mut fmt::Formatter<'_>, half: u64) -> fmt::Result {
    let w = words(half);
    write!(f, "{:x}:{:x}:{:x}:{:x}", w[0], w[1], w[2], w[3])
}

/// The four big-endian 16-bit words of a prefix or identifier, as the checksum sees them.
const fn words(half: u64) -> [u16; 4] {
    [
        (half >> 48) as u16,
        (half >> 32) as u16,
        (half >> 16) as u16,
        half as u16,
    ]
}

/// An IPv6 address seen as a locator (or SIR prefix) and an identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct IlaAddress(pub [u8; 16]);

impl IlaAddress {
    /// The address made of `locator` (upper 64 bits) and `identifier` (lower 64 bits).
    pub fn from_parts(locator: u64, identifier: Identifier) -> Self {
        let mut a = IlaAddress([0; 16]);
        a.set_locator(locator);
        a.set_identifier(identifier);
        a
    }

    /// The upper 64 bits: the locator of an ILA address, the SIR prefix of a SIR address.
    pub fn locator(&self) -> u64 {
        field::read_u64(&self.0[fields::LOCATOR])
    }

    /// The lower 64 bits.
    pub fn identifier(&self) -> Identifier {
        Identifier(field::read_u64(&self.0[fields::IDENTIFIER]))
    }

    /// Overwrites the upper 64 bits.
    pub fn set_locator(&mut self, locator: u64) {
        field::write_u64(&mut self.0[fields::LOCATOR], locator);
    }

    /// Overwrites the lower 64 bits.
    pub fn set_identifier(&mut self, identifier: Identifier) {
        field::write_u64(&mut self.0[fields::IDENTIFIER], identifier.0);
    }

    /// The same address as an [`Ipv6Address`].
    pub fn address(&self) -> Ipv6Address {
        Ipv6Address::from(self.0)
    }
}

impl From<Ipv6Address> for IlaAddress {
    fn from(addr: Ipv6Address) -> Self {
        IlaAddress(addr.octets())
    }
}

impl From<IlaAddress> for Ipv6Address {
    fn from(addr: IlaAddress) -> Self {
        addr.address()
    }
}

impl From<[u8; 16]> for IlaAddress {
    fn from(octets: [u8; 16]) -> Self {
        IlaAddress(octets)
    }
}

impl fmt::Display for IlaAddress {
    /// `locator:identifier`, each as four groups, never compressed: the split stays visible
    /// and the text still parses as the same IPv6 address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_half(f, self.locator())?;
        f.write_str(":")?;
        write_half(f, self.identifier().0)
    }
}

/// How a translation keeps transport checksums right (Linux `ILA_CSUM_*`, the draft's three
/// methods plus Linux's variant without the C bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumMode {
    /// Leave checksums wrong on the wire; the receiver translates back before it checks them.
    NoAction,
    /// Checksum-neutral mapping with the C bit: the low 16 bits of the identifier absorb the
    /// change and the C bit records it. SIR addresses must have C clear; an ILA address with C
    /// clear is translated back without adjustment (the sender did not map it), as Linux does.
    NeutralMap,
    /// Checksum-neutral mapping without the C bit (Linux `neutral-map-auto`): both ends know
    /// from configuration that every address of this mapping is adjusted.
    NeutralMapAuto,
    /// The addresses change alone; the caller fixes the transport checksum with
    /// [`checksum_delta`] and [`adjust_checksum`] (or [`adjust_udp_checksum`]).
    AdjustTransport,
}

/// The C bit as a 16-bit word of the address sum: the first word of the identifier.
const C_WORD: u16 = (Identifier::C_BIT >> 48) as u16;

/// Translates a SIR address into an ILA address: `sir_prefix` is replaced by `locator`.
///
/// Fails when the address does not start with `sir_prefix`, and in
/// [`ChecksumMode::NeutralMap`] when its C bit is already set: the C bit is never set in a SIR
/// address, and mapping again would make the translation back ambiguous (Linux warns and
/// refuses to adjust such an address).
pub fn sir_to_ila(
    addr: Ipv6Address,
    sir_prefix: u64,
    locator: u64,
    mode: ChecksumMode,
) -> Result<IlaAddress> {
    let sir = IlaAddress::from(addr);
    if sir.locator() != sir_prefix {
        return Err(Error::invalid(
            "ila sir prefix (address has another)",
            sir.locator(),
        ));
    }
    let id = sir.identifier();
    // The adjustment takes away what the new prefix adds to the address sum:
    // sir_prefix - locator, and in NeutralMap also the C bit it sets.
    let neutral = checksum_delta(locator, sir_prefix);
    let id = match mode {
        ChecksumMode::NoAction | ChecksumMode::AdjustTransport => id,
        ChecksumMode::NeutralMap => {
            if id.checksum_neutral() {
                return Err(Error::invalid(
                    "ila identifier (C bit set in a SIR address)",
                    id.0,
                ));
            }
            let adj = checksum::combine(&[id.adjustment(), neutral, !C_WORD]);
            id.with_checksum_neutral(true).with_adjustment(adj)
        }
        ChecksumMode::NeutralMapAuto => {
            id.with_adjustment(checksum::combine(&[id.adjustment(), neutral]))
        }
    };
    Ok(IlaAddress::from_parts(locator, id))
}

/// Translates an ILA address back into its SIR address: `locator` is replaced by `sir_prefix`.
///
/// Fails when the address does not start with `locator`. With [`ChecksumMode::NeutralMap`] an
/// address whose C bit is clear was not mapped and only has its prefix replaced.
pub fn ila_to_sir(
    addr: IlaAddress,
    locator: u64,
    sir_prefix: u64,
    mode: ChecksumMode,
) -> Result<Ipv6Address> {
    if addr.locator() != locator {
        return Err(Error::invalid(
            "ila locator (address has another)",
            addr.locator(),
        ));
    }
    let id = addr.identifier();
    // The reverse of sir_to_ila: give back locator - sir_prefix (and the C bit).
    let neutral = checksum_delta(sir_prefix, locator);
    let id = match mode {
        ChecksumMode::NoAction | ChecksumMode::AdjustTransport => id,
        ChecksumMode::NeutralMap if !id.checksum_neutral() => id,
        ChecksumMode::NeutralMap => {
            let adj = checksum::combine(&[id.adjustment(), neutral, C_WORD]);
            id.with_checksum_neutral(false)
                .with_adjustment(positive_zero(adj))
        }
        ChecksumMode::NeutralMapAuto => {
            let adj = checksum::combine(&[id.adjustment(), neutral]);
            id.with_adjustment(positive_zero(adj))
        }
    };
    Ok(IlaAddress::from_parts(sir_prefix, id).address())
}

/// Writes a one's complement zero as 0x0000 rather than 0xffff (see the module documentation).
const fn positive_zero(word: u16) -> u16 {
    if word == 0xffff {
        0
    } else {
        word
    }
}

/// The one's complement difference `new_prefix - old_prefix` of the two address halves, the
/// `~m + m'` of RFC 1624 §3.
///
/// For [`ChecksumMode::AdjustTransport`]: after [`sir_to_ila`] the transport checksum needs
/// `checksum_delta(sir_prefix, locator)`, after [`ila_to_sir`] `checksum_delta(locator,
/// sir_prefix)`, applied with [`adjust_checksum`] or [`adjust_udp_checksum`]. When both source
/// and destination are translated, apply one delta per address.
pub fn checksum_delta(old_prefix: u64, new_prefix: u64) -> u16 {
    let o = words(old_prefix);
    let n = words(new_prefix);
    checksum::combine(&[!o[0], !o[1], !o[2], !o[3], n[0], n[1], n[2], n[3]])
}

/// A TCP or ICMPv6 checksum updated for data whose sum changed by `delta`: RFC 1624 §3
/// equation 3, `HC' = ~(~HC + ~m + m')`, which gives what a computation from scratch gives
/// (RFC 1624 §3 shows where RFC 1141's older formula does not).
pub fn adjust_checksum(checksum: u16, delta: u16) -> u16 {
    !checksum::combine(&[!checksum, delta])
}

/// A UDP checksum updated like [`adjust_checksum`], with UDP's two special cases: zero means the
/// sender computed no checksum and stays zero (RFC 768; allowed over IPv6 only for tunnels,
/// RFC 6936), and a computed zero is sent as 0xffff (RFC 768, RFC 8200 §8.1).
pub fn adjust_udp_checksum(checksum: u16, delta: u16) -> u16 {
    if checksum == 0 {
        return 0;
    }
    match adjust_checksum(checksum, delta) {
        0 => 0xffff,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first example of Linux's Documentation/networking/ila.rst:
    /// `ip route add 3333:0:0:1:2000:0:1:87/128 encap ila 2001:0:87:0 csum-mode neutral-map
    /// ident-type use-format` ("the 2000 implies type is 1 which is LUID").
    const SIR_PREFIX: u64 = 0x3333_0000_0000_0001;
    const LOCATOR: u64 = 0x2001_0000_0087_0000;
    const SIR: Ipv6Address = Ipv6Address::new(0x3333, 0, 0, 1, 0x2000, 0, 1, 0x87);
    // By hand: the prefix words sum to 0x3334, the locator's to 0x2088, so the adjustment is
    // 0x0087 + 0x3334 - 0x2088 - 0x1000 (the C bit) = 0x0333.
    const ILA: Ipv6Address = Ipv6Address::new(0x2001, 0, 0x87, 0, 0x3000, 0, 1, 0x0333);

    fn sum(a: Ipv6Address) -> u16 {
        checksum::data(&a.octets())
    }

    #[test]
    fn deconstruct_kernel_example() {
        let a = IlaAddress::from(SIR);
        assert_eq!(a.locator(), SIR_PREFIX);
        let id = a.identifier();
        assert_eq!(id.bits(), 0x2000_0000_0001_0087);
        assert_eq!(id.kind(), IdentifierType::LocallyUnique);
        assert!(!id.checksum_neutral());
        assert_eq!(id.value(), 0x0000_0000_0001_0087);
        assert_eq!(id.adjustment(), 0x0087);
        let ila = IlaAddress::from(ILA).identifier();
        assert!(ila.checksum_neutral());
        assert_eq!(ila.kind(), IdentifierType::LocallyUnique);
    }

    #[test]
    fn neutral_map_matches_hand_computation_and_reverses() {
        let ila = sir_to_ila(SIR, SIR_PREFIX, LOCATOR, ChecksumMode::NeutralMap).unwrap();
        assert_eq!(ila.address(), ILA);
        assert_eq!(sum(ILA), sum(SIR));
        let back = ila_to_sir(ila, LOCATOR, SIR_PREFIX, ChecksumMode::NeutralMap).unwrap();
        assert_eq!(back, SIR);
    }

    #[test]
    fn neutral_map_auto_leaves_c_clear() {
        let ila = sir_to_ila(SIR, SIR_PREFIX, LOCATOR, ChecksumMode::NeutralMapAuto).unwrap();
        // 0x0087 + 0x3334 - 0x2088 = 0x1333, no C bit.
        assert_eq!(
            ila.address(),
            Ipv6Address::new(0x2001, 0, 0x87, 0, 0x2000, 0, 1, 0x1333)
        );
        assert_eq!(sum(ila.address()), sum(SIR));
        let back = ila_to_sir(ila, LOCATOR, SIR_PREFIX, ChecksumMode::NeutralMapAuto).unwrap();
        assert_eq!(back, SIR);
    }

    #[test]
    fn no_action_and_adjust_transport_only_swap_the_prefix() {
        for mode in [ChecksumMode::NoAction, ChecksumMode::AdjustTransport] {
            let ila = sir_to_ila(SIR, SIR_PREFIX, LOCATOR, mode).unwrap();
            assert_eq!(
                ila.address(),
                Ipv6Address::new(0x2001, 0, 0x87, 0, 0x2000, 0, 1, 0x87)
            );
            assert_eq!(ila_to_sir(ila, LOCATOR, SIR_PREFIX, mode).unwrap(), SIR);
        }
    }

    #[test]
    fn neutral_map_back_without_c_bit_is_not_adjusted() {
        let plain = sir_to_ila(SIR, SIR_PREFIX, LOCATOR, ChecksumMode::NoAction).unwrap();
        let back = ila_to_sir(plain, LOCATOR, SIR_PREFIX, ChecksumMode::NeutralMap).unwrap();
        assert_eq!(back, SIR);
    }

    #[test]
    fn rejects_wrong_prefix_and_c_bit_in_sir() {
        assert_eq!(
            sir_to_ila(SIR, LOCATOR, SIR_PREFIX, ChecksumMode::NoAction),
            Err(Error::invalid(
                "ila sir prefix (address has another)",
                SIR_PREFIX
            ))
        );
        assert_eq!(
            ila_to_sir(
                IlaAddress::from(ILA),
                SIR_PREFIX,
                LOCATOR,
                ChecksumMode::NeutralMap
            ),
            Err(Error::invalid("ila locator (address has another)", LOCATOR))
        );
        let with_c = Ipv6Address::new(0x3333, 0, 0, 1, 0x3000, 0, 1, 0x87);
        assert_eq!(
            sir_to_ila(with_c, SIR_PREFIX, LOCATOR, ChecksumMode::NeutralMap),
            Err(Error::invalid(
                "ila identifier (C bit set in a SIR address)",
                0x3000_0000_0001_0087
            ))
        );
        // Without checksum-neutral mapping the C bit is just a bit.
        assert!(sir_to_ila(with_c, SIR_PREFIX, LOCATOR, ChecksumMode::NoAction).is_ok());
    }

    #[test]
    fn the_two_zeros() {
        // 0x0000 survives the round trip; 0xffff, the same one's complement number, comes back
        // as 0x0000 (see the module documentation).
        for mode in [ChecksumMode::NeutralMap, ChecksumMode::NeutralMapAuto] {
            let zero = Ipv6Address::new(0x3333, 0, 0, 1, 0x2000, 0, 1, 0);
            let ila = sir_to_ila(zero, SIR_PREFIX, LOCATOR, mode).unwrap();
            assert_eq!(ila_to_sir(ila, LOCATOR, SIR_PREFIX, mode).unwrap(), zero);
            let minus_zero = Ipv6Address::new(0x3333, 0, 0, 1, 0x2000, 0, 1, 0xffff);
            let ila2 = sir_to_ila(minus_zero, SIR_PREFIX, LOCATOR, mode).unwrap();
            assert_eq!(ila2, ila, "both zeros map to one ILA address");
            assert_eq!(ila_to_sir(ila2, LOCATOR, SIR_PREFIX, mode).unwrap(), zero);
        }
        // Like Linux, the SIR-to-ILA direction writes a zero sum as 0xffff. Here the prefix
        // stays the same and setting C adds 0x1000, so the adjustment 0x1000 drops to zero.
        let sir = Ipv6Address::new(0, 0, 0, 0, 0, 0, 0, 0x1000);
        let ila = sir_to_ila(sir, 0, 0, ChecksumMode::NeutralMap).unwrap();
        assert_eq!(
            ila.address(),
            Ipv6Address::new(0, 0, 0, 0, 0x1000, 0, 0, 0xffff)
        );
        assert_eq!(
            ila_to_sir(ila, 0, 0, ChecksumMode::NeutralMap).unwrap(),
            sir
        );
    }

    #[test]
    fn identifier_fields() {
        let id = Identifier::new(IdentifierType::VirtualNetworkV6Multicast, 0x0abc_def0).unwrap();
        assert_eq!(id.bits(), 0x8000_0000_0abc_def0);
        assert_eq!(id.kind(), IdentifierType::VirtualNetworkV6Multicast);
        assert!(!id.checksum_neutral());
        let c = id.with_checksum_neutral(true);
        assert_eq!(c.bits(), 0x9000_0000_0abc_def0);
        assert_eq!(c.value(), 0x0abc_def0);
        assert_eq!(c.with_checksum_neutral(false), id);
        assert_eq!(c.with_adjustment(0x1234).bits(), 0x9000_0000_0abc_1234);
        assert!(Identifier::new(IdentifierType::Reserved(8), 0).is_err());
        assert!(Identifier::new(IdentifierType::LocallyUnique, Identifier::C_BIT).is_err());
        assert_eq!(
            Identifier::new(IdentifierType::Reserved(7), Identifier::VALUE_MASK)
                .unwrap()
                .bits(),
            0xefff_ffff_ffff_ffff
        );
    }

    #[test]
    fn identifier_types_round_trip() {
        for n in 0..=7u8 {
            let t = IdentifierType::from(n);
            assert_eq!(u8::from(t), n);
            assert_eq!(Identifier::from_bits(u64::from(n) << 61).kind(), t);
        }
        assert_eq!(IdentifierType::from(0), IdentifierType::InterfaceId);
        assert_eq!(IdentifierType::from(5), IdentifierType::NonLocalAddress);
        assert_eq!(IdentifierType::from(6), IdentifierType::Reserved(6));
    }

    #[test]
    fn display_shows_locator_and_identifier() {
        use std::string::ToString;
        let a = IlaAddress::from(ILA);
        assert_eq!(a.to_string(), "2001:0:87:0:3000:0:1:333");
        assert_eq!(a.identifier().to_string(), "3000:0:1:333");
        let text = a.to_string();
        assert_eq!(text.parse::<Ipv6Address>().unwrap(), ILA);
    }

    #[test]
    fn adjust_transport_matches_a_recomputed_sum() {
        // A checksum over the address alone: ~sum. After the prefix changes, adjusting it must
        // give ~sum of the new address.
        let before = !sum(SIR);
        let ila = sir_to_ila(SIR, SIR_PREFIX, LOCATOR, ChecksumMode::AdjustTransport).unwrap();
        let after = adjust_checksum(before, checksum_delta(SIR_PREFIX, LOCATOR));
        assert_eq!(after, !sum(ila.address()));
        assert_eq!(
            adjust_checksum(after, checksum_delta(LOCATOR, SIR_PREFIX)),
            before
        );
    }

    #[test]
    fn udp_checksum_special_cases() {
        assert_eq!(adjust_udp_checksum(0, 0x1234), 0, "no checksum stays none");
        // ~0x1234 + 0x1234 = 0xffff, so the updated checksum is ~0xffff = 0: sent as 0xffff.
        let delta = 0x1234;
        assert_eq!(adjust_checksum(0x1234, delta), 0);
        assert_eq!(adjust_udp_checksum(0x1234, delta), 0xffff);
    }
}
