//! The classifier: the highest-priority rule whose match accepts a key, found by tuple-space
//! search (Srinivasan et al., 1999; Open vSwitch's `lib/classifier.c`) rather than by trying
//! every rule.
//!
//! ```text
//!  rules with the same mask share a subtable:  mask → hash map (key AND mask → its rules)
//!  subtables sorted by their highest priority, descending
//!
//!  lookup(key):  for each subtable, best first
//!                  stop when its highest priority is below the best rule found so far
//!                  probe its map with key AND mask (one hash, one compare)
//! ```
//!
//! A lookup costs one hash probe per distinct mask, not one comparison per rule: 10 000 rules
//! that differ only in their values (ACL entries for addresses and ports) are one subtable and
//! one probe. Among rules of equal priority that both match, the one installed first wins
//! (OpenFlow leaves it undefined; nvo makes it deterministic, and the naive reference in the
//! tests does the same).
//!
//! A probe hashes only the key words its subtable's mask covers (three of nine for an ACL on
//! addresses and ports), without building the masked key, and compares those words alone. The
//! hash is a fixed multiplicative one, not keyed: packets never insert (only the operator or a
//! controller adds rules), so a sender cannot lengthen a chain — the chains are the rules.
//!
//! Bounded: at most `max_rules` rules; an insert beyond that is refused. Each rule carries
//! packet and byte counters, its install time and last use, and optional idle and hard
//! timeouts that [`Classifier::expire`] applies.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use crate::flow_match::Match;
use crate::key::{Key, WORDS};

/// A rule's identity in one classifier (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u64);

/// A rule: its priority, match, actions and timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule<A> {
    /// Higher wins.
    pub priority: u16,
    /// What it matches.
    pub pattern: Match,
    /// What is done with a packet it matches.
    pub actions: A,
    /// Removed after this long without a packet.
    pub idle_timeout: Option<Duration>,
    /// Removed this long after it was installed.
    pub hard_timeout: Option<Duration>,
    /// An opaque value for whoever installed it (OpenFlow's cookie).
    pub cookie: u64,
}

impl<A> Rule<A> {
    /// A rule without timeouts or cookie.
    pub fn new(priority: u16, pattern: Match, actions: A) -> Rule<A> {
        Rule {
            priority,
            pattern,
            actions,
            idle_timeout: None,
            hard_timeout: None,
            cookie: 0,
        }
    }
}

/// A rule's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Packets it matched.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// When it was installed.
    pub installed: Instant,
    /// When it last matched (its install time if never).
    pub last_used: Instant,
}

/// Why [`Classifier::expire`] removed a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No packet for its idle timeout.
    Idle,
    /// Its hard timeout passed.
    Hard,
}

/// Why an insert was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClassifierError {
    /// The table holds its maximum number of rules.
    #[error("the flow table is full ({0} rules)")]
    Full(usize),
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inserted {
    /// The new rule.
    pub id: RuleId,
    /// The rule with the same match and priority it replaced (OpenFlow's ADD semantics: the
    /// old entry and its counters are gone).
    pub replaced: Option<RuleId>,
}

/// The words of a key a mask covers, and the probe hash over them. The multiplier is FxHash's:
/// keys are words already spread over the fields, and a probe must cost little.
#[derive(Debug, Clone)]
struct Words {
    at: [u8; WORDS],
    n: usize,
}

impl Words {
    fn of(mask: &Key) -> Words {
        let mut w = Words {
            at: [0; WORDS],
            n: 0,
        };
        for (i, m) in mask.0.iter().enumerate() {
            if *m != 0 {
                w.at[w.n] = i as u8;
                w.n += 1;
            }
        }
        w
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.at[..self.n].iter().map(|i| usize::from(*i))
    }

    /// The hash of `key AND mask`.
    fn hash(&self, key: &Key, mask: &Key) -> u64 {
        self.iter().fold(0u64, |h, i| {
            (h.rotate_left(5) ^ (key.0[i] & mask.0[i])).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
        })
    }

    /// Whether `key AND mask` equals `value` (which is masked).
    fn equal(&self, key: &Key, mask: &Key, value: &Key) -> bool {
        self.iter().all(|i| key.0[i] & mask.0[i] == value.0[i])
    }
}

/// The hash map of probes: its keys are [`Words::hash`] values already, used as they are.
#[derive(Debug, Default, Clone, Copy)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The rules of one masked value, best first (priority descending, then id ascending).
#[derive(Debug)]
struct Bucket {
    value: Key,
    rules: Vec<(u16, RuleId)>,
}

