//! The RFC 4271 §8 state machine of one session as a pure function: [`transition`] takes the
//! state and one [`Event`] and returns the next state and the [`Action`]s to perform. It reads
//! no clock and touches no socket; the session task (`task`) waits for events, calls it, and
//! performs the actions in order.
//!
//! ```text
//!  Idle ─Start─► Connect ──Connected──► OpenSent ──OPEN ok──► OpenConfirm ──KEEPALIVE──► Established
//!   ▲              │  (passive: Active, waiting for Accepted) │                            │
//!   │              └─fail─► Active ──ConnectRetry──► Connect   └──── error/NOTIFICATION ────┴─► Active
//!   └──────────────── Stop (Cease 6/2 on any open connection) ◄─ every state
//! ```
//!
//! Connections and timers are named, not held: the driver owns the sockets and gives each
//! connection a [`ConnId`]; a timer is a [`Timer`] the driver arms on [`Action::StartTimer`]
//! and reports with [`Event::TimerExpired`]. Every [`Action::Send`] is answered by
//! [`Event::Sent`] or [`Event::SendFailed`] before any other event, and is the last action of
//! its batch, so what depends on a write having gone out (the hold timer after our OPEN,
//! OpenConfirm after our KEEPALIVE) is decided when the answer arrives.
//!
//! One connection at a time, except while the OPENs are exchanged: a connection the listener
//! hands over then is kept beside ours until the peer's BGP identifier is known (from either
//! OPEN), and then only the connection opened by the side with the higher identifier survives
//! (RFC 4271 §6.8); the other gets Cease / Connection Collision Resolution (6/7). In
//! Established a new connection is refused the same way, unless the peer advertised graceful
//! restart for EVPN: then it has restarted (RFC 4724 §4.2), the old session ends gracefully
//! and the new connection takes over.

use std::mem;
use std::time::Duration;

mod established;
mod handshake;
#[cfg(test)]
mod tests;

use super::conn::{Incoming, RecvError};
use super::negotiate::{Negotiated, Refusal};
use super::{Outbound, SessionConfig, SessionEvent, SessionState, MAX_RETRY};
use crate::{code, Message};

use handshake::Pending;

/// RFC 4271 §8.2.2: the hold timer while waiting for the peer's OPEN (4 minutes suggested).
pub(super) const OPEN_HOLD: Duration = Duration::from_secs(240);
/// Bound on a write when no hold timer bounds the session.
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(90);
/// Cease subcodes (RFC 4486 §4).
const CEASE_ADMIN_SHUTDOWN: u8 = 2;
const CEASE_COLLISION: u8 = 7;

/// A connection, named by the driver that owns its socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct ConnId(pub(super) u64);

/// The timers of RFC 4271 §10 the machine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Timer {
    /// Wait in Active before connecting again; the driver adds jitter (RFC 4271 §10).
    ConnectRetry,
    /// Hold timer of one connection: [`OPEN_HOLD`] until the peer's OPEN, then the
    /// negotiated hold time.
    Hold(ConnId),
    /// KEEPALIVE every third of the negotiated hold time.
    Keepalive(ConnId),
}

/// Why a write failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SendFailure {
    /// The message could not be emitted (an UPDATE over 4096 bytes): nothing was written.
    #[error("{0}")]
    Unencodable(String),
    /// The socket failed or the write timed out.
    #[error("{0}")]
    Io(String),
}

