//! Commands from the control thread to the datapath thread, and their replies.
//!
//! ```text
//!  control thread (tokio, API)                      datapath thread (owns Pipeline + sockets)
//!  Datapath::call(cmd) ──Request{cmd, reply}──► sync_channel (bounded) ──┐
//!                      ──eventfd write (wake)──► poll() returns ─────────┤ drain, run each
//!       await reply ◄──────── oneshot::Sender::send(Result<Reply, _>) ◄──┘
//! ```
//!
//! The control thread never touches the tables: reading counters or the FDB is a command too.
//! With several workers the handle (`handle`) holds one such channel ([`Lane`]) per worker.
//! The channel is bounded so that a stuck datapath shows up as an error (503) rather than as
//! memory growing without end.

use std::net::IpAddr;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;

use nvo_encap::engine::{EngineError, Target};
use nvo_encap::profile::Profile;
use nvo_encap::stt::ReassemblyCounters;
use nvo_io::{EventFd, UnderlayStats};
use nvo_pipeline::overlay::{App, Locator, NodeId, OverlayCounters, OverlayError};
use nvo_pipeline::{
    Counters, EvpnApplied, EvpnChange, FdbDest, FdbView, FlushScope, LocalHosts, Mac, NetworkSpec,
    NetworkView, PortId, TableError, Vni,
};
use tokio::sync::oneshot;

/// How many commands may wait for the datapath.
pub const QUEUE: usize = 64;

