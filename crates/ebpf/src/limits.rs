//! How large each map is: the same bounds as the tables it mirrors (the pipeline's and the
//! engine's limits), so the kernel path never holds more — or refuses less — than userspace.
//!
//! Per-network bounds are summed over the networks a node may have, except the FDB: the
//! pipeline bounds each network's learned, static and EVPN entries, and their sum over 4096
//! networks would be billions of hash buckets. The kernel's FDB is one node-wide map of
//! [`Sizes::fdb`] entries (a million by default, about 16 MiB of buckets); an entry that does
//! not fit is counted (`fdb_full` in the kernel path's counters) and its frames are flooded as
//! for an unknown MAC.

use nvo_encap::engine::Limits as EngineLimits;
use nvo_pipeline::overlay::{App, OverlayLimits};
use nvo_pipeline::policy;
use nvo_pipeline::Limits;

use crate::layout;

/// Default node-wide FDB size of the kernel path.
pub const DEFAULT_FDB: u32 = 1 << 20;

/// Entries of each bounded map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Networks (and their counter and budget slots).
    pub networks: u32,
    /// Ports (and their counter slots).
    pub ports: u32,
    /// Flood-list entries over all networks.
    pub flood: u32,
    /// FDB entries over all networks.
    pub fdb: u32,
    /// Receive keys.
    pub keys: u32,
    /// Per-destination headers.
    pub remote_tmpl: u32,
    /// Overlay relay entries: one per (application, destination) the node may route, that is
    /// every node of the LIB and every route of each application's RIB.
    pub relays: u32,
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX).max(1)
}

impl Sizes {
    /// The sizes that mirror these limits (the overlay's at their defaults: see
    /// [`Sizes::with_overlay`]).
    pub fn from_limits(pipeline: &Limits, engine: &EngineLimits, fdb: u32) -> Sizes {
        Sizes {
            networks: clamp(pipeline.max_networks),
            ports: clamp(pipeline.max_ports),
            flood: clamp(pipeline.max_networks.saturating_mul(pipeline.max_flood)),
            fdb: fdb.max(1),
            keys: clamp(engine.max_keys),
            remote_tmpl: clamp(engine.max_templates),
            relays: 0,
        }
        .with_overlay(&OverlayLimits::default())
    }

    /// The same with the relay map sized for the overlay tables' limits.
    pub fn with_overlay(mut self, overlay: &OverlayLimits) -> Sizes {
        let per_app = overlay.max_nodes.saturating_add(overlay.max_routes);
        self.relays = clamp(per_app.saturating_mul(App::ALL.len()));
        self
    }

    /// (map name, max_entries) for every map sized at load.
    pub fn entries(&self) -> Vec<(&'static str, u32)> {
        vec![
            ("ports", self.ports),
            ("port_out", self.ports),
            ("networks", self.networks),
            ("net_ports", self.ports),
            ("flood", self.flood),
            ("remote_tmpl", self.remote_tmpl),
            ("nexthops", self.keys),
            ("fdb", self.fdb),
            ("learn_budget", self.networks),
            // Known remotes and learning budgets: a flood list's worth per network.
            ("vteps", self.flood),
            ("port_budget", self.ports),
            ("keys", self.keys),
            ("groups", self.networks),
            ("net_counters", self.networks),
            ("port_counters", self.ports),
            ("profiles", layout::MAX_PROFILES as u32),
            ("transports", layout::MAX_PROFILES as u32),
            ("relays", self.relays),
            // ARP suppression's neighbours, node-wide like the FDB (one per host address).
            ("neighbors", self.fdb),
            // Identity policy (bpf/policy_maps.h): the pipeline's bounds.
            ("pol_nets", self.networks),
            ("pol_counters", self.networks),
            ("pol_rules", layout::RULE_SLOTS),
            ("pol_rule_hits", layout::RULE_SLOTS),
            ("pol_members", layout::MEMBER_SLOTS),
            (
                "pol_ids",
                clamp(policy::MAX_LABELLED_ADDRS + policy::MAX_LEARNED_IDS),
            ),
            ("pol_learned", clamp(policy::MAX_LEARNED_IDS)),
            ("pol_flows", clamp(policy::MAX_FLOWS)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_limits() {
        let s = Sizes::from_limits(&Limits::default(), &EngineLimits::default(), DEFAULT_FDB);
        assert_eq!(s.networks, 4096);
        assert_eq!(s.ports, 1024);
        assert_eq!(s.flood, 4096 * 256);
        assert_eq!(s.keys, 65536);
        assert_eq!(s.fdb, 1 << 20);
        assert_eq!(s.relays, 3 * (4096 + 16384));
        assert!(s.entries().iter().all(|&(_, n)| n > 0));
    }
}
