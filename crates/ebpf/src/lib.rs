//! nvo-ebpf: nvo's kernel datapath (docs/design/ebpf.md).
//!
//! - `bpf/`: the programs, in C, compiled by clang when this crate builds: `nvo_port` (tc
//!   ingress of each port's host-side interface), `nvo_underlay` (tc ingress of the
//!   locator's interface) and `nvo_relay` (XDP there, the overlay relay, where the interface
//!   allows), over maps whose layout is `bpf/layout.h` = [`layout`].
//! - [`Kernel`]: loads them (every map sized by [`Sizes`] from the pipeline's limits),
//!   attaches them, runs them with `BPF_PROG_RUN` ([`testrun`]).
//! - [`KernelFlows`]: the programs' connection table, as nvod's pipeline asks it on a miss.
//! - [`compile`]: profiles and networks as map entries — the programs know no protocol.
//! - [`Mirror`]: keeps the maps equal to the userspace pipeline's tables, applies the
//!   kernel's learn reports to the pipeline and hands over the frames it punts.
//!
//! The userspace pipeline (`nvo-pipeline`) is the reference: the programs do what it does, and
//! the differential tests (tests/differential.rs) run the same frames through both.

// `unsafe` here is only the plain-data marking of the map layouts (aya::Pod) and the ring
// record reader that relies on it, each with a `// SAFETY:` comment; system calls are nvo-io's.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod compile;
pub mod flows;
pub mod kernel;
pub mod layout;
pub mod limits;
pub mod mirror;
pub mod nexthop;
mod pol_counters;
pub mod testrun;

pub use compile::Unsupported;
pub use flows::{KernelFlowStats, KernelFlows};
pub use kernel::{AttachError, Kernel, LoadError, XdpAttach};
pub use limits::Sizes;
pub use mirror::{Mirror, MirrorStats, NodeSettings, PortInfo};
