//! Running the control thread's commands on the datapath thread, between batches.
//!
//! Each command is all-or-nothing: a network is added with its whole flood list or not at all,
//! a port's interface is opened before the port enters the tables (so a refusal leaves no
//! socket or TAP device behind), a network whose multicast group cannot be joined is removed
//! again.

use std::io;
use std::path::Path;
use std::time::Instant;

use std::net::IpAddr;

use nvo_encap::engine::Target;
use nvo_encap::profile::{Payload, ProfileId};
use nvo_pipeline::overlay::{App, Locator, NodeId};
use nvo_pipeline::{BumMode, IpFamilies, NetworkSpec, PortId, ProfileTag, Vni};

use super::forward::{Core, Forwarder};
use super::ports::{self, Port};
use super::underlays;
use crate::command::PortKind;
use crate::command::{Command, DatapathError, Reply};

/// Runs one command (everything but `Stop`, which the loop handles). The match only
/// dispatches: each command is one call, to the tables or to a function below.
pub fn run(fwd: &mut Forwarder, command: Command, now: Instant) -> Result<Reply, DatapathError> {
    let core = &mut fwd.core;
    let pipeline = &mut core.pipeline;
    match command {
        Command::AddNetwork {
            spec,
            flood,
            encap,
            params,
        } => done(add_network(core, spec, flood, &encap, &params)),
        Command::RemoveNetwork(vni) => done(remove_network(core, vni)),
        Command::AddPort {
            id,
            vni,
            name,
            kind,
            offloads,
            must_open,
        } => done(add_port(core, id, vni, name, kind, offloads, must_open)),
        Command::AddTrunk {
            id,
            name,
            kind,
            offloads,
            tpid,
            circuits,
            must_open,
        } => {
            let (io, fanout) = open_tagged(core, id, &name, kind, &offloads, must_open)?;
            core.pipeline.add_trunk(id, tpid, &circuits)?;
            let tag =
                |c: &nvo_pipeline::vlan::Circuit| nvo_pipeline::vlan::VlanTag { tpid, vid: c.vid };
            core.ports
                .insert_circuits(id, circuits.iter().map(|c| (c.port, Some(tag(c)))));
            let vni = circuits.first().map_or(Vni(0), |c| c.vni);
            core.ports
                .insert(tagged_port((id, name, kind, offloads), vni, io, fanout));
            Ok(Reply::Done)
        }
        Command::AddShared {
            id,
            name,
            kind,
            offloads,
            default,
            vports,
            must_open,
        } => done(add_shared(
            core,
            (id, name, kind, offloads),
            default,
            &vports,
            must_open,
        )),
        Command::AddVport(shared, vport) => {
            core.pipeline.add_vport(shared, vport)?;
            core.ports
                .insert_circuits(shared, [(vport.port, vport.tag())].into_iter());
            Ok(Reply::Done)
        }
        Command::RemoveVport(shared, mac) => {
            let vport = core.pipeline.remove_vport(shared, mac)?;
            core.ports.remove_circuit(vport);
            Ok(Reply::Done)
        }
        Command::SetQos(port, profile) => done(set_qos(core, port, profile)),
        Command::QosCounters => Ok(Reply::Qos(pipeline.qos_counters())),
        Command::SetMeter(n, profile) => {
            pipeline.set_meter(n, profile)?;
            Ok(Reply::Done)
        }
        Command::MeterCounters => Ok(Reply::Meters(pipeline.meter_counters())),
        Command::RemovePort(id) => done(remove_port(core, id)),
        Command::TapPort(id, on) => {
            core.ports.tap(id, on);
            Ok(Reply::Done)
        }
        Command::FdbAddStatic(vni, mac, dest) => done(pipeline.fdb_add_static(vni, mac, dest)),
        Command::FdbAddStaticHost(vni, mac, port, ips) => {
            done(pipeline.fdb_add_static_host(vni, mac, port, &ips))
        }
        Command::FdbRemove(vni, mac) => done(pipeline.fdb_remove(vni, mac)),
        Command::FdbFlush(vni, scope) => Ok(Reply::Flushed(pipeline.fdb_flush(vni, scope)?)),
        Command::FdbEntries(vni) => Ok(Reply::Entries(pipeline.fdb_entries(vni, now)?)),
        Command::FloodAdd(vni, remote) => done(pipeline.flood_add(vni, remote)),
        Command::FloodRemove(vni, remote) => done(pipeline.flood_remove(vni, remote)),
        Command::OverlayOwn(id) => done(core.overlay.set_own(id)),
        Command::OverlayNode(node, locators) => done(overlay_node(core, node, locators)),
        Command::OverlayNodeRemove(node) => {
            let removed = core.overlay.remove_node(node);
            known_locators(core);
            done(removed)
        }
        Command::OverlayRoute(app, dst, hops) => done(overlay_route(core, app, dst, hops)),
        Command::OverlayRouteRemove(app, dst) => done(core.overlay.remove_route(app, dst)),
        Command::OverlayCounters => Ok(overlay_counters(core)),
        Command::OverlayProbeStart {
            id,
            dst,
            via,
            count,
        } => done(probe_start(core, id, dst, via, count, now)),
        Command::OverlayProbeResult(id) => Ok(Reply::Probe(core.probes.take(id))),
        Command::RouteAdd(vni, prefix, len, remote) => {
            done(pipeline.route_add(vni, prefix, len, remote))
        }
        Command::RouteRemove(vni, prefix, len) => done(pipeline.route_remove(vni, prefix, len)),
        Command::Networks => Ok(Reply::Networks(pipeline.networks())),
        Command::PortsUp => Ok(ports_up(core)),
        Command::Counters => Ok(counters(fwd)),
        Command::AddProfile(profile) => done(core.engine.add_profile(*profile)),
        Command::RemoveProfile(name) => done(core.engine.remove_profile(&name)),
        Command::BindKey {
            profile,
            key,
            target,
        } => done(bind_key(core, profile, &key, target)),
        Command::UnbindKey { profile, key } => {
            unbind_key(core, &profile, &key);
            Ok(Reply::Done)
        }
        Command::EvpnApply(changes) => Ok(Reply::EvpnApplied(pipeline.evpn_apply(&changes))),
        Command::LocalHosts { since } => Ok(Reply::LocalHosts(pipeline.local_hosts_since(since))),
        Command::SetArpSuppression(vni, on) => done(pipeline.set_arp_suppression(vni, on)),
        Command::FlowMod(m) => super::flows::flow_mod(core, m, now),
        Command::Flows => Ok(super::flows::dump(core, now)),
        Command::FlowLookup(key) => Ok(super::flows::lookup(core, &key, now)),
        Command::PacketOut {
            in_port,
            actions,
            frame,
        } => super::flows::packet_out(core, in_port, &actions, &frame, now),
        Command::Policy(c) => {
            let shown = match &c {
                nvo_pipeline::policy::PolicyCommand::Show(vni) => Some(*vni),
                _ => None,
            };
            let mut reply = pipeline.policy_command(c)?;
            // The programs count what they decide (bpf/policy.h): their share is added to
            // worker 0's, which the other workers' are then merged into.
            if let (Some(vni), nvo_pipeline::policy::PolicyReply::Counters(counters), Some(k)) =
                (shown, &mut reply, &core.kernel)
            {
                k.add_policy_counters(vni, counters);
            }
            Ok(Reply::Policy(reply))
        }
        // The loop stops before asking; answering keeps the match total.
        Command::Stop => Ok(Reply::Done),
    }
}

