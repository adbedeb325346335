//! Another datapath's connection table, asked when this pipeline's misses (the kernel path:
//! nvo-ebpf's `KernelFlows` over the programs' `pol_flows`).
//!
//! ```text
//!  a packet of a policy network, not in the shared table either way
//!    → ExternalFlows::lookup (the key, else its reverse; the hook answers only for networks
//!      whose policy that datapath enforces, and only for flows not idle past its timeout)
//!    → found: adopted into the shared table with the time it has left there (not journaled:
//!      that table has it), the packet passes as tracked; its next packets hit here
//! ```
//!
//! The lookup is a syscall: it is made with the shared table's lock released (the pipeline
//! decides under the lock that it must ask, drops it, asks, and takes it again to adopt or
//! decide; a flow another worker tracked in between is found by looking up again first).
//!
//! A "not there" answer is remembered for [`NEGATIVE_LIFETIME`] per worker ([`Negative`], at
//! most [`NEGATIVE_MAX`] keys, the oldest forgotten first): a denied flow whose packets keep
//! reaching nvod asks once per lifetime, not twice (the key, its reverse) per packet. The
//! price: a flow the kernel starts tracking within that second after a negative answer is
//! decided by nvod's rules until the answer expires.
//!
//! Why: a flow the kernel allowed and tracked has packets the kernel leaves to nvod (a UDP-GSO
//! batch, an inner 802.1Q frame, a remote nothing is learned behind yet). Decided by the
//! rules again here, a reply of an allowed flow whose destination is selected would be
//! denied. The pipeline stays sans-IO: the hook is a trait object the datapath installs; its
//! syscall happens in the datapath's crate, once per miss (a new flow, or a kernel-tracked one
//! met for the first time).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvo_policy::{Conntrack, FlowKey};

/// A connection table another datapath keeps.
pub trait ExternalFlows: Send + Sync {
    /// The flow `key` belongs to, either way, if that table tracks it and it is not idle past
    /// its timeout there: its key as that table holds it (`key` or `key.reversed()`) and the
    /// time it has left. `None` for networks whose policy that datapath does not enforce.
    fn lookup(&self, key: &FlowKey) -> Option<(FlowKey, Duration)>;
}

/// The hook a pipeline asks on a miss (none: the userspace datapath alone).
#[derive(Clone, Default)]
pub struct ExternalHook(pub Option<Arc<dyn ExternalFlows>>);

impl std::fmt::Debug for ExternalHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ExternalHook(installed)"
        } else {
            "ExternalHook(none)"
        })
    }
}

impl ExternalHook {
    /// Whether there is another table to ask.
    pub(crate) fn installed(&self) -> bool {
        self.0.is_some()
    }

    /// Asks the other table about `key` (its syscall): called with the shared connection
    /// table's lock released, so that the other workers do not wait on it.
    pub(crate) fn ask(&self, key: &FlowKey) -> Option<(FlowKey, Duration)> {
        self.0.as_ref()?.lookup(key)
    }

    /// With the lock taken again, after `ct` missed `key` a second time: `ct` adopts the flow
    /// [`ExternalHook::ask`] found and `key` is looked up again (refreshing it, a FIN or RST
    /// shortening it). Meanwhile another worker may have tracked or adopted the same flow:
    /// the caller looked `key` up first, and [`Conntrack::adopt`] keeps a live entry, so
    /// adopting twice changes nothing. A full `ct` refuses it (counted there) but the packet
    /// still passes: the flow is tracked.
    pub(crate) fn adopt(
        ct: &mut Conntrack,
        (tracked, left): (FlowKey, Duration),
        key: &FlowKey,
        closing: bool,
        now: Instant,
    ) {
        if ct.adopt(tracked, left, now).is_ok() {
            ct.lookup(key, closing, now);
        }
    }
}

/// Whether the other datapath's table was asked about a packet's flow. Its lookup is a
/// syscall, so it is made with the shared lock released: a pass under the lock that misses
/// asks for it (`None`), the answer is fetched, and a second pass looks the flow up again
/// first (another worker may have tracked it meanwhile), then adopts what was found.
pub(crate) enum Asked {
    No,
    Answer(Option<(FlowKey, Duration)>),
}

impl Asked {
    /// Under the lock: whether `key`'s flow is tracked (adopting the other table's answer),
    /// or `None` when the other table must be asked first.
    pub(crate) fn tracked(
        &self,
        external: &ExternalHook,
        ct: &mut Conntrack,
        key: &FlowKey,
        closing: bool,
        now: Instant,
    ) -> Option<bool> {
        if ct.lookup(key, closing, now).is_some() {
            return Some(true);
        }
        match self {
            Asked::No if external.installed() => None,
            Asked::No | Asked::Answer(None) => Some(false),
            Asked::Answer(Some(found)) => {
                ExternalHook::adopt(ct, *found, key, closing, now);
                Some(true)
            }
        }
    }
}

/// How long the other table's "not tracked" answer is remembered.
pub const NEGATIVE_LIFETIME: Duration = Duration::from_secs(1);
/// Most remembered "not tracked" answers (per worker).
pub const NEGATIVE_MAX: usize = 1024;

/// The other table's recent "not tracked" answers, one worker's (no lock): flow key → until
/// when. Every entry lives [`NEGATIVE_LIFETIME`], so the order of insertion is the order of
/// expiry: the oldest are forgotten first, expired or not when the cache is full.
#[derive(Debug, Default)]
pub(crate) struct Negative {
    until: HashMap<FlowKey, Instant>,
    order: VecDeque<(FlowKey, Instant)>,
}

