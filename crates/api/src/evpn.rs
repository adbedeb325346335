//! The BGP/EVPN part of the API (docs/design/evpn.md): nvod's BGP speaker, its neighbours and
//! the EVPN routes it holds.
//!
//! `PUT /v1/bgp` sets the whole BGP configuration (persisted; replaces the config file's `[bgp]`
//! from then on), `GET /v1/bgp` shows it with the state of every session, `DELETE /v1/bgp` stops
//! the speaker and withdraws what it installed. `GET /v1/evpn/routes` lists routes.

use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

/// `PUT /v1/bgp`: the speaker's configuration. Only `asn`, `router_id` and `neighbors` are
/// required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgpConfig {
    /// This node's AS number (4-octet, 1 to 4294967295).
    pub asn: u32,
    /// The BGP identifier, an IPv4 address unique among the speakers.
    pub router_id: Ipv4Addr,
    /// Accept connections from configured neighbours on `port` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<bool>,
    /// The local addresses BGP listens on (default: the node's locator only). `0.0.0.0` or
    /// `::` listens on every address, which the operator must ask for explicitly. A connection
    /// from an address that is no configured neighbour is closed at once and counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_addresses: Option<Vec<IpAddr>>,
    /// The TCP port to listen on and to connect to (default 179).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Hold time offered in OPEN, seconds: 0 (no keepalives) or 3 to 65535 (default 90).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_time_s: Option<u16>,
    /// Seconds between connection attempts to a neighbour that is down (default 5, 1 to 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_retry_s: Option<u16>,
    /// Graceful restart (RFC 4724) restart time, seconds, advertised to peers; 0 turns graceful
    /// restart off (default 120, at most 4095).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_restart_s: Option<u16>,
    /// The VTEP address advertised as next hop and in the PMSI tunnel attribute (default: the
    /// underlay's local address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_hop: Option<IpAddr>,
    /// MAC mobility duplicate detection (RFC 7432 §15.1): a MAC that moves this many times
    /// within `dup_window_s` is marked duplicate (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dup_moves: Option<u32>,
    /// The window of duplicate detection, seconds (default 180).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dup_window_s: Option<u32>,
    /// The peers.
    pub neighbors: Vec<NeighborSpec>,
    /// Per-network EVPN settings; a network not listed takes the defaults (advertised, RD
    /// router_id:vni, RT asn:vni, ARP/ND suppression on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vnis: Vec<EvpnVniSpec>,
}

/// One BGP neighbour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborSpec {
    /// The peer's address.
    pub address: IpAddr,
    /// The peer's AS (default: this node's, an iBGP peer such as a route reflector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asn: Option<u32>,
    /// Never connect; only accept the peer's connection (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passive: Option<bool>,
    /// The peer's port (default: the speaker's `port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// A free-form name shown in summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// TCP-MD5 signatures (RFC 2385) with this password, 1 to 80 bytes (FRR's `neighbor X
    /// password`, GoBGP's `auth-password`). Write-only: `GET /v1/bgp` never shows it, only
    /// `password_set`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<Password>,
    /// Shown by `GET /v1/bgp`: a password is in force. In a `PUT` without `password`, `true`
    /// keeps the password in force for this neighbour (so that what GET showed can be written
    /// back); `false` or absent means no password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_set: Option<bool>,
    /// GTSM (RFC 5082) for a directly connected neighbour: send with TTL 255 and drop what
    /// arrives with a TTL below 255 (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_security: Option<bool>,
}

/// A TCP-MD5 password. Its `Debug` form hides it, so that it reaches no log line; it is
/// serialised as the plain string (for the state file, which keeps it).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Password(pub String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<hidden>)")
    }
}

/// EVPN settings of one network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvpnVniSpec {
    /// The network.
    pub vni: u32,
    /// Advertise and import routes for it (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertise: Option<bool>,
    /// Route distinguisher, "ASN:N" or "IPv4:N" (default router_id:vni, vni ≤ 65535; else
    /// router_id:(vni & 0xffff)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rd: Option<String>,
    /// Route targets imported, "ASN:N" (default asn:vni).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_rt: Option<Vec<String>>,
    /// Route targets attached to advertised routes (default asn:vni).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_rt: Option<Vec<String>>,
    /// Answer ARP requests and neighbour solicitations for known addresses on the local port
    /// instead of flooding them (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arp_suppression: Option<bool>,
}

