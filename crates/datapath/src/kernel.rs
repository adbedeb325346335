//! The kernel datapath in nvod: choosing it, feeding it, and taking what it hands back.
//!
//! ```text
//!  start (datapath thread)   datapath = auto | ebpf | userspace → nvo_ebpf::Kernel::load,
//!                            Mirror::new (underlay program on the locator's interface)
//!                            the XDP relay on that interface where it can run (xdp = …)
//!  after commands, each tick Mirror::sync: every map equal to the pipeline, engine, ports;
//!                            Mirror::sync_relay: the relay map equal to the overlay tables
//!  events ring readable      Mirror::drain_events: the kernel's learning into the pipeline
//!  punts ring readable       each frame: from a port → the pipeline (as if read from it),
//!                            an ARP request the kernel answered → the pipeline snoops it,
//!                            for a userspace port → sent to it, to encapsulate for an
//!                            unresolved remote → through the profile's socket
//! ```
//!
//! Frames the kernel takes never reach nvod's sockets: its ports are opened send-only (an
//! `ETH_P_ALL` packet socket would see every frame before tc does), and tunnel packets of its
//! networks are consumed at tc ingress before the host stack delivers them to a socket. What
//! it leaves — other networks' packets, relays, fragments — goes on to the sockets as before.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use nvo_ebpf::{layout, AttachError, Kernel, Mirror, NodeSettings, Sizes, XdpAttach};
use nvo_encap::profile::ProfileId;
use nvo_pipeline::policy::GroupTag;
use nvo_pipeline::{DropReason, PortId, TxTarget, Vni};

use super::forward::{Core, Forwarder};
use super::monitor::{Dest, Layer, Origin, PortName, Record, What};
use crate::settings::{DatapathChoice, Settings, XdpChoice};

/// Which datapath runs, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// `ebpf` or `userspace`.
    pub datapath: &'static str,
    /// Why.
    pub reason: String,
    /// Where overlay packets for other nodes are relayed (`xdp driver on IF`, `tc on IF`,
    /// `userspace`).
    pub relay: String,
}

/// Why `datapath = "ebpf"` cannot start.
#[derive(Debug, thiserror::Error)]
#[error("datapath = \"ebpf\": {0} (use datapath = \"auto\" to fall back to the userspace path)")]
pub struct Refused(Unavailable);

