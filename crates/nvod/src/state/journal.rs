//! The journal's records: the difference between the state before and after one acknowledged
//! write, as a list of path operations on the state's JSON form, one line of JSON per write.
//!
//! A record names the smallest objects that changed (a network's fields, one static FDB entry,
//! one port, one overlay route), so its size depends on the change, not on the table sizes:
//! adding the 4000th network writes as many bytes as adding the first.
//!
//! Every operation is absolute (set this path to this value, delete this path), so replaying a
//! record on a state that already holds it changes nothing. The store relies on that: a crash
//! between writing a new snapshot and emptying the journal replays the journal on a snapshot
//! that already contains it, with the same result.

use std::collections::BTreeMap;
use std::fmt::Display;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{NetworkState, State};

/// One write: its operations, applied in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The operations.
    pub ops: Vec<Op>,
}

/// One operation on the state's JSON form; a path is a list of object keys from the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Set the value at the path, creating missing objects on the way.
    Set(Vec<String>, Value),
    /// Remove the key at the path (nothing if it is not there).
    Del(Vec<String>),
}

/// Why a record does not apply.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// An empty path.
    #[error("an operation with an empty path")]
    EmptyPath,
    /// A path through something that is not an object.
    #[error("path {0:?} goes through a value that is not an object")]
    NotAnObject(Vec<String>),
}

/// The operations that turn `old` into `new`.
pub fn diff(old: &State, new: &State) -> Result<Vec<Op>, serde_json::Error> {
    let mut ops = Vec::new();
    let root = |key: &str| vec![key.to_owned()];
    field(&mut ops, root("version"), &old.version, &new.version)?;
    map(
        &mut ops,
        &root("networks"),
        &old.networks,
        &new.networks,
        network,
    )?;
    map(&mut ops, &root("ports"), &old.ports, &new.ports, whole)?;
    map(
        &mut ops,
        &root("profiles"),
        &old.profiles,
        &new.profiles,
        whole,
    )?;
    field(
        &mut ops,
        root("cluster_profiles"),
        &old.cluster_profiles,
        &new.cluster_profiles,
    )?;
    map(
        &mut ops,
        &root("keys"),
        &old.keys,
        &new.keys,
        |ops, p, o, n| map(ops, &p, o, n, whole),
    )?;
    let overlay = root("overlay");
    let (o, n) = (&old.overlay, &new.overlay);
    field(&mut ops, below(&overlay, "own"), &o.own, &n.own)?;
    map(
        &mut ops,
        &below(&overlay, "nodes"),
        &o.nodes,
        &n.nodes,
        whole,
    )?;
    map(
        &mut ops,
        &below(&overlay, "routes"),
        &o.routes,
        &n.routes,
        |ops, p, o, n| map(ops, &p, o, n, whole),
    )?;
    field(
        &mut ops,
        below(&overlay, "cluster_nodes"),
        &o.cluster_nodes,
        &n.cluster_nodes,
    )?;
    field(
        &mut ops,
        below(&overlay, "cluster_routes"),
        &o.cluster_routes,
        &n.cluster_routes,
    )?;
    field(&mut ops, root("bgp"), &old.bgp, &new.bgp)?;
    field(&mut ops, root("bgp_off"), &old.bgp_off, &new.bgp_off)?;
    map(&mut ops, &root("qos"), &old.qos, &new.qos, whole)?;
    map(&mut ops, &root("meters"), &old.meters, &new.meters, whole)?;
    map(&mut ops, &root("flows"), &old.flows, &new.flows, whole)?;
    map(&mut ops, &root("acls"), &old.acls, &new.acls, whole)?;
    map(
        &mut ops,
        &root("acl_attached"),
        &old.acl_attached,
        &new.acl_attached,
        whole,
    )?;
    map(
        &mut ops,
        &root("policies"),
        &old.policies,
        &new.policies,
        whole,
    )?;
    map(
        &mut ops,
        &root("port_labels"),
        &old.port_labels,
        &new.port_labels,
        whole,
    )?;
    map(
        &mut ops,
        &root("addr_labels"),
        &old.addr_labels,
        &new.addr_labels,
        |ops, p, o, n| map(ops, &p, o, n, whole),
    )?;
    Ok(ops)
}