/// One thing the datapath does for the control thread (cloned for each worker it goes to).
#[derive(Debug, Clone)]
pub enum Command {
    /// Adds a network with its initial flood list, all or nothing; joins its underlay
    /// multicast group (if it floods to one and is the group's first network).
    AddNetwork {
        /// The network (its `profile` is filled in from `encap`).
        spec: NetworkSpec,
        /// Its flood list.
        flood: Vec<IpAddr>,
        /// The name of its encapsulation profile.
        encap: String,
        /// Values of the profile's parameters for this network.
        params: Vec<(String, u64)>,
    },
    /// Removes a network (refused while ports are attached); leaves its multicast group if it
    /// was the group's last network.
    RemoveNetwork(Vni),
    /// Attaches a port and opens (veth) or creates (tap) its interface.
    AddPort {
        /// The id the control thread chose.
        id: PortId,
        /// Its network.
        vni: Vni,
        /// Interface name.
        name: String,
        /// Interface kind.
        kind: PortKind,
        /// Offload settings.
        offloads: nvo_api::PortOffloads,
        /// Refuse (rather than retry every second) when the interface cannot be opened now:
        /// true for an API request, false when restoring the state at start.
        must_open: bool,
    },
    /// Attaches a VLAN trunk (nvo_pipeline::vlan): interface `name` under id `id`, whose
    /// VLANs are the circuits, each a port of its network. nvod reads the interface itself on
    /// either datapath (the kernel path punts frames for the circuits to it).
    AddTrunk {
        /// The interface's id (no port of any network).
        id: PortId,
        /// Interface name.
        name: String,
        /// Interface kind.
        kind: PortKind,
        /// Offload settings (large frames are never kept whole on a trunk).
        offloads: nvo_api::PortOffloads,
        /// The outer tag's TPID, 0x8100 or 0x88a8.
        tpid: u16,
        /// VLAN → circuit port → network.
        circuits: Vec<nvo_pipeline::vlan::Circuit>,
        /// As for `AddPort`.
        must_open: bool,
    },
    /// Attaches a shared port (nvo_pipeline::vport, VM-VP): interface `name` under id `id`,
    /// whose frames belong to virtual ports by source MAC (and VLAN), each a port of its
    /// network. nvod reads the interface itself on either datapath, as a trunk's.
    AddShared {
        /// The interface's id (no port of any network).
        id: PortId,
        /// Interface name.
        name: String,
        /// Interface kind.
        kind: PortKind,
        /// Offload settings (large frames are never kept whole on a shared port).
        offloads: nvo_api::PortOffloads,
        /// The virtual port (id, network) of untagged frames from MACs no virtual port names.
        default: Option<(PortId, Vni)>,
        /// Its virtual ports.
        vports: Vec<nvo_pipeline::vport::Vport>,
        /// As for `AddPort`.
        must_open: bool,
    },
    /// Adds a virtual port to a shared port.
    AddVport(PortId, nvo_pipeline::vport::Vport),
    /// Removes the virtual port of a MAC from a shared port.
    RemoveVport(PortId, Mac),
    /// Attaches a QoS profile to a port or virtual port (`None`: detaches it). The port's
    /// interface (a virtual port's shared port) is then read by worker 0 alone, on either
    /// datapath (qos.rs).
    SetQos(PortId, Option<nvo_pipeline::qos::QosProfile>),
    /// Every policer's profile and counters.
    QosCounters,
    /// Adds or replaces flow-table meter N (nvo_pipeline::meters; `None`: deletes it, refused
    /// while a rule names it). Ports metered rules cover are read by worker 0 alone.
    SetMeter(u32, Option<nvo_pipeline::qos::QosProfile>),
    /// Every meter's rate, burst and counters.
    MeterCounters,
    /// Detaches a port (or a trunk with its circuits, a shared port with its virtual ports)
    /// and closes its interface.
    RemovePort(PortId),
    /// A capture starts (true) or ends (false) on a port's interface: the kernel datapath
    /// delivers to a tapped veth port through its host end (`bpf_redirect`, seen by the
    /// capture's tap) instead of straight to the peer (`bpf_redirect_peer`, seen by none).
    TapPort(PortId, bool),
    /// Adds a static FDB entry.
    FdbAddStatic(Vni, Mac, FdbDest),
    /// Adds a static FDB entry for a host behind a port, with its addresses.
    FdbAddStaticHost(Vni, Mac, PortId, Vec<IpAddr>),
    /// Removes an FDB entry.
    FdbRemove(Vni, Mac),
    /// Flushes FDB entries.
    FdbFlush(Vni, FlushScope),
    /// Lists a network's FDB.
    FdbEntries(Vni),
    /// Adds a remote to a flood list.
    FloodAdd(Vni, IpAddr),
    /// Removes a remote from a flood list.
    FloodRemove(Vni, IpAddr),
    /// Sets this node's overlay ID.
    OverlayOwn(NodeId),
    /// Sets a node's locators (this node's own: where it is reached).
    OverlayNode(NodeId, Vec<Locator>),
    /// Removes a node from the LIB.
    OverlayNodeRemove(NodeId),
    /// Sets the next hops of a destination for an application.
    OverlayRoute(App, NodeId, Vec<NodeId>),
    /// Removes a route.
    OverlayRouteRemove(App, NodeId),
    /// The overlay's counters.
    OverlayCounters,
    /// Starts a run of probes.
    OverlayProbeStart {
        /// Run ID.
        id: u32,
        /// Destination node.
        dst: NodeId,
        /// The relay to go through first, if any.
        via: Option<NodeId>,
        /// How many probes.
        count: u32,
    },
    /// What a run of probes measured (the run is forgotten).
    OverlayProbeResult(u32),
    /// Adds or replaces a route of an L3 network.
    RouteAdd(Vni, IpAddr, u8, IpAddr),
    /// Removes a route of an L3 network.
    RouteRemove(Vni, IpAddr, u8),
    /// Views of every network (for the learned/static counts).
    Networks,
    /// Which ports have their interface open.
    PortsUp,
    /// A snapshot of the counters.
    Counters,
    /// Adds a user-defined encapsulation profile.
    AddProfile(Box<Profile>),
    /// Removes a user-defined profile (refused while a network uses it).
    RemoveProfile(String),
    /// Binds a raw key of a profile (NSH: SPI and SI) to a local network or a next hop.
    BindKey {
        /// Profile name.
        profile: String,
        /// Key bytes.
        key: Vec<u8>,
        /// Where it leads.
        target: Target,
    },
    /// Removes a key binding.
    UnbindKey {
        /// Profile name.
        profile: String,
        /// Key bytes.
        key: Vec<u8>,
    },
    /// Applies a batch of EVPN changes, each on its own (docs/design/evpn.md).
    EvpnApply(Vec<EvpnChange>),
    /// The local hosts, if their set changed since generation `since` (0: always).
    LocalHosts {
        /// The generation the caller has.
        since: u64,
    },
    /// Switches ARP/ND suppression of a network.
    SetArpSuppression(Vni, bool),
    /// An identity policy operation (issue 18; nvo_pipeline::policy): a network's policy,
    /// endpoint labels, counters, a trace.
    Policy(nvo_pipeline::policy::PolicyCommand),

