//! ILA's I/O (the pipeline's `l3::ila` decides): the node's queue of the ILA TUN device
//! (`nvo_io::IlaTun`), opened at start when nvod has an `ila_locator`.
//!
//! ```text
//!  Action::SendIla { locator, offset } → each packet (a GSO frame finished in software
//!      first) copied, destination translated SIR → ILA (l3::ila::translate_egress; an IPv4
//!      packet translated to IPv6, l3::ila4::translate_egress), written to the TUN: the
//!      kernel routes it on the underlay, no tunnel header
//!  TUN readable → read up to ROUNDS packets → Pipeline::from_ila → actions (a Reply
//!      delivers the translated-back packet to its container)
//! ```
//!
//! One system call per packet each way: ILA has no batched TUN I/O yet.

use std::io;
use std::net::{IpAddr, Ipv6Addr};

use nvo_io::{FrameMeta, IlaTun};
use nvo_pipeline::l3::{ila::translate_egress, ila4};
use nvo_pipeline::{Pipeline, TxOutcome, TxTarget};

/// Most packets read from the TUN per wake-up, so that the ports and sockets get their turn.
pub const ROUNDS: usize = 256;

/// The TUN queue and its buffer.
#[derive(Debug, Default)]
pub struct Ila {
    /// None when the node has no ILA locator.
    pub tun: Option<IlaTun>,
    buf: Vec<u8>,
}

impl Ila {
    /// The worker's queue of the ILA TUN, routed `locator`/64; nothing without a locator.
    pub fn open(locator: Option<std::net::Ipv6Addr>) -> io::Result<Ila> {
        let tun = locator.map(IlaTun::open).transpose()?;
        Ok(Ila {
            tun,
            buf: vec![0; nvo_io::MAX_FRAME],
        })
    }

    /// Performs `Action::SendIla` on `frame` (the IPv6 packet at `offset`), counting each
    /// packet sent or failed in `pipeline`; `scratch` takes the segments of a GSO frame.
    pub fn send(
        &mut self,
        pipeline: &mut Pipeline,
        scratch: &mut [u8],
        (frame, meta): (&[u8], &FrameMeta),
        (locator, vni, offset): (u64, nvo_pipeline::Vni, usize),
    ) {
        let Ila { tun, buf } = self;
        let here = pipeline.ila_locator();
        let mut send = |packet: &[u8]| -> io::Result<()> {
            let packet = packet.get(offset..).unwrap_or_default();
            let len = match (packet.first().map(|b| b >> 4), here) {
                // An IPv4 tenant's packet: translated to IPv6 (l3::ila4), 20 bytes longer.
                (Some(4), Some(here)) => ila4::translate_egress(packet, (here, locator), vni, buf)
                    .map_err(io::Error::other)?,
                _ => {
                    let copy = buf
                        .get_mut(..packet.len())
                        .ok_or_else(|| io::Error::other("packet longer than the ila buffer"))?;
                    copy.copy_from_slice(packet);
                    translate_egress(copy, locator, vni)
                        .ok_or_else(|| io::Error::other("not an ipv6 sir destination"))?;
                    packet.len()
                }
            };
            let copy = buf.get(..len).unwrap_or_default();
            let sent = match tun {
                Some(tun) => tun.write(copy),
                None => Err(io::Error::other("no ila locator configured")),
            };
            let outcome = if sent.is_ok() {
                TxOutcome::Sent
            } else {
                TxOutcome::Failed
            };
            pipeline.count_tx(TxTarget::Underlay, copy.len(), outcome);
            Ok(())
        };
        if meta.finish(frame, scratch, &mut send).is_err() {
            pipeline.count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
        }
    }

    /// Reads one packet from the TUN into the buffer, which is lent out with its length (give it
    /// back with [`Ila::give_back`]); None when there is nothing to read (or no TUN).
    pub fn recv(&mut self) -> Option<(Vec<u8>, usize)> {
        let tun = self.tun.as_ref()?;
        let n = tun.read(&mut self.buf).ok()?;
        Some((std::mem::take(&mut self.buf), n))
    }

    /// Takes the buffer [`Ila::recv`] lent back.
    pub fn give_back(&mut self, buf: Vec<u8>) {
        self.buf = buf;
    }
}

/// The source address of an IPv6 packet, for the monitor's origin (unspecified if cut short).
pub fn source(packet: &[u8]) -> IpAddr {
    let src: [u8; 16] = packet
        .get(8..24)
        .and_then(|s| s.try_into().ok())
        .unwrap_or_default();
    IpAddr::V6(Ipv6Addr::from(src))
}
