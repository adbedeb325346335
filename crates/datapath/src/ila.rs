//! ILA's I/O (the pipeline's `l3::ila` decides): the node's queue of the ILA TUN device
//! (`nvo_io::IlaTun`), opened at start when nvod has an `ila_locator`.
//!
//! ```text
//!  Action::SendIla { locator, offset } → the destination translated SIR → ILA once
//!      (l3::ila::translate_egress on the fixed header), the packet written whole: a TCP/IPv6
//!      GSO frame from a port in one writev with its virtio-net header (the kernel segments it
//!      at the underlay device, or passes it on as GSO); anything else the TUN does not take
//!      (UDP GSO, a TUN without the header) finished in software first, segment by segment;
//!      an IPv4 tenant's packet (always finished first: SIIT changes its length) translated
//!      to IPv6 segment by segment (l3::ila4::translate_egress) and written as it is
//!  TUN readable → read up to ROUNDS packets (a GRO'd/GSO packet whole, with its FrameMeta)
//!      → Pipeline::from_ila → actions; the delivery (a Reply with the translated-back
//!      packet) goes to the port with the packet's metadata: the port's kernel or nvod's
//!      software GSO (Ports::send_meta) segments it if it must; a GSO packet for an IPv4
//!      tenant is cut first (ila_rx.rs)
//! ```
//!
//! The translation touches only the destination address and is checksum-neutral (the
//! draft's C-bit mapping, extended in l3::ila), so a GSO frame translated once and its
//! segments translated one by one are the same bytes (tested below), and the partial checksum
//! a GSO frame carries (the pseudo-header sum) is the same before and after. A TUN has no multi-packet read, so a
//! wake-up drains up to [`ROUNDS`] reads into one buffer, handing each on before the next.

use std::io;
use std::net::{IpAddr, Ipv6Addr};

use nvo_io::{FrameMeta, IlaTun, IlaWritten, ILA_PACKET_AT};
use nvo_pipeline::l3::{ila::translate_egress, ila4};
use nvo_pipeline::{Pipeline, TxOutcome, TxTarget};

/// Most packets read from the TUN per wake-up, so that the ports and sockets get their turn.
pub const ROUNDS: usize = 256;

/// What the TUN path did with frames, beyond the pipeline's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IlaStats {
    /// GSO frames from ports written to the TUN whole (one write; the kernel segments).
    pub tx_gso_whole: u64,
    /// GSO frames from ports the TUN could not take whole, cut into segments in software
    /// first (UDP GSO, an IPv4 tenant's TCP, a TUN without offloads); a complete packet is
    /// not counted here, translated or not.
    pub tx_finished: u64,
    /// GSO packets read from the TUN (GRO'd or never segmented) and handed on whole.
    pub rx_gso_whole: u64,
    /// Packets read whose virtio-net header did not fit them (or, for an IPv4 tenant, that
    /// could not be cut in software): dropped.
    pub rx_refused: u64,
}

/// The TUN queue and its buffer.
#[derive(Debug, Default)]
pub struct Ila {
    /// None when the node has no ILA locator.
    pub tun: Option<IlaTun>,
    buf: Vec<u8>,
    /// An IPv4 tenant's packet translated to IPv6 (SIIT makes it 20 bytes longer).
    v4: Vec<u8>,
    /// What went whole and what was finished in software.
    pub stats: IlaStats,
}

impl Ila {
    /// The worker's queue of the ILA TUN, routed `locator`/64; nothing without a locator.
    pub fn open(locator: Option<std::net::Ipv6Addr>) -> io::Result<Ila> {
        let tun = locator.map(IlaTun::open).transpose()?;
        Ok(Ila {
            tun,
            buf: vec![0; nvo_io::MAX_FRAME],
            v4: vec![0; nvo_io::MAX_FRAME],
            stats: IlaStats::default(),
        })
    }

