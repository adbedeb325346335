//! The flow syntax operators already write for Open vSwitch (ovs-fields(7), ovs-actions(7),
//! `ovs-ofctl add-flow`): `priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop`.
//!
//! ```text
//!  flow     = item *("," item) [","] "actions=" actions
//!  item     = shorthand | key "=" value        value: N | 0xN | N/MASK | IP/LEN | IP/MASK | MAC[/MASK]
//!  shorthand = ip | ipv6 | tcp | udp | sctp | icmp | tcp6 | udp6 | sctp6 | icmp6 | arp
//!  keys     = priority cookie idle_timeout hard_timeout table(0 only)
//!             in_port dl_src dl_dst dl_vlan vlan_vid dl_type eth_type nw_src nw_dst ipv6_src ipv6_dst
//!             vlan_tci nw_proto ip_proto nw_tos ip_dscp tp_src tp_dst tcp_src tcp_dst udp_src udp_dst
//!             sctp_src sctp_dst icmp_type icmp_code icmpv6_type icmpv6_code tcp_flags arp_op arp_spa
//!             arp_tpa tun_id
//!  actions  = drop | action *("," action)      (see [`crate::action::Action`])
//! ```
//!
//! Prerequisites are checked as Open vSwitch checks them: a transport port needs `tcp`, `udp`
//! or `sctp`, an IPv4 address needs `ip` (or `arp`), and so on — so a rule never matches the
//! zeros a key holds for fields a packet does not have. Ports are numbers or, through the
//! resolver the caller passes, names. Every error names the item it is about.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::action::Action;
use crate::flow_match::Match;
use crate::key::{ethertype, ip_bits, mac_bits, proto, Field, VLAN_PRESENT};
use crate::Rule;

/// The priority of a rule that names none (OpenFlow's OFP_DEFAULT_PRIORITY).
pub const DEFAULT_PRIORITY: u16 = 0x8000;

/// Longest flow text taken.
pub const MAX_LEN: usize = 4096;

/// A parsed flow: a rule whose actions are a list of [`Action`].
pub type Flow = Rule<Vec<Action>>;

/// Why a flow's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// Longer than [`MAX_LEN`].
    #[error("the flow is longer than {MAX_LEN} characters")]
    TooLong,
    /// No `actions=`.
    #[error("the flow has no actions= (e.g. `tcp,tp_dst=22,actions=drop`)")]
    NoActions,
    /// A key nvo does not know.
    #[error("unknown field {0:?}")]
    UnknownField(String),
    /// A value that does not parse for its field.
    #[error("{field}: {value:?} is not {want}")]
    BadValue {
        /// The field.
        field: String,
        /// The value given.
        value: String,
        /// What was expected.
        want: &'static str,
    },
    /// A field given twice.
    #[error("{0} is given twice")]
    Duplicate(String),
    /// A field without the protocol it needs.
    #[error("{field} needs {needs} (e.g. `{example}`)")]
    Prerequisite {
        /// The field.
        field: &'static str,
        /// What it needs.
        needs: &'static str,
        /// An example.
        example: &'static str,
    },
    /// An action nvo does not know or cannot parse.
    #[error("action {0:?} is not one nvo carries out (drop, normal, output:N, in_port, mod_dl_src, mod_dl_dst, push_vlan, pop_vlan/strip_vlan, mod_vlan_vid, mod_vlan_pcp, mod_nw_tos, mod_nw_ttl, dec_ttl, set_tunnel, set_field:V->ip_dscp|tun_dst|tun_ipv6_dst|tun_id, meter:N)")]
    UnknownAction(String),
    /// `drop` with other actions.
    #[error("drop cannot be combined with other actions")]
    DropWithOthers,
    /// A port name the resolver does not know.
    #[error("no port named {0:?}")]
    UnknownPort(String),
}

/// Parses a flow; `port` turns a port name into its number.
pub fn parse(text: &str, port: &dyn Fn(&str) -> Option<u32>) -> Result<Flow, SyntaxError> {
    if text.len() > MAX_LEN {
        return Err(SyntaxError::TooLong);
    }
    let text = text.trim();
    let at = text.find("actions=").ok_or(SyntaxError::NoActions)?;
    let (head, actions) = (&text[..at], &text[at + "actions=".len()..]);
    let mut p = Parsed::default();
    for item in head
        .split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        p.item(item, port)?;
    }
    p.check()?;
    let actions = parse_actions(actions, port)?;
    let mut rule = Rule::new(p.priority.unwrap_or(DEFAULT_PRIORITY), p.pattern, actions);
    rule.cookie = p.cookie;
    rule.idle_timeout = p.idle.map(Duration::from_secs);
    rule.hard_timeout = p.hard.map(Duration::from_secs);
    Ok(rule)
}

