//! nvo's match–action flow table (issue 17, the CVSW paper's vNIC table): what a rule can
//! match in a packet, and the classifier that finds the rule for a packet without trying
//! every rule.
//!
//! - [`key`]: a packet's [`Key`] — in port, Ethernet, VLAN, IPv4/IPv6 (or ARP), DSCP, L4 ports
//!   or ICMP type/code, TCP flags and tunnel key — extracted once per packet into nine words.
//! - [`flow_match`]: a rule's [`Match`], a value and a mask over those words.
//! - [`classifier`]: [`Classifier`], tuple-space search over rules grouped by mask, bounded,
//!   with per-rule counters and idle/hard timeouts.
//! - [`acl`]: ACL profiles, rule lists without `in_port` compiled onto the port they are
//!   attached to.
//! - [`action`]: the [`Action`]s a rule can carry; [`syntax`]: the flow syntax of
//!   `ovs-ofctl add-flow` parsed into a rule, and [`show`]: a rule written back in it.
//!
//! The classifier is generic over what its rules carry ([`syntax::Flow`] carries a list of
//! [`Action`]s). The crate is pure (no I/O, no clock but the `now` passed in), as the pipeline
//! is.

pub mod acl;
pub mod action;
pub mod classifier;
pub mod flow_match;
pub mod key;
pub mod show;
pub mod syntax;

pub use action::Action;
pub use classifier::{Classifier, ClassifierError, Expiry, Inserted, Rule, RuleId, Stats};
pub use flow_match::Match;
pub use key::{Field, Key};
