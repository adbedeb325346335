//! The hot path: hand each received frame or tunnel packet to the engine and the pipeline, and
//! perform the actions the pipeline returns.
//!
//! ```text
//!  port frame ──────────────────────────────► pipeline.from_port ──┐
//!  underlay packet (transport T, src) ──► engine.decap(T) ──► tunnel_ingress: flow table,
//!                                                             pipeline.from_decapsulated
//!     raw IP 6: STT segment ──► reassembler ──► (whole STT frame) ──┘       │
//!                                                                           ▼ actions
//!   Deliver  → the frame (for a packet: the inner frame) out of a local port; a complete TCP
//!              segment to a port that takes large frames is held by the coalescer instead,
//!              merged with the next segments of its flow, and leaves as one GSO frame when
//!              the receive batch is flushed (nvo_io::Coalescer has the rules)
//!   Encap    → engine.header(profile, vni, remote, entropy) (a cached template, patched)
//!              → queued on the profile's underlay socket; STT frames go whole to the
//!              kernel's TCP segmentation (stt_tx), or are first cut into segments
//!              (nvo_encap::stt::Segmenter)
//!   Reply    → the pipeline's scratch frame out of a port
//!   Drop     → counted by the pipeline already
//! ```
//!
//! While `nvo monitor` listens, drops and floods are recorded from the actions after each
//! pipeline call (`monitor` says how); `seen`/`seen_vni` remember where the packet being
//! handled came from, for that record.
//!
//! The caller flushes the send queues after each receive batch. Every send is reported back with
//! `Pipeline::count_tx`, so a failed send is a `tx_error` (or `queue_full`) drop like any other.
//! Nothing here allocates, locks or logs once the buffers have grown to their working size.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use nvo_encap::engine::{Decap, DecapError, Engine, Target};
use nvo_encap::profile::{Payload, ProfileId, Transport};
use nvo_encap::stt::{stt_header, Reassembler, Segmenter};
use nvo_io::{Coalesced, Coalescer, FrameMeta, OuterValues};
use nvo_pipeline::overlay::{Hop, NodeId, OverlayTables};
use nvo_pipeline::{
    Action, Actions, Decapsulated, DropReason, Pipeline, PortId, ProfileTag, TxOutcome, TxTarget,
    Vni,
};
use nvo_wire::ports;

use super::groups::Groups;
use super::ila::Ila;
use super::monitor::{self, Layer, Monitor, Origin};
use super::ports::Ports;
use super::settings::SttOffload;
use super::stt_meta::{segment_len, stt_delivery_meta, stt_drop_reason, stt_meta};
use super::stt_tx::{segment_totals, SttFrame, SttTx};
use super::underlays::Underlays;

/// IP protocol 6: STT's segments look like TCP.
pub const STT: Transport = Transport::Ip(6);
/// The TCP-like header in front of every STT segment.
const STT_SEGMENT_HEADER: usize = 20;

/// Everything but the STT reassembler, so that a reassembled frame (borrowed from the
/// reassembler) can go through the rest.
#[derive(Debug)]
pub struct Core {
    /// The tables.
    pub pipeline: Pipeline,
    /// The ports.
    pub ports: Ports,
    /// The underlay sockets.
    pub underlays: Underlays,
    /// The multicast groups the VXLAN socket has joined.
    pub groups: Groups,
    /// Profiles, key table, header templates.
    pub engine: Engine,
    /// Cuts STT frames into segments.
    pub segmenter: Segmenter,
    /// The underlay MTU, for the size of STT segments.
    pub underlay_mtu: u16,
    pub(super) actions: Actions,
    /// The overlay's node ID, locators and routes.
    pub overlay: OverlayTables,
    /// Where `OverlayTables::forward` puts the hops of one packet.
    pub(super) hops: Vec<Hop>,
    /// Overlay probe runs in flight.
    pub probes: super::probes::Probes,
    /// An STT frame (header + inner frame) put together before segmentation.
    stt_frame: Vec<u8>,
    /// Whether STT frames go whole to the kernel's segmentation or are cut here.
    pub stt_tx: SttTx,
    /// ILA's TUN queue (ila.rs).
    pub ila: Ila,
    /// A packet being relayed, with its hop count decremented.
    pub(super) relay_buf: Vec<u8>,
    /// Where GSO frames are cut into segments for profiles that need them.
    pub(super) finish_scratch: Vec<u8>,
    /// The kernel datapath, when it runs: the maps mirroring the tables above.
    pub kernel: Option<nvo_ebpf::Mirror>,
    /// TCP segments on their way to ports that take large frames, merged per flow until the
    /// next flush.
    coalescer: Coalescer,
    /// `nvo monitor`'s ring and whether anyone listens.
    pub monitor: Monitor,
    /// Which datapath worker this is (0: the one that receives raw IP, multicast groups and
    /// the overlay's probes; see `workers`).
    pub worker: usize,
    /// How many workers forward (ports are spread over them when more than one).
    pub workers: usize,
    /// Where the packet being handled came from (for the monitor).
    pub(super) seen: Seen,
    /// The network of the packet being handled, once known (for the monitor).
    pub(super) seen_vni: Option<u32>,
    /// A VLAN trunk's (or a shared port's) frame without its tag (vlan.rs, vport.rs).
    pub(super) untagged: Vec<u8>,
    /// A frame a flow rule rewrote (flows.rs).
    pub(super) flow_frame: Vec<u8>,
}

