//! The edge between the API's types (`nvo_api`), the state file's and the pipeline's: value
//! checks with messages a user can act on, and conversions in each direction.
//!
//! Nothing here touches a table or a socket; everything is a pure function of its arguments.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use nvo_api as api;
use nvo_encap::engine::Engine;
use nvo_encap::profile::{Payload, Profile, Transport};
use nvo_pipeline::{BumMode, Mac, NetworkSpec, ProfileTag, Vni};
use serde::Serialize;

use crate::config::{Config, LearnShare};
use crate::state::{evpn_serves, BumState, NetworkState, PortKindState};

pub use crate::values::{
    check_ifname, check_vni, parse_ip, parse_mac, parse_vni, ValueError, DEFAULT_ENCAP, MAX_MTU,
    MIN_MTU,
};

/// Why a network spec, a prefix or a remote is refused; each message names the value and
/// what to use instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A single value out of range (a VNI, an MTU).
    #[error(transparent)]
    Value(#[from] ValueError),
    /// An MTU whose frames would not fit in one underlay packet.
    #[error(
        "mtu {mtu} does not fit: the underlay MTU is {underlay_mtu} and {profile} takes \
         {overhead} bytes over {}; use {MIN_MTU}..={max}, or raise underlay_mtu in nvod's \
         config if the underlay allows",
        family_name(*.ipv6)
    )]
    MtuOverUnderlay {
        /// The MTU asked for.
        mtu: u16,
        /// nvod's `underlay_mtu`.
        underlay_mtu: u16,
        /// The network's profile.
        profile: String,
        /// The bytes the profile adds.
        overhead: u16,
        /// Whether the underlay is IPv6.
        ipv6: bool,
        /// The largest MTU that fits.
        max: u16,
    },
    /// A parameter the profile does not have.
    #[error("profile {profile} has no parameter {name:?}; its parameters are {known:?}")]
    UnknownParam {
        /// The profile.
        profile: String,
        /// The parameter given.
        name: String,
        /// The profile's parameters.
        known: Vec<String>,
    },
    /// A parameter value wider than its field.
    #[error("parameter {name} = {value} does not fit in {bytes} bytes of profile {profile}")]
    ParamTooLarge {
        /// The parameter.
        name: String,
        /// Its value.
        value: u64,
        /// Its field's width.
        bytes: u8,
        /// The profile.
        profile: String,
    },
    /// An encap that names no profile of this node.
    #[error("encap {encap:?} is not a profile of this node; use one of {names:?}")]
    UnknownEncap {
        /// The name given.
        encap: String,
        /// The profiles there are.
        names: Vec<String>,
    },
    /// An ILA network on a node that cannot forward one.
    #[error("encap ila needs {0} on this node (see `nvod --help`)")]
    Ila(&'static str),
    /// An l3 network on a profile that carries neither IPv4 nor IPv6 packets.
    #[error(
        "encap {0} cannot carry IP packets, so it cannot serve an l3 network; use \
         vxlan-gpe (ipv4 and ipv6), ipip (ipv4) or ip6ip6 (ipv6)"
    )]
    NotIp(String),
    /// An L2 network on a profile that cannot carry Ethernet frames.
    #[error(
        "encap {encap} carries {payload:?} packets, not Ethernet frames; create the network \
         with \"l3\": true (an IP network routed by prefix)"
    )]
    NotEthernet {
        /// The profile.
        encap: String,
        /// What it carries.
        payload: Payload,
    },
    /// A BUM group that is not multicast.
    #[error("bum group {0} is not a multicast address; use e.g. 239.1.1.1 or ff0e::1")]
    BumGroup(IpAddr),
    /// A BUM group on a profile other than VXLAN's port.
    #[error(
        "bum by multicast group works with vxlan and vxlan-gbp only, not with {0}; use \
         head-end replication (a flood list)"
    )]
    BumGroupEncap(String),
    /// A BUM overlay tree rooted at node 0.
    #[error("bum overlay node 0 is not a node; use the tree's node ID")]
    BumNodeZero,
    /// A BUM overlay tree on another profile than the overlay's.
    #[error("bum by overlay tree needs the overlay profile, not {0}")]
    BumOverlayEncap(String),
    /// A `max_learned` above the pipeline's limit.
    #[error(
        "max_learned {max_learned} is above the limit of {limit} learned entries per network ([limits] learned_fdb_per_network); ask for fewer"
    )]
    MaxLearned {
        /// The value asked for.
        max_learned: u32,
        /// The limit.
        limit: u32,
    },
    /// A per-port or per-remote learning bound above the network's.
    #[error(
        "{what} {value} is above the network's max_learned {max_learned}; ask for at most that"
    )]
    LearnShare {
        /// Which bound.
        what: &'static str,
        /// The value asked for.
        value: u32,
        /// The network's bound.
        max_learned: u32,
    },
    /// `learning` contradicting `learn_ports` / `learn_tunnels`.
    #[error("{0}: contradictory learning settings; give learn_ports and learn_tunnels alone (learning is their old form)")]
    Learning(&'static str),
    /// `ageing_s: 0`.
    #[error("ageing_s 0 is too short; use at least 1 second")]
    AgeingZero,
    /// A remote listed twice in a flood list.
    #[error("remote {0} appears twice in the flood list; list it once")]
    FloodTwice(IpAddr),
    /// Text that is not an IP prefix.
    #[error("prefix {0:?} is not an IP prefix like 10.0.0.0/24 or fd00:1::/64")]
    Prefix(String),
    /// A prefix with host bits set.
    #[error("prefix {text} has host bits set; use {network}/{len}")]
    HostBits {
        /// The prefix as given.
        text: String,
        /// Its network address.
        network: IpAddr,
        /// Its length.
        len: u8,
    },
    /// A remote that is not a unicast address.
    #[error("remote {0} is not a unicast address; a remote vtep needs one")]
    RemoteNotUnicast(IpAddr),
    /// An address of the other family than the locator's.
    #[error(
        "{what} {ip} is not of the locator's address family (locator {locator}); use an {} address",
        family_name(.locator.is_ipv6())
    )]
    Family {
        /// "remote", "bum group".
        what: &'static str,
        /// The address.
        ip: IpAddr,
        /// This node's locator.
        locator: IpAddr,
    },
}