/// The rules of one mask.
#[derive(Debug)]
struct Subtable {
    mask: Key,
    words: Words,
    /// Probe hash → the buckets with that hash (almost always one).
    buckets: HashMap<u64, Vec<Bucket>, BuildHasherDefault<Prehashed>>,
    /// Rules per priority, for the highest one after a removal.
    priorities: std::collections::BTreeMap<u16, usize>,
    /// The highest priority of its rules.
    max_priority: u16,
}

impl Subtable {
    fn new(mask: Key) -> Subtable {
        Subtable {
            words: Words::of(&mask),
            mask,
            buckets: HashMap::default(),
            priorities: Default::default(),
            max_priority: 0,
        }
    }

    /// The best rule of the bucket `key` falls in.
    fn probe(&self, key: &Key) -> Option<(u16, RuleId)> {
        let chain = self.buckets.get(&self.words.hash(key, &self.mask))?;
        chain
            .iter()
            .find(|b| self.words.equal(key, &self.mask, &b.value))
            .and_then(|b| b.rules.first().copied())
    }

    fn bucket(&self, value: &Key) -> Option<&Vec<(u16, RuleId)>> {
        let chain = self.buckets.get(&self.words.hash(value, &self.mask))?;
        chain.iter().find(|b| b.value == *value).map(|b| &b.rules)
    }

    fn add(&mut self, value: Key, priority: u16, id: RuleId) {
        let h = self.words.hash(&value, &self.mask);
        let chain = self.buckets.entry(h).or_default();
        let at = match chain.iter().position(|b| b.value == value) {
            Some(at) => at,
            None => {
                chain.push(Bucket {
                    value,
                    rules: Vec::new(),
                });
                chain.len() - 1
            }
        };
        let rules = &mut chain[at].rules;
        let pos = rules.partition_point(|&(p, i)| p > priority || (p == priority && i < id));
        rules.insert(pos, (priority, id));
        *self.priorities.entry(priority).or_default() += 1;
        self.max_priority = self.max_priority.max(priority);
    }

    /// Removes rule `id`; whether the subtable is now empty.
    fn take(&mut self, value: &Key, priority: u16, id: RuleId) -> bool {
        let h = self.words.hash(value, &self.mask);
        if let Some(chain) = self.buckets.get_mut(&h) {
            for b in chain.iter_mut().filter(|b| b.value == *value) {
                b.rules.retain(|&(_, i)| i != id);
            }
            chain.retain(|b| !b.rules.is_empty());
            if chain.is_empty() {
                self.buckets.remove(&h);
            }
        }
        if let Some(n) = self.priorities.get_mut(&priority) {
            *n -= 1;
            if *n == 0 {
                self.priorities.remove(&priority);
            }
        }
        self.max_priority = self.priorities.keys().next_back().copied().unwrap_or(0);
        self.buckets.is_empty()
    }
}

#[derive(Debug)]
struct Entry<A> {
    rule: Rule<A>,
    stats: Stats,
}

/// A bounded set of rules and the lookup of the best one for a key.
#[derive(Debug)]
pub struct Classifier<A> {
    entries: HashMap<RuleId, Entry<A>>,
    /// Best-first by highest priority.
    subtables: Vec<Subtable>,
    /// Rules with a timeout.
    timed: BTreeSet<RuleId>,
    next: u64,
    max_rules: usize,
}

impl<A> Classifier<A> {
    /// An empty classifier for at most `max_rules` rules.
    pub fn new(max_rules: usize) -> Classifier<A> {
        Classifier {
            entries: HashMap::new(),
            subtables: Vec::new(),
            timed: BTreeSet::new(),
            next: 1,
            max_rules,
        }
    }

    /// Rules installed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most rules it takes.
    pub fn capacity(&self) -> usize {
        self.max_rules
    }

    /// Distinct masks (the probes a lookup may make).
    pub fn subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Installs `rule`, replacing one with the same match and priority.
    pub fn insert(&mut self, rule: Rule<A>, now: Instant) -> Result<Inserted, ClassifierError> {
        let replaced = self.find_exact(&rule.pattern, rule.priority);
        if replaced.is_none() && self.entries.len() >= self.max_rules {
            return Err(ClassifierError::Full(self.max_rules));
        }
        if let Some(old) = replaced {
            self.remove(old);
        }
        let id = RuleId(self.next);
        self.next += 1;
        let mask = *rule.pattern.mask();
        let at = match self.subtables.iter().position(|s| s.mask == mask) {
            Some(at) => at,
            None => {
                self.subtables.push(Subtable::new(mask));
                self.subtables.len() - 1
            }
        };
        self.subtables[at].add(*rule.pattern.value(), rule.priority, id);
        self.sort_subtables();
        if rule.idle_timeout.is_some() || rule.hard_timeout.is_some() {
            self.timed.insert(id);
        }
        let stats = Stats {
            packets: 0,
            bytes: 0,
            installed: now,
            last_used: now,
        };
        self.entries.insert(id, Entry { rule, stats });
        Ok(Inserted { id, replaced })
    }

