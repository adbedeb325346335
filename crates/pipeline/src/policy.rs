//! Identity-based policy in the data path (issue 18): the per-network [`nvo_policy::Policy`]
//! applied to a local port's frames (egress, at the sender) and to tunnel frames (ingress, at
//! the receiver), with connection tracking so that replies of allowed flows pass.
//!
//! ```text
//!  egress(port frame)                            ingress(tunnel frame, GBP/Geneve tag?)
//!   network without policy → pass                 network without policy → pass
//!   not IPv4/IPv6, ND, ICMP error → pass          not IPv4/IPv6, ND, ICMP error → pass
//!   src identity = the port's group               tag's group ≠ 0 → remembered for (vni, src ip)
//!   tracked flow (either way) → pass, A bit       tracked flow (either way) → pass
//!   dst identity: labelled address, else the      tag with the A bit → pass (the sender
//!     port its MAC is on, else learned for          decided), tracked
//!     (vni, dst ip); unknown → pass, no A bit     src identity: tag's group, else labelled /
//!     (the receiver decides)                        learned (vni, src ip), else 0
//!   decide → deny: policy_denied                  dst identity: labelled address, else the
//!            allow: tracked; A bit unless the       port its MAC is on, else 0
//!            identity was only learned from       decide → deny: policy_denied; allow: tracked
//!            the wire (the receiver decides too)
//! ```
//!
//! An identity is a group ID (0: in no group). Labels belong to ports and to addresses of a
//! network; identities are resolved from them whenever a policy or a label changes, so the
//! packet path does hash lookups only, and the rule scan ([`nvo_policy::Policy::decide`]) runs
//! once per new flow. A policy change takes effect at the next packet; flows the connection
//! table holds keep passing (established connections survive it).
//!
//! The connection table and the learned identities are shared by every worker's pipeline (a
//! packet and its reply may reach different workers): a [`SharedConntrack`], locked once per
//! packet of a network with a policy — networks without one never touch it — but for the
//! packets of a flow the worker passed a moment ago (crate::ct_cache: a busy flow's packets
//! take the lock about four times a second, not once each). On the kernel path, a miss asks
//! the programs' table too (policy_external.rs), so a flow they tracked passes here as well.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvo_policy::{Conntrack, Labels, Policy, Reason};
use serde::Serialize;

pub use crate::actions::GroupTag;
use crate::actions::{Action, Actions};
use crate::ct_cache::CtCache;
use crate::frame::Eth;
use crate::network::Network;
use crate::policy_external::{Asked, ExternalHook, Negative};
use crate::policy_flow::{flow, Flow};
use crate::{FdbDest, PortId, TableError, Vni};

/// Most labelled addresses over all networks.
pub const MAX_LABELLED_ADDRS: usize = 65_536;
/// Most identities remembered from GBP headers over all networks.
pub const MAX_LEARNED_IDS: usize = 65_536;
/// Most tracked flows (all networks).
pub const MAX_FLOWS: usize = 262_144;
/// The least time between two sweeps of the shared connection table: every worker's timer
/// asks about once a second, and one sweep serves them all (a lookup already treats an idle
/// flow as gone; the sweep only frees its room).
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// What every worker's pipeline shares (a packet and its reply, or the packet that taught an
/// identity and the one that needs it, may reach different workers): the connection table and
/// the identities learned from the wire and from local ports.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) ct: Conntrack,
    /// (network, address) → group, from VXLAN-GBP headers and Geneve options (the ipcache).
    pub(crate) learned: HashMap<(Vni, IpAddr), u16>,
    /// (network, address) → port, from local ports' frames (for traces).
    local: HashMap<(Vni, IpAddr), PortId>,
    /// Identities learned from the wire since the kernel path last copied them
    /// (policy_export.rs), once it asked; bounded by MAX_LEARNED_IDS.
    pub(crate) learned_journal: Option<Vec<(Vni, IpAddr, u16)>>,
    /// When `ct` was last swept of idle flows.
    swept: Option<Instant>,
}

