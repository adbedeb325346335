//! nvod's tables in the maps: the pipeline and the engine are the desired state, the maps a
//! mirror of it that [`Mirror::sync`] brings up to date after every change.
//!
//! ```text
//!  sync(pipeline, engine, ports)      after every command batch and every tick
//!    profiles, transports ─┐  compiled (compile.rs) and diffed against what was written
//!    networks, ports, flood, keys ─┘  last (shadow copies), so only changes reach the kernel
//!    fdb        the pipeline's journal: each changed (vni, mac) written or removed; a network
//!               that changed more than the journal holds, or is new to the kernel, in full
//!    budgets    how many MACs each network may still learn (max_learned − learned)
//!    vteps      each network's known remotes (accept_remotes) and every remote's and port's
//!               learning budget (vteps.rs)
//!    neighbors  ARP suppression's IPv4 entries of suppressing networks (neighbors.rs)
//!  drain_events(pipeline)             learn reports → Pipeline::learn → the entry written back
//!  drain_punts(f)                     frames for nvod → f (nvod runs the pipeline on them)
//! ```
//!
//! The programs' counters are added to the pipeline's in `counters.rs`; the FDB, the learn
//! reports and the budgets are `fdb.rs`, the relay map `relay.rs`, the neighbours `neighbors.rs`.
//!
//! A network whose profile or shape the kernel cannot carry ([`compile::Unsupported`]) gets no
//! entry: its ports carry no program and its keys say "pass", so nvod's userspace path serves
//! it whole.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use aya::maps::{HashMap as BpfHash, MapData, PerCpuValues};
use nvo_encap::engine::{Engine, Target};
use nvo_encap::profile::{ProfileId, Transport};
use nvo_pipeline::{Mac, NetworkView, Pipeline, PortId, Vni};

use crate::compile::{self, Unsupported};
use crate::kernel::{AttachError, Kernel};
use crate::layout::{self, read_record};
use nvo_io::iface::Interface;

mod counters;
mod fdb;
mod monitor;
mod neighbors;
mod policy;
mod relay;
mod vteps;

pub use relay::relay_entries;

/// A port as nvod knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    /// The pipeline's id.
    pub id: PortId,
    /// Its network.
    pub vni: Vni,
    /// Its interface's name.
    pub name: String,
    /// Its interface's index, while it is up.
    pub ifindex: Option<u32>,
    /// A veth (the kernel path runs it) rather than a TAP nvod reads itself.
    pub veth: bool,
    /// A capture taps its interface: frames to it go through the host end's egress (where
    /// an AF_PACKET tap sees them), not straight to the veth peer.
    pub tapped: bool,
}

/// What the programs need to know of the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSettings {
    /// The locator. With an IPv6 one every network runs on the userspace path (the programs
    /// build IPv4 outer headers) and the underlay program is not attached.
    pub locator: IpAddr,
    /// The locator's interface (an IPv4 locator's).
    pub underlay: Option<Interface>,
    /// The UDP port VXLAN uses on the wire (the engine's VXLAN transport is UDP 4789).
    pub vxlan_port: u16,
    /// Outer source ports, indexed by entropy modulo their number (nvod's UDP socket's).
    pub source_ports: Vec<u16>,
    /// Outer TTL, unless inherited.
    pub ttl: u8,
    /// Take the outer TTL from the inner packet.
    pub ttl_inherit: bool,
    /// Outer TOS, unless inherited.
    pub tos: u8,
    /// Take the outer TOS from the inner packet.
    pub tos_inherit: bool,
    /// Set Don't Fragment.
    pub df: bool,
    /// Outer TTL towards multicast groups.
    pub multicast_ttl: u8,

    /// Copy every packet the programs send to the trace ring (tests, capture).
    pub trace: bool,
}

/// Counters of the mirror itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MirrorStats {
    /// Map writes the kernel refused (a full FDB most likely).
    pub write_errors: u64,
    /// Learn reports applied.
    pub learn_reports: u64,
    /// Frames received from the programs.
    pub punts: u64,
}

