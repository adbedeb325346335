//! Text rendering of decoded packets: one line per packet, layers from the outermost in,
//! separated by " / ", the way an operator reads a tunnel stack.

use std::fmt::Write as _;

use crate::decode::{Decoded, Layer};

/// One line for one packet, without the trailing newline.
pub fn packet_line(index: usize, d: &Decoded) -> String {
    let mut s = format!("{index:>5}  ");
    for (i, layer) in d.layers.iter().enumerate() {
        if i > 0 {
            s.push_str(" / ");
        }
        layer_text(&mut s, layer);
    }
    if let Some(m) = &d.malformed {
        if !d.layers.is_empty() {
            s.push_str(" / ");
        }
        let _ = write!(s, "MALFORMED {}: {}", m.layer, m.reason);
    }
    s
}

fn layer_text(s: &mut String, layer: &Layer) {
    // Writing into a String cannot fail.
    let _ = match layer {
        Layer::Ethernet { src, dst, vlans, .. } => {
            let _ = write!(s, "eth {src} > {dst}");
            vlans.iter().try_for_each(|v| write!(s, " vlan {v}"))
        }
        Layer::LinuxSll { protocol } => write!(s, "sll proto {protocol:#06x}"),
        Layer::Arp => write!(s, "arp"),
        Layer::Ipv4 { src, dst, ttl, .. } => write!(s, "ipv4 {src} > {dst} ttl {ttl}"),
        Layer::Ipv6 { src, dst, hop_limit, .. } => write!(s, "ipv6 {src} > {dst} hlim {hop_limit}"),
        Layer::Udp { src_port, dst_port } => write!(s, "udp {src_port} > {dst_port}"),
        Layer::Tcp { src_port, dst_port } => write!(s, "tcp {src_port} > {dst_port}"),
        Layer::Vxlan { vni, group_policy_id, dont_learn, policy_applied } => {
            let _ = write!(s, "vxlan vni {vni}");
            if let Some(g) = group_policy_id {
                let _ = write!(s, " gbp {g}");
                if *dont_learn {
                    s.push_str(" D");
                }
                if *policy_applied {
                    s.push_str(" A");
                }
            }
            Ok(())
        }
        Layer::VxlanGpe { vni, next_protocol, oam } => {
            write!(s, "vxlan-gpe vni {vni} next {next_protocol}{}", if *oam { " O" } else { "" })
        }
        Layer::Nsh { spi, si, ttl, md_type, next_protocol, oam } => write!(
            s,
            "nsh spi {spi} si {si} ttl {ttl} md {md_type} next {next_protocol}{}",
            if *oam { " O" } else { "" }
        ),
        Layer::Geneve { vni, protocol, oam, critical, options } => {
            let _ = write!(s, "geneve vni {vni} proto {protocol:#06x}");
            if !options.is_empty() {
                let _ = write!(s, " options {}", options.len());
            }
            if *oam {
                s.push_str(" O");
            }
            if *critical {
                s.push_str(" C");
            }
            Ok(())
        }
        Layer::Gre { protocol, key, sequence } => {
            let _ = write!(s, "gre proto {protocol:#06x}");
            if let Some(k) = key {
                let _ = write!(s, " key {k:#x}");
            }
            if let Some(q) = sequence {
                let _ = write!(s, " seq {q}");
            }
            Ok(())
        }
        Layer::Nvgre { vsid, flow_id } => write!(s, "nvgre vsid {vsid} flow {flow_id}"),
        Layer::Stt { frame_id, frame_len, fragment_offset, context_id, mss, vlan } => {
            let _ = write!(s, "stt frame {frame_id:#x} len {frame_len} off {fragment_offset}");
            if let Some(c) = context_id {
                let _ = write!(s, " context {c:#x}");
            }
            if let Some(m) = mss {
                let _ = write!(s, " mss {m}");
            }
            if let Some(v) = vlan {
                let _ = write!(s, " vlan {v}");
            }
            Ok(())
        }
        Layer::Overlay { app, ttl, vni, flow_hash, dst_node, src_node, .. } => write!(
            s,
            "overlay app {app} vni {vni} node {src_node} > {dst_node} ttl {ttl} hash {flow_hash:#010x}"
        ),
        Layer::Data { protocol, len } => write!(s, "{protocol} ({len} bytes)"),
    };
}
