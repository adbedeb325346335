//! One iBGP session over a blocking `TcpStream`: just enough of RFC 4271 §8 for a load
//! generator. It opens (OPEN with multiprotocol L2VPN EVPN, route refresh and 4-octet AS),
//! waits for the peer's OPEN and KEEPALIVE, then runs two threads: one sends KEEPALIVEs every
//! hold/3, one reads and counts whatever the peer sends and ends the session on a
//! NOTIFICATION, EOF, a malformed message or hold timer expiry, reporting one [`Closure`].
//!
//! Everything read from the peer goes through `frame_len` and `Message::parse`; nothing the peer
//! sends can panic this code. UPDATEs are counted, not parsed: the injector only sends routes.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use nvo_bgp::evpn::{AFI_L2VPN, SAFI_EVPN};
use nvo_bgp::message::{msg_type, HEADER_LEN, MAX_MESSAGE_LEN};
use nvo_bgp::open::open_subcode;
use nvo_bgp::{code, frame_len, Capability, Message, NotificationRepr, OpenRepr};

/// How the session is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerConfig {
    /// The peer's address and port.
    pub addr: SocketAddr,
    /// Our AS.
    pub asn: u32,
    /// The AS the peer must have (ours for iBGP).
    pub peer_as: u32,
    /// Our BGP identifier.
    pub router_id: Ipv4Addr,
    /// Hold time offered: 0 or at least 3 seconds.
    pub hold_time: u16,
    /// How long to wait for the TCP connection and for each message of the opening exchange.
    pub timeout: Duration,
}

/// Why the session could not be opened or went down.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// TCP connect failed.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The peer.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Reading or writing the socket failed.
    #[error("{what} with {addr} failed: {source}")]
    Io {
        /// What we were doing.
        what: &'static str,
        /// The peer.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The peer sent something this crate cannot accept.
    #[error("peer {addr} sent a malformed message: {source}")]
    Malformed {
        /// The peer.
        addr: SocketAddr,
        /// The parse error.
        source: nvo_bgp::Error,
    },
    /// A message we built could not be encoded (a bug or an impossible argument).
    #[error("cannot encode a message: {0}")]
    Emit(#[from] nvo_bgp::Error),
    /// The peer refused the session or closed it with a NOTIFICATION.
    #[error("peer {addr} sent notification {code}/{subcode} ({meaning}), data {data:02x?}")]
    Notification {
        /// The peer.
        addr: SocketAddr,
        /// Error code.
        code: u8,
        /// Subcode.
        subcode: u8,
        /// What the code means.
        meaning: &'static str,
        /// Data bytes.
        data: Vec<u8>,
    },
    /// The peer's OPEN is not what an EVPN route-reflector client needs.
    #[error("peer {addr} refused: {reason}")]
    Refused {
        /// The peer.
        addr: SocketAddr,
        /// What was wrong, with the values.
        reason: String,
    },
    /// The opening exchange got a message of the wrong type.
    #[error("peer {addr} sent message type {got} while we waited for {wanted}")]
    Unexpected {
        /// The peer.
        addr: SocketAddr,
        /// The type received.
        got: u8,
        /// What we waited for.
        wanted: &'static str,
    },
    /// The socket's writer lock was poisoned by a panicking thread.
    #[error("the session's writer is unusable after a thread failed")]
    Poisoned,
}

/// The name of a NOTIFICATION error code (RFC 4271 §4.5).
pub fn code_meaning(code: u8) -> &'static str {
    nvo_bgp::code::name(code)
}

/// How the session ended, as the reader thread saw it.
#[derive(Debug)]
pub enum Closure {
    /// The peer sent a NOTIFICATION, or closed, or a read failed: the error says which.
    Error(PeerError),
    /// Nothing arrived for the hold time (RFC 4271 §6.5); we sent the NOTIFICATION.
    HoldTimerExpired(u16),
    /// The peer closed the connection without a NOTIFICATION.
    Eof,
}

/// What the peer said in its OPEN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its BGP identifier.
    pub bgp_id: Ipv4Addr,
    /// Its AS.
    pub asn: u32,
    /// The negotiated hold time (the smaller offer).
    pub hold_time: u16,
}

/// Counters the reader thread keeps.
#[derive(Debug, Default)]
pub struct Received {
    /// UPDATEs received.
    pub updates: AtomicU64,
    /// KEEPALIVEs received.
    pub keepalives: AtomicU64,
}

/// An established session.
#[derive(Debug)]
pub struct Session {
    addr: SocketAddr,
    writer: Arc<Mutex<TcpStream>>,
    closure: Receiver<Closure>,
    /// Dropped to stop the keepalive thread.
    _stop_keepalives: Sender<()>,
    /// The peer's OPEN.
    pub peer: PeerInfo,
    /// What the peer sent since.
    pub received: Arc<Received>,
}

