//! Overlay nodes and routes as cluster objects: `overlay/nodes/<ID>` holds the body of
//! `PUT /v1/overlay/nodes/{id}` ([`NodeLocators`]), `overlay/routes/<APP>/<DST>` the body of
//! `PUT /v1/overlay/routes/{app}/{dst}` ([`RouteNextHops`]).
//!
//! [`parse_node`] and [`parse_route`] are what `nvo --etcd` and nvod both check; nvod adds
//! its own checks at apply time (a locator of another address family than its own). A PUT
//! replaces, so a changed object is set again in place; [`keyed_diff`] turns desired vs
//! applied into those sets and deletions, leaving entries made through the local API alone.

use std::collections::{BTreeMap, BTreeSet};

use nvo_api::{NodeLocators, RouteNextHops};

use crate::object::ObjectError;

/// The largest locator weight (the pipeline's `overlay::MAX_WEIGHT`).
pub const MAX_WEIGHT: u16 = 1000;

/// Parses the object at `overlay/nodes/<id>`.
pub fn parse_node(id: u32, bytes: &[u8]) -> Result<NodeLocators, ObjectError> {
    let bad = |why: String| ObjectError::Overlay(format!("overlay node {id}: {why}"));
    let node: NodeLocators = object(bytes).map_err(bad)?;
    if node.locators.is_empty() {
        return Err(bad(
            "no locators; delete the object to remove the node".into()
        ));
    }
    let mut seen = BTreeSet::new();
    for l in &node.locators {
        if l.addr.is_unspecified() || l.addr.is_multicast() || l.addr.is_loopback() {
            return Err(bad(format!("locator {} is not a unicast address", l.addr)));
        }
        if l.weight > MAX_WEIGHT {
            return Err(bad(format!(
                "locator {} weight {} is out of range; use 0..={MAX_WEIGHT}",
                l.addr, l.weight
            )));
        }
        if !seen.insert(l.addr) {
            return Err(bad(format!("locator {} is listed twice", l.addr)));
        }
    }
    if node
        .locators
        .windows(2)
        .any(|w| w[0].addr.is_ipv4() != w[1].addr.is_ipv4())
    {
        return Err(bad("locators of both address families".into()));
    }
    Ok(node)
}

/// Parses the object at `overlay/routes/<app>/<dst>`.
pub fn parse_route(app: &str, dst: u32, bytes: &[u8]) -> Result<RouteNextHops, ObjectError> {
    let bad = |why: String| ObjectError::Overlay(format!("overlay route {app} {dst}: {why}"));
    let route: RouteNextHops = object(bytes).map_err(bad)?;
    if route.next_hops.is_empty() {
        return Err(bad(
            "no next hops; delete the object to remove the route".into()
        ));
    }
    if route.next_hops.contains(&0) {
        return Err(bad(
            "next hop 0 is not a node ID; use 1 to 4294967295".into()
        ));
    }
    let mut seen = BTreeSet::new();
    if let Some(hop) = route.next_hops.iter().find(|&&h| !seen.insert(h)) {
        return Err(bad(format!("next hop {hop} is listed twice")));
    }
    Ok(route)
}

/// A JSON object of `T`'s shape (an array is refused, though serde would take it).
fn object<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if !value.is_object() {
        return Err("not a JSON object".into());
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// One step of converging keyed entries (overlay nodes, routes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyedOp<K, S> {
    /// Set (PUT) the entry: new or changed.
    Set(K, S),
    /// Delete a cluster-owned entry no longer desired.
    Delete(K),
    /// Leave it as it is, for this reason.
    Skip(K, String),
}

/// The operations that turn `applied` (cluster-owned entries) into `desired`; `local` are the
/// keys of entries made through the local API, never touched (`what` names them in the
/// reason: "overlay node 5"). Deletions first, then sets, then skips.
pub fn keyed_diff<K: Ord + Clone, S: PartialEq + Clone>(
    desired: &BTreeMap<K, S>,
    applied: &BTreeMap<K, S>,
    local: &BTreeSet<K>,
    what: impl Fn(&K) -> String,
) -> Vec<KeyedOp<K, S>> {
    let deletes = applied
        .keys()
        .filter(|k| !desired.contains_key(k))
        .map(|k| KeyedOp::Delete(k.clone()));
    let mut sets = Vec::new();
    let mut skips = Vec::new();
    for (k, want) in desired {
        match applied.get(k) {
            Some(now) if now == want => {}
            Some(_) => sets.push(KeyedOp::Set(k.clone(), want.clone())),
            None if local.contains(k) => skips.push(KeyedOp::Skip(
                k.clone(),
                format!("{} exists locally (not from the cluster)", what(k)),
            )),
            None => sets.push(KeyedOp::Set(k.clone(), want.clone())),
        }
    }
    deletes.chain(sets).chain(skips).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_bodies_of_the_puts() {
        let n = parse_node(
            5,
            br#"{"locators": [{"addr": "10.0.0.5"}, {"addr": "10.0.1.5", "weight": 3}]}"#,
        )
        .unwrap();
        assert_eq!(n.locators.len(), 2);
        assert_eq!((n.locators[0].weight, n.locators[1].weight), (1, 3));
        let r = parse_route("ipv4", 9, br#"{"next_hops": [5, 7]}"#).unwrap();
        assert_eq!(r.next_hops, [5, 7]);
    }

    #[test]
    fn refuses_bad_overlay_objects() {
        for text in [
            "garbage",
            "[]",
            r#"{"locators": []}"#,
            r#"{"locators": [{"addr": "x"}]}"#,
            r#"{"locators": [{"addr": "0.0.0.0"}]}"#,
            r#"{"locators": [{"addr": "10.0.0.5", "weight": 1001}]}"#,
            r#"{"locators": [{"addr": "10.0.0.5"}, {"addr": "10.0.0.5"}]}"#,
            r#"{"locators": [{"addr": "10.0.0.5"}, {"addr": "fd00::5"}]}"#,
            r#"{"locators": [{"addr": "10.0.0.5"}], "colour": 1}"#,
        ] {
            let e = parse_node(5, text.as_bytes()).unwrap_err();
            assert!(e.to_string().starts_with("overlay node 5: "), "{text}: {e}");
        }
        for text in [
            "garbage",
            r#"{"next_hops": []}"#,
            r#"{"next_hops": [0]}"#,
            r#"{"next_hops": [3, 3]}"#,
            r#"{"next_hops": ["a"]}"#,
            r#"{"next_hops": [1], "x": 2}"#,
        ] {
            let e = parse_route("ipv4", 9, text.as_bytes()).unwrap_err();
            assert!(
                e.to_string().starts_with("overlay route ipv4 9: "),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn keyed_diff_applies_only_differences_and_leaves_local_entries() {
        let desired = BTreeMap::from([(1, "a"), (2, "b"), (3, "c")]);
        let applied = BTreeMap::from([(1, "a"), (2, "old"), (4, "d")]);
        let local = BTreeSet::from([3]);
        assert_eq!(
            keyed_diff(&desired, &applied, &local, |k| format!("overlay node {k}")),
            vec![
                KeyedOp::Delete(4),
                KeyedOp::Set(2, "b"),
                KeyedOp::Skip(
                    3,
                    "overlay node 3 exists locally (not from the cluster)".into()
                ),
            ]
        );
        assert_eq!(
            keyed_diff(&desired, &desired, &BTreeSet::new(), |k| k.to_string()),
            vec![]
        );
    }
}