/// A network present before and after: its fields one by one, its static entries, their
/// addresses and its routes key by key. The new state is taken apart field by field without
/// `..`, so a field added to [`NetworkState`] does not compile until it is journaled here.
fn network(
    ops: &mut Vec<Op>,
    path: Vec<String>,
    o: &NetworkState,
    n: &NetworkState,
) -> Result<(), serde_json::Error> {
    let at = |key: &str| below(&path, key);
    let NetworkState {
        mtu,
        learning,
        learn_ports,
        learn_tunnels,
        bum,
        max_learned,
        ageing_s,
        flood,
        fdb,
        fdb_ips,
        encap,
        params,
        l3,
        routes,
        accept_remotes,
        max_learned_per_port,
        max_learned_per_remote,
        cluster,
    } = n;
    field(ops, at("mtu"), &o.mtu, mtu)?;
    field(ops, at("learning"), &o.learning, learning)?;
    field(ops, at("learn_ports"), &o.learn_ports, learn_ports)?;
    field(ops, at("learn_tunnels"), &o.learn_tunnels, learn_tunnels)?;
    field(ops, at("bum"), &o.bum, bum)?;
    field(ops, at("max_learned"), &o.max_learned, max_learned)?;
    field(ops, at("ageing_s"), &o.ageing_s, ageing_s)?;
    field(ops, at("flood"), &o.flood, flood)?;
    field(ops, at("encap"), &o.encap, encap)?;
    field(ops, at("params"), &o.params, params)?;
    field(ops, at("l3"), &o.l3, l3)?;
    field(ops, at("accept_remotes"), &o.accept_remotes, accept_remotes)?;
    field(
        ops,
        at("max_learned_per_port"),
        &o.max_learned_per_port,
        max_learned_per_port,
    )?;
    field(
        ops,
        at("max_learned_per_remote"),
        &o.max_learned_per_remote,
        max_learned_per_remote,
    )?;
    field(ops, at("cluster"), &o.cluster, cluster)?;
    map(ops, &at("fdb"), &o.fdb, fdb, whole)?;
    map(ops, &at("fdb_ips"), &o.fdb_ips, fdb_ips, whole)?;
    map(ops, &at("routes"), &o.routes, routes, whole)
}

fn below(path: &[String], key: impl Display) -> Vec<String> {
    let mut p = path.to_vec();
    p.push(key.to_string());
    p
}

/// Sets `path` to `n` when it differs from `o`.
fn field<T: PartialEq + Serialize>(
    ops: &mut Vec<Op>,
    path: Vec<String>,
    o: &T,
    n: &T,
) -> Result<(), serde_json::Error> {
    if o != n {
        ops.push(Op::Set(path, serde_json::to_value(n)?));
    }
    Ok(())
}

/// Replaces a changed value whole.
fn whole<T: Serialize>(
    ops: &mut Vec<Op>,
    path: Vec<String>,
    _: &T,
    n: &T,
) -> Result<(), serde_json::Error> {
    ops.push(Op::Set(path, serde_json::to_value(n)?));
    Ok(())
}

/// A map key by key: removed keys are deleted, new ones set whole, changed ones handed to
/// `changed`. One pass over both maps in key order (no lookups): the cost per write is a
/// comparison per entry, and the bytes are those of what changed.
fn map<K: Ord + Display, V: PartialEq + Serialize>(
    ops: &mut Vec<Op>,
    path: &[String],
    old: &BTreeMap<K, V>,
    new: &BTreeMap<K, V>,
    changed: impl Fn(&mut Vec<Op>, Vec<String>, &V, &V) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    use std::cmp::Ordering;
    let (mut o, mut n) = (old.iter().peekable(), new.iter().peekable());
    loop {
        let order = match (o.peek(), n.peek()) {
            (None, None) => return Ok(()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((ko, _)), Some((kn, _))) => ko.cmp(kn),
        };
        match order {
            Ordering::Less => {
                if let Some((key, _)) = o.next() {
                    ops.push(Op::Del(below(path, key)));
                }
            }
            Ordering::Greater => {
                if let Some((key, v)) = n.next() {
                    ops.push(Op::Set(below(path, key), serde_json::to_value(v)?));
                }
            }
            Ordering::Equal => {
                if let (Some((key, vo)), Some((_, vn))) = (o.next(), n.next()) {
                    if vo != vn {
                        changed(ops, below(path, key), vo, vn)?;
                    }
                }
            }
        }
    }
}

