//! Connection tracking: a flow a policy allowed is remembered, so that its later packets and
//! its replies pass without asking the policy again — and keep passing when the policy
//! changes (an established allowed connection survives a policy update).
//!
//! ```text
//!  key       (network, protocol, source, destination, source port, destination port);
//!            ICMP echo: both "ports" are the echo identifier, so the reply's key is the
//!            request's reversed
//!  lookup    the key → Original; the key reversed → Reply; each refreshes the entry's expiry
//!  insert    after an allow; refused when the table is full (counted), never evicting
//!            (an attacker filling the table must not push out established flows)
//!  expire    entries idle past their protocol's timeout (TCP: 1 h, 10 s after FIN/RST;
//!            UDP 60 s; ICMP 30 s; others 60 s)
//! ```

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// A flow's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// The network (VNI).
    pub network: u32,
    /// IP protocol.
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (ICMP echo: the identifier).
    pub sport: u16,
    /// Destination port (ICMP echo: the identifier).
    pub dport: u16,
}

impl FlowKey {
    /// The key of the other direction.
    pub fn reversed(&self) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            ..*self
        }
    }
}

/// Which way a packet goes in its flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// As the first packet went.
    Original,
    /// The other way.
    Reply,
}

/// The table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection table is full ({0} flows)")]
pub struct Full(pub usize);

