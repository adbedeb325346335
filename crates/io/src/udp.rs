//! The UDP underlay: one receive socket on the VXLAN port and a pool of send sockets on
//! consecutive source ports, so that the outer UDP source port carries flow entropy
//! (RFC 7348 §5: "a hash of fields from the inner packet") while the kernel still routes,
//! resolves neighbours, fragments and checksums.
//!
//! ```text
//!   recv socket   (local, port)            recvmmsg, UDP_GRO when the kernel offers it
//!   send sockets  (local, 49152 + i), i < entropy_ports (a taken port is skipped)
//!                 datagram with entropy e goes out of socket e % n; sendmmsg per socket,
//!                 equal-size runs to one destination with equal outer values (TOS, TTL)
//!                 coalesced with UDP_SEGMENT (GSO)
//! ```
//!
//! Offloads are probed once at bind: UDP_GRO with setsockopt on the receive socket, UDP_SEGMENT
//! with getsockopt on a send socket. A missing offload costs one log line, then nvo carries on
//! without it. A GSO send the device refuses (EIO: no checksum offload on the route's device)
//! turns GSO off for good, again with one log line; the datagrams are sent one by one.
//!
//! Flooded frames of a network in multicast BUM mode go to an underlay group: the send sockets
//! are set up for that at bind, and [`UdpUnderlay::join`] adds a receive socket per group (see
//! `udp/multicast.rs`).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Once;

use crate::batch::{is_transient, RecvBatch, SendBatch, SendEntry, Strip, MAX_DATAGRAM};
use crate::outer::{self, OuterValues};
use crate::sys::{self, ControlBuf, RawAddr, SendMsg, MAX_BATCH};

mod multicast;

use multicast::Membership;
pub use multicast::{DEFAULT_MULTICAST_TTL, MAX_GROUPS};

/// First source port of the entropy pool (the IANA dynamic range).
pub const ENTROPY_PORT_BASE: u16 = 49152;
/// Socket buffer size asked for (best effort: `*BUFFORCE` as root, else capped by sysctl).
const SOCKET_BUFFER: libc::c_int = 4 << 20;
/// Kernel limit on segments in one GSO send (`UDP_MAX_SEGMENTS`, 64 before Linux 6.9).
const GSO_MAX_SEGMENTS: usize = 64;
/// Receive buffer for one datagram when GRO is off: a jumbo-frame underlay fits.
pub const PLAIN_RECV_BUF: usize = 9216;

/// Which UDP offloads the kernel accepted at bind time (GSO may be turned off later).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// The receive socket returns coalesced datagrams (UDP_GRO).
    pub gro: bool,
    /// Sends may carry several equal-size datagrams in one message (UDP_SEGMENT).
    pub gso: bool,
}

/// Counters of what the underlay dropped or changed; monotonic since bind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnderlayStats {
    /// Datagrams received but dropped: larger than the receive buffer.
    pub recv_truncated: u64,
    /// Datagrams not sent because a socket buffer was full (EAGAIN).
    pub send_would_block: u64,
    /// Datagrams not sent because of another error (ENOBUFS, EMSGSIZE, unreachable, ...).
    pub send_errors: u64,
    /// GSO messages the kernel refused and that were sent one datagram at a time instead.
    pub gso_fallbacks: u64,
    /// Messages sent with more than one datagram in them (UDP GSO super-datagrams).
    pub gso_sends: u64,
    /// Multicast groups joined ([`UdpUnderlay::join`]).
    pub multicast_joins: u64,
    /// Multicast groups left ([`UdpUnderlay::leave`]); joins − leaves are joined now.
    pub multicast_leaves: u64,
}

#[derive(Debug, Default)]
struct Counters {
    recv_truncated: AtomicU64,
    send_would_block: AtomicU64,
    send_errors: AtomicU64,
    gso_fallbacks: AtomicU64,
    gso_sends: AtomicU64,
    multicast_joins: AtomicU64,
    multicast_leaves: AtomicU64,
}

/// A bound UDP underlay; see the module docs.
#[derive(Debug)]
pub struct UdpUnderlay {
    recv: OwnedFd,
    local: SocketAddr,
    senders: Vec<OwnedFd>,
    source_ports: Vec<u16>,
    gro: bool,
    gso: AtomicBool,
    counters: Counters,
    /// Joined multicast groups, each with its receive socket, in join order.
    groups: Vec<Membership>,
    /// The locator's interface for IPv6 multicast (0: none known, the kernel picks by route).
    ifindex: u32,
}