impl Negative {
    /// The other table's answer for `key` (`None`: not tracked there), from memory when it
    /// said "not tracked" less than a lifetime ago; `true` when its table was asked.
    pub(crate) fn ask(
        &mut self,
        hook: &ExternalHook,
        key: &FlowKey,
        now: Instant,
    ) -> (Option<(FlowKey, Duration)>, bool) {
        if self.until.get(key).is_some_and(|&until| now < until) {
            return (None, false);
        }
        let answer = hook.ask(key);
        if answer.is_none() {
            self.remember(*key, now);
        }
        (answer, true)
    }

    fn remember(&mut self, key: FlowKey, now: Instant) {
        while let Some(&(old, until)) = self.order.front() {
            if until > now && self.order.len() < NEGATIVE_MAX {
                break;
            }
            self.order.pop_front();
            // Only the entry this one put there (a key remembered again has a later one).
            if self.until.get(&old) == Some(&until) {
                self.until.remove(&old);
            }
        }
        let until = now.checked_add(NEGATIVE_LIFETIME).unwrap_or(now);
        self.until.insert(key, until);
        self.order.push_back((key, until));
    }

    /// Keys remembered (expired ones included until they are pushed out).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.until.len().max(self.order.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct One(FlowKey);

    impl ExternalFlows for One {
        fn lookup(&self, key: &FlowKey) -> Option<(FlowKey, Duration)> {
            (*key == self.0 || key.reversed() == self.0).then_some((self.0, Duration::from_secs(3)))
        }
    }

    #[test]
    fn a_flow_found_there_is_adopted_with_its_time_left() {
        let k = FlowKey {
            network: 7,
            proto: 17,
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            sport: 1,
            dport: 2,
        };
        let t0 = Instant::now();
        let mut ct = Conntrack::new(8);
        assert!(ExternalHook::default().ask(&k.reversed()).is_none());
        let hook = ExternalHook(Some(Arc::new(One(k))));
        let other = FlowKey { dport: 3, ..k };
        assert!(hook.ask(&other).is_none());
        let found = hook.ask(&k.reversed()).expect("tracked there");
        assert_eq!(found, (k, Duration::from_secs(3)));
        ExternalHook::adopt(&mut ct, found, &k.reversed(), false, t0);
        assert_eq!(
            ct.lookup(&k.reversed(), false, t0 + Duration::from_secs(2)),
            Some(nvo_policy::Direction::Reply),
            "the reply is now in this table, keyed as the other holds it"
        );
        assert_eq!(ct.lookup(&k, false, t0 + Duration::from_secs(6)), None);
    }

    /// Says "not tracked" until `tracks` is set, counting its lookups.
    #[derive(Default)]
    struct Later {
        tracks: std::sync::atomic::AtomicBool,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl ExternalFlows for Later {
        fn lookup(&self, key: &FlowKey) -> Option<(FlowKey, Duration)> {
            use std::sync::atomic::Ordering::SeqCst;
            self.asked.fetch_add(1, SeqCst);
            self.tracks
                .load(SeqCst)
                .then_some((*key, Duration::from_secs(5)))
        }
    }

    fn key(sport: u16) -> FlowKey {
        FlowKey {
            network: 7,
            proto: 6,
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            sport,
            dport: 22,
        }
    }

    #[test]
    fn a_negative_answer_is_remembered_for_its_lifetime_then_asked_again() {
        use std::sync::atomic::Ordering::SeqCst;
        let later = Arc::new(Later::default());
        let hook = ExternalHook(Some(later.clone()));
        let mut neg = Negative::default();
        let t0 = Instant::now();
        assert_eq!(neg.ask(&hook, &key(1), t0), (None, true));
        for ms in [0, 10, 500, 999] {
            let t = t0 + Duration::from_millis(ms);
            assert_eq!(neg.ask(&hook, &key(1), t), (None, false), "{ms} ms");
        }
        assert_eq!(later.asked.load(SeqCst), 1, "one lookup per lifetime");
        // Another flow is its own entry.
        assert_eq!(neg.ask(&hook, &key(2), t0), (None, true));
        // The kernel starts tracking the flow: found once the answer has expired.
        later.tracks.store(true, SeqCst);
        let t = t0 + NEGATIVE_LIFETIME;
        assert_eq!(
            neg.ask(&hook, &key(1), t),
            (Some((key(1), Duration::from_secs(5))), true)
        );
        assert_eq!(later.asked.load(SeqCst), 3);
        // A found flow is not remembered: asked again (the pipeline adopts it and stops asking).
        assert!(neg.ask(&hook, &key(1), t).1);
    }

    #[test]
    fn the_negative_cache_holds_at_most_its_capacity() {
        let hook = ExternalHook(Some(Arc::new(Later::default())));
        let mut neg = Negative::default();
        let t0 = Instant::now();
        for i in 0..3 * NEGATIVE_MAX {
            let t = t0 + Duration::from_micros(i as u64);
            assert!(neg.ask(&hook, &key(i as u16), t).1);
            assert!(neg.len() <= NEGATIVE_MAX, "{} keys after {i}", neg.len());
        }
        let t = t0 + Duration::from_micros(3 * NEGATIVE_MAX as u64);
        // The newest are remembered, the oldest were forgotten first.
        assert!(!neg.ask(&hook, &key(3 * NEGATIVE_MAX as u16 - 1), t).1);
        assert!(neg.ask(&hook, &key(0), t).1);
        // Expired entries leave at the next insertion, whatever the room.
        let late = t + 2 * NEGATIVE_LIFETIME;
        assert!(neg.ask(&hook, &key(60_000), late).1);
        assert_eq!(neg.len(), 1);
    }
}