/// The tables every worker's pipeline shares, behind one lock taken once per packet of a
/// network with a policy.
#[derive(Debug, Clone)]
pub struct SharedConntrack(Arc<Mutex<Shared>>);

impl Default for SharedConntrack {
    fn default() -> Self {
        SharedConntrack(Arc::new(Mutex::new(Shared {
            ct: Conntrack::new(MAX_FLOWS),
            learned: HashMap::new(),
            local: HashMap::new(),
            learned_journal: None,
            swept: None,
        })))
    }
}

impl SharedConntrack {
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Shared) -> R) -> R {
        // A worker that panicked while holding the lock left tables that are still valid
        // maps: keep using them rather than stop enforcing.
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}

/// A control operation on the policy tables (one datapath command).
#[derive(Debug, Clone)]
pub enum PolicyCommand {
    /// Sets (or replaces) network `vni`'s policy; `conntrack` is the table to use.
    Set(Vni, Arc<Policy>, SharedConntrack),
    /// Removes network `vni`'s policy and forgets its flows.
    Remove(Vni),
    /// Sets a port's labels (empty: none).
    LabelPort(PortId, Labels),
    /// Sets the labels of an address in a network (empty: none).
    LabelAddr(Vni, IpAddr, Labels),
    /// Reads network `vni`'s counters.
    Show(Vni),
    /// Decides a made-up packet in network `vni` without counting it.
    Trace(Vni, TraceQuery),
}

impl PolicyCommand {
    /// Whether it only reads.
    pub fn is_read(&self) -> bool {
        matches!(self, PolicyCommand::Show(_) | PolicyCommand::Trace(..))
    }
}

/// A packet to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceQuery {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol.
    pub proto: u8,
    /// Destination port (0 without one).
    pub dport: u16,
}

/// A policy command's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PolicyReply {
    /// A change was made.
    Done,
    /// A network's counters.
    Counters(PolicyCounters),
    /// A trace.
    Trace(TraceResult),
}

/// What a trace found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceResult {
    /// The source's identity, when known.
    pub src_group: Option<u16>,
    /// The destination's identity, when known.
    pub dst_group: Option<u16>,
    /// Whether the packet passes.
    pub allow: bool,
    /// Who decided.
    pub reason: Reason,
}

/// A network's policy counters (packets).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PolicyCounters {
    /// Packets decided by each rule, in rule order.
    pub rules: Vec<u64>,
    /// Allowed by a rule.
    pub allowed: u64,
    /// Denied by a rule.
    pub denied: u64,
    /// Allowed because no policy selects the destination.
    pub default_allowed: u64,
    /// Denied because a policy selects the destination and no rule allows.
    pub default_denied: u64,
    /// Passed as part of a tracked flow (later packets, replies).
    pub tracked: u64,
    /// Passed at ingress because the sender applied policy (GBP A bit).
    pub sender_applied: u64,
    /// Passed at egress with the destination's identity unknown (left to the receiver).
    pub unknown_destination: u64,
    /// Not IP, or ND / ICMP errors: passed without policy.
    pub exempt: u64,
    /// Allowed flows the full connection table could not track.
    pub conntrack_full: u64,
    /// nvod's misses looked up in the kernel's connection table (nvod's count only).
    pub kernel_lookups: u64,
    /// nvod's misses not looked up there: the kernel said "not tracked" less than a second
    /// ago (policy_external.rs, `Negative`; nvod's count only).
    pub kernel_lookups_skipped: u64,
    /// The kernel's programs enforce the policy too (the eBPF datapath): the counts are
    /// theirs and nvod's together.
    pub in_kernel: bool,
}

