//! The kernel datapath in nvod: choosing it, feeding it, and taking what it hands back.
//!
//! ```text
//!  start (datapath thread)   datapath = auto | ebpf | userspace → nvo_ebpf::Kernel::load,
//!                            Mirror::new (underlay program on the locator's interface)
//!  after commands, each tick Mirror::sync: every map equal to the pipeline, engine, ports
//!  events ring readable      Mirror::drain_events: the kernel's learning into the pipeline
//!  punts ring readable       each frame: from a port → the pipeline (as if read from it),
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

use nvo_ebpf::{layout, Kernel, Mirror, NodeSettings, Sizes};
use nvo_encap::profile::ProfileId;
use nvo_io::{FrameMeta, Gso, GsoKind};
use nvo_pipeline::{PortId, TxTarget, Vni};

use super::forward::{Core, Forwarder};
use crate::config::{Config, DatapathChoice};

/// Which datapath runs, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// `ebpf` or `userspace`.
    pub datapath: &'static str,
    /// Why.
    pub reason: String,
}

/// Why `datapath = "ebpf"` cannot start.
#[derive(Debug, thiserror::Error)]
#[error("datapath = \"ebpf\": {0} (use datapath = \"auto\" to fall back to the userspace path)")]
pub struct Refused(pub String);

/// Loads and attaches the kernel path as the configuration asks: the mirror (if it runs) and
/// the choice made. `Err` only for `datapath = "ebpf"` when the kernel refuses.
pub fn start(config: &Config, core: &Core) -> Result<(Option<Mirror>, Choice), Refused> {
    let reason = match config.datapath {
        DatapathChoice::Userspace => {
            return Ok((
                None,
                Choice {
                    datapath: "userspace",
                    reason: "configured: datapath = \"userspace\"".to_owned(),
                },
            ))
        }
        DatapathChoice::Auto => "auto: the kernel accepted the eBPF programs",
        DatapathChoice::Ebpf => "configured: datapath = \"ebpf\"",
    };
    match load(config, core) {
        Ok(mirror) => Ok((
            Some(mirror),
            Choice {
                datapath: "ebpf",
                reason: reason.to_owned(),
            },
        )),
        Err(why) if config.datapath == DatapathChoice::Auto => {
            log::warn!("the eBPF datapath is not available: {why}; running the userspace datapath");
            Ok((
                None,
                Choice {
                    datapath: "userspace",
                    reason: format!("auto: {why}"),
                },
            ))
        }
        Err(why) => Err(Refused(why)),
    }
}

