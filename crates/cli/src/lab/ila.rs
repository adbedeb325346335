//! ILA in a lab (`encap: ila` networks over `underlay: {family: ipv6}`): each nvo host gets a
//! locator /64 and every host routes the others' locators through their underlay addresses;
//! every host is told where each container's SIR address lives (a static control plane: one
//! mapping route per IPv6 container, on every host, its own containers included), and where
//! each container's IPv4 address lives (IPv4 tenants, `nvo_pipeline::l3::ila4`: one /32
//! mapping per container, the IPv4 route in the container 20 bytes under the network's MTU,
//! the IPv6 header being 20 bytes longer than IPv4's), unless the network says
//! `ila_mappings: evpn`: then the lab installs none and the nvods' EVPN speakers advertise
//! their containers (docs/ila.md, "Mappings"; BGP is configured after `up`).
//!
//! ```text
//!  host i (node ID i): ila_locator = fd00:1a:0:i::/64 (nvod routes it to its nvoila0)
//!    ip -6 route add fd00:1a:0:j::/64 via <host j's underlay address>     for every j ≠ i
//!    POST /v1/networks/VNI/routes {prefix: SIR/128, remote: fd00:1a:0:k::1}  for every
//!      IPv6 container of an ILA network VNI, k its host
//!    POST /v1/networks/VNI/routes {prefix: IPv4/32, remote: fd00:1a:0:k::1}  for every
//!      container of an ILA network (its `ip:`)
//!  in each container of an ILA network: ip route replace SUBNET dev eth0 … mtu MTU−28
//! ```

use std::net::{IpAddr, Ipv6Addr};

use nvo_api::{Client, RouteSpec};

use super::plan::{ContainerPlan, HostPlan, Plan};
use super::sys::{exec_in, ip};
use super::topology::HostKind;
use super::LabError;

/// The locators' /48: host i's locator is `fd00:1a:0:i::/64`.
const LOCATORS: u128 = 0xfd00_001a_0000_0000 << 64;

/// Whether the lab has an ILA network.
pub fn used(plan: &Plan) -> bool {
    plan.networks
        .iter()
        .any(|n| n.encap == nvo_encap::builtin::names::ILA)
}

/// Host `h`'s locator prefix (host bits zero).
pub fn locator(h: &HostPlan) -> Ipv6Addr {
    Ipv6Addr::from(LOCATORS | (u128::from(h.node_id & 0xffff) << 64))
}

/// The `ila_locator` line of `h`'s nvod configuration, when the lab uses ILA.
pub fn config_line(plan: &Plan, h: &HostPlan) -> String {
    if used(plan) {
        format!("ila_locator = \"{}/64\"\n", locator(h))
    } else {
        String::new()
    }
}

/// Before nvod starts on `h`: IPv6 forwarding on (nvod writes translated packets for the kernel
/// to route) and a route to every other host's locator through its underlay address.
pub fn host(plan: &Plan, h: &HostPlan) -> Result<(), LabError> {
    if !used(plan) {
        return Ok(());
    }
    exec_in(&h.ns, "sysctl -qw net.ipv6.conf.all.forwarding=1")?;
    for other in plan
        .hosts
        .iter()
        .filter(|o| o.name != h.name && o.kind == HostKind::Nvo)
    {
        let via = other.ipv6.addr;
        ip(
            &h.ns,
            &format!("-6 route add {}/64 via {via} dev eth0", locator(other)),
        )?;
    }
    Ok(())
}

/// After the containers: every nvo host learns where each IPv6 container of an ILA network
/// lives (SIR/128 → an address in its host's locator prefix).
pub fn mappings(plan: &Plan) -> Result<(), LabError> {
    if !used(plan) {
        return Ok(());
    }
    let ila_vnis: Vec<u32> = plan
        .networks
        .iter()
        .filter(|n| n.encap == nvo_encap::builtin::names::ILA && !n.ila_evpn)
        .map(|n| n.vni)
        .collect();
    for h in plan.hosts.iter().filter(|h| h.kind == HostKind::Nvo) {
        let client = Client::new(&h.socket);
        for c in plan.containers.iter().filter(|c| ila_vnis.contains(&c.vni)) {
            let Some(at) = plan.host(&c.host) else {
                continue;
            };
            let remote = Ipv6Addr::from(u128::from(locator(at)) | 1);
            let v6 = c.ipv6.map(|sir| format!("{}/128", sir.addr));
            let v4 = c.ip.addr.is_ipv4().then(|| format!("{}/32", c.ip.addr));
            for prefix in v6.into_iter().chain(v4) {
                let spec = RouteSpec {
                    prefix,
                    remote: IpAddr::V6(remote),
                };
                client
                    .post::<_, serde_json::Value>(&format!("/v1/networks/{}/routes", c.vni), &spec)
                    .map_err(|source| LabError::Api {
                        host: h.name.clone(),
                        source,
                    })?;
            }
        }
    }
    Ok(())
}

/// In container `c` of an ILA network (MTU `mtu`): its IPv4 subnet's route with an MTU 28
/// bytes lower, so that its IPv4 packets still fit the underlay once translated to IPv6, a
/// fragment with its Fragment Header too (`nvo_wire::siit::FRAGMENT_GROWTH`). Nothing for
/// other networks.
pub fn container(plan: &Plan, c: &ContainerPlan, mtu: u16) -> Result<(), LabError> {
    let ila = plan
        .networks
        .iter()
        .any(|n| n.vni == c.vni && n.encap == nvo_encap::builtin::names::ILA);
    if !ila || !c.ip.addr.is_ipv4() {
        return Ok(());
    }
    let (subnet, len, addr) = (c.ip.network(), c.ip.prefix, c.ip.addr);
    let mtu = mtu.saturating_sub(nvo_wire::siit::FRAGMENT_GROWTH as u16);
    ip(
        &c.ns,
        &format!(
            "route replace {subnet}/{len} dev eth0 proto kernel scope link src {addr} mtu {mtu}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::lab::topology::Topology;

    fn plan(networks: &str) -> Plan {
        let yaml = format!(
            "name: t\nunderlay: {{family: ipv6}}\nhosts: [{{name: h1}}, {{name: h2}}]\n{networks}"
        );
        let topo = Topology::parse("t.yaml", &yaml).unwrap();
        Plan::new(&topo, Path::new("/run/nvo/lab")).unwrap()
    }

    #[test]
    fn each_host_gets_its_locator_only_when_a_network_is_ila() {
        let p = plan("networks: [{vni: 900, encap: ila}]\n");
        assert!(used(&p));
        assert_eq!(
            locator(&p.hosts[1]),
            "fd00:1a:0:2::".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(
            config_line(&p, &p.hosts[0]),
            "ila_locator = \"fd00:1a:0:1::/64\"\n"
        );
        let p = plan("networks: [{vni: 900}]\n");
        assert!(!used(&p));
        assert_eq!(config_line(&p, &p.hosts[0]), "");
    }

    #[test]
    fn evpn_mappings_are_an_ila_networks_choice() {
        let p = plan(
            "networks: [{vni: 900, encap: ila, ila_mappings: evpn}, {vni: 901, encap: ila}]\n",
        );
        assert!(used(&p));
        assert!(p.networks[0].ila_evpn && !p.networks[1].ila_evpn);
        let yaml = "name: t\nunderlay: {family: ipv6}\nhosts: [{name: h1}]\n\
                    networks: [{vni: 100, ila_mappings: evpn}]\n";
        let err = Topology::parse("t.yaml", yaml).unwrap_err().to_string();
        assert!(
            err.contains("ila_mappings is for encap: ila networks only"),
            "{err}"
        );
    }
}