    /// Changes the flow table as an OpenFlow FLOW_MOD does (add, modify, delete; the API's
    /// `nvo flow add/del` too). Ports a rule now covers are handed to nvod on the kernel path.
    FlowMod(nvo_openflow::FlowMod),
    /// The flow table's rules with their counters (summed over the workers).
    Flows,
    /// The rule the table would pick for a key (no counting): `nvo trace`.
    FlowLookup(nvo_flow::Key),
    /// PACKET_OUT: a frame through a list of actions, as if from `in_port` (None: from the
    /// controller).
    PacketOut {
        /// Where it counts as coming from.
        in_port: Option<PortId>,
        /// What to do with it.
        actions: Vec<nvo_flow::Action>,
        /// The frame.
        frame: Vec<u8>,
    },
    /// Stops the datapath thread.
    Stop,
}

impl Command {
    /// Whether it leaves ports, networks and tables as they were (counters aside): reads,
    /// traces, PACKET_OUT. Nothing needs re-deciding after one (handoff.rs).
    pub fn keeps_tables(&self) -> bool {
        match self {
            Command::Policy(c) => c.is_read(),
            Command::FdbEntries(_)
            | Command::OverlayCounters
            | Command::OverlayProbeResult(_)
            | Command::Networks
            | Command::PortsUp
            | Command::Counters
            | Command::QosCounters
            | Command::MeterCounters
            | Command::LocalHosts { .. }
            | Command::Flows
            | Command::FlowLookup(_)
            | Command::PacketOut { .. } => true,
            _ => false,
        }
    }
}

/// What kind of interface a port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// An existing interface, opened with AF_PACKET.
    Veth,
    /// A TAP device the datapath creates.
    Tap,
}

/// What a command answers.
#[derive(Debug)]
pub enum Reply {
    /// Done, nothing to say.
    Done,
    /// Entries removed by a flush.
    Flushed(usize),
    /// A network's FDB.
    Entries(Vec<FdbView>),
    /// Every network.
    Networks(Vec<NetworkView>),
    /// (port, interface open) for every port.
    PortsUp(Vec<(PortId, bool)>),
    /// The overlay's counters.
    Overlay(OverlayCounters),
    /// A probe run's measurements (None: no such run).
    Probe(Option<crate::probes::RunResult>),
    /// Every policed port with its profile and counters (summed over the workers).
    Qos(
        Vec<(
            PortId,
            nvo_pipeline::qos::QosProfile,
            nvo_pipeline::qos::PolicerCounters,
        )>,
    ),
    /// Every meter with its rate and burst and counters (summed over the workers).
    Meters(
        Vec<(
            u32,
            nvo_pipeline::qos::QosProfile,
            nvo_pipeline::qos::PolicerCounters,
        )>,
    ),
    /// The pipeline's counters, the underlay sockets' own, STT reassembly's, STT transmit's
    /// and the ILA TUN's.
    Counters(
        Box<Counters>,
        UnderlayStats,
        ReassemblyCounters,
        crate::SttTxCounters,
        crate::IlaStats,
    ),
    /// What an EVPN batch did.
    EvpnApplied(EvpnApplied),
    /// The local hosts (None: unchanged since the generation asked about).
    LocalHosts(Option<LocalHosts>),
    /// The flow table (`Command::Flows`).
    Flows(FlowDump),
    /// The rule `Command::FlowLookup` found.
    FlowMatch(Option<nvo_openflow::FlowStat>),
    /// A policy operation's answer.
    Policy(nvo_pipeline::policy::PolicyReply),
}