/// Connects and runs the opening exchange (RFC 4271 §8.2.2: Connect → OpenSent → OpenConfirm →
/// Established).
pub fn establish(cfg: &PeerConfig) -> Result<(Session, Duration), PeerError> {
    let started = std::time::Instant::now();
    let addr = cfg.addr;
    let io = |what| move |source| PeerError::Io { what, addr, source };
    let mut stream = TcpStream::connect_timeout(&addr, cfg.timeout)
        .map_err(|source| PeerError::Connect { addr, source })?;
    let connected = started.elapsed();
    stream.set_nodelay(true).map_err(io("set TCP_NODELAY"))?;
    stream
        .set_read_timeout(Some(cfg.timeout))
        .map_err(io("set a read timeout"))?;
    let caps = vec![
        Capability::Multiprotocol {
            afi: AFI_L2VPN,
            safi: SAFI_EVPN,
        },
        Capability::RouteRefresh,
    ];
    let open = OpenRepr::new(cfg.asn, cfg.hold_time, cfg.router_id, caps);
    write_message(&mut stream, addr, &Message::Open(open))?;
    let mut buf = Vec::with_capacity(MAX_MESSAGE_LEN);
    let peer = match read_message(&mut stream, addr, &mut buf)? {
        Some(Message::Open(open)) => check_open(cfg, &mut stream, &open)?,
        Some(Message::Notification(n)) => return Err(notification(addr, n)),
        Some(other) => return Err(unexpected(addr, other.msg_type(), "open")),
        None => return Err(unexpected(addr, 0, "open (the peer closed)")),
    };
    write_message(&mut stream, addr, &Message::Keepalive)?;
    match read_message(&mut stream, addr, &mut buf)? {
        Some(Message::Keepalive) => {}
        Some(Message::Notification(n)) => return Err(notification(addr, n)),
        Some(other) => return Err(unexpected(addr, other.msg_type(), "keepalive")),
        None => return Err(unexpected(addr, 0, "keepalive (the peer closed)")),
    }
    let reader = stream.try_clone().map_err(io("clone the socket"))?;
    let writer = Arc::new(Mutex::new(stream));
    let received = Arc::new(Received::default());
    let (closure_tx, closure) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel();
    let hold = peer.hold_time;
    {
        let (writer, received) = (Arc::clone(&writer), Arc::clone(&received));
        thread::spawn(move || read_loop(reader, addr, hold, &writer, &received, &closure_tx));
    }
    if hold > 0 {
        let writer = Arc::clone(&writer);
        let every = Duration::from_secs(u64::from(hold / 3).max(1));
        thread::spawn(move || keepalive_loop(&writer, every, &stop_rx));
    }
    let session = Session {
        addr,
        writer,
        closure,
        _stop_keepalives: stop_tx,
        peer,
        received,
    };
    Ok((session, connected))
}

fn check_open(
    cfg: &PeerConfig,
    stream: &mut TcpStream,
    open: &OpenRepr,
) -> Result<PeerInfo, PeerError> {
    let addr = cfg.addr;
    let refuse = |stream: &mut TcpStream, subcode: u8, reason: String| {
        let n = NotificationRepr {
            code: code::OPEN,
            subcode,
            data: Vec::new(),
        };
        // Best effort: the session is refused either way.
        let _ = write_message(stream, addr, &Message::Notification(n));
        PeerError::Refused { addr, reason }
    };
    if open.asn() != cfg.peer_as {
        let reason = format!("its as is {}, expected {}", open.asn(), cfg.peer_as);
        return Err(refuse(stream, open_subcode::BAD_PEER_AS, reason));
    }
    if !open.families().any(|f| f == (AFI_L2VPN, SAFI_EVPN)) {
        let offered: Vec<_> = open.families().collect();
        let reason = format!(
            "it does not offer l2vpn evpn (afi 25 safi 70), only {offered:?}: \
             activate the neighbour in address-family l2vpn evpn"
        );
        // RFC 5492 §5: Unsupported Capability (subcode 7).
        return Err(refuse(stream, 7, reason));
    }
    Ok(PeerInfo {
        bgp_id: open.bgp_id,
        asn: open.asn(),
        hold_time: cfg.hold_time.min(open.hold_time),
    })
}

impl Session {
    /// Writes whole messages (already encoded, concatenated) in one go.
    pub fn send(&self, bytes: &[u8]) -> Result<(), PeerError> {
        let mut w = self.writer.lock().map_err(|_| PeerError::Poisoned)?;
        w.write_all(bytes).map_err(|source| PeerError::Io {
            what: "sending updates",
            addr: self.addr,
            source,
        })
    }

    /// How the session ended, if it has.
    pub fn closed(&self) -> Option<Closure> {
        self.closure.try_recv().ok()
    }

    /// Waits up to `timeout` for the session to end.
    pub fn wait_closed(&self, timeout: Duration) -> Option<Closure> {
        match self.closure.recv_timeout(timeout) {
            Ok(c) => Some(c),
            Err(RecvTimeoutError::Timeout) => None,
            // The reader thread is gone without a word: treat as a closed connection.
            Err(RecvTimeoutError::Disconnected) => Some(Closure::Eof),
        }
    }

