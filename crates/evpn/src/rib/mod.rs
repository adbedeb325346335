//! The EVPN routing table: received routes per peer, local hosts, best path with MAC mobility,
//! and what that means for the data path and for what this node advertises.
//!
//! Sans-IO: callers feed received routes, withdrawals, session changes and the set of local hosts;
//! [`Rib::take_changes`] recomputes every key touched since the last call and returns the data
//! path changes ([`Install`]) and the advertisement changes ([`Advert`]). Keys:
//! - a MAC, (vni, mac): type 2 routes with and without an IP; the winner is the local host or one
//!   VTEP: the highest mobility sequence number, then the lowest VTEP address (RFC 7432 §15.1);
//!   a sticky remote MAC always wins. The winner's MAC goes into the FDB (remote only: a local MAC
//!   is in the FDB already), and its IPs into the neighbour table for ARP/ND suppression.
//! - a network, vni: type 3 routes; their VTEPs are the flood list.
//! - identities (issue 18): a local host's group goes out in its type 2 routes (the Group
//!   Policy ID community); the group the winning remote route gives each of its IPs is
//!   installed for the identity policy (identity.rs).
//!
//! Mobility: a MAC that appears locally while a remote route holds it with sequence N is
//! advertised with N + 1; a received route with a higher sequence takes a local MAC away (its
//! local route is withdrawn, the remote VTEP installed). Every change of winner is a move;
//! `dup_moves` moves within `dup_window` mark the MAC duplicate: frozen where it is (no longer
//! advertised, received routes for it not acted on) until the window has passed. The old VTEP
//! may withdraw before the MAC shows up here (it saw the MAC's frames come through the tunnel
//! and learned it away): a remote route that went with nothing in its place is remembered for
//! `dup_window`, so the MAC appearing here is still a move, advertised with N + 1.
//!
//! Bounds: received routes over every peer at most `max_routes` (more are dropped and counted);
//! the mobility history at most [`MAX_TRACKED`] MACs (the oldest quiet ones are forgotten).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr};
use std::time::Instant;

use nvo_bgp::{EvpnRoute, InclusiveMulticastRoute, RouteTarget};
use nvo_pipeline::Mac;

use super::settings::Settings;

mod identity;
mod ila;
mod mobility;
mod nlri;
mod view;

pub use identity::LocalRoute;
use mobility::History;
pub use nlri::{key_of, mac_route};

/// Most MACs whose move history is kept.
pub const MAX_TRACKED: usize = 1 << 16;

/// A peer, by its index in the configuration.
pub type PeerId = usize;

/// What identifies a received route (RFC 7432 §7: the fields of the NLRI that make it unique).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NlriKey {
    /// Type 2.
    Mac {
        /// RD bytes.
        rd: [u8; 8],
        /// Ethernet tag.
        tag: u32,
        /// MAC.
        mac: Mac,
        /// IP, when the route carries one.
        ip: Option<IpAddr>,
    },
    /// Type 3.
    Imet {
        /// RD bytes.
        rd: [u8; 8],
        /// Ethernet tag.
        tag: u32,
        /// Originating router.
        originator: IpAddr,
    },
}

/// The parts of a received route's attributes the table uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The VNI (type 2: label 1; type 3: the PMSI label, else the Ethernet tag).
    pub vni: u32,
    /// The VTEP (next hop; type 3: the PMSI tunnel endpoint, else the originator).
    pub vtep: IpAddr,
    /// MAC mobility sequence number.
    pub seq: u32,
    /// Sticky MAC.
    pub sticky: bool,
    /// Route targets.
    pub rts: Vec<RouteTarget>,
    /// The endpoint's group (Group Policy ID community; 0: none).
    pub group: u16,
}

#[derive(Debug, Clone)]
struct Path {
    got: Received,
    stale: bool,
}

