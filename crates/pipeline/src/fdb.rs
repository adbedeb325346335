//! One network's forwarding database: MAC → destination (a local port or a remote VTEP).
//!
//! Contract:
//! - static entries are never overwritten, moved or aged by learning;
//! - a learned entry is refreshed by every frame from its MAC and moves (counted by the caller)
//!   when the MAC shows up behind another destination;
//! - at `max_learned` learned entries nothing new is learned; nothing is evicted;
//! - only unicast MACs are ever in the table (callers check sources; `add_static` is checked by
//!   the control layer).
//!
//! The table is a `HashMap` bounded by `max_learned + max_static`. It grows on learning a new MAC
//! (amortised, at most log2(bound) times over its life), never per packet once warm.

use std::collections::HashMap;
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
    /// Static or learned.
    pub origin: Origin,
    /// For a learned entry, the time since a frame last came from the MAC; zero for a static one.
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
    /// An existing learned entry moved to the new destination.
    Moved,
    /// A static entry holds the MAC; nothing changed.
    Static,
    /// The MAC is new but the table holds `max_learned` learned entries; nothing changed.
    Limit,
}

/// One network's FDB.
#[derive(Debug, Default)]
pub(crate) struct Fdb {
    entries: HashMap<Mac, Entry>,
    learned: usize,
    statics: usize,
}

impl Fdb {
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
        max_learned: usize,
    ) -> Learned {
        if let Some(entry) = self.entries.get_mut(&mac) {
            return match entry.kind {
                Kind::Static => Learned::Static,
                Kind::Learned { .. } => {
                    entry.kind = Kind::Learned { last_seen: now };
                    if entry.dest == dest {
                        Learned::Refreshed
                    } else {
                        entry.dest = dest;
                        Learned::Moved
                    }
                }
            };
        }
        if self.learned >= max_learned {
            return Learned::Limit;
        }
        self.entries.insert(
            mac,
            Entry {
                dest,
                kind: Kind::Learned { last_seen: now },
            },
        );
        self.learned += 1;
        Learned::New
    }

    /// Adds or replaces a static entry. A learned entry for the MAC becomes static. Returns false,
    /// changing nothing, when the entry would be a new static one beyond `max_static`.
    pub(crate) fn add_static(&mut self, mac: Mac, dest: FdbDest, max_static: usize) -> bool {
        let was = self.entries.get(&mac).map(|e| e.kind);
        if !matches!(was, Some(Kind::Static)) && self.statics >= max_static {
            return false;
        }
        match was {
            Some(Kind::Static) => {}
            Some(Kind::Learned { .. }) => {
                self.learned -= 1;
                self.statics += 1;
            }
            None => self.statics += 1,
        }
        self.entries.insert(
            mac,
            Entry {
                dest,
                kind: Kind::Static,
            },
        );
        true
    }

    /// Removes the entry for `mac`, static or learned. Returns whether there was one.
    pub(crate) fn remove(&mut self, mac: Mac) -> bool {
        match self.entries.remove(&mac) {
            Some(entry) => {
                self.forget(entry.kind);
                true
            }
            None => false,
        }
    }

    /// Removes the entries `scope` covers; returns how many.
    pub(crate) fn flush(&mut self, scope: FlushScope) -> usize {
        match scope {
            FlushScope::All => {
                let n = self.entries.len();
                self.entries.clear();
                self.learned = 0;
                self.statics = 0;
                n
            }
            FlushScope::Learned => self.remove_where(|e| matches!(e.kind, Kind::Learned { .. })),
        }
    }

    /// Removes every entry, static or learned, pointing at `port`; returns how many.
    pub(crate) fn remove_port(&mut self, port: PortId) -> usize {
        self.remove_where(|e| e.dest == FdbDest::Port(port))
    }

    /// Removes learned entries not seen for longer than `ageing`; returns how many.
    pub(crate) fn age(&mut self, now: Instant, ageing: Duration) -> usize {
        self.remove_where(|e| match e.kind {
            Kind::Static => false,
            Kind::Learned { last_seen } => now.saturating_duration_since(last_seen) > ageing,
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

    /// How many learned entries the table holds.
    pub(crate) fn learned(&self) -> usize {
        self.learned
    }

    /// How many static entries the table holds.
    pub(crate) fn statics(&self) -> usize {
        self.statics
    }

    fn remove_where(&mut self, mut doomed: impl FnMut(&Entry) -> bool) -> usize {
        let (mut learned, mut statics) = (0, 0);
        self.entries.retain(|_, e| {
            if !doomed(e) {
                return true;
            }
            match e.kind {
                Kind::Static => statics += 1,
                Kind::Learned { .. } => learned += 1,
            }
            false
        });
        self.learned -= learned;
        self.statics -= statics;
        learned + statics
    }

    fn forget(&mut self, kind: Kind) {
        match kind {
            Kind::Static => self.statics -= 1,
            Kind::Learned { .. } => self.learned -= 1,
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
        assert_eq!(fdb.learn(A, P1, t0, 1), Learned::New);
        assert_eq!(fdb.learn(A, P1, t0, 1), Learned::Refreshed);
        assert_eq!(fdb.learn(A, P2, t0, 1), Learned::Moved);
        assert_eq!(fdb.lookup(A), Some(P2));
        assert_eq!(
            fdb.learn(Mac([2, 0, 0, 0, 0, 0xb]), P1, t0, 1),
            Learned::Limit
        );
        assert_eq!(fdb.learned(), 1);
    }

    #[test]
    fn static_replaces_learned_and_wins() {
        let t0 = Instant::now();
        let mut fdb = Fdb::default();
        fdb.learn(A, P1, t0, 8);
        assert!(fdb.add_static(A, P2, 1));
        assert_eq!((fdb.learned(), fdb.statics()), (0, 1));
        assert_eq!(fdb.learn(A, P1, t0, 8), Learned::Static);
        assert_eq!(fdb.lookup(A), Some(P2));
        // Replacing an existing static entry is allowed at the limit; a new one is not.
        assert!(fdb.add_static(A, P1, 1));
        assert!(!fdb.add_static(Mac([2, 0, 0, 0, 0, 0xb]), P1, 1));
        assert!(fdb.remove(A));
        assert!(!fdb.remove(A));
        assert_eq!((fdb.learned(), fdb.statics()), (0, 0));
    }

    #[test]
    fn views_are_sorted_with_ages() {
        let t0 = Instant::now();
        let mut fdb = Fdb::default();
        fdb.learn(Mac([2, 0, 0, 0, 0, 9]), P1, t0, 8);
        fdb.add_static(Mac([2, 0, 0, 0, 0, 1]), P2, 8);
        let views = fdb.views(t0 + Duration::from_secs(7));
        assert_eq!(views[0].mac, Mac([2, 0, 0, 0, 0, 1]));
        assert_eq!(
            (views[0].origin, views[0].age),
            (Origin::Static, Duration::ZERO)
        );
        assert_eq!(
            (views[1].origin, views[1].age),
            (Origin::Learned, Duration::from_secs(7))
        );
        let json = serde_json::to_value(views[1]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"mac": "02:00:00:00:00:09", "port": 1, "origin": "learned", "age_s": 7})
        );
    }
}
