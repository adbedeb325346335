//! The FDB in the kernel: the pipeline's change journal written into `fdb` (a network that
//! changed more than the journal holds, or is new to the kernel, in full), the kernel's learn
//! reports applied to the pipeline and written back, and each network's learning budget.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::Instant;

use nvo_pipeline::{FdbDest, Mac, NetworkView, Origin, Pipeline, PortId, Vni};

use super::Mirror;
use crate::layout::{self, read_record};

impl Mirror {
    fn fdb_value(dest: FdbDest, origin: Origin, now_ns: u64) -> layout::FdbEntry {
        let mut e = layout::FdbEntry {
            origin: match origin {
                Origin::Static => layout::ORIGIN_STATIC,
                Origin::Learned => layout::ORIGIN_LEARNED,
                Origin::Evpn => layout::ORIGIN_EVPN,
            },
            // A learned entry was just reported (it came from the pipeline); an EVPN entry
            // seen on a local port must be reported at once (the MAC moved here).
            reported_ns: if origin == Origin::Learned { now_ns } else { 0 },
            ..Default::default()
        };
        match dest {
            FdbDest::Port(p) => {
                e.dest = layout::DEST_PORT;
                e.port_id = p.0;
            }
            FdbDest::Remote(IpAddr::V4(r)) => {
                e.dest = layout::DEST_REMOTE;
                e.remote = layout::Remote::v4(r).addr;
            }
            // What the programs cannot send themselves: nvod does (DEST_NODE is punted).
            FdbDest::Remote(IpAddr::V6(_)) => e.dest = layout::DEST_NODE,
            FdbDest::Node(n) => {
                e.dest = layout::DEST_NODE;
                e.port_id = n.0;
            }
        }
        e
    }

    fn fdb_key(vni: Vni, mac: Mac) -> layout::FdbKey {
        layout::FdbKey {
            vni: vni.0,
            mac: mac.0,
            pad: 0,
        }
    }

    /// Writes the pipeline's entry for (vni, mac), or removes the kernel's.
    fn write_fdb(&mut self, pipeline: &Pipeline, vni: Vni, mac: Mac, now_ns: u64) {
        let key = Mirror::fdb_key(vni, mac);
        match pipeline.fdb_get(vni, mac) {
            Some((dest, origin)) => {
                if let FdbDest::Remote(IpAddr::V4(r)) = dest {
                    self.remotes.entry(r).or_insert(None);
                }
                let value = Mirror::fdb_value(dest, origin, now_ns);
                if self.kernel.maps.fdb.insert(key, value, 0).is_err() {
                    self.stats.write_errors += 1;
                }
            }
            None => {
                let _ = self.kernel.maps.fdb.remove(&key);
            }
        }
    }

    /// The kernel's FDB keys of network `vni`.
    fn kernel_fdb_keys(&self, vni: Vni) -> Vec<layout::FdbKey> {
        self.kernel
            .maps
            .fdb
            .keys()
            .filter_map(Result::ok)
            .filter(|k| k.vni == vni.0)
            .collect()
    }

    /// Makes the kernel's FDB of network `vni` the pipeline's, entry for entry.
    fn resync_fdb(&mut self, pipeline: &Pipeline, vni: Vni, now: Instant, now_ns: u64) {
        let Ok(entries) = pipeline.fdb_entries(vni, now) else {
            return;
        };
        let wanted: HashSet<[u8; 6]> = entries.iter().map(|e| e.mac.0).collect();
        for key in self.kernel_fdb_keys(vni) {
            if !wanted.contains(&key.mac) {
                let _ = self.kernel.maps.fdb.remove(&key);
            }
        }
        for e in entries {
            if let FdbDest::Remote(IpAddr::V4(r)) = e.dest {
                self.remotes.entry(r).or_insert(None);
            }
            let value = Mirror::fdb_value(e.dest, e.origin, now_ns);
            if self
                .kernel
                .maps
                .fdb
                .insert(Mirror::fdb_key(vni, e.mac), value, 0)
                .is_err()
            {
                self.stats.write_errors += 1;
            }
        }
    }

