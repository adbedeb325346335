//! Identity policy's maps (bpf/policy_maps.h), compiled from the pipeline's resolved state
//! ([`nvo_pipeline::PolicyExport`]) — the same identities and rules the pipeline decides on —
//! whenever a policy, a label or an EVPN identity changes, or a policy network enters or
//! leaves the kernel.
//!
//! ```text
//!  pol_nets      vni → rule count, "every group selected"
//!  pol_rules     (vni, i) → flags (allow, any from/to/proto), protocol, ≤ 8 port ranges
//!  pol_members   (vni, i, side, group) for every group a rule names; (vni, 0xffff, selected,
//!                group) for every selected group
//!  pol_ids       (vni, address) → its labels' group, an EVPN route's group
//!  ports         a port's group in the upper 16 bits of its entry's flags (sync_ports)
//!  pol_rule_hits (vni, i) per CPU: created zero with the rule, recreated when the policy is
//!                replaced (rules are counted by position, as the pipeline does)
//! ```
//!
//! The programs write `pol_flows` (the connection table) and `pol_learned` (identities from GBP
//! headers); a network whose policy goes away, or that leaves the kernel, loses its entries
//! there, as the pipeline flushes its flows (`PolicyCommand::Remove`).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use aya::maps::PerCpuValues;
use nvo_pipeline::policy::PolicyCounters;
use nvo_pipeline::{NetworkView, Pipeline, PortId, Vni};
use nvo_policy::Policy;

use super::{reconcile, Mirror};
use crate::flows::{flow_key, KernelFlows};
use crate::kernel::sum_per_cpu;
use crate::layout;

/// What was written to the policy maps.
#[derive(Debug, Default)]
pub(crate) struct PolicyShadow {
    generation: Option<u64>,
    nets: HashMap<u32, layout::PolNet>,
    rules: HashMap<layout::RuleKey, layout::Rule>,
    members: HashMap<layout::MemberKey, u8>,
    ids: HashMap<layout::IdentKey, layout::Ident>,
    /// The policy each network's rule counters count for.
    policies: HashMap<Vni, Arc<Policy>>,
    /// The groups of local ports (sync_ports writes them into the port entries).
    pub(crate) port_groups: HashMap<PortId, u16>,
}

/// One rule as the programs scan it; `None` when it has more port ranges than they test.
fn rule(r: &nvo_policy::RuleView<'_>) -> Option<layout::Rule> {
    if r.ports.len() > layout::RULE_PORTS {
        return None;
    }
    let mut out = layout::Rule {
        proto: r.proto.unwrap_or(0),
        nports: r.ports.len() as u8,
        ..Default::default()
    };
    for (flag, on) in [
        (layout::RULE_ALLOW, r.allow),
        (layout::RULE_ANY_FROM, r.from.is_none()),
        (layout::RULE_ANY_TO, r.to.is_none()),
        (layout::RULE_ANY_PROTO, r.proto.is_none()),
    ] {
        if on {
            out.flags |= flag;
        }
    }
    for (i, &(lo, hi)) in r.ports.iter().enumerate() {
        out.ports[2 * i] = lo;
        out.ports[2 * i + 1] = hi;
    }
    Some(out)
}

fn member(vni: u32, rule: u16, side: u8, group: u16) -> layout::MemberKey {
    layout::MemberKey {
        vni,
        rule,
        side,
        group,
        ..Default::default()
    }
}

