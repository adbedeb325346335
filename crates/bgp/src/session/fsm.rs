//! The session task: the RFC 4271 §8 state machine, driven by TCP, timers and the handle.
//!
//! ```text
//!  Idle ─► Connect ──tcp up──► OpenSent ──OPEN ok──► OpenConfirm ──KEEPALIVE──► Established
//!   ▲        │  (passive: Active, waiting for accept)   │                           │
//!   │        └─fail─► Active ──connect_retry──► Connect  └──── error/NOTIFICATION ───┴─► Active
//!   └──────────────── stop (Cease 6/2 on any open connection) ◄─ every state
//! ```
//!
//! One connection at a time, except while the OPENs are exchanged: a connection the listener
//! hands over then is kept beside ours until the peer's BGP identifier is known (from either
//! OPEN), and then only the connection opened by the side with the higher identifier survives
//! (RFC 4271 §6.8); the other gets Cease / Connection Collision Resolution (6/7). In
//! Established a new connection is refused the same way, unless the peer advertised graceful
//! restart for EVPN: then it has restarted (RFC 4724 §4.2), the old session ends gracefully
//! and the new connection takes over.

use std::future::pending;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{sleep, sleep_until, timeout, Instant};

mod established;

use super::conn::{notification_data, Conn, Incoming, RecvError};
use super::negotiate::{check_peer_open, local_open, Negotiated, Refusal};
use super::stats::Shared;
use super::{Control, Outbound, SessionConfig, SessionEvent, SessionState, MAX_RETRY};
use crate::{code, Message};

/// RFC 4271 §8.2.2: the hold timer while waiting for the peer's OPEN (4 minutes suggested).
const OPEN_HOLD: Duration = Duration::from_secs(240);
/// Bound on a write when no hold timer bounds the session.
const WRITE_TIMEOUT: Duration = Duration::from_secs(90);
/// Cease subcodes (RFC 4486 §4).
const CEASE_ADMIN_SHUTDOWN: u8 = 2;
const CEASE_COLLISION: u8 = 7;

/// How one connection ended.
#[derive(Debug)]
enum End {
    /// Stop requested or the handle dropped.
    Stopped,
    /// Failed; `established` when it had been up (the retry backoff starts again).
    Failed { established: bool },
    /// The peer, with graceful restart, connected again while Established.
    Replaced(TcpStream),
}

/// The handle asked to stop.
#[derive(Debug)]
struct Stopped;

/// A connection exchanging OPENs, with its own timers (RFC 4271 §8.2.2).
#[derive(Debug)]
struct Pending {
    conn: Conn,
    /// Set once the peer's OPEN was accepted (OpenConfirm).
    open: Option<Negotiated>,
    hold: Option<Instant>,
    keepalive: Option<Instant>,
}

/// What one received message does to a pending connection.
#[derive(Debug)]
enum Step {
    Opened,
    Up,
    /// Close it with this NOTIFICATION.
    Refuse(Refusal),
    /// It is gone (closed, error, NOTIFICATION received).
    Lost(String),
}

/// What woke the handshake.
#[derive(Debug)]
enum Wake {
    Control(Option<Control>),
    Recv(usize, Result<Incoming, RecvError>),
    Timer,
}

/// The task's state; see [`super::spawn`].
#[derive(Debug)]
pub(super) struct Task {
    cfg: SessionConfig,
    index: usize,
    events: mpsc::Sender<(usize, SessionEvent)>,
    control: mpsc::Receiver<Control>,
    outbound: mpsc::Receiver<Outbound>,
    shared: Arc<Shared>,
    /// The R/F bits go only into OPENs until the first Established.
    restarting: bool,
    /// Bound on one write: the hold time once negotiated, so a peer that stops reading
    /// fails the session no later than its hold timer would.
    write_timeout: Duration,
}

impl Task {
    pub(super) fn new(
        cfg: SessionConfig,
        index: usize,
        events: mpsc::Sender<(usize, SessionEvent)>,
        control: mpsc::Receiver<Control>,
        outbound: mpsc::Receiver<Outbound>,
        shared: Arc<Shared>,
    ) -> Self {
        let restarting = cfg.restarting && cfg.graceful_restart.is_some();
        Task {
            cfg,
            index,
            events,
            control,
            outbound,
            shared,
            restarting,
            write_timeout: WRITE_TIMEOUT,
        }
    }

