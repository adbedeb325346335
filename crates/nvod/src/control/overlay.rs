//! `/v1/overlay…`: this node's overlay ID, the LIB (node → weighted locators) and the RIB per
//! application (destination → next hops), persisted with the rest of the desired state, and
//! `/v1/events`: every change, as it is committed, to whoever listens (control planes).

use nvo_api as api;
use nvo_pipeline::overlay::{App, Locator, NodeId};

use super::{Control, Failure, Kind};
use nvo_datapath::{Command, Reply};

/// How many events a slow listener may lag behind before it misses some.
pub const EVENT_BACKLOG: usize = 1024;

impl Control {
    /// This node's overlay ID: the API's, else the config's.
    pub fn own_node(&self) -> u32 {
        self.state.overlay.own.unwrap_or(self.config.node_id)
    }

    /// `GET /v1/overlay`.
    pub async fn overlay(&self) -> Result<api::OverlayInfo, Failure> {
        let counters = match self.query(Command::OverlayCounters).await? {
            Reply::Overlay(c) => crate::convert::counter_map(&c),
            other => return Err(super::unexpected(other)),
        };
        Ok(api::OverlayInfo {
            node_id: self.own_node(),
            counters,
        })
    }

    /// `PUT /v1/overlay`.
    pub async fn set_overlay(
        &mut self,
        info: api::OverlayInfo,
    ) -> Result<api::OverlayInfo, Failure> {
        let id = node(info.node_id)?;
        let mut new = self.state.clone();
        new.overlay.own = Some(id.0);
        self.commit(new, Command::OverlayOwn(id)).await?;
        log::info!("overlay: this node is {id}");
        self.emit(api::OverlayEvent::Own {
            action: api::EventAction::Set,
            node: id.0,
        });
        self.overlay().await
    }

    /// `GET /v1/overlay/nodes`.
    pub fn overlay_nodes(&self) -> Vec<api::OverlayNode> {
        let own = self.own_node();
        self.state
            .overlay
            .nodes
            .iter()
            .map(|(&id, locators)| api::OverlayNode {
                node_id: id,
                locators: locators.clone(),
                own: id == own,
            })
            .collect()
    }

    /// `GET /v1/overlay/nodes/{id}`.
    pub fn overlay_node(&self, id: &str) -> Result<api::OverlayNode, Failure> {
        let id = parse_node(id)?;
        self.overlay_nodes()
            .into_iter()
            .find(|n| n.node_id == id.0)
            .ok_or_else(|| no_node(id))
    }

    /// `PUT /v1/overlay/nodes/{id}`.
    pub async fn set_overlay_node(
        &mut self,
        id: &str,
        locators: api::NodeLocators,
    ) -> Result<api::OverlayNode, Failure> {
        self.set_overlay_node_owned(id, locators, false).await
    }

    /// Sets a node's locators; `cluster`: made by cluster mode (marked so in the state; a
    /// local PUT takes the node over from the cluster).
    pub(super) async fn set_overlay_node_owned(
        &mut self,
        id: &str,
        locators: api::NodeLocators,
        cluster: bool,
    ) -> Result<api::OverlayNode, Failure> {
        let id = parse_node(id)?;
        for l in &locators.locators {
            if l.addr.is_ipv4() != self.config.locator.is_ipv4() {
                return Err(Failure::bad(format!(
                    "locator {} of node {id} is not of this node's address family (locator {})",
                    l.addr, self.config.locator
                )));
            }
        }
        let locs: Vec<Locator> = locators
            .locators
            .iter()
            .map(|l| Locator {
                addr: l.addr,
                weight: l.weight,
            })
            .collect();
        let mut new = self.state.clone();
        new.overlay.nodes.insert(id.0, locators.locators.clone());
        if cluster {
            new.overlay.cluster_nodes.insert(id.0);
        } else {
            new.overlay.cluster_nodes.remove(&id.0);
        }
        self.commit(new, Command::OverlayNode(id, locs)).await?;
        log::info!("overlay: node {id} at {:?}", locators.locators);
        self.emit(api::OverlayEvent::Node {
            action: api::EventAction::Set,
            node: id.0,
            locators: Some(locators.locators),
        });
        self.overlay_node(&id.0.to_string())
    }

    /// `DELETE /v1/overlay/nodes/{id}`.
    pub async fn delete_overlay_node(&mut self, id: &str) -> Result<(), Failure> {
        let id = parse_node(id)?;
        if !self.state.overlay.nodes.contains_key(&id.0) {
            return Err(no_node(id));
        }
        let mut new = self.state.clone();
        new.overlay.nodes.remove(&id.0);
        new.overlay.cluster_nodes.remove(&id.0);
        self.commit(new, Command::OverlayNodeRemove(id)).await?;
        log::info!("overlay: node {id} removed");
        self.emit(api::OverlayEvent::Node {
            action: api::EventAction::Removed,
            node: id.0,
            locators: None,
        });
        Ok(())
    }

