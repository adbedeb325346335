//! Why a change to the overlay tables was refused, and why a received overlay packet went
//! nowhere.

use std::net::IpAddr;

use super::{App, NodeId};
use crate::DropReason;

/// A change to the overlay tables that was refused. A refused change changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlayError {
    /// Node ID 0, as a node, a destination or a next hop.
    #[error("node id {0} is not a node; use 1..=4294967295")]
    InvalidNode(NodeId),
    /// An application name or number that is none of ethernet (7), ipv4 (4), ipv6 (6).
    #[error("unknown application {0:?}; use ethernet (7), ipv4 (4) or ipv6 (6)")]
    UnknownApp(String),
    /// `set_locators` with an empty list.
    #[error("node {0} needs at least one locator; to remove the node, delete it")]
    NoLocators(NodeId),
    /// A locator address that is not unicast.
    #[error("locator {addr} of node {node} is not a unicast address")]
    InvalidLocator {
        /// The node.
        node: NodeId,
        /// The address.
        addr: IpAddr,
    },
    /// A weight above [`super::MAX_WEIGHT`].
    #[error("weight {weight} of locator {addr} of node {node} is out of range; use 0..=1000 (0 drains it)")]
    InvalidWeight {
        /// The node.
        node: NodeId,
        /// The locator.
        addr: IpAddr,
        /// The weight asked for.
        weight: u16,
    },
    /// The same address twice in one node's locators.
    #[error("locator {addr} is listed twice for node {node}")]
    DuplicateLocator {
        /// The node.
        node: NodeId,
        /// The address.
        addr: IpAddr,
    },
    /// More locators than `max_locators`.
    #[error("node {node} has {count} locators, more than the limit of {limit}")]
    TooManyLocators {
        /// The node.
        node: NodeId,
        /// How many were given.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// `set_route` with no next hop.
    #[error("the {app} route to {dst} needs at least one next hop; to remove it, delete it")]
    NoNextHops {
        /// The application.
        app: App,
        /// The destination.
        dst: NodeId,
    },
    /// More next hops than `max_next_hops`.
    #[error("the {app} route to {dst} has {count} next hops, more than the limit of {limit}")]
    TooManyNextHops {
        /// The application.
        app: App,
        /// The destination.
        dst: NodeId,
        /// How many were given.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// The same next hop twice in one route.
    #[error("next hop {hop} is listed twice in the {app} route to {dst}")]
    DuplicateNextHop {
        /// The application.
        app: App,
        /// The destination.
        dst: NodeId,
        /// The next hop.
        hop: NodeId,
    },
    /// A table at its limit.
    #[error(
        "the overlay {table} table is full ({limit} entries); remove entries or raise the limit"
    )]
    TableFull {
        /// Which table: "node", "route".
        table: &'static str,
        /// Its limit.
        limit: usize,
    },
    /// `remove_node` for a node the LIB does not hold.
    #[error("no overlay node {0}")]
    NoSuchNode(NodeId),
    /// `remove_route` for a route the RIB does not hold.
    #[error("no {app} route to node {dst}")]
    NoSuchRoute {
        /// The application.
        app: App,
        /// The destination.
        dst: NodeId,
    },
}

/// Why a received overlay packet goes nowhere (already counted in the overlay counters; the
/// datapath counts the drop once more by [`OverlayDrop::reason`] through the pipeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OverlayDrop {
    /// Shorter than the header, another version, an unknown application or node ID 0.
    #[error("malformed overlay header")]
    Malformed,
    /// It had to be relayed but its TTL ran out, and it has no local copy.
    #[error("overlay ttl {ttl} ran out")]
    TtlExpired {
        /// The TTL it arrived with.
        ttl: u8,
    },
    /// No next hop had a usable locator (or the only one was where it came from).
    #[error("no overlay route to node {0}")]
    NoRoute(NodeId),
}

impl OverlayDrop {
    /// The pipeline's drop reason for it.
    pub const fn reason(self) -> DropReason {
        match self {
            OverlayDrop::Malformed => DropReason::MalformedTunnel,
            OverlayDrop::TtlExpired { .. } => DropReason::HopLimit,
            OverlayDrop::NoRoute(_) => DropReason::NoDestination,
        }
    }
}
