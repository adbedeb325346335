//! The status page's share of `nvo monitor` (docs/monitor.md): while someone looks at the page
//! — a poll of `/status.json` within the last [`IDLE`] — one monitor listener copies drops and
//! learned, moved and aged MACs into the page's recent events ([`super::events::Recent`]);
//! when the polls stop, the listener goes, and with it the datapath's recording (the datapath
//! records only while a listener exists). An idle nvod with `http_listen` set therefore costs
//! the datapath nothing more than one without it.
//!
//! ```text
//!  GET /status.json ─► Watch::poll ── first poll after a quiet spell ─► Control::monitor_subscribe
//!                                                                        (type=drop,learn,move,age)
//!  copy task: Listener::next ─► Recent::push("monitor.drop", "unknown_vni vni 999 …")
//!             ends when no poll came for IDLE (Watch::finish_if_idle) or the monitor stops
//! ```
//!
//! Floods are left out: under broadcast traffic they would push everything else out of the
//! page's 50 events.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nvo_observe::monitor::Listener;

use super::events::Recent;

/// How long after the last poll the listener stays.
pub const IDLE: Duration = Duration::from_secs(30);

/// How often the copy task looks whether the page is still polled when no event comes.
const CHECK: Duration = Duration::from_secs(5);

/// The event types the page shows (a `GET /v1/monitor` query).
pub const TYPES: &str = "type=drop,learn,move,age";

/// Whether the page is being watched, and whether a listener runs for it.
#[derive(Debug, Clone)]
pub struct Watch {
    idle: Duration,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    last_poll: Option<Instant>,
    running: bool,
}

impl Watch {
    /// A watch whose listener stays `idle` after the last poll.
    pub fn new(idle: Duration) -> Watch {
        Watch {
            idle,
            state: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes a poll; true when no listener runs and the caller is to start one (and then call
    /// [`Watch::start`] or [`Watch::stopped`]).
    pub fn poll(&self) -> bool {
        let mut s = self.lock();
        s.last_poll = Some(Instant::now());
        let start = !s.running;
        s.running = true;
        start
    }

    /// Ends the listener's run when no poll came for the idle time: true when it is to stop.
    /// Checked and marked under one lock, so a poll arriving meanwhile starts a new one.
    pub fn finish_if_idle(&self) -> bool {
        let mut s = self.lock();
        let idle = s.last_poll.is_none_or(|t| t.elapsed() >= self.idle);
        if idle {
            s.running = false;
        }
        idle
    }

    /// The listener could not be made, or ended: the next poll tries again.
    pub fn stopped(&self) {
        self.lock().running = false;
    }

    /// Copies `listener`'s events into `recent` until the page is no longer polled.
    pub fn start(&self, listener: Listener, recent: Recent) {
        tokio::spawn(copy(self.clone(), listener, recent));
    }
}

async fn copy(watch: Watch, mut listener: Listener, recent: Recent) {
    log::debug!("status page watched: recording monitor events for it");
    loop {
        tokio::select! {
            event = listener.next() => match event {
                Some(ev) => recent.push(format!("monitor.{}", ev.kind.name()), ev.summary()),
                None => {
                    watch.stopped();
                    return;
                }
            },
            () = tokio::time::sleep(CHECK) => {}
        }
        if watch.finish_if_idle() {
            log::debug!("status page no longer polled: its monitor listener ends");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_poll_starts_a_listener_and_later_ones_do_not() {
        let w = Watch::new(IDLE);
        assert!(w.poll());
        assert!(!w.poll());
        assert!(!w.finish_if_idle(), "just polled");
        assert!(!w.poll(), "still running");
    }

    #[test]
    fn an_idle_watch_ends_its_listener_and_the_next_poll_starts_another() {
        let w = Watch::new(Duration::ZERO);
        assert!(w.poll());
        assert!(w.finish_if_idle());
        assert!(w.poll(), "a poll after the end starts a new listener");
    }

    #[test]
    fn a_listener_that_could_not_be_made_is_tried_again() {
        let w = Watch::new(IDLE);
        assert!(w.poll());
        w.stopped();
        assert!(w.poll());
    }
}
