//! BGP sessions: one tokio task per neighbour running the RFC 4271 §8 state machine over TCP.
//!
//! ```text
//!  speaker (nvod)                                   session task (spawn, one per neighbour)
//!  ──────────────                                   ─────────────────────────────────────────
//!  SessionHandle::send_update ──► outbound mpsc (bounded, in order) ──► UPDATE on the TCP stream
//!  SessionHandle::route_refresh ─┘                                       (only while Established)
//!  SessionHandle::accept / stop ─► control mpsc ──► collision resolution (§6.8) / Cease 6/2
//!  SessionHandle::stats ◄── Arc<Mutex<..>> ◄──────── counters, state, peer, last error
//!  events mpsc (peer_index, SessionEvent) ◄───────── State, Established, Update, EndOfRib, Down
//! ```
//!
//! The task connects (unless `passive`) and accepts connections the listener hands it, sends an
//! OPEN with the capabilities nvo needs — multiprotocol L2VPN EVPN (AFI 25 / SAFI 70), 4-octet
//! AS, route refresh and, when configured, graceful restart (RFC 4724) — and checks the peer's:
//! its AS must be `peer_as` (else NOTIFICATION 2/2), hold time 1 or 2 is refused (2/6), an
//! identifier of 0 or equal to ours is refused (2/3), and a peer without 4-octet AS or without
//! EVPN is refused (2/7, Unsupported Capability). The hold time is the smaller of both (0 = no
//! timers); KEEPALIVEs go every third of it. After any failure it tries again after
//! `connect_retry`, doubling up to [`MAX_RETRY`], forever, until stopped.
//!
//! Received UPDATEs go through [`UpdateRepr::parse_lenient`](crate::UpdateRepr::parse_lenient)
//! (RFC 7606): a session-reset error sends its NOTIFICATION and ends the session;
//! treat-as-withdraw turns every EVPN NLRI of the UPDATE into a withdraw; discarded attributes
//! only count. Only AFI 25 / SAFI 70 routes reach the speaker; IPv4 unicast and other families
//! are counted in [`SessionStats::ignored_nlri`] and dropped. Messages that do not fit the state
//! (an UPDATE or KEEPALIVE before the OPEN, an OPEN in Established) get NOTIFICATION 5
//! (RFC 6608 subcodes) and end the connection.
//!
//! Outbound UPDATEs are accepted only while the session is Established (else
//! [`SendError::NotEstablished`]); they are written in order. Those still queued when the
//! session goes down are dropped and counted in [`SessionStats::updates_dropped`]: after the
//! next Established the speaker sends its table again anyway.

mod conn;
mod fsm;
mod inbound;
mod negotiate;
mod outbound;
mod stats;
mod task;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::{Error, EvpnRoute, ExtendedCommunity, PmsiTunnel, UpdateRepr};

pub use outbound::{announce, end_of_rib, withdraw};
pub use stats::{MessageCounts, SessionStats};

/// The longest wait between connection attempts once backoff has grown.
pub const MAX_RETRY: Duration = Duration::from_secs(30);
/// Outbound messages queued per session before [`SendError::QueueFull`].
pub const OUTBOUND_QUEUE: usize = 4096;

/// One neighbour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Our AS.
    pub local_as: u32,
    /// Our BGP identifier.
    pub router_id: Ipv4Addr,
    /// The neighbour's address and port (179).
    pub peer: SocketAddr,
    /// The AS the neighbour must announce; equal to `local_as` for iBGP.
    pub peer_as: u32,
    /// Hold time we offer, in seconds: 0 (no keepalives) or at least 3.
    pub hold_time: u16,
    /// Delay before connecting again after a failure (doubles up to [`MAX_RETRY`]).
    pub connect_retry: Duration,
    /// Never connect; only take connections handed to [`SessionHandle::accept`].
    pub passive: bool,
    /// Advertise graceful restart (RFC 4724) with this restart time in seconds (at most 4095).
    pub graceful_restart: Option<u16>,
    /// We restarted and kept forwarding: the first OPEN carries the R bit and the F bit for
    /// EVPN. Cleared once the session has been Established.
    pub restarting: bool,
    /// Source address of outgoing connections; the kernel's choice when `None`.
    pub local_addr: Option<IpAddr>,
    /// TCP-MD5 and GTSM on outgoing connections (accepted ones are set up by the listener).
    pub auth: TcpAuth,
}

