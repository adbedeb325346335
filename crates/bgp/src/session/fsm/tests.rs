//! The state table of [`transition`]: each state with the events that matter in it, checked
//! against the exact actions (what goes on the wire, which timers, what the speaker hears).
//! Established is in `established`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use super::*;
use crate::message::msg_type;
use crate::open::GracefulRestartFamily;
use crate::session::negotiate::{check_peer_open, local_open};
use crate::session::{OutMessage, Outbound};
use crate::{
    Capability, Error, NotificationRepr, OpenRepr, ParsedUpdate, RouteRefreshRepr, Scope,
    UpdateRepr, Verdict,
};

mod established;

const AS: u32 = 65000;
const LOCAL_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 5);
const LOW_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const HIGH_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);
const A: ConnId = ConnId(0);
const B: ConnId = ConnId(1);
const C: ConnId = ConnId(2);
const SECS: fn(u64) -> Duration = Duration::from_secs;

fn cfg() -> SessionConfig {
    SessionConfig {
        local_as: AS,
        router_id: LOCAL_ID,
        peer: SocketAddr::from(([192, 0, 2, 2], 179)),
        peer_as: AS,
        hold_time: 30,
        connect_retry: SECS(2),
        passive: false,
        graceful_restart: Some(120),
        restarting: false,
        local_addr: None,
        auth: Default::default(),
    }
}

/// The peer's OPEN: EVPN, 4-octet AS, and graceful restart for EVPN when `gr`.
fn peer_open(id: Ipv4Addr, hold: u16, gr: bool) -> Incoming {
    let mut caps = vec![Capability::Multiprotocol { afi: 25, safi: 70 }];
    if gr {
        caps.push(Capability::GracefulRestart {
            flags: 0,
            restart_time: 90,
            families: vec![GracefulRestartFamily {
                afi: 25,
                safi: 70,
                flags: 0x80,
            }],
        });
    }
    Incoming::Message(Message::Open(OpenRepr::new(AS, hold, id, caps)))
}

fn keepalive() -> Incoming {
    Incoming::Message(Message::Keepalive)
}

fn notification(code: u8, subcode: u8) -> Incoming {
    Incoming::Message(Message::Notification(NotificationRepr {
        code,
        subcode,
        data: Vec::new(),
    }))
}

fn sent(conn: ConnId, msg_type: u8) -> Event {
    Event::Sent { conn, msg_type }
}

fn notify(conn: ConnId, code: u8, subcode: u8, data: Vec<u8>) -> Action {
    Action::Notify {
        conn,
        code,
        subcode,
        data,
    }
}

fn start(timer: Timer, after: Duration) -> Action {
    Action::StartTimer { timer, after }
}

fn error(line: &str) -> Action {
    Action::Error(line.to_string())
}

/// A session and its configuration, fed one event at a time.
struct Run {
    cfg: SessionConfig,
    state: State,
}

impl Run {
    fn new(cfg: SessionConfig) -> Self {
        let state = State::new(&cfg);
        Run { cfg, state }
    }

    fn on(&mut self, event: Event) -> Vec<Action> {
        let (state, actions) = transition(&self.cfg, self.state.clone(), event);
        self.state = state;
        actions
    }

    fn reported(&self) -> SessionState {
        self.state.reported
    }

    /// Our OPEN went out on `conn`.
    fn open_sent(cfg: SessionConfig) -> Self {
        let mut run = Run::new(cfg);
        run.on(Event::Start);
        run.on(Event::Connected(A));
        run.on(sent(A, msg_type::OPEN));
        assert_eq!(run.reported(), SessionState::OpenSent);
        run
    }

    /// The peer's OPEN (identifier [`LOW_ID`], hold time 30) accepted and our KEEPALIVE sent.
    fn open_confirm(gr: bool) -> Self {
        let mut run = Run::open_sent(cfg());
        run.on(Event::Received(A, peer_open(LOW_ID, 30, gr)));
        run.on(sent(A, msg_type::KEEPALIVE));
        assert_eq!(run.reported(), SessionState::OpenConfirm);
        run
    }