/// "IPv6" or "IPv4", as messages name a family.
fn family_name(ipv6: bool) -> &'static str {
    if ipv6 {
        "IPv6"
    } else {
        "IPv4"
    }
}

/// The bytes a profile adds in front of a tenant frame on the wire: outer IP, UDP when the
/// profile runs over UDP, the tunnel header (its minimum length) and the inner Ethernet header.
pub fn overhead(profile: &Profile, ipv6: bool) -> u16 {
    if profile.name == nvo_encap::builtin::names::ILA {
        // ILA rewrites an address: the packet crosses the underlay as it is.
        return 0;
    }
    let ip = if ipv6 { 40 } else { 20 };
    let transport = match profile.transport {
        Transport::Udp(_) => 8,
        Transport::Ip(6) => STT_SEGMENT_HEADER,
        Transport::Ip(_) => 0,
    };
    let header = u16::try_from(profile.template.len()).unwrap_or(u16::MAX);
    let inner = match profile.payload {
        Payload::Ethernet => 14,
        _ => 0,
    };
    ip + transport + header.saturating_add(inner)
}

/// STT's TCP-like segment header.
const STT_SEGMENT_HEADER: u16 = 20;

/// Checks a network's MTU against the underlay: a larger frame would not fit in one underlay
/// packet, and every one of them would be fragmented. STT cuts frames into segments itself,
/// so an STT network may have any MTU up to [`MAX_MTU`].
pub fn check_network_mtu(mtu: u16, profile: &Profile, config: &Config) -> Result<(), ConvertError> {
    if profile.transport == Transport::Ip(6) {
        return if (MIN_MTU..=MAX_MTU).contains(&mtu) {
            Ok(())
        } else {
            Err(ValueError::Mtu(mtu).into())
        };
    }
    let ipv6 = config.locator.is_ipv6();
    let overhead = overhead(profile, ipv6);
    let max = config.underlay_mtu.saturating_sub(overhead);
    if !(MIN_MTU..=max).contains(&mtu) {
        return Err(ConvertError::MtuOverUnderlay {
            mtu,
            underlay_mtu: config.underlay_mtu,
            profile: profile.name.clone(),
            overhead,
            ipv6,
            max,
        });
    }
    Ok(())
}

