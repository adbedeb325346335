//! Large frames with their offload metadata: what the virtio-net header says of a frame, as
//! a plain value nvo can carry from the port it came in on to the port it leaves by.
//!
//! ```text
//!   receive  Frames::next_frame_meta   a GSO frame (up to 64 KiB) stays whole and a partial
//!                                      checksum stays partial; FrameMeta says what is left
//!   forward  FramePort::send_meta      vnet_hdr port: one write, the header says it again, the
//!                                      kernel (veth peer, TAP reader) segments or not as it
//!                                      likes; other port: FrameMeta::finish in software first
//!   or       FrameMeta::finish         cut into MTU-sized segments with complete checksums
//!                                      (e.g. before VXLAN encapsulation)
//! ```
//!
//! A GSO frame's metadata always has `csum`: its L4 checksum field holds the pseudo-header sum
//! of the whole frame (`CHECKSUM_PARTIAL`, as a TCP sender leaves it). A frame the kernel
//! coalesced with GRO arrives without `NEEDS_CSUM` and with its first segment's checksum;
//! [`crate::Frames::next_frame_meta`] rewrites that field so the rule holds.

use std::cell::RefCell;
use std::io;

use crate::vnet::{
    self, Segmenter, VnetError, VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4,
    VNET_HDR_LEN,
};

/// Largest frame a port may hand over: a 64 KiB GSO frame plus its Ethernet and VLAN headers.
pub const MAX_FRAME: usize = 65_535 + 18;

/// The kind of a GSO frame: what its segments are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GsoKind {
    /// TCP over IPv4 (`VIRTIO_NET_HDR_GSO_TCPV4`).
    Tcp4,
    /// TCP over IPv6 (`VIRTIO_NET_HDR_GSO_TCPV6`).
    Tcp6,
    /// UDP datagrams of equal size, IPv4 or IPv6 (`VIRTIO_NET_HDR_GSO_UDP_L4`).
    Udp,
}

/// How a GSO frame is to be cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Gso {
    /// What the segments are.
    pub kind: GsoKind,
    /// Payload bytes per segment (the TCP MSS, or the UDP datagram payload size).
    pub size: u16,
    /// The sender uses ECN: CWR goes on the first segment only (`VIRTIO_NET_HDR_GSO_ECN`).
    pub ecn: bool,
}

/// What remains to be done to a frame before it is a valid frame on a wire; see the module
/// docs. The default is a complete frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FrameMeta {
    /// A GSO frame: to be cut into segments of `size` payload bytes.
    pub gso: Option<Gso>,
    /// A partial checksum: (`csum_start`, `csum_offset`) from the frame's start; the field at
    /// `start + offset` holds the pseudo-header sum, the sum from `start` to the end goes in.
    pub csum: Option<(u16, u16)>,
}

thread_local! {
    /// Where a port without the virtio-net header builds segments for
    /// [`crate::FramePort::send_meta`]: allocated once per thread, on first use.
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; MAX_FRAME].into_boxed_slice());
}

impl FrameMeta {
    /// A complete frame: nothing to do.
    pub const COMPLETE: FrameMeta = FrameMeta {
        gso: None,
        csum: None,
    };

    /// Whether the frame is ready for any wire as it is.
    pub fn is_complete(&self) -> bool {
        self.gso.is_none() && self.csum.is_none()
    }

