//! Networks with an identity policy run on the userspace path (issue 18): the kernel datapath
//! does not enforce policy, so such a network is handed to nvod explicitly, on either datapath.
//!
//! ```text
//!  Command::Policy(Set | Remove) on network N
//!    pipeline.policy_command          N's view now says `policy` (NetworkView::policy)
//!    rehome(N)                        each veth port of N whose "kernel runs it" flag is no
//!                                     longer what the kernel would decide is closed and
//!                                     reopened the other way: read by nvod (a packet socket,
//!                                     in the workers' fanout group) or send-only again
//!    next Mirror::sync (same tick)    compile::network_supported refuses N (Unsupported::
//!                                     Policy): its tc programs come off its ports and its VNI
//!                                     leaves the kernel's network map, so its tunnel packets
//!                                     reach nvod's underlay socket
//! ```
//!
//! A policy applied to a network whose ports the kernel already runs thus takes effect within
//! the tick; removing the policy hands the network back to the kernel the same way.

use nvo_pipeline::policy::PolicyCommand;
use nvo_pipeline::Vni;

use super::forward::Core;
use super::ports;
use crate::command::{DatapathError, PortKind, Reply};

/// Runs a policy command; a network whose policy came or went is re-homed.
pub(super) fn policy(core: &mut Core, command: PolicyCommand) -> Result<Reply, DatapathError> {
    let changed = match &command {
        PolicyCommand::Set(vni, ..) | PolicyCommand::Remove(vni) => Some(*vni),
        _ => None,
    };
    let reply = core.pipeline.policy_command(command)?;
    if let Some(vni) = changed {
        rehome(core, vni);
    }
    Ok(Reply::Policy(reply))
}

/// Makes network `vni`'s veth ports the kernel's or nvod's, as the kernel path now decides.
fn rehome(core: &mut Core, vni: Vni) {
    let kernel = core.kernel.as_ref().is_some_and(|k| {
        core.pipeline
            .network(vni)
            .is_ok_and(|view| k.mode(&core.engine, &view).is_ok())
    });
    let workers = core.workers;
    let moved = core.ports.rehome(vni, |port| {
        (port.kind == PortKind::Veth && port.kernel != kernel).then(|| {
            let fanout = (workers > 1 && !kernel).then(|| ports::fanout_group(port.id));
            (kernel, fanout)
        })
    });
    if moved > 0 {
        log::info!(
            "network {vni}: {moved} port(s) now {}",
            if kernel {
                "run by the kernel datapath"
            } else {
                "read by nvod (identity policy)"
            }
        );
        core.ports.retry();
    }
}