/// An ILA network needs an IPv6 underlay and this node's ILA locator.
fn check_ila(config: &Config) -> Result<(), ConvertError> {
    if !config.locator.is_ipv6() {
        return Err(ConvertError::Ila("an ipv6 underlay (locator)"));
    }
    if config.ila_locator.is_none() {
        return Err(ConvertError::Ila("ila_locator in the config"));
    }
    Ok(())
}

/// Checks a network's profile parameters: each must be one the profile has, with a value that
/// fits its field.
pub fn check_params(profile: &Profile, params: &BTreeMap<String, u64>) -> Result<(), ConvertError> {
    for (name, &value) in params {
        let Some(param) = profile.params.iter().find(|p| &p.name == name) else {
            return Err(ConvertError::UnknownParam {
                profile: profile.name.clone(),
                name: name.clone(),
                known: profile.params.iter().map(|p| p.name.clone()).collect(),
            });
        };
        let bits = 8 * u32::from(param.field.len);
        if bits < 64 && value >> bits != 0 {
            return Err(ConvertError::ParamTooLarge {
                name: name.clone(),
                value,
                bytes: param.field.len,
                profile: profile.name.clone(),
            });
        }
    }
    Ok(())
}

/// Resolves an API network spec into the state's form (defaults filled in), checking every
/// field that can be checked without the tables. `profiles` is the catalog the names resolve in.
pub fn network_state(
    spec: &api::NetworkSpec,
    config: &Config,
    profiles: &Engine,
    bgp: bool,
) -> Result<NetworkState, ConvertError> {
    check_vni(spec.vni)?;
    let encap = spec
        .encap
        .clone()
        .unwrap_or_else(|| DEFAULT_ENCAP.to_owned());
    let ila = nvo_encap::builtin::ila_profile();
    let profile = if encap == ila.name {
        check_ila(config)?;
        &ila
    } else {
        profiles
            .id(&encap)
            .and_then(|id| profiles.profile(id))
            .ok_or_else(|| ConvertError::UnknownEncap {
                encap: encap.clone(),
                names: profiles.profiles().map(|(_, p)| p.name.clone()).collect(),
            })?
    };
    let carries = |payload: Payload| profile.carries(payload);
    let ip = matches!(profile.payload, Payload::Ipv4 | Payload::Ipv6);
    let l3 = spec.l3.unwrap_or(ip);
    if l3 && !carries(Payload::Ipv4) && !carries(Payload::Ipv6) {
        return Err(ConvertError::NotIp(encap));
    }
    if !l3 && !carries(Payload::Ethernet) {
        return Err(ConvertError::NotEthernet {
            encap,
            payload: profile.payload,
        });
    }
    let mut params = spec.params.clone().unwrap_or_default();
    check_params(profile, &params)?;
    // A profile that names the sending node (the overlay header's source node ID) gets this
    // node's ID unless the request says otherwise.
    if profile.params.iter().any(|p| p.name == "src_node") {
        params
            .entry("src_node".to_owned())
            .or_insert(u64::from(config.node_id));
    }
    let mtu = match spec.mtu {
        Some(mtu) => mtu,
        None => config
            .underlay_mtu
            .saturating_sub(overhead(profile, config.locator.is_ipv6())),
    };
    check_network_mtu(mtu, profile, config)?;
    let bum = match spec.bum.unwrap_or_default() {
        api::Bum::HeadEnd => BumState::HeadEnd,
        api::Bum::Multicast { group } => {
            if !group.is_multicast() {
                return Err(ConvertError::BumGroup(group));
            }
            if profile.transport != Transport::Udp(nvo_wire::ports::VXLAN) {
                return Err(ConvertError::BumGroupEncap(encap));
            }
            check_family(group, config, "bum group")?;
            BumState::Multicast { group }
        }
        api::Bum::Overlay { node } => {
            if node == 0 {
                return Err(ConvertError::BumNodeZero);
            }
            if profile.transport != Transport::Udp(nvo_wire::ports::OVERLAY) {
                return Err(ConvertError::BumOverlayEncap(encap));
            }
            BumState::Overlay { node }
        }
    };
    let limit = config.limits.pipeline.max_learned_fdb;
    let max_learned = spec
        .max_learned
        .unwrap_or(NetworkSpec::DEFAULT_MAX_LEARNED.min(limit));
    if max_learned > limit {
        return Err(ConvertError::MaxLearned { max_learned, limit });
    }
    let share = |what: &'static str, value: Option<u32>, default: u32| match value {
        Some(value) if value > max_learned => Err(ConvertError::LearnShare {
            what,
            value,
            max_learned,
        }),
        Some(value) => Ok(value),
        None => Ok(default),
    };
    let max_learned_per_port = share(
        "max_learned_per_port",
        spec.max_learned_per_port,
        config.learn_share.port(max_learned),
    )?;
    let max_learned_per_remote = share(
        "max_learned_per_remote",
        spec.max_learned_per_remote,
        config.learn_share.remote(max_learned),
    )?;
    let ageing_s = spec
        .ageing_s
        .unwrap_or(NetworkSpec::DEFAULT_AGEING.as_secs() as u32);
    if ageing_s == 0 {
        return Err(ConvertError::AgeingZero);
    }
    let mut flood: Vec<IpAddr> = Vec::new();
    for &remote in spec.flood.iter().flatten() {
        check_remote(remote, config)?;
        if flood.contains(&remote) {
            return Err(ConvertError::FloodTwice(remote));
        }
        flood.push(remote);
    }
    let (learn_ports, learn_tunnels) = learning(spec, bgp && evpn_serves(&encap, l3))?;
    Ok(NetworkState {
        mtu,
        learning: learn_ports || learn_tunnels,
        learn_ports: Some(learn_ports),
        learn_tunnels: Some(learn_tunnels),
        bum,
        max_learned,
        ageing_s,
        flood,
        fdb: BTreeMap::new(),
        fdb_ips: BTreeMap::new(),
        encap,
        params,
        l3,
        routes: BTreeMap::new(),
        accept_remotes: spec.accept_remotes,
        max_learned_per_port: Some(max_learned_per_port),
        max_learned_per_remote: Some(max_learned_per_remote),
        cluster: false,
    })
}

