//! The control operations on the pipeline's tables, called on the datapath thread between
//! batches when the control thread sends a command.
//!
//! Each operation either succeeds or returns a [`TableError`] having changed nothing: every check
//! runs before the first write.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::counters::{Counters, PortCounters, TxOutcome, TxTarget};
use crate::fdb_events::{FdbChange, FdbEvent};
use crate::network::{Network, NetworkView};
use crate::pipeline::{count_drop, Port};
use crate::types::is_unicast_ip;
use crate::vlan::{self, Circuit, Trunk};
use crate::{
    BumMode, DropReason, FdbDest, FdbView, FlushScope, Mac, NetworkSpec, Pipeline, PortId,
    TableError, Vni,
};

impl Pipeline {
    /// Creates a network. Refused for an invalid spec, an existing VNI or a full table.
    pub fn add_network(&mut self, spec: NetworkSpec) -> Result<(), TableError> {
        validate(&spec, self.limits.max_learned_fdb)?;
        if self.networks.contains_key(&spec.vni) {
            return Err(TableError::NetworkExists(spec.vni));
        }
        if self.networks.len() >= self.limits.max_networks {
            return Err(full("networks", self.limits.max_networks));
        }
        let mut net = Network::new(spec);
        if self.fdb_journal {
            net.fdb.journal = Some(Default::default());
        }
        self.networks.insert(spec.vni, net);
        Ok(())
    }

    /// Removes a network with its FDB, flood list and counters. Refused while ports are attached.
    pub fn remove_network(&mut self, vni: Vni) -> Result<(), TableError> {
        let net = self.network_ref(vni)?;
        if !net.ports.is_empty() {
            return Err(TableError::NetworkHasPorts {
                vni,
                ports: net.ports.len(),
            });
        }
        self.networks.remove(&vni);
        self.policy.forget_network(vni);
        Ok(())
    }

    /// Attaches a port to a network.
    pub fn add_port(&mut self, port: PortId, vni: Vni) -> Result<(), TableError> {
        if let Some(p) = self.ports.get(&port) {
            return Err(TableError::PortExists { port, vni: p.vni });
        }
        if let Some(t) = self.trunks.get(&port) {
            let vni = t.circuits.first().map_or(vni, |c| c.vni);
            return Err(TableError::PortExists { port, vni });
        }
        if self.is_shared(port) {
            return Err(TableError::PortExists { port, vni: Vni(0) });
        }
        if self.ports.len() >= self.limits.max_ports {
            return Err(full("ports", self.limits.max_ports));
        }
        self.network_mut(vni)?.ports.push(port);
        self.ports.insert(
            port,
            Port {
                vni,
                counters: PortCounters::default(),
            },
        );
        Ok(())
    }

    /// Detaches a port, removing every FDB entry (static or learned) that points at it and
    /// every neighbour snooped on it.
    pub fn remove_port(&mut self, port: PortId) -> Result<(), TableError> {
        let p = self
            .ports
            .remove(&port)
            .ok_or(TableError::NoSuchPort(port))?;
        // A trunk's circuit taken away on its own: its VLAN is no longer mapped.
        for t in self.trunks.values_mut() {
            t.by_vid.retain(|_, &mut q| q != port);
            t.circuits.retain(|c| c.port != port);
        }
        self.policers.remove(&port);
        if let Some(net) = self.networks.get_mut(&p.vni) {
            net.ports.retain(|&q| q != port);
            net.fdb.remove_port(port);
            net.neigh.remove_port(port);
            net.l3.forget_port(port);
        }
        self.policy.forget_port(port);
        self.hosts_generation += 1;
        Ok(())
    }

    /// Whether network `vni` has an identity policy (its traffic must go through this pipeline).
    pub fn has_policy(&self, vni: Vni) -> bool {
        self.policy.enforced(vni)
    }

