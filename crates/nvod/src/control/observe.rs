//! `nvo monitor`'s listeners ([`Control::monitor_subscribe`]), and what a metrics scrape reads: one [`nvo_observe::Snapshot`], taken through the commands the
//! API's reads use (`GET /v1/counters`, `GET /v1/networks`, `GET /v1/bgp`). The datapath thread
//! answers them between its batches from its own tables: a scrape holds no lock the datapath
//! takes, and the datapath never waits for it.

use std::time::Duration;

use nvo_observe::{NetworkTables, Snapshot, Table};

use nvo_observe::monitor::{Filter, Listener};
use nvo_pipeline::DropReason;

use super::{unexpected, Control, Failure, Kind};
use nvo_datapath::{Command, Reply};

/// How long a scrape waits for the EVPN speaker's summary.
const BGP_TIMEOUT: Duration = Duration::from_secs(1);

impl Control {
    /// Everything the metrics families show, at this moment.
    pub async fn snapshot(&self) -> Result<Snapshot, Failure> {
        let counters = self.counters().await?;
        let views = match self.query(Command::Networks).await? {
            Reply::Networks(views) => views,
            other => return Err(unexpected(other)),
        };
        let bgp = match &self.evpn {
            // A speaker that does not answer at once leaves the BGP families out, not the
            // scrape.
            Some(_) => tokio::time::timeout(BGP_TIMEOUT, self.bgp_summary())
                .await
                .ok()
                .and_then(Result::ok)
                .filter(|s| s.config.is_some()),
            None => None,
        };
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
                profile: self
                    .state
                    .networks
                    .get(&v.vni.0)
                    .map(|n| n.encap.clone())
                    .unwrap_or_default(),
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
        Ok(Snapshot {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            datapath: self.path.datapath.to_owned(),
            counters,
            tables,
            networks,
            ports: self
                .state
                .ports
                .iter()
                .map(|(name, port)| (name.clone(), port.vni))
                .collect(),
            bgp,
            stt_limit_bytes: count(self.config.stt_reassembly.max_bytes),
            monitor_lost: self.monitor.as_ref().map(|m| m.lost()).unwrap_or_default(),
        })
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
