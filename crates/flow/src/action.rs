//! What a rule does with a packet it matches: the actions of the flow syntax (ovs-actions(7))
//! and of OpenFlow 1.3 that nvo carries out, in the order given.

use std::fmt;
use std::net::IpAddr;

/// One action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    /// Forward as nvod would without the rule (learning, FDB, encapsulation): `normal`.
    Normal,
    /// Send out of port `n` (an OpenFlow port number): `output:N`.
    Output(u32),
    /// Send back out of the port it came in on: `in_port`.
    InPort,
    /// Set the Ethernet source: `mod_dl_src:MAC`.
    SetEthSrc([u8; 6]),
    /// Set the Ethernet destination: `mod_dl_dst:MAC`.
    SetEthDst([u8; 6]),
    /// Push a VLAN tag with this TPID (0x8100 or 0x88a8), VID 0: `push_vlan:0x8100`.
    PushVlan(u16),
    /// Pop the outermost tag: `strip_vlan` / `pop_vlan`.
    PopVlan,
    /// Set the outermost tag's VID, pushing a tag if there is none: `mod_vlan_vid:N`.
    SetVlanVid(u16),
    /// Set the outermost tag's priority: `mod_vlan_pcp:N`.
    SetVlanPcp(u8),
    /// Set the DSCP (IPv4 TOS / IPv6 traffic class upper six bits): `mod_nw_tos:TOS` (TOS =
    /// DSCP × 4) or `set_field:N->ip_dscp`.
    SetDscp(u8),
    /// Set the IP TTL / hop limit: `mod_nw_ttl:N`.
    SetTtl(u8),
    /// Decrement it, dropping at 0: `dec_ttl`.
    DecTtl,
    /// Set the tunnel key (VNI) used when the packet is encapsulated: `set_tunnel:N`.
    SetTunnelKey(u64),
    /// Set the remote VTEP it is encapsulated to: `set_field:IP->tun_dst` (IPv4, or IPv6 in
    /// nvo), `set_field:IP->tun_ipv6_dst` (IPv6).
    SetTunnelDst(IpAddr),
    /// Police through meter `n`: `meter:N`.
    Meter(u32),
}

impl fmt::Display for Action {
    /// The flow syntax of the action (what `ovs-ofctl dump-flows` would print).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mac = |m: &[u8; 6]| {
            m.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        };
        match self {
            Action::Normal => write!(f, "NORMAL"),
            Action::Output(n) => write!(f, "output:{n}"),
            Action::InPort => write!(f, "IN_PORT"),
            Action::SetEthSrc(m) => write!(f, "mod_dl_src:{}", mac(m)),
            Action::SetEthDst(m) => write!(f, "mod_dl_dst:{}", mac(m)),
            Action::PushVlan(t) => write!(f, "push_vlan:0x{t:04x}"),
            Action::PopVlan => write!(f, "pop_vlan"),
            Action::SetVlanVid(v) => write!(f, "mod_vlan_vid:{v}"),
            Action::SetVlanPcp(p) => write!(f, "mod_vlan_pcp:{p}"),
            Action::SetDscp(d) => write!(f, "mod_nw_tos:{}", u16::from(*d) << 2),
            Action::SetTtl(t) => write!(f, "mod_nw_ttl:{t}"),
            Action::DecTtl => write!(f, "dec_ttl"),
            Action::SetTunnelKey(k) => write!(f, "set_tunnel:{k:#x}"),
            Action::SetTunnelDst(IpAddr::V4(ip)) => write!(f, "set_field:{ip}->tun_dst"),
            Action::SetTunnelDst(IpAddr::V6(ip)) => write!(f, "set_field:{ip}->tun_ipv6_dst"),
            Action::Meter(n) => write!(f, "meter:{n}"),
        }
    }
}

/// A list of actions in the flow syntax: `drop` when empty.
pub fn format_actions(actions: &[Action]) -> String {
    if actions.is_empty() {
        return "drop".to_owned();
    }
    actions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
