//! Profiles and networks compiled into map entries: the PI-NIC idea (receive matches as
//! offset/mask/value, the key's offset and length, header templates with where the VNI and
//! entropy go) so the programs know no protocol. A profile added at run time needs no new
//! program, only new entries.
//!
//! What the kernel path cannot carry is decided here, once per profile and network, with a
//! reason a user can read ([`Unsupported`]); such a network runs on the userspace path.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use nvo_encap::builtin;
use nvo_encap::engine::Engine;
use nvo_encap::profile::{HeaderLen, Match, Payload, Profile, ProfileId, Transport};
use nvo_pipeline::{BumMode, NetworkView};

use crate::layout;

/// Why a profile or a network runs on the userspace path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// The node's locator is IPv6 (the kernel path builds IPv4 outer headers).
    Ipv6Underlay,
    /// An L3 network (IPv4 payloads, the gateway's ARP): the pipeline's l3 module.
    L3Network,
    /// STT is segmented and reassembled in software.
    Stt,
    /// Only GRE among IP transports keeps GSO frames whole in the kernel.
    IpTransport(u8),
    /// Header longer than the kernel's template.
    LongTemplate(usize),
    /// Length or sequence fields are patched per packet (and per segment).
    Patches,
    /// The network carries something other than Ethernet.
    Payload(Payload),
    /// More receive matches, or longer ones, than the programs test.
    Matches,
    /// A field beyond the bytes the programs read of a header.
    FieldBeyond(&'static str),
    /// A multicast group of another family than the underlay's.
    Group(IpAddr),
    /// An identity policy filters a Geneve network (issue 18): nvo's identity option is
    /// appended and read by nvod (datapath identity.rs), not by the programs.
    PolicyGeneve,
    /// Its identity policy exceeds what the programs scan: more rules than
    /// [`layout::MAX_RULES`], more port ranges in a rule than [`layout::RULE_PORTS`], or more
    /// group memberships than [`layout::MAX_MEMBERS`].
    PolicyTooLarge(nvo_policy::Shape),
    /// A flow rule may match the frames it receives from the tunnel (issue 17): the
    /// userspace pipeline runs the flow table.
    TunnelFlows,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::Ipv6Underlay => {
                f.write_str("the underlay is IPv6 (the kernel path builds IPv4 outer headers)")
            }
            Unsupported::L3Network => f.write_str("it is an L3 network"),
            Unsupported::Stt => f.write_str("STT frames are segmented and reassembled in software"),
            Unsupported::IpTransport(p) => write!(
                f,
                "IP protocol {p} tunnels cannot keep GSO frames whole (only GRE, 47, can)"
            ),
            Unsupported::LongTemplate(n) => write!(
                f,
                "its header is {n} bytes, more than the kernel's {}",
                layout::MAX_TMPL
            ),
            Unsupported::Patches => {
                f.write_str("its profile rewrites length or sequence fields per packet")
            }
            Unsupported::Payload(p) => write!(f, "it carries {p}, not Ethernet"),
            Unsupported::Matches => write!(
                f,
                "its profile has more than {} receive matches or one longer than {} bytes",
                layout::MAX_MATCHES,
                layout::MATCH_LEN
            ),
            Unsupported::FieldBeyond(what) => write!(
                f,
                "its profile's {what} lies beyond the first {} header bytes",
                layout::MAX_TMPL
            ),
            Unsupported::Group(g) => write!(f, "its multicast group {g} is not IPv4"),
            Unsupported::PolicyGeneve => f.write_str(
                "an identity policy filters it and its profile is Geneve (nvod adds and reads the identity option)",
            ),
            Unsupported::PolicyTooLarge(s) => write!(
                f,
                "its identity policy is larger than the kernel scans ({} rules, up to {} port \
                 ranges in one, {} group memberships; the kernel takes {}, {}, {}): nvod enforces it",
                s.rules,
                s.port_ranges,
                s.members,
                layout::MAX_RULES,
                layout::RULE_PORTS,
                layout::MAX_MEMBERS
            ),
            Unsupported::TunnelFlows => f.write_str(
                "flow rules match its tunnel frames (in_port unset or tunnel, its tun_id): nvod runs the flow table",
            ),
        }
    }
}

/// A match as the programs test it; `None` when it is too long or too far in.
fn compile_match(m: &Match) -> Option<layout::Match> {
    let len = m.mask.len();
    if len == 0 || len > layout::MATCH_LEN || usize::from(m.offset) + len > layout::MAX_TMPL {
        return None;
    }
    let mut out = layout::Match {
        offset: m.offset,
        len: len as u8,
        ..Default::default()
    };
    out.mask[..len].copy_from_slice(&m.mask);
    out.value[..len].copy_from_slice(&m.value);
    Some(out)
}