    /// Removes rule `id`, giving it back with its counters.
    pub fn remove(&mut self, id: RuleId) -> Option<(Rule<A>, Stats)> {
        let entry = self.entries.remove(&id)?;
        self.timed.remove(&id);
        let mask = entry.rule.pattern.mask();
        if let Some(at) = self.subtables.iter().position(|s| s.mask == *mask) {
            let p = &entry.rule.pattern;
            if self.subtables[at].take(p.value(), entry.rule.priority, id) {
                self.subtables.remove(at);
            }
            self.sort_subtables();
        }
        Some((entry.rule, entry.stats))
    }

    /// Removes every rule `pick` chooses, giving them back with their counters.
    pub fn remove_where(
        &mut self,
        mut pick: impl FnMut(RuleId, &Rule<A>) -> bool,
    ) -> Vec<(RuleId, Rule<A>, Stats)> {
        let ids: Vec<RuleId> = self
            .entries
            .iter()
            .filter(|(id, e)| pick(**id, &e.rule))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter_map(|id| self.remove(id).map(|(r, s)| (id, r, s)))
            .collect()
    }

    /// Rule `id` and its counters.
    pub fn get(&self, id: RuleId) -> Option<(&Rule<A>, &Stats)> {
        self.entries.get(&id).map(|e| (&e.rule, &e.stats))
    }

    /// Replaces the actions of rule `id`, keeping its counters (OpenFlow's MODIFY); false if
    /// there is no such rule.
    pub fn set_actions(&mut self, id: RuleId, actions: A) -> bool {
        match self.entries.get_mut(&id) {
            Some(e) => {
                e.rule.actions = actions;
                true
            }
            None => false,
        }
    }

