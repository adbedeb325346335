//! The datapath's side of `nvo monitor`: what it records and the bounded ring it records into.
//!
//! Recording stays out of the pipeline's hot logic. The pipeline already says what happened
//! to a packet in the [`Actions`] it returns — `Action::Drop(reason)` for a drop,
//! `Actions::flooded` for a flood — so the datapath looks at them after the pipeline call, in
//! `Core::perform` and where a tunnel packet is refused before the pipeline sees its frame.
//! Learning happens inside the pipeline, where no action shows it: the pipeline notes learned,
//! moved and aged MACs in a small bounded buffer of its own while the monitor is on
//! (`Pipeline::set_fdb_events`), and the loop drains it after each wake-up. The eBPF programs
//! write their drops, floods and traces to a ring of their own (`nvo_monitor_event()` in
//! bpf/common.h, only while a flag map says someone listens); the loop drains it with the
//! kernel's other rings. Learned MACs on the eBPF path reach the pipeline through the learn
//! ring, so they show up as the pipeline's events.
//!
//! Cost: with nobody listening, one relaxed load of [`Monitor::on`] per packet (in
//! `Core::perform`, or where a tunnel packet is refused before the pipeline) and one per loop
//! wake-up, besides two plain stores per packet of where it came from (`Core::seen`,
//! `Core::seen_vni`, for the record should there be one). In the kernel, a call of
//! `nvo_monitor_event()` and its lookup of the `monitor_on` array per drop, per flood and per
//! copy sent (the trace sites call it whether or not traces are asked for). While someone
//! listens, an event is a copy of the first [`CAPTURE`] bytes and a `try_send` into a bounded
//! channel: a full ring counts the event as lost ([`Monitor::lost`]) and the datapath goes on
//! — it never waits for a reader.
//!
//! Traces (one record per copy sent on) are recorded only while [`Monitor::tracing`] is set
//! too: a listener asked for them (`type=trace`); the kernel follows it in bit 1 of its flag.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use nvo_pipeline::{Action, Actions, DropReason, FdbChange, FdbDest, Mac, PortId};
use tokio::sync::mpsc;

/// Bytes of a packet an event carries: enough for the outer and inner headers of a tunnel
/// packet (Ethernet, IPv6, UDP, an 8-byte tunnel header, Ethernet, IPv4, the ports).
pub const CAPTURE: usize = 128;

/// Records the ring holds before the datapath loses them.
pub const RING: usize = 8192;

/// A port's interface name, copied (an event never allocates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortName {
    bytes: [u8; 16],
    len: u8,
}

impl PortName {
    /// The name, cut at 16 bytes (IFNAMSIZ).
    pub fn new(name: &str) -> PortName {
        let mut bytes = [0; 16];
        let len = name.len().min(16);
        bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
        PortName {
            bytes,
            len: len as u8,
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> String {
        String::from_utf8_lossy(&self.bytes[..usize::from(self.len)]).into_owned()
    }
}

/// Where a packet came from, as far as the monitor tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A local port (its name, when the datapath knows it).
    Port(Option<PortName>),
    /// The underlay: a tunnel packet from `src` on UDP port (or IP protocol) `port`.
    Underlay {
        /// The remote it came from.
        src: IpAddr,
        /// The UDP port it came to, or the IP protocol of a raw socket.
        port: u16,
    },
    /// The kernel's programs, at interface `ifindex`.
    Kernel {
        /// The interface the program ran on.
        ifindex: u32,
    },
    /// Not a packet (an FDB change).
    None,
}

/// What the bytes of a [`Record`] are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// An Ethernet frame (from a port, inside a tunnel, or a whole underlay frame at tc).
    Frame,
    /// What an underlay socket received: the bytes after the UDP (or IP) header.
    Tunnel,
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// A drop.
    Drop(DropReason),
    /// A flood of `copies` copies.
    Flood {
        /// Copies sent (ports and tunnels).
        copies: u32,
    },
    /// A packet sent on (only while a listener asked for traces): to a port, or
    /// encapsulated to a remote or node.
    Trace {
        /// Where it went.
        to: Dest,
    },
    /// A MAC learned, moved or aged out.
    Fdb {
        /// The MAC.
        mac: Mac,
        /// Where its entry sends frames.
        dest: Dest,
        /// What changed.
        change: FdbChange,
        /// For a move: where it was.
        from: Option<Dest>,
    },
}

/// An FDB destination, with a port's name rather than its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// A local port.
    Port(Option<PortName>),
    /// A remote VTEP.
    Remote(IpAddr),
    /// An overlay node.
    Node(u32),
}

/// One event, as the datapath recorded it; nvod turns it into an `nvo_api::MonitorEvent`.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// Nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// "userspace" or "ebpf".
    pub datapath: &'static str,
    /// What happened.
    pub what: What,
    /// The network, when known.
    pub vni: Option<u32>,
    /// Where the packet came from.
    pub origin: Origin,
    /// The packet's length.
    pub len: u32,
    /// What `bytes` holds.
    pub layer: Layer,
    bytes: [u8; CAPTURE],
    captured: u8,
}

impl Record {
    /// A record of `what` with the first [`CAPTURE`] bytes of `packet`.
    pub fn new(
        what: What,
        origin: Origin,
        vni: Option<u32>,
        layer: Layer,
        packet: &[u8],
    ) -> Record {
        let mut bytes = [0; CAPTURE];
        let captured = packet.len().min(CAPTURE);
        bytes[..captured].copy_from_slice(&packet[..captured]);
        Record {
            time_ns: now_ns(),
            datapath: "userspace",
            what,
            vni,
            origin,
            len: u32::try_from(packet.len()).unwrap_or(u32::MAX),
            layer,
            bytes,
            captured: captured as u8,
        }
    }

