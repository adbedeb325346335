//! The TCP-like header that every STT segment carries (draft-davie-stt-08 §3); see the
//! parent module for the diagram.

use crate::header::header;
use crate::std_wire::{IpAddress, TcpPacket};
use crate::{Error, Result};

/// Length of the TCP-like segment header (STT sends no TCP options).
pub const TCP_HEADER_LEN: usize = 20;

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

header! {
    /// A read/write wrapper around one STT segment: the TCP-like header and its payload.
    ///
    /// The buffer must hold exactly the segment (the IP payload), since the checksum covers all
    /// of it.
    pub struct SttSegmentPacket in segment_layout {
        /// The source port: flow entropy chosen by the sender.
        SRC_PORT @ 0..2 => src_port / set_src_port: u16;
        /// The destination port (7471 unless configured otherwise).
        DST_PORT @ 2..4 => dst_port / set_dst_port: u16;
        /// The whole sequence number field.
        SEQ @ 4..8 => seq_number: u32;
        /// Upper half of the sequence number: length of the whole STT frame in bytes.
        FRAME_LEN @ 4..6 => frame_len / set_frame_len: u16;
        /// Lower half of the sequence number: where this segment's payload sits in the STT frame.
        FRAGMENT_OFFSET @ 6..8 => fragment_offset / set_fragment_offset: u16;
        /// The acknowledgement number: identifies the STT frame this segment belongs to.
        FRAME_ID @ 8..12 => frame_id / set_frame_id: u32;
        /// The data offset field, in 32-bit words (5 for STT).
        DATA_OFFSET @ 12..13 & 0xf0 => data_offset / set_data_offset: u8;
        /// The TCP flags (see [`tcp_flags`]), reserved bits included.
        TCP_FLAGS @ 12..14 & 0x0fff => tcp_flags / set_tcp_flags: u16;
        /// The window.
        WINDOW @ 14..16 => window / set_window: u16;
        /// The TCP checksum (see [`Self::fill_checksum`]).
        CHECKSUM @ 16..18 => checksum / set_checksum: u16;
        /// The urgent pointer.
        URGENT @ 18..20 => urgent_pointer / set_urgent_pointer: u16;
    }
    /// Ensures that no accessor will panic.
    check_len("stt tcp-like header", TCP_HEADER_LEN);
    /// The segment's payload: the STT frame bytes from [`Self::fragment_offset`] on.
    payload(at TCP_HEADER_LEN);
}

impl<T: AsRef<[u8]>> SttSegmentPacket<T> {
    /// The data offset in bytes. STT receivers ignore it: the payload always starts after
    /// [`TCP_HEADER_LEN`] bytes (Open vSwitch `stt_rcv`, Wireshark `dissect_stt`).
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
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

impl<T: AsRef<[u8]> + AsMut<[u8]>> SttSegmentPacket<T> {
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
