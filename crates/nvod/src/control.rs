//! The control operations behind the API: check a request against the desired state, persist
//! the new state, apply it to the datapath, answer.
//!
//! Every change follows one order, so that a failed request changes nothing:
//! 1. check everything that can be checked here (values, existence, conflicts);
//! 2. record the change in the state's journal (one fsynced append; a failure here has
//!    changed nothing);
//! 3. run the one datapath command that makes the change (each is all-or-nothing);
//! 4. if the datapath refuses, take the journal record back and answer with its reason.
//!
//! Requests are serialised by the caller (one `Control` behind a mutex), so the state read in
//! step 1 is the state written in step 2.

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_api as api;
use nvo_encap::engine::{Engine, EngineError};
use nvo_pipeline::{FdbDest, FlushScope, PortId, Vni};

use crate::config::{self, Config};
use crate::convert::{self, ConvertError, ValueError};
use crate::state::{State, StateError, Store};
use nvo_datapath::{Command, Datapath, DatapathError, Reply};

pub use capture::Scope;
pub use flows::TUNNEL;

mod acl;
mod bgp;
mod capture;
mod cluster;
mod flows;
mod meters;
mod named;
pub use named::Within;
mod observe;
mod ops;
mod overlay;
mod policy;
mod port_check;
mod profiles;
mod qos;
mod routes;
mod status;
mod trace;
mod vlan;
mod vport;

/// What kind of failure a request met; the API turns it into a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request itself is wrong (400).
    BadRequest,
    /// It names something that does not exist (404).
    NotFound,
    /// It conflicts with what exists (409).
    Conflict,
    /// The datapath is gone or busy (503).
    Unavailable,
    /// nvod could not do its part, e.g. write the state file (500).
    Internal,
}

/// A failed request: a kind and one line for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind.
    pub kind: Kind,
    /// What failed, with what value, what to do.
    pub message: String,
}

impl Failure {
    /// A failure of `kind`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// A 400.
    pub fn bad(message: impl Into<String>) -> Failure {
        Failure::new(Kind::BadRequest, message)
    }
}

impl From<ValueError> for Failure {
    fn from(e: ValueError) -> Failure {
        Failure::bad(e.to_string())
    }
}

impl From<ConvertError> for Failure {
    fn from(e: ConvertError) -> Failure {
        Failure::bad(e.to_string())
    }
}

impl From<StateError> for Failure {
    fn from(e: StateError) -> Failure {
        Failure::new(
            Kind::Internal,
            format!("{e}; nothing was changed, fix the state directory and retry"),
        )
    }
}

impl From<DatapathError> for Failure {
    fn from(e: DatapathError) -> Failure {
        use nvo_pipeline::TableError as T;
        let kind = match &e {
            DatapathError::Gone | DatapathError::Busy | DatapathError::ProbesBusy(_) => {
                Kind::Unavailable
            }
            DatapathError::Open { .. } | DatapathError::NoInterface(_) => Kind::BadRequest,
            DatapathError::TooManyGroups { .. } => Kind::Conflict,
            DatapathError::Join { .. } | DatapathError::Transport { .. } => Kind::Internal,
            DatapathError::UnknownProfile(_) | DatapathError::Flow(_) => Kind::BadRequest,
            DatapathError::Meter(m) => match m {
                nvo_pipeline::meters::MeterError::Missing(_) => Kind::NotFound,
                nvo_pipeline::meters::MeterError::InUse(..)
                | nvo_pipeline::meters::MeterError::Full(_) => Kind::Conflict,
                _ => Kind::BadRequest,
            },
            DatapathError::Engine(e) => engine_kind(e),
            DatapathError::Overlay(e) => match e {
                nvo_pipeline::overlay::OverlayError::TableFull { .. } => Kind::Conflict,
                nvo_pipeline::overlay::OverlayError::NoSuchNode(_)
                | nvo_pipeline::overlay::OverlayError::NoSuchRoute { .. } => Kind::NotFound,
                _ => Kind::BadRequest,
            },
            DatapathError::Table(t) => match t {
                T::NoSuchNetwork(_) | T::NoSuchPort(_) | T::NoSuchEntry { .. } => Kind::NotFound,
                T::NoSuchFlood { .. } => Kind::NotFound,
                T::NetworkExists(_) | T::NetworkHasPorts { .. } | T::PortExists { .. } => {
                    Kind::Conflict
                }
                T::FloodExists { .. } | T::TableFull { .. } => Kind::Conflict,
                _ => Kind::BadRequest,
            },
        };
        Failure::new(kind, limit_message(&e).unwrap_or_else(|| e.to_string()))
    }
}

