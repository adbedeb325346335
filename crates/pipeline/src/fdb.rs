//! One network's forwarding database: MAC → destination (a local port or a remote VTEP).
//!
//! Contract:
//! - static entries are never overwritten, moved or aged by learning;
//! - a learned entry is refreshed by every frame from its MAC and moves (counted by the caller)
//!   when the MAC shows up behind another destination;
//! - an EVPN entry (docs/design/evpn.md) is never aged and never overwritten by learning from a
//!   tunnel; learning its MAC on a local port replaces it with a learned entry (the MAC moved
//!   here); a static entry replaces it, and it never replaces a static one;
//! - at `max_learned` learned entries nothing new is learned; nothing is evicted; the static and
//!   EVPN parts have bounds of their own;
//! - learned entries are bounded per destination too (a local port, a remote VTEP, an overlay
//!   node: [`Bounds::dest`]), so that one port flooding random source MACs, or one remote
//!   relaying them, cannot take the whole network's table; a MAC is neither learned nor moved
//!   to a destination at its bound;
//! - a MAC learned on a local port is sticky: while its entry lives (until it ages out, the
//!   port goes, or it is flushed) a frame from a tunnel does not move it to the remote —
//!   [`Learned::LocalConflict`], as the kernel bridge's `locked`/sticky entries; another local
//!   port still may (a host moved between ports);
//! - only unicast MACs are ever in the table (callers check sources; `add_static` and
//!   `set_evpn` are checked by the control layer).
//!
//! A datapath that mirrors the table elsewhere (the eBPF path's map) turns on the change
//! journal: every MAC whose entry was added, changed or removed — not a learned entry merely
//! refreshed — is noted, at most [`JOURNAL_CAP`] per network between two reads; beyond that
//! the journal only says it overflowed, and the reader resynchronises the whole network.
//!
//! The table is a `HashMap` bounded by `max_learned + max_static + max_evpn`. It grows on learning
//! a new MAC (amortised, at most log2(bound) times over its life), never per packet once warm.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde::{Serialize, Serializer};

use crate::{FdbDest, FlushScope, Mac, Origin, PortId};

/// An entry as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FdbView {
    /// The MAC.
    pub mac: Mac,
    /// Where frames to it go; serialised flat as `"port": n` or `"remote": "ip"`.
    #[serde(flatten)]
    pub dest: FdbDest,
    /// Static, learned or EVPN.
    pub origin: Origin,
    /// For a learned entry, the time since a frame last came from the MAC; zero otherwise.
    #[serde(rename = "age_s", serialize_with = "serialize_secs")]
    pub age: Duration,
}

/// Serialises a duration as whole seconds, the API's unit.
pub(crate) fn serialize_secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Static,
    Learned { last_seen: Instant },
    Evpn,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    dest: FdbDest,
    kind: Kind,
}

/// What `learn` did with a source address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Learned {
    /// A new learned entry.
    New,
    /// An existing learned entry, same destination, refreshed.
    Refreshed,
    /// The MAC moved: a learned entry to the new destination, or an EVPN entry replaced by a
    /// learned one on a local port (`from_evpn`).
    Moved {
        /// Where the MAC was.
        from: FdbDest,
        /// The entry replaced was an EVPN one.
        from_evpn: bool,
    },
    /// A static entry holds the MAC; nothing changed.
    Static,
    /// An EVPN entry holds the MAC and the frame came from a tunnel; nothing changed.
    Evpn,
    /// The MAC is new (or held by an EVPN entry) but the table holds `max_learned` learned
    /// entries; nothing changed.
    Limit,
    /// The MAC would be new behind, or move to, a destination that holds its bound of learned
    /// entries ([`Bounds::dest`]); nothing changed.
    DestLimit,
    /// A tunnel spoke for a MAC learned on a local port: the entry stays where it is (and is
    /// not refreshed by it).
    LocalConflict,
}

/// How many learned entries `learn` may leave: in the network, and behind the destination it
/// learns from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) network: usize,
    pub(crate) dest: usize,
}

