//! An L3 network's tables: routes by prefix (IPv4 and IPv6) and the neighbours its containers
//! announced. Kept apart from the forwarding in `l3` so that `network` can own them without
//! importing it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::{Mac, PortId};

/// Most routes one L3 network holds (IPv4 and IPv6 together).
pub const MAX_ROUTES: usize = 1024;

/// Most SIR prefixes an ILA network translates received packets back with (`l3::ila`).
pub const MAX_SIR_PREFIXES: usize = 64;

/// A route: IPv4 or IPv6 prefix → the remote tunnel end behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Route {
    /// The prefix (host bits zero).
    pub prefix: IpAddr,
    /// Its length, 0..=32 for IPv4, 0..=128 for IPv6.
    pub len: u8,
    /// The remote.
    pub remote: IpAddr,
}

impl Route {
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        prefix_of(ip, self.len) == Some(self.prefix)
    }
}

/// The netmask of an IPv4 prefix length.
pub fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// The netmask of an IPv6 prefix length.
fn mask6(len: u8) -> u128 {
    match len {
        0 => 0,
        l => u128::MAX << (128 - u32::from(l.min(128))),
    }
}

/// `addr` with every bit past the first `len` cleared: the prefix `addr/len` names; None when
/// `len` is longer than the family's address (32, 128).
pub fn prefix_of(addr: IpAddr, len: u8) -> Option<IpAddr> {
    match addr {
        IpAddr::V4(a) if len <= 32 => Some(Ipv4Addr::from(u32::from(a) & mask(len)).into()),
        IpAddr::V6(a) if len <= 128 => Some(Ipv6Addr::from(u128::from(a) & mask6(len)).into()),
        _ => None,
    }
}

/// An L3 network's tables.
#[derive(Debug, Default)]
pub(crate) struct L3Tables {
    pub(crate) routes: Vec<Route>,
    /// Both families in one table, bounded together by the network's `max_learned`.
    pub(crate) neighbours: HashMap<IpAddr, (PortId, Mac)>,
    /// An ILA network (`l3::ila`): routes are identifier → locator mappings, and packets
    /// leave translated, without a tunnel.
    pub(crate) ila: bool,
    /// This host's ILA locator (upper 64 bits), copied from the pipeline's.
    pub(crate) ila_locator: Option<u64>,
    /// The upper 64 bits of the IPv6 routes (/64 or longer) and neighbours seen, without
    /// repeats, at most [`MAX_SIR_PREFIXES`]; never shrinks (a stale one costs one lookup).
    pub(crate) sir_prefixes: Vec<u64>,
    /// Bumped whenever a neighbour is added, moves (port or MAC) or goes: an ILA network's
    /// neighbours are local hosts the EVPN speaker advertises (`Pipeline::local_hosts`).
    pub(crate) changes: u64,
}

impl L3Tables {
    /// The longest-prefix route for `ip` (a route of the other family never matches).
    pub(super) fn route(&self, ip: IpAddr) -> Option<&Route> {
        self.routes
            .iter()
            .filter(|r| r.contains(ip))
            .max_by_key(|r| r.len)
    }

    /// Learns that `ip` is at `mac` behind `port`: a known address is replaced, a new one taken
    /// while the table holds fewer than `max`. Addresses no container can own (unspecified,
    /// broadcast, multicast) are not learned.
    pub(crate) fn learn(&mut self, ip: IpAddr, port: PortId, mac: Mac, max: usize) {
        let owned = match ip {
            IpAddr::V4(v4) => !(v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast()),
            IpAddr::V6(v6) => !(v6.is_unspecified() || v6.is_multicast()),
        };
        if owned && (self.neighbours.len() < max || self.neighbours.contains_key(&ip)) {
            if self.neighbours.insert(ip, (port, mac)) != Some((port, mac)) {
                self.changes += 1;
            }
            if let IpAddr::V6(v6) = ip {
                self.note_sir_prefix(v6);
            }
        }
    }

