//! nvo-capture: `nvo capture`, pcapng of what nvod sees, made by nvod and streamed to the
//! client over the API socket (`GET /v1/capture`, docs/capture.md).
//!
//! Why in nvod and over the API: nvod has the privileges to open AF_PACKET sockets; a user
//! with only the API socket's group can capture what nvod sees, locally or through a forwarded
//! socket, without root. Why AF_PACKET taps rather than hooks in a datapath: they see the same
//! frames whichever datapath forwards (userspace or eBPF), they exist only while a capture runs
//! (an idle nvod holds no capture socket and no datapath does any per-packet work for capture),
//! and the kernel filters them (the libpcap-compiled filter is attached to each socket).
//!
//! What a capture taps ([`Target`]):
//!
//! - `Port(name)`: the port's host-side interface, both directions (frames from the tenant are
//!   inbound, frames nvod delivers to it outbound); filter in the kernel. On the eBPF datapath
//!   nvod marks the port tapped for the capture's lifetime, so that frames to it go through
//!   the host end (where the tap sees them) rather than straight to the veth peer.
//! - `Underlay`: the underlay interfaces, only the tunnel packets of nvod's profiles (UDP
//!   destination ports and IP protocols, STT as TCP port 7471), both directions; the filter is
//!   ANDed with that in the kernel.
//! - `Network`: the inner frames of one network, each frame once, where it enters the network
//!   on this host: frames a local port receives from its tenant (inbound on a veth's host end,
//!   outbound on a TAP device), and
//!   frames decapsulated from tunnel packets of that network arriving on the underlay
//!   ([`inner::Decapsulator`]). Frames nvod sends out (to a port, or encapsulated to a remote)
//!   are the same frames again and are left out, so a ping shows each echo once whether its
//!   destination is local or remote; frames nvod itself makes (ARP/ND suppression answers) are
//!   therefore not shown: capture the port for those. The filter runs in userspace on the
//!   inner frame.
//!
//! Bounds: [`Request::count`] frames, [`Request::duration`], [`Request::snaplen`] bytes per
//! frame, [`MAX_SESSIONS`] captures at once ([`Sessions::start`] refuses more), and a queue of
//! [`QUEUE`] blocks and [`QUEUE_BYTES`] bytes between the capture thread and the client
//! (whichever is reached first): when the client reads too
//! slowly, frames are dropped and counted (never waited on). The capture ends at the count, the
//! duration, or when the client goes away (the receiver is dropped); then the statistics
//! blocks (frames seen, dropped by the kernel, dropped for the slow client, delivered) close
//! the stream ([`pcapng`]).
//!
//! ```text
//!  capture thread: poll(taps) ─► recvfrom ─► [decap] ─► [filter] ─► pcapng block ─try_send─►
//!      tokio mpsc (QUEUE blocks) ─► HTTP chunked body ─► nvo capture ─► file / stdout
//! ```

pub mod inner;
pub mod pcapng;

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use nvo_encap::profile::Transport;
use nvo_io::pcap_filter::{Filter, FilterError, LINKTYPE_ETHERNET};
use nvo_io::{CaptureSocket, Poller};
use tokio::sync::mpsc;

use inner::{Decapsulator, InnerError};
use pcapng::{Direction, Stats};

/// Captures running at once.
pub const MAX_SESSIONS: usize = 4;
/// Blocks queued for a client before frames are dropped.
pub const QUEUE: usize = 4096;
/// Bytes queued for a client before frames are dropped: with large (GRO) frames the block
/// count alone would let four captures hold a gigabyte.
pub const QUEUE_BYTES: usize = 16 << 20;
/// Snap length unless asked: the largest frame (GRO / TSO frames reach 64 KiB).
pub const DEFAULT_SNAPLEN: u32 = 262_144;
/// How often the capture thread looks at its deadline and its client while no frame comes.
const TICK: Duration = Duration::from_millis(100);

/// What to capture; see the crate docs.
#[derive(Debug)]
pub enum Target {
    /// A port's interface.
    Port(String),
    /// The underlay interfaces, tunnel packets of these transports only.
    Underlay {
        /// Interfaces the locators are on.
        interfaces: Vec<String>,
        /// The profiles' transports.
        transports: Vec<Transport>,
    },
    /// One network's inner frames.
    Network {
        /// Its VNI.
        vni: u32,
        /// Its local ports' interfaces, each with whether it is a TAP device (whose frames
        /// from the tenant are the ones the host sends on it).
        ports: Vec<(String, bool)>,
        /// The underlay interfaces.
        underlay: Vec<String>,
        /// Reads its tunnel packets.
        decap: Box<Decapsulator>,
    },
}