/// `Reply::Done` for a command that has nothing to say (what the call returned is not
/// asked for), or why it was refused.
fn done<T, E: Into<DatapathError>>(result: Result<T, E>) -> Result<Reply, DatapathError> {
    result.map(|_| Reply::Done).map_err(Into::into)
}

/// Removes a network from the tables and the engine, and leaves its multicast group if it
/// was the group's last network.
fn remove_network(core: &mut Core, vni: Vni) -> Result<(), DatapathError> {
    let pipeline = &mut core.pipeline;
    let view = pipeline.network(vni)?;
    pipeline.remove_network(vni)?;
    core.engine
        .unbind_local(ProfileId(view.profile.0), view.vni.0);
    if let (BumMode::Multicast(group), 0) = (view.bum, core.worker) {
        if let Some(vxlan) = core.underlays.vxlan() {
            core.groups.remove(vxlan, group);
        }
    }
    Ok(())
}

/// Detaches a port and closes its interface.
fn remove_port(core: &mut Core, id: PortId) -> Result<(), DatapathError> {
    if core.pipeline.is_trunk(id) {
        core.pipeline.remove_trunk(id)?;
    } else if core.pipeline.is_shared(id) {
        core.pipeline.remove_shared(id)?;
    } else {
        core.pipeline.remove_port(id)?;
    }
    core.ports.remove(id);
    Ok(())
}