impl PolicyCounters {
    /// Adds another worker's counts.
    pub fn merge(&mut self, other: &PolicyCounters) {
        if self.rules.len() < other.rules.len() {
            self.rules.resize(other.rules.len(), 0);
        }
        for (a, b) in self.rules.iter_mut().zip(&other.rules) {
            *a += b;
        }
        let PolicyCounters {
            rules: _,
            allowed,
            denied,
            default_allowed,
            default_denied,
            tracked,
            sender_applied,
            unknown_destination,
            exempt,
            conntrack_full,
            kernel_lookups,
            kernel_lookups_skipped,
            in_kernel,
        } = other;
        self.allowed += allowed;
        self.denied += denied;
        self.default_allowed += default_allowed;
        self.default_denied += default_denied;
        self.tracked += tracked;
        self.sender_applied += sender_applied;
        self.unknown_destination += unknown_destination;
        self.exempt += exempt;
        self.conntrack_full += conntrack_full;
        self.kernel_lookups += kernel_lookups;
        self.kernel_lookups_skipped += kernel_lookups_skipped;
        self.in_kernel |= in_kernel;
    }
}

#[derive(Debug)]
pub(crate) struct NetPolicy {
    pub(crate) policy: Arc<Policy>,
    counters: PolicyCounters,
    /// Identities of the network's labelled ports and addresses, resolved.
    pub(crate) port_ids: HashMap<PortId, u16>,
    pub(crate) addr_ids: HashMap<IpAddr, u16>,
}

/// The policy tables of a pipeline.
#[derive(Debug, Default)]
pub(crate) struct Policies {
    pub(crate) nets: HashMap<Vni, NetPolicy>,
    port_labels: HashMap<PortId, (Vni, Labels)>,
    addr_labels: HashMap<(Vni, IpAddr), Labels>,
    /// (network, address) → group, as EVPN routes advertise it (their Group Policy ID
    /// community): every worker's pipeline gets the same changes, and they outlive policies
    /// being set and removed (a route is not sent again).
    pub(crate) evpn_ids: HashMap<(Vni, IpAddr), u16>,
    /// Moves at every change of the above (policy_export.rs: the kernel path recompiles).
    pub(crate) generation: u64,
    pub(crate) shared: SharedConntrack,
    /// The flows this worker passed a moment ago (crate::ct_cache).
    cache: CtCache,
    /// Another datapath's connection table, asked on a miss (policy_external.rs).
    pub(crate) external: ExternalHook,
    /// Its recent "not tracked" answers (this worker's).
    pub(crate) negative: Negative,
}

/// Asks the other table about `key` (the shared lock released), or remembers it said "not
/// tracked" a moment ago; counted either way.
fn ask(
    negative: &mut Negative,
    external: &ExternalHook,
    key: &nvo_policy::FlowKey,
    now: Instant,
    c: &mut PolicyCounters,
) -> Asked {
    let (answer, asked) = negative.ask(external, key, now);
    if asked {
        c.kernel_lookups += 1;
    } else {
        c.kernel_lookups_skipped += 1;
    }
    Asked::Answer(answer)
}

fn count(c: &mut PolicyCounters, allow: bool, reason: Reason) {
    match reason {
        Reason::Rule(i) => {
            if let Some(n) = c.rules.get_mut(i) {
                *n += 1;
            }
            if allow {
                c.allowed += 1;
            } else {
                c.denied += 1;
            }
        }
        Reason::DefaultAllow => c.default_allowed += 1,
        Reason::DefaultDeny => c.default_denied += 1,
    }
}

impl Policies {
    /// Whether network `vni` has a policy.
    pub(crate) fn enforced(&self, vni: Vni) -> bool {
        self.nets.contains_key(&vni)
    }

    /// The group of local port `port` in network `vni` (0: none), as EVPN advertises it.
    pub(crate) fn port_group(&self, vni: Vni, port: PortId) -> u16 {
        self.nets
            .get(&vni)
            .and_then(|p| p.port_ids.get(&port))
            .copied()
            .unwrap_or(0)
    }

    /// Sets (`Some`) or forgets the group an EVPN route gave address `ip` of network `vni`
    /// (bounded by [`MAX_LEARNED_IDS`]; a source with no other identity gets this one).
    pub(crate) fn evpn_identity(
        &mut self,
        vni: Vni,
        ip: IpAddr,
        group: Option<u16>,
    ) -> Result<(), TableError> {
        let key = (vni, ip);
        match group {
            None => {
                self.evpn_ids.remove(&key);
            }
            Some(g) => {
                if !self.evpn_ids.contains_key(&key) && self.evpn_ids.len() >= MAX_LEARNED_IDS {
                    return Err(TableError::TableFull {
                        table: "evpn identity",
                        limit: MAX_LEARNED_IDS,
                    });
                }
                self.evpn_ids.insert(key, g);
            }
        }
        // A flow passed a moment ago is decided again with the new identity.
        self.cache.clear();
        self.generation += 1;
        Ok(())
    }