/// Slot numbers for counters and budgets, reused after a release.
#[derive(Debug)]
struct Slots<K> {
    by_key: HashMap<K, u32>,
    free: Vec<u32>,
    next: u32,
}

impl<K> Default for Slots<K> {
    fn default() -> Slots<K> {
        Slots {
            by_key: HashMap::new(),
            free: Vec::new(),
            next: 0,
        }
    }
}

impl<K: Eq + Hash + Copy> Slots<K> {
    fn get(&mut self, key: K) -> (u32, bool) {
        if let Some(&s) = self.by_key.get(&key) {
            return (s, false);
        }
        let s = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        self.by_key.insert(key, s);
        (s, true)
    }

    /// Releases every slot whose key is not in `keep`; returns them.
    fn retain(&mut self, keep: impl Fn(&K) -> bool) -> Vec<u32> {
        let gone: Vec<K> = self.by_key.keys().filter(|k| !keep(k)).copied().collect();
        let mut freed = Vec::new();
        for k in gone {
            if let Some(s) = self.by_key.remove(&k) {
                self.free.push(s);
                freed.push(s);
            }
        }
        freed
    }
}

/// Writes `desired` into `map` where it differs from `shadow` (what was written last), removes
/// what is no longer desired, and leaves `shadow` equal to what the map holds.
fn reconcile<K, V>(
    map: &mut BpfHash<MapData, K, V>,
    shadow: &mut HashMap<K, V>,
    desired: HashMap<K, V>,
    errors: &mut u64,
) where
    K: aya::Pod + Eq + Hash,
    V: aya::Pod + PartialEq,
{
    let stale: Vec<K> = shadow
        .keys()
        .filter(|k| !desired.contains_key(k))
        .copied()
        .collect();
    for k in stale {
        let _ = map.remove(&k);
        shadow.remove(&k);
    }
    for (k, v) in desired {
        if shadow.get(&k) == Some(&v) {
            continue;
        }
        match map.insert(k, v, 0) {
            Ok(()) => {
                shadow.insert(k, v);
            }
            Err(_) => *errors += 1,
        }
    }
}

/// The kernel path's tables, kept equal to the pipeline's.
#[derive(Debug)]
pub struct Mirror {
    kernel: Kernel,
    settings: NodeSettings,
    net_slots: Slots<Vni>,
    port_slots: Slots<PortId>,
    /// Why each network known so far runs where it does (Ok: the kernel).
    modes: HashMap<Vni, Result<(), Unsupported>>,
    networks: HashMap<u32, layout::Network>,
    net_ports: HashMap<layout::NetIndex, u32>,
    flood: HashMap<layout::NetIndex, layout::Remote>,
    remote_tmpl: HashMap<layout::RemoteKey, layout::Tmpl>,
    keys: HashMap<layout::Key, layout::KeyTarget>,
    transports: HashMap<layout::TransportKey, layout::Transport>,
    profiles: HashMap<u32, layout::Profile>,
    ports_in: HashMap<u32, layout::Port>,
    ports_out: HashMap<u32, layout::Port>,
    groups: HashMap<u32, u32>,
    /// Ports whose program is attached, by ifindex.
    attached: HashMap<u32, PortId>,
    /// Networks in the kernel at the last sync.
    in_kernel: HashSet<Vni>,
    stats: MirrorStats,
    /// Remotes the kernel may send to (flood lists, FDB entries), whose next hops nvod
    /// resolves: what `nexthops` holds for each.
    remotes: HashMap<Ipv4Addr, Option<layout::NextHop>>,
    changed: Vec<(Vni, Mac)>,
    overflowed: Vec<Vni>,
    /// The relay map as written, and the overlay tables' generation it was written from.
    relays: HashMap<layout::RelayKey, layout::Relay>,
    relay_generation: Option<u64>,
    /// The overlay socket's port and source ports as written to `relay_config`.
    relay_socket: Option<(u16, Vec<u16>)>,
    /// ARP suppression's entries as written, per network, and the generation of the
    /// pipeline's table they were written from.
    neighbors: HashMap<Vni, HashMap<layout::NeighKey, layout::Neigh>>,
    neigh_generations: HashMap<Vni, u64>,
    /// The `vteps` and `port_budget` keys as written (vteps.rs).
    vteps: HashSet<layout::VtepKey>,
    port_budgets: HashSet<u32>,
    /// Identity policy's entries as written (policy.rs).
    policy: policy::PolicyShadow,
}