impl Bounds {
    /// Only the network's bound.
    #[cfg(test)]
    pub(crate) fn network(max: usize) -> Bounds {
        Bounds {
            network: max,
            dest: usize::MAX,
        }
    }
}

/// Why `set_evpn` changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EvpnRefused {
    /// A static entry holds the MAC.
    Static,
    /// The entry would be a new EVPN one beyond `max_evpn`.
    Full,
}

/// What removing entries took away: how many, and whether one of them pointed at a local port
/// (the set of local hosts changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Removed {
    pub(crate) count: usize,
    pub(crate) local: bool,
}

/// Changes noted between two reads of a network's journal.
pub(crate) const JOURNAL_CAP: usize = 4096;

/// The MACs whose entries changed since the journal was last read.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    pub(crate) macs: Vec<Mac>,
    pub(crate) overflow: bool,
}

impl Journal {
    fn note(&mut self, mac: Mac) {
        if self.macs.len() < JOURNAL_CAP {
            self.macs.push(mac);
        } else {
            self.overflow = true;
        }
    }
}

/// One network's FDB.
#[derive(Debug, Default)]
pub(crate) struct Fdb {
    entries: HashMap<Mac, Entry>,
    learned: usize,
    statics: usize,
    evpn: usize,
    /// Learned entries per destination: what [`Bounds::dest`] bounds. No key at zero.
    per_dest: HashMap<FdbDest, u32>,
    /// Static and EVPN entries per remote address: the remotes these entries make known.
    pinned: HashMap<IpAddr, u32>,
    /// Present when a datapath mirrors the table.
    pub(crate) journal: Option<Journal>,
}

impl Fdb {
    fn note(&mut self, mac: Mac) {
        if let Some(j) = &mut self.journal {
            j.note(mac);
        }
    }

    /// The entry for `mac`: where it sends frames and how it got there.
    pub(crate) fn entry(&self, mac: Mac) -> Option<(FdbDest, crate::Origin)> {
        self.entries.get(&mac).map(|e| {
            let origin = match e.kind {
                Kind::Static => crate::Origin::Static,
                Kind::Learned { .. } => crate::Origin::Learned,
                Kind::Evpn => crate::Origin::Evpn,
            };
            (e.dest, origin)
        })
    }

    /// Where frames to `mac` go, if the table knows.
    pub(crate) fn lookup(&self, mac: Mac) -> Option<FdbDest> {
        self.entries.get(&mac).map(|e| e.dest)
    }

    /// Learns that frames from `mac` came from `dest` at `now`.
    pub(crate) fn learn(
        &mut self,
        mac: Mac,
        dest: FdbDest,
        now: Instant,
        bounds: Bounds,
    ) -> Learned {
        // The common case, a known MAC heard again where it was: one lookup, updated in place.
        let existing = match self.entries.get_mut(&mac) {
            Some(entry) if entry.dest == dest && matches!(entry.kind, Kind::Learned { .. }) => {
                entry.kind = Kind::Learned { last_seen: now };
                return Learned::Refreshed;
            }
            Some(entry) => Some(*entry),
            None => None,
        };
        let at_limit = self.learned >= bounds.network;
        let dest_full = self.learned_behind(dest) >= bounds.dest;
        let from_port = matches!(dest, FdbDest::Port(_));
        let fresh = Entry {
            dest,
            kind: Kind::Learned { last_seen: now },
        };
        if let Some(entry) = existing {
            let verdict = match entry.kind {
                Kind::Static => Learned::Static,
                Kind::Learned { .. } if entry.dest == dest => Learned::Refreshed,
                Kind::Learned { .. } if matches!(entry.dest, FdbDest::Port(_)) && !from_port => {
                    Learned::LocalConflict
                }
                Kind::Learned { .. } if dest_full => Learned::DestLimit,
                Kind::Learned { .. } => Learned::Moved {
                    from: entry.dest,
                    from_evpn: false,
                },
                // Only a local port overrides the control plane: a tunnel's word is what the
                // EVPN entry already says, or stale.
                Kind::Evpn if !from_port => Learned::Evpn,
                Kind::Evpn if at_limit => Learned::Limit,
                Kind::Evpn if dest_full => Learned::DestLimit,
                Kind::Evpn => Learned::Moved {
                    from: entry.dest,
                    from_evpn: true,
                },
            };
            match verdict {
                Learned::Refreshed => {
                    self.entries.insert(mac, fresh);
                }
                Learned::Moved { .. } => {
                    self.forget(entry);
                    self.keep(fresh);
                    self.entries.insert(mac, fresh);
                    self.note(mac);
                }
                _ => {}
            }
            return verdict;
        }
        if at_limit {
            return Learned::Limit;
        }
        if dest_full {
            return Learned::DestLimit;
        }
        self.entries.insert(mac, fresh);
        self.keep(fresh);
        self.note(mac);
        Learned::New
    }