    /// Runs a control operation. `port_vni` finds a port's network.
    pub(crate) fn command(
        &mut self,
        command: PolicyCommand,
        port_vni: impl Fn(PortId) -> Option<Vni>,
        local_port: impl Fn(Vni, IpAddr) -> Option<PortId>,
    ) -> Result<PolicyReply, TableError> {
        if !command.is_read() {
            // Every worker runs a change: none passes a flushed flow from its cache.
            self.cache.clear();
            self.generation += 1;
        }
        match command {
            PolicyCommand::Set(vni, policy, conntrack) => {
                self.shared = conntrack;
                let rules = policy.spec().rules.len();
                let net = self.nets.entry(vni).or_insert_with(|| NetPolicy {
                    policy: policy.clone(),
                    counters: PolicyCounters::default(),
                    port_ids: HashMap::new(),
                    addr_ids: HashMap::new(),
                });
                if net.counters.rules.len() != rules || !Arc::ptr_eq(&net.policy, &policy) {
                    // Rules are counted by position: a new rule list starts from zero.
                    net.counters.rules = vec![0; rules];
                }
                net.policy = policy;
                self.resolve(vni);
            }
            PolicyCommand::Remove(vni) => {
                self.nets.remove(&vni);
                self.shared.with(|s| s.ct.flush(vni.0));
            }
            PolicyCommand::LabelPort(port, labels) => {
                let vni = port_vni(port).ok_or(TableError::NoSuchPort(port))?;
                let old = if labels.iter().next().is_none() {
                    self.port_labels.remove(&port)
                } else {
                    self.port_labels.insert(port, (vni, labels))
                };
                if let Some((old_vni, _)) = old {
                    self.resolve(old_vni);
                }
                self.resolve(vni);
            }
            PolicyCommand::LabelAddr(vni, ip, labels) => {
                if labels.iter().next().is_none() {
                    self.addr_labels.remove(&(vni, ip));
                } else {
                    if !self.addr_labels.contains_key(&(vni, ip))
                        && self.addr_labels.len() >= MAX_LABELLED_ADDRS
                    {
                        return Err(TableError::TableFull {
                            table: "labelled address",
                            limit: MAX_LABELLED_ADDRS,
                        });
                    }
                    self.addr_labels.insert((vni, ip), labels);
                }
                self.resolve(vni);
            }
            PolicyCommand::Show(vni) => {
                let net = self.nets.get(&vni).ok_or(TableError::NoSuchNetwork(vni))?;
                return Ok(PolicyReply::Counters(net.counters.clone()));
            }
            PolicyCommand::Trace(vni, q) => return self.trace(vni, q, local_port),
        }
        Ok(PolicyReply::Done)
    }

    /// Forgets a removed network: its policy, flows, labelled and learned addresses.
    pub(crate) fn forget_network(&mut self, vni: Vni) {
        self.cache.clear();
        self.generation += 1;
        self.nets.remove(&vni);
        self.addr_labels.retain(|(v, _), _| *v != vni);
        self.evpn_ids.retain(|(v, _), _| *v != vni);
        self.shared.with(|s| {
            s.ct.flush(vni.0);
            s.learned.retain(|(v, _), _| *v != vni);
            s.local.retain(|(v, _), _| *v != vni);
        });
    }

    /// Forgets a removed port.
    pub(crate) fn forget_port(&mut self, port: PortId) {
        self.generation += 1;
        self.shared.with(|s| s.local.retain(|_, p| *p != port));
        if let Some((vni, _)) = self.port_labels.remove(&port) {
            self.resolve(vni);
        }
    }

