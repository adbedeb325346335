//! The session task against a scripted peer on loopback TCP: the test plays the neighbour by
//! hand with the crate's emitters and checks what the session sends and reports.
//!
//! ```text
//!  session task (nvo_bgp::session) ── TCP 127.0.0.1 ──► TcpListener in the test ("the peer")
//!         ▲ SessionHandle::accept(stream) ◄── a second listener, for peer-initiated connections
//!         └─► events mpsc ──► the test
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use common::{mac_ip_route, multicast_route, VTEP};
use nvo_bgp::attribute::{attr_type, AsPathSegment, Origin};
use nvo_bgp::community::TUNNEL_TYPE_VXLAN;
use nvo_bgp::open::GracefulRestartFamily;
use nvo_bgp::session::{
    self, PeerGr, RouteAttrs, SendError, SessionConfig, SessionEvent, SessionHandle, SessionState,
};
use nvo_bgp::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;

const AS: u32 = 65000;
const LOCAL_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const PEER_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const WAIT: Duration = Duration::from_secs(5);

fn config(peer: SocketAddr) -> SessionConfig {
    SessionConfig {
        local_as: AS,
        router_id: LOCAL_ID,
        peer,
        peer_as: AS,
        hold_time: 9,
        connect_retry: Duration::from_millis(200),
        passive: false,
        graceful_restart: Some(120),
        restarting: false,
        local_addr: None,
        auth: Default::default(),
    }
}

/// The scripted neighbour's end of one connection.
struct Peer {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Peer {
    fn new(stream: TcpStream) -> Self {
        Peer {
            stream,
            buf: Vec::new(),
        }
    }

