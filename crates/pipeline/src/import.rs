//! Learned entries another copy of the tables learned: with several datapath workers, each
//! holds its own pipeline, and a MAC one of them learns is imported into the others
//! ([`Pipeline::import_learned`]) so that they forward to it instead of flooding.
//!
//! An import goes through the same FDB rules as learning (bounds, static and EVPN entries win,
//! a local MAC is not moved behind a tunnel) but counts nothing and notes no event: the worker
//! that learned it counted and noted it, and the API sums the workers' counters.
//!
//! An L3 network's neighbours (container IP → port and MAC, learned from ARP and IPv4 on its
//! ports) are shared the same way: [`Pipeline::l3_neighbours`] lists them, and
//! [`Pipeline::import_l3_neighbour`] learns one as a port frame would have taught it. So are
//! the addresses snooped from ARP/ND on local ports (ARP suppression's table, and the IPs of
//! EVPN's MAC/IP routes): [`Pipeline::local_neighbours`], [`Pipeline::import_local_neighbour`].

use std::net::IpAddr;
use std::time::Instant;

use crate::fdb::Learned;
use crate::neigh::Snooped;
use crate::pipeline::bounds;
use crate::{FdbDest, Mac, Pipeline, PortId, Vni};

impl Pipeline {
    /// Learns `mac` behind `dest` in network `vni` as another copy of the tables did, last
    /// seen at `seen`; returns whether the entry is new or moved (false for an unknown
    /// network, a refresh, or an entry the rules keep).
    pub fn import_learned(&mut self, vni: Vni, mac: Mac, dest: FdbDest, seen: Instant) -> bool {
        let Some(net) = self.networks.get_mut(&vni) else {
            return false;
        };
        let bounds = bounds(net, dest);
        match net.fdb.learn(mac, dest, seen, bounds) {
            Learned::New => {
                if matches!(dest, FdbDest::Port(_)) {
                    self.hosts_generation += 1;
                }
                true
            }
            Learned::Moved { .. } => {
                self.hosts_generation += 1;
                true
            }
            _ => false,
        }
    }

    /// Every L3 network's neighbours: (network, container IP, port, MAC), in no order.
    pub fn l3_neighbours(&self) -> Vec<(Vni, IpAddr, PortId, Mac)> {
        self.networks
            .values()
            .flat_map(|net| {
                let vni = net.spec.vni;
                net.l3
                    .neighbours
                    .iter()
                    .map(move |(&ip, &(port, mac))| (vni, ip, port, mac))
            })
            .collect()
    }

    /// Every address snooped on (or pinned to) a local port: (network, IP, MAC, port).
    pub fn local_neighbours(&self) -> Vec<(Vni, IpAddr, Mac, PortId)> {
        self.networks
            .values()
            .flat_map(|net| {
                let vni = net.spec.vni;
                net.neigh
                    .entries()
                    .filter_map(move |(ip, mac, port)| Some((vni, ip, mac, port?)))
            })
            .collect()
    }

    /// Snoops `ip` at `mac` behind local `port` as another copy of the tables did, seen
    /// `now` (the rules of snooping: a static entry stands, a full table takes no new
    /// address); a change shows in [`Pipeline::local_hosts`]. Returns whether it changed.
    pub fn import_local_neighbour(
        &mut self,
        vni: Vni,
        (ip, mac, port): (IpAddr, Mac, PortId),
        now: Instant,
    ) -> bool {
        let max = self.limits.max_neighbors;
        let Some(net) = self.networks.get_mut(&vni) else {
            return false;
        };
        let changed = net.neigh.snoop(ip, mac, port, now, max) == Snooped::Changed;
        if changed {
            self.hosts_generation += 1;
        }
        changed
    }

    /// Learns an L3 neighbour another copy of the tables learned (within the network's
    /// `max_learned`, as learning from a port does); an unknown network is ignored.
    pub fn import_l3_neighbour(&mut self, vni: Vni, ip: IpAddr, port: PortId, mac: Mac) {
        if let Some(net) = self.networks.get_mut(&vni) {
            let max = usize::try_from(net.spec.max_learned).unwrap_or(usize::MAX);
            let before = net.l3.changes;
            net.l3.learn(ip, port, mac, max);
            if net.l3.ila && net.l3.changes != before {
                self.hosts_generation += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::{Duration, Instant};

    use crate::{
        AcceptRemotes, Action, Actions, Limits, Mac, NetworkSpec, Origin, Pipeline, PortId,
    };
    use crate::{FdbDest, Vni};

    fn pipeline() -> Pipeline {
        let mut p = Pipeline::new(Limits::default());
        let spec = NetworkSpec {
            accept_remotes: Some(AcceptRemotes::Any),
            ..NetworkSpec::new(Vni(10))
        };
        p.add_network(spec).unwrap();
        p.add_port(PortId(1), Vni(10)).unwrap();
        p.add_port(PortId(2), Vni(10)).unwrap();
        p
    }

    fn frame(src: [u8; 6], dst: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0);
        f
    }

    const A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

    /// A MAC learned by one copy and imported into another is forwarded to there, not
    /// flooded; the import counts nothing.
    #[test]
    fn imported_mac_is_unicast_and_uncounted() {
        let now = Instant::now();
        let mut learner = pipeline();
        let mut other = pipeline();
        let mut actions = Actions::with_capacity(8);
        learner.from_port(PortId(1), &frame(A, B), now, &mut actions);
        let mut events = Vec::new();
        // Events are off: the learner's table is read instead.
        let _ = learner.take_fdb_events(&mut events);
        let entries = learner.fdb_entries(Vni(10), now).unwrap();
        assert_eq!(entries.len(), 1);
        assert!(other.import_learned(Vni(10), Mac(A), entries[0].dest, now));
        other.from_port(PortId(2), &frame(B, A), now, &mut actions);
        let delivered: Vec<_> = actions
            .iter()
            .filter(|a| matches!(a, Action::Deliver { .. }))
            .collect();
        assert_eq!(delivered.len(), 1, "{actions:?}");
        assert!(matches!(
            delivered[0],
            Action::Deliver {
                port: PortId(1),
                ..
            }
        ));
        let c = other.counters();
        // B was learned by `other` itself; A was imported and is not counted again.
        assert_eq!(c.networks[&Vni(10)].learned, 1);
        assert_eq!(learner.counters().networks[&Vni(10)].learned, 1);
    }

    /// An import follows the learning rules: a static entry stays, an unknown network is
    /// refused, and the import keeps the time it was seen (it ages with the original).
    #[test]
    fn import_follows_the_fdb_rules() {
        let now = Instant::now();
        let mut p = pipeline();
        p.fdb_add_static(Vni(10), Mac(A), FdbDest::Port(PortId(2)))
            .unwrap();
        let remote = FdbDest::Remote(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
        assert!(!p.import_learned(Vni(10), Mac(A), remote, now));
        assert!(!p.import_learned(Vni(99), Mac(B), remote, now));
        let seen = now - Duration::from_secs(7);
        assert!(p.import_learned(Vni(10), Mac(B), remote, seen));
        let entries = p.fdb_entries(Vni(10), now).unwrap();
        let b = entries.iter().find(|e| e.mac == Mac(B)).unwrap();
        assert_eq!((b.origin, b.dest), (Origin::Learned, remote));
        assert_eq!(b.age.as_secs(), 7);
        let a = entries.iter().find(|e| e.mac == Mac(A)).unwrap();
        assert_eq!(a.origin, Origin::Static);
    }
}
