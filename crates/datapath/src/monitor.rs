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
//!
//! A storm of drops (or a trace of a fast stream) would otherwise make an event of every
//! packet, and each event costs nvod's monitor task a decode and each listener a line: on a
//! host with few CPUs that work takes CPU from forwarding. So events pass a token bucket of
//! [`RATE`] a second (a burst of as many) on the datapath thread before anything is copied:
//! an event beyond it costs one counter increment and is counted lost at stage `rate`. The
//! bucket is refilled from the loop's clock once per wake-up ([`Monitor::refill`]), so no
//! packet reads the clock for it. The kernel's records pass the same bucket as they are
//! drained.

use std::cell::Cell;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use nvo_pipeline::{Action, Actions, DropReason, FdbChange, FdbDest, Mac, PortId};
use tokio::sync::mpsc;

/// Bytes of a packet an event carries: enough for the outer and inner headers of a tunnel
/// packet (Ethernet, IPv6, UDP, an 8-byte tunnel header, Ethernet, IPv4, the ports).
pub const CAPTURE: usize = 128;

/// Records the ring holds before the datapath loses them.
pub const RING: usize = 8192;

/// Events a second the datapath hands to nvod at most (and the burst it may hand at once);
/// beyond, they are counted lost at stage `rate`.
pub const RATE: u32 = nvo_ebpf::layout::MONITOR_RATE;

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
    /// A next hop an overlay packet was relayed to, as it came (not decapsulated; traces
    /// only).
    Relay(IpAddr),
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
    /// Beyond the datapath's [`RATE`].
    pub rate: AtomicU64,
    /// Beyond the kernel's rate (the per-CPU counter's sum, read each second).
    pub kernel_rate: AtomicU64,
}

/// The token bucket events pass (see the module's note).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Events a second, and the most tokens held.
    rate: u32,
    tokens: u32,
    /// When tokens were last added; `None` before the first refill.
    filled: Option<Instant>,
}

impl Bucket {
    /// A full bucket of `rate` events a second (at least one).
    fn new(rate: u32) -> Bucket {
        let rate = rate.max(1);
        Bucket {
            rate,
            tokens: rate,
            filled: None,
        }
    }

    fn refill(&mut self, now: Instant) {
        let Some(filled) = self.filled else {
            self.filled = Some(now);
            return;
        };
        let elapsed = now.saturating_duration_since(filled).as_nanos();
        let add = elapsed.saturating_mul(u128::from(self.rate)) / 1_000_000_000;
        // Less than a token so far: the time keeps counting from `filled`.
        if add > 0 {
            let tokens = u128::from(self.tokens).saturating_add(add);
            self.tokens = u32::try_from(tokens).unwrap_or(u32::MAX).min(self.rate);
            self.filled = Some(now);
        }
    }

    fn take(&mut self) -> bool {
        let some = self.tokens > 0;
        self.tokens = self.tokens.saturating_sub(1);
        some
    }
}

/// The datapath's handle: whether anyone listens, the rate events pass, and the ring. Each
/// clone has a bucket of its own; the datapath thread holds the one that records.
#[derive(Debug, Clone)]
pub struct Monitor {
    on: Arc<AtomicBool>,
    tracing: Arc<AtomicBool>,
    tx: Option<mpsc::Sender<Record>>,
    lost: Arc<LostCounts>,
    bucket: Cell<Bucket>,
}

impl Monitor {
    /// A monitor nobody can listen to (the datapath records nothing).
    pub fn off() -> Monitor {
        Monitor {
            on: Arc::new(AtomicBool::new(false)),
            tracing: Arc::new(AtomicBool::new(false)),
            tx: None,
            lost: Arc::default(),
            bucket: Cell::new(Bucket::new(RATE)),
        }
    }

