//! `POST /v1/trace` (`nvo trace PORT|underlay FRAME-SPEC`, as `ovs-appctl ofproto/trace`):
//! what the flow table and normal forwarding would do with a frame described in the flow
//! syntax — read only, nothing sent, nothing counted.
//!
//! ```text
//!  PORT FRAME-SPEC                       underlay FRAME-SPEC --vni N [--remote IP]
//!    key: the spec, in_port = PORT         network N? L2? (else a clear error)
//!    │                                     remote accepted (accept_remotes)? no → unknown_remote
//!    │                                     key: the spec, in_port = tunnel, tun_id = N
//!    └──────────────┬──────────────────────┘
//!                   ▼
//!        the datapath's lookup (Command::FlowLookup, no counter moves)
//!          rule → its actions, one step each      no rule → normal
//!          normal → where the port's network       normal → where delivery from the tunnel
//!                   sends it (flows.rs)                     sends it: a port, a flood to the
//!                                                           network's ports, or the drop
//! ```
//!
//! The port trace's normal forwarding is in flows.rs (`normal_trace`); this file holds what
//! both traces share and the underlay's own part.

use std::net::IpAddr;

use nvo_api as api;
use nvo_datapath::{Command, Reply};
use nvo_flow::show::format_match;
use nvo_flow::{Action, Field, Key, Match};
use nvo_openflow::FlowStat;
use nvo_pipeline::PortId;

use super::{unexpected, Control, Failure};

/// The `port` of a trace that starts in the tunnel.
pub const UNDERLAY: &str = "underlay";

impl Control {
    /// The frame a trace describes (flow syntax without actions): its match, as text later,
    /// and the key looked up, with `in_port` set.
    pub(super) fn trace_frame(&self, flow: &str, in_port: u32) -> Result<(Match, Key), Failure> {
        if flow.contains("actions=") {
            return Err(Failure::bad(
                "a trace takes the frame's fields alone, without actions=",
            ));
        }
        let text = if flow.trim().is_empty() {
            String::new()
        } else {
            format!("{flow},")
        };
        let pattern = self.parse_flow(&format!("{text}actions=drop"))?.pattern;
        let mut key = *pattern.value();
        key.set(Field::InPort, u128::from(in_port));
        Ok((pattern, key))
    }

    /// The rule the datapath's table picks for `key` (no counter moves), and the steps so
    /// far: the frame, the rule. The actions to follow: the rule's, or `normal` on a miss.
    pub(super) async fn trace_lookup(
        &self,
        key: Key,
        steps: &mut Vec<String>,
    ) -> Result<(Option<FlowStat>, Vec<Action>), Failure> {
        let rule = match self.query(Command::FlowLookup(key)).await? {
            Reply::FlowMatch(r) => r,
            other => return Err(unexpected(other)),
        };
        let actions = match &rule {
            Some(s) => {
                steps.push(format!("table 0: rule {}", self.flow_text(&s.rule)));
                s.rule.actions.clone()
            }
            None => {
                steps.push("table 0: no rule matches: normal forwarding".to_owned());
                vec![Action::Normal]
            }
        };
        Ok((rule, actions))
    }

    /// The steps and the outcome of `actions` for a frame from port `from` (`None`: from the
    /// tunnel, where `in_port` and `output:tunnel` are the hairpin nvo refuses; from a port,
    /// `output:tunnel` encapsulates to the `set_tunnel`/`tun_dst` before it); `normal` is what
    /// normal forwarding does with it.
    pub(super) fn trace_actions(
        &self,
        actions: &[Action],
        from: Option<&str>,
        normal: &str,
        steps: &mut Vec<String>,
    ) -> String {
        let mut result = Vec::new();
        if actions.is_empty() {
            steps.push("drop: counted as flow_drop".to_owned());
            result.push("drop".to_owned());
        }
        let hairpin = "hairpin: not sent back into the tunnel it came from (counted as hairpin)";
        let mut tunnel = (None, None);
        for a in actions {
            match (a, from) {
                (a, None) if hairpin_action(a) => steps.push(hairpin.to_owned()),
                (Action::SetTunnelKey(k), _) => tunnel.0 = Some(*k),
                (Action::SetTunnelDst(ip), _) => tunnel.1 = Some(*ip),
                (Action::Output(n), Some(_)) if PortId(*n) == PortId::TUNNEL => {
                    let vni = tunnel
                        .0
                        .map_or_else(|| "of the port's network".to_owned(), |k| k.to_string());
                    let to = tunnel
                        .1
                        .map_or_else(|| "nowhere".to_owned(), |ip| ip.to_string());
                    steps.push(format!("output to the tunnel: remote {to}, vni {vni}"));
                    result.push(format!("tunnel: remote {to}, vni {vni}"));
                }
                (Action::Output(n), _) => {
                    let name = self
                        .port_name_of(*n)
                        .unwrap_or_else(|| format!("{n} (no such port)"));
                    steps.push(format!("output to port {name}"));
                    result.push(format!("output:{name}"));
                }
                (Action::InPort, Some(port)) => {
                    steps.push(format!("output back to port {port}"));
                    result.push(format!("output:{port}"));
                }
                (Action::Normal, _) => {
                    steps.push(format!("normal forwarding: {normal}"));
                    result.push(format!("normal: {normal}"));
                }
                (edit, _) => steps.push(format!("rewrite: {edit}")),
            }
        }
        if result.is_empty() && !actions.is_empty() {
            let why = if from.is_none() && actions.iter().any(hairpin_action) {
                "drop (nothing sent but back into the tunnel; counted as hairpin)"
            } else {
                "drop (a rule of rewrites alone sends nothing; counted as flow_drop)"
            };
            result.push(why.to_owned());
        }
        result.join(", ")
    }