/// A table-full refusal in the API's uniform words (`limit KEY (VALUE) reached: ...`, KEY the
/// `[limits]` key); `None` for any other refusal.
fn limit_message(e: &DatapathError) -> Option<String> {
    use nvo_pipeline::overlay::OverlayError;
    let (table, limit, overlay) = match e {
        DatapathError::Table(nvo_pipeline::TableError::TableFull { table, limit })
        | DatapathError::Engine(EngineError::TableFull { table, limit }) => (table, *limit, false),
        DatapathError::Overlay(OverlayError::TableFull { table, limit }) => (table, *limit, true),
        _ => return None,
    };
    let detail = format!("the {table} table holds {limit} entries");
    Some(config::limit_reached(
        config::limit_key(table, overlay),
        limit,
        detail,
    ))
}

/// The control side of nvod: desired state, its file, and the datapath handle.
#[derive(Debug)]
pub struct Control {
    config: Config,
    offloads: api::Offloads,
    store: Store,
    state: State,
    datapath: Datapath,
    /// Port ids given to the datapath, by interface name. Not persisted: ids are chosen anew
    /// at every start.
    port_ids: BTreeMap<String, PortId>,
    next_port: u32,
    /// The profiles, as the datapath's engine has them: names, transports and header lengths
    /// for checks and defaults here (the datapath's engine does the per-packet work).
    profiles: Engine,
    /// Overlay changes for `/v1/events` listeners.
    events: tokio::sync::broadcast::Sender<api::OverlayEvent>,
    /// The last probe run ID handed out.
    next_probe: u32,
    /// The EVPN speaker, once started.
    evpn: Option<nvo_evpn::Handle>,
    /// The VXLAN networks, for the EVPN speaker.
    evpn_networks: tokio::sync::watch::Sender<nvo_evpn::Networks>,
    /// Which datapath forwards, and why (`GET /v1/node`).
    path: nvo_datapath::Choice,
    /// `nvo monitor`'s listeners and lost counts, once set ([`Control::set_monitor`]).
    monitor: Option<crate::monitor::Handle>,
    /// Cluster mode's view, when it is on ([`Control::set_cluster`]).
    cluster: Option<crate::cluster::Handle>,
    /// Whether flow rules with timeouts may be installed (flows.rs expires them).
    timed_flows: bool,
    /// The connection table of every network's policy, shared by the datapath's workers and
    /// kept across policy changes (established flows survive them).
    policy_flows: nvo_pipeline::policy::SharedConntrack,
}

impl Control {
    /// A control with an empty datapath; [`Control::restore`] applies `state` to it.
    pub fn new(
        config: Config,
        offloads: api::Offloads,
        store: Store,
        state: State,
        datapath: Datapath,
    ) -> Control {
        let engine_limits = config.limits.engine;
        Control {
            config,
            offloads,
            store,
            state,
            datapath,
            port_ids: BTreeMap::new(),
            next_port: 1,
            profiles: Engine::new(engine_limits),
            events: tokio::sync::broadcast::channel(overlay::EVENT_BACKLOG).0,
            next_probe: 0,
            evpn: None,
            evpn_networks: tokio::sync::watch::channel(Default::default()).0,
            path: nvo_datapath::Choice {
                datapath: "userspace",
                reason: String::new(),
                relay: "userspace".to_owned(),
            },
            monitor: None,
            cluster: None,
            timed_flows: false,
            policy_flows: Default::default(),
        }
    }

    /// Records which datapath the datapath thread runs, for `GET /v1/node`.
    pub fn set_path(&mut self, choice: nvo_datapath::Choice) {
        self.path = choice;
    }

