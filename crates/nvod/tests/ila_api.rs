//! ILA networks through the API on a real nvod: the `ila_locator` key (checked at start; the
//! TUN nvoila0 made and the locator /64 routed to it), `encap: "ila"` networks (refused where
//! nvod cannot forward them), identifier → locator mappings as the network's routes (IPv6 both
//! sides, bounded by `limits.routes_per_network`), and all of it back after `kill -9`.
//!
//! ```text
//!   ns nvo-ila-PID                                   ns nvo-ila4-PID
//!  ┌───────────────────────────────────────────┐    ┌──────────────────────────────┐
//!  │ nvod (locator fd00:203::1 on u0,          │    │ nvod (locator 10.203.0.1):   │
//!  │       ila_locator fd00:1a:0:1::/64)       │    │ no ILA network               │
//!  │ nvoila0 ← route fd00:1a:0:1::/64          │    └──────────────────────────────┘
//!  └───────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::{host, Nvod, Scratch};
use nvo_api::{Network, RouteSpec};
use serde_json::{json, Value};

const LOCATOR: &str = "fd00:203::1";

fn sysctl(ns: &str, setting: &str) {
    let ok = Command::new("ip")
        .args(["netns", "exec", ns, "sysctl", "-qw", setting])
        .status()
        .unwrap()
        .success();
    assert!(ok, "sysctl {setting}");
}

/// A namespace (`tag`: unique per test) whose u0 holds LOCATOR (no DAD: nvod binds it at once).
fn ipv6_host(tag: &str) -> nvo_io::netns::NamedNetns {
    let ns = host(tag, "10.203.0.1/24");
    ns.ip(&[
        "addr",
        "add",
        &format!("{LOCATOR}/64"),
        "dev",
        "u0",
        "nodad",
    ])
    .unwrap();
    ns
}

#[test]
fn ila_locator_is_checked_at_start() {
    let ns = ipv6_host("ila-start");
    for (extra, says) in [
        ("ila_locator = \"fd00:1a::/48\"\n", "/64"),
        ("ila_locator = \"not-an-address\"\n", "not an ipv6 prefix"),
        ("ila_locator = \"ff02::/64\"\n", "unicast"),
    ] {
        let scratch = Scratch::new("ila-bad");
        let (status, log) = Nvod::start_failing(ns.name(), &scratch.0, LOCATOR, extra, &[]);
        assert!(!status.success(), "{extra}");
        assert!(
            log.contains("ila_locator") && log.contains(says),
            "{extra}: {log}"
        );
    }
    // The kernel would not forward what nvod writes to its TUN: refused, saying what to set.
    sysctl(ns.name(), "net.ipv6.conf.all.forwarding=0");
    let scratch = Scratch::new("ila-fwd");
    let extra = "ila_locator = \"fd00:1a:0:1::/64\"\n";
    let (status, log) = Nvod::start_failing(ns.name(), &scratch.0, LOCATOR, extra, &[]);
    assert!(!status.success());
    assert!(log.contains("net.ipv6.conf.all.forwarding"), "{log}");
}

#[test]
fn ila_networks_need_an_ipv6_underlay_and_a_locator() {
    // An IPv4 underlay.
    let scratch = Scratch::new("ila4");
    let ns = host("ila4", "10.204.0.1/24");
    let nvod = Nvod::start(ns.name(), &scratch.0, "10.204.0.1", "");
    let body = r#"{"vni": 70, "encap": "ila"}"#;
    let msg = nvod.expect_error("POST", "/v1/networks", Some(body), 400);
    assert!(msg.contains("ipv6 underlay"), "{msg}");
    // An IPv6 underlay without ila_locator.
    let scratch = Scratch::new("ila6");
    let ns = ipv6_host("ila-need");
    let nvod = Nvod::start(ns.name(), &scratch.0, LOCATOR, "");
    let msg = nvod.expect_error("POST", "/v1/networks", Some(body), 400);
    assert!(msg.contains("ila_locator"), "{msg}");
    let networks: Vec<Network> = nvod.get("/v1/networks");
    assert!(networks.is_empty());
}

