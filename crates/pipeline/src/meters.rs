//! Meters (issue 17 item 3; OpenFlow 1.3 §5.7): numbered token-bucket policers that flow rules
//! police through with `meter:N`. A meter is one bucket, however many rules name it (OpenFlow's
//! semantics): its rate (bit/s) and burst (bytes) are a QoS profile without marking, and the
//! bucket is qos.rs's [`Policer`] — the same RFC 2697 single-rate, colour-blind meter a port's
//! QoS profile gets.
//!
//! A frame over the rate is dropped as `qos_policed`, the reason a port's policer gives too
//! (chosen when the drop slots shared with the eBPF programs were all taken; there are 64 now,
//! `NVO_DROP_SLOTS`, so a reason of its own would fit) and counted on the meter; a frame under
//! it goes on to the rule's next actions.
//!
//! One bucket across nvod's workers: each worker's pipeline holds a copy of every meter, but a
//! port a metered rule covers is read by worker 0 alone (the datapath pins it as it does a
//! policed port), so only worker 0's copy ever meets frames — the copy is the bucket, with no
//! lock or atomic per frame. A TAP port (one queue per worker) cannot be pinned: with several
//! workers, each worker's queue meets its own copy.

use std::collections::HashMap;
use std::time::Instant;

use crate::qos::{Policer, PolicerCounters, QosProfile};
use crate::Pipeline;

/// The most meters a node holds.
pub const MAX_METERS: usize = 1024;

/// The meters by number.
#[derive(Debug, Default)]
pub(crate) struct Meters {
    buckets: HashMap<u32, Policer>,
}

impl Meters {
    /// Whether meter `n` exists.
    pub(crate) fn contains(&self, n: u32) -> bool {
        self.buckets.contains_key(&n)
    }

    /// Whether a frame of `len` bytes at `now` passes meter `n` (counted there). A meter
    /// that does not exist lets it pass (rules naming one are refused at install).
    pub(crate) fn admit(&mut self, n: u32, len: usize, now: Instant) -> bool {
        self.buckets.get_mut(&n).is_none_or(|b| b.admit(len, now))
    }
}

/// Why a meter could not be changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeterError {
    /// Rate or burst out of range.
    #[error("meter {0}: {1}")]
    Profile(u32, crate::qos::QosError),
    /// [`MAX_METERS`] meters exist.
    #[error("{0} meters exist, the most a node holds; delete some first")]
    Full(usize),
    /// Meter 0 is not a meter (OpenFlow's meter ids start at 1).
    #[error("meter 0 is not allowed; meters are numbered 1 to 4294901760")]
    Zero,
    /// Meter numbers above OFPM_MAX (0xffff0000) are OpenFlow's virtual meters.
    #[error("meter {0} is out of range; meters are numbered 1 to 4294901760")]
    Range(u32),
    /// No such meter.
    #[error("no meter {0}")]
    Missing(u32),
    /// Rules police through it.
    #[error("meter {0} is used by {1} flow rule(s); delete them first")]
    InUse(u32, usize),
}

/// OFPM_MAX: the last meter number a switch may use (OpenFlow 1.3 §7.3.4.4).
pub const METER_MAX: u32 = 0xffff_0000;

/// A meter's rate and burst as the bucket applies them.
pub fn meter_profile(rate: u64, burst: u64) -> QosProfile {
    QosProfile {
        rate,
        burst,
        dscp: None,
        trust: false,
    }
}

/// Checks a meter number.
pub fn check_meter_id(n: u32) -> Result<(), MeterError> {
    match n {
        0 => Err(MeterError::Zero),
        n if n > METER_MAX => Err(MeterError::Range(n)),
        _ => Ok(()),
    }
}

impl Pipeline {
    /// Adds meter `n` with a full bucket, or replaces its rate and burst (a fresh bucket,
    /// counters kept at zero); `None` deletes it — refused while a rule names it.
    pub fn set_meter(&mut self, n: u32, profile: Option<QosProfile>) -> Result<(), MeterError> {
        check_meter_id(n)?;
        let Some(profile) = profile else {
            let users = self.meter_users(n);
            if users > 0 {
                return Err(MeterError::InUse(n, users));
            }
            return match self.flows.meters.buckets.remove(&n) {
                Some(_) => Ok(()),
                None => Err(MeterError::Missing(n)),
            };
        };
        profile.check().map_err(|e| MeterError::Profile(n, e))?;
        let buckets = &mut self.flows.meters.buckets;
        if !buckets.contains_key(&n) && buckets.len() >= MAX_METERS {
            return Err(MeterError::Full(MAX_METERS));
        }
        buckets.insert(n, Policer::new(profile));
        Ok(())
    }

    /// Every meter with its rate and burst and what it counted, by number.
    pub fn meter_counters(&self) -> Vec<(u32, QosProfile, PolicerCounters)> {
        let mut out: Vec<_> = self
            .flows
            .meters
            .buckets
            .iter()
            .map(|(&n, b)| (n, b.profile(), b.counters()))
            .collect();
        out.sort_unstable_by_key(|&(n, ..)| n);
        out
    }
}
