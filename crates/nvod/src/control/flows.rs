//! The flow table behind `/v1/flows`, `nvo flow …` and the OpenFlow listener: rules in the
//! flow syntax of `ovs-ofctl`, ports by name or by number (nvod's port id, which is also the
//! OpenFlow port number), every change an OpenFlow FLOW_MOD.
//!
//! A change follows the control order: the new desired state is computed first (the stored
//! rules in a scratch classifier, the FLOW_MOD applied to it with OpenFlow's semantics),
//! journaled, then the datapath runs the FLOW_MOD. Only rules without timeouts are stored —
//! a rule with an idle or hard timeout is transient by its nature and is not restored after a
//! restart. Stored rules name ports by interface name, since port ids are chosen anew at every
//! start; a stored rule whose port is gone is skipped at restore, with a warning.

use std::time::{Duration, Instant};

use nvo_api as api;
use nvo_datapath::{Command, FlowDump, Reply};
use nvo_flow::show::{format_flow, format_match};
use nvo_flow::syntax::{parse, Flow, DEFAULT_PRIORITY};
use nvo_flow::{Action, Classifier, Field, Match, Rule};
use nvo_openflow::wire::port;
use nvo_openflow::{apply_flow_mod, Command as OfCommand, FlowMod, FlowStat};
use nvo_pipeline::flows::{check_actions, check_here};
use nvo_pipeline::{FlowError, PortId, Vni, MAX_FLOWS};

use super::trace::{mac_text, UNDERLAY};
use super::{unexpected, Control, Failure};

/// The name of [`PortId::TUNNEL`] in the flow syntax (`in_port=tunnel`, `output:tunnel`).
pub const TUNNEL: &str = "tunnel";

impl Control {
    /// The port id of interface (or circuit) `name`; `tunnel` is [`PortId::TUNNEL`], a name no
    /// port may take (add_port refuses it).
    pub fn port_number(&self, name: &str) -> Option<u32> {
        match name {
            TUNNEL => Some(PortId::TUNNEL.0),
            _ => self.port_ids.get(name).map(|id| id.0),
        }
    }

    /// The interface (or circuit) name of port id `n`; `tunnel` for [`PortId::TUNNEL`].
    pub fn port_name_of(&self, n: u32) -> Option<String> {
        match PortId(n) {
            PortId::TUNNEL => Some(TUNNEL.to_owned()),
            id => self.port_name(id).map(str::to_owned),
        }
    }

    /// The checks of tunnel actions that need this host (nvo_pipeline's flow_tunnel.rs): a
    /// `tun_dst` of the underlay's family, a `set_tunnel` VNI that is an L2 network here.
    pub(super) fn tunnel_here(&self, actions: &[Action]) -> Result<(), FlowError> {
        let l2 = |v: Vni| self.state.networks.get(&v.0).is_some_and(|n| !n.l3);
        Ok(check_here(actions, self.config.locator, &l2)?)
    }

    /// Every port as OpenFlow numbers it: (id, name).
    pub fn port_numbers(&self) -> Vec<(u32, String)> {
        self.port_ids
            .iter()
            .map(|(name, id)| (id.0, name.clone()))
            .collect()
    }

    pub(super) fn parse_flow(&self, text: &str) -> Result<Flow, Failure> {
        parse(text, &|name| self.port_number(name))
            .map_err(|e| Failure::bad(format!("flow {text:?}: {e}")))
    }

    /// `pattern` restricted to port `name` (its `in_port`).
    fn on_port(&self, name: Option<&str>, pattern: Match) -> Result<Match, Failure> {
        let Some(name) = name else {
            return Ok(pattern);
        };
        let id = self.port_number(name).ok_or_else(|| {
            Failure::bad(format!(
                "no port named {name:?}; GET /v1/ports (nvo port list) shows them"
            ))
        })?;
        let (value, mask) = pattern.field(Field::InPort);
        if mask != 0 && value != u128::from(id) {
            return Err(Failure::bad(format!(
                "the flow's in_port is not port {name}; leave in_port out or name the same port"
            )));
        }
        Ok(pattern.with(Field::InPort, u128::from(id)))
    }

