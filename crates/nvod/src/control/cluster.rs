//! Cluster mode's side of the control (issue 19): what the reconciler (crate::cluster) needs
//! to plan — the desired networks resolved by nvod's own checks, the cluster-owned networks
//! as applied, the local ones it must not touch — and the one change it makes that the API
//! cannot: creating a network marked as cluster-owned. Everything else it applies through
//! the API's own methods (delete_network, flood_add, flood_delete).

use std::collections::{BTreeMap, BTreeSet};

use nvo_api as api;
use nvo_cluster::{Applied, Desired, HostRecord};

use super::{Control, Failure};
use crate::convert;
use crate::state::{evpn_serves, BumState, NetworkState};

/// What one reconciliation works from, taken under one lock of the control.
#[derive(Debug, Default)]
pub struct Plan {
    /// The desired networks as written (flood lists extended with the other hosts).
    pub specs: BTreeMap<u32, api::NetworkSpec>,
    /// The same, resolved by nvod's checks, for the diff.
    pub desired: BTreeMap<u32, Desired<NetworkState>>,
    /// Objects nvod's checks refuse: VNI and why.
    pub refused: Vec<(u32, String)>,
    /// The cluster-owned networks now.
    pub applied: BTreeMap<u32, Applied<NetworkState>>,
    /// The networks made through the local API.
    pub local: BTreeSet<u32>,
}

/// A network without what the diff does not compare: its flood list (compared on its own),
/// and what the operator may add locally to a cluster network (static entries, routes).
fn comparable(net: &NetworkState) -> NetworkState {
    NetworkState {
        flood: Vec::new(),
        fdb: BTreeMap::new(),
        fdb_ips: BTreeMap::new(),
        routes: BTreeMap::new(),
        cluster: false,
        ..net.clone()
    }
}

impl Control {
    /// Gives `GET /v1/cluster`, `/v1/node` and the metrics cluster mode's view (set once).
    pub fn set_cluster(&mut self, handle: crate::cluster::Handle) {
        self.cluster = Some(handle);
    }

    /// Plans convergence to `objects` (valid network objects by VNI) with `hosts` registered.
    pub fn cluster_plan(
        &self,
        objects: &BTreeMap<u32, api::NetworkSpec>,
        hosts: &BTreeMap<String, HostRecord>,
        own_name: &str,
    ) -> Plan {
        let mut plan = Plan::default();
        let bgp = self.evpn_serves();
        let resolve = |spec: &api::NetworkSpec| {
            convert::network_state(spec, &self.config, &self.profiles, bgp)
                .map_err(|e| Failure::from(e).message)
        };
        let mut valid = BTreeMap::new();
        let mut head_end = BTreeSet::new();
        for (&vni, spec) in objects {
            match resolve(spec) {
                Ok(net) => {
                    let evpn = bgp && evpn_serves(&net.encap, net.l3);
                    if net.bum == BumState::HeadEnd && !evpn {
                        head_end.insert(vni);
                    }
                    valid.insert(vni, spec.clone());
                }
                Err(why) => plan.refused.push((vni, why)),
            }
        }
        let specs = nvo_cluster::desired(&valid, hosts, own_name, self.config.locator, |s| {
            head_end.contains(&s.vni)
        });
        for (vni, spec) in specs {
            match resolve(&spec) {
                Ok(net) => {
                    let flood = net.flood.clone();
                    plan.desired.insert(
                        vni,
                        Desired {
                            body: comparable(&net),
                            flood,
                        },
                    );
                    plan.specs.insert(vni, spec);
                }
                Err(why) => plan.refused.push((vni, why)),
            }
        }
        for (&vni, net) in &self.state.networks {
            if net.cluster {
                plan.applied.insert(
                    vni,
                    Applied {
                        body: comparable(net),
                        flood: net.flood.clone(),
                        ports: self.state.ports_of(vni),
                    },
                );
            } else {
                plan.local.insert(vni);
            }
        }
        plan
    }

    /// Creates a cluster-owned network (`POST /v1/networks`, marked in the state).
    pub async fn cluster_create(&mut self, spec: api::NetworkSpec) -> Result<(), Failure> {
        self.create_network_owned(spec, true).await.map(|_| ())
    }

    /// The VNIs of the cluster-owned networks.
    pub fn cluster_networks(&self) -> Vec<u32> {
        self.state
            .networks
            .iter()
            .filter(|(_, n)| n.cluster)
            .map(|(&vni, _)| vni)
            .collect()
    }

    /// `GET /v1/cluster`.
    pub fn cluster_status(&self) -> api::ClusterStatus {
        match &self.cluster {
            None => api::ClusterStatus::default(),
            Some(handle) => handle.status(self.cluster_networks()),
        }
    }
}
