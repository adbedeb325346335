//! The session task: drives the state machine of `fsm` with TCP, timers and the handle.
//!
//! ```text
//!  control mpsc ──► Accepted / Stop / Abandon ─┐
//!  outbound mpsc ─► Outbound (Established only) ┤               ┌─► sockets: connect, write, close
//!  sockets ───────► Received / RecvFailed ──────┼─► transition ─┼─► timers: arm, disarm
//!  connect attempt ► Connected / ConnectFailed ─┤   (pure)      ├─► stats (Shared), events mpsc
//!  timers ────────► TimerExpired ───────────────┘               └─► Sent / SendFailed ──► (queue)
//! ```
//!
//! The task waits for one event, hands it to [`transition`], and performs the actions in
//! order. A write's outcome is queued as the next event, ahead of anything from outside, so
//! the machine sees the same sequence it would if writes were instantaneous. The task owns
//! what the machine only names: the sockets (by [`ConnId`]), the timers' deadlines, the
//! connection attempt, the write timeout; it counts messages in and out, and adds jitter to
//! the ConnectRetry timer.

use std::collections::VecDeque;
use std::fmt;
use std::future::{pending, Future};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{error::Elapsed, sleep_until, timeout, Instant};

use super::conn::{Conn, Incoming, RecvError};
use super::fsm::{transition, Action, ConnId, Event, SendFailure, State, Timer, WRITE_TIMEOUT};
use super::stats::Shared;
use super::{Control, Outbound, SessionConfig, SessionEvent, TcpAuth};
use crate::message::msg_type;

/// A connection attempt under way.
struct Attempt(Pin<Box<dyn Future<Output = Result<io::Result<TcpStream>, Elapsed>> + Send>>);

impl fmt::Debug for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Attempt")
    }
}

