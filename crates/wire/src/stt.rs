//! STT, the Stateless Transport Tunneling protocol (draft-davie-stt-08 §3).
//!
//! An STT *frame* (18-byte STT header, then the tenant's Ethernet frame) travels in one or more
//! *segments*: IP packets (protocol 6) whose 20-byte header is laid out like TCP's but reused.
//! The sequence number holds the frame length (upper 16 bits) and this segment's offset in the
//! frame (lower 16 bits); the acknowledgement number identifies the frame for reassembly; the
//! source port carries flow entropy and the destination port is 7471. [`SttSegmentPacket`]
//! reads that header in any segment, [`SttPacket`] the STT header that starts the frame (only
//! the segment at offset 0 has it). Segmentation and reassembly live elsewhere.
//!
//! ```text
//! draft-davie-stt-08 §3, TCP-like header (RFC 793 layout, fields reused by STT):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Source Port (entropy)       |   Destination Port (7471)     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     STT Frame Length          |      Fragment Offset          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |              Acknowledgement Number (Frame Identifier)        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Data |     |N|C|E|U|A|P|R|S|F|                               |
//! | Offset| Rsvd|S|W|C|R|C|S|S|Y|I|            Window             |
//! |       |     | |R|E|G|K|H|T|N|N|                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Checksum            |         Urgent Pointer        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! draft-davie-stt-08 §3, STT frame header (first segment only):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Version      | Flags         |  L4 Offset    |  Reserved     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Max. Segment Size          | PCP |V|     VLAN ID           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                     Context ID (64 bits)                      +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Padding                   |    Data (Ethernet frame) ...  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Version must be 0. §3 numbers the flags from the least significant bit, as Open vSwitch (by
//! the draft's authors) and Wireshark read them; see [`flags`]. Checksum verified and partial
//! "cannot both be set in the same header", so such a header does not parse. PCP and VLAN ID
//! mean something only when V is set. The STT frame length counts the 18-byte STT header and
//! the inner frame, not the TCP-like header (Open vSwitch `__push_stt_header`).

use crate::field::{self, Field, Rest};
use crate::std_wire::{IpAddress, TcpPacket};
use crate::{Error, Result};

mod segment_fields {
    use super::{Field, Rest};
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ: Field = 4..8;
    pub const FRAME_LEN: Field = 4..6;
    pub const FRAGMENT_OFFSET: Field = 6..8;
    pub const FRAME_ID: Field = 8..12;
    pub const OFFSET_FLAGS: Field = 12..14;
    pub const WINDOW: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
    pub const PAYLOAD: Rest = 20..;
}

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
/// Length of the TCP-like segment header (STT sends no TCP options).
pub const TCP_HEADER_LEN: usize = segment_fields::PAYLOAD.start;
/// The only STT version defined (§3).
pub const VERSION: u8 = 0;

/// Bits of the TCP flags field (low 12 bits of bytes 12-13, RFC 793) that STT uses.
pub mod tcp_flags {
    /// PSH.
    pub const PSH: u16 = 0x008;
    /// ACK.
    pub const ACK: u16 = 0x010;
    /// What nvo sends, as Open vSwitch does (`__push_stt_header`): ACK and PSH.
    pub const STT_DEFAULT: u16 = ACK | PSH;
}

/// The window nvo sends, as Open vSwitch does: the largest, since nothing is acknowledged.
pub const DEFAULT_WINDOW: u16 = 0xffff;

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

