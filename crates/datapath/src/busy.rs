//! Busy polling (nvod's `busy_poll_us`), shared by the node's workers.
//!
//! A request and its reply were seldom read by the same worker when the port's fanout hashed
//! the inner flow and the underlay's `SO_REUSEPORT` the outer 4-tuple: measured on a two-host
//! lab with two workers per nvod, the worker that sent a ping's request on h1 was not the one
//! the reply reached, so a busy window kept per worker spun on the wrong thread and the reply
//! still paid a wake-up (docs/design/dataplane.md, "Where a ping's round trip goes"). Since
//! nvo-io's `steer` the VXLAN, VXLAN-GPE and Geneve replies of an IP flow reach the worker that
//! read its request; STT and the other raw IP tunnels (worker 0 reads them), TAP ports (the
//! kernel's queue hash) and user UDP profiles still cross. So the window is
//! the node's: a round that handled packets on any worker keeps every worker polling
//! without sleeping until the window ends, and the round that opens a closed window wakes the
//! other workers (their command eventfd, after the round's packets went out), so that the one
//! the reply will reach is polling when it comes rather than asleep. One atomic `fetch_max` per
//! such round (a batch, not a packet), one load per loop turn while the window may be open,
//! one eventfd write per other worker per window opened (none while traffic keeps it open);
//! nothing at all when busy polling is off.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvo_io::EventFd;

/// The node's busy-poll window: until when its workers poll without sleeping.
#[derive(Clone, Debug)]
pub(crate) struct BusyPoll {
    /// How long a round that handled packets keeps the workers polling (zero: off).
    window: Duration,
    /// What the shared deadline counts from (one instant for every worker of the node).
    epoch: Instant,
    /// Nanoseconds after `epoch` until which every worker polls without sleeping.
    until: Arc<AtomicU64>,
    /// Every worker's wake-up eventfd, by worker index.
    wakes: Arc<Vec<Arc<EventFd>>>,
}

impl BusyPoll {
    /// A window of `window` (zero: busy polling off) for the workers woken by `wakes`, to
    /// clone into every worker.
    pub(crate) fn new(window: Duration, wakes: Vec<Arc<EventFd>>) -> BusyPoll {
        BusyPoll {
            window,
            epoch: Instant::now(),
            until: Arc::new(AtomicU64::new(0)),
            wakes: Arc::new(wakes),
        }
    }

    /// Whether busy polling is on.
    pub(crate) fn on(&self) -> bool {
        !self.window.is_zero()
    }

    /// A round that began at `now` handled packets: every worker polls on until
    /// `now + window`. Returns whether this opened a closed window (then
    /// [`BusyPoll::wake_others`] once the round's packets are out).
    pub(crate) fn handled(&self, now: Instant) -> bool {
        if !self.on() {
            return false;
        }
        let before = self.until.fetch_max(self.nanos(now + self.window), Relaxed);
        before <= self.nanos(now)
    }

    /// Wakes every worker but `worker`, so that they poll through the window just opened.
    pub(crate) fn wake_others(&self, worker: usize) {
        for (at, wake) in self.wakes.iter().enumerate() {
            if at != worker {
                // A failed notify only costs that worker its wake-up: it sleeps as without
                // busy polling.
                let _ = wake.notify();
            }
        }
    }

    /// Whether a worker should poll without sleeping at `now`.
    pub(crate) fn spinning(&self, now: Instant) -> bool {
        self.on() && self.nanos(now) < self.until.load(Relaxed)
    }

    fn nanos(&self, at: Instant) -> u64 {
        // u64 nanoseconds last 584 years of uptime; saturate rather than wrap.
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_never_spins() {
        let b = BusyPoll::new(Duration::ZERO, Vec::new());
        let now = Instant::now();
        assert!(!b.handled(now));
        assert!(!b.spinning(now));
    }

    #[test]
    fn one_workers_packets_keep_every_worker_polling_for_the_window() {
        let wakes: Vec<_> = (0..2).map(|_| Arc::new(EventFd::new().unwrap())).collect();
        let w0 = BusyPoll::new(Duration::from_micros(50), wakes.clone());
        let w1 = w0.clone();
        let start = Instant::now();
        let us = |n| start + Duration::from_micros(n);
        assert!(!w1.spinning(start), "nothing handled yet");
        assert!(w0.handled(start), "the first round opens the window");
        assert!(w1.spinning(us(49)));
        assert!(!w1.spinning(us(50)));
        // A later round extends the window without opening it again; an earlier one (a
        // slower worker) never shortens it.
        assert!(!w1.handled(us(40)));
        assert!(!w0.handled(us(10)));
        assert!(w0.spinning(us(89)));
        assert!(!w0.spinning(us(90)));
        // Past the end, a round opens it again.
        assert!(w1.handled(us(200)));
    }

    #[test]
    fn opening_the_window_wakes_the_other_workers_only() {
        let wakes: Vec<_> = (0..3).map(|_| Arc::new(EventFd::new().unwrap())).collect();
        let b = BusyPoll::new(Duration::from_micros(50), wakes.clone());
        b.wake_others(1);
        let woken: Vec<u64> = wakes.iter().map(|w| w.drain().unwrap()).collect();
        assert_eq!(woken, [1, 0, 1]);
    }
}