    /// Runs a policy operation (issue 18; policy.rs): set or remove a network's policy, label
    /// a port or an address, read counters, trace.
    pub fn policy_command(
        &mut self,
        command: crate::policy::PolicyCommand,
    ) -> Result<crate::policy::PolicyReply, TableError> {
        use crate::policy::PolicyCommand as C;
        match &command {
            C::Set(vni, ..) | C::LabelAddr(vni, ..) | C::Show(vni) | C::Trace(vni, _) => {
                self.network_ref(*vni)?;
            }
            C::Remove(_) | C::LabelPort(..) => {}
        }
        let (ports, networks) = (&self.ports, &self.networks);
        let port_vni = |p: PortId| ports.get(&p).map(|p| p.vni);
        let local_port = |vni: Vni, ip: IpAddr| {
            let net = networks.get(&vni)?;
            let mac = net.neigh.lookup(ip)?.mac;
            match net.fdb.lookup(mac) {
                Some(FdbDest::Port(p)) => Some(p),
                _ => None,
            }
        };
        let changes = !command.is_read();
        let reply = self.policy.command(command, port_vni, local_port);
        if changes {
            // A port's identity may have changed: the local hosts EVPN advertises with it.
            self.hosts_generation += 1;
        }
        reply
    }

    /// Makes interface `trunk` a VLAN trunk of outer tag `tpid` whose circuits (one port per
    /// VLAN, each attached to its network as by `add_port`) are `circuits`; all or nothing.
    /// See vlan.rs for what is refused.
    pub fn add_trunk(
        &mut self,
        trunk: PortId,
        tpid: u16,
        circuits: &[Circuit],
    ) -> Result<(), TableError> {
        vlan::check_trunk(tpid, circuits)?;
        if self.trunks.contains_key(&trunk) || circuits.iter().any(|c| c.port == trunk) {
            let vni = circuits.first().map_or(Vni(0), |c| c.vni);
            return Err(TableError::PortExists { port: trunk, vni });
        }
        if let Some(p) = self.ports.get(&trunk) {
            return Err(TableError::PortExists {
                port: trunk,
                vni: p.vni,
            });
        }
        for (i, c) in circuits.iter().enumerate() {
            let added = if self.trunks.contains_key(&c.port) {
                Err(TableError::PortExists {
                    port: c.port,
                    vni: c.vni,
                })
            } else {
                self.add_port(c.port, c.vni)
            };
            if let Err(e) = added {
                for done in &circuits[..i] {
                    let _ = self.remove_port(done.port);
                }
                return Err(e);
            }
        }
        self.trunks.insert(
            trunk,
            Trunk {
                tpid,
                by_vid: circuits.iter().map(|c| (c.vid, c.port)).collect(),
                circuits: circuits.to_vec(),
                counters: PortCounters::default(),
            },
        );
        Ok(())
    }

    /// Removes trunk `trunk` and its circuits (as `remove_port` does each).
    pub fn remove_trunk(&mut self, trunk: PortId) -> Result<(), TableError> {
        let t = self
            .trunks
            .remove(&trunk)
            .ok_or(TableError::NoSuchPort(trunk))?;
        for c in &t.circuits {
            let _ = self.remove_port(c.port);
        }
        Ok(())
    }

    /// The outer TPID and the circuits of trunk `trunk`.
    pub fn trunk(&self, trunk: PortId) -> Option<(u16, &[Circuit])> {
        self.trunks
            .get(&trunk)
            .map(|t| (t.tpid, t.circuits.as_slice()))
    }

    /// Adds (or replaces) a route of an L3 network: `prefix/len` (IPv4 or IPv6) → `remote`.
    pub fn route_add(
        &mut self,
        vni: Vni,
        prefix: IpAddr,
        len: u8,
        remote: IpAddr,
    ) -> Result<(), TableError> {
        let net = self.network_mut(vni)?;
        if net.spec.l3_gateway.is_none() {
            return Err(TableError::NotL3(vni));
        }
        if crate::l3::prefix_of(prefix, len) != Some(prefix) {
            return Err(TableError::InvalidPrefix { prefix, len });
        }
        if !is_unicast_ip(remote) {
            return Err(TableError::InvalidRemote(remote));
        }
        // An ILA network's routes are identifier → locator mappings: an IPv6 or IPv4 (l3::ila4)
        // prefix, an IPv6 remote.
        if net.l3.ila && !remote.is_ipv6() {
            return Err(TableError::InvalidRemote(remote));
        }
        if let (IpAddr::V6(p), 64..) = (prefix, len) {
            net.l3.note_sir_prefix(p);
        }
        let routes = &mut net.l3.routes;
        if let Some(r) = routes
            .iter_mut()
            .find(|r| r.prefix == prefix && r.len == len)
        {
            r.remote = remote;
            return Ok(());
        }
        if routes.len() >= crate::l3::MAX_ROUTES {
            return Err(full("route", crate::l3::MAX_ROUTES));
        }
        routes.push(crate::l3::Route {
            prefix,
            len,
            remote,
        });
        Ok(())
    }

