//! `nvo monitor`'s events in nvod (issue 20; docs/monitor.md): the task that turns the
//! datapath's records into API events and hands them to the listeners of `GET /v1/monitor`.
//!
//! ```text
//!  datapath thread ─ Monitor::record (try_send) ─► ring (nvo_datapath::monitor::RING)
//!     run(): each record → event (port names, one-line decode) → Hub::publish
//!            each record and each second: growth of the datapath/kernel/fdb lost counts
//!            → a `lost` event to every listener
//!  GET /v1/monitor ─ Control::monitor_subscribe ─► Listener (own bounded queue)
//! ```
//!
//! The datapath records only while [`Hub::listening`] is set, i.e. while a listener exists.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nvo_api::{MonitorEvent, MonitorType};
use nvo_datapath::monitor::{Dest, Layer, LostCounts, Monitor, Origin, Record, What, RATE, RING};
use nvo_observe::decode;
use nvo_observe::monitor::{lost_event, Hub, Lost};
use nvo_pipeline::FdbChange;
use tokio::sync::mpsc::Receiver;

/// What the control side holds of the monitor: the listeners and what was lost.
#[derive(Debug, Clone)]
pub struct Handle {
    /// The listeners.
    pub hub: Arc<Hub>,
    /// What the datapath and the kernel lost.
    pub lost: Arc<LostCounts>,
}

impl Handle {
    /// Every stage's lost count, for the metrics.
    pub fn lost(&self) -> Lost {
        Lost {
            listener: self.hub.listener_lost(),
            datapath: self.lost.datapath.load(Ordering::Relaxed),
            kernel: self.lost.kernel.load(Ordering::Relaxed),
            fdb: self.lost.fdb.load(Ordering::Relaxed),
            rate: self.lost.rate.load(Ordering::Relaxed)
                + self.lost.kernel_rate.load(Ordering::Relaxed),
        }
    }
}

/// The datapath's monitor, the control side's handle and the ring's reader (for [`run`]).
pub fn new() -> (Monitor, Handle, Receiver<Record>) {
    let listening = Arc::new(AtomicBool::new(false));
    let hub = Hub::new(listening.clone());
    let (monitor, rx) = Monitor::new(listening, RING, RATE);
    let monitor = monitor.with_tracing(hub.tracing().clone());
    let handle = Handle {
        hub,
        lost: monitor.lost().clone(),
    };
    (monitor, handle, rx)
}

/// Turns records into events for the listeners until the datapath goes away.
pub async fn run(mut rx: Receiver<Record>, handle: Handle, vxlan_port: u16) {
    let mut told = Lost::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            record = rx.recv() => match record {
                Some(r) => handle.hub.publish(&event(&r, vxlan_port)),
                None => return,
            },
            _ = tick.tick() => {}
        }
        let now = handle.lost();
        for ((stage, n), (_, before)) in now.stages().into_iter().zip(told.stages()) {
            if stage != "listener" && n > before {
                handle.hub.publish(&lost_event(stage, n - before));
            }
        }
        told = now;
    }
}

/// The API event of a record.
pub fn event(r: &Record, vxlan_port: u16) -> MonitorEvent {
    let kind = match r.what {
        What::Drop(_) => MonitorType::Drop,
        What::Flood { .. } => MonitorType::Flood,
        What::Trace { .. } => MonitorType::Trace,
        What::Fdb { change, .. } => match change {
            FdbChange::Learned => MonitorType::Learn,
            FdbChange::Moved { .. } => MonitorType::Move,
            FdbChange::Aged => MonitorType::Age,
        },
    };
    let mut ev = MonitorEvent::new(kind, r.time_ns);
    ev.datapath = Some(r.datapath.to_owned());
    ev.network = r.vni;
    match r.what {
        What::Drop(reason) => {
            ev.reason = Some(reason.name().to_owned());
            ev.code = Some(reason.code());
        }
        What::Flood { copies } => ev.copies = Some(copies),
        What::Trace { to } => {
            ev.at = Some(where_(to));
            if let Origin::Underlay { src, .. } = r.origin {
                ev.from = Some(format!("remote {src}"));
            }
        }
        What::Fdb {
            mac, dest, from, ..
        } => {
            ev.mac = Some(mac.to_string());
            if let Dest::Port(Some(name)) = dest {
                ev.port = Some(name.as_str());
            }
            ev.at = Some(where_(dest));
            ev.from = from.map(where_);
            return ev;
        }
    }
    ev.len = Some(r.len);
    let decoded = match (r.layer, r.origin) {
        (Layer::Tunnel, Origin::Underlay { src, port }) => {
            decode::tunnel(src, port, r.bytes(), vxlan_port)
        }
        (_, Origin::Underlay { src, .. }) => {
            let mut d = decode::frame(r.bytes(), vxlan_port);
            d.text = format!("from {src}: {}", d.text);
            d
        }
        _ => decode::frame(r.bytes(), vxlan_port),
    };
    if let Origin::Port(Some(name)) = r.origin {
        ev.port = Some(name.as_str());
    }
    // A tunnel packet dropped before its network was known: the VNI its header carried.
    if r.layer == Layer::Tunnel || matches!(r.origin, Origin::Kernel { .. }) {
        ev.network = ev.network.or(decoded.vni);
    }
    ev.decode = Some(decoded.text);
    ev
}