    /// Reads a received frame's header, checks it against the frame and normalises a GSO frame
    /// without `NEEDS_CSUM` (see the module docs).
    pub(crate) fn from_vnet(hdr: &VnetHdr, frame: &mut [u8]) -> Result<FrameMeta, VnetError> {
        if hdr.is_gso() {
            let seg = Segmenter::new(frame, hdr)?;
            let kind = match hdr.gso_type & !GSO_ECN {
                GSO_TCPV4 => GsoKind::Tcp4,
                GSO_TCPV6 => GsoKind::Tcp6,
                _ => GsoKind::Udp,
            };
            if !hdr.needs_checksum() {
                seg.set_partial_checksum(frame);
            }
            return Ok(FrameMeta {
                gso: Some(Gso {
                    kind,
                    size: hdr.gso_size,
                    ecn: hdr.gso_type & GSO_ECN != 0,
                }),
                csum: Some((hdr.csum_start, seg.checksum_offset())),
            });
        }
        if !hdr.needs_checksum() {
            return Ok(FrameMeta::COMPLETE);
        }
        let field = usize::from(hdr.csum_start) + usize::from(hdr.csum_offset);
        if field + 2 > frame.len() {
            return Err(VnetError::Malformed);
        }
        Ok(FrameMeta {
            gso: None,
            csum: Some((hdr.csum_start, hdr.csum_offset)),
        })
    }

    /// The virtio-net header that asks the kernel for this metadata, checked against `frame`.
    pub(crate) fn vnet_header(&self, frame: &[u8]) -> io::Result<[u8; VNET_HDR_LEN]> {
        let hdr = self.vnet_fields(frame)?;
        Ok(hdr.emit())
    }

    /// The header fields, checked against `frame` as a received one would be.
    fn vnet_fields(&self, frame: &[u8]) -> io::Result<VnetHdr> {
        let mut hdr = VnetHdr::default();
        if let Some((start, offset)) = self.csum {
            hdr.flags = F_NEEDS_CSUM;
            hdr.csum_start = start;
            hdr.csum_offset = offset;
            if usize::from(start) + usize::from(offset) + 2 > frame.len() {
                return Err(invalid(self, frame, "checksum field past the end"));
            }
        }
        let Some(gso) = self.gso else {
            return Ok(hdr);
        };
        if self.csum.is_none() {
            return Err(invalid(self, frame, "a gso frame needs a partial checksum"));
        }
        hdr.gso_type = match gso.kind {
            GsoKind::Tcp4 => GSO_TCPV4,
            GsoKind::Tcp6 => GSO_TCPV6,
            GsoKind::Udp => GSO_UDP_L4,
        };
        if gso.ecn {
            hdr.gso_type |= GSO_ECN;
        }
        hdr.gso_size = gso.size;
        let seg = Segmenter::new(frame, &hdr).map_err(|e| invalid(self, frame, describe(e)))?;
        hdr.hdr_len = seg.headers() as u16;
        Ok(hdr)
    }

    /// Makes `frame` complete in software: a GSO frame is cut into segments (sequence numbers,
    /// lengths, IPv4 IDs and checksums as the kernel's GSO makes them), a partial checksum is
    /// completed; each resulting frame, built in `scratch` when it differs from `frame`, goes
    /// to `each` in order. A complete frame goes to `each` as it is. Returns how many frames
    /// were produced; stops at the first error of `each`. `InvalidInput` when the metadata
    /// does not fit the frame or `scratch` is shorter than a segment ([`crate::MAX_FRAME`]
    /// always suffices).
    pub fn finish(
        &self,
        frame: &[u8],
        scratch: &mut [u8],
        each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        if self.is_complete() {
            each(frame)?;
            return Ok(1);
        }
        let hdr = self.vnet_fields(frame)?;
        let short = || invalid(self, frame, "scratch buffer too short");
        if hdr.is_gso() {
            let seg = Segmenter::new(frame, &hdr).map_err(|e| invalid(self, frame, describe(e)))?;
            for k in 0..seg.count() {
                let len = seg.write(frame, k, scratch).ok_or_else(short)?;
                each(&scratch[..len])?;
            }
            return Ok(seg.count());
        }
        let copy = scratch.get_mut(..frame.len()).ok_or_else(short)?;
        copy.copy_from_slice(frame);
        vnet::complete_checksum(copy, &hdr).map_err(|e| invalid(self, frame, describe(e)))?;
        each(copy)?;
        Ok(1)
    }

