//! Checksums a frame may have left undone: Linux hands frames on with the TCP/UDP checksum
//! still to compute (CHECKSUM_PARTIAL) when the sender has checksum offload — and keeps them
//! that way across a veth, even inside a tunnel another kernel built. On a NIC the hardware
//! finishes them; where nvod takes such a frame as bytes (punted by its kernel path, or out of
//! a tunnel from a kernel VTEP of a veth lab) it must say so when it passes it on, or the
//! receiver drops it.
//!
//! The sign is exact enough: the checksum field holds the folded pseudo-header sum (what
//! Linux writes before offloading) and the checksum does not verify.

use nvo_io::{FrameMeta, Gso, GsoKind};

/// What a frame the kernel punted needs from the port or socket that sends it on: a GSO frame's
/// segmentation, a partial checksum's completion (the kernel hands frames over as the sender
/// left them, checksum offload included).
pub fn punted_meta(frame: &[u8], gso_size: u16) -> FrameMeta {
    let Some((l4, proto, v4)) = l4_of(frame) else {
        return FrameMeta::COMPLETE;
    };
    let offset = match proto {
        6 => 16,
        17 => 6,
        _ => return FrameMeta::COMPLETE,
    };
    let start = l4 as u16;
    if gso_size > 0 {
        let kind = match (proto, v4) {
            (17, _) => GsoKind::Udp,
            (_, true) => GsoKind::Tcp4,
            (_, false) => GsoKind::Tcp6,
        };
        return FrameMeta {
            gso: Some(Gso {
                kind,
                size: gso_size,
                ecn: false,
            }),
            csum: Some((start, offset)),
        };
    }
    if partial_checksum(frame, l4, proto, v4, offset as usize) {
        FrameMeta {
            gso: None,
            csum: Some((start, offset)),
        }
    } else {
        FrameMeta::COMPLETE
    }
}

/// (L4 offset, protocol, IPv4?) of an untagged IPv4 or IPv6 (no extension header) frame.
fn l4_of(frame: &[u8]) -> Option<(usize, u8, bool)> {
    match frame.get(12..14)? {
        [0x08, 0x00] => {
            let ihl = usize::from(frame.get(14)? & 0xf) * 4;
            Some((14 + ihl, *frame.get(23)?, true))
        }
        [0x86, 0xdd] => Some((54, *frame.get(20)?, false)),
        _ => None,
    }
}

fn sum16(bytes: &[u8], mut sum: u32) -> u32 {
    for pair in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Whether the L4 checksum field holds the pseudo-header sum a sender with checksum offload
/// leaves (Linux's CHECKSUM_PARTIAL) rather than a checksum that verifies.
fn partial_checksum(frame: &[u8], l4: usize, proto: u8, v4: bool, offset: usize) -> bool {
    let Some(segment) = frame.get(l4..) else {
        return false;
    };
    let len = if v4 {
        let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
        total.saturating_sub(l4 - 14).min(segment.len())
    } else {
        usize::from(u16::from_be_bytes([frame[18], frame[19]])).min(segment.len())
    };
    let addrs = if v4 {
        frame.get(26..34)
    } else {
        frame.get(22..54)
    };
    let (Some(addrs), Some(field)) = (addrs, segment.get(offset..offset + 2)) else {
        return false;
    };
    let pseudo = sum16(addrs, u32::from(proto) + len as u32);
    let field = u16::from_be_bytes([field[0], field[1]]);
    // The cheap test first: most frames fail it, and then no sum over the payload is made.
    field == fold(pseudo) && fold(sum16(&segment[..len], pseudo)) != 0xffff
}

/// What a frame taken out of a tunnel longer than the network's `mtu` allows needs: to be cut
/// into segments that fit it (a TSO frame tunnelled whole, whose MSS is not known here: the
/// MTU's is the largest that fits), its checksum finished.
pub fn large_frame_meta(frame: &[u8], mtu: u16) -> FrameMeta {
    let Some((l4, proto, _)) = l4_of(frame) else {
        return received_meta(frame);
    };
    let l4_len = match proto {
        6 => frame.get(l4 + 12).map_or(20, |&o| usize::from(o >> 4) * 4),
        17 => 8,
        _ => return received_meta(frame),
    };
    let headers = (l4 - 14) + l4_len;
    let size = usize::from(mtu).saturating_sub(headers);
    if size == 0 || frame.len() <= l4 + l4_len + size {
        return received_meta(frame);
    }
    punted_meta(frame, u16::try_from(size).unwrap_or(u16::MAX))
}

/// What a frame taken out of a tunnel needs: its checksum finished, if the sender left it.
pub fn received_meta(frame: &[u8]) -> FrameMeta {
    punted_meta(frame, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp4(checksum: Option<u16>) -> Vec<u8> {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1000, 80, 1, 1000)
            .write(&mut v, b"some payload")
            .unwrap();
        if let Some(c) = checksum {
            v[14 + 20 + 16..14 + 20 + 18].copy_from_slice(&c.to_be_bytes());
        }
        v
    }

    #[test]
    fn a_partial_checksum_is_told_from_a_complete_one() {
        let complete = tcp4(None);
        assert!(punted_meta(&complete, 0).is_complete());
        // What Linux leaves with checksum offload: the folded pseudo-header sum.
        let len = (complete.len() - 34) as u32;
        let pseudo = fold(sum16(&complete[26..34], 6 + len));
        let partial = tcp4(Some(pseudo));
        let meta = punted_meta(&partial, 0);
        assert_eq!(meta.csum, Some((34, 16)));
        let gso = punted_meta(&partial, 1448);
        assert!(matches!(
            gso.gso,
            Some(Gso {
                kind: GsoKind::Tcp4,
                size: 1448,
                ..
            })
        ));
        // Neither: a broken checksum stays as it is (the receiver drops it, as it would).
        assert!(punted_meta(&tcp4(Some(0x1234)), 0).is_complete());
        assert!(punted_meta(&[0u8; 20], 0).is_complete());
    }
}
