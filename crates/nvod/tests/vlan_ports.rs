//! VLAN-tagged ports through the API (issue 17, the VLAN gateway): a trunk and an access port
//! are shown with their mapping, survive `kill -9`, hold their networks, and bad maps are
//! refused with one clear line each. Forwarding is tests/e2e/test_vlan_gateway.py's.
//!
//! ```text
//!   ns nvo-vlan-ports-PID
//!  ┌──────────────────────────────────────────────────────────┐
//!  │ nvod (locator 10.203.0.1 on u0)                           │
//!  │ u0 ─veth─ u1    t0 ─veth─ t1 (trunk 10→100, 20→200)        │
//!  │                 a0 ─veth─ a1 (access vlan 30, vni 100)     │
//!  └──────────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, veths, Nvod, Scratch};
use nvo_api::{Network, Port};
use serde_json::json;

#[test]
fn trunk_and_access_ports_are_shown_kept_and_checked() {
    let scratch = Scratch::new("nvvla-ports");
    let ns = host("vlan-ports", "10.203.0.1/24");
    veths(&ns, &[("t0", "t1"), ("a0", "a1")]);
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.203.0.1", "");
    for vni in [100, 200, 300] {
        let _: Network = nvod.post("/v1/networks", &json!({"vni": vni}));
    }
    let trunk: Port = nvod.post(
        "/v1/ports",
        &json!({"name": "t0", "vlan": {"trunk": {"10": 100, "20": 200}}}),
    );
    assert_eq!(trunk.vni, 0);
    let shown = serde_json::to_value(&trunk.vlan).unwrap();
    assert_eq!(
        shown,
        json!({"trunk": {"10": 100, "20": 200}, "ethertype": "0x8100"})
    );
    let access: Port = nvod.post(
        "/v1/ports",
        &json!({"name": "a0", "vni": 100, "vlan": {"access": 30, "ethertype": "0x88a8"}}),
    );
    assert_eq!(
        serde_json::to_value(&access.vlan).unwrap(),
        json!({"access": 30, "ethertype": "0x88a8"})
    );

    // Refusals: one line naming the value, nothing stored.
    let cases = [
        (
            r#"{"name": "a1", "vlan": {"trunk": {"4095": 100}}}"#,
            400,
            "vlan id 4095",
        ),
        (
            r#"{"name": "a1", "vlan": {"trunk": {"0": 100}}}"#,
            400,
            "vlan id 0",
        ),
        (
            r#"{"name": "a1", "vlan": {"trunk": {"7": 100, "7": 200}}}"#,
            400,
            "vlan 7 is mapped twice",
        ),
        (
            r#"{"name": "a1", "vlan": {"trunk": {"7": 300, "8": 300}}}"#,
            400,
            "network 300 is mapped to vlans 7 and 8",
        ),
        (
            r#"{"name": "a1", "vlan": {"trunk": {"7": 999}}}"#,
            404,
            "no network with vni 999",
        ),
        (
            r#"{"name": "a1", "vlan": {"trunk": {"x": 100}}}"#,
            400,
            "\"x\"",
        ),
        (r#"{"name": "a1", "vlan": {"access": 7}}"#, 400, "vni 0"),
        (
            r#"{"name": "a1", "vni": 100, "vlan": {"access": 7, "trunk": {"8": 200}}}"#,
            400,
            "not both",
        ),
        (
            r#"{"name": "a1", "vni": 100, "vlan": {"access": 7, "ethertype": 2048}}"#,
            400,
            "0x0800",
        ),
        (r#"{"name": "t0.10", "vni": 100}"#, 409, "vlan of a trunk"),
        (r#"{"name": "t0", "vni": 100}"#, 409, "already exists"),
    ];
    for (body, status, words) in cases {
        let message = nvod.expect_error("POST", "/v1/ports", Some(body), status);
        assert!(message.contains(words), "{body}: {message}");
    }
    // Static entries do not point at tagged ports (not yet): refused, not stored.
    let message = nvod.expect_error(
        "POST",
        "/v1/networks/100/fdb",
        Some(r#"{"mac": "02:00:00:00:00:0b", "port": "a0"}"#),
        400,
    );
    assert!(message.contains("vlan-tagged"), "{message}");
    // A trunk holds its networks.
    let message = nvod.expect_error("DELETE", "/v1/networks/200", None, 409);
    assert!(message.contains("t0"), "{message}");

    let ports: Vec<Port> = nvod.get("/v1/ports");
    assert_eq!(ports.len(), 2, "{ports:?}");
    let counters: serde_json::Value = nvod.get("/v1/counters?all=true");
    // The interfaces count what arrives tagged and the tag drops; each VLAN (NAME.VID) what
    // it forwards, as any port.
    for name in ["t0", "t0.10", "t0.20", "a0", "a0.30"] {
        assert!(
            counters["ports"].get(name).is_some(),
            "{name}: {}",
            counters["ports"]
        );
    }

    nvod.kill();
    nvod.spawn();
    assert_eq!(nvod.get::<Vec<Port>>("/v1/ports"), ports);

    nvod.delete("/v1/ports/t0");
    nvod.delete("/v1/networks/200");
    let left: Vec<Port> = nvod.get("/v1/ports");
    assert_eq!(
        left.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["a0"]
    );
    // The trunk's circuit names are free again.
    let _: Port = nvod.post("/v1/ports", &json!({"name": "t0", "vni": 100}));
}
