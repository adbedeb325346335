//! The control API of a real nvod: networks, ports, FDB, flood lists, and every kind of bad
//! request answered with the right status and one clear line, changing nothing.
//!
//! ```text
//!   ns nvo-api-PID
//!  ┌──────────────────────────────────────────────┐
//!  │ nvod (locator 10.201.0.1 on u0, API socket   │
//!  │       in a scratch directory)                │
//!  │ u0 ─veth─ u1        va ─veth─ vb  (ports)    │
//!  └──────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;

use common::{host, Nvod, Scratch};
use nvo_api::{FdbEntry, FlushResult, Network, Port};
use serde_json::{json, Value};

/// Everything the API shows, to compare before and after a refused request.
/// What an API call could change: configuration and static entries. Learned entries and the
/// learned counts are left out: the veth peer's own traffic (IPv6 router solicitations, say)
/// may teach nvod a MAC at any moment.
fn snapshot(nvod: &Nvod) -> Value {
    let mut networks: Value = nvod.get("/v1/networks");
    let ports: Value = nvod.get("/v1/ports");
    let mut fdb = serde_json::Map::new();
    for n in networks.as_array_mut().unwrap() {
        n.as_object_mut().unwrap().remove("learned");
        let vni = n["vni"].to_string();
        let entries: Value = nvod.get(&format!("/v1/networks/{vni}/fdb"));
        let static_entries: Vec<Value> = entries
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["origin"] == "static")
            .cloned()
            .collect();
        fdb.insert(vni, Value::Array(static_entries));
    }
    json!({ "networks": networks, "ports": ports, "fdb": fdb })
}

/// The stored desired state (snapshot and journal).
fn state_file(nvod: &Nvod) -> serde_json::Value {
    common::stored_state(&nvod.state_dir)
}

#[test]
fn api_changes_and_refusals() {
    let scratch = Scratch::new("api");
    let ns = host("api", "10.201.0.1/24");
    ns.ip(&["link", "add", "va", "type", "veth", "peer", "name", "vb"])
        .unwrap();
    // No IPv6 on the pair: the peer's own router solicitations and MLD reports would reach
    // the port at any moment, and counters() expects every drop count to be 0.
    let quiet = std::process::Command::new("ip")
        .args(["netns", "exec", ns.name(), "sysctl", "-qw"])
        .args([
            "net.ipv6.conf.va.disable_ipv6=1",
            "net.ipv6.conf.vb.disable_ipv6=1",
        ])
        .status()
        .unwrap();
    assert!(quiet.success(), "sysctl disable_ipv6 on va/vb");
    ns.ip(&["link", "set", "va", "up"]).unwrap();
    ns.ip(&["link", "set", "vb", "up"]).unwrap();
    let nvod = Nvod::start(ns.name(), &scratch.0, "10.201.0.1", "");

    // Node.
    let node: nvo_api::NodeInfo = nvod.get("/v1/node");
    assert_eq!(node.locator, "10.201.0.1".parse::<IpAddr>().unwrap());
    assert_eq!(
        node.node_id,
        u32::from(std::net::Ipv4Addr::new(10, 201, 0, 1))
    );
    assert_eq!(node.vxlan_port, 4789);

    // Networks: create with defaults, create with everything, list, get.
    let n100: Network = nvod.post("/v1/networks", &json!({"vni": 100}));
    assert_eq!(
        (n100.vni, n100.mtu, n100.learning, n100.ageing_s),
        (100, 1450, true, 300)
    );
    let n200: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 200, "mtu": 1400, "learning": false, "max_learned": 10, "ageing_s": 60,
                "flood": ["10.201.0.2"]}),
    );
    assert_eq!(n200.flood, vec!["10.201.0.2".parse::<IpAddr>().unwrap()]);
    let list: Vec<Network> = nvod.get("/v1/networks");
    assert_eq!(
        list.iter().map(|n| n.vni).collect::<Vec<_>>(),
        vec![100, 200]
    );
    let got: Network = nvod.get("/v1/networks/200");
    assert_eq!((got.mtu, got.learning, got.max_learned), (1400, false, 10));

    // Ports.
    let port: Port = nvod.post("/v1/ports", &json!({"name": "va", "vni": 100}));
    assert!(port.up);
    let ports: Vec<Port> = nvod.get("/v1/ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(
        (ports[0].name.as_str(), ports[0].vni, ports[0].up),
        ("va", 100, true)
    );
    let n100: Network = nvod.get("/v1/networks/100");
    assert_eq!(n100.ports, vec!["va".to_owned()]);

    fdb_and_flood(&nvod);
    counters(&nvod);
    refusals(&nvod);

    // Deleting in order works.
    nvod.delete("/v1/ports/va");
    nvod.delete("/v1/networks/100");
    nvod.delete("/v1/networks/200");
    assert!(nvod.get::<Vec<Network>>("/v1/networks").is_empty());
    assert!(nvod.get::<Vec<Port>>("/v1/ports").is_empty());
}