/// A read/write wrapper around one STT segment: the TCP-like header and its payload.
///
/// The buffer must hold exactly the segment (the IP payload), since the checksum covers all of
/// it.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct SttSegmentPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SttSegmentPacket<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        SttSegmentPacket { buffer }
    }

    /// Wraps a buffer after checking that it holds a whole TCP-like header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Ensures that no accessor will panic.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < TCP_HEADER_LEN {
            return Err(Error::truncated("stt tcp-like header", TCP_HEADER_LEN, len));
        }
        Ok(())
    }

    /// Consumes the packet, returning the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The source port: flow entropy chosen by the sender.
    pub fn src_port(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::SRC_PORT])
    }

    /// The destination port (7471 unless configured otherwise).
    pub fn dst_port(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::DST_PORT])
    }

    /// The whole sequence number field.
    pub fn seq_number(&self) -> u32 {
        field::read_u32(&self.buffer.as_ref()[segment_fields::SEQ])
    }

    /// Upper half of the sequence number: length of the whole STT frame in bytes.
    pub fn frame_len(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::FRAME_LEN])
    }

    /// Lower half of the sequence number: where this segment's payload sits in the STT frame.
    pub fn fragment_offset(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::FRAGMENT_OFFSET])
    }

    /// The acknowledgement number: identifies the STT frame this segment belongs to.
    pub fn frame_id(&self) -> u32 {
        field::read_u32(&self.buffer.as_ref()[segment_fields::FRAME_ID])
    }

    /// The data offset field, in 32-bit words (5 for STT).
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[segment_fields::OFFSET_FLAGS.start] >> 4
    }

    /// The data offset in bytes. STT receivers ignore it: the payload always starts after
    /// [`TCP_HEADER_LEN`] bytes (Open vSwitch `stt_rcv`, Wireshark `dissect_stt`).
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The TCP flags (see [`tcp_flags`]), reserved bits included.
    pub fn tcp_flags(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::OFFSET_FLAGS]) & 0x0fff
    }

    /// The window.
    pub fn window(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::WINDOW])
    }

    /// The TCP checksum.
    pub fn checksum(&self) -> u16 {
        field::read_u16(&self.buffer.as_ref()[segment_fields::CHECKSUM])
    }

    /// Checks the TCP checksum over the whole buffer with the outer addresses' pseudo-header
    /// (RFC 793 §3.1, RFC 8200 §8.1), using smoltcp's implementation. Addresses of different
    /// families never verify.
    pub fn verify_checksum(&self, src: &IpAddress, dst: &IpAddress) -> bool {
        let len = self.buffer.as_ref().len();
        if src.version() != dst.version() || len < TCP_HEADER_LEN || len > usize::from(u16::MAX) {
            return false;
        }
        TcpPacket::new_unchecked(self.buffer.as_ref()).verify_checksum(src, dst)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> SttSegmentPacket<&'a T> {
    /// The segment's payload: the STT frame bytes from [`Self::fragment_offset`] on.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[segment_fields::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SttSegmentPacket<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[segment_fields::SRC_PORT], value);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[segment_fields::DST_PORT], value);
    }

    /// Sets the STT frame length (upper half of the sequence number).
    pub fn set_frame_len(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[segment_fields::FRAME_LEN], value);
    }

    /// Sets the fragment offset (lower half of the sequence number).
    pub fn set_fragment_offset(&mut self, value: u16) {
        field::write_u16(
            &mut self.buffer.as_mut()[segment_fields::FRAGMENT_OFFSET],
            value,
        );
    }

    /// Sets the frame identifier (acknowledgement number).
    pub fn set_frame_id(&mut self, value: u32) {
        field::write_u32(&mut self.buffer.as_mut()[segment_fields::FRAME_ID], value);
    }

    /// Sets the data offset (in 32-bit words, low 4 bits of `value`), keeping the flags.
    pub fn set_data_offset(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[segment_fields::OFFSET_FLAGS.start];
        *b = (*b & 0x0f) | (value << 4);
    }

    /// Sets the TCP flags (low 12 bits of `value`), keeping the data offset.
    pub fn set_tcp_flags(&mut self, value: u16) {
        let raw = &mut self.buffer.as_mut()[segment_fields::OFFSET_FLAGS];
        let offset = u16::from(raw[0] & 0xf0) << 8;
        field::write_u16(raw, offset | (value & 0x0fff));
    }

    /// Sets the window.
    pub fn set_window(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[segment_fields::WINDOW], value);
    }

    /// Sets the checksum field as is (see [`Self::fill_checksum`]).
    pub fn set_checksum(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[segment_fields::CHECKSUM], value);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_pointer(&mut self, value: u16) {
        field::write_u16(&mut self.buffer.as_mut()[segment_fields::URGENT], value);
    }

    /// Computes the TCP checksum over the whole buffer with the outer addresses' pseudo-header
    /// and writes it, using smoltcp. Call it once the payload is in place.
    ///
    /// Fails when the addresses are of different families (smoltcp would panic) or the buffer
    /// is shorter than the header or longer than an IP payload's 16-bit length allows.
    pub fn fill_checksum(&mut self, src: &IpAddress, dst: &IpAddress) -> Result<()> {
        self.check_len()?;
        if src.version() != dst.version() {
            let v4 = u64::from(matches!(src, IpAddress::Ipv4(_)));
            return Err(Error::invalid(
                "stt checksum families differ (source is v4)",
                v4,
            ));
        }
        let len = self.buffer.as_ref().len();
        if len > usize::from(u16::MAX) {
            return Err(Error::invalid("stt segment length", len as u64));
        }
        TcpPacket::new_unchecked(self.buffer.as_mut()).fill_checksum(src, dst);
        Ok(())
    }

    /// The segment's payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[segment_fields::PAYLOAD]
    }
}

