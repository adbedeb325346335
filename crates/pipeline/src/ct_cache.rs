//! Each worker's memory of the tracked flows it passed a moment ago, so that the packets of a
//! busy flow do not take the shared connection table's lock, nor its keyed (SipHash) lookups,
//! one by one (issue 18: policy at no measurable cost).
//!
//! ```text
//!  packet of a network with a policy, not closing (no FIN/RST)
//!    its key in the cache, confirmed by the shared table less than REFRESH ago
//!      (and, on ingress, carrying the same group tag as then) → tracked, pass
//!    else → the shared table as before; a flow it passes is (re)confirmed here
//! ```
//!
//! The cache only answers "the shared table had this flow REFRESH ago": every cached flow is
//! looked up in the shared table again at least every REFRESH, which refreshes its idle timer
//! there (the shortest is 10 s, for a closing TCP flow, far longer than REFRESH), so a flow the
//! cache passes is one the shared table still holds. FIN and RST always go to the shared table
//! (they shorten the flow's timeout). Every policy command and a removed network clear it
//! (all workers run them), so a flushed flow is never passed from here.
//!
//! Direct-mapped, [`SLOTS`] entries indexed by the project's fixed flow hash: a collision only
//! sends a packet to the shared table. An adversary who chooses colliding flows costs the
//! worker the lookups it would have paid without a cache, no more.

use std::time::{Duration, Instant};

use nvo_policy::FlowKey;

use crate::hash::FlowHasher;

/// Entries per worker.
pub(crate) const SLOTS: usize = 256;
/// How long a confirmation by the shared table holds.
pub(crate) const REFRESH: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: FlowKey,
    confirmed: Instant,
    /// The group tag the flow's packets carried when confirmed (ingress; 0 on egress).
    group: u16,
}

/// The recently confirmed flows of one worker.
#[derive(Debug)]
pub(crate) struct CtCache {
    slots: Box<[Option<Entry>; SLOTS]>,
}

impl Default for CtCache {
    fn default() -> Self {
        CtCache {
            slots: Box::new([None; SLOTS]),
        }
    }
}

fn slot(key: &FlowKey) -> usize {
    let mut h = FlowHasher::new();
    h.word(u64::from(key.network) << 32 | u64::from(key.proto) << 16);
    h.word(u64::from(key.sport) << 16 | u64::from(key.dport));
    for ip in [key.src, key.dst] {
        match ip {
            std::net::IpAddr::V4(a) => h.word(u64::from(u32::from(a))),
            std::net::IpAddr::V6(a) => {
                let v = u128::from(a);
                h.word(v as u64);
                h.word((v >> 64) as u64);
            }
        }
    }
    usize::from(h.finish16()) % SLOTS
}

impl CtCache {
    /// Whether the shared table passed `key`'s flow (with packets tagged `group`) less than
    /// [`REFRESH`] ago.
    pub(crate) fn hit(&self, key: &FlowKey, group: u16, now: Instant) -> bool {
        self.slots[slot(key)].is_some_and(|e| {
            e.key == *key
                && e.group == group
                && now.saturating_duration_since(e.confirmed) < REFRESH
        })
    }

    /// The shared table has just passed `key`'s flow.
    pub(crate) fn confirm(&mut self, key: FlowKey, group: u16, now: Instant) {
        self.slots[slot(&key)] = Some(Entry {
            key,
            confirmed: now,
            group,
        });
    }

    /// Forgets every flow.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(None);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use super::*;

    fn key(sport: u16) -> FlowKey {
        FlowKey {
            network: 100,
            proto: 6,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            sport,
            dport: 5432,
        }
    }

    #[test]
    fn a_confirmation_holds_for_refresh_only_and_for_its_own_key_and_group() {
        let mut c = CtCache::default();
        let t = Instant::now();
        assert!(!c.hit(&key(1000), 0, t));
        c.confirm(key(1000), 10, t);
        assert!(c.hit(&key(1000), 10, t + REFRESH / 2));
        assert!(!c.hit(&key(1000), 10, t + REFRESH), "stale");
        assert!(!c.hit(&key(1000), 20, t), "another group tag");
        assert!(!c.hit(&key(1001), 10, t), "another flow");
        assert!(
            !c.hit(&key(1000).reversed(), 10, t),
            "the reply is its own entry"
        );
        c.clear();
        assert!(!c.hit(&key(1000), 10, t));
    }

    #[test]
    fn colliding_flows_evict_each_other_and_never_answer_for_each_other() {
        let mut c = CtCache::default();
        let t = Instant::now();
        let a = key(1);
        let b = (2..u16::MAX)
            .map(key)
            .find(|k| slot(k) == slot(&a))
            .expect("a collision among 65k flows in 256 slots");
        c.confirm(a, 0, t);
        assert!(!c.hit(&b, 0, t));
        c.confirm(b, 0, t);
        assert!(c.hit(&b, 0, t) && !c.hit(&a, 0, t));
    }

    #[test]
    fn ipv6_flows_are_cached_too() {
        let mut c = CtCache::default();
        let t = Instant::now();
        let k = FlowKey {
            src: IpAddr::V6(Ipv6Addr::LOCALHOST),
            dst: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            ..key(7)
        };
        c.confirm(k, 0, t);
        assert!(c.hit(&k, 0, t));
    }
}