/// Where the packet being handled came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    /// A local port.
    Port(PortId),
    /// An underlay socket: from `src`, to UDP port (or IP protocol) `port`.
    Underlay { src: IpAddr, port: u16 },
}

/// Most flows whose segments are held for merging at once (a 64 KiB buffer each).
const COALESCED_FLOWS: usize = 8;

/// The forwarder: the core and the STT reassembler.
#[derive(Debug)]
pub struct Forwarder {
    /// Tables, ports, sockets, engine.
    pub core: Core,
    /// Reassembles STT frames from their segments.
    pub reassembler: Reassembler,
}

impl Forwarder {
    /// A forwarder around the tables, the underlay and the engine.
    pub fn new(
        pipeline: Pipeline,
        underlays: Underlays,
        engine: Engine,
        reassembler: Reassembler,
        underlay_mtu: u16,
        overlay: OverlayTables,
    ) -> Forwarder {
        Forwarder {
            core: Core {
                pipeline,
                ports: Ports::default(),
                underlays,
                groups: Groups::default(),
                engine,
                segmenter: Segmenter::new(first_frame_id()),
                underlay_mtu,
                // Room for the fan-out of a full flood list plus every local port of a network;
                // it grows (rarely) beyond that.
                actions: Actions::with_capacity(512),
                hops: Vec::with_capacity(overlay.limits().max_next_hops),
                probes: Default::default(),
                overlay,
                stt_frame: Vec::with_capacity(usize::from(u16::MAX)),
                stt_tx: SttTx::new(SttOffload::Auto),
                ila: Default::default(),
                relay_buf: Vec::with_capacity(usize::from(u16::MAX)),
                finish_scratch: vec![0; nvo_io::MAX_FRAME],
                kernel: None,
                coalescer: Coalescer::new(COALESCED_FLOWS),
                monitor: Monitor::off(),
                worker: 0,
                workers: 1,
                seen: Seen::Port(PortId(0)),
                seen_vni: None,
                untagged: vec![0; nvo_io::MAX_FRAME],
                flow_frame: Vec::new(),
            },
            reassembler,
        }
    }

    /// A frame received on a local port, with what its sender left to do: a TSO/GSO frame
    /// stays whole through the pipeline (its MTU check is on the segments it will become) and is
    /// cut up only where it has to be — not for STT, which carries it whole, nor for a port
    /// with the virtio-net header, which takes it whole.
    pub fn port_frame(&mut self, port: PortId, frame: &[u8], meta: FrameMeta, now: Instant) {
        let core = &mut self.core;
        if core.pipeline.is_trunk(port) {
            return core.trunk_frame(port, frame, now);
        }
        if core.pipeline.is_shared(port) {
            return core.shared_frame(port, frame, now);
        }
        if let Some(q) = core.tos_rule(port) {
            return core.qos_frame(port, q, frame, meta, now);
        }
        core.seen = Seen::Port(port);
        core.seen_vni = None;
        let segment_len = segment_len(frame, &meta);
        core.ingress(port, frame, &meta, segment_len, now);
    }