/// Applies one operation to the state's JSON form.
pub fn apply(root: &mut Value, op: &Op) -> Result<(), ApplyError> {
    let path = match op {
        Op::Set(path, _) | Op::Del(path) => path,
    };
    let (last, parents) = path.split_last().ok_or(ApplyError::EmptyPath)?;
    let not_object = || ApplyError::NotAnObject(path.clone());
    let mut node = root;
    for key in parents {
        let object = node.as_object_mut().ok_or_else(not_object)?;
        if matches!(op, Op::Del(_)) && !object.contains_key(key) {
            return Ok(());
        }
        node = object
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let object = node.as_object_mut().ok_or_else(not_object)?;
    match op {
        Op::Set(_, value) => {
            object.insert(last.clone(), value.clone());
        }
        Op::Del(_) => {
            object.remove(last);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{KeyTarget, StaticDest};
    use super::*;

    fn replay(old: &State, new: &State) -> State {
        let mut v = serde_json::to_value(old).unwrap();
        for op in diff(old, new).unwrap() {
            apply(&mut v, &op).unwrap();
        }
        serde_json::from_value(v).unwrap()
    }

    fn net() -> NetworkState {
        NetworkState {
            mtu: 1450,
            learning: true,
            learn_ports: None,
            learn_tunnels: None,
            bum: super::super::BumState::HeadEnd,
            max_learned: 4096,
            ageing_s: 300,
            flood: vec![],
            fdb: BTreeMap::new(),
            fdb_ips: BTreeMap::new(),
            encap: "vxlan".to_owned(),
            params: BTreeMap::new(),
            l3: false,
            routes: BTreeMap::new(),
            accept_remotes: None,
            max_learned_per_port: None,
            max_learned_per_remote: None,
            cluster: false,
        }
    }

    /// Each step's diff, applied to the step before, gives the step; and applied twice, too.
    #[test]
    fn diffs_replay_to_the_new_state_and_are_idempotent() {
        let mut steps = vec![State::default()];
        let mut s = State::default();
        s.networks.insert(10, net());
        steps.push(s.clone());
        let n = s.networks.get_mut(&10).unwrap();
        n.fdb.insert(
            "02:00:00:00:00:01".into(),
            StaticDest::Remote("192.0.2.1".parse().unwrap()),
        );
        n.mtu = 1400;
        n.routes
            .insert("10.1.0.0/16".into(), "192.0.2.2".parse().unwrap());
        steps.push(s.clone());
        // Every other field of a network that stays, changed in one write.
        let n = s.networks.get_mut(&10).unwrap();
        n.learn_ports = Some(true);
        n.learn_tunnels = Some(false);
        n.accept_remotes = Some(nvo_api::AcceptRemotes::Known);
        n.max_learned_per_port = Some(7);
        n.max_learned_per_remote = Some(9);
        n.cluster = true;
        steps.push(s.clone());
        s.keys
            .entry("nsh".into())
            .or_default()
            .insert("0a".into(), KeyTarget::Local(10));
        s.cluster_profiles.insert("mytun".into());
        s.overlay.cluster_nodes.insert(5);
        s.overlay
            .cluster_routes
            .entry("ip".into())
            .or_default()
            .insert(5);
        s.overlay.own = Some(7);
        s.overlay
            .routes
            .entry("ip".into())
            .or_default()
            .insert(5, vec![6]);
        s.bgp_off = true;
        steps.push(s.clone());
        // Identity policy (issue 18): a policy, a port's and an address's labels.
        let spec: nvo_policy::PolicySpec = serde_json::from_str(
            r#"{"groups": [{"id": 10, "name": "web", "selector": "app=web"}],
                "rules": [{"name": "r", "from": ["web"], "action": "allow"}]}"#,
        )
        .unwrap();
        s.policies.insert(10, spec);
        let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
        s.port_labels.insert("veth0".into(), labels.clone());
        s.addr_labels
            .entry(10)
            .or_default()
            .insert("10.0.0.2".parse().unwrap(), labels.clone());
        steps.push(s.clone());
        s.addr_labels
            .entry(10)
            .or_default()
            .insert("fd00::2".parse().unwrap(), labels);
        s.port_labels.clear();
        steps.push(s.clone());
        s.policies.clear();
        s.addr_labels.clear();
        steps.push(s.clone());
        // A QoS profile and a stored flow rule, added, changed, removed.
        let gold = crate::state::QosState {
            rate: 100_000_000,
            burst: 65536,
            dscp: Some(46),
            trust: false,
        };
        s.qos.insert("gold".into(), gold);
        let meter = crate::state::MeterState {
            rate: 100_000_000,
            burst: 65536,
        };
        s.meters.insert(1, meter);
        s.meters.insert(2, meter);
        let identity = "priority=100,in_port=veth0".to_owned();
        s.flows
            .insert(identity.clone(), format!("{identity} actions=drop"));
        steps.push(s.clone());
        s.qos
            .insert("gold".into(), crate::state::QosState { dscp: None, ..gold });
        s.meters.remove(&2);
        s.meters.insert(
            1,
            crate::state::MeterState {
                rate: 8_000_000,
                ..meter
            },
        );
        s.flows.insert(
            identity.clone(),
            format!("{identity} actions=meter:1,normal"),
        );
        steps.push(s.clone());
        s.qos.clear();
        s.meters.clear();
        s.flows.clear();
        steps.push(s.clone());
        // An ACL profile, attached to a port and a virtual port, changed, detached, removed.
        let rules = vec!["priority=200,tcp,tp_dst=22,actions=drop".to_owned()];
        s.acls.insert("no-ssh".into(), rules.clone());
        s.acl_attached.insert("veth0".into(), "no-ssh".into());
        s.acl_attached
            .insert("hv0/02:00:00:00:01:01".into(), "no-ssh".into());
        steps.push(s.clone());
        let mut more = rules;
        more.push("priority=100,actions=normal".into());
        s.acls.insert("no-ssh".into(), more);
        s.acl_attached.remove("veth0");
        steps.push(s.clone());
        s.acl_attached.clear();
        s.acls.clear();
        steps.push(s.clone());
        s.keys.clear();
        s.cluster_profiles.clear();
        s.overlay = Default::default();
        s.networks.get_mut(&10).unwrap().fdb.clear();
        s.bgp_off = false;
        steps.push(s.clone());
        s.networks.clear();
        steps.push(s.clone());
        for pair in steps.windows(2) {
            assert_eq!(replay(&pair[0], &pair[1]), pair[1]);
            assert_eq!(replay(&pair[1], &pair[1]), pair[1]);
            assert!(diff(&pair[1], &pair[1]).unwrap().is_empty());
            // Replaying onto the result again changes nothing.
            let mut v = serde_json::to_value(&pair[1]).unwrap();
            for op in diff(&pair[0], &pair[1]).unwrap() {
                apply(&mut v, &op).unwrap();
            }
            assert_eq!(serde_json::from_value::<State>(v).unwrap(), pair[1]);
        }
    }

    /// One more static entry costs the same bytes at 10 and at 4000 networks.
    #[test]
    fn record_size_does_not_grow_with_the_tables() {
        let size_at = |networks: u32| {
            let mut old = State::default();
            for vni in 1..=networks {
                old.networks.insert(vni, net());
            }
            let mut new = old.clone();
            new.networks.get_mut(&1).unwrap().fdb.insert(
                "02:00:00:00:00:01".into(),
                StaticDest::Remote("192.0.2.1".parse().unwrap()),
            );
            let record = Record {
                ops: diff(&old, &new).unwrap(),
            };
            serde_json::to_vec(&record).unwrap().len()
        };
        assert_eq!(size_at(10), size_at(4000));
    }
}
