//! The speaker task: sessions, the table, the data path and the saved state tied together.
//!
//! One loop serves, in turn: requests from the API, events from the sessions, connections the
//! listener accepted, and a tick (200 ms) that polls the data path's local hosts, follows the
//! networks, runs the graceful-restart timers and saves `evpn.json` when it changed (at most
//! every [`SAVE_EVERY`]). After each of these, the table's changes go out: data path changes in
//! one batched command, advertisement changes as UPDATEs to every Established peer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use nvo_api as api;
use nvo_bgp::session::{self, PeerGr, SessionConfig, SessionEvent, SessionHandle};
use nvo_pipeline::{EvpnChange, Vni};
use tokio::sync::{mpsc, watch};

use super::advert::{self, PeerKind};
use super::persist::{unix_now, SaveFile, Saved};
use super::rib::{Advert, Install, LocalRoute, PeerId, Rib, Taken};
use super::settings::{ConfigError, Settings};
use super::Request;
use crate::dataplane::{DataPlane, DataPlaneError};
use crate::listener::{self, Accepted, Listeners, RefusalLog, Refused};

mod convert;

use convert::{canonical, change, counts, received, state};

/// Received routes over every peer.
pub const MAX_ROUTES: usize = 1 << 20;
/// How often the local hosts are polled and the timers run.
const TICK: Duration = Duration::from_millis(200);
/// Least time between two saves of `evpn.json`.
const SAVE_EVERY: Duration = Duration::from_secs(2);
/// Changes per datapath command.
const BATCH: usize = 4096;

struct Peer {
    id: PeerId,
    spec: super::settings::Neighbor,
    handle: SessionHandle,
    established: bool,
    gr: Option<PeerGr>,
    stale_until: Option<Instant>,
    ignored: u64,
}

/// A restart in progress: what was restored stays until every peer sent End-of-RIB (or the
/// restart time ran out), local hosts until `keep_local_until`.
struct Restart {
    waiting: HashSet<PeerId>,
    until: Instant,
    keep_local_until: Instant,
}

pub struct Speaker<D> {
    datapath: D,
    locator: IpAddr,
    save_file: SaveFile,
    networks: watch::Receiver<super::Networks>,
    rib: Option<Rib>,
    peers: Vec<Peer>,
    next_peer: PeerId,
    events_tx: mpsc::Sender<(usize, SessionEvent)>,
    events_rx: mpsc::Receiver<(usize, SessionEvent)>,
    accepted_rx: mpsc::Receiver<Accepted>,
    listeners: Listeners,
    refusals: RefusalLog,
    /// Connections closed at once: from no neighbour, from a GTSM one with a low TTL.
    refused_connections: (u64, u64),
    local_generation: Option<u64>,
    /// Restored local hosts were kept at the last poll.
    kept_restored: bool,
    restart: Option<Restart>,
    suppression: HashMap<u32, bool>,
    dirty: bool,
    last_save: Instant,
    /// Received routes dropped because the table was full.
    dropped: u64,
    /// Data path changes refused (a full table, a static entry holding the MAC).
    refused: u64,
}

impl<D: DataPlane> Speaker<D> {
    pub fn new(
        datapath: D,
        state_dir: &Path,
        locator: IpAddr,
        networks: watch::Receiver<super::Networks>,
    ) -> Speaker<D> {
        let (events_tx, events_rx) = mpsc::channel(1024);
        let (accepted_tx, accepted_rx) = mpsc::channel(16);
        Speaker {
            datapath,
            locator,
            save_file: SaveFile::new(state_dir),
            networks,
            rib: None,
            peers: Vec::new(),
            next_peer: 0,
            events_tx,
            events_rx,
            accepted_rx,
            listeners: Listeners::new(accepted_tx),
            refusals: RefusalLog::default(),
            refused_connections: (0, 0),
            local_generation: None,
            kept_restored: false,
            restart: None,
            suppression: HashMap::new(),
            dirty: false,
            last_save: Instant::now(),
            dropped: 0,
            refused: 0,
        }
    }