/// What [`Rib::receive`] did with a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Stored (new or replacing the peer's previous one).
    Stored,
    /// Not used: a type this table does not keep, or this node's own route come back.
    Unused,
    /// Dropped: the table holds `max_routes` received routes.
    Full,
}

/// A data path change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// MAC behind a remote VTEP.
    FdbSet(u32, Mac, IpAddr),
    /// Remove an installed MAC.
    FdbRemove(u32, Mac),
    /// IP → MAC for suppression.
    NeighSet(u32, IpAddr, Mac),
    /// Remove an installed IP.
    NeighRemove(u32, IpAddr),
    /// A VTEP in a flood list.
    FloodAdd(u32, IpAddr),
    /// Remove a VTEP from a flood list.
    FloodRemove(u32, IpAddr),
    /// The group a route gives a remote address.
    IdentitySet(u32, IpAddr, u16),
    /// Remove an installed identity.
    IdentityRemove(u32, IpAddr),
}

/// An advertisement change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advert {
    /// Announce (or re-announce with new attributes).
    Announce(EvpnRoute, OutAttrs),
    /// Withdraw.
    Withdraw(EvpnRoute),
}

/// What a local route carries besides its NLRI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutAttrs {
    /// The network.
    pub vni: u32,
    /// Mobility sequence (0: no community).
    pub seq: u32,
    /// The host's group (0: no Group Policy ID community).
    pub group: u16,
    /// The next hop: the settings' (the VTEP), or on an ILA network an address of this
    /// host's locator (see [`Rib::next_hop`]).
    pub next_hop: IpAddr,
}

/// What [`Rib::take_changes`] returns.
#[derive(Debug, Default)]
pub struct Changes {
    /// For the data path.
    pub install: Vec<Install>,
    /// For every peer.
    pub advert: Vec<Advert>,
}

#[derive(Debug, Clone)]
struct Local {
    ips: Vec<IpAddr>,
    seq: u32,
    /// The host's group (0: none).
    group: u16,
    /// Restored from the saved state at start and not yet seen in the data path.
    restored: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Winner {
    Local,
    Remote(IpAddr),
}

/// What is in the data path now, as this table put it there.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Installed {
    /// (vni, mac) → VTEP.
    pub fdb: HashMap<(u32, Mac), IpAddr>,
    /// (vni, ip) → MAC.
    pub neigh: HashMap<(u32, IpAddr), Mac>,
    /// vni → VTEPs.
    pub flood: HashMap<u32, BTreeSet<IpAddr>>,
    /// (vni, ip) → group (not saved across restarts: the pipeline forgets them too).
    pub identity: HashMap<(u32, IpAddr), u16>,
}

/// The table.
#[derive(Debug)]
pub struct Rib {
    settings: Settings,
    /// Networks that exist here and run EVPN (VXLAN networks), with the flood-list entries the
    /// operator set: those are not EVPN's to add or remove.
    networks: BTreeMap<u32, BTreeSet<IpAddr>>,
    /// The ILA networks among them, with this host's locator /64 (`crate::Networks::ila`).
    ila: BTreeMap<u32, Ipv6Addr>,
    max_routes: usize,
    adj_in: HashMap<PeerId, HashMap<NlriKey, Path>>,
    received: usize,
    mac_index: HashMap<(u32, Mac), HashSet<(PeerId, NlriKey)>>,
    imet_index: HashMap<u32, HashSet<(PeerId, NlriKey)>>,
    local: HashMap<(u32, Mac), Local>,
    history: HashMap<(u32, Mac), History>,
    duplicates: HashSet<(u32, Mac)>,
    /// The sequence of the remote route that won each MAC installed now.
    won_seq: HashMap<(u32, Mac), u32>,
    /// MACs whose winning remote route went with nothing in its place: (VTEP, sequence, when);
    /// at most [`MAX_TRACKED`], each for `dup_window`.
    departed: HashMap<(u32, Mac), (IpAddr, u32, Instant)>,
    installed: Installed,
    adj_out: HashMap<NlriKey, (EvpnRoute, OutAttrs)>,
    dirty_macs: HashSet<(u32, Mac)>,
    dirty_vnis: HashSet<u32>,
}

