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

mod cluster;
pub mod encap;
mod error;
mod nvod;

use crate::addr::{Cidr, Mac};
pub use cluster::ClusterExtras;
pub use error::{NameError, TopologyError, ValidationError};
pub use nvod::{NvodExtras, OuterValue, SttOffload, DATAPATHS};

/// Longest lab, host or container name (namespaces are `nvo-<lab>-<node>`).
pub const MAX_NAME: usize = 32;
/// The node name of the underlay namespace, so no host or container may take it.
pub const UNDERLAY_NODE: &str = "ul";
pub use nvo_wire::VNI_MAX;
/// Largest MTU of an STT network: STT cuts frames into segments itself, so its networks may
/// be larger than the underlay (nvod takes up to this).
pub const STT_MTU_MAX: u16 = 65481;

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
    /// Learn MACs from traffic (false: neither from ports nor from tunnels).
    #[serde(default = "default_true")]
    pub learning: bool,
    /// Learn the MACs of local ports (nvod's default when absent).
    #[serde(default)]
    pub learn_ports: Option<bool>,
    /// Learn MACs from tunnel packets (nvod's default when absent; kernel hosts: `learning`).
    #[serde(default)]
    pub learn_tunnels: Option<bool>,
    /// Tenant MTU (default: underlay MTU minus the overhead of the family).
    #[serde(default)]
    pub mtu: Option<u16>,
    /// Seconds a learned MAC lives without traffic (nvod's default when absent).
    #[serde(default)]
    pub ageing_s: Option<u32>,
    /// Most learned MACs per host for this network (nvod's default when absent).
    #[serde(default)]
    pub max_learned: Option<u32>,
    /// Most learned MACs one port may hold on each nvo host (nvod's default when absent).
    #[serde(default)]
    pub max_learned_per_port: Option<u32>,
    /// Which remotes each nvo host takes this network's tunnel packets from (nvod's default,
    /// `known` with a flood list, when absent).
    #[serde(default)]
    pub accept_remotes: Option<nvo_api::AcceptRemotes>,
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
    /// An L3 network (nvo hosts only): tunnels carry the containers' IP packets (vxlan-gpe:
    /// IPv4 and IPv6; ipip: IPv4; ip6ip6: IPv6, over either underlay family), nvod answers
    /// their ARP requests and neighbor solicitations and routes by prefix (routes, IPv4 or
    /// IPv6, are added through the API: `nvo route add`). A container with an `ipv6:` address
    /// on an L3 network gets an IPv6 default route via the gateway's link-local address
    /// (`gateway_ipv6` in the network's API view); IPv4 containers reach on-link addresses
    /// only (proxy ARP). Default: true for ipip and ip6ip6, false otherwise.
    #[serde(default)]
    pub l3: Option<bool>,
    /// An ILA network's identifier → locator mappings (docs/ila.md, "Mappings"): `static`
    /// (default), one mapping route per IPv6 container on every host; `evpn`, none: each
    /// nvod advertises its own containers as EVPN MAC+IP routes, so the test or operator
    /// configures BGP (`PUT /v1/bgp`, a route reflector) after `up`.
    #[serde(default)]
    pub ila_mappings: Option<IlaMappings>,
}

/// Where an ILA network's mappings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IlaMappings {
    /// The lab installs them as routes.
    #[default]
    Static,
    /// EVPN: the lab installs none.
    Evpn,
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
    /// Labels of its port (issue 18: its identity for the network's policy), set on nvo
    /// hosts once the port is attached (`nvo endpoint label`).
    #[serde(default)]
    pub labels: std::collections::BTreeMap<String, String>,
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
pub fn check_name(what: &str, name: &str) -> Result<(), NameError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() {
        return Err(NameError::Empty {
            what: what.to_owned(),
        });
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong {
            what: what.to_owned(),
            name: name.to_owned(),
        });
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) || !name.chars().all(ok_char) {
        return Err(NameError::Characters {
            what: what.to_owned(),
            name: name.to_owned(),
        });
    }
    Ok(())
}