/// A capture asked for.
#[derive(Debug)]
pub struct Request {
    /// What.
    pub target: Target,
    /// A tcpdump-language filter; empty for everything.
    pub filter: String,
    /// Stop after this many frames.
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Bytes kept of each frame.
    pub snaplen: u32,
    /// Said in the section header's comment (the command as asked).
    pub comment: String,
}

/// Why a capture did not start.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The filter does not compile (libpcap's message).
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// [`MAX_SESSIONS`] captures run already.
    #[error(
        "{0} captures are running already, the most nvod runs at once; try again when one ends"
    )]
    Busy(usize),
    /// An interface could not be tapped.
    #[error("{0}")]
    Open(std::io::Error),
    /// The network's packets cannot be read from the underlay.
    #[error(transparent)]
    Inner(#[from] InnerError),
    /// Nothing to tap (a network without ports and no underlay interface found).
    #[error("nothing to capture: {0}")]
    Nothing(String),
    /// The snap length is out of range.
    #[error("snaplen {0} out of range: 64 to 262144 bytes")]
    Snaplen(u32),
    /// The thread could not start.
    #[error("cannot start the capture thread: {0}")]
    Thread(std::io::Error),
}

/// The captures running, bounded by [`MAX_SESSIONS`].
#[derive(Debug, Clone)]
pub struct Sessions {
    running: Arc<AtomicUsize>,
    max: usize,
    /// Set when nvod stops: every capture ends (with its statistics) at its next tick.
    stopping: Arc<AtomicBool>,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions::new(MAX_SESSIONS)
    }
}

/// Holds one of the sessions' slots while alive.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A running capture: its pcapng stream, block by block. Dropping it ends the capture.
#[derive(Debug)]
pub struct Capture {
    blocks: mpsc::Receiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
}

impl Capture {
    /// The next block of the stream; `None` once the capture has ended and all was read.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        let block = self.blocks.recv().await?;
        self.queued.fetch_sub(block.len(), Ordering::AcqRel);
        Some(block)
    }
}

/// One tapped interface and what its frames are.
struct Tap {
    socket: CaptureSocket,
    /// Only frames in this direction are kept (a network's ports and underlay: the direction
    /// in which frames enter the network).
    only: Option<Direction>,
    /// Its frames are underlay packets to decapsulate.
    decap: bool,
    stats: Stats,
}

