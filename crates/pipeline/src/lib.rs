//! The sans-IO core of nvo's userspace data plane (docs/design/dataplane.md, "crates/pipeline").
//!
//! A [`Pipeline`] holds every table of one node — networks, ports, a forwarding database and a
//! flood list per network, counters — and turns frames into [`Action`]s. It opens no socket and
//! reads no clock: the caller passes the time in as `now: std::time::Instant` (the datapath reads
//! its clock once per batch) and performs the actions itself.
//!
//! One thread owns the pipeline (nvod's datapath thread). It calls, per frame,
//! [`Pipeline::from_port`] or [`Pipeline::from_underlay`] with a reusable [`Actions`] buffer; once
//! per second or so [`Pipeline::age`]; after sending, [`Pipeline::count_tx`]; and, between
//! batches, the control operations (`add_network`, `fdb_add_static`, …) the control thread asks
//! for. No lock is taken, nothing is logged and, once the buffers are warm, nothing is allocated
//! per frame.
//!
//! Networks on nvo's routed overlay map MACs to overlay node IDs ([`FdbDest::Node`],
//! [`BumMode::Overlay`]) and yield [`Action::EncapNode`]; the [`overlay`] module holds the
//! tables that route between node IDs (docs/design/overlay.md).
//!
//! Forwarding follows RFC 7348 §4 (flood and learn) with split horizon: frames from the underlay
//! go only to local ports, never back to the underlay. Every drop has a [`DropReason`].
//!
//! For an EVPN control plane (docs/design/evpn.md) the pipeline holds `Origin::Evpn` FDB entries
//! and a neighbour table per network, snoops ARP and ND on local ports, answers them when a
//! network suppresses them, and reports its local hosts: see [`Pipeline::evpn_apply`],
//! [`Pipeline::set_arp_suppression`] and [`Pipeline::local_hosts`].
//!
//! ```
//! use std::time::Instant;
//! use nvo_pipeline::{Action, Actions, Limits, NetworkSpec, Pipeline, PortId, Vni};
//!
//! let mut pipeline = Pipeline::new(Limits::default());
//! pipeline.add_network(NetworkSpec::new(Vni(100)))?;
//! pipeline.add_port(PortId(1), Vni(100))?;
//! pipeline.add_port(PortId(2), Vni(100))?;
//! pipeline.flood_add(Vni(100), "192.0.2.2".parse()?)?;
//!
//! // A broadcast from port 1 goes to port 2 and, in VXLAN, to 192.0.2.2.
//! let mut frame = [0u8; 60];
//! frame[..6].copy_from_slice(&[0xff; 6]);
//! frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
//! let mut actions = Actions::new();
//! pipeline.from_port(PortId(1), &frame, Instant::now(), &mut actions);
//! assert_eq!(actions.as_slice()[0], Action::Deliver { port: PortId(2) });
//! assert!(matches!(actions.as_slice()[1], Action::Encap { vni: Vni(100), .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod actions;
mod arp;
mod control;
mod counters;
mod ct_cache;
mod drop;
mod error;
mod evpn;
mod fdb;
mod fdb_events;
mod flow_tunnel;
pub mod flows;
mod frame;
mod hash;
mod icmp;
mod import;
pub mod l3;
pub mod meters;
mod mirror;
mod nd;
mod neigh;
mod network;
pub mod overlay;
mod pipeline;
mod policing;
pub mod policy;
mod policy_export;
pub mod policy_external;
mod policy_flow;
pub mod qos;
mod shared_port;
mod suppress;
mod tunnel_flows;
mod types;
pub mod vlan;
pub mod vport;

pub use actions::{Action, Actions};
pub use counters::{
    Counters, DropCounters, NetworkCounters, PortCounters, RemoteCounters, TxOutcome, TxTarget,
    UnderlayCounters, MAX_COUNTED_REMOTES,
};
pub use drop::DropReason;
pub use error::TableError;
pub use evpn::{ArpNeighbor, EvpnApplied, EvpnChange, LocalHost, LocalHosts};
pub use fdb::FdbView;
pub use fdb_events::{FdbChange, FdbEvent, FDB_EVENTS_CAP};
pub use flows::{FlowCover, FlowError, FlowTable, FlowVerdict, MAX_FLOWS};
pub use hash::flow_hash16;
pub use network::NetworkView;
pub use overlay::NodeId;
pub use pipeline::{Decapsulated, Pipeline};
pub use policy_export::PolicyExport;
pub use policy_external::{ExternalFlows, ExternalHook};
pub use tunnel_flows::TunnelCover;
pub use types::{
    AcceptRemotes, BumMode, FdbDest, FlushScope, IpFamilies, Limits, Mac, MacParseError,
    NetworkSpec, Origin, PortId, ProfileTag, Vni,
};