    /// A packet received on the underlay socket at position `at` from `src`: the bytes after
    /// the UDP header, or after the IP header for a raw socket.
    pub fn underlay_packet(&mut self, at: usize, src: IpAddr, packet: &[u8], now: Instant) {
        let Some(transport) = self.core.underlays.at(at).map(|u| u.transport) else {
            return;
        };
        self.core.seen = seen_underlay(src, transport);
        self.core.seen_vni = None;
        if transport == Transport::Udp(ports::OVERLAY) {
            return self.core.overlay_packet(src, packet, now);
        }
        if transport != STT {
            return self.core.decap(transport, src, packet, packet.len(), now);
        }
        // A raw TCP socket sees every TCP segment to the locator; only port 7471 is STT.
        if packet.get(2..4) != Some(&ports::STT.to_be_bytes()[..]) {
            return;
        }
        let locator = self.core.underlays.locator();
        match self.reassembler.push(src, locator, packet, now) {
            Ok(Some(frame)) => self.core.decap(STT, src, frame, frame.len(), now),
            Ok(None) => {}
            Err(why) => {
                self.core
                    .drop_underlay(packet.len(), stt_drop_reason(why), packet);
            }
        }
    }

    /// Sends what is queued on every underlay socket.
    pub fn flush(&mut self) {
        self.core.flush();
    }
}

/// The pipeline's view of a packet `decap` took the header off: from underlay address `src`
/// (and overlay node `src_node`) to network `vni`.
pub(super) fn decapsulated(
    decap: &Decap,
    src: IpAddr,
    vni: u32,
    src_node: Option<NodeId>,
) -> Decapsulated {
    Decapsulated {
        src,
        vni: Vni(vni),
        profile: ProfileTag(decap.profile.0),
        dont_learn: decap.dont_learn,
        src_node,
    }
}

impl Core {
    /// Takes the tunnel header off `packet` and forwards the inner frame.
    pub(super) fn decap(
        &mut self,
        transport: Transport,
        src: IpAddr,
        packet: &[u8],
        outer_len: usize,
        now: Instant,
    ) {
        let decap = match self.engine.decap(transport, packet) {
            Ok(decap) => decap,
            Err(e) => {
                let reason = decap_drop(transport, e);
                return self.drop_underlay(outer_len, reason, packet);
            }
        };
        if let Target::Local { vni } = decap.target {
            self.seen_vni = Some(vni);
        }
        let vni = match (decap.target, decap.payload) {
            (Target::Local { vni }, Payload::Ethernet) => vni,
            // An L3 network's packet: the tunnel says its family (ip protocol 4 or 41, the
            // GPE Next Protocol), which the pipeline checks the packet against.
            (Target::Local { vni }, payload @ (Payload::Ipv4 | Payload::Ipv6)) => {
                let d = decapsulated(&decap, src, vni, None);
                let inner = packet.get(decap.header_len..).unwrap_or_default();
                let version = if payload == Payload::Ipv6 { 6 } else { 4 };
                self.pipeline.from_decapsulated_ip(
                    d,
                    outer_len,
                    (version, inner),
                    &mut self.actions,
                );
                return self.perform(inner, &FrameMeta::COMPLETE);
            }
            (Target::Forward { remote }, _) => {
                return self.relay(transport, decap.profile, remote, packet, outer_len)
            }
            // Other payloads to a local network (NSH to an end) are not delivered: the header
            // was well formed but there is nothing to do with what it carries.
            _ => return self.drop_underlay(outer_len, DropReason::ProfileMismatch, packet),
        };
        let id = (decap.profile, vni, decap.header_len);
        let Ok(tag) = super::identity::received(&self.pipeline, id, packet) else {
            return self.drop_underlay(outer_len, DropReason::MalformedTunnel, packet);
        };
        let inner = packet.get(decap.header_len..).unwrap_or_default();
        let d = decapsulated(&decap, src, vni, None);
        // STT says what the sender's TSO left undone (MSS, partial checksum): the frame is
        // delivered whole with that, and the port (or its kernel) finishes it.
        let meta = if transport == STT {
            stt_delivery_meta(packet, inner.len())
        } else if inner.len() > usize::from(self.underlay_mtu) {
            // A whole TSO frame another kernel tunnelled as one datagram (a veth carries it
            // unsegmented): delivered as a GSO frame cut at the network's MTU.
            let mtu = self
                .pipeline
                .network_mtu(Vni(vni))
                .unwrap_or(self.underlay_mtu);
            super::csum::large_frame_meta(inner, mtu)
        } else {
            super::csum::received_meta(inner)
        };
        self.tunnel_ingress(d, tag, outer_len, inner, &meta, now);
    }

