//! The routed overlay's tables (docs/design/overlay.md): node IDs, a RIB per application and a
//! LIB of weighted locators, and the forwarding decision between them. Sans-IO like the rest of
//! the crate: nvod parses and sends, [`OverlayTables`] decides.
//!
//! ```text
//!  transmit  forward(app, dst, flow, None)      receive(packet, from)
//!   RIB[app][dst] → next hops                    header checked (version 1, known app,
//!     (no entry: dst itself)                       nodes ≠ 0) ─ no → malformed
//!   each next hop:                               forward(app, dst, flow, Some(from))
//!     own node → Local                           relay copies need TTL ≥ 2 on arrival:
//!     the node `from` belongs to → skipped         TTL − 1 in place, else dropped
//!     LIB[hop] → weighted pick on flow             (ttl_expired); the Local copy stays
//!     no usable locator → no_locator
//! ```
//!
//! Contract:
//! - Node ID 0 is not a node: no table holds it and no header carrying it is accepted.
//! - One flow always takes the same locator of a node (no reordering): the pick is
//!   `point = flow % Σweights` over the node's locators of weight > 0, in table order, and the
//!   locator whose cumulative range holds `point`. Weight 0 drains a locator.
//! - Several next hops replicate (a multicast tree is a destination ID whose route lists the
//!   children, and the node itself where it has members). A copy never goes back to the node a
//!   relayed packet came from (split horizon): a next hop one of whose locators is `from` is
//!   skipped — stricter than skipping only that locator, which would send the copy back to the
//!   same node through another of its locators.
//! - Every table is bounded by [`OverlayLimits`]; a refused change changes nothing.
//! - `forward` and `receive` take `&mut self` so that counters are plain `u64` additions; they
//!   clear and fill a caller-owned `Vec<Hop>` and allocate nothing once it has the capacity of
//!   the largest fan-out (`max_next_hops`).

mod error;
mod tables;

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use error::{OverlayDrop, OverlayError};
pub use tables::{pick, Arrival, OverlayCounters, OverlayTables};

/// The largest locator weight.
pub const MAX_WEIGHT: u16 = 1000;

/// A 32-bit overlay node ID. 0 is not a node.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// A node ID, or [`OverlayError::InvalidNode`] for 0.
    pub fn new(value: u32) -> Result<NodeId, OverlayError> {
        let id = NodeId(value);
        if id.is_valid() {
            Ok(id)
        } else {
            Err(OverlayError::InvalidNode(id))
        }
    }

    /// Whether the value can name a node (it is not 0).
    pub const fn is_valid(self) -> bool {
        self.0 != 0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What an overlay packet carries; the numbers are ovstack's, as in the header's Application
/// byte. Serialised and shown as `ethernet`, `ipv4`, `ipv6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum App {
    /// Ethernet frames (7).
    Ethernet,
    /// IPv4 packets (4).
    Ipv4,
    /// IPv6 packets (6).
    Ipv6,
}

impl App {
    /// Every application, in index order.
    pub const ALL: [App; 3] = [App::Ethernet, App::Ipv4, App::Ipv6];

    /// The application with this header number, if any.
    pub const fn from_number(n: u8) -> Option<App> {
        match n {
            7 => Some(App::Ethernet),
            4 => Some(App::Ipv4),
            6 => Some(App::Ipv6),
            _ => None,
        }
    }

    /// The header number.
    pub const fn number(self) -> u8 {
        match self {
            App::Ethernet => 7,
            App::Ipv4 => 4,
            App::Ipv6 => 6,
        }
    }

    /// The lowercase name.
    pub const fn name(self) -> &'static str {
        match self {
            App::Ethernet => "ethernet",
            App::Ipv4 => "ipv4",
            App::Ipv6 => "ipv6",
        }
    }

    /// The position of the application's RIB.
    pub(crate) const fn index(self) -> usize {
        match self {
            App::Ethernet => 0,
            App::Ipv4 => 1,
            App::Ipv6 => 2,
        }
    }
}

impl fmt::Display for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for App {
    type Err = OverlayError;

    /// A name (`ethernet`, `ipv4`, `ipv6`, any case) or a number (`7`, `4`, `6`), as an API path
    /// or a command line may give it.
    fn from_str(s: &str) -> Result<App, OverlayError> {
        let by_name = App::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s));
        by_name
            .or_else(|| s.parse().ok().and_then(App::from_number))
            .ok_or_else(|| OverlayError::UnknownApp(s.to_owned()))
    }
}

/// An underlay address a node is reached at, with its share of the node's flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Locator {
    /// A unicast IPv4 or IPv6 address.
    pub addr: IpAddr,
    /// `0..=MAX_WEIGHT`; 0 drains the locator (no flow picks it).
    pub weight: u16,
}

/// Where one copy of a packet goes from this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hop {
    /// To this node's own networks: the destination, or a member of the tree.
    Local,
    /// To this underlay address, as it is (a relay) or freshly encapsulated.
    Locator(IpAddr),
}

/// Bounds on the overlay tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverlayLimits {
    /// Nodes in the LIB.
    pub max_nodes: usize,
    /// Locators of one node.
    pub max_locators: usize,
    /// Routes in one application's RIB.
    pub max_routes: usize,
    /// Next hops of one route.
    pub max_next_hops: usize,
}

impl Default for OverlayLimits {
    fn default() -> OverlayLimits {
        OverlayLimits {
            max_nodes: 4096,
            max_locators: 8,
            max_routes: 16384,
            max_next_hops: 16,
        }
    }
}
