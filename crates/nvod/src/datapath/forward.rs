//! The hot path: hand each received frame or datagram to the pipeline and perform the actions
//! it returns.
//!
//! - `Deliver` sends the frame (for a datagram: the inner frame after the VXLAN header) out of
//!   a local port;
//! - `Encap` writes an 8-byte VXLAN header (`nvo_wire::vxlan`) and queues header + frame in the
//!   underlay's [`SendBatch`], to (remote, vxlan_port), the entropy choosing the source port;
//! - `Reply` sends the frame the pipeline built in its scratch buffer out of a port;
//! - `Drop` has been counted by the pipeline already.
//!
//! The caller flushes the send batch after each receive batch. Every send is reported back with
//! `Pipeline::count_tx`, so a failed send is a `tx_error` (or `queue_full`) drop like any other.
//! Nothing here allocates, locks or logs: the buffers are sized once at start.

use std::io;
use std::net::{IpAddr, SocketAddr};

use nvo_io::{SendBatch, UdpUnderlay};
use nvo_pipeline::{Action, Actions, Pipeline, PortId, TxOutcome, TxTarget, Vni};
use nvo_wire::vxlan::{VxlanPacket, VxlanRepr, HEADER_LEN};
use std::time::Instant;

use super::groups::Groups;
use super::ports::Ports;

/// Everything a frame needs on its way through: the tables, the ports, the underlay and the
/// reusable buffers.
#[derive(Debug)]
pub struct Forwarder {
    /// The tables.
    pub pipeline: Pipeline,
    /// The ports.
    pub ports: Ports,
    /// The underlay sockets.
    pub underlay: UdpUnderlay,
    /// The multicast groups the underlay has joined.
    pub groups: Groups,
    vxlan_port: u16,
    actions: Actions,
    batch: SendBatch,
    /// Length of each datagram queued in `batch`, for `count_tx` (capacity = batch capacity).
    queued: Vec<usize>,
}

impl Forwarder {
    /// A forwarder around the tables and the underlay.
    pub fn new(pipeline: Pipeline, underlay: UdpUnderlay, vxlan_port: u16) -> Forwarder {
        let batch = SendBatch::default();
        let queued = Vec::with_capacity(batch.capacity());
        Forwarder {
            pipeline,
            ports: Ports::default(),
            underlay,
            groups: Groups::default(),
            vxlan_port,
            // Room for the fan-out of a full flood list plus every local port of a network;
            // it grows (rarely) beyond that.
            actions: Actions::with_capacity(512),
            batch,
            queued,
        }
    }

    /// A frame received on a local port.
    pub fn port_frame(&mut self, port: PortId, frame: &[u8], now: Instant) {
        self.pipeline.from_port(port, frame, now, &mut self.actions);
        self.perform(frame);
    }

    /// A UDP payload received on the VXLAN port from `src` (sent to the locator or to a joined
    /// group: the pipeline treats both alike).
    pub fn underlay_datagram(&mut self, src: IpAddr, payload: &[u8], now: Instant) {
        self.pipeline
            .from_underlay(src, payload, now, &mut self.actions);
        // Deliver actions refer to the inner frame, after the VXLAN header.
        let inner = payload.get(HEADER_LEN..).unwrap_or_default();
        self.perform(inner);
    }

    /// Performs the actions of the last pipeline call on `frame`.
    fn perform(&mut self, frame: &[u8]) {
        for i in 0..self.actions.len() {
            match self.actions.as_slice()[i] {
                Action::Deliver { port } => {
                    let outcome = outcome(self.ports.send(port, frame));
                    self.pipeline
                        .count_tx(TxTarget::Port(port), frame.len(), outcome);
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
                } => self.encap(remote, vni, entropy, frame),
                Action::Drop(_) => {}
            }
        }
    }

    /// Queues one VXLAN datagram, flushing first when the batch is full.
    fn encap(&mut self, remote: IpAddr, vni: Vni, entropy: u16, frame: &[u8]) {
        let mut header = [0u8; HEADER_LEN];
        let repr = VxlanRepr {
            vni: vni.0,
            gbp: None,
        };
        if repr
            .emit(&mut VxlanPacket::new_unchecked(&mut header[..]))
            .is_err()
        {
            let len = HEADER_LEN + frame.len();
            self.pipeline
                .count_tx(TxTarget::Underlay, len, TxOutcome::Failed);
            return;
        }
        let dst = SocketAddr::new(remote, self.vxlan_port);
        let len = HEADER_LEN + frame.len();
        if self.queued.len() < self.queued.capacity()
            && self.batch.push(dst, entropy, &header, frame)
        {
            self.queued.push(len);
            return;
        }
        self.flush();
        if self.batch.push(dst, entropy, &header, frame) {
            self.queued.push(len);
        } else {
            // Larger than a datagram can be, or than the whole batch slab.
            self.pipeline
                .count_tx(TxTarget::Underlay, len, TxOutcome::QueueFull);
        }
    }

    /// Sends what is queued for the underlay and reports each datagram.
    ///
    /// `send_batch` says how many datagrams the kernel took, not which: the first `sent` queued
    /// lengths are counted as sent and the rest as failed, which is exact for the counts and
    /// close for the bytes.
    pub fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let sent = self.underlay.send_batch(&self.batch).unwrap_or(0);
        for (i, &len) in self.queued.iter().enumerate() {
            let outcome = if i < sent {
                TxOutcome::Sent
            } else {
                TxOutcome::Failed
            };
            self.pipeline.count_tx(TxTarget::Underlay, len, outcome);
        }
        self.batch.clear();
        self.queued.clear();
    }
}

/// How a port send went, in the pipeline's terms.
fn outcome(result: io::Result<()>) -> TxOutcome {
    match result {
        Ok(()) => TxOutcome::Sent,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => TxOutcome::QueueFull,
        Err(_) => TxOutcome::Failed,
    }
}