    /// [`FrameMeta::finish`] with this thread's scratch buffer, for ports that cannot take the
    /// metadata themselves.
    pub fn finish_here(
        &self,
        frame: &[u8],
        each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch
                .try_borrow_mut()
                .map_err(|_| io::Error::other("send_meta called again from inside its own send"))?;
            self.finish(frame, &mut scratch, each)
        })
    }
}

fn describe(e: VnetError) -> &'static str {
    match e {
        VnetError::Malformed => "headers do not match the frame",
        VnetError::UnsupportedGso(_) => "unsupported gso type",
    }
}

fn invalid(meta: &FrameMeta, frame: &[u8], why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "frame metadata {meta:?} does not fit a frame of {} bytes: {why}",
            frame.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    /// A TCP/IPv4 frame of `payload` bytes whose checksum field holds the pseudo-header sum,
    /// as a TSO sender leaves it, and the header a kernel would put before it.
    fn tso_frame(payload: usize) -> (Vec<u8>, VnetHdr) {
        let mut frame = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 80, 1, 65535)
            .write(&mut frame, &vec![7; payload])
            .unwrap();
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            gso_size: 1000,
            csum_start: 34,
            csum_offset: 16,
            ..VnetHdr::default()
        };
        let seg = Segmenter::new(&frame, &hdr).unwrap();
        seg.set_partial_checksum(&mut frame);
        (frame, hdr)
    }

    #[test]
    fn metadata_round_trips_through_the_vnet_header() {
        let (mut frame, hdr) = tso_frame(2500);
        let meta = FrameMeta::from_vnet(&hdr, &mut frame).unwrap();
        let gso = Gso {
            kind: GsoKind::Tcp4,
            size: 1000,
            ecn: false,
        };
        assert_eq!(meta.gso, Some(gso));
        assert_eq!(meta.csum, Some((34, 16)));
        let back = VnetHdr::parse(&meta.vnet_header(&frame).unwrap());
        assert_eq!(back, VnetHdr { hdr_len: 54, ..hdr });
        assert_eq!(FrameMeta::default(), FrameMeta::COMPLETE);
        assert!(FrameMeta::COMPLETE.vnet_header(&frame).unwrap() == [0; VNET_HDR_LEN]);
    }

    #[test]
    fn gro_frames_get_a_partial_checksum() {
        let (mut frame, hdr) = tso_frame(2500);
        let partial = frame.clone();
        frame[50..52].copy_from_slice(&[0xde, 0xad]); // a first segment's checksum
        let gro = VnetHdr { flags: 0, ..hdr };
        let meta = FrameMeta::from_vnet(&gro, &mut frame).unwrap();
        assert_eq!(meta.csum, Some((34, 16)));
        assert_eq!(frame, partial);
    }

    #[test]
    fn finish_segments_and_refuses_what_does_not_fit() {
        let (mut frame, hdr) = tso_frame(2500);
        let meta = FrameMeta::from_vnet(&hdr, &mut frame).unwrap();
        let mut scratch = vec![0; MAX_FRAME];
        let mut lens = Vec::new();
        let n = meta
            .finish(&frame, &mut scratch, &mut |f| {
                lens.push(f.len());
                Ok(())
            })
            .unwrap();
        assert_eq!((n, lens), (3, vec![1054, 1054, 554]));

        let mut short = vec![0; 100];
        let err = meta
            .finish(&frame, &mut short, &mut |_| Ok(()))
            .unwrap_err();
        assert!(err.to_string().contains("scratch"), "{err}");
        let no_csum = FrameMeta { csum: None, ..meta };
        let err = no_csum
            .finish(&frame, &mut scratch, &mut |_| Ok(()))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let past_end = FrameMeta {
            gso: None,
            csum: Some((34, 6000)),
        };
        assert!(past_end.vnet_header(&frame).is_err());
        let mut count = 0;
        FrameMeta::COMPLETE
            .finish(&frame, &mut short, &mut |f| {
                assert_eq!(f, &frame[..]);
                count += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(count, 1, "a complete frame goes out as it is");
    }
}