    /// How many learned entries point at `dest`.
    pub(crate) fn learned_behind(&self, dest: FdbDest) -> usize {
        self.per_dest.get(&dest).map_or(0, |&n| n as usize)
    }

    /// The remotes static and EVPN entries point at.
    pub(crate) fn pinned_remotes(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.pinned.keys().copied()
    }

    /// Every destination holding learned entries, with how many.
    pub(crate) fn destinations(&self) -> impl Iterator<Item = (FdbDest, usize)> + '_ {
        self.per_dest.iter().map(|(&d, &n)| (d, n as usize))
    }

    /// Whether a static or EVPN entry points at the remote `ip`.
    pub(crate) fn pins(&self, ip: IpAddr) -> bool {
        self.pinned.contains_key(&ip)
    }

    /// Adds or replaces a static entry. A learned or EVPN entry for the MAC becomes static.
    /// Returns false, changing nothing, when the entry would be a new static one beyond
    /// `max_static`.
    pub(crate) fn add_static(&mut self, mac: Mac, dest: FdbDest, max_static: usize) -> bool {
        let was = self.entries.get(&mac).map(|e| e.kind);
        if !matches!(was, Some(Kind::Static)) && self.statics >= max_static {
            return false;
        }
        if let Some(old) = self.entries.get(&mac).copied() {
            self.forget(old);
        }
        let entry = Entry {
            dest,
            kind: Kind::Static,
        };
        self.keep(entry);
        self.entries.insert(mac, entry);
        self.note(mac);
        true
    }

    /// Adds or replaces an EVPN entry: `mac` is behind the VTEP `remote`. It replaces an EVPN
    /// or learned entry, never a static one. Returns the destination of the entry it replaced.
    pub(crate) fn set_evpn(
        &mut self,
        mac: Mac,
        remote: IpAddr,
        max_evpn: usize,
    ) -> Result<Option<FdbDest>, EvpnRefused> {
        let was = self.entries.get(&mac).copied();
        match was.map(|e| e.kind) {
            Some(Kind::Static) => return Err(EvpnRefused::Static),
            Some(Kind::Evpn) => {}
            Some(Kind::Learned { .. }) | None if self.evpn >= max_evpn => {
                return Err(EvpnRefused::Full)
            }
            Some(Kind::Learned { .. }) | None => {}
        }
        if let Some(old) = was {
            self.forget(old);
        }
        let entry = Entry {
            dest: FdbDest::Remote(remote),
            kind: Kind::Evpn,
        };
        self.keep(entry);
        self.entries.insert(mac, entry);
        self.note(mac);
        Ok(was.map(|e| e.dest))
    }

    /// Removes the entry for `mac` if it is an EVPN one. Returns whether there was one.
    pub(crate) fn remove_evpn(&mut self, mac: Mac) -> bool {
        if !matches!(self.entries.get(&mac), Some(e) if matches!(e.kind, Kind::Evpn)) {
            return false;
        }
        if let Some(old) = self.entries.remove(&mac) {
            self.forget(old);
        }
        self.note(mac);
        true
    }

    /// Removes the entry for `mac`, whatever its origin. Returns what it was.
    pub(crate) fn remove(&mut self, mac: Mac) -> Option<FdbDest> {
        let entry = self.entries.remove(&mac)?;
        self.forget(entry);
        self.note(mac);
        Some(entry.dest)
    }

    /// Removes the entries `scope` covers.
    pub(crate) fn flush(&mut self, scope: FlushScope) -> Removed {
        match scope {
            FlushScope::All => self.remove_where(|_, _| true),
            FlushScope::Learned => self.remove_where(|_, e| matches!(e.kind, Kind::Learned { .. })),
        }
    }

    /// Removes every entry, static or learned, pointing at `port`.
    pub(crate) fn remove_port(&mut self, port: PortId) -> Removed {
        self.remove_where(|_, e| e.dest == FdbDest::Port(port))
    }

    /// Removes learned entries not seen for longer than `ageing`.
    /// When `aged` is given, each removed (MAC, destination) is pushed to it.
    pub(crate) fn age(
        &mut self,
        now: Instant,
        ageing: Duration,
        mut aged: Option<&mut dyn FnMut(Mac, FdbDest)>,
    ) -> Removed {
        self.remove_where(|mac, e| {
            let old = match e.kind {
                Kind::Static | Kind::Evpn => false,
                Kind::Learned { last_seen } => now.saturating_duration_since(last_seen) > ageing,
            };
            if let (true, Some(f)) = (old, aged.as_mut()) {
                f(mac, e.dest);
            }
            old
        })
    }

    /// Every entry, sorted by MAC.
    pub(crate) fn views(&self, now: Instant) -> Vec<FdbView> {
        let mut views: Vec<FdbView> = self
            .entries
            .iter()
            .map(|(&mac, e)| {
                let (origin, age) = match e.kind {
                    Kind::Static => (Origin::Static, Duration::ZERO),
                    Kind::Evpn => (Origin::Evpn, Duration::ZERO),
                    Kind::Learned { last_seen } => {
                        (Origin::Learned, now.saturating_duration_since(last_seen))
                    }
                };
                FdbView {
                    mac,
                    dest: e.dest,
                    origin,
                    age,
                }
            })
            .collect();
        views.sort_unstable_by_key(|v| v.mac);
        views
    }

    /// Every (MAC, port) whose entry points at a local port, learned or static.
    pub(crate) fn local(&self) -> impl Iterator<Item = (Mac, PortId)> + '_ {
        self.entries.iter().filter_map(|(&mac, e)| match e.dest {
            FdbDest::Port(port) => Some((mac, port)),
            FdbDest::Remote(_) | FdbDest::Node(_) => None,
        })
    }

    /// How many learned entries the table holds.
    pub(crate) fn learned(&self) -> usize {
        self.learned
    }

    /// How many static entries the table holds.
    pub(crate) fn statics(&self) -> usize {
        self.statics
    }

    /// How many EVPN entries the table holds.
    pub(crate) fn evpn(&self) -> usize {
        self.evpn
    }

    fn remove_where(&mut self, mut doomed: impl FnMut(Mac, &Entry) -> bool) -> Removed {
        let (before, mut local) = (self.entries.len(), false);
        let Fdb {
            entries,
            learned,
            statics,
            evpn,
            per_dest,
            pinned,
            journal,
        } = self;
        let mut tally = Tally {
            learned,
            statics,
            evpn,
            per_dest,
            pinned,
        };
        entries.retain(|&mac, e| {
            if !doomed(mac, e) {
                return true;
            }
            if let Some(j) = journal.as_mut() {
                j.note(mac);
            }
            tally.count(*e, false);
            local |= matches!(e.dest, FdbDest::Port(_));
            false
        });
        Removed {
            count: before - self.entries.len(),
            local,
        }
    }

    /// Counts an entry going into the table.
    fn keep(&mut self, e: Entry) {
        self.tally().count(e, true);
    }

    /// Counts an entry leaving the table (or being replaced).
    fn forget(&mut self, e: Entry) {
        self.tally().count(e, false);
    }

    fn tally(&mut self) -> Tally<'_> {
        Tally {
            learned: &mut self.learned,
            statics: &mut self.statics,
            evpn: &mut self.evpn,
            per_dest: &mut self.per_dest,
            pinned: &mut self.pinned,
        }
    }
}

