//! One network's policy: groups (identities) defined by label selectors, and allow/deny rules
//! from groups to groups, resolved into a table the datapath can ask.
//!
//! ```text
//!  identity(labels)        the lowest-numbered group whose selector selects the labels;
//!                          0 (no group: "unlabelled") when none does
//!  decide(from, to, proto, port)
//!    a deny rule matches               → deny   (deny wins, as in Cilium)
//!    else an allow rule matches        → allow
//!    else `to` is selected by a policy → deny   (default deny for selected endpoints)
//!    else                              → allow  (endpoints no rule names stay open)
//! ```
//!
//! A group is "selected" when a rule names it as a destination (or a rule's destination is
//! `any`). Rules are enforced where the destination lives (ingress) and, with the same
//! answer, where the source lives (egress): the sender drops early what the receiver would.
//! ARP and neighbour discovery are not policy's (callers pass them); replies of allowed flows
//! pass by connection tracking ([`crate::conntrack`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::labels::{LabelError, Labels, Selector};

/// Most groups per network.
pub const MAX_GROUPS: usize = 1024;
/// Most rules per network.
pub const MAX_RULES: usize = 4096;
/// Most port ranges per rule.
pub const MAX_PORT_RANGES: usize = 64;

/// A group as written (API, YAML/JSON file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The group ID: 1 to 65535, the VXLAN-GBP group policy ID on the wire.
    pub id: u16,
    /// Its name, which rules use.
    pub name: String,
    /// Which endpoints are in it (Kubernetes selector syntax).
    pub selector: String,
}

/// What a rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Let it pass.
    Allow,
    /// Drop it.
    Deny,
}

/// A rule as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Its name (for counters and `nvo policy trace`).
    pub name: String,
    /// Source groups (names); `["any"]` or empty: every source.
    #[serde(default)]
    pub from: Vec<String>,
    /// Destination groups (names); `["any"]` or empty: every destination.
    #[serde(default)]
    pub to: Vec<String>,
    /// allow or deny.
    pub action: Action,
    /// `tcp`, `udp`, `sctp`, `icmp`, `icmpv6`, a protocol number, or `any` (default).
    #[serde(default)]
    pub protocol: Option<String>,
    /// Destination ports or ranges (`"5432"`, `"8000-8080"`); only with tcp, udp or sctp.
    #[serde(default)]
    pub ports: Vec<String>,
}

/// A network's policy as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// The groups.
    #[serde(default)]
    pub groups: Vec<GroupSpec>,
    /// The rules, in order (the first matching allow or deny names the decision).
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
}

/// Why a policy was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A selector or label problem.
    #[error("group {group:?}: {error}")]
    Label {
        /// The group.
        group: String,
        /// What is wrong.
        error: LabelError,
    },
    /// Group ID 0, or one used twice.
    #[error("group {0:?}: ids are 1 to 65535 and unique within a network")]
    GroupId(String),
    /// A group name used twice, empty, or `any`.
    #[error("group name {0:?} is empty, reserved (any) or used twice")]
    GroupName(String),
    /// A rule naming a group that does not exist.
    #[error("rule {rule:?} names group {group:?}, which this network does not define")]
    UnknownGroup {
        /// The rule.
        rule: String,
        /// The group.
        group: String,
    },
    /// A protocol that is not known.
    #[error("rule {rule:?}: protocol {protocol:?} is not tcp, udp, sctp, icmp, icmpv6, any or a number 0-255")]
    Protocol {
        /// The rule.
        rule: String,
        /// The protocol.
        protocol: String,
    },
    /// Ports that do not parse, are reversed, or are given for a protocol without ports.
    #[error("rule {rule:?}: port {port:?} is not N or N-M (1-65535, N ≤ M) for tcp, udp or sctp")]
    Port {
        /// The rule.
        rule: String,
        /// The port.
        port: String,
    },
    /// More groups, rules or port ranges than the bounds.
    #[error("more than {0} {1}")]
    TooMany(usize, &'static str),
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "rule")]
pub enum Reason {
    /// Rule number N (0-based, in the order written).
    Rule(usize),
    /// No rule matched and the destination is selected by a policy.
    DefaultDeny,
    /// No rule matched and no policy selects the destination.
    DefaultAllow,
}

