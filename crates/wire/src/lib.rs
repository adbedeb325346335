//! Wire formats of every tunnel header nvo speaks.
//!
//! This crate knows bytes and nothing else. Each header lives in its own module, in the
//! `Packet`/`Repr` style of smoltcp's `wire` module:
//!
//! - `XPacket<T: AsRef<[u8]>>` wraps a buffer. `new_checked` (or `new_unchecked` followed by
//!   `check_len`) is the only way untrusted bytes get in; getters and setters are named after
//!   the header fields.
//! - `XRepr` is a plain value. `parse` validates a checked packet, `emit` writes into a buffer of
//!   at least `buffer_len()` bytes and never panics on one.
//!
//! The Ethernet vocabulary every crate shares — [`Mac`], [`EtherType`], [`ip_proto`] — is in
//! [`ethernet`]. Standard headers (Ethernet, 802.1Q, ARP, IPv4, IPv6, ICMP, UDP, TCP and their
//! checksums) come from [`smoltcp::wire`], re-exported here as [`std_wire`]: the one library for
//! them in nvo's code (tests build frames with etherparse as an independent check). The crate
//! is `no_std`, allocates nothing and contains no `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub use smoltcp::wire as std_wire;

mod error;
pub mod ethernet;
pub mod field;
mod header;

pub mod geneve;
pub mod gre;
pub mod ila;
pub mod nsh;
pub mod overlay;
pub mod siit;
pub mod stt;
pub mod vxlan;
pub mod vxlan_gpe;

pub use error::{Error, Result};

/// The largest virtual network identifier: 24 bits (VXLAN's VNI, Geneve's VNI, NVGRE's VSID).
/// Networks are numbered 1 to this.
pub const VNI_MAX: u32 = 0xff_ffff;
pub use ethernet::{ip_proto, EtherType, Mac, MacParseError};

/// Well-known transport ports of the tunnels, as assigned by IANA (or, for the overlay header,
/// chosen by nvo).
pub mod ports {
    /// VXLAN, RFC 7348 §5 (IANA-assigned).
    pub const VXLAN: u16 = 4789;
    /// The port the Linux kernel uses for VXLAN when none is given (pre-IANA).
    pub const VXLAN_LINUX_LEGACY: u16 = 8472;
    /// VXLAN-GPE, draft-ietf-nvo3-vxlan-gpe §3.2.
    pub const VXLAN_GPE: u16 = 4790;
    /// Geneve, RFC 8926 §3.3.
    pub const GENEVE: u16 = 6081;
    /// STT, draft-davie-stt-08 §3 (the TCP-like destination port).
    pub const STT: u16 = 7471;
    /// nvo's routed overlay header (UDP destination port, default).
    pub const OVERLAY: u16 = 60002;
    /// GRE's IP protocol number, where a tunnel's transport is named: [`crate::ip_proto::GRE`].
    pub const IP_PROTO_GRE: u8 = crate::ip_proto::GRE;
}