/// The table's counts, borrowed apart from its entries.
struct Tally<'a> {
    learned: &'a mut usize,
    statics: &'a mut usize,
    evpn: &'a mut usize,
    per_dest: &'a mut HashMap<FdbDest, u32>,
    pinned: &'a mut HashMap<IpAddr, u32>,
}

impl Tally<'_> {
    fn count(&mut self, e: Entry, add: bool) {
        fn bump<K: std::hash::Hash + Eq>(map: &mut HashMap<K, u32>, key: K, add: bool) {
            if add {
                *map.entry(key).or_insert(0) += 1;
            } else if let std::collections::hash_map::Entry::Occupied(mut o) = map.entry(key) {
                *o.get_mut() -= 1;
                if *o.get() == 0 {
                    o.remove();
                }
            }
        }
        let step = |n: &mut usize| {
            if add {
                *n += 1
            } else {
                *n -= 1
            }
        };
        match e.kind {
            Kind::Learned { .. } => {
                step(self.learned);
                bump(self.per_dest, e.dest, add);
            }
            Kind::Static | Kind::Evpn => {
                step(if matches!(e.kind, Kind::Static) {
                    &mut *self.statics
                } else {
                    &mut *self.evpn
                });
                if let FdbDest::Remote(ip) = e.dest {
                    bump(self.pinned, ip, add);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
    const P1: FdbDest = FdbDest::Port(PortId(1));
    const P2: FdbDest = FdbDest::Port(PortId(2));

    #[test]
    fn learn_refresh_move_limit() {
        let t0 = Instant::now();
        let mut fdb = Fdb::default();
        assert_eq!(fdb.learn(A, P1, t0, Bounds::network(1)), Learned::New);
        assert_eq!(fdb.learn(A, P1, t0, Bounds::network(1)), Learned::Refreshed);
        assert_eq!(
            fdb.learn(A, P2, t0, Bounds::network(1)),
            Learned::Moved {
                from: P1,
                from_evpn: false
            }
        );
        assert_eq!(fdb.lookup(A), Some(P2));
        assert_eq!(
            fdb.learn(Mac([2, 0, 0, 0, 0, 0xb]), P1, t0, Bounds::network(1)),
            Learned::Limit
        );
        assert_eq!(fdb.learned(), 1);
    }

    #[test]
    fn static_replaces_learned_and_wins() {
        let t0 = Instant::now();
        let mut fdb = Fdb::default();
        fdb.learn(A, P1, t0, Bounds::network(8));
        assert!(fdb.add_static(A, P2, 1));
        assert_eq!((fdb.learned(), fdb.statics()), (0, 1));
        assert_eq!(fdb.learn(A, P1, t0, Bounds::network(8)), Learned::Static);
        assert_eq!(fdb.lookup(A), Some(P2));
        // Replacing an existing static entry is allowed at the limit; a new one is not.
        assert!(fdb.add_static(A, P1, 1));
        assert!(!fdb.add_static(Mac([2, 0, 0, 0, 0, 0xb]), P1, 1));
        assert_eq!(fdb.remove(A), Some(P1));
        assert_eq!(fdb.remove(A), None);
        assert_eq!((fdb.learned(), fdb.statics()), (0, 0));
    }

    #[test]
    fn evpn_entries_yield_only_to_local_learning_and_static() {
        let t0 = Instant::now();
        let r1: IpAddr = "192.0.2.1".parse().unwrap();
        let mut fdb = Fdb::default();
        assert_eq!(fdb.set_evpn(A, r1, 1), Ok(None));
        // From a tunnel: held, whatever the remote.
        let tunnel = FdbDest::Remote("192.0.2.2".parse().unwrap());
        assert_eq!(fdb.learn(A, tunnel, t0, Bounds::network(8)), Learned::Evpn);
        assert_eq!(fdb.lookup(A), Some(FdbDest::Remote(r1)));
        // Never aged.
        assert_eq!(
            fdb.age(t0 + Duration::from_secs(1 << 20), Duration::ZERO, None)
                .count,
            0
        );
        // Not while the learned part is full; then, from a local port, it moves here.
        assert_eq!(fdb.learn(A, P1, t0, Bounds::network(0)), Learned::Limit);
        assert_eq!(
            fdb.learn(A, P1, t0, Bounds::network(8)),
            Learned::Moved {
                from: FdbDest::Remote(r1),
                from_evpn: true
            }
        );
        assert_eq!((fdb.learned(), fdb.evpn()), (1, 0));
        // Set back over the learned entry; the bound counts new EVPN entries only.
        assert_eq!(fdb.set_evpn(A, r1, 1), Ok(Some(P1)));
        assert_eq!(fdb.set_evpn(A, r1, 1), Ok(Some(FdbDest::Remote(r1))));
        assert_eq!(
            fdb.set_evpn(Mac([2, 0, 0, 0, 0, 0xb]), r1, 1),
            Err(EvpnRefused::Full)
        );
        // Static replaces it, and is never replaced by it.
        assert!(fdb.add_static(A, P2, 1));
        assert_eq!((fdb.statics(), fdb.evpn()), (1, 0));
        assert_eq!(fdb.set_evpn(A, r1, 1), Err(EvpnRefused::Static));
        assert!(!fdb.remove_evpn(A));
        assert_eq!(fdb.lookup(A), Some(P2));
    }

    #[test]
    fn removals_count_origins_and_say_whether_a_port_entry_went() {
        let t0 = Instant::now();
        let r1: IpAddr = "192.0.2.1".parse().unwrap();
        let mut fdb = Fdb::default();
        fdb.set_evpn(A, r1, 8).unwrap();
        fdb.learn(
            Mac([2, 0, 0, 0, 0, 0xb]),
            FdbDest::Remote(r1),
            t0,
            Bounds::network(8),
        );
        let removed = fdb.flush(FlushScope::Learned);
        assert_eq!((removed.count, removed.local), (1, false));
        fdb.learn(Mac([2, 0, 0, 0, 0, 0xc]), P1, t0, Bounds::network(8));
        let removed = fdb.flush(FlushScope::All);
        assert_eq!((removed.count, removed.local), (2, true));
        assert_eq!((fdb.learned(), fdb.statics(), fdb.evpn()), (0, 0, 0));
        assert!(fdb.set_evpn(A, r1, 8).unwrap().is_none());
        assert!(fdb.remove_evpn(A));
        assert!(!fdb.remove_evpn(A));
    }

    #[test]
    fn views_are_sorted_with_ages() {
        let t0 = Instant::now();
        let mut fdb = Fdb::default();
        fdb.learn(Mac([2, 0, 0, 0, 0, 9]), P1, t0, Bounds::network(8));
        fdb.add_static(Mac([2, 0, 0, 0, 0, 1]), P2, 8);
        fdb.set_evpn(Mac([2, 0, 0, 0, 0, 5]), "192.0.2.1".parse().unwrap(), 8)
            .unwrap();
        let views = fdb.views(t0 + Duration::from_secs(7));
        assert_eq!(views[0].mac, Mac([2, 0, 0, 0, 0, 1]));
        assert_eq!(
            (views[0].origin, views[0].age),
            (Origin::Static, Duration::ZERO)
        );
        assert_eq!(
            (views[1].origin, views[1].age),
            (Origin::Evpn, Duration::ZERO)
        );
        assert_eq!(
            serde_json::to_value(views[1]).unwrap(),
            serde_json::json!({"mac": "02:00:00:00:00:05", "remote": "192.0.2.1", "origin": "evpn", "age_s": 0})
        );
        assert_eq!(
            (views[2].origin, views[2].age),
            (Origin::Learned, Duration::from_secs(7))
        );
        let json = serde_json::to_value(views[2]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"mac": "02:00:00:00:00:09", "port": 1, "origin": "learned", "age_s": 7})
        );
    }
}

#[cfg(test)]
mod guard_tests {
    use super::*;

    const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
    const P1: FdbDest = FdbDest::Port(PortId(1));
    const P2: FdbDest = FdbDest::Port(PortId(2));

    fn mac(n: u16) -> Mac {
        let [a, b] = n.to_be_bytes();
        Mac([2, 0, 0, 0, a, b])
    }

    #[test]
    fn a_local_mac_does_not_move_to_a_tunnel_until_it_ages_out() {
        let t0 = Instant::now();
        let r: FdbDest = FdbDest::Remote("192.0.2.9".parse().unwrap());
        let mut fdb = Fdb::default();
        assert_eq!(fdb.learn(A, P1, t0, Bounds::network(8)), Learned::New);
        assert_eq!(
            fdb.learn(A, r, t0, Bounds::network(8)),
            Learned::LocalConflict
        );
        assert_eq!(fdb.lookup(A), Some(P1));
        // Not refreshed by the tunnel: it ages from the port's last frame.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(fdb.age(later, Duration::from_secs(5), None).count, 1);
        assert_eq!(fdb.learn(A, r, later, Bounds::network(8)), Learned::New);
        // A remote MAC still moves to a local port, and between local ports a MAC moves.
        assert_eq!(
            fdb.learn(A, P2, later, Bounds::network(8)),
            Learned::Moved {
                from: r,
                from_evpn: false
            }
        );
        assert_eq!(
            fdb.learn(A, P1, later, Bounds::network(8)),
            Learned::Moved {
                from: P2,
                from_evpn: false
            }
        );
        assert_eq!(
            (
                fdb.learned_behind(P1),
                fdb.learned_behind(P2),
                fdb.learned_behind(r)
            ),
            (1, 0, 0)
        );
    }

    #[test]
    fn one_destination_takes_no_more_than_its_bound() {
        let t0 = Instant::now();
        let bounds = Bounds {
            network: 10,
            dest: 3,
        };
        let mut fdb = Fdb::default();
        for i in 0..3 {
            assert_eq!(fdb.learn(mac(i), P1, t0, bounds), Learned::New);
        }
        assert_eq!(fdb.learn(mac(3), P1, t0, bounds), Learned::DestLimit);
        // Another port still learns, and a MAC does not move to the full port either.
        assert_eq!(fdb.learn(mac(4), P2, t0, bounds), Learned::New);
        assert_eq!(fdb.learn(mac(4), P1, t0, bounds), Learned::DestLimit);
        assert_eq!(fdb.lookup(mac(4)), Some(P2));
        // Refreshing an entry at the bound is fine; removing one makes room.
        assert_eq!(fdb.learn(mac(0), P1, t0, bounds), Learned::Refreshed);
        assert_eq!(fdb.remove(mac(0)), Some(P1));
        assert_eq!(fdb.learn(mac(3), P1, t0, bounds), Learned::New);
        assert_eq!(fdb.remove_port(PortId(1)).count, 3);
        assert_eq!((fdb.learned_behind(P1), fdb.learned()), (0, 1));
    }

    #[test]
    fn static_and_evpn_remotes_are_pinned_while_their_entries_live() {
        let r1: IpAddr = "192.0.2.1".parse().unwrap();
        let r2: IpAddr = "192.0.2.2".parse().unwrap();
        let mut fdb = Fdb::default();
        assert!(!fdb.pins(r1));
        fdb.set_evpn(A, r1, 8).unwrap();
        assert!(fdb.pins(r1));
        fdb.set_evpn(A, r2, 8).unwrap();
        assert!(!fdb.pins(r1) && fdb.pins(r2));
        assert!(fdb.add_static(mac(1), FdbDest::Remote(r1), 8));
        assert!(fdb.pins(r1));
        assert!(fdb.remove_evpn(A));
        assert!(!fdb.pins(r2));
        assert_eq!(fdb.flush(FlushScope::All).count, 1);
        assert!(!fdb.pins(r1));
        assert!(fdb.pinned.is_empty() && fdb.per_dest.is_empty());
    }
}
