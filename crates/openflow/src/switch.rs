//! What the session needs from the switch it speaks for (nvod, or a test double), and the
//! OpenFlow semantics of a FLOW_MOD on an [`nvo_flow::Classifier`] (§6.4), which any such
//! switch can use.

use std::time::{Duration, Instant};

use nvo_flow::{Action, Classifier, ClassifierError, Match, Rule, RuleId};

use crate::wire::{port, OfError};

/// A port as PORT_DESC describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortDesc {
    /// OpenFlow port number.
    pub port_no: u32,
    /// Interface name (at most 15 bytes are sent).
    pub name: String,
    /// Its MAC.
    pub mac: [u8; 6],
    /// Whether its link is up.
    pub up: bool,
}

/// A port's counters, as PORT_STATS carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortStats {
    /// OpenFlow port number.
    pub port_no: u32,
    #[allow(missing_docs)]
    pub rx_packets: u64,
    #[allow(missing_docs)]
    pub tx_packets: u64,
    #[allow(missing_docs)]
    pub rx_bytes: u64,
    #[allow(missing_docs)]
    pub tx_bytes: u64,
    #[allow(missing_docs)]
    pub rx_dropped: u64,
    #[allow(missing_docs)]
    pub tx_dropped: u64,
    /// Since the port was added.
    pub duration: Duration,
}

/// A FLOW_MOD's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// OFPFC_ADD.
    Add,
    /// OFPFC_MODIFY (`strict`: MODIFY_STRICT).
    Modify {
        /// Same match and priority only.
        strict: bool,
    },
    /// OFPFC_DELETE (`strict`: DELETE_STRICT).
    Delete {
        /// Same match and priority only.
        strict: bool,
    },
}

/// A FLOW_MOD, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMod {
    /// What to do.
    pub command: Command,
    /// The rule's cookie (ADD), or with `cookie_mask` which rules (MODIFY, DELETE).
    pub cookie: u64,
    /// Which cookie bits must match (MODIFY, DELETE).
    pub cookie_mask: u64,
    /// Seconds without a packet before removal (0: never).
    pub idle_timeout: u16,
    /// Seconds before removal (0: never).
    pub hard_timeout: u16,
    /// Priority.
    pub priority: u16,
    /// DELETE: only rules with an output to this port (ANY: no filter).
    pub out_port: u32,
    /// OFPFF_RESET_COUNTS on MODIFY.
    pub reset_counts: bool,
    /// The match.
    pub pattern: Match,
    /// The actions.
    pub actions: Vec<Action>,
}

/// Which rules a stats request is about (loose: rules within `pattern`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowFilter {
    /// Only rules with an output to this port (ANY: no filter).
    pub out_port: u32,
    /// With `cookie_mask`: which cookies.
    pub cookie: u64,
    /// Which cookie bits must match.
    pub cookie_mask: u64,
    /// Rules within this match.
    pub pattern: Match,
}

/// One rule and its counters, as FLOW stats carry them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStat {
    /// The rule.
    pub rule: Rule<Vec<Action>>,
    /// Packets it matched.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Since it was installed.
    pub duration: Duration,
}

/// What a session asks of the switch.
pub trait Switch {
    /// The datapath ID FEATURES_REPLY gives.
    fn datapath_id(&self) -> u64;
    /// Its ports.
    fn ports(&self) -> Vec<PortDesc>;
    /// Counters of port `port_no`, or of every port for [`port::ANY`].
    fn port_stats(&self, port_no: u32) -> Result<Vec<PortStats>, OfError>;
    /// Applies a FLOW_MOD.
    fn flow_mod(&mut self, m: FlowMod) -> Result<(), OfError>;
    /// Adds or deletes a meter (METER_MOD, meter.rs).
    fn meter_mod(&mut self, m: crate::meter::MeterMod) -> Result<(), OfError>;
    /// The rules `filter` selects, best first.
    fn flows(&self, filter: &FlowFilter) -> Vec<FlowStat>;
    /// (rules installed, lookups, lookups that matched a rule) of the one table.
    fn table_stats(&self) -> (u32, u64, u64);
    /// The most rules the table takes.
    fn table_capacity(&self) -> u32;
    /// Sends `frame` as if it came in on `in_port` ([`port::CONTROLLER`] for none) through
    /// `actions`.
    fn packet_out(&mut self, in_port: u32, actions: &[Action], frame: &[u8])
        -> Result<(), OfError>;
}

