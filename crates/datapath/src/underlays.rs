//! The underlay sockets: one per tunnel transport some network uses, each with its own send
//! batch.
//!
//! ```text
//!  index 0   UDP vxlan_port (always bound; its group sockets receive multicast BUM)
//!  index 1.. opened the first time a network needs the transport, kept until nvod stops:
//!            UDP 4790 (vxlan-gpe), UDP 6081 (geneve), UDP 60002 (overlay), UDP <user port>,
//!            raw IP 47 (nvgre), raw IP 4/41 (ipip/ip6ip6), raw IP 6 (stt)
//! ```
//!
//! The engine names transports as its profiles do; the built-in VXLAN profiles say UDP 4789,
//! which is `vxlan_port` here (8472 for a node that talks to old Linux VTEPs). A raw socket
//! receives every packet of its protocol sent to the locator; the kernel builds the outer IP
//! header of what it sends, with the TTL, TOS and DF the node's config asks for.

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsFd, BorrowedFd};

use nvo_encap::profile::Transport;
use nvo_io::steer::TunnelShape;
use nvo_io::{OuterValues, RawUnderlay, RecvBatch, SendBatch, UdpUnderlay, UnderlayStats};
use nvo_wire::{ports, EtherType};

use super::stt_guard::RstGuard;

/// The node-wide outer IP header settings and UDP offload switches, applied to every underlay
/// socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outer {
    /// Turn UDP GRO off on every UDP socket.
    pub no_gro: bool,
    /// Turn UDP GSO off on every UDP socket.
    pub no_gso: bool,
    /// Outer TTL / hop limit (None: the kernel's default).
    pub ttl: Option<u8>,
    /// Outer TOS / traffic class (None: 0).
    pub tos: Option<u8>,
    /// Set DF on outer IPv4 packets (None: the kernel's path-MTU default).
    pub df: Option<bool>,
    /// Copy each inner packet's TTL / hop limit into its tunnel packet.
    pub inherit_ttl: bool,
    /// Copy each inner packet's TOS / traffic class (DSCP and ECN) into its tunnel packet.
    pub inherit_tos: bool,
}

/// A socket of one transport.
#[derive(Debug)]
pub enum Socket {
    /// A UDP port.
    Udp(UdpUnderlay),
    /// A raw IP protocol.
    Raw(RawUnderlay),
}

/// One underlay socket with its send queue.
#[derive(Debug)]
pub struct Underlay {
    /// The transport as the engine names it (VXLAN: UDP 4789 whatever `vxlan_port` is).
    pub transport: Transport,
    /// The UDP port datagrams go to (0 for raw sockets).
    pub port: u16,
    /// The socket.
    pub socket: Socket,
    /// Datagrams queued for the next flush.
    pub batch: SendBatch,
    /// Length and destination of each queued datagram, for `count_tx` (capacity = batch
    /// capacity).
    pub queued: Vec<(usize, IpAddr)>,
}

impl Underlay {
    fn new(transport: Transport, port: u16, socket: Socket) -> Underlay {
        let batch = SendBatch::default();
        let queued = Vec::with_capacity(batch.capacity());
        Underlay {
            transport,
            port,
            socket,
            batch,
            queued,
        }
    }

    /// Receives a batch.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        match &self.socket {
            Socket::Udp(u) => u.recv_batch(batch),
            Socket::Raw(r) => r.recv_batch(batch),
        }
    }

    /// Sends the queued batch; how many datagrams the kernel took.
    pub fn send_queued(&self) -> io::Result<usize> {
        match &self.socket {
            Socket::Udp(u) => u.send_batch(&self.batch),
            Socket::Raw(r) => r.send_batch(&self.batch),
        }
    }

    /// The receive descriptor, for the poll set.
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.socket {
            Socket::Udp(u) => u.as_fd(),
            Socket::Raw(r) => r.as_fd(),
        }
    }

    fn stats(&self) -> UnderlayStats {
        match &self.socket {
            Socket::Udp(u) => u.stats(),
            Socket::Raw(r) => {
                let s = r.stats();
                UnderlayStats {
                    // A raw IPv4 datagram whose header does not parse is lost like a truncated
                    // one: counted with them.
                    recv_truncated: s.recv_truncated + s.recv_malformed,
                    send_would_block: s.send_would_block,
                    send_errors: s.send_errors,
                    ..UnderlayStats::default()
                }
            }
        }
    }
}