impl Mirror {
    /// Takes over a loaded kernel: writes the node's settings and attaches the underlay
    /// program.
    pub fn new(mut kernel: Kernel, settings: NodeSettings) -> Result<Mirror, AttachError> {
        let mut flags = 0;
        if settings.trace {
            flags |= layout::CFG_TRACE;
        }
        if settings.df {
            flags |= layout::CFG_DF;
        }
        if settings.ttl_inherit {
            flags |= layout::CFG_TTL_INHERIT;
        }
        if settings.tos_inherit {
            flags |= layout::CFG_TOS_INHERIT;
        }
        let ports: Vec<u16> = if settings.source_ports.is_empty() {
            vec![ENTROPY_BASE]
        } else {
            settings.source_ports.clone()
        };
        let n = ports.len().min(layout::MAX_ENTROPY);
        let locator = match settings.locator {
            IpAddr::V4(v4) => v4.octets(),
            IpAddr::V6(_) => [0; 4],
        };
        let (underlay_ifindex, underlay_mac) = settings
            .underlay
            .as_ref()
            .map_or((0, [0; 6]), |u| (u.ifindex, u.mac));
        let config = layout::Config {
            underlay_ifindex,
            locator,
            flags,
            entropy_ports: n as u16,
            ttl: settings.ttl,
            tos: settings.tos,
            multicast_ttl: settings.multicast_ttl,
            underlay_mac,
            pad: 0,
        };
        let err = |reason: String| AttachError {
            program: crate::kernel::UNDERLAY_PROGRAM,
            interface: settings
                .underlay
                .as_ref()
                .map_or_else(String::new, |u| u.name.clone()),
            reason,
        };
        for (i, &p) in ports.iter().take(n).enumerate() {
            kernel
                .maps
                .entropy_ports
                .set(i as u32, p.to_be(), 0)
                .map_err(|e| err(format!("entropy port table: {e}")))?;
        }
        kernel
            .maps
            .config
            .set(0, config, 0)
            .map_err(|e| err(format!("config map: {e}")))?;
        if let (Some(u), IpAddr::V4(_)) = (&settings.underlay, settings.locator) {
            kernel.attach_underlay(&u.name, u.ifindex)?;
        }
        Ok(Mirror {
            kernel,
            settings,
            net_slots: Slots::default(),
            port_slots: Slots::default(),
            modes: HashMap::new(),
            networks: HashMap::new(),
            net_ports: HashMap::new(),
            flood: HashMap::new(),
            remote_tmpl: HashMap::new(),
            keys: HashMap::new(),
            transports: HashMap::new(),
            profiles: HashMap::new(),
            ports_in: HashMap::new(),
            ports_out: HashMap::new(),
            groups: HashMap::new(),
            attached: HashMap::new(),
            in_kernel: HashSet::new(),
            stats: MirrorStats::default(),
            remotes: HashMap::new(),
            changed: Vec::new(),
            overflowed: Vec::new(),
            relays: HashMap::new(),
            relay_generation: None,
            relay_socket: None,
            neighbors: HashMap::new(),
            neigh_generations: HashMap::new(),
            vteps: HashSet::new(),
            port_budgets: HashSet::new(),
            policy: Default::default(),
        })
    }

