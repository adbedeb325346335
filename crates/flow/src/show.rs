//! A flow written back in the flow syntax, as `ovs-ofctl dump-flows` prints it: what
//! `nvo flow show` lists and what [`crate::syntax::parse`] reads again.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::action::format_actions;
use crate::flow_match::Match;
use crate::key::{ethertype, proto, Field, VLAN_PRESENT};
use crate::syntax::{Flow, DEFAULT_PRIORITY};

/// The match and actions of `flow` (priority, cookie and timeouts where not default);
/// `port` names a port number where it can.
pub fn format_flow(flow: &Flow, port: &dyn Fn(u32) -> Option<String>) -> String {
    let mut items = Vec::new();
    if flow.cookie != 0 {
        items.push(format!("cookie={:#x}", flow.cookie));
    }
    if flow.priority != DEFAULT_PRIORITY {
        items.push(format!("priority={}", flow.priority));
    }
    if let Some(t) = flow.idle_timeout {
        items.push(format!("idle_timeout={}", t.as_secs()));
    }
    if let Some(t) = flow.hard_timeout {
        items.push(format!("hard_timeout={}", t.as_secs()));
    }
    let m = format_match(&flow.pattern, port);
    if !m.is_empty() {
        items.push(m);
    }
    format!(
        "{} actions={}",
        items.join(","),
        format_actions(&flow.actions)
    )
    .trim_start()
    .to_owned()
}

/// A match in the flow syntax, shorthands (`tcp`, `ip`, …) where they apply.
pub fn format_match(m: &Match, port: &dyn Fn(u32) -> Option<String>) -> String {
    let mut out: Vec<String> = Vec::new();
    let (et, et_mask) = m.field(Field::EthType);
    let (pr, pr_mask) = m.field(Field::IpProto);
    let et = (et_mask == 0xffff).then_some(et as u16);
    let pr = (pr_mask == 0xff).then_some(pr as u8);
    let (in_port, in_mask) = m.field(Field::InPort);
    if in_mask != 0 {
        let n = in_port as u32;
        out.push(format!(
            "in_port={}",
            port(n).unwrap_or_else(|| n.to_string())
        ));
    }
    let shorthand = match (et, pr) {
        (Some(ethertype::IPV4), Some(proto::TCP)) => Some("tcp"),
        (Some(ethertype::IPV4), Some(proto::UDP)) => Some("udp"),
        (Some(ethertype::IPV4), Some(proto::SCTP)) => Some("sctp"),
        (Some(ethertype::IPV4), Some(proto::ICMP)) => Some("icmp"),
        (Some(ethertype::IPV6), Some(proto::TCP)) => Some("tcp6"),
        (Some(ethertype::IPV6), Some(proto::UDP)) => Some("udp6"),
        (Some(ethertype::IPV6), Some(proto::SCTP)) => Some("sctp6"),
        (Some(ethertype::IPV6), Some(proto::ICMPV6)) => Some("icmp6"),
        _ => None,
    };
    match (shorthand, et) {
        (Some(s), _) => out.push(s.to_owned()),
        (None, Some(ethertype::IPV4)) => out.push("ip".to_owned()),
        (None, Some(ethertype::IPV6)) => out.push("ipv6".to_owned()),
        (None, Some(ethertype::ARP)) => out.push("arp".to_owned()),
        (None, Some(t)) => out.push(format!("dl_type=0x{t:04x}")),
        (None, None) if et_mask != 0 => out.push(format!(
            "dl_type=0x{:04x}/0x{et_mask:04x}",
            m.field(Field::EthType).0
        )),
        _ => {}
    }
    let (vlan, vmask) = m.field(Field::Vlan);
    if vmask == 0x1fff && vlan == 0 {
        out.push("dl_vlan=0xffff".to_owned());
    } else if vmask == 0x1fff {
        out.push(format!("dl_vlan={}", vlan as u16 & !VLAN_PRESENT));
    } else if vmask != 0 {
        out.push(format!("vlan_vid={vlan:#x}/{vmask:#x}"));
    }
    for (f, name) in [(Field::EthSrc, "dl_src"), (Field::EthDst, "dl_dst")] {
        let (v, mask) = m.field(f);
        if mask != 0 {
            let s = mac(v);
            out.push(if mask == 0xffff_ffff_ffff {
                format!("{name}={s}")
            } else {
                format!("{name}={s}/{}", mac(mask))
            });
        }
    }
    let arp = et == Some(ethertype::ARP);
    for (f, v4, v6) in [
        (
            Field::IpSrc,
            if arp { "arp_spa" } else { "nw_src" },
            "ipv6_src",
        ),
        (
            Field::IpDst,
            if arp { "arp_tpa" } else { "nw_dst" },
            "ipv6_dst",
        ),
    ] {
        let (v, mask) = m.field(f);
        if mask == 0 {
            continue;
        }
        if et == Some(ethertype::IPV6) {
            let len = mask.leading_ones();
            out.push(if len == 128 {
                format!("{v6}={}", Ipv6Addr::from(v))
            } else {
                format!("{v6}={}/{len}", Ipv6Addr::from(v))
            });
        } else {
            let (a, mk) = (Ipv4Addr::from(v as u32), mask as u32);
            let len = mk.leading_ones();
            out.push(if len == 32 {
                format!("{v4}={a}")
            } else if mk.count_ones() == len {
                format!("{v4}={a}/{len}")
            } else {
                format!("{v4}={a}/{}", Ipv4Addr::from(mk))
            });
        }
    }
    if shorthand.is_none() && pr.is_some() {
        out.push(format!(
            "{}={}",
            if arp { "arp_op" } else { "nw_proto" },
            pr.unwrap_or(0)
        ));
    }
    let (dscp, dmask) = m.field(Field::Dscp);
    if dmask != 0 {
        out.push(format!("nw_tos={}", dscp << 2));
    }
    let icmp = matches!(pr, Some(proto::ICMP | proto::ICMPV6));
    for (f, name, icmp_name) in [
        (Field::TpSrc, "tp_src", "icmp_type"),
        (Field::TpDst, "tp_dst", "icmp_code"),
    ] {
        let (v, mask) = m.field(f);
        if mask == 0 {
            continue;
        }
        let name = if icmp { icmp_name } else { name };
        out.push(if mask == 0xffff || (icmp && mask == 0xff) {
            format!("{name}={v}")
        } else {
            format!("{name}={v:#x}/{mask:#x}")
        });
    }
    let (flags, fmask) = m.field(Field::TcpFlags);
    if fmask != 0 {
        out.push(format!("tcp_flags={flags:#05x}/{fmask:#05x}"));
    }
    let (tun, tmask) = m.field(Field::TunKey);
    if tmask == u128::from(u64::MAX) {
        out.push(format!("tun_id={tun:#x}"));
    } else if tmask != 0 {
        out.push(format!("tun_id={tun:#x}/{tmask:#x}"));
    }
    out.join(",")
}

fn mac(v: u128) -> String {
    (0..6)
        .rev()
        .map(|i| format!("{:02x}", (v >> (8 * i)) as u8))
        .collect::<Vec<_>>()
        .join(":")
}
