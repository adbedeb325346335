//! Meters on the datapath (nvo_pipeline::meters): one bucket per meter across the workers.
//!
//! Every worker's pipeline holds a copy of each meter (`Command::SetMeter` goes to all), and
//! the copy that counts is worker 0's: an interface that a metered rule may match frames from
//! is read by worker 0 alone, exactly as a policed port is (qos.rs, `Ports::set_policed`), so
//! all frames a meter sees meet the same copy, with no lock or atomic per frame. The price is
//! that those ports are forwarded by one worker. A TAP port (one queue per worker) cannot be
//! pinned this way: with several workers each queue meets its worker's own copy (documented in
//! docs/openflow.md).
//!
//! ```text
//!  any command that changes tables
//!    rehome   (handoff.rs, one decision per port) interfaces of policed ports ∪ interfaces
//!             metered rules cover → worker 0 alone (Reading::Worker0); the rest unpinned as
//!             they were, then the kernel path's hand-over
//! ```

use std::collections::HashSet;

use nvo_pipeline::PortId;

use super::forward::Core;

/// The interfaces read by worker 0 alone: those of policed ports and those metered flow rules
/// cover (a metered rule without `in_port` covers every one).
pub(super) fn pinned_readers(core: &Core) -> HashSet<PortId> {
    let mut pinned: HashSet<PortId> = core
        .pipeline
        .qos_counters()
        .iter()
        .map(|&(p, ..)| core.ports.reader(p))
        .collect();
    let cover = core.pipeline.metered_cover();
    if cover.all {
        pinned.extend(core.ports.iter().map(|p| p.id));
    } else {
        pinned.extend(cover.ports.iter().map(|&p| core.ports.reader(PortId(p))));
    }
    pinned
}