    /// The loaded programs and maps.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The loaded programs and maps, to attach the XDP relay (Kernel::attach_relay).
    pub fn kernel_mut(&mut self) -> &mut Kernel {
        &mut self.kernel
    }

    /// The node's settings.
    pub fn settings(&self) -> &NodeSettings {
        &self.settings
    }

    /// The mirror's counters.
    pub fn stats(&self) -> MirrorStats {
        self.stats
    }

    /// Whether network `view` runs in the kernel, or why not.
    pub fn mode(&self, engine: &Engine, view: &NetworkView) -> Result<(), Unsupported> {
        compile::network_supported(engine, view, self.settings.locator)
    }

    /// The decision last made for network `vni`, if it was seen.
    pub fn known_mode(&self, vni: Vni) -> Option<&Result<(), Unsupported>> {
        self.modes.get(&vni)
    }

    /// Whether the kernel runs port `id` (its frames never reach nvod's socket).
    pub fn runs_port(&self, id: PortId) -> bool {
        self.attached.values().any(|&p| p == id)
    }

    /// Brings every map up to date with the pipeline, the engine and the ports.
    pub fn sync(
        &mut self,
        pipeline: &mut Pipeline,
        engine: &Engine,
        ports: &[PortInfo],
        now: Instant,
    ) {
        let views = pipeline.networks();
        let mut kernel_nets: HashMap<Vni, &NetworkView> = HashMap::new();
        for view in &views {
            let mode = self.mode(engine, view);
            let previous = self.modes.insert(view.vni, mode.clone());
            match &mode {
                Ok(()) => {
                    if matches!(previous, Some(Err(_))) {
                        log::info!("network {} runs in the kernel again", view.vni);
                    }
                    kernel_nets.insert(view.vni, view);
                }
                Err(why) if previous.as_ref() != Some(&mode) => {
                    log::info!("network {} runs on the userspace path: {why}", view.vni)
                }
                Err(_) => {}
            }
        }
        self.modes
            .retain(|vni, _| views.iter().any(|v| v.vni == *vni));
        self.sync_profiles(engine);
        self.sync_policy(pipeline, &kernel_nets);
        self.sync_networks(engine, &kernel_nets);
        self.sync_keys(engine, &kernel_nets);
        self.sync_ports(ports, &kernel_nets);
        self.sync_fdb(pipeline, &kernel_nets, now);
        self.sync_budgets(&kernel_nets);
        self.sync_vteps(pipeline, &kernel_nets, ports);
        self.sync_neighbors(pipeline, &kernel_nets);
        self.resolve_new_remotes();
    }

    /// Resolves the next hops of remotes not tried yet.
    fn resolve_new_remotes(&mut self) {
        if self.remotes.values().any(Option::is_none) {
            self.refresh_nexthops();
        }
    }

    /// Reads the host's routes and neighbours and writes the next hop of every remote the
    /// kernel may send to: what changed since the last read, and removes what went away. nvod
    /// calls it every tick, and after handing a packet to its socket for an unresolved remote.
    pub fn refresh_nexthops(&mut self) {
        let tables = crate::nexthop::Tables::read();
        let mut macs: HashMap<String, Option<nvo_io::iface::Interface>> = HashMap::new();
        let remotes: Vec<Ipv4Addr> = self.remotes.keys().copied().collect();
        for r in remotes {
            let want = tables.resolve(r).and_then(|(iface, dmac)| {
                let i = macs
                    .entry(iface.clone())
                    .or_insert_with(|| nvo_io::iface::interface(&iface).ok())
                    .clone()?;
                Some(layout::NextHop {
                    ifindex: i.ifindex,
                    smac: i.mac,
                    dmac,
                })
            });
            let had = self.remotes.get(&r).copied().flatten();
            if want == had && self.remotes.get(&r).is_some_and(Option::is_some) {
                continue;
            }
            let key = u32::from_ne_bytes(r.octets());
            match want {
                Some(nh) => {
                    if self.kernel.maps.nexthops.insert(key, nh, 0).is_err() {
                        self.stats.write_errors += 1;
                    }
                }
                None => {
                    let _ = self.kernel.maps.nexthops.remove(&key);
                }
            }
            self.remotes.insert(r, want);
        }
    }

