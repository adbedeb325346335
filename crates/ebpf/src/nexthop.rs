//! Next hops on the underlay, resolved from the host's own tables: the route to a remote
//! (`/proc/net/route`, the main table, longest prefix) and the neighbour entry of its gateway or
//! of the remote itself (`/proc/net/arp`, complete entries only). The programs read them from
//! the `nexthops` map; a remote without one is resolved by the kernel (bpf_redirect_neigh) or
//! sent through nvod's socket, which makes the host resolve it for the next round.
//!
//! Read through `/proc/thread-self/net`: the tables of the calling thread's namespace.

use std::collections::HashMap;
use std::fs;
use std::net::Ipv4Addr;

/// One IPv4 route of the main table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Output interface.
    pub iface: String,
    /// Destination prefix.
    pub dst: Ipv4Addr,
    /// Gateway (unspecified: on-link).
    pub gateway: Ipv4Addr,
    /// Prefix mask.
    pub mask: Ipv4Addr,
}

/// `/proc/net/route` prints each address's four bytes as one host-order number in hex.
fn proc_addr(hex: &str) -> Option<Ipv4Addr> {
    let v = u32::from_str_radix(hex, 16).ok()?;
    Some(Ipv4Addr::from(v.to_ne_bytes()))
}

/// Parses `/proc/net/route` text: routes that are up (flag RTF_UP).
pub fn parse_routes(text: &str) -> Vec<Route> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
            if flags & 1 == 0 {
                return None;
            }
            Some(Route {
                iface: f.first()?.to_string(),
                dst: proc_addr(f.get(1)?)?,
                gateway: proc_addr(f.get(2)?)?,
                mask: proc_addr(f.get(7)?)?,
            })
        })
        .collect()
}

/// Parses `/proc/net/arp` text: (address, interface) → MAC of complete entries.
pub fn parse_neighbours(text: &str) -> HashMap<(Ipv4Addr, String), [u8; 6]> {
    let mut out = HashMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(ip), Some(flags), Some(mac), Some(dev)) =
            (f.first(), f.get(2), f.get(3), f.get(5))
        else {
            continue;
        };
        let complete =
            u32::from_str_radix(flags.trim_start_matches("0x"), 16).is_ok_and(|v| v & 2 != 0);
        let (Ok(ip), true) = (ip.parse::<Ipv4Addr>(), complete) else {
            continue;
        };
        let mut m = [0u8; 6];
        let parts: Vec<u8> = mac
            .split(':')
            .filter_map(|p| u8::from_str_radix(p, 16).ok())
            .collect();
        if parts.len() != 6 {
            continue;
        }
        m.copy_from_slice(&parts);
        out.insert((ip, dev.to_string()), m);
    }
    out
}

/// The route `remote` takes: longest prefix, then the first listed.
pub fn route_to(routes: &[Route], remote: Ipv4Addr) -> Option<&Route> {
    let r = u32::from(remote);
    routes
        .iter()
        .filter(|rt| r & u32::from(rt.mask) == u32::from(rt.dst))
        .max_by_key(|rt| u32::from(rt.mask).count_ones())
}

/// The host's routes and neighbours, read once, to resolve several remotes.
#[derive(Debug, Default)]
pub struct Tables {
    routes: Vec<Route>,
    neighbours: HashMap<(Ipv4Addr, String), [u8; 6]>,
}

impl Tables {
    /// Reads the calling thread's namespace's tables.
    pub fn read() -> Tables {
        let read =
            |f: &str| fs::read_to_string(format!("/proc/thread-self/net/{f}")).unwrap_or_default();
        Tables {
            routes: parse_routes(&read("route")),
            neighbours: parse_neighbours(&read("arp")),
        }
    }

    /// (interface, MAC of the next hop) for `remote`, when the host has resolved it.
    pub fn resolve(&self, remote: Ipv4Addr) -> Option<(String, [u8; 6])> {
        let rt = route_to(&self.routes, remote)?;
        let hop = if rt.gateway.is_unspecified() {
            remote
        } else {
            rt.gateway
        };
        let mac = self.neighbours.get(&(hop, rt.iface.clone()))?;
        Some((rt.iface.clone(), *mac))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t0164A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t0064A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
ul0\t0000090A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";

    const ARP: &str =
        "IP address       HW type     Flags       HW address            Mask     Device\n\
192.168.100.1    0x1         0x2         02:00:00:00:00:01     *        eth0\n\
10.9.0.2         0x1         0x6         02:00:00:00:09:02     *        ul0\n\
10.9.0.3         0x1         0x0         00:00:00:00:00:00     *        ul0\n";

    #[test]
    fn resolves_on_link_and_through_the_gateway() {
        let t = Tables {
            routes: parse_routes(ROUTE),
            neighbours: parse_neighbours(ARP),
        };
        assert_eq!(
            t.resolve(Ipv4Addr::new(10, 9, 0, 2)),
            Some(("ul0".into(), [2, 0, 0, 0, 9, 2]))
        );
        // Incomplete: not resolved yet.
        assert_eq!(t.resolve(Ipv4Addr::new(10, 9, 0, 3)), None);
        // Off-link: the default gateway's MAC.
        assert_eq!(
            t.resolve(Ipv4Addr::new(198, 51, 100, 7)),
            Some(("eth0".into(), [2, 0, 0, 0, 0, 1]))
        );
        assert_eq!(
            route_to(&t.routes, Ipv4Addr::new(192, 168, 100, 9))
                .unwrap()
                .iface,
            "eth0"
        );
    }
}