    /// Expires idle flows (the datapath's timer, through `Pipeline::age`): once per
    /// [`SWEEP_EVERY`] over all workers, not once per worker.
    pub(crate) fn expire(&mut self, now: Instant) {
        if self.nets.is_empty() {
            return;
        }
        self.shared.with(|s| {
            if s.swept
                .is_some_and(|t| now.saturating_duration_since(t) < SWEEP_EVERY)
            {
                return;
            }
            s.swept = Some(now);
            s.ct.expire(now);
        });
    }

    fn resolve(&mut self, vni: Vni) {
        let Some(net) = self.nets.get_mut(&vni) else {
            return;
        };
        let policy = &net.policy;
        net.port_ids = self
            .port_labels
            .iter()
            .filter(|(_, (v, _))| *v == vni)
            .map(|(p, (_, l))| (*p, policy.identity(l)))
            .collect();
        net.addr_ids = self
            .addr_labels
            .iter()
            .filter(|((v, _), _)| *v == vni)
            .map(|((_, ip), l)| (*ip, policy.identity(l)))
            .collect();
    }

    /// Identities as the packet path finds them: a labelled address, the port a snooped
    /// address lives behind, an identity learned from the wire, one an EVPN route gave.
    fn trace(
        &self,
        vni: Vni,
        q: TraceQuery,
        local_port: impl Fn(Vni, IpAddr) -> Option<PortId>,
    ) -> Result<PolicyReply, TableError> {
        let net = self.nets.get(&vni).ok_or(TableError::NoSuchNetwork(vni))?;
        let (src_group, dst_group) = self.shared.with(|s| {
            let known = |ip: IpAddr| {
                net.addr_ids
                    .get(&ip)
                    .copied()
                    .or_else(|| {
                        local_port(vni, ip)
                            .or_else(|| s.local.get(&(vni, ip)).copied())
                            .map(|p| net.port_ids.get(&p).copied().unwrap_or(0))
                    })
                    .or_else(|| s.learned.get(&(vni, ip)).copied())
                    .or_else(|| self.evpn_ids.get(&(vni, ip)).copied())
            };
            (known(q.src), known(q.dst))
        });
        let d = net.policy.decide(
            src_group.unwrap_or(0),
            dst_group.unwrap_or(0),
            q.proto,
            q.dport,
        );
        Ok(PolicyReply::Trace(TraceResult {
            src_group,
            dst_group,
            allow: d.allow,
            reason: d.reason,
        }))
    }

    /// Applies network `net`'s policy to `frame` from local port `port`: the tag to send it
    /// with, or why it is dropped.
    pub(crate) fn egress(
        &mut self,
        net: &Network,
        port: PortId,
        frame: &[u8],
        eth: &Eth,
        now: Instant,
    ) -> Result<Option<GroupTag>, crate::DropReason> {
        let vni = net.spec.vni;
        let Some(p) = self.nets.get_mut(&vni) else {
            return Ok(None);
        };
        let group = p.port_ids.get(&port).copied().unwrap_or(0);
        let Some(f) = flow(vni, frame, eth) else {
            p.counters.exempt += 1;
            return Ok(Some(GroupTag {
                group,
                applied: false,
            }));
        };
        let tracked = GroupTag {
            group,
            applied: true,
        };
        if !f.closing && self.cache.hit(&f.key, 0, now) {
            p.counters.tracked += 1;
            return Ok(Some(tracked));
        }
        let cache = &mut self.cache;
        let external = &self.external;
        let negative = &mut self.negative;
        // The other table's answer, once asked (with the lock released: see `Asked`).
        let mut asked = Asked::No;
        loop {
            let pass = self.shared.with(|s| {
                match asked.tracked(external, &mut s.ct, &f.key, f.closing, now) {
                    Some(true) => {
                        p.counters.tracked += 1;
                        cache.confirm(f.key, 0, now);
                        return Some(Ok(Some(tracked)));
                    }
                    Some(false) => {}
                    None => return None,
                }
                Some(Self::egress_first(
                    s, p, net, port, group, eth, &f, cache, now,
                ))
            });
            match pass {
                Some(verdict) => return verdict,
                None => asked = ask(negative, external, &f.key, now, &mut p.counters),
            }
        }
    }