    /// Relays a packet whose key leads to a next hop: the same header and payload, with the
    /// profile's hop count (NSH SI) decremented, on the same transport to `remote`. Never
    /// decapsulated.
    fn relay(
        &mut self,
        transport: Transport,
        profile: ProfileId,
        remote: IpAddr,
        packet: &[u8],
        outer_len: usize,
    ) {
        let Some(at) = self.underlays.find(transport) else {
            return self.drop_underlay(outer_len, DropReason::TxError, packet);
        };
        self.relay_buf.clear();
        self.relay_buf.extend_from_slice(packet);
        if self.engine.relay(profile, &mut self.relay_buf).is_err() {
            return self.drop_underlay(outer_len, DropReason::HopLimit, packet);
        }
        self.pipeline.count_relayed(outer_len);
        let port = self.underlays.at(at).map_or(0, |u| u.port);
        // The same flow keeps the same source port: entropy from the first bytes after the
        // header, which hold the inner addresses.
        let entropy = flow_hash(packet);
        let dst = SocketAddr::new(remote, port);
        self.trace_relay(remote);
        queue(
            &mut self.underlays,
            &mut self.pipeline,
            at,
            (dst, entropy, OuterValues::default()),
            &[],
            &self.relay_buf,
        );
    }

    /// Performs the actions of the last pipeline call on `frame`, which `meta` may say is a
    /// GSO frame or has a partial checksum.
    pub(super) fn perform(&mut self, frame: &[u8], meta: &FrameMeta) {
        if self.monitor.on() {
            self.observe(frame, Layer::Frame);
        }
        for i in 0..self.actions.len() {
            match self.actions.as_slice()[i] {
                Action::Deliver { port } => {
                    let (ports, pipeline) = (&self.ports, &mut self.pipeline);
                    let emit = &mut |c: Coalesced<'_>| deliver_coalesced(ports, pipeline, c);
                    if meta.is_complete() && self.actions.len() == 1 && ports.takes_large(port) {
                        self.coalescer.push(port.0, frame, emit);
                        continue;
                    }
                    if !self.coalescer.is_empty() {
                        // Sent another way: the held segments of its flow go first.
                        self.coalescer.flush_flow(port.0, frame, emit);
                    }
                    let sent = if meta.is_complete() {
                        self.ports.send(port, frame)
                    } else {
                        self.ports.send_meta(port, frame, meta)
                    };
                    self.pipeline
                        .count_tx(TxTarget::Port(port), frame.len(), outcome(sent));
                }
                Action::Reply { port, len } => {
                    let reply = self.pipeline.scratch().get(..len).unwrap_or_default();
                    let outcome = outcome(self.ports.send(port, reply));
                    self.pipeline.count_tx(TxTarget::Port(port), len, outcome);
                }
                Action::Encap {
                    remote,
                    vni,
                    entropy,
                    profile,
                } => {
                    let profile = ProfileId(profile.0);
                    let stt = self
                        .engine
                        .profile(profile)
                        .is_some_and(|p| p.transport == STT);
                    if meta.is_complete() || stt {
                        let to = (remote, vni, entropy, profile);
                        self.encap(to, frame, false, meta);
                    } else {
                        self.encap_segments((remote, vni, entropy, profile), frame, meta, 0);
                    }
                }
                Action::EncapL3 {
                    remote,
                    vni,
                    entropy,
                    profile,
                    offset,
                } => {
                    // An L3 network's frames come from a port: the IP packet after the
                    // Ethernet header goes into the tunnel (segmented first when it is a GSO
                    // frame: the L3 path does not carry offload metadata).
                    let profile = ProfileId(profile.0);
                    if meta.is_complete() {
                        let packet = frame.get(offset..).unwrap_or_default();
                        self.encap((remote, vni, entropy, profile), packet, true, meta);
                    } else {
                        self.encap_segments((remote, vni, entropy, profile), frame, meta, offset);
                    }
                }
                Action::SendIla {
                    locator,
                    vni,
                    offset,
                } => {
                    let scratch = &mut self.finish_scratch;
                    let to = (locator, vni, offset);
                    self.ila
                        .send(&mut self.pipeline, scratch, (frame, meta), to);
                }
                // Networks on the overlay profile whose destination is a node ID (issue 6).
                Action::EncapNode {
                    node,
                    vni,
                    entropy,
                    profile,
                } => {
                    let profile = ProfileId(profile.0);
                    if meta.is_complete() {
                        self.encap_node(node, vni, entropy, profile, frame);
                    } else {
                        // A GSO frame: finished in software, each segment routed alike.
                        let mut scratch = std::mem::take(&mut self.finish_scratch);
                        let finished = meta.finish(frame, &mut scratch, &mut |segment| {
                            self.encap_node(node, vni, entropy, profile, segment);
                            Ok(())
                        });
                        self.finish_scratch = scratch;
                        if finished.is_err() {
                            self.pipeline.count_tx(
                                TxTarget::Underlay,
                                frame.len(),
                                TxOutcome::Failed,
                            );
                        }
                    }
                }
                Action::Drop(_) => {}
            }
        }
    }