/// The inputs of the machine (RFC 4271 §8.1 names in brackets).
#[derive(Debug)]
pub(super) enum Event {
    /// The task begins (ManualStart / ManualStart_with_PassiveTcpEstablishment).
    Start,
    /// The handle asked to stop, or was dropped (ManualStop).
    Stop,
    /// The speaker restarts: end without a NOTIFICATION (RFC 4724 §4).
    Abandon,
    /// Our connection attempt succeeded (TcpCRAcked).
    Connected(ConnId),
    /// Our connection attempt failed (TcpConnectionFails), with the error.
    ConnectFailed(String),
    /// Our connection attempt took longer than `max(connect_retry, 1s)`.
    ConnectTimedOut,
    /// The listener handed over a connection from the peer (TcpConnection_Valid).
    Accepted(ConnId),
    /// A whole message (BGPOpen, KeepAliveMsg, UpdateMsg, NotifMsg, ...).
    Received(ConnId, Incoming),
    /// The connection closed or failed, or a message could not be decoded (BGPHeaderErr,
    /// BGPOpenMsgErr, UpdateMsgErr).
    RecvFailed(ConnId, RecvError),
    /// An [`Action::Send`] went out.
    Sent {
        /// The connection.
        conn: ConnId,
        /// The type of the message sent.
        msg_type: u8,
    },
    /// An [`Action::Send`] failed.
    SendFailed {
        /// The connection.
        conn: ConnId,
        /// The type of the message not sent.
        msg_type: u8,
        /// Why.
        error: SendFailure,
    },
    /// A timer armed with [`Action::StartTimer`] ran out (ConnectRetryTimer_Expires,
    /// HoldTimer_Expires, KeepaliveTimer_Expires).
    TimerExpired(Timer),
    /// A message the speaker queued; the driver reads them only while Established.
    Outbound(Outbound),
}

/// The outputs of the machine, performed by the driver in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    /// Start a TCP connection to the peer, giving up after `limit`.
    Connect {
        /// How long the attempt may take.
        limit: Duration,
    },
    /// Abandon the connection attempt.
    CancelConnect,
    /// Write a message; answered with [`Event::Sent`] or [`Event::SendFailed`].
    Send {
        /// The connection.
        conn: ConnId,
        /// The message.
        message: Message,
    },
    /// Send a NOTIFICATION (best effort) and close the connection; its timers go with it.
    Notify {
        /// The connection.
        conn: ConnId,
        /// Error code.
        code: u8,
        /// Error subcode.
        subcode: u8,
        /// Data field.
        data: Vec<u8>,
    },
    /// Close the connection without a NOTIFICATION; its timers go with it.
    Close(ConnId),
    /// Arm a timer (again) to run out after this long.
    StartTimer {
        /// The timer.
        timer: Timer,
        /// Its duration.
        after: Duration,
    },
    /// Disarm a timer.
    StopTimer(Timer),
    /// Bound every later write by this: the hold time once negotiated, so a peer that stops
    /// reading fails the session no later than its hold timer would.
    WriteTimeout(Duration),
    /// The session's state changed: record it and tell the speaker.
    State(SessionState),
    /// Tell the speaker.
    Emit(SessionEvent),
    /// Record the last error.
    Error(String),
    /// Record what the OPEN exchange settled.
    Negotiated(Negotiated),
    /// Count what one received UPDATE amounted to (RFC 7606).
    Inbound {
        /// It was treated as withdraw.
        treat_as_withdraw: bool,
        /// Attributes discarded.
        discarded: u64,
        /// NLRI ignored.
        ignored: u64,
    },
    /// Count outbound messages dropped.
    UpdatesDropped(u64),
    /// Drop (and count) what was queued for the Established period that just ended.
    DropQueued,
}

/// Where the session is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not started yet.
    Idle,
    /// Our connection attempt is under way (Connect).
    Connect,
    /// Passive: waiting for the peer's connection (Active).
    Listen,
    /// Waiting for the ConnectRetry timer, or the peer's connection (Active).
    Retry,
    /// OpenSent / OpenConfirm over one or two connections.
    Handshake(Vec<Pending>),
    /// Established on one connection.
    Established(established::Up),
    /// Stopped: the task ends (Idle).
    Stopped,
}

/// The state of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    phase: Phase,
    /// The R/F bits go only into OPENs until the first Established.
    restarting: bool,
    /// The next ConnectRetry wait (before jitter): doubles up to [`MAX_RETRY`].
    delay: Duration,
    /// The state last reported with [`Action::State`].
    reported: SessionState,
    /// Counts Established periods, as the stats do; outbound messages from an earlier one
    /// are stale.
    epoch: u64,
}