    /// A flow's first packet at egress (under the shared lock): decided by the rules.
    #[allow(clippy::too_many_arguments)]
    fn egress_first(
        s: &mut Shared,
        p: &mut NetPolicy,
        net: &Network,
        port: PortId,
        group: u16,
        eth: &Eth,
        f: &Flow,
        cache: &mut CtCache,
        now: Instant,
    ) -> Result<Option<GroupTag>, crate::DropReason> {
        let vni = net.spec.vni;
        // A flow's first packet: where its source lives, for traces (not on the
        // tracked path, which stays one lookup).
        let seen = (vni, f.key.src);
        if s.local.get(&seen) != Some(&port)
            && (s.local.len() < MAX_LEARNED_IDS || s.local.contains_key(&seen))
        {
            s.local.insert(seen, port);
        }
        // Labels and local ports are this host's own knowledge: a decision on them is
        // final (A bit). An identity learned from the wire only lets the sender drop
        // early; the receiver decides again.
        let (dst, authoritative) = match p.addr_ids.get(&f.key.dst) {
            Some(&id) => (Some(id), true),
            None => match net.fdb.lookup(eth.dst) {
                Some(FdbDest::Port(out)) => {
                    (Some(p.port_ids.get(&out).copied().unwrap_or(0)), true)
                }
                _ => (s.learned.get(&(vni, f.key.dst)).copied(), false),
            },
        };
        let Some(dst) = dst else {
            p.counters.unknown_destination += 1;
            return Ok(Some(GroupTag {
                group,
                applied: false,
            }));
        };
        let d = p.policy.decide(group, dst, f.key.proto, f.key.dport);
        count(&mut p.counters, d.allow, d.reason);
        if !d.allow {
            return Err(crate::DropReason::PolicyDenied);
        }
        match s.ct.insert(f.key, now) {
            Ok(()) => cache.confirm(f.key, 0, now),
            Err(_) => p.counters.conntrack_full += 1,
        }
        Ok(Some(GroupTag {
            group,
            applied: authoritative,
        }))
    }

    /// After [`Policies::egress`] left a frame to the receiver (its destination's identity
    /// unknown) and it was flooded: the local copies are decided here, each with the identity
    /// of the port it goes to; denied copies are taken out (`false`: none is left).
    pub(crate) fn flood_filter(
        &mut self,
        net: &Network,
        frame: &[u8],
        eth: &Eth,
        now: Instant,
        actions: &mut Actions,
    ) -> bool {
        let vni = net.spec.vni;
        // A decided frame (tracked, or its destination known) or a unicast: nothing to do,
        // and no second parse of the packet.
        let Some(tag) = actions.group().filter(|t| !t.applied && actions.flooded()) else {
            return true;
        };
        let (Some(p), Some(f)) = (self.nets.get_mut(&vni), flow(vni, frame, eth)) else {
            return true;
        };
        let mut allowed = false;
        actions.retain(|a| match a {
            Action::Deliver { port } => {
                let dst = p.port_ids.get(port).copied().unwrap_or(0);
                let d = p.policy.decide(tag.group, dst, f.key.proto, f.key.dport);
                count(&mut p.counters, d.allow, d.reason);
                allowed |= d.allow;
                d.allow
            }
            _ => true,
        });
        if allowed && self.shared.with(|s| s.ct.insert(f.key, now)).is_err() {
            p.counters.conntrack_full += 1;
        }
        !actions.is_empty()
    }

