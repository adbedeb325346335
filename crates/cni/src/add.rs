//! ADD: a veth pair whose container end is `CNI_IFNAME` in `CNI_NETNS` and whose host end is a
//! port of the nvod network, both at the MTU nvod chose for it; addresses and routes from the
//! IPAM plugin. A failure at any step undoes the steps before it, so a failed ADD leaves
//! neither interface, port nor address behind.

use std::path::Path;

use nvo_api::Client;

use crate::config::{Command, Env, NetConf};
use crate::error::{code, CniError};
use crate::result::{parse_cidr, CniResult, Dns, Interface};
use crate::{ipam, link, nvod};

/// What ADD has made so far, undone in reverse when a later step fails.
#[derive(Debug, Default)]
struct Made {
    veth: bool,
    port: bool,
    ipam: bool,
}

/// Runs ADD.
pub fn add(env: &Env, conf: &NetConf) -> Result<CniResult, CniError> {
    let netns = env
        .netns
        .as_deref()
        .ok_or_else(|| CniError::new(code::INVALID_ENV, "CNI_NETNS: missing"))?;
    if !netns.exists() {
        return Err(CniError::new(
            code::UNKNOWN_CONTAINER,
            format!("CNI_NETNS {}: no such network namespace", netns.display()),
        ));
    }
    let client = Client::new(&conf.socket);
    let network = nvod::network(&client, conf.vni)?;
    let host = link::host_name(&env.container_id, &env.ifname);
    if link::exists(&host, None)? {
        return Err(CniError::new(
            code::EXISTS,
            format!(
                "host interface {host} of container {} ({}) already exists",
                env.container_id, env.ifname
            ),
        )
        .details("DEL the attachment first"));
    }
    let mut made = Made::default();
    let attached = attach(env, conf, &client, (&host, netns), network.mtu, &mut made);
    if attached.is_err() {
        undo(env, conf, &client, &host, &made);
    }
    attached
}

fn attach(
    env: &Env,
    conf: &NetConf,
    client: &Client,
    (host, netns): (&str, &Path),
    mtu: u16,
    made: &mut Made,
) -> Result<CniResult, CniError> {
    let (mtu_text, netns_text) = (mtu.to_string(), netns.to_string_lossy());
    let ifname = env.ifname.as_str();
    let created = link::ip(
        &[
            "link",
            "add",
            host,
            "mtu",
            &mtu_text,
            "up",
            "type",
            "veth",
            "peer",
            "name",
            ifname,
            "mtu",
            &mtu_text,
            "netns",
            &netns_text,
        ],
        None,
    );
    if let Err(e) = created {
        if link::exists(ifname, Some(netns))? {
            return Err(CniError::new(
                code::EXISTS,
                format!("interface {ifname} already exists in {}", netns.display()),
            ));
        }
        return Err(e);
    }
    made.veth = true;
    nvod::add_port(client, host, conf.vni)?;
    made.port = true;
    let answer = ipam::exec(conf, env, Command::Add)?;
    made.ipam = true;
    let ipam_error =
        |why: String| CniError::new(code::IPAM, format!("ipam plugin {}: {why}", conf.ipam_type));
    let addressed: CniResult =
        serde_json::from_value(answer.ok_or_else(|| ipam_error("ADD printed no result".into()))?)
            .map_err(|e| ipam_error(format!("its result is not a CNI result: {e}")))?;
    if addressed.ips.is_empty() {
        return Err(ipam_error("ADD gave no address".into()));
    }
    ip_batch_for_container(&addressed, ifname, netns)?;
    let inner_mac = link::mac(ifname, Some(netns))?.ok_or_else(|| {
        CniError::new(code::LINK, format!("{ifname} vanished from the container"))
    })?;
    let outer_mac = link::mac(host, None)?
        .ok_or_else(|| CniError::new(code::LINK, format!("{host} vanished from the host")))?;
    let with_mtu = (conf.cni_version != "1.0.0").then_some(u32::from(mtu));
    let made = [
        Interface {
            name: host.to_owned(),
            mac: outer_mac,
            mtu: with_mtu,
            sandbox: String::new(),
        },
        Interface {
            name: ifname.to_owned(),
            mac: inner_mac,
            mtu: with_mtu,
            sandbox: netns.to_string_lossy().into_owned(),
        },
    ];
    Ok(merge(
        conf.prev_result.clone(),
        made,
        addressed,
        &conf.cni_version,
    ))
}

/// The result of ADD: what a plugin before nvo-cni in the chain gave (`prevResult`, if any),
/// then the two interfaces made here and the IPAM plugin's addresses — pointing at the
/// container end — routes and DNS (the IPAM plugin's DNS if it gave any, else the previous).
fn merge(
    prev: Option<CniResult>,
    made: [Interface; 2],
    addressed: CniResult,
    cni_version: &str,
) -> CniResult {
    let mut result = prev.unwrap_or_default();
    result.cni_version = cni_version.to_owned();
    let container = result.interfaces.len() + 1;
    result.interfaces.extend(made);
    result.ips.extend(addressed.ips.into_iter().map(|mut ip| {
        ip.interface = Some(container);
        ip
    }));
    result.routes.extend(addressed.routes);
    if addressed.dns != Dns::default() {
        result.dns = addressed.dns;
    }
    result
}

/// Addresses, link up, routes: one `ip -batch` in the container's namespace.
fn ip_batch_for_container(
    addressed: &CniResult,
    ifname: &str,
    netns: &Path,
) -> Result<(), CniError> {
    link::ip_batch(&container_commands(addressed, ifname)?, Some(netns))
}

