//! Cluster mode's side of the control (issue 19): what the reconciler (crate::cluster) needs
//! to plan — the desired networks resolved by nvod's own checks, the cluster-owned networks
//! and profiles as applied, the local ones it must not touch — and the changes it makes that
//! the API cannot: creating a network or a profile marked as cluster-owned, and replacing a
//! profile in one step. Everything else it applies through the API's own methods
//! (delete_network, flood_add, flood_delete, delete_profile).

use std::collections::{BTreeMap, BTreeSet};

use nvo_api as api;
use nvo_api::ProfileSpec;
use nvo_cluster::{Applied, Desired, HostRecord, KeyedOp, Phase, ProfileOp};

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

/// One overlay operation: on a node (by ID) or a route (by application and destination).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayOp {
    /// A node's locators.
    Node(KeyedOp<u32, api::NodeLocators>),
    /// A route's next hops.
    Route(KeyedOp<(String, u32), api::RouteNextHops>),
}

impl OverlayOp {
    /// The object's key under `layout`.
    pub fn key(&self, layout: &nvo_cluster::Layout) -> String {
        match self {
            OverlayOp::Node(KeyedOp::Set(id, _) | KeyedOp::Delete(id) | KeyedOp::Skip(id, _)) => {
                layout.overlay_node(*id)
            }
            OverlayOp::Route(
                KeyedOp::Set((app, dst), _)
                | KeyedOp::Delete((app, dst))
                | KeyedOp::Skip((app, dst), _),
            ) => layout.overlay_route(app, *dst),
        }
    }
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

    /// Plans the profile operations of `phase` towards `objects` (valid profile objects by
    /// name). Specs are compared in their normal form (`spec → profile → spec`), so a
    /// difference in hex spacing is no change.
    pub fn cluster_profile_plan(
        &self,
        objects: &BTreeMap<String, ProfileSpec>,
        phase: Phase,
    ) -> Vec<ProfileOp<ProfileSpec>> {
        let desired: BTreeMap<String, ProfileSpec> = objects
            .iter()
            .map(|(name, spec)| (name.clone(), normal(spec)))
            .collect();
        let applied: BTreeMap<String, ProfileSpec> = self
            .state
            .profiles
            .iter()
            .filter(|(name, _)| self.state.cluster_profiles.contains(*name))
            .map(|(name, spec)| (name.clone(), normal(spec)))
            .collect();
        let local: BTreeSet<String> = self
            .profiles
            .profiles()
            .map(|(_, p)| p.name.clone())
            .filter(|name| !applied.contains_key(name))
            .collect();
        let mut users: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (&vni, net) in &self.state.networks {
            users.entry(net.encap.clone()).or_default().push(vni);
        }
        nvo_cluster::profile_diff(&desired, &applied, &local, &users, phase)
    }

    /// Adds a cluster-owned profile (`POST /v1/profiles`, marked in the state).
    pub async fn cluster_add_profile(&mut self, spec: ProfileSpec) -> Result<(), Failure> {
        self.add_profile_owned(spec, true).await.map(|_| ())
    }

    /// Replaces a cluster-owned profile no network uses: deleted, then added as `spec`; when
    /// the new one is refused, the old one is put back, so the profile is never half changed.
    pub async fn cluster_replace_profile(&mut self, spec: ProfileSpec) -> Result<(), Failure> {
        let Some(old) = self.state.profiles.get(&spec.name).cloned() else {
            return self.cluster_add_profile(spec).await;
        };
        self.delete_profile(&spec.name).await?;
        if let Err(e) = self.add_profile_owned(spec, true).await {
            if let Err(back) = self.add_profile_owned(old.clone(), true).await {
                log::error!(
                    "cluster: profile {} could not be put back after a refused change: {}",
                    old.name,
                    back.message
                );
            }
            return Err(e);
        }
        Ok(())
    }

