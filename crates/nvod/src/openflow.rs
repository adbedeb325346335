//! The OpenFlow listener (`openflow_listen`, issue 17 item 5): a controller — or
//! `ovs-ofctl -O OpenFlow13 … tcp:ADDR` — programs nvod's flow table over OpenFlow 1.3.
//!
//! ```text
//!  thread "openflow": accept ──► at most MAX_CONNECTIONS at once (more: closed at once)
//!  thread per connection: read ≤ 64 KiB ──► nvo_openflow::Session::input(bytes, switch)
//!                         ◄── write Session::output() (10 s write timeout; idle 60 s: closed)
//!  switch (NvodSwitch): each FLOW_MOD, stats read or PACKET_OUT is one Control call, made on
//!                       the control thread's runtime (block_on), as the API's are
//! ```
//!
//! Each connection is a sans-IO session on a blocking socket of its own thread, so a slow or
//! hostile peer holds its thread and nothing else. The session bounds what it buffers (a
//! message is at most 65,535 bytes) and answers every malformed message with an OFPT_ERROR;
//! a header it cannot follow (length below 8), an incompatible HELLO, a read or write error or
//! timeout closes the connection. OpenFlow port numbers are nvod's port ids (`nvo port list`
//! shows the names; PORT_DESC lists both), and port 65279, `tunnel`, is the tunnel: frames
//! decapsulated from the underlay come in on it (docs/openflow.md); its PORT_STATS are the
//! underlay's packet counters.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvo_flow::Action;
use nvo_openflow::switch::outputs_to;
use nvo_openflow::wire::port;
use nvo_openflow::{
    FlowFilter, FlowMod, FlowStat, MeterMod, OfError, PortDesc, PortStats, Session, Switch,
};
use nvo_pipeline::flows::{check_actions, TunnelError};
use nvo_pipeline::{FlowError, PortId, MAX_FLOWS};

use crate::api::Shared;
use crate::control::TUNNEL;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// A connection silent this long is closed (controllers send ECHO_REQUEST every few seconds).
const IDLE: Duration = Duration::from_secs(60);
/// A peer that does not read its answers for this long is closed.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Binds `addr` and serves OpenFlow on it from a thread of its own.
pub fn spawn(
    addr: SocketAddr,
    control: Shared,
    runtime: tokio::runtime::Handle,
    datapath_id: u64,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    log::info!("OpenFlow 1.3 on tcp:{addr} (datapath id {datapath_id:#x})");
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("openflow".to_owned())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                    log::warn!(
                        "OpenFlow: {MAX_CONNECTIONS} connections served already; closing one from {:?}",
                        stream.peer_addr().ok()
                    );
                    continue;
                }
                active.fetch_add(1, Ordering::Relaxed);
                let switch = NvodSwitch {
                    control: control.clone(),
                    runtime: runtime.clone(),
                    datapath_id,
                };
                let done = active.clone();
                let spawned = std::thread::Builder::new()
                    .name("openflow-conn".to_owned())
                    .spawn(move || {
                        serve(stream, switch);
                        done.fetch_sub(1, Ordering::Relaxed);
                    });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::Relaxed);
                }
            }
        })?;
    Ok(())
}

/// Serves one connection until it closes or misbehaves.
fn serve(mut stream: TcpStream, mut switch: NvodSwitch) {
    let peer = stream.peer_addr().ok();
    if stream.set_read_timeout(Some(IDLE)).is_err()
        || stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_err()
    {
        return;
    }
    let _ = stream.set_nodelay(true);
    let mut session = Session::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let out = session.output();
        if !out.is_empty() && stream.write_all(&out).is_err() {
            break;
        }
        if let Some(why) = session.closed() {
            log::info!("OpenFlow: closing {peer:?}: {why:?}");
            break;
        }
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        session.input(&buf[..n], &mut switch);
    }
    log::debug!("OpenFlow: {peer:?} gone");
}

/// The switch a session speaks for: nvod's flow table and ports, through Control.
struct NvodSwitch {
    control: Shared,
    runtime: tokio::runtime::Handle,
    datapath_id: u64,
}

impl NvodSwitch {
    fn dump(&self) -> Option<nvo_datapath::FlowDump> {
        self.runtime
            .block_on(async { self.control.lock().await.flow_dump().await })
            .map_err(|e| log::warn!("OpenFlow: cannot read the flow table: {}", e.message))
            .ok()
    }
}

impl Switch for NvodSwitch {
    fn datapath_id(&self) -> u64 {
        self.datapath_id
    }

    fn ports(&self) -> Vec<PortDesc> {
        let (numbers, ports) = self.runtime.block_on(async {
            let c = self.control.lock().await;
            (c.port_numbers(), c.ports().await.unwrap_or_default())
        });
        // A VLAN circuit (TRUNK.VID) is up when its trunk is.
        let up = |name: &str| {
            let iface = ports.iter().find(|p| p.name == name).or_else(|| {
                let trunk = name.rsplit_once('.')?.0;
                ports.iter().find(|p| p.name == trunk)
            });
            iface.is_some_and(|p| p.up)
        };
        let mut descs: Vec<PortDesc> = numbers
            .into_iter()
            .map(|(port_no, name)| PortDesc {
                mac: mac_of(&name),
                up: up(&name),
                port_no,
                name,
            })
            .collect();
        // The tunnel as a port of the table (in_port=tunnel, as an OVS bridge's tunnel port).
        descs.push(PortDesc {
            port_no: PortId::TUNNEL.0,
            name: TUNNEL.to_owned(),
            mac: [0; 6],
            up: true,
        });
        descs
    }

