//! `nvo-bgp-inject`: a load generator for EVPN route reflectors and the VTEPs behind them.
//!
//! It opens one iBGP session (multiprotocol L2VPN EVPN, 4-octet AS) with blocking std sockets,
//! advertises N MAC-only type-2 routes (and optionally one type-3 per VNI) packed as densely as
//! 4096-byte UPDATEs allow, sends End-of-RIB, then holds the session with keepalives until it
//! is killed, the peer closes, or `--hold-after` elapses; `--withdraw-after` withdraws
//! everything first. Progress goes to stdout as JSON lines with timestamps, for
//! bench/evpn_scale.py.
//!
//! ```text
//!  main thread: build UPDATEs ─► connect ─► OPEN/KEEPALIVE ─► write UPDATEs ─► End-of-RIB ─► wait
//!                                               │ (writes share one Mutex<TcpStream>)
//!  keepalive thread: KEEPALIVE every hold/3 ────┘
//!  reader thread: reads and counts what the peer sends; NOTIFICATION, EOF, hold timer
//!                 expiry or a malformed message → one Closure on a channel to main
//! ```
//!
//! Modules: [`cli`] (arguments), [`routes`] (which routes: MACs from a counter, RD, RT),
//! [`pack`] (routes → UPDATE messages of at most 4096 bytes), [`peer`] (the session).
//! Only the wire formats of `nvo-bgp` are used, not its session module.

pub mod cli;
pub mod pack;
pub mod peer;
pub mod routes;
