//! The sender: K connected UDP sockets (one source port each), one payload buffer that every
//! message of a batch points at, one `sendmmsg` per batch, the flows taken in turn.
//!
//! Errors of a send (ECONNREFUSED after an ICMP port unreachable, ENOBUFS when a queue is
//! full) are counted and the run goes on: a benchmark wants the rate over the whole interval,
//! and the report says how many calls failed and the first reason.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::{HexBytes, SendArgs};
use crate::sys::{self, Buffer, Mmsg};
use crate::{mbps, per_second, socket_error as err, BlastError};

/// Written at the start of every payload (when it fits), so a capture shows whose it is.
pub const MAGIC: &[u8] = b"nvo-blast";
/// How long one blocked `sendmmsg` may wait before the clock is looked at again.
const SEND_TIMEOUT: Duration = Duration::from_millis(100);
/// What a batch the kernel cut short is reported as. On a connected socket the usual cause is
/// an ICMP port unreachable from a receiver that is not listening.
pub const SHORT_BATCH: &str =
    "a batch stopped short at an error sendmmsg does not return (a closed port at the receiver does this)";
/// Send buffer per socket: room for a few batches of the largest datagrams.
const SNDBUF: usize = 1 << 20;

/// What a send run did.
#[derive(Debug, Clone, Serialize)]
pub struct SendReport {
    /// Always "send".
    pub role: &'static str,
    /// Destination.
    pub dst: SocketAddr,
    /// UDP payload bytes per datagram.
    pub size: usize,
    /// Datagrams per call.
    pub batch: usize,
    /// Source ports used.
    pub flows: usize,
    /// Time spent sending.
    pub seconds: f64,
    /// Datagrams the kernel accepted.
    pub packets: u64,
    /// Payload bytes the kernel accepted.
    pub bytes: u64,
    /// Datagrams per second.
    pub pps: f64,
    /// Payload megabits per second.
    pub mbps: f64,
    /// `sendmmsg` calls made.
    pub calls: u64,
    /// Calls that failed or stopped short at an error.
    pub errors: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
}

impl fmt::Display for SendReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} datagrams of {} bytes to {} in {:.2} s: {:.0} pps, {:.1} Mbit/s payload ({} source port{})",
            self.packets,
            self.size,
            self.dst,
            self.seconds,
            self.pps,
            self.mbps,
            self.flows,
            if self.flows == 1 { "" } else { "s" }
        )?;
        if let Some(e) = &self.first_error {
            write!(f, "; {} calls failed, first: {e}", self.errors)?;
        }
        Ok(())
    }
}

/// Open sockets and the batch, ready to send.
#[derive(Debug)]
pub struct Sender {
    dst: SocketAddr,
    socks: Vec<UdpSocket>,
    payload: Vec<u8>,
    mmsg: Mmsg,
    next: usize,
}

impl Sender {
    /// `flows` sockets on ephemeral ports, each connected to `dst`, sending `size`-byte
    /// payloads `batch` at a time.
    pub fn open(
        dst: SocketAddr,
        size: usize,
        batch: usize,
        flows: usize,
    ) -> Result<Sender, BlastError> {
        let mark = &MAGIC[..MAGIC.len().min(size)];
        Sender::with_prefix(dst, size, batch, flows, mark)
    }

    /// The same with every payload starting with `prefix` (at most `size` bytes).
    pub fn with_prefix(
        dst: SocketAddr,
        size: usize,
        batch: usize,
        flows: usize,
        prefix: &[u8],
    ) -> Result<Sender, BlastError> {
        let any = match dst.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        let local = SocketAddr::new(any, 0);
        let mut socks = Vec::with_capacity(flows.max(1));
        for _ in 0..flows.max(1) {
            let sock = UdpSocket::bind(local).map_err(err("bind", local))?;
            sock.connect(dst).map_err(err("connect to", dst))?;
            sock.set_write_timeout(Some(SEND_TIMEOUT))
                .map_err(err("set a send timeout towards", dst))?;
            sys::set_buffer(&sock, Buffer::Send, SNDBUF)
                .map_err(err("size the send buffer towards", dst))?;
            socks.push(sock);
        }
        let mut payload = vec![0u8; size.max(prefix.len())];
        payload[..prefix.len()].copy_from_slice(prefix);
        Ok(Sender {
            dst,
            socks,
            payload,
            mmsg: Mmsg::new(batch),
            next: 0,
        })
    }