#[derive(Default)]
struct Parsed {
    pattern: Match,
    priority: Option<u16>,
    cookie: u64,
    idle: Option<u64>,
    hard: Option<u64>,
    seen: Vec<String>,
}

impl Parsed {
    fn item(&mut self, item: &str, port: &dyn Fn(&str) -> Option<u32>) -> Result<(), SyntaxError> {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        if self.seen.iter().any(|s| s == key) {
            return Err(SyntaxError::Duplicate(key.to_owned()));
        }
        self.seen.push(key.to_owned());
        let Some(value) = value else {
            return self.shorthand(key);
        };
        let m = self.pattern;
        self.pattern = match key {
            "priority" => {
                self.priority = Some(number(key, value, u16::MAX.into())? as u16);
                m
            }
            "cookie" => {
                self.cookie = number(key, value, u64::MAX.into())? as u64;
                m
            }
            "idle_timeout" | "hard_timeout" => {
                let s = number(key, value, u16::MAX.into())? as u64;
                let slot = if key == "idle_timeout" {
                    &mut self.idle
                } else {
                    &mut self.hard
                };
                *slot = (s > 0).then_some(s);
                m
            }
            "table" => {
                if number(key, value, 254)? != 0 {
                    return Err(bad(key, value, "0 (nvo has one table)"));
                }
                m
            }
            "in_port" => m.with(Field::InPort, port_number(value, port)?.into()),
            "dl_src" | "eth_src" => masked_mac(m, Field::EthSrc, key, value)?,
            "dl_dst" | "eth_dst" => masked_mac(m, Field::EthDst, key, value)?,
            "dl_vlan" => {
                let v = number(key, value, 0xffff)? as u16;
                match v {
                    0xffff => m.with_masked(Field::Vlan, 0, 0x1fff),
                    0..=4095 => m.with_masked(Field::Vlan, u128::from(VLAN_PRESENT | v), 0x1fff),
                    _ => return Err(bad(key, value, "a VLAN ID 0 to 4095, or 0xffff for no tag")),
                }
            }
            "vlan_vid" => {
                let (v, mask) = masked_number(key, value, 0x1fff)?;
                m.with_masked(Field::Vlan, v, mask)
            }
            "vlan_tci" => {
                // Open vSwitch's form: PCP (3 bits), "present" (the CFI bit), VID (12 bits).
                let (v, mask) = masked_number(key, value, 0xffff)?;
                if mask & 0xe000 != 0 {
                    return Err(bad(
                        key,
                        value,
                        "a TCI whose mask leaves out the PCP bits (nvo does not match on PCP)",
                    ));
                }
                m.with_masked(Field::Vlan, v, mask)
            }
            "dl_type" | "eth_type" => m.with(Field::EthType, number(key, value, 0xffff)?),
            "nw_src" | "arp_spa" => masked_ipv4(m, Field::IpSrc, key, value)?,
            "nw_dst" | "arp_tpa" => masked_ipv4(m, Field::IpDst, key, value)?,
            "ipv6_src" => masked_ipv6(m, Field::IpSrc, key, value)?,
            "ipv6_dst" => masked_ipv6(m, Field::IpDst, key, value)?,
            "nw_proto" | "ip_proto" | "arp_op" => m.with(Field::IpProto, number(key, value, 255)?),
            "nw_tos" => {
                let tos = number(key, value, 255)?;
                if tos % 4 != 0 {
                    return Err(bad(key, value, "a TOS whose low two bits (ECN) are 0"));
                }
                m.with(Field::Dscp, tos >> 2)
            }
            "ip_dscp" => m.with(Field::Dscp, number(key, value, 63)?),
            "tp_src" | "tcp_src" | "udp_src" | "sctp_src" => {
                let (v, mask) = masked_number(key, value, 0xffff)?;
                m.with_masked(Field::TpSrc, v, mask)
            }
            "tp_dst" | "tcp_dst" | "udp_dst" | "sctp_dst" => {
                let (v, mask) = masked_number(key, value, 0xffff)?;
                m.with_masked(Field::TpDst, v, mask)
            }
            "icmp_type" | "icmpv6_type" => m.with(Field::TpSrc, number(key, value, 255)?),
            "icmp_code" | "icmpv6_code" => m.with(Field::TpDst, number(key, value, 255)?),
            "tcp_flags" => {
                let (v, mask) = tcp_flags(value)?;
                m.with_masked(Field::TcpFlags, v, mask)
            }
            "tun_id" => {
                let (v, mask) = masked_number(key, value, u64::MAX.into())?;
                m.with_masked(Field::TunKey, v, mask)
            }
            _ => return Err(SyntaxError::UnknownField(key.to_owned())),
        };
        Ok(())
    }

