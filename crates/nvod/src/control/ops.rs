//! One method per API operation. Each change checks, then commits (see the module above); each
//! read answers from the desired state, asking the datapath only for what lives there (learned
//! entries, counts, interface status, counters).

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_api as api;
use nvo_pipeline::{FdbDest, FlushScope, Origin, PortId, Vni};

use super::{
    flush_scope, port_check, remote, unexpected, vlan, vni_of, vport, Control, Failure, Kind,
};
use crate::convert;
use crate::state::{PortState, StaticDest};
use nvo_datapath::{Command, Reply};

impl Control {
    /// `GET /v1/networks`.
    pub async fn networks(&self) -> Result<Vec<api::Network>, Failure> {
        let counts = self.fdb_counts().await?;
        Ok(self
            .state
            .networks
            .keys()
            .filter_map(|&vni| self.network_view(vni, &counts))
            .collect())
    }

    /// `GET /v1/networks/{vni}`.
    pub async fn network(&self, vni: &str) -> Result<api::Network, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let counts = self.fdb_counts().await?;
        self.network_view(vni.0, &counts)
            .ok_or_else(|| Failure::new(Kind::NotFound, format!("no network with vni {vni}")))
    }

    fn network_view(
        &self,
        vni: u32,
        counts: &BTreeMap<u32, (usize, usize)>,
    ) -> Option<api::Network> {
        let net = self.state.networks.get(&vni)?;
        let count = counts.get(&vni).copied().unwrap_or((0, net.fdb.len()));
        Some(convert::api_network(
            vni,
            net,
            self.state.ports_of(vni),
            count,
        ))
    }

    /// A network's flood list as the data path has it (the operator's and EVPN's entries).
    async fn datapath_flood(&self, vni: Vni) -> Result<Vec<IpAddr>, Failure> {
        match self.query(Command::Networks).await? {
            Reply::Networks(views) => Ok(views
                .into_iter()
                .find(|n| n.vni == vni)
                .map(|n| n.flood)
                .unwrap_or_default()),
            other => Err(unexpected(other)),
        }
    }

    /// (learned, static) FDB entry counts per network, from the tables.
    async fn fdb_counts(&self) -> Result<BTreeMap<u32, (usize, usize)>, Failure> {
        match self.query(Command::Networks).await? {
            Reply::Networks(views) => Ok(views
                .iter()
                .map(|n| (n.vni.0, (n.learned, n.static_entries)))
                .collect()),
            other => Err(unexpected(other)),
        }
    }

    /// `POST /v1/networks`.
    pub async fn create_network(
        &mut self,
        spec: api::NetworkSpec,
    ) -> Result<api::Network, Failure> {
        self.create_network_owned(spec, false).await
    }

    /// Creates a network; `cluster`: made by cluster mode (marked so in the state).
    pub(super) async fn create_network_owned(
        &mut self,
        spec: api::NetworkSpec,
        cluster: bool,
    ) -> Result<api::Network, Failure> {
        let mut net =
            convert::network_state(&spec, &self.config, &self.profiles, self.evpn_serves())?;
        net.cluster = cluster;
        let vni = Vni(spec.vni);
        if self.state.networks.contains_key(&vni.0) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "network {vni} already exists; delete it first (DELETE /v1/networks/{vni}) \
                     or choose another vni"
                ),
            ));
        }
        let mut new = self.state.clone();
        new.networks.insert(vni.0, net.clone());
        let command = convert::add_network(vni, &net);
        self.commit(new, command).await?;
        log::info!(
            "network {vni} created{}: encap {}, mtu {}, learning from ports {}, from tunnels {}, \
             bum by {}, flood list {:?}",
            if cluster { " from the cluster" } else { "" },
            net.encap,
            net.mtu,
            net.learns_ports(),
            net.learns_tunnels(),
            net.bum,
            net.flood
        );
        Ok(convert::api_network(vni.0, &net, Vec::new(), (0, 0)))
    }

    /// `DELETE /v1/networks/{vni}`.
    pub async fn delete_network(&mut self, vni: &str) -> Result<(), Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let ports = self.state.ports_of(vni.0);
        if !ports.is_empty() {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "network {vni} still has port(s) {} attached; delete them first \
                     (DELETE /v1/ports/NAME)",
                    ports.join(", ")
                ),
            ));
        }
        let bound = self.state.keys.iter().find_map(|(profile, keys)| {
            keys.iter()
                .find(|(_, t)| **t == crate::state::KeyTarget::Local(vni.0))
                .map(|(hex, _)| (profile.clone(), hex.clone()))
        });
        if let Some((profile, hex)) = bound {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "network {vni} is the target of key {hex} of profile {profile}; unbind it \
                     first (DELETE /v1/profiles/{profile}/keys/{hex})"
                ),
            ));
        }
        if self.state.policies.contains_key(&vni.0) {
            return Err(Failure::new(
                Kind::Conflict,
                format!("network {vni} has a policy; delete it first (nvo policy del {vni})"),
            ));
        }
        let mut new = self.state.clone();
        new.networks.remove(&vni.0);
        new.addr_labels.remove(&vni.0);
        self.commit(new, Command::RemoveNetwork(vni)).await?;
        log::info!("network {vni} deleted");
        Ok(())
    }

    /// `GET /v1/ports`.
    pub async fn ports(&self) -> Result<Vec<api::Port>, Failure> {
        let up: BTreeMap<PortId, bool> = match self.query(Command::PortsUp).await? {
            Reply::PortsUp(list) => list.into_iter().collect(),
            other => return Err(unexpected(other)),
        };
        Ok(self
            .state
            .ports
            .iter()
            .map(|(name, port)| api::Port {
                name: name.clone(),
                vni: port.vni,
                kind: convert::api_port_kind(port.kind),
                up: self
                    .port_ids
                    .get(name)
                    .and_then(|id| up.get(id))
                    .copied()
                    .unwrap_or(false),
                offloads: port.offloads,
                vlan: port.vlan.as_ref().map(vlan::api_vlan),
                shared: port.shared.as_ref().map(vport::api_shared),
                qos: port.qos.clone(),
                acl: self.state.acl_attached.get(name).cloned(),
            })
            .collect())
    }

    /// `POST /v1/ports`.
    pub async fn add_port(&mut self, spec: api::PortSpec) -> Result<api::Port, Failure> {
        convert::check_ifname(&spec.name)?;
        if [super::flows::TUNNEL, super::trace::UNDERLAY].contains(&spec.name.as_str()) {
            return Err(Failure::bad(format!(
                "port name {:?} is reserved (in_port=tunnel is the tunnel as a flow-table port; nvo trace underlay traces a frame from it); rename the interface",
                spec.name
            )));
        }
        let shared = self.port_shared(&spec)?;
        let (vni, vlan) = match shared {
            Some(_) => (0, None),
            None => self.port_vlan(&spec)?,
        };
        if vlan.is_none() && shared.is_none() {
            self.network_exists(Vni(vni))?;
        }
        if let Some(existing) = self.state.ports.get(&spec.name) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "port {} already exists (in network {}); delete it first (DELETE /v1/ports/{})",
                    spec.name, existing.vni, spec.name
                ),
            ));
        }
        if self.port_ids.contains_key(&spec.name) {
            return Err(Failure::new(
                Kind::Conflict,
                format!("{} names a vlan of a trunk; choose another name", spec.name),
            ));
        }
        let kind = convert::port_kind(spec.kind);
        let underlay = self.underlay_addresses();
        if let Some(why) = port_check::refusal(&spec.name, kind, &self.config.port_kinds, &underlay)
        {
            return Err(Failure::bad(why));
        }
        let port = PortState {
            vni,
            kind,
            offloads: spec.offloads,
            vlan,
            shared,
            qos: None,
        };
        let mut new = self.state.clone();
        new.ports.insert(spec.name.clone(), port.clone());
        let command = self.attach_command(&spec.name, &port, true);
        if let Err(e) = self.commit(new, command).await {
            self.forget_port_ids(&spec.name, Some(&port));
            return Err(e);
        }
        match &port.vlan {
            None if port.shared.is_some() => {
                log::info!("port {} ({kind}) added: shared, by source mac", spec.name)
            }
            Some(v) => log::info!(
                "port {} ({kind}) added: vlan → network {:?}, ethertype {:#06x}",
                spec.name,
                v.vlans,
                v.ethertype
            ),
            None => log::info!("port {} ({kind}) added to network {vni}", spec.name),
        }
        Ok(api::Port {
            name: spec.name,
            vni,
            kind: spec.kind,
            up: true,
            offloads: spec.offloads,
            vlan: port.vlan.as_ref().map(vlan::api_vlan),
            shared: port.shared.as_ref().map(vport::api_shared),
            qos: None,
            acl: None,
        })
    }

    /// `DELETE /v1/ports/{name}`.
    pub async fn delete_port(&mut self, name: &str) -> Result<(), Failure> {
        let (Some(port), Some(&id)) = (self.state.ports.get(name), self.port_ids.get(name)) else {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no port {name:?}; GET /v1/ports lists them"),
            ));
        };
        let vni = port.vni;
        let mut new = self.state.clone();
        new.forget_acls_of(name);
        new.ports.remove(name);
        new.port_labels.remove(name);
        // Static entries pointing at the port go with it, as the tables drop them too.
        if let Some(net) = new.networks.get_mut(&vni) {
            net.fdb
                .retain(|_, dest| !matches!(dest, StaticDest::Port(p) if p == name));
            let kept = &net.fdb;
            net.fdb_ips.retain(|mac, _| kept.contains_key(mac));
        }
        let stored = port.clone();
        self.commit(new, Command::RemovePort(id)).await?;
        // Flow rules of the port (its in_port) go with it too.
        self.forget_port_flows(name).await;
        self.forget_port_ids(name, Some(&stored));
        log::info!("port {name} removed from network {vni}");
        Ok(())
    }

    /// `GET /v1/networks/{vni}/fdb`.
    pub async fn fdb(&self, vni: &str) -> Result<Vec<api::FdbEntry>, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let entries = match self.query(Command::FdbEntries(vni)).await? {
            Reply::Entries(entries) => entries,
            other => return Err(unexpected(other)),
        };
        let host_ips = self.state.networks.get(&vni.0).map(|n| &n.fdb_ips);
        Ok(entries
            .into_iter()
            .map(|e| {
                let ips = match (e.origin, host_ips) {
                    (Origin::Static, Some(map)) => {
                        map.get(&e.mac.to_string()).cloned().unwrap_or_default()
                    }
                    _ => Vec::new(),
                };
                let (port, remote, node) = match e.dest {
                    FdbDest::Port(id) => (
                        Some(
                            self.port_name(id)
                                .map_or_else(|| id.to_string(), str::to_owned),
                        ),
                        None,
                        None,
                    ),
                    FdbDest::Remote(ip) => (None, Some(ip), None),
                    FdbDest::Node(n) => (None, None, Some(n.0)),
                };
                api::FdbEntry {
                    mac: e.mac.to_string(),
                    port,
                    remote,
                    node,
                    origin: match e.origin {
                        Origin::Static => api::Origin::Static,
                        Origin::Learned => api::Origin::Learned,
                        Origin::Evpn => api::Origin::Evpn,
                    },
                    age_s: e.age.as_secs(),
                    ips,
                }
            })
            .collect())
    }

    /// `POST /v1/networks/{vni}/fdb`.
    pub async fn fdb_add(&mut self, vni: &str, add: api::FdbAdd) -> Result<api::FdbEntry, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let mac = convert::parse_mac(&add.mac)?;
        if !mac.is_unicast() {
            return Err(Failure::bad(format!(
                "mac {mac} is not a unicast address; a static entry needs an individual, non-zero mac"
            )));
        }
        let key = mac.to_string();
        let (dest, stored) = match (&add.port, add.remote, add.node) {
            (None, None, Some(0)) => {
                return Err(Failure::bad(format!(
                    "fdb entry for {key}: node 0 is not a node"
                )))
            }
            (None, None, Some(n)) => (FdbDest::Node(nvo_pipeline::NodeId(n)), StaticDest::Node(n)),
            (Some(name), None, None) => match self.state.ports.get(name) {
                Some(p) if p.shared.is_some() => {
                    return Err(Failure::bad(format!(
                        "port {name} is a shared port; its macs are its virtual ports' \
                         (POST /v1/ports/{name}/vports), not static fdb entries"
                    )))
                }
                Some(p) if p.vlan.is_some() => {
                    return Err(Failure::bad(format!(
                        "port {name} is vlan-tagged; a static fdb entry cannot point at a \
                         tagged port yet (its macs are learned)"
                    )))
                }
                Some(p) if p.vni == vni.0 => {
                    let id =
                        self.port_ids.get(name).copied().ok_or_else(|| {
                            Failure::new(Kind::NotFound, format!("no port {name:?}"))
                        })?;
                    (FdbDest::Port(id), StaticDest::Port(name.clone()))
                }
                Some(p) => {
                    return Err(Failure::bad(format!(
                        "port {name} belongs to network {}, not {vni}; an fdb entry can only \
                         point at a port of its own network",
                        p.vni
                    )))
                }
                None => {
                    return Err(Failure::new(
                        Kind::NotFound,
                        format!("no port {name:?}; add it first (POST /v1/ports)"),
                    ))
                }
            },
            (None, Some(ip), None) => {
                let ip = remote(ip, &self.config)?;
                (FdbDest::Remote(ip), StaticDest::Remote(ip))
            }
            _ => {
                return Err(Failure::bad(format!(
                    "fdb entry for {key} needs exactly one of \"port\" (a local port name), \
                     \"remote\" (a remote VTEP address) and \"node\" (an overlay node)"
                )))
            }
        };
        let ips = host_ips(&key, add.ips.as_deref(), &dest)?;
        let shown = stored.to_string();
        let net = self.state.networks.get(&vni.0);
        if let Some(existing) = net.and_then(|n| n.fdb.get(&key)) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "network {vni} already has a static entry for {key} (to {existing}); delete it \
                     first (DELETE /v1/networks/{vni}/fdb/{key})"
                ),
            ));
        }
        let mut new = self.state.clone();
        if let Some(net) = new.networks.get_mut(&vni.0) {
            net.fdb.insert(key.clone(), stored);
            if !ips.is_empty() {
                net.fdb_ips.insert(key.clone(), ips.clone());
            }
        }
        let command = match dest {
            FdbDest::Port(id) if !ips.is_empty() => {
                Command::FdbAddStaticHost(vni, mac, id, ips.clone())
            }
            _ => Command::FdbAddStatic(vni, mac, dest),
        };
        self.commit(new, command).await?;
        log::info!("network {vni}: static fdb entry {key} -> {shown} {ips:?}");
        Ok(api::FdbEntry {
            mac: key,
            port: add.port,
            remote: add.remote,
            node: add.node,
            origin: api::Origin::Static,
            age_s: 0,
            ips,
        })
    }

    /// `DELETE /v1/networks/{vni}/fdb/{mac}`: a static entry (persisted) or a learned one.
    pub async fn fdb_delete(&mut self, vni: &str, mac: &str) -> Result<(), Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let mac = convert::parse_mac(mac)?;
        let key = mac.to_string();
        let is_static = self
            .state
            .networks
            .get(&vni.0)
            .is_some_and(|n| n.fdb.contains_key(&key));
        if is_static {
            let mut new = self.state.clone();
            if let Some(net) = new.networks.get_mut(&vni.0) {
                net.fdb.remove(&key);
                net.fdb_ips.remove(&key);
            }
            self.commit(new, Command::FdbRemove(vni, mac)).await?;
            log::info!("network {vni}: static fdb entry {key} deleted");
        } else {
            self.query(Command::FdbRemove(vni, mac)).await?;
            log::info!("network {vni}: learned fdb entry {key} deleted");
        }
        Ok(())
    }

    /// `POST /v1/networks/{vni}/fdb/flush`.
    pub async fn fdb_flush(
        &mut self,
        vni: &str,
        request: api::FlushRequest,
    ) -> Result<api::FlushResult, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let scope = flush_scope(request.scope);
        let command = Command::FdbFlush(vni, scope);
        let reply = if scope == FlushScope::All {
            let mut new = self.state.clone();
            if let Some(net) = new.networks.get_mut(&vni.0) {
                net.fdb.clear();
                net.fdb_ips.clear();
            }
            self.commit(new, command).await?
        } else {
            self.query(command).await?
        };
        let Reply::Flushed(n) = reply else {
            return Err(unexpected(reply));
        };
        log::info!("network {vni}: fdb flushed ({scope:?}), {n} entries removed");
        Ok(api::FlushResult { flushed: n as u64 })
    }

    /// `GET /v1/networks/{vni}/flood`.
    pub fn flood(&self, vni: &str) -> Result<Vec<IpAddr>, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        Ok(self
            .state
            .networks
            .get(&vni.0)
            .map(|n| n.flood.clone())
            .unwrap_or_default())
    }

    /// `POST /v1/networks/{vni}/flood`: answers the new flood list.
    pub async fn flood_add(
        &mut self,
        vni: &str,
        add: api::FloodAdd,
    ) -> Result<Vec<IpAddr>, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let ip = remote(add.remote, &self.config)?;
        let mut new = self.state.clone();
        let Some(net) = new.networks.get_mut(&vni.0) else {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no network with vni {vni}"),
            ));
        };
        if net.flood.contains(&ip) {
            return Err(Failure::new(
                Kind::Conflict,
                format!("remote {ip} is already in the flood list of network {vni}"),
            ));
        }
        net.flood.push(ip);
        let flood = net.flood.clone();
        // EVPN may have put the remote in the data path's list already: then the operator
        // takes it over (an idempotent add), and EVPN leaves it alone from now on.
        let command = if self.datapath_flood(vni).await?.contains(&ip) {
            Command::EvpnApply(vec![nvo_pipeline::EvpnChange::FloodAdd { vni, remote: ip }])
        } else {
            Command::FloodAdd(vni, ip)
        };
        self.commit(new, command).await?;
        log::info!("network {vni}: {ip} added to the flood list");
        Ok(flood)
    }

    /// `DELETE /v1/networks/{vni}/flood/{ip}`.
    pub async fn flood_delete(&mut self, vni: &str, ip: &str) -> Result<(), Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let ip = convert::parse_ip(ip)?;
        let mut new = self.state.clone();
        let Some(net) = new.networks.get_mut(&vni.0) else {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no network with vni {vni}"),
            ));
        };
        let before = net.flood.len();
        net.flood.retain(|&r| r != ip);
        if net.flood.len() == before {
            return Err(Failure::new(
                Kind::NotFound,
                format!("remote {ip} is not in the flood list of network {vni}"),
            ));
        }
        self.commit(new, Command::FloodRemove(vni, ip)).await?;
        log::info!("network {vni}: {ip} removed from the flood list");
        Ok(())
    }

    /// `GET /v1/counters`.
    pub async fn counters(&self) -> Result<api::Counters, Failure> {
        let (counters, sockets, stt, stt_tx, ila) = match self.query(Command::Counters).await? {
            Reply::Counters(c, s, t, x, i) => (c, s, t, x, i),
            other => return Err(unexpected(other)),
        };
        let overlay = match self.query(Command::OverlayCounters).await? {
            Reply::Overlay(c) => convert::counter_map(&c),
            other => return Err(unexpected(other)),
        };
        let mut underlay = convert::counter_map(&counters.underlay);
        underlay.extend([
            ("recv_truncated".to_owned(), sockets.recv_truncated),
            ("send_would_block".to_owned(), sockets.send_would_block),
            ("send_errors".to_owned(), sockets.send_errors),
            ("gso_fallbacks".to_owned(), sockets.gso_fallbacks),
            ("multicast_joins".to_owned(), sockets.multicast_joins),
            ("multicast_leaves".to_owned(), sockets.multicast_leaves),
            ("ila_tx_gso_whole".to_owned(), ila.tx_gso_whole),
            ("ila_tx_finished".to_owned(), ila.tx_finished),
            ("ila_rx_gso_whole".to_owned(), ila.rx_gso_whole),
            ("ila_rx_refused".to_owned(), ila.rx_refused),
        ]);
        Ok(api::Counters {
            drops: convert::counter_map(&counters.drops),
            networks: counters
                .networks
                .iter()
                .map(|(vni, c)| (vni.0, convert::counter_map(c)))
                .collect(),
            ports: counters
                .ports
                .iter()
                .filter_map(|(id, c)| {
                    Some((self.port_name(*id)?.to_owned(), convert::counter_map(c)))
                })
                .collect(),
            underlay,
            stt: {
                let mut map = convert::counter_map(&stt);
                map.extend([
                    ("tx_frames_kernel".to_owned(), stt_tx.frames_kernel),
                    ("tx_frames_software".to_owned(), stt_tx.frames_software),
                    ("tx_kernel_errors".to_owned(), stt_tx.kernel_errors),
                ]);
                map
            },
            overlay,
            remotes: counters
                .remotes
                .iter()
                .map(|(addr, c)| (*addr, convert::counter_map(c)))
                .collect(),
        })
    }
}

