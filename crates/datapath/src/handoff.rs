//! How each port is read — by the kernel path, by nvod on every worker, or by nvod on worker 0
//! alone — decided in one place, [`reading`], and applied in one pass, [`rehome`], after
//! every datapath command that may change it (the project's rule: what one datapath lacks is
//! handed to the other, explicitly).
//!
//! - **worker 0 alone** ([`Reading::Worker0`]): the port is policed or a metered flow rule
//!   covers it, so one policer or meter copy must see all its frames (metering.rs, qos.rs);
//!   on either datapath.
//! - **the kernel** ([`Reading::Kernel`]), on the kernel path only, for a veth port whose
//!   network runs in the kernel — an identity policy (issue 18) is enforced there too
//!   (bpf/policy.h), but for a Geneve network or a policy larger than the programs scan
//!   (compile::network_supported: Unsupported::PolicyGeneve, PolicyTooLarge, so its VNI
//!   leaves the kernel's network map and its tunnel packets reach nvod's underlay socket; the
//!   same way a network whose tunnel frames a flow rule may match: Unsupported::TunnelFlows,
//!   tunnel_flows.rs) — and that no flow rule covers (flows.rs).
//! - **nvod on every worker** otherwise: a flow rule covers it ([`Reading::Covered`]), its
//!   network does not run in the kernel ([`Reading::NotInKernel`]), or it is nvod's anyway
//!   ([`Reading::Nvod`]: the userspace datapath, a TAP, a tagged or shared port).
//!
//! ```text
//!  any command that changes tables (a policy set or removed, a FLOW_MOD, a meter, a port
//!  added, a QoS change)
//!    rehome                           each port's reading; a port whose reading changed is
//!                                     reopened: pinned to worker 0 (or unpinned, as it was),
//!                                     then read by nvod (a packet socket) or send-only again
//!    next Mirror::sync (same tick)    the port's tc program comes off (or back on)
//! ```
//!
//! A policy the kernel cannot enforce, applied to a network whose ports the kernel already
//! runs, thus takes effect within the tick; removing it hands the network back to the kernel
//! the same way (but for ports a flow rule still covers). Commands that change none of this (reads, traces,
//! PACKET_OUT: `Command::keeps_tables`) skip the decision.

use std::collections::HashSet;

use nvo_ebpf::Unsupported;
use nvo_pipeline::{FlowCover, PortId, Vni};

use super::forward::Core;
use super::metering::pinned_readers;
use crate::command::PortKind;

/// How a port is to be read.
#[derive(Debug)]
pub(super) enum Reading {
    /// By nvod on worker 0 alone: it is policed or a metered flow rule covers it.
    Worker0,
    /// By the kernel path (nvod only sends on it).
    Kernel,
    /// By nvod on every worker: flow rules cover it (the tables run in userspace).
    Covered,
    /// By nvod on every worker: its network (`None`: it has none) does not run in the kernel.
    NotInKernel(Option<Vni>, Option<Unsupported>),
    /// By nvod on every worker, as it always is: the userspace datapath, a TAP, a tagged or
    /// shared port.
    Nvod,
}

/// The one decision: how port `id` is to be read, given the interfaces to pin (`pinned`:
/// metering::pinned_readers) and what flow rules cover.
pub(super) fn reading(
    core: &Core,
    id: PortId,
    pinned: &HashSet<PortId>,
    cover: &FlowCover,
) -> Reading {
    if pinned.contains(&id) {
        return Reading::Worker0;
    }
    let Some(kernel) = core.kernel.as_ref() else {
        return Reading::Nvod;
    };
    let veth = core.ports.get(id).is_some_and(|p| p.kind == PortKind::Veth);
    if !veth || core.ports.is_tagged(id) {
        return Reading::Nvod;
    }
    if cover.covers(id) {
        return Reading::Covered;
    }
    let network = core.pipeline.port_network(id);
    let mode = network
        .and_then(|vni| core.pipeline.network(vni).ok())
        .map(|view| kernel.mode(&core.engine, &view));
    match mode {
        Some(Ok(())) => Reading::Kernel,
        Some(Err(why)) => Reading::NotInKernel(network, Some(why)),
        None => Reading::NotInKernel(network, None),
    }
}

/// Reopens every port whose reading no longer matches [`reading`]: pinned to worker 0 or
/// unpinned (as it was before), then, on the kernel path, for nvod or for the kernel. The
/// mirror's next sync attaches or detaches the port's program accordingly.
pub(super) fn rehome(core: &mut Core) {
    let pinned = pinned_readers(core);
    let cover = core.pipeline.flow_cover();
    let ids: Vec<PortId> = core.ports.iter().map(|p| p.id).collect();
    for id in ids {
        let reading = reading(core, id, &pinned, &cover);
        pin(core, id, matches!(reading, Reading::Worker0));
        if core.kernel.is_some() && !matches!(reading, Reading::Worker0 | Reading::Nvod) {
            hand_over(core, id, &reading);
        }
    }
}

/// Pins interface `id` to worker 0 (`on`) or gives it back to every worker, or the kernel,
/// as it was; a failed reopen is logged and the interface stays as it was.
fn pin(core: &mut Core, id: PortId, on: bool) {
    if let Err(e) = set_pin(core, id, on) {
        let name = core.ports.get(id).map_or("", |p| p.name.as_str());
        log::warn!(
            "port {name}: {e}; it is read as before (a meter may count its frames on several \
             workers) until it is reopened"
        );
    }
}

/// Pins interface `id` now, as [`reading`] says, for a command that must report a failed
/// reopen to its caller (a QoS change); the loop's [`rehome`] then finds it settled.
pub(super) fn pin_now(core: &mut Core, id: PortId) -> std::io::Result<()> {
    let pinned = pinned_readers(core);
    let cover = core.pipeline.flow_cover();
    let on = matches!(reading(core, id, &pinned, &cover), Reading::Worker0);
    set_pin(core, id, on)
}

fn set_pin(core: &mut Core, id: PortId, on: bool) -> std::io::Result<()> {
    if on == core.ports.is_policed(id) {
        return Ok(());
    }
    let (worker, workers) = (core.worker, core.workers);
    core.ports.set_policed(id, on, worker, workers)
}

/// Reopens veth `id` for the kernel or for nvod on every worker, as `reading` says.
fn hand_over(core: &mut Core, id: PortId, reading: &Reading) {
    let want = matches!(reading, Reading::Kernel);
    let changed = core.ports.set_kernel(id, want);
    let name = core.ports.get(id).map_or("", |p| p.name.as_str());
    match (changed, reading) {
        (Ok(false), _) => {}
        (Ok(true), Reading::Kernel) => log::info!(
            "port {name}: no flow rule covers it any more and its network runs in the kernel: \
             the kernel path runs it again"
        ),
        (Ok(true), Reading::NotInKernel(network, why)) => log::info!(
            "port {name}: network {} does not run in the kernel ({}): nvod reads it",
            network.map_or(0, |v| v.0),
            why.as_ref()
                .map_or_else(|| "unknown network".to_owned(), |w| w.to_string())
        ),
        (Ok(true), _) => log::info!(
            "port {name}: flow rules cover it: nvod reads it (the tables run in userspace)"
        ),
        (Err(e), _) => log::warn!("port {name}: {e}; it is read as before until it is reopened"),
    }
}