    /// Runs until stopped: connect or accept, exchange OPENs, stay up, retry with backoff.
    pub(super) async fn run(mut self) {
        let base = self.cfg.connect_retry.max(Duration::from_millis(100));
        let mut delay = base;
        let mut next: Option<Conn> = None;
        loop {
            let conn = match next.take() {
                Some(conn) => Some(conn),
                None => match self.open_connection().await {
                    Ok(conn) => conn,
                    Err(Stopped) => break,
                },
            };
            if let Some(conn) = conn {
                match self.run_connection(conn).await {
                    End::Stopped => break,
                    End::Replaced(stream) => {
                        delay = base;
                        next = Some(Conn::new(stream, false));
                        continue;
                    }
                    End::Failed { established } if established => delay = base,
                    End::Failed { .. } => {}
                }
            }
            if self.cfg.passive {
                continue;
            }
            self.set_state(SessionState::Active).await;
            match self.wait_retry(jitter(delay)).await {
                Ok(conn) => next = conn,
                Err(Stopped) => break,
            }
            delay = (delay * 2).min(MAX_RETRY.max(base));
        }
        self.set_state(SessionState::Idle).await;
    }

    /// Connects (Connect state) or, when passive, waits for an accepted connection (Active).
    /// `Ok(None)`: the attempt failed and was recorded.
    async fn open_connection(&mut self) -> Result<Option<Conn>, Stopped> {
        if self.cfg.passive {
            self.set_state(SessionState::Active).await;
            return match self.control.recv().await {
                Some(Control::Accept(stream)) => Ok(Some(Conn::new(stream, false))),
                _ => Err(Stopped),
            };
        }
        self.set_state(SessionState::Connect).await;
        let limit = self.cfg.connect_retry.max(Duration::from_secs(1));
        let peer = self.cfg.peer;
        let attempt = timeout(limit, connect(&self.cfg));
        tokio::select! {
            result = attempt => match result {
                Ok(Ok(stream)) => Ok(Some(Conn::new(stream, true))),
                Ok(Err(e)) => {
                    self.shared.error(format!("connect to {peer} failed: {e}"));
                    Ok(None)
                }
                Err(_) => {
                    let secs = limit.as_secs_f32();
                    self.shared.error(format!("connect to {peer} timed out after {secs}s"));
                    Ok(None)
                }
            },
            control = self.control.recv() => match control {
                Some(Control::Accept(stream)) => Ok(Some(Conn::new(stream, false))),
                _ => Err(Stopped),
            },
        }
    }

    /// Waits `delay` (ConnectRetry timer) in Active; a connection handed over ends the wait.
    async fn wait_retry(&mut self, delay: Duration) -> Result<Option<Conn>, Stopped> {
        tokio::select! {
            _ = sleep(delay) => Ok(None),
            control = self.control.recv() => match control {
                Some(Control::Accept(stream)) => Ok(Some(Conn::new(stream, false))),
                _ => Err(Stopped),
            },
        }
    }

    async fn run_connection(&mut self, conn: Conn) -> End {
        match self.handshake(conn).await {
            Ok((conn, negotiated)) => self.established(conn, negotiated).await,
            Err(end) => end,
        }
    }

    /// OpenSent and OpenConfirm, over one or two connections; returns the one that comes up.
    async fn handshake(&mut self, first: Conn) -> Result<(Conn, Negotiated), End> {
        let mut conns: Vec<Pending> = Vec::with_capacity(2);
        self.admit(&mut conns, first).await;
        loop {
            if conns.is_empty() {
                return Err(End::Failed { established: false });
            }
            let state = if conns.iter().any(|p| p.open.is_some()) {
                SessionState::OpenConfirm
            } else {
                SessionState::OpenSent
            };
            self.set_state(state).await;
            let deadline = conns
                .iter()
                .flat_map(|p| [p.hold, p.keepalive])
                .flatten()
                .min();
            let wake = tokio::select! {
                c = self.control.recv() => Wake::Control(c),
                (i, r) = recv_any(&mut conns) => Wake::Recv(i, r),
                _ = sleep_opt(deadline) => Wake::Timer,
            };
            match wake {
                Wake::Control(Some(Control::Accept(stream))) => {
                    self.admit(&mut conns, Conn::new(stream, false)).await
                }
                Wake::Recv(i, received) => {
                    let Some(p) = conns.get_mut(i) else { continue };
                    match self.step(p, received).await {
                        Step::Opened => {
                            let losers = resolve(&self.cfg, &mut conns);
                            self.close_all(losers, CEASE_COLLISION).await;
                        }
                        Step::Up => {
                            let p = conns.swap_remove(i);
                            self.close_all(conns, CEASE_COLLISION).await;
                            return match p.open {
                                Some(negotiated) => Ok((p.conn, negotiated)),
                                None => Err(End::Failed { established: false }),
                            };
                        }
                        Step::Refuse(refusal) => {
                            self.shared.error(format!(
                                "sent notification {}/{} ({}): {}",
                                refusal.code,
                                refusal.subcode,
                                code_name(refusal.code),
                                refusal.reason
                            ));
                            let mut p = conns.swap_remove(i);
                            self.close(&mut p.conn, refusal.code, refusal.subcode, refusal.data)
                                .await;
                        }
                        Step::Lost(reason) => {
                            self.shared.error(reason);
                            conns.swap_remove(i);
                        }
                    }
                }
                Wake::Timer => self.pending_timers(&mut conns).await,
                Wake::Control(_) => {
                    self.close_all(conns, CEASE_ADMIN_SHUTDOWN).await;
                    return Err(End::Stopped);
                }
            }
        }
    }

