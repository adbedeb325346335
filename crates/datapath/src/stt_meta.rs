//! The offload metadata of frames going in and out of STT (draft-davie-stt-08 §3.1): what a
//! port's frame tells the STT header, what an STT header asks of the receiving port, and the
//! drop code of each reason the reassembler refuses a segment for. Used by [`super::forward`].

use nvo_encap::stt::{SttDrop, SttMeta};
use nvo_io::{FrameMeta, Gso, GsoKind};
use nvo_pipeline::DropReason;

/// The length of the largest frame a GSO frame becomes: its headers (up to the end of the L4
/// header) plus one segment; a complete frame's own length.
pub(super) fn segment_len(frame: &[u8], meta: &FrameMeta) -> usize {
    let (Some(gso), Some((start, _))) = (meta.gso, meta.csum) else {
        return frame.len();
    };
    let l4 = usize::from(start);
    let l4_len = match gso.kind {
        GsoKind::Udp => 8,
        GsoKind::Tcp4 | GsoKind::Tcp6 => frame
            .get(l4 + 12)
            .map_or(20, |&offset| usize::from(offset >> 4) * 4),
    };
    (l4 + l4_len + usize::from(gso.size)).min(frame.len())
}

/// The STT header's offload fields for a frame from a port (draft-davie-stt-08 §3.1, as Open
/// vSwitch fills them): the MSS of a TSO frame, and where the partial checksum's L4 header is.
pub(super) fn stt_meta(frame: &[u8], meta: &FrameMeta) -> SttMeta {
    let ipv4 = frame.get(12..14) == Some(&[0x08, 0x00][..]);
    let mut m = SttMeta {
        ipv4,
        ..SttMeta::default()
    };
    if let Some((start, offset)) = meta.csum {
        if let Ok(l4) = u8::try_from(start) {
            m.csum_partial = Some(l4);
            m.tcp = offset == 16;
        }
    }
    if let Some(gso) = meta.gso {
        if m.csum_partial.is_some() {
            m.mss = gso.size;
        }
    }
    if m.csum_partial.is_none() {
        m.ipv4 = false;
    }
    m
}

/// What an STT header asks of the receiver, as the port's metadata: TSO with its MSS when the
/// frame is larger than one segment, and the partial checksum to finish.
pub(super) fn stt_delivery_meta(stt_frame: &[u8], inner_len: usize) -> FrameMeta {
    let Ok(packet) = nvo_wire::stt::SttPacket::new_checked(stt_frame) else {
        return FrameMeta::COMPLETE;
    };
    if !packet.checksum_partial() {
        return FrameMeta::COMPLETE;
    }
    let start = u16::from(packet.l4_offset());
    let tcp = packet.tcp();
    let csum = Some((start, if tcp { 16 } else { 6 }));
    let mss = packet.mss();
    let gso =
        (tcp && mss > 0 && inner_len > usize::from(start) + 20 + usize::from(mss)).then(|| Gso {
            kind: if packet.ipv4() {
                GsoKind::Tcp4
            } else {
                GsoKind::Tcp6
            },
            size: mss,
            ecn: false,
        });
    FrameMeta { gso, csum }
}

/// The drop code of each reason the STT reassembler refuses a segment for.
pub(super) fn stt_drop_reason(why: SttDrop) -> DropReason {
    match why {
        SttDrop::Malformed => DropReason::SttMalformed,
        SttDrop::NotStt => DropReason::SttWrongPort,
        SttDrop::BadChecksum => DropReason::SttBadChecksum,
        SttDrop::Duplicate => DropReason::SttDuplicate,
        SttDrop::Overlap => DropReason::SttOverlap,
        SttDrop::TooLarge => DropReason::SttTooLarge,
        SttDrop::TooManyHoles => DropReason::SttTooManyHoles,
    }
}
