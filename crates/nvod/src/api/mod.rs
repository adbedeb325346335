//! The control API server: HTTP/1.1 + JSON on a unix socket, the router's handlers run on the
//! control thread's tokio runtime.
//!
//! - [`socket`]: the socket file, its mode (0660), group and directory checks.
//! - [`server`]: the accept loop and connections, with their bounds (a connection cap, header
//!   and idle timeouts, the body limit applied to the declared length); the metrics listener
//!   (crate::metrics) is served by it too.
//! - `routes`, `bgp`, `capture` (`GET /v1/capture`, a pcapng stream) and `profiles` (QoS and
//!   ACL profiles and their attachments): the paths; `error`: error answers and the body
//!   extractor.

mod bgp;
mod capture;
mod error;
mod flows;
mod meters;
pub mod policy;
mod profiles;
mod routes;
pub mod server;
mod socket;
mod vport;

use std::future::Future;
use std::path::Path;

pub use routes::router;
pub use socket::{bind, prepare_socket, SocketError};

use crate::config::ApiLimits;

/// The control state every handler shares; the mutex serialises changes.
pub type Shared = std::sync::Arc<tokio::sync::Mutex<crate::control::Control>>;

/// Serves the API until `shutdown` completes; `path` only names the socket in logs.
pub async fn serve(
    listener: tokio::net::UnixListener,
    path: &Path,
    limits: &ApiLimits,
    control: Shared,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let bounds = server::Bounds {
        name: "API",
        max_connections: limits.max_connections,
        header_timeout: limits.header_timeout,
        idle_timeout: limits.idle_timeout,
        idle_key: "api_idle_timeout_s",
        max_body: error::MAX_BODY,
    };
    // Captures stream until their bound: when nvod stops, they end first (with their
    // statistics), so the server's grace period is not spent waiting for them.
    let shutdown = async move {
        shutdown.await;
        capture::stop_all();
    };
    server::serve(listener, router(control), &bounds, shutdown).await;
    log::debug!("API on {} closed", path.display());
}
