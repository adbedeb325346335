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

/// The VXLAN networks that exist, each with the flood list the operator set (EVPN leaves those
/// entries alone).
pub type Networks = std::collections::BTreeMap<u32, BTreeSet<IpAddr>>;

/// Starts the speaker with the configuration it had (`initial`); `networks` carries the VXLAN
/// networks that exist.
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