    fn shorthand(&mut self, key: &str) -> Result<(), SyntaxError> {
        let (et, pr) = match key {
            "ip" => (ethertype::IPV4, None),
            "ipv6" => (ethertype::IPV6, None),
            "arp" => (ethertype::ARP, None),
            "tcp" => (ethertype::IPV4, Some(proto::TCP)),
            "udp" => (ethertype::IPV4, Some(proto::UDP)),
            "sctp" => (ethertype::IPV4, Some(proto::SCTP)),
            "icmp" => (ethertype::IPV4, Some(proto::ICMP)),
            "tcp6" => (ethertype::IPV6, Some(proto::TCP)),
            "udp6" => (ethertype::IPV6, Some(proto::UDP)),
            "sctp6" => (ethertype::IPV6, Some(proto::SCTP)),
            "icmp6" => (ethertype::IPV6, Some(proto::ICMPV6)),
            _ => return Err(SyntaxError::UnknownField(key.to_owned())),
        };
        self.pattern = self.pattern.with(Field::EthType, et.into());
        if let Some(pr) = pr {
            self.pattern = self.pattern.with(Field::IpProto, pr.into());
        }
        Ok(())
    }

    /// Open vSwitch's prerequisites, on what the match ended up with.
    fn check(&self) -> Result<(), SyntaxError> {
        let m = &self.pattern;
        let (et, et_mask) = m.field(Field::EthType);
        let (pr, pr_mask) = m.field(Field::IpProto);
        let exact_et = |t: u16| et_mask == 0xffff && et == u128::from(t);
        let ip = exact_et(ethertype::IPV4) || exact_et(ethertype::IPV6);
        let has = |f: Field| m.field(f).1 != 0;
        let given = |names: &[&str]| self.seen.iter().any(|s| names.contains(&s.as_str()));
        let exact_pr = |p: u8| pr_mask == 0xff && pr == u128::from(p);
        let need = |field, needs, example| {
            Err(SyntaxError::Prerequisite {
                field,
                needs,
                example,
            })
        };
        if given(&["arp_op", "arp_spa", "arp_tpa"]) && !exact_et(ethertype::ARP) {
            return need("arp_op/arp_spa/arp_tpa", "arp", "arp,arp_tpa=10.0.0.1");
        }
        if given(&["nw_src", "nw_dst"]) && !(exact_et(ethertype::IPV4) || exact_et(ethertype::ARP))
        {
            return need("nw_src/nw_dst", "ip or arp", "ip,nw_dst=10.0.0.0/24");
        }
        if given(&["ipv6_src", "ipv6_dst"]) && !exact_et(ethertype::IPV6) {
            return need("ipv6_src/ipv6_dst", "ipv6", "ipv6,ipv6_dst=2001:db8::/32");
        }
        if given(&["nw_proto", "ip_proto", "nw_tos", "ip_dscp"]) && !ip {
            return need("nw_proto/nw_tos/ip_dscp", "ip or ipv6", "ip,nw_proto=6");
        }
        let l4 = exact_pr(proto::TCP) || exact_pr(proto::UDP) || exact_pr(proto::SCTP);
        if (has(Field::TpSrc) || has(Field::TpDst))
            && given(&["icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code"])
        {
            if !(ip && (exact_pr(proto::ICMP) || exact_pr(proto::ICMPV6))) {
                return need("icmp_type/icmp_code", "icmp or icmp6", "icmp,icmp_type=8");
            }
        } else if (has(Field::TpSrc) || has(Field::TpDst)) && !(ip && l4) {
            return need("tp_src/tp_dst", "tcp, udp or sctp", "tcp,tp_dst=22");
        }
        if has(Field::TcpFlags) && !(ip && exact_pr(proto::TCP)) {
            return need("tcp_flags", "tcp", "tcp,tcp_flags=+syn-ack");
        }
        Ok(())
    }
}

