//! The pipeline's QoS operations (qos.rs has the model): attaching a profile's policer to a
//! port or virtual port, policing a port's frames at `from_port`, and reading the counters.

use std::time::Instant;

use crate::actions::{Action, Actions};
use crate::pipeline::count_drop;
use crate::qos::{Policer, PolicerCounters, QosProfile, MAX_POLICED};
use crate::{DropReason, Pipeline, PortId, TableError};

impl Pipeline {
    /// Attaches `profile` to port `port` (a port, a trunk's circuit or a virtual port), with a
    /// full bucket, replacing what it had; `None` detaches it.
    pub fn set_qos(&mut self, port: PortId, profile: Option<QosProfile>) -> Result<(), TableError> {
        if !self.ports.contains_key(&port) {
            return Err(TableError::NoSuchPort(port));
        }
        let Some(profile) = profile else {
            self.policers.remove(&port);
            return Ok(());
        };
        profile.check().map_err(TableError::Qos)?;
        if !self.policers.contains_key(&port) && self.policers.len() >= MAX_POLICED {
            return Err(crate::control::full("policed ports", MAX_POLICED));
        }
        self.policers.insert(port, Policer::new(profile));
        Ok(())
    }

    /// The profile attached to `port`, if any.
    pub fn qos(&self, port: PortId) -> Option<QosProfile> {
        self.policers.get(&port).map(Policer::profile)
    }

    /// Every policed port with its profile and counters.
    pub fn qos_counters(&self) -> Vec<(PortId, QosProfile, PolicerCounters)> {
        let mut out: Vec<_> = self
            .policers
            .iter()
            .map(|(&p, pol)| (p, pol.profile(), pol.counters()))
            .collect();
        out.sort_unstable_by_key(|&(p, ..)| p);
        out
    }

    /// Polices a frame of `len` bytes from `port` at `now`: true when it is dropped
    /// (`qos_policed`, counted in the port, which also counts it received), with `actions`
    /// cleared and holding the drop.
    pub(crate) fn police(
        &mut self,
        port: PortId,
        len: usize,
        now: Instant,
        actions: &mut Actions,
    ) -> bool {
        let Some(policer) = self.policers.get_mut(&port) else {
            return false;
        };
        if policer.admit(len, now) {
            return false;
        }
        actions.clear();
        let counters = self.ports.get_mut(&port).map(|p| {
            p.counters.rx_frames += 1;
            p.counters.rx_bytes += len as u64;
            &mut p.counters
        });
        count_drop(&mut self.drops, counters, DropReason::QosPoliced);
        actions.push(Action::Drop(DropReason::QosPoliced));
        true
    }
}
