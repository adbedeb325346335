//! BGP-4 (RFC 4271) and EVPN (RFC 7432, RFC 8365) wire formats for nvo's control plane.
//!
//! Apart from the [`session`] module (feature `session`, on by default: the RFC 4271 state
//! machine as a tokio task per neighbour), this crate knows bytes and nothing else. Each message is
//! a plain `Repr` value; `parse` takes one whole message (or body) and validates it, `emit`
//! appends bytes to a `Vec`. BGP messages are at most 4096 bytes (RFC 4271 §4.1), and every
//! parser reads through a bounds-checked cursor, so untrusted input can neither panic nor make
//! a parser allocate more than a few times the message length.
//!
//! Errors ([`Error`]) carry what RFC 4271 §6 and RFC 7606 need to react: the NOTIFICATION
//! code and subcode, the attribute type when one attribute is at fault, and the [`Scope`] —
//! whether the session must reset or the UPDATE can be treated as a withdraw.
//!
//! Modules: [`message`] (header, framing, NOTIFICATION, KEEPALIVE, ROUTE-REFRESH), [`open`],
//! [`update`], [`attribute`] (path attributes), [`community`] (extended communities),
//! [`evpn`] (EVPN NLRI and route distinguishers), [`session`] (BGP sessions over TCP).
#![forbid(unsafe_code)]

pub mod attribute;
pub mod community;
mod error;
pub mod evpn;
mod header;
pub mod message;
pub mod open;
pub mod pack;
mod reader;
#[cfg(feature = "session")]
pub mod session;
pub mod update;

pub use attribute::{AttributeValue, MpReach, MpUnreach, PathAttribute, PmsiTunnel};
pub use community::{ExtendedCommunity, RouteTarget};
pub use error::{code, update_subcode, Error, Result, Scope};
pub use evpn::{EvpnRoute, InclusiveMulticastRoute, MacIpRoute, RouteDistinguisher};
pub use message::{frame_len, Message, NotificationRepr, RouteRefreshRepr};
pub use open::{Capability, OpenRepr};
pub use update::{Ipv4Prefix, ParsedUpdate, UpdateRepr, Verdict};