    /// A monitor recording while `on` is set, into a ring of `capacity` records, at most
    /// `rate` a second; the receiver is nvod's.
    pub fn new(
        on: Arc<AtomicBool>,
        capacity: usize,
        rate: u32,
    ) -> (Monitor, mpsc::Receiver<Record>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let monitor = Monitor {
            on,
            tracing: Arc::new(AtomicBool::new(false)),
            tx: Some(tx),
            lost: Arc::default(),
            bucket: Cell::new(Bucket::new(rate)),
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

    /// Adds the tokens earned since the last refill (the loop calls it once per wake-up
    /// while the monitor is on).
    pub fn refill(&self, now: Instant) {
        let mut bucket = self.bucket.get();
        bucket.refill(now);
        self.bucket.set(bucket);
    }

    /// Hands the record `make` builds to nvod, never waiting: beyond the rate it is not
    /// built and counts lost at stage `rate`; a full ring counts it lost at `datapath`.
    pub fn record(&self, make: impl FnOnce() -> Record) {
        let Some(tx) = &self.tx else {
            return;
        };
        let mut bucket = self.bucket.get();
        let admitted = bucket.take();
        self.bucket.set(bucket);
        if !admitted {
            self.lost.rate.fetch_add(1, Ordering::Relaxed);
        } else if tx.try_send(make()).is_err() {
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
        monitor.record(|| Record::new(What::Drop(reason), origin, vni, layer, packet));
        return;
    }
    if actions.flooded() {
        monitor.record(|| {
            let copies = actions
                .iter()
                .filter(|a| !matches!(a, Action::Drop(_) | Action::Reply { .. }))
                .count();
            let copies = u32::try_from(copies).unwrap_or(u32::MAX);
            Record::new(What::Flood { copies }, origin, vni, layer, packet)
        });
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
        monitor.record(|| Record::new(what, origin, vni, Layer::Frame, packet));
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
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_full_ring_counts_lost_and_never_blocks() {
        let on = Arc::new(AtomicBool::new(true));
        let (m, mut rx) = Monitor::new(on, 3, 1000);
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
            m.record(|| r);
        }
        assert_eq!(m.lost().datapath.load(Ordering::Relaxed), 7);
        let mut got = 0;
        while rx.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, 3);
        m.record(|| r);
        assert!(
            rx.try_recv().is_ok(),
            "room again after the reader caught up"
        );
    }

    #[test]
    fn beyond_the_rate_events_are_counted_not_built_until_time_refills_the_bucket() {
        let on = Arc::new(AtomicBool::new(true));
        let (m, mut rx) = Monitor::new(on, 1000, 100);
        let a_drop = || {
            Record::new(
                What::Drop(DropReason::MalformedVxlan),
                Origin::None,
                None,
                Layer::Tunnel,
                &[1, 2, 3],
            )
        };
        let t0 = Instant::now();
        m.refill(t0);
        let mut built = 0;
        for _ in 0..250 {
            m.record(|| {
                built += 1;
                a_drop()
            });
        }
        assert_eq!(built, 100, "a full bucket is one second's worth");
        let lost = |m: &Monitor| m.lost().rate.load(Ordering::Relaxed);
        assert_eq!(lost(&m), 150);
        assert_eq!(m.lost().datapath.load(Ordering::Relaxed), 0);
        // 5 ms earn nothing at 100/s; the time still counts: 10 ms from t0 earn one.
        m.refill(t0 + Duration::from_millis(5));
        m.record(a_drop);
        assert_eq!(lost(&m), 151);
        m.refill(t0 + Duration::from_millis(10));
        m.record(a_drop);
        m.record(a_drop);
        assert_eq!(lost(&m), 152, "one token earned in 10 ms");
        // A long pause fills the bucket up to one second's worth, not more.
        m.refill(t0 + Duration::from_secs(60));
        for _ in 0..150 {
            m.record(a_drop);
        }
        assert_eq!(lost(&m), 202);
        let mut got = 0;
        while rx.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, 100 + 1 + 100);
    }

    #[test]
    fn off_has_no_ring() {
        let m = Monitor::off();
        assert!(!m.on());
        m.record(|| {
            Record::new(
                What::Flood { copies: 2 },
                Origin::None,
                None,
                Layer::Frame,
                &[],
            )
        });
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