impl Sessions {
    /// At most `max` captures at once.
    pub fn new(max: usize) -> Sessions {
        Sessions {
            running: Arc::new(AtomicUsize::new(0)),
            max,
            stopping: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Ends every running capture within a tick (nvod is stopping: its streams end cleanly,
    /// with their statistics, rather than being cut after the server's grace period).
    pub fn stop_all(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Captures running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Compiles the filter, opens the taps (in the calling thread's network namespace) and
    /// starts the capture thread; every refusal comes before a byte is streamed.
    pub fn start(&self, request: Request) -> Result<Capture, CaptureError> {
        if !(64..=DEFAULT_SNAPLEN).contains(&request.snaplen) {
            return Err(CaptureError::Snaplen(request.snaplen));
        }
        let snaplen = request.snaplen;
        let user = Filter::compile(&request.filter, LINKTYPE_ETHERNET, snaplen)?;
        let slot = self.take_slot()?;
        let mut taps = Vec::new();
        let mut names = Vec::new();
        let mut decap = None;
        let open = |name: &str, filter: Option<&Filter>| {
            CaptureSocket::open(name, filter).map_err(CaptureError::Open)
        };
        match request.target {
            Target::Port(name) => {
                taps.push(tap(open(&name, Some(&user))?, None, false));
                names.push((name.clone(), format!("port {name}")));
            }
            Target::Underlay {
                interfaces,
                transports,
            } => {
                let tunnels = tunnel_expression(&transports);
                let expr = match request.filter.trim() {
                    "" => tunnels,
                    user => format!("({tunnels}) and ({user})"),
                };
                let filter = Filter::compile(&expr, LINKTYPE_ETHERNET, snaplen)?;
                for name in interfaces {
                    taps.push(tap(open(&name, Some(&filter))?, None, false));
                    names.push((name.clone(), format!("underlay {name}: {expr}")));
                }
            }
            Target::Network {
                vni,
                ports,
                underlay,
                decap: d,
            } => {
                for (name, is_tap) in ports {
                    // A veth's host end receives what the tenant sends; a TAP device hands
                    // nvod, through its descriptor, what the host sends on it.
                    let from_tenant = if is_tap {
                        Direction::Outbound
                    } else {
                        Direction::Inbound
                    };
                    // A port whose interface is gone (nvod retries it) carries no frame: the
                    // network's other taps go on without it.
                    let socket = match CaptureSocket::open(&name, Some(&user)) {
                        Ok(socket) => socket,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            log::info!("capture of network {vni}: {e}; left out");
                            continue;
                        }
                        Err(e) => return Err(CaptureError::Open(e)),
                    };
                    taps.push(tap(socket, Some(from_tenant), false));
                    names.push((
                        name.clone(),
                        format!("network {vni}: port {name}, frames from the tenant"),
                    ));
                }
                let tunnels = tunnel_expression(&[d.wire()]);
                let filter = Filter::compile(&tunnels, LINKTYPE_ETHERNET, snaplen)?;
                for name in underlay {
                    taps.push(tap(
                        open(&name, Some(&filter))?,
                        Some(Direction::Inbound),
                        true,
                    ));
                    names.push((
                        name.clone(),
                        format!("network {vni}: decapsulated from underlay {name}, inbound"),
                    ));
                }
                decap = Some(d);
            }
        }
        if taps.is_empty() {
            return Err(CaptureError::Nothing(
                "no interface to tap (no ports, no underlay interface found)".into(),
            ));
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        let queued = Arc::new(AtomicUsize::new(0));
        let mut head = pcapng::section_header(&request.comment);
        for (name, description) in &names {
            head.extend(pcapng::interface(name, description, snaplen));
        }
        // The queue is empty: the head always fits.
        queued.fetch_add(head.len(), Ordering::AcqRel);
        let _ = tx.try_send(head);
        let session = Session {
            taps,
            user,
            decap,
            count: request.count,
            deadline: request.duration.map(|d| Instant::now() + d),
            snaplen: snaplen as usize,
            tx,
            queued: queued.clone(),
            stopping: self.stopping.clone(),
        };
        std::thread::Builder::new()
            .name("nvod-capture".into())
            .spawn(move || {
                let _slot = slot;
                session.run();
            })
            .map_err(CaptureError::Thread)?;
        Ok(Capture { blocks: rx, queued })
    }

    fn take_slot(&self) -> Result<Slot, CaptureError> {
        let mut now = self.running.load(Ordering::Acquire);
        loop {
            if now >= self.max {
                return Err(CaptureError::Busy(self.max));
            }
            match self
                .running
                .compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Slot(self.running.clone())),
                Err(seen) => now = seen,
            }
        }
    }
}

fn tap(socket: CaptureSocket, only: Option<Direction>, decap: bool) -> Tap {
    Tap {
        socket,
        only,
        decap,
        stats: Stats::default(),
    }
}

/// The tcpdump expression matching tunnel packets of `transports` (both directions: a UDP
/// tunnel's packets all go to its port). STT (IP protocol 6) is TCP to port 7471, so that
/// nvod's other TCP (BGP, say) stays out.
pub fn tunnel_expression(transports: &[Transport]) -> String {
    let mut parts: Vec<String> = transports
        .iter()
        .map(|t| match *t {
            Transport::Udp(port) => format!("udp dst port {port}"),
            Transport::Ip(6) => "tcp dst port 7471".to_owned(),
            Transport::Ip(p) => format!("ip proto {p} or ip6 proto {p}"),
        })
        .collect();
    parts.sort();
    parts.dedup();
    if parts.is_empty() {
        // No profile: nothing is a tunnel packet.
        return "less 0".to_owned();
    }
    parts.join(" or ")
}

/// The capture thread's state.
struct Session {
    taps: Vec<Tap>,
    user: Filter,
    decap: Option<Box<Decapsulator>>,
    count: Option<u64>,
    deadline: Option<Instant>,
    snaplen: usize,
    tx: mpsc::Sender<Vec<u8>>,
    /// Bytes sent and not yet taken by the client.
    queued: Arc<AtomicUsize>,
    stopping: Arc<AtomicBool>,
}

impl Session {
    fn run(mut self) {
        let mut buf = vec![0u8; DEFAULT_SNAPLEN as usize];
        let mut inner = Vec::new();
        let mut delivered = 0u64;
        // The taps live as long as the session: their set is made once.
        let mut poller = Poller::with_capacity(self.taps.len());
        for tap in &self.taps {
            poller.add(tap.socket.as_fd());
        }
        'capture: loop {
            if self.tx.is_closed()
                || self.stopping.load(Ordering::Acquire)
                || self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let timeout = match self.deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(TICK),
                None => TICK,
            };
            if let Err(e) = poller.wait(Some(timeout)) {
                log::warn!("capture: poll failed: {e}; ending the capture");
                break;
            }
            for (index, tap) in self.taps.iter_mut().enumerate() {
                if !poller.is_ready(index) {
                    continue;
                }
                // A bounded turn per tap, so that one busy interface cannot starve the others
                // nor the deadline.
                for _ in 0..64 {
                    let got = match tap.socket.recv(&mut buf) {
                        Ok(Some(got)) => got,
                        Ok(None) => break,
                        Err(e) => {
                            log::warn!("capture on {}: {e}; ending", tap.socket.name());
                            break 'capture;
                        }
                    };
                    tap.stats.received += 1;
                    let direction = if got.outgoing {
                        Direction::Outbound
                    } else {
                        Direction::Inbound
                    };
                    if tap.only.is_some_and(|only| only != direction) {
                        continue;
                    }
                    let frame = &buf[..got.len];
                    let (data, wire_len) = if tap.decap {
                        let Some(d) = &self.decap else { continue };
                        if !d.inner(frame, &mut inner) {
                            continue;
                        }
                        // The part of the inner frame beyond what was captured is unknown;
                        // its length on the wire follows from the outer one.
                        let wire = inner.len() + (got.wire_len - got.len);
                        if !self.user.matches(&inner, wire) {
                            continue;
                        }
                        (&inner[..], wire)
                    } else {
                        // The kernel ran the filter already.
                        (frame, got.wire_len)
                    };
                    let kept = &data[..data.len().min(self.snaplen)];
                    let block =
                        pcapng::packet(index as u32, now_micros(), kept, wire_len, direction);
                    let size = block.len();
                    if self.queued.load(Ordering::Acquire) + size > QUEUE_BYTES {
                        tap.stats.queue_dropped += 1;
                        continue;
                    }
                    self.queued.fetch_add(size, Ordering::AcqRel);
                    match self.tx.try_send(block) {
                        Ok(()) => {
                            tap.stats.delivered += 1;
                            delivered += 1;
                        }
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            self.queued.fetch_sub(size, Ordering::AcqRel);
                            tap.stats.queue_dropped += 1;
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => break 'capture,
                    }
                    if self.count.is_some_and(|c| delivered >= c) {
                        break 'capture;
                    }
                }
            }
        }
        self.finish();
    }

    /// Sends the statistics blocks, waiting a little for room (the client may be draining
    /// the queue), then lets the stream end by dropping the sender.
    fn finish(mut self) {
        let micros = now_micros();
        let give_up = Instant::now() + Duration::from_secs(5);
        let mut blocks = Vec::new();
        for (index, tap) in self.taps.iter_mut().enumerate() {
            tap.stats.kernel_dropped = tap.socket.drops();
            blocks.extend(pcapng::statistics(index as u32, micros, &tap.stats));
            log::debug!("capture on {}: {:?}", tap.socket.name(), tap.stats);
        }
        let mut block = blocks;
        self.queued.fetch_add(block.len(), Ordering::AcqRel);
        loop {
            match self.tx.try_send(block) {
                Ok(()) => break,
                Err(mpsc::error::TrySendError::Full(b)) if Instant::now() < give_up => {
                    block = b;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(_) => break,
            }
        }
    }
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_expressions_compile_and_name_each_transport() {
        let e = tunnel_expression(&[Transport::Udp(4789), Transport::Ip(47), Transport::Ip(6)]);
        assert_eq!(
            e,
            "ip proto 47 or ip6 proto 47 or tcp dst port 7471 or udp dst port 4789"
        );
        Filter::compile(&e, LINKTYPE_ETHERNET, 65535).unwrap();
        Filter::compile(&tunnel_expression(&[]), LINKTYPE_ETHERNET, 65535).unwrap();
    }

    #[test]
    fn bad_filters_and_snaplens_are_refused_before_any_tap() {
        let sessions = Sessions::default();
        let request = |filter: &str, snaplen| Request {
            target: Target::Port("capnone0".into()),
            filter: filter.into(),
            count: None,
            duration: None,
            snaplen,
            comment: String::new(),
        };
        let e = sessions.start(request("icmp andd", 65535)).unwrap_err();
        assert!(e.to_string().contains("bad filter \"icmp andd\""), "{e}");
        let e = sessions.start(request("", 10)).unwrap_err();
        assert!(matches!(e, CaptureError::Snaplen(10)));
        let e = sessions.start(request("icmp", 65535)).unwrap_err();
        assert!(e.to_string().contains("capnone0"), "{e}");
        // Each refusal gave its slot back.
        assert_eq!(sessions.running(), 0);
    }

    #[test]
    fn the_session_cap_holds() {
        let sessions = Sessions::new(2);
        let a = sessions.take_slot().unwrap();
        let _b = sessions.take_slot().unwrap();
        assert!(matches!(sessions.take_slot(), Err(CaptureError::Busy(2))));
        drop(a);
        assert!(sessions.take_slot().is_ok());
    }
}
