//! Overlay probes (docs/design/overlay.md, "Probes and the prober"): overlay packets with VNI 0
//! whose payload is `"NVOP"`, type (1 request, 2 reply), run ID and sequence number. A node
//! answers a request addressed to it along its own route to the sender; the sender matches
//! replies to its runs and measures the round trip. Runs are bounded ([`MAX_RUNS`], at most
//! [`MAX_COUNT`] probes each); a run is read once and forgotten.

use std::net::SocketAddr;
use std::time::Instant;

use nvo_io::OuterValues;
use nvo_pipeline::overlay::{App, Arrival, Hop, NodeId};
use nvo_wire::overlay::{Application, OverlayPacket, OverlayRepr, HEADER_LEN};

use super::forward::{queue, Core};
use super::overlay::PORT;
use super::probes::{Run, MAX_COUNT, MAX_RUNS, PROBE_VNI};

const MAGIC: &[u8; 4] = b"NVOP";
const REQUEST: u8 = 1;
const REPLY: u8 = 2;
const BODY: usize = 13;
const TTL: u8 = 64;

impl Core {
    /// Starts run `id`: `count` requests to `dst`, straight along the routes or first to the
    /// locator of `via`. False when too many runs are in flight or `id` is taken.
    pub(super) fn probe_start(
        &mut self,
        id: u32,
        dst: NodeId,
        via: Option<NodeId>,
        count: u32,
        now: Instant,
    ) -> bool {
        if self.probes.runs.len() >= MAX_RUNS || self.probes.runs.contains_key(&id) {
            return false;
        }
        let count = count.clamp(1, MAX_COUNT);
        let mut run = Run {
            sent: Vec::with_capacity(count as usize),
            started: now,
        };
        for seq in 0..count {
            self.send_probe(REQUEST, id, seq, dst, via);
            run.sent.push((now, None));
        }
        self.probes.runs.insert(id, run);
        true
    }

    /// Takes the probe payload of an overlay packet for this node; true when it was a probe.
    pub(super) fn probe_received(
        &mut self,
        arrival: &Arrival,
        packet: &[u8],
        now: Instant,
    ) -> bool {
        if arrival.vni.0 != PROBE_VNI {
            return false;
        }
        let Some(body) = packet.get(HEADER_LEN..HEADER_LEN + BODY) else {
            return true;
        };
        if &body[..4] != MAGIC {
            return true;
        }
        let id = u32::from_be_bytes([body[5], body[6], body[7], body[8]]);
        let seq = u32::from_be_bytes([body[9], body[10], body[11], body[12]]);
        match body[4] {
            REQUEST => self.send_probe(REPLY, id, seq, arrival.src, None),
            REPLY => {
                if let Some(slot) = self
                    .probes
                    .runs
                    .get_mut(&id)
                    .and_then(|r| r.sent.get_mut(seq as usize))
                {
                    if slot.1.is_none() {
                        slot.1 = Some(now.duration_since(slot.0));
                    }
                }
            }
            _ => {}
        }
        true
    }

    /// Sends one probe packet for `dst`: along the routes, or with `via` straight to a locator
    /// of that node whatever the routes say (`via == dst` measures the direct path even while
    /// a route sends the destination's traffic through a relay).
    fn send_probe(&mut self, kind: u8, id: u32, seq: u32, dst: NodeId, via: Option<NodeId>) {
        let Some(at) = self
            .underlays
            .find(nvo_encap::profile::Transport::Udp(PORT))
        else {
            return;
        };
        let mut packet = [0u8; HEADER_LEN + BODY];
        let repr = OverlayRepr {
            app: Application::Ethernet,
            ttl: TTL,
            flags: 0,
            vni: PROBE_VNI,
            flow_hash: id,
            dst_node: dst.0,
            src_node: self.overlay.own().0,
        };
        if repr
            .emit(&mut OverlayPacket::new_unchecked(&mut packet[..]))
            .is_err()
        {
            return;
        }
        packet[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(MAGIC);
        packet[HEADER_LEN + 4] = kind;
        packet[HEADER_LEN + 5..HEADER_LEN + 9].copy_from_slice(&id.to_be_bytes());
        packet[HEADER_LEN + 9..].copy_from_slice(&seq.to_be_bytes());
        let mut hops = std::mem::take(&mut self.hops);
        match via {
            Some(v) => {
                hops.clear();
                if let Some(addr) = self
                    .overlay
                    .locators(v)
                    .and_then(|l| nvo_pipeline::overlay::pick(l, id))
                {
                    hops.push(Hop::Locator(addr));
                }
            }
            None => self
                .overlay
                .forward(App::Ethernet, dst, id, None, &mut hops),
        }
        for hop in &hops {
            if let Hop::Locator(addr) = *hop {
                queue(
                    &mut self.underlays,
                    &mut self.pipeline,
                    at,
                    (
                        SocketAddr::new(addr, PORT),
                        id as u16,
                        OuterValues::default(),
                    ),
                    &[],
                    &packet,
                );
            }
        }
        self.hops = hops;
    }
}
