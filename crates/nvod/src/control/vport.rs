//! Shared ports and their virtual ports per MAC (VM-VP, nvo_pipeline::vport): checking a port
//! spec's `shared`, the datapath command that attaches a stored shared port, and
//! `/v1/ports/{port}/vports`.
//!
//! A shared port `hv0` is one interface with one id; each virtual port is a port of its network
//! with its own id, named `hv0/02:00:00:00:01:01` (and `hv0/default` for the default network's)
//! in FDB entries, counters and metrics. nvod allocates every id; only the port's row (with its
//! virtual ports) is stored, so the state journal keeps them across restarts.

use nvo_api as api;
use nvo_datapath::{Command, Reply};
use nvo_pipeline::vport::{Vport, MAX_VPORTS_PER_PORT};
use nvo_pipeline::{PortCounters, PortId, Vni};

use super::{unexpected, Control, Failure, Kind};
use crate::convert;
use crate::state::{PortState, SharedState, VportState};

impl Control {
    /// The shared-port settings a port spec asks for, checked: `None` for any other port.
    pub(super) fn port_shared(&self, spec: &api::PortSpec) -> Result<Option<SharedState>, Failure> {
        let Some(shared) = spec.shared else {
            return Ok(None);
        };
        if spec.vlan.is_some() {
            return Err(Failure::bad(
                "a port is either vlan-tagged (vlan) or shared (shared), not both; a shared \
                 port's virtual ports carry their own vlan",
            ));
        }
        if spec.vni != 0 {
            return Err(Failure::bad(format!(
                "vni {} given for a shared port; its networks are its virtual ports' (and \
                 shared.default_vni), leave vni out",
                spec.vni
            )));
        }
        if let Some(vni) = shared.default_vni {
            self.network_exists(convert::check_vni(vni)?)?;
        }
        Ok(Some(SharedState {
            default_vni: shared.default_vni,
            vports: Default::default(),
        }))
    }

    /// The command that attaches stored shared port `name` under id `id`, with new ids for
    /// its virtual ports.
    pub(super) fn shared_command(
        &mut self,
        id: PortId,
        name: &str,
        port: &PortState,
        shared: &SharedState,
        must_open: bool,
    ) -> Command {
        let default = shared
            .default_vni
            .map(|vni| (self.new_port_id(&default_name(name)), Vni(vni)));
        let vports = shared
            .vports
            .iter()
            .filter_map(|(mac, v)| {
                let Ok(parsed) = convert::parse_mac(mac) else {
                    log::error!("port {name}: virtual port {mac:?} is not a mac; skipped");
                    return None;
                };
                Some(Vport {
                    port: self.new_port_id(&vport_name(name, mac)),
                    mac: parsed,
                    vid: v.vlan,
                    vni: Vni(v.vni),
                })
            })
            .collect();
        Command::AddShared {
            id,
            name: name.to_owned(),
            kind: convert::datapath_port_kind(port.kind),
            offloads: port.offloads.unwrap_or_default(),
            default,
            vports,
            must_open,
        }
    }

    /// Forgets the ids of shared port `name`'s virtual ports.
    pub(super) fn forget_vport_ids(&mut self, name: &str, shared: &SharedState) {
        self.port_ids.remove(&default_name(name));
        for mac in shared.vports.keys() {
            self.port_ids.remove(&vport_name(name, mac));
        }
    }

