//! ARP suppression's neighbour tables in the kernel (`neighbors`, bpf/port.h `arp_answer`): the
//! pipeline's IPv4 entries of every kernel network that suppresses, rewritten per network when
//! its table's generation moves. The pipeline stays the table of record: the kernel answers
//! from the map and hands every request it answered to nvod, whose pipeline snoops it.

use std::collections::HashMap;

use nvo_pipeline::{NetworkView, Pipeline, Vni};

use super::Mirror;
use crate::layout::{Neigh, NeighKey};

impl Mirror {
    /// Brings `neighbors` up to date: entries of networks that left the kernel or stopped
    /// suppressing go, networks whose table changed are rewritten (only what differs).
    pub(super) fn sync_neighbors(
        &mut self,
        pipeline: &Pipeline,
        kernel_nets: &HashMap<Vni, &NetworkView>,
    ) {
        let gone: Vec<Vni> = self
            .neighbors
            .keys()
            .filter(|v| {
                !kernel_nets.contains_key(v) || pipeline.arp_neighbors_generation(**v).is_none()
            })
            .copied()
            .collect();
        for vni in gone {
            self.write_neighbors(vni, HashMap::new());
            self.neighbors.remove(&vni);
            self.neigh_generations.remove(&vni);
        }
        for &vni in kernel_nets.keys() {
            let Some(generation) = pipeline.arp_neighbors_generation(vni) else {
                continue;
            };
            if self.neigh_generations.get(&vni) == Some(&generation) {
                continue;
            }
            let Some((generation, entries)) = pipeline.arp_neighbors(vni) else {
                continue;
            };
            let want = entries
                .into_iter()
                .map(|(ip, mac, port)| {
                    let key = NeighKey {
                        vni: vni.0,
                        ip: ip.octets(),
                    };
                    let value = Neigh {
                        mac: mac.0,
                        pad: 0,
                        port_id: port.map_or(0, |p| p.0),
                    };
                    (key, value)
                })
                .collect();
            if self.write_neighbors(vni, want) {
                self.neigh_generations.insert(vni, generation);
            } else {
                // Tried again at the next sync.
                self.neigh_generations.remove(&vni);
            }
        }
    }

    /// Makes network `vni`'s entries in the map `want`; false if the kernel refused a write.
    fn write_neighbors(&mut self, vni: Vni, want: HashMap<NeighKey, Neigh>) -> bool {
        let had = self.neighbors.remove(&vni).unwrap_or_default();
        let mut ok = true;
        for key in had.keys().filter(|k| !want.contains_key(k)) {
            let _ = self.kernel.maps.neighbors.remove(key);
        }
        let mut written = HashMap::with_capacity(want.len());
        for (key, value) in want {
            if had.get(&key) == Some(&value) {
                written.insert(key, value);
                continue;
            }
            if self.kernel.maps.neighbors.insert(key, value, 0).is_err() {
                self.stats.write_errors += 1;
                ok = false;
                continue;
            }
            written.insert(key, value);
        }
        self.neighbors.insert(vni, written);
        ok
    }
}
