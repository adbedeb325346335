//! The Established rows of the state table: what ends a session and how, and what flows.

use super::*;

#[test]
fn hold_timer_expiry_sends_4_0_and_ends_gracefully_with_gr() {
    for gr in [false, true] {
        let mut run = Run::established(gr);
        let actions = run.on(Event::TimerExpired(Timer::Hold(A)));
        assert_eq!(
            actions,
            [
                notify(A, 4, 0, Vec::new()),
                Action::DropQueued,
                Action::WriteTimeout(WRITE_TIMEOUT),
                error("hold timer expired"),
                Action::Emit(SessionEvent::Down {
                    reason: "hold timer expired".to_string(),
                    graceful: gr
                }),
                Action::State(SessionState::Active),
                start(Timer::ConnectRetry, SECS(2)),
            ]
        );
    }
}

#[test]
fn an_open_in_established_is_an_fsm_error_5_3() {
    let mut run = Run::established(true);
    let actions = run.on(Event::Received(A, peer_open(LOW_ID, 30, false)));
    let reason = "sent notification 5/3 (finite state machine error): unexpected message type 1 in Established";
    assert_eq!(
        actions[..5],
        [
            start(Timer::Hold(A), SECS(30)),
            notify(A, 5, 3, vec![msg_type::OPEN]),
            Action::DropQueued,
            Action::WriteTimeout(WRITE_TIMEOUT),
            error(reason),
        ]
    );
    assert_eq!(
        actions[5],
        Action::Emit(SessionEvent::Down {
            reason: reason.to_string(),
            graceful: false
        })
    );
}

#[test]
fn losing_the_connection_is_graceful_only_with_gr_and_without_notification() {
    for gr in [false, true] {
        let mut run = Run::established(gr);
        let actions = run.on(Event::RecvFailed(A, RecvError::Closed));
        assert_eq!(
            actions[2..5],
            [
                error("connection closed by peer"),
                Action::Emit(SessionEvent::Down {
                    reason: "connection closed by peer".to_string(),
                    graceful: gr
                }),
                Action::Close(A),
            ]
        );
        assert_eq!(actions[5..], retry(SECS(2)));
    }
    let mut run = Run::established(true);
    let actions = run.on(Event::Received(A, notification(6, 4)));
    assert!(actions.contains(&Action::Emit(SessionEvent::Down {
        reason: "received notification 6/4 (cease)".to_string(),
        graceful: false
    })));
    assert!(actions.contains(&Action::Close(A)));
}

#[test]
fn a_decode_error_in_established_gets_its_notification() {
    let mut run = Run::established(true);
    let bad = Error::MessageType(9);
    let actions = run.on(Event::RecvFailed(A, RecvError::Decode(bad)));
    assert_eq!(actions[0], notify(A, 1, 3, vec![9]));
    assert!(actions.contains(&Action::Emit(SessionEvent::Down {
        reason: "sent notification 1/3 (message header error): bgp message type 9 unknown"
            .to_string(),
        graceful: false
    })));
}

#[test]
fn the_backoff_starts_again_after_established() {
    let mut run = Run::new(cfg());
    run.on(Event::Start);
    run.on(Event::ConnectFailed("refused".to_string()));
    run.on(Event::TimerExpired(Timer::ConnectRetry));
    run.on(Event::ConnectFailed("refused".to_string()));
    run.on(Event::TimerExpired(Timer::ConnectRetry));
    run.on(Event::Connected(A));
    run.on(sent(A, msg_type::OPEN));
    run.on(Event::Received(A, peer_open(LOW_ID, 30, false)));
    run.on(sent(A, msg_type::KEEPALIVE));
    run.on(Event::Received(A, keepalive()));
    let actions = run.on(Event::RecvFailed(A, RecvError::Closed));
    assert_eq!(actions[actions.len() - 2..], retry(SECS(2)));
}

#[test]
fn received_messages_restart_the_hold_timer_and_reach_the_speaker() {
    let mut run = Run::established(false);
    assert_eq!(
        run.on(Event::Received(A, keepalive())),
        [start(Timer::Hold(A), SECS(30))]
    );
    let eor = Incoming::Update(ParsedUpdate {
        update: crate::pack::end_of_rib(),
        errors: Vec::new(),
        verdict: Verdict::Accept,
    });
    assert_eq!(
        run.on(Event::Received(A, eor)),
        [
            start(Timer::Hold(A), SECS(30)),
            Action::Inbound {
                treat_as_withdraw: false,
                discarded: 0,
                ignored: 0
            },
            Action::Emit(SessionEvent::EndOfRib),
        ]
    );
    let refresh = |afi, safi| {
        Incoming::Message(Message::RouteRefresh(RouteRefreshRepr {
            afi,
            subtype: 0,
            safi,
        }))
    };
    assert_eq!(
        run.on(Event::Received(A, refresh(25, 70))),
        [
            start(Timer::Hold(A), SECS(30)),
            Action::Emit(SessionEvent::RouteRefresh)
        ]
    );
    assert_eq!(
        run.on(Event::Received(A, refresh(1, 1))),
        [start(Timer::Hold(A), SECS(30))]
    );
    assert_eq!(run.reported(), SessionState::Established);
}