impl Mirror {
    /// Brings the policy maps up to date (before the networks' entries, so a network's policy
    /// flag never points at missing rules).
    pub(super) fn sync_policy(
        &mut self,
        pipeline: &Pipeline,
        kernel_nets: &HashMap<Vni, &NetworkView>,
    ) {
        let policy_nets: HashSet<Vni> = kernel_nets
            .values()
            .filter(|v| v.policy)
            .map(|v| v.vni)
            .collect();
        self.copy_flows(pipeline);
        self.copy_identities(pipeline);
        let generation = pipeline.policy_generation();
        let same_nets = policy_nets.len() == self.policy.policies.len()
            && policy_nets
                .iter()
                .all(|v| self.policy.policies.contains_key(v));
        if self.policy.generation == Some(generation) && same_nets {
            return;
        }
        self.policy.generation = Some(generation);
        let mut nets = HashMap::new();
        let mut rules = HashMap::new();
        let mut members = HashMap::new();
        let mut ids: HashMap<layout::IdentKey, layout::Ident> = HashMap::new();
        let mut policies = HashMap::new();
        let mut port_groups = HashMap::new();
        for &vni in &policy_nets {
            let Some(x) = pipeline.policy_export(vni) else {
                continue;
            };
            let v = vni.0;
            let views: Vec<_> = x.policy.rule_views().collect();
            let (all, selected) = x.policy.selected();
            nets.insert(
                v,
                layout::PolNet {
                    rules: views.len().min(layout::MAX_RULES) as u32,
                    flags: if all { layout::POL_SELECT_ALL } else { 0 },
                },
            );
            for g in selected {
                members.insert(member(v, 0xffff, layout::SIDE_SELECTED, g), 1);
            }
            for (i, r) in views.iter().enumerate().take(layout::MAX_RULES) {
                let Some(compiled) = rule(r) else { continue };
                rules.insert(
                    layout::RuleKey {
                        vni: v,
                        index: i as u32,
                    },
                    compiled,
                );
                for (side, set) in [(layout::SIDE_FROM, r.from), (layout::SIDE_TO, r.to)] {
                    for &g in set.into_iter().flatten() {
                        members.insert(member(v, i as u16, side, g), 1);
                    }
                }
            }
            for (ip, g) in &x.addrs {
                let e = ids.entry(layout::ident_key(v, *ip)).or_default();
                e.label = *g;
                e.flags |= layout::IDENT_LABEL;
            }
            for (ip, g) in &x.evpn {
                let e = ids.entry(layout::ident_key(v, *ip)).or_default();
                e.evpn = *g;
                e.flags |= layout::IDENT_EVPN;
            }
            port_groups.extend(x.ports.iter().map(|(p, g)| (*p, *g)));
            policies.insert(vni, x.policy);
        }
        self.sync_rule_hits(&rules, &policies);
        let gone: Vec<Vni> = self
            .policy
            .policies
            .keys()
            .filter(|v| !policies.contains_key(v))
            .copied()
            .collect();
        for vni in &gone {
            self.forget_policy(*vni);
        }
        for vni in policies.keys() {
            if !self.policy.policies.contains_key(vni) {
                self.zero_policy_counters(*vni);
            }
        }
        let maps = &mut self.kernel.maps;
        let errors = &mut self.stats.write_errors;
        let shadow = &mut self.policy;
        reconcile(&mut maps.pol_rules, &mut shadow.rules, rules, errors);
        reconcile(&mut maps.pol_members, &mut shadow.members, members, errors);
        reconcile(&mut maps.pol_ids, &mut shadow.ids, ids, errors);
        reconcile(&mut maps.pol_nets, &mut shadow.nets, nets, errors);
        self.kernel.flows.set_enforced(policies.keys().map(|v| v.0));
        shadow.policies = policies;
        shadow.port_groups = port_groups;
    }

    /// An identity the programs learned from a GBP header, into the pipeline's table.
    pub(super) fn learned_identity(&mut self, pipeline: &Pipeline, ev: &layout::Event) {
        let b = ev.remote;
        let ip = match ev.dest {
            4 => IpAddr::from([b[0], b[1], b[2], b[3]]),
            6 => IpAddr::from(b),
            _ => return,
        };
        pipeline.learn_identity(Vni(ev.vni), ip, ev.port_id as u16);
    }

    /// Copies the identities nvod's pipeline learned from GBP headers it read (tunnel packets
    /// the programs left to its socket) into the programs' table.
    fn copy_identities(&mut self, pipeline: &Pipeline) {
        for (vni, ip, group) in pipeline.take_learned_identities() {
            if !self.policy.policies.contains_key(&vni) {
                continue;
            }
            let key = layout::ident_key(vni.0, ip);
            if self
                .kernel
                .maps
                .pol_learned
                .insert(key, u32::from(group), 0)
                .is_err()
            {
                self.stats.write_errors += 1;
            }
        }
    }

    /// Copies the flows nvod's pipeline tracked since the last sync (frames the programs
    /// handed over: a flood it decided per copy, a tunnel packet left to its socket) into the
    /// programs' table, so the flow's next packets and replies pass there too. Only flows of
    /// networks whose policy the kernel enforces; written with the protocol's full timeout.
    fn copy_flows(&mut self, pipeline: &Pipeline) {
        let flows = pipeline.take_policy_flows();
        if flows.is_empty() {
            return;
        }
        let now = nvo_io::iface::monotonic_ns();
        for f in flows {
            if !self.policy.policies.contains_key(&Vni(f.network)) {
                continue;
            }
            let key = flow_key(&f);
            let idle = nvo_policy::conntrack::timeout(f.proto, false);
            let entry = layout::Flow {
                last_ns: now,
                idle_ns: u64::try_from(idle.as_nanos()).unwrap_or(u64::MAX),
            };
            if self.kernel.maps.pol_flows.insert(key, entry, 0).is_err() {
                self.stats.write_errors += 1;
            }
        }
    }

