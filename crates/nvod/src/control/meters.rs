//! Flow-table meters (`/v1/meters`, nvo_pipeline::meters): numbered token-bucket policers that
//! rules police through with `meter:N`, one bucket per meter however many rules name it. A
//! meter is stored in the state (rate, burst) and restored before the flow rules and ACLs
//! that name it. A meter a rule names cannot be deleted; a rule naming a meter that does not
//! exist is refused. Changing one means deleting and adding it again.

use nvo_api as api;
use nvo_datapath::{Command, Reply};
use nvo_flow::Action;
use nvo_pipeline::meters::{check_meter_id, meter_profile, MAX_METERS};
use nvo_pipeline::FlowError;

use super::{unexpected, Control, Failure, Kind};
use crate::state::MeterState;

impl Control {
    /// `GET /v1/meters`.
    pub async fn meter_list(&self) -> Result<Vec<api::Meter>, Failure> {
        let counters = match self.query(Command::MeterCounters).await? {
            Reply::Meters(list) => list,
            other => return Err(unexpected(other)),
        };
        let rules = self.flow_dump().await?.rules;
        Ok(self
            .state
            .meters
            .iter()
            .map(|(&id, m)| {
                let users = rules
                    .iter()
                    .filter(|r| r.rule.actions.contains(&Action::Meter(id)))
                    .count();
                let mut shown = unused(spec_of(id, m));
                shown.rules = users as u64;
                if let Some((_, _, c)) = counters.iter().find(|(n, ..)| *n == id) {
                    shown.passed_frames = c.conformed_frames;
                    shown.passed_bytes = c.conformed_bytes;
                    shown.dropped_frames = c.policed_frames;
                    shown.dropped_bytes = c.policed_bytes;
                }
                shown
            })
            .collect())
    }

    /// `POST /v1/meters`.
    pub async fn meter_add(&mut self, spec: api::MeterSpec) -> Result<api::Meter, Failure> {
        check_meter_id(spec.id).map_err(|e| Failure::bad(e.to_string()))?;
        if self.state.meters.contains_key(&spec.id) {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "meter {} already exists; delete it first (nvo meter del {})",
                    spec.id, spec.id
                ),
            ));
        }
        if self.state.meters.len() >= MAX_METERS {
            return Err(Failure::new(
                Kind::Conflict,
                format!("{MAX_METERS} meters exist, the most a node holds; delete some first"),
            ));
        }
        let m = MeterState {
            rate: spec.rate,
            burst: spec.burst,
        };
        let profile = meter_profile(m.rate, m.burst);
        profile
            .check()
            .map_err(|e| Failure::bad(format!("meter {}: {e}", spec.id)))?;
        let mut new = self.state.clone();
        new.meters.insert(spec.id, m);
        self.commit(new, Command::SetMeter(spec.id, Some(profile)))
            .await?;
        log::info!(
            "meter {} added: {} bit/s, burst {} bytes",
            spec.id,
            m.rate,
            m.burst
        );
        Ok(unused(spec))
    }

    /// `DELETE /v1/meters/{id}`: refused while a rule names it.
    pub async fn meter_delete(&mut self, id: u32) -> Result<(), Failure> {
        if !self.state.meters.contains_key(&id) {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no meter {id}; GET /v1/meters (nvo meter show) lists them"),
            ));
        }
        let users = self
            .flow_dump()
            .await?
            .rules
            .iter()
            .filter(|r| r.rule.actions.contains(&Action::Meter(id)))
            .count();
        if users > 0 {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "meter {id} is used by {users} flow rule(s); delete them first (nvo flow \
                     show lists them, nvo flow del removes them)"
                ),
            ));
        }
        let mut new = self.state.clone();
        new.meters.remove(&id);
        self.commit(new, Command::SetMeter(id, None)).await?;
        log::info!("meter {id} deleted");
        Ok(())
    }

    /// Refuses actions naming a meter the state does not hold.
    pub(super) fn meters_exist(&self, actions: &[Action]) -> Result<(), FlowError> {
        match actions.iter().find_map(|a| match a {
            Action::Meter(n) if !self.state.meters.contains_key(n) => Some(*n),
            _ => None,
        }) {
            Some(n) => Err(FlowError::NoMeter(n)),
            None => Ok(()),
        }
    }

    /// The datapath commands that add the stored meters (at start, before the flow rules).
    pub(super) fn meters_restore(&self) -> Vec<(u32, Command)> {
        self.state
            .meters
            .iter()
            .map(|(&n, m)| {
                (
                    n,
                    Command::SetMeter(n, Some(meter_profile(m.rate, m.burst))),
                )
            })
            .collect()
    }
}

/// A meter as shown before any rule used it.
fn unused(spec: api::MeterSpec) -> api::Meter {
    api::Meter {
        spec,
        rules: 0,
        passed_frames: 0,
        passed_bytes: 0,
        dropped_frames: 0,
        dropped_bytes: 0,
    }
}

fn spec_of(id: u32, m: &MeterState) -> api::MeterSpec {
    api::MeterSpec {
        id,
        rate: m.rate,
        burst: m.burst,
    }
}
