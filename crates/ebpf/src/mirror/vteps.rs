//! The remotes a network takes tunnel packets from, and the learning budgets per remote and
//! per port, in the kernel (maps `vteps` and `port_budget`).
//!
//! `vteps` holds, per kernel network, one entry for each remote of its known set
//! (`Pipeline::known_remotes`, `known` = 1; none when it accepts any remote) and one for each
//! remote that holds learned entries without being known (`known` = 0). The underlay program
//! drops a packet of a `NET_KNOWN_ONLY` network unless its source has a known entry
//! (`unknown_remote`), and hands to nvod a packet it would learn from a remote without an
//! entry (an `any` network's new remote): nvod's pipeline learns it, and the next sync writes
//! the remote's budget.
//!
//! Budgets are `bound − learned behind it` from the pipeline, the table of record, rewritten
//! after every sync and every batch of learn reports (as the network's `learn_budget`): the
//! kernel spends them, ageing and removals happen in the pipeline and come back as fresh
//! budgets, so the kernel's count never drifts for longer than one batch (learn.h says what
//! happens in that window). IPv6 remotes are not in the maps: the kernel path is IPv4 only.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use nvo_pipeline::{FdbDest, NetworkView, Pipeline, Vni};

use super::{Mirror, PortInfo};
use crate::layout;

/// A budget no bound limits (the network's own `learn_budget` still does).
const UNBOUNDED: i64 = i64::MAX / 4;

fn budget(remaining: usize) -> i64 {
    i64::try_from(remaining).unwrap_or(UNBOUNDED).min(UNBOUNDED)
}

impl Mirror {
    /// Writes every kernel network's remotes and every kernel port's budget, and removes what
    /// is no longer wanted.
    pub(super) fn sync_vteps(
        &mut self,
        pipeline: &Pipeline,
        kernel_nets: &HashMap<Vni, &NetworkView>,
        ports: &[PortInfo],
    ) {
        let mut vteps = HashSet::new();
        for &vni in kernel_nets.keys() {
            vteps.extend(self.write_vteps(pipeline, vni));
        }
        for stale in self.vteps.difference(&vteps) {
            let _ = self.kernel.maps.vteps.remove(stale);
        }
        self.vteps = vteps;
        let mut budgets = HashSet::new();
        for p in ports.iter().filter(|p| kernel_nets.contains_key(&p.vni)) {
            if self.write_port_budget(pipeline, p.vni, p.id.0) {
                budgets.insert(p.id.0);
            }
        }
        for stale in self.port_budgets.difference(&budgets) {
            let _ = self.kernel.maps.port_budget.remove(stale);
        }
        self.port_budgets = budgets;
    }

    /// After a batch of learn reports: the budgets of what is written already, fresh.
    pub(super) fn sync_vtep_budgets(
        &mut self,
        pipeline: &Pipeline,
        kernel_nets: &HashMap<Vni, &NetworkView>,
    ) {
        let mut vteps = std::mem::take(&mut self.vteps);
        for &vni in kernel_nets.keys() {
            vteps.extend(self.write_vteps(pipeline, vni));
        }
        self.vteps = vteps;
        for (vni, view) in kernel_nets {
            for port in &view.ports {
                if self.port_budgets.contains(&port.0) {
                    self.write_port_budget(pipeline, *vni, port.0);
                }
            }
        }
    }

    /// Writes network `vni`'s entries; returns their keys.
    fn write_vteps(&mut self, pipeline: &Pipeline, vni: Vni) -> Vec<layout::VtepKey> {
        let known = pipeline
            .known_remotes(vni)
            .ok()
            .flatten()
            .unwrap_or_default();
        let learned = pipeline
            .learned_destinations(vni)
            .into_iter()
            .filter_map(|(d, _)| match d {
                FdbDest::Remote(ip) => Some(ip),
                FdbDest::Port(_) | FdbDest::Node(_) => None,
            });
        let mut entries: HashMap<IpAddr, u32> = learned.map(|ip| (ip, 0)).collect();
        entries.extend(known.into_iter().map(|ip| (ip, 1)));
        let mut keys = Vec::with_capacity(entries.len());
        for (ip, known) in entries {
            let IpAddr::V4(v4) = ip else { continue };
            let remaining = pipeline
                .learned_behind(vni, FdbDest::Remote(ip))
                .map_or(0, |(_, left)| left);
            let key = layout::VtepKey {
                vni: vni.0,
                addr: v4.octets(),
            };
            let value = layout::Vtep {
                budget: budget(remaining),
                known,
                pad: 0,
            };
            if self.kernel.maps.vteps.insert(key, value, 0).is_err() {
                self.stats.write_errors += 1;
                continue;
            }
            keys.push(key);
        }
        keys
    }

    /// Writes port `id`'s budget; whether it is written.
    fn write_port_budget(&mut self, pipeline: &Pipeline, vni: Vni, id: u32) -> bool {
        let Some((_, left)) = pipeline.learned_behind(vni, FdbDest::Port(nvo_pipeline::PortId(id)))
        else {
            return false;
        };
        if self
            .kernel
            .maps
            .port_budget
            .insert(id, budget(left), 0)
            .is_err()
        {
            self.stats.write_errors += 1;
            return false;
        }
        true
    }
}