    fn established(gr: bool) -> Self {
        let mut run = Run::open_confirm(gr);
        run.on(Event::Received(A, keepalive()));
        assert_eq!(run.reported(), SessionState::Established);
        run
    }
}

/// What follows a failure before Established with the default configuration: Active and the
/// first ConnectRetry wait.
fn retry(after: Duration) -> [Action; 2] {
    [
        Action::State(SessionState::Active),
        start(Timer::ConnectRetry, after),
    ]
}

fn our_open(restarting: bool) -> Message {
    Message::Open(local_open(&cfg(), restarting))
}

// Idle, Connect, Active.

#[test]
fn start_connects_or_waits_when_passive() {
    let mut run = Run::new(cfg());
    assert_eq!(
        run.on(Event::Start),
        [
            Action::State(SessionState::Connect),
            Action::Connect { limit: SECS(2) }
        ]
    );
    let mut passive = Run::new(SessionConfig {
        passive: true,
        ..cfg()
    });
    assert_eq!(
        passive.on(Event::Start),
        [Action::State(SessionState::Active)]
    );
    // A passive session takes the peer's connection and sends its OPEN on it.
    assert_eq!(
        passive.on(Event::Accepted(A)),
        [Action::Send {
            conn: A,
            message: our_open(false)
        }]
    );
}

#[test]
fn connect_attempts_take_at_least_a_second() {
    let mut run = Run::new(SessionConfig {
        connect_retry: Duration::from_millis(200),
        ..cfg()
    });
    run.on(Event::Start);
    let actions = run.on(Event::ConnectTimedOut);
    assert_eq!(
        actions[0],
        error("connect to 192.0.2.2:179 timed out after 1s")
    );
    assert_eq!(actions[1..], retry(Duration::from_millis(200)));
}

#[test]
fn failed_connects_back_off_doubling_up_to_the_maximum() {
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    let mut waits = Vec::new();
    for _ in 0..6 {
        let actions = run.on(Event::ConnectFailed("connection refused".to_string()));
        assert_eq!(
            actions[0],
            error("connect to 192.0.2.2:179 failed: connection refused")
        );
        assert_eq!(actions[1], Action::State(SessionState::Active));
        let Action::StartTimer { after, .. } = actions[2] else {
            panic!("{actions:?}")
        };
        waits.push(after.as_secs());
        assert_eq!(
            run.on(Event::TimerExpired(Timer::ConnectRetry)),
            [
                Action::State(SessionState::Connect),
                Action::Connect { limit: SECS(2) }
            ]
        );
    }
    assert_eq!(waits, [2, 4, 8, 16, 30, 30]);
}

#[test]
fn a_connection_from_the_peer_ends_connect_and_active() {
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    assert_eq!(
        run.on(Event::Accepted(B)),
        [
            Action::CancelConnect,
            Action::Send {
                conn: B,
                message: our_open(false)
            }
        ]
    );
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    run.on(Event::ConnectFailed("refused".to_string()));
    assert_eq!(
        run.on(Event::Accepted(B)),
        [
            Action::StopTimer(Timer::ConnectRetry),
            Action::Send {
                conn: B,
                message: our_open(false)
            }
        ]
    );
}

#[test]
fn stop_before_any_connection_goes_idle() {
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    assert_eq!(
        run.on(Event::Stop),
        [Action::CancelConnect, Action::State(SessionState::Idle)]
    );
    assert!(run.state.finished());
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    run.on(Event::ConnectTimedOut);
    assert_eq!(
        run.on(Event::Abandon),
        [
            Action::StopTimer(Timer::ConnectRetry),
            Action::State(SessionState::Idle)
        ]
    );
    assert!(run.state.finished());
}

// OpenSent.