    /// Sends our OPEN on a new connection and adds it, resolving a collision.
    async fn admit(&mut self, conns: &mut Vec<Pending>, mut conn: Conn) {
        let open = Message::Open(local_open(&self.cfg, self.restarting));
        if let Err(e) = self.send(&mut conn, &open).await {
            self.shared.error(format!("open not sent: {e}"));
            return;
        }
        conns.push(Pending {
            conn,
            open: None,
            hold: Some(Instant::now() + OPEN_HOLD),
            keepalive: None,
        });
        let losers = resolve(&self.cfg, conns);
        self.close_all(losers, CEASE_COLLISION).await;
    }

    /// One message on a connection in OpenSent or OpenConfirm.
    async fn step(&mut self, p: &mut Pending, received: Result<Incoming, RecvError>) -> Step {
        let incoming = match received {
            Ok(incoming) => incoming,
            Err(e) => return self.recv_failure(e),
        };
        self.shared
            .update(|s| s.messages_in.count(incoming.msg_type()));
        let state = if p.open.is_some() {
            SessionState::OpenConfirm
        } else {
            SessionState::OpenSent
        };
        match incoming {
            Incoming::Message(Message::Open(open)) if p.open.is_none() => {
                let negotiated = match check_peer_open(&self.cfg, &open) {
                    Ok(negotiated) => negotiated,
                    Err(refusal) => return Step::Refuse(refusal),
                };
                if let Err(e) = self.send(&mut p.conn, &Message::Keepalive).await {
                    return Step::Lost(format!("keepalive not sent: {e}"));
                }
                let now = Instant::now();
                p.open = Some(negotiated);
                p.hold = hold_time(negotiated.hold_time).map(|h| now + h);
                p.keepalive = keepalive_interval(negotiated.hold_time).map(|k| now + k);
                Step::Opened
            }
            Incoming::Message(Message::Keepalive) if p.open.is_some() => Step::Up,
            Incoming::Message(Message::Notification(n)) => Step::Lost(format!(
                "received notification {}/{} ({})",
                n.code,
                n.subcode,
                code_name(n.code)
            )),
            other => Step::Refuse(fsm_error(state, other.msg_type())),
        }
    }

    /// A receive error: a bad message gets its NOTIFICATION, a dead connection nothing.
    fn recv_failure(&self, error: RecvError) -> Step {
        match error {
            RecvError::Decode(e) => {
                let (code, subcode) = e.notification();
                Step::Refuse(Refusal {
                    code,
                    subcode,
                    data: notification_data(&e),
                    reason: e.to_string(),
                })
            }
            other => Step::Lost(other.to_string()),
        }
    }

    /// Fires the hold and keepalive timers of pending connections that are due.
    async fn pending_timers(&mut self, conns: &mut Vec<Pending>) {
        let now = Instant::now();
        let mut i = 0;
        while let Some(p) = conns.get_mut(i) {
            if p.hold.is_some_and(|h| h <= now) {
                let mut p = conns.swap_remove(i);
                self.shared
                    .error("hold timer expired before the session came up".to_string());
                self.close(&mut p.conn, code::HOLD_TIMER_EXPIRED, 0, Vec::new())
                    .await;
                continue;
            }
            if p.keepalive.is_some_and(|k| k <= now) {
                let interval = p.open.and_then(|n| keepalive_interval(n.hold_time));
                p.keepalive = interval.map(|k| now + k);
                if let Err(e) = self.send(&mut p.conn, &Message::Keepalive).await {
                    self.shared.error(format!("keepalive not sent: {e}"));
                    conns.swap_remove(i);
                    continue;
                }
            }
            i += 1;
        }
    }
}