/// How a session's TCP connections are protected.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TcpAuth {
    /// TCP-MD5 (RFC 2385) key, 1 to 80 bytes.
    pub md5_key: Option<Vec<u8>>,
    /// GTSM (RFC 5082): send with TTL 255, drop what arrives with less.
    pub ttl_security: bool,
}

impl std::fmt::Debug for TcpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpAuth")
            .field("md5_key", &self.md5_key.as_ref().map(|_| "<hidden>"))
            .field("ttl_security", &self.ttl_security)
            .finish()
    }
}

impl SessionConfig {
    /// True when the neighbour is in our AS.
    pub fn ibgp(&self) -> bool {
        self.local_as == self.peer_as
    }
}

/// The RFC 4271 §8.2.2 states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Not trying (stopped).
    Idle,
    /// Connecting.
    Connect,
    /// Waiting to connect again, or for the peer to connect.
    Active,
    /// OPEN sent, waiting for the peer's.
    OpenSent,
    /// OPENs exchanged, waiting for a KEEPALIVE.
    OpenConfirm,
    /// Up: routes flow.
    Established,
}

/// The neighbour's graceful restart capability for EVPN (RFC 4724 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerGr {
    /// How long to keep its routes after it went away, in seconds.
    pub restart_time: u16,
    /// R bit: the peer has just restarted.
    pub restarting: bool,
    /// F bit for AFI 25 / SAFI 70: the peer kept its forwarding state across the restart.
    pub forwarding_preserved: bool,
}

/// The path attributes of a received EVPN route, as the speaker uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteAttrs {
    /// MP_REACH_NLRI next hop: the VTEP.
    pub next_hop: IpAddr,
    /// Extended communities: route targets, encapsulation, MAC mobility.
    pub communities: Vec<ExtendedCommunity>,
    /// PMSI tunnel (type 3 routes).
    pub pmsi: Option<PmsiTunnel>,
    /// ORIGINATOR_ID set by a route reflector (RFC 4456).
    pub originator_id: Option<Ipv4Addr>,
    /// CLUSTER_LIST (RFC 4456).
    pub cluster_list: Vec<Ipv4Addr>,
    /// LOCAL_PREF (iBGP).
    pub local_pref: Option<u32>,
}

/// What a session tells the speaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEvent {
    /// Every state change.
    State(SessionState),
    /// The session came up.
    Established {
        /// The peer's BGP identifier.
        peer_id: Ipv4Addr,
        /// Negotiated hold time (0: none).
        hold_time: u16,
        /// The peer's graceful restart capability, when it lists AFI 25 / SAFI 70.
        peer_gr: Option<PeerGr>,
    },
    /// Routes announced and withdrawn by one UPDATE.
    Update {
        /// Announced EVPN routes with their attributes.
        reach: Vec<(EvpnRoute, RouteAttrs)>,
        /// Withdrawn EVPN routes, including every route of a treat-as-withdraw UPDATE.
        withdraw: Vec<EvpnRoute>,
        /// RFC 7606 errors that did not reset the session.
        errors: Vec<Error>,
    },
    /// The peer's End-of-RIB for AFI 25 / SAFI 70 (RFC 4724 §2).
    EndOfRib,
    /// The peer asked for our AFI 25 / SAFI 70 routes again (ROUTE-REFRESH, RFC 2918).
    RouteRefresh,
    /// An Established session ended (not sent for failures before Established).
    Down {
        /// What ended it.
        reason: String,
        /// The peer advertised graceful restart for EVPN and the session ended by a TCP
        /// failure or hold timer expiry: keep its routes as stale for its restart time.
        graceful: bool,
    },
}

/// Why the handle refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// UPDATEs and ROUTE-REFRESH go only to an Established session.
    #[error("bgp session to {peer} is {state:?}, not established")]
    NotEstablished {
        /// The neighbour.
        peer: SocketAddr,
        /// Its state now.
        state: SessionState,
    },
    /// The outbound queue holds [`OUTBOUND_QUEUE`] messages: the peer does not read.
    #[error("bgp session to {peer}: outbound queue full ({capacity} messages)")]
    QueueFull {
        /// The neighbour.
        peer: SocketAddr,
        /// The queue size.
        capacity: usize,
    },
    /// The session task has ended.
    #[error("bgp session to {peer} is stopped")]
    Stopped {
        /// The neighbour.
        peer: SocketAddr,
    },
}

