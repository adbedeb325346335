//! OpenSent and OpenConfirm (RFC 4271 §8.2.2), over one connection or two that collided
//! (§6.8): each has its own hold and keepalive timers until one of them comes up.

use super::{
    code_name, fsm_error, hold_time, keepalive_interval, set_timer, Action, ConnId, Event, Phase,
    State, Timer, CEASE_ADMIN_SHUTDOWN, CEASE_COLLISION, OPEN_HOLD,
};
use crate::session::conn::{notification_data, Incoming, RecvError};
use crate::session::negotiate::{check_peer_open, local_open, Negotiated, Refusal};
use crate::session::{SessionConfig, SessionState};
use crate::{code, Message};

/// A connection exchanging OPENs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pending {
    conn: ConnId,
    /// We initiated it (collision resolution keeps one by direction).
    outbound: bool,
    exchange: Exchange,
}

/// How far one connection got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exchange {
    /// Our OPEN is being written.
    SendingOpen,
    /// Our OPEN went out; waiting for the peer's.
    OpenSent,
    /// The peer's OPEN was accepted; our KEEPALIVE is being written.
    SendingKeepalive(Negotiated),
    /// Both OPENs exchanged; waiting for the peer's KEEPALIVE.
    OpenConfirm(Negotiated),
}

impl Pending {
    /// The OPEN exchange, once the peer's OPEN was accepted.
    fn negotiated(&self) -> Option<Negotiated> {
        match self.exchange {
            Exchange::SendingKeepalive(n) | Exchange::OpenConfirm(n) => Some(n),
            Exchange::SendingOpen | Exchange::OpenSent => None,
        }
    }
}

impl State {
    /// Sends our OPEN on a new connection; it joins the exchange once written.
    pub(super) fn admit(
        &mut self,
        cfg: &SessionConfig,
        mut conns: Vec<Pending>,
        conn: ConnId,
        outbound: bool,
        out: &mut Vec<Action>,
    ) -> Phase {
        out.push(Action::Send {
            conn,
            message: Message::Open(local_open(cfg, self.restarting)),
        });
        conns.push(Pending {
            conn,
            outbound,
            exchange: Exchange::SendingOpen,
        });
        Phase::Handshake(conns)
    }

    /// One event in OpenSent or OpenConfirm.
    pub(super) fn handshake(
        &mut self,
        cfg: &SessionConfig,
        mut conns: Vec<Pending>,
        event: Event,
        out: &mut Vec<Action>,
    ) -> Phase {
        match event {
            Event::Accepted(conn) => return self.admit(cfg, conns, conn, false, out),
            Event::Stop | Event::Abandon => {
                close_all(conns, CEASE_ADMIN_SHUTDOWN, out);
                return self.finish(out);
            }
            Event::Sent { conn, .. } => {
                let Some(p) = conns.iter_mut().find(|p| p.conn == conn) else {
                    return Phase::Handshake(conns);
                };
                match p.exchange {
                    Exchange::SendingOpen => {
                        p.exchange = Exchange::OpenSent;
                        out.push(Action::StartTimer {
                            timer: Timer::Hold(conn),
                            after: OPEN_HOLD,
                        });
                        resolve(cfg, &mut conns, out);
                    }
                    Exchange::SendingKeepalive(negotiated) => {
                        p.exchange = Exchange::OpenConfirm(negotiated);
                        set_timer(Timer::Hold(conn), hold_time(negotiated.hold_time), out);
                        let interval = keepalive_interval(negotiated.hold_time);
                        set_timer(Timer::Keepalive(conn), interval, out);
                        resolve(cfg, &mut conns, out);
                    }
                    // A KEEPALIVE of the keepalive timer went out.
                    Exchange::OpenSent | Exchange::OpenConfirm(_) => {}
                }
            }
            Event::SendFailed { conn, error, .. } => {
                if let Some(i) = conns.iter().position(|p| p.conn == conn) {
                    let p = conns.swap_remove(i);
                    let reason = match p.exchange {
                        Exchange::SendingOpen => format!("open not sent: {error}"),
                        _ => format!("keepalive not sent: {error}"),
                    };
                    out.push(Action::Error(reason));
                    out.push(Action::Close(conn));
                }
            }
            Event::Received(conn, incoming) => {
                let Some(i) = conns.iter().position(|p| p.conn == conn) else {
                    return Phase::Handshake(conns);
                };
                match self.received(cfg, conns, i, incoming, out) {
                    Next::Settle(rest) => conns = rest,
                    Next::Wait(rest) => return Phase::Handshake(rest),
                    Next::Up(phase) => return phase,
                }
            }
            Event::RecvFailed(conn, error) => {
                if let Some(i) = conns.iter().position(|p| p.conn == conn) {
                    match error {
                        RecvError::Decode(e) => {
                            let (code, subcode) = e.notification();
                            let refusal = Refusal {
                                code,
                                subcode,
                                data: notification_data(&e),
                                reason: e.to_string(),
                            };
                            refuse(&mut conns, i, refusal, out);
                        }
                        other => lost(&mut conns, i, other.to_string(), out),
                    }
                }
            }
            Event::TimerExpired(Timer::Hold(conn)) => {
                if let Some(i) = conns.iter().position(|p| p.conn == conn) {
                    conns.swap_remove(i);
                    out.push(Action::Error(
                        "hold timer expired before the session came up".to_string(),
                    ));
                    out.push(Action::Notify {
                        conn,
                        code: code::HOLD_TIMER_EXPIRED,
                        subcode: 0,
                        data: Vec::new(),
                    });
                }
            }
            Event::TimerExpired(Timer::Keepalive(conn)) => {
                let negotiated = conns
                    .iter()
                    .find(|p| p.conn == conn)
                    .and_then(Pending::negotiated);
                if let Some(negotiated) = negotiated {
                    let interval = keepalive_interval(negotiated.hold_time);
                    set_timer(Timer::Keepalive(conn), interval, out);
                    out.push(Action::Send {
                        conn,
                        message: Message::Keepalive,
                    });
                    return Phase::Handshake(conns);
                }
            }
            other => super::ignore(other, out),
        }
        self.settle(cfg, conns, out)
    }
}