impl Task {
    /// Sends one message, counting it.
    async fn send(&self, conn: &mut Conn, message: &Message) -> io::Result<()> {
        conn.send(message, self.write_timeout).await?;
        self.shared
            .update(|s| s.messages_out.count(message.msg_type()));
        Ok(())
    }

    /// Sends a NOTIFICATION and closes the connection.
    async fn close(&self, conn: &mut Conn, code: u8, subcode: u8, data: Vec<u8>) {
        self.shared
            .update(|s| s.messages_out.count(crate::message::msg_type::NOTIFICATION));
        conn.notify_and_close(code, subcode, data).await;
    }

    async fn close_all(&self, conns: Vec<Pending>, cease_subcode: u8) {
        for mut p in conns {
            self.close(&mut p.conn, code::CEASE, cease_subcode, Vec::new())
                .await;
        }
    }

    async fn set_state(&self, state: SessionState) {
        if self.shared.set_state(state) {
            self.emit(SessionEvent::State(state)).await;
        }
    }

    /// Sends an event; a speaker that went away is not the session's problem.
    async fn emit(&self, event: SessionEvent) {
        let _ = self.events.send((self.index, event)).await;
    }
}

/// Opens a TCP connection to the peer, from `local_addr` when set.
async fn connect(cfg: &SessionConfig) -> io::Result<TcpStream> {
    let socket = if cfg.peer.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(ip) = cfg.local_addr {
        socket.bind(std::net::SocketAddr::new(ip, 0))?;
    }
    socket.connect(cfg.peer).await
}

/// The next message on any pending connection (at most two).
async fn recv_any(conns: &mut [Pending]) -> (usize, Result<Incoming, RecvError>) {
    match conns {
        [a] => (0, a.conn.recv().await),
        [a, b, ..] => tokio::select! {
            r = a.conn.recv() => (0, r),
            r = b.conn.recv() => (1, r),
        },
        [] => pending().await,
    }
}

async fn sleep_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => pending().await,
    }
}

/// RFC 4271 §6.8: once the peer's identifier is known, keep only the connection opened by
/// the side with the higher identifier. A second connection from the peer replaces its first.
fn resolve(cfg: &SessionConfig, conns: &mut Vec<Pending>) -> Vec<Pending> {
    let mut losers = Vec::new();
    while conns.iter().filter(|p| !p.conn.outbound).count() > 1 {
        if let Some(i) = conns.iter().position(|p| !p.conn.outbound) {
            losers.push(conns.remove(i));
        }
    }
    let Some(peer_id) = conns.iter().find_map(|p| p.open.map(|n| n.peer_id)) else {
        return losers;
    };
    if conns.len() > 1 {
        let keep_outbound = u32::from(cfg.router_id) > u32::from(peer_id);
        if let Some(i) = conns.iter().position(|p| p.conn.outbound != keep_outbound) {
            losers.push(conns.remove(i));
        }
    }
    losers
}

/// The hold time as a duration; `None` for 0 (no hold timer).
fn hold_time(seconds: u16) -> Option<Duration> {
    (seconds > 0).then(|| Duration::from_secs(u64::from(seconds)))
}

/// KEEPALIVE every third of the hold time (RFC 4271 §10); none when the hold time is 0.
fn keepalive_interval(seconds: u16) -> Option<Duration> {
    hold_time(seconds).map(|h| h / 3)
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

/// `delay` times a factor from 0.75 to 1 (RFC 4271 §10), so that speakers that failed
/// together do not retry in lockstep. The clock's nanoseconds are random enough for that.
fn jitter(delay: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // A multiplicative hash spreads the low-entropy clock bits over 0..=255.
    let spread = nanos.wrapping_mul(2_654_435_761) >> 24;
    delay.mul_f64(0.75 + 0.25 * f64::from(spread) / 255.0)
}

/// The name of a NOTIFICATION error code, for `last_error` lines.
pub(super) fn code_name(code: u8) -> &'static str {
    crate::code::name(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_three_quarters_and_the_delay() {
        let d = Duration::from_secs(4);
        for _ in 0..1000 {
            let j = jitter(d);
            assert!(j >= Duration::from_secs(3) && j <= d, "{j:?}");
        }
    }
}