/// (learn_ports, learn_tunnels) of a network spec: the new keys as given, else the old
/// `learning` (false: both off), else on — but tunnel learning off when EVPN serves the network.
fn learning(spec: &api::NetworkSpec, evpn: bool) -> Result<(bool, bool), ConvertError> {
    let contradiction = |why: &'static str| Err(ConvertError::Learning(why));
    match (spec.learning, spec.learn_ports, spec.learn_tunnels) {
        (Some(false), Some(true), _) => contradiction("learning false with learn_ports true"),
        (Some(false), _, Some(true)) => contradiction("learning false with learn_tunnels true"),
        (old, ports, tunnels) => {
            let both = old.unwrap_or(true);
            let ports = ports.unwrap_or(both);
            let tunnels = tunnels.unwrap_or(both && !evpn);
            if old == Some(true) && !ports && !tunnels {
                let why = if spec.learn_tunnels.is_none() {
                    "learning true with learn_ports false, and learn_tunnels is off by default \
                     on a network EVPN serves (give learn_tunnels true)"
                } else {
                    "learning true with learn_ports and learn_tunnels false"
                };
                return contradiction(why);
            }
            Ok((ports, tunnels))
        }
    }
}

/// The gateway MAC of L3 network `vni`: locally administered, 02:6e:76 ("nv") + the VNI.
pub fn gateway_mac(vni: Vni) -> Mac {
    let [_, a, b, c] = vni.0.to_be_bytes();
    Mac([0x02, 0x6e, 0x76, a, b, c])
}