    /// Notes the upper 64 bits of `addr` as a SIR prefix (see `sir_prefixes`).
    pub(crate) fn note_sir_prefix(&mut self, addr: Ipv6Addr) {
        let prefix = (u128::from(addr) >> 64) as u64;
        if !self.sir_prefixes.contains(&prefix) && self.sir_prefixes.len() < MAX_SIR_PREFIXES {
            self.sir_prefixes.push(prefix);
        }
    }

    /// Forgets the addresses `mac` announced (it moved elsewhere); whether there were any.
    pub(crate) fn forget_mac(&mut self, mac: Mac) -> bool {
        let before = self.neighbours.len();
        self.neighbours.retain(|_, (_, m)| *m != mac);
        let gone = self.neighbours.len() != before;
        if gone {
            self.changes += 1;
        }
        gone
    }

    /// Forgets what a port's containers announced (the port is going).
    pub(crate) fn forget_port(&mut self, port: PortId) {
        let before = self.neighbours.len();
        self.neighbours.retain(|_, (p, _)| *p != port);
        if self.neighbours.len() != before {
            self.changes += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }

    /// The longest-prefix match against a naive reference: every prefix length of the address,
    /// longest first, looked up exactly.
    #[test]
    fn longest_prefix_matches_a_naive_reference() {
        let remote = ip("192.0.2.1");
        let mut t = L3Tables::default();
        for (p, len) in [
            ("fd00::", 16),
            ("fd00:1::", 32),
            ("fd00:1::", 64),
            ("fd00:1::7", 128),
            ("::", 0),
            ("10.0.0.0", 8),
        ] {
            t.routes.push(Route {
                prefix: ip(p),
                len,
                remote,
            });
        }
        for probe in [
            "fd00:1::7",
            "fd00:1::8",
            "fd00:1:0:1::1",
            "fd00:2::1",
            "2001:db8::1",
            "10.1.2.3",
            "11.0.0.1",
        ] {
            let a = ip(probe);
            let max = if a.is_ipv4() { 32 } else { 128 };
            let naive = (0..=max).rev().find_map(|len| {
                t.routes
                    .iter()
                    .find(|r| r.len == len && prefix_of(a, len) == Some(r.prefix))
            });
            assert_eq!(t.route(a), naive, "{probe}");
        }
        assert_eq!(t.route(ip("fd00:1::7")).map(|r| r.len), Some(128));
        assert_eq!(t.route(ip("2001:db8::1")).map(|r| r.len), Some(0));
        // ::/0 is IPv6's default; IPv4 has none here.
        assert_eq!(t.route(ip("11.0.0.1")), None);
    }

    #[test]
    fn neighbours_are_bounded_across_families() {
        let mut t = L3Tables::default();
        let (p, m) = (PortId(1), Mac([2, 0, 0, 0, 0, 1]));
        t.learn(ip("10.0.0.1"), p, m, 2);
        t.learn(ip("fd00::1"), p, m, 2);
        t.learn(ip("fd00::2"), p, m, 2);
        assert_eq!(t.neighbours.len(), 2);
        assert!(!t.neighbours.contains_key(&ip("fd00::2")));
        // A known address moves even when the table is full.
        t.learn(ip("fd00::1"), PortId(2), m, 2);
        assert_eq!(t.neighbours[&ip("fd00::1")].0, PortId(2));
        for never in ["::", "ff02::1", "0.0.0.0", "255.255.255.255", "224.0.0.1"] {
            t.learn(ip(never), p, m, 10);
            assert!(!t.neighbours.contains_key(&ip(never)), "{never}");
        }
    }

    #[test]
    fn prefix_of_clears_host_bits() {
        assert_eq!(prefix_of(ip("fd00:1::7"), 64), Some(ip("fd00:1::")));
        assert_eq!(prefix_of(ip("fd00:1::7"), 129), None);
        assert_eq!(prefix_of(ip("10.1.2.3"), 33), None);
        assert_eq!(prefix_of(ip("10.1.2.3"), 16), Some(ip("10.1.0.0")));
    }
}