/// A decision: allow or deny, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the packet passes.
    pub allow: bool,
    /// Why.
    pub reason: Reason,
}

#[derive(Debug, Clone)]
struct Group {
    id: u16,
    name: String,
    selector: Selector,
}

#[derive(Debug, Clone)]
struct Rule {
    from: Option<BTreeSet<u16>>,
    to: Option<BTreeSet<u16>>,
    allow: bool,
    proto: Option<u8>,
    ports: Vec<(u16, u16)>,
}

/// A rule as resolved (group IDs, not names), for a datapath that compiles rules into tables
/// of its own (the kernel path): `None` is `any`.
#[derive(Debug, Clone, Copy)]
pub struct RuleView<'a> {
    /// Source groups.
    pub from: Option<&'a BTreeSet<u16>>,
    /// Destination groups.
    pub to: Option<&'a BTreeSet<u16>>,
    /// Allow (or deny).
    pub allow: bool,
    /// IP protocol.
    pub proto: Option<u8>,
    /// Destination port ranges (empty: any).
    pub ports: &'a [(u16, u16)],
}

/// How large a policy is, for a datapath with bounds of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// Rules.
    pub rules: usize,
    /// The most port ranges of one rule.
    pub port_ranges: usize,
    /// Groups named by rules (each side of each rule) and selected groups, counted each time.
    pub members: usize,
}

/// One network's policy, resolved.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    groups: Vec<Group>,
    rules: Vec<Rule>,
    selected_all: bool,
    selected: BTreeSet<u16>,
    spec: PolicySpec,
}

fn protocol(p: &str) -> Option<Option<u8>> {
    Some(match p {
        "any" => None,
        "tcp" => Some(6),
        "udp" => Some(17),
        "sctp" => Some(132),
        "icmp" => Some(1),
        "icmpv6" => Some(58),
        n => Some(n.parse::<u8>().ok()?),
    })
}

fn port_range(p: &str) -> Option<(u16, u16)> {
    let (lo, hi) = match p.split_once('-') {
        Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
        None => {
            let n = p.trim().parse().ok()?;
            (n, n)
        }
    };
    (lo >= 1 && lo <= hi).then_some((lo, hi))
}