/// Attaches a shared port with its virtual ports, all or nothing: a virtual port the tables
/// refuse takes the shared port away again.
fn add_shared(
    core: &mut Core,
    (id, name, kind, offloads): (PortId, String, PortKind, nvo_api::PortOffloads),
    default: Option<(PortId, Vni)>,
    vports: &[nvo_pipeline::vport::Vport],
    must_open: bool,
) -> Result<(), DatapathError> {
    let (io, fanout) = open_tagged(core, id, &name, kind, &offloads, must_open)?;
    core.pipeline.add_shared(id, default)?;
    for v in vports {
        if let Err(e) = core.pipeline.add_vport(id, *v) {
            let _ = core.pipeline.remove_shared(id);
            return Err(e.into());
        }
    }
    let tags = vports.iter().map(|v| (v.port, v.tag()));
    core.ports
        .insert_circuits(id, tags.chain(default.map(|(p, _)| (p, None))));
    core.ports.insert_shared(id);
    let vni = default.map_or(Vni(0), |d| d.1);
    core.ports
        .insert(tagged_port((id, name, kind, offloads), vni, io, fanout));
    Ok(())
}

/// Opens a port whose frames carry tags (a trunk, a shared port): never the kernel's, nvod
/// reads it on either datapath with the tags restored (PACKET_AUXDATA); with several workers
/// each reads it through one fanout group, as any port. Its I/O and fanout group.
fn open_tagged(
    core: &Core,
    id: PortId,
    name: &str,
    kind: PortKind,
    offloads: &nvo_api::PortOffloads,
    must_open: bool,
) -> Result<(PortIo, Option<(u16, usize)>), DatapathError> {
    let fanout = (core.workers > 1).then(|| (ports::fanout_group(id), core.workers));
    let io = open_port(name, kind, offloads, (false, true), fanout, must_open)?;
    Ok((io, fanout))
}

/// The record of a port [`open_tagged`] opened, `vni` the network it shows.
fn tagged_port(
    (id, name, kind, offloads): (PortId, String, PortKind, nvo_api::PortOffloads),
    vni: Vni,
    io: PortIo,
    fanout: Option<(u16, usize)>,
) -> Port {
    Port {
        id,
        name,
        kind,
        vni,
        // Tags go on and off frames one by one: GSO frames are finished at receive.
        large: false,
        offloads,
        kernel: false,
        io,
        taps: 0,
        fanout,
    }
}

/// A port's frame I/O, absent while the interface is down.
type PortIo = Option<Box<dyn nvo_io::FramePort + Send>>;

/// Attaches or detaches a port's QoS profile, and hands the interface it is read on to worker
/// 0 alone while any port read there is policed (qos.rs; the one decision is handoff.rs's), now,
/// so that a reopen that fails is the command's error and the profile is taken back.
fn set_qos(
    core: &mut Core,
    port: PortId,
    profile: Option<nvo_pipeline::qos::QosProfile>,
) -> Result<(), DatapathError> {
    core.pipeline.set_qos(port, profile)?;
    let reader = core.ports.reader(port);
    if let Err(source) = super::handoff::pin_now(core, reader) {
        let name = core
            .ports
            .get(reader)
            .map_or_else(|| reader.to_string(), |p| p.name.clone());
        // Back to what it was: a policer on a port nvod cannot read would police nothing.
        if profile.is_some() {
            let _ = core.pipeline.set_qos(port, None);
        }
        return Err(DatapathError::Open { name, source });
    }
    Ok(())
}

/// Sets a node's locators.
fn overlay_node(
    core: &mut Core,
    node: NodeId,
    locators: Vec<Locator>,
) -> Result<(), DatapathError> {
    // Opening the overlay socket here lets a relay with no overlay network of its own
    // receive and relay.
    ensure_overlay_socket(core)?;
    core.overlay.set_locators(node, locators)?;
    known_locators(core);
    Ok(())
}

/// Tells the pipeline the overlay nodes' locators: remotes every network takes tunnel
/// packets from (`accept_remotes`).
fn known_locators(core: &mut Core) {
    let locators = core
        .overlay
        .nodes()
        .into_iter()
        .flat_map(|(_, locs)| locs.into_iter().map(|l| l.addr));
    core.pipeline.set_overlay_locators(locators);
}

/// Sets the next hops of a destination.
fn overlay_route(
    core: &mut Core,
    app: App,
    dst: NodeId,
    hops: Vec<NodeId>,
) -> Result<(), DatapathError> {
    ensure_overlay_socket(core)?;
    core.overlay.set_route(app, dst, hops)?;
    Ok(())
}

/// The overlay tables' counters, with what the kernel relayed.
fn overlay_counters(core: &Core) -> Reply {
    let mut counters = core.overlay.counters();
    if let Some(k) = &core.kernel {
        // Packets the kernel relayed never reached the tables.
        counters.relayed += k.node_counters().relayed;
    }
    Reply::Overlay(counters)
}