/// Static FDB entries (to a remote, to a port): add, show, delete, flush; the flood list.
fn fdb_and_flood(nvod: &Nvod) {
    let _: FdbEntry = nvod.post(
        "/v1/networks/100/fdb",
        &json!({"mac": "02:00:00:00:00:01", "remote": "10.201.0.2"}),
    );
    let _: FdbEntry = nvod.post(
        "/v1/networks/100/fdb",
        &json!({"mac": "02:00:00:00:00:02", "port": "va"}),
    );
    let fdb: Vec<FdbEntry> = nvod.get("/v1/networks/100/fdb");
    assert_eq!(fdb.len(), 2, "{fdb:?}");
    let e1 = fdb.iter().find(|e| e.mac == "02:00:00:00:00:01").unwrap();
    assert_eq!(e1.remote, Some("10.201.0.2".parse().unwrap()));
    assert_eq!(e1.origin, nvo_api::Origin::Static);
    let e2 = fdb.iter().find(|e| e.mac == "02:00:00:00:00:02").unwrap();
    assert_eq!(e2.port.as_deref(), Some("va"));
    assert_eq!(nvod.get::<Network>("/v1/networks/100").static_entries, 2);
    nvod.delete("/v1/networks/100/fdb/02:00:00:00:00:01");
    assert_eq!(nvod.get::<Vec<FdbEntry>>("/v1/networks/100/fdb").len(), 1);
    // The veth peer's own traffic (IPv6 neighbour discovery) may have taught an entry by now:
    // a learned flush removes only those, and the static entry stays.
    let _: FlushResult = nvod.post("/v1/networks/100/fdb/flush", &json!({"scope": "learned"}));
    assert!(
        nvod.get::<Vec<FdbEntry>>("/v1/networks/100/fdb")
            .iter()
            .any(|e| e.mac == "02:00:00:00:00:02" && e.origin == nvo_api::Origin::Static),
        "the static entry stays"
    );
    let flushed: FlushResult = nvod.post("/v1/networks/100/fdb/flush", &json!({"scope": "all"}));
    assert!(
        flushed.flushed >= 1,
        "the static entry and any newly learned one"
    );
    assert!(nvod.get::<Vec<FdbEntry>>("/v1/networks/100/fdb").is_empty());
    assert!(
        state_file(nvod)["networks"]["100"]["fdb"]
            .get("02:00:00:00:00:02")
            .is_none(),
        "flush all is persisted"
    );

    // Flood list.
    let flood: Vec<IpAddr> = nvod.post("/v1/networks/100/flood", &json!({"remote": "10.201.0.3"}));
    assert_eq!(flood, vec!["10.201.0.3".parse::<IpAddr>().unwrap()]);
    let _: Vec<IpAddr> = nvod.post("/v1/networks/100/flood", &json!({"remote": "10.201.0.4"}));
    nvod.delete("/v1/networks/100/flood/10.201.0.3");
    let flood: Vec<IpAddr> = nvod.get("/v1/networks/100/flood");
    assert_eq!(flood, vec!["10.201.0.4".parse::<IpAddr>().unwrap()]);
}

/// Counters: every drop reason (zeros included), the network and the port by name.
fn counters(nvod: &Nvod) {
    let counters: nvo_api::Counters = nvod.get("/v1/counters");
    for reason in nvo_pipeline::DropReason::ALL {
        assert_eq!(
            counters.drops.get(reason.name()),
            Some(&0),
            "{reason} in {counters:?}"
        );
    }
    assert_eq!(counters.drops.len(), nvo_pipeline::DropReason::COUNT);
    assert!(counters.networks.contains_key(&100) && counters.ports.contains_key("va"));
}

/// A bad request: method, path, body, expected status, and a word the message must contain.
type Case = (
    &'static str,
    &'static str,
    Option<&'static str>,
    u16,
    &'static str,
);

