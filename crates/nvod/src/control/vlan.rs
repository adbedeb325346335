//! VLAN-tagged ports (the VLAN gateway, nvo_pipeline::vlan): checking a port spec's `vlan`,
//! turning a stored port into the datapath command that attaches it, and naming circuits.
//!
//! A trunk `eth1` is one interface with one id; each of its VLANs is a circuit, a port of its
//! network with its own id, shown as `eth1.10` (Linux's VLAN sub-interface notation) in FDB
//! entries and counters. nvod allocates every id; nothing but the port's own row is stored.

use nvo_api as api;
use nvo_datapath::Command;
use nvo_pipeline::vlan::{self, Circuit, TPID_8021Q};
use nvo_pipeline::{PortId, Vni};

use super::{Control, Failure, Kind};
use crate::convert;
pub(super) use crate::state::circuit_name;
use crate::state::{PortState, VlanState};

impl Control {
    /// The network and VLAN mode a port spec asks for, checked: `(vni, None)` for an untagged
    /// port, `(vni, Some(..))` for an access port, `(0, Some(..))` for a trunk.
    pub(super) fn port_vlan(
        &self,
        spec: &api::PortSpec,
    ) -> Result<(u32, Option<VlanState>), Failure> {
        let Some(v) = &spec.vlan else {
            return Ok((convert::check_vni(spec.vni)?.0, None));
        };
        let ethertype = v.ethertype.map_or(TPID_8021Q, |e| e.0);
        let (vni, pairs, access) = match (v.access, &v.trunk) {
            (Some(_), Some(_)) => {
                return Err(Failure::bad(
                    "a port is either an access port (vlan.access) or a trunk (vlan.trunk), not both",
                ))
            }
            (None, None) => {
                return Err(Failure::bad(
                    "vlan needs access (a vlan id) or trunk (vlan id → vni); leave vlan out for an untagged port",
                ))
            }
            (Some(vid), None) => {
                let vni = convert::check_vni(spec.vni)?.0;
                (vni, vec![(vid, vni)], true)
            }
            (None, Some(map)) => {
                if spec.vni != 0 {
                    return Err(Failure::bad(format!(
                        "vni {} given for a trunk; a trunk's networks are in vlan.trunk, leave vni out",
                        spec.vni
                    )));
                }
                (0, map.0.clone(), false)
            }
        };
        let mut circuits = Vec::with_capacity(pairs.len());
        for (i, &(vid, vni)) in pairs.iter().enumerate() {
            let vni = convert::check_vni(vni)?;
            let port = PortId(u32::try_from(i).unwrap_or(u32::MAX));
            circuits.push(Circuit { vid, port, vni });
        }
        vlan::check_trunk(ethertype, &circuits).map_err(|e| Failure::bad(e.to_string()))?;
        for c in &circuits {
            self.network_exists(c.vni)?;
            let name = circuit_name(&spec.name, c.vid);
            if self.port_ids.contains_key(&name) || self.state.ports.contains_key(&name) {
                return Err(Failure::new(
                    Kind::Conflict,
                    format!(
                        "port {name} already exists; vlan {} of {} would have its name",
                        c.vid, spec.name
                    ),
                ));
            }
        }
        let vlans = pairs.into_iter().collect();
        Ok((
            vni,
            Some(VlanState {
                ethertype,
                vlans,
                access,
                qos: Default::default(),
            }),
        ))
    }

    /// The command that attaches stored port `name`, with new ids for it (and its circuits).
    pub(super) fn attach_command(
        &mut self,
        name: &str,
        port: &PortState,
        must_open: bool,
    ) -> Command {
        let id = self.new_port_id(name);
        let kind = convert::datapath_port_kind(port.kind);
        let offloads = port.offloads.unwrap_or_default();
        if let Some(s) = &port.shared {
            return self.shared_command(id, name, port, s, must_open);
        }
        let Some(v) = &port.vlan else {
            return Command::AddPort {
                id,
                vni: Vni(port.vni),
                name: name.to_owned(),
                kind,
                offloads,
                must_open,
            };
        };
        let circuits = v
            .vlans
            .iter()
            .map(|(&vid, &vni)| Circuit {
                vid,
                port: self.new_port_id(&circuit_name(name, vid)),
                vni: Vni(vni),
            })
            .collect();
        Command::AddTrunk {
            id,
            name: name.to_owned(),
            kind,
            offloads,
            tpid: v.ethertype,
            circuits,
            must_open,
        }
    }

    /// Forgets the ids of port `name` and its circuits (or virtual ports).
    pub(super) fn forget_port_ids(&mut self, name: &str, port: Option<&PortState>) {
        self.port_ids.remove(name);
        if let Some(s) = port.and_then(|p| p.shared.as_ref()) {
            self.forget_vport_ids(name, s);
        }
        if let Some(v) = port.and_then(|p| p.vlan.as_ref()) {
            for &vid in v.vlans.keys() {
                self.port_ids.remove(&circuit_name(name, vid));
            }
        }
    }
}

/// A stored VLAN mode in the API's form.
pub(super) fn api_vlan(v: &VlanState) -> api::PortVlan {
    let ethertype = Some(api::Ethertype(v.ethertype));
    if v.access {
        api::PortVlan {
            access: v.vlans.keys().next().copied(),
            trunk: None,
            ethertype,
        }
    } else {
        let pairs = v.vlans.iter().map(|(&vid, &vni)| (vid, vni)).collect();
        api::PortVlan {
            access: None,
            trunk: Some(api::TrunkMap(pairs)),
            ethertype,
        }
    }
}
