//! Running the control thread's commands on the datapath thread, between batches.
//!
//! Each command is all-or-nothing: a network is added with its whole flood list or not at all,
//! a port's interface is opened before the port enters the tables (so a refusal leaves no
//! socket or TAP device behind), a network whose multicast group cannot be joined is removed
//! again.

use std::io;
use std::path::Path;
use std::time::Instant;

use nvo_pipeline::{BumMode, PortId, Vni};

use super::forward::Forwarder;
use super::ports::{self, Port};
use crate::command::{Command, DatapathError, Reply};
use crate::state::PortKindState;

/// Runs one command (everything but `Stop`, which the loop handles).
pub fn run(fwd: &mut Forwarder, command: Command, now: Instant) -> Result<Reply, DatapathError> {
    let pipeline = &mut fwd.pipeline;
    Ok(match command {
        Command::AddNetwork { spec, flood } => {
            pipeline.add_network(spec)?;
            // The network is new and empty: removing it cannot fail, and undoes it all.
            for remote in flood {
                if let Err(e) = pipeline.flood_add(spec.vni, remote) {
                    let _ = pipeline.remove_network(spec.vni);
                    return Err(e.into());
                }
            }
            if let BumMode::Multicast(group) = spec.bum {
                if let Err(e) = fwd.groups.add(&mut fwd.underlay, group) {
                    let _ = pipeline.remove_network(spec.vni);
                    return Err(e);
                }
            }
            Reply::Done
        }
        Command::RemoveNetwork(vni) => {
            let bum = pipeline.network(vni)?.bum;
            pipeline.remove_network(vni)?;
            if let BumMode::Multicast(group) = bum {
                fwd.groups.remove(&mut fwd.underlay, group);
            }
            Reply::Done
        }
        Command::AddPort {
            id,
            vni,
            name,
            kind,
            must_open,
        } => {
            add_port(fwd, id, vni, name, kind, must_open)?;
            Reply::Done
        }
        Command::RemovePort(id) => {
            pipeline.remove_port(id)?;
            fwd.ports.remove(id);
            Reply::Done
        }
        Command::FdbAddStatic(vni, mac, dest) => {
            pipeline.fdb_add_static(vni, mac, dest)?;
            Reply::Done
        }
        Command::FdbRemove(vni, mac) => {
            pipeline.fdb_remove(vni, mac)?;
            Reply::Done
        }
        Command::FdbFlush(vni, scope) => Reply::Flushed(pipeline.fdb_flush(vni, scope)?),
        Command::FdbEntries(vni) => Reply::Entries(pipeline.fdb_entries(vni, now)?),
        Command::FloodAdd(vni, remote) => {
            pipeline.flood_add(vni, remote)?;
            Reply::Done
        }
        Command::FloodRemove(vni, remote) => {
            pipeline.flood_remove(vni, remote)?;
            Reply::Done
        }
        Command::Networks => Reply::Networks(pipeline.networks()),
        Command::PortsUp => {
            Reply::PortsUp(fwd.ports.iter().map(|p| (p.id, p.io.is_some())).collect())
        }
        Command::Counters => Reply::Counters(Box::new(pipeline.counters()), fwd.underlay.stats()),
        // The loop stops before asking; answering keeps the match total.
        Command::Stop => Reply::Done,
    })
}

fn add_port(
    fwd: &mut Forwarder,
    id: PortId,
    vni: Vni,
    name: String,
    kind: PortKindState,
    must_open: bool,
) -> Result<(), DatapathError> {
    let io = match ports::open(&name, kind) {
        Ok(io) => Some(io),
        Err(e) if must_open => return Err(open_error(name, kind, e)),
        Err(e) => {
            log::warn!("port {name} (network {vni}) is down: {e}; retrying every second");
            None
        }
    };
    fwd.pipeline.add_port(id, vni)?;
    fwd.ports.insert(Port {
        id,
        name,
        kind,
        vni,
        io,
    });
    Ok(())
}

/// A missing veth gets its own answer, saying how to create it.
fn open_error(name: String, kind: PortKindState, source: io::Error) -> DatapathError {
    // nvo-io's error names the interface but not always the errno; sysfs says whether the
    // interface exists (`ip netns exec` mounts the namespace's own sysfs).
    if kind == PortKindState::Veth && !Path::new("/sys/class/net").join(&name).exists() {
        DatapathError::NoInterface(name)
    } else {
        DatapathError::Open { name, source }
    }
}