    /// Removes a route of an L3 network.
    pub fn route_remove(&mut self, vni: Vni, prefix: IpAddr, len: u8) -> Result<(), TableError> {
        let net = self.network_mut(vni)?;
        let before = net.l3.routes.len();
        net.l3
            .routes
            .retain(|r| !(r.prefix == prefix && r.len == len));
        if net.l3.routes.len() == before {
            return Err(TableError::NoSuchRoute { vni, prefix, len });
        }
        Ok(())
    }

    /// The network a port is attached to.
    pub fn port_network(&self, port: PortId) -> Option<Vni> {
        self.ports.get(&port).map(|p| p.vni)
    }

    /// Adds a static FDB entry, or replaces the entry (static, learned or EVPN) the MAC already
    /// has: the operator wins over the control plane.
    /// The MAC must be unicast; a port must belong to the network; a remote must be unicast; a
    /// node must not be 0.
    pub fn fdb_add_static(&mut self, vni: Vni, mac: Mac, dest: FdbDest) -> Result<(), TableError> {
        self.network_ref(vni)?;
        if !mac.is_unicast() {
            return Err(TableError::InvalidMac(mac));
        }
        match dest {
            FdbDest::Port(port) => {
                let p = self.ports.get(&port).ok_or(TableError::NoSuchPort(port))?;
                if p.vni != vni {
                    return Err(TableError::PortInOtherNetwork {
                        port,
                        vni,
                        port_vni: p.vni,
                    });
                }
            }
            FdbDest::Remote(remote) if !is_unicast_ip(remote) => {
                return Err(TableError::InvalidRemote(remote));
            }
            FdbDest::Remote(_) => {}
            FdbDest::Node(node) if !node.is_valid() => return Err(TableError::InvalidNode(node)),
            FdbDest::Node(_) => {}
        }
        let limit = self.limits.max_static_fdb;
        let net = self.network_mut(vni)?;
        if !net.fdb.add_static(mac, dest, limit) {
            return Err(full("static fdb", limit));
        }
        // Addresses pinned to the MAC's previous entry go with it.
        net.neigh.unpin_mac(mac);
        // It may have made a MAC local, or one local MAC remote: the poller reads again.
        self.hosts_generation += 1;
        Ok(())
    }

    /// A static FDB entry for a host behind a local port, with the addresses that belong to it
    /// (static neighbour entries: answered by ARP/ND suppression, advertised by EVPN before
    /// the host has said a word). Replaces the MAC's previous entry and addresses; all or
    /// nothing.
    pub fn fdb_add_static_host(
        &mut self,
        vni: Vni,
        mac: Mac,
        port: PortId,
        ips: &[IpAddr],
    ) -> Result<(), TableError> {
        if let Some(&bad) = ips.iter().find(|&&ip| !is_unicast_ip(ip)) {
            return Err(TableError::InvalidNeighbor(bad));
        }
        let limit = self.limits.max_neighbors;
        let net = self.network_ref(vni)?;
        let new = ips
            .iter()
            .filter(|&&ip| net.neigh.lookup(ip).is_none())
            .count();
        if net.neigh.len() + new > limit {
            return Err(full("neighbor", limit));
        }
        self.fdb_add_static(vni, mac, FdbDest::Port(port))?;
        let net = self.network_mut(vni)?;
        for &ip in ips {
            // Room was checked above; a refusal here would be a bug, reported as a full table.
            net.neigh
                .pin(ip, mac, port, limit)
                .map_err(|_| full("neighbor", limit))?;
        }
        Ok(())
    }

    /// The addresses pinned to a MAC by [`Pipeline::fdb_add_static_host`], sorted.
    pub fn fdb_host_ips(&self, vni: Vni, mac: Mac) -> Result<Vec<IpAddr>, TableError> {
        let mut ips: Vec<IpAddr> = self.network_ref(vni)?.neigh.pinned(mac).collect();
        ips.sort_unstable();
        Ok(ips)
    }

    /// Removes the FDB entry for a MAC, static, learned or EVPN (and the addresses pinned to
    /// it).
    pub fn fdb_remove(&mut self, vni: Vni, mac: Mac) -> Result<(), TableError> {
        let net = self.network_mut(vni)?;
        let pinned = net.neigh.unpin_mac(mac);
        match net.fdb.remove(mac) {
            Some(FdbDest::Port(_)) => self.hosts_generation += 1,
            Some(_) if pinned > 0 => self.hosts_generation += 1,
            Some(_) => {}
            None => return Err(TableError::NoSuchEntry { vni, mac }),
        }
        Ok(())
    }