/// Requests the task handles in every state.
#[derive(Debug)]
enum Control {
    Accept(TcpStream),
    Stop,
    /// Stop without a NOTIFICATION: the speaker restarts and wants its peers to keep its
    /// routes (RFC 4724 §4: the TCP connection just closes).
    Abandon,
}

/// An outbound message, stamped with the Established period it was queued in.
#[derive(Debug)]
struct Outbound {
    epoch: u64,
    message: OutMessage,
}

#[derive(Debug)]
enum OutMessage {
    Update(UpdateRepr),
    RouteRefresh,
}

/// The speaker's side of one session; dropping it stops the session.
#[derive(Debug)]
pub struct SessionHandle {
    peer: SocketAddr,
    control: mpsc::Sender<Control>,
    outbound: mpsc::Sender<Outbound>,
    shared: Arc<stats::Shared>,
    task: Mutex<Option<JoinHandle<()>>>,
}

/// Starts the session task on the current tokio runtime; events carry `peer_index`.
pub fn spawn(
    config: SessionConfig,
    peer_index: usize,
    events: mpsc::Sender<(usize, SessionEvent)>,
) -> SessionHandle {
    let (control_tx, control_rx) = mpsc::channel(16);
    let (outbound_tx, outbound_rx) = mpsc::channel(OUTBOUND_QUEUE);
    let shared = Arc::new(stats::Shared::new());
    let peer = config.peer;
    let task = task::Task::new(
        config,
        peer_index,
        events,
        control_rx,
        outbound_rx,
        shared.clone(),
    );
    let join = tokio::spawn(task.run());
    SessionHandle {
        peer,
        control: control_tx,
        outbound: outbound_tx,
        shared,
        task: Mutex::new(Some(join)),
    }
}

impl SessionHandle {
    /// The neighbour's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Hands over a connection the listener accepted from this neighbour. A connection that
    /// collides with ours is resolved by BGP identifier (RFC 4271 §6.8).
    pub fn accept(&self, stream: TcpStream) -> Result<(), SendError> {
        self.control
            .try_send(Control::Accept(stream))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => SendError::QueueFull {
                    peer: self.peer,
                    capacity: self.control.max_capacity(),
                },
                mpsc::error::TrySendError::Closed(_) => SendError::Stopped { peer: self.peer },
            })
    }

    /// Queues an UPDATE; refused unless Established. It must fit in 4096 bytes once emitted
    /// (see [`announce`]); one that does not is dropped, counted and named in `last_error`.
    pub fn send_update(&self, update: UpdateRepr) -> Result<(), SendError> {
        self.queue(OutMessage::Update(update))
    }

    /// Queues our End-of-RIB for AFI 25 / SAFI 70, after the UPDATEs queued before it.
    pub fn send_end_of_rib(&self) -> Result<(), SendError> {
        self.send_update(end_of_rib())
    }

    /// Asks the peer to send its EVPN routes again (RFC 2918).
    pub fn route_refresh(&self) -> Result<(), SendError> {
        self.queue(OutMessage::RouteRefresh)
    }

    fn queue(&self, message: OutMessage) -> Result<(), SendError> {
        let epoch = self.shared.established_epoch().map_err(|state| {
            if self.outbound.is_closed() {
                SendError::Stopped { peer: self.peer }
            } else {
                SendError::NotEstablished {
                    peer: self.peer,
                    state,
                }
            }
        })?;
        self.outbound
            .try_send(Outbound { epoch, message })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => SendError::QueueFull {
                    peer: self.peer,
                    capacity: OUTBOUND_QUEUE,
                },
                mpsc::error::TrySendError::Closed(_) => SendError::Stopped { peer: self.peer },
            })
    }

    /// Stops the session: NOTIFICATION Cease / Administrative Shutdown (6/2) when a connection
    /// is open, then the task ends. Returns once it has.
    pub async fn stop(&self) {
        self.end(Control::Stop).await;
    }

    /// Ends the session the way a restarting speaker does (RFC 4724): an Established
    /// connection is closed without a NOTIFICATION, so a peer that negotiated graceful restart
    /// keeps our routes as stale. Returns once the task has ended.
    pub async fn close_for_restart(&self) {
        self.end(Control::Abandon).await;
    }

    async fn end(&self, how: Control) {
        // A full control queue only delays the end; a closed one means the task is gone.
        let _ = self.control.send(how).await;
        let join = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(join) = join {
            let _ = join.await;
        }
    }

    /// A snapshot of the session's state and counters.
    pub fn stats(&self) -> SessionStats {
        self.shared.snapshot()
    }
}