    /// Performs `Action::SendIla` on `frame` (the IPv6 packet at `offset`), counting each
    /// packet sent or failed in `pipeline` (a GSO frame as the segments it stands for);
    /// `scratch` takes the segments of a frame finished in software.
    pub fn send(
        &mut self,
        pipeline: &mut Pipeline,
        scratch: &mut [u8],
        (frame, meta): (&[u8], &FrameMeta),
        (locator, vni, offset): (u64, nvo_pipeline::Vni, usize),
    ) {
        let Ila { tun, v4, stats, .. } = self;
        let (Some(tun), here) = (tun.as_ref(), pipeline.ila_locator()) else {
            pipeline.count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
            return;
        };
        let ipv4 = frame.get(offset).map(|b| b >> 4) == Some(4);
        let mut write = |seg: &[u8], meta: &FrameMeta| -> io::Result<IlaWritten> {
            let packet = seg.get(offset..).unwrap_or_default();
            if ipv4 {
                // An IPv4 tenant's segment: translated to IPv6 (l3::ila4), written as it is.
                let here = here.ok_or_else(|| io::Error::other("no ila locator configured"))?;
                let len = ila4::translate_egress(packet, (here, locator), vni, v4)
                    .map_err(io::Error::other)?;
                let v6 = v4.get(..len).unwrap_or_default();
                let dst: [u8; 16] = v6
                    .get(24..40)
                    .and_then(|d| d.try_into().ok())
                    .ok_or_else(|| io::Error::other("translated packet cut short"))?;
                return tun.write_packet(v6, 0, &dst, &FrameMeta::COMPLETE);
            }
            let dst = egress_destination(packet, locator, vni)
                .ok_or_else(|| io::Error::other("not an ipv6 sir destination"))?;
            tun.write_packet(seg, offset, &dst, meta)
        };
        if !ipv4 && tun.takes(meta) {
            let packet_len = frame.len().saturating_sub(offset);
            match write(frame, meta) {
                Ok(w) => {
                    if meta.gso.is_some() {
                        stats.tx_gso_whole += 1;
                    }
                    let size = meta.gso.map_or(packet_len, |g| usize::from(g.size));
                    for len in segment_lens(packet_len, w, size) {
                        pipeline.count_tx(TxTarget::Underlay, len, TxOutcome::Sent);
                    }
                }
                Err(_) => pipeline.count_tx(TxTarget::Underlay, packet_len, TxOutcome::Failed),
            }
            return;
        }
        // Counted only when something is cut: an IPv4 tenant's complete packet goes through
        // `finish` as it is (translated, not cut).
        if meta.gso.is_some() {
            stats.tx_finished += 1;
        }
        let mut each = |seg: &[u8]| -> io::Result<()> {
            let outcome = match write(seg, &FrameMeta::COMPLETE) {
                Ok(_) => TxOutcome::Sent,
                Err(_) => TxOutcome::Failed,
            };
            let len = seg.len().saturating_sub(offset);
            pipeline.count_tx(TxTarget::Underlay, len, outcome);
            Ok(())
        };
        if meta.finish(frame, scratch, &mut each).is_err() {
            pipeline.count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
        }
    }

    /// Reads one packet from the TUN into the buffer, which is lent out (give it back with
    /// [`Ila::give_back`]) with the frame's length (the packet at `ILA_PACKET_AT`, behind a
    /// placeholder Ethernet header) and metadata; None when there is nothing to read (or no
    /// TUN). A packet whose virtio-net header does not fit it is dropped here, counted.
    pub fn recv(&mut self) -> Option<(Vec<u8>, usize, FrameMeta)> {
        let tun = self.tun.as_ref()?;
        // Refused packets are skipped, at most a wake-up's worth of them.
        for _ in 0..ROUNDS {
            match tun.read_packet(&mut self.buf) {
                Ok((len, meta)) => {
                    if meta.gso.is_some() {
                        self.stats.rx_gso_whole += 1;
                    }
                    let frame_len = ILA_PACKET_AT + len;
                    return Some((std::mem::take(&mut self.buf), frame_len, meta));
                }
                Err(e) if e.kind() == io::ErrorKind::InvalidData => self.stats.rx_refused += 1,
                Err(_) => return None,
            }
        }
        None
    }

    /// Takes the buffer [`Ila::recv`] lent back.
    pub fn give_back(&mut self, buf: Vec<u8>) {
        self.buf = buf;
    }
}

/// The ILA destination of IPv6 packet `packet` (`translate_egress` on a copy of its fixed
/// header: the packet itself is written around it, not copied).
fn egress_destination(packet: &[u8], locator: u64, vni: nvo_pipeline::Vni) -> Option<[u8; 16]> {
    let mut head: [u8; 40] = packet.get(..40)?.try_into().ok()?;
    translate_egress(&mut head, locator, vni)?;
    head[24..40].try_into().ok()
}

/// The lengths of the packets a write stands for: `packet_len` for one packet, each
/// segment's (headers + up to `size` payload bytes) for a GSO packet.
fn segment_lens(packet_len: usize, w: IlaWritten, size: usize) -> impl Iterator<Item = usize> {
    let payload = packet_len.saturating_sub(w.headers);
    (0..w.segments).map(move |k| {
        if w.segments == 1 {
            return packet_len;
        }
        w.headers + size.min(payload.saturating_sub(k * size))
    })
}

