//! What the EVPN control plane (nvod's BGP speaker, docs/design/evpn.md) does with the data
//! plane: install remote MACs, IP → MAC bindings, flood-list entries and the identities routes
//! give remote addresses in batches
//! ([`Pipeline::evpn_apply`]), switch ARP/ND suppression ([`Pipeline::set_arp_suppression`]),
//! and read the local hosts it advertises ([`Pipeline::local_hosts`]).
//!
//! A batch is not all-or-nothing: each change is applied on its own, so that one full table or
//! one refused entry does not hold back the rest; [`EvpnApplied`] counts both outcomes. Removals
//! and flood-list changes are idempotent: a route withdrawn for an entry that is gone already
//! (or was replaced by a local one: the MAC moved here) is not an error.
//!
//! The local hosts are read by polling: every change of the set bumps a generation number, and
//! [`Pipeline::local_hosts_since`] answers None while it has not moved.

use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

use crate::control::full;
use crate::fdb::EvpnRefused;
use crate::neigh::NeighRefused;
use crate::types::is_unicast_ip;
use crate::{FdbDest, Mac, Pipeline, PortId, TableError, Vni};

/// One change the EVPN control plane makes to the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EvpnChange {
    /// An EVPN FDB entry: `mac` is behind the VTEP `remote`. Replaces an EVPN or learned
    /// entry; refused over a static one ([`TableError::StaticHolds`]).
    FdbSet {
        /// The network.
        vni: Vni,
        /// The MAC.
        mac: Mac,
        /// The VTEP.
        remote: IpAddr,
    },
    /// Removes the MAC's entry if it is an EVPN one (a learned or static one stays).
    FdbRemove {
        /// The network.
        vni: Vni,
        /// The MAC.
        mac: Mac,
    },
    /// An EVPN neighbour: `ip` is at `mac`. Replaces any entry for `ip`.
    NeighSet {
        /// The network.
        vni: Vni,
        /// The address.
        ip: IpAddr,
        /// Its MAC.
        mac: Mac,
    },
    /// Removes the address's neighbour entry if it is an EVPN one.
    NeighRemove {
        /// The network.
        vni: Vni,
        /// The address.
        ip: IpAddr,
    },
    /// Adds a VTEP to the network's flood list (there already: fine).
    FloodAdd {
        /// The network.
        vni: Vni,
        /// The VTEP.
        remote: IpAddr,
    },
    /// Removes a VTEP from the network's flood list (not there: fine).
    FloodRemove {
        /// The network.
        vni: Vni,
        /// The VTEP.
        remote: IpAddr,
    },
    /// The identity (group policy ID) a route gives a remote address: the source identity of
    /// its packets where they carry none (a profile without a group field; issue 18).
    IdentitySet {
        /// The network.
        vni: Vni,
        /// The address.
        ip: IpAddr,
        /// Its group.
        group: u16,
    },
    /// Forgets the identity a route gave an address.
    IdentityRemove {
        /// The network.
        vni: Vni,
        /// The address.
        ip: IpAddr,
    },
}

/// What [`Pipeline::evpn_apply`] did with a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EvpnApplied {
    /// Changes applied (or that found the tables as they asked already).
    pub applied: usize,
    /// Changes refused; each changed nothing.
    pub refused: usize,
    /// Why the last refused change was refused.
    pub last_error: Option<TableError>,
}

/// The local hosts: what the EVPN speaker advertises.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct LocalHosts {
    /// The generation of the set: it increases on every change.
    pub generation: u64,
    /// Every local MAC, sorted by (vni, mac).
    pub hosts: Vec<LocalHost>,
}

/// A MAC whose FDB entry points at a local port (learned or static), with the IPs snooped for
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct LocalHost {
    /// The network.
    pub vni: Vni,
    /// The MAC.
    pub mac: Mac,
    /// The port it is behind.
    pub port: PortId,
    /// The port's identity (group policy ID) under the network's policy; 0: none.
    pub group: u16,
    /// The addresses snooped for the MAC (ARP, NS, NA), sorted; IPv6 link-local addresses are
    /// left out, as FRR leaves them out of its type 2 routes: they name a host on one link only.
    pub ips: Vec<IpAddr>,
}