/// Every open underlay socket; index 0 is the VXLAN socket.
#[derive(Debug)]
pub struct Underlays {
    list: Vec<Underlay>,
    locator: IpAddr,
    entropy_ports: u16,
    outer: Outer,
    /// Bumped when a socket is opened: the poll set changed.
    generation: u64,
    /// While an STT socket is open: the kernel's resets to STT segments are dropped.
    stt_guard: Option<RstGuard>,
    /// Which datapath worker these sockets are (0: the one raw and group sockets receive on).
    worker: usize,
    /// Whether other workers bind the same UDP ports (SO_REUSEPORT).
    shared: bool,
    /// How many workers share them (the reuseport programs' `n`).
    members: usize,
    /// The outer TOS of the frame being sent, when its port's QoS profile sets it (qos.rs).
    tos_override: Option<u8>,
}

impl Underlays {
    /// Wraps the bound VXLAN socket.
    pub fn new(
        vxlan: UdpUnderlay,
        locator: IpAddr,
        vxlan_port: u16,
        entropy_ports: u16,
        outer: Outer,
    ) -> Underlays {
        Underlays {
            list: vec![Underlay::new(
                Transport::Udp(ports::VXLAN),
                vxlan_port,
                Socket::Udp(vxlan),
            )],
            locator,
            entropy_ports,
            outer,
            generation: 0,
            stt_guard: None,
            worker: 0,
            shared: false,
            members: 1,
            tos_override: None,
        }
    }

    /// Sets (or clears) the outer TOS of what is sent until it is cleared: a QoS profile's
    /// marked or trusted DSCP (qos.rs).
    pub fn set_tos_override(&mut self, tos: Option<u8>) {
        self.tos_override = tos;
    }

    /// Says which worker these sockets are, and how many workers share their UDP ports (more
    /// than one: SO_REUSEPORT): sockets opened later follow (see nvo_io's `spread`). Worker 0
    /// receives every raw protocol and the overlay's UDP port; the others only send on those.
    pub fn set_worker(&mut self, worker: usize, members: usize) {
        self.worker = worker;
        self.shared = members > 1;
        self.members = members.max(1);
    }

    /// The VXLAN socket (multicast groups are joined on it). Index 0 is made a UDP socket in
    /// `new` and never replaced, so this is always `Some`.
    pub fn vxlan(&mut self) -> Option<&mut UdpUnderlay> {
        match &mut self.list.first_mut()?.socket {
            Socket::Udp(u) => Some(u),
            Socket::Raw(_) => None,
        }
    }

    /// The VXLAN socket, shared.
    pub fn vxlan_ref(&self) -> Option<&UdpUnderlay> {
        match &self.list.first()?.socket {
            Socket::Udp(u) => Some(u),
            Socket::Raw(_) => None,
        }
    }

    /// The position of the socket for `transport`, if open.
    pub fn find(&self, transport: Transport) -> Option<usize> {
        self.list.iter().position(|u| u.transport == transport)
    }

    /// The socket for `transport`, opened now if it is not yet.
    pub fn ensure(&mut self, transport: Transport) -> io::Result<usize> {
        if let Some(at) = self.find(transport) {
            return Ok(at);
        }
        let (port, socket) = match transport {
            Transport::Udp(port) => {
                // The overlay is reached at every locator of this node (a node may have several,
                // weighted): its socket listens on every address. Other tunnels, on the locator.
                let local = if port == ports::OVERLAY {
                    match self.locator {
                        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
                    }
                } else {
                    self.locator
                };
                if self.worker == 0 && self.shared {
                    exclusive(local, port)?;
                }
                let mut u = UdpUnderlay::bind_shared(local, port, self.entropy_ports, self.shared)?;
                if self.worker > 0 && port == ports::OVERLAY {
                    // Probes in flight are worker 0's: their answers go there.
                    u.steer_to_first()?;
                } else if let Some(shape) = tunnel_shape(port).filter(|_| self.shared) {
                    // A flow's datagrams go to the worker its port frames go to.
                    u.steer_by_inner_flow(shape, self.members)?;
                }
                u.set_outer(self.outer.ttl, self.outer.tos, self.outer.df)?;
                apply_offloads(&mut u, &self.outer)?;
                (port, Socket::Udp(u))
            }
            Transport::Ip(protocol) => {
                if protocol == 6 && self.stt_guard.is_none() && self.worker == 0 {
                    self.stt_guard = Some(RstGuard::install()?);
                }
                let r = RawUnderlay::bind(self.locator, protocol)?;
                r.set_outer(self.outer.ttl, self.outer.tos, self.outer.df)?;
                if self.worker > 0 {
                    r.receive_nothing()?;
                }
                (0, Socket::Raw(r))
            }
        };
        log::info!("underlay {} open on {}", describe(transport), self.locator);
        self.list.push(Underlay::new(transport, port, socket));
        self.generation += 1;
        Ok(self.list.len() - 1)
    }

    /// The socket at `at`.
    pub fn at(&self, at: usize) -> Option<&Underlay> {
        self.list.get(at)
    }

    /// The socket at `at`, to queue on.
    pub fn at_mut(&mut self, at: usize) -> Option<&mut Underlay> {
        self.list.get_mut(at)
    }