/// A high-level representation of the TCP-like header of one STT segment.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct SttSegmentRepr {
    /// Flow entropy.
    pub src_port: u16,
    /// Destination port, normally [`crate::ports::STT`].
    pub dst_port: u16,
    /// Length of the whole STT frame (STT header and inner frame).
    pub frame_len: u16,
    /// Offset of this segment's payload inside the STT frame.
    pub fragment_offset: u16,
    /// Identifies the frame among those in flight from this sender.
    pub frame_id: u32,
}

impl SttSegmentRepr {
    /// Parses a checked segment. TCP flags, window, data offset and urgent pointer are ignored
    /// on receipt, as Open vSwitch does; the checksum is the caller's to verify (it needs the
    /// outer addresses). A payload reaching past the frame length is invalid (Open vSwitch
    /// `reassemble` drops it too).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &SttSegmentPacket<&T>) -> Result<Self> {
        packet.check_len()?;
        let end = usize::from(packet.fragment_offset()) + packet.payload().len();
        if end > usize::from(packet.frame_len()) {
            let field = "stt segment end (offset + payload) past frame length";
            return Err(Error::invalid(field, end as u64));
        }
        Ok(SttSegmentRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            frame_len: packet.frame_len(),
            fragment_offset: packet.fragment_offset(),
            frame_id: packet.frame_id(),
        })
    }

    /// Whether this segment starts the frame, and so begins with the STT header.
    pub const fn is_first(&self) -> bool {
        self.fragment_offset == 0
    }

    /// Length of the header this representation emits.
    pub const fn buffer_len(&self) -> usize {
        TCP_HEADER_LEN
    }

    /// Writes the TCP-like header into the first `buffer_len()` bytes: data offset 5, ACK|PSH,
    /// window 0xffff (as Open vSwitch sends), checksum and urgent pointer zero. Fill the
    /// checksum with [`SttSegmentPacket::fill_checksum`] once the payload is written.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut SttSegmentPacket<T>,
    ) -> Result<()> {
        packet.check_len()?;
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_frame_len(self.frame_len);
        packet.set_fragment_offset(self.fragment_offset);
        packet.set_frame_id(self.frame_id);
        packet.set_tcp_flags(tcp_flags::STT_DEFAULT);
        packet.set_data_offset((TCP_HEADER_LEN / 4) as u8);
        packet.set_window(DEFAULT_WINDOW);
        packet.set_checksum(0);
        packet.set_urgent_pointer(0);
        Ok(())
    }
}