    /// Counts a tunnel packet refused before its frame reached the pipeline (see
    /// `Pipeline::drop_underlay`) and, while the monitor listens, records it.
    pub(super) fn drop_underlay(&mut self, len: usize, reason: DropReason, packet: &[u8]) {
        self.pipeline.drop_underlay(len, reason, &mut self.actions);
        if self.monitor.on() {
            self.observe(packet, Layer::Tunnel);
        }
    }

    /// Records the drop or flood the last pipeline call decided for `packet` (see `monitor`).
    fn observe(&self, packet: &[u8], layer: Layer) {
        let tracing = layer == Layer::Frame && self.monitor.tracing();
        // Most packets are neither: nothing more is looked up for them.
        if self.actions.dropped().is_none() && !self.actions.flooded() && !tracing {
            return;
        }
        let (origin, vni) = match self.seen {
            Seen::Port(id) => {
                let port = self.ports.get(id);
                let name = port.map(|p| monitor::PortName::new(&p.name));
                (Origin::Port(name), self.seen_vni.or(port.map(|p| p.vni.0)))
            }
            Seen::Underlay { src, port } => (Origin::Underlay { src, port }, self.seen_vni),
        };
        monitor::record_actions(&self.monitor, &self.actions, origin, vni, layer, packet);
        if tracing {
            let name = |id| self.ports.get(id).map(|p| monitor::PortName::new(&p.name));
            monitor::record_traces(&self.monitor, &self.actions, origin, vni, packet, name);
        }
    }

    /// Encapsulates a GSO frame for a profile that carries one segment per packet: finished
    /// (segmented, checksums completed) in software first; each segment goes from `offset`
    /// (0 for a frame, the L3 header for an L3 network's packet).
    pub(super) fn encap_segments(
        &mut self,
        to: (IpAddr, Vni, u16, ProfileId),
        frame: &[u8],
        meta: &FrameMeta,
        offset: usize,
    ) {
        // Taken out for the duration so that the closure can borrow the rest of `self`; a
        // `Vec` moves without allocating.
        let mut scratch = std::mem::take(&mut self.finish_scratch);
        let finished = meta.finish(frame, &mut scratch, &mut |segment| {
            let segment = segment.get(offset..).unwrap_or_default();
            self.encap(to, segment, offset > 0, &FrameMeta::COMPLETE);
            Ok(())
        });
        self.finish_scratch = scratch;
        if finished.is_err() {
            self.pipeline
                .count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
        }
    }