/// Why the kernel path cannot run on this node.
#[derive(Debug, thiserror::Error)]
enum Unavailable {
    /// No interface holds the (IPv4) locator.
    #[error("cannot find the locator's interface: {0}")]
    Interface(std::io::Error),
    /// The kernel refused the programs or their maps.
    #[error(transparent)]
    Load(#[from] nvo_ebpf::LoadError),
    /// A program could not be attached.
    #[error(transparent)]
    Attach(#[from] AttachError),
    /// The XDP relay could not be attached in the mode the `xdp` key asks for.
    #[error("xdp = \"{mode}\": {source}")]
    Xdp {
        /// "driver" or "generic".
        mode: &'static str,
        /// What the kernel said.
        source: AttachError,
    },
}

/// Loads and attaches the kernel path as the configuration asks: the mirror (if it runs) and
/// the choice made. `Err` only for `datapath = "ebpf"` when the kernel refuses.
pub fn start(config: &Settings, core: &Core) -> Result<(Option<Mirror>, Choice), Refused> {
    let reason = match config.datapath {
        DatapathChoice::Userspace => {
            return Ok((
                None,
                Choice {
                    datapath: "userspace",
                    reason: "configured: datapath = \"userspace\"".to_owned(),
                    relay: "userspace".to_owned(),
                },
            ))
        }
        DatapathChoice::Auto => "auto: the kernel accepted the eBPF programs",
        DatapathChoice::Ebpf => "configured: datapath = \"ebpf\"",
    };
    match load(config, core) {
        Ok((mirror, relay)) => Ok((
            Some(mirror),
            Choice {
                datapath: "ebpf",
                reason: reason.to_owned(),
                relay,
            },
        )),
        Err(why) if config.datapath == DatapathChoice::Auto => {
            log::warn!("the eBPF datapath is not available: {why}; running the userspace datapath");
            Ok((
                None,
                Choice {
                    datapath: "userspace",
                    reason: format!("auto: {why}"),
                    relay: "userspace".to_owned(),
                },
            ))
        }
        Err(why) => Err(Refused(why)),
    }
}

fn load(config: &Settings, core: &Core) -> Result<(Mirror, String), Unavailable> {
    // An IPv6 locator: the programs load (and must pass the verifier), but every network
    // runs on the userspace path; no underlay program.
    let underlay = match config.locator {
        IpAddr::V4(v4) => Some(nvo_io::iface::holding(v4).map_err(Unavailable::Interface)?),
        IpAddr::V6(_) => None,
    };
    let sizes = Sizes::from_limits(
        &core.pipeline.limits(),
        &core.engine.limits(),
        nvo_ebpf::limits::DEFAULT_FDB,
    )
    .with_overlay(&core.overlay.limits());
    let kernel = Kernel::load(&sizes)?;
    let source_ports = core
        .underlays
        .vxlan_ref()
        .map(|u| u.source_ports().to_vec())
        .unwrap_or_default();
    let outer = &config.outer;
    let settings = NodeSettings {
        locator: config.locator,
        underlay,
        vxlan_port: config.vxlan_port,
        source_ports,
        ttl: outer.ttl.unwrap_or(64),
        ttl_inherit: outer.inherit_ttl,
        tos: outer.tos.unwrap_or(0),
        tos_inherit: outer.inherit_tos,
        // The socket's default (IP_PMTUDISC_WANT) sets DF.
        df: outer.df.unwrap_or(true),
        multicast_ttl: config.multicast_ttl,
        trace: false,
    };
    let mut mirror = Mirror::new(kernel, settings)?;
    let relay = attach_relay(config.xdp, &mut mirror)?;
    Ok((mirror, relay))
}

/// Attaches the XDP relay as `xdp` asks: where the relay runs, or why nvod cannot start.
fn attach_relay(xdp: XdpChoice, mirror: &mut Mirror) -> Result<String, Unavailable> {
    let Some(underlay) = mirror.settings().underlay.clone() else {
        // An IPv6 locator: every overlay packet is nvod's.
        return Ok("userspace".to_owned());
    };
    let tc = format!("tc on {}", underlay.name);
    let mode = match xdp {
        XdpChoice::Off => return Ok(tc),
        XdpChoice::Driver => XdpAttach::Driver,
        XdpChoice::Generic => XdpAttach::Generic,
        XdpChoice::Auto => match nvo_io::ethtool::driver(&underlay.name) {
            Ok(driver) if driver != "veth" => XdpAttach::Driver,
            _ => return Ok(tc),
        },
    };
    match mirror
        .kernel_mut()
        .attach_relay(&underlay.name, underlay.ifindex, mode)
    {
        Ok(()) => Ok(format!("xdp {} on {}", mode.name(), underlay.name)),
        Err(e) if xdp == XdpChoice::Auto => {
            log::info!("{e}; the tc program relays overlay packets");
            Ok(tc)
        }
        Err(source) => Err(Unavailable::Xdp {
            mode: mode.name(),
            source,
        }),
    }
}

/// Brings the kernel's maps up to date with the tables.
pub fn sync(core: &mut Core, now: Instant) {
    let Some(mirror) = core.kernel.as_mut() else {
        return;
    };
    let pipeline = &core.pipeline;
    let ports = core.ports.infos(|id| pipeline.port_network(id));
    mirror.sync(&mut core.pipeline, &core.engine, &ports, now);
    // The kernel relays once nvod's overlay socket is open: packets leave as it sends them.
    let overlay = nvo_encap::profile::Transport::Udp(super::overlay::PORT);
    let socket = core
        .underlays
        .find(overlay)
        .and_then(|at| core.underlays.at(at));
    if let Some(super::underlays::Underlay {
        socket: super::underlays::Socket::Udp(u),
        port,
        ..
    }) = socket
    {
        if let Err(e) = mirror.set_overlay_socket(*port, u.source_ports()) {
            log::warn!("cannot give the kernel the overlay socket's ports: {e}");
        }
    }
    mirror.sync_relay(&core.overlay);
}

/// Applies the kernel's learn reports and handles the frames it punted; syncs after.
pub fn drain(fwd: &mut Forwarder, now: Instant) {
    let Some(mut mirror) = fwd.core.kernel.take() else {
        return;
    };
    let reports = mirror.drain_events(&mut fwd.core.pipeline, now);
    if fwd.core.monitor.on() {
        let core = &fwd.core;
        mirror.drain_monitor(|hdr, port, bytes| {
            let Some(what) = kernel_what(hdr, core) else {
                return;
            };
            let port = port.and_then(|id| core.ports.get(id));
            let vni = match (hdr.kind, hdr.arg) {
                (layout::MONITOR_DROP, _) => port.map(|p| p.vni.0),
                // A relayed packet belongs to no network here.
                (layout::MONITOR_TRACE, layout::TRACE_RELAY) => None,
                _ => Some(hdr.vni),
            };
            let origin = match port {
                Some(p) => Origin::Port(Some(PortName::new(&p.name))),
                None => Origin::Kernel {
                    ifindex: hdr.ifindex,
                },
            };
            core.monitor.record(|| {
                let mut record = Record::new(what, origin, vni, Layer::Frame, bytes);
                record.datapath = "ebpf";
                record.len = hdr.len;
                record
            });
        });
    } else {
        // Records written before the flag went down: nobody wants them.
        mirror.drain_monitor(|_, _, _| {});
    }
    // Each frame is handled where it lies in the ring (nothing on the per-frame path needs
    // the mirror, which is out of `fwd` meanwhile).
    let mut unresolved = false;
    let punts = mirror.drain_punts(|hdr, frame| {
        unresolved |= hdr.kind == layout::PUNT_ENCAP;
        fwd.punted(hdr, frame, now);
    });
    fwd.flush();
    if unresolved {
        // The socket sends just made the host resolve those next hops.
        mirror.refresh_nexthops();
    }
    fwd.core.kernel = Some(mirror);
    if reports > 0 || punts > 0 {
        sync(&mut fwd.core, now);
    }
}

impl Forwarder {
    /// A frame the kernel handed over.
    fn punted(&mut self, hdr: &layout::Punt, frame: &[u8], now: Instant) {
        let meta = super::csum::punted_meta(frame, hdr.gso_size);
        match hdr.kind {
            layout::PUNT_PORT => self.port_frame(PortId(hdr.port_id), frame, meta, now),
            layout::PUNT_ANSWERED => {
                // The kernel replied from its copy of the neighbour table; the pipeline snoops
                // the request and counts it (and forwards it, should it not take it as one).
                let core = &mut self.core;
                core.seen = super::forward::Seen::Port(PortId(hdr.port_id));
                core.seen_vni = None;
                core.pipeline.from_port_answered(
                    PortId(hdr.port_id),
                    frame,
                    now,
                    &mut core.actions,
                );
                core.perform(frame, &meta);
            }
            layout::PUNT_DELIVER => {
                let port = PortId(hdr.port_id);
                let sent = self.core.ports.send_meta(port, frame, &meta);
                let outcome = match sent {
                    Ok(()) => nvo_pipeline::TxOutcome::Sent,
                    Err(_) => nvo_pipeline::TxOutcome::Failed,
                };
                self.core
                    .pipeline
                    .count_tx(TxTarget::Port(port), frame.len(), outcome);
            }
            layout::PUNT_ENCAP => {
                let remote = IpAddr::V4(Ipv4Addr::new(
                    hdr.remote[0],
                    hdr.remote[1],
                    hdr.remote[2],
                    hdr.remote[3],
                ));
                let Ok(view) = self.core.pipeline.network(Vni(hdr.vni)) else {
                    return;
                };
                let to = (remote, Vni(hdr.vni), hdr.entropy, ProfileId(view.profile.0));
                // The identity the program decided (bpf/policy.h) goes into the header nvod
                // writes, as the program would have written it.
                let tag = (hdr.port_id & layout::TAG_ON != 0).then_some(GroupTag {
                    group: (hdr.port_id & 0xffff) as u16,
                    applied: hdr.port_id & layout::TAG_APPLIED != 0,
                });
                self.core.actions.set_group(tag);
                if meta.is_complete() {
                    self.core.encap(to, frame, false, &meta);
                } else {
                    self.core.encap_segments(to, frame, &meta, 0);
                }
            }
            _ => {}
        }
    }
}

/// What a kernel monitor record says happened; `None` for a kind or code this build does not
/// know (a newer object's record).
fn kernel_what(hdr: &layout::MonitorRecord, core: &Core) -> Option<What> {
    match hdr.kind {
        layout::MONITOR_DROP => DropReason::from_code(u16::try_from(hdr.arg).ok()?).map(What::Drop),
        layout::MONITOR_FLOOD => Some(What::Flood { copies: hdr.arg }),
        layout::MONITOR_TRACE if hdr.arg == layout::TRACE_PORT => {
            let port = core.ports.get(PortId(hdr.target));
            let to = Dest::Port(port.map(|p| PortName::new(&p.name)));
            Some(What::Trace { to })
        }
        layout::MONITOR_TRACE => {
            let remote = IpAddr::V4(Ipv4Addr::from(hdr.target.to_ne_bytes()));
            let to = match hdr.arg {
                layout::TRACE_RELAY => Dest::Relay(remote),
                _ => Dest::Remote(remote),
            };
            Some(What::Trace { to })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line nvod stops with, and the reason `GET /v1/node` shows, read as before the
    /// typed errors.
    #[test]
    fn refusals_read_as_before() {
        let refused = Refused(Unavailable::Load(nvo_ebpf::LoadError::MissingMap("fdb")));
        assert_eq!(
            refused.to_string(),
            "datapath = \"ebpf\": the eBPF object has no map fdb (use datapath = \"auto\" to \
             fall back to the userspace path)"
        );
        let xdp = Unavailable::Xdp {
            mode: "driver",
            source: AttachError {
                program: "nvo_relay",
                interface: "eth0".to_owned(),
                reason: "EOPNOTSUPP".to_owned(),
            },
        };
        assert_eq!(
            xdp.to_string(),
            "xdp = \"driver\": cannot attach nvo_relay to eth0: EOPNOTSUPP"
        );
        let interface = Unavailable::Interface(std::io::Error::other("no such address"));
        assert_eq!(
            interface.to_string(),
            "cannot find the locator's interface: no such address"
        );
    }
}
