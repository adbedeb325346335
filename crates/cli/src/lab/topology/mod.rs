//! The topology file of `nvo lab up`: its YAML schema and the checks a topology must pass
//! before anything is created. Field syntax (CIDRs, MACs, enums, unknown keys) is checked while
//! parsing; everything that relates fields to each other is checked by [`Topology::validate`].
//! Every error is one line naming the offending node, network or value.
//!
//! The schema, with defaults, is documented in examples/lab/demo.yaml and `nvo lab up --help`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use nvo_api::ProfileSpec;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

pub mod encap;
use crate::addr::{Cidr, Mac};

/// Longest lab, host or container name (namespaces are `nvo-<lab>-<node>`).
pub const MAX_NAME: usize = 32;
/// The node name of the underlay namespace, so no host or container may take it.
pub const UNDERLAY_NODE: &str = "ul";
/// Largest VNI (24 bits).
pub const VNI_MAX: u32 = 0xff_ffff;

/// Why a topology is refused.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The YAML does not match the schema.
    #[error("{file}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's one-line message, with line and column.
        message: String,
    },
    /// The YAML parses but does not make a lab.
    #[error("{file}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong, naming the node, network or value.
        message: String,
    },
}

/// Which address family tunnels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Tunnels over IPv4 (50 bytes of overhead).
    #[default]
    Ipv4,
    /// Tunnels over IPv6 (70 bytes of overhead).
    Ipv6,
}

impl Family {
    /// Bytes VXLAN adds around a tenant's IP packet (see `nvo_wire::vxlan::overhead`).
    pub fn overhead(self) -> u16 {
        nvo_wire::vxlan::overhead(self == Family::Ipv6)
    }
}

/// `underlay:` — the network every host's eth0 is on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Underlay {
    /// The family tunnels use.
    pub family: Family,
    /// IPv4 prefix; host i (0-based) gets its (i+1)th address.
    pub ipv4: Cidr,
    /// IPv6 prefix; host i gets its (i+1)th address.
    pub ipv6: Cidr,
    /// MTU of the underlay links.
    pub mtu: u16,
}

impl Default for Underlay {
    fn default() -> Self {
        Underlay {
            family: Family::Ipv4,
            ipv4: Cidr {
                addr: IpAddr::from([10, 100, 0, 0]),
                prefix: 24,
            },
            ipv6: Cidr {
                addr: IpAddr::from([0xfd00, 0x100, 0, 0, 0, 0, 0, 0]),
                prefix: 64,
            },
            mtu: 1500,
        }
    }
}

/// What runs on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostKind {
    /// nvod.
    #[default]
    Nvo,
    /// The Linux kernel's VXLAN device and a bridge per network (the reference VTEP).
    Kernel,
}

/// `hosts:` — one entry per VTEP.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostDef {
    /// Node name.
    pub name: String,
    /// nvo or kernel.
    #[serde(default)]
    pub kind: HostKind,
    /// UDP port VXLAN uses on this host.
    #[serde(default = "default_vxlan_port")]
    pub vxlan_port: u16,
    /// Kernel hosts only: learn from traffic (default: the network's `learning`).
    #[serde(default)]
    pub learning: Option<bool>,
    /// nvo hosts only: extra keys of nvod's configuration file.
    #[serde(default)]
    pub nvod: NvodExtras,
}

/// `nvod:` of an nvo host: optional keys written into its nvod's configuration file (nvod's
/// `--help` explains each); absent keys take nvod's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvodExtras {
    /// TTL / hop limit of every tunnel packet, 1 to 255, or "inherit" (the inner packet's).
    pub outer_ttl: Option<OuterValue>,
    /// TOS / traffic class of every tunnel packet, or "inherit" (the inner packet's).
    pub outer_tos: Option<OuterValue>,
    /// Don't Fragment on outer IPv4 packets.
    pub outer_df: Option<bool>,
    /// Most bytes of STT frames held in reassembly, 65536 to 1073741824.
    pub stt_reassembly_bytes: Option<u64>,
    /// Seconds an incomplete STT frame is kept, 1 to 3600.
    pub stt_reassembly_timeout_s: Option<u64>,
    /// UDP GRO on nvod's underlay sockets (false turns it off).
    pub udp_gro: Option<bool>,
    /// UDP GSO on nvod's underlay sockets (false turns it off).
    pub udp_gso: Option<bool>,
    /// The datapath: auto, ebpf or userspace.
    pub datapath: Option<String>,
    /// Where the kernel path relays overlay packets: auto, driver, generic or off (tc).
    pub xdp: Option<String>,
}

