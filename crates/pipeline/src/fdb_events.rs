//! What happened to the FDB, as events for a monitor (`nvo monitor`): a MAC learned, moved or
//! aged out. Off by default; the datapath turns it on while someone listens
//! ([`Pipeline::set_fdb_events`]) and drains it after each batch
//! ([`Pipeline::take_fdb_events`]).
//!
//! This is the pipeline's one concession to observability: learning happens inside the
//! pipeline, where no action tells the datapath about it, so the verdicts are noted here.
//! When off, a learn costs one branch on a `bool`; when on, a learn that changes the table
//! costs one push into a bounded buffer (the FDB's verdict already names where a moved MAC
//! was). A full buffer counts the event as lost instead of growing.

use crate::{FdbDest, Mac, Pipeline, Vni};

/// How many events are kept between two drains; more are counted as lost.
pub const FDB_EVENTS_CAP: usize = 4096;

/// What happened to an FDB entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdbChange {
    /// A new learned entry.
    Learned,
    /// A learned (or EVPN) entry moved here from `from`.
    Moved {
        /// Where the MAC was before.
        from: Option<FdbDest>,
    },
    /// A learned entry removed because its MAC was silent for longer than the ageing time.
    Aged,
}

/// One change to one network's FDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdbEvent {
    /// The network.
    pub vni: Vni,
    /// The MAC.
    pub mac: Mac,
    /// Where the entry sends frames (for `Aged`: sent, until it was removed).
    pub dest: FdbDest,
    /// What happened.
    pub change: FdbChange,
}

/// The bounded buffer of events and whether it is on.
#[derive(Debug, Default)]
pub(crate) struct FdbEvents {
    pub(crate) on: bool,
    events: Vec<FdbEvent>,
    lost: u64,
}

impl FdbEvents {
    /// Notes `event`, or counts it lost when the buffer is full.
    pub(crate) fn push(&mut self, event: FdbEvent) {
        if self.events.len() < FDB_EVENTS_CAP {
            self.events.push(event);
        } else {
            self.lost += 1;
        }
    }
}

impl Pipeline {
    /// Turns FDB events on or off; off drops what was noted.
    pub fn set_fdb_events(&mut self, on: bool) {
        self.fdb_events.on = on;
        if !on {
            self.fdb_events.events = Vec::new();
            self.fdb_events.lost = 0;
        }
    }

    /// Whether FDB events are on.
    pub fn fdb_events_on(&self) -> bool {
        self.fdb_events.on
    }

    /// Moves the events noted since the last call into `out`; returns how many were lost
    /// to a full buffer since then.
    pub fn take_fdb_events(&mut self, out: &mut Vec<FdbEvent>) -> u64 {
        out.append(&mut self.fdb_events.events);
        std::mem::take(&mut self.fdb_events.lost)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::{Actions, Decapsulated, Limits, NetworkSpec, PortId, ProfileTag};

    fn frame(src: [u8; 6], dst: [u8; 6]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0);
        f
    }

    fn pipeline() -> Pipeline {
        let mut p = Pipeline::new(Limits::default());
        let spec = NetworkSpec {
            accept_remotes: Some(crate::AcceptRemotes::Any),
            ..NetworkSpec::new(Vni(10))
        };
        p.add_network(spec).unwrap();
        p.add_port(PortId(1), Vni(10)).unwrap();
        p.add_port(PortId(2), Vni(10)).unwrap();
        p
    }

    const A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

    #[test]
    fn off_notes_nothing() {
        let mut p = pipeline();
        let mut actions = Actions::new();
        p.from_port(PortId(1), &frame(A, B), Instant::now(), &mut actions);
        let mut out = Vec::new();
        assert_eq!(p.take_fdb_events(&mut out), 0);
        assert!(out.is_empty());
    }

    #[test]
    fn learn_move_and_age_are_noted_refresh_is_not() {
        let mut p = pipeline();
        p.set_fdb_events(true);
        let mut actions = Actions::new();
        let t0 = Instant::now();
        p.from_port(PortId(1), &frame(A, B), t0, &mut actions);
        assert!(actions.flooded(), "B is unknown: flooded");
        p.from_port(PortId(1), &frame(A, B), t0, &mut actions);
        p.from_port(PortId(2), &frame(A, B), t0, &mut actions);
        let remote = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let decap = Decapsulated {
            src: remote,
            vni: Vni(10),
            profile: ProfileTag::VXLAN,
            dont_learn: false,
            src_node: None,
        };
        p.from_decapsulated(decap, 110, &frame(B, A), t0, &mut actions);
        assert!(!actions.flooded(), "A is known: not a flood");
        p.age(t0 + NetworkSpec::DEFAULT_AGEING + Duration::from_secs(1));
        let mut out = Vec::new();
        assert_eq!(p.take_fdb_events(&mut out), 0);
        let mac = |m| Mac(m);
        let seen: Vec<_> = out.iter().map(|e| (e.mac, e.dest, e.change)).collect();
        assert_eq!(seen.len(), 5, "{seen:?}");
        assert_eq!(
            seen[0],
            (mac(A), FdbDest::Port(PortId(1)), FdbChange::Learned)
        );
        assert_eq!(
            seen[1],
            (
                mac(A),
                FdbDest::Port(PortId(2)),
                FdbChange::Moved {
                    from: Some(FdbDest::Port(PortId(1)))
                }
            )
        );
        assert_eq!(
            seen[2],
            (mac(B), FdbDest::Remote(remote), FdbChange::Learned)
        );
        let mut aged: Vec<_> = seen[3..].iter().map(|s| (s.0, s.2)).collect();
        aged.sort_by_key(|a| a.0);
        assert_eq!(aged, [(mac(A), FdbChange::Aged), (mac(B), FdbChange::Aged)]);
    }

    #[test]
    fn a_full_buffer_counts_lost() {
        let mut p = pipeline();
        p.set_fdb_events(true);
        let mut actions = Actions::new();
        let t0 = Instant::now();
        for n in 0..=100u8 {
            p.from_port(PortId(1), &frame([2, 1, 0, 0, n, 0], B), t0, &mut actions);
        }
        let mut out = Vec::new();
        assert_eq!(p.take_fdb_events(&mut out), 0);
        assert_eq!(out.len(), 101);
        // Fill it directly: the network bounds (4096 learned by default, a quarter per port)
        // keep a real flood below the buffer's size.
        let extra = 7;
        for _ in 0..(FDB_EVENTS_CAP + extra) {
            p.fdb_events.push(out[0]);
        }
        out.clear();
        assert_eq!(p.take_fdb_events(&mut out), extra as u64);
        assert_eq!(out.len(), FDB_EVENTS_CAP);
        assert_eq!(p.take_fdb_events(&mut out), 0, "lost is reset by a drain");
    }
}
