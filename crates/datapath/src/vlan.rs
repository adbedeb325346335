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
use nvo_pipeline::PortId;

use super::forward::{Core, Seen};

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
                let untagged = &buf[..len];
                self.ingress(circuit, untagged, &FrameMeta::COMPLETE, len, now);
            }
            None => self.perform(frame, &FrameMeta::COMPLETE),
        }
        self.untagged = buf;
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