/// What woke the task.
#[derive(Debug)]
enum Wake {
    Control(Option<Control>),
    Outbound(Option<Outbound>),
    Recv(ConnId, Result<Incoming, RecvError>),
    Attempt(Result<io::Result<TcpStream>, Elapsed>),
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
    /// Open connections, oldest first (at most two at a time, and a third for a moment).
    conns: Vec<(ConnId, Conn)>,
    next_conn: u64,
    timers: Vec<(Timer, Instant)>,
    attempt: Option<Attempt>,
    /// Bound on one write.
    write_timeout: Duration,
    /// The last error line logged.
    last_logged: Option<String>,
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
        Task {
            cfg,
            index,
            events,
            control,
            outbound,
            shared,
            conns: Vec::with_capacity(3),
            next_conn: 0,
            timers: Vec::new(),
            attempt: None,
            write_timeout: WRITE_TIMEOUT,
            last_logged: None,
        }
    }

    /// Runs the machine from Start until it stops.
    pub(super) async fn run(mut self) {
        let mut state = State::new(&self.cfg);
        let mut queue = VecDeque::from([Event::Start]);
        while !state.finished() {
            let Some(event) = queue.pop_front() else {
                queue.extend(self.wait(state.reads_outbound()).await);
                continue;
            };
            let actions;
            (state, actions) = transition(&self.cfg, state, event);
            for action in actions {
                // A write is the last action of its batch; its outcome comes next.
                if let Some(outcome) = self.perform(action).await {
                    queue.push_front(outcome);
                }
            }
        }
    }

    /// The next events from outside: the handle, the sockets, the attempt, the timers.
    async fn wait(&mut self, reads_outbound: bool) -> Vec<Event> {
        let deadline = self.timers.iter().map(|(_, at)| *at).min();
        let wake = tokio::select! {
            c = self.control.recv() => Wake::Control(c),
            o = self.outbound.recv(), if reads_outbound => Wake::Outbound(o),
            (id, r) = recv_any(&mut self.conns) => Wake::Recv(id, r),
            r = attempt(&mut self.attempt) => Wake::Attempt(r),
            _ = sleep_opt(deadline) => Wake::Timer,
        };
        let event = match wake {
            Wake::Control(Some(Control::Accept(stream))) => {
                Event::Accepted(self.add(Conn::new(stream)))
            }
            Wake::Control(Some(Control::Abandon)) => Event::Abandon,
            Wake::Control(_) | Wake::Outbound(None) => Event::Stop,
            Wake::Outbound(Some(queued)) => Event::Outbound(queued),
            Wake::Recv(id, Ok(incoming)) => {
                self.shared
                    .update(|s| s.messages_in.count(incoming.msg_type()));
                Event::Received(id, incoming)
            }
            Wake::Recv(id, Err(e)) => Event::RecvFailed(id, e),
            Wake::Attempt(result) => {
                self.attempt = None;
                match result {
                    Ok(Ok(stream)) => Event::Connected(self.add(Conn::new(stream))),
                    Ok(Err(e)) => Event::ConnectFailed(e.to_string()),
                    Err(_) => Event::ConnectTimedOut,
                }
            }
            Wake::Timer => return self.due_timers(),
        };
        vec![event]
    }

    /// Timers that ran out, by connection (oldest first) and hold before keepalive.
    fn due_timers(&mut self) -> Vec<Event> {
        let now = Instant::now();
        let mut due: Vec<Timer> = self
            .timers
            .iter()
            .filter(|(_, at)| *at <= now)
            .map(|(timer, _)| *timer)
            .collect();
        self.timers.retain(|(_, at)| *at > now);
        due.sort_by_key(|timer| match timer {
            Timer::ConnectRetry => (None, 0),
            Timer::Hold(c) => (Some(*c), 0),
            Timer::Keepalive(c) => (Some(*c), 1),
        });
        due.into_iter().map(Event::TimerExpired).collect()
    }

    /// Performs one action; a write answers with its outcome.
    async fn perform(&mut self, action: Action) -> Option<Event> {
        match action {
            Action::Connect { limit } => {
                let (peer, local) = (self.cfg.peer, self.cfg.local_addr);
                let auth = self.cfg.auth.clone();
                self.attempt = Some(Attempt(Box::pin(timeout(
                    limit,
                    connect(peer, local, auth),
                ))));
            }
            Action::CancelConnect => self.attempt = None,
            Action::Send { conn, message } => {
                let msg_type = message.msg_type();
                let Some((_, c)) = self.conns.iter_mut().find(|(id, _)| *id == conn) else {
                    let error = SendFailure::Io("connection already closed".to_string());
                    return Some(Event::SendFailed {
                        conn,
                        msg_type,
                        error,
                    });
                };
                return Some(match c.send(&message, self.write_timeout).await {
                    Ok(()) => {
                        self.shared.update(|s| s.messages_out.count(msg_type));
                        Event::Sent { conn, msg_type }
                    }
                    Err(e) => {
                        let error = if e.kind() == io::ErrorKind::InvalidInput {
                            SendFailure::Unencodable(e.to_string())
                        } else {
                            SendFailure::Io(e.to_string())
                        };
                        Event::SendFailed {
                            conn,
                            msg_type,
                            error,
                        }
                    }
                });
            }
            Action::Notify {
                conn,
                code,
                subcode,
                data,
            } => {
                if let Some(mut c) = self.remove(conn) {
                    self.shared
                        .update(|s| s.messages_out.count(msg_type::NOTIFICATION));
                    c.notify_and_close(code, subcode, data).await;
                }
            }
            Action::Close(conn) => drop(self.remove(conn)),
            Action::StartTimer { timer, after } => {
                let after = match timer {
                    Timer::ConnectRetry => jitter(after),
                    Timer::Hold(_) | Timer::Keepalive(_) => after,
                };
                self.timers.retain(|(t, _)| *t != timer);
                self.timers.push((timer, Instant::now() + after));
            }
            Action::StopTimer(timer) => self.timers.retain(|(t, _)| *t != timer),
            Action::WriteTimeout(limit) => self.write_timeout = limit,
            Action::State(state) => {
                if self.shared.set_state(state) {
                    self.emit(SessionEvent::State(state)).await;
                }
            }
            Action::Emit(event) => self.emit(event).await,
            Action::Error(line) => {
                // A failure that repeats at every retry is logged once, until it changes.
                if self.last_logged.as_deref() != Some(line.as_str()) {
                    log::warn!("bgp: {line}");
                    self.last_logged = Some(line.clone());
                }
                self.shared.error(line);
            }
            Action::Negotiated(n) => self.shared.update(|s| {
                s.peer_id = Some(n.peer_id);
                s.hold_time = Some(n.hold_time);
                s.peer_restart_time = n.peer_restart_time;
            }),
            Action::Inbound {
                treat_as_withdraw,
                discarded,
                ignored,
            } => self.shared.update(|s| {
                s.treat_as_withdraw += u64::from(treat_as_withdraw);
                s.attributes_discarded += discarded;
                s.ignored_nlri += ignored;
            }),
            Action::UpdatesDropped(n) => self.shared.update(|s| s.updates_dropped += n),
            Action::DropQueued => {
                let mut dropped = 0;
                while self.outbound.try_recv().is_ok() {
                    dropped += 1;
                }
                self.shared.update(|s| s.updates_dropped += dropped);
            }
        }
        None
    }

    fn add(&mut self, conn: Conn) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        self.conns.push((id, conn));
        id
    }

    /// Takes a connection out, with its timers.
    fn remove(&mut self, conn: ConnId) -> Option<Conn> {
        self.timers
            .retain(|(t, _)| !matches!(t, Timer::Hold(c) | Timer::Keepalive(c) if *c == conn));
        let i = self.conns.iter().position(|(id, _)| *id == conn)?;
        Some(self.conns.remove(i).1)
    }

    /// Sends an event; a speaker that went away is not the session's problem.
    async fn emit(&mut self, event: SessionEvent) {
        let _ = self.events.send((self.index, event)).await;
    }
}

/// Opens a TCP connection to the peer, from `local` when set, with the TCP-MD5 key and GTSM
/// set before the SYN goes out.
async fn connect(peer: SocketAddr, local: Option<IpAddr>, auth: TcpAuth) -> io::Result<TcpStream> {
    use std::os::fd::AsFd;
    let socket = if peer.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(ip) = local {
        socket.bind(SocketAddr::new(ip, 0))?;
    }
    let context = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    if let Some(key) = &auth.md5_key {
        nvo_io::tcp_auth::set_md5_key(socket.as_fd(), peer.ip(), key)
            .map_err(|e| context("cannot set the tcp-md5 key", e))?;
    }
    if auth.ttl_security {
        nvo_io::tcp_auth::set_gtsm(socket.as_fd(), true, true)
            .map_err(|e| context("cannot set ttl security (gtsm)", e))?;
    }
    socket.connect(peer).await
}

/// The next message on any open connection (at most two are read).
async fn recv_any(conns: &mut [(ConnId, Conn)]) -> (ConnId, Result<Incoming, RecvError>) {
    match conns {
        [(a, ca)] => (*a, ca.recv().await),
        [(a, ca), (b, cb), ..] => tokio::select! {
            r = ca.recv() => (*a, r),
            r = cb.recv() => (*b, r),
        },
        [] => pending().await,
    }
}

/// The connection attempt's outcome; never, when there is none.
async fn attempt(attempt: &mut Option<Attempt>) -> Result<io::Result<TcpStream>, Elapsed> {
    match attempt {
        Some(Attempt(future)) => future.as_mut().await,
        None => pending().await,
    }
}

async fn sleep_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => pending().await,
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