fn bad(field: &str, value: &str, want: &'static str) -> SyntaxError {
    SyntaxError::BadValue {
        field: field.to_owned(),
        value: value.to_owned(),
        want,
    }
}

/// A decimal or `0x` hexadecimal number no larger than `max`.
fn number(field: &str, value: &str, max: u128) -> Result<u128, SyntaxError> {
    let n = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u128::from_str_radix(hex, 16).ok(),
        None => value.parse::<u128>().ok(),
    };
    n.filter(|n| *n <= max)
        .ok_or_else(|| bad(field, value, "a number in range (decimal or 0x hex)"))
}

fn masked_number(field: &str, value: &str, max: u128) -> Result<(u128, u128), SyntaxError> {
    match value.split_once('/') {
        Some((v, m)) => Ok((number(field, v, max)?, number(field, m, max)?)),
        None => Ok((number(field, value, max)?, max)),
    }
}

fn port_number(value: &str, port: &dyn Fn(&str) -> Option<u32>) -> Result<u32, SyntaxError> {
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return number("in_port", value, u32::MAX.into()).map(|n| n as u32);
    }
    port(value).ok_or_else(|| SyntaxError::UnknownPort(value.to_owned()))
}

fn mac(field: &str, value: &str) -> Result<[u8; 6], SyntaxError> {
    let mut out = [0u8; 6];
    let mut parts = value.split(':');
    for b in &mut out {
        let p = parts.next().filter(|p| p.len() == 2);
        *b = p
            .and_then(|p| u8::from_str_radix(p, 16).ok())
            .ok_or_else(|| bad(field, value, "a MAC (xx:xx:xx:xx:xx:xx)"))?;
    }
    if parts.next().is_some() {
        return Err(bad(field, value, "a MAC (xx:xx:xx:xx:xx:xx)"));
    }
    Ok(out)
}

fn masked_mac(m: Match, f: Field, field: &str, value: &str) -> Result<Match, SyntaxError> {
    Ok(match value.split_once('/') {
        Some((v, mask)) => m.with_masked(f, mac_bits(mac(field, v)?), mac_bits(mac(field, mask)?)),
        None => m.with(f, mac_bits(mac(field, value)?)),
    })
}

fn masked_ipv4(m: Match, f: Field, field: &str, value: &str) -> Result<Match, SyntaxError> {
    let want = "an IPv4 address, address/length or address/mask";
    let (addr, rest) = match value.split_once('/') {
        Some((a, r)) => (a, Some(r)),
        None => (value, None),
    };
    let a: Ipv4Addr = addr.parse().map_err(|_| bad(field, value, want))?;
    let bits = ip_bits(IpAddr::V4(a));
    Ok(match rest {
        None => m.with_prefix(f, bits, 32, true),
        Some(r) => match (r.parse::<u32>(), r.parse::<Ipv4Addr>()) {
            (Ok(len), _) if len <= 32 => m.with_prefix(f, bits, len, true),
            (_, Ok(mask)) => m.with_masked(f, bits, u128::from(u32::from(mask))),
            _ => return Err(bad(field, value, want)),
        },
    })
}

fn masked_ipv6(m: Match, f: Field, field: &str, value: &str) -> Result<Match, SyntaxError> {
    let want = "an IPv6 address or address/length";
    let (addr, len) = match value.split_once('/') {
        Some((a, l)) => (
            a,
            l.parse::<u32>()
                .ok()
                .filter(|l| *l <= 128)
                .ok_or_else(|| bad(field, value, want))?,
        ),
        None => (value, 128),
    };
    let a: Ipv6Addr = addr.parse().map_err(|_| bad(field, value, want))?;
    Ok(m.with_prefix(f, u128::from(a), len, false))
}

/// TCP flag names, ovs-fields(7).
const TCP_FLAGS: [(&str, u16); 9] = [
    ("fin", 0x001),
    ("syn", 0x002),
    ("rst", 0x004),
    ("psh", 0x008),
    ("ack", 0x010),
    ("urg", 0x020),
    ("ece", 0x040),
    ("cwr", 0x080),
    ("ns", 0x100),
];