impl Rib {
    /// An empty table.
    pub fn new(settings: Settings, max_routes: usize) -> Rib {
        Rib {
            settings,
            networks: BTreeMap::new(),
            ila: BTreeMap::new(),
            max_routes,
            adj_in: HashMap::new(),
            received: 0,
            mac_index: HashMap::new(),
            imet_index: HashMap::new(),
            local: HashMap::new(),
            history: HashMap::new(),
            duplicates: HashSet::new(),
            won_seq: HashMap::new(),
            departed: HashMap::new(),
            installed: Installed::default(),
            adj_out: HashMap::new(),
            dirty_macs: HashSet::new(),
            dirty_vnis: HashSet::new(),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// New settings (same speaker): every key is evaluated again.
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
        self.touch_all();
    }

    /// The EVPN networks here.
    pub fn set_networks(&mut self, networks: &crate::Networks) {
        if networks.flood != self.networks || networks.ila != self.ila {
            self.networks = networks.flood.clone();
            self.ila = networks.ila.clone();
            self.touch_all();
        }
    }

    fn touch_all(&mut self) {
        self.dirty_macs.extend(self.mac_index.keys().copied());
        self.dirty_macs.extend(self.local.keys().copied());
        self.dirty_macs.extend(self.installed.fdb.keys().copied());
        self.dirty_vnis.extend(self.imet_index.keys().copied());
        self.dirty_vnis.extend(self.installed.flood.keys().copied());
        self.dirty_vnis.extend(self.networks.keys().copied());
        for (route, attrs) in self.adj_out.values() {
            match route {
                EvpnRoute::MacIp(r) => {
                    self.dirty_macs.insert((attrs.vni, Mac(r.mac)));
                }
                _ => {
                    self.dirty_vnis.insert(attrs.vni);
                }
            }
        }
    }

    /// A route received from `peer` (a new one or a replacement).
    pub fn receive(&mut self, peer: PeerId, route: &EvpnRoute, got: Received) -> Taken {
        let Some(key) = key_of(route) else {
            return Taken::Unused;
        };
        if self.ours(got.vni, got.vtep) {
            return Taken::Unused;
        }
        let table = self.adj_in.entry(peer).or_default();
        let is_new = !table.contains_key(&key);
        if is_new && self.received >= self.max_routes {
            return Taken::Full;
        }
        let old_vni = table.get(&key).map(|p| p.got.vni);
        let vni = got.vni;
        table.insert(key, Path { got, stale: false });
        if is_new {
            self.received += 1;
        }
        if let Some(old) = old_vni.filter(|&o| o != vni) {
            self.unindex(peer, key, old);
        }
        self.index(peer, key, vni);
        Taken::Stored
    }

    /// A withdrawal from `peer`.
    pub fn withdraw(&mut self, peer: PeerId, route: &EvpnRoute) {
        if let Some(key) = key_of(route) {
            self.remove_path(peer, key);
        }
    }

    fn remove_path(&mut self, peer: PeerId, key: NlriKey) {
        let Some(table) = self.adj_in.get_mut(&peer) else {
            return;
        };
        if let Some(path) = table.remove(&key) {
            self.received -= 1;
            self.unindex(peer, key, path.got.vni);
        }
    }

    fn index(&mut self, peer: PeerId, key: NlriKey, vni: u32) {
        match key {
            NlriKey::Mac { mac, .. } => {
                self.mac_index
                    .entry((vni, mac))
                    .or_default()
                    .insert((peer, key));
                self.dirty_macs.insert((vni, mac));
            }
            NlriKey::Imet { .. } => {
                self.imet_index.entry(vni).or_default().insert((peer, key));
                self.dirty_vnis.insert(vni);
            }
        }
    }

    fn unindex(&mut self, peer: PeerId, key: NlriKey, vni: u32) {
        match key {
            NlriKey::Mac { mac, .. } => {
                if let Some(set) = self.mac_index.get_mut(&(vni, mac)) {
                    set.remove(&(peer, key));
                    if set.is_empty() {
                        self.mac_index.remove(&(vni, mac));
                    }
                }
                self.dirty_macs.insert((vni, mac));
            }
            NlriKey::Imet { .. } => {
                if let Some(set) = self.imet_index.get_mut(&vni) {
                    set.remove(&(peer, key));
                    if set.is_empty() {
                        self.imet_index.remove(&vni);
                    }
                }
                self.dirty_vnis.insert(vni);
            }
        }
    }

    /// A session went down: its routes become stale (graceful restart) or go.
    pub fn peer_down(&mut self, peer: PeerId, graceful: bool) {
        if graceful {
            if let Some(table) = self.adj_in.get_mut(&peer) {
                table.values_mut().for_each(|p| p.stale = true);
            }
        } else {
            self.sweep(peer, false);
        }
    }

    /// Removes `peer`'s stale routes (its End-of-RIB came, or its restart time ran out), or
    /// every route of it when `only_stale` is false. Returns how many went.
    pub fn sweep(&mut self, peer: PeerId, only_stale: bool) -> usize {
        let Some(table) = self.adj_in.get(&peer) else {
            return 0;
        };
        let doomed: Vec<NlriKey> = table
            .iter()
            .filter(|(_, p)| !only_stale || p.stale)
            .map(|(k, _)| *k)
            .collect();
        for key in &doomed {
            self.remove_path(peer, *key);
        }
        doomed.len()
    }

    /// Routes held from `peer`: (all, stale).
    pub fn peer_counts(&self, peer: PeerId) -> (u64, u64) {
        self.adj_in.get(&peer).map_or((0, 0), |t| {
            (
                t.len() as u64,
                t.values().filter(|p| p.stale).count() as u64,
            )
        })
    }

    /// The local hosts now (every MAC on a local port with its IPs). Hosts restored from the
    /// saved state stay until `keep_restored` is false.
    pub fn set_local(&mut self, hosts: &[LocalRoute], keep_restored: bool) {
        let now: HashMap<(u32, Mac), &LocalRoute> =
            hosts.iter().map(|h| ((h.vni, h.mac), h)).collect();
        let gone: Vec<(u32, Mac)> = self
            .local
            .iter()
            .filter(|(k, l)| !(now.contains_key(k) || (l.restored && keep_restored)))
            .map(|(k, _)| *k)
            .collect();
        for key in gone {
            self.local.remove(&key);
            self.dirty_macs.insert(key);
        }
        for (key, h) in now {
            let mut ips = h.ips.clone();
            ips.sort_unstable();
            match self.local.get_mut(&key) {
                Some(l) if l.ips == ips && l.group == h.group && !l.restored => {}
                Some(l) => {
                    l.ips = ips;
                    l.group = h.group;
                    l.restored = false;
                    self.dirty_macs.insert(key);
                }
                None => {
                    let seq = self
                        .remote_best(key)
                        .map(|(_, s, _)| s)
                        .or_else(|| self.departed.get(&key).map(|&(_, s, _)| s))
                        .map_or(0, |s| s.saturating_add(1));
                    self.local.insert(
                        key,
                        Local {
                            ips,
                            seq,
                            group: h.group,
                            restored: false,
                        },
                    );
                    self.dirty_macs.insert(key);
                }
            }
        }
    }

    /// Local hosts as saved for a restart: (vni, mac, ips, seq).
    pub fn local_saved(&self) -> Vec<(u32, Mac, Vec<IpAddr>, u32)> {
        self.local
            .iter()
            .map(|(&(v, m), l)| (v, m, l.ips.clone(), l.seq))
            .collect()
    }

    /// Restores what a previous run installed and advertised: the data path has `installed`
    /// (the caller applies it), the hosts are advertised until the data path shows them or the
    /// caller stops keeping them.
    pub fn restore(&mut self, installed: Installed, local: Vec<(u32, Mac, Vec<IpAddr>, u32)>) {
        self.installed = installed;
        for (vni, mac, ips, seq) in local {
            self.local.insert(
                (vni, mac),
                Local {
                    ips,
                    seq,
                    group: 0,
                    restored: true,
                },
            );
            self.dirty_macs.insert((vni, mac));
        }
    }

    /// Everything installed is checked against the table again (the end of a restart: what no
    /// route backs any more goes).
    pub fn reconcile(&mut self) {
        self.touch_all();
    }

    /// What the table installed.
    pub fn installed(&self) -> &Installed {
        &self.installed
    }

    /// The best imported remote route for a MAC: (vtep, seq, sticky).
    fn remote_best(&self, key: (u32, Mac)) -> Option<(IpAddr, u32, bool)> {
        let (vni, _) = key;
        if !self.networks.contains_key(&vni) {
            return None;
        }
        let import = self.settings.vni(vni);
        if !import.advertise {
            return None;
        }
        let set = self.mac_index.get(&key)?;
        set.iter()
            .filter_map(|(peer, k)| self.adj_in.get(peer)?.get(k))
            .filter(|p| p.got.rts.iter().any(|rt| import.import.contains(rt)))
            .map(|p| (p.got.vtep, p.got.seq, p.got.sticky))
            .max_by(|a, b| (a.2, a.1).cmp(&(b.2, b.1)).then_with(|| b.0.cmp(&a.0)))
    }

    /// IPs the winning VTEP advertises for a MAC, each with the group its route gives it.
    fn remote_ips(&self, key: (u32, Mac), vtep: IpAddr) -> BTreeMap<IpAddr, u16> {
        let import = self.settings.vni(key.0);
        self.mac_index
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(|(peer, k)| {
                let p = self.adj_in.get(peer)?.get(k)?;
                let NlriKey::Mac { ip: Some(ip), .. } = k else {
                    return None;
                };
                (p.got.vtep == vtep && p.got.rts.iter().any(|rt| import.import.contains(rt)))
                    .then_some((*ip, p.got.group))
            })
            .collect()
    }

    /// Recomputes every key touched since the last call.
    pub fn take_changes(&mut self, now: Instant) -> Changes {
        let mut out = Changes::default();
        let macs: Vec<(u32, Mac)> = self.dirty_macs.drain().collect();
        for key in macs {
            self.decide_mac(key, now, &mut out);
        }
        let vnis: Vec<u32> = self.dirty_vnis.drain().collect();
        for vni in vnis {
            self.decide_vni(vni, &mut out);
        }
        self.thaw(now);
        out
    }

    fn decide_mac(&mut self, key: (u32, Mac), now: Instant, out: &mut Changes) {
        let (vni, mac) = key;
        let remote = self.remote_best(key);
        let ours = self.next_hop(vni);
        let local = self.local.get(&key).map(|l| l.seq);
        let duplicate = self.is_duplicate(key, now);
        let before = self.current_winner(key).or_else(|| {
            self.departed
                .get(&key)
                .map(|&(vtep, _, _)| Winner::Remote(vtep))
        });
        let mut winner = match (local, remote) {
            (Some(s), Some((vtep, r, sticky))) => {
                if sticky || r > s || (r == s && vtep < ours) {
                    Some(Winner::Remote(vtep))
                } else {
                    Some(Winner::Local)
                }
            }
            (Some(_), None) => Some(Winner::Local),
            (None, Some((vtep, _, _))) => Some(Winner::Remote(vtep)),
            (None, None) => None,
        };
        if duplicate {
            // Frozen: keep what is installed / advertised now.
            winner = before.or(winner);
        } else if let (Some(a), Some(b)) = (before, winner) {
            if a != b {
                self.record_move(key, now);
            }
        }
        if let (Some(Winner::Remote(_)), Some(_), false) = (winner, local, duplicate) {
            // The MAC moved away: forget it here, so that showing up again is a new move.
            self.local.remove(&key);
        }
        match winner {
            Some(Winner::Remote(_)) => {
                if let Some((_, seq, _)) = remote {
                    self.won_seq.insert(key, seq);
                }
                self.departed.remove(&key);
            }
            Some(Winner::Local) => {
                self.won_seq.remove(&key);
                self.departed.remove(&key);
            }
            None => {
                if let (Some(Winner::Remote(vtep)), Some(seq)) = (before, self.won_seq.remove(&key))
                {
                    self.note_departed(key, vtep, seq, now);
                }
            }
        }
        // Data path.
        let want_fdb = match winner {
            Some(Winner::Remote(vtep)) => Some(vtep),
            _ => None,
        };
        match (self.installed.fdb.get(&key).copied(), want_fdb) {
            (Some(a), Some(b)) if a == b => {}
            (_, Some(vtep)) => {
                self.installed.fdb.insert(key, vtep);
                out.install.push(Install::FdbSet(vni, mac, vtep));
            }
            (Some(_), None) => {
                self.installed.fdb.remove(&key);
                out.install.push(Install::FdbRemove(vni, mac));
            }
            (None, None) => {}
        }
        let want_ips = want_fdb
            .map(|v| self.remote_ips(key, v))
            .unwrap_or_default();
        let had: Vec<IpAddr> = self
            .installed
            .neigh
            .iter()
            .filter(|(&(v, _), &m)| v == vni && m == mac)
            .map(|(&(_, ip), _)| ip)
            .collect();
        for ip in had.iter().filter(|ip| !want_ips.contains_key(ip)) {
            self.installed.neigh.remove(&(vni, *ip));
            out.install.push(Install::NeighRemove(vni, *ip));
        }
        for &ip in want_ips.keys() {
            if self.installed.neigh.get(&(vni, ip)) != Some(&mac) {
                self.installed.neigh.insert((vni, ip), mac);
                out.install.push(Install::NeighSet(vni, ip, mac));
            }
        }
        self.sync_identities(vni, &had, &want_ips, out);
        // Advertisements.
        let advertise = winner == Some(Winner::Local)
            && !duplicate
            && self.networks.contains_key(&vni)
            && self.settings.vni(vni).advertise;
        let mut want: Vec<(NlriKey, EvpnRoute, OutAttrs)> = Vec::new();
        if let (true, Some(l)) = (advertise, self.local.get(&key)) {
            let rd = self.settings.vni(vni).rd;
            let attrs = OutAttrs {
                vni,
                seq: l.seq,
                group: l.group,
                next_hop: self.next_hop(vni),
            };
            for ip in std::iter::once(None).chain(l.ips.iter().copied().map(Some)) {
                let route = mac_route(rd, vni, mac, ip);
                if let Some(k) = key_of(&route) {
                    want.push((k, route, attrs));
                }
            }
        }
        self.sync_out(
            |k| matches!(k, NlriKey::Mac { mac: m, .. } if *m == mac),
            vni,
            want,
            duplicate,
            out,
        );
    }

    /// Brings the advertised routes selected by `selects` (of network `vni`) to `want`.
    fn sync_out(
        &mut self,
        selects: impl Fn(&NlriKey) -> bool,
        vni: u32,
        want: Vec<(NlriKey, EvpnRoute, OutAttrs)>,
        frozen: bool,
        out: &mut Changes,
    ) {
        if frozen && want.is_empty() {
            // A duplicate MAC's advertisements stay as they are (RFC 7432 §15.1).
            return;
        }
        let stale: Vec<NlriKey> = self
            .adj_out
            .iter()
            .filter(|(k, (_, a))| {
                a.vni == vni && selects(k) && !want.iter().any(|(w, _, _)| w == *k)
            })
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            if let Some((route, _)) = self.adj_out.remove(&k) {
                out.advert.push(Advert::Withdraw(route));
            }
        }
        for (k, route, attrs) in want {
            if self.adj_out.get(&k).map(|(_, a)| *a) != Some(attrs) {
                self.adj_out.insert(k, (route.clone(), attrs));
                out.advert.push(Advert::Announce(route, attrs));
            }
        }
    }

