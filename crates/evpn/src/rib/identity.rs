//! Identities in EVPN routes (issue 18): a local host's group policy ID goes out in its type 2
//! routes as the Group Policy ID extended community (nvo_bgp::community), and the group the
//! winning remote route of a MAC gives each of its IPs is installed for the identity policy:
//! the receiving pipeline takes it as the source identity of packets from that address when
//! they carry none (a profile without a group field: VXLAN, STT, …).
//!
//! ```text
//!  set_local([LocalRoute { vni, mac, ips, group }])  ─► Local.group ─► OutAttrs.group
//!                                                        ─► advert.rs: the community
//!  received route: Received.group ─► decide_mac: the winner's IPs with their groups
//!     sync_identities: group ≠ 0, not installed as such   ─► Install::IdentitySet
//!                      installed, no longer (or 0)        ─► Install::IdentityRemove
//! ```

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_pipeline::Mac;

use super::{Changes, Install, Rib};

/// A local host as the data path reports it: what its routes advertise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRoute {
    /// The network.
    pub vni: u32,
    /// The MAC.
    pub mac: Mac,
    /// Its addresses.
    pub ips: Vec<IpAddr>,
    /// Its group under the network's identity policy (0: none, no community).
    pub group: u16,
}

impl Rib {
    /// Brings the identities installed for the addresses of a MAC of network `vni` to what
    /// its winning route gives: `had` are the addresses that were the MAC's, `want` those it
    /// has now with their groups (0: none).
    pub(super) fn sync_identities(
        &mut self,
        vni: u32,
        had: &[IpAddr],
        want: &BTreeMap<IpAddr, u16>,
        out: &mut Changes,
    ) {
        for ip in had {
            let keep = want.get(ip).is_some_and(|&g| g != 0);
            if !keep && self.installed.identity.remove(&(vni, *ip)).is_some() {
                out.install.push(Install::IdentityRemove(vni, *ip));
            }
        }
        for (&ip, &group) in want.iter().filter(|(_, &g)| g != 0) {
            if self.installed.identity.insert((vni, ip), group) != Some(group) {
                out.install.push(Install::IdentitySet(vni, ip, group));
            }
        }
    }
}
