//! Identity policy (issue 18): endpoint labels, a network's groups and rules as written (the
//! file `nvo policy apply` reads), the policy as shown with its counters, and a trace.
//!
//! ```yaml
//! network: 100
//! groups:
//!   - {name: web, id: 10, match: {app: web}}
//!   - {name: db, id: 20, selector: "app=db,tier notin (test)"}
//! rules:
//!   - {from: web, to: db, proto: tcp, ports: [5432, "8000-8080"], action: allow}
//! ```
//!
//! nvod converts these to nvo-policy's types at the edge and refuses, with the offending
//! value, unknown groups, bad selectors or labels, duplicate IDs or names, out-of-range ports.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Labels as given: key → value.
pub type LabelMap = BTreeMap<String, String>;

/// One network's policy as written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyDoc {
    /// The network (VNI). In a file: required; through `PUT /v1/networks/{vni}/policy`: the
    /// path's, and it must agree when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<u64>,
    /// The groups.
    #[serde(default)]
    pub groups: Vec<GroupDoc>,
    /// The rules, in order.
    #[serde(default)]
    pub rules: Vec<RuleDoc>,
}

/// A group as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupDoc {
    /// Its name, which rules use.
    pub name: String,
    /// Its ID, 1 to 65535 (the VXLAN-GBP group policy ID on the wire).
    pub id: u64,
    /// Labels an endpoint must have, all of them (`match: {app: web}`).
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<LabelMap>,
    /// Or a Kubernetes-syntax selector (`app in (web,api),!legacy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// One group name or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Names {
    /// One name (`any`: every group, and endpoints in none).
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Default for Names {
    fn default() -> Self {
        Names::One("any".to_owned())
    }
}

impl Names {
    /// The names, as a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            Names::One(n) => vec![n.clone()],
            Names::Many(v) => v.clone(),
        }
    }
}

/// A port or a range as written: `5432` or `"8000-8080"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PortDoc {
    /// One port.
    Number(i64),
    /// A port or a range, as text.
    Text(String),
}

/// A rule as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDoc {
    /// Its name (default `rule-N`, N its position from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Source groups (default any).
    #[serde(default)]
    pub from: Names,
    /// Destination groups (default any).
    #[serde(default)]
    pub to: Names,
    /// `tcp`, `udp`, `sctp`, `icmp`, `icmpv6`, a protocol number, or `any` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
    /// Destination ports or ranges (tcp, udp, sctp only); none: every port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortDoc>,
    /// `allow` or `deny`.
    pub action: String,
}

/// `GET /v1/networks/{vni}/policy`: the policy as nvod holds it, with its counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyView {
    /// The network.
    pub network: u32,
    /// The groups, with the selector each was resolved to.
    pub groups: Vec<GroupView>,
    /// The rules, with the packets each decided.
    pub rules: Vec<RuleView>,
    /// Packets per verdict.
    pub verdicts: Verdicts,
    /// Who enforces it: `kernel` (the eBPF programs, with nvod for what they hand over; the
    /// counts are both's) or `nvod` (its userspace pipeline alone).
    #[serde(default)]
    pub datapath: String,
    /// nvod's misses asked of the kernel's connection table (`kernel` only; zeros otherwise).
    #[serde(default)]
    pub kernel_lookups: KernelLookups,
}

/// How often nvod asked the kernel's connection table (`pol_flows`) about a flow its own
/// table missed, summed over its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelLookups {
    /// Looked up there (a map-lookup syscall, the key and else its reverse).
    pub asked: u64,
    /// Not looked up: the kernel said "not tracked" less than a second ago.
    pub skipped: u64,
}

/// A group as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupView {
    /// Its name.
    pub name: String,
    /// Its ID.
    pub id: u16,
    /// Its selector.
    pub selector: String,
}

/// A rule as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleView {
    /// Its name.
    pub name: String,
    /// Source groups.
    pub from: Vec<String>,
    /// Destination groups.
    pub to: Vec<String>,
    /// Protocol.
    pub proto: String,
    /// Port ranges.
    pub ports: Vec<String>,
    /// allow or deny.
    pub action: String,
    /// Packets it decided (first packets of flows; later ones pass as `tracked`).
    pub packets: u64,
}

/// Packets per verdict, summed over the datapath's workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Verdicts {
    /// Allowed by a rule.
    pub allowed: u64,
    /// Denied by a rule (dropped: policy_denied).
    pub denied: u64,
    /// Allowed: no policy selects the destination.
    pub default_allowed: u64,
    /// Denied: the destination is selected and no rule allows (dropped: policy_denied).
    pub default_denied: u64,
    /// Passed in a tracked flow (later packets and replies of allowed flows).
    pub tracked: u64,
    /// Passed at the receiver because the sender applied policy (VXLAN-GBP A bit).
    pub sender_applied: u64,
    /// Passed at the sender with the destination's identity unknown: the receiver decides.
    pub unknown_destination: u64,
    /// Not subject to policy: not IP, neighbour discovery, ICMP errors.
    pub exempt: u64,
    /// Allowed flows the full connection table could not track.
    pub conntrack_full: u64,
}

/// `POST /v1/networks/{vni}/policy/trace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRequest {
    /// Source address.
    pub from: IpAddr,
    /// Destination address.
    pub to: IpAddr,
    /// Protocol (as in rules; default any = 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
    /// Destination port.
    #[serde(default)]
    pub dport: u16,
}

/// A trace's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceAnswer {
    /// `allow` or `deny`.
    pub verdict: String,
    /// The deciding rule's name, or `default-deny` / `default-allow`.
    pub rule: String,
    /// The deciding rule's position (from 0), when a rule decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_index: Option<usize>,
    /// The source's group (name), `unlabelled` in none, `unknown` when nvod does not know it.
    pub from_group: String,
    /// The destination's group, likewise.
    pub to_group: String,
}

/// `GET /v1/labels`: every labelled endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LabelsView {
    /// Ports by name.
    pub ports: BTreeMap<String, LabelMap>,
    /// Addresses: network → address → labels.
    pub addresses: BTreeMap<u32, BTreeMap<IpAddr, LabelMap>>,
}
