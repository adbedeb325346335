//! The encapsulation parts of the API on a real nvod: profiles (built-in, from the config file,
//! added and deleted through the API), networks per profile with params, L3 networks with their
//! routes, key bindings; every bad request answered with its status and one line naming the
//! value, changing nothing; and all of it back after `kill -9` and a restart.
//!
//! ```text
//!   ns nvo-encap-PID
//!  ┌──────────────────────────────────────────────┐
//!  │ nvod (locator 10.202.0.1 on u0; config file  │
//!  │       with a [[profile]] "cfgtun")           │
//!  │ u0 ─veth─ u1        va ─veth─ vb  (a port)   │
//!  └──────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, Nvod, Scratch};
use nvo_api::{KeyBinding, Network, ProfileInfo, RouteSpec};
use serde_json::{json, Value};

const CONFIG_PROFILE: &str = r#"
[[profile]]
name = "cfgtun"
udp_port = 7001
template = "4e56 0100 0000 0000"
vni = { offset = 4, len = 3 }
matches = [{ offset = 0, mask = "ffff", value = "4e56" }]
"#;

/// What the API shows of profiles, networks, routes and keys.
fn snapshot(nvod: &Nvod) -> Value {
    let mut networks: Value = nvod.get("/v1/networks");
    for n in networks.as_array_mut().unwrap() {
        n.as_object_mut().unwrap().remove("learned");
    }
    let profiles: Value = nvod.get("/v1/profiles");
    let keys: Value = nvod.get("/v1/profiles/vxlan-gpe-nsh/keys");
    json!({ "networks": networks, "profiles": profiles, "keys": keys })
}

/// The stored desired state (snapshot and journal).
fn state_file(nvod: &Nvod) -> serde_json::Value {
    common::stored_state(&nvod.state_dir)
}

