//! The routed overlay in the datapath (issue 6, docs/design/overlay.md): frames for a node ID go
//! out along the overlay routes, and overlay packets for another node are relayed as they are.
//!
//! ```text
//!  EncapNode{node, …}  → tables.forward(app, node, flow) → for each locator: the overlay
//!                        header (dst = node, src = this node, flow hash = the entropy) + frame
//!  UDP 60002 packet    → header parsed; tables.forward(app, dst, flow, exclude = where it came
//!                        from) → Local: decapsulated here (dst is this node, or this node is a
//!                        member of dst's tree) · Locator: relayed, TTL − 1, nothing else changed
//! ```
//!
//! A relay never decapsulates: the header and payload go on byte for byte but for the TTL. A
//! packet that arrives with TTL ≤ 1 is not relayed (`ttl_expired`, drop reason `hop_limit`).

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use nvo_encap::profile::ProfileId;
use nvo_io::OuterValues;
use nvo_pipeline::overlay::{App, Hop, NodeId};
use nvo_pipeline::{DropReason, TxOutcome, TxTarget, Vni};
use nvo_wire::overlay::OverlayPacket;
use nvo_wire::overlay::HEADER_LEN;
use nvo_wire::ports;

use super::forward::{queue, Core, Seen};
use super::monitor::{Dest, Layer, Origin, Record, What};

/// The overlay's UDP port, as the engine names the transport.
pub const PORT: u16 = ports::OVERLAY;

impl Core {
    /// Sends `frame` of network `vni` to overlay node `node` along its route.
    pub(super) fn encap_node(
        &mut self,
        node: NodeId,
        vni: Vni,
        entropy: u16,
        profile: ProfileId,
        frame: &[u8],
    ) {
        let mut hops = std::mem::take(&mut self.hops);
        hops.clear();
        self.overlay
            .forward(App::Ethernet, node, u32::from(entropy), None, &mut hops);
        let own = self.overlay.own();
        let Some(at) = self
            .underlays
            .find(nvo_encap::profile::Transport::Udp(PORT))
        else {
            self.hops = hops;
            return self
                .pipeline
                .count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
        };
        let outer = self.underlays.inherited(frame, false);
        for hop in &hops {
            // The sender delivered to its own ports already (the pipeline's flood): a tree
            // that lists this node adds nothing here.
            let Hop::Locator(addr) = *hop else { continue };
            let Ok(header) = self
                .engine
                .header(profile, vni.0, addr, entropy, frame.len())
            else {
                self.pipeline
                    .count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
                continue;
            };
            let mut buf = [0u8; HEADER_LEN];
            let Some(h) = header.get(..HEADER_LEN) else {
                continue;
            };
            buf.copy_from_slice(h);
            let mut packet = OverlayPacket::new_unchecked(&mut buf[..]);
            packet.set_dst_node(node.0);
            packet.set_src_node(own.0);
            packet.set_flow_hash(u32::from(entropy));
            queue(
                &mut self.underlays,
                &mut self.pipeline,
                at,
                (SocketAddr::new(addr, PORT), entropy, outer),
                &buf,
                frame,
            );
        }
        self.hops = hops;
    }

    /// An overlay packet (the UDP payload on port 60002) from underlay address `src`: routed by
    /// its destination node first — relayed as it is (TTL − 1) to every next hop but the one it
    /// came from, and delivered here when this node is its destination or a member of its tree.
    pub(super) fn overlay_packet(&mut self, src: IpAddr, packet: &[u8], now: Instant) {
        // Destination node 0: a plain tunnel to a locator (a network on the overlay profile
        // with a flood list and remote FDB entries, no node routing): decapsulated here like
        // any other profile's packet.
        if packet.get(12..16) == Some(&[0, 0, 0, 0][..]) {
            let transport = nvo_encap::profile::Transport::Udp(PORT);
            return self.decap(transport, src, packet, packet.len(), now);
        }
        let mut hops = std::mem::take(&mut self.hops);
        // `receive` decrements the TTL in place for the relayed copies; the original stays for
        // the local copy (whose header no longer matters once it is taken off).
        self.relay_buf.clear();
        self.relay_buf.extend_from_slice(packet);
        let arrival = self.overlay.receive(&mut self.relay_buf, src, &mut hops);
        let arrival = match arrival {
            Ok(arrival) => arrival,
            Err(drop) => {
                self.hops = hops;
                return self.drop_underlay(packet.len(), drop.reason(), packet);
            }
        };
        let mut local = false;
        let at = self
            .underlays
            .find(nvo_encap::profile::Transport::Udp(PORT));
        for hop in &hops {
            match (*hop, at) {
                (Hop::Local, _) => local = true,
                (Hop::Locator(addr), Some(at)) => {
                    self.pipeline.count_relayed(packet.len());
                    self.trace_relay(addr);
                    queue(
                        &mut self.underlays,
                        &mut self.pipeline,
                        at,
                        (
                            SocketAddr::new(addr, PORT),
                            arrival.flow as u16,
                            OuterValues::default(),
                        ),
                        &[],
                        &self.relay_buf,
                    );
                }
                (Hop::Locator(_), None) => {}
            }
        }
        self.hops = hops;
        if local && !self.probe_received(&arrival, packet, now) {
            self.decap_overlay(src, arrival.src, packet, now);
        } else if self.hops.is_empty() {
            self.drop_underlay(packet.len(), DropReason::NoDestination, packet);
        }
    }

    /// While a listener asked for traces: the packet in `relay_buf`, relayed to `to` without
    /// being decapsulated, recorded (it belongs to no network here).
    pub(super) fn trace_relay(&self, to: IpAddr) {
        if !(self.monitor.on() && self.monitor.tracing()) {
            return;
        }
        if let Seen::Underlay { src, port } = self.seen {
            let what = What::Trace {
                to: Dest::Relay(to),
            };
            let origin = Origin::Underlay { src, port };
            let packet = &self.relay_buf;
            self.monitor
                .record(|| Record::new(what, origin, None, Layer::Tunnel, packet));
        }
    }

    /// Delivers an overlay packet's frame here, learning its source MAC behind `src_node`.
    fn decap_overlay(&mut self, src: IpAddr, src_node: NodeId, packet: &[u8], now: Instant) {
        let transport = nvo_encap::profile::Transport::Udp(PORT);
        let decap = match self.engine.decap(transport, packet) {
            Ok(decap) => decap,
            Err(_) => return self.drop_underlay(packet.len(), DropReason::UnknownVni, packet),
        };
        let nvo_encap::engine::Target::Local { vni } = decap.target else {
            return;
        };
        self.seen_vni = Some(vni);
        let inner = packet.get(decap.header_len..).unwrap_or_default();
        let d = super::forward::decapsulated(&decap, src, vni, Some(src_node));
        let meta = nvo_io::FrameMeta::COMPLETE;
        self.tunnel_ingress(d, None, packet.len(), inner, &meta, now);
    }
}