/// The values of `nvod.datapath` (and `nvo lab up --datapath`).
pub const DATAPATHS: [&str; 3] = ["auto", "ebpf", "userspace"];
/// The values of `nvod.xdp`.
pub const XDP_MODES: [&str; 4] = ["auto", "driver", "generic", "off"];

impl NvodExtras {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        *self == NvodExtras::default()
    }

    /// The same bounds nvod applies, checked before any namespace is made.
    fn validate(&self, host: &str) -> Result<(), String> {
        let at = |key: &str, value: u64, range: &str| {
            Err(format!(
                "host {host}: nvod.{key} {value} is outside {range}"
            ))
        };
        if self.outer_ttl == Some(OuterValue::Fixed(0)) {
            return at("outer_ttl", 0, "1..=255");
        }
        for (key, value) in [
            ("outer_ttl", &self.outer_ttl),
            ("outer_tos", &self.outer_tos),
        ] {
            if let Some(OuterValue::Word(w)) = value {
                if w != "inherit" {
                    return Err(format!(
                        "host {host}: nvod.{key} {w:?} is neither a number nor \"inherit\""
                    ));
                }
            }
        }
        if let Some(b) = self.stt_reassembly_bytes {
            if !(1 << 16..=1 << 30).contains(&b) {
                return at("stt_reassembly_bytes", b, "65536..=1073741824");
            }
        }
        if let Some(t) = self.stt_reassembly_timeout_s {
            if !(1..=3600).contains(&t) {
                return at("stt_reassembly_timeout_s", t, "1..=3600");
            }
        }
        if let Some(d) = &self.datapath {
            if !DATAPATHS.contains(&d.as_str()) {
                return Err(format!(
                    "host {host}: nvod.datapath {d:?} is none of auto, ebpf, userspace"
                ));
            }
        }
        if let Some(x) = &self.xdp {
            if !XDP_MODES.contains(&x.as_str()) {
                return Err(format!(
                    "host {host}: nvod.xdp {x:?} is none of auto, driver, generic, off"
                ));
            }
        }
        Ok(())
    }
}

/// An outer header value: a number, or "inherit".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum OuterValue {
    /// A fixed value.
    Fixed(u8),
    /// "inherit".
    Word(String),
}

impl std::fmt::Display for OuterValue {
    /// As a TOML value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OuterValue::Fixed(v) => write!(f, "{v}"),
            OuterValue::Word(w) => write!(f, "{w:?}"),
        }
    }
}

fn default_vxlan_port() -> u16 {
    4789
}

fn default_true() -> bool {
    true
}

/// `flood:` of a network: which hosts get broadcast and unknown frames.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Flood {
    /// Every other host that has a container in the network.
    #[default]
    Auto,
    /// These hosts (a host never floods to itself).
    Hosts(Vec<String>),
}

impl<'de> Deserialize<'de> for Flood {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FloodVisitor;
        impl<'de> Visitor<'de> for FloodVisitor {
            type Value = Flood;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`auto` or a list of host names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Flood, E> {
                match v {
                    "auto" => Ok(Flood::Auto),
                    other => Err(E::custom(format!(
                        "flood must be `auto` or a list of host names, not {other:?}"
                    ))),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Flood, A::Error> {
                let mut hosts = Vec::new();
                while let Some(h) = seq.next_element::<String>()? {
                    hosts.push(h);
                }
                Ok(Flood::Hosts(hosts))
            }
        }
        d.deserialize_any(FloodVisitor)
    }
}

/// `networks:` — the tenant networks, created on every host.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkDef {
    /// VNI, 1 to 16777215.
    pub vni: u32,
    /// A label for people (the tenant's name); not sent to nvod.
    #[serde(default)]
    pub name: Option<String>,
    /// Which hosts get flooded frames.
    #[serde(default)]
    pub flood: Flood,
    /// Learn MACs from traffic.
    #[serde(default = "default_true")]
    pub learning: bool,
    /// Tenant MTU (default: underlay MTU minus the overhead of the family).
    #[serde(default)]
    pub mtu: Option<u16>,
    /// Seconds a learned MAC lives without traffic (nvod's default when absent).
    #[serde(default)]
    pub ageing_s: Option<u32>,
    /// Most learned MACs per host for this network (nvod's default when absent).
    #[serde(default)]
    pub max_learned: Option<u32>,
    /// An underlay multicast group: broadcast and unknown frames go to it once instead of to
    /// each host of a flood list (head-end replication).
    #[serde(default)]
    pub multicast: Option<IpAddr>,
    /// The encapsulation profile: a built-in's name or one of `profiles:` (default vxlan).
    #[serde(default)]
    pub encap: Option<String>,
    /// Values of the profile's parameters, e.g. {group: 100} for vxlan-gbp.
    #[serde(default)]
    pub params: BTreeMap<String, u64>,
    /// An L3 network (nvo hosts only): tunnels carry the containers' IPv4 packets, nvod
    /// answers their ARP requests and routes by prefix (routes are added through the API).
    #[serde(default)]
    pub l3: Option<bool>,
}