#[test]
fn connected_sends_open_then_arms_the_open_hold_timer() {
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    assert_eq!(
        run.on(Event::Connected(A)),
        [Action::Send {
            conn: A,
            message: our_open(false)
        }]
    );
    assert_eq!(
        run.on(sent(A, msg_type::OPEN)),
        [
            start(Timer::Hold(A), OPEN_HOLD),
            Action::State(SessionState::OpenSent)
        ]
    );
}

#[test]
fn an_open_that_cannot_be_sent_drops_the_connection() {
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    run.on(Event::Connected(A));
    let actions = run.on(Event::SendFailed {
        conn: A,
        msg_type: msg_type::OPEN,
        error: SendFailure::Io("broken pipe".to_string()),
    });
    assert_eq!(
        actions[..2],
        [error("open not sent: broken pipe"), Action::Close(A)]
    );
    assert_eq!(actions[2..], retry(SECS(2)));
}

#[test]
fn a_good_open_is_answered_with_keepalive_and_negotiated_timers() {
    let mut run = Run::open_sent(cfg());
    assert_eq!(
        run.on(Event::Received(A, peer_open(LOW_ID, 9, false))),
        [Action::Send {
            conn: A,
            message: Message::Keepalive
        }]
    );
    // Hold time: the smaller of 30 and 9; keepalives every third of it.
    assert_eq!(
        run.on(sent(A, msg_type::KEEPALIVE)),
        [
            start(Timer::Hold(A), SECS(9)),
            start(Timer::Keepalive(A), SECS(3)),
            Action::State(SessionState::OpenConfirm)
        ]
    );
}

#[test]
fn hold_time_zero_means_no_timers() {
    let mut run = Run::open_sent(cfg());
    run.on(Event::Received(A, peer_open(LOW_ID, 0, false)));
    assert_eq!(
        run.on(sent(A, msg_type::KEEPALIVE)),
        [
            Action::StopTimer(Timer::Hold(A)),
            Action::StopTimer(Timer::Keepalive(A)),
            Action::State(SessionState::OpenConfirm)
        ]
    );
    let actions = run.on(Event::Received(A, keepalive()));
    assert!(actions.contains(&Action::WriteTimeout(WRITE_TIMEOUT)));
    assert!(actions.contains(&Action::StopTimer(Timer::Hold(A))));
    assert!(actions.contains(&Action::StopTimer(Timer::Keepalive(A))));
}

#[test]
fn a_bad_open_gets_its_open_message_error() {
    let mut run = Run::open_sent(SessionConfig {
        peer_as: 65001,
        ..cfg()
    });
    let actions = run.on(Event::Received(A, peer_open(LOW_ID, 30, false)));
    assert_eq!(
        actions[..2],
        [
            error("sent notification 2/2 (open message error): peer as 65000 but 65001 configured"),
            notify(A, 2, 2, AS.to_be_bytes()[2..].to_vec()),
        ]
    );
    assert_eq!(actions[2..], retry(SECS(2)));
    // Our own identifier: Bad BGP Identifier.
    let mut run = Run::open_sent(cfg());
    let actions = run.on(Event::Received(A, peer_open(LOCAL_ID, 30, false)));
    assert_eq!(actions[1], notify(A, 2, 3, LOCAL_ID.octets().to_vec()));
}

#[test]
fn unexpected_messages_in_open_sent_are_fsm_errors_5_1() {
    for (incoming, msg_type) in [
        (keepalive(), msg_type::KEEPALIVE),
        (
            Incoming::Update(ParsedUpdate {
                update: crate::pack::end_of_rib(),
                errors: Vec::new(),
                verdict: Verdict::Accept,
            }),
            msg_type::UPDATE,
        ),
    ] {
        let mut run = Run::open_sent(cfg());
        let actions = run.on(Event::Received(A, incoming));
        assert_eq!(
            actions[..2],
            [
                error(&format!(
                    "sent notification 5/1 (finite state machine error): unexpected message type {msg_type} in OpenSent"
                )),
                notify(A, 5, 1, vec![msg_type]),
            ]
        );
        assert_eq!(actions[2..], retry(SECS(2)));
    }
}

