//! The BGP/EVPN operations of the API: `/v1/bgp` and `/v1/evpn/routes`. The configuration is
//! checked here, persisted in the state file, then handed to the speaker task.

use nvo_api as api;
use nvo_datapath::{Command, Datapath, Reply};
use nvo_evpn::{self as evpn, DataPlane, DataPlaneError, Request};
use nvo_pipeline::{EvpnApplied, EvpnChange, LocalHosts, Vni};

use super::{Control, Failure, Kind};
use crate::state::evpn_serves;

impl Control {
    /// Starts the EVPN speaker (after [`Control::restore`]) with the saved configuration, or
    /// the config file's while the API never set one.
    pub fn start_evpn(&mut self) {
        self.publish_networks();
        let initial = self.bgp_in_effect().cloned();
        let handle = evpn::spawn(
            SpeakerPath(self.datapath.clone()),
            &self.config.state_dir,
            self.config.locator,
            self.evpn_networks.subscribe(),
            initial,
        );
        self.evpn = Some(handle);
    }

    /// Tells the speaker which networks it serves — the VXLAN ones and the ILA ones, with this
    /// host's ILA locator (whose address is their routes' next hop: docs/ila.md, "Mappings")
    /// — and their operator-set flood lists (after every committed change).
    pub(super) fn publish_networks(&self) {
        let ila: std::collections::BTreeMap<u32, std::net::Ipv6Addr> = match self.config.ila_locator
        {
            Some(locator) => self
                .state
                .networks
                .iter()
                .filter(|(_, n)| n.encap == nvo_encap::builtin::names::ILA)
                .map(|(&vni, _)| (vni, locator))
                .collect(),
            None => Default::default(),
        };
        let networks = evpn::Networks {
            flood: self
                .state
                .networks
                .iter()
                .filter(|(vni, n)| evpn_serves(&n.encap, n.l3) || ila.contains_key(vni))
                .map(|(&vni, n)| (vni, n.flood.iter().copied().collect()))
                .collect(),
            ila,
        };
        self.evpn_networks.send_if_modified(|current| {
            if *current == networks {
                false
            } else {
                *current = networks;
                true
            }
        });
    }

    /// The BGP configuration in effect: the API's, else the config file's while the API never
    /// deleted it.
    fn bgp_in_effect(&self) -> Option<&api::BgpConfig> {
        if self.state.bgp_off {
            None
        } else {
            self.state.bgp.as_ref().or(self.config.bgp.as_ref())
        }
    }

    /// Whether nvod has a BGP configuration in effect: the speaker then serves every network
    /// [`evpn_serves`], and such a network created now does not learn from tunnels by default.
    pub(super) fn evpn_serves(&self) -> bool {
        self.bgp_in_effect().is_some()
    }

    fn speaker(&self) -> Result<&evpn::Handle, Failure> {
        self.evpn.as_ref().ok_or_else(gone)
    }

    /// `GET /v1/bgp`.
    pub async fn bgp_summary(&self) -> Result<api::BgpSummary, Failure> {
        self.speaker()?.ask(Request::Summary).await.ok_or_else(gone)
    }

    /// `PUT /v1/bgp`.
    pub async fn bgp_set(
        &mut self,
        mut config: api::BgpConfig,
    ) -> Result<api::BgpSummary, Failure> {
        // GET never shows passwords: a neighbour written back with `password_set` keeps its own.
        let current = self.state.bgp.as_ref().or(self.config.bgp.as_ref());
        evpn::keep_passwords(&mut config, current);
        evpn::check(&config, self.config.locator).map_err(refused)?;
        let mut new = self.state.clone();
        new.bgp = Some(config.clone());
        new.bgp_off = false;
        self.store.record(&self.state, &new)?;
        self.state = new;
        let answer = self
            .speaker()?
            .ask(|tx| Request::Configure(Some(config), tx))
            .await
            .ok_or_else(gone)?;
        answer.map_err(refused)
    }

    /// `DELETE /v1/bgp`: the speaker stops, what it installed goes, and it stays off across
    /// restarts.
    pub async fn bgp_delete(&mut self) -> Result<(), Failure> {
        let mut new = self.state.clone();
        new.bgp = None;
        new.bgp_off = true;
        self.store.record(&self.state, &new)?;
        self.state = new;
        self.speaker()?
            .ask(|tx| Request::Configure(None, tx))
            .await
            .ok_or_else(gone)?
            .map(|_| ())
            .map_err(refused)
    }

    /// `GET /v1/evpn/routes`.
    pub async fn evpn_routes(
        &self,
        vni: Option<u32>,
        route_type: Option<u8>,
    ) -> Result<Vec<api::EvpnRoute>, Failure> {
        if let Some(t) = route_type.filter(|t| !(1..=5).contains(t)) {
            return Err(Failure::bad(format!(
                "type {t} is not an EVPN route type; use 2 (MAC/IP) or 3 (inclusive multicast)"
            )));
        }
        self.speaker()?
            .ask(|reply| Request::Routes {
                vni,
                route_type,
                reply,
            })
            .await
            .ok_or_else(gone)
    }

    /// At shutdown: the speaker saves what it installed and ends its sessions.
    pub async fn evpn_shutdown(&self) {
        if let Some(speaker) = &self.evpn {
            speaker.ask(Request::Shutdown).await;
        }
    }
}

/// A BGP configuration the speaker refuses: 400 with its reason.
fn refused(e: evpn::ConfigError) -> Failure {
    Failure::bad(e.to_string())
}

fn gone() -> Failure {
    Failure::new(
        Kind::Unavailable,
        "the EVPN speaker is not running (nvod is starting or stopping); retry",
    )
}

/// The speaker's data path: datapath commands, like the rest of the control layer's.
#[derive(Debug)]
struct SpeakerPath(Datapath);

fn failed(e: nvo_datapath::DatapathError) -> DataPlaneError {
    DataPlaneError::Failed(Box::new(e))
}

impl DataPlane for SpeakerPath {
    async fn local_hosts(&self, since: u64) -> Result<Option<LocalHosts>, DataPlaneError> {
        match self.0.call(Command::LocalHosts { since }).await {
            Ok(Reply::LocalHosts(hosts)) => Ok(hosts),
            Ok(other) => Err(DataPlaneError::Unexpected(format!("{other:?}"))),
            Err(e) => Err(failed(e)),
        }
    }

    async fn set_arp_suppression(&self, vni: Vni, on: bool) -> Result<(), DataPlaneError> {
        self.0
            .call(Command::SetArpSuppression(vni, on))
            .await
            .map(|_| ())
            .map_err(failed)
    }

    async fn apply(&self, changes: Vec<EvpnChange>) -> Result<EvpnApplied, DataPlaneError> {
        match self.0.call(Command::EvpnApply(changes)).await {
            Ok(Reply::EvpnApplied(done)) => Ok(done),
            Ok(other) => Err(DataPlaneError::Unexpected(format!("{other:?}"))),
            Err(e) => Err(failed(e)),
        }
    }
}
