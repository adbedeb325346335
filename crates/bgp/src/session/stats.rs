//! Session state and counters, shared between the session task (writer) and the handle
//! (reader) behind one mutex held only for a few field updates.

use std::net::Ipv4Addr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::SessionState;
use crate::message::msg_type;

/// BGP messages counted by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MessageCounts {
    /// OPEN.
    pub open: u64,
    /// UPDATE.
    pub update: u64,
    /// NOTIFICATION.
    pub notification: u64,
    /// KEEPALIVE.
    pub keepalive: u64,
    /// ROUTE-REFRESH.
    pub route_refresh: u64,
}

impl MessageCounts {
    pub(super) fn count(&mut self, msg_type: u8) {
        let slot = match msg_type {
            msg_type::OPEN => &mut self.open,
            msg_type::UPDATE => &mut self.update,
            msg_type::NOTIFICATION => &mut self.notification,
            msg_type::KEEPALIVE => &mut self.keepalive,
            msg_type::ROUTE_REFRESH => &mut self.route_refresh,
            _ => return,
        };
        *slot += 1;
    }
}

/// A snapshot of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStats {
    /// State now.
    pub state: SessionState,
    /// Time since the last state change.
    pub time_in_state: Duration,
    /// The peer's BGP identifier, from its last OPEN.
    pub peer_id: Option<Ipv4Addr>,
    /// Hold time negotiated with the last OPEN (0: none).
    pub hold_time: Option<u16>,
    /// The restart time of the peer's graceful restart capability, when it sent one.
    pub peer_restart_time: Option<u16>,
    /// How many times the session reached Established.
    pub established: u64,
    /// Messages received, by type.
    pub messages_in: MessageCounts,
    /// Messages sent, by type.
    pub messages_out: MessageCounts,
    /// UPDATEs treated as withdraw (RFC 7606).
    pub treat_as_withdraw: u64,
    /// Path attributes discarded (RFC 7606).
    pub attributes_discarded: u64,
    /// IPv4 unicast prefixes, other-family MP attributes and looped EVPN routes (our AS in
    /// the AS_PATH, our identifier as ORIGINATOR_ID) received and ignored.
    pub ignored_nlri: u64,
    /// Outbound messages dropped: queued when the session went down, or too big to emit.
    pub updates_dropped: u64,
    /// The last error: a NOTIFICATION sent or received, a connection failure.
    pub last_error: Option<String>,
}

#[derive(Debug)]
struct Inner {
    stats: SessionStats,
    since: Instant,
    /// Counts Established periods; outbound messages from an earlier one are stale.
    epoch: u64,
}

/// The shared half.
#[derive(Debug)]
pub(super) struct Shared {
    inner: Mutex<Inner>,
}

impl Shared {
    pub(super) fn new() -> Self {
        let stats = SessionStats {
            state: SessionState::Idle,
            time_in_state: Duration::ZERO,
            peer_id: None,
            hold_time: None,
            peer_restart_time: None,
            established: 0,
            messages_in: MessageCounts::default(),
            messages_out: MessageCounts::default(),
            treat_as_withdraw: 0,
            attributes_discarded: 0,
            ignored_nlri: 0,
            updates_dropped: 0,
            last_error: None,
        };
        Shared {
            inner: Mutex::new(Inner {
                stats,
                since: Instant::now(),
                epoch: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The task never panics while holding it; a poisoned lock still holds counters.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn snapshot(&self) -> SessionStats {
        let inner = self.lock();
        let mut stats = inner.stats.clone();
        stats.time_in_state = inner.since.elapsed();
        stats
    }

    /// Applies `f` to the counters.
    pub(super) fn update(&self, f: impl FnOnce(&mut SessionStats)) {
        f(&mut self.lock().stats)
    }

    /// Sets the state; true when it changed. Entering Established starts a new epoch.
    pub(super) fn set_state(&self, state: SessionState) -> bool {
        let mut inner = self.lock();
        if inner.stats.state == state {
            return false;
        }
        inner.stats.state = state;
        inner.since = Instant::now();
        if state == SessionState::Established {
            inner.epoch += 1;
            inner.stats.established += 1;
        }
        true
    }

    /// The current epoch when Established, else the state.
    pub(super) fn established_epoch(&self) -> Result<u64, SessionState> {
        let inner = self.lock();
        match inner.stats.state {
            SessionState::Established => Ok(inner.epoch),
            other => Err(other),
        }
    }

    pub(super) fn error(&self, error: String) {
        self.lock().stats.last_error = Some(error);
    }
}
