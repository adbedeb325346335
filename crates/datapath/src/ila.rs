//! ILA's I/O (the pipeline's `l3::ila` decides): the node's queue of the ILA TUN device
//! (`nvo_io::IlaTun`), opened at start when nvod has an `ila_locator`.
//!
//! ```text
//!  Action::SendIla { locator, offset } → each packet (a GSO frame finished in software
//!      first) copied, destination translated SIR → ILA (l3::ila::translate_egress), written
//!      to the TUN: the kernel routes it on the underlay, no tunnel header
//!  TUN readable → read up to ROUNDS packets → Pipeline::from_ila → actions (a Reply
//!      delivers the translated-back packet to its container)
//! ```
//!
//! One system call per packet each way: ILA has no batched TUN I/O yet.

use std::io;
use std::net::{IpAddr, Ipv6Addr};

use nvo_io::{FrameMeta, IlaTun};
use nvo_pipeline::l3::ila::translate_egress;
use nvo_pipeline::{TxOutcome, TxTarget};

use crate::forward::{Core, Forwarder, Seen};

/// Most packets read from the TUN per wake-up, so that the ports and sockets get their turn.
const ROUNDS: usize = 256;

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
}

impl Core {
    /// Performs `Action::SendIla` on `frame` (the IPv6 packet at `offset`).
    pub(super) fn send_ila(&mut self, frame: &[u8], meta: &FrameMeta, locator: u64, offset: usize) {
        let Core {
            ila,
            pipeline,
            finish_scratch,
            ..
        } = self;
        let Ila { tun, buf } = ila;
        let mut send = |packet: &[u8]| -> io::Result<()> {
            let packet = packet.get(offset..).unwrap_or_default();
            let copy = buf
                .get_mut(..packet.len())
                .ok_or_else(|| io::Error::other("packet longer than the ila buffer"))?;
            copy.copy_from_slice(packet);
            translate_egress(copy, locator)
                .ok_or_else(|| io::Error::other("not an ipv6 sir destination"))?;
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
        if meta.finish(frame, finish_scratch, &mut send).is_err() {
            pipeline.count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
        }
    }
}

/// Reads what the TUN holds and forwards it; whether anything came.
pub(super) fn drain(fwd: &mut Forwarder) -> bool {
    let mut got = false;
    for _ in 0..ROUNDS {
        let core = &mut fwd.core;
        let Some(tun) = &core.ila.tun else {
            return got;
        };
        let mut buf = std::mem::take(&mut core.ila.buf);
        let n = match tun.read(&mut buf) {
            Ok(n) => n,
            Err(_) => {
                core.ila.buf = buf;
                return got;
            }
        };
        got = true;
        let packet = &buf[..n];
        // For the monitor: from the packet's source, over IPv6 itself (no tunnel).
        let src: [u8; 16] = packet
            .get(8..24)
            .and_then(|s| s.try_into().ok())
            .unwrap_or_default();
        let src = IpAddr::V6(Ipv6Addr::from(src));
        core.seen = Seen::Underlay { src, port: 0 };
        core.seen_vni = None;
        core.pipeline.from_ila(packet, &mut core.actions);
        core.perform(packet, &FrameMeta::COMPLETE);
        core.ila.buf = buf;
    }
    got
}