    pub(super) fn sync_fdb(
        &mut self,
        pipeline: &mut Pipeline,
        kernel_nets: &HashMap<Vni, &NetworkView>,
        now: Instant,
    ) {
        pipeline.set_fdb_journal(true);
        let mut changed = std::mem::take(&mut self.changed);
        let mut overflowed = std::mem::take(&mut self.overflowed);
        changed.clear();
        overflowed.clear();
        pipeline.take_fdb_changes(&mut changed, &mut overflowed);
        let now_ns = nvo_io::iface::monotonic_ns();
        let left: Vec<Vni> = self
            .in_kernel
            .iter()
            .filter(|v| !kernel_nets.contains_key(v))
            .copied()
            .collect();
        for vni in left {
            for key in self.kernel_fdb_keys(vni) {
                let _ = self.kernel.maps.fdb.remove(&key);
            }
            self.in_kernel.remove(&vni);
        }
        for &vni in kernel_nets.keys() {
            if self.in_kernel.insert(vni) {
                overflowed.push(vni);
            }
        }
        for &(vni, mac) in &changed {
            if kernel_nets.contains_key(&vni) && !overflowed.contains(&vni) {
                self.write_fdb(pipeline, vni, mac, now_ns);
            }
        }
        for &vni in &overflowed {
            if kernel_nets.contains_key(&vni) {
                self.resync_fdb(pipeline, vni, now, now_ns);
            }
        }
        self.changed = changed;
        self.overflowed = overflowed;
    }

    pub(super) fn sync_budgets(&mut self, kernel_nets: &HashMap<Vni, &NetworkView>) {
        for (vni, view) in kernel_nets {
            let Some(&slot) = self.net_slots.by_key.get(vni) else {
                continue;
            };
            let budget = i64::from(view.max_learned) - view.learned as i64;
            let _ = self.kernel.maps.learn_budget.set(slot, budget.max(0), 0);
        }
    }

    /// Applies the kernel's learn reports to the pipeline and writes its verdicts back;
    /// returns how many there were.
    pub fn drain_events(&mut self, pipeline: &mut Pipeline, now: Instant) -> usize {
        let mut events = Vec::new();
        while let Some(item) = self.kernel.maps.events.next() {
            if let Some(ev) = read_record::<layout::Event>(&item) {
                events.push(ev);
            }
        }
        let now_ns = nvo_io::iface::monotonic_ns();
        for ev in &events {
            if ev.kind == layout::EVENT_IDENTITY {
                self.learned_identity(pipeline, ev);
                continue;
            }
            let vni = Vni(ev.vni);
            let mac = Mac(ev.mac);
            let dest = match ev.dest {
                layout::DEST_PORT => FdbDest::Port(PortId(ev.port_id)),
                _ => FdbDest::Remote(IpAddr::V4(layout::Remote { addr: ev.remote }.ipv4())),
            };
            let _ = pipeline.learn(vni, mac, dest, now);
            // Whatever the pipeline made of it — a new entry, a move, a refusal — is what the
            // kernel holds from now on.
            if self.in_kernel.contains(&vni) {
                self.write_fdb(pipeline, vni, mac, now_ns);
            }
        }
        self.stats.learn_reports += events.len() as u64;
        if !events.is_empty() {
            // The pipeline noted these changes too; they are written already.
            self.changed.clear();
            self.overflowed.clear();
            let mut changed = std::mem::take(&mut self.changed);
            let mut overflowed = std::mem::take(&mut self.overflowed);
            pipeline.take_fdb_changes(&mut changed, &mut overflowed);
            for &(vni, mac) in &changed {
                if self.in_kernel.contains(&vni) {
                    self.write_fdb(pipeline, vni, mac, now_ns);
                }
            }
            for &vni in &overflowed {
                if self.in_kernel.contains(&vni) {
                    self.resync_fdb(pipeline, vni, now, now_ns);
                }
            }
            self.changed = changed;
            self.overflowed = overflowed;
            let views = pipeline.networks();
            let nets: HashMap<Vni, &NetworkView> = views
                .iter()
                .filter(|v| self.in_kernel.contains(&v.vni))
                .map(|v| (v.vni, v))
                .collect();
            self.sync_budgets(&nets);
            self.sync_vtep_budgets(pipeline, &nets);
        }
        events.len()
    }
}