#[rustfmt::skip]
const BAD_REQUESTS: &[Case] = &[
    ("POST", "/v1/networks", Some(r#"{"vni": 0}"#), 400, "vni 0"),
    ("POST", "/v1/networks", Some(r#"{"vni": 16777216}"#), 400, "16777216"),
    ("POST", "/v1/networks", Some(r#"{"vni": 100}"#), 409, "network 100 already exists"),
    ("POST", "/v1/networks", Some(r#"{"vni": 7, "mtu": 9000}"#), 400, "mtu 9000"),
    ("POST", "/v1/networks", Some(r#"{"vni": 7, "flood": ["fd00::1"]}"#), 400, "fd00::1"),
    ("POST", "/v1/networks", Some(r#"{"vni": 7, "colour": 1}"#), 400, "colour"),
    ("POST", "/v1/networks", Some(r#"{"vni": 7"#), 400, "invalid request body"),
    ("POST", "/v1/networks", Some("not json"), 400, "invalid request body"),
    ("POST", "/v1/networks", None, 400, "no body"),
    ("GET", "/v1/networks/7", None, 404, "no network with vni 7"),
    ("GET", "/v1/networks/abc", None, 400, "\"abc\""),
    ("DELETE", "/v1/networks/100", None, 409, "va"),
    ("DELETE", "/v1/networks/7", None, 404, "vni 7"),
    ("POST", "/v1/ports", Some(r#"{"name": "nosuch0", "vni": 100}"#), 400, "nosuch0"),
    ("POST", "/v1/ports", Some(r#"{"name": "vb", "vni": 7}"#), 404, "vni 7"),
    ("POST", "/v1/ports", Some(r#"{"name": "va", "vni": 200}"#), 409, "port va already exists"),
    ("POST", "/v1/ports", Some(r#"{"name": "a/b", "vni": 100}"#), 400, "a/b"),
    ("POST", "/v1/ports", Some(r#"{"name": "waytoolongname00", "vni": 100}"#), 400, "15 bytes"),
    ("POST", "/v1/ports", Some(r#"{"name": "vb", "vni": 100, "kind": "bridge"}"#), 400, "bridge"),
    ("DELETE", "/v1/ports/nosuch0", None, 404, "nosuch0"),
    ("POST", "/v1/networks/100/fdb", Some(r#"{"mac": "02:00:00:00:00:zz", "remote": "10.201.0.2"}"#), 400, "02:00:00:00:00:zz"),
    ("POST", "/v1/networks/100/fdb", Some(r#"{"mac": "ff:ff:ff:ff:ff:ff", "remote": "10.201.0.2"}"#), 400, "not a unicast"),
    ("POST", "/v1/networks/100/fdb", Some(r#"{"mac": "02:00:00:00:00:05"}"#), 400, "exactly one"),
    ("POST", "/v1/networks/100/fdb", Some(r#"{"mac": "02:00:00:00:00:05", "port": "va", "remote": "10.201.0.2"}"#), 400, "exactly one"),
    ("POST", "/v1/networks/100/fdb", Some(r#"{"mac": "02:00:00:00:00:05", "remote": "fd00::2"}"#), 400, "fd00::2"),
    ("POST", "/v1/networks/100/fdb", Some(r#"{"mac": "02:00:00:00:00:05", "port": "nosuch0"}"#), 404, "nosuch0"),
    ("POST", "/v1/networks/7/fdb", Some(r#"{"mac": "02:00:00:00:00:05", "remote": "10.201.0.2"}"#), 404, "vni 7"),
    ("DELETE", "/v1/networks/100/fdb/02:00:00:00:00:09", None, 404, "02:00:00:00:00:09"),
    ("DELETE", "/v1/networks/100/fdb/nonsense", None, 400, "nonsense"),
    ("POST", "/v1/networks/100/fdb/flush", Some(r#"{"scope": "some"}"#), 400, "some"),
    ("POST", "/v1/networks/100/flood", Some(r#"{"remote": "10.201.0.4"}"#), 409, "10.201.0.4"),
    ("POST", "/v1/networks/100/flood", Some(r#"{"remote": "224.0.0.1"}"#), 400, "224.0.0.1"),
    ("DELETE", "/v1/networks/100/flood/10.201.0.9", None, 404, "10.201.0.9"),
    ("DELETE", "/v1/networks/100/flood/x.y", None, 400, "x.y"),
    ("GET", "/v1/nothing", None, 404, "/v1/nothing"),
    ("PUT", "/v1/networks", Some("{}"), 405, "PUT"),
];

/// Each bad request gets its status and a message naming the offending value; afterwards the
/// API and the state file show exactly what they showed before.
fn refusals(nvod: &Nvod) {
    let before = snapshot(nvod);
    let file_before = state_file(nvod);
    let big = format!(
        "{{\"vni\": 7, \"flood\": [{}]}}",
        vec!["\"10.0.0.1\""; 8000].join(",")
    );
    let oversized: Case = ("POST", "/v1/networks", None, 413, "larger than");
    for &(method, path, body, status, needle) in BAD_REQUESTS.iter().chain([&oversized]) {
        let body = if status == 413 {
            Some(big.as_str())
        } else {
            body
        };
        let message = nvod.expect_error(method, path, body, status);
        assert!(
            message.contains(needle),
            "{method} {path}: message should name {needle:?}: {message}"
        );
    }
    assert_eq!(
        snapshot(nvod),
        before,
        "a refused request changed what the API shows"
    );
    assert_eq!(
        state_file(nvod),
        file_before,
        "a refused request changed the state file"
    );
}
