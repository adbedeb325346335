//! The pure part of converging the cluster's encapsulation profiles: (desired, applied) →
//! operations, in two phases around the networks' operations.
//!
//! Profiles come before the networks that use them and go after: [`Phase::BeforeNetworks`]
//! creates the new profiles and replaces changed ones that no network uses, so a network
//! object naming a new profile is created in the same pass; [`Phase::AfterNetworks`], planned
//! again once the networks' operations are applied, deletes the profiles gone from the
//! cluster, replaces what the deleted networks freed, and says why the rest is skipped. A
//! profile some network uses (a cluster network or a local one) is never deleted or replaced.
//! Only differences become operations.

use std::collections::{BTreeMap, BTreeSet};

/// When an operation list is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the networks' operations: creations and unblocked replacements.
    BeforeNetworks,
    /// After them: deletions, replacements, and the reasons of what stays as it is.
    AfterNetworks,
}

/// One step of converging profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileOp<S> {
    /// Add a cluster-owned profile.
    Create {
        /// Its name.
        name: String,
        /// What to add.
        spec: S,
    },
    /// Remove a cluster-owned profile and add it as it is now; no network uses it.
    Replace {
        /// Its name.
        name: String,
        /// What it becomes.
        spec: S,
    },
    /// Remove a cluster-owned profile no longer in the cluster; no network uses it.
    Delete {
        /// Its name.
        name: String,
    },
    /// Leave it as it is, for this reason.
    Skip {
        /// Its name.
        name: String,
        /// Why (one line for `nvo cluster status`).
        error: String,
    },
}