    /// How many sockets are open.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Every socket.
    pub fn iter(&self) -> impl Iterator<Item = &Underlay> {
        self.list.iter()
    }

    /// Changes whenever a socket is opened.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The locator the sockets are bound to.
    pub fn locator(&self) -> IpAddr {
        self.locator
    }

    /// The node's outer header settings.
    pub fn outer(&self) -> Outer {
        self.outer
    }

    /// The outer TOS and TTL a tunnel packet inherits from `inner` (an Ethernet frame, or an L3
    /// network's IP packet), for the values the config says to inherit; none for a frame that
    /// carries no IP packet (ARP): the socket's setting applies. A QoS profile's TOS
    /// (`set_tos_override`) wins over the config's.
    pub fn inherited(&self, inner: &[u8], inner_is_ip: bool) -> OuterValues {
        if let Some(tos) = self.tos_override {
            let mut values = self.inherited_values(inner, inner_is_ip);
            values.tos = Some(tos);
            return values;
        }
        self.inherited_values(inner, inner_is_ip)
    }

    fn inherited_values(&self, inner: &[u8], inner_is_ip: bool) -> OuterValues {
        if !self.outer.inherit_tos && !self.outer.inherit_ttl {
            return OuterValues::default();
        }
        let ip = if inner_is_ip {
            Some(inner)
        } else {
            ethernet_ip(inner)
        };
        let Some((tos, ttl)) = ip.and_then(ip_tos_ttl) else {
            return OuterValues::default();
        };
        OuterValues {
            tos: self.outer.inherit_tos.then_some(tos),
            ttl: self.outer.inherit_ttl.then_some(ttl),
        }
    }

    /// The sum of every socket's counters.
    pub fn stats(&self) -> UnderlayStats {
        let mut sum = UnderlayStats::default();
        for u in &self.list {
            let s = u.stats();
            sum.recv_truncated += s.recv_truncated;
            sum.send_would_block += s.send_would_block;
            sum.send_errors += s.send_errors;
            sum.gso_fallbacks += s.gso_fallbacks;
            sum.gso_sends += s.gso_sends;
            sum.multicast_joins += s.multicast_joins;
            sum.multicast_leaves += s.multicast_leaves;
        }
        sum
    }
}

/// The TOS (traffic class) and TTL (hop limit) of an IPv4 or IPv6 packet.
fn ip_tos_ttl(ip: &[u8]) -> Option<(u8, u8)> {
    match ip.first()? >> 4 {
        4 => Some((*ip.get(1)?, *ip.get(8)?)),
        6 => {
            let (a, b) = (*ip.first()?, *ip.get(1)?);
            Some(((a << 4) | (b >> 4), *ip.get(7)?))
        }
        _ => None,
    }
}

/// The IP packet of an Ethernet frame, if its ethertype says IPv4 or IPv6.
fn ethernet_ip(frame: &[u8]) -> Option<&[u8]> {
    let mut at = 12;
    let mut ethertype = EtherType::from(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]));
    if ethertype == EtherType::Vlan {
        at += 4;
        ethertype = EtherType::from(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]));
    }
    match ethertype {
        EtherType::Ipv4 | EtherType::Ipv6 => frame.get(at + 2..),
        _ => None,
    }
}

/// The tunnel header a UDP port's datagrams start with, for the ones whose reuseport group is
/// spread by inner flow (VXLAN's port is bound at start, lib.rs; a profile on another port
/// keeps the kernel's hash of the outer 4-tuple).
fn tunnel_shape(port: u16) -> Option<TunnelShape> {
    match port {
        ports::VXLAN_GPE => Some(TunnelShape::Gpe),
        ports::GENEVE => Some(TunnelShape::Geneve),
        _ => None,
    }
}

/// Fails (EADDRINUSE) when another socket holds UDP (`local`, `port`): worker 0 checks this
/// before its SO_REUSEPORT bind, which would otherwise share the port with another program
/// (another nvod on the same locator) that set SO_REUSEPORT too, and silently split its
/// traffic with it. The check's socket is closed before the workers bind.
pub fn exclusive(local: IpAddr, port: u16) -> io::Result<()> {
    std::net::UdpSocket::bind((local, port)).map(drop)
}

/// Turns off the UDP offloads the config turns off.
pub fn apply_offloads(u: &mut UdpUnderlay, outer: &Outer) -> io::Result<()> {
    if outer.no_gso {
        u.disable_gso();
    }
    if outer.no_gro {
        u.disable_gro()?;
    }
    Ok(())
}

/// "udp port 4789" / "ip protocol 47", for logs and errors.
pub fn describe(transport: Transport) -> String {
    match transport {
        Transport::Udp(port) => format!("udp port {port}"),
        Transport::Ip(protocol) => format!("ip protocol {protocol}"),
    }
}