/// Parses "a.b.c.d/len" or "ipv6/len" into a prefix with its host bits zero.
pub fn parse_prefix(text: &str) -> Result<(IpAddr, u8), ConvertError> {
    let bad = || ConvertError::Prefix(text.to_owned());
    let (addr, len) = text.split_once('/').ok_or_else(bad)?;
    let addr: IpAddr = addr.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    let network = nvo_pipeline::l3::prefix_of(addr, len).ok_or_else(bad)?;
    if network != addr {
        return Err(ConvertError::HostBits {
            text: text.to_owned(),
            network,
            len,
        });
    }
    Ok((addr, len))
}

/// Checks that a remote VTEP address can be sent to from this node's locator.
pub fn check_remote(remote: IpAddr, config: &Config) -> Result<(), ConvertError> {
    let unicast = match remote {
        IpAddr::V4(v4) => !v4.is_unspecified() && !v4.is_multicast() && !v4.is_broadcast(),
        IpAddr::V6(v6) => !v6.is_unspecified() && !v6.is_multicast(),
    };
    if !unicast {
        return Err(ConvertError::RemoteNotUnicast(remote));
    }
    check_family(remote, config, "remote")
}

fn check_family(ip: IpAddr, config: &Config, what: &'static str) -> Result<(), ConvertError> {
    if ip.is_ipv4() != config.locator.is_ipv4() {
        return Err(ConvertError::Family {
            what,
            ip,
            locator: config.locator,
        });
    }
    Ok(())
}

/// The pipeline's spec of a stored network.
pub fn pipeline_spec(vni: Vni, net: &NetworkState) -> NetworkSpec {
    NetworkSpec {
        vni,
        mtu: net.mtu,
        learn_ports: net.learns_ports(),
        learn_tunnels: net.learns_tunnels(),
        bum: match net.bum {
            BumState::HeadEnd => BumMode::HeadEnd,
            BumState::Multicast { group } => BumMode::Multicast(group),
            BumState::Overlay { node } => BumMode::Overlay(nvo_pipeline::NodeId(node)),
        },
        max_learned: net.max_learned,
        ageing: Duration::from_secs(u64::from(net.ageing_s)),
        // The datapath resolves `net.encap` into the engine's profile id.
        profile: ProfileTag::VXLAN,
        l3_gateway: net.l3.then(|| gateway_mac(vni)),
        // The datapath sets the families from the profile it resolves `net.encap` into.
        l3_families: nvo_pipeline::IpFamilies::BOTH,
        accept_remotes: net.accept_remotes.map(|a| match a {
            api::AcceptRemotes::Known => nvo_pipeline::AcceptRemotes::Known,
            api::AcceptRemotes::Any => nvo_pipeline::AcceptRemotes::Any,
        }),
        max_learned_per_port: Some(
            net.max_learned_per_port
                .unwrap_or_else(|| LearnShare::default().port(net.max_learned)),
        ),
        max_learned_per_remote: Some(
            net.max_learned_per_remote
                .unwrap_or_else(|| LearnShare::default().remote(net.max_learned)),
        ),
    }
}

/// The datapath command that adds a stored network.
pub fn add_network(vni: Vni, net: &NetworkState) -> nvo_datapath::Command {
    nvo_datapath::Command::AddNetwork {
        spec: pipeline_spec(vni, net),
        flood: net.flood.clone(),
        encap: net.encap.clone(),
        params: net.params.iter().map(|(k, &v)| (k.clone(), v)).collect(),
    }
}