    /// Sends NOTIFICATION Cease / Administrative Shutdown (RFC 4486 §3) and closes.
    pub fn shut_down(self) -> Result<(), PeerError> {
        let n = NotificationRepr {
            code: code::CEASE,
            subcode: 2,
            data: Vec::new(),
        };
        let mut w = self.writer.lock().map_err(|_| PeerError::Poisoned)?;
        write_message(&mut w, self.addr, &Message::Notification(n))?;
        // The peer may have closed first; nothing to do about a failed shutdown.
        let _ = w.shutdown(std::net::Shutdown::Both);
        Ok(())
    }
}

fn notification(addr: SocketAddr, n: NotificationRepr) -> PeerError {
    PeerError::Notification {
        addr,
        code: n.code,
        subcode: n.subcode,
        meaning: code_meaning(n.code),
        data: n.data,
    }
}

fn unexpected(addr: SocketAddr, got: u8, wanted: &'static str) -> PeerError {
    PeerError::Unexpected { addr, got, wanted }
}

fn write_message(stream: &mut TcpStream, addr: SocketAddr, msg: &Message) -> Result<(), PeerError> {
    let mut out = Vec::with_capacity(64);
    msg.emit(&mut out)?;
    stream.write_all(&out).map_err(|source| PeerError::Io {
        what: "writing a message",
        addr,
        source,
    })
}

/// Reads one whole message into `buf`; `Ok(None)` on a clean EOF before its first byte.
/// UPDATEs come back as an empty UPDATE (counted by the caller, never parsed).
fn read_message(
    stream: &mut TcpStream,
    addr: SocketAddr,
    buf: &mut Vec<u8>,
) -> Result<Option<Message>, PeerError> {
    buf.clear();
    buf.resize(HEADER_LEN, 0);
    let io = |source| PeerError::Io {
        what: "reading",
        addr,
        source,
    };
    match stream.read_exact(buf) {
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        other => other.map_err(io)?,
    }
    let malformed = |source| PeerError::Malformed { addr, source };
    let len = frame_len(buf).map_err(malformed)?.unwrap_or(HEADER_LEN);
    buf.resize(len, 0);
    stream.read_exact(&mut buf[HEADER_LEN..]).map_err(io)?;
    if buf.get(18) == Some(&msg_type::UPDATE) {
        return Ok(Some(Message::Update(Default::default())));
    }
    Message::parse(buf).map(Some).map_err(malformed)
}

fn read_loop(
    mut stream: TcpStream,
    addr: SocketAddr,
    hold: u16,
    writer: &Mutex<TcpStream>,
    received: &Received,
    closure: &Sender<Closure>,
) {
    let timeout = (hold > 0).then(|| Duration::from_secs(hold.into()));
    let end = match stream.set_read_timeout(timeout) {
        Err(source) => Closure::Error(PeerError::Io {
            what: "set the hold timer",
            addr,
            source,
        }),
        Ok(()) => read_until_closed(&mut stream, addr, hold, writer, received),
    };
    // The receiver may be gone when main has finished; nothing to report to then.
    let _ = closure.send(end);
}

fn read_until_closed(
    stream: &mut TcpStream,
    addr: SocketAddr,
    hold: u16,
    writer: &Mutex<TcpStream>,
    received: &Received,
) -> Closure {
    let mut buf = Vec::with_capacity(MAX_MESSAGE_LEN);
    let send = |code: u8, subcode: u8| {
        if let Ok(mut w) = writer.lock() {
            let n = NotificationRepr {
                code,
                subcode,
                data: Vec::new(),
            };
            // Best effort: the session is over either way.
            let _ = write_message(&mut w, addr, &Message::Notification(n));
        }
    };
    loop {
        match read_message(stream, addr, &mut buf) {
            Ok(Some(Message::Update(_))) => {
                received.updates.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Some(Message::Keepalive)) => {
                received.keepalives.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Some(Message::RouteRefresh(_))) => {}
            Ok(Some(Message::Notification(n))) => return Closure::Error(notification(addr, n)),
            Ok(Some(Message::Open(_))) => {
                send(code::FSM, 0);
                return Closure::Error(unexpected(
                    addr,
                    msg_type::OPEN,
                    "no open once established",
                ));
            }
            Ok(None) => return Closure::Eof,
            Err(PeerError::Io { source, .. })
                if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                send(code::HOLD_TIMER_EXPIRED, 0);
                return Closure::HoldTimerExpired(hold);
            }
            Err(PeerError::Malformed { addr, source }) => {
                let (code, subcode) = source.notification();
                send(code, subcode);
                return Closure::Error(PeerError::Malformed { addr, source });
            }
            Err(e) => return Closure::Error(e),
        }
    }
}

fn keepalive_loop(writer: &Mutex<TcpStream>, every: Duration, stop: &Receiver<()>) {
    let mut keepalive = Vec::with_capacity(HEADER_LEN);
    if Message::Keepalive.emit(&mut keepalive).is_err() {
        return;
    }
    // Runs until the Session (holding the sender) is dropped or a write fails; a failed write
    // also shows up on the reader side as the connection ending.
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
        let Ok(mut w) = writer.lock() else { return };
        if w.write_all(&keepalive).is_err() {
            return;
        }
    }
}