    /// `POST /v1/flows`.
    pub async fn flow_add(&mut self, spec: api::FlowSpec) -> Result<(), Failure> {
        let rule = self.parse_flow(&spec.flow)?;
        let pattern = self.on_port(spec.port.as_deref(), rule.pattern)?;
        self.acl_guard_add(&rule, &pattern)?;
        let secs =
            |t: Option<Duration>| t.map_or(0, |t| u16::try_from(t.as_secs()).unwrap_or(u16::MAX));
        self.flow_mod(FlowMod {
            command: OfCommand::Add,
            cookie: rule.cookie,
            cookie_mask: 0,
            idle_timeout: secs(rule.idle_timeout),
            hard_timeout: secs(rule.hard_timeout),
            priority: rule.priority,
            out_port: port::ANY,
            reset_counts: false,
            pattern,
            actions: rule.actions,
        })
        .await
    }

    /// `POST /v1/flows/delete`: how many rules went.
    pub async fn flow_delete(&mut self, d: api::FlowDelete) -> Result<api::FlowsDeleted, Failure> {
        let (pattern, priority) = match d.pattern.as_deref().map(str::trim) {
            Some(t) if t.contains("actions=") => {
                return Err(Failure::bad(format!(
                    "match {t:?} names actions; a delete takes the match alone (e.g. tcp,tp_dst=22)"
                )))
            }
            Some(t) if !t.is_empty() => {
                let r = self.parse_flow(&format!("{t},actions=drop"))?;
                (r.pattern, r.priority)
            }
            _ => (Match::any(), DEFAULT_PRIORITY),
        };
        let pattern = self.on_port(d.port.as_deref(), pattern)?;
        self.acl_guard_delete(&pattern, priority, d.strict)?;
        let before = self.flow_dump().await?.rules.len();
        self.flow_mod(FlowMod {
            command: OfCommand::Delete { strict: d.strict },
            cookie: 0,
            cookie_mask: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            priority,
            out_port: port::ANY,
            reset_counts: false,
            pattern,
            actions: Vec::new(),
        })
        .await?;
        let after = self.flow_dump().await?.rules.len();
        Ok(api::FlowsDeleted {
            deleted: before.saturating_sub(after),
        })
    }

    /// A FLOW_MOD from the API or an OpenFlow controller: stored (rules without timeouts),
    /// then applied.
    pub async fn flow_mod(&mut self, m: FlowMod) -> Result<(), Failure> {
        if !matches!(m.command, OfCommand::Delete { .. }) {
            check_actions(&m.actions)
                .and_then(|()| self.meters_exist(&m.actions))
                .and_then(|()| self.tunnel_here(&m.actions))
                .map_err(|e| Failure::bad(e.to_string()))?;
        }
        let mut new = self.state.clone();
        let timed = m.idle_timeout > 0 || m.hard_timeout > 0;
        let mut rule = Rule::new(m.priority, m.pattern, m.actions.clone());
        rule.cookie = m.cookie;
        match m.command {
            // An add replaces the rule of the same match and priority: one stored entry changes
            // (a rule with timeouts is not stored, and replaces a stored one).
            OfCommand::Add if timed => drop(new.flows.remove(&self.flow_identity(&rule))),
            OfCommand::Add => drop(
                new.flows
                    .insert(self.flow_identity(&rule), self.flow_text(&rule)),
            ),
            OfCommand::Delete { strict: true } => {
                drop(new.flows.remove(&self.flow_identity(&rule)))
            }
            // Loose deletes and modifies: the stored rules through the FLOW_MOD's semantics.
            _ => new.flows = self.stored_after(&m),
        }
        self.commit(new, Command::FlowMod(m)).await?;
        self.timed_flows |= timed;
        Ok(())
    }

