//! The raw IP underlay: one raw socket (`SOCK_RAW`) for one IP protocol, for the tunnel
//! protocols that ride directly on IP (NVGRE and GRE: 47, IP-in-IP: 4, IPv6-in-IPv6: 41,
//! STT: 6) rather than on UDP.
//!
//! ```text
//!   socket   AF_INET or AF_INET6, SOCK_RAW, protocol       close-on-exec, non-blocking
//!   bind     (locator, 0)    the kernel delivers only datagrams *to* the locator (raw_v4_match /
//!                            __raw_v6_lookup compare the bound address with the destination)
//!   receive  recvmmsg        IPv4: the kernel hands over the whole datagram, the header is
//!                            skipped in place (IHL × 4, options included); IPv6: the payload
//!                            alone (extension headers already processed). Sources have port 0.
//!   send     sendmmsg        payload only: the kernel builds the IP header (no IP_HDRINCL),
//!                            routes, resolves neighbours and fragments (see set_outer for DF)
//! ```
//!
//! What the kernel does around a raw socket, which the datapath has to live with:
//! - Every raw socket of a protocol gets a *copy* of each matching datagram; the kernel's own
//!   handler (a GRE or IPIP tunnel module, the TCP stack for protocol 6) still runs. A raw
//!   IPPROTO_TCP socket so sees every TCP segment to the locator, the host's own connections
//!   included: the datapath filters by port (STT uses destination port 7471). The host's TCP
//!   stack also answers STT segments with RSTs unless something (a firewall rule) stops it.
//! - IPv4 fragments are reassembled before raw delivery (`ip_local_deliver` defragments first),
//!   so a datagram here is always whole; fragments that never complete are dropped by the
//!   kernel's reassembly timer, not seen here.
//! - No checksum is computed on send or checked on receive for the payload: a protocol with one
//!   (STT's TCP-like header) computes it itself. IPv4 header checksums are the kernel's. A
//!   segment whose checksum the kernel trusts without finishing it (GRO-merged, or a local GSO
//!   frame across a veth with checksum offload) arrives with the bare pseudo-header sum in the
//!   field: the bytes are handed over as they are.
//! - A datagram delivered to a raw socket is not answered with ICMP "protocol unreachable".
//!
//! The socket needs CAP_NET_RAW.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::batch::{is_transient, RecvBatch, SendBatch, Strip};
use crate::outer;
use crate::sys::{self, ControlBuf, RawAddr, SendMsg, MAX_BATCH};

/// Largest datagram one raw receive buffer must hold: an IPv4 datagram with its header (the
/// kernel reassembles fragments and may deliver GRO-coalesced TCP up to this size).
pub const MAX_RAW_PACKET: usize = 65_535;
/// Socket buffer size asked for (best effort, as for the UDP underlay).
const SOCKET_BUFFER: libc::c_int = 4 << 20;

/// Counters of what a [`RawUnderlay`] dropped; monotonic since bind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawStats {
    /// Datagrams received but dropped: larger than the receive buffer.
    pub recv_truncated: u64,
    /// IPv4 datagrams received but dropped: the IP header did not parse.
    pub recv_malformed: u64,
    /// Datagrams not sent because the socket buffer was full (EAGAIN).
    pub send_would_block: u64,
    /// Datagrams not sent because of another error (EMSGSIZE with DF, unreachable, ...).
    pub send_errors: u64,
}

#[derive(Debug, Default)]
struct Counters {
    recv_truncated: AtomicU64,
    recv_malformed: AtomicU64,
    send_would_block: AtomicU64,
    send_errors: AtomicU64,
}

/// A bound raw IP underlay; see the module docs.
#[derive(Debug)]
pub struct RawUnderlay {
    fd: OwnedFd,
    local: IpAddr,
    protocol: u8,
    counters: Counters,
}