    /// The next message, or `None` when the session closed the connection.
    async fn recv(&mut self) -> Option<Message> {
        loop {
            if let Some(n) = frame_len(&self.buf).unwrap() {
                if self.buf.len() >= n {
                    let msg = Message::parse(&self.buf[..n]).unwrap();
                    self.buf.drain(..n);
                    return Some(msg);
                }
            }
            let mut chunk = [0u8; 4096];
            let n = match timeout(WAIT, self.stream.read(&mut chunk)).await {
                Ok(Ok(n)) => n,
                Ok(Err(_)) => 0,
                Err(_) => panic!("no message from the session within {WAIT:?}"),
            };
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn expect(&mut self) -> Message {
        self.recv()
            .await
            .expect("connection closed, a message was expected")
    }

    /// Reads until a NOTIFICATION and returns its (code, subcode).
    async fn expect_notification(&mut self) -> (u8, u8) {
        loop {
            match self.recv().await {
                Some(Message::Notification(n)) => return (n.code, n.subcode),
                Some(_) => continue,
                None => panic!("connection closed without a notification"),
            }
        }
    }

    async fn send(&mut self, msg: &Message) {
        self.send_raw(&common::emit(msg)).await;
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    async fn send_update(&mut self, update: UpdateRepr) {
        self.send(&Message::Update(update)).await;
    }
}

struct Events(mpsc::Receiver<(usize, SessionEvent)>);

impl Events {
    async fn next(&mut self) -> SessionEvent {
        match timeout(WAIT, self.0.recv()).await {
            Ok(Some((index, event))) => {
                assert_eq!(index, 7, "events carry the peer index");
                event
            }
            Ok(None) => panic!("event channel closed"),
            Err(_) => panic!("no event within {WAIT:?}"),
        }
    }

    /// Skips events until one matches.
    async fn until(&mut self, want: impl Fn(&SessionEvent) -> bool) -> SessionEvent {
        loop {
            let event = self.next().await;
            if want(&event) {
                return event;
            }
        }
    }

    async fn established(&mut self) -> SessionEvent {
        self.until(|e| matches!(e, SessionEvent::Established { .. }))
            .await
    }

    async fn down(&mut self) -> (String, bool) {
        match self.until(|e| matches!(e, SessionEvent::Down { .. })).await {
            SessionEvent::Down { reason, graceful } => (reason, graceful),
            _ => unreachable!(),
        }
    }

    /// The next event that is not a state change.
    async fn next_route_event(&mut self) -> SessionEvent {
        self.until(|e| !matches!(e, SessionEvent::State(_))).await
    }
}

/// The peer's OPEN: EVPN, route refresh, GR for EVPN with `gr_flags` when `gr` is set.
fn peer_open(asn: u32, id: Ipv4Addr, hold: u16, gr: Option<(u8, u8)>) -> Message {
    let mut caps = vec![
        Capability::Multiprotocol { afi: 25, safi: 70 },
        Capability::Multiprotocol { afi: 1, safi: 1 },
        Capability::RouteRefresh,
    ];
    if let Some((flags, family_flags)) = gr {
        caps.push(Capability::GracefulRestart {
            flags,
            restart_time: 90,
            families: vec![GracefulRestartFamily {
                afi: 25,
                safi: 70,
                flags: family_flags,
            }],
        });
    }
    Message::Open(OpenRepr::new(asn, hold, id, caps))
}

/// Spawns a session connecting to a fresh listener and returns the accepted connection.
async fn start(
    tweak: impl FnOnce(&mut SessionConfig),
) -> (SessionHandle, Events, Peer, TcpListener) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = config(listener.local_addr().unwrap());
    tweak(&mut cfg);
    let (tx, rx) = mpsc::channel(64);
    let handle = session::spawn(cfg, 7, tx);
    let (stream, _) = timeout(WAIT, listener.accept()).await.unwrap().unwrap();
    (handle, Events(rx), Peer::new(stream), listener)
}

/// Plays the peer's side of the OPEN exchange; returns the session's OPEN.
async fn handshake(peer: &mut Peer, open: &Message) -> OpenRepr {
    let Message::Open(ours) = peer.expect().await else {
        panic!("the session must send OPEN first")
    };
    peer.send(open).await;
    assert_eq!(peer.expect().await, Message::Keepalive);
    peer.send(&Message::Keepalive).await;
    ours
}

/// An established session with a GR-capable peer (hold time 30).
async fn established() -> (SessionHandle, Events, Peer, TcpListener) {
    let (handle, mut events, mut peer, listener) = start(|_| {}).await;
    handshake(&mut peer, &peer_open(AS, PEER_ID, 30, Some((0, 0x80)))).await;
    events.established().await;
    (handle, events, peer, listener)
}

fn routes_update(attrs: Vec<PathAttribute>) -> UpdateRepr {
    let mp = MpReach::evpn(IpAddr::V4(VTEP), &[mac_ip_route(), multicast_route()]).unwrap();
    let mut attributes = vec![PathAttribute::new(AttributeValue::MpReach(mp))];
    attributes.extend(attrs);
    UpdateRepr {
        withdrawn: vec![],
        attributes,
        nlri: vec![],
    }
}

fn good_attrs() -> Vec<PathAttribute> {
    vec![
        PathAttribute::new(AttributeValue::Origin(Origin::Igp)),
        PathAttribute::new(AttributeValue::AsPath(vec![])),
        PathAttribute::new(AttributeValue::LocalPref(100)),
        PathAttribute::new(AttributeValue::ExtendedCommunities(vec![
            ExtendedCommunity::RouteTarget(RouteTarget::TwoOctetAs {
                asn: 65000,
                value: 10100,
            }),
            ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN),
        ])),
    ]
}

#[tokio::test]
async fn establishes_with_the_capabilities_nvo_needs() {
    let (handle, mut events, mut peer, _l) = start(|_| {}).await;
    let ours = handshake(&mut peer, &peer_open(AS, PEER_ID, 30, Some((0x8, 0x80)))).await;
    assert_eq!((ours.asn(), ours.hold_time, ours.bgp_id), (AS, 9, LOCAL_ID));
    assert!(ours.families().any(|f| f == (25, 70)));
    assert!(ours.capabilities.contains(&Capability::RouteRefresh));
    assert!(ours.capabilities.contains(&Capability::FourOctetAs(AS)));
    // Not restarting: R bit clear, F bit clear for EVPN.
    assert!(ours.capabilities.contains(&Capability::GracefulRestart {
        flags: 0,
        restart_time: 120,
        families: vec![GracefulRestartFamily {
            afi: 25,
            safi: 70,
            flags: 0
        }],
    }));
    let mut states = Vec::new();
    let established = loop {
        match events.next().await {
            SessionEvent::State(s) => states.push(s),
            other => break other,
        }
    };
    use SessionState::*;
    assert_eq!(states, vec![Connect, OpenSent, OpenConfirm, Established]);
    assert_eq!(
        established,
        SessionEvent::Established {
            peer_id: PEER_ID,
            hold_time: 9,
            peer_gr: Some(PeerGr {
                restart_time: 90,
                restarting: true,
                forwarding_preserved: true
            }),
        }
    );
    let stats = handle.stats();
    assert_eq!(stats.state, Established);
    assert_eq!(stats.peer_id, Some(PEER_ID));
    assert_eq!(stats.hold_time, Some(9));
    assert_eq!(stats.peer_restart_time, Some(90));
    assert_eq!(stats.established, 1);
    assert_eq!(
        (stats.messages_in.open, stats.messages_in.keepalive),
        (1, 1)
    );
    assert_eq!(
        (stats.messages_out.open, stats.messages_out.keepalive),
        (1, 1)
    );
}

#[tokio::test]
async fn restarting_sets_r_and_f_bits_until_established() {
    let (_handle, mut events, mut peer, listener) = start(|c| c.restarting = true).await;
    let ours = handshake(&mut peer, &peer_open(AS, PEER_ID, 30, None)).await;
    let gr_of = |open: &OpenRepr| {
        open.capabilities
            .iter()
            .find_map(|c| match c {
                Capability::GracefulRestart {
                    flags, families, ..
                } => Some((*flags, families[0].flags)),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(gr_of(&ours), (0x8, 0x80), "R bit and F bit for 25/70");
    assert_eq!(
        events.established().await,
        SessionEvent::Established {
            peer_id: PEER_ID,
            hold_time: 9,
            peer_gr: None
        }
    );
    // The peer lacks GR: a TCP drop is not graceful. The next OPEN no longer says restarting.
    drop(peer);
    let (_, graceful) = events.down().await;
    assert!(!graceful);
    let (stream, _) = timeout(WAIT, listener.accept()).await.unwrap().unwrap();
    let mut peer = Peer::new(stream);
    let Message::Open(again) = peer.expect().await else {
        panic!("open expected")
    };
    assert_eq!(gr_of(&again), (0, 0));
}

#[tokio::test]
async fn keepalives_every_third_of_the_hold_time() {
    let (handle, mut events, mut peer, _l) = start(|_| {}).await;
    handshake(&mut peer, &peer_open(AS, PEER_ID, 3, None)).await;
    events.established().await;
    assert_eq!(handle.stats().hold_time, Some(3));
    // Over 4.5 s the session must send a KEEPALIVE about every second while we answer.
    let mut keepalives = 0;
    let start = tokio::time::Instant::now();
    while start.elapsed() < Duration::from_millis(4500) {
        if let Ok(msg) = timeout(Duration::from_millis(500), peer.recv()).await {
            assert_eq!(msg, Some(Message::Keepalive));
            keepalives += 1;
            peer.send(&Message::Keepalive).await;
        }
    }
    assert!((3..=6).contains(&keepalives), "{keepalives} keepalives");
    assert_eq!(handle.stats().state, SessionState::Established);
}

#[tokio::test]
async fn hold_timer_expiry_notifies_and_goes_down_gracefully() {
    let (handle, mut events, mut peer, _l) = start(|_| {}).await;
    handshake(&mut peer, &peer_open(AS, PEER_ID, 3, Some((0, 0)))).await;
    events.established().await;
    let started = tokio::time::Instant::now();
    // Silent peer: no KEEPALIVEs back.
    assert_eq!(peer.expect_notification().await, (4, 0));
    let (reason, graceful) = events.down().await;
    assert!(started.elapsed() >= Duration::from_millis(2500));
    assert!(reason.contains("hold timer"), "{reason}");
    assert!(graceful, "the peer advertised GR for 25/70");
    assert_eq!(handle.stats().messages_out.notification, 1);
}

#[tokio::test]
async fn bad_peer_as_is_refused_and_retried() {
    let (handle, _events, mut peer, listener) = start(|_| {}).await;
    peer.expect().await;
    peer.send(&peer_open(65099, PEER_ID, 30, None)).await;
    assert_eq!(peer.expect_notification().await, (2, 2));
    let error = handle.stats().last_error.unwrap();
    assert!(error.contains("65099"), "{error}");
    // It connects again after the retry delay.
    let (stream, _) = timeout(WAIT, listener.accept()).await.unwrap().unwrap();
    let mut peer = Peer::new(stream);
    assert!(matches!(peer.expect().await, Message::Open(_)));
}

#[tokio::test]
async fn bad_open_fields_get_their_notifications() {
    // (offset in the message, bytes, expected notification): hold time 2, identifier 0.
    let cases: [(usize, &[u8], (u8, u8)); 3] = [
        (22, &[0, 2], (2, 6)),
        (24, &[0, 0, 0, 0], (2, 3)),
        (19, &[3], (2, 1)),
    ];
    for (at, bytes, want) in cases {
        let (_handle, _events, mut peer, _l) = start(|_| {}).await;
        peer.expect().await;
        let mut open = common::emit(&peer_open(AS, PEER_ID, 30, None));
        open[at..at + bytes.len()].copy_from_slice(bytes);
        peer.send_raw(&open).await;
        assert_eq!(peer.expect_notification().await, want);
    }
}

#[tokio::test]
async fn bad_header_gets_a_header_error() {
    let (_handle, _events, mut peer, _l) = start(|_| {}).await;
    peer.expect().await;
    let mut keepalive = common::emit(&Message::Keepalive);
    keepalive[0] = 0;
    peer.send_raw(&keepalive).await;
    assert_eq!(peer.expect_notification().await, (1, 1));

    let (_handle, mut events, mut peer, _l) = established().await;
    let mut keepalive = common::emit(&Message::Keepalive);
    keepalive[17] = 18; // length 18 < 19
    peer.send_raw(&keepalive).await;
    assert_eq!(peer.expect_notification().await, (1, 2));
    assert!(
        !events.down().await.1,
        "a NOTIFICATION we sent is not graceful"
    );
}

#[tokio::test]
async fn received_routes_arrive_with_their_attributes() {
    let (handle, mut events, mut peer, _l) = established().await;
    let mut attrs = good_attrs();
    attrs.push(PathAttribute::new(AttributeValue::PmsiTunnel(PmsiTunnel {
        flags: 0,
        tunnel_type: 6,
        label: 10100,
        tunnel_id: VTEP.octets().to_vec(),
    })));
    attrs.push(PathAttribute::new(AttributeValue::OriginatorId(PEER_ID)));
    peer.send_update(routes_update(attrs)).await;
    let SessionEvent::Update {
        reach,
        withdraw,
        errors,
    } = events.next_route_event().await
    else {
        panic!("update expected")
    };
    assert!(withdraw.is_empty() && errors.is_empty());
    let routes: Vec<_> = reach.iter().map(|(r, _)| r.clone()).collect();
    assert_eq!(routes, vec![mac_ip_route(), multicast_route()]);
    let attrs = &reach[0].1;
    assert_eq!(attrs.next_hop, IpAddr::V4(VTEP));
    assert_eq!(attrs.communities.len(), 2);
    assert_eq!(attrs.pmsi.as_ref().unwrap().label, 10100);
    assert_eq!(attrs.originator_id, Some(PEER_ID));
    assert_eq!(attrs.local_pref, Some(100));

    peer.send_update(common::withdraw_update()).await;
    assert_eq!(
        events.next_route_event().await,
        SessionEvent::Update {
            reach: vec![],
            withdraw: vec![mac_ip_route()],
            errors: vec![]
        }
    );
    // IPv4 unicast NLRI is ignored and counted.
    let ipv4 = UpdateRepr {
        withdrawn: vec![],
        attributes: vec![
            PathAttribute::new(AttributeValue::Origin(Origin::Igp)),
            PathAttribute::new(AttributeValue::AsPath(vec![])),
            PathAttribute::new(AttributeValue::NextHop(VTEP)),
            PathAttribute::new(AttributeValue::LocalPref(100)),
        ],
        nlri: vec![Ipv4Prefix {
            addr: Ipv4Addr::new(10, 9, 0, 0),
            len: 16,
        }],
    };
    peer.send_update(ipv4).await;
    peer.send_update(session::end_of_rib()).await;
    assert_eq!(events.next_route_event().await, SessionEvent::EndOfRib);
    assert_eq!(handle.stats().ignored_nlri, 1);
}

#[tokio::test]
async fn malformed_attributes_treat_as_withdraw_or_discard() {
    let (handle, mut events, mut peer, _l) = established().await;
    // ORIGIN 3 is invalid (RFC 7606 §7.1): treat-as-withdraw.
    let mut attrs = good_attrs();
    attrs[0] = PathAttribute {
        flags: 0x40,
        value: AttributeValue::Raw {
            type_code: attr_type::ORIGIN,
            value: vec![3],
        },
    };
    peer.send_update(routes_update(attrs)).await;
    let SessionEvent::Update {
        reach,
        withdraw,
        errors,
    } = events.next_route_event().await
    else {
        panic!("update expected")
    };
    assert!(reach.is_empty());
    assert_eq!(withdraw, vec![mac_ip_route(), multicast_route()]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].scope(), Scope::TreatAsWithdraw);

    // Missing LOCAL_PREF on iBGP (RFC 7606 §3 d): treat-as-withdraw too.
    let mut attrs = good_attrs();
    attrs.remove(2);
    peer.send_update(routes_update(attrs)).await;
    let SessionEvent::Update { reach, errors, .. } = events.next_route_event().await else {
        panic!("update expected")
    };
    assert!(reach.is_empty());
    assert_eq!(errors[0].attribute_type(), Some(attr_type::LOCAL_PREF));

    // AGGREGATOR of 3 bytes (§7.7): discarded, the routes stay.
    let mut attrs = good_attrs();
    attrs.push(PathAttribute {
        flags: 0xc0,
        value: AttributeValue::Raw {
            type_code: attr_type::AGGREGATOR,
            value: vec![1, 2, 3],
        },
    });
    peer.send_update(routes_update(attrs)).await;
    let SessionEvent::Update { reach, errors, .. } = events.next_route_event().await else {
        panic!("update expected")
    };
    assert_eq!(reach.len(), 2);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].scope(), Scope::AttributeDiscard);

    let stats = handle.stats();
    assert_eq!(stats.treat_as_withdraw, 2);
    assert_eq!(stats.attributes_discarded, 1);
    assert_eq!(
        stats.state,
        SessionState::Established,
        "the session stays up"
    );
}

#[tokio::test]
async fn session_reset_errors_send_their_notification() {
    let (_handle, mut events, mut peer, _l) = established().await;
    // MP_REACH_NLRI marked transitive and well-known: Attribute Flags Error, session scope.
    let mut update = routes_update(good_attrs());
    update.attributes[0].flags = 0x40;
    peer.send_update(update).await;
    assert_eq!(peer.expect_notification().await, (3, 4));
    let (reason, graceful) = events.down().await;
    assert!(reason.contains("3/4"), "{reason}");
    assert!(!graceful);
}

#[tokio::test]
async fn unexpected_messages_are_fsm_errors() {
    // An UPDATE before the OPEN exchange: 5/1 (RFC 6608, OpenSent).
    let (_handle, _events, mut peer, _l) = start(|_| {}).await;
    peer.expect().await;
    peer.send_update(session::end_of_rib()).await;
    assert_eq!(peer.expect_notification().await, (5, 1));

    // An OPEN in Established: 5/3.
    let (handle, mut events, mut peer, _l) = established().await;
    peer.send(&peer_open(AS, PEER_ID, 30, None)).await;
    assert_eq!(peer.expect_notification().await, (5, 3));
    assert!(!events.down().await.1);
    assert!(handle.stats().last_error.unwrap().contains("5/3"));
}

/// A peer-initiated connection: the test's end and the end handed to the session.
async fn inbound_pair() -> (Peer, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (Peer::new(client), server)
}

#[tokio::test]
async fn collision_keeps_the_connection_of_the_higher_identifier() {
    for local_higher in [true, false] {
        let local_id = if local_higher {
            Ipv4Addr::new(10, 0, 0, 9)
        } else {
            LOCAL_ID
        };
        let (handle, mut events, mut ours, _l) = start(|c| c.router_id = local_id).await;
        assert!(matches!(ours.expect().await, Message::Open(_)));
        let (mut theirs, stream) = inbound_pair().await;
        handle.accept(stream).unwrap();
        assert!(matches!(theirs.expect().await, Message::Open(_)));
        // The peer's OPEN on its own connection tells the session the peer's identifier.
        let open = peer_open(AS, PEER_ID, 30, None);
        theirs.send(&open).await;
        let (mut winner, mut loser) = if local_higher {
            (ours, theirs)
        } else {
            (theirs, ours)
        };
        assert_eq!(loser.expect_notification().await, (6, 7));
        if local_higher {
            winner.send(&open).await;
        }
        assert_eq!(winner.expect().await, Message::Keepalive);
        winner.send(&Message::Keepalive).await;
        events.established().await;
        assert_eq!(handle.stats().established, 1);
    }
}

#[tokio::test]
async fn a_restarted_peer_replaces_the_established_session() {
    let (handle, mut events, _old, _l) = established().await;
    let (mut new, stream) = inbound_pair().await;
    handle.accept(stream).unwrap();
    let (reason, graceful) = events.down().await;
    assert!(graceful, "{reason}");
    handshake(&mut new, &peer_open(AS, PEER_ID, 30, Some((0x8, 0x80)))).await;
    events.established().await;
    assert_eq!(handle.stats().established, 2);
}

#[tokio::test]
async fn outbound_updates_flow_only_while_established() {
    let (handle, mut events, mut peer, _l) = start(|_| {}).await;
    let attrs = RouteAttrs {
        next_hop: IpAddr::V4(VTEP),
        communities: vec![ExtendedCommunity::Encapsulation(TUNNEL_TYPE_VXLAN)],
        pmsi: None,
        originator_id: None,
        cluster_list: vec![],
        local_pref: None,
    };
    let cfg = config(peer.stream.local_addr().unwrap());
    let update = session::announce(&cfg, &[mac_ip_route()], &attrs).unwrap();
    assert!(matches!(
        handle.send_update(update.clone()),
        Err(SendError::NotEstablished { .. })
    ));
    handshake(&mut peer, &peer_open(AS, PEER_ID, 30, None)).await;
    events.established().await;
    handle.send_update(update.clone()).unwrap();
    handle.send_end_of_rib().unwrap();
    handle.route_refresh().unwrap();
    let Message::Update(got) = peer.expect().await else {
        panic!("update expected")
    };
    assert_eq!(got, update);
    assert_eq!(
        got.attribute(attr_type::LOCAL_PREF),
        Some(&AttributeValue::LocalPref(100))
    );
    assert_eq!(
        got.attribute(attr_type::AS_PATH),
        Some(&AttributeValue::AsPath(Vec::<AsPathSegment>::new()))
    );
    let Message::Update(eor) = peer.expect().await else {
        panic!("end-of-rib expected")
    };
    assert!(eor.is_end_of_rib());
    assert_eq!(
        peer.expect().await,
        Message::RouteRefresh(RouteRefreshRepr {
            afi: 25,
            subtype: 0,
            safi: 70
        })
    );
    handle.stop().await;
    assert_eq!(peer.expect_notification().await, (6, 2));
    let (_, graceful) = events.down().await;
    assert!(!graceful);
    assert_eq!(events.next().await, SessionEvent::State(SessionState::Idle));
    assert!(handle.send_update(update).is_err());
    let stats = handle.stats();
    assert_eq!(stats.messages_out.update, 2);
    assert_eq!(stats.messages_out.route_refresh, 1);
}

#[tokio::test]
async fn passive_session_waits_for_the_peer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = config(listener.local_addr().unwrap());
    cfg.passive = true;
    let (tx, rx) = mpsc::channel(64);
    let handle = session::spawn(cfg, 7, tx);
    let mut events = Events(rx);
    assert_eq!(
        events.next().await,
        SessionEvent::State(SessionState::Active)
    );
    // Never connects by itself.
    assert!(timeout(Duration::from_millis(500), listener.accept())
        .await
        .is_err());
    let (mut peer, stream) = inbound_pair().await;
    handle.accept(stream).unwrap();
    handshake(&mut peer, &peer_open(AS, PEER_ID, 30, None)).await;
    events.established().await;
}

#[tokio::test]
async fn a_route_refresh_for_evpn_reaches_the_speaker() {
    let (_handle, mut events, mut peer, _l) = established().await;
    // IPv4 unicast is not ours: counted, no event.
    peer.send(&Message::RouteRefresh(RouteRefreshRepr {
        afi: 1,
        subtype: 0,
        safi: 1,
    }))
    .await;
    peer.send(&Message::RouteRefresh(RouteRefreshRepr {
        afi: 25,
        subtype: 0,
        safi: 70,
    }))
    .await;
    assert_eq!(events.next_route_event().await, SessionEvent::RouteRefresh);
}

#[tokio::test]
async fn looped_routes_are_not_accepted() {
    let (handle, mut events, mut peer, _l) = established().await;
    let cfg = config(peer.stream.local_addr().unwrap());
    // Our own AS in the AS_PATH (RFC 4271 §9.1.2) ...
    let mut attrs = good_attrs();
    attrs.retain(|a| a.value.type_code() != attr_type::AS_PATH);
    attrs.push(PathAttribute::new(AttributeValue::AsPath(vec![
        AsPathSegment {
            kind: 2,
            asns: vec![64999, cfg.local_as],
        },
    ])));
    peer.send_update(routes_update(attrs)).await;
    let SessionEvent::Update {
        reach, withdraw, ..
    } = events.next_route_event().await
    else {
        panic!("update expected")
    };
    assert!(reach.is_empty());
    assert_eq!(withdraw, vec![mac_ip_route(), multicast_route()]);
    // ... or our identifier as ORIGINATOR_ID (RFC 4456 §8): the same.
    let mut attrs = good_attrs();
    attrs.push(PathAttribute::new(AttributeValue::OriginatorId(
        cfg.router_id,
    )));
    peer.send_update(routes_update(attrs)).await;
    let SessionEvent::Update { reach, .. } = events.next_route_event().await else {
        panic!("update expected")
    };
    assert!(reach.is_empty());
    assert_eq!(handle.stats().ignored_nlri, 4);
}

#[tokio::test]
async fn closing_for_a_restart_sends_no_notification() {
    let (handle, mut events, mut peer, _l) = established().await;
    handle.close_for_restart().await;
    // Only KEEPALIVEs, if any, then the end of the stream: no NOTIFICATION (RFC 4724 §4).
    while let Some(msg) = peer.recv().await {
        assert_eq!(
            msg,
            Message::Keepalive,
            "a restarting speaker sends no NOTIFICATION"
        );
    }
    let (reason, _) = events.down().await;
    assert!(reason.contains("restart"), "{reason}");
}
