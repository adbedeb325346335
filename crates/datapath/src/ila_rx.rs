//! A packet read from the ILA TUN, through the pipeline to its container (ila.rs says how the
//! TUN is read).
//!
//! ```text
//!  frame = placeholder Ethernet header + packet, FrameMeta (a GSO packet: Tcp6, size, csum)
//!    → Pipeline::from_ila(packet) → [Reply { port, len = frame's }]: the packet, destination
//!      translated back, behind the gateway's Ethernet header — same offsets, and the partial
//!      checksum (a pseudo-header sum) unchanged by the checksum-neutral translation, so the
//!      metadata holds: Ports::send_meta, whole (or cut in software for a port that cannot
//!      take it)
//!    → anything else (a drop, an NS probe): performed as for a complete packet
//!  a GSO packet for an IPv4 tenant (identifier type 2, l3::ila4): cut in software first,
//!    each segment through as a complete packet — SIIT makes it 20 bytes shorter and its
//!    TCP checksum adjustment (RFC 1624) is for a finished checksum, not a partial one
//! ```

use nvo_io::{FrameMeta, ILA_PACKET_AT};
use nvo_pipeline::{Action, TxTarget};

use crate::forward::{outcome, Core, Seen};
use crate::ila;

/// Runs `frame` ([`ILA_PACKET_AT`] bytes of placeholder Ethernet header, then a packet read
/// from the ILA TUN, with `meta`) through the pipeline and performs what it says.
pub(crate) fn receive(core: &mut Core, frame: &[u8], meta: &FrameMeta) {
    if !meta.is_complete() && !whole(frame) {
        let mut scratch = std::mem::take(&mut core.finish_scratch);
        let finished = meta.finish(frame, &mut scratch, &mut |segment| {
            receive(core, segment, &FrameMeta::COMPLETE);
            Ok(())
        });
        core.finish_scratch = scratch;
        if finished.is_err() {
            core.ila.stats.rx_refused += 1;
        }
        return;
    }
    let packet = frame.get(ILA_PACKET_AT..).unwrap_or_default();
    core.seen = Seen::Underlay {
        src: ila::source(packet),
        port: 0,
    };
    core.seen_vni = None;
    core.pipeline.from_ila(packet, &mut core.actions);
    if let (false, &[Action::Reply { port, len }]) = (meta.is_complete(), core.actions.as_slice()) {
        if len == frame.len() {
            let reply = core.pipeline.scratch().get(..len).unwrap_or_default();
            let outcome = outcome(core.ports.send_meta(port, reply, meta));
            core.pipeline.count_tx(TxTarget::Port(port), len, outcome);
            return;
        }
    }
    core.perform(packet, &FrameMeta::COMPLETE);
}

/// Whether a GSO packet read from the TUN can be translated back whole: its destination's
/// identifier is the IPv6 virtual-network type (3, l3::ila), whose mapping is checksum-neutral
/// and keeps the length.
fn whole(frame: &[u8]) -> bool {
    // The identifier's first byte: the packet's destination address (24..40) + 8.
    frame.get(ILA_PACKET_AT + 32).map(|b| b >> 5) == Some(3)
}