static GRO_MISSING: Once = Once::new();
static GSO_MISSING: Once = Once::new();

impl UdpUnderlay {
    /// Binds the receive socket to (`local`, `port`) — an unspecified `local` receives on every
    /// address of the namespace — and `entropy_ports` send sockets to (`local`, 49152 + i),
    /// skipping ports in use. IPv6 sockets are IPv6-only. With `entropy_ports == 0` the receive
    /// socket sends too. `port` 0 lets the kernel pick (see [`UdpUnderlay::local_addr`]).
    pub fn bind(local: IpAddr, port: u16, entropy_ports: u16) -> io::Result<Self> {
        Self::bind_shared(local, port, entropy_ports, false)
    }

    /// [`UdpUnderlay::bind`], with every socket SO_REUSEPORT when `shared`: each datapath worker
    /// binds its own underlay on the same ports, and the kernel spreads received datagrams
    /// over the receive sockets by their 4-tuple (the send sockets share their ports too, so
    /// every worker sends from the same entropy ports).
    pub fn bind_shared(
        local: IpAddr,
        port: u16,
        entropy_ports: u16,
        shared: bool,
    ) -> io::Result<Self> {
        let udp_socket = |addr| udp_socket(addr, shared);
        let recv = udp_socket(SocketAddr::new(local, port))?;
        let local = sys::local_addr(recv.as_fd())?;
        raise_buffer(recv.as_fd(), libc::SO_RCVBUFFORCE, libc::SO_RCVBUF);
        raise_buffer(recv.as_fd(), libc::SO_SNDBUFFORCE, libc::SO_SNDBUF);
        let mut senders = Vec::with_capacity(usize::from(entropy_ports));
        let mut source_ports = Vec::with_capacity(usize::from(entropy_ports));
        let mut candidate = ENTROPY_PORT_BASE;
        while senders.len() < usize::from(entropy_ports) {
            match udp_socket(SocketAddr::new(local.ip(), candidate)) {
                Ok(fd) => {
                    raise_buffer(fd.as_fd(), libc::SO_SNDBUFFORCE, libc::SO_SNDBUF);
                    senders.push(fd);
                    source_ports.push(candidate);
                }
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => {}
                Err(e) => return Err(e),
            }
            candidate = candidate.checked_add(1).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "only {} of {entropy_ports} entropy source ports free from {ENTROPY_PORT_BASE} up on {}: use fewer entropy_ports",
                        senders.len(),
                        local.ip()
                    ),
                )
            })?;
        }
        if senders.is_empty() {
            source_ports.push(local.port());
        }
        let gro = match sys::setsockopt(
            recv.as_fd(),
            libc::SOL_UDP,
            sys::UDP_GRO,
            &1 as &libc::c_int,
        ) {
            Ok(()) => true,
            Err(e) => {
                GRO_MISSING.call_once(|| {
                    log::warn!(
                        "udp gro unavailable on {local}: {e}; receiving one datagram per buffer"
                    );
                });
                false
            }
        };
        let probe = senders.first().unwrap_or(&recv).as_fd();
        let gso = match sys::getsockopt_int(probe, libc::SOL_UDP, sys::UDP_SEGMENT) {
            Ok(_) => true,
            Err(e) => {
                GSO_MISSING.call_once(|| {
                    log::warn!(
                        "udp gso unavailable on {local}: {e}; sending one datagram per message"
                    );
                });
                false
            }
        };
        let ifindex = multicast::interface_index(local.ip());
        let underlay = UdpUnderlay {
            recv,
            local,
            senders,
            source_ports,
            gro,
            gso: AtomicBool::new(gso),
            counters: Counters::default(),
            groups: Vec::new(),
            ifindex,
        };
        underlay.configure_multicast_sends()?;
        Ok(underlay)
    }

    /// Sends every datagram the port's reuseport group receives to the group's first socket
    /// (see `spread`): for a socket bound with `bind_shared` after the one that must receive.
    pub fn steer_to_first(&self) -> io::Result<()> {
        crate::spread::steer_to_first(self.recv.as_fd())
    }

    /// Spreads the port's reuseport group over its first `n` sockets by the tunnel's inner flow,
    /// the hash a port's fanout group uses (see `spread` and `steer`), so that a flow's two
    /// directions reach the same worker.
    pub fn steer_by_inner_flow(
        &self,
        shape: crate::steer::TunnelShape,
        n: usize,
    ) -> io::Result<()> {
        crate::spread::steer_by_inner_flow(self.recv.as_fd(), shape, n)
    }

    /// The receive socket's address (with the port the kernel picked if bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Source ports datagrams leave from, indexed by `entropy % len`.
    pub fn source_ports(&self) -> &[u16] {
        &self.source_ports
    }

    /// The source port a datagram with this entropy leaves from.
    pub fn source_port(&self, entropy: u16) -> u16 {
        self.source_ports[usize::from(entropy) % self.source_ports.len()]
    }

    /// Sets the outer IP header of unicast datagrams on every send socket (the pool and the
    /// receive socket): TTL / hop limit, TOS / traffic class, and DF (`true`: never fragmented,
    /// a datagram larger than the path MTU is refused; `false`: the kernel fragments). `None`
    /// leaves a field as it is (kernel defaults: route TTL, TOS 0, path MTU discovery per
    /// `ip_no_pmtu_disc`). TTL 0 is refused. Multicast datagrams take their TTL from
    /// [`UdpUnderlay::set_multicast_ttl`] instead. See `outer.rs` for the socket options.
    pub fn set_outer(&self, ttl: Option<u8>, tos: Option<u8>, df: Option<bool>) -> io::Result<()> {
        let ipv6 = self.local.is_ipv6();
        for fd in self.send_fds() {
            outer::set_outer(fd, ipv6, ttl, tos, df)?;
        }
        Ok(())
    }

    /// Offloads in force now.
    pub fn offloads(&self) -> Offloads {
        Offloads {
            gro: self.gro,
            gso: self.gso.load(Relaxed),
        }
    }

    /// Counters since bind.
    pub fn stats(&self) -> UnderlayStats {
        let c = &self.counters;
        UnderlayStats {
            recv_truncated: c.recv_truncated.load(Relaxed),
            send_would_block: c.send_would_block.load(Relaxed),
            send_errors: c.send_errors.load(Relaxed),
            gso_fallbacks: c.gso_fallbacks.load(Relaxed),
            gso_sends: c.gso_sends.load(Relaxed),
            multicast_joins: c.multicast_joins.load(Relaxed),
            multicast_leaves: c.multicast_leaves.load(Relaxed),
        }
    }

    /// Turns UDP GSO off for good (it stays off if the kernel lacked it): every datagram is
    /// its own message. A knob for measuring what GSO is worth.
    pub fn disable_gso(&self) {
        self.gso.store(false, Relaxed);
    }

    /// Turns UDP GRO off on the receive socket: the kernel hands over datagrams one by one.
    /// Receive batches made before keep working (they are larger than needed).
    pub fn disable_gro(&mut self) -> io::Result<()> {
        if self.gro {
            sys::setsockopt(
                self.recv.as_fd(),
                libc::SOL_UDP,
                sys::UDP_GRO,
                &0 as &libc::c_int,
            )?;
            self.gro = false;
        }
        Ok(())
    }

    /// A receive batch sized for this underlay: [`MAX_DATAGRAM`] buffers with GRO (a coalesced
    /// buffer holds up to 64 KiB), [`PLAIN_RECV_BUF`] without.
    pub fn new_recv_batch(&self, capacity: usize) -> RecvBatch {
        RecvBatch::new(
            capacity,
            if self.gro {
                MAX_DATAGRAM
            } else {
                PLAIN_RECV_BUF
            },
        )
    }

    /// Receives what is queued, up to the batch capacity, without blocking; returns the number
    /// of datagrams (GRO segments counted one by one; 0 when nothing was queued). Datagrams
    /// larger than a buffer are dropped and counted. With GRO on, buffers shorter than
    /// [`MAX_DATAGRAM`] are refused (`InvalidInput`): coalesced data would be cut.
    ///
    /// This is the unicast socket; datagrams sent to a joined group arrive on that group's
    /// socket instead ([`UdpUnderlay::recv_group_batch`]).
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.receive(self.recv.as_fd(), batch)
    }

    /// Receives from one of the underlay's receive sockets; see [`UdpUnderlay::recv_batch`].
    fn receive(&self, fd: BorrowedFd<'_>, batch: &mut RecvBatch) -> io::Result<usize> {
        if self.gro && batch.buf_len() < MAX_DATAGRAM {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "receive buffers of {} bytes are too short for udp gro: use new_recv_batch",
                    batch.buf_len()
                ),
            ));
        }
        let count = batch.receive(fd, Strip::Nothing)?;
        if batch.truncated() > 0 {
            self.counters
                .recv_truncated
                .fetch_add(batch.truncated() as u64, Relaxed);
        }
        Ok(count)
    }

    /// Sends every datagram of the batch: one `sendmmsg` per source socket used (more if a
    /// call sends only part), coalescing runs with GSO. Returns the number of datagrams
    /// accepted by the kernel. A full socket buffer (EAGAIN) drops the rest of that socket's
    /// datagrams; any other error drops the message that caused it and sending goes on. Drops
    /// are counted in [`UdpUnderlay::stats`]; `Err` only when nothing at all was sent and an
    /// error other than EAGAIN occurred.
    pub fn send_batch(&self, batch: &SendBatch) -> io::Result<usize> {
        let entries = batch.entries();
        let sockets = self.senders.len().max(1);
        // (socket, entry): sorting groups entries per socket and keeps push order within one.
        let mut order = [(0u16, 0u16); MAX_BATCH];
        for (slot, (i, e)) in order.iter_mut().zip(entries.iter().enumerate()) {
            *slot = ((usize::from(e.entropy) % sockets) as u16, i as u16);
        }
        let order = &mut order[..entries.len().min(MAX_BATCH)];
        order.sort_unstable();
        let mut sent = 0;
        let mut error = None;
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let fd = self
                .senders
                .get(usize::from(run[0].0))
                .unwrap_or(&self.recv)
                .as_fd();
            let (n, e) = self.send_run(fd, batch, run);
            sent += n;
            error = e.or(error);
        }
        match error {
            Some(e) if sent == 0 && !is_transient(&e) => Err(e),
            _ => Ok(sent),
        }
    }

    /// Sends the entries `run` (all for socket `fd`); returns datagrams sent and the last error.
    fn send_run(
        &self,
        fd: BorrowedFd<'_>,
        batch: &SendBatch,
        run: &[(u16, u16)],
    ) -> (usize, Option<io::Error>) {
        let entries = batch.entries();
        let slab = batch.slab();
        let mut plans = [Plan::EMPTY; MAX_BATCH];
        let mut controls = [ControlBuf::EMPTY; MAX_BATCH];
        let (mut pos, mut sent, mut error) = (0, 0, None);
        // Entries before this position are sent one by one (after a GSO refusal).
        let mut plain_until: usize = 0;
        while pos < run.len() {
            let np = plan_messages(
                entries,
                &run[pos..],
                self.gso.load(Relaxed),
                plain_until.saturating_sub(pos),
                &mut plans,
            );
            write_controls(&mut plans[..np], &mut controls, self.local.is_ipv6());
            let msgs = plans[..np]
                .iter()
                .zip(controls.iter())
                .map(|(p, c)| SendMsg {
                    head: &[],
                    data: &slab[p.start..p.start + p.len],
                    addr: Some(RawAddr::from_socket_addr(p.dst)),
                    control: (p.control_len > 0).then_some((c, p.control_len)),
                });
            match sys::sendmmsg(fd, msgs) {
                Ok(m) if m > 0 => {
                    let done: usize = plans[..m].iter().map(|p| p.count).sum();
                    let gso = plans[..m].iter().filter(|p| p.count > 1).count();
                    self.counters.gso_sends.fetch_add(gso as u64, Relaxed);
                    sent += done;
                    pos += done;
                }
                Ok(_) => {
                    self.counters
                        .send_would_block
                        .fetch_add((run.len() - pos) as u64, Relaxed);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.counters
                        .send_would_block
                        .fetch_add((run.len() - pos) as u64, Relaxed);
                    error = Some(e);
                    break;
                }
                Err(e)
                    if plans[0].count > 1
                        && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) =>
                {
                    // EIO: the route's device cannot checksum GSO segments; EINVAL: a segment
                    // is larger than the path MTU allows. Send these one by one.
                    self.counters.gso_fallbacks.fetch_add(1, Relaxed);
                    if e.raw_os_error() == Some(libc::EIO) && self.gso.swap(false, Relaxed) {
                        log::warn!("udp gso refused on {}: {e}; sending one datagram per message from now on", self.local);
                    }
                    plain_until = pos + plans[0].count;
                }
                Err(e) => {
                    self.counters
                        .send_errors
                        .fetch_add(plans[0].count as u64, Relaxed);
                    pos += plans[0].count;
                    error = Some(e);
                }
            }
        }
        (sent, error)
    }
}