fn load(config: &Config, core: &Core) -> Result<Mirror, String> {
    let IpAddr::V4(locator) = config.locator else {
        return Err(format!(
            "the locator {} is IPv6; the kernel path builds IPv4 outer headers",
            config.locator
        ));
    };
    let underlay = nvo_ebpf::iface::holding(locator)
        .map_err(|e| format!("cannot find the locator's interface: {e}"))?;
    let sizes = Sizes::from_limits(
        &core.pipeline.limits(),
        &core.engine.limits(),
        nvo_ebpf::limits::DEFAULT_FDB,
    );
    let kernel = Kernel::load(&sizes).map_err(|e| e.to_string())?;
    let source_ports = core
        .underlays
        .vxlan_ref()
        .map(|u| u.source_ports().to_vec())
        .unwrap_or_default();
    let outer = &config.outer;
    let settings = NodeSettings {
        locator,
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
    Mirror::new(kernel, settings).map_err(|e| e.to_string())
}

/// Brings the kernel's maps up to date with the tables.
pub fn sync(core: &mut Core, now: Instant) {
    let Some(mirror) = core.kernel.as_mut() else {
        return;
    };
    let ports = core.ports.infos();
    mirror.sync(&mut core.pipeline, &core.engine, &ports, now);
}

/// Applies the kernel's learn reports and handles the frames it punted; syncs after.
pub fn drain(fwd: &mut Forwarder, now: Instant) {
    let Some(mut mirror) = fwd.core.kernel.take() else {
        return;
    };
    let reports = mirror.drain_events(&mut fwd.core.pipeline, now);
    let mut punted = Vec::new();
    mirror.drain_punts(|hdr, frame| punted.push((*hdr, frame.to_vec())));
    let unresolved = punted.iter().any(|(h, _)| h.kind == layout::PUNT_ENCAP);
    fwd.core.kernel = Some(mirror);
    for (hdr, frame) in &punted {
        fwd.punted(hdr, frame, now);
    }
    fwd.flush();
    if unresolved {
        // The socket sends just made the host resolve those next hops.
        if let Some(m) = fwd.core.kernel.as_mut() {
            m.refresh_nexthops();
        }
    }
    if reports > 0 || !punted.is_empty() {
        sync(&mut fwd.core, now);
    }
}

/// What a punted frame needs from the port or socket that sends it on: a GSO frame's
/// segmentation, a partial checksum's completion (the kernel hands frames over as the sender
/// left them, checksum offload included).
fn punted_meta(frame: &[u8], gso_size: u16) -> FrameMeta {
    let Some((l4, proto, v4)) = l4_of(frame) else {
        return FrameMeta::COMPLETE;
    };
    let offset = match proto {
        6 => 16,
        17 => 6,
        _ => return FrameMeta::COMPLETE,
    };
    let start = l4 as u16;
    if gso_size > 0 {
        let kind = match (proto, v4) {
            (17, _) => GsoKind::Udp,
            (_, true) => GsoKind::Tcp4,
            (_, false) => GsoKind::Tcp6,
        };
        return FrameMeta {
            gso: Some(Gso {
                kind,
                size: gso_size,
                ecn: false,
            }),
            csum: Some((start, offset)),
        };
    }
    if partial_checksum(frame, l4, proto, v4, offset as usize) {
        FrameMeta {
            gso: None,
            csum: Some((start, offset)),
        }
    } else {
        FrameMeta::COMPLETE
    }
}

/// (L4 offset, protocol, IPv4?) of an untagged IPv4 or IPv6 (no extension header) frame.
fn l4_of(frame: &[u8]) -> Option<(usize, u8, bool)> {
    match frame.get(12..14)? {
        [0x08, 0x00] => {
            let ihl = usize::from(frame.get(14)? & 0xf) * 4;
            Some((14 + ihl, *frame.get(23)?, true))
        }
        [0x86, 0xdd] => Some((54, *frame.get(20)?, false)),
        _ => None,
    }
}

fn sum16(bytes: &[u8], mut sum: u32) -> u32 {
    for pair in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Whether the L4 checksum field holds the pseudo-header sum a sender with checksum offload
/// leaves (Linux's CHECKSUM_PARTIAL) rather than a checksum that verifies.
fn partial_checksum(frame: &[u8], l4: usize, proto: u8, v4: bool, offset: usize) -> bool {
    let Some(segment) = frame.get(l4..) else {
        return false;
    };
    let len = if v4 {
        let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
        total.saturating_sub(l4 - 14).min(segment.len())
    } else {
        usize::from(u16::from_be_bytes([frame[18], frame[19]])).min(segment.len())
    };
    let addrs = if v4 {
        frame.get(26..34)
    } else {
        frame.get(22..54)
    };
    let (Some(addrs), Some(field)) = (addrs, segment.get(offset..offset + 2)) else {
        return false;
    };
    let pseudo = sum16(addrs, u32::from(proto) + len as u32);
    let field = u16::from_be_bytes([field[0], field[1]]);
    let verifies = fold(sum16(&segment[..len], pseudo)) == 0xffff;
    !verifies && field == fold(pseudo)
}

impl Forwarder {
    /// A frame the kernel handed over.
    fn punted(&mut self, hdr: &layout::Punt, frame: &[u8], now: Instant) {
        let meta = punted_meta(frame, hdr.gso_size);
        match hdr.kind {
            layout::PUNT_PORT => self.port_frame(PortId(hdr.port_id), frame, meta, now),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp4(checksum: Option<u16>) -> Vec<u8> {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1000, 80, 1, 1000)
            .write(&mut v, b"some payload")
            .unwrap();
        if let Some(c) = checksum {
            v[14 + 20 + 16..14 + 20 + 18].copy_from_slice(&c.to_be_bytes());
        }
        v
    }

    #[test]
    fn a_partial_checksum_is_told_from_a_complete_one() {
        let complete = tcp4(None);
        assert!(punted_meta(&complete, 0).is_complete());
        // What Linux leaves with checksum offload: the folded pseudo-header sum.
        let len = (complete.len() - 34) as u32;
        let pseudo = fold(sum16(&complete[26..34], 6 + len));
        let partial = tcp4(Some(pseudo));
        let meta = punted_meta(&partial, 0);
        assert_eq!(meta.csum, Some((34, 16)));
        let gso = punted_meta(&partial, 1448);
        assert!(matches!(
            gso.gso,
            Some(Gso {
                kind: GsoKind::Tcp4,
                size: 1448,
                ..
            })
        ));
        // Neither: a broken checksum stays as it is (the receiver drops it, as it would).
        assert!(punted_meta(&tcp4(Some(0x1234)), 0).is_complete());
        assert!(punted_meta(&[0u8; 20], 0).is_complete());
    }
}