/// One IPv4 neighbour ARP suppression answers for: its address, MAC, and the local port it
/// lives behind (None: elsewhere).
pub type ArpNeighbor = (Ipv4Addr, Mac, Option<PortId>);

impl Pipeline {
    /// Applies each change on its own (see the module documentation); an unknown network
    /// refuses a change.
    pub fn evpn_apply(&mut self, changes: &[EvpnChange]) -> EvpnApplied {
        let mut done = EvpnApplied::default();
        for change in changes {
            match self.evpn_change(change) {
                Ok(()) => done.applied += 1,
                Err(e) => {
                    done.refused += 1;
                    done.last_error = Some(e);
                }
            }
        }
        done
    }

    /// Switches ARP/ND suppression of a network (off when a network is created).
    pub fn set_arp_suppression(&mut self, vni: Vni, on: bool) -> Result<(), TableError> {
        self.network_mut(vni)?.suppress = on;
        Ok(())
    }

    /// The IPv4 neighbours ARP suppression answers for in network `vni` — (address, MAC,
    /// the local port it lives behind) — with the table's generation, which changes whenever
    /// an entry does; None for an unknown network or one that does not suppress. What a
    /// datapath that answers ARP itself mirrors (the kernel path).
    pub fn arp_neighbors(&self, vni: Vni) -> Option<(u64, Vec<ArpNeighbor>)> {
        let net = self.network_ref(vni).ok()?;
        if !net.suppress {
            return None;
        }
        let entries = net
            .neigh
            .entries()
            .filter_map(|(ip, mac, port)| match ip {
                IpAddr::V4(v4) => Some((v4, mac, port)),
                IpAddr::V6(_) => None,
            })
            .collect();
        Some((net.neigh.generation(), entries))
    }

    /// The generation of ARP suppression's neighbour table of `vni` (see
    /// [`Pipeline::arp_neighbors`]); None when the network does not suppress.
    pub fn arp_neighbors_generation(&self, vni: Vni) -> Option<u64> {
        let net = self.network_ref(vni).ok()?;
        net.suppress.then(|| net.neigh.generation())
    }

    /// The generation of the set of local hosts, as [`LocalHosts::generation`] reports it.
    pub fn hosts_generation(&self) -> u64 {
        self.hosts_generation
    }

    /// Every local host of every network. The generation starts at 1, so that a poller that
    /// starts from 0 gets the first set.
    pub fn local_hosts(&self) -> LocalHosts {
        let mut hosts = Vec::new();
        for (&vni, net) in &self.networks {
            let start = hosts.len();
            let policy = &self.policy;
            hosts.extend(net.fdb.local().map(|(mac, port)| LocalHost {
                vni,
                mac,
                port,
                group: policy.port_group(vni, port),
                ips: Vec::new(),
            }));
            let these = &mut hosts[start..];
            these.sort_unstable_by_key(|h| h.mac);
            for (ip, mac) in net.neigh.local().filter(|&(ip, _)| advertised(ip)) {
                if let Ok(at) = these.binary_search_by_key(&mac, |h| h.mac) {
                    these[at].ips.push(ip);
                }
            }
            these.iter_mut().for_each(|h| h.ips.sort_unstable());
            if net.l3.ila {
                hosts.extend(ila_hosts(vni, net, |port| policy.port_group(vni, port)));
            }
        }
        hosts.sort_unstable_by_key(|h| (h.vni, h.mac));
        LocalHosts {
            generation: self.hosts_generation,
            hosts,
        }
    }

    /// The local hosts if the set changed since generation `since`, else None.
    pub fn local_hosts_since(&self, since: u64) -> Option<LocalHosts> {
        (since != self.hosts_generation).then(|| self.local_hosts())
    }

