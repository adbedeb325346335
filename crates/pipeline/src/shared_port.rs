//! The pipeline's operations on shared ports and their virtual ports (vport.rs has the model):
//! adding and removing them, classifying a shared port's frames, and the split horizon that
//! keeps a frame from going back to the segment it came from.

use crate::actions::{Action, Actions};
use crate::counters::PortCounters;
use crate::pipeline::{count_drop, Port};
use crate::vlan;
use crate::vport::{
    self, Classified, Segment, Shared, SharedView, Vport, MAX_VPORTS, MAX_VPORTS_PER_PORT,
};
use crate::{DropReason, FdbDest, Mac, Pipeline, PortId, TableError, Vni};

impl Pipeline {
    /// Whether `port` is a shared port's interface: its frames go to [`Pipeline::from_shared`].
    pub fn is_shared(&self, port: PortId) -> bool {
        self.vports.ports.contains_key(&port)
    }

    /// Makes interface `shared` a shared port, with a default virtual port `default` (its id
    /// and network) for untagged frames from MACs no virtual port names; without one those are
    /// dropped (`unknown_vport`).
    pub fn add_shared(
        &mut self,
        shared: PortId,
        default: Option<(PortId, Vni)>,
    ) -> Result<(), TableError> {
        if let Some(p) = self.ports.get(&shared) {
            return Err(TableError::PortExists {
                port: shared,
                vni: p.vni,
            });
        }
        if self.is_shared(shared) || self.is_trunk(shared) {
            return Err(TableError::PortExists {
                port: shared,
                vni: Vni(0),
            });
        }
        if let Some((port, vni)) = default {
            if port == shared {
                return Err(TableError::PortExists { port, vni });
            }
            self.attach_vport(port, vni, (shared, 0))?;
        }
        self.vports.ports.insert(
            shared,
            Shared {
                default,
                ..Default::default()
            },
        );
        Ok(())
    }

    /// Removes shared port `shared` with every virtual port on it.
    pub fn remove_shared(&mut self, shared: PortId) -> Result<(), TableError> {
        let s = self
            .vports
            .ports
            .remove(&shared)
            .ok_or(TableError::NoSuchPort(shared))?;
        let ids = s
            .by_mac
            .values()
            .map(|v| v.port)
            .chain(s.default.map(|d| d.0));
        for id in ids {
            self.detach_vport(id);
        }
        Ok(())
    }

    /// Adds virtual port `vport` to shared port `shared`: frames from its MAC (with its VLAN)
    /// are its own, and its MAC becomes a static FDB entry of its network. Refused for a MAC
    /// or id in use, a bad VLAN ID, a full table, a missing network.
    pub fn add_vport(&mut self, shared: PortId, vport: Vport) -> Result<(), TableError> {
        let s = self
            .vports
            .ports
            .get(&shared)
            .ok_or(TableError::NotShared(shared))?;
        if !vport.mac.is_unicast() {
            return Err(TableError::InvalidMac(vport.mac));
        }
        if let Some(vid) = vport.vid.filter(|&v| v == 0 || v > vlan::MAX_VID) {
            return Err(TableError::InvalidVid(vid));
        }
        if s.by_mac.contains_key(&vport.mac) {
            return Err(TableError::VportExists {
                shared,
                mac: vport.mac,
            });
        }
        if s.by_mac.len() + usize::from(s.default.is_some()) >= MAX_VPORTS_PER_PORT {
            return Err(crate::control::full(
                "virtual ports of a shared port",
                MAX_VPORTS_PER_PORT,
            ));
        }
        if self.vports.segments.len() >= MAX_VPORTS {
            return Err(crate::control::full("virtual ports", MAX_VPORTS));
        }
        let default = s.default;
        self.attach_vport(vport.port, vport.vni, (shared, vport.vid.unwrap_or(0)))?;
        if let Err(e) = self.fdb_add_static(vport.vni, vport.mac, FdbDest::Port(vport.port)) {
            self.detach_vport(vport.port);
            return Err(e);
        }
        // What the default network learned of the MAC is no longer true: it is the virtual
        // port's from now on, in its own network.
        if let Some((dport, dvni)) = default {
            if let Some(net) = self.networks.get_mut(&dvni) {
                if net.fdb.lookup(vport.mac) == Some(FdbDest::Port(dport)) {
                    net.fdb.remove(vport.mac);
                    net.neigh.unpin_mac(vport.mac);
                }
            }
        }
        if let Some(s) = self.vports.ports.get_mut(&shared) {
            s.by_mac.insert(vport.mac, vport);
        }
        Ok(())
    }

    /// Removes the virtual port of `mac` from shared port `shared`, with its FDB entries.
    pub fn remove_vport(&mut self, shared: PortId, mac: Mac) -> Result<PortId, TableError> {
        let s = self
            .vports
            .ports
            .get_mut(&shared)
            .ok_or(TableError::NotShared(shared))?;
        let v = s
            .by_mac
            .remove(&mac)
            .ok_or(TableError::NoSuchVport { shared, mac })?;
        self.detach_vport(v.port);
        Ok(v.port)
    }

