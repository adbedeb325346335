//! `/v1/networks/{vni}/routes`: the IPv4 prefixes of an L3 network and the remote tunnel end
//! behind each. Persisted with the network; a route replaces the one with the same prefix.

use nvo_api as api;

use super::{remote, vni_of, Control, Failure, Kind};
use crate::convert;
use nvo_datapath::Command;

impl Control {
    /// `GET /v1/networks/{vni}/routes`.
    pub fn routes(&self, vni: &str) -> Result<Vec<api::RouteSpec>, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        Ok(self.state.networks[&vni.0]
            .routes
            .iter()
            .map(|(prefix, &remote)| api::RouteSpec {
                prefix: prefix.clone(),
                remote,
            })
            .collect())
    }

    /// `POST /v1/networks/{vni}/routes`.
    pub async fn route_add(
        &mut self,
        vni: &str,
        route: api::RouteSpec,
    ) -> Result<api::RouteSpec, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        if !self.state.networks[&vni.0].l3 {
            return Err(Failure::bad(format!(
                "network {vni} is not an l3 network; routes belong to networks created with \
                 \"l3\": true"
            )));
        }
        let (addr, len) = convert::parse_prefix(&route.prefix)?;
        let to = remote(route.remote, &self.config)?;
        let key = format!("{addr}/{len}");
        let routes = &self.state.networks[&vni.0].routes;
        let limit = self.config.limits.routes_per_network;
        if !routes.contains_key(&key) && routes.len() >= limit {
            return Err(Failure::new(
                Kind::Conflict,
                crate::config::limit_reached(
                    "routes_per_network",
                    limit,
                    format!("network {vni} has {} routes", routes.len()),
                ),
            ));
        }
        let mut new = self.state.clone();
        if let Some(net) = new.networks.get_mut(&vni.0) {
            net.routes.insert(key.clone(), to);
        }
        self.commit(new, Command::RouteAdd(vni, addr, len, to))
            .await?;
        log::info!("network {vni}: route {key} via {to}");
        Ok(api::RouteSpec {
            prefix: key,
            remote: to,
        })
    }

    /// `DELETE /v1/networks/{vni}/routes/{addr}/{len}`.
    pub async fn route_delete(&mut self, vni: &str, addr: &str, len: &str) -> Result<(), Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let (addr, len) = convert::parse_prefix(&format!("{addr}/{len}"))?;
        let key = format!("{addr}/{len}");
        if !self.state.networks[&vni.0].routes.contains_key(&key) {
            return Err(Failure::new(
                Kind::NotFound,
                format!("network {vni} has no route {key}"),
            ));
        }
        let mut new = self.state.clone();
        if let Some(net) = new.networks.get_mut(&vni.0) {
            net.routes.remove(&key);
        }
        self.commit(new, Command::RouteRemove(vni, addr, len))
            .await?;
        log::info!("network {vni}: route {key} removed");
        Ok(())
    }
}