impl AsFd for UdpUnderlay {
    /// The unicast receive socket, to poll for readability (group sockets:
    /// [`UdpUnderlay::group_fds`]).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.recv.as_fd()
    }
}

/// One message of a send: `count` consecutive entries, coalesced when more than one.
#[derive(Clone, Copy, Debug)]
struct Plan {
    dst: SocketAddr,
    start: usize,
    len: usize,
    count: usize,
    segment: usize,
    /// The outer values of every datagram of the message.
    outer: OuterValues,
    control_len: usize,
}

impl Plan {
    const EMPTY: Plan = Plan {
        dst: SocketAddr::V4(std::net::SocketAddrV4::new(
            std::net::Ipv4Addr::UNSPECIFIED,
            0,
        )),
        start: 0,
        len: 0,
        count: 0,
        segment: 0,
        outer: OuterValues {
            tos: None,
            ttl: None,
        },
        control_len: 0,
    };
}

/// Writes each plan's control messages into the control buffer of the same index: the GSO
/// segment size of a coalesced message, then its outer values (on an IPv6 socket if `ipv6`).
fn write_controls(plans: &mut [Plan], controls: &mut [ControlBuf], ipv6: bool) {
    for (plan, control) in plans.iter_mut().zip(controls.iter_mut()) {
        let mut len = 0;
        if plan.count > 1 {
            len = sys::cmsg_put_u16(
                control,
                0,
                libc::SOL_UDP,
                sys::UDP_SEGMENT,
                plan.segment as u16,
            );
        }
        plan.control_len = outer::put_cmsgs(control, len, ipv6, plan.outer);
    }
}

