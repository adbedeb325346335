//! `nvo monitor`'s listeners ([`Control::monitor_subscribe`]), and what a metrics scrape and
//! the status page read: the counters, the networks and the BGP summary ([`Control::observed`]),
//! taken through the commands the API's reads use (`GET /v1/counters`, `GET /v1/networks`,
//! `GET /v1/bgp`). The datapath thread answers them between its batches from its own tables: a
//! scrape holds no lock the datapath takes, and the datapath never waits for it.

use std::collections::BTreeMap;
use std::time::Duration;

use nvo_api as api;
use nvo_observe::{NetworkTables, Policer, Snapshot, Table};

use nvo_observe::monitor::{Filter, Listener};
use nvo_pipeline::{DropReason, NetworkView};

use super::{unexpected, Control, Failure, Kind};
use nvo_datapath::{Command, Reply};

/// How long a scrape or a status poll waits for the EVPN speaker's summary.
const BGP_TIMEOUT: Duration = Duration::from_secs(1);

/// What a metrics scrape and a status poll both read, at one moment.
pub(super) struct Observed {
    pub counters: api::Counters,
    /// The datapath's view of each network.
    pub views: Vec<NetworkView>,
    /// The speaker's summary; `None` without a speaker, or when it does not answer within
    /// [`BGP_TIMEOUT`] — that leaves the BGP part out, not the whole read.
    pub bgp: Option<api::BgpSummary>,
}

impl Control {
    /// Everything the metrics families show, at this moment.
    pub async fn snapshot(&self) -> Result<Snapshot, Failure> {
        let Observed {
            counters,
            views,
            bgp,
        } = self.observed().await?;
        let limits = &self.config.limits;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let overlay_routes = self.state.overlay.routes.values().map(|r| r.len()).max();
        let tables = vec![
            table(
                "networks",
                self.state.networks.len(),
                limits.pipeline.max_networks,
            ),
            table("ports", self.state.ports.len(), limits.pipeline.max_ports),
            table(
                "profiles",
                self.profiles.profiles().count(),
                limits.engine.max_profiles,
            ),
            table(
                "overlay_nodes",
                self.state.overlay.nodes.len(),
                limits.overlay.max_nodes,
            ),
            table(
                "overlay_routes",
                overlay_routes.unwrap_or(0),
                limits.overlay.max_routes,
            ),
        ];
        let p = &limits.pipeline;
        let networks = views
            .iter()
            .map(|v| NetworkTables {
                vni: v.vni.0,
                profile: self.profile_of(v.vni.0),
                tables: vec![
                    table("flood", v.flood.len(), p.max_flood),
                    table("static_fdb", v.static_entries, p.max_static_fdb),
                    Table {
                        name: "learned_fdb",
                        entries: count(v.learned),
                        limit: u64::from(v.max_learned),
                    },
                    table("evpn_fdb", v.evpn_fdb, p.max_evpn_fdb),
                    table("neighbors", v.evpn_neighbors, p.max_neighbors),
                    table("routes", v.routes.len(), limits.routes_per_network),
                ],
            })
            .collect();
        let (qos, meters) = self.policers().await?;
        Ok(Snapshot {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            datapath: self.path.datapath.to_owned(),
            counters,
            tables,
            networks,
            ports: self.port_networks(),
            bgp,
            stt_limit_bytes: count(self.config.stt_reassembly.max_bytes),
            monitor_lost: self.monitor.as_ref().map(|m| m.lost()).unwrap_or_default(),
            cluster: self.cluster.as_ref().map(|c| c.metrics()),
            worker_packets: self.datapath.worker_packets(),
            qos,
            meters,
        })
    }

    /// The QoS profiles' and the meters' counters, as `GET /v1/qos` and `/v1/meters` show them.
    async fn policers(&self) -> Result<(Vec<Policer>, Vec<Policer>), Failure> {
        let qos = self.qos_list().await?.into_iter().map(|q| Policer {
            name: q.spec.name,
            passed_frames: q.conformed_frames,
            passed_bytes: q.conformed_bytes,
            dropped_frames: q.policed_frames,
            dropped_bytes: q.policed_bytes,
        });
        let meters = self.meter_list().await?.into_iter().map(|m| Policer {
            name: m.spec.id.to_string(),
            passed_frames: m.passed_frames,
            passed_bytes: m.passed_bytes,
            dropped_frames: m.dropped_frames,
            dropped_bytes: m.dropped_bytes,
        });
        Ok((qos.collect(), meters.collect()))
    }

    /// The counters, the networks and the BGP summary (see [`Observed`]).
    pub(super) async fn observed(&self) -> Result<Observed, Failure> {
        let counters = self.counters().await?;
        let views = match self.query(Command::Networks).await? {
            Reply::Networks(views) => views,
            other => return Err(unexpected(other)),
        };
        let bgp = match &self.evpn {
            Some(_) => tokio::time::timeout(BGP_TIMEOUT, self.bgp_summary())
                .await
                .ok()
                .and_then(Result::ok)
                .filter(|s| s.config.is_some()),
            None => None,
        };
        Ok(Observed {
            counters,
            views,
            bgp,
        })
    }

    /// The encapsulation profile of network `vni` (empty if it was removed meanwhile).
    pub(super) fn profile_of(&self, vni: u32) -> String {
        self.state
            .networks
            .get(&vni)
            .map(|n| n.encap.clone())
            .unwrap_or_default()
    }

    /// Each port's network; a trunk's circuits (`eth1.10`) and a shared port's virtual ports
    /// (`hv0/02:00:00:00:01:01`, `hv0/default`) each with theirs.
    pub(super) fn port_networks(&self) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        for (name, port) in &self.state.ports {
            if let Some(s) = &port.shared {
                for (mac, v) in &s.vports {
                    out.insert(super::vport::vport_name(name, mac), v.vni);
                }
                if let Some(vni) = s.default_vni {
                    out.insert(super::vport::default_name(name), vni);
                }
                continue;
            }
            match &port.vlan {
                Some(v) if !v.access => {
                    for (&vid, &vni) in &v.vlans {
                        out.insert(super::vlan::circuit_name(name, vid), vni);
                    }
                }
                _ => {
                    out.insert(name.clone(), port.vni);
                }
            }
        }
        out
    }

    /// Gives `GET /v1/monitor` its listeners (set once at start).
    pub fn set_monitor(&mut self, handle: crate::monitor::Handle) {
        self.monitor = Some(handle);
    }

    /// A new listener of the monitor stream with the filter `query` asks for
    /// (`network=VNI&port=NAME&reason=NAME&type=drop,learn`).
    pub fn monitor_subscribe(&self, query: &str) -> Result<Listener, Failure> {
        let Some(m) = &self.monitor else {
            return Err(Failure::new(
                Kind::Unavailable,
                "the monitor is not running in this nvod",
            ));
        };
        let is_reason = |name: &str| DropReason::ALL.iter().any(|r| r.name() == name);
        let filter = Filter::parse(query, is_reason).map_err(|e| Failure::bad(e.to_string()))?;
        m.hub
            .subscribe(filter)
            .map_err(|e| Failure::new(Kind::Conflict, e.to_string()))
    }
}

fn table(name: &'static str, entries: usize, limit: usize) -> Table {
    Table {
        name,
        entries: u64::try_from(entries).unwrap_or(u64::MAX),
        limit: u64::try_from(limit).unwrap_or(u64::MAX),
    }
}