    /// Applies the loaded desired state to the (empty) datapath at start: networks with their
    /// flood lists, then ports (a missing interface comes up down and is retried), then static
    /// FDB entries. A refusal here means the state file asks for more than the tables hold.
    pub async fn restore(&mut self) -> Result<(), Failure> {
        self.drop_refused_ports()?;
        let state = self.state.clone();
        let from_config = self.config.profiles.clone();
        for spec in from_config.iter().chain(state.profiles.values()) {
            self.install_profile(spec)
                .await
                .map_err(|e| restore_failure(&format!("profile {:?}", spec.name), e.message))?;
        }
        for (&vni, net) in &state.networks {
            let vni = Vni(vni);
            self.datapath
                .call(convert::add_network(vni, net))
                .await
                .map_err(|e| restore_failure(&format!("network {vni}"), e))?;
        }
        for command in self.overlay_restore()? {
            self.datapath
                .call(command)
                .await
                .map_err(|e| restore_failure("the overlay", e))?;
        }
        for (&vni, net) in &state.networks {
            for (prefix, &remote) in &net.routes {
                let (addr, len) = convert::parse_prefix(prefix)?;
                self.datapath
                    .call(Command::RouteAdd(Vni(vni), addr, len, remote))
                    .await
                    .map_err(|e| restore_failure(&format!("network {vni} route {prefix}"), e))?;
            }
        }
        for (profile, keys) in &state.keys {
            for (hex, target) in keys {
                let command = profiles::bind_command(profile, hex, *target)
                    .map_err(|e| restore_failure(&format!("key {hex} of {profile}"), e.message))?;
                self.datapath
                    .call(command)
                    .await
                    .map_err(|e| restore_failure(&format!("key {hex} of {profile}"), e))?;
            }
        }
        for (name, port) in &state.ports {
            let command = self.attach_command(name, port, false);
            self.datapath
                .call(command)
                .await
                .map_err(|e| restore_failure(&format!("port {name}"), e))?;
        }
        for (n, command) in self.meters_restore() {
            self.datapath
                .call(command)
                .await
                .map_err(|e| restore_failure(&format!("meter {n}"), e))?;
        }
        for (target, command) in self.qos_restore() {
            self.datapath
                .call(command)
                .await
                .map_err(|e| restore_failure(&format!("qos of {target}"), e))?;
        }
        for (&vni, net) in &state.networks {
            for (mac, dest) in &net.fdb {
                let parsed = convert::parse_mac(mac)?;
                let dest = self.pipeline_dest(dest)?;
                let command = match (dest, net.fdb_ips.get(mac)) {
                    (FdbDest::Port(id), Some(ips)) => {
                        Command::FdbAddStaticHost(Vni(vni), parsed, id, ips.clone())
                    }
                    _ => Command::FdbAddStatic(Vni(vni), parsed, dest),
                };
                self.datapath
                    .call(command)
                    .await
                    .map_err(|e| restore_failure(&format!("network {vni} fdb {mac}"), e))?;
            }
        }
        self.restore_flows().await;
        self.acl_restore().await;
        self.policy_restore().await
    }

    /// `GET /v1/node`.
    pub fn node(&self) -> api::NodeInfo {
        api::NodeInfo {
            node_id: self.config.node_id,
            locator: self.config.locator,
            vxlan_port: self.config.vxlan_port,
            underlay_mtu: self.config.underlay_mtu,
            offloads: self.offloads,
            datapath: self.path.datapath.to_owned(),
            datapath_reason: self.path.reason.clone(),
            relay: self.path.relay.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            http_listen: self.config.http.as_ref().map(|h| h.listen),
            cluster: self.cluster.as_ref().map(|c| c.node()),
            workers: self.datapath.workers(),
            worker_packets: self.datapath.worker_packets(),
        }
    }

    /// Every underlay address nvod uses: the locator and this node's overlay locators. An
    /// interface holding one is the underlay interface and can never be a port.
    fn underlay_addresses(&self) -> Vec<IpAddr> {
        let mut addrs = vec![self.config.locator];
        let own = self.state.overlay.own.unwrap_or(self.config.node_id);
        if let Some(locators) = self.state.overlay.nodes.get(&own) {
            addrs.extend(locators.iter().map(|l| l.addr));
        }
        addrs
    }

    /// At start, before anything is applied: ports of the state file that may no longer be
    /// ports (the config's `port_kinds` changed, the interface became the underlay one...)
    /// are dropped with their static FDB entries, one error line each, and their removal is
    /// recorded in the state journal; nvod starts without them.
    fn drop_refused_ports(&mut self) -> Result<(), Failure> {
        let underlay = self.underlay_addresses();
        let mut new = self.state.clone();
        let mut refused = Vec::new();
        for (name, port) in &self.state.ports {
            let why = port_check::refusal(name, port.kind, &self.config.port_kinds, &underlay);
            if let Some(why) = why {
                log::error!(
                    "port {name} (network {}) in the state file is refused and dropped: {why}",
                    port.vni
                );
                new.forget_acls_of(name);
                new.ports.remove(name);
                refused.push(name.clone());
            }
        }
        if refused.is_empty() {
            return Ok(());
        }
        for net in new.networks.values_mut() {
            net.fdb.retain(
                |_, dest| !matches!(dest, crate::state::StaticDest::Port(p) if refused.contains(p)),
            );
            let kept = &net.fdb;
            net.fdb_ips.retain(|mac, _| kept.contains_key(mac));
        }
        self.store.record(&self.state, &new)?;
        self.state = new;
        Ok(())
    }

