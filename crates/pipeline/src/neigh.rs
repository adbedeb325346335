//! One network's neighbour table, for ARP/ND suppression (docs/design/evpn.md): IP → MAC, each
//! entry either installed by the EVPN control plane or snooped from a local port.
//!
//! Contract:
//! - an EVPN entry is never aged; `set_evpn` installs or replaces any entry (the control plane
//!   decided the address lives elsewhere), `remove_evpn` removes only EVPN entries;
//! - a snooped (local) entry records the port it was seen on; snooping replaces an EVPN entry
//!   (the address moved here) and ages after the network's ageing time without being seen;
//! - a static entry (`pin`, the operator's: this IP belongs to this MAC behind this port) is
//!   never aged, never replaced by snooping or EVPN, and goes with its MAC's FDB entry or port;
//! - at `max` entries a new address is refused; nothing is evicted.
//!
//! Snooping inserts like FDB learning does: a new address may grow the map (amortised),
//! refreshing one does not allocate.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::{Mac, PortId};

/// How a neighbour entry got there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NeighOrigin {
    /// Installed by the EVPN control plane.
    Evpn,
    /// Set by the operator for a MAC behind a local port.
    Static {
        /// The port.
        port: PortId,
    },
    /// Snooped from ARP or ND on a local port.
    Local {
        /// The port it came from.
        port: PortId,
        /// When it was last seen.
        last_seen: Instant,
    },
}

/// One entry: the MAC an IP address resolves to, and where that came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Neighbor {
    pub(crate) mac: Mac,
    pub(crate) origin: NeighOrigin,
}

impl Neighbor {
    /// The port a snooped entry was seen on; None for an installed one.
    pub(crate) fn port(&self) -> Option<PortId> {
        match self.origin {
            NeighOrigin::Local { port, .. } | NeighOrigin::Static { port } => Some(port),
            NeighOrigin::Evpn => None,
        }
    }
}

/// Why an entry was not installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NeighRefused {
    /// The operator's static entry (for this MAC) holds the address.
    Static(Mac),
    /// The address is new and the table is full.
    Full,
}

/// What snooping an address did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Snooped {
    /// A new local entry, or one that replaced an EVPN entry or changed MAC or port.
    Changed,
    /// The same local entry, refreshed.
    Refreshed,
    /// A new address, but the table is full; nothing changed.
    Limit,
}

/// One network's neighbour table.
#[derive(Debug, Default)]
pub(crate) struct Neighbors {
    entries: HashMap<IpAddr, Neighbor>,
    /// Bumped by every change of an entry's address, MAC or port (not by a refresh): what a
    /// mirror of the table (the kernel path's) compares.
    generation: u64,
}