/// Whether `actions` send to `port_no` (ANY: always).
pub fn outputs_to(actions: &[Action], port_no: u32) -> bool {
    port_no == port::ANY || actions.contains(&Action::Output(port_no))
}

/// A FLOW_MOD applied to a classifier as §6.4 says: ADD replaces a rule of the same match and
/// priority; MODIFY changes the actions of the rules it selects (keeping their counters unless
/// `reset_counts`) and adds nothing when none is selected (OpenFlow 1.3); DELETE removes
/// them. Non-strict commands select every rule within the match; strict ones the rule with
/// exactly that match and priority. Returns the rules removed (DELETE).
pub fn apply_flow_mod(
    table: &mut Classifier<Vec<Action>>,
    m: FlowMod,
    now: Instant,
) -> Result<Vec<RuleId>, OfError> {
    let cookie_ok = |r: &Rule<Vec<Action>>| r.cookie & m.cookie_mask == m.cookie & m.cookie_mask;
    let selected = |id: RuleId, r: &Rule<Vec<Action>>, strict: bool| {
        let _ = id;
        cookie_ok(r)
            && outputs_to(&r.actions, m.out_port)
            && if strict {
                r.pattern == m.pattern && r.priority == m.priority
            } else {
                r.pattern.within(&m.pattern)
            }
    };
    match m.command {
        Command::Add => {
            let mut rule = Rule::new(m.priority, m.pattern, m.actions);
            rule.cookie = m.cookie;
            rule.idle_timeout = secs(m.idle_timeout);
            rule.hard_timeout = secs(m.hard_timeout);
            table.insert(rule, now).map_err(|e| match e {
                ClassifierError::Full(_) => OfError::FLOW_MOD_TABLE_FULL,
            })?;
            Ok(Vec::new())
        }
        Command::Modify { strict } => {
            let ids: Vec<RuleId> = table
                .rules()
                .into_iter()
                .filter(|(id, r, _)| selected(*id, r, strict))
                .map(|(id, _, _)| id)
                .collect();
            for id in ids {
                if m.reset_counts {
                    if let Some((mut rule, _)) = table.remove(id) {
                        rule.actions = m.actions.clone();
                        let _ = table.insert(rule, now);
                    }
                } else {
                    table.set_actions(id, m.actions.clone());
                }
            }
            Ok(Vec::new())
        }
        Command::Delete { strict } => Ok(table
            .remove_where(|id, r| selected(id, r, strict))
            .into_iter()
            .map(|(id, _, _)| id)
            .collect()),
    }
}

/// The FLOW stats of a classifier's rules `filter` selects.
pub fn flow_stats(
    table: &Classifier<Vec<Action>>,
    filter: &FlowFilter,
    now: Instant,
) -> Vec<FlowStat> {
    table
        .rules()
        .into_iter()
        .filter(|(_, r, _)| {
            r.cookie & filter.cookie_mask == filter.cookie & filter.cookie_mask
                && outputs_to(&r.actions, filter.out_port)
                && r.pattern.within(&filter.pattern)
        })
        .map(|(_, r, s)| FlowStat {
            rule: r.clone(),
            packets: s.packets,
            bytes: s.bytes,
            duration: now.saturating_duration_since(s.installed),
        })
        .collect()
}

fn secs(s: u16) -> Option<Duration> {
    (s > 0).then(|| Duration::from_secs(u64::from(s)))
}
