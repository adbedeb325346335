//! The pure part of convergence: (objects, registered hosts) → desired networks, and
//! (desired, applied) → the operations that make one the other. No I/O; nvod runs these on
//! every snapshot and applies the operations through its ordinary control methods.
//!
//! Only differences become operations: an unchanged network yields none, so its learned MACs
//! survive a resync.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use nvo_api::NetworkSpec;

use crate::object::HostRecord;

/// The desired networks: every object, its flood list extended, when `adds_hosts` says the
/// network floods by head-end replication that EVPN does not serve, with the locators of
/// every other registered host — never this host's own (by name or locator), never twice,
/// only of the own locator's address family, in the order of host names.
pub fn desired(
    objects: &BTreeMap<u32, NetworkSpec>,
    hosts: &BTreeMap<String, HostRecord>,
    own_name: &str,
    own_locator: IpAddr,
    adds_hosts: impl Fn(&NetworkSpec) -> bool,
) -> BTreeMap<u32, NetworkSpec> {
    let others: Vec<IpAddr> = hosts
        .values()
        .filter(|h| h.name != own_name && h.locator != own_locator)
        .filter(|h| h.locator.is_ipv6() == own_locator.is_ipv6())
        .map(|h| h.locator)
        .collect();
    objects
        .iter()
        .map(|(&vni, spec)| {
            let mut spec = spec.clone();
            if adds_hosts(&spec) {
                let mut flood = spec.flood.take().unwrap_or_default();
                flood.retain(|&ip| ip != own_locator);
                for &ip in &others {
                    if !flood.contains(&ip) {
                        flood.push(ip);
                    }
                }
                spec.flood = Some(flood);
            }
            (vni, spec)
        })
        .collect()
}

/// A desired network as the applier compares it: `body` is everything but the flood list
/// (nvod uses its resolved network state, so a changed default shows as a change too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired<S> {
    /// Everything but the flood list.
    pub body: S,
    /// The flood list.
    pub flood: Vec<IpAddr>,
}

/// A cluster-owned network as applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied<S> {
    /// Everything but the flood list.
    pub body: S,
    /// The flood list.
    pub flood: Vec<IpAddr>,
    /// The local ports attached to it.
    pub ports: Vec<String>,
}

/// One step of convergence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op<S> {
    /// Create a network that is not there.
    Create {
        /// Its VNI.
        vni: u32,
        /// What to create.
        network: Desired<S>,
    },
    /// Delete a cluster-owned network that is no longer desired.
    Delete {
        /// Its VNI.
        vni: u32,
    },
    /// Re-create (delete, create) a network whose body changed and that has no port.
    Recreate {
        /// Its VNI.
        vni: u32,
        /// What it becomes.
        network: Desired<S>,
    },
    /// Change the flood list only.
    Flood {
        /// Its VNI.
        vni: u32,
        /// Remotes to add.
        add: Vec<IpAddr>,
        /// Remotes to remove.
        remove: Vec<IpAddr>,
    },
    /// Leave it as it is, for this reason.
    Skip {
        /// Its VNI.
        vni: u32,
        /// Why (one line for `nvo cluster status`).
        error: String,
    },
}

