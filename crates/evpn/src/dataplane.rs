//! What the speaker needs of the data path, as a trait nvod implements (with its datapath
//! commands), so that this crate knows nothing of the datapath thread.

use std::future::Future;

use nvo_pipeline::{EvpnApplied, EvpnChange, LocalHosts, Vni};

/// The data path as the speaker sees it: it reads the local hosts, switches ARP/ND suppression
/// and applies batches of EVPN changes. Each call may wait (the data path is another thread).
pub trait DataPlane: Send + Sync + 'static {
    /// The local hosts, if their set changed since generation `since` (0: always).
    fn local_hosts(
        &self,
        since: u64,
    ) -> impl Future<Output = Result<Option<LocalHosts>, DataPlaneError>> + Send;

    /// Switches ARP/ND suppression of a network.
    fn set_arp_suppression(
        &self,
        vni: Vni,
        on: bool,
    ) -> impl Future<Output = Result<(), DataPlaneError>> + Send;

    /// Applies a batch of EVPN changes, each on its own (docs/design/evpn.md).
    fn apply(
        &self,
        changes: Vec<EvpnChange>,
    ) -> impl Future<Output = Result<EvpnApplied, DataPlaneError>> + Send;
}

/// Why a data path call did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum DataPlaneError {
    /// The data path refused, or is gone or busy.
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// It answered something other than what the call asks for (a bug in nvod).
    #[error("the datapath answered {0}")]
    Unexpected(String),
}
