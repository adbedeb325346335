//! Loading the programs, attaching them, and the maps as typed handles.
//!
//! ```text
//!  Kernel::load(sizes)   the object (embedded at build time), every map sized from the
//!                        pipeline's limits, both programs through the verifier
//!  attach_underlay(if)   nvo_underlay at tc ingress of the locator's interface
//!  attach_port(if)       nvo_port at tc ingress of a port's host-side interface
//!  attach_relay(if, m)   nvo_relay, XDP on the locator's interface (driver or generic mode)
//! ```
//!
//! On kernels with TCX (6.6 and later) programs are attached as links owned by this process:
//! when nvod exits — or is killed — its descriptors close and the kernel detaches the programs,
//! so nothing stale is left on an interface. Older kernels get classic cls_bpf filters, which
//! outlive the process; [`Kernel::clean_stale`] removes those a previous nvod left (by program
//! name) before anything is attached.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use aya::maps::{Array, HashMap as BpfHash, MapData, PerCpuArray, PerCpuHashMap, RingBuf};
use aya::programs::xdp::XdpLinkId;
use aya::programs::{tc, SchedClassifier, TcAttachType, Xdp, XdpMode};
use aya::{Ebpf, EbpfLoader};

use crate::flows::KernelFlows;
use crate::layout::{self, NodeCounters};
use crate::limits::Sizes;

/// The compiled programs (empty when clang was missing at build time).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/nvo.bpf.o"));

/// The port program's name in the object.
pub const PORT_PROGRAM: &str = "nvo_port";
/// The underlay program's name in the object.
pub const UNDERLAY_PROGRAM: &str = "nvo_underlay";
/// The XDP relay's name in the object.
pub const RELAY_PROGRAM: &str = "nvo_relay";

/// How the XDP relay runs on an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpAttach {
    /// In the driver, before a socket buffer exists (what a NIC with XDP support gives).
    Driver,
    /// In the stack, on socket buffers (any interface; no faster than tc for most).
    Generic,
}

impl XdpAttach {
    fn mode(self) -> XdpMode {
        match self {
            XdpAttach::Driver => XdpMode::Driver,
            XdpAttach::Generic => XdpMode::Skb,
        }
    }

    /// "driver" or "generic".
    pub fn name(self) -> &'static str {
        match self {
            XdpAttach::Driver => "driver",
            XdpAttach::Generic => "generic",
        }
    }
}

/// Why the kernel path could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The crate was built without clang.
    #[error("the eBPF programs were not built (clang was missing when nvo was compiled; run scripts/setup.sh and rebuild)")]
    NotBuilt,
    /// The object or a map was refused.
    #[error("the kernel refused the eBPF object: {0}")]
    Object(String),
    /// The verifier refused a program.
    #[error("the kernel's verifier refused program {program}: {reason}")]
    Verifier {
        /// Which program.
        program: &'static str,
        /// The verifier's last words, or the errno.
        reason: String,
    },
    /// A map the object must have is missing.
    #[error("the eBPF object has no map {0}")]
    MissingMap(&'static str),
}

/// Why a program could not be attached to an interface.
#[derive(Debug, thiserror::Error)]
#[error("cannot attach {program} to {interface}: {reason}")]
pub struct AttachError {
    /// Which program.
    pub program: &'static str,
    /// The interface.
    pub interface: String,
    /// The kernel's reason.
    pub reason: String,
}

