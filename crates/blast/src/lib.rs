//! nvo-blast: a batched UDP packet-rate sender and receiver for nvo's benchmarks
//! (`bench/run.py`). iperf3's UDP sender makes one system call per datagram and runs out of
//! breath long before a data path does; nvo-blast sends with `sendmmsg` and receives with
//! `recvmmsg`, a batch per call, so the figure it reports is the path's, not the tool's.
//!
//! - [`send`]: fixed-size datagrams from K connected sockets (K source ports, so that flows
//!   hash apart), as fast as the kernel takes them, for a time or a count.
//! - [`recv`]: counts what arrives; the rate is measured from the first datagram to the last,
//!   so it is the rate the path actually delivered, whenever the sender started.
//!
//! Rates: `pps` is datagrams per second, `mbps` is UDP payload megabits (10^6) per second
//! (headers not counted). Nothing is allocated per datagram: every buffer is made at start.
//!
//! This crate talks to the kernel directly for the two batched calls std lacks: its `unsafe`
//! is confined to [`sys`], every block with a `// SAFETY:` comment.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod cli;
pub mod recv;
pub mod send;
pub mod sys;

use std::io;
use std::net::SocketAddr;

/// Why a run could not start or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum BlastError {
    /// A socket could not be made ready.
    #[error("cannot {what} {addr}: {source}")]
    Socket {
        /// What was being done (bind, connect, size the buffer of, receive on).
        what: &'static str,
        /// The address involved.
        addr: SocketAddr,
        /// The system's reason.
        source: io::Error,
    },
    /// Options that do not fit together.
    #[error("{0}")]
    Usage(String),
}

/// The error for a failed socket call, for `map_err`.
pub(crate) fn socket_error(
    what: &'static str,
    addr: SocketAddr,
) -> impl FnOnce(io::Error) -> BlastError {
    move |source| BlastError::Socket { what, addr, source }
}

/// Megabits (10^6) per second for `bytes` over `seconds`; 0 for an empty interval.
pub fn mbps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e6
    } else {
        0.0
    }
}

/// Per second for `count` over `seconds`; 0 for an empty interval.
pub fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}
