//! The TCP-like header that every STT segment carries (draft-davie-stt-08 §3); see the
//! parent module for the diagram.

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

/// Length of the TCP-like segment header (STT sends no TCP options).
pub const TCP_HEADER_LEN: usize = segment_fields::PAYLOAD.start;

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
