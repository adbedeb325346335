//! The receiver: one socket, a large receive buffer, one `recvmmsg` per batch.
//!
//! The measurement starts at the first datagram, so the receiver can be started well before
//! the sender, and ends when `seconds` have passed since then or nothing has come for `idle`
//! (the sender stopped). The delivered rate counts the datagrams that arrived after the first
//! batch over the time from the first batch to the last: what the path carried, not what the
//! sender offered.

use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::RecvArgs;
use crate::sys::{self, Buffer, Mmsg, Received};
use crate::{mbps, per_second, socket_error as err, BlastError};

/// Bytes per receive buffer: any UDP payload fits (65507 over IPv4, 65527 over IPv6),
/// reassembled fragments included.
const BUF_LEN: usize = 1 << 16;
/// How long one receive call may wait before the clocks are looked at again.
const POLL: Duration = Duration::from_millis(50);

/// Why a receive run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// `seconds` passed since the first datagram.
    Seconds,
    /// Nothing arrived for `idle`.
    Idle,
    /// Nothing arrived at all within `wait`.
    NothingArrived,
}

/// What a receive run counted.
#[derive(Debug, Clone, Serialize)]
pub struct RecvReport {
    /// Always "recv".
    pub role: &'static str,
    /// Where it listened.
    pub bind: SocketAddr,
    /// Datagrams received (truncated ones included).
    pub packets: u64,
    /// Payload bytes received.
    pub bytes: u64,
    /// From the first batch to the last.
    pub seconds: f64,
    /// Delivered datagrams per second (those after the first batch, over `seconds`).
    pub pps: f64,
    /// Delivered payload megabits per second, the same way.
    pub mbps: f64,
    /// Datagrams longer than the buffer.
    pub truncated: u64,
    /// The receive buffer the kernel granted (bytes, as `SO_RCVBUF` reports it).
    pub rcvbuf: usize,
    /// Why the run ended.
    pub end: End,
}

impl fmt::Display for RecvReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.end == End::NothingArrived {
            return write!(f, "received nothing on {}", self.bind);
        }
        write!(
            f,
            "received {} datagrams, {} payload bytes on {} in {:.2} s: {:.0} pps, {:.1} Mbit/s payload delivered",
            self.packets, self.bytes, self.bind, self.seconds, self.pps, self.mbps
        )?;
        if self.truncated > 0 {
            write!(f, " ({} truncated)", self.truncated)?;
        }
        Ok(())
    }
}

/// What one receive call got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Got {
    /// Datagrams.
    pub packets: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Datagrams cut short.
    pub truncated: u64,
}

/// A bound socket and its buffers.
#[derive(Debug)]
pub struct Receiver {
    sock: UdpSocket,
    addr: SocketAddr,
    rcvbuf: usize,
    mmsg: Mmsg,
    bufs: Vec<u8>,
    out: Vec<Received>,
}

impl Receiver {
    /// Binds `addr`, asks for a `rcvbuf`-byte receive buffer, allocates `batch` buffers.
    pub fn bind(addr: SocketAddr, batch: usize, rcvbuf: usize) -> Result<Receiver, BlastError> {
        let sock = UdpSocket::bind(addr).map_err(err("bind", addr))?;
        let addr = sock
            .local_addr()
            .map_err(err("read the address of", addr))?;
        sock.set_read_timeout(Some(POLL))
            .map_err(err("set a receive timeout on", addr))?;
        let rcvbuf = sys::set_buffer(&sock, Buffer::Recv, rcvbuf)
            .map_err(err("size the receive buffer of", addr))?;
        let mmsg = Mmsg::new(batch);
        let n = mmsg.capacity();
        let none = Received {
            len: 0,
            truncated: false,
        };
        Ok(Receiver {
            sock,
            addr,
            rcvbuf,
            mmsg,
            bufs: vec![0; n * BUF_LEN],
            out: vec![none; n],
        })
    }

