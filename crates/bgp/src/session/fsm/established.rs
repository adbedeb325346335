//! The Established state: UPDATEs both ways, KEEPALIVEs, the hold timer, and how it ends.
//!
//! Received UPDATEs become events (see `inbound`); queued outbound messages from this
//! Established period are written in order, older ones dropped. It ends on a stop (Cease 6/2),
//! a NOTIFICATION either way, a TCP failure or hold timer expiry — only the last two are
//! graceful when the peer advertised graceful restart for EVPN (RFC 4724 §4.2) — or when a
//! GR-capable peer connects again.

use std::io;
use std::time::Duration;

use tokio::time::Instant;

use super::{
    code_name, fsm_error, hold_time, keepalive_interval, sleep_opt, End, Task,
    CEASE_ADMIN_SHUTDOWN, CEASE_COLLISION, WRITE_TIMEOUT,
};
use crate::evpn::{AFI_L2VPN, SAFI_EVPN};
use crate::session::conn::{notification_data, Conn, Incoming, RecvError};
use crate::session::negotiate::{Negotiated, Refusal};
use crate::session::{inbound, Control, OutMessage, Outbound, SessionEvent, SessionState};
use crate::{code, Message, RouteRefreshRepr};

/// What woke the Established loop.
#[derive(Debug)]
enum Wake {
    Control(Option<Control>),
    Outbound(Option<Outbound>),
    Recv(Result<Incoming, RecvError>),
    Hold,
    Keepalive,
}

/// The running session.
#[derive(Debug)]
struct Up {
    conn: Conn,
    epoch: u64,
    hold: Option<Duration>,
    interval: Option<Duration>,
    hold_at: Option<Instant>,
    keepalive_at: Option<Instant>,
    /// The peer advertised graceful restart for EVPN.
    gr: bool,
}

/// How the session ended: the reason, whether graceful, and what the task does next.
type Ending = (String, bool, End);

impl Task {
    /// Runs the Established state until the session ends; sends `Down`.
    pub(super) async fn established(&mut self, conn: Conn, negotiated: Negotiated) -> End {
        self.restarting = false;
        self.shared.update(|s| {
            s.peer_id = Some(negotiated.peer_id);
            s.hold_time = Some(negotiated.hold_time);
            s.peer_restart_time = negotiated.peer_restart_time;
        });
        self.set_state(SessionState::Established).await;
        self.emit(SessionEvent::Established {
            peer_id: negotiated.peer_id,
            hold_time: negotiated.hold_time,
            peer_gr: negotiated.peer_gr,
        })
        .await;
        let hold = hold_time(negotiated.hold_time);
        let interval = keepalive_interval(negotiated.hold_time);
        self.write_timeout = hold.unwrap_or(WRITE_TIMEOUT);
        let mut up = Up {
            conn,
            epoch: self.shared.epoch(),
            hold,
            interval,
            hold_at: hold.map(|h| Instant::now() + h),
            keepalive_at: interval.map(|k| Instant::now() + k),
            gr: negotiated.peer_gr.is_some(),
        };
        let (reason, graceful, end) = loop {
            let wake = tokio::select! {
                c = self.control.recv() => Wake::Control(c),
                o = self.outbound.recv() => Wake::Outbound(o),
                r = up.conn.recv() => Wake::Recv(r),
                _ = sleep_opt(up.hold_at) => Wake::Hold,
                _ = sleep_opt(up.keepalive_at) => Wake::Keepalive,
            };
            if let Some(ending) = self.on_wake(&mut up, wake).await {
                break ending;
            }
        };
        self.drop_queued();
        self.write_timeout = WRITE_TIMEOUT;
        self.shared.error(reason.clone());
        self.emit(SessionEvent::Down { reason, graceful }).await;
        end
    }