/// The operations that turn `applied` (the cluster-owned networks) into `desired`; `local`
/// are the VNIs of networks made through the local API, which the cluster never touches.
/// Order: deletions, re-creations, flood changes, creations, then skips.
pub fn diff<S: PartialEq + Clone>(
    desired: &BTreeMap<u32, Desired<S>>,
    applied: &BTreeMap<u32, Applied<S>>,
    local: &BTreeSet<u32>,
) -> Vec<Op<S>> {
    let mut deletes = Vec::new();
    let mut recreates = Vec::new();
    let mut floods = Vec::new();
    let mut creates = Vec::new();
    let mut skips = Vec::new();
    for (&vni, now) in applied {
        if desired.contains_key(&vni) {
            continue;
        }
        if now.ports.is_empty() {
            deletes.push(Op::Delete { vni });
        } else {
            skips.push(Op::Skip {
                vni,
                error: format!(
                    "network {vni} is deleted in the cluster but has ports {} attached; it is \
                     kept until they are detached",
                    now.ports.join(", ")
                ),
            });
        }
    }
    for (&vni, want) in desired {
        let Some(now) = applied.get(&vni) else {
            if local.contains(&vni) {
                skips.push(Op::Skip {
                    vni,
                    error: format!("network {vni} exists locally (not from the cluster)"),
                });
            } else {
                creates.push(Op::Create {
                    vni,
                    network: want.clone(),
                });
            }
            continue;
        };
        if now.body != want.body {
            if now.ports.is_empty() {
                recreates.push(Op::Recreate {
                    vni,
                    network: want.clone(),
                });
            } else {
                skips.push(Op::Skip {
                    vni,
                    error: format!(
                        "network {vni} has ports {} attached; changes other than the flood \
                         list need them detached",
                        now.ports.join(", ")
                    ),
                });
            }
            continue;
        }
        let add: Vec<IpAddr> = want
            .flood
            .iter()
            .filter(|ip| !now.flood.contains(ip))
            .copied()
            .collect();
        let remove: Vec<IpAddr> = now
            .flood
            .iter()
            .filter(|ip| !want.flood.contains(ip))
            .copied()
            .collect();
        if !add.is_empty() || !remove.is_empty() {
            floods.push(Op::Flood { vni, add, remove });
        }
    }
    deletes
        .into_iter()
        .chain(recreates)
        .chain(floods)
        .chain(creates)
        .chain(skips)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn host(name: &str, locator: &str) -> (String, HostRecord) {
        (
            name.to_owned(),
            HostRecord {
                name: name.to_owned(),
                locator: ip(locator),
                node_id: 1,
            },
        )
    }

    fn want(body: &str, flood: &[&str]) -> Desired<String> {
        Desired {
            body: body.to_owned(),
            flood: flood.iter().map(|s| ip(s)).collect(),
        }
    }

    fn have(body: &str, flood: &[&str], ports: &[&str]) -> Applied<String> {
        Applied {
            body: body.to_owned(),
            flood: flood.iter().map(|s| ip(s)).collect(),
            ports: ports.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn desired_adds_other_hosts_to_head_end_networks() {
        let objects = BTreeMap::from([
            (
                100,
                NetworkSpec {
                    vni: 100,
                    flood: Some(vec![ip("10.9.9.9"), ip("10.100.0.1")]),
                    ..Default::default()
                },
            ),
            (
                200,
                NetworkSpec {
                    vni: 200,
                    ..Default::default()
                },
            ),
        ]);
        let hosts = BTreeMap::from([
            host("h1", "10.100.0.1"),
            host("h2", "10.100.0.2"),
            host("h3", "10.100.0.3"),
            host("h4", "fd00::4"),
            host("h5", "10.9.9.9"),
        ]);
        let d = desired(&objects, &hosts, "h1", ip("10.100.0.1"), |s| s.vni == 100);
        assert_eq!(
            d[&100].flood,
            Some(vec![ip("10.9.9.9"), ip("10.100.0.2"), ip("10.100.0.3")])
        );
        // Network 200 does not take host locators (e.g. EVPN serves it): as written.
        assert_eq!(d[&200].flood, None);
    }

    #[test]
    fn host_join_and_leave_change_only_flood_lists() {
        let objects = BTreeMap::from([(
            100,
            NetworkSpec {
                vni: 100,
                ..Default::default()
            },
        )]);
        let two = BTreeMap::from([host("h1", "10.100.0.1"), host("h2", "10.100.0.2")]);
        let three = BTreeMap::from([
            host("h1", "10.100.0.1"),
            host("h2", "10.100.0.2"),
            host("h3", "10.100.0.3"),
        ]);
        let as_desired = |hosts: &BTreeMap<String, HostRecord>| -> BTreeMap<u32, Desired<String>> {
            desired(&objects, hosts, "h1", ip("10.100.0.1"), |_| true)
                .into_iter()
                .map(|(vni, mut s)| {
                    let flood = s.flood.take().unwrap_or_default();
                    (
                        vni,
                        Desired {
                            body: format!("{s:?}"),
                            flood,
                        },
                    )
                })
                .collect()
        };
        let before = as_desired(&two);
        let applied = BTreeMap::from([(
            100,
            Applied {
                body: before[&100].body.clone(),
                flood: before[&100].flood.clone(),
                ports: vec!["veth0".into()],
            },
        )]);
        assert_eq!(diff(&before, &applied, &BTreeSet::new()), vec![]);
        // h3 joins: added in place, even with a port attached.
        assert_eq!(
            diff(&as_desired(&three), &applied, &BTreeSet::new()),
            vec![Op::Flood {
                vni: 100,
                add: vec![ip("10.100.0.3")],
                remove: vec![]
            }]
        );
        // h2 leaves (its lease expired).
        let alone = BTreeMap::from([host("h1", "10.100.0.1")]);
        assert_eq!(
            diff(&as_desired(&alone), &applied, &BTreeSet::new()),
            vec![Op::Flood {
                vni: 100,
                add: vec![],
                remove: vec![ip("10.100.0.2")]
            }]
        );
    }

    #[test]
    fn adds_missing_and_deletes_gone() {
        let desired = BTreeMap::from([(100, want("a", &["10.0.0.2"]))]);
        let applied = BTreeMap::from([(300, have("c", &[], &[]))]);
        assert_eq!(
            diff(&desired, &applied, &BTreeSet::new()),
            vec![
                Op::Delete { vni: 300 },
                Op::Create {
                    vni: 100,
                    network: want("a", &["10.0.0.2"])
                }
            ]
        );
    }

    #[test]
    fn unchanged_is_not_touched() {
        let desired = BTreeMap::from([(100, want("a", &["10.0.0.2", "10.0.0.3"]))]);
        let applied = BTreeMap::from([(100, have("a", &["10.0.0.3", "10.0.0.2"], &[]))]);
        assert_eq!(diff(&desired, &applied, &BTreeSet::new()), vec![]);
    }

    #[test]
    fn flood_only_change_is_in_place() {
        let desired = BTreeMap::from([(100, want("a", &["10.0.0.2", "10.0.0.4"]))]);
        let applied = BTreeMap::from([(100, have("a", &["10.0.0.2", "10.0.0.3"], &["p1"]))]);
        assert_eq!(
            diff(&desired, &applied, &BTreeSet::new()),
            vec![Op::Flood {
                vni: 100,
                add: vec![ip("10.0.0.4")],
                remove: vec![ip("10.0.0.3")]
            }]
        );
    }

    #[test]
    fn other_change_recreates_without_ports() {
        let desired = BTreeMap::from([(100, want("b", &["10.0.0.2"]))]);
        let applied = BTreeMap::from([(100, have("a", &[], &[]))]);
        assert_eq!(
            diff(&desired, &applied, &BTreeSet::new()),
            vec![Op::Recreate {
                vni: 100,
                network: want("b", &["10.0.0.2"])
            }]
        );
    }

    #[test]
    fn other_change_with_ports_is_skipped_naming_them() {
        let desired = BTreeMap::from([(100, want("b", &[]))]);
        let applied = BTreeMap::from([(100, have("a", &[], &["a", "b"]))]);
        assert_eq!(
            diff(&desired, &applied, &BTreeSet::new()),
            vec![Op::Skip {
                vni: 100,
                error: "network 100 has ports a, b attached; changes other than the flood list \
                        need them detached"
                    .into()
            }]
        );
    }

    #[test]
    fn deleted_with_ports_is_kept() {
        let applied = BTreeMap::from([(100, have("a", &[], &["p1"]))]);
        let ops = diff(&BTreeMap::new(), &applied, &BTreeSet::new());
        assert!(
            matches!(&ops[..], [Op::Skip { vni: 100, error }] if error.contains("ports p1 attached")),
            "{ops:?}"
        );
    }

    #[test]
    fn local_collision_is_skipped() {
        let desired = BTreeMap::from([(100, want("a", &[])), (200, want("b", &[]))]);
        let ops = diff(&desired, &BTreeMap::new(), &BTreeSet::from([100]));
        assert_eq!(
            ops,
            vec![
                Op::Create {
                    vni: 200,
                    network: want("b", &[])
                },
                Op::Skip {
                    vni: 100,
                    error: "network 100 exists locally (not from the cluster)".into()
                }
            ]
        );
    }
}