    /// The bound address (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// One `recvmmsg`, waiting up to 50 ms for the first datagram; nothing is `Ok` and empty.
    pub fn recv_batch(&mut self) -> io::Result<Got> {
        let n = match self
            .mmsg
            .recv(&self.sock, &mut self.bufs, BUF_LEN, &mut self.out)
        {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                0
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        let mut got = Got::default();
        for r in &self.out[..n] {
            got.packets += 1;
            got.bytes += r.len as u64;
            got.truncated += u64::from(r.truncated);
        }
        Ok(got)
    }
}

/// Receives until the stream ends (see the module docs), then reports.
pub fn run(args: &RecvArgs) -> Result<RecvReport, BlastError> {
    let mut rx = Receiver::bind(args.bind, args.batch as usize, args.rcvbuf)?;
    let start = Instant::now();
    let mut total = Got::default();
    let mut first: Option<(Instant, Got)> = None;
    let mut last = start;
    let end = loop {
        let got = rx
            .recv_batch()
            .map_err(err("receive on", rx.local_addr()))?;
        let now = Instant::now();
        if got.packets > 0 {
            first.get_or_insert((now, got));
            last = now;
            total.packets += got.packets;
            total.bytes += got.bytes;
            total.truncated += got.truncated;
        }
        match first {
            None if now - start >= args.wait => break End::NothingArrived,
            None => {}
            Some((t, _)) if now - t >= args.seconds => break End::Seconds,
            Some(_) if now - last >= args.idle => break End::Idle,
            Some(_) => {}
        }
    };
    let (seconds, counted, counted_bytes) = match first {
        Some((t, head)) => (
            (last - t).as_secs_f64(),
            total.packets - head.packets,
            total.bytes - head.bytes,
        ),
        None => (0.0, 0, 0),
    };
    Ok(RecvReport {
        role: "recv",
        bind: rx.local_addr(),
        packets: total.packets,
        bytes: total.bytes,
        seconds,
        pps: per_second(counted, seconds),
        mbps: mbps(counted_bytes, seconds),
        truncated: total.truncated,
        rcvbuf: rx.rcvbuf,
        end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::send::Sender;

    /// 10,000 datagrams over loopback, sent and received in lockstep (a batch out, then read
    /// until it is in) so that no socket buffer can overflow: every one must arrive, whole.
    #[test]
    fn ten_thousand_datagrams_cross_loopback() {
        let mut rx = Receiver::bind("127.0.0.1:0".parse().unwrap(), 64, 1 << 20).unwrap();
        let mut tx = Sender::open(rx.local_addr(), 100, 64, 4).unwrap();
        let (mut sent, mut total) = (0u64, Got::default());
        while sent < 10_000 {
            let n = tx.send_batch((10_000 - sent).min(64) as usize).unwrap();
            sent += n as u64;
            let deadline = Instant::now() + Duration::from_secs(5);
            while total.packets < sent && Instant::now() < deadline {
                let got = rx.recv_batch().unwrap();
                total.packets += got.packets;
                total.bytes += got.bytes;
                total.truncated += got.truncated;
            }
        }
        assert_eq!(sent, 10_000);
        assert_eq!(total.packets, 10_000);
        assert_eq!(total.bytes, 1_000_000);
        assert_eq!(total.truncated, 0);
    }

    #[test]
    fn nothing_arriving_ends_the_run_after_the_wait() {
        let args = RecvArgs {
            bind: "127.0.0.1:0".parse().unwrap(),
            seconds: Duration::from_secs(5),
            wait: Duration::from_millis(200),
            idle: Duration::from_millis(100),
            batch: 8,
            rcvbuf: 1 << 16,
            json: false,
        };
        let t = Instant::now();
        let report = run(&args).unwrap();
        assert_eq!(report.end, End::NothingArrived);
        assert_eq!((report.packets, report.pps), (0, 0.0));
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