    fn new_port_id(&mut self, name: &str) -> PortId {
        let id = PortId(self.next_port);
        self.next_port = self.next_port.wrapping_add(1).max(1);
        if self.next_port == PortId::TUNNEL.0 {
            self.next_port += 1;
        }
        self.port_ids.insert(name.to_owned(), id);
        id
    }

    fn pipeline_dest(&self, dest: &crate::state::StaticDest) -> Result<FdbDest, Failure> {
        match dest {
            crate::state::StaticDest::Remote(ip) => Ok(FdbDest::Remote(*ip)),
            crate::state::StaticDest::Node(n) => Ok(FdbDest::Node(nvo_pipeline::NodeId(*n))),
            crate::state::StaticDest::Port(name) => self
                .port_ids
                .get(name)
                .map(|&id| FdbDest::Port(id))
                .ok_or_else(|| Failure::new(Kind::NotFound, format!("no port {name:?}"))),
        }
    }

    fn port_name(&self, id: PortId) -> Option<&str> {
        self.port_ids
            .iter()
            .find(|(_, &p)| p == id)
            .map(|(name, _)| name.as_str())
    }

    fn network_exists(&self, vni: Vni) -> Result<(), Failure> {
        if self.state.networks.contains_key(&vni.0) {
            Ok(())
        } else {
            Err(Failure::new(
                Kind::NotFound,
                format!("no network with vni {vni}; create it first (POST /v1/networks)"),
            ))
        }
    }

    /// Persists `new`, runs `command`, and keeps `new` only if the datapath accepted it.
    async fn commit(&mut self, new: State, command: Command) -> Result<Reply, Failure> {
        self.store.record(&self.state, &new)?;
        match self.datapath.call(command).await {
            Ok(reply) => {
                self.state = new;
                self.publish_networks();
                Ok(reply)
            }
            Err(e) => {
                self.undo_record(&e);
                Err(e.into())
            }
        }
    }

    /// Takes back the journal record of a change that was then refused.
    fn undo_record(&mut self, refusal: &dyn std::fmt::Display) {
        if let Err(undo) = self.store.undo() {
            log::error!(
                "a change was refused ({refusal}) and its journal record could not be taken \
                 back: {undo}; the state directory of {} holds the refused change",
                self.store.path().display()
            );
        }
    }

    /// Runs a read-only command.
    async fn query(&self, command: Command) -> Result<Reply, Failure> {
        Ok(self.datapath.call(command).await?)
    }
}

/// The status of an engine refusal.
fn engine_kind(e: &EngineError) -> Kind {
    match e {
        EngineError::UnknownProfile(_) | EngineError::UnknownId(_) => Kind::NotFound,
        EngineError::DuplicateName(_)
        | EngineError::InUse { .. }
        | EngineError::TableFull { .. }
        | EngineError::TransportTaken { .. }
        | EngineError::KeyTaken { .. } => Kind::Conflict,
        _ => Kind::BadRequest,
    }
}

fn restore_failure(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::new(
        Kind::Internal,
        format!("restoring {what} from the state file: {e}"),
    )
}

/// The answer a command was expected to give but did not.
fn unexpected(reply: Reply) -> Failure {
    Failure::new(
        Kind::Internal,
        format!("the datapath gave an unexpected answer ({reply:?}); this is a bug in nvod"),
    )
}

/// Parses a `{vni}` path segment and checks the network exists.
pub fn vni_of(text: &str) -> Result<Vni, Failure> {
    Ok(convert::parse_vni(text)?)
}

/// Builds the scope of a flush.
fn flush_scope(scope: api::FlushScope) -> FlushScope {
    match scope {
        api::FlushScope::Learned => FlushScope::Learned,
        api::FlushScope::All => FlushScope::All,
    }
}

/// A remote checked against the locator's family.
fn remote(ip: IpAddr, config: &Config) -> Result<IpAddr, Failure> {
    convert::check_remote(ip, config)?;
    Ok(ip)
}