/// `+syn-ack` (set, clear; others any) or `VALUE[/MASK]`.
fn tcp_flags(value: &str) -> Result<(u128, u128), SyntaxError> {
    if !value.starts_with(['+', '-']) {
        return masked_number("tcp_flags", value, 0x0fff);
    }
    let (mut v, mut mask) = (0u16, 0u16);
    let mut rest = value;
    while let Some(sign) = rest.chars().next() {
        let body = &rest[1..];
        let end = body.find(['+', '-']).unwrap_or(body.len());
        let name = &body[..end];
        let (_, bit) = TCP_FLAGS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            bad(
                "tcp_flags",
                value,
                "+flag-flag… of fin syn rst psh ack urg ece cwr ns",
            )
        })?;
        mask |= bit;
        if sign == '+' {
            v |= bit;
        }
        rest = &body[end..];
    }
    Ok((v.into(), mask.into()))
}

/// Parses the text after `actions=`.
pub fn parse_actions(
    text: &str,
    port: &dyn Fn(&str) -> Option<u32>,
) -> Result<Vec<Action>, SyntaxError> {
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.iter().any(|i| i.eq_ignore_ascii_case("drop")) {
        return if items.len() == 1 {
            Ok(Vec::new())
        } else {
            Err(SyntaxError::DropWithOthers)
        };
    }
    if items.is_empty() {
        return Ok(Vec::new());
    }
    items.into_iter().map(|i| action(i, port)).collect()
}

fn action(item: &str, port: &dyn Fn(&str) -> Option<u32>) -> Result<Action, SyntaxError> {
    let unknown = || SyntaxError::UnknownAction(item.to_owned());
    let (name, arg) = match item.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (item, None),
    };
    Ok(match (name.to_ascii_lowercase().as_str(), arg) {
        ("normal", None) => Action::Normal,
        ("in_port", None) => Action::InPort,
        ("output", Some(p)) => Action::Output(port_number(p, port)?),
        (n, None) if n.bytes().all(|b| b.is_ascii_digit()) => Action::Output(port_number(n, port)?),
        ("mod_dl_src", Some(m)) => Action::SetEthSrc(mac(name, m)?),
        ("mod_dl_dst", Some(m)) => Action::SetEthDst(mac(name, m)?),
        ("push_vlan", Some(t)) => match number(name, t, 0xffff)? as u16 {
            t @ (0x8100 | 0x88a8) => Action::PushVlan(t),
            _ => return Err(bad(name, t, "0x8100 or 0x88a8")),
        },
        ("pop_vlan" | "strip_vlan", None) => Action::PopVlan,
        ("mod_vlan_vid", Some(v)) => Action::SetVlanVid(number(name, v, 4095)? as u16),
        ("mod_vlan_pcp", Some(v)) => Action::SetVlanPcp(number(name, v, 7)? as u8),
        ("mod_nw_tos", Some(v)) => {
            let tos = number(name, v, 255)?;
            if tos % 4 != 0 {
                return Err(bad(name, v, "a TOS whose low two bits (ECN) are 0"));
            }
            Action::SetDscp((tos >> 2) as u8)
        }
        ("mod_nw_ttl", Some(v)) => Action::SetTtl(number(name, v, 255)? as u8),
        ("dec_ttl", None) => Action::DecTtl,
        ("set_tunnel" | "set_tunnel64", Some(v)) => {
            Action::SetTunnelKey(number(name, v, u64::MAX.into())? as u64)
        }
        ("meter", Some(v)) => Action::Meter(number(name, v, u32::MAX.into())? as u32),
        ("set_field", Some(spec)) => {
            let (value, field) = spec.split_once("->").ok_or_else(unknown)?;
            match field {
                "ip_dscp" => Action::SetDscp(number(field, value, 63)? as u8),
                "tun_id" => Action::SetTunnelKey(number(field, value, u64::MAX.into())? as u64),
                // Open vSwitch: tun_dst IPv4, tun_ipv6_dst IPv6; nvo takes either in tun_dst.
                "tun_dst" => Action::SetTunnelDst(
                    value
                        .parse()
                        .map_err(|_| bad(field, value, "an IP address"))?,
                ),
                "tun_ipv6_dst" => Action::SetTunnelDst(IpAddr::V6(
                    value
                        .parse()
                        .map_err(|_| bad(field, value, "an IPv6 address"))?,
                )),
                "eth_src" => Action::SetEthSrc(mac(field, value)?),
                "eth_dst" => Action::SetEthDst(mac(field, value)?),
                "vlan_vid" => Action::SetVlanVid((number(field, value, 0x1fff)? & 0x0fff) as u16),
                "nw_ttl" => Action::SetTtl(number(field, value, 255)? as u8),
                _ => return Err(unknown()),
            }
        }
        _ => return Err(unknown()),
    })
}
