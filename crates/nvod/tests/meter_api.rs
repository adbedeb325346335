//! Flow-table meters through the API (issue 17 item 3): added, named by flow rules (the
//! missing meter refused, naming it), shown with their rules, kept across `kill -9` with the
//! rules that use them, refused deletion while used, and bad requests refused with one clear
//! line each. Metering traffic itself is tests/e2e/test_meter.py's.
//!
//! ```text
//!   ns nvo-meter-PID
//!  ┌──────────────────────────────────────────────────────────┐
//!  │ nvod (locator 10.206.0.1 on u0, workers = 2)              │
//!  │ u0 ─veth─ u1    p0 ─veth─ p1 (port of vni 100)            │
//!  └──────────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, veths, Nvod, Scratch};
use nvo_api::{Meter, Network, Port};
use serde_json::{json, Value};

#[test]
fn meters_are_added_used_kept_and_checked() {
    let scratch = Scratch::new("vpo-meter");
    let ns = host("meter", "10.206.0.1/24");
    veths(&ns, &[("p0", "p1")]);
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.206.0.1", "workers = 2\n");
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 100}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "p0", "vni": 100}));

    // A rule naming a meter that does not exist is refused, naming it.
    let message = nvod.expect_error(
        "POST",
        "/v1/flows",
        Some(r#"{"port": "p0", "flow": "priority=100,tcp,actions=meter:1,normal"}"#),
        400,
    );
    assert!(message.contains("no meter 1"), "{message}");

    let one: Meter = nvod.post(
        "/v1/meters",
        &json!({"id": 1, "rate": 100_000_000u64, "burst": 65536}),
    );
    assert_eq!(
        (one.spec.rate, one.spec.burst, one.rules),
        (100_000_000, 65536, 0)
    );
    let _: Meter = nvod.post(
        "/v1/meters",
        &json!({"id": 2, "rate": 1_000_000u64, "burst": 16384}),
    );
    let cases = [
        (
            r#"{"id": 1, "rate": 1000000, "burst": 65536}"#,
            409,
            "already exists",
        ),
        (
            r#"{"id": 0, "rate": 1000000, "burst": 65536}"#,
            400,
            "meter 0",
        ),
        (
            r#"{"id": 3, "rate": 10, "burst": 65536}"#,
            400,
            "rate 10 bit/s",
        ),
        (
            r#"{"id": 3, "rate": 1000000, "burst": 100}"#,
            400,
            "burst 100 bytes",
        ),
    ];
    for (body, status, words) in cases {
        let message = nvod.expect_error("POST", "/v1/meters", Some(body), status);
        assert!(message.contains(words), "{body}: {message}");
    }
    let message = nvod.expect_error("DELETE", "/v1/meters/9", None, 404);
    assert!(message.contains("no meter 9"), "{message}");

    // Two rules share meter 1.
    let _: Value = nvod.post(
        "/v1/flows",
        &json!({"port": "p0", "flow": "priority=100,tcp,actions=meter:1,normal"}),
    );
    let _: Value = nvod.post(
        "/v1/flows",
        &json!({"port": "p0", "flow": "priority=100,udp,actions=meter:1,normal"}),
    );
    let message = nvod.expect_error("DELETE", "/v1/meters/1", None, 409);
    assert!(
        message.contains("meter 1 is used by 2 flow rule(s)"),
        "{message}"
    );
    let shown: Vec<Meter> = nvod.get("/v1/meters");
    assert_eq!(
        shown
            .iter()
            .map(|m| (m.spec.id, m.rules))
            .collect::<Vec<_>>(),
        [(1, 2), (2, 0)]
    );

    // Kept across kill -9, with the rules that name them (restored after the meters).
    nvod.kill();
    nvod.spawn();
    let again: Vec<Meter> = nvod.get("/v1/meters");
    assert_eq!(
        again.iter().map(|m| (m.spec, m.rules)).collect::<Vec<_>>(),
        shown.iter().map(|m| (m.spec, m.rules)).collect::<Vec<_>>()
    );
    nvod.delete("/v1/meters/2");
    let deleted: Value = nvod.post("/v1/flows/delete", &json!({"port": "p0"}));
    assert_eq!(deleted["deleted"], 2, "{deleted}");
    nvod.delete("/v1/meters/1");
    assert!(nvod.get::<Vec<Meter>>("/v1/meters").is_empty());
}
