//! nvod's control API: the request and answer types, shared by the daemon and every client, and
//! a small blocking client.
//!
//! The API is HTTP/1.1 with JSON bodies on a unix socket (docs/openapi.yaml is the reference;
//! docs/design/dataplane.md explains it). These types are the wire form of the API only: nvod
//! converts them to and from its internal tables at the edge, so an internal change never
//! changes the API by accident.

mod acl;
mod client;
mod events;
mod evpn;
mod flow;
mod meter;
mod monitor;
mod policy;
mod qos;
pub mod query;
mod types;
mod vlan;
mod vport;

pub use acl::{Acl, AclAttach, AclRule, AclSpec};
pub use client::{Client, ClientError, DEFAULT_SOCKET};
pub use events::{EventAction, OverlayEvent};
pub use evpn::*;
pub use flow::{Flow, FlowDelete, FlowSpec, FlowTable, FlowsDeleted, Trace, TraceSpec};
pub use meter::{Meter, MeterSpec};
pub use monitor::{MonitorEvent, MonitorType};
/// The largest VNI a network may have (networks are 1 to this).
pub use nvo_wire::VNI_MAX;
pub use policy::*;
pub use qos::{Qos, QosAttach, QosSpec};
pub use types::*;
pub use vlan::{Ethertype, PortVlan, TrunkMap};
pub use vport::{SharedPort, Vport, VportSpec};
