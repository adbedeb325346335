//! nvo's identity-based policy (issue 18, items 1 and 3): endpoints carry labels, groups with
//! numeric IDs (the VXLAN-GBP group policy ID) are defined per tenant network by label
//! selectors, and rules allow or deny traffic from groups to groups, with connection tracking
//! so that replies of allowed flows pass. Pure: the datapaths ask it, it does no I/O.
//!
//! - [`labels`]: [`Labels`] and Kubernetes-syntax [`Selector`]s.
//! - [`rules`]: a network's [`Policy`]: identities and decisions (with the rule that decided).
//! - [`conntrack`]: the bounded [`Conntrack`] table.
//!
//! Every network has its own policy, groups and connection table: the same label or group
//! names in two tenants never meet, and overlapping tenant addresses are told apart by the
//! network in every key.

pub mod conntrack;
pub mod labels;
pub mod rules;

pub use conntrack::{Conntrack, Direction, FlowKey, Full};
pub use labels::{LabelError, Labels, Selector};
pub use rules::{
    Action, Decision, GroupSpec, Policy, PolicyError, PolicySpec, Reason, RuleSpec, RuleView, Shape,
};