/// What one received message leaves.
enum Next {
    /// These connections; see whether any is left.
    Settle(Vec<Pending>),
    /// These connections, one with a write in flight.
    Wait(Vec<Pending>),
    /// The session came up.
    Up(Phase),
}

impl State {
    /// One message on connection `i`.
    fn received(
        &mut self,
        cfg: &SessionConfig,
        mut conns: Vec<Pending>,
        i: usize,
        incoming: Incoming,
        out: &mut Vec<Action>,
    ) -> Next {
        let Some(p) = conns.get_mut(i) else {
            return Next::Settle(conns);
        };
        let negotiated = p.negotiated();
        let state = if negotiated.is_some() {
            SessionState::OpenConfirm
        } else {
            SessionState::OpenSent
        };
        match (incoming, negotiated) {
            (Incoming::Message(Message::Open(open)), None) => match check_peer_open(cfg, &open) {
                Ok(negotiated) => {
                    p.exchange = Exchange::SendingKeepalive(negotiated);
                    out.push(Action::Send {
                        conn: p.conn,
                        message: Message::Keepalive,
                    });
                    return Next::Wait(conns);
                }
                Err(refusal) => refuse(&mut conns, i, refusal, out),
            },
            (Incoming::Message(Message::Keepalive), Some(negotiated)) => {
                let p = conns.swap_remove(i);
                close_all(conns, CEASE_COLLISION, out);
                return Next::Up(self.establish(p.conn, negotiated, out));
            }
            (Incoming::Message(Message::Notification(n)), _) => {
                let reason = format!(
                    "received notification {}/{} ({})",
                    n.code,
                    n.subcode,
                    code_name(n.code)
                );
                lost(&mut conns, i, reason, out);
            }
            (other, _) => refuse(&mut conns, i, fsm_error(state, other.msg_type()), out),
        }
        Next::Settle(conns)
    }

    /// After each event: no connection left ends the attempt, else report OpenSent or
    /// OpenConfirm (any connection past the OPENs).
    fn settle(&mut self, cfg: &SessionConfig, conns: Vec<Pending>, out: &mut Vec<Action>) -> Phase {
        if conns.is_empty() {
            return self.retry(cfg, false, out);
        }
        let confirmed = conns
            .iter()
            .any(|p| matches!(p.exchange, Exchange::OpenConfirm(_)));
        let state = if confirmed {
            SessionState::OpenConfirm
        } else {
            SessionState::OpenSent
        };
        self.report(state, out);
        Phase::Handshake(conns)
    }
}

/// RFC 4271 §6.8: once the peer's identifier is known, keep only the connection opened by
/// the side with the higher identifier. A second connection from the peer replaces its first.
/// The losers get Cease / Connection Collision Resolution.
fn resolve(cfg: &SessionConfig, conns: &mut Vec<Pending>, out: &mut Vec<Action>) {
    let mut losers = Vec::new();
    while conns.iter().filter(|p| !p.outbound).count() > 1 {
        if let Some(i) = conns.iter().position(|p| !p.outbound) {
            losers.push(conns.remove(i));
        }
    }
    let peer_id = conns.iter().find_map(|p| match p.exchange {
        Exchange::OpenConfirm(n) => Some(n.peer_id),
        _ => None,
    });
    if let (Some(peer_id), true) = (peer_id, conns.len() > 1) {
        let keep_outbound = u32::from(cfg.router_id) > u32::from(peer_id);
        if let Some(i) = conns.iter().position(|p| p.outbound != keep_outbound) {
            losers.push(conns.remove(i));
        }
    }
    close_all(losers, CEASE_COLLISION, out);
}

/// Closes connection `i` with the NOTIFICATION of `refusal`.
fn refuse(conns: &mut Vec<Pending>, i: usize, refusal: Refusal, out: &mut Vec<Action>) {
    out.push(Action::Error(format!(
        "sent notification {}/{} ({}): {}",
        refusal.code,
        refusal.subcode,
        code_name(refusal.code),
        refusal.reason
    )));
    let p = conns.swap_remove(i);
    out.push(Action::Notify {
        conn: p.conn,
        code: refusal.code,
        subcode: refusal.subcode,
        data: refusal.data,
    });
}

/// Connection `i` is gone (closed, failed, NOTIFICATION received): close it quietly.
fn lost(conns: &mut Vec<Pending>, i: usize, reason: String, out: &mut Vec<Action>) {
    out.push(Action::Error(reason));
    let p = conns.swap_remove(i);
    out.push(Action::Close(p.conn));
}

/// Sends Cease with `subcode` on each connection and closes it.
fn close_all(conns: Vec<Pending>, subcode: u8, out: &mut Vec<Action>) {
    for p in conns {
        out.push(Action::Notify {
            conn: p.conn,
            code: code::CEASE,
            subcode,
            data: Vec::new(),
        });
    }
}
