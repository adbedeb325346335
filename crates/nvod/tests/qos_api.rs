//! QoS profiles through the API (issue 17 item 4): added, attached to a port, to a virtual
//! port and to a trunk's VLAN circuit, shown with their attachments, kept across `kill -9`, and bad requests refused with one
//! clear line each. Policing itself is tests/e2e/test_qos.py's.
//!
//! ```text
//!   ns nvo-qos-PID
//!  ┌──────────────────────────────────────────────────────────┐
//!  │ nvod (locator 10.205.0.1 on u0, workers = 1)              │
//!  │ u0 ─veth─ u1    p0 ─veth─ p1 (port of vni 100)            │
//!  │                 s0 ─veth─ s1 (shared, one virtual port)   │
//!  │                 t0 ─veth─ t1 (trunk: vlan 10 → vni 100)   │
//!  └──────────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, veths, Nvod, Scratch};
use nvo_api::{Network, Port, Qos, Vport};
use serde_json::{json, Value};

const VM1: &str = "02:00:00:00:01:01";

#[test]
fn qos_profiles_are_attached_shown_kept_and_checked() {
    let scratch = Scratch::new("vpo-qos");
    let ns = host("qos", "10.205.0.1/24");
    veths(&ns, &[("p0", "p1"), ("s0", "s1"), ("t0", "t1")]);
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.205.0.1", "workers = 1\n");
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 100}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "p0", "vni": 100}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "s0", "shared": {}}));
    let _: Vport = nvod.post("/v1/ports/s0/vports", &json!({"mac": VM1, "vni": 100}));
    let _: Port = nvod.post(
        "/v1/ports",
        &json!({"name": "t0", "vlan": {"trunk": {"10": 100}}}),
    );
    let silver: Qos = nvod.post(
        "/v1/qos",
        &json!({"name": "silver", "rate": 100_000_000u64, "burst": 65536}),
    );
    assert_eq!((silver.spec.rate, silver.spec.burst), (100_000_000, 65536));
    let _: Qos = nvod.post(
        "/v1/qos",
        &json!({"name": "gold", "rate": 1_000_000_000u64, "burst": 262144, "dscp": 46}),
    );

    let cases = [
        (
            "POST",
            "/v1/qos",
            r#"{"name": "silver", "rate": 1000000, "burst": 65536}"#,
            409,
            "already exists",
        ),
        (
            "POST",
            "/v1/qos",
            r#"{"name": "x", "rate": 10, "burst": 65536}"#,
            400,
            "rate 10 bit/s is out of range",
        ),
        (
            "POST",
            "/v1/qos",
            r#"{"name": "x", "rate": 1000000, "burst": 100}"#,
            400,
            "burst 100 bytes",
        ),
        (
            "POST",
            "/v1/qos",
            r#"{"name": "x", "rate": 1000000, "burst": 65536, "dscp": 64}"#,
            400,
            "dscp 64",
        ),
        (
            "POST",
            "/v1/qos",
            r#"{"name": "x", "rate": 1000000, "burst": 65536, "dscp": 1, "trust": true}"#,
            400,
            "not both",
        ),
        (
            "POST",
            "/v1/qos",
            r#"{"name": "a/b", "rate": 1000000, "burst": 65536}"#,
            400,
            "not allowed",
        ),
        (
            "PUT",
            "/v1/ports/p0/qos",
            r#"{"profile": "bronze"}"#,
            404,
            "no qos profile \"bronze\"",
        ),
        (
            "PUT",
            "/v1/ports/zz/qos",
            r#"{"profile": "silver"}"#,
            404,
            "no port \"zz\"",
        ),
        (
            "PUT",
            "/v1/ports/s0/qos",
            r#"{"profile": "silver"}"#,
            400,
            "shared port",
        ),
        (
            "PUT",
            "/v1/ports/s0/vports/02:00:00:00:01:09/qos",
            r#"{"profile": "silver"}"#,
            404,
            "no virtual port",
        ),
        (
            "PUT",
            "/v1/ports/t0/qos",
            r#"{"profile": "silver"}"#,
            400,
            "or a trunk",
        ),
        (
            "PUT",
            "/v1/ports/t0/vlans/20/qos",
            r#"{"profile": "silver"}"#,
            404,
            "does not map vlan 20; its vlans: 10",
        ),
        (
            "PUT",
            "/v1/ports/t0/vlans/4095/qos",
            r#"{"profile": "silver"}"#,
            400,
            "not a VLAN ID",
        ),
        (
            "PUT",
            "/v1/ports/p0/vlans/10/qos",
            r#"{"profile": "silver"}"#,
            400,
            "not a trunk",
        ),
    ];
    for (method, path, body, status, words) in cases {
        let message = nvod.expect_error(method, path, Some(body), status);
        assert!(message.contains(words), "{method} {path} {body}: {message}");
    }
    let message = nvod.expect_error("DELETE", "/v1/ports/p0/qos", None, 404);
    assert!(message.contains("no qos profile attached"), "{message}");

    let _: Value = nvod.put("/v1/ports/p0/qos", &json!({"profile": "silver"}));
    let _: Value = nvod.put(
        &format!("/v1/ports/s0/vports/{VM1}/qos"),
        &json!({"profile": "gold"}),
    );
    let _: Value = nvod.put("/v1/ports/t0/vlans/10/qos", &json!({"profile": "silver"}));
    let message = nvod.expect_error("DELETE", "/v1/qos/silver", None, 409);
    assert!(message.contains("attached to p0, t0.10"), "{message}");
    let shown: Vec<Qos> = nvod.get("/v1/qos");
    let attached = |list: &[Qos], name: &str| {
        list.iter()
            .find(|q| q.spec.name == name)
            .map(|q| q.attached.clone())
            .unwrap()
    };
    assert_eq!(attached(&shown, "silver"), ["p0", "t0.10"]);
    assert_eq!(attached(&shown, "gold"), [format!("s0/{VM1}")]);
    let ports: Vec<Port> = nvod.get("/v1/ports");
    assert_eq!(
        ports
            .iter()
            .find(|p| p.name == "p0")
            .unwrap()
            .qos
            .as_deref(),
        Some("silver")
    );
    let vports: Vec<Vport> = nvod.get("/v1/ports/s0/vports");
    assert_eq!(vports[0].qos.as_deref(), Some("gold"));

    nvod.kill();
    nvod.spawn();
    let again: Vec<Qos> = nvod.get("/v1/qos");
    assert_eq!(
        again
            .iter()
            .map(|q| (&q.spec, &q.attached))
            .collect::<Vec<_>>(),
        shown
            .iter()
            .map(|q| (&q.spec, &q.attached))
            .collect::<Vec<_>>()
    );
    // Detached, a profile can go; a virtual port takes its attachment with it.
    nvod.delete("/v1/ports/p0/qos");
    nvod.delete("/v1/ports/t0/vlans/10/qos");
    let message = nvod.expect_error("DELETE", "/v1/ports/t0/vlans/10/qos", None, 404);
    assert!(message.contains("t0.10 has no qos profile"), "{message}");
    nvod.delete("/v1/qos/silver");
    nvod.delete(&format!("/v1/ports/s0/vports/{VM1}"));
    nvod.delete("/v1/qos/gold");
    assert!(nvod.get::<Vec<Qos>>("/v1/qos").is_empty());
}
