//! STT segmentation and reassembly (draft-davie-stt-08 §3-§4), sans-IO.
//!
//! An STT *frame* is the 18-byte STT header followed by the tenant's Ethernet frame, at most
//! 65535 bytes. It crosses the underlay as one or more *segments*, IP packets of protocol 6
//! whose payload starts with a TCP-like header ([`nvo_wire::stt::SttSegmentPacket`]): the
//! sequence number carries the frame length (upper 16 bits) and the segment's offset in the
//! frame (lower 16), the acknowledgement number identifies the frame, the source port carries
//! flow entropy and the destination port is 7471.
//!
//! ```text
//!  transmit: stt_header(context, meta) ++ inner frame
//!              → Segmenter::segment(frame, src, dst, entropy, max_payload) → [segment, …]
//!              → datapath sends each segment as the payload of an IP packet (protocol 6)
//!        or:   Segmenter::offload_header(frame, …) → one TCP-like header with a partial
//!              checksum → datapath hands header ++ frame to the kernel, whose TCP segmentation
//!              (GSO/TSO) cuts the same segments (see `segmenter`)
//!  receive:  datapath gets (src, dst, IP payload)
//!              → Reassembler::push(src, dst, segment, now) → Some(STT frame) once complete
//!              → the engine decapsulates the frame (profile `stt`)
//! ```
//!
//! Neither side does I/O or reads a clock: time is passed in, buffers are reused, and every
//! table is bounded ([`ReassemblyLimits`]). Nothing allocates per packet once warm.

mod coverage;
mod list;
mod pool;
mod pseudo;
mod reassembly;
mod segmenter;

pub use coverage::MAX_SPANS;
pub use pseudo::pseudo_header_sum;
pub use reassembly::{Reassembler, ReassemblyCounters, ReassemblyLimits, SttDrop};
pub use segmenter::{Segmenter, Segments};

use nvo_wire::stt::{SttFlags, SttPacket, SttRepr, STT_HEADER_LEN};
use std::net::IpAddr;

/// The largest STT frame: its length travels in 16 bits.
pub const MAX_FRAME_LEN: usize = u16::MAX as usize;

/// Why an STT frame could not be built or segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SttError {
    /// The frame does not even hold the STT header.
    #[error("stt frame of {len} bytes is shorter than the {STT_HEADER_LEN}-byte stt header")]
    FrameTooShort {
        /// The frame's length.
        len: usize,
    },
    /// The frame's length does not fit the 16-bit length field.
    #[error("stt frame of {len} bytes exceeds the {MAX_FRAME_LEN} bytes stt can carry")]
    FrameTooLong {
        /// The frame's length.
        len: usize,
    },
    /// A segment must carry at least one byte of the frame.
    #[error("stt max payload per segment must be at least 1, got {max_payload}")]
    MaxPayload {
        /// The value given.
        max_payload: usize,
    },
    /// The TCP pseudo-header needs both outer addresses in one family.
    #[error("stt outer addresses {src} and {dst} are of different families")]
    AddressFamilies {
        /// The outer source.
        src: IpAddr,
        /// The outer destination.
        dst: IpAddr,
    },
    /// The STT header could not be written (PCP, VLAN ID or flags out of range).
    #[error("stt header: {0}")]
    Header(#[from] nvo_wire::Error),
}

/// Offload metadata of the inner frame that the STT header carries to the receiver (§3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SttMeta {
    /// MSS the receiver should segment the inner TCP frame to (TSO); 0 without.
    pub mss: u16,
    /// `Some(l4_offset)` when the inner L4 checksum is partial (covers only the pseudo-header)
    /// and the receiver must finish it: the offset of the L4 header from the start of the
    /// inner Ethernet frame. Open vSwitch falls back to a full checksum when it exceeds 255.
    pub csum_partial: Option<u8>,
    /// The sender verified the inner checksum (Open vSwitch: `CHECKSUM_UNNECESSARY`). Must not
    /// be set together with `csum_partial`.
    pub csum_verified: bool,
    /// The inner packet is IPv4 (else IPv6). Open vSwitch sets it only with `csum_partial`.
    pub ipv4: bool,
    /// The inner packet is TCP. Open vSwitch sets it only with `csum_partial`.
    pub tcp: bool,
    /// The 802.1Q tag control word (PCP in the top 3 bits, VLAN ID in the low 12) for the
    /// receiver to put back; STT has no room for the DEI bit, which is dropped.
    pub vlan: Option<u16>,
}

/// The 18-byte STT header for a frame on virtual network `context_id` with offload `meta`.
/// Put the inner Ethernet frame right after it to make the STT frame.
pub fn stt_header(context_id: u64, meta: SttMeta) -> Result<[u8; STT_HEADER_LEN], SttError> {
    let repr = SttRepr {
        flags: SttFlags {
            checksum_verified: meta.csum_verified,
            checksum_partial: meta.csum_partial.is_some(),
            ipv4: meta.ipv4,
            tcp: meta.tcp,
        },
        l4_offset: meta.csum_partial.unwrap_or(0),
        mss: meta.mss,
        vlan: meta.vlan.map(|tci| ((tci >> 13) as u8, tci & 0x0fff)),
        context_id,
    };
    let mut header = [0u8; STT_HEADER_LEN];
    repr.emit(&mut SttPacket::new_unchecked(&mut header[..]))?;
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_carries_meta() {
        let meta = SttMeta {
            mss: 1448,
            csum_partial: Some(34),
            ipv4: true,
            tcp: true,
            vlan: Some((3 << 13) | 0x1000 | 100),
            ..SttMeta::default()
        };
        // The same bytes as nvo_wire's hand-written STT header (crates/wire/src/stt/mod.rs),
        // which tshark reads back field by field. The DEI bit given here does not leak into V.
        let expected = [
            0x00, 0x0e, 0x22, 0x00, 0x05, 0xa8, 0x70, 0x64, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
            0x77, 0x88, 0x00, 0x00,
        ];
        assert_eq!(stt_header(0x1122_3344_5566_7788, meta), Ok(expected));
    }

    #[test]
    fn header_refuses_both_checksum_flags() {
        let meta = SttMeta {
            csum_partial: Some(34),
            csum_verified: true,
            ..SttMeta::default()
        };
        assert!(matches!(stt_header(1, meta), Err(SttError::Header(_))));
        let plain = stt_header(7, SttMeta::default()).unwrap();
        assert_eq!(plain[..8], [0; 8]);
        assert_eq!(plain[15], 7);
    }
}