#[test]
fn a_notification_or_a_closed_connection_fails_quietly() {
    let mut run = Run::open_sent(cfg());
    let actions = run.on(Event::Received(A, notification(6, 2)));
    assert_eq!(
        actions[..2],
        [error("received notification 6/2 (cease)"), Action::Close(A)]
    );
    assert_eq!(actions[2..], retry(SECS(2)));
    let mut run = Run::open_sent(cfg());
    let actions = run.on(Event::RecvFailed(A, RecvError::Closed));
    assert_eq!(
        actions[..2],
        [error("connection closed by peer"), Action::Close(A)]
    );
    let mut run = Run::open_sent(cfg());
    let failure = RecvError::Io(io::Error::from(io::ErrorKind::ConnectionReset));
    let actions = run.on(Event::RecvFailed(A, failure));
    assert_eq!(actions[1], Action::Close(A));
}

#[test]
fn a_message_that_cannot_be_decoded_gets_its_notification() {
    let mut run = Run::open_sent(cfg());
    let bad = Error::Length {
        length: 5000,
        msg_type: 2,
    };
    let actions = run.on(Event::RecvFailed(A, RecvError::Decode(bad.clone())));
    assert_eq!(
        actions[..2],
        [
            error(&format!(
                "sent notification 1/2 (message header error): {bad}"
            )),
            notify(A, 1, 2, 5000u16.to_be_bytes().to_vec()),
        ]
    );
}

#[test]
fn hold_timer_expiry_before_established_is_4_0() {
    let mut run = Run::open_sent(cfg());
    let actions = run.on(Event::TimerExpired(Timer::Hold(A)));
    assert_eq!(
        actions[..2],
        [
            error("hold timer expired before the session came up"),
            notify(A, 4, 0, Vec::new()),
        ]
    );
    assert_eq!(actions[2..], retry(SECS(2)));
}

#[test]
fn stop_or_abandon_during_the_exchange_ceases_6_2() {
    for stop in [Event::Stop, Event::Abandon] {
        let mut run = Run::open_sent(cfg());
        assert_eq!(
            run.on(stop),
            [
                notify(A, 6, 2, Vec::new()),
                Action::State(SessionState::Idle)
            ]
        );
        assert!(run.state.finished());
    }
}

// OpenConfirm.

#[test]
fn an_open_in_open_confirm_is_an_fsm_error_5_2() {
    let mut run = Run::open_confirm(false);
    let actions = run.on(Event::Received(A, peer_open(LOW_ID, 30, false)));
    assert_eq!(actions[1], notify(A, 5, 2, vec![msg_type::OPEN]));
    assert_eq!(actions[2..], retry(SECS(2)));
}

#[test]
fn open_confirm_sends_keepalives_on_its_timer() {
    let mut run = Run::open_confirm(false);
    assert_eq!(
        run.on(Event::TimerExpired(Timer::Keepalive(A))),
        [
            start(Timer::Keepalive(A), SECS(10)),
            Action::Send {
                conn: A,
                message: Message::Keepalive
            }
        ]
    );
    assert_eq!(run.on(sent(A, msg_type::KEEPALIVE)), []);
    run.on(Event::TimerExpired(Timer::Keepalive(A)));
    let actions = run.on(Event::SendFailed {
        conn: A,
        msg_type: msg_type::KEEPALIVE,
        error: SendFailure::Io("write blocked for 90s".to_string()),
    });
    assert_eq!(
        actions[..2],
        [
            error("keepalive not sent: write blocked for 90s"),
            Action::Close(A)
        ]
    );
}