fn within(offset: u16, len: usize) -> bool {
    usize::from(offset) + len <= layout::MAX_TMPL
}

/// The receive side of a profile as the underlay program reads it, or why it cannot.
pub fn receive_profile(p: &Profile) -> Result<layout::Profile, Unsupported> {
    let mut out = layout::Profile {
        flags: layout::PROF_VALID,
        min_len: p.template.len() as u16,
        ..Default::default()
    };
    if p.matches.len() > layout::MAX_MATCHES {
        return Err(Unsupported::Matches);
    }
    for (i, m) in p.matches.iter().enumerate() {
        out.matches[i] = compile_match(m).ok_or(Unsupported::Matches)?;
    }
    out.match_count = p.matches.len() as u8;
    if let HeaderLen::Field {
        offset,
        mask,
        scale,
        base,
    } = p.header_len
    {
        if !within(offset, 1) {
            return Err(Unsupported::FieldBeyond("header length"));
        }
        out.flags |= layout::PROF_LEN_FIELD;
        out.len_offset = offset;
        out.len_mask = mask;
        out.len_scale = scale;
        out.len_base = base;
    }
    match p.payload_field {
        Some(pf) => {
            if !within(pf.field.offset, usize::from(pf.field.len)) {
                return Err(Unsupported::FieldBeyond("payload field"));
            }
            out.flags |= layout::PROF_PAYLOAD_FIELD;
            out.payload_offset = pf.field.offset;
            out.payload_len = pf.field.len;
            // A profile that cannot carry Ethernet: a value no field of its width holds.
            out.payload_ethernet = pf.ethernet.unwrap_or(u64::MAX);
            for (i, v) in [pf.ipv4, pf.ipv6, pf.nsh].into_iter().enumerate() {
                if let Some(v) = v {
                    out.payload_known[i] = v;
                    out.payload_known_mask |= 1 << i;
                }
            }
        }
        None => out.payload_ethernet = u64::from(p.payload == Payload::Ethernet),
    }
    if let Some(key) = p.key_field() {
        if usize::from(key.len) > layout::KEY_LEN || !within(key.offset, usize::from(key.len)) {
            return Err(Unsupported::FieldBeyond("receive key"));
        }
        out.flags |= layout::PROF_KEY;
        out.key_offset = key.offset;
        out.key_len = key.len;
    }
    if let Some(m) = &p.dont_learn {
        out.dont_learn = compile_match(m).ok_or(Unsupported::Matches)?;
        out.flags |= layout::PROF_DONT_LEARN;
    }
    if p.name == builtin::names::OVERLAY {
        // Only the overlay's plain tunnels (destination node 0) are the kernel's; packets
        // routed by node go to nvod, which relays or delivers them (docs/design/overlay.md).
        out.kernel = layout::Match {
            offset: 12,
            len: 4,
            mask: [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
            ..Default::default()
        };
        out.flags |= layout::PROF_KERNEL_MATCH;
    }
    Ok(out)
}

/// Whether the kernel path can send a profile's packets; `Ok` with the template's fixed part.
pub fn transmit_profile(p: &Profile) -> Result<(), Unsupported> {
    match p.transport {
        Transport::Ip(6) => return Err(Unsupported::Stt),
        Transport::Ip(proto) if proto != nvo_wire_gre() => {
            return Err(Unsupported::IpTransport(proto))
        }
        _ => {}
    }
    if p.template.len() > layout::MAX_TMPL {
        return Err(Unsupported::LongTemplate(p.template.len()));
    }
    if !p.patches.is_empty() {
        return Err(Unsupported::Patches);
    }
    if let Some(e) = p.entropy {
        if e.len > 8 || !within(e.offset, usize::from(e.len)) {
            return Err(Unsupported::FieldBeyond("entropy field"));
        }
    }
    receive_profile(p).map(drop)
}

/// IP protocol 47, GRE.
const fn nvo_wire_gre() -> u8 {
    47
}

/// The UDP port the engine names VXLAN's transport by, whatever port VXLAN uses on the wire.
pub const ENGINE_VXLAN_PORT: u16 = 4789;

/// The header template of `bytes` for profile `p`; VXLAN's transport goes to `vxlan_port` (the
/// node's `vxlan_port`: 8472 talks to kernels of the old default).
pub fn tmpl(p: &Profile, bytes: &[u8], vxlan_port: u16) -> layout::Tmpl {
    let mut t = layout::Tmpl {
        len: bytes.len().min(layout::MAX_TMPL) as u8,
        ..Default::default()
    };
    let n = usize::from(t.len);
    t.bytes[..n].copy_from_slice(&bytes[..n]);
    if let Some(e) = p.entropy {
        t.entropy_off = e.offset as u8;
        t.entropy_len = e.len;
    }
    match p.transport {
        Transport::Udp(port) => {
            t.transport = layout::TRANSPORT_UDP;
            t.port = if port == ENGINE_VXLAN_PORT {
                vxlan_port
            } else {
                port
            };
        }
        Transport::Ip(proto) => {
            t.transport = layout::TRANSPORT_IP;
            t.protocol = proto;
        }
    }
    t
}

/// How often the kernel reports a learned MAC that stays active: a quarter of the ageing time
/// (so the pipeline, which ages it, hears of it several times per ageing period), 100 ms to
/// 60 s.
pub fn refresh(ageing: Duration) -> u64 {
    let quarter = ageing / 4;
    quarter
        .clamp(Duration::from_millis(100), Duration::from_secs(60))
        .as_nanos() as u64
}

/// Whether network `view` runs in the kernel on a node whose locator is `locator`: `Ok`, or
/// the reason it runs on the userspace path.
pub fn network_supported(
    engine: &Engine,
    view: &NetworkView,
    locator: IpAddr,
) -> Result<(), Unsupported> {
    if locator.is_ipv6() {
        return Err(Unsupported::Ipv6Underlay);
    }
    if view.l3_gateway.is_some() {
        return Err(Unsupported::L3Network);
    }
    if view.policy {
        policy_supported(view)?;
    }
    if view.tunnel_flows {
        return Err(Unsupported::TunnelFlows);
    }
    let id = ProfileId(view.profile.0);
    let Some(p) = engine.profile(id) else {
        return Err(Unsupported::Payload(Payload::Ethernet));
    };
    transmit_profile(p)?;
    let payload = engine.network_payload(id, view.vni.0);
    if payload != Payload::Ethernet {
        return Err(Unsupported::Payload(payload));
    }
    if let BumMode::Multicast(group) = view.bum {
        if !group.is_ipv4() {
            return Err(Unsupported::Group(group));
        }
    }
    Ok(())
}

/// Whether the programs enforce network `view`'s identity policy exactly as the pipeline
/// does (bpf/policy.h): within their bounds, on a profile whose identity field (if any) they
/// write and read — VXLAN-GBP's Group Policy ID, or none.
fn policy_supported(view: &NetworkView) -> Result<(), Unsupported> {
    if ProfileId(view.profile.0) == builtin::ids::GENEVE {
        return Err(Unsupported::PolicyGeneve);
    }
    let s = view.policy_shape;
    if s.rules > layout::MAX_RULES
        || s.port_ranges > layout::RULE_PORTS
        || s.members > layout::MAX_MEMBERS
    {
        return Err(Unsupported::PolicyTooLarge(s));
    }
    Ok(())
}

/// The network entry of a kernel network (slot, counts and port list are the caller's).
pub fn network(
    engine: &Engine,
    view: &NetworkView,
    slot: u32,
    vxlan_port: u16,
) -> Option<layout::Network> {
    let id = ProfileId(view.profile.0);
    let p = engine.profile(id)?;
    let bytes = engine.template_bytes(id, view.vni.0, None).ok()?;
    let mut flags = 0;
    if view.learn_ports {
        flags |= layout::NET_LEARN_PORTS;
    }
    if view.learn_tunnels {
        flags |= layout::NET_LEARN_TUNNELS;
    }
    let mut group = [0u8; 4];
    match view.bum {
        BumMode::HeadEnd => flags |= layout::NET_BUM_HEAD_END,
        BumMode::Multicast(IpAddr::V4(g)) => {
            flags |= layout::NET_BUM_GROUP;
            group = g.octets();
        }
        BumMode::Multicast(IpAddr::V6(_)) | BumMode::Overlay(_) => flags |= layout::NET_BUM_USER,
    }
    if !engine.param_remotes(id, view.vni.0).is_empty() {
        flags |= layout::NET_REMOTE_TMPL;
    }
    if view.arp_suppression {
        flags |= layout::NET_SUPPRESS;
    }
    if view.accept_remotes == nvo_pipeline::AcceptRemotes::Known {
        flags |= layout::NET_KNOWN_ONLY;
    }
    if view.policy {
        flags |= layout::NET_POLICY;
        if id == builtin::ids::VXLAN_GBP {
            flags |= layout::NET_GBP;
        }
    }
    Some(layout::Network {
        slot,
        flags,
        mtu: view.mtu,
        profile: id.0,
        flood_count: 0,
        port_count: 0,
        group,
        refresh_ns: refresh(view.ageing),
        tmpl: tmpl(p, &bytes, vxlan_port),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvo_encap::builtin::{self, ids};

    #[test]
    fn builtins_the_kernel_carries() {
        let e = Engine::new(Default::default());
        for id in [
            ids::VXLAN,
            ids::VXLAN_GBP,
            ids::VXLAN_GPE,
            ids::GENEVE,
            ids::NVGRE,
            ids::OVERLAY,
            ids::VXLAN_GPE_NSH,
        ] {
            let p = e.profile(id).unwrap();
            assert_eq!(transmit_profile(p), Ok(()), "{}", p.name);
        }
        assert_eq!(
            transmit_profile(e.profile(ids::STT).unwrap()),
            Err(Unsupported::Stt)
        );
        assert_eq!(
            transmit_profile(e.profile(ids::IPIP).unwrap()),
            Err(Unsupported::IpTransport(4))
        );
        // Every built-in can at least be recognised on receive, so a shared transport's order
        // can be followed in the kernel.
        for p in builtin::all() {
            assert!(receive_profile(&p).is_ok(), "{}", p.name);
        }
    }

    /// A rule that may match a network's tunnel frames takes it out of the kernel (the
    /// pipeline's NetworkView says so); a rule on a local port or another VNI does not.
    #[test]
    fn tunnel_flow_rules_hand_their_networks_to_userspace() {
        use nvo_pipeline::{Limits, NetworkSpec, Pipeline, PortId, Vni};
        let e = Engine::new(Default::default());
        let locator: IpAddr = "192.0.2.1".parse().unwrap();
        let mut p = Pipeline::new(Limits::default());
        p.add_network(NetworkSpec::new(Vni(100))).unwrap();
        let supported =
            |p: &Pipeline| network_supported(&e, &p.network(Vni(100)).unwrap(), locator);
        assert_eq!(supported(&p), Ok(()));
        let tunnel = |n: &str| (n == "tunnel").then_some(PortId::TUNNEL.0);
        let now = std::time::Instant::now();
        for (rule, kernel) in [
            ("in_port=1,actions=drop", true),
            ("tun_id=200,actions=drop", true),
            ("tun_id=100,tcp,actions=drop", false),
            ("in_port=tunnel,actions=normal", false),
            ("tcp,tp_dst=22,actions=drop", false),
        ] {
            let mut p = Pipeline::new(Limits::default());
            p.add_network(NetworkSpec::new(Vni(100))).unwrap();
            let flow = nvo_flow::syntax::parse(rule, &tunnel).unwrap();
            p.flow_insert(flow, now).unwrap();
            let want = if kernel {
                Ok(())
            } else {
                Err(Unsupported::TunnelFlows)
            };
            assert_eq!(supported(&p), want, "{rule}");
        }
    }

    #[test]
    fn vxlan_compiles_to_its_rfc_fields() {
        let p = builtin::vxlan_profile();
        let r = receive_profile(&p).unwrap();
        assert_eq!(
            (
                r.match_count,
                r.matches[0].offset,
                r.matches[0].mask[0],
                r.matches[0].value[0]
            ),
            (1, 0, 0x08, 0x08)
        );
        assert_eq!((r.key_offset, r.key_len, r.min_len), (4, 3, 8));
        assert_eq!(r.payload_ethernet, 1);
        let t = tmpl(&p, &p.template, 4789);
        assert_eq!(
            (t.len, t.transport, t.port, t.entropy_len),
            (8, layout::TRANSPORT_UDP, 4789, 0)
        );
        let nvgre = builtin::nvgre_profile();
        let t = tmpl(&nvgre, &nvgre.template, 4789);
        assert_eq!(
            (t.transport, t.protocol, t.entropy_off, t.entropy_len),
            (layout::TRANSPORT_IP, 47, 7, 1)
        );
    }

    #[test]
    fn refresh_is_a_quarter_of_ageing_within_bounds() {
        assert_eq!(refresh(Duration::from_secs(300)), 60_000_000_000);
        assert_eq!(refresh(Duration::from_secs(20)), 5_000_000_000);
        assert_eq!(refresh(Duration::from_secs(1)), 250_000_000);
        assert_eq!(refresh(Duration::from_secs(3600)), 60_000_000_000);
    }
}