    /// The source ports, one per flow.
    pub fn source_ports(&self) -> Vec<u16> {
        self.socks
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .map(|a| a.port())
            .collect()
    }

    /// Datagrams per call.
    pub fn batch(&self) -> usize {
        self.mmsg.capacity()
    }

    /// One `sendmmsg` of up to `count` datagrams (at most a batch) on the next flow's socket;
    /// returns how many the kernel took.
    pub fn send_batch(&mut self, count: usize) -> std::io::Result<usize> {
        let sock = &self.socks[self.next % self.socks.len()];
        self.next = self.next.wrapping_add(1);
        self.mmsg.send(sock, &self.payload, count)
    }
}

/// Sends for `args.seconds` (or until `args.count`), then reports.
pub fn run(args: &SendArgs) -> Result<SendReport, BlastError> {
    let size = args.size as usize;
    let (batch, flows) = (args.batch as usize, args.flows as usize);
    let mut sender = match &args.prefix {
        Some(HexBytes(prefix)) if prefix.len() > size => {
            return Err(BlastError::Usage(format!(
                "--prefix has {} bytes, more than --size {size}",
                prefix.len()
            )))
        }
        Some(HexBytes(prefix)) => Sender::with_prefix(args.dst, size, batch, flows, prefix)?,
        None => Sender::open(args.dst, size, batch, flows)?,
    };
    let limit = args.count.unwrap_or(u64::MAX);
    let batch = sender.batch() as u64;
    let (mut packets, mut calls, mut errors) = (0u64, 0u64, 0u64);
    let mut first_error = None;
    let start = Instant::now();
    let deadline = start + args.seconds;
    while packets < limit && Instant::now() < deadline {
        let want = (limit - packets).min(batch) as usize;
        calls += 1;
        let error = match sender.send_batch(want) {
            Ok(n) if n < want => {
                packets += n as u64;
                // sendmmsg stopped at an error and returned the count instead: the kernel
                // reports an error only when nothing was sent, and this one is lost.
                Some(SHORT_BATCH.to_owned())
            }
            Ok(n) => {
                packets += n as u64;
                None
            }
            Err(e) => Some(e.to_string()),
        };
        if let Some(e) = error {
            errors += 1;
            first_error.get_or_insert(e);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let bytes = packets * size as u64;
    Ok(SendReport {
        role: "send",
        dst: sender.dst,
        size,
        batch: sender.batch(),
        flows: sender.socks.len(),
        seconds,
        packets,
        bytes,
        pps: per_second(packets, seconds),
        mbps: mbps(bytes, seconds),
        calls,
        errors,
        first_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_flow_has_its_own_source_port() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sender = Sender::open(rx.local_addr().unwrap(), 64, 8, 4).unwrap();
        let mut ports = sender.source_ports();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 4);
    }

    #[test]
    fn payloads_carry_the_magic_when_it_fits() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dst = rx.local_addr().unwrap();
        assert!(Sender::open(dst, 64, 1, 1)
            .unwrap()
            .payload
            .starts_with(MAGIC));
        assert_eq!(Sender::open(dst, 3, 1, 1).unwrap().payload, b"nvo");
        assert!(Sender::open(dst, 0, 1, 1).unwrap().payload.is_empty());
        let p = Sender::with_prefix(dst, 8, 1, 1, &[1, 2, 3])
            .unwrap()
            .payload;
        assert_eq!(p, [1, 2, 3, 0, 0, 0, 0, 0]);
    }
}
