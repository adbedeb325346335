//! Planning a lab: every namespace, interface name, address, file and flood list, computed from
//! a validated topology before anything is created. Pure: `nvo lab up` only carries a plan out,
//! and `nvo lab down FILE` recomputes the namespaces to remove from the same plan.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::addr::{Cidr, Mac};
use crate::lab::topology::{container_mac, Family, HostKind, NvodExtras, Topology, UNDERLAY_NODE};
use crate::lab::LabError;

/// Where labs keep their state, one directory per lab.
pub const RUN_ROOT: &str = "/run/nvo/lab";
/// Longest interface name Linux accepts (IFNAMSIZ minus the terminating NUL).
pub const IFNAME_MAX: usize = 15;
/// The bridge in the underlay namespace that every host's eth0 hangs off.
pub const UNDERLAY_BRIDGE: &str = "br0";

/// One host (VTEP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlan {
    /// Node name.
    pub name: String,
    /// Its namespace.
    pub ns: String,
    /// nvo or kernel.
    pub kind: HostKind,
    /// Kernel hosts: learning override.
    pub learning: Option<bool>,
    /// nvo hosts: extra keys of nvod's configuration.
    pub nvod: NvodExtras,
    /// VXLAN UDP port.
    pub vxlan_port: u16,
    /// nvod's node ID: the host's 1-based position.
    pub node_id: u32,
    /// eth0's IPv4 address and prefix.
    pub ipv4: Cidr,
    /// eth0's IPv6 address and prefix.
    pub ipv6: Cidr,
    /// The address tunnels use (ipv4 or ipv6 per the underlay family).
    pub locator: IpAddr,
    /// The veth end in the underlay namespace.
    pub uplink: String,
    /// nvod's configuration file.
    pub config: PathBuf,
    /// nvod's API socket.
    pub socket: PathBuf,
    /// nvod's state directory.
    pub state_dir: PathBuf,
    /// nvod's log.
    pub log: PathBuf,
}

/// One tenant network, as every host creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPlan {
    /// VNI.
    pub vni: u32,
    /// Label.
    pub name: Option<String>,
    /// Learning (false: none at all).
    pub learning: bool,
    /// Learning from local ports, when the topology sets it.
    pub learn_ports: Option<bool>,
    /// Learning from tunnels, when the topology sets it.
    pub learn_tunnels: Option<bool>,
    /// The encapsulation profile's name.
    pub encap: String,
    /// The profile's parameters.
    pub params: BTreeMap<String, u64>,
    /// An L3 network (None: nvod's default for the profile).
    pub l3: Option<bool>,
    /// Tenant MTU when the topology sets one; otherwise each nvod picks it from the profile's
    /// overhead, and `up` reads it back for the containers' eth0.
    pub mtu: Option<u16>,
    /// Tenant MTU on kernel hosts (VXLAN): the topology's, or the underlay's minus VXLAN's
    /// overhead.
    pub kernel_mtu: u16,
    /// Ageing time of learned entries, when the topology sets it.
    pub ageing_s: Option<u32>,
    /// Learning limit, when the topology sets it.
    pub max_learned: Option<u32>,
    /// Learning limit per port, when the topology sets it.
    pub max_learned_per_port: Option<u32>,
    /// Which remotes are accepted, when the topology says.
    pub accept_remotes: Option<nvo_api::AcceptRemotes>,
    /// The underlay multicast group BUM frames go to, if the network uses one.
    pub multicast: Option<IpAddr>,
    /// Per host name: the locators it floods to (none with a multicast group).
    pub flood: BTreeMap<String, Vec<IpAddr>>,
    /// An ILA network's mappings come from EVPN (`ila_mappings: evpn`): the lab installs none.
    pub ila_evpn: bool,
}

impl NetworkPlan {
    /// The locators `host` floods this network's frames to.
    pub fn flood_for(&self, host: &str) -> &[IpAddr] {
        self.flood.get(host).map(Vec::as_slice).unwrap_or_default()
    }
}

