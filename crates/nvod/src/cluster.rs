//! Cluster mode (issue 19): nvod converges its networks to the objects in etcd.
//!
//! ```text
//!  nvo_cluster::session::run ─► snapshots (whole maps, watch channel) ─► reconcile task
//!        │  link (connected, last error, resyncs) ─► Handle (GET /v1/cluster, /v1/node, metrics)
//!        ▼                                                    │ per operation: control lock
//!      etcd                                     Control::create/delete_network, flood_add/delete
//! ```
//!
//! The reconcile task parses every object of a snapshot (invalid ones are skipped, listed and
//! counted), plans under one short lock of the control, diffs (nvo_cluster::diff: only
//! differences) and applies each operation under its own lock through the API's methods, so
//! the state journal and the datapath see ordinary changes and the API is never held for
//! long. Profiles go around the networks (nvo_cluster::profiles): new and changed unused
//! profiles before the networks are planned, so a network naming a new profile is created in
//! the same pass; deletions (and changes the deleted networks freed) after them. Overlay
//! nodes and routes are set and deleted in place first (a PUT replaces). Losing etcd changes
//! nothing here: the last applied state stays. While something is skipped, the plan is tried
//! again every few seconds (a profile added locally, a port detached).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nvo_api as api;
use nvo_cluster::session::{self, Outputs};
use nvo_cluster::{HostRecord, Key, Link, Op, Phase, ProfileOp, Settings, Snapshot};
use tokio::sync::watch;

use crate::api::Shared;
use crate::config::{ClusterSettings, Config};

/// How often a plan with skipped objects is tried again without a change in etcd.
const RETRY: Duration = Duration::from_secs(3);

/// What the reconciler last did.
#[derive(Debug, Default, Clone)]
struct View {
    revision: i64,
    hosts: Vec<HostRecord>,
    skipped: Vec<api::ClusterSkipped>,
    invalid_total: u64,
}

/// Cluster mode's view, for the API and the metrics.
#[derive(Debug, Clone)]
pub struct Handle {
    settings: ClusterSettings,
    link: watch::Receiver<Link>,
    view: Arc<Mutex<View>>,
}

impl Handle {
    fn view(&self) -> View {
        self.view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `cluster` of `GET /v1/node`.
    pub fn node(&self) -> api::NodeCluster {
        api::NodeCluster {
            connected: self.link.borrow().connected,
            revision: self.view().revision,
        }
    }

    /// `GET /v1/cluster`, with the cluster-owned networks and profiles.
    pub fn status(&self, networks: Vec<u32>, profiles: Vec<String>) -> api::ClusterStatus {
        let link = self.link.borrow().clone();
        let view = self.view();
        api::ClusterStatus {
            enabled: true,
            endpoints: self.settings.access.endpoints.clone(),
            prefix: self.settings.layout.prefix().to_owned(),
            name: self.settings.name.clone(),
            connected: link.connected,
            revision: view.revision,
            last_error: link.last_error,
            networks,
            profiles,
            overlay_nodes: Vec::new(),
            overlay_routes: Vec::new(),
            hosts: view
                .hosts
                .iter()
                .map(|h| api::ClusterHost {
                    name: h.name.clone(),
                    locator: h.locator,
                    node_id: h.node_id,
                })
                .collect(),
            skipped: view.skipped,
        }
    }

    /// The `nvo_cluster_*` metrics.
    pub fn metrics(&self) -> nvo_observe::ClusterMetrics {
        let link = self.link.borrow().clone();
        let view = self.view();
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        nvo_observe::ClusterMetrics {
            connected: link.connected,
            revision: u64::try_from(view.revision).unwrap_or(0),
            skipped: count(view.skipped.len()),
            invalid_total: view.invalid_total,
            resyncs_total: link.resyncs,
            hosts: count(view.hosts.len()),
        }
    }
}

/// Ends the session at shutdown: its lease is revoked, so this host leaves the others' flood
/// lists at once.
#[derive(Debug)]
pub struct Stopper {
    stop: watch::Sender<bool>,
    session: tokio::task::JoinHandle<()>,
}

impl Stopper {
    /// Stops the session, waiting at most 2 s for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.session).await;
    }
}

/// Starts the session and the reconcile task; the handle goes to the control.
pub fn start(settings: &ClusterSettings, config: &Config, control: Shared) -> (Handle, Stopper) {
    let (snapshots, snapshot_rx) = watch::channel(Arc::new(Snapshot::default()));
    let (link, link_rx) = watch::channel(Link::default());
    let session_settings = Settings {
        access: settings.access.clone(),
        layout: settings.layout.clone(),
        host: HostRecord {
            name: settings.name.clone(),
            locator: config.locator,
            node_id: config.node_id,
        },
        lease_ttl_s: settings.lease_ttl_s,
    };
    log::info!(
        "cluster mode: etcd {}, prefix {}, host {} (lease ttl {} s)",
        settings.access.endpoints.join(","),
        settings.layout.prefix(),
        settings.name,
        settings.lease_ttl_s
    );
    let (stop, stop_rx) = watch::channel(false);
    let outputs = Outputs {
        snapshots,
        link,
        stop: stop_rx,
    };
    let session = tokio::spawn(session::run(session_settings, outputs));
    let handle = Handle {
        settings: settings.clone(),
        link: link_rx,
        view: Arc::new(Mutex::new(View::default())),
    };
    tokio::spawn(reconcile_loop(handle.clone(), snapshot_rx, control));
    (handle, Stopper { stop, session })
}

