//! nvo-io: the Linux sockets of the userspace datapath and the system calls of the kernel one:
//! the crate of nvo whose `unsafe` talks to the kernel (system calls through `libc`, in `sys.rs`
//! and `iface.rs`, each with a `// SAFETY:` line; nvo-ebpf's only `unsafe` is the plain-data
//! marking of its map layouts).
//!
//! - [`UdpUnderlay`]: the VXLAN underlay (and every UDP tunnel). One receive socket, a pool of
//!   send sockets whose source ports carry flow entropy, `recvmmsg`/`sendmmsg` on preallocated
//!   [`RecvBatch`] and [`SendBatch`], UDP GRO and GSO probed at bind ([`Offloads`]); underlay
//!   multicast groups joined with [`UdpUnderlay::join`], one receive socket each.
//! - [`RawUnderlay`]: the underlay of tunnels straight on IP (GRE/NVGRE 47, IP-in-IP 4 and 41,
//!   STT 6): one raw socket per protocol bound to the locator, the same batches, the IP header
//!   stripped on receive and built by the kernel on send.
//! - Both take the outer TTL, TOS and DF with `set_outer`, and a TOS / TTL per datagram
//!   ([`OuterValues`], [`SendBatch::push_outer`]) for tunnels that inherit them.
//! - [`PacketPort`] (AF_PACKET on an existing interface, e.g. the host end of a veth) and
//!   [`TapPort`] (a TAP device nvo creates): [`FramePort`]s that receive into a shared
//!   [`FrameBatch`], which finishes partial checksums and segments GSO frames when the port
//!   uses the virtio-net header — or, read with [`Frames::next_frame_meta`], hands GSO frames
//!   over whole with their [`FrameMeta`], for [`FramePort::send_meta`] to pass on.
//! - [`CaptureSocket`]: an AF_PACKET tap, both directions, with a kernel filter, opened only
//!   while `nvo capture` runs; [`pcap_filter`]: tcpdump-language filters compiled by libpcap
//!   (its FFI, like `capture`'s `recvfrom`, carries its own `// SAFETY:` lines).
//! - Several datapath workers: [`UdpUnderlay::bind_shared`] (SO_REUSEPORT),
//!   [`PacketPort::join_fanout`] (PACKET_FANOUT), [`TapPort::create_queue`] (IFF_MULTI_QUEUE),
//!   [`RawUnderlay::receive_nothing`] (`spread` says which worker receives what).
//! - [`ethtool`]: per-interface offload switches (TSO, GSO, GRO, TX checksum, scatter-gather).
//! - [`iface`]: an interface by name or by one of its addresses (index, MAC); the monotonic clock.
//! - [`Poller`] and [`EventFd`]: the datapath thread's wait, and how other threads wake it.
//! - [`netns`]: namespaces for tests and labs (create, enter from a thread).
//! - [`tcp_auth`]: TCP-MD5 keys and GTSM (TTL 255) on BGP's sockets.
//! - [`trim_heap`]: hand memory the allocator kept after a burst back to the kernel.
//!
//! Every descriptor is an `OwnedFd`, created close-on-exec and non-blocking. Nothing here
//! allocates per packet or logs per packet; a missing offload is logged once and worked around.
//! Everything is Linux-only.

// This crate is where nvo talks to the kernel; `unsafe` is confined to `sys` (thin syscall
// wrappers), every block of it carries a `// SAFETY:` comment, and the rest of the crate uses
// only the safe functions `sys` exports.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod batch;
mod capture;
mod coalesce;
pub mod ethtool;
mod frame;
pub mod iface;
mod ila_tun;
mod meta;
pub mod netns;
mod outer;
mod packet;
pub mod pcap_filter;
mod poll;
mod raw;
mod spread;
pub mod steer;
mod stt_tso;
mod sys;
mod tap;
pub mod tcp_auth;
mod tun;
mod udp;
mod vnet;

pub use batch::{RecvBatch, RecvIter, SendBatch, MAX_DATAGRAM};
pub use capture::{CaptureSocket, Captured};
pub use coalesce::{Coalesced, Coalescer, Pushed, MAX_COALESCED};
pub use frame::{FrameBatch, FrameBatchStats, FramePort, Frames, MAX_FRAME};
pub use ila_tun::{IlaTun, IlaWritten, ILA_PACKET_AT, ILA_TUN};
pub use meta::{FrameMeta, Gso, GsoKind};
pub use outer::OuterValues;
pub use packet::PacketPort;
pub use poll::{EventFd, Poller};
pub use raw::{RawStats, RawUnderlay, MAX_RAW_PACKET};
pub use stt_tso::{SttTso, TsoOuter, MAX_TSO_FRAME};
pub use sys::{trim_heap, MAX_BATCH};
pub use tap::{TapOffloads, TapPort};
pub use udp::{
    Offloads, UdpUnderlay, UnderlayStats, DEFAULT_MULTICAST_TTL, ENTROPY_PORT_BASE, MAX_GROUPS,
    PLAIN_RECV_BUF,
};
pub use vnet::VNET_HDR_LEN;
