//! QoS profiles (`/v1/qos`, nvo_pipeline::qos): named token-bucket policers with optional DSCP
//! marking or trust, attached by name to ports (`PUT /v1/ports/{port}/qos`) and virtual ports
//! (`PUT /v1/ports/{port}/vports/{mac}/qos`). Each attachment is a policer of its own (its own
//! bucket); a profile's counters are the sum of its policers'. A profile in use cannot be
//! deleted; changing one means deleting and adding it again once detached.

use std::collections::BTreeMap;

use nvo_api as api;
use nvo_datapath::{Command, Reply};
use nvo_pipeline::qos::{QosProfile, MAX_POLICED};
use nvo_pipeline::PortId;

use super::named::{At, ProfileKind, Target, Within};
use super::vlan::circuit_name;
use super::vport::vport_name;
use super::{unexpected, Control, Failure, Kind};
use crate::state::{QosState, State};

const QOS: ProfileKind = ProfileKind {
    what: "qos profile",
    list: "/v1/qos",
    detach: "nvo qos detach",
};

/// The most profiles a node holds.
pub const MAX_PROFILES: usize = 1024;

impl Control {
    /// `GET /v1/qos`.
    pub async fn qos_list(&self) -> Result<Vec<api::Qos>, Failure> {
        let counters = match self.query(Command::QosCounters).await? {
            Reply::Qos(list) => list,
            other => return Err(unexpected(other)),
        };
        let by_port: BTreeMap<PortId, _> = counters.into_iter().map(|(p, _, c)| (p, c)).collect();
        let attached = self.qos_attachments();
        Ok(self
            .state
            .qos
            .iter()
            .map(|(name, q)| {
                let mut shown = unattached(spec_of(name, q));
                for (port, profile) in &attached {
                    if profile != name {
                        continue;
                    }
                    shown.attached.push(port.clone());
                    let c = self.port_ids.get(port).and_then(|id| by_port.get(id));
                    if let Some(c) = c {
                        shown.conformed_frames += c.conformed_frames;
                        shown.conformed_bytes += c.conformed_bytes;
                        shown.policed_frames += c.policed_frames;
                        shown.policed_bytes += c.policed_bytes;
                    }
                }
                shown
            })
            .collect())
    }

    /// `POST /v1/qos`.
    pub async fn qos_add(&mut self, spec: api::QosSpec) -> Result<api::Qos, Failure> {
        QOS.check_name(&spec.name)?;
        if self.state.qos.contains_key(&spec.name) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "qos profile {} already exists; delete it first (DELETE /v1/qos/{})",
                    spec.name, spec.name
                ),
            ));
        }
        if self.state.qos.len() >= MAX_PROFILES {
            return Err(Failure::bad(format!(
                "{MAX_PROFILES} qos profiles exist, the most a node holds; delete some first"
            )));
        }
        if spec.dscp.is_some() && spec.trust {
            return Err(Failure::bad(
                "a qos profile either marks a dscp (dscp) or trusts the packet's (trust), not both",
            ));
        }
        let q = QosState {
            rate: spec.rate,
            burst: spec.burst,
            dscp: spec.dscp,
            trust: spec.trust,
        };
        profile_of(&q)
            .check()
            .map_err(|e| Failure::bad(format!("qos profile {}: {e}", spec.name)))?;
        let mut new = self.state.clone();
        new.qos.insert(spec.name.clone(), q);
        // No datapath change: the profile applies once attached.
        self.store.record(&self.state, &new)?;
        self.state = new;
        log::info!(
            "qos profile {} added: {} bit/s, burst {} bytes",
            spec.name,
            q.rate,
            q.burst
        );
        Ok(unattached(spec))
    }

    /// `DELETE /v1/qos/{name}`.
    pub async fn qos_delete(&mut self, name: &str) -> Result<(), Failure> {
        let users: Vec<String> = self
            .qos_attachments()
            .into_iter()
            .filter(|(_, p)| p == name)
            .map(|(port, _)| port)
            .collect();
        let exists = self.state.qos.contains_key(name);
        self.delete_named(&QOS, name, exists, &users, |s| {
            s.qos.remove(name);
        })
    }

    /// `PUT`/`DELETE /v1/ports/{port}/qos`, `…/vports/{mac}/qos` and `…/vlans/{vid}/qos`:
    /// attaches profile `profile` (`None`: detaches) to port `port`, or to its virtual port or
    /// VLAN circuit (named.rs).
    pub async fn qos_attach(
        &mut self,
        port: &str,
        within: Within<'_>,
        profile: Option<&str>,
    ) -> Result<(), Failure> {
        let Target { name: target, at } = self.attach_target(port, within, "qos")?;
        let q = match profile {
            Some(name) => Some(
                *self
                    .state
                    .qos
                    .get(name)
                    .ok_or_else(|| QOS.not_found(name))?,
            ),
            None => None,
        };
        let is_tap = self
            .state
            .ports
            .get(port)
            .is_some_and(|p| p.kind == crate::state::PortKindState::Tap);
        if within == Within::Port && is_tap && self.config.workers > 1 && q.is_some() {
            return Err(Failure::bad(format!(
                "port {port} is a tap port and nvod runs {} workers, each with a queue of it: a \
                 policer cannot see all its frames; set workers = 1 or use a veth port",
                self.config.workers
            )));
        }
        let mut new = self.state.clone();
        let Some(slot) = qos_slot(&mut new, port, &at) else {
            return Err(Failure::new(Kind::NotFound, format!("no port {target:?}")));
        };
        if profile.is_none() && slot.get().is_none() {
            return Err(Failure::new(
                Kind::NotFound,
                format!("{target} has no qos profile attached"),
            ));
        }
        let policed = self.qos_attachments().len();
        if profile.is_some() && slot.get().is_none() && policed >= MAX_POLICED {
            return Err(Failure::bad(format!(
                "{policed} ports are policed, the most a node holds; detach some first"
            )));
        }
        slot.set(profile.map(str::to_owned));
        let Some(&id) = self.port_ids.get(&target) else {
            return Err(Failure::new(Kind::NotFound, format!("no port {target:?}")));
        };
        self.commit(new, Command::SetQos(id, q.as_ref().map(profile_of)))
            .await?;
        match profile {
            Some(name) => log::info!("qos profile {name} attached to {target}"),
            None => log::info!("qos profile detached from {target}"),
        }
        Ok(())
    }

    /// The datapath commands that attach the stored profiles to the ports and virtual ports
    /// of the state (at start, after the ports).
    pub(super) fn qos_restore(&self) -> Vec<(String, Command)> {
        self.qos_attachments()
            .into_iter()
            .filter_map(|(port, name)| {
                let q = self.state.qos.get(&name)?;
                let id = *self.port_ids.get(&port)?;
                Some((port, Command::SetQos(id, Some(profile_of(q)))))
            })
            .collect()
    }

    /// Every (port or `PORT/MAC`, profile name) attachment of the state.
    fn qos_attachments(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, port) in &self.state.ports {
            if let Some(q) = &port.qos {
                out.push((name.clone(), q.clone()));
            }
            for (mac, v) in port.shared.iter().flat_map(|s| &s.vports) {
                if let Some(q) = &v.qos {
                    out.push((vport_name(name, mac), q.clone()));
                }
            }
            for (&vid, q) in port.vlan.iter().flat_map(|v| &v.qos) {
                out.push((circuit_name(name, vid), q.clone()));
            }
        }
        out
    }
}