#[rustfmt::skip]
const BAD: &[(&str, &str, Option<&str>, u16, &str)] = &[
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "nosuch"}"#), 400, "nosuch"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "vxlan-gbp", "params": {"colour": 1}}"#), 400, "colour"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "vxlan-gbp", "params": {"group": 70000}}"#), 400, "70000"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "nvgre", "l3": true}"#), 400, "cannot carry ip packets"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "ipip", "l3": false}"#), 400, "l3"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "geneve", "bum": {"mode": "multicast", "group": "239.1.1.1"}}"#), 400, "geneve"),
    ("POST", "/v1/networks", Some(r#"{"vni": 9, "encap": "geneve", "mtu": 1451}"#), 400, "1451"),
    ("POST", "/v1/profiles", Some(r#"{"name": "vxlan", "udp_port": 7002, "template": "00"}"#), 409, "vxlan"),
    ("POST", "/v1/profiles", Some(r#"{"name": "cfgtun", "udp_port": 7002, "template": "00"}"#), 409, "cfgtun"),
    ("POST", "/v1/profiles", Some(r#"{"name": "bad", "udp_port": 7002, "template": "zz"}"#), 400, "zz"),
    ("POST", "/v1/profiles", Some(r#"{"name": "bad", "udp_port": 7002, "template": "0000", "vni": {"offset": 1, "len": 3}}"#), 400, "vni"),
    ("POST", "/v1/profiles", Some(r#"{"name": "bad", "ip_protocol": 6, "template": "0000"}"#), 409, "6"),
    ("POST", "/v1/profiles", Some(r#"{"name": "Bad Name", "udp_port": 7002, "template": "00"}"#), 400, "Bad Name"),
    ("POST", "/v1/profiles", Some(r#"{"name": "bad", "udp_port": 7002, "template": "00", "colour": 1}"#), 400, "colour"),
    ("DELETE", "/v1/profiles/vxlan", None, 400, "built in"),
    ("DELETE", "/v1/profiles/cfgtun", None, 400, "config file"),
    ("DELETE", "/v1/profiles/usertun", None, 409, "network 40"),
    ("DELETE", "/v1/profiles/nosuch", None, 404, "nosuch"),
    ("GET", "/v1/profiles/nosuch", None, 404, "nosuch"),
    ("POST", "/v1/networks/30/routes", Some(r#"{"prefix": "10.9.0.1/24", "remote": "10.202.0.2"}"#), 400, "host bits"),
    ("POST", "/v1/networks/30/routes", Some(r#"{"prefix": "10.9.0.0/33", "remote": "10.202.0.2"}"#), 400, "10.9.0.0/33"),
    ("POST", "/v1/networks/30/routes", Some(r#"{"prefix": "10.9.0.0/24", "remote": "239.0.0.1"}"#), 400, "239.0.0.1"),
    ("POST", "/v1/networks/20/routes", Some(r#"{"prefix": "10.9.0.0/24", "remote": "10.202.0.2"}"#), 400, "not an l3 network"),
    ("DELETE", "/v1/networks/30/routes/10.9.9.0/24", None, 404, "10.9.9.0/24"),
    ("POST", "/v1/networks/30/routes", Some(r#"{"prefix": "fd00:9::1/64", "remote": "10.202.0.2"}"#), 400, "use fd00:9::/64"),
    ("POST", "/v1/networks/30/routes", Some(r#"{"prefix": "fd00:9::/129", "remote": "10.202.0.2"}"#), 400, "fd00:9::/129"),
    ("DELETE", "/v1/networks/30/routes/fd00:8::/64", None, 404, "fd00:8::/64"),
    ("POST", "/v1/profiles/vxlan-gpe-nsh/keys", Some(r#"{"key": "xyz", "local": 50}"#), 400, "xyz"),
    ("POST", "/v1/profiles/vxlan-gpe-nsh/keys", Some(r#"{"key": "0000"}"#), 400, "exactly one"),
    ("POST", "/v1/profiles/vxlan-gpe-nsh/keys", Some(r#"{"key": "0000", "local": 77}"#), 404, "77"),
    ("POST", "/v1/profiles/vxlan-gpe-nsh/keys", Some(r#"{"key": "00", "forward": "10.202.0.3"}"#), 400, "4 bytes"),
    ("POST", "/v1/profiles/nosuch/keys", Some(r#"{"key": "00", "local": 50}"#), 404, "nosuch"),
    ("DELETE", "/v1/profiles/vxlan-gpe-nsh/keys/0000aaff", None, 404, "0000aaff"),
    ("DELETE", "/v1/networks/50", None, 409, "000014ff"),
];

#[test]
fn profiles_routes_keys_and_refusals() {
    let scratch = Scratch::new("encap");
    let ns = host("encap", "10.202.0.1/24");
    ns.ip(&["link", "add", "va", "type", "veth", "peer", "name", "vb"])
        .unwrap();
    ns.ip(&["link", "set", "va", "up"]).unwrap();
    ns.ip(&["link", "set", "vb", "up"]).unwrap();
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.202.0.1", CONFIG_PROFILE);

    // Profiles: every built-in, the config file's, one added through the API.
    let profiles: Vec<ProfileInfo> = nvod.get("/v1/profiles");
    let names: Vec<&str> = profiles.iter().map(|p| p.spec.name.as_str()).collect();
    for name in [
        "vxlan",
        "vxlan-gbp",
        "vxlan-gpe",
        "vxlan-gpe-nsh",
        "geneve",
        "nvgre",
        "overlay",
        "ipip",
        "ip6ip6",
        "stt",
        "cfgtun",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert!(profiles
        .iter()
        .any(|p| p.spec.name == "cfgtun" && !p.builtin));
    let added: ProfileInfo = nvod.post(
        "/v1/profiles",
        &json!({"name": "usertun", "udp_port": 7002, "template": "4e57 0000 0000 0000",
                "vni": {"offset": 4, "len": 3}}),
    );
    assert_eq!(added.spec.name, "usertun");

    // Networks on several profiles; MTUs follow each profile's overhead.
    let gbp: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 20, "encap": "vxlan-gbp", "params": {"group": 4660}}),
    );
    assert_eq!((gbp.mtu, gbp.params["group"]), (1450, 4660));
    let gpe: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 30, "encap": "vxlan-gpe", "l3": true}),
    );
    assert!(gpe.l3 && gpe.gateway_mac.as_deref() == Some("02:6e:76:00:00:1e"));
    let nvgre: Network = nvod.post("/v1/networks", &json!({"vni": 35, "encap": "nvgre"}));
    assert_eq!(nvgre.mtu, 1500 - 20 - 8 - 14);
    let overlay: Network = nvod.post("/v1/networks", &json!({"vni": 36, "encap": "overlay"}));
    assert_eq!(
        overlay.params["src_node"],
        u64::from(u32::from(std::net::Ipv4Addr::new(10, 202, 0, 1)))
    );
    let stt: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 37, "encap": "stt", "mtu": 9000}),
    );
    assert_eq!(
        stt.mtu, 9000,
        "stt segments frames larger than the underlay"
    );
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 40, "encap": "usertun"}));
    let _: Network = nvod.post(
        "/v1/networks",
        &json!({"vni": 50, "encap": "vxlan-gpe-nsh", "params": {"spi": 20, "si": 255}}),
    );
    let _: Value = nvod.post("/v1/ports", &json!({"name": "va", "vni": 30}));
    let route: RouteSpec = nvod.post(
        "/v1/networks/30/routes",
        &json!({"prefix": "10.9.0.0/24", "remote": "10.202.0.2"}),
    );
    assert_eq!(route.prefix, "10.9.0.0/24");
    // IPv6 on the same (vxlan-gpe) network; ip6ip6 is an L3 network by default, and over this
    // IPv4 locator carries IPv6 in IPv4 (protocol 41, 6in4).
    let v6: RouteSpec = nvod.post(
        "/v1/networks/30/routes",
        &json!({"prefix": "fd00:9::/64", "remote": "10.202.0.2"}),
    );
    assert_eq!(v6.prefix, "fd00:9::/64");
    let six: Network = nvod.post("/v1/networks", &json!({"vni": 38, "encap": "ip6ip6"}));
    assert!(six.l3, "{six:?}");
    assert_eq!(
        six.gateway_ipv6,
        Some("fe80::6e:76ff:fe00:26".parse().unwrap())
    );
    let key: KeyBinding = nvod.post(
        "/v1/profiles/vxlan-gpe-nsh/keys",
        &json!({"key": "0000 14ff", "local": 50}),
    );
    assert_eq!(key.key, "000014ff");
    let _: KeyBinding = nvod.post(
        "/v1/profiles/vxlan-gpe-nsh/keys",
        &json!({"key": "00000aff", "forward": "10.202.0.3"}),
    );

    // Refusals change nothing.
    let before = snapshot(&nvod);
    let file_before = state_file(&nvod);
    for &(method, path, body, status, needle) in BAD {
        let message = nvod.expect_error(method, path, body, status);
        assert!(
            message.to_lowercase().contains(&needle.to_lowercase()),
            "{method} {path}: message should name {needle:?}: {message}"
        );
    }
    assert_eq!(snapshot(&nvod), before, "a refused request changed the API");
    assert_eq!(
        state_file(&nvod),
        file_before,
        "a refused request changed the state"
    );

    // kill -9 and a restart bring everything back.
    nvod.kill();
    nvod.spawn();
    assert_eq!(snapshot(&nvod), before, "the restart lost something");
    let counters: Value = nvod.get("/v1/counters");
    assert!(counters["stt"].is_object() && counters["underlay"]["relayed"] == 0);

    // Deleting in order works: key, network, profile.
    nvod.delete("/v1/profiles/vxlan-gpe-nsh/keys/000014ff");
    nvod.delete("/v1/networks/50");
    nvod.delete("/v1/networks/40");
    nvod.delete("/v1/profiles/usertun");
    nvod.delete("/v1/networks/30/routes/10.9.0.0/24");
    nvod.delete("/v1/networks/30/routes/fd00:9::/64");
    let profiles: Vec<ProfileInfo> = nvod.get("/v1/profiles");
    assert!(!profiles.iter().any(|p| p.spec.name == "usertun"));
    assert!(nvod
        .get::<Vec<RouteSpec>>("/v1/networks/30/routes")
        .is_empty());
}