    /// Removes the learned, or all (EVPN ones included), FDB entries of a network; returns how
    /// many.
    pub fn fdb_flush(&mut self, vni: Vni, scope: FlushScope) -> Result<usize, TableError> {
        let net = self.network_mut(vni)?;
        let removed = net.fdb.flush(scope);
        if scope == FlushScope::All {
            net.neigh.unpin_all();
        }
        if removed.local {
            self.hosts_generation += 1;
        }
        Ok(removed.count)
    }

    /// Every FDB entry of a network, sorted by MAC, with ages as of `now`.
    pub fn fdb_entries(&self, vni: Vni, now: Instant) -> Result<Vec<FdbView>, TableError> {
        Ok(self.network_ref(vni)?.fdb.views(now))
    }

    /// Adds a remote VTEP to a network's head-end replication list.
    pub fn flood_add(&mut self, vni: Vni, remote: IpAddr) -> Result<(), TableError> {
        let limit = self.limits.max_flood;
        let net = self.network_mut(vni)?;
        if !is_unicast_ip(remote) {
            return Err(TableError::InvalidRemote(remote));
        }
        if net.flood.contains(&remote) {
            return Err(TableError::FloodExists { vni, remote });
        }
        if net.flood.len() >= limit {
            return Err(full("flood list", limit));
        }
        net.flood.push(remote);
        Ok(())
    }

    /// Removes a remote from a network's flood list. FDB entries pointing at it stay.
    pub fn flood_remove(&mut self, vni: Vni, remote: IpAddr) -> Result<(), TableError> {
        let net = self.network_mut(vni)?;
        let at = net.flood.iter().position(|&r| r == remote);
        let at = at.ok_or(TableError::NoSuchFlood { vni, remote })?;
        net.flood.remove(at);
        Ok(())
    }

    /// A network's flood list, in the order remotes were added.
    pub fn flood_list(&self, vni: Vni) -> Result<Vec<IpAddr>, TableError> {
        Ok(self.network_ref(vni)?.flood.clone())
    }

    /// Removes, in every network, the learned FDB entries and the snooped neighbours idle for
    /// longer than the network's ageing time as of `now`; returns how many FDB entries. The
    /// datapath calls this from its timer, about once a second.
    pub fn age(&mut self, now: Instant) -> usize {
        self.policy.expire(now);
        let mut total = 0;
        let events = &mut self.fdb_events;
        for net in self.networks.values_mut() {
            let vni = net.spec.vni;
            let aged = if events.on {
                let mut note = |mac, dest| {
                    events.push(FdbEvent {
                        vni,
                        mac,
                        dest,
                        change: FdbChange::Aged,
                    })
                };
                net.fdb.age(now, net.spec.ageing, Some(&mut note))
            } else {
                net.fdb.age(now, net.spec.ageing, None)
            };
            let neighbors = net.neigh.age(now, net.spec.ageing);
            net.counters.aged += aged.count as u64;
            total += aged.count;
            if aged.local || neighbors > 0 {
                self.hosts_generation += 1;
            }
        }
        total
    }

    /// The tenant MTU of network `vni`: what the datapath needs per frame, without building a
    /// view (whose flow-table coverage is a scan of the rules).
    pub fn network_mtu(&self, vni: Vni) -> Option<u16> {
        self.networks.get(&vni).map(|n| n.spec.mtu)
    }

    /// One network as the API shows it.
    pub fn network(&self, vni: Vni) -> Result<NetworkView, TableError> {
        let mut view = self.network_ref(vni)?.view();
        view.policy = self.policy.enforced(vni);
        view.policy_shape = self.policy.shape(vni);
        view.tunnel_flows = self.tunnel_covers(vni);
        Ok(view)
    }

    /// Every network, sorted by VNI.
    pub fn networks(&self) -> Vec<NetworkView> {
        let cover = self.has_flows().then(|| self.tunnel_cover());
        let mut views: Vec<NetworkView> = self
            .networks
            .values()
            .map(|n| {
                let mut view = n.view();
                view.policy = self.policy.enforced(view.vni);
                view.policy_shape = self.policy.shape(view.vni);
                view.tunnel_flows = cover.as_ref().is_some_and(|c| c.covers(view.vni));
                view
            })
            .collect();
        views.sort_unstable_by_key(|v| v.vni);
        views
    }