    fn sync_profiles(&mut self, engine: &Engine) {
        let mut profiles = HashMap::new();
        for (id, p) in engine.profiles() {
            if let Ok(rx) = compile::receive_profile(p) {
                profiles.insert(u32::from(id.0), rx);
            }
        }
        for i in 0..layout::MAX_PROFILES as u32 {
            let want = profiles.get(&i).copied().unwrap_or_default();
            if self.profiles.get(&i) != Some(&want) {
                match self.kernel.maps.profiles.set(i, want, 0) {
                    Ok(()) => {
                        self.profiles.insert(i, want);
                    }
                    Err(_) => self.stats.write_errors += 1,
                }
            }
        }
        let mut transports = HashMap::new();
        for (transport, ids) in engine.receive_order() {
            // The order is followed in the kernel only if it can test every profile on it.
            if ids.len() > layout::MAX_ORDER
                || ids
                    .iter()
                    .any(|id| !profiles.contains_key(&u32::from(id.0)))
            {
                continue;
            }
            let (key, flags) = match transport {
                Transport::Udp(port) if port == compile::ENGINE_VXLAN_PORT => (
                    layout::TransportKey {
                        kind: layout::TRANSPORT_UDP,
                        pad: 0,
                        value: self.settings.vxlan_port,
                    },
                    layout::TRANSPORT_VXLAN,
                ),
                Transport::Udp(port) => (
                    layout::TransportKey {
                        kind: layout::TRANSPORT_UDP,
                        pad: 0,
                        value: port,
                    },
                    0,
                ),
                // STT's segments are TCP: the host stack and nvod's reassembler take them.
                Transport::Ip(6) => continue,
                Transport::Ip(proto) => (
                    layout::TransportKey {
                        kind: layout::TRANSPORT_IP,
                        pad: 0,
                        value: u16::from(proto),
                    },
                    0,
                ),
            };
            let mut t = layout::Transport {
                count: ids.len() as u32,
                flags,
                ..Default::default()
            };
            for (slot, id) in t.profiles.iter_mut().zip(ids) {
                *slot = id.0;
            }
            transports.insert(key, t);
        }
        let maps = &mut self.kernel.maps;
        reconcile(
            &mut maps.transports,
            &mut self.transports,
            transports,
            &mut self.stats.write_errors,
        );
    }