/// `GET /v1/bgp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpSummary {
    /// The configuration in force (defaults filled in), or none when BGP is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BgpConfig>,
    /// One per configured neighbour.
    pub neighbors: Vec<NeighborState>,
    /// EVPN routes in the table: local ones and received ones.
    pub routes_local: u64,
    /// Received routes (every peer's, before best-path selection).
    pub routes_received: u64,
    /// Routes installed into the data path (FDB entries, flood-list remotes, neighbour entries).
    pub routes_installed: u64,
    /// MACs now marked duplicate by mobility detection.
    pub duplicate_macs: u64,
    /// Received routes dropped because the table held its most routes (1048576).
    #[serde(default)]
    pub routes_dropped: u64,
    /// Changes the data path refused (a full table, a static entry holding the MAC or IP).
    #[serde(default)]
    pub routes_refused: u64,
    /// The addresses and port the speaker listens on (empty: it only connects).
    #[serde(default)]
    pub listening: Vec<std::net::SocketAddr>,
    /// Connections accepted from an address that is no configured neighbour, and closed at
    /// once.
    #[serde(default)]
    pub connections_refused: u64,
    /// Connections from a GTSM neighbour whose SYN arrived with a TTL below 255, closed at once.
    #[serde(default)]
    pub connections_ttl_refused: u64,
}

/// A session's state (RFC 4271 §8.2.2 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Not trying.
    Idle,
    /// Connecting.
    Connect,
    /// Waiting to connect again or for the peer to connect.
    Active,
    /// OPEN sent, waiting for the peer's.
    OpenSent,
    /// OPENs exchanged, waiting for a KEEPALIVE.
    OpenConfirm,
    /// Up.
    Established,
}

/// One neighbour as `GET /v1/bgp` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighborState {
    /// Address.
    pub address: IpAddr,
    /// Its AS.
    pub asn: u32,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The session state.
    pub state: SessionState,
    /// The peer's BGP identifier once an OPEN came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_id: Option<Ipv4Addr>,
    /// Seconds in the current state.
    pub state_s: u64,
    /// How many times the session reached Established.
    pub established: u64,
    /// Negotiated hold time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_time_s: Option<u16>,
    /// The peer's graceful restart time, if it advertised the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_restart_s: Option<u16>,
    /// Routes now held from the peer (stale ones included).
    pub received: u64,
    /// Of those, stale (kept for graceful restart, waiting for the peer's End-of-RIB).
    pub stale: u64,
    /// Routes sent to the peer now.
    pub sent: u64,
    /// Messages received, by type.
    pub messages_in: MessageCounts,
    /// Messages sent, by type.
    pub messages_out: MessageCounts,
    /// UPDATEs treated as withdraw (RFC 7606).
    pub treat_as_withdraw: u64,
    /// Path attributes discarded (RFC 7606).
    pub attributes_discarded: u64,
    /// Routes of types this speaker does not use (parsed and ignored).
    pub ignored_routes: u64,
    /// The last error: a NOTIFICATION sent or received, a connection failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// BGP messages counted by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MessageCounts {
    /// OPEN.
    pub open: u64,
    /// UPDATE.
    pub update: u64,
    /// NOTIFICATION.
    pub notification: u64,
    /// KEEPALIVE.
    pub keepalive: u64,
    /// ROUTE-REFRESH.
    pub route_refresh: u64,
}

/// `GET /v1/evpn/routes`: one route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvpnRoute {
    /// 2 (MAC/IP advertisement) or 3 (inclusive multicast Ethernet tag).
    #[serde(rename = "type")]
    pub route_type: u8,
    /// Route distinguisher.
    pub rd: String,
    /// The VNI (label / Ethernet tag).
    pub vni: u32,
    /// Type 2: the MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Type 2: the IP, when the route carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<IpAddr>,
    /// The VTEP: next hop (type 2) or the PMSI tunnel endpoint (type 3).
    pub vtep: IpAddr,
    /// "local" or the address of the peer it came from.
    pub source: String,
    /// MAC mobility sequence number (0 without the community).
    pub seq: u32,
    /// Sticky (static) MAC.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sticky: bool,
    /// Route targets.
    pub rt: Vec<String>,
    /// The best route for its key (the one installed or advertised).
    pub best: bool,
    /// Kept for a restarting peer (graceful restart).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// The MAC is marked duplicate (mobility): not advertised or installed again until cleared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
    /// Type 2: the endpoint's group (the Group Policy ID community; 0, left out: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub group: u16,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}