    /// Queues `frame` for `remote` inside the profile's header, on the profile's socket. Only
    /// STT takes an unfinished frame (`meta`): its header tells the receiver what is left.
    /// `inner_is_ip`: `frame` is an L3 network's IP packet, not an Ethernet frame.
    pub(super) fn encap(
        &mut self,
        (remote, vni, entropy, profile): (IpAddr, Vni, u16, ProfileId),
        frame: &[u8],
        inner_is_ip: bool,
        meta: &FrameMeta,
    ) {
        let socket = self
            .engine
            .profile(profile)
            .and_then(|p| self.underlays.find(p.transport));
        let tag = super::identity::to_send(&self.actions, &self.pipeline, vni);
        // An L3 network's packet announces its own family (vxlan-gpe carries both).
        let payload = inner_is_ip.then(|| match frame.first().map(|b| b >> 4) {
            Some(6) => Payload::Ipv6,
            _ => Payload::Ipv4,
        });
        let header =
            self.engine
                .header_carrying(profile, vni.0, remote, (entropy, frame.len()), payload);
        let (Some(at), Ok(header)) = (socket, header) else {
            return self
                .pipeline
                .count_tx(TxTarget::Underlay, frame.len(), TxOutcome::Failed);
        };
        let mut tag_buf = super::identity::TagBuf::default();
        let header = super::identity::tagged(header, profile, tag, &mut tag_buf);
        let Some(underlay) = self.underlays.at(at) else {
            return;
        };
        let mut outer = self.underlays.inherited(frame, inner_is_ip);
        if remote.is_multicast() {
            // A flood to a multicast group keeps the group's TTL (multicast_ttl), which
            // bounds how far the underlay carries it.
            outer.ttl = None;
        }
        if underlay.transport != STT {
            let dst = SocketAddr::new(remote, underlay.port);
            return queue(
                &mut self.underlays,
                &mut self.pipeline,
                at,
                (dst, entropy, outer),
                header,
                frame,
            );
        }
        // STT: one frame (STT header + inner frame) cut into TCP-like segments that fit the
        // underlay MTU; the source port carries the entropy.
        self.stt_frame.clear();
        self.stt_frame.extend_from_slice(header);
        if let Ok(offload) = stt_header(u64::from(vni.0), stt_meta(frame, meta)) {
            // The engine's template has the context ID; the offload fields are per frame.
            for at in [1, 2, 4, 5, 6, 7] {
                if let (Some(b), Some(&v)) = (self.stt_frame.get_mut(at), offload.get(at)) {
                    *b = v;
                }
            }
        }
        let ip = if remote.is_ipv4() { 20 } else { 40 };
        let max_payload = usize::from(self.underlay_mtu).saturating_sub(ip + STT_SEGMENT_HEADER);
        let src_port = ENTROPY_SPORT_BASE | (entropy & 0x3fff);
        let local = self.underlays.locator();
        // First, whole to the kernel's TCP segmentation (stt_tx), after any segments still
        // queued on the raw socket, so that frames leave in order.
        if self.stt_tx.may_take(remote) {
            flush_one(&mut self.underlays, &mut self.pipeline, at);
        }
        let whole = SttFrame {
            frame: [&self.stt_frame, frame],
            local,
            remote,
            src_port,
            max_payload,
            config: self.underlays.outer(),
            inherited: outer,
        };
        if self.stt_tx.send_whole(&mut self.segmenter, &whole) {
            // Counted as the segments the kernel makes of it, as the software path counts.
            let (packets, bytes) = segment_totals(self.stt_frame.len() + frame.len(), max_payload);
            let target = TxTarget::Remote(remote);
            self.pipeline.count_sent(target, packets, bytes);
            return;
        }
        self.stt_tx.count_software();
        // nvod's segmenter cuts one buffer: only this path joins header and frame.
        self.stt_frame.extend_from_slice(frame);
        let segments =
            match self
                .segmenter
                .segment(&self.stt_frame, local, remote, src_port, max_payload)
            {
                Ok(segments) => segments,
                Err(_) => {
                    return self.pipeline.count_tx(
                        TxTarget::Underlay,
                        self.stt_frame.len(),
                        TxOutcome::Failed,
                    )
                }
            };
        let dst = SocketAddr::new(remote, 0);
        for segment in segments {
            queue(
                &mut self.underlays,
                &mut self.pipeline,
                at,
                (dst, entropy, outer),
                &[],
                segment,
            );
        }
    }

    /// Sends what is queued on every socket and reports each datagram.
    ///
    /// `send_batch` says how many datagrams the kernel took, not which: the first `sent` queued
    /// lengths are counted as sent and the rest as failed, which is exact for the counts and
    /// close for the bytes.
    pub fn flush(&mut self) {
        let (ports, pipeline) = (&self.ports, &mut self.pipeline);
        self.coalescer
            .flush(&mut |c| deliver_coalesced(ports, pipeline, c));
        for at in 0..self.underlays.len() {
            flush_one(&mut self.underlays, &mut self.pipeline, at);
        }
    }
}

/// What the monitor says a packet from `src` on `transport` came from.
pub(super) fn seen_underlay(src: IpAddr, transport: Transport) -> Seen {
    let port = match transport {
        Transport::Udp(p) => p,
        Transport::Ip(proto) => u16::from(proto),
    };
    Seen::Underlay { src, port }
}