/// The maps, as typed handles.
pub struct Maps {
    pub(crate) config: Array<MapData, layout::Config>,
    pub(crate) entropy_ports: Array<MapData, u16>,
    pub(crate) ports: BpfHash<MapData, u32, layout::Port>,
    pub(crate) port_out: BpfHash<MapData, u32, layout::Port>,
    pub(crate) networks: BpfHash<MapData, u32, layout::Network>,
    pub(crate) net_ports: BpfHash<MapData, layout::NetIndex, u32>,
    pub(crate) flood: BpfHash<MapData, layout::NetIndex, layout::Remote>,
    pub(crate) nexthops: BpfHash<MapData, u32, layout::NextHop>,
    pub(crate) remote_tmpl: BpfHash<MapData, layout::RemoteKey, layout::Tmpl>,
    pub(crate) fdb: BpfHash<MapData, layout::FdbKey, layout::FdbEntry>,
    pub(crate) learn_budget: Array<MapData, i64>,
    pub(crate) vteps: BpfHash<MapData, layout::VtepKey, layout::Vtep>,
    pub(crate) port_budget: BpfHash<MapData, u32, i64>,
    pub(crate) keys: BpfHash<MapData, layout::Key, layout::KeyTarget>,
    pub(crate) profiles: Array<MapData, layout::Profile>,
    pub(crate) transports: BpfHash<MapData, layout::TransportKey, layout::Transport>,
    pub(crate) groups: BpfHash<MapData, u32, u32>,
    pub(crate) relays: BpfHash<MapData, layout::RelayKey, layout::Relay>,
    pub(crate) neighbors: BpfHash<MapData, layout::NeighKey, layout::Neigh>,
    pub(crate) relay_config: Array<MapData, layout::RelayConfig>,
    pub(crate) relay_ports: Array<MapData, u16>,
    pub(crate) drop_counters: PerCpuArray<MapData, u64>,
    pub(crate) net_counters: PerCpuArray<MapData, layout::NetCounters>,
    pub(crate) port_counters: PerCpuArray<MapData, layout::PortCounters>,
    pub(crate) node_counters: PerCpuArray<MapData, NodeCounters>,
    pub(crate) events: RingBuf<MapData>,
    pub(crate) punts: RingBuf<MapData>,
    pub(crate) trace: RingBuf<MapData>,
    pub(crate) monitor_on: Array<MapData, u32>,
    pub(crate) monitor: RingBuf<MapData>,
    pub(crate) monitor_lost: PerCpuArray<MapData, u64>,
    pub(crate) pol_nets: BpfHash<MapData, u32, layout::PolNet>,
    pub(crate) pol_rules: BpfHash<MapData, layout::RuleKey, layout::Rule>,
    pub(crate) pol_rule_hits: PerCpuHashMap<MapData, layout::RuleKey, u64>,
    pub(crate) pol_members: BpfHash<MapData, layout::MemberKey, u8>,
    pub(crate) pol_ids: BpfHash<MapData, layout::IdentKey, layout::Ident>,
    pub(crate) pol_learned: BpfHash<MapData, layout::IdentKey, u32>,
    pub(crate) pol_flows: BpfHash<MapData, layout::FlowKey, layout::Flow>,
    pub(crate) pol_counters: PerCpuArray<MapData, layout::PolCounters>,
}

impl std::fmt::Debug for Maps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Maps").finish_non_exhaustive()
    }
}

/// The loaded programs and their maps.
#[derive(Debug)]
pub struct Kernel {
    ebpf: Ebpf,
    /// The maps.
    pub maps: Maps,
    /// `pol_flows` again, as nvod's pipeline asks it on a miss.
    pub(crate) flows: Arc<KernelFlows>,
    /// Attachments by ifindex: (program, link).
    links: HashMap<u32, (&'static str, tc::SchedClassifierLinkId)>,
    /// The XDP relay's attachment: (ifindex, link).
    xdp_link: Option<(u32, XdpLinkId)>,
}

fn take<T>(ebpf: &mut Ebpf, name: &'static str) -> Result<T, LoadError>
where
    T: TryFrom<aya::maps::Map>,
    <T as TryFrom<aya::maps::Map>>::Error: std::fmt::Display,
{
    let map = ebpf.take_map(name).ok_or(LoadError::MissingMap(name))?;
    T::try_from(map).map_err(|e| LoadError::Object(format!("map {name}: {e}")))
}

/// The verifier's reason in one line: its last non-empty line (where it says what it refused),
/// with the errno.
fn verifier_reason(e: &aya::programs::ProgramError) -> String {
    match e {
        aya::programs::ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            let log = verifier_log.to_string();
            let last = log
                .lines()
                .rev()
                .find(|l| {
                    !l.trim().is_empty()
                        && !l.starts_with("processed")
                        && !l.starts_with("verification time")
                        && !l.starts_with("stack depth")
                })
                .unwrap_or("")
                .trim()
                .to_string();
            if last.is_empty() {
                io_error.to_string()
            } else {
                format!("{last} ({io_error})")
            }
        }
        other => other.to_string(),
    }
}

impl Kernel {
    /// Whether the programs were compiled into this build.
    pub fn built() -> bool {
        !OBJECT.is_empty()
    }