impl RawUnderlay {
    /// Opens a raw socket for IP `protocol` of `local`'s family in the calling thread's
    /// network namespace and binds it to `local` (an unspecified address receives datagrams
    /// to every address of the namespace). Needs CAP_NET_RAW.
    pub fn bind(local: IpAddr, protocol: u8) -> io::Result<Self> {
        let context = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("raw socket for ip protocol {protocol} on {local}: {e}"),
            )
        };
        let domain = match local {
            IpAddr::V4(_) => libc::AF_INET,
            IpAddr::V6(_) => libc::AF_INET6,
        };
        let fd =
            sys::socket(domain, libc::SOCK_RAW, libc::c_int::from(protocol)).map_err(context)?;
        sys::bind(
            fd.as_fd(),
            &RawAddr::from_socket_addr(SocketAddr::new(local, 0)),
        )
        .map_err(context)?;
        for (forced, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            // Best effort: the forced size needs CAP_NET_ADMIN, the plain one is capped.
            if sys::setsockopt(fd.as_fd(), libc::SOL_SOCKET, forced, &SOCKET_BUFFER).is_err() {
                let _ = sys::setsockopt(fd.as_fd(), libc::SOL_SOCKET, plain, &SOCKET_BUFFER);
            }
        }
        Ok(RawUnderlay {
            fd,
            local,
            protocol,
            counters: Counters::default(),
        })
    }

    /// Makes the socket send only: it queues nothing it receives (see `spread`), for a worker
    /// whose packets of this protocol another worker's socket receives.
    pub fn receive_nothing(&self) -> io::Result<()> {
        crate::spread::receive_nothing(self.fd.as_fd())
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> IpAddr {
        self.local
    }

    /// The IP protocol number the socket carries.
    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// Sets the outer IP header of sent datagrams: TTL / hop limit, TOS / traffic class, DF.
    /// Same meaning as [`crate::UdpUnderlay::set_outer`].
    pub fn set_outer(&self, ttl: Option<u8>, tos: Option<u8>, df: Option<bool>) -> io::Result<()> {
        outer::set_outer(self.fd.as_fd(), self.local.is_ipv6(), ttl, tos, df)
    }

    /// Counters since bind.
    pub fn stats(&self) -> RawStats {
        let c = &self.counters;
        RawStats {
            recv_truncated: c.recv_truncated.load(Relaxed),
            recv_malformed: c.recv_malformed.load(Relaxed),
            send_would_block: c.send_would_block.load(Relaxed),
            send_errors: c.send_errors.load(Relaxed),
        }
    }

    /// A receive batch of `capacity` buffers of [`MAX_RAW_PACKET`] bytes: nothing the kernel
    /// delivers is cut. Smaller buffers work too; longer datagrams are then dropped and counted.
    pub fn new_recv_batch(&self, capacity: usize) -> RecvBatch {
        RecvBatch::new(capacity, MAX_RAW_PACKET)
    }

    /// Receives what is queued, up to the batch capacity, without blocking; returns the number
    /// of datagrams (0 when nothing was queued). [`RecvBatch::iter`] then yields (source with
    /// port 0, the bytes after the IP header) for both families. Datagrams larger than a
    /// buffer, and IPv4 ones whose header does not parse, are dropped and counted.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        let strip = match self.local {
            IpAddr::V4(_) => Strip::Ipv4Header,
            IpAddr::V6(_) => Strip::Nothing,
        };
        let count = batch.receive(self.fd.as_fd(), strip)?;
        let c = &self.counters;
        c.recv_truncated
            .fetch_add(batch.truncated() as u64, Relaxed);
        c.recv_malformed
            .fetch_add(batch.malformed() as u64, Relaxed);
        Ok(count)
    }

    /// Sends every datagram of the batch as the payload of one IP datagram to its destination
    /// (the port and the entropy of each entry are ignored: one socket, no ports; its outer
    /// values, [`SendBatch::push_outer`], go with it as control messages), with
    /// `sendmmsg` calls of up to [`MAX_BATCH`]. Returns the number accepted by the kernel. A
    /// full socket buffer (EAGAIN) drops the rest; any other error drops the datagram that
    /// caused it and sending goes on. Drops are counted in [`RawUnderlay::stats`]; `Err` only
    /// when nothing was sent and an error other than EAGAIN occurred.
    pub fn send_batch(&self, batch: &SendBatch) -> io::Result<usize> {
        let entries = batch.entries();
        let slab = batch.slab();
        let ipv6 = self.local.is_ipv6();
        let mut controls = [ControlBuf::EMPTY; MAX_BATCH];
        let mut control_lens = [0usize; MAX_BATCH];
        let (mut pos, mut sent, mut error) = (0, 0, None);
        while pos < entries.len() {
            let chunk = &entries[pos..entries.len().min(pos + MAX_BATCH)];
            for ((e, control), len) in chunk.iter().zip(&mut controls).zip(&mut control_lens) {
                *len = outer::put_cmsgs(control, 0, ipv6, e.outer);
            }
            let msgs =
                chunk
                    .iter()
                    .zip(controls.iter().zip(control_lens))
                    .map(|(e, (control, len))| SendMsg {
                        head: &[],
                        data: &slab[e.start..e.start + e.len],
                        // An IPv6 raw socket refuses a port other than 0 or its protocol.
                        addr: Some(RawAddr::from_socket_addr(with_port_zero(e.dst))),
                        control: (len > 0).then_some((control, len)),
                    });
            match sys::sendmmsg(self.fd.as_fd(), msgs) {
                Ok(m) if m > 0 => {
                    sent += m;
                    pos += m;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(_) => {
                    self.count_would_block(entries.len() - pos);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.count_would_block(entries.len() - pos);
                    error = Some(e);
                    break;
                }
                Err(e) => {
                    self.counters.send_errors.fetch_add(1, Relaxed);
                    pos += 1;
                    error = Some(e);
                }
            }
        }
        match error {
            Some(e) if sent == 0 && !is_transient(&e) => Err(e),
            _ => Ok(sent),
        }
    }

    fn count_would_block(&self, n: usize) {
        self.counters.send_would_block.fetch_add(n as u64, Relaxed);
    }
}

fn with_port_zero(mut dst: SocketAddr) -> SocketAddr {
    dst.set_port(0);
    dst
}

impl AsFd for RawUnderlay {
    /// The socket, to poll for readability.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
