//! The 18-byte STT frame header that starts the first segment's payload (draft-davie-stt-08
//! §3); see the parent module for the diagram.

use crate::header::{header, write_flags};
use crate::{Error, Result};

/// Length of the STT frame header, padding included.
pub const STT_HEADER_LEN: usize = 18;
/// The only STT version defined (§3).
pub const VERSION: u8 = 0;

const BOTH_CHECKSUM_FLAGS: &str = "stt flags (checksum verified and partial both set)";
const TCI_PCP_SHIFT: u16 = 13;
const TCI_PCP: u16 = 0xe000;
const TCI_V: u16 = 0x1000;
const TCI_VID: u16 = 0x0fff;

/// The STT frame length for an inner frame of `inner_len` bytes: the STT header plus the
/// frame, which must fit in the 16 bits of the sequence number.
pub fn frame_len(inner_len: usize) -> Result<u16> {
    let len = STT_HEADER_LEN.saturating_add(inner_len);
    u16::try_from(len).map_err(|_| Error::invalid("stt frame length", len as u64))
}

header! {
    /// A read/write wrapper around an STT frame header and the inner Ethernet frame.
    pub struct SttPacket in layout, pub flags {
        /// The version (0).
        VERSION @ 0..1 => version / set_version: u8;
        /// The flags byte (§3; bit 0 is the least significant).
        FLAGS @ 1..2 => flags / set_flags: u8 {
            /// Bit 0: the sender verified the inner packet's checksum.
            CHECKSUM_VERIFIED = 0x01 => checksum_verified: bool;
            /// Bit 1: the inner checksum covers only the pseudo-header (TSO in use).
            CHECKSUM_PARTIAL = 0x02 => checksum_partial: bool;
            /// Bit 2: the inner packet is IPv4 (clear: IPv6).
            IPV4 = 0x04 => ipv4: bool;
            /// Bit 3: the inner packet is TCP.
            TCP = 0x08 => tcp: bool;
            /// Bits 4-7: unused.
            UNUSED = 0xf0;
        }
        /// Offset of the inner L4 header from the start of the inner frame (for checksum
        /// offload).
        L4_OFFSET @ 2..3 => l4_offset / set_l4_offset: u8;
        RESERVED @ 3..4;
        /// The MSS the receiver should segment the inner frame to (0 without TSO).
        MSS @ 4..6 => mss / set_mss: u16;
        /// The PCP, V and VLAN ID bits as one 16-bit tag control word.
        TCI @ 6..8 => tci / set_tci: u16;
        /// The 802.1p priority (meaningful when V is set).
        PCP @ 6..8 & TCI_PCP => pcp: u8;
        /// The V bit: PCP and VLAN ID are valid.
        V @ 6..8 & TCI_V => vlan_present: bool;
        /// The VLAN ID (meaningful when V is set).
        VLAN_ID @ 6..8 & TCI_VID => vlan_id: u16;
        /// The 64-bit context ID (the tenant's virtual network).
        CONTEXT_ID @ 8..16 => context_id / set_context_id: u64;
        PADDING @ 16..18;
    }
    /// Ensures that no accessor will panic.
    check_len("stt header", STT_HEADER_LEN);
    /// The encapsulated Ethernet frame (without FCS).
    payload(at STT_HEADER_LEN);
    /// Zeroes the reserved byte and the padding, as §3 asks of senders.
    fn clear_reserved() zeroes RESERVED, PADDING;
}

/// The four defined STT flags.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Default)]
pub struct SttFlags {
    /// Bit 0: the sender verified the inner checksum.
    pub checksum_verified: bool,
    /// Bit 1: the inner checksum is partial; the receiver must finish it (and may segment).
    pub checksum_partial: bool,
    /// Bit 2: the inner packet is IPv4 (false: IPv6).
    pub ipv4: bool,
    /// Bit 3: the inner packet is TCP.
    pub tcp: bool,
}

