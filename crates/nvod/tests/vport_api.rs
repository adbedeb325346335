//! Shared ports and their virtual ports per MAC through the API (issue 17, VM-VP): shown with
//! their settings and counters, kept across `kill -9`, holding their networks, and bad
//! requests refused with one clear line each. Forwarding is tests/e2e/test_vport.py's.
//!
//! ```text
//!   ns nvo-vport-api-PID
//!  ┌──────────────────────────────────────────────────────────┐
//!  │ nvod (locator 10.204.0.1 on u0)                           │
//!  │ u0 ─veth─ u1    s0 ─veth─ s1 (shared, default vni 300)    │
//!  │                 p0 ─veth─ p1 (plain port of vni 100)      │
//!  └──────────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, veths, Nvod, Scratch};
use nvo_api::{FdbEntry, Network, Port, Vport};
use serde_json::json;

const VM1: &str = "02:00:00:00:01:01";
const VM3: &str = "02:00:00:00:01:03";

#[test]
fn shared_ports_and_virtual_ports_are_shown_kept_and_checked() {
    let scratch = Scratch::new("vpo-api");
    let ns = host("vport-api", "10.204.0.1/24");
    veths(&ns, &[("s0", "s1"), ("p0", "p1")]);
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.204.0.1", "");
    for vni in [100, 200, 300] {
        let _: Network = nvod.post("/v1/networks", &json!({"vni": vni}));
    }
    let shared: Port = nvod.post(
        "/v1/ports",
        &json!({"name": "s0", "shared": {"default_vni": 300}}),
    );
    assert_eq!(shared.vni, 0);
    assert_eq!(
        serde_json::to_value(shared.shared).unwrap(),
        json!({"default_vni": 300})
    );
    let _: Port = nvod.post("/v1/ports", &json!({"name": "p0", "vni": 100}));
    let vm1: Vport = nvod.post("/v1/ports/s0/vports", &json!({"mac": VM1, "vni": 100}));
    assert_eq!(vm1.name, format!("s0/{VM1}"));
    assert_eq!((vm1.vni, vm1.vlan, vm1.rx_frames), (100, None, 0));
    // Upper case is the same MAC, written back as nvod writes MACs.
    let vm3: Vport = nvod.post(
        "/v1/ports/s0/vports",
        &json!({"mac": "02:00:00:00:01:03".to_uppercase(), "vni": 200, "vlan": 20}),
    );
    assert_eq!(vm3.mac.as_deref(), Some(VM3));
    assert_eq!(vm3.vlan, Some(20));

    // Refusals: one line naming the value, nothing stored.
    let post = "/v1/ports/s0/vports";
    let cases = [
        (
            post,
            format!(r#"{{"mac": "{VM1}", "vni": 200}}"#),
            409,
            "already has a virtual port for 02:00:00:00:01:01",
        ),
        (
            post,
            r#"{"mac": "ff:ff:ff:ff:ff:ff", "vni": 100}"#.into(),
            400,
            "not a unicast",
        ),
        (
            post,
            r#"{"mac": "02:00:00:00:01:05", "vni": 999}"#.into(),
            404,
            "no network with vni 999",
        ),
        (
            post,
            r#"{"mac": "02:00:00:00:01:05", "vni": 100, "vlan": 4095}"#.into(),
            400,
            "vlan id 4095",
        ),
        (post, r#"{"mac": "nope", "vni": 100}"#.into(), 400, "nope"),
        (
            "/v1/ports/p0/vports",
            r#"{"mac": "02:00:00:00:01:05", "vni": 100}"#.into(),
            400,
            "not a shared port",
        ),
        (
            "/v1/ports/zz/vports",
            r#"{"mac": "02:00:00:00:01:05", "vni": 100}"#.into(),
            404,
            "no port \"zz\"",
        ),
        (
            "/v1/ports",
            r#"{"name": "s1", "vni": 100, "shared": {}}"#.into(),
            400,
            "leave vni out",
        ),
        (
            "/v1/ports",
            r#"{"name": "s1", "shared": {"default_vni": 999}}"#.into(),
            404,
            "no network with vni 999",
        ),
        (
            "/v1/ports",
            r#"{"name": "s1", "vni": 100, "vlan": {"access": 5}, "shared": {}}"#.into(),
            400,
            "not both",
        ),
    ];
    for (path, body, status, words) in cases {
        let message = nvod.expect_error("POST", path, Some(&body), status);
        assert!(message.contains(words), "{path} {body}: {message}");
    }
    let message = nvod.expect_error("DELETE", "/v1/ports/s0/vports/02:00:00:00:01:09", None, 404);
    assert!(
        message.contains("no virtual port for 02:00:00:00:01:09"),
        "{message}"
    );
    let message = nvod.expect_error(
        "POST",
        "/v1/networks/100/fdb",
        Some(r#"{"mac": "02:00:00:00:00:0b", "port": "s0"}"#),
        400,
    );
    assert!(message.contains("shared port"), "{message}");
    // A virtual port holds its network, the default one too.
    for vni in [200, 300] {
        let message = nvod.expect_error("DELETE", &format!("/v1/networks/{vni}"), None, 409);
        assert!(message.contains("s0"), "{vni}: {message}");
    }

    // The VM's MAC is a static entry of its network, behind its virtual port.
    let fdb: Vec<FdbEntry> = nvod.get("/v1/networks/200/fdb");
    let entry = fdb.iter().find(|e| e.mac == VM3).expect("vm3's entry");
    assert_eq!(entry.port.as_deref(), Some("s0/02:00:00:00:01:03"));
    // Each virtual port has counters of its own, the default one too.
    let counters: serde_json::Value = nvod.get("/v1/counters?all=true");
    for name in [
        "s0",
        "s0/02:00:00:00:01:01",
        "s0/02:00:00:00:01:03",
        "s0/default",
    ] {
        assert!(
            counters["ports"].get(name).is_some(),
            "{name}: {}",
            counters["ports"]
        );
    }
    let listed: Vec<Vport> = nvod.get("/v1/ports/s0/vports");
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[2].name, "s0/default");
    assert_eq!((listed[2].mac.as_deref(), listed[2].vni), (None, 300));

    let ports: Vec<Port> = nvod.get("/v1/ports");
    nvod.kill();
    nvod.spawn();
    assert_eq!(nvod.get::<Vec<Port>>("/v1/ports"), ports);
    let again: Vec<Vport> = nvod.get("/v1/ports/s0/vports");
    let key = |v: &Vport| (v.name.clone(), v.mac.clone(), v.vni, v.vlan);
    assert_eq!(
        again.iter().map(key).collect::<Vec<_>>(),
        listed.iter().map(key).collect::<Vec<_>>()
    );
    let fdb: Vec<FdbEntry> = nvod.get("/v1/networks/100/fdb");
    assert!(fdb.iter().any(|e| e.mac == VM1), "{fdb:?}");

    nvod.delete(&format!("/v1/ports/s0/vports/{VM3}"));
    let fdb: Vec<FdbEntry> = nvod.get("/v1/networks/200/fdb");
    assert!(fdb.iter().all(|e| e.mac != VM3), "{fdb:?}");
    nvod.delete("/v1/networks/200");
    nvod.delete("/v1/ports/s0");
    nvod.delete("/v1/networks/300");
    let left: Vec<Port> = nvod.get("/v1/ports");
    assert_eq!(
        left.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["p0"]
    );
}