    /// `POST /v1/trace` with port `underlay`: a frame decapsulated for network `spec.vni`
    /// (from `spec.remote`), through the table as in_port=tunnel, tun_id=VNI, then delivery.
    pub(super) async fn trace_underlay(&self, spec: api::TraceSpec) -> Result<api::Trace, Failure> {
        let vni = spec.vni.ok_or_else(|| {
            Failure::bad(
                "a trace from the underlay needs the VNI the frame arrives with (--vni N; \"vni\" in the API)",
            )
        })?;
        let net = self.network(&vni.to_string()).await?;
        if net.l3 {
            return Err(Failure::bad(format!(
                "network {vni} is an L3 network: its tunnel packets do not meet the flow table"
            )));
        }
        let (pattern, mut key) = self.trace_frame(&spec.flow, PortId::TUNNEL.0)?;
        key.set(Field::TunKey, u128::from(vni));
        let from = match spec.remote {
            Some(r) => format!(" from remote {r}"),
            None => String::new(),
        };
        let mut steps = vec![format!(
            "frame: {} from the tunnel (in_port=tunnel, tun_id={vni}){from}",
            format_match(&pattern, &|n| self.port_name_of(n)),
        )];
        let refused = match spec.remote {
            Some(r) => (!self.accepts(&net, r).await?).then_some(r),
            None => None,
        };
        if let Some(remote) = refused {
            // from_decapsulated drops it before the table (tunnel_flows.rs).
            steps.push(format!(
                "network {vni} takes tunnel packets from known remotes only (accept_remotes: known) and {remote} is not one: dropped before the table"
            ));
            return Ok(api::Trace {
                port: UNDERLAY.to_owned(),
                port_id: PortId::TUNNEL.0,
                rule: None,
                steps,
                result: "drop: unknown_remote".to_owned(),
            });
        }
        let (rule, actions) = self.trace_lookup(key, &mut steps).await?;
        let normal = match actions.contains(&Action::Normal) {
            true => self.normal_underlay(&net, &key).await?,
            false => String::new(),
        };
        let result = self.trace_actions(&actions, None, &normal, &mut steps);
        Ok(api::Trace {
            port: UNDERLAY.to_owned(),
            port_id: PortId::TUNNEL.0,
            rule: rule.map(|s| self.flow_view(&s)),
            steps,
            result,
        })
    }

    /// Whether network `net` takes tunnel packets from `remote` (`accept_remotes`): any, or a
    /// remote of its flood list or of its static and EVPN FDB entries. The overlay nodes'
    /// locators, which a network also takes, are not looked at.
    async fn accepts(&self, net: &api::Network, remote: IpAddr) -> Result<bool, Failure> {
        if net.accept_remotes == api::AcceptRemotes::Any || net.flood.contains(&remote) {
            return Ok(true);
        }
        let entries = self.fdb(&net.vni.to_string()).await?;
        Ok(entries
            .iter()
            .any(|e| e.remote == Some(remote) && e.origin != api::Origin::Learned))
    }

    /// Where delivery from the tunnel sends a frame with `key`'s destination MAC in `net`:
    /// the port the FDB names, a flood to the network's ports (never back to the underlay),
    /// or the drop.
    async fn normal_underlay(&self, net: &api::Network, key: &Key) -> Result<String, Failure> {
        let vni = net.vni;
        let dst = key.get(Field::EthDst);
        let mac = mac_text(dst);
        let learn = if net.learn_tunnels {
            "its source MAC is learned behind the remote; "
        } else {
            ""
        };
        let why = match self.trace_fdb(vni, dst).await? {
            Ok(e) => {
                let origin = format!("{:?}", e.origin).to_lowercase();
                return Ok(match e.port {
                    Some(p) => {
                        format!("network {vni}, {learn}{mac} is {origin} in the FDB: to port {p}")
                    }
                    None => format!(
                        "network {vni}, {mac} is {origin} in the FDB behind another remote: dropped (remote_to_remote)"
                    ),
                });
            }
            Err(why) => why,
        };
        if net.ports.is_empty() {
            return Ok(format!(
                "network {vni}, {mac}: {why}: no local port to flood to: dropped (no_destination)"
            ));
        }
        Ok(format!(
            "network {vni}, {learn}{mac}: {why}: flooded to ports {:?} (never back to the underlay)",
            net.ports
        ))
    }

    /// The FDB entry of destination MAC `dst` (a key's field) in network `vni`, or why a
    /// frame to it is flooded (no MAC given, a group MAC, not in the FDB).
    pub(super) async fn trace_fdb(
        &self,
        vni: u32,
        dst: u128,
    ) -> Result<Result<api::FdbEntry, &'static str>, Failure> {
        if dst == 0 {
            return Ok(Err("no dl_dst given"));
        }
        if dst & (1 << 40) != 0 {
            return Ok(Err("broadcast/multicast"));
        }
        let mac = mac_text(dst);
        let entries = self.fdb(&vni.to_string()).await?;
        Ok(entries
            .into_iter()
            .find(|e| e.mac == mac)
            .ok_or("not in the FDB"))
    }
}

/// `in_port` or `output:tunnel`: back into the tunnel, for a tunnel frame.
fn hairpin_action(a: &Action) -> bool {
    matches!(a, Action::InPort) || *a == Action::Output(PortId::TUNNEL.0)
}

/// A MAC (the low 48 bits of a key field) as text.
pub(super) fn mac_text(v: u128) -> String {
    let bytes: Vec<String> = (0..6)
        .rev()
        .map(|i| format!("{:02x}", (v >> (8 * i)) & 0xff))
        .collect();
    bytes.join(":")
}