/// The API's view of a stored network; `counts` are (learned, static) from the tables.
pub fn api_network(
    vni: u32,
    net: &NetworkState,
    ports: Vec<String>,
    counts: (usize, usize),
) -> api::Network {
    let spec = pipeline_spec(Vni(vni), net);
    api::Network {
        vni,
        mtu: net.mtu,
        learning: net.learns_ports() || net.learns_tunnels(),
        learn_ports: net.learns_ports(),
        learn_tunnels: net.learns_tunnels(),
        bum: match net.bum {
            BumState::HeadEnd => api::Bum::HeadEnd,
            BumState::Multicast { group } => api::Bum::Multicast { group },
            BumState::Overlay { node } => api::Bum::Overlay { node },
        },
        max_learned: net.max_learned,
        ageing_s: net.ageing_s,
        flood: net.flood.clone(),
        ports,
        learned: u32::try_from(counts.0).unwrap_or(u32::MAX),
        static_entries: u32::try_from(counts.1).unwrap_or(u32::MAX),
        encap: net.encap.clone(),
        params: net.params.clone(),
        l3: net.l3,
        gateway_mac: net.l3.then(|| gateway_mac(Vni(vni)).to_string()),
        gateway_ipv6: net
            .l3
            .then(|| nvo_pipeline::l3::gateway_ipv6(gateway_mac(Vni(vni)))),
        routes: net
            .routes
            .iter()
            .map(|(prefix, &remote)| api::RouteSpec {
                prefix: prefix.clone(),
                remote,
            })
            .collect(),
        accept_remotes: match spec.accepts(!net.flood.is_empty()) {
            nvo_pipeline::AcceptRemotes::Known => api::AcceptRemotes::Known,
            nvo_pipeline::AcceptRemotes::Any => api::AcceptRemotes::Any,
        },
        accept_remotes_set: net.accept_remotes.is_some(),
        max_learned_per_port: spec.max_learned_per_port.unwrap_or(net.max_learned),
        max_learned_per_remote: spec.max_learned_per_remote.unwrap_or(net.max_learned),
    }
}

/// API port kind ↔ stored port kind.
pub fn port_kind(kind: api::PortKind) -> PortKindState {
    match kind {
        api::PortKind::Veth => PortKindState::Veth,
        api::PortKind::Tap => PortKindState::Tap,
    }
}

/// Stored port kind → the datapath's.
pub fn datapath_port_kind(kind: PortKindState) -> nvo_datapath::PortKind {
    match kind {
        PortKindState::Veth => nvo_datapath::PortKind::Veth,
        PortKindState::Tap => nvo_datapath::PortKind::Tap,
    }
}

/// Stored port kind → API port kind.
pub fn api_port_kind(kind: PortKindState) -> api::PortKind {
    match kind {
        PortKindState::Veth => api::PortKind::Veth,
        PortKindState::Tap => api::PortKind::Tap,
    }
}

