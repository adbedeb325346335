//! ACL profiles through the API (issue 17 item 4): added, attached to a port and to a virtual
//! port as flow rules with that in_port and the profile's cookie, guarded against `/v1/flows`
//! requests that would replace or delete them, kept across `kill -9`, removed exactly on
//! detach and with their virtual port, and bad requests refused with one clear line each.
//! Filtering itself is tests/e2e/test_acl.py's.
//!
//! ```text
//!   ns nvo-acl-PID
//!  ┌──────────────────────────────────────────────────────────┐
//!  │ nvod (locator 10.206.0.1 on u0)                           │
//!  │ u0 ─veth─ u1    p0 ─veth─ p1 (port of vni 100)            │
//!  │                 s0 ─veth─ s1 (shared, virtual ports VM1, VM2)
//!  └──────────────────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, veths, Nvod, Scratch};
use nvo_api::{Acl, FlowTable, FlowsDeleted, Network, Port, Vport};
use serde_json::{json, Value};

const VM1: &str = "02:00:00:00:01:01";
const VM2: &str = "02:00:00:00:01:02";
const DENY: &str = "priority=200,tcp,tp_dst=22,actions=drop";
const ALLOW: &str = "priority=100,actions=normal";

fn texts(t: &FlowTable) -> Vec<String> {
    let mut v: Vec<String> = t.flows.iter().map(|f| f.flow.clone()).collect();
    v.sort();
    v
}

