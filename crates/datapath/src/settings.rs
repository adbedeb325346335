//! What the datapath is started with: the node's part of nvod's configuration, resolved and
//! checked by nvod (its `config` module turns the file into these values).

use std::net::IpAddr;

use nvo_encap::stt::ReassemblyLimits;
use serde::Deserialize;

use crate::underlays::Outer;

/// The datapath's settings, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// 32-bit overlay node ID.
    pub node_id: u32,
    /// Underlay address.
    pub locator: IpAddr,
    /// VXLAN UDP port.
    pub vxlan_port: u16,
    /// Underlay MTU.
    pub underlay_mtu: u16,
    /// Number of entropy source ports.
    pub entropy_ports: u16,
    /// TTL or hop limit of datagrams sent to a multicast group.
    pub multicast_ttl: u8,
    /// TTL, TOS and DF of the outer IP header, and the UDP offload switches.
    pub outer: Outer,
    /// Bounds of STT reassembly.
    pub stt_reassembly: ReassemblyLimits,
    /// Which datapath to run.
    pub datapath: DatapathChoice,
    /// Where the kernel path relays overlay packets: XDP or its tc program.
    pub xdp: XdpChoice,
    /// Bounds of the pipeline's tables (nvod's `[limits]`).
    pub limits: nvo_pipeline::Limits,
    /// Bounds of the overlay tables.
    pub overlay_limits: nvo_pipeline::overlay::OverlayLimits,
    /// Bounds of the encapsulation engine's tables.
    pub engine_limits: nvo_encap::engine::Limits,
    /// How long the datapath thread keeps polling its sockets without sleeping after the last
    /// packet it handled (zero: it sleeps at once).
    pub busy_poll: std::time::Duration,
    /// Whether STT frames go whole to the kernel's TCP segmentation (`stt_offload`).
    pub stt_offload: SttOffload,
    /// This node's ILA locator (`ila_locator`; its upper 64 bits are the locator /64 routed to
    /// the ILA TUN). None: no ILA network can forward here.
    pub ila_locator: Option<std::net::Ipv6Addr>,
    /// How many userspace datapath workers forward (1..=`MAX_WORKERS`; with the kernel path
    /// running, one: see `workers`).
    pub workers: usize,
}

/// The `stt_offload` key: who cuts STT frames into segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SttOffload {
    /// The kernel (a TUN device nvod writes whole frames to, `nvo_io::SttTso`) where it can be
    /// set up, for IPv4 locators; else, and for frames it cannot take, nvod's segmenter.
    #[default]
    Auto,
    /// nvod's segmenter always, one raw-socket datagram per segment.
    Off,
}

/// The `xdp` key: how the kernel path's overlay relay runs on the locator's interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XdpChoice {
    /// XDP in the driver where the interface is not a veth; the tc program on a veth (native
    /// XDP on a veth turns its peer's segmentation offload off and needs the peer's NAPI, so
    /// it would cost the node's own traffic more than the relay gains).
    #[default]
    Auto,
    /// XDP in the driver, or no start.
    Driver,
    /// Generic XDP (in the stack, on socket buffers), or no start.
    Generic,
    /// No XDP: the tc program relays.
    Off,
}

/// The `datapath` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatapathChoice {
    /// The kernel path where it loads, else userspace.
    #[default]
    Auto,
    /// The kernel path, or no start.
    Ebpf,
    /// nvod's userspace path only.
    Userspace,
}