    /// Rule counters: a rule new to the kernel, or of a replaced policy, starts from zero.
    fn sync_rule_hits(
        &mut self,
        rules: &HashMap<layout::RuleKey, layout::Rule>,
        policies: &HashMap<Vni, Arc<Policy>>,
    ) {
        let replaced = |vni: u32| {
            let old = self.policy.policies.get(&Vni(vni));
            let new = policies.get(&Vni(vni));
            !matches!((old, new), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
        };
        let stale: Vec<layout::RuleKey> = self
            .policy
            .rules
            .keys()
            .filter(|k| !rules.contains_key(k) || replaced(k.vni))
            .copied()
            .collect();
        let fresh: Vec<layout::RuleKey> = rules
            .keys()
            .filter(|k| !self.policy.rules.contains_key(k) || replaced(k.vni))
            .copied()
            .collect();
        let hits = &mut self.kernel.maps.pol_rule_hits;
        for k in stale {
            let _ = hits.remove(&k);
        }
        let Ok(cpus) = aya::util::nr_cpus() else {
            return;
        };
        for k in fresh {
            let zeros = PerCpuValues::try_from(vec![0u64; cpus]);
            if zeros
                .and_then(|z| hits.insert(k, z, 0).map_err(std::io::Error::other))
                .is_err()
            {
                self.stats.write_errors += 1;
            }
        }
    }

    /// A network whose policy left the kernel: its flows and learned identities go, its
    /// counters start from zero if it comes back.
    fn forget_policy(&mut self, vni: Vni) {
        let maps = &mut self.kernel.maps;
        let flows: Vec<layout::FlowKey> = maps
            .pol_flows
            .keys()
            .filter_map(Result::ok)
            .filter(|k| k.vni == vni.0)
            .collect();
        for k in flows {
            let _ = maps.pol_flows.remove(&k);
        }
        let learned: Vec<layout::IdentKey> = maps
            .pol_learned
            .keys()
            .filter_map(Result::ok)
            .filter(|k| k.vni == vni.0)
            .collect();
        for k in learned {
            let _ = maps.pol_learned.remove(&k);
        }
        self.zero_policy_counters(vni);
    }

    fn zero_policy_counters(&mut self, vni: Vni) {
        if let Some(&slot) = self.net_slots.by_key.get(&vni) {
            self.zero_policy_slot(slot);
        }
    }

    /// Zeroes the policy counters of network slot `slot` (a slot given to another network).
    pub(super) fn zero_policy_slot(&mut self, slot: u32) {
        if let Ok(cpus) = aya::util::nr_cpus() {
            let zeros = PerCpuValues::try_from(vec![layout::PolCounters::default(); cpus]);
            if let Ok(zeros) = zeros {
                let _ = self.kernel.maps.pol_counters.set(slot, zeros, 0);
            }
        }
    }

    /// Adds the programs' policy counters of network `vni` to the pipeline's (`nvo policy
    /// show`, the API, /metrics): nothing when its policy is not in the kernel.
    pub fn add_policy_counters(&self, vni: Vni, counters: &mut PolicyCounters) {
        if !self.policy.policies.contains_key(&vni) {
            return;
        }
        let Some(&slot) = self.net_slots.by_key.get(&vni) else {
            return;
        };
        counters.in_kernel = true;
        let maps = &self.kernel.maps;
        let zero = layout::PolCounters::default();
        if let Ok(k) = sum_per_cpu(&maps.pol_counters, slot, layout::PolCounters::add, zero) {
            // Added as another worker's counts are (PolicyCounters::merge); to_pipeline's
            // literal names every field (pol_counters.rs: a counter added to one side only
            // does not build, or fails its test against the C struct).
            counters.merge(&k.to_pipeline());
        }
        for (i, n) in counters.rules.iter_mut().enumerate() {
            let key = layout::RuleKey {
                vni: vni.0,
                index: i as u32,
            };
            if let Ok(values) = maps.pol_rule_hits.get(&key, 0) {
                *n += values.iter().sum::<u64>();
            }
        }
    }

    /// The programs' connection table, for nvod's pipeline to ask when its own misses
    /// (`Pipeline::set_external_flows`): a flow the kernel tracks passes there too.
    pub fn kernel_flows(&self) -> Arc<KernelFlows> {
        self.kernel.flows.clone()
    }

    /// Whether the programs enforce network `vni`'s policy (`nvo policy show` says where).
    pub fn enforces_policy(&self, vni: Vni) -> bool {
        self.policy.policies.contains_key(&vni)
    }
}
