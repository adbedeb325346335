//! The flow table (`/v1/flows`): rules in the flow syntax of `ovs-ofctl add-flow`, and what
//! `GET /v1/flows` shows of each.
//!
//! ```json
//! POST /v1/flows          {"port": "veth1", "flow": "priority=100,tcp,tp_dst=22,actions=drop"}
//! POST /v1/flows/delete   {"port": "veth1", "match": "tcp,tp_dst=22"}   → {"deleted": 1}
//! GET  /v1/flows?port=veth1
//! POST /v1/trace          {"port": "veth1", "flow": "tcp,tp_dst=22"}
//! POST /v1/trace          {"port": "underlay", "vni": 100, "remote": "10.100.0.2",
//!                          "flow": "tcp,nw_dst=10.91.0.2,tp_dst=5201"}
//! ```
//!
//! Port `tunnel` (in_port=tunnel, output:tunnel; OpenFlow port 65279) is the tunnel as a port
//! of the table: frames decapsulated from the underlay come in on it with tun_id their VNI.

use serde::{Deserialize, Serialize};

/// A rule to add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// The port whose frames it applies to (its `in_port`); absent: every port (or the
    /// `in_port` the flow names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// The rule in the flow syntax, e.g. `priority=100,tcp,tp_dst=22,actions=drop`.
    pub flow: String,
}

/// Which rules to delete.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowDelete {
    /// Only the rules of this port (`in_port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Only rules within this match (flow syntax without `actions=`); absent: every rule.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Only the rule with exactly this match and priority (`ovs-ofctl --strict del-flows`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

/// What a delete removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowsDeleted {
    /// Rules removed.
    pub deleted: usize,
}

/// One rule and its counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// The rule in the flow syntax (ports by name where nvod knows them).
    pub flow: String,
    /// Its priority.
    pub priority: u16,
    /// Its cookie.
    pub cookie: u64,
    /// Packets it matched.
    pub n_packets: u64,
    /// Their bytes.
    pub n_bytes: u64,
    /// Seconds since it was installed.
    pub duration_s: f64,
}

/// The table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowTable {
    /// The rules, best first.
    pub flows: Vec<Flow>,
    /// Rules installed (in the whole table, whatever the filter).
    pub rules: usize,
    /// The most rules the table takes.
    pub capacity: usize,
    /// Frames looked up.
    pub lookups: u64,
    /// Lookups that found a rule.
    pub matched: u64,
}

/// `POST /v1/trace`: what the flow table and normal forwarding would do with a frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The port it comes in on (interface name), or `underlay`: a frame decapsulated from
    /// the tunnel (in_port=tunnel), for network `vni`.
    pub port: String,
    /// The frame's fields in the flow syntax without actions, e.g.
    /// `tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=22`; fields left out are zero.
    pub flow: String,
    /// For `underlay`: the VNI the frame arrives with (its tun_id); required there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vni: Option<u32>,
    /// For `underlay`: the remote VTEP it comes from (checked against the network's
    /// accept_remotes); left out, the check is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<std::net::IpAddr>,
}

/// A trace's answer (nothing is sent, nothing counted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The port (`underlay` for a tunnel frame).
    pub port: String,
    /// Its id (the OpenFlow port number; 65279, `tunnel`, for a tunnel frame).
    pub port_id: u32,
    /// The rule that matched, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Flow>,
    /// What happens, step by step.
    pub steps: Vec<String>,
    /// The outcome in one line: `drop`, `output:PORT…`, `normal: …`.
    pub result: String,
}