/// Timeouts per protocol.
pub fn timeout(proto: u8, closing: bool) -> Duration {
    match (proto, closing) {
        (6, true) => Duration::from_secs(10),
        (6, false) => Duration::from_secs(3600),
        (1 | 58, _) => Duration::from_secs(30),
        _ => Duration::from_secs(60),
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    last: Instant,
    idle: Duration,
}

/// Most flows [`Conntrack::take_inserted`] holds between two calls; later ones are not kept.
pub const JOURNAL_MAX: usize = 65_536;

/// A bounded connection table.
#[derive(Debug)]
pub struct Conntrack {
    flows: HashMap<FlowKey, Entry>,
    max: usize,
    /// Inserts refused because the table was full.
    pub full_drops: u64,
    /// Flows inserted since the last [`Conntrack::take_inserted`], once it was first called:
    /// another datapath tracking the same flows copies them (the kernel path's table).
    journal: Option<Vec<FlowKey>>,
}

impl Conntrack {
    /// An empty table for at most `max` flows.
    pub fn new(max: usize) -> Conntrack {
        Conntrack {
            flows: HashMap::new(),
            max,
            full_drops: 0,
            journal: None,
        }
    }

    /// The flows inserted since the last call (none at the first, which starts the journal).
    pub fn take_inserted(&mut self) -> Vec<FlowKey> {
        std::mem::take(self.journal.get_or_insert_with(Vec::new))
    }

    /// Flows tracked.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// The direction of a packet with `key` in a tracked flow, refreshing it (`closing`: a TCP
    /// FIN or RST, which shortens the flow's timeout).
    pub fn lookup(&mut self, key: &FlowKey, closing: bool, now: Instant) -> Option<Direction> {
        let (dir, entry) = if let Some(e) = self.flows.get_mut(key) {
            (Direction::Original, e)
        } else if let Some(e) = self.flows.get_mut(&key.reversed()) {
            (Direction::Reply, e)
        } else {
            return None;
        };
        if now.saturating_duration_since(entry.last) >= entry.idle {
            return None;
        }
        entry.last = now;
        if closing {
            entry.idle = entry.idle.min(timeout(key.proto, true));
        }
        Some(dir)
    }

    /// Tracks a flow its first packet `key` opened.
    pub fn insert(&mut self, key: FlowKey, now: Instant) -> Result<(), Full> {
        if !self.flows.contains_key(&key) && self.flows.len() >= self.max {
            self.full_drops += 1;
            return Err(Full(self.max));
        }
        self.flows.insert(
            key,
            Entry {
                last: now,
                idle: timeout(key.proto, false),
            },
        );
        if let Some(j) = self.journal.as_mut().filter(|j| j.len() < JOURNAL_MAX) {
            j.push(key);
        }
        Ok(())
    }

    /// Tracks a flow another datapath already tracks (the kernel's table, which nvod asks on
    /// a miss): `key` as it is keyed there, `idle` the time it has left there. Not journaled
    /// (that table has it); refused when full, as [`Conntrack::insert`]. A live entry for
    /// `key` is kept as it is (another packet tracked or adopted the flow meanwhile: adopting
    /// again changes nothing); one idle past its timeout is replaced.
    pub fn adopt(&mut self, key: FlowKey, idle: Duration, now: Instant) -> Result<(), Full> {
        if self
            .flows
            .get(&key)
            .is_some_and(|e| now.saturating_duration_since(e.last) < e.idle)
        {
            return Ok(());
        }
        if !self.flows.contains_key(&key) && self.flows.len() >= self.max {
            self.full_drops += 1;
            return Err(Full(self.max));
        }
        self.flows.insert(key, Entry { last: now, idle });
        Ok(())
    }

    /// Forgets flows idle past their timeout; how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.flows.len();
        self.flows
            .retain(|_, e| now.saturating_duration_since(e.last) < e.idle);
        before - self.flows.len()
    }

    /// Forgets every flow of `network`.
    pub fn flush(&mut self, network: u32) {
        self.flows.retain(|k, _| k.network != network);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sport: u16) -> FlowKey {
        FlowKey {
            network: 100,
            proto: 6,
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            sport,
            dport: 5432,
        }
    }

    #[test]
    fn replies_pass_and_idle_flows_go() {
        let t0 = Instant::now();
        let mut ct = Conntrack::new(2);
        assert_eq!(ct.lookup(&key(40000), false, t0), None);
        ct.insert(key(40000), t0).unwrap();
        assert_eq!(ct.lookup(&key(40000), false, t0), Some(Direction::Original));
        assert_eq!(
            ct.lookup(&key(40000).reversed(), false, t0),
            Some(Direction::Reply)
        );
        ct.insert(key(40001), t0).unwrap();
        assert_eq!(ct.insert(key(40002), t0), Err(Full(2)));
        assert_eq!(ct.full_drops, 1);
        // A FIN shortens the flow to 10 s.
        ct.lookup(&key(40001), true, t0);
        assert_eq!(ct.expire(t0 + Duration::from_secs(11)), 1);
        assert_eq!(
            ct.lookup(&key(40000), false, t0 + Duration::from_secs(12)),
            Some(Direction::Original)
        );
        assert_eq!(ct.expire(t0 + Duration::from_secs(3700)), 1);
        assert!(ct.is_empty());
    }

    #[test]
    fn adopted_flows_keep_their_time_left_and_are_not_journaled() {
        let t0 = Instant::now();
        let mut ct = Conntrack::new(1);
        assert!(ct.take_inserted().is_empty());
        ct.adopt(key(1), Duration::from_secs(5), t0).unwrap();
        assert!(ct.take_inserted().is_empty(), "the other table has it");
        assert_eq!(
            ct.lookup(&key(1).reversed(), false, t0 + Duration::from_secs(4)),
            Some(Direction::Reply)
        );
        assert_eq!(ct.adopt(key(2), Duration::from_secs(5), t0), Err(Full(1)));
        assert_eq!(
            ct.lookup(&key(1), false, t0 + Duration::from_secs(10)),
            None
        );
    }

    #[test]
    fn adopting_a_live_flow_again_changes_nothing() {
        let t0 = Instant::now();
        let mut ct = Conntrack::new(4);
        ct.insert(key(1), t0).unwrap();
        // Two workers both asked the other table; the second adopts after the first.
        ct.adopt(key(1), Duration::from_secs(1), t0).unwrap();
        assert_eq!(ct.len(), 1);
        assert_eq!(
            ct.lookup(&key(1), false, t0 + Duration::from_secs(5)),
            Some(Direction::Original),
            "the entry inserted here kept its own timeout"
        );
        // Idle past its timeout: replaced by the adopted one.
        let late = t0 + Duration::from_secs(5) + timeout(6, false);
        ct.adopt(key(1), Duration::from_secs(2), late).unwrap();
        assert_eq!(
            ct.lookup(&key(1), false, late + Duration::from_secs(1)),
            Some(Direction::Original)
        );
        assert_eq!(
            ct.lookup(&key(1), false, late + Duration::from_secs(4)),
            None
        );
    }
}
