//! The programs' connection table (`pol_flows`) as nvod's pipeline asks it on a miss
//! (nvo_pipeline::policy_external): a flow the kernel tracks passes in nvod too.
//!
//! ```text
//!  KernelFlows::lookup(key)   network's policy not in the kernel → None (no syscall)
//!                             pol_flows[key], else pol_flows[key reversed] (as ct_lookup in
//!                             bpf/policy.h: the first entry found decides)
//!                             live: CLOCK_MONOTONIC now − last_ns < idle_ns, as the program
//!                             compares bpf_ktime_get_ns() → (key as stored, idle_ns − age)
//! ```
//!
//! The handle is a second descriptor of the map (a `dup` of the one the mirror writes with):
//! a lookup is one `BPF_MAP_LOOKUP_ELEM` through `&self` — the kernel's hash map takes
//! concurrent lookups and updates (RCU) — so any worker thread may ask. It does not refresh
//! the kernel's entry: the packets nvod passes are its own table's to count.

use std::collections::HashSet;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::RwLock;
use std::time::Duration;

use aya::maps::{HashMap as BpfHash, Map, MapData};
use nvo_pipeline::ExternalFlows;

use crate::layout;

/// The flow key as the programs key it (bpf/layout.h `nvo_flow_key`).
pub(crate) fn flow_key(f: &nvo_policy::FlowKey) -> layout::FlowKey {
    let (src, dst) = (layout::ident_key(0, f.src), layout::ident_key(0, f.dst));
    layout::FlowKey {
        vni: f.network,
        proto: f.proto,
        family: src.family as u8,
        sport: f.sport,
        dport: f.dport,
        pad: 0,
        src: src.ip,
        dst: dst.ip,
    }
}

/// The time an entry has left at `now_ns` (CLOCK_MONOTONIC), `None` when it is idle past its
/// timeout: the program's `now - last_ns >= idle_ns` means gone. An entry refreshed after
/// `now_ns` was read (on another CPU) counts as just seen, not as 2^64 ns old.
pub fn time_left(entry: &layout::Flow, now_ns: u64) -> Option<Duration> {
    let age = now_ns.saturating_sub(entry.last_ns);
    (age < entry.idle_ns).then(|| Duration::from_nanos(entry.idle_ns - age))
}

/// What nvod's pipeline asked of the kernel's table.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KernelFlowStats {
    /// Lookups (a miss in nvod's table, in a network whose policy the kernel enforces).
    pub asked: u64,
    /// Flows found live there and adopted.
    pub found: u64,
}

/// `pol_flows`, readable from any thread, and which networks' policy the programs enforce.
pub struct KernelFlows {
    table: BpfHash<MapData, layout::FlowKey, layout::Flow>,
    enforced: RwLock<HashSet<u32>>,
    asked: AtomicU64,
    found: AtomicU64,
}

impl std::fmt::Debug for KernelFlows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelFlows").finish_non_exhaustive()
    }
}

impl KernelFlows {
    /// A second handle on `map` (the loaded `pol_flows`).
    pub(crate) fn new(map: &MapData) -> Result<KernelFlows, String> {
        let fd = map
            .fd()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| e.to_string())?;
        let data = MapData::from_fd(fd).map_err(|e| e.to_string())?;
        let map = Map::from_map_data(data).map_err(|e| e.to_string())?;
        Ok(KernelFlows {
            table: BpfHash::try_from(map).map_err(|e| e.to_string())?,
            enforced: RwLock::new(HashSet::new()),
            asked: AtomicU64::new(0),
            found: AtomicU64::new(0),
        })
    }

    /// The networks whose policy the programs enforce now (the mirror, at each sync).
    pub(crate) fn set_enforced(&self, vnis: impl Iterator<Item = u32>) {
        let mut set = self.enforced.write().unwrap_or_else(|p| p.into_inner());
        set.clear();
        set.extend(vnis);
    }

    /// The counts so far.
    pub fn stats(&self) -> KernelFlowStats {
        KernelFlowStats {
            asked: self.asked.load(Relaxed),
            found: self.found.load(Relaxed),
        }
    }
}

impl ExternalFlows for KernelFlows {
    fn lookup(&self, key: &nvo_policy::FlowKey) -> Option<(nvo_policy::FlowKey, Duration)> {
        let enforced = self.enforced.read().unwrap_or_else(|p| p.into_inner());
        if !enforced.contains(&key.network) {
            return None;
        }
        drop(enforced);
        self.asked.fetch_add(1, Relaxed);
        let (held, entry) = match self.table.get(&flow_key(key), 0) {
            Ok(e) => (*key, e),
            Err(_) => (
                key.reversed(),
                self.table.get(&flow_key(&key.reversed()), 0).ok()?,
            ),
        };
        // Read after the entry, so that a refresh racing with it is seldom "in the future".
        let left = time_left(&entry, nvo_io::iface::monotonic_ns())?;
        self.found.fetch_add(1, Relaxed);
        Some((held, left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_compares_as_the_program_does() {
        let e = layout::Flow {
            last_ns: 1_000,
            idle_ns: 500,
        };
        assert_eq!(time_left(&e, 1_000), Some(Duration::from_nanos(500)));
        assert_eq!(time_left(&e, 1_499), Some(Duration::from_nanos(1)));
        // bpf/policy.h ct_lookup: now - last_ns >= idle_ns is gone.
        assert_eq!(time_left(&e, 1_500), None);
        assert_eq!(time_left(&e, u64::MAX), None);
        // Refreshed on another CPU after now was read: just seen.
        assert_eq!(time_left(&e, 900), Some(Duration::from_nanos(500)));
        let never = layout::Flow {
            last_ns: 0,
            idle_ns: 0,
        };
        assert_eq!(time_left(&never, 0), None);
    }

    #[test]
    fn keys_are_laid_out_as_the_programs_key_them() {
        let k = nvo_policy::FlowKey {
            network: 100,
            proto: 6,
            src: "10.0.0.1".parse().unwrap(),
            dst: "fd00::2".parse().unwrap(),
            sport: 40000,
            dport: 5432,
        };
        let f = flow_key(&k);
        assert_eq!((f.vni, f.proto, f.family), (100, 6, 4));
        assert_eq!((f.sport, f.dport, f.pad), (40000, 5432, 0));
        assert_eq!(&f.src[..4], &[10, 0, 0, 1]);
        assert_eq!(f.src[4..], [0; 12]);
        assert_eq!(f.dst[0], 0xfd);
    }
}
