//! nvo's observability (ARCHITECTURE.md, "observability"): what nvod shows of itself to
//! monitoring systems.
//!
//! - [`text`]: a writer of the Prometheus text exposition format 0.0.4 — names checked, label
//!   values and HELP escaped, one HELP and TYPE per family, each family's samples together.
//! - [`families`]: nvod's metric families (docs/metrics.md lists them), rendered from a
//!   [`Snapshot`] that nvod fills through the same commands its API answers `GET /v1/counters`,
//!   `GET /v1/networks` and `GET /v1/bgp` with. Nothing here touches a table or a socket.
//! - [`monitor`]: the fan-out of `nvo monitor`'s events to `GET /v1/monitor`'s listeners, each
//!   with its own bounded queue and filter; [`decode`]: the one-line decode of a packet those
//!   events show.

pub mod decode;
pub mod families;
pub mod monitor;
pub mod text;

pub use families::{render, ClusterMetrics, NetworkTables, Policer, Snapshot, Table};
pub use text::{Exposition, Kind, TextError, CONTENT_TYPE};