    pub async fn run(
        mut self,
        mut requests: mpsc::Receiver<Request>,
        initial: Option<api::BgpConfig>,
    ) {
        if let Some(config) = initial {
            match Settings::resolve(&config, self.locator) {
                Ok(settings) => self.start(settings, true).await,
                Err(e) => log::error!("bgp: the saved configuration is refused ({e}); BGP is off"),
            }
        }
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                request = requests.recv() => match request {
                    Some(Request::Shutdown(reply)) => {
                        self.shutdown().await;
                        let _ = reply.send(());
                        return;
                    }
                    Some(request) => self.request(request).await,
                    None => return,
                },
                Some((id, event)) = self.events_rx.recv() => self.event(id, event).await,
                Some(accepted) = self.accepted_rx.recv() => self.accepted(accepted),
                _ = tick.tick() => self.tick().await,
            }
            self.flush().await;
        }
    }

    async fn request(&mut self, request: Request) {
        match request {
            Request::Configure(config, reply) => {
                let answer = self.configure(config).await;
                let _ = reply.send(answer);
            }
            Request::Summary(reply) => {
                let _ = reply.send(self.summary());
            }
            Request::Routes {
                vni,
                route_type,
                reply,
            } => {
                let names: HashMap<PeerId, String> = self
                    .peers
                    .iter()
                    .map(|p| (p.id, p.spec.address.to_string()))
                    .collect();
                let routes = self.rib.as_ref().map_or_else(Vec::new, |rib| {
                    rib.routes(vni, route_type, |id| {
                        names
                            .get(&id)
                            .cloned()
                            .unwrap_or_else(|| format!("peer#{id}"))
                    })
                });
                let _ = reply.send(routes);
            }
            Request::Shutdown(_) => {}
        }
    }

    async fn configure(
        &mut self,
        config: Option<api::BgpConfig>,
    ) -> Result<api::BgpSummary, ConfigError> {
        let settings = match &config {
            Some(c) => Some(Settings::resolve(c, self.locator)?),
            None => None,
        };
        let same = match (&settings, &self.rib) {
            (Some(s), Some(rib)) => rib.settings() == s,
            (None, None) => true,
            _ => false,
        };
        if same {
            return Ok(self.summary());
        }
        self.stop_sessions(true).await;
        match settings {
            Some(settings) => self.start(settings, false).await,
            None => {
                self.flush().await;
                self.set_suppression(&BTreeSet::new()).await;
                self.rib = None;
                self.save_file.remove();
                self.listeners.apply(None);
                log::info!("bgp: stopped");
            }
        }
        Ok(self.summary())
    }

    /// Starts (or restarts with new settings) the speaker. `boot`: nvod just started, so what
    /// the previous run saved is restored (graceful restart).
    async fn start(&mut self, settings: Settings, boot: bool) {
        let restarting = boot && settings.graceful_restart.is_some();
        match self.rib.as_mut() {
            Some(rib) => rib.set_settings(settings.clone()),
            None => {
                let mut rib = Rib::new(settings.clone(), MAX_ROUTES);
                rib.set_networks(&self.networks.borrow());
                self.rib = Some(rib);
            }
        }
        if restarting {
            if let Some(saved) = self.save_file.load() {
                self.restore(saved, &settings).await;
            }
        }
        self.listeners.apply(Some(&settings));
        for spec in settings.neighbors.clone() {
            let id = self.next_peer;
            self.next_peer += 1;
            let config = SessionConfig {
                local_as: settings.asn,
                router_id: settings.router_id,
                peer: SocketAddr::new(spec.address, spec.port),
                peer_as: spec.asn,
                hold_time: settings.hold_time,
                connect_retry: settings.connect_retry,
                passive: spec.passive,
                graceful_restart: settings.graceful_restart,
                restarting: self.restart.is_some(),
                local_addr: Some(self.locator).filter(|l| l.is_ipv4() == spec.address.is_ipv4()),
                auth: session::TcpAuth {
                    md5_key: spec.password.as_ref().map(|p| p.0.as_bytes().to_vec()),
                    ttl_security: spec.ttl_security,
                },
            };
            let handle = session::spawn(config, id, self.events_tx.clone());
            if let Some(r) = self.restart.as_mut() {
                r.waiting.insert(id);
            }
            self.peers.push(Peer {
                id,
                spec,
                handle,
                established: false,
                gr: None,
                stale_until: None,
                ignored: 0,
            });
        }
        log::info!(
            "bgp: AS {} router id {} next hop {}, {} neighbours{}",
            settings.asn,
            settings.router_id,
            settings.next_hop,
            settings.neighbors.len(),
            if self.restart.is_some() {
                ", restarting gracefully"
            } else {
                ""
            }
        );
    }

    async fn restore(&mut self, saved: Saved, settings: &Settings) {
        let installed = saved.installed();
        let mut changes = Vec::new();
        for (&(vni, mac), &vtep) in &installed.fdb {
            changes.push(Install::FdbSet(vni, mac, vtep));
        }
        for (&(vni, ip), &mac) in &installed.neigh {
            changes.push(Install::NeighSet(vni, ip, mac));
        }
        for (&vni, set) in &installed.flood {
            changes.extend(set.iter().map(|&ip| Install::FloodAdd(vni, ip)));
        }
        log::info!(
            "bgp: graceful restart: restoring {} fdb, {} neighbour, {} flood entries and {} local \
             hosts saved {} s ago",
            installed.fdb.len(),
            installed.neigh.len(),
            changes.len() - installed.fdb.len() - installed.neigh.len(),
            saved.local.len(),
            unix_now().saturating_sub(saved.saved_at)
        );
        self.apply(changes).await;
        if let Some(rib) = self.rib.as_mut() {
            rib.restore(installed, saved.local);
        }
        let time = Duration::from_secs(settings.graceful_restart.unwrap_or(0).into());
        let now = Instant::now();
        self.restart = Some(Restart {
            waiting: HashSet::new(),
            until: now + time,
            keep_local_until: now + time,
        });
    }

    /// A connection a listener accepted: handed to its neighbour's session, or closed at once
    /// (dropped) when it comes from no neighbour or breaks the neighbour's GTSM.
    fn accepted(&mut self, accepted: Accepted) {
        let ip = canonical(accepted.from.ip());
        let peer = self.peers.iter().find(|p| p.spec.address == ip);
        match listener::admit(&accepted, peer.map(|p| &p.spec)) {
            Ok(()) => {
                if let Some(peer) = peer {
                    if let Err(e) = peer.handle.accept(accepted.stream) {
                        log::warn!("bgp: connection from {} not taken: {e}", accepted.from);
                    }
                }
            }
            Err(why) => {
                match why {
                    Refused::NotNeighbor => self.refused_connections.0 += 1,
                    Refused::Ttl(_) => self.refused_connections.1 += 1,
                }
                self.refusals.log(accepted.from, why);
            }
        }
    }

    async fn stop_sessions(&mut self, cease: bool) {
        for peer in std::mem::take(&mut self.peers) {
            if cease {
                stop_draining(&peer.handle, false, &mut self.events_rx).await;
            }
            if let Some(rib) = self.rib.as_mut() {
                rib.sweep(peer.id, false);
            }
        }
        self.restart = None;
    }

    async fn shutdown(&mut self) {
        self.flush().await;
        self.save(true).await;
        let graceful = self
            .rib
            .as_ref()
            .is_some_and(|r| r.settings().graceful_restart.is_some());
        // With graceful restart the connections close without a NOTIFICATION: peers keep the
        // routes as stale for the restart time (RFC 4724 §4.2). Without, Cease.
        for peer in &self.peers {
            stop_draining(&peer.handle, graceful, &mut self.events_rx).await;
        }
    }

    async fn event(&mut self, id: usize, event: SessionEvent) {
        let Some(index) = self.peers.iter().position(|p| p.id == id) else {
            return; // a session of an older configuration
        };
        let Some(rib) = self.rib.as_mut() else {
            return;
        };
        match event {
            SessionEvent::State(_) => {}
            SessionEvent::Established {
                peer_id, peer_gr, ..
            } => {
                log::info!(
                    "bgp: session to {} established (router id {peer_id})",
                    self.peers[index].spec.address
                );
                self.flush().await;
                let peer = &mut self.peers[index];
                peer.established = true;
                peer.gr = peer_gr;
                self.send_table(index, true);
            }
            SessionEvent::Update {
                reach,
                withdraw,
                errors,
            } => {
                if !errors.is_empty() {
                    log::info!(
                        "bgp: {} sent an UPDATE with {} error(s), first: {}",
                        self.peers[index].spec.address,
                        errors.len(),
                        errors[0]
                    );
                }
                for route in &withdraw {
                    rib.withdraw(id, route);
                }
                for (route, attrs) in &reach {
                    let taken = match received(route, attrs) {
                        Some(got) => rib.receive(id, route, got),
                        None => Taken::Unused,
                    };
                    match taken {
                        Taken::Stored => {}
                        Taken::Unused => self.peers[index].ignored += 1,
                        Taken::Full => self.dropped += 1,
                    }
                }
            }
            SessionEvent::RouteRefresh => {
                log::info!(
                    "bgp: {} asked for our routes again (route refresh)",
                    self.peers[index].spec.address
                );
                self.send_table(index, false);
            }
            SessionEvent::EndOfRib => {
                let swept = rib.sweep(id, true);
                self.peers[index].stale_until = None;
                if swept > 0 {
                    log::info!(
                        "bgp: {} End-of-RIB: {swept} stale route(s) removed",
                        self.peers[index].spec.address
                    );
                }
                self.restart_progress(Some(id));
            }
            SessionEvent::Down { reason, graceful } => {
                let peer = &mut self.peers[index];
                peer.established = false;
                let keep = graceful.then_some(peer.gr).flatten();
                rib.peer_down(id, keep.is_some());
                peer.stale_until =
                    keep.map(|gr| Instant::now() + Duration::from_secs(gr.restart_time.into()));
                log::warn!(
                    "bgp: session to {} down: {reason}{}",
                    peer.spec.address,
                    if keep.is_some() {
                        " (its routes are kept as stale: graceful restart)"
                    } else {
                        ""
                    }
                );
            }
        }
    }

    /// Every advertised route to one peer (that just came up, or asked with a ROUTE-REFRESH),
    /// then End-of-RIB when `end_of_rib`.
    fn send_table(&mut self, index: usize, end_of_rib: bool) {
        let Some(rib) = self.rib.as_ref() else {
            return;
        };
        let table: Vec<Advert> = rib
            .adj_out()
            .map(|(route, attrs)| Advert::Announce(route.clone(), *attrs))
            .collect();
        let peer = &self.peers[index];
        let kind = PeerKind {
            ibgp: peer.spec.asn == rib.settings().asn,
        };
        for update in advert::updates(rib.settings(), kind, &table) {
            if let Err(e) = peer.handle.send_update(update) {
                log::warn!("bgp: {e}");
            }
        }
        if end_of_rib {
            if let Err(e) = peer.handle.send_end_of_rib() {
                log::warn!("bgp: {e}");
            }
        }
    }

    async fn tick(&mut self) {
        let now = Instant::now();
        let networks = self.networks.borrow_and_update().clone();
        if let Some(rib) = self.rib.as_mut() {
            rib.set_networks(&networks);
        }
        if self.rib.is_some() {
            // ILA networks answer ND as every L3 network does: no suppression to switch.
            let suppressing = networks
                .flood
                .keys()
                .filter(|v| !networks.ila.contains_key(v))
                .copied()
                .collect();
            self.set_suppression(&suppressing).await;
            self.poll_local(now).await;
        }
        let expired: Vec<PeerId> = self
            .peers
            .iter_mut()
            .filter(|p| p.stale_until.is_some_and(|t| now >= t))
            .map(|p| {
                p.stale_until = None;
                p.id
            })
            .collect();
        for id in expired {
            if let Some(rib) = self.rib.as_mut() {
                let n = rib.sweep(id, true);
                log::info!("bgp: restart time of peer #{id} ran out: {n} stale route(s) removed");
            }
        }
        if self.restart.as_ref().is_some_and(|r| now >= r.until) {
            log::info!("bgp: graceful restart: restart time over before every End-of-RIB came");
            self.restart_progress(None);
        }
        self.save(false).await;
    }

    /// A peer's End-of-RIB (or the deadline, None): once every peer sent one, what the table
    /// no longer backs is removed.
    fn restart_progress(&mut self, from: Option<PeerId>) {
        let Some(r) = self.restart.as_mut() else {
            return;
        };
        let done = match from {
            Some(id) => {
                r.waiting.remove(&id);
                r.waiting.is_empty()
            }
            None => true,
        };
        if done {
            r.waiting.clear();
            if let Some(rib) = self.rib.as_mut() {
                rib.reconcile();
            }
            if Instant::now() >= r.keep_local_until {
                self.restart = None;
            }
        }
    }

    async fn poll_local(&mut self, now: Instant) {
        let keep_restored = self
            .restart
            .as_ref()
            .is_some_and(|r| now < r.keep_local_until);
        // The tick restored hosts stop being kept, the whole set is read again, so that those
        // the data path never showed are withdrawn.
        let since = if self.kept_restored && !keep_restored {
            0
        } else {
            self.local_generation.unwrap_or(0)
        };
        self.kept_restored = keep_restored;
        if self
            .restart
            .as_ref()
            .is_some_and(|r| r.waiting.is_empty() && now >= r.keep_local_until)
        {
            self.restart = None;
        }
        let hosts = match self.datapath.local_hosts(since).await {
            Ok(Some(hosts)) => hosts,
            Ok(None) => return,
            Err(DataPlaneError::Unexpected(other)) => {
                log::error!("bgp: the datapath answered {other} to LocalHosts; a bug in nvod");
                return;
            }
            Err(e) => {
                log::warn!("bgp: cannot read the local hosts: {e}");
                return;
            }
        };
        self.local_generation = Some(hosts.generation);
        let list: Vec<LocalRoute> = hosts
            .hosts
            .iter()
            .map(|h| LocalRoute {
                vni: h.vni.0,
                mac: h.mac,
                ips: h.ips.clone(),
                group: h.group,
            })
            .collect();
        if let Some(rib) = self.rib.as_mut() {
            rib.set_local(&list, keep_restored);
        }
    }

    async fn set_suppression(&mut self, networks: &BTreeSet<u32>) {
        let want: HashMap<u32, bool> = networks
            .iter()
            .map(|&v| {
                let on = self.rib.as_ref().is_some_and(|r| {
                    r.settings().vni(v).arp_suppression && r.settings().vni(v).advertise
                });
                (v, on)
            })
            .collect();
        for (&vni, &on) in &want {
            if self.suppression.get(&vni) != Some(&on) {
                match self.datapath.set_arp_suppression(Vni(vni), on).await {
                    Ok(()) => {
                        self.suppression.insert(vni, on);
                    }
                    Err(e) => log::warn!("bgp: cannot set ARP suppression on vni {vni}: {e}"),
                }
            }
        }
        self.suppression.retain(|vni, _| want.contains_key(vni));
    }

    /// Sends the table's changes to the data path and the peers.
    async fn flush(&mut self) {
        let Some(rib) = self.rib.as_mut() else {
            return;
        };
        // The networks as the control layer has them now, not as of the last tick: a flood
        // entry the operator just took over must not be removed by a withdrawal that arrives
        // before the tick.
        if self.networks.has_changed().unwrap_or(false) {
            rib.set_networks(&self.networks.borrow_and_update());
        }
        let changes = rib.take_changes(Instant::now());
        if !changes.advert.is_empty() {
            let settings = rib.settings().clone();
            for peer in self.peers.iter().filter(|p| p.established) {
                let kind = PeerKind {
                    ibgp: peer.spec.asn == settings.asn,
                };
                for update in advert::updates(&settings, kind, &changes.advert) {
                    if let Err(e) = peer.handle.send_update(update) {
                        log::warn!("bgp: {e}");
                    }
                }
            }
        }
        if !changes.install.is_empty() {
            self.dirty = true;
            self.apply(changes.install).await;
        }
    }

    async fn apply(&mut self, install: Vec<Install>) {
        let changes: Vec<EvpnChange> = install.into_iter().map(change).collect();
        for chunk in changes.chunks(BATCH) {
            match self.datapath.apply(chunk.to_vec()).await {
                Ok(done) => {
                    if done.refused > 0 {
                        self.refused += done.refused as u64;
                        log::warn!(
                            "bgp: the data path refused {} of {} change(s), last: {}",
                            done.refused,
                            chunk.len(),
                            done.last_error.map_or_else(String::new, |e| e.to_string())
                        );
                    }
                }
                Err(DataPlaneError::Unexpected(other)) => {
                    log::error!("bgp: the datapath answered {other} to EvpnApply; a bug in nvod")
                }
                Err(e) => log::error!(
                    "bgp: cannot apply {} change(s) to the data path: {e}",
                    chunk.len()
                ),
            }
        }
    }

    async fn save(&mut self, now_anyway: bool) {
        if !self.dirty || (!now_anyway && self.last_save.elapsed() < SAVE_EVERY) {
            return;
        }
        let Some(rib) = self.rib.as_ref() else {
            return;
        };
        if rib.settings().graceful_restart.is_none() {
            return;
        }
        let saved = Saved::of(rib.installed(), rib.local_saved());
        let file = self.save_file.clone();
        let result = tokio::task::spawn_blocking(move || file.save(&saved)).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => log::warn!("bgp: cannot save evpn.json: {e}"),
            Err(e) => log::warn!("bgp: saving evpn.json failed: {e}"),
        }
        self.dirty = false;
        self.last_save = Instant::now();
    }

    fn summary(&self) -> api::BgpSummary {
        let Some(rib) = self.rib.as_ref() else {
            return api::BgpSummary {
                config: None,
                neighbors: vec![],
                routes_local: 0,
                routes_received: 0,
                routes_installed: 0,
                duplicate_macs: 0,
                routes_dropped: self.dropped,
                routes_refused: self.refused,
                listening: self.listeners.addresses(),
                connections_refused: self.refused_connections.0,
                connections_ttl_refused: self.refused_connections.1,
            };
        };
        let (local, received, installed) = rib.counts();
        let neighbors = self
            .peers
            .iter()
            .map(|p| {
                let s = p.handle.stats();
                let (held, stale) = rib.peer_counts(p.id);
                api::NeighborState {
                    address: p.spec.address,
                    asn: p.spec.asn,
                    description: p.spec.description.clone(),
                    state: state(s.state),
                    router_id: s.peer_id,
                    state_s: s.time_in_state.as_secs(),
                    established: s.established,
                    hold_time_s: s.hold_time,
                    peer_restart_s: s.peer_restart_time,
                    received: held,
                    stale,
                    sent: if p.established { local } else { 0 },
                    messages_in: counts(s.messages_in),
                    messages_out: counts(s.messages_out),
                    treat_as_withdraw: s.treat_as_withdraw,
                    attributes_discarded: s.attributes_discarded,
                    ignored_routes: s.ignored_nlri + p.ignored,
                    last_error: s.last_error,
                }
            })
            .collect();
        api::BgpSummary {
            config: Some(rib.settings().shown.clone()),
            neighbors,
            routes_local: local,
            routes_received: received,
            routes_installed: installed,
            duplicate_macs: rib.duplicates(),
            routes_dropped: self.dropped,
            routes_refused: self.refused,
            listening: self.listeners.addresses(),
            connections_refused: self.refused_connections.0,
            connections_ttl_refused: self.refused_connections.1,
        }
    }
}

/// Stops a session (`for_restart`: without a NOTIFICATION) while throwing its (and every other
/// stopping session's) events away: a session task blocked on a full event channel would
/// otherwise never see the stop.
async fn stop_draining(
    handle: &SessionHandle,
    for_restart: bool,
    events: &mut mpsc::Receiver<(usize, SessionEvent)>,
) {
    let stop = async {
        if for_restart {
            handle.close_for_restart().await;
        } else {
            handle.stop().await;
        }
    };
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            Some(_) = events.recv() => {}
        }
    }
}
