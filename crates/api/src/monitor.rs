//! `GET /v1/monitor`: the live event stream `nvo monitor` shows (docs/monitor.md), one
//! [`MonitorEvent`] per server-sent event (`event:` its type, `data:` it as one line of JSON).
//!
//! The JSON field names are an interface: a field may be added, none renamed. Fields that do
//! not apply to an event's type are left out.

use serde::{Deserialize, Serialize};

/// What a [`MonitorEvent`] reports; `type` in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MonitorType {
    /// A packet dropped, with its reason.
    Drop,
    /// A MAC learned: a new FDB entry.
    Learn,
    /// A learned MAC seen somewhere else: its entry moved.
    Move,
    /// A learned MAC silent longer than the network's ageing time: its entry removed.
    Age,
    /// A frame flooded (broadcast, multicast, unknown unicast) to `copies` destinations.
    Flood,
    /// Events that did not reach this listener: `count` of them, lost at `stage`.
    Lost,
    /// A packet the datapath sent on (to a port, or encapsulated to a remote): only to a
    /// listener that asked for traces (`type=trace`); the default types leave it out.
    Trace,
}

impl MonitorType {
    /// Every type, in the order `--help` lists them.
    pub const ALL: [MonitorType; 7] = [
        MonitorType::Drop,
        MonitorType::Learn,
        MonitorType::Move,
        MonitorType::Age,
        MonitorType::Flood,
        MonitorType::Lost,
        MonitorType::Trace,
    ];

    /// The name, as in the JSON and the `type` filter.
    pub const fn name(self) -> &'static str {
        match self {
            MonitorType::Drop => "drop",
            MonitorType::Learn => "learn",
            MonitorType::Move => "move",
            MonitorType::Age => "age",
            MonitorType::Flood => "flood",
            MonitorType::Lost => "lost",
            MonitorType::Trace => "trace",
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<MonitorType> {
        MonitorType::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// One event of the monitor stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorEvent {
    /// What happened.
    #[serde(rename = "type")]
    pub kind: MonitorType,
    /// When nvod saw it: nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// Which datapath saw it: `userspace` or `ebpf` (`lost`: where it was lost is `stage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datapath: Option<String>,
    /// The network (VNI); for a drop of a tunnel packet, the VNI its header carried, if
    /// it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<u32>,
    /// The local port the frame came from or the MAC is behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// `drop`: the drop reason's name (`DropReason` in crates/pipeline/src/drop.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `drop`: the drop reason's stable code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// `learn`, `move`, `age`: the MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// `learn`, `move`, `age`: where the entry sends frames: `port NAME`, `remote ADDR` or
    /// `node ID`; `trace`: where the packet went, in the same form.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "where")]
    pub at: Option<String>,
    /// `move`: where the MAC was before, in the same form; `trace`: the remote a decapsulated
    /// packet came from (`remote ADDR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `flood`: how many copies went out (local ports and tunnels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u32>,
    /// `drop`, `flood`, `trace`: the packet's length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u32>,
    /// `drop`, `flood`, `trace`: a one-line decode of the packet's first bytes (MACs, EtherType, IP
    /// addresses, protocol and ports; for a tunnel packet its outer addresses and VNI first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode: Option<String>,
    /// `lost`: how many events were lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// `lost`: where: `listener` (this stream's queue was full), `datapath` (the userspace
    /// datapath's ring), `kernel` (the eBPF ring) or `fdb` (the pipeline's FDB event buffer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

impl MonitorEvent {
    /// One line saying what happened, without the time and the type (`nvo monitor` and the
    /// status page put those in front): a drop's reason, network, port, length and decode, a
    /// flood's copies, a MAC's old and new place, a loss's count and stage. Absent fields are
    /// `-`.
    pub fn summary(&self) -> String {
        let dash = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".to_owned());
        let net = self.network.map_or("-".to_owned(), |n| n.to_string());
        let mac = dash(&self.mac);
        let at = dash(&self.at);
        let decode = dash(&self.decode);
        match self.kind {
            MonitorType::Drop => format!(
                "{} vni {net} port {} len {}: {decode}",
                dash(&self.reason),
                dash(&self.port),
                self.len.unwrap_or(0)
            ),
            MonitorType::Flood => format!(
                "vni {net} port {} copies {}: {decode}",
                dash(&self.port),
                self.copies.unwrap_or(0)
            ),
            MonitorType::Trace => {
                let from = match (&self.from, &self.port) {
                    (Some(f), _) => f.clone(),
                    (None, Some(p)) => format!("port {p}"),
                    (None, None) => "-".to_owned(),
                };
                format!(
                    "vni {net} {from} -> {at} len {}: {decode}",
                    self.len.unwrap_or(0)
                )
            }
            MonitorType::Learn => format!("vni {net} {mac} at {at}"),
            MonitorType::Move => format!("vni {net} {mac} from {} to {at}", dash(&self.from)),
            MonitorType::Age => format!("vni {net} {mac} was at {at}"),
            MonitorType::Lost => format!(
                "{} events lost ({})",
                self.count.unwrap_or(0),
                dash(&self.stage)
            ),
        }
    }

    /// An event of `kind` at `time_ns` with every other field absent.
    pub fn new(kind: MonitorType, time_ns: u64) -> MonitorEvent {
        MonitorEvent {
            kind,
            time_ns,
            datapath: None,
            network: None,
            port: None,
            reason: None,
            code: None,
            mac: None,
            at: None,
            from: None,
            copies: None,
            len: None,
            decode: None,
            count: None,
            stage: None,
        }
    }
}