    fn sync_networks(&mut self, engine: &Engine, kernel_nets: &HashMap<Vni, &NetworkView>) {
        let freed = self.net_slots.retain(|vni| kernel_nets.contains_key(vni));
        for slot in freed {
            self.zero_net_counters(slot);
        }
        let mut networks = HashMap::new();
        let mut net_ports = HashMap::new();
        let mut flood = HashMap::new();
        let mut remote_tmpl = HashMap::new();
        let mut groups = HashMap::new();
        for (&vni, view) in kernel_nets {
            let (slot, fresh) = self.net_slots.get(vni);
            if fresh {
                self.zero_net_counters(slot);
            }
            let Some(mut net) = compile::network(engine, view, slot, self.settings.vxlan_port)
            else {
                continue;
            };
            for (i, port) in view.ports.iter().enumerate() {
                net_ports.insert(
                    layout::NetIndex {
                        vni: vni.0,
                        index: i as u32,
                    },
                    port.0,
                );
            }
            net.port_count = view.ports.len() as u32;
            let mut n = 0u32;
            for remote in &view.flood {
                if let IpAddr::V4(r) = remote {
                    self.remotes.entry(*r).or_insert(None);
                    flood.insert(
                        layout::NetIndex {
                            vni: vni.0,
                            index: n,
                        },
                        layout::Remote::v4(*r),
                    );
                    n += 1;
                }
            }
            net.flood_count = n;
            if net.flags & layout::NET_BUM_GROUP != 0 {
                groups.insert(u32::from_ne_bytes(net.group), 1);
            }
            let id = ProfileId(view.profile.0);
            if let Some(p) = engine.profile(id) {
                for remote in engine.param_remotes(id, vni.0) {
                    let (IpAddr::V4(r), Ok(bytes)) =
                        (remote, engine.template_bytes(id, vni.0, Some(remote)))
                    else {
                        continue;
                    };
                    let key = layout::RemoteKey {
                        vni: vni.0,
                        addr: layout::Remote::v4(r).addr,
                    };
                    remote_tmpl.insert(key, compile::tmpl(p, &bytes, self.settings.vxlan_port));
                }
            }
            networks.insert(vni.0, net);
        }
        let maps = &mut self.kernel.maps;
        let errors = &mut self.stats.write_errors;
        // Entries a network points at go in before the network; the network goes last.
        reconcile(&mut maps.net_ports, &mut self.net_ports, net_ports, errors);
        reconcile(&mut maps.flood, &mut self.flood, flood, errors);
        reconcile(
            &mut maps.remote_tmpl,
            &mut self.remote_tmpl,
            remote_tmpl,
            errors,
        );
        reconcile(&mut maps.groups, &mut self.groups, groups, errors);
        reconcile(&mut maps.networks, &mut self.networks, networks, errors);
    }

    fn zero_net_counters(&mut self, slot: u32) {
        if let Ok(cpus) = aya::util::nr_cpus() {
            let zeros = PerCpuValues::try_from(vec![layout::NetCounters::default(); cpus]);
            if let Ok(zeros) = zeros {
                let _ = self.kernel.maps.net_counters.set(slot, zeros, 0);
            }
        }
        self.zero_policy_slot(slot);
    }

    fn zero_port_counters(&mut self, slot: u32) {
        if let Ok(cpus) = aya::util::nr_cpus() {
            let zeros = PerCpuValues::try_from(vec![layout::PortCounters::default(); cpus]);
            if let Ok(zeros) = zeros {
                let _ = self.kernel.maps.port_counters.set(slot, zeros, 0);
            }
        }
    }

    fn sync_keys(&mut self, engine: &Engine, kernel_nets: &HashMap<Vni, &NetworkView>) {
        let mut keys = HashMap::new();
        for (profile, key, target) in engine.keys().iter() {
            let bytes = key.as_bytes();
            if bytes.len() > layout::KEY_LEN {
                continue;
            }
            let mut k = layout::Key {
                profile: profile.0,
                len: bytes.len() as u8,
                ..Default::default()
            };
            k.bytes[..bytes.len()].copy_from_slice(bytes);
            let t = match *target {
                Target::Local { vni } if kernel_nets.contains_key(&Vni(vni)) => layout::KeyTarget {
                    kind: layout::KEY_LOCAL,
                    vni,
                },
                Target::Local { vni } => layout::KeyTarget {
                    kind: layout::KEY_PASS,
                    vni,
                },
                Target::Forward { .. } => layout::KeyTarget {
                    kind: layout::KEY_PASS,
                    vni: 0,
                },
            };
            keys.insert(k, t);
        }
        let maps = &mut self.kernel.maps;
        reconcile(
            &mut maps.keys,
            &mut self.keys,
            keys,
            &mut self.stats.write_errors,
        );
    }