/// Groups `run` into messages, at most `plans.len()`; returns how many. With `gso`, consecutive
/// entries to one destination whose bytes are contiguous in the slab, of equal size (the last
/// may be shorter) and with equal outer values (one IP header is copied to every segment)
/// become one message, within the kernel's segment and size limits. The first `plain` entries
/// are never coalesced.
fn plan_messages(
    entries: &[SendEntry],
    run: &[(u16, u16)],
    gso: bool,
    plain: usize,
    plans: &mut [Plan],
) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < run.len() && n < plans.len() {
        let first = entries[usize::from(run[i].1)];
        let mut plan = Plan {
            dst: first.dst,
            start: first.start,
            len: first.len,
            count: 1,
            segment: first.len,
            outer: first.outer,
            ..Plan::EMPTY
        };
        if gso && i >= plain && first.len > 0 {
            while i + plan.count < run.len() && plan.count < GSO_MAX_SEGMENTS {
                let next = entries[usize::from(run[i + plan.count].1)];
                let fits = next.dst == first.dst
                    && next.outer == first.outer
                    && next.start == plan.start + plan.len
                    && next.len > 0
                    && next.len <= first.len
                    && plan.len + next.len <= MAX_DATAGRAM;
                if !fits {
                    break;
                }
                plan.len += next.len;
                plan.count += 1;
                if next.len < first.len {
                    break;
                }
            }
        }
        i += plan.count;
        plans[n] = plan;
        n += 1;
    }
    n
}