    /// The stored rules after FLOW_MOD `m` (OpenFlow's semantics on a scratch classifier).
    fn stored_after(&self, m: &FlowMod) -> std::collections::BTreeMap<String, String> {
        let now = Instant::now();
        let mut scratch = Classifier::new(MAX_FLOWS);
        for text in self.state.flows.values() {
            if let Ok(rule) = self.parse_flow(text) {
                let _ = scratch.insert(rule, now);
            }
        }
        // The datapath refuses what does not fit; the stored rules are a subset of its table.
        let _ = apply_flow_mod(&mut scratch, m.clone(), now);
        scratch
            .rules()
            .into_iter()
            .filter(|(_, r, _)| r.idle_timeout.is_none() && r.hard_timeout.is_none())
            .map(|(_, r, _)| (self.flow_identity(r), self.flow_text(r)))
            .collect()
    }

    /// Removes the rules whose idle or hard timeout passed (called once a second). nvod does
    /// it, not each datapath worker on its own: a rule idle on one worker may be busy on
    /// another, and every worker must keep or drop it together (the datapath's `idle` is the
    /// least over the workers).
    pub async fn expire_flows(&mut self) -> Result<usize, Failure> {
        if !self.timed_flows {
            return Ok(0);
        }
        let d = self.flow_dump().await?;
        let timed = |r: &Flow| r.idle_timeout.is_some() || r.hard_timeout.is_some();
        self.timed_flows = d.rules.iter().any(|s| timed(&s.rule));
        let due: Vec<FlowMod> = d
            .rules
            .iter()
            .zip(&d.idle)
            .filter(|(s, idle)| {
                s.rule.hard_timeout.is_some_and(|t| s.duration >= t)
                    || s.rule.idle_timeout.is_some_and(|t| **idle >= t)
            })
            .map(|(s, _)| FlowMod {
                command: OfCommand::Delete { strict: true },
                cookie: 0,
                cookie_mask: 0,
                idle_timeout: 0,
                hard_timeout: 0,
                priority: s.rule.priority,
                out_port: port::ANY,
                reset_counts: false,
                pattern: s.rule.pattern,
                actions: Vec::new(),
            })
            .collect();
        let n = due.len();
        for m in due {
            self.flow_mod(m).await?;
        }
        Ok(n)
    }

    /// `priority=P,MATCH`: what makes a rule one rule.
    fn flow_identity(&self, r: &Flow) -> String {
        let m = format_match(&r.pattern, &|n| self.port_name_of(n));
        format!("priority={},{m}", r.priority)
    }

    /// The rule in the flow syntax, ports by name where known (outputs too).
    pub fn flow_text(&self, r: &Flow) -> String {
        let text = format_flow(r, &|n| self.port_name_of(n));
        let head = text.split(" actions=").next().unwrap_or_default();
        let actions: Vec<String> = r
            .actions
            .iter()
            .map(|a| match a {
                Action::Output(n) => format!(
                    "output:{}",
                    self.port_name_of(*n).unwrap_or_else(|| n.to_string())
                ),
                other => other.to_string(),
            })
            .collect();
        let actions = if actions.is_empty() {
            "drop".to_owned()
        } else {
            actions.join(",")
        };
        if head.starts_with("actions=") || head.is_empty() {
            format!("actions={actions}")
        } else {
            format!("{head} actions={actions}")
        }
    }

    /// A rule with its counters as the API shows it.
    pub(super) fn flow_view(&self, s: &FlowStat) -> api::Flow {
        api::Flow {
            flow: self.flow_text(&s.rule),
            priority: s.rule.priority,
            cookie: s.rule.cookie,
            n_packets: s.packets,
            n_bytes: s.bytes,
            duration_s: s.duration.as_secs_f64(),
        }
    }

    /// The datapath's table.
    pub async fn flow_dump(&self) -> Result<FlowDump, Failure> {
        match self.query(Command::Flows).await? {
            Reply::Flows(d) => Ok(d),
            other => Err(unexpected(other)),
        }
    }

