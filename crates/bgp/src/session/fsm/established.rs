//! The Established state: UPDATEs both ways, KEEPALIVEs, the hold timer, and how it ends.
//!
//! Received UPDATEs become events (see `inbound`); queued outbound messages from this
//! Established period are written in order, older ones dropped. It ends on a stop (Cease 6/2),
//! a NOTIFICATION either way, a TCP failure or hold timer expiry — only the last two are
//! graceful when the peer advertised graceful restart for EVPN (RFC 4724 §4.2) — or when a
//! GR-capable peer connects again.

use std::time::Duration;

use super::{
    code_name, fsm_error, hold_time, keepalive_interval, set_timer, Action, ConnId, Event, Phase,
    SendFailure, State, Timer, CEASE_ADMIN_SHUTDOWN, CEASE_COLLISION, WRITE_TIMEOUT,
};
use crate::evpn::{AFI_L2VPN, SAFI_EVPN};
use crate::message::msg_type;
use crate::session::conn::{notification_data, Incoming, RecvError};
use crate::session::negotiate::{Negotiated, Refusal};
use crate::session::{inbound, OutMessage, SessionConfig, SessionEvent, SessionState};
use crate::{code, Message, RouteRefreshRepr};

/// The running session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Up {
    conn: ConnId,
    hold: Option<Duration>,
    interval: Option<Duration>,
    /// The peer advertised graceful restart for EVPN.
    gr: bool,
}

/// What the task does once the session has ended.
enum Then {
    /// Try again (Active).
    Retry,
    /// Stop (Idle).
    Stop,
    /// Exchange OPENs on the peer's new connection (graceful restart).
    Replace(ConnId),
}

/// How the session ends: the `Down` reason, whether graceful, whether a NOTIFICATION
/// already closed the connection, and what follows.
struct Ending {
    reason: String,
    graceful: bool,
    notified: bool,
    then: Then,
}

impl Ending {
    fn lost(reason: String, graceful: bool) -> Self {
        Ending {
            reason,
            graceful,
            notified: false,
            then: Then::Retry,
        }
    }

    /// We sent a NOTIFICATION: never graceful.
    fn notified(reason: String) -> Self {
        Ending {
            reason,
            graceful: false,
            notified: true,
            then: Then::Retry,
        }
    }
}

impl State {
    /// OpenConfirm received the peer's KEEPALIVE on `conn`.
    pub(super) fn establish(
        &mut self,
        conn: ConnId,
        negotiated: Negotiated,
        out: &mut Vec<Action>,
    ) -> Phase {
        self.restarting = false;
        out.push(Action::Negotiated(negotiated));
        self.report(SessionState::Established, out);
        out.push(Action::Emit(SessionEvent::Established {
            peer_id: negotiated.peer_id,
            hold_time: negotiated.hold_time,
            peer_gr: negotiated.peer_gr,
        }));
        let hold = hold_time(negotiated.hold_time);
        let interval = keepalive_interval(negotiated.hold_time);
        out.push(Action::WriteTimeout(hold.unwrap_or(WRITE_TIMEOUT)));
        set_timer(Timer::Hold(conn), hold, out);
        set_timer(Timer::Keepalive(conn), interval, out);
        Phase::Established(Up {
            conn,
            hold,
            interval,
            gr: negotiated.peer_gr.is_some(),
        })
    }

    /// One event in Established.
    pub(super) fn established(
        &mut self,
        cfg: &SessionConfig,
        up: Up,
        event: Event,
        out: &mut Vec<Action>,
    ) -> Phase {
        let ending = match event {
            Event::Accepted(conn) if up.gr => Ending {
                reason: "peer connected again: graceful restart".to_string(),
                graceful: true,
                notified: false,
                then: Then::Replace(conn),
            },
            Event::Accepted(conn) => {
                // RFC 4271 §6.8: a collision with an Established session closes the new one.
                out.push(cease(conn, CEASE_COLLISION));
                return Phase::Established(up);
            }
            // Dropping the connection closes it: no NOTIFICATION (RFC 4724 §4).
            Event::Abandon => Ending {
                reason: "closed for a restart".to_string(),
                graceful: false,
                notified: false,
                then: Then::Stop,
            },
            Event::Stop => {
                out.push(cease(up.conn, CEASE_ADMIN_SHUTDOWN));
                Ending {
                    then: Then::Stop,
                    ..Ending::notified("stopped".to_string())
                }
            }
            Event::Outbound(queued) if queued.epoch != self.epoch => {
                out.push(Action::UpdatesDropped(1));
                return Phase::Established(up);
            }
            Event::Outbound(queued) => {
                let message = match queued.message {
                    OutMessage::Update(update) => Message::Update(update),
                    OutMessage::RouteRefresh => Message::RouteRefresh(RouteRefreshRepr {
                        afi: AFI_L2VPN,
                        subtype: 0,
                        safi: SAFI_EVPN,
                    }),
                };
                out.push(Action::Send {
                    conn: up.conn,
                    message,
                });
                return Phase::Established(up);
            }
            Event::Sent {
                conn,
                msg_type: sent,
            } if conn == up.conn => {
                // A KEEPALIVE restarted its timer before it was sent; other messages do so
                // once written.
                if let (false, Some(interval)) = (sent == msg_type::KEEPALIVE, up.interval) {
                    out.push(Action::StartTimer {
                        timer: Timer::Keepalive(conn),
                        after: interval,
                    });
                }
                return Phase::Established(up);
            }
            Event::SendFailed {
                conn,
                msg_type: unsent,
                error,
            } if conn == up.conn => match (unsent, error) {
                (msg_type::KEEPALIVE, error) => {
                    Ending::lost(format!("keepalive not sent: {error}"), up.gr)
                }
                (_, SendFailure::Unencodable(error)) => {
                    out.push(Action::UpdatesDropped(1));
                    out.push(Action::Error(format!("update not sent: {error}")));
                    return Phase::Established(up);
                }
                (_, SendFailure::Io(error)) => {
                    Ending::lost(format!("write failed: {error}"), up.gr)
                }
            },
            Event::RecvFailed(conn, RecvError::Decode(e)) if conn == up.conn => {
                let (code, subcode) = e.notification();
                out.push(Action::Notify {
                    conn,
                    code,
                    subcode,
                    data: notification_data(&e),
                });
                Ending::notified(format!(
                    "sent notification {code}/{subcode} ({}): {e}",
                    code_name(code)
                ))
            }
            Event::RecvFailed(conn, error) if conn == up.conn => {
                Ending::lost(error.to_string(), up.gr)
            }
            Event::Received(conn, incoming) if conn == up.conn => {
                if let Some(hold) = up.hold {
                    out.push(Action::StartTimer {
                        timer: Timer::Hold(conn),
                        after: hold,
                    });
                }
                match received(cfg, incoming, out) {
                    Ok(()) => return Phase::Established(up),
                    Err(refusal) if refusal.code == 0 => Ending::lost(refusal.reason, false),
                    Err(refusal) => {
                        out.push(Action::Notify {
                            conn,
                            code: refusal.code,
                            subcode: refusal.subcode,
                            data: refusal.data,
                        });
                        Ending::notified(refusal.reason)
                    }
                }
            }
            Event::TimerExpired(Timer::Hold(conn)) if conn == up.conn => {
                out.push(Action::Notify {
                    conn,
                    code: code::HOLD_TIMER_EXPIRED,
                    subcode: 0,
                    data: Vec::new(),
                });
                Ending {
                    graceful: up.gr,
                    ..Ending::notified("hold timer expired".to_string())
                }
            }
            Event::TimerExpired(Timer::Keepalive(conn)) if conn == up.conn => {
                if let Some(interval) = up.interval {
                    out.push(Action::StartTimer {
                        timer: Timer::Keepalive(conn),
                        after: interval,
                    });
                }
                out.push(Action::Send {
                    conn,
                    message: Message::Keepalive,
                });
                return Phase::Established(up);
            }
            other => {
                super::ignore(other, out);
                return Phase::Established(up);
            }
        };
        self.end(cfg, up, ending, out)
    }

