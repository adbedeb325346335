//! An L3 network's tables: routes by prefix and the neighbours its containers announced. Kept
//! apart from the forwarding in `l3` so that `network` can own them without importing it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use crate::{Mac, PortId};

/// Most routes one L3 network holds.
pub const MAX_ROUTES: usize = 1024;

/// A route: IPv4 prefix → the remote tunnel end behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Route {
    /// The prefix (host bits zero).
    pub prefix: Ipv4Addr,
    /// Its length, 0..=32.
    pub len: u8,
    /// The remote.
    pub remote: IpAddr,
}

impl Route {
    pub(crate) fn contains(&self, ip: Ipv4Addr) -> bool {
        mask(self.len) & u32::from(ip) == u32::from(self.prefix)
    }
}

/// The netmask of a prefix length.
pub fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// An L3 network's tables.
#[derive(Debug, Default)]
pub(crate) struct L3Tables {
    pub(crate) routes: Vec<Route>,
    pub(crate) neighbours: HashMap<Ipv4Addr, (PortId, Mac)>,
}

impl L3Tables {
    /// The longest-prefix route for `ip`.
    pub(super) fn route(&self, ip: Ipv4Addr) -> Option<&Route> {
        self.routes
            .iter()
            .filter(|r| r.contains(ip))
            .max_by_key(|r| r.len)
    }

    pub(super) fn learn(&mut self, ip: Ipv4Addr, port: PortId, mac: Mac, max: usize) {
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return;
        }
        if self.neighbours.len() < max || self.neighbours.contains_key(&ip) {
            self.neighbours.insert(ip, (port, mac));
        }
    }

    /// Forgets what a port's containers announced (the port is going).
    pub(crate) fn forget_port(&mut self, port: PortId) {
        self.neighbours.retain(|_, (p, _)| *p != port);
    }
}