    /// `GET /v1/flows[?port=NAME]`: every rule, or those that apply to one port (its own and
    /// those without `in_port`).
    pub async fn flows(&self, port: Option<&str>) -> Result<api::FlowTable, Failure> {
        let id = match port {
            Some(name) => Some(self.port_number(name).ok_or_else(|| {
                Failure::new(
                    super::Kind::NotFound,
                    format!("no port named {name:?}; GET /v1/ports (nvo port list) shows them"),
                )
            })?),
            None => None,
        };
        let d = self.flow_dump().await?;
        let rules = d.rules.len();
        let flows = d
            .rules
            .iter()
            .filter(|s| {
                let (v, m) = s.rule.pattern.field(Field::InPort);
                id.is_none_or(|id| m == 0 || v == u128::from(id))
            })
            .map(|s| self.flow_view(s))
            .collect();
        Ok(api::FlowTable {
            flows,
            rules,
            capacity: d.capacity,
            lookups: d.lookups,
            matched: d.matched,
        })
    }

    /// Deletes the rules whose in_port is port `name`, one of its VLAN circuits or one of its
    /// virtual ports (the port was removed). A failure is logged: the port is gone either way.
    pub(super) async fn forget_port_flows(&mut self, name: &str) {
        let circuit = format!("{name}.");
        let vport = format!("{name}/");
        let ids: Vec<u32> = self
            .port_ids
            .iter()
            .filter(|(n, _)| *n == name || n.starts_with(&circuit) || n.starts_with(&vport))
            .map(|(_, id)| id.0)
            .collect();
        for id in ids {
            let covered = self.flow_dump().await.is_ok_and(|d| {
                d.rules.iter().any(|s| {
                    s.rule.pattern.field(Field::InPort) == (u128::from(id), u128::from(u32::MAX))
                })
            });
            if !covered {
                continue;
            }
            let m = FlowMod {
                command: OfCommand::Delete { strict: false },
                cookie: 0,
                cookie_mask: 0,
                idle_timeout: 0,
                hard_timeout: 0,
                priority: DEFAULT_PRIORITY,
                out_port: port::ANY,
                reset_counts: false,
                pattern: Match::any().with(Field::InPort, u128::from(id)),
                actions: Vec::new(),
            };
            if let Err(e) = self.flow_mod(m).await {
                log::warn!("the flow rules of removed port {name} stay: {}", e.message);
            }
        }
    }

    /// Applies the stored rules at start (after the ports, whose names they use).
    pub(super) async fn restore_flows(&mut self) {
        let stored: Vec<String> = self.state.flows.values().cloned().collect();
        for text in stored {
            let rule = match self.parse_flow(&text) {
                Ok(r) => r,
                Err(e) => {
                    log::warn!("stored flow not restored: {}", e.message);
                    continue;
                }
            };
            let m = FlowMod {
                command: OfCommand::Add,
                cookie: rule.cookie,
                cookie_mask: 0,
                idle_timeout: 0,
                hard_timeout: 0,
                priority: rule.priority,
                out_port: port::ANY,
                reset_counts: false,
                pattern: rule.pattern,
                actions: rule.actions,
            };
            if let Err(e) = self.datapath.call(Command::FlowMod(m)).await {
                log::warn!("stored flow {text:?} not restored: {e}");
            }
        }
    }

    /// `POST /v1/trace` (`nvo trace`): the rule the table picks for a frame described in the
    /// flow syntax, its actions, and where normal forwarding would send it — read only
    /// (trace.rs; `underlay`: a frame from the tunnel).
    pub async fn trace(&self, spec: api::TraceSpec) -> Result<api::Trace, Failure> {
        if spec.port == UNDERLAY {
            return self.trace_underlay(spec).await;
        }
        if spec.vni.is_some() || spec.remote.is_some() {
            return Err(Failure::bad(
                "a VNI and a remote are for frames from the tunnel: trace port underlay (nvo trace underlay FRAME-SPEC --vni N)",
            ));
        }
        let id = self.port_number(&spec.port).ok_or_else(|| {
            Failure::bad(format!(
                "no port named {:?}; GET /v1/ports (nvo port list) shows them, and port underlay traces a frame from the tunnel",
                spec.port
            ))
        })?;
        let (pattern, key) = self.trace_frame(&spec.flow, id)?;
        let mut steps = vec![format!(
            "frame: {} from port {} (id {id})",
            format_match(&pattern, &|n| self.port_name_of(n)),
            spec.port
        )];
        let (rule, actions) = self.trace_lookup(key, &mut steps).await?;
        let normal = match actions.contains(&Action::Normal) {
            true => self.normal_trace(&spec.port, &key).await?,
            false => String::new(),
        };
        let result = self.trace_actions(&actions, Some(&spec.port), &normal, &mut steps);
        Ok(api::Trace {
            port: spec.port,
            port_id: id,
            rule: rule.map(|s| self.flow_view(&s)),
            steps,
            result,
        })
    }