/// A counter struct (anything serialised as a flat map of numbers) → name → value.
///
/// The pipeline's counter structs serialise with their stable field names; going through serde
/// keeps this edge from listing the names a second time.
pub fn counter_map<T: Serialize>(counters: &T) -> BTreeMap<String, u64> {
    match serde_json::to_value(counters) {
        Ok(serde_json::Value::Object(fields)) => fields
            .into_iter()
            .filter_map(|(name, value)| value.as_u64().map(|n| (name, n)))
            .collect(),
        _ => BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config {
            node_id: 1,
            locator: "192.0.2.1".parse().unwrap(),
            vxlan_port: 4789,
            underlay_mtu: 1500,
            api_socket: "/tmp/x.sock".into(),
            state_dir: "/tmp/s".into(),
            entropy_ports: 16,
            multicast_ttl: 8,
            log: "info".into(),
            outer: Default::default(),
            stt_reassembly: Default::default(),
            profiles: Vec::new(),
            bgp: None,
            datapath: Default::default(),
            xdp: Default::default(),
            api: Default::default(),
            port_kinds: vec!["veth".into(), "tap".into()],
            limits: Default::default(),
            learn_share: Default::default(),
            http: None,
            busy_poll: Default::default(),
            stt_offload: Default::default(),
            workers: 1,
            cluster: None,
            openflow_listen: None,
            ila_locator: None,
        }
    }

    #[test]
    fn ifnames() {
        assert!(check_ifname("veth0").is_ok());
        assert!(check_ifname("a23456789012345").is_ok());
        for bad in ["", "a234567890123456", "a/b", "a b", "a:1", ".", ".."] {
            let e = check_ifname(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn vni_and_mac_messages_name_the_value() {
        assert!(parse_vni("0").unwrap_err().to_string().contains("vni 0"));
        assert!(parse_vni("16777216")
            .unwrap_err()
            .to_string()
            .contains("16777216"));
        assert!(parse_vni("abc")
            .unwrap_err()
            .to_string()
            .contains("\"abc\""));
        assert_eq!(parse_vni("100").unwrap(), Vni(100));
        assert!(parse_mac("02:00:00:00:00:zz")
            .unwrap_err()
            .to_string()
            .contains("02:00:00:00:00:zz"));
    }

    #[test]
    fn network_defaults_and_checks() {
        let c = config();
        let spec = api::NetworkSpec {
            vni: 100,
            ..Default::default()
        };
        let n = network_state(&spec, &c, &Engine::new(Default::default()), false).unwrap();
        assert_eq!(
            (n.mtu, n.learning, n.max_learned, n.ageing_s),
            (1450, true, 4096, 300)
        );
        assert_eq!(
            (
                n.max_learned_per_port,
                n.max_learned_per_remote,
                n.accept_remotes
            ),
            (Some(1024), Some(2048), None)
        );
        let over = api::NetworkSpec {
            vni: 100,
            max_learned: Some(10),
            max_learned_per_port: Some(11),
            ..Default::default()
        };
        let err = network_state(&over, &c, &Engine::new(Default::default()), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("max_learned_per_port 11") && err.contains("10"),
            "{err}"
        );
        let too_big = api::NetworkSpec {
            vni: 100,
            mtu: Some(1451),
            ..Default::default()
        };
        assert!(
            network_state(&too_big, &c, &Engine::new(Default::default()), false)
                .unwrap_err()
                .to_string()
                .contains("1451")
        );
        let v6 = api::NetworkSpec {
            vni: 100,
            flood: Some(vec!["fd00::1".parse().unwrap()]),
            ..Default::default()
        };
        assert!(
            network_state(&v6, &c, &Engine::new(Default::default()), false)
                .unwrap_err()
                .to_string()
                .contains("fd00::1")
        );
        let dup = api::NetworkSpec {
            vni: 100,
            flood: Some(vec![
                "192.0.2.2".parse().unwrap(),
                "192.0.2.2".parse().unwrap(),
            ]),
            ..Default::default()
        };
        assert!(
            network_state(&dup, &c, &Engine::new(Default::default()), false)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        let group = api::NetworkSpec {
            vni: 100,
            bum: Some(api::Bum::Multicast {
                group: "192.0.2.2".parse().unwrap(),
            }),
            ..Default::default()
        };
        assert!(
            network_state(&group, &c, &Engine::new(Default::default()), false)
                .unwrap_err()
                .to_string()
                .contains("not a multicast")
        );
    }

    #[test]
    fn counters_become_maps() {
        let c = nvo_pipeline::Counters::default();
        let drops = counter_map(&c.drops);
        assert_eq!(drops.len(), nvo_pipeline::DropReason::COUNT);
        assert!(counter_map(&c.underlay).contains_key("tx_errors"));
    }
}