/// The first STT frame ID: from the clock, so that a restarted nvod does not reuse the IDs of
/// frames a receiver may still hold in reassembly.
fn first_frame_id() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32).rotate_left(16))
        .unwrap_or(0)
}

/// STT source ports (entropy) are taken from the dynamic range, as Open vSwitch does.
const ENTROPY_SPORT_BASE: u16 = 0xc000;

/// Queues one datagram on the socket at `at` — to `dst`, with `entropy` and the outer values
/// inherited from its inner packet (if the config asks) — flushing first when the batch is full.
pub(super) fn queue(
    underlays: &mut Underlays,
    pipeline: &mut Pipeline,
    at: usize,
    (dst, entropy, outer): (SocketAddr, u16, OuterValues),
    header: &[u8],
    payload: &[u8],
) {
    let len = header.len() + payload.len();
    let Some(u) = underlays.at_mut(at) else {
        return;
    };
    if u.queued.len() < u.queued.capacity()
        && u.batch.push_outer(dst, entropy, outer, header, payload)
    {
        u.queued.push((len, dst.ip()));
        return;
    }
    flush_one(underlays, pipeline, at);
    let Some(u) = underlays.at_mut(at) else {
        return;
    };
    if u.batch.push_outer(dst, entropy, outer, header, payload) {
        u.queued.push((len, dst.ip()));
    } else {
        // Larger than a datagram can be, or than the whole batch slab.
        pipeline.count_tx(TxTarget::Underlay, len, TxOutcome::QueueFull);
    }
}

/// Sends what the coalescer let go of out of its port, and counts each segment it holds. A
/// merged frame the port refuses for any reason but a full queue goes again in segments, cut
/// in software, so that nothing is lost to the merge.
fn deliver_coalesced(ports: &Ports, pipeline: &mut Pipeline, c: Coalesced<'_>) {
    let port = PortId(c.dest);
    let mut result = if c.meta.is_complete() {
        ports.send(port, c.frame)
    } else {
        ports.send_meta(port, c.frame, &c.meta)
    };
    if let Err(e) = &result {
        if !c.meta.is_complete() && e.kind() != io::ErrorKind::WouldBlock {
            result = c
                .meta
                .finish_here(c.frame, &mut |f| ports.send(port, f))
                .map(drop);
        }
    }
    let outcome = outcome(result);
    for len in c.segment_lens() {
        pipeline.count_tx(TxTarget::Port(port), len, outcome);
    }
}

/// Sends the queue of the socket at `at`.
fn flush_one(underlays: &mut Underlays, pipeline: &mut Pipeline, at: usize) {
    let Some(u) = underlays.at_mut(at) else {
        return;
    };
    if u.batch.is_empty() {
        return;
    }
    let sent = u.send_queued().unwrap_or(0);
    for (i, &(len, remote)) in u.queued.iter().enumerate() {
        let outcome = if i < sent {
            TxOutcome::Sent
        } else {
            TxOutcome::Failed
        };
        pipeline.count_tx(TxTarget::Remote(remote), len, outcome);
    }
    u.batch.clear();
    u.queued.clear();
}

/// The drop reason of a packet the engine could not take apart. VXLAN keeps the reasons it
/// had before the engine: `malformed_vxlan` for a short packet, `vxlan_flags` for an I flag
/// that is clear.
fn decap_drop(transport: Transport, e: DecapError) -> DropReason {
    let vxlan = transport == Transport::Udp(ports::VXLAN);
    match e {
        DecapError::UnknownKey => DropReason::UnknownVni,
        DecapError::Truncated if vxlan => DropReason::MalformedVxlan,
        DecapError::NoMatch if vxlan => DropReason::VxlanFlags,
        _ => DropReason::MalformedTunnel,
    }
}

/// The flow hash of the bytes after a 16-byte tunnel header (inner MACs, IP addresses and
/// ports), for the source port of relayed packets: one flow keeps one port.
fn flow_hash(packet: &[u8]) -> u16 {
    nvo_pipeline::flow_hash16(packet.get(16..packet.len().min(80)).unwrap_or(packet))
}

/// How a port send went, in the pipeline's terms.
pub(super) fn outcome(result: io::Result<()>) -> TxOutcome {
    match result {
        Ok(()) => TxOutcome::Sent,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => TxOutcome::QueueFull,
        Err(_) => TxOutcome::Failed,
    }
}
