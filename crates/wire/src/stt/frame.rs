//! The 18-byte STT frame header that starts the first segment's payload (draft-davie-stt-08
//! §3); see the parent module for the diagram.

use crate::field::{self, Field, Rest};
use crate::{Error, Result};

mod fields {
    use super::{Field, Rest};
    pub const VERSION: usize = 0;
    pub const FLAGS: usize = 1;
    pub const L4_OFFSET: usize = 2;
    pub const RESERVED: usize = 3;
    pub const MSS: Field = 4..6;
    pub const TCI: Field = 6..8;
    pub const CONTEXT_ID: Field = 8..16;
    pub const PADDING: Field = 16..18;
    pub const PAYLOAD: Rest = 18..;
}

/// Length of the STT frame header, padding included.
pub const STT_HEADER_LEN: usize = fields::PAYLOAD.start;
/// The only STT version defined (§3).
pub const VERSION: u8 = 0;

/// Bits of the STT flags byte (§3; bit 0 is the least significant).
pub mod flags {
    /// Bit 0: the sender verified the inner packet's checksum.
    pub const CHECKSUM_VERIFIED: u8 = 0x01;
    /// Bit 1: the inner checksum covers only the pseudo-header (set when TSO is used).
    pub const CHECKSUM_PARTIAL: u8 = 0x02;
    /// Bit 2: the inner packet is IPv4 (clear: IPv6).
    pub const IPV4: u8 = 0x04;
    /// Bit 3: the inner packet is TCP.
    pub const TCP: u8 = 0x08;
    /// Bits 4-7: unused.
    pub const UNUSED: u8 = 0xf0;
}

const BOTH_CHECKSUM_FLAGS: &str = "stt flags (checksum verified and partial both set)";
const TCI_PCP_SHIFT: u16 = 13;
const TCI_V: u16 = 0x1000;
const TCI_VID: u16 = 0x0fff;

/// The STT frame length for an inner frame of `inner_len` bytes: the STT header plus the
/// frame, which must fit in the 16 bits of the sequence number.
pub fn frame_len(inner_len: usize) -> Result<u16> {
    let len = STT_HEADER_LEN.saturating_add(inner_len);
    u16::try_from(len).map_err(|_| Error::invalid("stt frame length", len as u64))
}

/// A read/write wrapper around an STT frame header and the inner Ethernet frame.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct SttPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SttPacket<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        SttPacket { buffer }
    }

    /// Wraps a buffer after checking that it holds a whole header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Ensures that no accessor will panic.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < STT_HEADER_LEN {
            return Err(Error::truncated("stt header", STT_HEADER_LEN, len));
        }
        Ok(())
    }

    /// Consumes the packet, returning the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version (0).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[fields::VERSION]
    }

    /// The flags byte (see [`flags`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[fields::FLAGS]
    }

    /// Flag bit 0: the inner checksum was verified by the sender.
    pub fn checksum_verified(&self) -> bool {
        self.flags() & flags::CHECKSUM_VERIFIED != 0
    }

    /// Flag bit 1: the inner checksum is partial (TSO in use).
    pub fn checksum_partial(&self) -> bool {
        self.flags() & flags::CHECKSUM_PARTIAL != 0
    }

    /// Flag bit 2: the inner packet is IPv4 rather than IPv6.
    pub fn ipv4(&self) -> bool {
        self.flags() & flags::IPV4 != 0
    }

    /// Flag bit 3: the inner packet is TCP.
    pub fn tcp(&self) -> bool {
        self.flags() & flags::TCP != 0
    }

    /// Offset of the inner L4 header from the start of the inner frame (for checksum offload).
    pub fn l4_offset(&self) -> u8 {
        self.buffer.as_ref()[fields::L4_OFFSET]
    }

    /// The MSS the receiver should segment the inner frame to (0 without TSO).
    pub fn mss(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[fields::MSS])
    }

    /// The PCP, V and VLAN ID bits as one 16-bit tag control word.
    pub fn tci(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[fields::TCI])
    }

    /// The 802.1p priority (meaningful when V is set).
    pub fn pcp(&self) -> u8 {
        (self.tci() >> TCI_PCP_SHIFT) as u8
    }

    /// The V bit: PCP and VLAN ID are valid.
    pub fn vlan_present(&self) -> bool {
        self.tci() & TCI_V != 0
    }

    /// The VLAN ID (meaningful when V is set).
    pub fn vlan_id(&self) -> u16 {
        self.tci() & TCI_VID
    }

    /// The 64-bit context ID (the tenant's virtual network).
    pub fn context_id(&self) -> u64 {
        field::read_u64(&self.buffer.as_ref()[fields::CONTEXT_ID])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> SttPacket<&'a T> {
    /// The encapsulated Ethernet frame (without FCS).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[fields::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SttPacket<T> {
    /// Sets the version.
    pub fn set_version(&mut self, value: u8) {
        self.buffer.as_mut()[fields::VERSION] = value;
    }

    /// Sets the flags byte.
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[fields::FLAGS] = value;
    }

    /// Sets the L4 offset.
    pub fn set_l4_offset(&mut self, value: u8) {
        self.buffer.as_mut()[fields::L4_OFFSET] = value;
    }

    /// Sets the MSS.
    pub fn set_mss(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[fields::MSS], value);
    }

    /// Sets the whole PCP/V/VLAN ID word.
    pub fn set_tci(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[fields::TCI], value);
    }

    /// Sets the context ID.
    pub fn set_context_id(&mut self, value: u64) {
        field::write_u64(&mut self.buffer.as_mut()[fields::CONTEXT_ID], value);
    }

    /// Zeroes the reserved byte and the padding, as §3 asks of senders.
    pub fn clear_reserved(&mut self) {
        self.buffer.as_mut()[fields::RESERVED] = 0;
        field::write_u16(&mut self.buffer.as_mut()[fields::PADDING], 0);
    }

    /// The encapsulated frame, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[fields::PAYLOAD]
    }
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
        for (set, name) in names {
            if set {
                f.write_str(name)?;
            }
        }
        if let Some((pcp, vid)) = self.vlan {
            write!(f, " vlan={vid} pcp={pcp}")?;
        }
        Ok(())
    }
}
