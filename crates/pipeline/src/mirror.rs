//! What a datapath that mirrors the tables needs (nvod's eBPF path, docs/design/ebpf.md): the
//! FDB change journal, one entry read back, and learning reported by the mirror.
//!
//! The pipeline stays the table of record. The kernel learns on its own for speed and reports
//! each MAC it inserted, moved or saw active again; [`Pipeline::learn`] runs the pipeline's
//! learning on the report (counting, ageing, telling EVPN), and the journal tells the mirror
//! which entries to write back — so a MAC the pipeline refuses (its learned table is full, a
//! static entry holds it) is taken out of the kernel again.

use std::net::IpAddr;
use std::time::Instant;

use crate::pipeline::learn_into;
use crate::{FdbDest, Mac, Origin, Pipeline, TableError, Vni};

impl Pipeline {
    /// Turns the FDB change journal of every network (present and future) on or off. Turning
    /// it on again keeps what a journal holds.
    pub fn set_fdb_journal(&mut self, on: bool) {
        self.fdb_journal = on;
        for net in self.networks.values_mut() {
            match (on, &net.fdb.journal) {
                (true, None) => net.fdb.journal = Some(Default::default()),
                (false, Some(_)) => net.fdb.journal = None,
                _ => {}
            }
        }
    }

    /// Moves the journal's notes out: `changed` gets every (network, MAC) whose entry was
    /// added, changed or removed since the last call; `overflowed` the networks that changed
    /// more than the journal holds (read those whole).
    pub fn take_fdb_changes(&mut self, changed: &mut Vec<(Vni, Mac)>, overflowed: &mut Vec<Vni>) {
        for (&vni, net) in self.networks.iter_mut() {
            let Some(journal) = net.fdb.journal.as_mut() else {
                continue;
            };
            if journal.overflow {
                overflowed.push(vni);
                journal.overflow = false;
                journal.macs.clear();
                continue;
            }
            changed.extend(journal.macs.drain(..).map(|mac| (vni, mac)));
        }
    }

    /// The FDB entry for `mac` in network `vni`: where it sends frames and its origin.
    pub fn fdb_get(&self, vni: Vni, mac: Mac) -> Option<(FdbDest, Origin)> {
        self.networks.get(&vni)?.fdb.entry(mac)
    }

    /// Learns, as a frame from `mac` arriving from `dest` would, at `now`: what a datapath
    /// that learned on its own reports. Counted like any learning (learned, moves,
    /// learn_limit); a network that does not learn from `dest`'s kind (`learn_ports` for a
    /// port, `learn_tunnels` for a remote or node) learns nothing.
    pub fn learn(
        &mut self,
        vni: Vni,
        mac: Mac,
        dest: FdbDest,
        now: Instant,
    ) -> Result<(), TableError> {
        if !mac.is_unicast() {
            return Err(TableError::InvalidMac(mac));
        }
        let Pipeline {
            networks,
            ports,
            hosts_generation,
            fdb_events,
            ..
        } = self;
        let net = networks
            .get_mut(&vni)
            .ok_or(TableError::NoSuchNetwork(vni))?;
        let port = match dest {
            FdbDest::Port(id) => ports.get_mut(&id).map(|p| &mut p.counters),
            FdbDest::Remote(_) | FdbDest::Node(_) => None,
        };
        let learns = match dest {
            FdbDest::Port(_) => net.spec.learn_ports,
            FdbDest::Remote(_) | FdbDest::Node(_) => net.spec.learn_tunnels,
        };
        if learns {
            learn_into(net, mac, dest, now, (hosts_generation, fdb_events), port);
        }
        Ok(())
    }

    /// Sets the overlay nodes' locators: remotes every network knows (`accept_remotes`).
    pub fn set_overlay_locators(&mut self, locators: impl IntoIterator<Item = IpAddr>) {
        self.overlay_locators.clear();
        self.overlay_locators.extend(locators);
    }

    /// The remotes network `vni` takes tunnel packets from, sorted, or None when it takes
    /// them from any (`accept_remotes` = `any`): its flood list and the remotes of its static
    /// and EVPN entries, and the overlay nodes' locators.
    pub fn known_remotes(&self, vni: Vni) -> Result<Option<Vec<IpAddr>>, TableError> {
        let net = self.network_ref(vni)?;
        if net.spec.accepts(!net.flood.is_empty()) == crate::AcceptRemotes::Any {
            return Ok(None);
        }
        let mut known: Vec<IpAddr> = net
            .fdb
            .pinned_remotes()
            .chain(net.flood.iter().copied())
            .chain(self.overlay_locators.iter().copied())
            .collect();
        known.sort_unstable();
        known.dedup();
        Ok(Some(known))
    }

    /// How many learned entries of network `vni` point at `dest`, and how many more it may
    /// take before its own bound (`max_learned_per_port` / `_per_remote`); None when the
    /// network does not exist.
    pub fn learned_behind(&self, vni: Vni, dest: FdbDest) -> Option<(usize, usize)> {
        let net = self.networks.get(&vni)?;
        let held = net.fdb.learned_behind(dest);
        let bound = crate::pipeline::bounds(net, dest).dest;
        Some((held, bound.saturating_sub(held)))
    }