/// One container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerPlan {
    /// Node name.
    pub name: String,
    /// Its namespace.
    pub ns: String,
    /// The host it hangs off.
    pub host: String,
    /// The host's namespace.
    pub host_ns: String,
    /// Its network.
    pub vni: u32,
    /// eth0's IPv4 address.
    pub ip: Cidr,
    /// eth0's IPv6 address.
    pub ipv6: Option<Cidr>,
    /// eth0's MAC.
    pub mac: Mac,
    /// The veth end in the host namespace (the nvod port or the bridge port).
    pub port: String,
    /// Its port's labels (nvo hosts).
    pub labels: std::collections::BTreeMap<String, String>,
}

/// Everything a lab is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Lab name.
    pub name: String,
    /// `RUN_ROOT/<name>`.
    pub run_dir: PathBuf,
    /// Tunnel family.
    pub family: Family,
    /// Underlay MTU.
    pub underlay_mtu: u16,
    /// The underlay namespace.
    pub underlay_ns: String,
    /// Hosts, in topology order.
    pub hosts: Vec<HostPlan>,
    /// Networks.
    pub networks: Vec<NetworkPlan>,
    /// Containers.
    pub containers: Vec<ContainerPlan>,
}

/// The namespace of a lab's node.
pub fn namespace(lab: &str, node: &str) -> String {
    format!("nvo-{lab}-{node}")
}

/// An interface name `prefix + name` cut to [`IFNAME_MAX`] and made unique among `taken` with a
/// numeric suffix; the result is added to `taken`.
pub fn ifname(prefix: &str, name: &str, taken: &mut BTreeSet<String>) -> String {
    let whole = format!("{prefix}{name}");
    if whole.len() <= IFNAME_MAX && taken.insert(whole.clone()) {
        return whole;
    }
    for n in 1u32.. {
        let suffix = format!("-{n}");
        let keep = IFNAME_MAX.saturating_sub(prefix.len() + suffix.len());
        let cut: String = name.chars().take(keep).collect();
        let candidate = format!("{prefix}{cut}{suffix}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
    }
    whole // unreachable in practice: u32 suffixes outnumber any lab
}

/// Why a validated topology still cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A container in a VNI no network has.
    #[error("container {container}: vni {vni} is not in networks")]
    ContainerVni {
        /// The container.
        container: String,
        /// Its VNI.
        vni: u32,
    },
    /// An underlay prefix too small for a host.
    #[error("underlay prefix {prefix} has no address for host {host}")]
    NoHostAddress {
        /// The prefix.
        prefix: Cidr,
        /// The host.
        host: String,
    },
}