#[test]
fn keepalive_in_open_confirm_establishes() {
    let mut run = Run::open_confirm(true);
    let negotiated = check_peer_open_ok(peer_open(LOW_ID, 30, true));
    assert_eq!(
        run.on(Event::Received(A, keepalive())),
        [
            Action::Negotiated(negotiated),
            Action::State(SessionState::Established),
            Action::Emit(SessionEvent::Established {
                peer_id: LOW_ID,
                hold_time: 30,
                peer_gr: negotiated.peer_gr,
            }),
            Action::WriteTimeout(SECS(30)),
            start(Timer::Hold(A), SECS(30)),
            start(Timer::Keepalive(A), SECS(10)),
        ]
    );
    assert!(negotiated.peer_gr.is_some());
    assert!(run.state.reads_outbound());
}

fn check_peer_open_ok(open: Incoming) -> Negotiated {
    let Incoming::Message(Message::Open(open)) = open else {
        panic!("not an open")
    };
    check_peer_open(&cfg(), &open).unwrap_or_else(|r| panic!("{r:?}"))
}

#[test]
fn restarting_sets_the_r_bit_until_established() {
    let restarting = SessionConfig {
        restarting: true,
        ..cfg()
    };
    let mut run = Run::new(restarting.clone());
    run.on(Event::Start);
    let [Action::Send { message, .. }] = &run.on(Event::Connected(A))[..] else {
        panic!("no open")
    };
    assert_eq!(*message, Message::Open(local_open(&restarting, true)));
    // After Established, a new connection's OPEN no longer says restarting.
    let mut run = Run::established(true);
    run.cfg = restarting;
    let actions = run.on(Event::Accepted(B));
    let Some(Action::Send { message, .. }) = actions.last() else {
        panic!("{actions:?}")
    };
    assert_eq!(*message, Message::Open(local_open(&cfg(), false)));
}

// Collisions (RFC 4271 §6.8).

/// Our connection A in OpenSent and the peer's B, both with our OPEN sent.
fn collided() -> Run {
    let mut run = Run::open_sent(cfg());
    run.on(Event::Accepted(B));
    assert_eq!(
        run.on(sent(B, msg_type::OPEN)),
        [start(Timer::Hold(B), OPEN_HOLD)]
    );
    run
}

#[test]
fn collision_keeps_our_connection_when_our_identifier_is_higher() {
    let mut run = collided();
    run.on(Event::Received(B, peer_open(LOW_ID, 30, false)));
    // B was the one past the OPENs: without it the session is back to OpenSent (on A).
    let actions = run.on(sent(B, msg_type::KEEPALIVE));
    assert_eq!(actions[2..], [notify(B, 6, 7, Vec::new())]);
    assert_eq!(run.reported(), SessionState::OpenSent);
}

#[test]
fn collision_keeps_the_peers_connection_when_its_identifier_is_higher() {
    let mut run = collided();
    run.on(Event::Received(B, peer_open(HIGH_ID, 30, false)));
    let actions = run.on(sent(B, msg_type::KEEPALIVE));
    assert_eq!(
        actions[2..],
        [
            notify(A, 6, 7, Vec::new()),
            Action::State(SessionState::OpenConfirm)
        ]
    );
    let actions = run.on(Event::Received(B, keepalive()));
    assert_eq!(actions[1], Action::State(SessionState::Established));
}

#[test]
fn a_second_connection_from_the_peer_replaces_its_first() {
    let mut run = collided();
    run.on(Event::Accepted(C));
    assert_eq!(
        run.on(sent(C, msg_type::OPEN)),
        [
            start(Timer::Hold(C), OPEN_HOLD),
            notify(B, 6, 7, Vec::new())
        ]
    );
}

#[test]
fn coming_up_closes_the_other_connection() {
    let mut run = collided();
    run.on(Event::Received(A, peer_open(LOW_ID, 30, false)));
    // Known identifier, ours higher: B loses as soon as A has our KEEPALIVE out.
    let actions = run.on(sent(A, msg_type::KEEPALIVE));
    assert!(actions.contains(&notify(B, 6, 7, Vec::new())));
    let actions = run.on(Event::Received(A, keepalive()));
    assert_eq!(actions[1], Action::State(SessionState::Established));
}