impl Topology {
    /// Parses a topology file's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Topology, TopologyError> {
        let topo: Topology =
            serde_norway::from_str(text).map_err(|source| TopologyError::Syntax {
                file: file.to_owned(),
                source,
            })?;
        topo.validate().map_err(|error| TopologyError::Invalid {
            file: file.to_owned(),
            error: Box::new(error),
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
    pub fn validate(&self) -> Result<(), ValidationError> {
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

    fn validate_underlay(&self) -> Result<(), ValidationError> {
        let u = &self.underlay;
        if !u.ipv4.addr.is_ipv4() {
            return Err(ValidationError::UnderlayIpv4(u.ipv4));
        }
        if !u.ipv6.addr.is_ipv6() {
            return Err(ValidationError::UnderlayIpv6(u.ipv6));
        }
        if !(1280..=9000).contains(&u.mtu) {
            return Err(ValidationError::UnderlayMtu(u.mtu));
        }
        let n = self.hosts.len() as u128;
        for prefix in [u.ipv4, u.ipv6] {
            if prefix.nth(n).is_none() {
                return Err(ValidationError::UnderlayRoom { prefix, hosts: n });
            }
        }
        Ok(())
    }

    fn validate_nodes(&self) -> Result<(), ValidationError> {
        if self.hosts.is_empty() {
            return Err(ValidationError::NoHosts);
        }
        let mut seen = BTreeSet::new();
        let hosts = self.hosts.iter().map(|h| ("host", &h.name));
        let containers = self.containers.iter().map(|c| ("container", &c.name));
        for (what, name) in hosts.chain(containers) {
            check_name(what, name)?;
            if name == UNDERLAY_NODE {
                return Err(ValidationError::ReservedName {
                    what,
                    name: name.clone(),
                });
            }
            if !seen.insert(name.as_str()) {
                return Err(ValidationError::NameTwice(name.clone()));
            }
        }
        for h in &self.hosts {
            if h.vxlan_port == 0 {
                return Err(ValidationError::VxlanPortZero(h.name.clone()));
            }
            if h.kind == HostKind::Nvo && h.learning.is_some() {
                return Err(ValidationError::LearningOnNvo(h.name.clone()));
            }
            if h.kind == HostKind::Kernel && !h.nvod.is_empty() {
                return Err(ValidationError::NvodOnKernel(h.name.clone()));
            }
            h.nvod.validate(&h.name)?;
        }
        Ok(())
    }

    fn validate_networks(&self) -> Result<(), ValidationError> {
        let mut vnis = BTreeSet::new();
        let tenant_max = self.default_tenant_mtu();
        for n in &self.networks {
            if !(1..=VNI_MAX).contains(&n.vni) {
                return Err(ValidationError::VniRange(n.vni));
            }
            if !vnis.insert(n.vni) {
                return Err(ValidationError::VniTwice(n.vni));
            }
            if n.ila_mappings.is_some() && n.encap() != nvo_encap::builtin::names::ILA {
                return Err(ValidationError::IlaMappingsNotIla(n.vni));
            }
            // The VXLAN overhead is known here; other profiles' is nvod's to check.
            let vxlan = encap::on_vxlan_port(n.encap());
            if let Some(mtu) = n.mtu.filter(|_| vxlan) {
                if !(68..=tenant_max).contains(&mtu) {
                    return Err(ValidationError::VxlanMtu {
                        vni: n.vni,
                        mtu,
                        max: tenant_max,
                        overhead: self.underlay.family.overhead(),
                    });
                }
            }
            // STT cuts frames into segments itself: its networks may be larger than the
            // underlay (nvod takes up to 65481).
            let stt = n.encap() == "stt";
            let max = if stt { STT_MTU_MAX } else { self.underlay.mtu };
            if let Some(mtu) = n.mtu.filter(|_| !vxlan) {
                if !(68..=max).contains(&mtu) {
                    let vni = n.vni;
                    return Err(if stt {
                        ValidationError::SttMtu { vni, mtu, max }
                    } else {
                        ValidationError::UnderlayBoundMtu { vni, mtu, max }
                    });
                }
            }
            if let Some(group) = n.multicast {
                self.validate_group(n.vni, group, &n.flood)?;
            }
            if let Flood::Hosts(hosts) = &n.flood {
                let mut listed = BTreeSet::new();
                for h in hosts {
                    if !self.hosts.iter().any(|x| &x.name == h) {
                        return Err(ValidationError::FloodUnknownHost {
                            vni: n.vni,
                            host: h.clone(),
                        });
                    }
                    if !listed.insert(h) {
                        return Err(ValidationError::FloodHostTwice {
                            vni: n.vni,
                            host: h.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// A network's multicast group: a multicast address of the tunnels' family, and no flood
    /// list beside it (a network floods one way or the other).
    fn validate_group(
        &self,
        vni: u32,
        group: IpAddr,
        flood: &Flood,
    ) -> Result<(), ValidationError> {
        let family_ok = match self.underlay.family {
            Family::Ipv4 => group.is_ipv4(),
            Family::Ipv6 => group.is_ipv6(),
        };
        if !group.is_multicast() || !family_ok {
            return Err(ValidationError::MulticastGroup {
                vni,
                group,
                family: self.underlay.family,
            });
        }
        if *flood != Flood::Auto {
            return Err(ValidationError::MulticastAndFlood(vni));
        }
        Ok(())
    }

    fn validate_containers(&self) -> Result<(), ValidationError> {
        // Addresses must be unique within a network; the same address in two networks is fine
        // (that is what tenant isolation is for).
        let mut addrs: BTreeMap<(u32, IpAddr), &str> = BTreeMap::new();
        let mut macs: BTreeMap<Mac, &str> = BTreeMap::new();
        for (i, c) in self.containers.iter().enumerate() {
            let container = || c.name.clone();
            if !self.hosts.iter().any(|h| h.name == c.host) {
                return Err(ValidationError::ContainerHost {
                    container: container(),
                    host: c.host.clone(),
                });
            }
            let on_kernel = self
                .hosts
                .iter()
                .any(|h| h.name == c.host && h.kind == HostKind::Kernel);
            if on_kernel && !c.labels.is_empty() {
                return Err(ValidationError::LabelsOnKernel(container()));
            }
            if !self.networks.iter().any(|n| n.vni == c.vni) {
                return Err(ValidationError::ContainerVni {
                    container: container(),
                    vni: c.vni,
                });
            }
            if !c.ip.addr.is_ipv4() || !c.ip.is_host_address() {
                return Err(ValidationError::ContainerIp {
                    container: container(),
                    ip: c.ip,
                });
            }
            let mut own = vec![c.ip.addr];
            if let Some(v6) = c.ipv6 {
                if !v6.addr.is_ipv6() || v6.addr.is_unspecified() || v6.addr.is_multicast() {
                    return Err(ValidationError::ContainerIpv6 {
                        container: container(),
                        ipv6: v6,
                    });
                }
                own.push(v6.addr);
            }
            for addr in own {
                if let Some(other) = addrs.insert((c.vni, addr), &c.name) {
                    return Err(ValidationError::AddressTaken {
                        container: container(),
                        addr,
                        other: other.to_owned(),
                        vni: c.vni,
                    });
                }
            }
            let mac = container_mac(c, i);
            if !mac.is_unicast() {
                return Err(ValidationError::MacNotUnicast {
                    container: container(),
                    mac,
                });
            }
            if let Some(other) = macs.insert(mac, &c.name) {
                return Err(ValidationError::MacTaken {
                    container: container(),
                    mac,
                    other: other.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Hosts that exchange a network's traffic must agree on the VXLAN port: both ends of a
    /// VXLAN tunnel send to and listen on one port. Other profiles have their own transport.
    fn validate_ports(&self) -> Result<(), ValidationError> {
        for n in self
            .networks
            .iter()
            .filter(|n| encap::on_vxlan_port(n.encap()))
        {
            let mut first: Option<&HostDef> = None;
            for h in self.member_hosts(n) {
                match first {
                    Some(f) if f.vxlan_port != h.vxlan_port => {
                        return Err(ValidationError::PortMismatch {
                            vni: n.vni,
                            first: f.name.clone(),
                            first_port: f.vxlan_port,
                            second: h.name.clone(),
                            second_port: h.vxlan_port,
                        })
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
