//! Shared ports on the userspace path (nvo_pipeline::vport, VM-VP): a frame from a shared
//! port's interface is assigned to a virtual port by its source MAC (and VLAN), loses its tag
//! if it had one (`Pipeline::from_shared`), and goes on as a frame of that virtual port; a
//! frame to a virtual port leaves the shared port's interface, tagged if the virtual port is
//! (`Ports::send`, ports.rs).
//!
//! Both datapaths take this path, as for VLAN trunks: the kernel path attaches no program to a
//! shared port's interface (nvod reads it) and punts frames for a virtual port to nvod. A
//! shared port never keeps GSO frames whole (its port is not `large`), so every frame here is
//! complete.

use std::time::Instant;

use nvo_io::FrameMeta;
use nvo_pipeline::PortId;

use super::forward::{Core, Seen};

impl Core {
    /// A frame received on shared port `shared`.
    pub(super) fn shared_frame(&mut self, shared: PortId, frame: &[u8], now: Instant) {
        self.seen = Seen::Port(shared);
        self.seen_vni = None;
        let mut buf = self.take_untagged(frame.len());
        match self
            .pipeline
            .from_shared(shared, frame, &mut buf, &mut self.actions)
        {
            Some(c) => {
                // The monitor names the shared port's interface as where the frame came from.
                self.virtual_ingress(c.vport, frame, c.popped, &mut buf, now);
            }
            None => self.perform(frame, &FrameMeta::COMPLETE),
        }
        self.untagged = buf;
    }
}