    /// The shared port `name` and its id.
    fn shared_port(&self, name: &str) -> Result<(&SharedState, PortId), Failure> {
        let (Some(port), Some(&id)) = (self.state.ports.get(name), self.port_ids.get(name)) else {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no port {name:?}; GET /v1/ports lists them"),
            ));
        };
        let shared = port.shared.as_ref().ok_or_else(|| {
            Failure::bad(format!(
                "port {name} is not a shared port; virtual ports live on a port added with \
                 shared (nvo port add {name} --shared)"
            ))
        })?;
        Ok((shared, id))
    }

    /// `GET /v1/ports/{port}/vports`.
    pub async fn vports(&self, name: &str) -> Result<Vec<api::Vport>, Failure> {
        let (shared, _) = self.shared_port(name)?;
        let counters = match self.query(Command::Counters).await? {
            Reply::Counters(c, ..) => c,
            other => return Err(unexpected(other)),
        };
        let count = |vp: &str| {
            self.port_ids
                .get(vp)
                .and_then(|id| counters.ports.get(id))
                .copied()
                .unwrap_or_default()
        };
        let mut out: Vec<api::Vport> = shared
            .vports
            .iter()
            .map(|(mac, v)| {
                let name_ = vport_name(name, mac);
                let c = count(&name_);
                let mut vp = shown(name, name_, Some(mac.clone()), v.vni, v.vlan, &c);
                vp.qos.clone_from(&v.qos);
                vp.acl = self.state.acl_attached.get(&vp.name).cloned();
                vp
            })
            .collect();
        if let Some(vni) = shared.default_vni {
            let name_ = default_name(name);
            let c = count(&name_);
            let mut vp = shown(name, name_, None, vni, None, &c);
            vp.acl = self.state.acl_attached.get(&vp.name).cloned();
            out.push(vp);
        }
        Ok(out)
    }

    /// `POST /v1/ports/{port}/vports`.
    pub async fn add_vport(
        &mut self,
        name: &str,
        spec: api::VportSpec,
    ) -> Result<api::Vport, Failure> {
        let (shared, shared_id) = self.shared_port(name)?;
        let mac = convert::parse_mac(&spec.mac)?;
        if !mac.is_unicast() {
            return Err(Failure::bad(format!(
                "mac {mac} is not a unicast address; a virtual port needs a vm's own mac"
            )));
        }
        let key = mac.to_string();
        if let Some(v) = shared.vports.get(&key) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "port {name} already has a virtual port for {key} (network {}); delete it \
                     first (DELETE /v1/ports/{name}/vports/{key})",
                    v.vni
                ),
            ));
        }
        if let Some(vid) = spec
            .vlan
            .filter(|&v| v == 0 || v > nvo_pipeline::vlan::MAX_VID)
        {
            return Err(Failure::bad(format!(
                "vlan id {vid} is out of range; a vlan id is 1..=4094 (leave vlan out for \
                 untagged frames)"
            )));
        }
        let vni = convert::check_vni(spec.vni)?;
        self.network_exists(vni)?;
        let held = shared.vports.len() + usize::from(shared.default_vni.is_some());
        if held >= MAX_VPORTS_PER_PORT {
            return Err(Failure::bad(format!(
                "port {name} holds {held} virtual ports, the most a shared port takes; delete \
                 some first"
            )));
        }
        let mut new = self.state.clone();
        if let Some(s) = new.ports.get_mut(name).and_then(|p| p.shared.as_mut()) {
            s.vports.insert(
                key.clone(),
                VportState {
                    vni: vni.0,
                    vlan: spec.vlan,
                    qos: None,
                },
            );
        }
        let vport_name_ = vport_name(name, &key);
        let vport = Vport {
            port: self.new_port_id(&vport_name_),
            mac,
            vid: spec.vlan,
            vni,
        };
        if let Err(e) = self.commit(new, Command::AddVport(shared_id, vport)).await {
            self.port_ids.remove(&vport_name_);
            return Err(e);
        }
        log::info!(
            "virtual port {vport_name_} added: network {vni}{}",
            spec.vlan
                .map_or_else(String::new, |v| format!(", vlan {v}"))
        );
        let zero = PortCounters::default();
        Ok(shown(name, vport_name_, Some(key), vni.0, spec.vlan, &zero))
    }

    /// `DELETE /v1/ports/{port}/vports/{mac}`.
    pub async fn delete_vport(&mut self, name: &str, mac: &str) -> Result<(), Failure> {
        let (shared, shared_id) = self.shared_port(name)?;
        let parsed = convert::parse_mac(mac)?;
        let key = parsed.to_string();
        if !shared.vports.contains_key(&key) {
            return Err(Failure::new(
                Kind::NotFound,
                format!("port {name} has no virtual port for {key}; GET /v1/ports/{name}/vports lists them"),
            ));
        }
        let mut new = self.state.clone();
        if let Some(s) = new.ports.get_mut(name).and_then(|p| p.shared.as_mut()) {
            s.vports.remove(&key);
        }
        let vport_name_ = vport_name(name, &key);
        new.acl_attached.remove(&vport_name_);
        self.commit(new, Command::RemoveVport(shared_id, parsed))
            .await?;
        // Flow rules of the virtual port (its in_port, an acl's too) go with it.
        self.forget_port_flows(&vport_name_).await;
        self.port_ids.remove(&vport_name_);
        log::info!("virtual port {vport_name_} removed");
        Ok(())
    }
}

/// How the virtual port of `mac` on shared port `port` is named.
pub(super) fn vport_name(port: &str, mac: &str) -> String {
    format!("{port}/{mac}")
}

/// How the default virtual port of shared port `port` is named.
pub(super) fn default_name(port: &str) -> String {
    format!("{port}/default")
}

/// A stored shared port's settings in the API's form.
pub(super) fn api_shared(s: &SharedState) -> api::SharedPort {
    api::SharedPort {
        default_vni: s.default_vni,
    }
}

/// A virtual port in the API's form.
fn shown(
    port: &str,
    name: String,
    mac: Option<String>,
    vni: u32,
    vlan: Option<u16>,
    c: &PortCounters,
) -> api::Vport {
    api::Vport {
        port: port.to_owned(),
        name,
        mac,
        vni,
        vlan,
        qos: None,
        acl: None,
        rx_frames: c.rx_frames,
        rx_bytes: c.rx_bytes,
        tx_frames: c.tx_frames,
        tx_bytes: c.tx_bytes,
        drops: c.drops,
    }
}