    /// `GET /v1/overlay/routes/{app}`.
    pub fn overlay_routes(&self, app: &str) -> Result<Vec<api::OverlayRoute>, Failure> {
        let app = parse_app(app)?;
        Ok(self
            .state
            .overlay
            .routes
            .get(app.name())
            .into_iter()
            .flatten()
            .map(|(&dst, hops)| api::OverlayRoute {
                app: app.name().to_owned(),
                dst,
                next_hops: hops.clone(),
            })
            .collect())
    }

    /// `GET /v1/overlay/routes/{app}/{dst}`.
    pub fn overlay_route(&self, app: &str, dst: &str) -> Result<api::OverlayRoute, Failure> {
        let dst = parse_node(dst)?;
        self.overlay_routes(app)?
            .into_iter()
            .find(|r| r.dst == dst.0)
            .ok_or_else(|| no_route(app, dst))
    }

    /// `PUT /v1/overlay/routes/{app}/{dst}`.
    pub async fn set_overlay_route(
        &mut self,
        app: &str,
        dst: &str,
        hops: api::RouteNextHops,
    ) -> Result<api::OverlayRoute, Failure> {
        self.set_overlay_route_owned(app, dst, hops, false).await
    }

    /// Sets a route's next hops; `cluster`: made by cluster mode (marked so in the state; a
    /// local PUT takes the route over from the cluster).
    pub(super) async fn set_overlay_route_owned(
        &mut self,
        app: &str,
        dst: &str,
        hops: api::RouteNextHops,
        cluster: bool,
    ) -> Result<api::OverlayRoute, Failure> {
        let (a, d) = (parse_app(app)?, parse_node(dst)?);
        let next: Vec<NodeId> = hops
            .next_hops
            .iter()
            .map(|&n| node(n))
            .collect::<Result<_, _>>()?;
        let mut new = self.state.clone();
        new.overlay
            .routes
            .entry(a.name().to_owned())
            .or_default()
            .insert(d.0, hops.next_hops.clone());
        let marks = new
            .overlay
            .cluster_routes
            .entry(a.name().to_owned())
            .or_default();
        if cluster {
            marks.insert(d.0);
        } else {
            marks.remove(&d.0);
        }
        if marks.is_empty() {
            new.overlay.cluster_routes.remove(a.name());
        }
        self.commit(new, Command::OverlayRoute(a, d, next)).await?;
        log::info!("overlay: route {a} {d} via {:?}", hops.next_hops);
        self.emit(api::OverlayEvent::Route {
            action: api::EventAction::Set,
            app: a.name().to_owned(),
            dst: d.0,
            next_hops: Some(hops.next_hops),
        });
        self.overlay_route(a.name(), &d.0.to_string())
    }

    /// `DELETE /v1/overlay/routes/{app}/{dst}`.
    pub async fn delete_overlay_route(&mut self, app: &str, dst: &str) -> Result<(), Failure> {
        let (a, d) = (parse_app(app)?, parse_node(dst)?);
        let exists = self
            .state
            .overlay
            .routes
            .get(a.name())
            .is_some_and(|r| r.contains_key(&d.0));
        if !exists {
            return Err(no_route(a.name(), d));
        }
        let mut new = self.state.clone();
        if let Some(r) = new.overlay.routes.get_mut(a.name()) {
            r.remove(&d.0);
            if r.is_empty() {
                new.overlay.routes.remove(a.name());
            }
        }
        if let Some(marks) = new.overlay.cluster_routes.get_mut(a.name()) {
            marks.remove(&d.0);
            if marks.is_empty() {
                new.overlay.cluster_routes.remove(a.name());
            }
        }
        self.commit(new, Command::OverlayRouteRemove(a, d)).await?;
        log::info!("overlay: route {a} {d} removed");
        self.emit(api::OverlayEvent::Route {
            action: api::EventAction::Removed,
            app: a.name().to_owned(),
            dst: d.0,
            next_hops: None,
        });
        Ok(())
    }