/// The source address of an IPv6 packet, for the monitor's origin (unspecified if cut short).
pub fn source(packet: &[u8]) -> IpAddr {
    let src: [u8; 16] = packet
        .get(8..24)
        .and_then(|s| s.try_into().ok())
        .unwrap_or_default();
    IpAddr::V6(Ipv6Addr::from(src))
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};
    use nvo_io::{Gso, GsoKind};
    use nvo_pipeline::Vni;

    const LOCATOR: u64 = 0xfd00_001a_0000_0002;
    const VNI: Vni = Vni(900);

    /// A TCP GSO frame fd10::1 → fd10::2 as a container's veth hands it over: Ethernet, IPv6,
    /// TCP, `payload` bytes, to be cut at 1000 bytes (MSS).
    fn gso_frame(payload: usize) -> (Vec<u8>, FrameMeta) {
        let sir = |last: u8| {
            let mut a = [0u8; 16];
            a[..2].copy_from_slice(&[0xfd, 0x10]);
            a[15] = last;
            a
        };
        let data: Vec<u8> = (0..payload).map(|i| (i * 7) as u8).collect();
        let mut frame = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv6(sir(1), sir(2), 64)
            .tcp(40000, 5201, 1, 65535)
            .ack(1)
            .psh()
            .write(&mut frame, &data)
            .unwrap();
        let gso = Gso {
            kind: GsoKind::Tcp6,
            size: 1000,
            ecn: false,
        };
        let meta = FrameMeta {
            gso: Some(gso),
            csum: Some((54, 16)),
        };
        (frame, meta)
    }

    fn segments(frame: &[u8], meta: &FrameMeta) -> Vec<Vec<u8>> {
        let mut scratch = vec![0; nvo_io::MAX_FRAME];
        let mut out = Vec::new();
        meta.finish(frame, &mut scratch, &mut |s| {
            out.push(s.to_vec());
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn a_gso_frame_translated_once_is_its_segments_translated_one_by_one() {
        let (frame, meta) = gso_frame(3500);
        // What nvod now writes (the destination translated once, the kernel cuts the rest) …
        let mut once = frame.clone();
        let dst = egress_destination(&once[14..], LOCATOR, VNI).unwrap();
        once[14 + 24..14 + 40].copy_from_slice(&dst);
        let whole = segments(&once, &meta);
        // … against what it wrote before: cut in software, each segment translated.
        let one_by_one: Vec<Vec<u8>> = segments(&frame, &meta)
            .into_iter()
            .map(|mut s| {
                translate_egress(&mut s[14..], LOCATOR, VNI).unwrap();
                s
            })
            .collect();
        assert_eq!(whole.len(), 4);
        assert_eq!(whole, one_by_one, "byte-equal segments");
        for seg in &whole {
            let p = SlicedPacket::from_ethernet(seg).unwrap();
            let (Some(etherparse::NetSlice::Ipv6(ip)), Some(TransportSlice::Tcp(tcp))) =
                (p.net, p.transport)
            else {
                panic!("not tcp over ipv6");
            };
            let want = tcp
                .to_header()
                .calc_checksum_ipv6(&ip.header().to_header(), tcp.payload())
                .unwrap();
            assert_eq!(
                tcp.checksum(),
                want,
                "the tcp checksum holds over the ila address"
            );
            assert_eq!(ip.header().destination(), dst);
        }
    }

    #[test]
    fn a_write_counts_the_segments_it_stands_for() {
        let w = IlaWritten {
            segments: 4,
            headers: 60,
        };
        let lens: Vec<usize> = segment_lens(60 + 3500, w, 1000).collect();
        assert_eq!(lens, [1060, 1060, 1060, 560]);
        let one = IlaWritten {
            segments: 1,
            headers: 0,
        };
        assert_eq!(segment_lens(1280, one, 1280).collect::<Vec<_>>(), [1280]);
    }

    #[test]
    fn packets_without_an_ipv6_sir_destination_have_no_ila_destination() {
        assert_eq!(egress_destination(&[0x60; 39], LOCATOR, VNI), None);
        let (frame, _) = gso_frame(10);
        let mut v4ish = frame[14..].to_vec();
        v4ish[0] = 0x45;
        assert_eq!(egress_destination(&v4ish, LOCATOR, VNI), None);
    }
}