#[test]
fn ila_mappings_are_routes_bounded_checked_and_kept() {
    let scratch = Scratch::new("ila");
    let ns = ipv6_host("ila-map");
    sysctl(ns.name(), "net.ipv6.conf.all.forwarding=1");
    let extra = "ila_locator = \"fd00:1a:0:1::/64\"\n[limits]\nroutes_per_network = 3\n";
    let mut nvod = Nvod::start(ns.name(), &scratch.0, LOCATOR, extra);
    let route = ns.ip(&["-6", "route", "show", "fd00:1a:0:1::/64"]).unwrap();
    assert!(route.contains("dev nvoila0"), "{route}");

    let net: Network = nvod.post("/v1/networks", &json!({"vni": 70, "encap": "ila"}));
    assert!(net.l3 && net.encap == "ila", "{net:?}");
    // No header: the tenant MTU is the underlay's.
    assert_eq!(net.mtu, 1500);
    let msg = nvod.expect_error(
        "POST",
        "/v1/networks",
        Some(r#"{"vni": 71, "encap": "ila", "l3": false}"#),
        400,
    );
    assert!(msg.contains("l3"), "{msg}");

    for (sir, at) in [
        ("fd10::1/128", "fd00:1a:0:1::1"),
        ("fd10::2/128", "fd00:1a:0:2::1"),
    ] {
        let r: RouteSpec = nvod.post(
            "/v1/networks/70/routes",
            &json!({"prefix": sir, "remote": at}),
        );
        assert_eq!(r.prefix, sir);
    }
    // An IPv4 prefix with an IPv6 remote maps IPv4 tenants (l3::ila4); an IPv4 remote is
    // refused, nothing changes.
    let r: RouteSpec = nvod.post(
        "/v1/networks/70/routes",
        &json!({"prefix": "10.9.0.2/32", "remote": "fd00:1a:0:2::1"}),
    );
    assert_eq!(r.prefix, "10.9.0.2/32");
    nvod.delete("/v1/networks/70/routes/10.9.0.2/32");
    let v4_remote = r#"{"prefix": "fd10::3/128", "remote": "10.204.0.2"}"#;
    nvod.expect_error("POST", "/v1/networks/70/routes", Some(v4_remote), 400);
    // Bounded: the third fits, a fourth is refused (409), replacing one is not a new one.
    let _: RouteSpec = nvod.post(
        "/v1/networks/70/routes",
        &json!({"prefix": "fd10::3/128", "remote": "fd00:1a:0:2::1"}),
    );
    let fourth = r#"{"prefix": "fd10::4/128", "remote": "fd00:1a:0:2::1"}"#;
    let msg = nvod.expect_error("POST", "/v1/networks/70/routes", Some(fourth), 409);
    assert!(msg.contains("routes_per_network"), "{msg}");
    // fd10::3 moves to host 1.
    let _: RouteSpec = nvod.post(
        "/v1/networks/70/routes",
        &json!({"prefix": "fd10::3/128", "remote": "fd00:1a:0:1::1"}),
    );
    nvod.delete("/v1/networks/70/routes/fd10::2/128");
    nvod.expect_error("DELETE", "/v1/networks/70/routes/fd10::2/128", None, 404);
    let before: Value = nvod.get("/v1/networks/70/routes");
    assert_eq!(
        before,
        json!([
            {"prefix": "fd10::1/128", "remote": "fd00:1a:0:1::1"},
            {"prefix": "fd10::3/128", "remote": "fd00:1a:0:1::1"}
        ]),
    );

    // A crash: the network and its mappings come back, and the TUN's route with them.
    nvod.kill();
    nvod.spawn();
    let after: Value = nvod.get("/v1/networks/70/routes");
    assert_eq!(after, before);
    let net: Network = nvod.get("/v1/networks/70");
    assert!(net.l3 && net.encap == "ila", "{net:?}");
    let route = ns.ip(&["-6", "route", "show", "fd00:1a:0:1::/64"]).unwrap();
    assert!(route.contains("dev nvoila0"), "{route}");
}
