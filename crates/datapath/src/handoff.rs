//! Which of the kernel datapath's veth ports nvod reads instead (the project's rule: what
//! one datapath lacks is handed to the other, explicitly). One decision, [`rehome`], made
//! after every datapath command that may change it: the kernel runs a veth port when its network runs in the
//! kernel — not a network with an identity policy (issue 18; compile::network_supported
//! refuses it as Unsupported::Policy, so its VNI also leaves the kernel's network map and its
//! tunnel packets reach nvod's underlay socket; nor, the same way, a network whose tunnel frames
//! a flow rule may match: Unsupported::TunnelFlows, tunnel_flows.rs) — and no flow rule covers
//! the port (flows.rs).
//! Policed, tagged and shared ports are nvod's on either datapath (Ports::set_kernel leaves
//! them alone).
//!
//! ```text
//!  any command that changes tables (a policy set or removed, a FLOW_MOD, a port added, a
//!  QoS change)
//!    rehome                           each veth port whose "kernel runs it" flag is no longer
//!                                     what the decision says is reopened the other way: read
//!                                     by nvod (a packet socket) or send-only again
//!    next Mirror::sync (same tick)    the port's tc program comes off (or back on)
//! ```
//!
//! A policy applied to a network whose ports the kernel already runs thus takes effect within
//! the tick; removing the policy hands the network back to the kernel the same way (but for
//! ports a flow rule still covers). Commands that change none of this (reads, traces,
//! PACKET_OUT: `Command::keeps_tables`) skip the decision.

use nvo_pipeline::PortId;

use super::forward::Core;
use crate::command::PortKind;

/// On the kernel path: reopens every veth whose reading no longer matches the decision in
/// the module docs — for nvod, or for the kernel. The mirror's next sync attaches or detaches
/// the port's program accordingly.
pub(super) fn rehome(core: &mut Core) {
    let Some(kernel) = core.kernel.as_ref() else {
        return;
    };
    let veths: Vec<PortId> = core
        .ports
        .iter()
        .filter(|p| p.kind == PortKind::Veth)
        .map(|p| p.id)
        .collect();
    let cover = core.pipeline.flow_cover();
    for id in veths {
        let network = core.pipeline.port_network(id);
        let mode = network
            .and_then(|vni| core.pipeline.network(vni).ok())
            .map(|view| kernel.mode(&core.engine, &view));
        let capable = matches!(mode, Some(Ok(())));
        let covered = cover.covers(id);
        let want = capable && !covered;
        let changed = core.ports.set_kernel(id, want);
        let name = core.ports.get(id).map_or("", |p| p.name.as_str());
        match changed {
            Ok(false) => {}
            Ok(true) if want => log::info!(
                "port {name}: no flow rule covers it any more and its network runs in the \
                 kernel: the kernel path runs it again"
            ),
            Ok(true) if covered => log::info!(
                "port {name}: flow rules cover it: nvod reads it (the tables run in userspace)"
            ),
            Ok(true) => log::info!(
                "port {name}: network {} does not run in the kernel ({}): nvod reads it",
                network.map_or(0, |v| v.0),
                match &mode {
                    Some(Err(why)) => why.to_string(),
                    _ => "unknown network".to_owned(),
                }
            ),
            Err(e) => log::warn!("port {name}: {e}; it is read as before until it is reopened"),
        }
    }
}