impl SttFlags {
    /// Reads the defined bits of a flags byte; the unused bits are ignored, as §3 requires.
    pub const fn from_bits(bits: u8) -> Self {
        SttFlags {
            checksum_verified: bits & flags::CHECKSUM_VERIFIED != 0,
            checksum_partial: bits & flags::CHECKSUM_PARTIAL != 0,
            ipv4: bits & flags::IPV4 != 0,
            tcp: bits & flags::TCP != 0,
        }
    }

    /// The flags byte, unused bits zero.
    pub const fn bits(&self) -> u8 {
        (flags::CHECKSUM_VERIFIED * self.checksum_verified as u8)
            | (flags::CHECKSUM_PARTIAL * self.checksum_partial as u8)
            | (flags::IPV4 * self.ipv4 as u8)
            | (flags::TCP * self.tcp as u8)
    }
}

/// A high-level representation of an STT frame header.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct SttRepr {
    /// The defined flags.
    pub flags: SttFlags,
    /// Offset of the inner L4 header in the inner frame (0 unless checksum partial).
    pub l4_offset: u8,
    /// MSS for the receiver's segmentation of the inner frame (0 unless TSO).
    pub mss: u16,
    /// `(pcp, vlan id)` when the V bit is set: the tag the receiver should put back.
    pub vlan: Option<(u8, u16)>,
    /// The context ID (virtual network).
    pub context_id: u64,
}

impl SttRepr {
    /// Parses a checked packet. The version must be 0 and the two checksum flags must not both
    /// be set (§3); the unused flag bits, the reserved byte and the padding are ignored.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &SttPacket<&T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::invalid("stt version", packet.version().into()));
        }
        if packet.checksum_verified() && packet.checksum_partial() {
            return Err(Error::invalid(BOTH_CHECKSUM_FLAGS, packet.flags().into()));
        }
        let vlan = packet
            .vlan_present()
            .then(|| (packet.pcp(), packet.vlan_id()));
        Ok(SttRepr {
            flags: SttFlags::from_bits(packet.flags()),
            l4_offset: packet.l4_offset(),
            mss: packet.mss(),
            vlan,
            context_id: packet.context_id(),
        })
    }

    /// Length of the header this representation emits.
    pub const fn buffer_len(&self) -> usize {
        STT_HEADER_LEN
    }

    /// Writes the header into the first `buffer_len()` bytes of the packet.
    ///
    /// Fails (rather than truncating) on a PCP over 7, a VLAN ID over 4095, or both checksum
    /// flags set.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut SttPacket<T>) -> Result<()> {
        packet.check_len()?;
        if self.flags.checksum_verified && self.flags.checksum_partial {
            return Err(Error::invalid(
                BOTH_CHECKSUM_FLAGS,
                self.flags.bits().into(),
            ));
        }
        let tci = match self.vlan {
            None => 0,
            Some((pcp, _)) if pcp > 7 => return Err(Error::invalid("stt pcp", pcp.into())),
            Some((_, vid)) if vid > TCI_VID => {
                return Err(Error::invalid("stt vlan id", vid.into()))
            }
            Some((pcp, vid)) => (u16::from(pcp) << TCI_PCP_SHIFT) | TCI_V | vid,
        };
        packet.set_version(VERSION);
        packet.set_flags(self.flags.bits());
        packet.set_l4_offset(self.l4_offset);
        packet.set_mss(self.mss);
        packet.set_tci(tci);
        packet.set_context_id(self.context_id);
        packet.clear_reserved();
        Ok(())
    }
}

impl core::fmt::Display for SttRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "STT context={:#018x} mss={}", self.context_id, self.mss)?;
        if self.l4_offset != 0 {
            write!(f, " l4={}", self.l4_offset)?;
        }
        let names = [
            (self.flags.checksum_verified, " csum-verified"),
            (self.flags.checksum_partial, " csum-partial"),
            (self.flags.ipv4, " ipv4"),
            (self.flags.tcp, " tcp"),
        ];
        write_flags(f, &names)?;
        if let Some((pcp, vid)) = self.vlan {
            write!(f, " vlan={vid} pcp={pcp}")?;
        }
        Ok(())
    }
}