    /// A snapshot of every counter.
    pub fn counters(&self) -> Counters {
        Counters {
            drops: self.drops,
            networks: self
                .networks
                .iter()
                .map(|(&v, n)| (v, n.counters))
                .collect(),
            ports: self
                .ports
                .iter()
                .map(|(&p, q)| (p, q.counters))
                .chain(self.trunks.iter().map(|(&p, t)| (p, t.counters)))
                .chain(self.vports.ports.iter().map(|(&p, s)| (p, s.counters)))
                .collect(),
            underlay: self.underlay,
            remotes: self.remotes.snapshot(),
        }
    }

    /// How the datapath reports back on sending a frame of `len` bytes that an action asked for.
    /// A `Deliver` or `Reply` is reported with `TxTarget::Port`, an `Encap` with
    /// `TxTarget::Underlay` or, when the destination is known, `TxTarget::Remote` (`len` being
    /// what went on the wire). A failure is a drop with reason
    /// `tx_error` or `queue_full`, counted like every other drop; a port removed in the
    /// meantime only counts in the totals.
    pub fn count_tx(&mut self, target: TxTarget, len: usize, outcome: TxOutcome) {
        let reason = match outcome {
            TxOutcome::Sent => return self.count_sent(target, 1, len as u64),
            TxOutcome::Failed => DropReason::TxError,
            TxOutcome::QueueFull => DropReason::QueueFull,
        };
        match target {
            TxTarget::Port(id) => {
                let port = self.ports.get_mut(&id).map(|p| &mut p.counters);
                count_drop(&mut self.drops, port, reason);
            }
            TxTarget::Underlay | TxTarget::Remote(_) => {
                self.underlay.tx_errors += 1;
                count_drop(&mut self.drops, None, reason);
            }
        }
    }

    /// [`Self::count_tx`] for `packets` sent packets of `bytes` bytes in all at once (the
    /// segments the kernel cuts one large frame into), with one table lookup.
    pub fn count_sent(&mut self, target: TxTarget, packets: u64, bytes: u64) {
        match target {
            TxTarget::Port(id) => {
                if let Some(p) = self.ports.get_mut(&id) {
                    p.counters.tx_frames += packets;
                    p.counters.tx_bytes += bytes;
                }
            }
            TxTarget::Underlay | TxTarget::Remote(_) => {
                self.underlay.tx_packets += packets;
                self.underlay.tx_bytes += bytes;
                if let TxTarget::Remote(remote) = target {
                    if let Some(c) = self.remotes.get(remote) {
                        c.tx_packets += packets;
                        c.tx_bytes += bytes;
                    }
                }
            }
        }
    }

    pub(crate) fn network_ref(&self, vni: Vni) -> Result<&Network, TableError> {
        self.networks
            .get(&vni)
            .ok_or(TableError::NoSuchNetwork(vni))
    }

    pub(crate) fn network_mut(&mut self, vni: Vni) -> Result<&mut Network, TableError> {
        self.networks
            .get_mut(&vni)
            .ok_or(TableError::NoSuchNetwork(vni))
    }
}

/// Checks a spec on its own, before it touches any table.
fn validate(spec: &NetworkSpec, max_learned_fdb: u32) -> Result<(), TableError> {
    Vni::new(spec.vni.0)?;
    if !(NetworkSpec::MIN_MTU..=NetworkSpec::MAX_MTU).contains(&spec.mtu) {
        return Err(TableError::InvalidMtu {
            mtu: spec.mtu,
            min: NetworkSpec::MIN_MTU,
            max: NetworkSpec::MAX_MTU,
        });
    }
    if spec.ageing < Duration::from_secs(1) {
        return Err(TableError::InvalidAgeing(spec.ageing));
    }
    if spec.max_learned > max_learned_fdb {
        return Err(TableError::InvalidMaxLearned {
            requested: spec.max_learned,
            limit: max_learned_fdb,
        });
    }
    match spec.bum {
        BumMode::Multicast(group) if !group.is_multicast() => {
            return Err(TableError::InvalidGroup(group));
        }
        BumMode::Overlay(node) if !node.is_valid() => return Err(TableError::InvalidNode(node)),
        BumMode::HeadEnd | BumMode::Multicast(_) | BumMode::Overlay(_) => {}
    }
    Ok(())
}

pub(crate) fn full(table: &'static str, limit: usize) -> TableError {
    TableError::TableFull { table, limit }
}