    /// Every rule, in no particular order (no copy, no sort: for scans that need no order).
    pub fn iter(&self) -> impl Iterator<Item = &Rule<A>> + '_ {
        self.entries.values().map(|e| &e.rule)
    }

    /// Every rule, best first (priority descending, then installation order).
    pub fn rules(&self) -> Vec<(RuleId, &Rule<A>, &Stats)> {
        let mut all: Vec<_> = self
            .entries
            .iter()
            .map(|(id, e)| (*id, &e.rule, &e.stats))
            .collect();
        all.sort_by_key(|(id, r, _)| (std::cmp::Reverse(r.priority), *id));
        all
    }

    /// The rule with exactly this match and priority.
    pub fn find_exact(&self, pattern: &Match, priority: u16) -> Option<RuleId> {
        let st = self.subtables.iter().find(|s| s.mask == *pattern.mask())?;
        st.bucket(pattern.value())?
            .iter()
            .find(|(p, _)| *p == priority)
            .map(|(_, id)| *id)
    }

    /// The best rule for `key`, without counting.
    pub fn lookup(&self, key: &Key) -> Option<RuleId> {
        let mut best: Option<(u16, RuleId)> = None;
        for st in &self.subtables {
            if let Some((bp, _)) = best {
                if bp > st.max_priority {
                    break;
                }
            }
            if let Some((p, id)) = st.probe(key) {
                let better = match best {
                    None => true,
                    Some((bp, bid)) => p > bp || (p == bp && id < bid),
                };
                if better {
                    best = Some((p, id));
                }
            }
        }
        best.map(|(_, id)| id)
    }

    /// The best rule for a packet of `bytes` bytes with key `key`, counted on it.
    pub fn classify(&mut self, key: &Key, bytes: u64, now: Instant) -> Option<(RuleId, &A)> {
        let id = self.lookup(key)?;
        let e = self.entries.get_mut(&id)?;
        e.stats.packets += 1;
        e.stats.bytes += bytes;
        e.stats.last_used = now;
        Some((id, &e.rule.actions))
    }

    /// Removes the rules whose idle or hard timeout has passed at `now`.
    pub fn expire(&mut self, now: Instant) -> Vec<(RuleId, Rule<A>, Stats, Expiry)> {
        let due: Vec<(RuleId, Expiry)> = self
            .timed
            .iter()
            .filter_map(|id| {
                let e = self.entries.get(id)?;
                let past = |since: Instant, limit: Option<Duration>| {
                    limit.is_some_and(|l| now.saturating_duration_since(since) >= l)
                };
                if past(e.stats.installed, e.rule.hard_timeout) {
                    Some((*id, Expiry::Hard))
                } else if past(e.stats.last_used, e.rule.idle_timeout) {
                    Some((*id, Expiry::Idle))
                } else {
                    None
                }
            })
            .collect();
        due.into_iter()
            .filter_map(|(id, why)| self.remove(id).map(|(r, s)| (id, r, s, why)))
            .collect()
    }

    fn sort_subtables(&mut self) {
        self.subtables
            .sort_by_key(|s| std::cmp::Reverse(s.max_priority));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Field;

    fn key(port: u16) -> Key {
        let mut k = Key::default();
        k.set(Field::EthType, 0x0800);
        k.set(Field::IpProto, 6);
        k.set(Field::TpDst, port.into());
        k
    }

    fn tcp(port: u16) -> Match {
        Match::any()
            .with(Field::EthType, 0x0800)
            .with(Field::IpProto, 6)
            .with(Field::TpDst, port.into())
    }

    #[test]
    fn the_highest_priority_wins_and_ties_go_to_the_first_installed() {
        let now = Instant::now();
        let mut c = Classifier::new(10);
        let all = c
            .insert(Rule::new(1, Match::any(), "normal"), now)
            .unwrap()
            .id;
        let ssh = c.insert(Rule::new(200, tcp(22), "drop"), now).unwrap().id;
        let ip = Match::any().with(Field::EthType, 0x0800);
        let first = c.insert(Rule::new(100, ip, "a"), now).unwrap().id;
        let _second = c
            .insert(Rule::new(100, ip.with(Field::IpProto, 6), "b"), now)
            .unwrap()
            .id;
        assert_eq!(c.lookup(&key(22)), Some(ssh));
        assert_eq!(c.lookup(&key(80)), Some(first));
        assert_eq!(c.lookup(&Key::default()), Some(all));
        assert_eq!(c.subtables(), 4);
    }

    #[test]
    fn same_match_and_priority_replaces_and_the_table_is_bounded() {
        let now = Instant::now();
        let mut c = Classifier::new(2);
        let a = c.insert(Rule::new(5, tcp(22), 1), now).unwrap();
        let b = c.insert(Rule::new(5, tcp(22), 2), now).unwrap();
        assert_eq!(b.replaced, Some(a.id));
        assert_eq!(c.len(), 1);
        c.insert(Rule::new(6, tcp(22), 3), now).unwrap();
        assert_eq!(
            c.insert(Rule::new(7, tcp(22), 4), now),
            Err(ClassifierError::Full(2))
        );
        // A replacement needs no free slot.
        assert!(c.insert(Rule::new(6, tcp(22), 5), now).is_ok());
    }

    #[test]
    fn counters_and_timeouts() {
        let t0 = Instant::now();
        let mut c = Classifier::new(10);
        let mut idle = Rule::new(10, tcp(80), ());
        idle.idle_timeout = Some(Duration::from_secs(5));
        let idle = c.insert(idle, t0).unwrap().id;
        let mut hard = Rule::new(10, tcp(443), ());
        hard.hard_timeout = Some(Duration::from_secs(8));
        let hard = c.insert(hard, t0).unwrap().id;
        let t4 = t0 + Duration::from_secs(4);
        assert_eq!(c.classify(&key(80), 100, t4).map(|(id, _)| id), Some(idle));
        assert_eq!(c.classify(&key(443), 60, t4).map(|(id, _)| id), Some(hard));
        let (_, s) = c.get(idle).unwrap();
        assert_eq!((s.packets, s.bytes), (1, 100));
        assert!(c.expire(t0 + Duration::from_secs(7)).is_empty());
        let gone = c.expire(t0 + Duration::from_secs(9));
        let mut why: Vec<_> = gone.iter().map(|(id, _, _, w)| (*id, *w)).collect();
        why.sort_by_key(|(id, _)| *id);
        assert_eq!(why, vec![(idle, Expiry::Idle), (hard, Expiry::Hard)]);
        assert!(c.is_empty());
        assert_eq!(c.subtables(), 0);
    }

    #[test]
    fn removal_lowers_a_subtables_priority() {
        let now = Instant::now();
        let mut c = Classifier::new(10);
        let hi = c.insert(Rule::new(300, tcp(22), "hi"), now).unwrap().id;
        let lo = c.insert(Rule::new(10, tcp(23), "lo"), now).unwrap().id;
        let mid = c
            .insert(
                Rule::new(100, Match::any().with(Field::EthType, 0x0800), "mid"),
                now,
            )
            .unwrap()
            .id;
        assert_eq!(c.lookup(&key(23)), Some(mid));
        c.remove(hi);
        c.remove(mid);
        assert_eq!(c.lookup(&key(23)), Some(lo));
        let removed = c.remove_where(|_, r| r.pattern.within(&tcp(23)));
        assert_eq!(removed.len(), 1);
        assert_eq!(c.lookup(&key(23)), None);
    }
}