async fn reconcile_loop(
    handle: Handle,
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    control: Shared,
) {
    let mut seen = BTreeSet::new();
    let mut retry = false;
    loop {
        if retry {
            // A timeout is the retry; a closed channel, the end.
            if let Ok(Err(_)) = tokio::time::timeout(RETRY, snapshots.changed()).await {
                return;
            }
        } else if snapshots.changed().await.is_err() {
            return;
        }
        let snapshot = snapshots.borrow_and_update().clone();
        if snapshot.revision == 0 {
            continue;
        }
        retry = reconcile(&handle, &snapshot, &control, &mut seen).await;
    }
}

/// One pass; answers whether something was skipped (then it is tried again later).
/// `seen` holds the (key, reason) pairs already counted as invalid.
async fn reconcile(
    handle: &Handle,
    snapshot: &Snapshot,
    control: &Shared,
    seen: &mut BTreeSet<(String, String)>,
) -> bool {
    let layout = &handle.settings.layout;
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    let Objects {
        networks: objects,
        profiles,
        overlay_nodes,
        overlay_routes,
        hosts,
    } = parse(layout, snapshot, &mut skipped);
    // The overlay's nodes and routes: independent of the rest, set in place.
    let ops = control
        .lock()
        .await
        .cluster_overlay_plan(&overlay_nodes, &overlay_routes);
    for op in ops {
        let key = op.key(layout);
        if let Err(e) = control.lock().await.cluster_overlay_apply(op).await {
            // Logged once below as skipped; retries would repeat it every few seconds.
            log::debug!("cluster: {key}: {}", e.message);
            skipped.insert(key, e.message);
        }
    }
    // Profiles first: the networks' plan sees the profiles made in this pass.
    let ops = control
        .lock()
        .await
        .cluster_profile_plan(&profiles, Phase::BeforeNetworks);
    apply_profiles(control, layout, ops, &mut skipped).await;
    let plan = control
        .lock()
        .await
        .cluster_plan(&objects, &hosts, &handle.settings.name);
    for (vni, why) in &plan.refused {
        let why = match objects.get(vni).and_then(|s| s.encap.as_deref()) {
            Some(encap) if skipped.contains_key(&layout.profile(encap)) => format!(
                "{why} (its profile is the cluster object {}, which is skipped)",
                layout.profile(encap)
            ),
            _ => why.clone(),
        };
        skipped.insert(layout.network(*vni), why);
    }
    let ops = nvo_cluster::diff(&plan.desired, &plan.applied, &plan.local);
    for op in ops {
        if let Err((vni, why)) = apply(control, &plan.specs, op).await {
            log::warn!("cluster: network {vni}: {why}");
            skipped.insert(layout.network(vni), why);
        }
    }
    // Then what the networks' changes may have freed: deletions and blocked changes.
    let ops = control
        .lock()
        .await
        .cluster_profile_plan(&profiles, Phase::AfterNetworks);
    apply_profiles(control, layout, ops, &mut skipped).await;
    let now: BTreeSet<(String, String)> = skipped.clone().into_iter().collect();
    let new = now.difference(seen).count();
    for (key, why) in now.difference(seen) {
        log::warn!("cluster: {key} skipped: {why}");
    }
    // A pair that went away and comes back counts again.
    *seen = now;
    let mut view = handle.view.lock().unwrap_or_else(PoisonError::into_inner);
    view.revision = snapshot.revision;
    view.hosts = hosts.into_values().collect();
    view.invalid_total += u64::try_from(new).unwrap_or(u64::MAX);
    view.skipped = skipped
        .into_iter()
        .map(|(key, error)| api::ClusterSkipped { key, error })
        .collect();
    !view.skipped.is_empty()
}

/// The objects of one snapshot, parsed; the invalid ones are in `skipped` with why.
struct Objects {
    networks: BTreeMap<u32, api::NetworkSpec>,
    profiles: BTreeMap<String, api::ProfileSpec>,
    overlay_nodes: BTreeMap<u32, api::NodeLocators>,
    overlay_routes: BTreeMap<(String, u32), api::RouteNextHops>,
    hosts: BTreeMap<String, HostRecord>,
}

