//! ACL profiles (`/v1/acls`): named lists of flow rules without `in_port`, attached to ports
//! and virtual ports by name; each attachment installs the rules with that port as `in_port`
//! (docs/acl.md).
//!
//! ```json
//! POST /v1/acls    {"name": "no-ssh", "rules": ["priority=200,tcp,tp_dst=22,actions=drop",
//!                                              "priority=100,actions=normal"]}
//! PUT  /v1/ports/c1/acl                            {"profile": "no-ssh"}
//! PUT  /v1/ports/hv0/vports/02:00:00:00:01:01/acl  {"profile": "no-ssh"}
//! DELETE /v1/ports/c1/acl
//! DELETE /v1/acls/no-ssh
//! ```

use serde::{Deserialize, Serialize};

/// `POST /v1/acls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclSpec {
    /// The profile's name.
    pub name: String,
    /// Its rules in the flow syntax, without `in_port` (the attachment supplies it).
    pub rules: Vec<String>,
}

/// One rule of a profile as shown, with its counters summed over the attachments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclRule {
    /// The rule as given.
    pub rule: String,
    /// Packets it matched.
    pub n_packets: u64,
    /// Their bytes.
    pub n_bytes: u64,
}

/// An ACL profile as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    /// Its name.
    pub name: String,
    /// The cookie its installed rules carry.
    pub cookie: u64,
    /// Its rules, in the order given.
    pub rules: Vec<AclRule>,
    /// The ports, virtual ports (`PORT/MAC`) and trunk VLANs (`PORT.VID`) it is attached to.
    #[serde(default)]
    pub attached: Vec<String>,
}

/// `PUT /v1/ports/{port}/acl` (and `…/vports/{mac}/acl`, `…/vlans/{vid}/acl`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclAttach {
    /// The profile's name.
    pub profile: String,
}