/// Most addresses one static host entry holds.
const MAX_HOST_IPS: usize = 16;

/// The host addresses of a static entry: only with a port, unicast, at most [`MAX_HOST_IPS`],
/// sorted and without repeats.
fn host_ips(key: &str, ips: Option<&[IpAddr]>, dest: &FdbDest) -> Result<Vec<IpAddr>, Failure> {
    let Some(ips) = ips else {
        return Ok(Vec::new());
    };
    if !matches!(dest, FdbDest::Port(_)) {
        return Err(Failure::bad(format!(
            "fdb entry for {key}: \"ips\" belong to a host behind a local port; give \"port\" \
             or leave \"ips\" out"
        )));
    }
    if ips.len() > MAX_HOST_IPS {
        return Err(Failure::bad(format!(
            "fdb entry for {key}: {} ips; at most {MAX_HOST_IPS}",
            ips.len()
        )));
    }
    if let Some(bad) = ips
        .iter()
        .find(|ip| ip.is_unspecified() || ip.is_multicast() || ip.is_loopback())
    {
        return Err(Failure::bad(format!(
            "fdb entry for {key}: ip {bad} is not a host's unicast address"
        )));
    }
    let mut ips = ips.to_vec();
    ips.sort_unstable();
    ips.dedup();
    Ok(ips)
}
