//! nvod's EVPN control plane (docs/design/evpn.md): a BGP speaker that advertises this node's
//! hosts and networks and installs what its peers advertise.
//!
//! ```text
//!  API (Control) ──Request──► speaker task ◄──(peer, SessionEvent)── nvo_bgp session tasks
//!                              │    ▲                                  ▲ accepted streams
//!                              │    └─ DataPlane::local_hosts (poll)   │
//!                              ▼                        listener tasks (listen_addresses:179)
//!                   DataPlane::apply (batched) ──► nvod ──► datapath thread
//! ```
//!
//! The speaker is one tokio task owning the [`rib::Rib`]; it changes the data path only through
//! the [`DataPlane`] nvod hands it (nvod's datapath commands, like the rest of the control
//! layer), and never takes the control lock, so the API can wait on it.

mod advert;
mod dataplane;
mod listener;
mod persist;
mod rib;
#[cfg(test)]
mod rib_tests;
mod settings;
mod speaker;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;

use nvo_api as api;
use tokio::sync::{mpsc, oneshot, watch};

pub use dataplane::{DataPlane, DataPlaneError};
pub use settings::{keep_passwords, ConfigError, ValueError, VniError};

/// What the control layer asks of the speaker.
#[derive(Debug)]
pub enum Request {
    /// New configuration (None: BGP off). Answers the summary or why the config is refused.
    Configure(
        Option<api::BgpConfig>,
        oneshot::Sender<Result<api::BgpSummary, ConfigError>>,
    ),
    /// `GET /v1/bgp`.
    Summary(oneshot::Sender<api::BgpSummary>),
    /// `GET /v1/evpn/routes`.
    Routes {
        /// Only this network.
        vni: Option<u32>,
        /// Only this route type.
        route_type: Option<u8>,
        /// The answer.
        reply: oneshot::Sender<Vec<api::EvpnRoute>>,
    },
    /// nvod stops: save, and end the sessions (without NOTIFICATION when graceful restart is
    /// on, so that peers keep the routes).
    Shutdown(oneshot::Sender<()>),
}

/// The control layer's handle on the speaker.
#[derive(Debug, Clone)]
pub struct Handle {
    tx: mpsc::Sender<Request>,
}

impl Handle {
    /// Sends a request and waits for the answer; None when the speaker has stopped.
    pub async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).await.ok()?;
        rx.await.ok()
    }
}

/// Checks a configuration without applying it (the API refuses before persisting).
pub fn check(config: &api::BgpConfig, locator: IpAddr) -> Result<(), ConfigError> {
    settings::Settings::resolve(config, locator).map(|_| ())
}

/// The networks the speaker serves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Networks {
    /// Every network it serves (VXLAN and ILA ones), each with the flood list the operator set
    /// (EVPN leaves those entries alone).
    pub flood: std::collections::BTreeMap<u32, BTreeSet<IpAddr>>,
    /// The ILA networks among them, each with this host's ILA locator (a /64, host bits
    /// zero): their type 2 routes' next hop is an address of that /64 (so a receiver takes
    /// the locator from its upper 64 bits; docs/ila.md, "Mappings"), and they have no type 3
    /// routes (ILA floods nothing).
    pub ila: std::collections::BTreeMap<u32, std::net::Ipv6Addr>,
}

/// Starts the speaker with the configuration it had (`initial`); `networks` carries the
/// networks it serves.
pub fn spawn(
    datapath: impl DataPlane,
    state_dir: &Path,
    locator: IpAddr,
    networks: watch::Receiver<Networks>,
    initial: Option<api::BgpConfig>,
) -> Handle {
    let (tx, rx) = mpsc::channel(64);
    let speaker = speaker::Speaker::new(datapath, state_dir, locator, networks);
    tokio::spawn(speaker.run(rx, initial));
    Handle { tx }
}