    /// Plans the overlay's operations towards `nodes` and `routes` (valid objects): node
    /// sets, route sets, route deletions, node deletions, then skips (entries made through
    /// the local API).
    pub fn cluster_overlay_plan(
        &self,
        nodes: &BTreeMap<u32, api::NodeLocators>,
        routes: &BTreeMap<(String, u32), api::RouteNextHops>,
    ) -> Vec<OverlayOp> {
        let overlay = &self.state.overlay;
        let mut applied_nodes = BTreeMap::new();
        let mut local_nodes = BTreeSet::new();
        for (&id, locators) in &overlay.nodes {
            if overlay.cluster_nodes.contains(&id) {
                let locators = locators.clone();
                applied_nodes.insert(id, api::NodeLocators { locators });
            } else {
                local_nodes.insert(id);
            }
        }
        let mut applied_routes = BTreeMap::new();
        let mut local_routes = BTreeSet::new();
        for (app, table) in &overlay.routes {
            for (&dst, hops) in table {
                let key = (app.clone(), dst);
                if overlay
                    .cluster_routes
                    .get(app)
                    .is_some_and(|m| m.contains(&dst))
                {
                    let next_hops = hops.clone();
                    applied_routes.insert(key, api::RouteNextHops { next_hops });
                } else {
                    local_routes.insert(key);
                }
            }
        }
        let node_ops = nvo_cluster::keyed_diff(nodes, &applied_nodes, &local_nodes, |id| {
            format!("overlay node {id}")
        });
        let route_ops =
            nvo_cluster::keyed_diff(routes, &applied_routes, &local_routes, |(app, dst)| {
                format!("overlay route {app} {dst}")
            });
        let (mut sets, mut deletes, mut skips) = (Vec::new(), Vec::new(), Vec::new());
        for op in node_ops.into_iter().map(OverlayOp::Node) {
            match &op {
                OverlayOp::Node(KeyedOp::Set(..)) => sets.push(op),
                OverlayOp::Node(KeyedOp::Delete(_)) => deletes.push(op),
                _ => skips.push(op),
            }
        }
        for op in route_ops.into_iter().map(OverlayOp::Route) {
            match &op {
                OverlayOp::Route(KeyedOp::Set(..)) => sets.push(op),
                // Routes go before the nodes they lead to.
                OverlayOp::Route(KeyedOp::Delete(_)) => deletes.insert(0, op),
                _ => skips.push(op),
            }
        }
        sets.into_iter().chain(deletes).chain(skips).collect()
    }

    /// Applies one overlay operation (`PUT`/`DELETE /v1/overlay/...`, marked as the
    /// cluster's); a skip answers its reason.
    pub async fn cluster_overlay_apply(&mut self, op: OverlayOp) -> Result<(), Failure> {
        match op {
            OverlayOp::Node(KeyedOp::Set(id, locators)) => self
                .set_overlay_node_owned(&id.to_string(), locators, true)
                .await
                .map(|_| ()),
            OverlayOp::Node(KeyedOp::Delete(id)) => self.delete_overlay_node(&id.to_string()).await,
            OverlayOp::Route(KeyedOp::Set((app, dst), hops)) => self
                .set_overlay_route_owned(&app, &dst.to_string(), hops, true)
                .await
                .map(|_| ()),
            OverlayOp::Route(KeyedOp::Delete((app, dst))) => {
                self.delete_overlay_route(&app, &dst.to_string()).await
            }
            OverlayOp::Node(KeyedOp::Skip(_, why)) | OverlayOp::Route(KeyedOp::Skip(_, why)) => {
                Err(Failure::bad(why))
            }
        }
    }

    /// The cluster-owned overlay nodes and routes ("ipv4 9").
    fn cluster_overlay(&self) -> (Vec<u32>, Vec<String>) {
        let overlay = &self.state.overlay;
        let routes = overlay
            .cluster_routes
            .iter()
            .flat_map(|(app, dsts)| dsts.iter().map(move |d| format!("{app} {d}")))
            .collect();
        (overlay.cluster_nodes.iter().copied().collect(), routes)
    }

    /// The names of the cluster-owned profiles.
    pub fn cluster_profiles(&self) -> Vec<String> {
        self.state.cluster_profiles.iter().cloned().collect()
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
            Some(handle) => {
                let mut status = handle.status(self.cluster_networks(), self.cluster_profiles());
                (status.overlay_nodes, status.overlay_routes) = self.cluster_overlay();
                status
            }
        }
    }
}

/// A spec in its normal form (hex spacing, defaults), so equal profiles compare equal; a spec
/// that makes no profile (none is stored or parsed as valid) stays as it is.
fn normal(spec: &ProfileSpec) -> ProfileSpec {
    spec.to_profile()
        .map(|p| ProfileSpec::from(&p))
        .unwrap_or_else(|_| spec.clone())
}