/// The operations of `phase` that turn `applied` (the cluster-owned profiles) into `desired`.
/// `local` are the names of every other profile nvod has (built in, from its config file or
/// added through the API), which the cluster never touches; `users` are the networks using
/// each profile now.
pub fn profile_diff<S: PartialEq + Clone>(
    desired: &BTreeMap<String, S>,
    applied: &BTreeMap<String, S>,
    local: &BTreeSet<String>,
    users: &BTreeMap<String, Vec<u32>>,
    phase: Phase,
) -> Vec<ProfileOp<S>> {
    let used_by = |name: &str| -> Option<String> {
        users
            .get(name)
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
    };
    let after = phase == Phase::AfterNetworks;
    let mut deletes = Vec::new();
    let mut ops = Vec::new();
    let mut skips = Vec::new();
    for name in applied.keys() {
        if desired.contains_key(name) || !after {
            continue;
        }
        match used_by(name) {
            None => deletes.push(ProfileOp::Delete { name: name.clone() }),
            Some(vnis) => skips.push(ProfileOp::Skip {
                name: name.clone(),
                error: format!(
                    "profile {name} is deleted in the cluster but networks {vnis} use it; it \
                     is kept until they are deleted"
                ),
            }),
        }
    }
    for (name, want) in desired {
        match applied.get(name) {
            None if local.contains(name) => {
                if after {
                    skips.push(ProfileOp::Skip {
                        name: name.clone(),
                        error: format!("profile {name} exists locally (not from the cluster)"),
                    });
                }
            }
            None => {
                if !after {
                    ops.push(ProfileOp::Create {
                        name: name.clone(),
                        spec: want.clone(),
                    });
                }
            }
            Some(now) if now == want => {}
            Some(_) => match used_by(name) {
                None => ops.push(ProfileOp::Replace {
                    name: name.clone(),
                    spec: want.clone(),
                }),
                Some(vnis) if after => skips.push(ProfileOp::Skip {
                    name: name.clone(),
                    error: format!(
                        "profile {name} is used by networks {vnis}; changing it needs them \
                         deleted first"
                    ),
                }),
                Some(_) => {}
            },
        }
    }
    deletes.into_iter().chain(ops).chain(skips).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn users(items: &[(&str, &[u32])]) -> BTreeMap<String, Vec<u32>> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect()
    }

    fn create(name: &str, spec: &str) -> ProfileOp<String> {
        ProfileOp::Create {
            name: name.into(),
            spec: spec.into(),
        }
    }

    #[test]
    fn new_profiles_come_before_the_networks_gone_ones_after() {
        let desired = map(&[("a", "1"), ("b", "2")]);
        let applied = map(&[("b", "2"), ("old", "9")]);
        let none = BTreeSet::new();
        assert_eq!(
            profile_diff(
                &desired,
                &applied,
                &none,
                &users(&[]),
                Phase::BeforeNetworks
            ),
            vec![create("a", "1")]
        );
        // After the networks, with "a" created: only the deletion, "b" untouched.
        let applied = map(&[("a", "1"), ("b", "2"), ("old", "9")]);
        assert_eq!(
            profile_diff(&desired, &applied, &none, &users(&[]), Phase::AfterNetworks),
            vec![ProfileOp::Delete { name: "old".into() }]
        );
    }

    #[test]
    fn unchanged_is_not_touched() {
        let both = map(&[("a", "1")]);
        for phase in [Phase::BeforeNetworks, Phase::AfterNetworks] {
            let used = users(&[("a", &[100])]);
            assert_eq!(
                profile_diff(&both, &both, &BTreeSet::new(), &used, phase),
                vec![]
            );
        }
    }

    #[test]
    fn a_change_replaces_an_unused_profile_and_skips_a_used_one() {
        let desired = map(&[("a", "new")]);
        let applied = map(&[("a", "old")]);
        let none = BTreeSet::new();
        let replace = vec![ProfileOp::Replace {
            name: "a".into(),
            spec: "new".to_string(),
        }];
        assert_eq!(
            profile_diff(
                &desired,
                &applied,
                &none,
                &users(&[]),
                Phase::BeforeNetworks
            ),
            replace
        );
        let used = users(&[("a", &[100, 200])]);
        assert_eq!(
            profile_diff(&desired, &applied, &none, &used, Phase::BeforeNetworks),
            vec![]
        );
        assert_eq!(
            profile_diff(&desired, &applied, &none, &used, Phase::AfterNetworks),
            vec![ProfileOp::Skip {
                name: "a".into(),
                error: "profile a is used by networks 100, 200; changing it needs them deleted \
                        first"
                    .into()
            }]
        );
        // The networks deleted in this pass freed it: replaced after them.
        assert_eq!(
            profile_diff(&desired, &applied, &none, &users(&[]), Phase::AfterNetworks),
            replace
        );
    }

    #[test]
    fn a_used_profile_deleted_in_the_cluster_is_kept() {
        let applied = map(&[("a", "1")]);
        let ops = profile_diff(
            &BTreeMap::new(),
            &applied,
            &BTreeSet::new(),
            &users(&[("a", &[7])]),
            Phase::AfterNetworks,
        );
        assert!(
            matches!(&ops[..], [ProfileOp::Skip { name, error }]
                if name == "a" && error.contains("networks 7 use it")),
            "{ops:?}"
        );
        // And before the networks nothing is deleted at all.
        assert_eq!(
            profile_diff(
                &BTreeMap::new(),
                &applied,
                &BTreeSet::new(),
                &users(&[]),
                Phase::BeforeNetworks
            ),
            vec![]
        );
    }

    #[test]
    fn a_local_profile_of_the_same_name_is_skipped() {
        let desired = map(&[("mine", "1"), ("new", "2")]);
        let local = BTreeSet::from(["mine".to_string()]);
        assert_eq!(
            profile_diff(
                &desired,
                &BTreeMap::new(),
                &local,
                &users(&[]),
                Phase::BeforeNetworks
            ),
            vec![create("new", "2")]
        );
        assert_eq!(
            profile_diff(
                &desired,
                &map(&[("new", "2")]),
                &local,
                &users(&[]),
                Phase::AfterNetworks
            ),
            vec![ProfileOp::Skip {
                name: "mine".into(),
                error: "profile mine exists locally (not from the cluster)".into()
            }]
        );
    }
}