impl Policy {
    /// Checks and resolves `spec`.
    pub fn new(spec: PolicySpec) -> Result<Policy, PolicyError> {
        if spec.groups.len() > MAX_GROUPS {
            return Err(PolicyError::TooMany(MAX_GROUPS, "groups"));
        }
        if spec.rules.len() > MAX_RULES {
            return Err(PolicyError::TooMany(MAX_RULES, "rules"));
        }
        let mut groups: Vec<Group> = Vec::new();
        for g in &spec.groups {
            if g.id == 0 || groups.iter().any(|o| o.id == g.id) {
                return Err(PolicyError::GroupId(g.name.clone()));
            }
            if g.name.is_empty() || g.name == "any" || groups.iter().any(|o| o.name == g.name) {
                return Err(PolicyError::GroupName(g.name.clone()));
            }
            let selector = Selector::parse(&g.selector).map_err(|error| PolicyError::Label {
                group: g.name.clone(),
                error,
            })?;
            groups.push(Group {
                id: g.id,
                name: g.name.clone(),
                selector,
            });
        }
        groups.sort_by_key(|g| g.id);
        let mut rules = Vec::new();
        for r in &spec.rules {
            let peers = |names: &[String]| -> Result<Option<BTreeSet<u16>>, PolicyError> {
                if names.is_empty() || names.iter().any(|n| n == "any") {
                    return Ok(None);
                }
                names
                    .iter()
                    .map(|n| {
                        groups
                            .iter()
                            .find(|g| &g.name == n)
                            .map(|g| g.id)
                            .ok_or_else(|| PolicyError::UnknownGroup {
                                rule: r.name.clone(),
                                group: n.clone(),
                            })
                    })
                    .collect::<Result<BTreeSet<u16>, _>>()
                    .map(Some)
            };
            let text = r.protocol.as_deref().unwrap_or("any");
            let proto = protocol(text).ok_or_else(|| PolicyError::Protocol {
                rule: r.name.clone(),
                protocol: text.to_owned(),
            })?;
            if r.ports.len() > MAX_PORT_RANGES {
                return Err(PolicyError::TooMany(
                    MAX_PORT_RANGES,
                    "port ranges in a rule",
                ));
            }
            let with_ports = matches!(proto, Some(6 | 17 | 132));
            let ports = r
                .ports
                .iter()
                .map(|p| {
                    port_range(p)
                        .filter(|_| with_ports)
                        .ok_or_else(|| PolicyError::Port {
                            rule: r.name.clone(),
                            port: p.clone(),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            rules.push(Rule {
                from: peers(&r.from)?,
                to: peers(&r.to)?,
                allow: r.action == Action::Allow,
                proto,
                ports,
            });
        }
        let selected_all = rules.iter().any(|r| r.to.is_none());
        let selected = rules
            .iter()
            .filter_map(|r| r.to.clone())
            .flatten()
            .collect();
        Ok(Policy {
            groups,
            rules,
            selected_all,
            selected,
            spec,
        })
    }

    /// The rules, resolved, in order.
    pub fn rule_views(&self) -> impl Iterator<Item = RuleView<'_>> {
        self.rules.iter().map(|r| RuleView {
            from: r.from.as_ref(),
            to: r.to.as_ref(),
            allow: r.allow,
            proto: r.proto,
            ports: &r.ports,
        })
    }

    /// The groups selected as destinations (default deny), and whether every group is.
    pub fn selected(&self) -> (bool, impl Iterator<Item = u16> + '_) {
        (self.selected_all, self.selected.iter().copied())
    }

    /// How large it is.
    pub fn shape(&self) -> Shape {
        let side = |s: &Option<BTreeSet<u16>>| s.as_ref().map_or(0, BTreeSet::len);
        Shape {
            rules: self.rules.len(),
            port_ranges: self.rules.iter().map(|r| r.ports.len()).max().unwrap_or(0),
            members: self.selected.len()
                + self
                    .rules
                    .iter()
                    .map(|r| side(&r.from) + side(&r.to))
                    .sum::<usize>(),
        }
    }

    /// The policy as written.
    pub fn spec(&self) -> &PolicySpec {
        &self.spec
    }

    /// The identity of an endpoint with `labels`: its group's ID, 0 for none.
    pub fn identity(&self, labels: &Labels) -> u16 {
        self.groups
            .iter()
            .find(|g| g.selector.selects(labels))
            .map_or(0, |g| g.id)
    }

    /// The name of group `id`.
    pub fn group_name(&self, id: u16) -> Option<&str> {
        self.groups
            .iter()
            .find(|g| g.id == id)
            .map(|g| g.name.as_str())
    }

    /// Whether a policy selects group `id` as a destination (traffic to it is denied unless
    /// allowed).
    pub fn selects(&self, id: u16) -> bool {
        self.selected_all || self.selected.contains(&id)
    }

    /// The decision for a packet from group `from` to group `to` of IP protocol `proto` to
    /// port `port` (0 for protocols without ports).
    pub fn decide(&self, from: u16, to: u16, proto: u8, port: u16) -> Decision {
        let matches = |r: &Rule| {
            r.from.as_ref().is_none_or(|s| s.contains(&from))
                && r.to.as_ref().is_none_or(|s| s.contains(&to))
                && r.proto.is_none_or(|p| p == proto)
                && (r.ports.is_empty()
                    || r.ports.iter().any(|(lo, hi)| (*lo..=*hi).contains(&port)))
        };
        let first = |allow: bool| {
            self.rules
                .iter()
                .position(|r| r.allow == allow && matches(r))
        };
        if let Some(i) = first(false) {
            return Decision {
                allow: false,
                reason: Reason::Rule(i),
            };
        }
        if let Some(i) = first(true) {
            return Decision {
                allow: true,
                reason: Reason::Rule(i),
            };
        }
        if self.selects(to) {
            Decision {
                allow: false,
                reason: Reason::DefaultDeny,
            }
        } else {
            Decision {
                allow: true,
                reason: Reason::DefaultAllow,
            }
        }
    }
}