    /// Applies network `net`'s policy to `inner`, a frame from the underlay carrying `tag`
    /// (VXLAN-GBP, Geneve option) or not.
    pub(crate) fn ingress(
        &mut self,
        net: &Network,
        tag: Option<GroupTag>,
        inner: &[u8],
        eth: &Eth,
        now: Instant,
    ) -> Result<(), crate::DropReason> {
        let vni = net.spec.vni;
        let Some(p) = self.nets.get_mut(&vni) else {
            return Ok(());
        };
        let Some(f) = flow(vni, inner, eth) else {
            p.counters.exempt += 1;
            return Ok(());
        };
        let tagged = tag.filter(|t| t.group != 0);
        let carried = tagged.map_or(0, |t| t.group);
        if !f.closing && self.cache.hit(&f.key, carried, now) {
            p.counters.tracked += 1;
            return Ok(());
        }
        let cache = &mut self.cache;
        let evpn_ids = &self.evpn_ids;
        let external = &self.external;
        let negative = &mut self.negative;
        // The other table's answer, once asked (with the lock released: see `Asked`).
        let mut asked = Asked::No;
        loop {
            let pass = self.shared.with(|s| {
                if let (Some(t), Asked::No) = (tagged, &asked) {
                    // The ipcache: where this address's identity came from the wire, remember
                    // it (bounded; an address labelled here keeps its label's identity).
                    let key = (vni, f.key.src);
                    if s.learned.get(&key) != Some(&t.group)
                        && (s.learned.len() < MAX_LEARNED_IDS || s.learned.contains_key(&key))
                    {
                        s.learned.insert(key, t.group);
                        s.journal_learned(key, t.group);
                    }
                }
                match asked.tracked(external, &mut s.ct, &f.key, f.closing, now) {
                    Some(true) => {
                        p.counters.tracked += 1;
                        cache.confirm(f.key, carried, now);
                        return Some(Ok(()));
                    }
                    Some(false) => {}
                    None => return None,
                }
                let first = Self::ingress_first(s, p, net, tagged, eth, &f, evpn_ids, cache, now);
                Some(first)
            });
            match pass {
                Some(verdict) => return verdict,
                None => asked = ask(negative, external, &f.key, now, &mut p.counters),
            }
        }
    }

    /// A flow's first packet at ingress (under the shared lock): passed on the sender's word
    /// (A bit) or decided by the rules.
    #[allow(clippy::too_many_arguments)]
    fn ingress_first(
        s: &mut Shared,
        p: &mut NetPolicy,
        net: &Network,
        tagged: Option<GroupTag>,
        eth: &Eth,
        f: &Flow,
        evpn_ids: &HashMap<(Vni, IpAddr), u16>,
        cache: &mut CtCache,
        now: Instant,
    ) -> Result<(), crate::DropReason> {
        let vni = net.spec.vni;
        let carried = tagged.map_or(0, |t| t.group);
        // A flow's first packet: the local port its destination lives on, for traces.
        let out = match net.fdb.lookup(eth.dst) {
            Some(FdbDest::Port(out)) => Some(out),
            _ => None,
        };
        if let Some(out) = out {
            let seen = (vni, f.key.dst);
            if s.local.get(&seen) != Some(&out)
                && (s.local.len() < MAX_LEARNED_IDS || s.local.contains_key(&seen))
            {
                s.local.insert(seen, out);
            }
        }
        if tagged.is_some_and(|t| t.applied) {
            p.counters.sender_applied += 1;
            match s.ct.insert(f.key, now) {
                Ok(()) => cache.confirm(f.key, carried, now),
                Err(_) => p.counters.conntrack_full += 1,
            }
            return Ok(());
        }
        let src = tagged.map(|t| t.group).unwrap_or_else(|| {
            p.addr_ids
                .get(&f.key.src)
                .or_else(|| s.learned.get(&(vni, f.key.src)))
                .or_else(|| evpn_ids.get(&(vni, f.key.src)))
                .copied()
                .unwrap_or(0)
        });
        let dst = p
            .addr_ids
            .get(&f.key.dst)
            .copied()
            .unwrap_or_else(|| out.map_or(0, |out| p.port_ids.get(&out).copied().unwrap_or(0)));
        let d = p.policy.decide(src, dst, f.key.proto, f.key.dport);
        count(&mut p.counters, d.allow, d.reason);
        if !d.allow {
            return Err(crate::DropReason::PolicyDenied);
        }
        match s.ct.insert(f.key, now) {
            Ok(()) => cache.confirm(f.key, carried, now),
            Err(_) => p.counters.conntrack_full += 1,
        }
        Ok(())
    }
}
