//! VLAN trunks on the userspace path: a frame from a trunk's interface loses its tag
//! (`Pipeline::from_trunk`) and goes on as a frame of its circuit; a frame to a circuit gets
//! its tag back in `Ports::send` (ports.rs).
//!
//! Both datapaths take this path: the kernel path attaches no program to a trunk's interface
//! (nvod reads it) and punts frames for a circuit to nvod, which tags and sends them.
//! A trunk never keeps GSO frames whole (its port is not `large`), so every frame here is
//! complete.

use std::time::Instant;

use nvo_io::FrameMeta;
use nvo_pipeline::{qos, PortId};

use super::forward::{Core, Seen};
use super::qos::ip_tos;

impl Core {
    /// A frame received on trunk `trunk`.
    pub(super) fn trunk_frame(&mut self, trunk: PortId, frame: &[u8], now: Instant) {
        self.seen = Seen::Port(trunk);
        self.seen_vni = None;
        let mut buf = self.take_untagged(frame.len());
        match self
            .pipeline
            .from_trunk(trunk, frame, &mut buf, &mut self.actions)
        {
            Some((circuit, len)) => {
                // The monitor names the trunk's interface as where the frame came from.
                self.virtual_ingress(circuit, frame, Some(len), &mut buf, now);
            }
            None => self.perform(frame, &FrameMeta::COMPLETE),
        }
        self.untagged = buf;
    }

    /// A frame of virtual port or circuit `port` (from a shared port or a trunk): `frame` as
    /// received, or its first `popped` bytes in `buf` when its tag came off. A QoS profile of
    /// the port that marks DSCP rewrites it (in `buf`), one that marks or trusts sets the
    /// outer TOS (qos.rs); then the flow table and normal forwarding (flows.rs).
    pub(super) fn virtual_ingress(
        &mut self,
        port: PortId,
        frame: &[u8],
        popped: Option<usize>,
        buf: &mut [u8],
        now: Instant,
    ) {
        let rule = self.tos_rule(port);
        // Only a mark rewrites an untagged frame (a copy); trust reads its TOS.
        let mark = rule.and_then(|q| q.dscp);
        let len = match (popped, mark) {
            (Some(len), _) => Some(len),
            (None, Some(_)) => {
                buf[..frame.len()].copy_from_slice(frame);
                Some(frame.len())
            }
            (None, None) => None,
        };
        if let (Some(dscp), Some(len)) = (mark, len) {
            qos::mark(&mut buf[..len], dscp);
        }
        let f = len.map_or(frame, |len| &buf[..len]);
        if rule.is_some() {
            self.underlays.set_tos_override(ip_tos(f));
        }
        self.ingress(port, f, &FrameMeta::COMPLETE, f.len(), now);
        self.underlays.set_tos_override(None);
    }

    /// The scratch buffer for a frame with its tag taken off (or its DSCP marked), at least
    /// `len` bytes long, taken out of `self` while the frame goes on; put it back with
    /// `self.untagged = buf` (it keeps its size: no allocation per frame).
    pub(super) fn take_untagged(&mut self, len: usize) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.untagged);
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf
    }
}