    /// The virtual ports of shared port `shared` (by MAC) and its default one.
    pub fn vports(&self, shared: PortId) -> Option<SharedView> {
        let s = self.vports.ports.get(&shared)?;
        let mut list: Vec<Vport> = s.by_mac.values().copied().collect();
        list.sort_unstable_by_key(|v| v.mac.0);
        Some(SharedView {
            vports: list,
            default: s.default,
        })
    }

    /// Reads the source MAC (and 802.1Q tag) of `frame`, received on shared port `shared`:
    /// the virtual port it belongs to, for [`Pipeline::from_port`] on it. A tagged frame is
    /// written without its tag into `out` (at least as long as `frame`). `None` when it goes
    /// nowhere: `actions` then hold the drop (`unknown_vport`, `malformed_frame`,
    /// `unknown_port`), counted in the shared port. Clears `actions` first.
    pub fn from_shared(
        &mut self,
        shared: PortId,
        frame: &[u8],
        out: &mut [u8],
        actions: &mut Actions,
    ) -> Option<Classified> {
        actions.clear();
        let Some(s) = self.vports.ports.get_mut(&shared) else {
            count_drop(&mut self.drops, None, DropReason::UnknownPort);
            actions.push(Action::Drop(DropReason::UnknownPort));
            return None;
        };
        s.counters.rx_frames += 1;
        s.counters.rx_bytes += frame.len() as u64;
        let classified = vport::classify(s, frame).and_then(|(vport, tagged)| {
            let popped = match tagged {
                true => Some(vlan::pop(frame, out).ok_or(DropReason::MalformedFrame)?),
                false => None,
            };
            Ok(Classified { vport, popped })
        });
        match classified {
            Ok(c) => Some(c),
            Err(reason) => {
                count_drop(&mut self.drops, Some(&mut s.counters), reason);
                actions.push(Action::Drop(reason));
                None
            }
        }
    }

    /// Split horizon for a frame that came in on virtual port `ingress`: takes out every
    /// `Deliver` to its own segment (the hypervisor's switch has delivered there already).
    /// When nothing is left the frame is a drop: `hairpin` for a unicast, `no_destination`
    /// for a flood.
    pub(crate) fn horizon(&mut self, ingress: PortId, actions: &mut Actions) {
        let Some(&segment) = self.vports.segments.get(&ingress) else {
            return;
        };
        let segments = &self.vports.segments;
        let removed = actions.retain(|a| match a {
            Action::Deliver { port } => segments.get(port) != Some(&segment),
            _ => true,
        });
        if removed == 0 {
            return;
        }
        let Some(p) = self.ports.get_mut(&ingress) else {
            return;
        };
        if let Some(net) = self.networks.get_mut(&p.vni) {
            net.counters.delivered = net.counters.delivered.saturating_sub(removed as u64);
        }
        if actions.is_empty() {
            let reason = match actions.flooded() {
                true => DropReason::NoDestination,
                false => DropReason::Hairpin,
            };
            count_drop(&mut self.drops, Some(&mut p.counters), reason);
            actions.push(Action::Drop(reason));
        }
    }

    /// Attaches a virtual port to its network: a port of the pipeline, in the network's flood
    /// list unless another of its virtual ports on the same segment is there already.
    fn attach_vport(&mut self, port: PortId, vni: Vni, segment: Segment) -> Result<(), TableError> {
        if let Some(p) = self.ports.get(&port) {
            return Err(TableError::PortExists { port, vni: p.vni });
        }
        if self.is_shared(port) || self.is_trunk(port) {
            return Err(TableError::PortExists { port, vni });
        }
        if self.ports.len() >= self.limits.max_ports {
            return Err(crate::control::full("ports", self.limits.max_ports));
        }
        let segments = &self.vports.segments;
        let net = self
            .networks
            .get_mut(&vni)
            .ok_or(TableError::NoSuchNetwork(vni))?;
        if !net.ports.iter().any(|q| segments.get(q) == Some(&segment)) {
            net.ports.push(port);
        }
        self.ports.insert(
            port,
            Port {
                vni,
                counters: PortCounters::default(),
            },
        );
        self.vports.segments.insert(port, segment);
        Ok(())
    }

    /// Detaches a virtual port (as `remove_port`, with its FDB entries) and lets another of
    /// its network's virtual ports on the segment take its place in the flood list.
    fn detach_vport(&mut self, port: PortId) {
        let Some(segment) = self.vports.segments.remove(&port) else {
            return;
        };
        let Some(vni) = self.port_network(port) else {
            return;
        };
        let _ = self.remove_port(port);
        let ports = &self.ports;
        let segments = &self.vports.segments;
        let Some(net) = self.networks.get_mut(&vni) else {
            return;
        };
        if net.ports.iter().any(|q| segments.get(q) == Some(&segment)) {
            return;
        }
        let heir = segments
            .iter()
            .filter(|&(q, s)| *s == segment && ports.get(q).is_some_and(|p| p.vni == vni))
            .map(|(&q, _)| q)
            .min();
        if let Some(q) = heir {
            net.ports.push(q);
        }
    }
}