    /// The bytes captured.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.captured)]
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Events lost before they reached nvod, by where.
#[derive(Debug, Default)]
pub struct LostCounts {
    /// The ring to nvod was full.
    pub datapath: AtomicU64,
    /// The eBPF monitor ring was full (the per-CPU counter's sum, read each second).
    pub kernel: AtomicU64,
    /// The pipeline's FDB event buffer was full.
    pub fdb: AtomicU64,
}

/// The datapath's handle: whether anyone listens, and the ring.
#[derive(Debug, Clone)]
pub struct Monitor {
    on: Arc<AtomicBool>,
    tracing: Arc<AtomicBool>,
    tx: Option<mpsc::Sender<Record>>,
    lost: Arc<LostCounts>,
}

impl Monitor {
    /// A monitor nobody can listen to (the datapath records nothing).
    pub fn off() -> Monitor {
        Monitor {
            on: Arc::new(AtomicBool::new(false)),
            tracing: Arc::new(AtomicBool::new(false)),
            tx: None,
            lost: Arc::default(),
        }
    }

    /// A monitor recording while `on` is set, into a ring of `capacity` records; the
    /// receiver is nvod's.
    pub fn new(on: Arc<AtomicBool>, capacity: usize) -> (Monitor, mpsc::Receiver<Record>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let monitor = Monitor {
            on,
            tracing: Arc::new(AtomicBool::new(false)),
            tx: Some(tx),
            lost: Arc::default(),
        };
        (monitor, rx)
    }

    /// Whether anyone listens: one relaxed atomic load.
    #[inline]
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// This monitor recording traces (every packet sent on) while `tracing` is set too.
    pub fn with_tracing(mut self, tracing: Arc<AtomicBool>) -> Monitor {
        self.tracing = tracing;
        self
    }

    /// Whether a listener asked for traces: one relaxed atomic load (read only while
    /// [`Monitor::on`]).
    #[inline]
    pub fn tracing(&self) -> bool {
        self.tracing.load(Ordering::Relaxed)
    }

    /// What was lost so far.
    pub fn lost(&self) -> &Arc<LostCounts> {
        &self.lost
    }

    /// Hands `record` to nvod, never waiting: a full ring counts it lost.
    pub fn record(&self, record: Record) {
        let Some(tx) = &self.tx else {
            return;
        };
        if tx.try_send(record).is_err() {
            self.lost.datapath.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The drop or the flood `actions` say happened to `packet`, recorded. Called only while
/// the monitor is on.
pub(crate) fn record_actions(
    monitor: &Monitor,
    actions: &Actions,
    origin: Origin,
    vni: Option<u32>,
    layer: Layer,
    packet: &[u8],
) {
    if let Some(reason) = actions.dropped() {
        monitor.record(Record::new(What::Drop(reason), origin, vni, layer, packet));
        return;
    }
    if actions.flooded() {
        let copies = actions
            .iter()
            .filter(|a| !matches!(a, Action::Drop(_) | Action::Reply { .. }))
            .count();
        let copies = u32::try_from(copies).unwrap_or(u32::MAX);
        let what = What::Flood { copies };
        monitor.record(Record::new(what, origin, vni, layer, packet));
    }
}

/// One trace per packet `actions` send on (to a port, or encapsulated), recorded. Called only
/// while a listener asked for traces.
pub(crate) fn record_traces(
    monitor: &Monitor,
    actions: &Actions,
    origin: Origin,
    vni: Option<u32>,
    packet: &[u8],
    name: impl Fn(PortId) -> Option<PortName>,
) {
    for a in actions.iter() {
        let to = match *a {
            Action::Deliver { port } | Action::Reply { port, .. } => Dest::Port(name(port)),
            Action::Encap { remote, .. } | Action::EncapL3 { remote, .. } => Dest::Remote(remote),
            Action::EncapNode { node, .. } => Dest::Node(node.0),
            _ => continue,
        };
        let what = What::Trace { to };
        monitor.record(Record::new(what, origin, vni, Layer::Frame, packet));
    }
}

/// An FDB destination with the port's name looked up by `name`.
pub(crate) fn dest(d: FdbDest, name: impl Fn(PortId) -> Option<PortName>) -> Dest {
    match d {
        FdbDest::Port(id) => Dest::Port(name(id)),
        FdbDest::Remote(ip) => Dest::Remote(ip),
        FdbDest::Node(n) => Dest::Node(n.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_counts_lost_and_never_blocks() {
        let on = Arc::new(AtomicBool::new(true));
        let (m, mut rx) = Monitor::new(on, 3);
        let r = Record::new(
            What::Drop(DropReason::UnknownVni),
            Origin::None,
            Some(7),
            Layer::Frame,
            &[0u8; 300],
        );
        assert_eq!(r.bytes().len(), CAPTURE);
        assert_eq!(r.len, 300);
        for _ in 0..10 {
            m.record(r);
        }
        assert_eq!(m.lost().datapath.load(Ordering::Relaxed), 7);
        let mut got = 0;
        while rx.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, 3);
        m.record(r);
        assert!(
            rx.try_recv().is_ok(),
            "room again after the reader caught up"
        );
    }

    #[test]
    fn off_has_no_ring() {
        let m = Monitor::off();
        assert!(!m.on());
        m.record(Record::new(
            What::Flood { copies: 2 },
            Origin::None,
            None,
            Layer::Frame,
            &[],
        ));
        assert_eq!(m.lost().datapath.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn port_names_are_cut_at_ifnamsiz() {
        assert_eq!(PortName::new("veth-a").as_str(), "veth-a");
        assert_eq!(
            PortName::new("a-very-long-interface-name").as_str().len(),
            16
        );
    }
}
