//! Tunnel ingress through the flow table on the datapath (nvo_pipeline's tunnel_flows.rs):
//! every frame decapsulated for a local L2 network — from the underlay sockets, a GRO buffer
//! delivered whole, or an overlay packet for this node — meets the table before normal
//! delivery.
//!
//! ```text
//!  decapsulated frame ──► table empty? ── yes ──► from_decapsulated ──► perform  (one test)
//!                              │ no
//!                              ▼
//!                   from_underlay_flows ──► perform outputs (the frame, or its rewritten copy)
//!                              └─ normal ──► from_decapsulated (the same frame) ──► perform
//! ```
//!
//! The step is `Core::through_table` (flows.rs), which port ingress shares.
//!
//! The hand-over: on the kernel path tunnel packets of the networks the kernel runs are
//! decapsulated by its tc program and never reach this code. A network whose tunnel frames a
//! rule may match (`NetworkView::tunnel_flows`) is refused by the kernel path
//! (`Unsupported::TunnelFlows`, as an identity policy is), so its VNI leaves the kernel's
//! network map, its tunnel packets reach nvod's underlay socket and its veths are read by nvod
//! (handoff.rs); when no rule covers it any more, it goes back to the kernel.

use std::time::Instant;

use nvo_io::FrameMeta;
use nvo_pipeline::policy::GroupTag;
use nvo_pipeline::Decapsulated;

use super::forward::Core;

impl Core {
    /// A frame `decap` carried, in a tunnel packet of `outer_len` bytes: through the flow
    /// table, then normal delivery; `meta` says how it is to be delivered (a GSO frame, a
    /// partial checksum).
    pub(super) fn tunnel_ingress(
        &mut self,
        decap: Decapsulated,
        tag: Option<GroupTag>,
        outer_len: usize,
        inner: &[u8],
        meta: &FrameMeta,
        now: Instant,
    ) {
        self.through_table(
            inner,
            meta,
            |p, buf, actions| p.from_underlay_flows(&decap, outer_len, inner, buf, now, actions),
            |p, f, actions| p.from_decapsulated_tagged(decap, tag, outer_len, f, now, actions),
        );
    }
}