impl core::fmt::Display for SttSegmentRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "STT segment {} > {} frame={:#x} len={} off={}",
            self.src_port, self.dst_port, self.frame_id, self.frame_len, self.fragment_offset
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    // draft-davie-stt-08 has no example packet: these bytes were written by hand from the §3
    // diagrams. crates/wire/tests/stt.rs emits the same two headers (its first tshark case,
    // with a 60-byte inner frame) and checks that tshark's STT dissector reads every field
    // back, and that tshark's TCP dissector accepts the checksum nvo fills.
    #[rustfmt::skip]
    static SEGMENT: [u8; 20] = [
        0xc3, 0x50, 0x1d, 0x2f, // source port 50000, destination port 7471
        0x00, 0x4e, 0x00, 0x00, // frame length 78 (18 + 60), fragment offset 0
        0x00, 0x00, 0xab, 0xcd, // frame id 0xabcd
        0x50, 0x18, 0xff, 0xff, // data offset 5, ACK|PSH, window 65535
        0x00, 0x00, 0x00, 0x00, // checksum (not filled yet), urgent pointer
    ];
    #[rustfmt::skip]
    static HEADER: [u8; 18] = [
        0x00, 0x0e, 0x22, 0x00, // version 0, flags partial|ipv4|tcp, l4 offset 34, reserved
        0x05, 0xa8, 0x70, 0x64, // mss 1448, pcp 3, V, vlan 100
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // context id
        0x00, 0x00, // padding
    ];

    fn header_repr() -> SttRepr {
        SttRepr {
            flags: SttFlags::from_bits(flags::CHECKSUM_PARTIAL | flags::IPV4 | flags::TCP),
            l4_offset: 34,
            mss: 1448,
            vlan: Some((3, 100)),
            context_id: 0x1122_3344_5566_7788,
        }
    }

    fn segment_repr() -> SttSegmentRepr {
        SttSegmentRepr {
            src_port: 50000,
            dst_port: 7471,
            frame_len: 78,
            fragment_offset: 0,
            frame_id: 0xabcd,
        }
    }

    fn segment(b: &[u8]) -> SttSegmentPacket<&[u8]> {
        SttSegmentPacket::new_checked(b).unwrap()
    }

    fn header(b: &[u8]) -> SttPacket<&[u8]> {
        SttPacket::new_checked(b).unwrap()
    }

    #[test]
    fn deconstruct() {
        let p = segment(&SEGMENT);
        assert_eq!(
            (p.src_port(), p.dst_port(), p.frame_id()),
            (50000, 7471, 0xabcd)
        );
        assert_eq!(
            (p.frame_len(), p.fragment_offset(), p.seq_number()),
            (78, 0, 78 << 16)
        );
        assert_eq!(
            (p.data_offset(), p.header_len(), p.window()),
            (5, 20, 0xffff)
        );
        assert_eq!(p.tcp_flags(), tcp_flags::ACK | tcp_flags::PSH);
        assert!(p.payload().is_empty());

        let p = header(&HEADER);
        assert_eq!((p.version(), p.l4_offset(), p.mss()), (0, 34, 1448));
        assert!(!p.checksum_verified() && p.checksum_partial() && p.ipv4() && p.tcp());
        assert!(p.vlan_present() && p.pcp() == 3 && p.vlan_id() == 100);
        assert_eq!(p.context_id(), 0x1122_3344_5566_7788);
        assert_eq!(SttRepr::parse(&p), Ok(header_repr()));
        assert_eq!(
            SttSegmentRepr::parse(&segment(&SEGMENT)),
            Ok(segment_repr())
        );
    }

    #[test]
    fn construct() {
        let mut seg = [0xffu8; 20];
        segment_repr()
            .emit(&mut SttSegmentPacket::new_unchecked(&mut seg[..]))
            .unwrap();
        assert_eq!(seg, SEGMENT);
        let mut hdr = [0xffu8; 18];
        header_repr()
            .emit(&mut SttPacket::new_unchecked(&mut hdr[..]))
            .unwrap();
        assert_eq!(hdr, HEADER);
    }

    #[test]
    fn rejects_truncated_bad_version_and_both_checksum_flags() {
        let short = SttPacket::new_checked(&HEADER[..17]);
        assert_eq!(short, Err(Error::truncated("stt header", 18, 17)));
        let short = SttSegmentPacket::new_checked(&SEGMENT[..19]);
        assert_eq!(short, Err(Error::truncated("stt tcp-like header", 20, 19)));
        let mut b = HEADER;
        b[0] = 1;
        assert_eq!(
            SttRepr::parse(&header(&b)),
            Err(Error::invalid("stt version", 1))
        );
        let mut b = HEADER;
        b[1] = flags::CHECKSUM_VERIFIED | flags::CHECKSUM_PARTIAL;
        assert!(matches!(
            SttRepr::parse(&header(&b)),
            Err(Error::Invalid { .. })
        ));
    }
}