fn parse(
    layout: &nvo_cluster::Layout,
    snapshot: &Snapshot,
    skipped: &mut BTreeMap<String, String>,
) -> Objects {
    let mut objects = BTreeMap::new();
    let mut profiles = BTreeMap::new();
    let mut overlay_nodes = BTreeMap::new();
    let mut overlay_routes = BTreeMap::new();
    let mut hosts = BTreeMap::new();
    for (key, bytes) in &snapshot.objects {
        match layout.classify(key) {
            Key::Profile(name) => match nvo_cluster::parse_profile(&name, bytes) {
                Ok(spec) => {
                    profiles.insert(name, spec);
                }
                Err(e) => {
                    skipped.insert(key.clone(), e.to_string());
                }
            },
            Key::OverlayNode(id) => match nvo_cluster::overlay::parse_node(id, bytes) {
                Ok(node) => {
                    overlay_nodes.insert(id, node);
                }
                Err(e) => {
                    skipped.insert(key.clone(), e.to_string());
                }
            },
            Key::OverlayRoute(app, dst) => {
                match nvo_cluster::overlay::parse_route(&app, dst, bytes) {
                    Ok(hops) => {
                        overlay_routes.insert((app, dst), hops);
                    }
                    Err(e) => {
                        skipped.insert(key.clone(), e.to_string());
                    }
                }
            }
            Key::BadOverlay(rest) => {
                let why = format!(
                    "key {rest:?} is neither overlay/nodes/ID nor overlay/routes/APP/DST (APP \
                     ethernet, ipv4 or ipv6; ID and DST decimal, 1 or more)"
                );
                skipped.insert(key.clone(), why);
            }
            Key::BadProfile(segment) => {
                let e = nvo_cluster::ObjectError::BadProfileKey(segment);
                skipped.insert(key.clone(), e.to_string());
            }
            Key::Network(vni) => match nvo_cluster::parse_network(vni, bytes) {
                Ok(spec) => {
                    objects.insert(vni, spec);
                }
                Err(e) => {
                    skipped.insert(key.clone(), e.to_string());
                }
            },
            Key::BadNetwork(segment) => {
                let e = nvo_cluster::ObjectError::BadKey(segment);
                skipped.insert(key.clone(), e.to_string());
            }
            Key::Host(name) => match nvo_cluster::parse_host(&name, bytes) {
                Ok(host) => {
                    hosts.insert(name, host);
                }
                Err(e) => {
                    skipped.insert(key.clone(), e.to_string());
                }
            },
            Key::Other => {}
        }
    }
    Objects {
        networks: objects,
        profiles,
        overlay_nodes,
        overlay_routes,
        hosts,
    }
}

/// Applies profile operations, each under its own lock of the control; what fails or is
/// skipped goes into `skipped` under the profile's key.
async fn apply_profiles(
    control: &Shared,
    layout: &nvo_cluster::Layout,
    ops: Vec<ProfileOp<api::ProfileSpec>>,
    skipped: &mut BTreeMap<String, String>,
) {
    for op in ops {
        let (name, result) = match op {
            ProfileOp::Create { name, spec } => {
                let r = control.lock().await.cluster_add_profile(spec).await;
                (name, r.map_err(|e| e.message))
            }
            ProfileOp::Replace { name, spec } => {
                let r = control.lock().await.cluster_replace_profile(spec).await;
                (name, r.map_err(|e| e.message))
            }
            ProfileOp::Delete { name } => {
                let r = control.lock().await.delete_profile(&name).await;
                (name, r.map_err(|e| e.message))
            }
            ProfileOp::Skip { name, error } => (name, Err(error)),
        };
        if let Err(why) = result {
            log::debug!("cluster: profile {name}: {why}");
            skipped.insert(layout.profile(&name), why);
        }
    }
}

/// Applies one operation, each step under its own lock of the control.
async fn apply(
    control: &Shared,
    specs: &BTreeMap<u32, api::NetworkSpec>,
    op: Op<crate::state::NetworkState>,
) -> Result<(), (u32, String)> {
    let create = |vni: u32| {
        specs.get(&vni).cloned().ok_or_else(|| {
            (
                vni,
                "no spec for a planned network; this is a bug in nvod".to_owned(),
            )
        })
    };
    let vni = match &op {
        Op::Create { vni, .. }
        | Op::Delete { vni }
        | Op::Recreate { vni, .. }
        | Op::Flood { vni, .. }
        | Op::Skip { vni, .. } => *vni,
    };
    let result = match op {
        Op::Create { vni, .. } => {
            let spec = create(vni)?;
            control.lock().await.cluster_create(spec).await
        }
        Op::Delete { vni } => control.lock().await.delete_network(&vni.to_string()).await,
        Op::Recreate { vni, .. } => {
            let spec = create(vni)?;
            let mut c = control.lock().await;
            match c.delete_network(&vni.to_string()).await {
                Ok(()) => c.cluster_create(spec).await,
                Err(e) => Err(e),
            }
        }
        Op::Flood { vni, add, remove } => {
            let text = vni.to_string();
            let mut result = Ok(());
            for ip in remove {
                let r = control
                    .lock()
                    .await
                    .flood_delete(&text, &ip.to_string())
                    .await;
                result = result.and(r);
            }
            for remote in add {
                let r = control
                    .lock()
                    .await
                    .flood_add(&text, api::FloodAdd { remote })
                    .await
                    .map(|_| ());
                result = result.and(r);
            }
            result
        }
        Op::Skip { vni, error } => return Err((vni, error)),
    };
    result.map_err(|e| (vni, e.message))
}