    /// The session ended: drop the queue, report `Down`, and go on.
    fn end(&mut self, cfg: &SessionConfig, up: Up, ending: Ending, out: &mut Vec<Action>) -> Phase {
        out.push(Action::DropQueued);
        out.push(Action::WriteTimeout(WRITE_TIMEOUT));
        out.push(Action::Error(ending.reason.clone()));
        out.push(Action::Emit(SessionEvent::Down {
            reason: ending.reason,
            graceful: ending.graceful,
        }));
        if !ending.notified {
            out.push(Action::Close(up.conn));
        }
        match ending.then {
            Then::Retry => self.retry(cfg, true, out),
            Then::Stop => self.finish(out),
            Then::Replace(conn) => {
                self.delay = super::base_delay(cfg);
                self.admit(cfg, Vec::new(), conn, false, out)
            }
        }
    }
}

/// Cease with `subcode`.
fn cease(conn: ConnId, subcode: u8) -> Action {
    Action::Notify {
        conn,
        code: code::CEASE,
        subcode,
        data: Vec::new(),
    }
}

/// Handles one message; `Err` ends the session (code 0: no NOTIFICATION to send).
fn received(cfg: &SessionConfig, incoming: Incoming, out: &mut Vec<Action>) -> Result<(), Refusal> {
    match incoming {
        Incoming::Update(parsed) => {
            let us = inbound::Us {
                asn: cfg.local_as,
                router_id: cfg.router_id,
                ibgp: cfg.ibgp(),
            };
            let inbound = inbound::classify(parsed, us).map_err(|e| {
                let (code, subcode) = e.notification();
                Refusal {
                    code,
                    subcode,
                    data: notification_data(&e),
                    reason: format!(
                        "sent notification {code}/{subcode} ({}): {e}",
                        code_name(code)
                    ),
                }
            })?;
            if let (true, Some(SessionEvent::Update { errors, .. })) =
                (inbound.treat_as_withdraw, &inbound.event)
            {
                let first = errors.first().map(|e| e.to_string()).unwrap_or_default();
                out.push(Action::Error(format!(
                    "update treated as withdraw: {first}"
                )));
            }
            out.push(Action::Inbound {
                treat_as_withdraw: inbound.treat_as_withdraw,
                discarded: inbound.discarded,
                ignored: inbound.ignored,
            });
            if let Some(event) = inbound.event {
                out.push(Action::Emit(event));
            }
            Ok(())
        }
        Incoming::Message(Message::Keepalive) => Ok(()),
        // RFC 2918: the peer asks for our EVPN routes again; other families are not ours.
        Incoming::Message(Message::RouteRefresh(r)) => {
            if r.afi == AFI_L2VPN && r.safi == SAFI_EVPN {
                out.push(Action::Emit(SessionEvent::RouteRefresh));
            }
            Ok(())
        }
        Incoming::Message(Message::Notification(n)) => Err(Refusal {
            code: 0,
            subcode: 0,
            data: Vec::new(),
            reason: format!(
                "received notification {}/{} ({})",
                n.code,
                n.subcode,
                code_name(n.code)
            ),
        }),
        other => {
            let mut refusal = fsm_error(SessionState::Established, other.msg_type());
            refusal.reason = format!(
                "sent notification {}/{} ({}): {}",
                refusal.code,
                refusal.subcode,
                code_name(refusal.code),
                refusal.reason
            );
            Err(refusal)
        }
    }
}