#[test]
fn an_update_that_resets_the_session_gets_its_notification() {
    let mut run = Run::established(true);
    let flags = Error::Attribute {
        type_code: 14,
        what: "flags",
        value: 0x40,
        subcode: 4,
        scope: Scope::Session,
    };
    let reset = Incoming::Update(ParsedUpdate {
        update: UpdateRepr {
            withdrawn: Vec::new(),
            attributes: Vec::new(),
            nlri: Vec::new(),
        },
        errors: vec![flags],
        verdict: Verdict::SessionReset,
    });
    let actions = run.on(Event::Received(A, reset));
    assert_eq!(actions[1], notify(A, 3, 4, Vec::new()));
    let Some(Action::Emit(SessionEvent::Down { reason, graceful })) = actions.get(5) else {
        panic!("{actions:?}")
    };
    assert!(
        reason.starts_with("sent notification 3/4 (update message error)"),
        "{reason}"
    );
    assert!(!graceful);
}

#[test]
fn outbound_messages_of_this_period_are_sent_older_ones_dropped() {
    let mut run = Run::established(false);
    let epoch = run.state.epoch;
    let queued = |epoch| {
        Event::Outbound(Outbound {
            epoch,
            message: OutMessage::Update(crate::pack::end_of_rib()),
        })
    };
    assert_eq!(run.on(queued(epoch - 1)), [Action::UpdatesDropped(1)]);
    assert_eq!(
        run.on(queued(epoch)),
        [Action::Send {
            conn: A,
            message: Message::Update(crate::pack::end_of_rib())
        }]
    );
    // Written: the next KEEPALIVE can wait a full interval.
    assert_eq!(
        run.on(sent(A, msg_type::UPDATE)),
        [start(Timer::Keepalive(A), SECS(10))]
    );
    run.on(queued(epoch));
    let too_big =
        SendFailure::Unencodable("cannot emit update length: value 5000 out of range".to_string());
    assert_eq!(
        run.on(Event::SendFailed {
            conn: A,
            msg_type: msg_type::UPDATE,
            error: too_big
        }),
        [
            Action::UpdatesDropped(1),
            error("update not sent: cannot emit update length: value 5000 out of range")
        ]
    );
    run.on(Event::Outbound(Outbound {
        epoch,
        message: OutMessage::RouteRefresh,
    }));
    let actions = run.on(Event::SendFailed {
        conn: A,
        msg_type: msg_type::ROUTE_REFRESH,
        error: SendFailure::Io("broken pipe".to_string()),
    });
    assert!(actions.contains(&Action::Emit(SessionEvent::Down {
        reason: "write failed: broken pipe".to_string(),
        graceful: false
    })));
}

#[test]
fn established_keepalives_restart_their_timer_before_sending() {
    let mut run = Run::established(true);
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
        error: SendFailure::Io("broken pipe".to_string()),
    });
    assert!(actions.contains(&Action::Emit(SessionEvent::Down {
        reason: "keepalive not sent: broken pipe".to_string(),
        graceful: true
    })));
}

#[test]
fn a_new_connection_in_established_is_refused_without_gr() {
    let mut run = Run::established(false);
    assert_eq!(run.on(Event::Accepted(B)), [notify(B, 6, 7, Vec::new())]);
    assert_eq!(run.reported(), SessionState::Established);
}

#[test]
fn a_restarted_gr_peer_takes_over_with_its_new_connection() {
    let mut run = Run::established(true);
    let reason = "peer connected again: graceful restart";
    assert_eq!(
        run.on(Event::Accepted(B)),
        [
            Action::DropQueued,
            Action::WriteTimeout(WRITE_TIMEOUT),
            error(reason),
            Action::Emit(SessionEvent::Down {
                reason: reason.to_string(),
                graceful: true
            }),
            Action::Close(A),
            Action::Send {
                conn: B,
                message: our_open(false)
            },
        ]
    );
    // Straight to OpenSent on the new connection, not through Active.
    assert_eq!(
        run.on(sent(B, msg_type::OPEN)),
        [
            start(Timer::Hold(B), OPEN_HOLD),
            Action::State(SessionState::OpenSent)
        ]
    );
}

#[test]
fn stop_in_established_ceases_6_2_and_abandon_sends_nothing() {
    let mut run = Run::established(true);
    let actions = run.on(Event::Stop);
    assert_eq!(actions[0], notify(A, 6, 2, Vec::new()));
    assert!(!actions.contains(&Action::Close(A)));
    assert_eq!(actions.last(), Some(&Action::State(SessionState::Idle)));
    assert!(run.state.finished());

    let mut run = Run::established(true);
    let actions = run.on(Event::Abandon);
    assert_eq!(
        actions,
        [
            Action::DropQueued,
            Action::WriteTimeout(WRITE_TIMEOUT),
            error("closed for a restart"),
            Action::Emit(SessionEvent::Down {
                reason: "closed for a restart".to_string(),
                graceful: false
            }),
            Action::Close(A),
            Action::State(SessionState::Idle),
        ]
    );
    assert!(run.state.finished());
}

#[test]
fn a_passive_session_waits_again_after_a_failure() {
    let mut run = Run::new(SessionConfig {
        passive: true,
        ..cfg()
    });
    run.on(Event::Start);
    run.on(Event::Accepted(A));
    run.on(sent(A, msg_type::OPEN));
    let actions = run.on(Event::RecvFailed(A, RecvError::Closed));
    assert_eq!(
        actions,
        [
            error("connection closed by peer"),
            Action::Close(A),
            Action::State(SessionState::Active)
        ]
    );
    assert!(!run.state.finished());
}