    /// Every destination of network `vni` that holds learned entries, with how many.
    pub fn learned_destinations(&self, vni: Vni) -> Vec<(FdbDest, usize)> {
        self.networks
            .get(&vni)
            .map(|n| n.fdb.destinations().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FlushScope, Limits, NetworkSpec, PortId};

    const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
    const B: Mac = Mac([2, 0, 0, 0, 0, 0xb]);

    fn drain(p: &mut Pipeline) -> (Vec<(Vni, Mac)>, Vec<Vni>) {
        let (mut c, mut o) = (Vec::new(), Vec::new());
        p.take_fdb_changes(&mut c, &mut o);
        (c, o)
    }

    #[test]
    fn journal_notes_every_change_but_refreshes() {
        let now = Instant::now();
        let mut p = Pipeline::new(Limits::default());
        p.add_network(NetworkSpec::new(Vni(1))).unwrap();
        p.add_port(PortId(1), Vni(1)).unwrap();
        // A MAC on a port does not move to a tunnel (sticky): the move here is the other way.
        let remote = FdbDest::Remote("192.0.2.1".parse().unwrap());
        p.flood_add(Vni(1), "192.0.2.1".parse().unwrap()).unwrap();
        p.learn(Vni(1), A, remote, now).unwrap();
        assert_eq!(drain(&mut p), (vec![], vec![]), "journal off");
        p.set_fdb_journal(true);
        p.learn(Vni(1), A, remote, now).unwrap();
        assert_eq!(drain(&mut p).0, vec![], "a refresh is no change");
        p.learn(Vni(1), A, FdbDest::Port(PortId(1)), now).unwrap();
        p.fdb_add_static(Vni(1), B, FdbDest::Port(PortId(1)))
            .unwrap();
        assert_eq!(drain(&mut p).0, vec![(Vni(1), A), (Vni(1), B)]);
        assert_eq!(
            p.fdb_get(Vni(1), A),
            Some((FdbDest::Port(PortId(1)), Origin::Learned))
        );
        assert_eq!(
            p.fdb_get(Vni(1), B),
            Some((FdbDest::Port(PortId(1)), Origin::Static))
        );
        p.fdb_flush(Vni(1), FlushScope::All).unwrap();
        let (mut changed, _) = drain(&mut p);
        changed.sort();
        assert_eq!(changed, vec![(Vni(1), A), (Vni(1), B)]);
        // A network added later journals too.
        p.add_network(NetworkSpec::new(Vni(2))).unwrap();
        p.learn(Vni(2), A, remote, now).unwrap();
        assert_eq!(drain(&mut p).0, vec![(Vni(2), A)]);
    }

    #[test]
    fn journal_overflows_into_a_resync() {
        let now = Instant::now();
        let mut p = Pipeline::new(Limits::default());
        let mut spec = NetworkSpec::new(Vni(1));
        spec.max_learned = 1 << 16;
        p.add_network(spec).unwrap();
        p.set_fdb_journal(true);
        let remote = FdbDest::Remote("192.0.2.1".parse().unwrap());
        for i in 0..(crate::fdb::JOURNAL_CAP as u32 + 1) {
            let [_, a, b, c] = i.to_be_bytes();
            p.learn(Vni(1), Mac([2, 0, 0, a, b, c]), remote, now)
                .unwrap();
        }
        assert_eq!(drain(&mut p), (vec![], vec![Vni(1)]));
        assert_eq!(drain(&mut p), (vec![], vec![]));
    }

    #[test]
    fn learning_follows_the_network() {
        let now = Instant::now();
        let mut p = Pipeline::new(Limits::default());
        let mut spec = NetworkSpec::new(Vni(1));
        spec.learn_tunnels = false;
        spec.max_learned = 1;
        p.add_network(spec).unwrap();
        let remote = FdbDest::Remote("192.0.2.1".parse().unwrap());
        p.learn(Vni(1), A, remote, now).unwrap();
        assert_eq!(p.fdb_get(Vni(1), A), None);
        assert_eq!(
            p.learn(Vni(9), A, remote, now),
            Err(TableError::NoSuchNetwork(Vni(9)))
        );
        assert!(p.learn(Vni(1), Mac::BROADCAST, remote, now).is_err());
        // Tunnel learning off does not stop a port's reports; port learning off does.
        p.add_port(PortId(1), Vni(1)).unwrap();
        p.learn(Vni(1), A, FdbDest::Port(PortId(1)), now).unwrap();
        assert_eq!(
            p.fdb_get(Vni(1), A).map(|e| e.0),
            Some(FdbDest::Port(PortId(1)))
        );
        let mut spec = NetworkSpec::new(Vni(2));
        spec.learn_ports = false;
        p.add_network(spec).unwrap();
        p.add_port(PortId(2), Vni(2)).unwrap();
        p.learn(Vni(2), A, FdbDest::Port(PortId(2)), now).unwrap();
        assert_eq!(p.fdb_get(Vni(2), A), None);
        p.learn(Vni(2), A, remote, now).unwrap();
        assert_eq!(p.fdb_get(Vni(2), A).map(|e| e.0), Some(remote));
    }
}
