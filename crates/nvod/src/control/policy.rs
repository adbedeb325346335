//! Identity policy (issue 18): endpoint labels (ports, addresses of a network), a network's
//! groups and rules, their counters and traces. The API's documents are checked and turned
//! into nvo-policy's types here; the state keeps the resolved specs and the labels; the
//! datapath gets one `Command::Policy` per change.

use std::net::IpAddr;
use std::sync::Arc;

use nvo_api as api;
use nvo_datapath::{Command, Reply};
use nvo_encap::builtin::ids::GENEVE;
use nvo_pipeline::policy::{PolicyCommand, PolicyCounters, PolicyReply, TraceQuery};
use nvo_pipeline::Vni;
use nvo_policy::{Action, GroupSpec, Labels, Policy, PolicySpec, Reason, RuleSpec};
use nvo_wire::geneve::identity;

use super::{unexpected, vni_of, Control, Failure, Kind};
use crate::convert;

/// Labels, checked.
fn labels(map: &api::LabelMap) -> Result<Labels, Failure> {
    Labels::new(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| Failure::bad(format!("labels: {e}")))
}

/// A document's groups and rules as nvo-policy's spec, every value checked.
pub fn spec_of(doc: &api::PolicyDoc) -> Result<Policy, Failure> {
    let mut groups = Vec::with_capacity(doc.groups.len().min(nvo_policy::rules::MAX_GROUPS));
    if doc.groups.len() > nvo_policy::rules::MAX_GROUPS {
        return Err(Failure::bad(format!(
            "{} groups; a network has at most {}",
            doc.groups.len(),
            nvo_policy::rules::MAX_GROUPS
        )));
    }
    if doc.rules.len() > nvo_policy::rules::MAX_RULES {
        return Err(Failure::bad(format!(
            "{} rules; a network has at most {}",
            doc.rules.len(),
            nvo_policy::rules::MAX_RULES
        )));
    }
    for g in &doc.groups {
        let id = u16::try_from(g.id)
            .ok()
            .filter(|&id| id != 0)
            .ok_or_else(|| {
                Failure::bad(format!(
                    "group {:?}: id {} is not 1 to 65535 (the VXLAN-GBP group policy id)",
                    g.name, g.id
                ))
            })?;
        let selector = match (&g.match_labels, &g.selector) {
            (Some(m), None) => {
                labels(m)
                    .map_err(|e| Failure::bad(format!("group {:?}: {}", g.name, e.message)))?;
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }
            (None, Some(s)) => s.clone(),
            _ => {
                return Err(Failure::bad(format!(
                    "group {:?}: give either match (labels) or selector, one of them",
                    g.name
                )))
            }
        };
        groups.push(GroupSpec {
            id,
            name: g.name.clone(),
            selector,
        });
    }
    let mut rules = Vec::with_capacity(doc.rules.len());
    for (i, r) in doc.rules.iter().enumerate() {
        let name = r.name.clone().unwrap_or_else(|| format!("rule-{}", i + 1));
        let action = match r.action.as_str() {
            "allow" => Action::Allow,
            "deny" => Action::Deny,
            other => {
                return Err(Failure::bad(format!(
                    "rule {name:?}: action {other:?} is not allow or deny"
                )))
            }
        };
        let ports = r
            .ports
            .iter()
            .map(|p| match p {
                api::PortDoc::Number(n) if (1..=65535).contains(n) => Ok(n.to_string()),
                api::PortDoc::Number(n) => Err(Failure::bad(format!(
                    "rule {name:?}: port {n} is not 1 to 65535"
                ))),
                api::PortDoc::Text(t) => Ok(t.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.push(RuleSpec {
            name,
            from: r.from.to_vec(),
            to: r.to.to_vec(),
            action,
            protocol: r.proto.clone(),
            ports,
        });
    }
    Policy::new(PolicySpec { groups, rules }).map_err(|e| Failure::bad(e.to_string()))
}

/// A protocol as rules write it, for a trace.
fn protocol(text: Option<&str>) -> Result<u8, Failure> {
    Ok(match text.unwrap_or("any") {
        "any" => 0,
        "tcp" => 6,
        "udp" => 17,
        "sctp" => 132,
        "icmp" => 1,
        "icmpv6" => 58,
        n => n.parse().map_err(|_| {
            Failure::bad(format!(
                "protocol {n:?} is not tcp, udp, sctp, icmp, icmpv6 or a number 0-255"
            ))
        })?,
    })
}

fn view(vni: u32, spec: &PolicySpec, c: &PolicyCounters) -> api::PolicyView {
    api::PolicyView {
        network: vni,
        groups: spec
            .groups
            .iter()
            .map(|g| api::GroupView {
                name: g.name.clone(),
                id: g.id,
                selector: g.selector.clone(),
            })
            .collect(),
        rules: spec
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| api::RuleView {
                name: r.name.clone(),
                from: r.from.clone(),
                to: r.to.clone(),
                proto: r.protocol.clone().unwrap_or_else(|| "any".to_owned()),
                ports: r.ports.clone(),
                action: match r.action {
                    Action::Allow => "allow".to_owned(),
                    Action::Deny => "deny".to_owned(),
                },
                packets: c.rules.get(i).copied().unwrap_or(0),
            })
            .collect(),
        verdicts: api::Verdicts {
            allowed: c.allowed,
            denied: c.denied,
            default_allowed: c.default_allowed,
            default_denied: c.default_denied,
            tracked: c.tracked,
            sender_applied: c.sender_applied,
            unknown_destination: c.unknown_destination,
            exempt: c.exempt,
            conntrack_full: c.conntrack_full,
        },
        datapath: if c.in_kernel { "kernel" } else { "nvod" }.to_owned(),
        kernel_lookups: api::KernelLookups {
            asked: c.kernel_lookups,
            skipped: c.kernel_lookups_skipped,
        },
    }
}

impl Control {
    fn no_policy(vni: Vni) -> Failure {
        Failure::new(
            Kind::NotFound,
            format!("network {vni} has no policy; apply one (nvo policy apply FILE)"),
        )
    }

    async fn policy_call(&self, command: PolicyCommand) -> Result<PolicyReply, Failure> {
        match self.query(Command::Policy(command)).await? {
            Reply::Policy(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// `PUT /v1/ports/{name}/labels` (empty: none).
    pub async fn label_port(
        &mut self,
        name: &str,
        map: api::LabelMap,
    ) -> Result<api::LabelMap, Failure> {
        let checked = labels(&map)?;
        let (Some(port), Some(&id)) = (self.state.ports.get(name), self.port_ids.get(name)) else {
            return Err(Failure::new(
                Kind::NotFound,
                format!("no port {name:?}; GET /v1/ports lists them"),
            ));
        };
        if port.vni == 0 {
            return Err(Failure::bad(format!(
                "port {name} is a vlan trunk; label its endpoints' addresses instead \
                 (nvo endpoint label IP --vni N ...)"
            )));
        }
        let mut new = self.state.clone();
        if map.is_empty() {
            new.port_labels.remove(name);
        } else {
            new.port_labels.insert(name.to_owned(), map.clone());
        }
        self.commit(new, Command::Policy(PolicyCommand::LabelPort(id, checked)))
            .await?;
        log::info!("port {name} labelled {map:?}");
        Ok(map)
    }

    /// `PUT /v1/networks/{vni}/labels/{ip}` (empty: none).
    pub async fn label_addr(
        &mut self,
        vni: &str,
        ip: &str,
        map: api::LabelMap,
    ) -> Result<api::LabelMap, Failure> {
        let vni = vni_of(vni)?;
        self.network_exists(vni)?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| Failure::bad(format!("{ip:?} is not an IPv4 or IPv6 address")))?;
        let checked = labels(&map)?;
        let mut new = self.state.clone();
        let net = new.addr_labels.entry(vni.0).or_default();
        if map.is_empty() {
            net.remove(&ip);
        } else {
            net.insert(ip, map.clone());
        }
        if net.is_empty() {
            new.addr_labels.remove(&vni.0);
        }
        let command = Command::Policy(PolicyCommand::LabelAddr(vni, ip, checked));
        self.commit(new, command).await?;
        log::info!("address {ip} of network {vni} labelled {map:?}");
        Ok(map)
    }

    /// `GET /v1/labels`.
    pub fn labels(&self) -> api::LabelsView {
        api::LabelsView {
            ports: self.state.port_labels.clone(),
            addresses: self.state.addr_labels.clone(),
        }
    }

    /// `PUT /v1/networks/{vni}/policy`.
    pub async fn policy_apply(
        &mut self,
        vni: &str,
        doc: api::PolicyDoc,
    ) -> Result<api::PolicyView, Failure> {
        let vni = vni_of(vni)?;
        if let Some(n) = doc.network.filter(|&n| n != u64::from(vni.0)) {
            return Err(Failure::bad(format!(
                "the document is for network {n}, the request for network {vni}"
            )));
        }
        self.network_exists(vni)?;
        if self.state.networks.get(&vni.0).is_some_and(|n| n.l3) {
            return Err(Failure::bad(format!(
                "network {vni} is an L3 network; identity policy applies to L2 networks"
            )));
        }
        self.check_identity_room(vni)?;
        let policy = spec_of(&doc)?;
        let spec = policy.spec().clone();
        let mut new = self.state.clone();
        new.policies.insert(vni.0, spec.clone());
        let flows = self.policy_flows.clone();
        let command = Command::Policy(PolicyCommand::Set(vni, Arc::new(policy), flows));
        self.commit(new, command).await?;
        log::info!(
            "network {vni}: policy of {} groups and {} rules applied",
            spec.groups.len(),
            spec.rules.len()
        );
        self.policy_view(vni).await
    }

    /// A policy makes a `geneve` network's frames carry the identity option, 8 bytes more per
    /// header: its MTU must leave room for them on the underlay, or full-size frames would not
    /// fit in one underlay packet. (Its default MTU does not reserve them: a network without a
    /// policy sends no option.)
    fn check_identity_room(&self, vni: Vni) -> Result<(), Failure> {
        let Some(net) = self.state.networks.get(&vni.0) else {
            return Ok(());
        };
        let profile = self.profiles.id(&net.encap).filter(|&id| id == GENEVE);
        let Some(profile) = profile.and_then(|id| self.profiles.profile(id)) else {
            return Ok(());
        };
        let option = u16::try_from(identity::LEN).unwrap_or(u16::MAX);
        let overhead = convert::overhead(profile, self.config.locator.is_ipv6()) + option;
        let max = self.config.underlay_mtu.saturating_sub(overhead);
        if net.mtu > max {
            return Err(Failure::bad(format!(
                "network {vni} is on geneve with mtu {}: a policy adds the {option}-byte Geneve \
                 identity option, and the {}-byte underlay leaves room for mtu {max} at most; \
                 create the network with mtu {max} or less",
                net.mtu, self.config.underlay_mtu
            )));
        }
        Ok(())
    }

    /// `DELETE /v1/networks/{vni}/policy`.
    pub async fn policy_delete(&mut self, vni: &str) -> Result<(), Failure> {
        let vni = vni_of(vni)?;
        self.policy_spec(vni)?;
        let mut new = self.state.clone();
        new.policies.remove(&vni.0);
        self.commit(new, Command::Policy(PolicyCommand::Remove(vni)))
            .await?;
        log::info!("network {vni}: policy removed");
        Ok(())
    }

    /// Network `vni`'s stored policy.
    fn policy_spec(&self, vni: Vni) -> Result<&PolicySpec, Failure> {
        self.state
            .policies
            .get(&vni.0)
            .ok_or_else(|| Self::no_policy(vni))
    }

    /// `GET /v1/networks/{vni}/policy`.
    pub async fn policy_show(&self, vni: &str) -> Result<api::PolicyView, Failure> {
        self.policy_view(vni_of(vni)?).await
    }

    /// Network `vni`'s policy with the datapath's counters.
    async fn policy_view(&self, vni: Vni) -> Result<api::PolicyView, Failure> {
        let spec = self.policy_spec(vni)?;
        match self.policy_call(PolicyCommand::Show(vni)).await? {
            PolicyReply::Counters(c) => Ok(view(vni.0, spec, &c)),
            other => Err(unexpected(Reply::Policy(other))),
        }
    }

    /// `GET /v1/policies`.
    pub async fn policies(&self) -> Result<Vec<api::PolicyView>, Failure> {
        let mut all = Vec::new();
        for &vni in self.state.policies.keys() {
            all.push(self.policy_view(Vni(vni)).await?);
        }
        Ok(all)
    }

    /// `POST /v1/networks/{vni}/policy/trace`.
    pub async fn policy_trace(
        &self,
        vni: &str,
        req: api::TraceRequest,
    ) -> Result<api::TraceAnswer, Failure> {
        let vni = vni_of(vni)?;
        let spec = self.policy_spec(vni)?;
        let query = TraceQuery {
            src: req.from,
            dst: req.to,
            proto: protocol(req.proto.as_deref())?,
            dport: req.dport,
        };
        let r = match self.policy_call(PolicyCommand::Trace(vni, query)).await? {
            PolicyReply::Trace(r) => r,
            other => return Err(unexpected(Reply::Policy(other))),
        };
        let group = |id: Option<u16>| match id {
            None => "unknown".to_owned(),
            Some(0) => "unlabelled".to_owned(),
            Some(id) => spec
                .groups
                .iter()
                .find(|g| g.id == id)
                .map_or_else(|| id.to_string(), |g| g.name.clone()),
        };
        let (rule, rule_index) = match r.reason {
            Reason::Rule(i) => (
                spec.rules
                    .get(i)
                    .map_or_else(|| format!("rule-{}", i + 1), |r| r.name.clone()),
                Some(i),
            ),
            Reason::DefaultDeny => ("default-deny".to_owned(), None),
            Reason::DefaultAllow => ("default-allow".to_owned(), None),
        };
        Ok(api::TraceAnswer {
            verdict: if r.allow { "allow" } else { "deny" }.to_owned(),
            rule,
            rule_index,
            from_group: group(r.src_group),
            to_group: group(r.dst_group),
        })
    }

    /// At start, once ports are attached: labels, then policies, from the state file.
    pub(super) async fn policy_restore(&mut self) -> Result<(), Failure> {
        let mut commands = Vec::new();
        for (name, map) in &self.state.port_labels {
            if let Some(&id) = self.port_ids.get(name) {
                commands.push(PolicyCommand::LabelPort(id, labels(map)?));
            }
        }
        for (&vni, addrs) in &self.state.addr_labels {
            for (&ip, map) in addrs {
                commands.push(PolicyCommand::LabelAddr(Vni(vni), ip, labels(map)?));
            }
        }
        for (&vni, spec) in &self.state.policies {
            let policy = Policy::new(spec.clone()).map_err(|e| {
                Failure::new(
                    Kind::Internal,
                    format!("restoring network {vni}'s policy from the state file: {e}"),
                )
            })?;
            let flows = self.policy_flows.clone();
            commands.push(PolicyCommand::Set(Vni(vni), Arc::new(policy), flows));
        }
        for command in commands {
            self.datapath
                .call(Command::Policy(command))
                .await
                .map_err(|e| {
                    Failure::new(
                        Kind::Internal,
                        format!("restoring policies from the state file: {e}"),
                    )
                })?;
        }
        Ok(())
    }
}