    /// Loads the object with every map sized by `sizes` and both programs verified.
    pub fn load(sizes: &Sizes) -> Result<Kernel, LoadError> {
        if !Kernel::built() {
            return Err(LoadError::NotBuilt);
        }
        let cpus =
            aya::util::nr_cpus().map_err(|(what, e)| LoadError::Object(format!("{what}: {e}")))?;
        let mut loader = EbpfLoader::new();
        for (name, entries) in sizes.entries() {
            loader.map_max_entries(name, entries);
        }
        loader.map_max_entries("scratch", u32::try_from(cpus).unwrap_or(u32::MAX).max(1));
        let mut ebpf = loader
            .load(OBJECT)
            .map_err(|e| LoadError::Object(error_chain(&e)))?;
        for program in [PORT_PROGRAM, UNDERLAY_PROGRAM] {
            let prog: &mut SchedClassifier = ebpf
                .program_mut(program)
                .ok_or_else(|| LoadError::Object(format!("no program {program}")))?
                .try_into()
                .map_err(|e: aya::programs::ProgramError| LoadError::Object(e.to_string()))?;
            prog.load().map_err(|e| LoadError::Verifier {
                program,
                reason: verifier_reason(&e),
            })?;
        }
        let relay: &mut Xdp = ebpf
            .program_mut(RELAY_PROGRAM)
            .ok_or_else(|| LoadError::Object(format!("no program {RELAY_PROGRAM}")))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| LoadError::Object(e.to_string()))?;
        relay.load().map_err(|e| LoadError::Verifier {
            program: RELAY_PROGRAM,
            reason: verifier_reason(&e),
        })?;
        // A second handle on the connection table, for nvod's pipeline to ask (flows.rs).
        let flows = match ebpf.map("pol_flows") {
            Some(aya::maps::Map::LruHashMap(data) | aya::maps::Map::HashMap(data)) => {
                KernelFlows::new(data)
                    .map_err(|e| LoadError::Object(format!("map pol_flows: {e}")))?
            }
            _ => return Err(LoadError::MissingMap("pol_flows")),
        };
        let maps = Maps {
            config: take(&mut ebpf, "config")?,
            entropy_ports: take(&mut ebpf, "entropy_ports")?,
            ports: take(&mut ebpf, "ports")?,
            port_out: take(&mut ebpf, "port_out")?,
            networks: take(&mut ebpf, "networks")?,
            net_ports: take(&mut ebpf, "net_ports")?,
            flood: take(&mut ebpf, "flood")?,
            nexthops: take(&mut ebpf, "nexthops")?,
            remote_tmpl: take(&mut ebpf, "remote_tmpl")?,
            fdb: take(&mut ebpf, "fdb")?,
            learn_budget: take(&mut ebpf, "learn_budget")?,
            vteps: take(&mut ebpf, "vteps")?,
            port_budget: take(&mut ebpf, "port_budget")?,
            keys: take(&mut ebpf, "keys")?,
            profiles: take(&mut ebpf, "profiles")?,
            transports: take(&mut ebpf, "transports")?,
            groups: take(&mut ebpf, "groups")?,
            relays: take(&mut ebpf, "relays")?,
            neighbors: take(&mut ebpf, "neighbors")?,
            relay_config: take(&mut ebpf, "relay_config")?,
            relay_ports: take(&mut ebpf, "relay_ports")?,
            drop_counters: take(&mut ebpf, "drop_counters")?,
            net_counters: take(&mut ebpf, "net_counters")?,
            port_counters: take(&mut ebpf, "port_counters")?,
            node_counters: take(&mut ebpf, "node_counters")?,
            events: take(&mut ebpf, "events")?,
            punts: take(&mut ebpf, "punts")?,
            trace: take(&mut ebpf, "trace")?,
            monitor_on: take(&mut ebpf, "monitor_on")?,
            monitor: take(&mut ebpf, "monitor")?,
            monitor_lost: take(&mut ebpf, "monitor_lost")?,
            pol_nets: take(&mut ebpf, "pol_nets")?,
            pol_rules: take(&mut ebpf, "pol_rules")?,
            pol_rule_hits: take(&mut ebpf, "pol_rule_hits")?,
            pol_members: take(&mut ebpf, "pol_members")?,
            pol_ids: take(&mut ebpf, "pol_ids")?,
            pol_learned: take(&mut ebpf, "pol_learned")?,
            pol_flows: take(&mut ebpf, "pol_flows")?,
            pol_counters: take(&mut ebpf, "pol_counters")?,
        };
        Ok(Kernel {
            ebpf,
            maps,
            flows: Arc::new(flows),
            links: HashMap::new(),
            xdp_link: None,
        })
    }