    fn port_stats(&self, port_no: u32) -> Result<Vec<PortStats>, OfError> {
        let counters = self
            .runtime
            .block_on(async { self.control.lock().await.port_counters().await })
            .map_err(|_| OfError::BAD_PORT)?;
        // counters holds the tunnel's (Control::port_counters): tunnel packets in and out.
        let stats: Vec<PortStats> = counters
            .into_iter()
            .filter(|(id, _)| port_no == port::ANY || *id == port_no)
            .map(|(id, c)| PortStats {
                port_no: id,
                rx_packets: c.rx_frames,
                tx_packets: c.tx_frames,
                rx_bytes: c.rx_bytes,
                tx_bytes: c.tx_bytes,
                rx_dropped: c.drops,
                tx_dropped: 0,
                duration: Duration::ZERO,
            })
            .collect();
        if stats.is_empty() && port_no != port::ANY {
            return Err(OfError::BAD_PORT);
        }
        Ok(stats)
    }

    fn flow_mod(&mut self, m: FlowMod) -> Result<(), OfError> {
        if !matches!(m.command, nvo_openflow::Command::Delete { .. }) {
            check_actions(&m.actions).map_err(|e| action_error(&e))?;
        }
        let result = self
            .runtime
            .block_on(async { self.control.lock().await.flow_mod(m).await });
        result.map_err(|e| {
            log::info!("OpenFlow: FLOW_MOD refused: {}", e.message);
            if e.message.contains("full") {
                OfError::FLOW_MOD_TABLE_FULL
            } else if e.message.contains("no meter") {
                // §6.4: a flow entry naming a meter that does not exist.
                OfError::METER_UNKNOWN
            } else if e.message.contains("tun_dst") || e.message.contains("set_tunnel") {
                // A tunnel field this host cannot send to (flows::check_here).
                OfError::ACTION_BAD_SET_ARGUMENT
            } else {
                OfError::FLOW_MOD_UNKNOWN
            }
        })
    }

    fn meter_mod(&mut self, m: MeterMod) -> Result<(), OfError> {
        let result = self.runtime.block_on(async {
            let mut control = self.control.lock().await;
            match m {
                MeterMod::Add { id, rate, burst } => {
                    let burst = burst.unwrap_or_else(|| default_burst(rate));
                    control
                        .meter_add(nvo_api::MeterSpec { id, rate, burst })
                        .await
                        .map(drop)
                }
                MeterMod::Delete { id } => control.meter_delete(id).await,
            }
        });
        result.map_err(|e| {
            log::info!("OpenFlow: METER_MOD refused: {}", e.message);
            let m = &e.message;
            if m.contains("already exists") {
                OfError::METER_EXISTS
            } else if m.contains("no meter") {
                OfError::METER_UNKNOWN
            } else if m.contains("the most a node holds") {
                OfError::METER_OUT_OF_METERS
            } else if m.contains("rate") {
                OfError::METER_BAD_RATE
            } else if m.contains("burst") {
                OfError::METER_BAD_BURST
            } else {
                // A meter flow rules still name (nvo refuses to delete it), or the datapath.
                OfError::METER_MOD_UNKNOWN
            }
        })
    }

    fn flows(&self, filter: &FlowFilter) -> Vec<FlowStat> {
        let Some(d) = self.dump() else {
            return Vec::new();
        };
        d.rules
            .into_iter()
            .filter(|s| {
                let r = &s.rule;
                r.cookie & filter.cookie_mask == filter.cookie & filter.cookie_mask
                    && outputs_to(&r.actions, filter.out_port)
                    && r.pattern.within(&filter.pattern)
            })
            .collect()
    }

    fn table_stats(&self) -> (u32, u64, u64) {
        self.dump().map_or((0, 0, 0), |d| {
            let n = u32::try_from(d.rules.len()).unwrap_or(u32::MAX);
            (n, d.lookups, d.matched)
        })
    }

    fn table_capacity(&self) -> u32 {
        u32::try_from(MAX_FLOWS).unwrap_or(u32::MAX)
    }

    fn packet_out(
        &mut self,
        in_port: u32,
        actions: &[Action],
        frame: &[u8],
    ) -> Result<(), OfError> {
        check_actions(actions).map_err(|e| action_error(&e))?;
        let in_port =
            (in_port != port::CONTROLLER && in_port != port::ANY).then_some(PortId(in_port));
        let (actions, frame) = (actions.to_vec(), frame.to_vec());
        let started = Instant::now();
        self.runtime
            .block_on(async {
                self.control
                    .lock()
                    .await
                    .packet_out(in_port, actions, frame)
                    .await
            })
            .map_err(|e| {
                log::info!(
                    "OpenFlow: PACKET_OUT refused after {:?}: {}",
                    started.elapsed(),
                    e.message
                );
                OfError::BAD_PACKET
            })
    }
}

/// An interface's MAC, asked of the kernel in nvod's namespace (zeros when there is no such
/// interface: a VLAN circuit, a virtual port).
fn mac_of(name: &str) -> [u8; 6] {
    nvo_io::iface::interface(name).map_or([0; 6], |i| i.mac)
}

/// The burst of a meter added without one (no OFPMF_BURST): 100 ms at its rate, within the
/// bounds of a policer's burst — enough for TCP to hold the rate (docs/openflow.md).
fn default_burst(rate: u64) -> u64 {
    (rate / 8 / 10).clamp(nvo_pipeline::qos::MIN_BURST, nvo_pipeline::qos::MAX_BURST)
}

/// The OpenFlow error for actions [`check_actions`] refuses.
fn action_error(e: &FlowError) -> OfError {
    match e {
        FlowError::Tunnel(TunnelError::NoDst) => OfError::ACTION_BAD_ARGUMENT,
        FlowError::Tunnel(_) => OfError::ACTION_BAD_SET_ARGUMENT,
        _ => OfError::ACTION_BAD_TYPE,
    }
}