/// Starts a run of probes (refused while too many are in flight).
fn probe_start(
    core: &mut Core,
    id: u32,
    dst: NodeId,
    via: Option<NodeId>,
    count: u32,
    now: Instant,
) -> Result<(), DatapathError> {
    ensure_overlay_socket(core)?;
    if !core.probe_start(id, dst, via, count, now) {
        return Err(DatapathError::ProbesBusy(super::probes::MAX_RUNS));
    }
    Ok(())
}

/// (port, interface open) for every port.
fn ports_up(core: &Core) -> Reply {
    Reply::PortsUp(core.ports.iter().map(|p| (p.id, p.io.is_some())).collect())
}

/// The pipeline's counters (with the kernel's), the underlay sockets' and STT reassembly's.
fn counters(fwd: &Forwarder) -> Reply {
    let core = &fwd.core;
    let mut counters = core.pipeline.counters();
    if let Some(k) = &core.kernel {
        k.add_counters(&mut counters);
        // The programs forward most packets without the pipeline and count none per remote:
        // the pipeline's per-remote figures would be the slow path's share only.
        counters.remotes.clear();
    }
    Reply::Counters(
        Box::new(counters),
        core.underlays.stats(),
        fwd.reassembler.counters(),
        core.stt_tx.counters(),
        core.ila.stats,
    )
}

/// Binds a raw key of a profile; a forwarding target opens the profile's socket first.
fn bind_key(
    core: &mut Core,
    profile: String,
    key: &[u8],
    target: Target,
) -> Result<(), DatapathError> {
    let id = core
        .engine
        .id(&profile)
        .ok_or(DatapathError::UnknownProfile(profile))?;
    if let Target::Forward { .. } = target {
        let transport = core.engine.profile(id).map(|p| p.transport);
        if let Some(transport) = transport {
            core.underlays
                .ensure(transport)
                .map_err(|source| DatapathError::Transport {
                    transport: underlays::describe(transport),
                    source,
                })?;
        }
    }
    core.engine.bind_key(id, key, target)?;
    Ok(())
}

/// Removes a key binding (nothing to do for an unknown profile).
fn unbind_key(core: &mut Core, profile: &str, key: &[u8]) {
    if let Some(id) = core.engine.id(profile) {
        core.engine.unbind_key(id, key);
    }
}

/// Opens the overlay's UDP socket if it is not open yet.
fn ensure_overlay_socket(core: &mut Core) -> Result<(), DatapathError> {
    let transport = nvo_encap::profile::Transport::Udp(nvo_wire::ports::OVERLAY);
    core.underlays
        .ensure(transport)
        .map(drop)
        .map_err(|source| DatapathError::Transport {
            transport: underlays::describe(transport),
            source,
        })
}

/// The IP families `profile` can carry: its own payload, and those its payload field announces.
fn l3_families(engine: &nvo_encap::engine::Engine, profile: ProfileId) -> IpFamilies {
    let carries = |payload| engine.profile(profile).is_some_and(|p| p.carries(payload));
    IpFamilies {
        ipv4: carries(Payload::Ipv4),
        ipv6: carries(Payload::Ipv6),
    }
}

/// Adds an ILA network (`nvo_pipeline::l3::ila`): an L3 network with no profile, no socket
/// and no engine binding — its packets go through the ILA TUN (ila.rs); IPv4 ones translated
/// to IPv6 (`nvo_pipeline::l3::ila4`).
fn add_ila_network(core: &mut Core, mut spec: NetworkSpec) -> Result<(), DatapathError> {
    spec.l3_families = IpFamilies {
        ipv4: true,
        ipv6: true,
    };
    let vni = spec.vni;
    core.pipeline.add_network(spec)?;
    if let Err(e) = core.pipeline.set_ila(vni) {
        let _ = core.pipeline.remove_network(vni);
        return Err(e.into());
    }
    Ok(())
}

