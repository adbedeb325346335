//! What the status page reads (`GET /status.json`): the node, counters, networks, their FDBs
//! (small ones only), overlay nodes and BGP sessions, through the commands the API's reads use.
//! Like a metrics scrape, it holds no lock the datapath takes.

use std::time::Duration;

use nvo_datapath::{Command, Reply};

use super::{unexpected, Control, Failure};
use crate::status::model::{Inputs, NetworkInput, MAX_FDB_LISTED, MAX_FDB_NETWORKS};

/// How long a poll waits for the EVPN speaker's summary.
const BGP_TIMEOUT: Duration = Duration::from_secs(1);

impl Control {
    /// Everything the status page shows of the control state, at this moment.
    pub async fn status_inputs(&self) -> Result<Inputs, Failure> {
        let node = self.node();
        let counters = self.counters().await?;
        let views = match self.query(Command::Networks).await? {
            Reply::Networks(views) => views,
            other => return Err(unexpected(other)),
        };
        let mut networks = Vec::with_capacity(views.len());
        let (mut budget, mut lists) = (MAX_FDB_LISTED, MAX_FDB_NETWORKS);
        for v in views {
            let total = v.learned + v.static_entries + v.evpn_fdb;
            // A network removed between the two reads has no FDB to list: none is shown.
            let fdb = if total <= budget && lists > 0 {
                budget -= total;
                lists -= 1;
                self.fdb(&v.vni.0.to_string()).await.ok()
            } else {
                None
            };
            networks.push(NetworkInput {
                vni: v.vni.0,
                profile: self
                    .state
                    .networks
                    .get(&v.vni.0)
                    .map(|n| n.encap.clone())
                    .unwrap_or_default(),
                flood: v.flood,
                learned: v.learned,
                static_entries: v.static_entries,
                evpn: v.evpn_fdb,
                fdb,
            });
        }
        let own = self.state.overlay.own.unwrap_or(self.config.node_id);
        let overlay_nodes = self
            .state
            .overlay
            .nodes
            .iter()
            .map(|(&id, locators)| (id, locators.iter().map(|l| l.addr).collect()))
            .collect();
        let overlay_locators = self
            .state
            .overlay
            .nodes
            .get(&own)
            .map(|ls| ls.iter().map(|l| l.addr).collect())
            .unwrap_or_default();
        let bgp = match &self.evpn {
            Some(_) => tokio::time::timeout(BGP_TIMEOUT, self.bgp_summary())
                .await
                .ok()
                .and_then(Result::ok)
                .filter(|s| s.config.is_some()),
            None => None,
        };
        Ok(Inputs {
            node,
            overlay_locators,
            counters,
            networks,
            ports: self
                .state
                .ports
                .iter()
                .map(|(name, port)| (name.clone(), port.vni))
                .collect(),
            overlay_nodes,
            bgp,
        })
    }
}