/// A stored profile as the pipeline applies it.
fn profile_of(q: &QosState) -> QosProfile {
    QosProfile {
        rate: q.rate,
        burst: q.burst,
        dscp: q.dscp,
        trust: q.trust,
    }
}

/// A profile as shown before it is attached anywhere.
fn unattached(spec: api::QosSpec) -> api::Qos {
    api::Qos {
        spec,
        attached: Vec::new(),
        conformed_frames: 0,
        conformed_bytes: 0,
        policed_frames: 0,
        policed_bytes: 0,
    }
}

fn spec_of(name: &str, q: &QosState) -> api::QosSpec {
    api::QosSpec {
        name: name.to_owned(),
        rate: q.rate,
        burst: q.burst,
        dscp: q.dscp,
        trust: q.trust,
    }
}

/// Where an attachment point's QoS profile is stored: a port's or virtual port's `qos`, or a
/// trunk's entry for the VLAN.
enum QosSlot<'a> {
    One(&'a mut Option<String>),
    Vlan(&'a mut std::collections::BTreeMap<u16, String>, u16),
}

impl QosSlot<'_> {
    fn get(&self) -> Option<&String> {
        match self {
            QosSlot::One(q) => q.as_ref(),
            QosSlot::Vlan(m, vid) => m.get(vid),
        }
    }

    fn set(self, profile: Option<String>) {
        match (self, profile) {
            (QosSlot::One(q), p) => *q = p,
            (QosSlot::Vlan(m, vid), Some(p)) => {
                m.insert(vid, p);
            }
            (QosSlot::Vlan(m, vid), None) => {
                m.remove(&vid);
            }
        }
    }
}

/// The slot of attachment point `at` of `port` in `state`, a copy of the state
/// attach_target resolved it in (`None` only if the copy lost it).
fn qos_slot<'a>(state: &'a mut State, port: &str, at: &At) -> Option<QosSlot<'a>> {
    let p = state.ports.get_mut(port)?;
    match at {
        At::Port => Some(QosSlot::One(&mut p.qos)),
        At::Vport(key) => {
            let v = p.shared.as_mut()?.vports.get_mut(key)?;
            Some(QosSlot::One(&mut v.qos))
        }
        At::Vlan(vid) => Some(QosSlot::Vlan(&mut p.vlan.as_mut()?.qos, *vid)),
    }
}