/// A non-blocking UDP socket bound to `addr` (IPv6-only for IPv6).
fn udp_socket(addr: SocketAddr, shared: bool) -> io::Result<OwnedFd> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    let fd = sys::socket(domain, libc::SOCK_DGRAM, libc::IPPROTO_UDP)?;
    if addr.is_ipv6() {
        sys::setsockopt(
            fd.as_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            &1 as &libc::c_int,
        )?;
    }
    if shared {
        crate::spread::reuse_port(fd.as_fd())?;
    }
    sys::bind(fd.as_fd(), &RawAddr::from_socket_addr(addr))?;
    Ok(fd)
}

/// Best effort: the forced size needs CAP_NET_ADMIN, the plain one is capped by sysctl.
fn raise_buffer(fd: BorrowedFd<'_>, forced: libc::c_int, plain: libc::c_int) {
    if sys::setsockopt(fd, libc::SOL_SOCKET, forced, &SOCKET_BUFFER).is_err() {
        let _ = sys::setsockopt(fd, libc::SOL_SOCKET, plain, &SOCKET_BUFFER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dst: &str, start: usize, len: usize) -> SendEntry {
        SendEntry {
            dst: dst.parse().unwrap(),
            entropy: 0,
            start,
            len,
            outer: OuterValues::default(),
        }
    }

    #[test]
    fn equal_contiguous_runs_coalesce() {
        let a = "192.0.2.1:4789";
        let b = "192.0.2.2:4789";
        let entries = [
            entry(a, 0, 100),
            entry(a, 100, 100),
            entry(a, 200, 60), // shorter: ends the run
            entry(a, 260, 100),
            entry(b, 360, 100), // other destination
            entry(b, 460, 120), // longer: starts a new message
        ];
        let run: Vec<(u16, u16)> = (0..entries.len() as u16).map(|i| (0, i)).collect();
        let mut plans = [Plan::EMPTY; MAX_BATCH];
        let n = plan_messages(&entries, &run, true, 0, &mut plans);
        let got: Vec<(usize, usize, usize)> = plans[..n]
            .iter()
            .map(|p| (p.start, p.len, p.count))
            .collect();
        assert_eq!(
            got,
            vec![(0, 260, 3), (260, 100, 1), (360, 100, 1), (460, 120, 1)]
        );
        // Without GSO, or inside the plain prefix, every entry is its own message.
        assert_eq!(plan_messages(&entries, &run, false, 0, &mut plans), 6);
        let n = plan_messages(&entries, &run, true, 2, &mut plans);
        assert_eq!(
            plans[..n].iter().map(|p| p.count).collect::<Vec<_>>(),
            vec![1, 1, 1, 1, 1, 1]
        );
    }

    #[test]
    fn only_equal_outer_values_coalesce() {
        let a = "192.0.2.1:4789";
        let ecn = |tos, ttl| OuterValues {
            tos: Some(tos),
            ttl: Some(ttl),
        };
        let values = [ecn(1, 64), ecn(1, 64), ecn(2, 64), ecn(2, 63), ecn(2, 63)];
        let entries: Vec<SendEntry> = values
            .iter()
            .enumerate()
            .map(|(i, &outer)| SendEntry {
                outer,
                ..entry(a, i * 100, 100)
            })
            .collect();
        let run: Vec<(u16, u16)> = (0..entries.len() as u16).map(|i| (0, i)).collect();
        let mut plans = [Plan::EMPTY; MAX_BATCH];
        let n = plan_messages(&entries, &run, true, 0, &mut plans);
        let got: Vec<(usize, OuterValues)> =
            plans[..n].iter().map(|p| (p.count, p.outer)).collect();
        assert_eq!(got, vec![(2, ecn(1, 64)), (1, ecn(2, 64)), (2, ecn(2, 63))]);

        // A coalesced message carries its segment size and both values; a plain one without
        // values carries nothing.
        let mut controls = [ControlBuf::EMPTY; MAX_BATCH];
        plans[3] = Plan {
            count: 1,
            ..Plan::EMPTY
        };
        write_controls(&mut plans[..4], &mut controls, false);
        let c = &controls[0].0[..plans[0].control_len];
        assert_eq!(
            sys::cmsg_find_int(c, libc::IPPROTO_IP, libc::IP_TOS),
            Some(1)
        );
        assert_eq!(
            sys::cmsg_find_int(c, libc::IPPROTO_IP, libc::IP_TTL),
            Some(64)
        );
        assert_eq!(plans[1].control_len, plans[0].control_len / 3 * 2);
        assert_eq!(plans[3].control_len, 0);
        write_controls(&mut plans[..1], &mut controls, true);
        let c = &controls[0].0[..plans[0].control_len];
        assert_eq!(
            sys::cmsg_find_int(c, libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT),
            Some(64)
        );
    }

    #[test]
    fn coalescing_respects_kernel_limits() {
        let entries: Vec<SendEntry> = (0..100)
            .map(|i| entry("192.0.2.1:4789", i * 10, 10))
            .collect();
        let run: Vec<(u16, u16)> = (0..100).map(|i| (0, i)).collect();
        let mut plans = [Plan::EMPTY; MAX_BATCH];
        let n = plan_messages(&entries, &run, true, 0, &mut plans);
        assert_eq!(
            plans[..n].iter().map(|p| p.count).collect::<Vec<_>>(),
            vec![64, 36]
        );
        let big: Vec<SendEntry> = (0..3)
            .map(|i| entry("192.0.2.1:4789", i * 30_000, 30_000))
            .collect();
        let n = plan_messages(&big, &run[..3], true, 0, &mut plans);
        assert_eq!(
            plans[..n].iter().map(|p| p.count).collect::<Vec<_>>(),
            vec![2, 1]
        );
    }
}