/// The `ip -batch` lines that give `ifname` the IPAM result's addresses and routes.
fn container_commands(addressed: &CniResult, ifname: &str) -> Result<Vec<String>, CniError> {
    let mut lines = Vec::new();
    for ip in &addressed.ips {
        let (addr, _) = parse_cidr(&ip.address).ok_or_else(|| {
            CniError::new(
                code::IPAM,
                format!("ipam address {:?} is not CIDR", ip.address),
            )
        })?;
        let nodad = if addr.is_ipv6() { " nodad" } else { "" };
        lines.push(format!("addr add {} dev {ifname}{nodad}", ip.address));
    }
    lines.push(format!("link set {ifname} up"));
    for route in &addressed.routes {
        let (dst, _) = parse_cidr(&route.dst).ok_or_else(|| {
            CniError::new(
                code::IPAM,
                format!("ipam route {:?} is not CIDR", route.dst),
            )
        })?;
        // A route without a gateway goes via its family's gateway, as the reference plugins do.
        let gw = route.gw.or_else(|| {
            addressed
                .ips
                .iter()
                .filter_map(|ip| ip.gateway)
                .find(|g| g.is_ipv4() == dst.is_ipv4())
        });
        lines.push(match gw {
            Some(gw) => format!("route add {} via {gw} dev {ifname}", route.dst),
            None => format!("route add {} dev {ifname}", route.dst),
        });
    }
    Ok(lines)
}

/// Undoes a failed ADD; each step is attempted even if another fails, and what cannot be
/// undone is said on standard error (the runtime logs it) — the error answer stays ADD's own.
fn undo(env: &Env, conf: &NetConf, client: &Client, host: &str, made: &Made) {
    if made.ipam {
        if let Err(e) = ipam::exec(conf, env, Command::Del) {
            eprintln!("nvo-cni: rolling back ADD: {e}");
        }
    }
    if made.port {
        if let Err(e) = nvod::delete_port(client, host) {
            eprintln!("nvo-cni: rolling back ADD: {e}");
        }
    }
    if made.veth {
        if let Err(e) = link::remove(host) {
            eprintln!("nvo-cni: rolling back ADD: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{IpConfig, Route};

    #[test]
    fn container_commands_follow_the_ipam_result() {
        let addressed = CniResult {
            ips: vec![
                IpConfig {
                    address: "10.0.0.5/24".into(),
                    gateway: Some("10.0.0.1".parse().unwrap()),
                    interface: None,
                },
                IpConfig {
                    address: "fd00::5/64".into(),
                    gateway: None,
                    interface: None,
                },
            ],
            routes: vec![
                Route {
                    dst: "0.0.0.0/0".into(),
                    gw: None,
                },
                Route {
                    dst: "10.9.0.0/16".into(),
                    gw: Some("10.0.0.254".parse().unwrap()),
                },
                Route {
                    dst: "fd01::/64".into(),
                    gw: None,
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            container_commands(&addressed, "eth0").unwrap(),
            [
                "addr add 10.0.0.5/24 dev eth0",
                "addr add fd00::5/64 dev eth0 nodad",
                "link set eth0 up",
                "route add 0.0.0.0/0 via 10.0.0.1 dev eth0",
                "route add 10.9.0.0/16 via 10.0.0.254 dev eth0",
                "route add fd01::/64 dev eth0",
            ]
        );
    }

    #[test]
    fn result_follows_a_previous_plugins_result() {
        let iface = |name: &str, sandbox: &str| Interface {
            name: name.into(),
            mac: "02:00:00:00:00:01".into(),
            mtu: None,
            sandbox: sandbox.into(),
        };
        let ours = CniResult {
            ips: vec![IpConfig {
                address: "10.0.0.5/24".into(),
                ..Default::default()
            }],
            routes: vec![Route {
                dst: "10.9.0.0/16".into(),
                gw: None,
            }],
            ..Default::default()
        };
        let made = || [iface("nvc0", ""), iface("eth0", "/ns")];
        // First in the chain: interfaces 0 (host) and 1 (container).
        let alone = merge(None, made(), ours.clone(), "1.0.0");
        assert_eq!(alone.interfaces.len(), 2);
        assert_eq!(alone.ips[0].interface, Some(1));
        assert_eq!(alone.cni_version, "1.0.0");
        // After a plugin that made one interface and an address: ours come after its own.
        let prev = CniResult {
            cni_version: "1.0.0".into(),
            interfaces: vec![iface("lo0", "/ns")],
            ips: vec![IpConfig {
                address: "127.0.0.1/8".into(),
                gateway: None,
                interface: Some(0),
            }],
            dns: Dns {
                nameservers: vec!["192.0.2.53".into()],
                ..Default::default()
            },
            ..Default::default()
        };
        let chained = merge(Some(prev), made(), ours, "1.1.0");
        let names: Vec<_> = chained.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["lo0", "nvc0", "eth0"]);
        assert_eq!(chained.ips[0].interface, Some(0));
        assert_eq!(chained.ips[1].interface, Some(2));
        assert_eq!(chained.routes.len(), 1);
        assert_eq!(chained.dns.nameservers, ["192.0.2.53"]);
        assert_eq!(chained.cni_version, "1.1.0");
    }

    #[test]
    fn ipam_garbage_is_refused_before_any_command() {
        let bad = CniResult {
            ips: vec![IpConfig {
                address: "10.0.0.5".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            container_commands(&bad, "eth0").unwrap_err().code,
            code::IPAM
        );
        let bad_route = CniResult {
            ips: vec![IpConfig {
                address: "10.0.0.5/24".into(),
                ..Default::default()
            }],
            routes: vec![Route {
                dst: "default; link del eth0".into(),
                gw: None,
            }],
            ..Default::default()
        };
        assert_eq!(
            container_commands(&bad_route, "eth0").unwrap_err().code,
            code::IPAM
        );
    }
}