    /// Handles one wake-up; `Some` when the session ends.
    async fn on_wake(&mut self, up: &mut Up, wake: Wake) -> Option<Ending> {
        let lost = End::Failed { established: true };
        match wake {
            Wake::Control(Some(Control::Accept(stream))) if up.gr => {
                let reason = "peer connected again: graceful restart".to_string();
                return Some((reason, true, End::Replaced(stream)));
            }
            Wake::Control(Some(Control::Accept(stream))) => {
                // RFC 4271 §6.8: a collision with an Established session closes the new one.
                let mut extra = Conn::new(stream, false);
                self.close(&mut extra, code::CEASE, CEASE_COLLISION, Vec::new())
                    .await;
            }
            Wake::Control(Some(Control::Abandon)) => {
                // Dropping the connection closes it: no NOTIFICATION (RFC 4724 §4).
                return Some(("closed for a restart".to_string(), false, End::Stopped));
            }
            Wake::Control(_) | Wake::Outbound(None) => {
                self.close(&mut up.conn, code::CEASE, CEASE_ADMIN_SHUTDOWN, Vec::new())
                    .await;
                return Some(("stopped".to_string(), false, End::Stopped));
            }
            Wake::Outbound(Some(out)) if out.epoch != up.epoch => {
                self.shared.update(|s| s.updates_dropped += 1);
            }
            Wake::Outbound(Some(out)) => match self.write_outbound(&mut up.conn, out.message).await
            {
                Ok(true) => up.keepalive_at = up.interval.map(|k| Instant::now() + k),
                Ok(false) => {}
                Err(e) => return Some((format!("write failed: {e}"), up.gr, lost)),
            },
            Wake::Recv(Err(RecvError::Decode(e))) => {
                let (code, subcode) = e.notification();
                let reason = format!(
                    "sent notification {code}/{subcode} ({}): {e}",
                    code_name(code)
                );
                self.close(&mut up.conn, code, subcode, notification_data(&e))
                    .await;
                return Some((reason, false, lost));
            }
            Wake::Recv(Err(e)) => return Some((e.to_string(), up.gr, lost)),
            Wake::Recv(Ok(incoming)) => {
                up.hold_at = up.hold.map(|h| Instant::now() + h);
                self.shared
                    .update(|s| s.messages_in.count(incoming.msg_type()));
                if let Err(refusal) = self.received(incoming).await {
                    if refusal.code != 0 {
                        let Refusal {
                            code,
                            subcode,
                            data,
                            ..
                        } = refusal.clone();
                        self.close(&mut up.conn, code, subcode, data).await;
                    }
                    return Some((refusal.reason, false, lost));
                }
            }
            Wake::Hold => {
                self.close(&mut up.conn, code::HOLD_TIMER_EXPIRED, 0, Vec::new())
                    .await;
                return Some(("hold timer expired".to_string(), up.gr, lost));
            }
            Wake::Keepalive => {
                up.keepalive_at = up.interval.map(|k| Instant::now() + k);
                if let Err(e) = self.send(&mut up.conn, &Message::Keepalive).await {
                    return Some((format!("keepalive not sent: {e}"), up.gr, lost));
                }
            }
        }
        None
    }

    /// Handles one message; `Err` ends the session (code 0: no NOTIFICATION to send).
    async fn received(&mut self, incoming: Incoming) -> Result<(), Refusal> {
        match incoming {
            Incoming::Update(parsed) => {
                let us = inbound::Us {
                    asn: self.cfg.local_as,
                    router_id: self.cfg.router_id,
                    ibgp: self.cfg.ibgp(),
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
                    self.shared
                        .error(format!("update treated as withdraw: {first}"));
                }
                self.shared.update(|s| {
                    s.treat_as_withdraw += u64::from(inbound.treat_as_withdraw);
                    s.attributes_discarded += inbound.discarded;
                    s.ignored_nlri += inbound.ignored;
                });
                if let Some(event) = inbound.event {
                    self.emit(event).await;
                }
                Ok(())
            }
            Incoming::Message(Message::Keepalive) => Ok(()),
            // RFC 2918: the peer asks for our EVPN routes again; other families are not ours.
            Incoming::Message(Message::RouteRefresh(r)) => {
                if r.afi == AFI_L2VPN && r.safi == SAFI_EVPN {
                    self.emit(SessionEvent::RouteRefresh).await;
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

    /// Writes one queued message; `Ok(false)` when it could not be emitted (dropped, counted).
    async fn write_outbound(&mut self, conn: &mut Conn, message: OutMessage) -> io::Result<bool> {
        let message = match message {
            OutMessage::Update(update) => Message::Update(update),
            OutMessage::RouteRefresh => Message::RouteRefresh(RouteRefreshRepr {
                afi: AFI_L2VPN,
                subtype: 0,
                safi: SAFI_EVPN,
            }),
        };
        match self.send(conn, &message).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                self.shared.update(|s| {
                    s.updates_dropped += 1;
                    s.last_error = Some(format!("update not sent: {e}"));
                });
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Drops what was queued for the Established period that just ended.
    fn drop_queued(&mut self) {
        let mut dropped = 0;
        while self.outbound.try_recv().is_ok() {
            dropped += 1;
        }
        self.shared.update(|s| s.updates_dropped += dropped);
    }
}
