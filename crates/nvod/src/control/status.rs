//! What the status page reads (`GET /status.json`): the node, counters, networks, their FDBs
//! (small ones only), overlay nodes and BGP sessions, through the commands the API's reads use.
//! Like a metrics scrape, it holds no lock the datapath takes.

use super::observe::Observed;
use super::{Control, Failure};
use crate::status::model::{Inputs, NetworkInput, MAX_FDB_LISTED, MAX_FDB_NETWORKS};

impl Control {
    /// Everything the status page shows of the control state, at this moment.
    pub async fn status_inputs(&self) -> Result<Inputs, Failure> {
        let node = self.node();
        let Observed {
            counters,
            views,
            bgp,
        } = self.observed().await?;
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
                profile: self.profile_of(v.vni.0),
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
        Ok(Inputs {
            node,
            overlay_locators,
            counters,
            networks,
            ports: self.port_networks(),
            overlay_nodes,
            bgp,
        })
    }
}
