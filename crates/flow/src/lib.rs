//! nvo's match–action flow table (issue 17, the CVSW paper's vNIC table): what a rule can
//! match in a packet, and the classifier that finds the rule for a packet without trying
//! every rule.
//!
//! - [`key`]: a packet's [`Key`] — in port, Ethernet, VLAN, IPv4/IPv6 (or ARP), DSCP, L4 ports
//!   or ICMP type/code, TCP flags and tunnel key — extracted once per packet into nine words.
//! - [`flow_match`]: a rule's [`Match`], a value and a mask over those words.
//! - [`classifier`]: [`Classifier`], tuple-space search over rules grouped by mask, bounded,
//!   with per-rule counters and idle/hard timeouts.
//!
//! The crate knows no actions: a classifier is generic over what its rules carry, so the
//! pipeline, the OpenFlow front end and the tests each bring their own. It is pure (no I/O, no
//! clock but the `now` passed in), as the pipeline is.

pub mod classifier;
pub mod flow_match;
pub mod key;

pub use classifier::{Classifier, ClassifierError, Expiry, Inserted, Rule, RuleId, Stats};
pub use flow_match::Match;
pub use key::{Field, Key};