#[test]
fn acls_become_flow_rules_of_their_port_and_leave_exactly_with_it() {
    let scratch = Scratch::new("acl");
    let ns = host("acl", "10.206.0.1/24");
    veths(&ns, &[("p0", "p1"), ("s0", "s1"), ("t0", "t1")]);
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.206.0.1", "");
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 100}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "p0", "vni": 100}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "s0", "shared": {}}));
    for mac in [VM1, VM2] {
        let _: Vport = nvod.post("/v1/ports/s0/vports", &json!({"mac": mac, "vni": 100}));
    }
    let added: Acl = nvod.post(
        "/v1/acls",
        &json!({"name": "no-ssh", "rules": [DENY, ALLOW]}),
    );
    assert_eq!(added.rules.len(), 2);
    assert_eq!(added.cookie >> 48, 0x0ac1);

    let too_many: Vec<String> = (0..65)
        .map(|i| format!("priority={i},actions=drop"))
        .collect();
    let too_many = json!({"name": "big", "rules": too_many}).to_string();
    let cases = [
        (
            "POST",
            "/v1/acls",
            r#"{"name": "no-ssh", "rules": ["actions=drop"]}"#.to_owned(),
            409,
            "already exists",
        ),
        (
            "POST",
            "/v1/acls",
            r#"{"name": "x", "rules": []}"#.to_owned(),
            400,
            "at least one rule",
        ),
        ("POST", "/v1/acls", too_many, 400, "at most 64"),
        (
            "POST",
            "/v1/acls",
            r#"{"name": "x", "rules": ["in_port=p0,actions=drop"]}"#.to_owned(),
            400,
            "names in_port",
        ),
        (
            "POST",
            "/v1/acls",
            r#"{"name": "x", "rules": ["tcp,tp_dst=22"]}"#.to_owned(),
            400,
            "rule 1",
        ),
        (
            "POST",
            "/v1/acls",
            r#"{"name": "x", "rules": ["tcp,actions=meter:1"]}"#.to_owned(),
            400,
            "rule 1: no meter 1",
        ),
        (
            "POST",
            "/v1/acls",
            r#"{"name": "a/b", "rules": ["actions=drop"]}"#.to_owned(),
            400,
            "not allowed",
        ),
        (
            "PUT",
            "/v1/ports/p0/acl",
            r#"{"profile": "nosuch"}"#.to_owned(),
            404,
            "no acl \"nosuch\"",
        ),
        (
            "PUT",
            "/v1/ports/zz/acl",
            r#"{"profile": "no-ssh"}"#.to_owned(),
            404,
            "no port \"zz\"",
        ),
        (
            "PUT",
            "/v1/ports/s0/acl",
            r#"{"profile": "no-ssh"}"#.to_owned(),
            400,
            "shared port",
        ),
        (
            "PUT",
            "/v1/ports/s0/vports/02:00:00:00:01:09/acl",
            r#"{"profile": "no-ssh"}"#.to_owned(),
            404,
            "no virtual port",
        ),
    ];
    for (method, path, body, status, words) in cases {
        let message = nvod.expect_error(method, path, Some(&body), status);
        assert!(message.contains(words), "{method} {path} {body}: {message}");
    }
    let message = nvod.expect_error("DELETE", "/v1/ports/p0/acl", None, 404);
    assert!(message.contains("no acl attached"), "{message}");

    // A rule of the user's own with the match and priority of the ACL's allow rule: the
    // attach would replace it, so it is refused.
    let (status, _) = nvod.raw(
        "POST",
        "/v1/flows",
        Some(json!({"port": "p0", "flow": ALLOW}).to_string().as_bytes()),
    );
    assert_eq!(status, 201);
    let body = r#"{"profile": "no-ssh"}"#;
    let message = nvod.expect_error("PUT", "/v1/ports/p0/acl", Some(body), 409);
    assert!(message.contains("already has flow rule"), "{message}");
    let gone: FlowsDeleted = nvod.post("/v1/flows/delete", &json!({"port": "p0"}));
    assert_eq!(gone.deleted, 1);

    let _: Value = nvod.put("/v1/ports/p0/acl", &json!({"profile": "no-ssh"}));
    let _: Value = nvod.put(
        &format!("/v1/ports/s0/vports/{VM1}/acl"),
        &json!({"profile": "no-ssh"}),
    );
    // The port and virtual port views say which profile each has.
    let ports: Vec<Port> = nvod.get("/v1/ports");
    let acl_of = |name: &str| ports.iter().find(|p| p.name == name).unwrap().acl.clone();
    assert_eq!(acl_of("p0").as_deref(), Some("no-ssh"));
    assert_eq!(acl_of("s0"), None);
    let vports: Vec<Vport> = nvod.get("/v1/ports/s0/vports");
    let acls: Vec<_> = vports
        .iter()
        .map(|v| (v.mac.clone(), v.acl.clone()))
        .collect();
    assert!(
        acls.contains(&(Some(VM1.to_owned()), Some("no-ssh".to_owned()))),
        "{acls:?}"
    );
    assert!(acls.contains(&(Some(VM2.to_owned()), None)), "{acls:?}");
    // The user's own rule on the other virtual port.
    let (status, message) = nvod.raw(
        "POST",
        "/v1/flows",
        Some(
            json!({"port": format!("s0/{VM2}"), "flow": "priority=300,udp,actions=drop"})
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(status, 201, "{message}");
    let cookie = format!("cookie={:#x}", added.cookie);
    let want = [
        format!("{cookie},priority=100,in_port=p0 actions=NORMAL"),
        format!("{cookie},priority=100,in_port=s0/{VM1} actions=NORMAL"),
        format!("{cookie},priority=200,in_port=p0,tcp,tp_dst=22 actions=drop"),
        format!("{cookie},priority=200,in_port=s0/{VM1},tcp,tp_dst=22 actions=drop"),
        format!("priority=300,in_port=s0/{VM2},udp actions=drop"),
    ];
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(texts(&table), want);

    let conflicts = [
        (
            "PUT",
            "/v1/ports/p0/acl".to_owned(),
            Some(body.to_owned()),
            409,
            "detach it first",
        ),
        (
            "DELETE",
            "/v1/acls/no-ssh".to_owned(),
            None,
            409,
            "attached to p0",
        ),
        (
            "POST",
            "/v1/flows".to_owned(),
            Some(
                json!({"port": "p0", "flow": "priority=200,tcp,tp_dst=22,actions=normal"})
                    .to_string(),
            ),
            409,
            "is acl no-ssh's on p0",
        ),
        (
            "POST",
            "/v1/flows/delete".to_owned(),
            Some("{}".to_owned()),
            409,
            "detach the acl",
        ),
        (
            "POST",
            "/v1/flows/delete".to_owned(),
            Some(json!({"port": "p0", "match": "tcp", "strict": false}).to_string()),
            409,
            "is acl no-ssh's on p0",
        ),
    ];
    for (method, path, body, status, words) in conflicts {
        let message = nvod.expect_error(method, &path, body.as_deref(), status);
        assert!(
            message.contains(words),
            "{method} {path} {body:?}: {message}"
        );
    }
    let message = nvod.expect_error(
        "POST",
        "/v1/flows",
        Some(&json!({"flow": format!("cookie={:#x},actions=drop", added.cookie)}).to_string()),
        400,
    );
    assert!(message.contains("range of acl rules"), "{message}");
    // A delete that leaves the ACL's rules alone goes through.
    let (status, message) = nvod.raw(
        "POST",
        "/v1/flows/delete",
        Some(json!({"port": "p0", "match": "udp"}).to_string().as_bytes()),
    );
    assert_eq!(status, 200, "{message}");

    let shown: Vec<Acl> = nvod.get("/v1/acls");
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].attached, ["p0".to_owned(), format!("s0/{VM1}")]);
    assert_eq!(shown[0].rules[0].rule, DENY);

    nvod.kill();
    nvod.spawn();
    let again: Vec<Acl> = nvod.get("/v1/acls");
    assert_eq!(again, shown);
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(
        texts(&table),
        want,
        "the acl's rules are installed again at start"
    );

    // Detached from p0: p0's rules go, the virtual ports' stay.
    nvod.delete("/v1/ports/p0/acl");
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(
        texts(&table),
        want[1..2]
            .iter()
            .chain(&want[3..])
            .cloned()
            .collect::<Vec<_>>()
    );
    // A virtual port takes its attachment and its rules with it.
    nvod.delete(&format!("/v1/ports/s0/vports/{VM1}"));
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(texts(&table), want[4..]);
    let shown: Vec<Acl> = nvod.get("/v1/acls");
    assert!(shown[0].attached.is_empty(), "{shown:?}");
    // A trunk's VLAN circuit takes one as a virtual port does (in_port = t0.10), and the
    // trunk takes its circuits' attachments with it.
    let _: Port = nvod.post(
        "/v1/ports",
        &json!({"name": "t0", "vlan": {"trunk": {"10": 100}}}),
    );
    let _: Value = nvod.put("/v1/ports/t0/vlans/10/acl", &json!({"profile": "no-ssh"}));
    let shown: Vec<Acl> = nvod.get("/v1/acls");
    assert_eq!(shown[0].attached, ["t0.10"]);
    let table: FlowTable = nvod.get("/v1/flows?port=t0.10");
    assert!(
        texts(&table)
            .iter()
            .filter(|t| t.contains("in_port=t0.10"))
            .count()
            == 2,
        "{:?}",
        texts(&table)
    );
    nvod.delete("/v1/ports/t0");
    let shown: Vec<Acl> = nvod.get("/v1/acls");
    assert!(shown[0].attached.is_empty(), "{shown:?}");
    nvod.delete("/v1/acls/no-ssh");
    assert!(nvod.get::<Vec<Acl>>("/v1/acls").is_empty());
}