    fn sync_ports(&mut self, ports: &[PortInfo], kernel_nets: &HashMap<Vni, &NetworkView>) {
        let live: Vec<&PortInfo> = ports
            .iter()
            .filter(|p| p.ifindex.is_some() && kernel_nets.contains_key(&p.vni))
            .collect();
        let freed = self
            .port_slots
            .retain(|id| live.iter().any(|p| p.id == *id));
        for slot in freed {
            self.zero_port_counters(slot);
        }
        let mut ports_in = HashMap::new();
        let mut ports_out = HashMap::new();
        for p in &live {
            let Some(ifindex) = p.ifindex else { continue };
            let (slot, fresh) = self.port_slots.get(p.id);
            if fresh {
                self.zero_port_counters(slot);
            }
            // Its identity policy group (bpf/policy.h reads it from the entry).
            let group = u32::from(self.policy.port_groups.get(&p.id).copied().unwrap_or(0));
            let entry = layout::Port {
                port_id: p.id.0,
                vni: p.vni.0,
                ifindex,
                slot,
                flags: if p.veth && p.tapped {
                    layout::PORT_VETH | layout::PORT_TAPPED
                } else if p.veth {
                    layout::PORT_VETH
                } else {
                    layout::PORT_USERSPACE
                } | group << layout::PORT_GROUP_SHIFT,
            };
            ports_out.insert(p.id.0, entry);
            if p.veth {
                ports_in.insert(ifindex, entry);
            }
        }
        // Programs come off before their entries go, and go on after their entries are in.
        let gone: Vec<u32> = self
            .attached
            .keys()
            .filter(|i| !ports_in.contains_key(i))
            .copied()
            .collect();
        for ifindex in gone {
            self.kernel.detach(ifindex);
            self.attached.remove(&ifindex);
        }
        let maps = &mut self.kernel.maps;
        let errors = &mut self.stats.write_errors;
        reconcile(&mut maps.port_out, &mut self.ports_out, ports_out, errors);
        reconcile(
            &mut maps.ports,
            &mut self.ports_in,
            ports_in.clone(),
            errors,
        );
        for (ifindex, entry) in ports_in {
            if self.attached.get(&ifindex) == Some(&PortId(entry.port_id)) {
                continue;
            }
            let Some(p) = live.iter().find(|p| p.id.0 == entry.port_id) else {
                continue;
            };
            match self.kernel.attach_port(&p.name, ifindex) {
                Ok(()) => {
                    self.attached.insert(ifindex, p.id);
                }
                Err(e) => {
                    log::warn!("{e}; the port's frames are dropped until it is added again");
                    self.stats.write_errors += 1;
                }
            }
        }
    }

    /// Hands each frame the programs gave up to `f`: its header and bytes.
    pub fn drain_punts(&mut self, mut f: impl FnMut(&layout::Punt, &[u8])) -> usize {
        let mut n = 0;
        while let Some(item) = self.kernel.maps.punts.next() {
            let Some(hdr) = read_record::<layout::Punt>(&item) else {
                continue;
            };
            let end = layout::RECORD_HEAD + hdr.len as usize;
            if let Some(frame) = item.get(layout::RECORD_HEAD..end) {
                f(&hdr, frame);
                n += 1;
            }
        }
        self.stats.punts += n as u64;
        n
    }

    /// Every traced copy since the last call: (record, bytes).
    pub fn drain_trace(&mut self) -> Vec<(layout::Trace, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(item) = self.kernel.maps.trace.next() {
            let Some(hdr) = read_record::<layout::Trace>(&item) else {
                continue;
            };
            let end = layout::RECORD_HEAD + hdr.len as usize;
            if let Some(bytes) = item.get(layout::RECORD_HEAD..end) {
                out.push((hdr, bytes.to_vec()));
            }
        }
        out
    }

    /// The descriptors to poll: learn reports, punted frames, monitor drops.
    pub fn fds(&self) -> [std::os::fd::BorrowedFd<'_>; 3] {
        use std::os::fd::AsFd;
        [
            self.kernel.maps.events.as_fd(),
            self.kernel.maps.punts.as_fd(),
            self.kernel.maps.monitor.as_fd(),
        ]
    }
}

/// The first entropy source port, when nvod gives none.
const ENTROPY_BASE: u16 = 49152;