impl NetworkDef {
    /// The profile's name, the default resolved.
    pub fn encap(&self) -> &str {
        self.encap.as_deref().unwrap_or(encap::DEFAULT)
    }
}

/// `containers:` — tenant systems, one namespace each with an eth0.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerDef {
    /// Node name.
    pub name: String,
    /// The host it runs on.
    pub host: String,
    /// Its network.
    pub vni: u32,
    /// IPv4 address with prefix.
    pub ip: Cidr,
    /// IPv6 address with prefix.
    #[serde(default)]
    pub ipv6: Option<Cidr>,
    /// MAC address of eth0 (default 02:VV:VV:VV:NN:NN: VNI, then the container's ordinal).
    #[serde(default)]
    pub mac: Option<Mac>,
}

/// A whole topology file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// The lab's name.
    pub name: String,
    /// The underlay.
    #[serde(default)]
    pub underlay: Underlay,
    /// VTEPs, in order (the order gives the addresses).
    pub hosts: Vec<HostDef>,
    /// Tenant networks.
    #[serde(default)]
    pub networks: Vec<NetworkDef>,
    /// Tenant systems.
    #[serde(default)]
    pub containers: Vec<ContainerDef>,
    /// User-defined encapsulation profiles, given to every nvo host before the networks.
    #[serde(default)]
    pub profiles: Vec<ProfileSpec>,
}

/// Checks a lab, host or container name: letters, digits, `-` and `_`, starting with a letter or
/// digit, at most [`MAX_NAME`] bytes — it ends up in namespace and file names.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() {
        return Err(format!("{what} name is empty"));
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "{what} name {name:?} is longer than {MAX_NAME} characters"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) || !name.chars().all(ok_char) {
        return Err(format!(
            "{what} name {name:?} may hold only letters, digits, '-' and '_', starting with a letter or digit"
        ));
    }
    Ok(())
}