impl State {
    /// Idle, before [`Event::Start`].
    pub(super) fn new(cfg: &SessionConfig) -> Self {
        State {
            phase: Phase::Idle,
            restarting: cfg.restarting && cfg.graceful_restart.is_some(),
            delay: base_delay(cfg),
            reported: SessionState::Idle,
            epoch: 0,
        }
    }

    /// The session has stopped: the task ends.
    pub(super) fn finished(&self) -> bool {
        self.phase == Phase::Stopped
    }

    /// Outbound messages are read (and written) only while Established.
    pub(super) fn reads_outbound(&self) -> bool {
        matches!(self.phase, Phase::Established(_))
    }

    /// Reports `state` when it differs from the last one reported.
    fn report(&mut self, state: SessionState, out: &mut Vec<Action>) {
        if self.reported == state {
            return;
        }
        self.reported = state;
        if state == SessionState::Established {
            self.epoch += 1;
        }
        out.push(Action::State(state));
    }

    /// Connect (or, passive, wait in Active for the peer).
    fn attempt(&mut self, cfg: &SessionConfig, out: &mut Vec<Action>) -> Phase {
        if cfg.passive {
            self.report(SessionState::Active, out);
            return Phase::Listen;
        }
        self.report(SessionState::Connect, out);
        out.push(Action::Connect {
            limit: connect_limit(cfg),
        });
        Phase::Connect
    }

    /// A connection ended or never came up: Active, then try again after the ConnectRetry
    /// wait, which starts again from `connect_retry` after an Established session.
    fn retry(&mut self, cfg: &SessionConfig, established: bool, out: &mut Vec<Action>) -> Phase {
        let base = base_delay(cfg);
        if established {
            self.delay = base;
        }
        if cfg.passive {
            return self.attempt(cfg, out);
        }
        self.report(SessionState::Active, out);
        out.push(Action::StartTimer {
            timer: Timer::ConnectRetry,
            after: self.delay,
        });
        self.delay = self.delay.saturating_mul(2).min(MAX_RETRY.max(base));
        Phase::Retry
    }

    fn finish(&mut self, out: &mut Vec<Action>) -> Phase {
        self.report(SessionState::Idle, out);
        Phase::Stopped
    }
}

/// The machine: the next state and what to do for `event` in `state`.
pub(super) fn transition(
    cfg: &SessionConfig,
    mut state: State,
    event: Event,
) -> (State, Vec<Action>) {
    let mut out = Vec::new();
    let phase = mem::replace(&mut state.phase, Phase::Stopped);
    state.phase = match (phase, event) {
        (Phase::Idle, Event::Start) => state.attempt(cfg, &mut out),
        (Phase::Connect, Event::Connected(conn)) => {
            state.admit(cfg, Vec::new(), conn, true, &mut out)
        }
        (Phase::Connect, Event::ConnectFailed(error)) => {
            out.push(Action::Error(format!(
                "connect to {} failed: {error}",
                cfg.peer
            )));
            state.retry(cfg, false, &mut out)
        }
        (Phase::Connect, Event::ConnectTimedOut) => {
            let secs = connect_limit(cfg).as_secs_f32();
            out.push(Action::Error(format!(
                "connect to {} timed out after {secs}s{}",
                cfg.peer,
                silent_drop_hint(cfg)
            )));
            state.retry(cfg, false, &mut out)
        }
        (Phase::Connect, Event::Accepted(conn)) => {
            out.push(Action::CancelConnect);
            state.admit(cfg, Vec::new(), conn, false, &mut out)
        }
        (Phase::Connect, Event::Stop | Event::Abandon) => {
            out.push(Action::CancelConnect);
            state.finish(&mut out)
        }
        (Phase::Listen, Event::Accepted(conn)) => {
            state.admit(cfg, Vec::new(), conn, false, &mut out)
        }
        (Phase::Retry, Event::TimerExpired(Timer::ConnectRetry)) => state.attempt(cfg, &mut out),
        (Phase::Retry, Event::Accepted(conn)) => {
            out.push(Action::StopTimer(Timer::ConnectRetry));
            state.admit(cfg, Vec::new(), conn, false, &mut out)
        }
        (Phase::Retry, Event::Stop | Event::Abandon) => {
            out.push(Action::StopTimer(Timer::ConnectRetry));
            state.finish(&mut out)
        }
        (Phase::Idle | Phase::Listen, Event::Stop | Event::Abandon) => state.finish(&mut out),
        (Phase::Handshake(conns), event) => state.handshake(cfg, conns, event, &mut out),
        (Phase::Established(up), event) => state.established(cfg, up, event, &mut out),
        (phase, event) => {
            ignore(event, &mut out);
            phase
        }
    };
    (state, out)
}