impl Neighbors {
    /// A number that changes whenever an entry is added, removed, or changes MAC or port.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Every entry: (IP, MAC, the local port behind which it lives, if any).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (IpAddr, Mac, Option<PortId>)> + '_ {
        self.entries.iter().map(|(&ip, n)| (ip, n.mac, n.port()))
    }

    /// What `ip` resolves to, if the table knows.
    pub(crate) fn lookup(&self, ip: IpAddr) -> Option<Neighbor> {
        self.entries.get(&ip).copied()
    }

    /// Records that `ip` is at `mac`, behind local `port`, as of `now`.
    pub(crate) fn snoop(
        &mut self,
        ip: IpAddr,
        mac: Mac,
        port: PortId,
        now: Instant,
        max: usize,
    ) -> Snooped {
        let origin = NeighOrigin::Local {
            port,
            last_seen: now,
        };
        if let Some(entry) = self.entries.get_mut(&ip) {
            if matches!(entry.origin, NeighOrigin::Static { .. }) {
                // The operator's binding stands, whoever answers for the address.
                return Snooped::Refreshed;
            }
            let same = entry.mac == mac && entry.port() == Some(port);
            *entry = Neighbor { mac, origin };
            return if same {
                Snooped::Refreshed
            } else {
                self.generation += 1;
                Snooped::Changed
            };
        }
        if self.entries.len() >= max {
            return Snooped::Limit;
        }
        self.entries.insert(ip, Neighbor { mac, origin });
        self.generation += 1;
        Snooped::Changed
    }

    /// Installs (or replaces a snooped or EVPN entry with) an EVPN entry. Returns the entry
    /// replaced, or None; refuses when a static entry holds the address, or when the address
    /// is new and the table holds `max` entries.
    pub(crate) fn set_evpn(
        &mut self,
        ip: IpAddr,
        mac: Mac,
        max: usize,
    ) -> Result<Option<Neighbor>, NeighRefused> {
        self.put(ip, mac, NeighOrigin::Evpn, max)
    }

    /// Pins `ip` to `mac` behind `port` (a static entry), replacing any entry.
    pub(crate) fn pin(
        &mut self,
        ip: IpAddr,
        mac: Mac,
        port: PortId,
        max: usize,
    ) -> Result<Option<Neighbor>, NeighRefused> {
        if let Some(old) = self.entries.get(&ip).copied() {
            self.generation += 1;
            self.entries.remove(&ip);
            self.entries.insert(
                ip,
                Neighbor {
                    mac,
                    origin: NeighOrigin::Static { port },
                },
            );
            return Ok(Some(old));
        }
        self.put(ip, mac, NeighOrigin::Static { port }, max)
    }

    /// Removes the static entries of `mac`; returns how many.
    pub(crate) fn unpin_mac(&mut self, mac: Mac) -> usize {
        self.remove_where(|n| n.mac == mac && matches!(n.origin, NeighOrigin::Static { .. }))
    }

    /// Removes every static entry; returns how many.
    pub(crate) fn unpin_all(&mut self) -> usize {
        self.remove_where(|n| matches!(n.origin, NeighOrigin::Static { .. }))
    }

    /// The static entries' addresses of `mac`.
    pub(crate) fn pinned(&self, mac: Mac) -> impl Iterator<Item = IpAddr> + '_ {
        self.entries
            .iter()
            .filter(move |(_, n)| n.mac == mac && matches!(n.origin, NeighOrigin::Static { .. }))
            .map(|(&ip, _)| ip)
    }

    fn put(
        &mut self,
        ip: IpAddr,
        mac: Mac,
        origin: NeighOrigin,
        max: usize,
    ) -> Result<Option<Neighbor>, NeighRefused> {
        match self.entries.get(&ip) {
            Some(n) if matches!(n.origin, NeighOrigin::Static { .. }) => {
                return Err(NeighRefused::Static(n.mac))
            }
            None if self.entries.len() >= max => return Err(NeighRefused::Full),
            _ => {}
        }
        self.generation += 1;
        Ok(self.entries.insert(ip, Neighbor { mac, origin }))
    }

    /// Removes the entry for `ip` if it is an EVPN one. Returns whether there was one.
    pub(crate) fn remove_evpn(&mut self, ip: IpAddr) -> bool {
        if !matches!(self.entries.get(&ip), Some(n) if n.origin == NeighOrigin::Evpn) {
            return false;
        }
        self.entries.remove(&ip);
        self.generation += 1;
        true
    }

    /// Removes the entries snooped on `port`; returns how many.
    pub(crate) fn remove_port(&mut self, port: PortId) -> usize {
        self.remove_where(|n| n.port() == Some(port))
    }

    /// Removes the local entries not seen for longer than `ageing`; returns how many.
    pub(crate) fn age(&mut self, now: Instant, ageing: Duration) -> usize {
        self.remove_where(|n| match n.origin {
            NeighOrigin::Evpn | NeighOrigin::Static { .. } => false,
            NeighOrigin::Local { last_seen, .. } => {
                now.saturating_duration_since(last_seen) > ageing
            }
        })
    }

    /// Every snooped entry: (IP, MAC).
    pub(crate) fn local(&self) -> impl Iterator<Item = (IpAddr, Mac)> + '_ {
        self.entries
            .iter()
            .filter(|(_, n)| n.port().is_some())
            .map(|(&ip, n)| (ip, n.mac))
    }

    /// How many entries the table holds, installed and snooped.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    fn remove_where(&mut self, mut doomed: impl FnMut(&Neighbor) -> bool) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, n| !doomed(n));
        let removed = before - self.entries.len();
        if removed > 0 {
            self.generation += 1;
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
    const B: Mac = Mac([2, 0, 0, 0, 0, 0xb]);
    const P1: PortId = PortId(1);
    const P2: PortId = PortId(2);

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_generation_moves_with_every_change_but_a_refresh() {
        let mut t = Neighbors::default();
        let now = Instant::now();
        let g0 = t.generation();
        t.snoop(ip("10.0.0.1"), A, P1, now, 8);
        let g1 = t.generation();
        assert_ne!(g0, g1);
        t.snoop(ip("10.0.0.1"), A, P1, now, 8); // refreshed
        assert_eq!(t.generation(), g1);
        t.snoop(ip("10.0.0.1"), A, P2, now, 8); // moved
        let g2 = t.generation();
        assert_ne!(g1, g2);
        t.set_evpn(ip("10.0.0.2"), B, 8).unwrap();
        let g3 = t.generation();
        assert_ne!(g2, g3);
        assert_eq!(t.remove_port(PortId(9)), 0);
        assert_eq!(t.generation(), g3);
        assert!(t.remove_evpn(ip("10.0.0.2")));
        assert_ne!(t.generation(), g3);
        let mut seen: Vec<_> = t.entries().collect();
        seen.sort();
        assert_eq!(seen, vec![(ip("10.0.0.1"), A, Some(P2))]);
    }

    #[test]
    fn snoop_new_refresh_change_limit() {
        let t0 = Instant::now();
        let mut n = Neighbors::default();
        assert_eq!(n.snoop(ip("10.0.0.1"), A, P1, t0, 1), Snooped::Changed);
        assert_eq!(n.snoop(ip("10.0.0.1"), A, P1, t0, 1), Snooped::Refreshed);
        assert_eq!(n.snoop(ip("10.0.0.1"), A, P2, t0, 1), Snooped::Changed);
        assert_eq!(n.snoop(ip("10.0.0.1"), B, P2, t0, 1), Snooped::Changed);
        assert_eq!(n.snoop(ip("fd00::1"), A, P1, t0, 1), Snooped::Limit);
        assert_eq!(n.lookup(ip("10.0.0.1")).unwrap().mac, B);
        assert_eq!(n.lookup(ip("fd00::1")), None);
    }

    #[test]
    fn evpn_and_local_replace_each_other_and_only_local_ages() {
        let t0 = Instant::now();
        let ageing = Duration::from_secs(300);
        let mut n = Neighbors::default();
        assert_eq!(n.set_evpn(ip("10.0.0.1"), A, 2), Ok(None));
        // Seen on a local port: the address moved here.
        assert_eq!(n.snoop(ip("10.0.0.1"), A, P1, t0, 2), Snooped::Changed);
        assert_eq!(n.lookup(ip("10.0.0.1")).unwrap().port(), Some(P1));
        // The control plane says it is elsewhere now.
        let replaced = n.set_evpn(ip("10.0.0.1"), B, 2).unwrap().unwrap();
        assert_eq!(replaced.port(), Some(P1));
        n.snoop(ip("10.0.0.2"), A, P1, t0, 2);
        assert_eq!(n.set_evpn(ip("10.0.0.3"), B, 2), Err(NeighRefused::Full));
        // remove_evpn leaves the local entry alone.
        assert!(!n.remove_evpn(ip("10.0.0.2")));
        assert_eq!(n.age(t0 + ageing, ageing), 0);
        assert_eq!(n.age(t0 + ageing + Duration::from_secs(1), ageing), 1);
        assert_eq!(n.len(), 1);
        assert!(n.remove_evpn(ip("10.0.0.1")));
        assert_eq!(n.len(), 0);
    }

    #[test]
    fn static_entries_hold_against_snooping_evpn_and_ageing() {
        let t0 = Instant::now();
        let ageing = Duration::from_secs(300);
        let mut n = Neighbors::default();
        n.snoop(ip("10.0.0.1"), B, P2, t0, 2);
        // Pinning replaces a snooped entry, even at the limit.
        assert!(n.pin(ip("10.0.0.1"), A, P1, 1).unwrap().is_some());
        assert_eq!(n.snoop(ip("10.0.0.1"), B, P2, t0, 2), Snooped::Refreshed);
        assert_eq!(
            n.set_evpn(ip("10.0.0.1"), B, 2),
            Err(NeighRefused::Static(A))
        );
        assert!(!n.remove_evpn(ip("10.0.0.1")));
        assert_eq!(n.age(t0 + 2 * ageing, ageing), 0);
        let e = n.lookup(ip("10.0.0.1")).unwrap();
        assert_eq!((e.mac, e.port()), (A, Some(P1)));
        assert_eq!(n.pinned(A).collect::<Vec<_>>(), vec![ip("10.0.0.1")]);
        assert_eq!(
            n.local().count(),
            1,
            "static entries are local hosts' addresses too"
        );
        assert_eq!(n.unpin_mac(B), 0);
        assert_eq!(n.unpin_mac(A), 1);
        assert_eq!(n.len(), 0);
    }

    #[test]
    fn remove_port_takes_only_its_entries() {
        let t0 = Instant::now();
        let mut n = Neighbors::default();
        n.snoop(ip("10.0.0.1"), A, P1, t0, 8);
        n.snoop(ip("10.0.0.2"), B, P2, t0, 8);
        n.set_evpn(ip("10.0.0.3"), B, 8).unwrap();
        assert_eq!(n.remove_port(P1), 1);
        let mut local: Vec<_> = n.local().collect();
        local.sort();
        assert_eq!(local, vec![(ip("10.0.0.2"), B)]);
    }
}