impl Plan {
    /// Plans a validated topology with its state under `root` (normally [`RUN_ROOT`]).
    pub fn new(topo: &Topology, root: &Path) -> Result<Plan, PlanError> {
        let run_dir = root.join(&topo.name);
        let hosts = plan_hosts(topo, &run_dir)?;
        let locators: BTreeMap<&str, IpAddr> =
            hosts.iter().map(|h| (h.name.as_str(), h.locator)).collect();
        let networks = topo
            .networks
            .iter()
            .map(|n| {
                // A network with a group floods to it, to no host list.
                let members = match n.multicast {
                    Some(_) => Vec::new(),
                    None => topo.flood_hosts(n),
                };
                let flood = hosts
                    .iter()
                    .map(|h| {
                        let others = members
                            .iter()
                            .filter(|m| **m != h.name)
                            .filter_map(|m| locators.get(m.as_str()).copied())
                            .collect();
                        (h.name.clone(), others)
                    })
                    .collect();
                NetworkPlan {
                    vni: n.vni,
                    name: n.name.clone(),
                    learning: n.learning,
                    learn_ports: n.learn_ports,
                    learn_tunnels: n.learn_tunnels,
                    encap: n.encap().to_owned(),
                    params: n.params.clone(),
                    l3: n.l3,
                    mtu: n.mtu,
                    kernel_mtu: topo.vxlan_tenant_mtu(n),
                    ageing_s: n.ageing_s,
                    max_learned: n.max_learned,
                    max_learned_per_port: n.max_learned_per_port,
                    accept_remotes: n.accept_remotes,
                    multicast: n.multicast,
                    flood,
                    ila_evpn: n.ila_mappings == Some(super::topology::IlaMappings::Evpn),
                }
            })
            .collect::<Vec<_>>();
        let mut ports: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut containers = Vec::new();
        for (i, c) in topo.containers.iter().enumerate() {
            if !networks.iter().any(|n| n.vni == c.vni) {
                return Err(PlanError::ContainerVni {
                    container: c.name.clone(),
                    vni: c.vni,
                });
            }
            containers.push(ContainerPlan {
                name: c.name.clone(),
                ns: namespace(&topo.name, &c.name),
                host: c.host.clone(),
                host_ns: namespace(&topo.name, &c.host),
                vni: c.vni,
                ip: c.ip,
                ipv6: c.ipv6,
                mac: container_mac(c, i),
                port: ifname("c-", &c.name, ports.entry(c.host.as_str()).or_default()),
                labels: c.labels.clone(),
            });
        }
        Ok(Plan {
            name: topo.name.clone(),
            run_dir,
            family: topo.underlay.family,
            underlay_mtu: topo.underlay.mtu,
            underlay_ns: namespace(&topo.name, UNDERLAY_NODE),
            hosts,
            networks,
            containers,
        })
    }

    /// Every namespace of the lab: the underlay, the hosts, the containers.
    pub fn namespaces(&self) -> Vec<String> {
        let hosts = self.hosts.iter().map(|h| h.ns.clone());
        let containers = self.containers.iter().map(|c| c.ns.clone());
        std::iter::once(self.underlay_ns.clone())
            .chain(hosts)
            .chain(containers)
            .collect()
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&HostPlan> {
        self.hosts.iter().find(|h| h.name == name)
    }
}

fn plan_hosts(topo: &Topology, run_dir: &Path) -> Result<Vec<HostPlan>, PlanError> {
    let u = &topo.underlay;
    let mut uplinks = BTreeSet::new();
    let mut hosts = Vec::new();
    for (i, h) in topo.hosts.iter().enumerate() {
        let nth = |prefix: Cidr| {
            prefix
                .nth(i as u128 + 1)
                .map(|addr| Cidr {
                    addr,
                    prefix: prefix.prefix,
                })
                .ok_or_else(|| PlanError::NoHostAddress {
                    prefix,
                    host: h.name.clone(),
                })
        };
        let (ipv4, ipv6) = (nth(u.ipv4)?, nth(u.ipv6)?);
        let file = |ext: &str| run_dir.join(format!("{}.{ext}", h.name));
        hosts.push(HostPlan {
            name: h.name.clone(),
            ns: namespace(&topo.name, &h.name),
            kind: h.kind,
            learning: h.learning,
            nvod: h.nvod.clone(),
            vxlan_port: h.vxlan_port,
            node_id: u32::try_from(i + 1).unwrap_or(u32::MAX),
            ipv4,
            ipv6,
            locator: match u.family {
                Family::Ipv4 => ipv4.addr,
                Family::Ipv6 => ipv6.addr,
            },
            uplink: ifname("u-", &h.name, &mut uplinks),
            config: file("toml"),
            socket: file("sock"),
            state_dir: file("state"),
            log: file("log"),
        });
    }
    Ok(hosts)
}

/// Reads, checks and plans a topology file.
pub fn load(file: &Path) -> Result<(Topology, Plan), LabError> {
    let text = std::fs::read_to_string(file).map_err(|source| LabError::Read {
        path: file.to_owned(),
        source,
    })?;
    let name = file.display().to_string();
    let topo = Topology::parse(&name, &text)?;
    let plan = Plan::new(&topo, Path::new(RUN_ROOT))
        .map_err(|source| LabError::Plan { file: name, source })?;
    Ok((topo, plan))
}

#[cfg(test)]
mod tests;