/// An event that does not apply in the current state: a connection nobody will use is
/// closed, a message taken from the outbound queue is counted as dropped.
fn ignore(event: Event, out: &mut Vec<Action>) {
    match event {
        Event::Connected(conn) | Event::Accepted(conn) => out.push(Action::Close(conn)),
        Event::Outbound(_) => out.push(Action::UpdatesDropped(1)),
        _ => {}
    }
}

/// The first ConnectRetry wait.
fn base_delay(cfg: &SessionConfig) -> Duration {
    cfg.connect_retry.max(Duration::from_millis(100))
}

/// How long one connection attempt may take.
/// Why a peer may be dropping our SYNs without a word, when we sign or require TTL 255.
fn silent_drop_hint(cfg: &SessionConfig) -> &'static str {
    match (cfg.auth.md5_key.is_some(), cfg.auth.ttl_security) {
        (true, true) => {
            " (tcp-md5 and ttl security are on: a peer with another or no password, or more \
             than one hop away, drops our SYNs silently; check the passwords and nstat's \
             TCPMD5Failure, TCPMD5NotFound and TCPMinTTLDrop on both sides)"
        }
        (true, false) => {
            " (tcp-md5 is on: a peer with another or no password drops our SYNs silently; check \
             both passwords, and nstat's TCPMD5Failure and TCPMD5NotFound on both sides)"
        }
        (false, true) => {
            " (ttl security is on: a peer that is more than one hop away, or does not send with \
             ttl 255, is not heard; see nstat's TCPMinTTLDrop)"
        }
        (false, false) => "",
    }
}

fn connect_limit(cfg: &SessionConfig) -> Duration {
    cfg.connect_retry.max(Duration::from_secs(1))
}

/// The hold time as a duration; `None` for 0 (no hold timer).
fn hold_time(seconds: u16) -> Option<Duration> {
    (seconds > 0).then(|| Duration::from_secs(u64::from(seconds)))
}

/// KEEPALIVE every third of the hold time (RFC 4271 §10); none when the hold time is 0.
fn keepalive_interval(seconds: u16) -> Option<Duration> {
    hold_time(seconds).map(|h| h / 3)
}

/// Arms `timer` for `after`, or disarms it for `None`.
fn set_timer(timer: Timer, after: Option<Duration>, out: &mut Vec<Action>) {
    out.push(match after {
        Some(after) => Action::StartTimer { timer, after },
        None => Action::StopTimer(timer),
    });
}

/// NOTIFICATION Finite State Machine Error with the RFC 6608 subcode of the state.
fn fsm_error(state: SessionState, msg_type: u8) -> Refusal {
    let subcode = match state {
        SessionState::OpenSent => 1,
        SessionState::OpenConfirm => 2,
        SessionState::Established => 3,
        _ => 0,
    };
    Refusal {
        code: code::FSM,
        subcode,
        data: vec![msg_type],
        reason: format!("unexpected message type {msg_type} in {state:?}"),
    }
}

/// The name of a NOTIFICATION error code, for `last_error` lines.
fn code_name(code: u8) -> &'static str {
    crate::code::name(code)
}
