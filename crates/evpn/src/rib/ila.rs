//! ILA networks in the table (docs/ila.md, "Mappings"): this node's type 2 routes of an ILA
//! network carry, as next hop, an address of this host's ILA locator /64 instead of the VTEP,
//! so that a receiver takes the locator from the next hop's upper 64 bits (an IPv6 next hop in
//! MP_REACH_NLRI, 16 bytes: RFC 4760 §3, as RFC 8365 §5.1.3 allows for an IPv6 underlay).
//! Mobility is as for every network (RFC 7432 §15): a container that shows up on another host
//! is advertised there with a higher sequence number and wins.

use std::net::{IpAddr, Ipv6Addr};

use super::Rib;

impl Rib {
    /// The next hop of this node's routes of network `vni`: the settings' (the VTEP), except on
    /// an ILA network, where a receiver takes the locator from the next hop's upper 64 bits
    /// (docs/ila.md, "Mappings"): there it is `next_hop` when that lies in this host's locator
    /// /64 (the operator chose it), else the locator's `::1`. The whole /64 is routed to nvod,
    /// so no device needs to hold the address.
    pub fn next_hop(&self, vni: u32) -> IpAddr {
        let vtep = self.settings.next_hop;
        match (self.ila.get(&vni), vtep) {
            (None, _) => vtep,
            (Some(&locator), IpAddr::V6(a)) if upper64(a) == upper64(locator) => vtep,
            (Some(&locator), _) => IpAddr::V6(Ipv6Addr::from(u128::from(locator) | 1)),
        }
    }

    /// Whether `vtep` is a next hop of this node's own routes of network `vni` (one come back
    /// through a route reflector).
    pub(super) fn ours(&self, vni: u32, vtep: IpAddr) -> bool {
        vtep == self.settings.next_hop || vtep == self.next_hop(vni)
    }
}

/// The upper 64 bits of an IPv6 address: its /64 (an ILA locator).
fn upper64(a: Ipv6Addr) -> u64 {
    (u128::from(a) >> 64) as u64
}