/// Adds a network, all or nothing: the profile's socket (opened if it is the first network on
/// its transport), the tables with the flood list, the engine's key, the multicast group.
fn add_network(
    core: &mut Core,
    mut spec: NetworkSpec,
    flood: Vec<IpAddr>,
    encap: &str,
    params: &[(String, u64)],
) -> Result<(), DatapathError> {
    if encap == nvo_encap::builtin::names::ILA {
        return add_ila_network(core, spec);
    }
    let profile = core
        .engine
        .id(encap)
        .ok_or_else(|| DatapathError::UnknownProfile(encap.to_owned()))?;
    let transport = core
        .engine
        .profile(profile)
        .map(|p| p.transport)
        .ok_or_else(|| DatapathError::UnknownProfile(encap.to_owned()))?;
    core.underlays
        .ensure(transport)
        .map_err(|source| DatapathError::Transport {
            transport: underlays::describe(transport),
            source,
        })?;
    spec.profile = ProfileTag(profile.0);
    if spec.l3_gateway.is_some() {
        // The families the profile can announce: vxlan-gpe both (its Next Protocol says which,
        // per packet), ipip IPv4 only, ip6ip6 IPv6 only. The network's default payload is
        // IPv4 when it has it; each packet's header announces its own family (forward.rs).
        // A profile that carries neither is refused here (PayloadNotCarried).
        let families = l3_families(&core.engine, profile);
        let payload = if families.ipv6 && !families.ipv4 {
            Payload::Ipv6
        } else {
            Payload::Ipv4
        };
        core.engine.set_payload(profile, spec.vni.0, payload)?;
        spec.l3_families = families;
    }
    let pipeline = &mut core.pipeline;
    if let Err(e) = pipeline.add_network(spec) {
        core.engine.unbind_local(profile, spec.vni.0);
        return Err(e.into());
    }
    // The network is new and empty: removing it cannot fail, and undoes it all.
    for remote in flood {
        if let Err(e) = pipeline.flood_add(spec.vni, remote) {
            let _ = pipeline.remove_network(spec.vni);
            return Err(e.into());
        }
    }
    // A profile keyed by the VNI finds the network by it; one keyed by something else (NSH's
    // service path) gets its keys bound through the API, and the network only its params.
    let key_is_vni = core.engine.profile(profile).is_some_and(|p| p.key_is_vni());
    let bound = if key_is_vni {
        core.engine.bind_local(profile, spec.vni.0, params)
    } else {
        core.engine.set_params(profile, spec.vni.0, None, params)
    };
    if let Err(e) = bound {
        let _ = pipeline.remove_network(spec.vni);
        return Err(e.into());
    }
    // Only worker 0 joins: its group sockets receive the group's floods.
    if let (BumMode::Multicast(group), 0) = (spec.bum, core.worker) {
        let joined = match core.underlays.vxlan() {
            Some(vxlan) => core.groups.add(vxlan, group),
            None => Ok(()),
        };
        if let Err(e) = joined {
            let _ = pipeline.remove_network(spec.vni);
            core.engine.unbind_local(profile, spec.vni.0);
            return Err(e);
        }
    }
    Ok(())
}

fn add_port(
    fwd: &mut Core,
    id: PortId,
    vni: Vni,
    name: String,
    kind: PortKind,
    offloads: nvo_api::PortOffloads,
    must_open: bool,
) -> Result<(), DatapathError> {
    // A veth of a network the kernel datapath runs: its frames are the kernel's.
    let kernel = kind == PortKind::Veth
        && fwd.kernel.as_ref().is_some_and(|k| {
            fwd.pipeline
                .network(vni)
                .is_ok_and(|view| k.mode(&fwd.engine, &view).is_ok())
        });
    let fanout = (fwd.workers > 1 && !kernel).then(|| (ports::fanout_group(id), fwd.workers));
    let io = open_port(&name, kind, &offloads, (kernel, false), fanout, must_open)?;
    fwd.pipeline.add_port(id, vni)?;
    fwd.ports.insert(Port {
        id,
        name,
        kind,
        vni,
        large: offloads.large_frames.unwrap_or(true),
        offloads,
        kernel,
        io,
        taps: 0,
        fanout,
    });
    Ok(())
}

/// Opens a port's interface: `None` (retried every second) when it cannot be opened now and
/// need not be.
fn open_port(
    name: &str,
    kind: PortKind,
    offloads: &nvo_api::PortOffloads,
    (kernel, trunk): (bool, bool),
    fanout: Option<(u16, usize)>,
    must_open: bool,
) -> Result<PortIo, DatapathError> {
    match ports::open(name, kind, offloads, kernel, trunk, fanout) {
        Ok(io) => Ok(Some(io)),
        Err(e) if must_open => Err(open_error(name.to_owned(), kind, e)),
        Err(e) => {
            log::warn!("port {name} is down: {e}; retrying every second");
            Ok(None)
        }
    }
}

/// A missing veth gets its own answer, saying how to create it.
fn open_error(name: String, kind: PortKind, source: io::Error) -> DatapathError {
    // nvo-io's error names the interface but not always the errno; sysfs says whether the
    // interface exists (`ip netns exec` mounts the namespace's own sysfs).
    if kind == PortKind::Veth && !Path::new("/sys/class/net").join(&name).exists() {
        DatapathError::NoInterface(name)
    } else {
        DatapathError::Open { name, source }
    }
}