    fn evpn_change(&mut self, change: &EvpnChange) -> Result<(), TableError> {
        match *change {
            EvpnChange::FdbSet { vni, mac, remote } => self.evpn_fdb_set(vni, mac, remote),
            EvpnChange::FdbRemove { vni, mac } => {
                self.network_mut(vni)?.fdb.remove_evpn(mac);
                Ok(())
            }
            EvpnChange::NeighSet { vni, ip, mac } => self.evpn_neigh_set(vni, ip, mac),
            EvpnChange::NeighRemove { vni, ip } => {
                self.network_mut(vni)?.neigh.remove_evpn(ip);
                Ok(())
            }
            EvpnChange::FloodAdd { vni, remote } => match self.flood_add(vni, remote) {
                Err(TableError::FloodExists { .. }) => Ok(()),
                other => other,
            },
            EvpnChange::FloodRemove { vni, remote } => match self.flood_remove(vni, remote) {
                Err(TableError::NoSuchFlood { .. }) => Ok(()),
                other => other,
            },
            EvpnChange::IdentitySet { vni, ip, group } => {
                self.network_ref(vni)?;
                self.policy.evpn_identity(vni, ip, Some(group))
            }
            EvpnChange::IdentityRemove { vni, ip } => self.policy.evpn_identity(vni, ip, None),
        }
    }

    fn evpn_fdb_set(&mut self, vni: Vni, mac: Mac, remote: IpAddr) -> Result<(), TableError> {
        let limit = self.limits.max_evpn_fdb;
        let net = self.network_mut(vni)?;
        if !mac.is_unicast() {
            return Err(TableError::InvalidMac(mac));
        }
        if !is_unicast_ip(remote) {
            return Err(TableError::InvalidRemote(remote));
        }
        let set = net.fdb.set_evpn(mac, remote, limit);
        // On an ILA network the MAC's local neighbours go as a learned FDB entry would: the
        // container moved to the route's host (a higher sequence won), so this host stops
        // advertising it and reaches it by ILA like any remote one.
        let moved_away = set.is_ok() && net.l3.ila && net.l3.forget_mac(mac);
        match set {
            Ok(Some(FdbDest::Port(_))) => self.hosts_generation += 1,
            Ok(_) if moved_away => self.hosts_generation += 1,
            Ok(_) => {}
            Err(EvpnRefused::Static) => return Err(TableError::StaticHolds { vni, mac }),
            Err(EvpnRefused::Full) => return Err(full("evpn fdb", limit)),
        }
        Ok(())
    }

    fn evpn_neigh_set(&mut self, vni: Vni, ip: IpAddr, mac: Mac) -> Result<(), TableError> {
        let limit = self.limits.max_neighbors;
        let net = self.network_mut(vni)?;
        if !is_unicast_ip(ip) {
            return Err(TableError::InvalidNeighbor(ip));
        }
        if !mac.is_unicast() {
            return Err(TableError::InvalidMac(mac));
        }
        match net.neigh.set_evpn(ip, mac, limit) {
            Ok(Some(replaced)) if replaced.port().is_some() => self.hosts_generation += 1,
            Ok(_) => {}
            Err(NeighRefused::Static(mac)) => return Err(TableError::StaticHolds { vni, mac }),
            Err(NeighRefused::Full) => return Err(full("neighbor", limit)),
        }
        Ok(())
    }
}

/// An ILA network's local hosts: the neighbours its containers announced (an L3 network
/// learns no MACs in its FDB), one per MAC with the addresses it announced. A MAC with no
/// advertised address (only link-local ones) is left out: a MAC-only route maps no SIR
/// address. ILA needs no tunnel learning, so these are what EVPN maps identifiers with
/// (docs/ila.md, "Mappings").
fn ila_hosts(
    vni: Vni,
    net: &crate::network::Network,
    group: impl Fn(PortId) -> u16,
) -> Vec<LocalHost> {
    let mut by_mac: std::collections::BTreeMap<Mac, LocalHost> = std::collections::BTreeMap::new();
    for (&ip, &(port, mac)) in net.l3.neighbours.iter().filter(|(&ip, _)| advertised(ip)) {
        let host = by_mac.entry(mac).or_insert_with(|| LocalHost {
            vni,
            mac,
            port,
            group: group(port),
            ips: Vec::new(),
        });
        host.ips.push(ip);
    }
    by_mac
        .into_values()
        .map(|mut h| {
            h.ips.sort_unstable();
            h
        })
        .collect()
}

/// Whether a snooped address goes into the local hosts: not an IPv6 link-local one.
fn advertised(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(_) => true,
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 != 0xfe80,
    }
}