    /// Where normal forwarding sends a frame with `key`'s destination MAC from port `name`.
    async fn normal_trace(&self, name: &str, key: &nvo_flow::Key) -> Result<String, Failure> {
        // A VLAN circuit (TRUNK.VID) is in its trunk's map.
        let vni = self
            .state
            .ports
            .get(name)
            .map(|p| p.vni)
            .filter(|v| *v != 0)
            .or_else(|| {
                let (trunk, vid) = name.rsplit_once('.')?;
                let v = self.state.ports.get(trunk)?.vlan.as_ref()?;
                v.vlans.get(&vid.parse().ok()?).copied()
            });
        let Some(vni) = vni else {
            return Ok("the port's network is unknown".to_owned());
        };
        let dst = key.get(Field::EthDst);
        let mac = mac_text(dst);
        let why = match self.trace_fdb(vni, dst).await? {
            Ok(e) => {
                let to = match (&e.port, e.remote, e.node) {
                    (Some(p), _, _) => format!("port {p}"),
                    (_, Some(r), _) => format!("remote {r} (tunnel, vni {vni})"),
                    (_, _, Some(n)) => format!("overlay node {n} (vni {vni})"),
                    _ => "nowhere".to_owned(),
                };
                let origin = format!("{:?}", e.origin).to_lowercase();
                return Ok(format!(
                    "network {vni}, {mac} is {origin} in the FDB: to {to}"
                ));
            }
            Err(why) => why,
        };
        let ports: Vec<&str> = self
            .state
            .ports
            .iter()
            .filter(|(n, p)| p.vni == vni && n.as_str() != name)
            .map(|(n, _)| n.as_str())
            .collect();
        let remotes = self
            .state
            .networks
            .get(&vni)
            .map(|n| n.flood.clone())
            .unwrap_or_default();
        Ok(format!(
            "network {vni}, {mac}: {why}: flooded to ports {ports:?} and remotes {remotes:?}"
        ))
    }

    /// PACKET_OUT.
    pub async fn packet_out(
        &self,
        in_port: Option<PortId>,
        actions: Vec<Action>,
        frame: Vec<u8>,
    ) -> Result<(), Failure> {
        self.query(Command::PacketOut {
            in_port,
            actions,
            frame,
        })
        .await?;
        Ok(())
    }

    /// Every port's counters, by id (OpenFlow's PORT_STATS), and the tunnel's: the tunnel
    /// packets received and sent (outer bytes), as the underlay counters count them (both
    /// datapaths; drops there are by reason, not per port, so none are shown).
    pub async fn port_counters(&self) -> Result<Vec<(u32, nvo_pipeline::PortCounters)>, Failure> {
        match self.query(Command::Counters).await? {
            Reply::Counters(c, ..) => {
                let u = &c.underlay;
                let tunnel = nvo_pipeline::PortCounters {
                    rx_frames: u.rx_packets,
                    rx_bytes: u.rx_bytes,
                    tx_frames: u.tx_packets,
                    tx_bytes: u.tx_bytes,
                    ..Default::default()
                };
                let ports = c.ports.iter().map(|(id, pc)| (id.0, *pc));
                Ok(ports.chain([(PortId::TUNNEL.0, tunnel)]).collect())
            }
            other => Err(unexpected(other)),
        }
    }
}
