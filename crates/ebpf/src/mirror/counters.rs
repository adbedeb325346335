//! The programs' per-CPU counters, summed and added to the pipeline's under the same names.

use nvo_pipeline::{Counters, DropReason};

use super::Mirror;
use crate::kernel::sum_per_cpu;
use crate::layout;

/// `dst.f += src.f` for each field `f` both counter structs have.
macro_rules! add_fields {
    ($dst:expr, $src:expr; $($field:ident),* $(,)?) => {
        $($dst.$field += $src.$field;)*
    };
}

impl Mirror {
    /// Adds the programs' counters to the pipeline's, under the same names.
    pub fn add_counters(&self, counters: &mut Counters) {
        let maps = &self.kernel.maps;
        for reason in DropReason::ALL {
            let n = sum_per_cpu(
                &maps.drop_counters,
                u32::from(reason.code()),
                |t, v| *t += v,
                0,
            )
            .unwrap_or(0);
            counters.drops.add_count(reason, n);
        }
        for (vni, &slot) in &self.net_slots.by_key {
            let zero = layout::NetCounters::default();
            let Ok(k) = sum_per_cpu(&maps.net_counters, slot, layout::NetCounters::add, zero)
            else {
                continue;
            };
            let c = counters.networks.entry(*vni).or_default();
            add_fields!(c, k; rx_port_frames, rx_underlay_frames, delivered, encap_unicast,
                encap_flood, learn_limit, learn_limit_port, learn_limit_remote,
                learn_local_conflict);
        }
        for (port, &slot) in &self.port_slots.by_key {
            let zero = layout::PortCounters::default();
            let Ok(k) = sum_per_cpu(&maps.port_counters, slot, layout::PortCounters::add, zero)
            else {
                continue;
            };
            let c = counters.ports.entry(*port).or_default();
            add_fields!(c, k; rx_frames, rx_bytes, tx_frames, tx_bytes, drops, learn_limit);
        }
        let node = self.node_counters();
        add_fields!(counters.underlay, node; rx_packets, rx_bytes, tx_packets, tx_bytes,
            tx_errors, relayed);
    }

    /// The node-wide counters of the programs (punts, lost reports, packets passed up).
    pub fn node_counters(&self) -> layout::NodeCounters {
        let zero = layout::NodeCounters::default();
        sum_per_cpu(
            &self.kernel.maps.node_counters,
            0,
            layout::NodeCounters::add,
            zero,
        )
        .unwrap_or_default()
    }
}