    fn decide_vni(&mut self, vni: u32, out: &mut Changes) {
        let settings = self.settings.vni(vni);
        // ILA floods nothing: an ILA network has no type 3 route and installs no flood list.
        let active =
            self.networks.contains_key(&vni) && settings.advertise && !self.ila.contains_key(&vni);
        let want: BTreeSet<IpAddr> = if active {
            self.imet_index
                .get(&vni)
                .into_iter()
                .flatten()
                .filter_map(|(peer, k)| self.adj_in.get(peer)?.get(k))
                .filter(|p| p.got.rts.iter().any(|rt| settings.import.contains(rt)))
                .map(|p| p.got.vtep)
                .filter(|&v| v != self.settings.next_hop)
                .collect()
        } else {
            BTreeSet::new()
        };
        // The operator's own entries are neither added nor removed (one the operator took
        // over is just forgotten here).
        let manual = self.networks.get(&vni).cloned().unwrap_or_default();
        let want: BTreeSet<IpAddr> = want.difference(&manual).copied().collect();
        let have = self.installed.flood.get(&vni).cloned().unwrap_or_default();
        for gone in have.difference(&want).filter(|ip| !manual.contains(ip)) {
            out.install.push(Install::FloodRemove(vni, *gone));
        }
        for new in want.difference(&have) {
            out.install.push(Install::FloodAdd(vni, *new));
        }
        if want.is_empty() {
            self.installed.flood.remove(&vni);
        } else {
            self.installed.flood.insert(vni, want);
        }
        let mut routes = Vec::new();
        if active {
            let route = EvpnRoute::InclusiveMulticast(InclusiveMulticastRoute {
                rd: settings.rd,
                ethernet_tag: 0,
                originator: self.settings.next_hop,
            });
            if let Some(k) = key_of(&route) {
                routes.push((
                    k,
                    route,
                    OutAttrs {
                        vni,
                        seq: 0,
                        group: 0,
                        next_hop: self.settings.next_hop,
                    },
                ));
            }
        }
        self.sync_out(
            |k| matches!(k, NlriKey::Imet { .. }),
            vni,
            routes,
            false,
            out,
        );
    }

    /// Where the MAC is installed or advertised from now.
    fn current_winner(&self, key: (u32, Mac)) -> Option<Winner> {
        if let Some(&vtep) = self.installed.fdb.get(&key) {
            return Some(Winner::Remote(vtep));
        }
        let rd = self.settings.vni(key.0).rd;
        let k = key_of(&mac_route(rd, key.0, key.1, None))?;
        self.adj_out.contains_key(&k).then_some(Winner::Local)
    }

    /// How many MACs are duplicate now.
    pub fn duplicates(&self) -> u64 {
        self.duplicates.len() as u64
    }

    /// Every route advertised now, for a session that just came up.
    pub fn adj_out(&self) -> impl Iterator<Item = &(EvpnRoute, OutAttrs)> {
        self.adj_out.values()
    }

    /// (local routes, received routes, installed entries).
    pub fn counts(&self) -> (u64, u64, u64) {
        let installed = self.installed.fdb.len()
            + self.installed.neigh.len()
            + self
                .installed
                .flood
                .values()
                .map(BTreeSet::len)
                .sum::<usize>();
        (
            self.adj_out.len() as u64,
            self.received as u64,
            installed as u64,
        )
    }
}
