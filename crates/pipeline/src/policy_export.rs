//! A network's resolved policy state as another datapath compiles it (the kernel path,
//! nvo-ebpf's mirror): the same identities and rules this pipeline decides on, so both
//! enforce one policy. [`Pipeline::policy_generation`] moves at every change, so a reader
//! recompiles only then.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use nvo_policy::{Policy, Shape};

use crate::policy::Policies;
use crate::{Pipeline, PortId, Vni};

/// What network `vni`'s policy decides on.
#[derive(Debug, Clone)]
pub struct PolicyExport {
    /// The policy (its rules and selected groups).
    pub policy: Arc<Policy>,
    /// The groups of the network's labelled ports.
    pub ports: HashMap<PortId, u16>,
    /// The groups of its labelled addresses.
    pub addrs: HashMap<IpAddr, u16>,
    /// The groups EVPN routes gave its remote addresses.
    pub evpn: HashMap<IpAddr, u16>,
}

impl crate::policy::Shared {
    /// Notes an identity learned from the wire for the kernel path, if it asked.
    pub(crate) fn journal_learned(&mut self, (vni, ip): (Vni, IpAddr), group: u16) {
        if let Some(j) = self
            .learned_journal
            .as_mut()
            .filter(|j| j.len() < crate::policy::MAX_LEARNED_IDS)
        {
            j.push((vni, ip, group));
        }
    }
}

impl Policies {
    /// How large network `vni`'s policy is (default: it has none).
    pub(crate) fn shape(&self, vni: Vni) -> Shape {
        self.nets
            .get(&vni)
            .map_or_else(Shape::default, |n| n.policy.shape())
    }
}

impl Pipeline {
    /// A number that moves whenever a policy, a label or an EVPN identity changes.
    pub fn policy_generation(&self) -> u64 {
        self.policy.generation
    }

    /// The flows the connection table (shared by every worker) took in since the last call
    /// (none at the first, which starts keeping them): the kernel path copies them into its
    /// own table, so a flow nvod allowed keeps passing where the programs decide.
    pub fn take_policy_flows(&self) -> Vec<nvo_policy::FlowKey> {
        self.policy.shared.with(|s| s.ct.take_inserted())
    }

    /// The identities learned from the wire (GBP headers nvod read) since the last call (none
    /// at the first, which starts keeping them): the kernel path copies them.
    pub fn take_learned_identities(&self) -> Vec<(Vni, IpAddr, u16)> {
        self.policy
            .shared
            .with(|s| std::mem::take(s.learned_journal.get_or_insert_with(Vec::new)))
    }

    /// Remembers group `group` for address `ip` of network `vni`, learned from the wire by
    /// another datapath (the kernel path's GBP headers), as if this pipeline had read it.
    pub fn learn_identity(&self, vni: Vni, ip: IpAddr, group: u16) {
        self.policy.shared.with(|s| {
            let key = (vni, ip);
            if s.learned.get(&key) != Some(&group)
                && (s.learned.len() < crate::policy::MAX_LEARNED_IDS
                    || s.learned.contains_key(&key))
            {
                s.learned.insert(key, group);
            }
        });
    }

    /// Installs (or, with `None`, takes out) the connection table of another datapath this
    /// pipeline asks when its own misses a packet of a policy network (policy_external.rs).
    pub fn set_external_flows(&mut self, flows: Option<Arc<dyn crate::ExternalFlows>>) {
        self.policy.external = crate::ExternalHook(flows);
        self.policy.negative = Default::default();
    }

    /// Network `vni`'s policy state; `None` without a policy.
    pub fn policy_export(&self, vni: Vni) -> Option<PolicyExport> {
        let p = &self.policy;
        let net = p.nets.get(&vni)?;
        Some(PolicyExport {
            policy: net.policy.clone(),
            ports: net.port_ids.clone(),
            addrs: net.addr_ids.clone(),
            evpn: p
                .evpn_ids
                .iter()
                .filter(|((v, _), _)| *v == vni)
                .map(|((_, ip), g)| (*ip, *g))
                .collect(),
        })
    }
}
