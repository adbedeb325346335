//! The overlay API on a real nvod: own ID, nodes and routes set, shown, refused with one line
//! naming the value (changing nothing), and all back after `kill -9` and a restart.
//!
//! ```text
//!   ns nvo-ovl-PID
//!  ┌──────────────────────────────────────────────┐
//!  │ nvod (locator 10.203.0.1 on u0)              │
//!  │ u0 ─veth─ u1                                 │
//!  └──────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, Nvod, Scratch};
use nvo_api::{OverlayInfo, OverlayNode, OverlayRoute};
use serde_json::{json, Value};

fn snapshot(nvod: &Nvod) -> Value {
    let info: Value = nvod.get("/v1/overlay");
    let nodes: Value = nvod.get("/v1/overlay/nodes");
    let routes: Vec<Value> = ["ethernet", "ipv4", "ipv6"]
        .iter()
        .map(|a| nvod.get(&format!("/v1/overlay/routes/{a}")))
        .collect();
    json!({"own": info["node_id"], "nodes": nodes, "routes": routes})
}

#[rustfmt::skip]
const BAD: &[(&str, &str, Option<&str>, u16, &str)] = &[
    ("PUT", "/v1/overlay", Some(r#"{"node_id": 0}"#), 400, "node 0"),
    ("PUT", "/v1/overlay/nodes/0", Some(r#"{"locators": [{"addr": "10.203.0.2"}]}"#), 400, "node 0"),
    ("PUT", "/v1/overlay/nodes/abc", Some(r#"{"locators": [{"addr": "10.203.0.2"}]}"#), 400, "abc"),
    ("PUT", "/v1/overlay/nodes/5", Some(r#"{"locators": []}"#), 400, "5"),
    ("PUT", "/v1/overlay/nodes/5", Some(r#"{"locators": [{"addr": "fd00::5"}]}"#), 400, "fd00::5"),
    ("PUT", "/v1/overlay/nodes/5", Some(r#"{"locators": [{"addr": "10.203.0.5", "weight": 1001}]}"#), 400, "1001"),
    ("PUT", "/v1/overlay/nodes/5", Some(r#"{"locators": [{"addr": "224.0.0.5"}]}"#), 400, "224.0.0.5"),
    ("PUT", "/v1/overlay/nodes/5", Some(r#"{"locators": [{"addr": "10.203.0.5"}, {"addr": "10.203.0.5"}]}"#), 400, "10.203.0.5"),
    ("PUT", "/v1/overlay/nodes/5", Some(r#"{"locators": [{"addr": "10.203.0.5", "colour": 1}]}"#), 400, "colour"),
    ("DELETE", "/v1/overlay/nodes/6", None, 404, "6"),
    ("GET", "/v1/overlay/nodes/6", None, 404, "6"),
    ("PUT", "/v1/overlay/routes/mpls/5", Some(r#"{"next_hops": [2]}"#), 400, "mpls"),
    ("PUT", "/v1/overlay/routes/ethernet/5", Some(r#"{"next_hops": []}"#), 400, "5"),
    ("PUT", "/v1/overlay/routes/ethernet/5", Some(r#"{"next_hops": [2, 2]}"#), 400, "2"),
    ("PUT", "/v1/overlay/routes/ethernet/5", Some(r#"{"next_hops": [0]}"#), 400, "node 0"),
    ("PUT", "/v1/overlay/routes/ethernet/5", Some(r#"{"next_hops": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}"#), 400, "17"),
    ("DELETE", "/v1/overlay/routes/ethernet/77", None, 404, "77"),
    ("POST", "/v1/overlay/probe", Some(r#"{"dst": 2, "count": 0}"#), 400, "count 0"),
    ("POST", "/v1/overlay/probe", Some(r#"{"dst": 2, "timeout_ms": 9}"#), 400, "timeout_ms 9"),
    ("POST", "/v1/overlay/probe", Some(r#"{"dst": 2, "via": 99}"#), 400, "99"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "overlay", "bum": {"mode": "overlay", "node": 0}}"#), 400, "node 0"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "vxlan", "bum": {"mode": "overlay", "node": 7}}"#), 400, "vxlan"),
];

#[test]
fn overlay_tables_through_the_api() {
    let scratch = Scratch::new("ovl");
    let ns = host("ovl", "10.203.0.1/24");
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.203.0.1", "node_id = 1\n");

    let info: OverlayInfo = nvod.get("/v1/overlay");
    assert_eq!(info.node_id, 1);
    assert!(info.counters.contains_key("relayed"));
    let n: OverlayNode = nvod.put(
        "/v1/overlay/nodes/2",
        &json!({"locators": [{"addr": "10.203.0.2", "weight": 3}, {"addr": "10.203.0.22"}]}),
    );
    assert_eq!((n.node_id, n.locators.len(), n.own), (2, 2, false));
    let _: OverlayNode = nvod.put(
        "/v1/overlay/nodes/1",
        &json!({"locators": [{"addr": "10.203.0.1"}]}),
    );
    let r: OverlayRoute = nvod.put(
        "/v1/overlay/routes/ethernet/3",
        &json!({"next_hops": [2, 1]}),
    );
    assert_eq!(r.next_hops, vec![2, 1]);
    let _: OverlayRoute = nvod.put("/v1/overlay/routes/ipv4/3", &json!({"next_hops": [2]}));
    let _: Value = nvod.post(
        "/v1/networks",
        &json!({"vni": 60, "encap": "overlay", "bum": {"mode": "overlay", "node": 4278190081u32}}),
    );
    let _: Value = nvod.post(
        "/v1/networks/60/fdb",
        &json!({"mac": "02:00:00:00:00:03", "node": 3}),
    );
    let fdb: Value = nvod.get("/v1/networks/60/fdb");
    assert_eq!(fdb[0]["node"], 3, "{fdb}");

    let before = snapshot(&nvod);
    for &(method, path, body, status, needle) in BAD {
        let message = nvod.expect_error(method, path, body, status);
        assert!(
            message.to_lowercase().contains(&needle.to_lowercase()),
            "{method} {path}: message should name {needle:?}: {message}"
        );
    }
    assert_eq!(
        snapshot(&nvod),
        before,
        "a refused request changed the overlay"
    );

    // The own ID moves through the API; everything comes back after kill -9.
    let info: OverlayInfo = nvod.put("/v1/overlay", &json!({"node_id": 9}));
    assert_eq!(info.node_id, 9);
    let before = snapshot(&nvod);
    nvod.kill();
    nvod.spawn();
    assert_eq!(snapshot(&nvod), before, "the restart lost overlay state");
    let fdb: Value = nvod.get("/v1/networks/60/fdb");
    assert_eq!(fdb[0]["node"], 3, "{fdb}");
    let net: Value = nvod.get("/v1/networks/60");
    assert_eq!(
        net["bum"],
        json!({"mode": "overlay", "node": 4278190081u32})
    );
    nvod.delete("/v1/overlay/routes/ethernet/3");
    nvod.delete("/v1/overlay/nodes/2");
    let nodes: Vec<OverlayNode> = nvod.get("/v1/overlay/nodes");
    assert_eq!(nodes.len(), 1);
}