    /// `POST /v1/overlay/probe`, first half: checks the request and starts the run; answers
    /// the run ID and how long to wait before `probe_result`.
    pub async fn probe_start(
        &mut self,
        req: &api::ProbeRequest,
    ) -> Result<(u32, std::time::Duration), Failure> {
        let dst = node(req.dst)?;
        let via = req.via.map(node).transpose()?;
        let count = req.count.unwrap_or(10);
        if !(1..=nvo_datapath::MAX_PROBES).contains(&count) {
            return Err(Failure::bad(format!(
                "count {count} is out of range; use 1 to {}",
                nvo_datapath::MAX_PROBES
            )));
        }
        let timeout = req.timeout_ms.unwrap_or(500);
        if !(10..=5000).contains(&timeout) {
            return Err(Failure::bad(format!(
                "timeout_ms {timeout} is out of range; use 10 to 5000"
            )));
        }
        // The relay is the first hop: it must be reachable. (The destination may be reached
        // by a route without locators of its own; a probe that finds no way is all lost.)
        if let Some(v) = via {
            if !self.state.overlay.nodes.contains_key(&v.0) {
                return Err(Failure::bad(format!(
                    "relay node {v} has no locators; set them first (PUT /v1/overlay/nodes/{v})"
                )));
            }
        }
        self.next_probe = self.next_probe.wrapping_add(1);
        let id = self.next_probe;
        self.query(Command::OverlayProbeStart {
            id,
            dst,
            via,
            count,
        })
        .await?;
        Ok((id, std::time::Duration::from_millis(u64::from(timeout))))
    }

    /// `POST /v1/overlay/probe`, second half: what run `id` measured.
    pub async fn probe_result(
        &self,
        req: &api::ProbeRequest,
        id: u32,
    ) -> Result<api::ProbeResult, Failure> {
        let run = match self.query(Command::OverlayProbeResult(id)).await? {
            Reply::Probe(Some(run)) => run,
            Reply::Probe(None) => {
                return Err(Failure::new(
                    Kind::Internal,
                    format!("probe run {id} is gone (nvod restarted?)"),
                ))
            }
            other => return Err(super::unexpected(other)),
        };
        let us = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Ok(api::ProbeResult {
            dst: req.dst,
            via: req.via,
            sent: run.sent,
            received: run.received,
            loss: if run.sent == 0 {
                1.0
            } else {
                1.0 - f64::from(run.received) / f64::from(run.sent)
            },
            rtt_us: run.rtt.map(|(min, mean, max)| api::RttStats {
                min: us(min),
                mean: us(mean),
                max: us(max),
            }),
        })
    }

    /// The commands that restore the stored overlay at start.
    pub(super) fn overlay_restore(&self) -> Result<Vec<Command>, Failure> {
        let mut commands = Vec::new();
        if let Some(own) = self.state.overlay.own {
            commands.push(Command::OverlayOwn(node(own)?));
        }
        for (&id, locators) in &self.state.overlay.nodes {
            let locs = locators
                .iter()
                .map(|l| Locator {
                    addr: l.addr,
                    weight: l.weight,
                })
                .collect();
            commands.push(Command::OverlayNode(node(id)?, locs));
        }
        for (app, routes) in &self.state.overlay.routes {
            let app = parse_app(app)?;
            for (&dst, hops) in routes {
                let next = hops.iter().map(|&n| node(n)).collect::<Result<_, _>>()?;
                commands.push(Command::OverlayRoute(app, node(dst)?, next));
            }
        }
        Ok(commands)
    }

    /// Tells every listener of `/v1/events` (none is fine).
    fn emit(&self, event: api::OverlayEvent) {
        let _ = self.events.send(event);
    }

    /// A new listener of `/v1/events`.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<api::OverlayEvent> {
        self.events.subscribe()
    }
}

fn node(id: u32) -> Result<NodeId, Failure> {
    if id == 0 {
        return Err(Failure::bad(
            "node 0 is not a node ID; use 1 to 4294967295".to_owned(),
        ));
    }
    Ok(NodeId(id))
}

fn parse_node(text: &str) -> Result<NodeId, Failure> {
    let id = match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    }
    .map_err(|_| {
        Failure::bad(format!(
            "node {text:?} is not a node ID (1 to 4294967295, decimal or 0x hex)"
        ))
    })?;
    node(id)
}

fn parse_app(text: &str) -> Result<App, Failure> {
    text.parse::<App>().map_err(|_| {
        Failure::bad(format!(
            "application {text:?} is not one of ethernet (7), ipv4 (4), ipv6 (6)"
        ))
    })
}

fn no_node(id: NodeId) -> Failure {
    Failure::new(
        Kind::NotFound,
        format!("no overlay node {id}; PUT /v1/overlay/nodes/{id} sets its locators"),
    )
}

fn no_route(app: &str, dst: NodeId) -> Failure {
    Failure::new(Kind::NotFound, format!("no {app} route to node {dst}"))
}