impl Topology {
    /// Parses a topology file's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Topology, TopologyError> {
        let topo: Topology = serde_norway::from_str(text).map_err(|e| TopologyError::Syntax {
            file: file.to_owned(),
            message: e.to_string().replace('\n', " "),
        })?;
        topo.validate().map_err(|message| TopologyError::Invalid {
            file: file.to_owned(),
            message,
        })?;
        Ok(topo)
    }

    /// The tenant MTU of a network on a kernel host (VXLAN): the topology's, else the
    /// default. nvo hosts choose their own when the topology gives none, from the profile.
    pub fn vxlan_tenant_mtu(&self, net: &NetworkDef) -> u16 {
        net.mtu.unwrap_or(self.default_tenant_mtu())
    }

    /// Underlay MTU minus the VXLAN overhead.
    pub fn default_tenant_mtu(&self) -> u16 {
        self.underlay
            .mtu
            .saturating_sub(self.underlay.family.overhead())
    }

    /// Checks everything that relates fields to each other.
    pub fn validate(&self) -> Result<(), String> {
        check_name("lab", &self.name)?;
        self.validate_underlay()?;
        self.validate_nodes()?;
        encap::validate_profiles(&self.profiles)?;
        self.validate_networks()?;
        self.validate_containers()?;
        for n in &self.networks {
            encap::validate_network(self, n)?;
        }
        self.validate_ports()
    }

    fn validate_underlay(&self) -> Result<(), String> {
        let u = &self.underlay;
        if !u.ipv4.addr.is_ipv4() {
            return Err(format!("underlay.ipv4 {} is not an IPv4 prefix", u.ipv4));
        }
        if !u.ipv6.addr.is_ipv6() {
            return Err(format!("underlay.ipv6 {} is not an IPv6 prefix", u.ipv6));
        }
        if !(1280..=9000).contains(&u.mtu) {
            return Err(format!("underlay.mtu {} is outside 1280..=9000", u.mtu));
        }
        let n = self.hosts.len() as u128;
        for prefix in [u.ipv4, u.ipv6] {
            if prefix.nth(n).is_none() {
                return Err(format!(
                    "underlay prefix {prefix} has no room for {n} hosts"
                ));
            }
        }
        Ok(())
    }

    fn validate_nodes(&self) -> Result<(), String> {
        if self.hosts.is_empty() {
            return Err("a lab needs at least one host".to_owned());
        }
        let mut seen = BTreeSet::new();
        let hosts = self.hosts.iter().map(|h| ("host", &h.name));
        let containers = self.containers.iter().map(|c| ("container", &c.name));
        for (what, name) in hosts.chain(containers) {
            check_name(what, name)?;
            if name == UNDERLAY_NODE {
                return Err(format!(
                    "{what} name {name:?} is reserved for the underlay namespace"
                ));
            }
            if !seen.insert(name.as_str()) {
                return Err(format!(
                    "node name {name:?} is used twice (hosts and containers share one name space)"
                ));
            }
        }
        for h in &self.hosts {
            if h.vxlan_port == 0 {
                return Err(format!("host {}: vxlan_port 0 is not a port", h.name));
            }
            if h.kind == HostKind::Nvo && h.learning.is_some() {
                return Err(format!(
                    "host {}: learning is for kind: kernel hosts; nvo hosts take it per network",
                    h.name
                ));
            }
            if h.kind == HostKind::Kernel && !h.nvod.is_empty() {
                return Err(format!(
                    "host {}: nvod is for kind: nvo hosts; a kernel host runs no nvod",
                    h.name
                ));
            }
            h.nvod.validate(&h.name)?;
        }
        Ok(())
    }

    fn validate_networks(&self) -> Result<(), String> {
        let mut vnis = BTreeSet::new();
        let tenant_max = self.default_tenant_mtu();
        for n in &self.networks {
            if !(1..=VNI_MAX).contains(&n.vni) {
                return Err(format!("network vni {} is outside 1..={VNI_MAX}", n.vni));
            }
            if !vnis.insert(n.vni) {
                return Err(format!("network vni {} is defined twice", n.vni));
            }
            // The VXLAN overhead is known here; other profiles' is nvod's to check.
            let vxlan = encap::on_vxlan_port(n.encap());
            if let Some(mtu) = n.mtu.filter(|_| vxlan) {
                if !(68..=tenant_max).contains(&mtu) {
                    return Err(format!(
                        "network {}: mtu {mtu} is outside 68..={tenant_max} (underlay mtu minus {} bytes of VXLAN)",
                        n.vni,
                        self.underlay.family.overhead()
                    ));
                }
            }
            // STT cuts frames into segments itself: its networks may be larger than the
            // underlay (nvod takes up to 65481).
            let max = if n.encap() == "stt" {
                65481
            } else {
                self.underlay.mtu
            };
            if let Some(mtu) = n.mtu.filter(|_| !vxlan) {
                if !(68..=max).contains(&mtu) {
                    return Err(format!(
                        "network {}: mtu {mtu} is outside 68..={max} ({})",
                        n.vni,
                        if max == self.underlay.mtu {
                            "the underlay mtu"
                        } else {
                            "stt segments larger frames"
                        }
                    ));
                }
            }
            if let Some(group) = n.multicast {
                self.validate_group(n.vni, group, &n.flood)?;
            }
            if let Flood::Hosts(hosts) = &n.flood {
                let mut listed = BTreeSet::new();
                for h in hosts {
                    if !self.hosts.iter().any(|x| &x.name == h) {
                        return Err(format!("network {}: flood names unknown host {h:?}", n.vni));
                    }
                    if !listed.insert(h) {
                        return Err(format!("network {}: flood names host {h:?} twice", n.vni));
                    }
                }
            }
        }
        Ok(())
    }

    /// A network's multicast group: a multicast address of the tunnels' family, and no flood
    /// list beside it (a network floods one way or the other).
    fn validate_group(&self, vni: u32, group: IpAddr, flood: &Flood) -> Result<(), String> {
        let family_ok = match self.underlay.family {
            Family::Ipv4 => group.is_ipv4(),
            Family::Ipv6 => group.is_ipv6(),
        };
        if !group.is_multicast() || !family_ok {
            let example = match self.underlay.family {
                Family::Ipv4 => "239.1.1.1",
                Family::Ipv6 => "ff0e::1:1",
            };
            return Err(format!(
                "network {vni}: multicast {group} is not a multicast address of the underlay's family ({:?}); use e.g. {example}",
                self.underlay.family
            ));
        }
        if *flood != Flood::Auto {
            return Err(format!(
                "network {vni}: give either multicast or flood, not both (multicast floods to the group)"
            ));
        }
        Ok(())
    }

    fn validate_containers(&self) -> Result<(), String> {
        // Addresses must be unique within a network; the same address in two networks is fine
        // (that is what tenant isolation is for).
        let mut addrs: BTreeMap<(u32, IpAddr), &str> = BTreeMap::new();
        let mut macs: BTreeMap<Mac, &str> = BTreeMap::new();
        for (i, c) in self.containers.iter().enumerate() {
            let at = |m: String| format!("container {}: {m}", c.name);
            if !self.hosts.iter().any(|h| h.name == c.host) {
                return Err(at(format!("unknown host {:?}", c.host)));
            }
            if !self.networks.iter().any(|n| n.vni == c.vni) {
                return Err(at(format!("vni {} is not in networks", c.vni)));
            }
            if !c.ip.addr.is_ipv4() || !c.ip.is_host_address() {
                return Err(at(format!(
                    "ip {} is not an IPv4 host address with a prefix",
                    c.ip
                )));
            }
            let mut own = vec![c.ip.addr];
            if let Some(v6) = c.ipv6 {
                if !v6.addr.is_ipv6() || v6.addr.is_unspecified() || v6.addr.is_multicast() {
                    return Err(at(format!(
                        "ipv6 {v6} is not an IPv6 host address with a prefix"
                    )));
                }
                own.push(v6.addr);
            }
            for a in own {
                if let Some(other) = addrs.insert((c.vni, a), &c.name) {
                    return Err(at(format!(
                        "address {a} is already {other}'s in network {}",
                        c.vni
                    )));
                }
            }
            let mac = container_mac(c, i);
            if !mac.is_unicast() {
                return Err(at(format!("mac {mac} is not a unicast address")));
            }
            if let Some(other) = macs.insert(mac, &c.name) {
                return Err(at(format!("mac {mac} is already {other}'s")));
            }
        }
        Ok(())
    }

    /// Hosts that exchange a network's traffic must agree on the VXLAN port: both ends of a
    /// VXLAN tunnel send to and listen on one port. Other profiles have their own transport.
    fn validate_ports(&self) -> Result<(), String> {
        for n in self
            .networks
            .iter()
            .filter(|n| encap::on_vxlan_port(n.encap()))
        {
            let mut first: Option<&HostDef> = None;
            for h in self.member_hosts(n) {
                match first {
                    Some(f) if f.vxlan_port != h.vxlan_port => {
                        return Err(format!(
                            "network {}: hosts {} (vxlan_port {}) and {} (vxlan_port {}) must use the same port",
                            n.vni, f.name, f.vxlan_port, h.name, h.vxlan_port
                        ))
                    }
                    Some(_) => {}
                    None => first = Some(h),
                }
            }
        }
        Ok(())
    }

    /// The hosts that take part in a network: those with a container in it and those it
    /// floods to.
    pub fn member_hosts(&self, n: &NetworkDef) -> Vec<&HostDef> {
        let flood = self.flood_hosts(n);
        self.hosts
            .iter()
            .filter(|h| {
                flood.contains(&h.name)
                    || self
                        .containers
                        .iter()
                        .any(|c| c.vni == n.vni && c.host == h.name)
            })
            .collect()
    }

    /// The hosts a network floods between (before excluding the sender), in host order.
    pub fn flood_hosts(&self, n: &NetworkDef) -> Vec<String> {
        let wanted = |h: &HostDef| match &n.flood {
            Flood::Auto => self
                .containers
                .iter()
                .any(|c| c.vni == n.vni && c.host == h.name),
            Flood::Hosts(list) => list.contains(&h.name),
        };
        self.hosts
            .iter()
            .filter(|h| wanted(h))
            .map(|h| h.name.clone())
            .collect()
    }
}

/// A container's MAC: the one given, or 02 (locally administered), the VNI in three bytes and
/// the container's 1-based ordinal in two, so addresses are stable and tell the tenant apart.
pub fn container_mac(c: &ContainerDef, index: usize) -> Mac {
    c.mac.unwrap_or_else(|| {
        let [_, v1, v2, v3] = c.vni.to_be_bytes();
        let [o1, o2] = u16::try_from(index + 1).unwrap_or(u16::MAX).to_be_bytes();
        Mac([0x02, v1, v2, v3, o1, o2])
    })
}