/// Why the datapath refused a command.
/// The flow table as `Command::Flows` reads it.
#[derive(Debug, Clone, Default)]
pub struct FlowDump {
    /// Every rule with its counters, best first.
    pub rules: Vec<nvo_openflow::FlowStat>,
    /// How long each rule (same order) has had no packet: with several workers, the least
    /// of theirs (nvod expires idle rules from it, the same in every worker).
    pub idle: Vec<std::time::Duration>,
    /// Lookups made.
    pub lookups: u64,
    /// Lookups that found a rule.
    pub matched: u64,
    /// The most rules the table takes.
    pub capacity: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    /// The tables refused.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A veth port whose interface does not exist.
    #[error(
        "interface {0} does not exist in nvod's network namespace; create it first (for a \
         container: ip link add {0} type veth peer name eth0 netns CONTAINER), or use kind \
         \"tap\" to have nvod create a TAP device"
    )]
    NoInterface(String),
    /// The interface of a port could not be opened or created.
    #[error("cannot open interface {name:?}: {source}")]
    Open {
        /// Interface name.
        name: String,
        /// What the kernel said.
        source: std::io::Error,
    },
    /// The underlay multicast group of a network could not be joined.
    #[error(
        "cannot join underlay multicast group {group}: {source}; check that the locator's \
         interface is up and takes multicast"
    )]
    Join {
        /// The group.
        group: IpAddr,
        /// What the kernel said.
        source: std::io::Error,
    },
    /// A network asks for a new multicast group when the node has joined the most it may.
    #[error(
        "cannot join underlay multicast group {group}: {max} groups are joined already, the \
         most a node holds; let networks share a group (the vni keeps them apart)"
    )]
    TooManyGroups {
        /// The group.
        group: IpAddr,
        /// The bound.
        max: usize,
    },
    /// The overlay tables refused.
    #[error(transparent)]
    Overlay(#[from] OverlayError),
    /// The engine refused a profile or a binding.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The network names a profile the engine does not have.
    #[error(
        "no encapsulation profile named {0:?}; GET /v1/profiles lists them (vxlan, vxlan-gbp, \
         vxlan-gpe, geneve, nvgre, overlay, ipip, ip6ip6, stt and the user-defined ones)"
    )]
    UnknownProfile(String),
    /// The socket of a profile's transport could not be opened.
    #[error("cannot open the underlay {transport} on the locator: {source}")]
    Transport {
        /// "udp port N" or "ip protocol N".
        transport: String,
        /// What the kernel said.
        source: std::io::Error,
    },
    /// Too many probe runs are in flight.
    #[error("too many probe runs in flight ({0} at most); retry in a moment")]
    ProbesBusy(usize),
    /// The datapath thread is gone (it stopped or failed; its log says why).
    #[error(transparent)]
    Flow(#[from] nvo_pipeline::FlowError),
    /// A meter change was refused.
    #[error(transparent)]
    Meter(#[from] nvo_pipeline::meters::MeterError),
    #[error("the datapath thread has stopped; restart nvod (its log says why)")]
    Gone,
    /// Too many commands are waiting.
    #[error("the datapath is busy ({QUEUE} commands waiting); retry in a moment")]
    Busy,
}

/// A command with the channel its reply goes back on.
#[derive(Debug)]
pub struct Request {
    /// The command.
    pub command: Command,
    /// Where the reply goes.
    pub reply: oneshot::Sender<Result<Reply, DatapathError>>,
}

/// The channel to one worker.
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    sender: SyncSender<Request>,
    wake: Arc<EventFd>,
}

impl Lane {
    /// A channel pair: the control end and the worker's receiving end.
    pub(crate) fn channel(wake: Arc<EventFd>) -> (Lane, mpsc::Receiver<Request>) {
        let (sender, receiver) = mpsc::sync_channel(QUEUE);
        (Lane { sender, wake }, receiver)
    }
}

impl Lane {
    /// Runs one command on this worker and waits for its reply.
    pub(crate) async fn call(&self, command: Command) -> Result<Reply, DatapathError> {
        let (reply, answer) = oneshot::channel();
        match self.sender.try_send(Request { command, reply }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(DatapathError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(DatapathError::Gone),
        }
        if self.wake.notify().is_err() {
            return Err(DatapathError::Gone);
        }
        answer.await.map_err(|_| DatapathError::Gone)?
    }

    /// Asks the datapath thread to stop, without waiting for an answer (for the shutdown
    /// path, outside the runtime). A datapath that is gone already needs nothing.
    pub fn stop(&self) {
        let (reply, _) = oneshot::channel();
        let request = Request {
            command: Command::Stop,
            reply,
        };
        // A full queue still stops the thread: it sees the channel close once the control
        // side is dropped.
        if self.sender.try_send(request).is_ok() {
            let _ = self.wake.notify();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvo_pipeline::policy::PolicyCommand;

    #[test]
    fn reads_keep_the_tables_and_changes_do_not() {
        let vni = Vni(100);
        for read in [
            Command::Counters,
            Command::QosCounters,
            Command::MeterCounters,
            Command::Networks,
            Command::Flows,
            Command::Policy(PolicyCommand::Show(vni)),
        ] {
            assert!(read.keeps_tables(), "{read:?}");
        }
        for change in [
            Command::RemoveNetwork(vni),
            Command::RemovePort(PortId(1)),
            Command::SetQos(PortId(1), None),
            Command::SetMeter(1, None),
            Command::Policy(PolicyCommand::Remove(vni)),
        ] {
            assert!(!change.keeps_tables(), "{change:?}");
        }
    }
}