/// `port NAME`, `remote ADDR`, `node ID`, `relay ADDR`.
fn where_(d: Dest) -> String {
    match d {
        Dest::Port(Some(name)) => format!("port {}", name.as_str()),
        Dest::Port(None) => "port ?".to_owned(),
        Dest::Remote(ip) => format!("remote {ip}"),
        Dest::Node(n) => format!("node {n}"),
        Dest::Relay(ip) => format!("relay {ip}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvo_datapath::monitor::PortName;
    use nvo_pipeline::{DropReason, Mac};

    #[test]
    fn an_unknown_vni_drop_from_a_socket_names_the_vni_it_carried() {
        let mut vx = vec![0x08, 0, 0, 0, 0, 0x03, 0xe7, 0];
        vx.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x06]);
        let origin = Origin::Underlay {
            src: "192.0.2.9".parse().unwrap(),
            port: 4789,
        };
        let r = Record::new(
            What::Drop(DropReason::UnknownVni),
            origin,
            None,
            Layer::Tunnel,
            &vx,
        );
        let ev = event(&r, 4789);
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["type"], "drop");
        assert_eq!(json["reason"], "unknown_vni");
        assert_eq!(json["code"], 9);
        assert_eq!(json["network"], 999);
        assert_eq!(json["datapath"], "userspace");
        let decoded = json["decode"].as_str().unwrap();
        assert!(
            decoded.starts_with("from 192.0.2.9 to port 4789 vxlan vni 999 |"),
            "{decoded}"
        );
        assert!(
            json.get("mac").is_none(),
            "fields of other types are left out"
        );
    }

    #[test]
    fn a_move_says_where_from_and_where_to() {
        let what = What::Fdb {
            mac: Mac([2, 0, 0, 0, 0, 0xa]),
            dest: Dest::Port(Some(PortName::new("veth-b"))),
            change: FdbChange::Moved { from: None },
            from: Some(Dest::Remote("192.0.2.1".parse().unwrap())),
        };
        let r = Record::new(what, Origin::None, Some(10), Layer::Frame, &[]);
        let json = serde_json::to_value(event(&r, 4789)).unwrap();
        assert_eq!(json["type"], "move");
        assert_eq!(json["mac"], "02:00:00:00:00:0a");
        assert_eq!(json["where"], "port veth-b");
        assert_eq!(json["from"], "remote 192.0.2.1");
        assert_eq!(json["port"], "veth-b");
        assert_eq!(json["network"], 10);
    }

    #[test]
    fn a_trace_of_a_decapsulated_frame_says_where_from_and_where_to() {
        let frame = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x06];
        let origin = Origin::Underlay {
            src: "192.0.2.9".parse().unwrap(),
            port: 4789,
        };
        let to = Dest::Port(Some(PortName::new("c-red1")));
        let r = Record::new(What::Trace { to }, origin, Some(100), Layer::Frame, &frame);
        let ev = event(&r, 4789);
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["type"], "trace");
        assert_eq!(json["where"], "port c-red1");
        assert_eq!(json["from"], "remote 192.0.2.9");
        assert_eq!(json["network"], 100);
        assert_eq!(json["len"], 14);
        assert!(json.get("copies").is_none());
        assert!(
            ev.summary()
                .starts_with("vni 100 remote 192.0.2.9 -> port c-red1 len 14: from 192.0.2.9: "),
            "{}",
            ev.summary()
        );
    }
}