    fn program(&mut self, name: &'static str) -> Result<&mut SchedClassifier, String> {
        self.ebpf
            .program_mut(name)
            .ok_or_else(|| format!("no program {name}"))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| e.to_string())
    }

    /// Removes cls_bpf filters running nvo's programs that an earlier nvod attached with netlink
    /// (kernels before TCX) and left behind. TCX links need no cleaning: they die with the
    /// process that made them.
    pub fn clean_stale(interface: &str) {
        for program in [PORT_PROGRAM, UNDERLAY_PROGRAM] {
            if tc::qdisc_detach_program(interface, TcAttachType::Ingress, program).is_ok() {
                log::info!("removed a stale {program} left on {interface} by an earlier nvod");
            }
        }
    }

    /// Attaches `program` at tc ingress of `interface` (ifindex `ifindex`), replacing what this
    /// process had attached there.
    fn attach(
        &mut self,
        program: &'static str,
        interface: &str,
        ifindex: u32,
    ) -> Result<(), AttachError> {
        self.detach(ifindex);
        let err = |reason: String| AttachError {
            program,
            interface: interface.to_string(),
            reason,
        };
        Kernel::clean_stale(interface);
        // Kernels without TCX attach through a clsact qdisc; it may exist already.
        let _ = tc::qdisc_add_clsact(interface);
        let prog = self.program(program).map_err(err)?;
        let link = prog
            .attach(interface, TcAttachType::Ingress)
            .map_err(|e| err(e.to_string()))?;
        self.links.insert(ifindex, (program, link));
        Ok(())
    }

    /// Attaches the underlay program to the locator's interface.
    pub fn attach_underlay(&mut self, interface: &str, ifindex: u32) -> Result<(), AttachError> {
        self.attach(UNDERLAY_PROGRAM, interface, ifindex)
    }

    /// Attaches the port program to a port's host-side interface.
    pub fn attach_port(&mut self, interface: &str, ifindex: u32) -> Result<(), AttachError> {
        self.attach(PORT_PROGRAM, interface, ifindex)
    }

    /// Detaches whatever this process attached to `ifindex`.
    pub fn detach(&mut self, ifindex: u32) {
        if let Some((program, link)) = self.links.remove(&ifindex) {
            if let Ok(prog) = self.program(program) {
                // Fails only when the interface is gone, which took the program with it.
                let _ = prog.detach(link);
            }
        }
    }

    /// Attaches the XDP relay to `interface` in `mode` (native in the driver, or generic),
    /// replacing the one this process had attached. The link dies with the process, as the
    /// tc links do.
    pub fn attach_relay(
        &mut self,
        interface: &str,
        ifindex: u32,
        mode: XdpAttach,
    ) -> Result<(), AttachError> {
        self.detach_relay();
        let err = |reason: String| AttachError {
            program: RELAY_PROGRAM,
            interface: interface.to_string(),
            reason,
        };
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(RELAY_PROGRAM)
            .ok_or_else(|| err(format!("no program {RELAY_PROGRAM}")))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| err(e.to_string()))?;
        let link = prog
            .attach_to_if_index(ifindex, mode.mode())
            .map_err(|e| err(error_chain(&e)))?;
        self.xdp_link = Some((ifindex, link));
        Ok(())
    }

    /// Detaches the XDP relay, if this process attached it.
    pub fn detach_relay(&mut self) {
        let Some((_, link)) = self.xdp_link.take() else {
            return;
        };
        if let Some(prog) = self
            .ebpf
            .program_mut(RELAY_PROGRAM)
            .and_then(|p| <&mut Xdp>::try_from(p).ok())
        {
            let _ = prog.detach(link);
        }
    }

    /// The interface the XDP relay is attached to, if any.
    pub fn relay_attached(&self) -> Option<u32> {
        self.xdp_link.as_ref().map(|(ifindex, _)| *ifindex)
    }

    /// The loaded XDP relay, for `BPF_PROG_RUN`.
    pub fn relay_program(&self) -> Option<&Xdp> {
        self.ebpf.program(RELAY_PROGRAM)?.try_into().ok()
    }

    /// Whether a program of this process is attached to `ifindex`.
    pub fn attached(&self, ifindex: u32) -> bool {
        self.links.contains_key(&ifindex)
    }

    /// The loaded program called `name`, for `BPF_PROG_RUN` (tests, benchmarks).
    pub fn classifier(&self, name: &str) -> Option<&SchedClassifier> {
        self.ebpf.program(name)?.try_into().ok()
    }
}

/// An error with its causes, in one line: "what: why: deeper why".
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut why = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        why.push_str(": ");
        why.push_str(&s.to_string());
        source = s.source();
    }
    why
}

/// Sums a per-CPU value.
pub(crate) fn sum_per_cpu<T: aya::Pod + Copy>(
    map: &PerCpuArray<MapData, T>,
    index: u32,
    mut add: impl FnMut(&mut T, &T),
    zero: T,
) -> io::Result<T> {
    let values = map.get(&index, 0).map_err(io::Error::other)?;
    let mut total = zero;
    for v in values.iter() {
        add(&mut total, v);
    }
    Ok(total)
}
