//! An OpenFlow 1.3 subset, so that a controller can drive nvod's flow table as CVSW's vNIC
//! is driven (issue 17, item 5): the messages `ovs-ofctl -O OpenFlow13` sends for `add-flow`,
//! `mod-flows`, `del-flows`, `dump-flows`, `dump-aggregate`, `show`, `dump-ports`,
//! `dump-tables` and `packet-out`, with the matches and actions nvo's flow table has.
//!
//! - [`wire`]: framing, message/error numbers, a bounded reader.
//! - [`oxm`]: OXM matches ↔ [`nvo_flow::Match`]; [`actions`]: instructions and actions ↔
//!   [`nvo_flow::Action`]; [`features`]: the table's TABLE_FEATURES; [`meter`]: METER_MOD.
//! - [`session`]: one connection, sans-IO; [`switch`]: what it asks of the switch, and
//!   FLOW_MOD semantics on an [`nvo_flow::Classifier`].
//!
//! OpenFlow input is untrusted: every read is bounded, every malformed or unsupported message
//! is answered with an OFPT_ERROR naming why, and nothing panics.

pub mod actions;
pub mod features;
pub mod meter;
pub mod oxm;
pub mod session;
pub mod switch;
pub mod wire;

pub use meter::MeterMod;
pub use session::{Closed, Session};
pub use switch::{
    apply_flow_mod, flow_stats, Command, FlowFilter, FlowMod, FlowStat, PortDesc, PortStats, Switch,
};
pub use wire::OfError;
