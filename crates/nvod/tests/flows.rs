//! `/v1/flows`: rules added by port name, shown with their text and counters, refused with one
//! clear line when wrong, and kept across a `kill -9` (those without timeouts), by port name;
//! rules on port `tunnel` and `POST /v1/trace` from the underlay (namespace nvo-flt-PID: the
//! same shape, port pa alone, networks 10 and 20).
//!
//! ```text
//!   ns nvo-flo-PID
//!  ┌────────────────────────────────────────────┐
//!  │ nvod (locator 10.203.0.1 on u0)             │
//!  │ u0 ─veth─ u1   pa ─veth─ pb   qa ─veth─ qb  │
//!  │                (port, vni 10) (port, vni 10)│
//!  └────────────────────────────────────────────┘
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{host, Nvod, Scratch};
use nvo_api::{FlowTable, FlowsDeleted, Network, Port, Trace};
use serde_json::json;

fn texts(t: &FlowTable) -> Vec<String> {
    let mut v: Vec<String> = t.flows.iter().map(|f| f.flow.clone()).collect();
    v.sort();
    v
}

#[test]
fn flows_are_added_refused_shown_and_restored_by_port_name() {
    let scratch = Scratch::new("flo");
    let ns = host("flo", "10.203.0.1/24");
    for (a, b) in [("pa", "pb"), ("qa", "qb")] {
        ns.ip(&["link", "add", a, "type", "veth", "peer", "name", b])
            .unwrap();
        ns.ip(&["link", "set", a, "up"]).unwrap();
    }
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.203.0.1", "");
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 10}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "pa", "vni": 10}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "qa", "vni": 10}));

    let add = |body: serde_json::Value| {
        let (status, message) = nvod.raw("POST", "/v1/flows", Some(body.to_string().as_bytes()));
        assert_eq!(status, 201, "{body}: {message}");
    };
    add(json!({"port": "pa", "flow": "priority=100,tcp,tp_dst=22,actions=drop"}));
    add(json!({"flow": "priority=5,udp,actions=output:qa"}));
    add(json!({"port": "qa", "flow": "hard_timeout=300,icmp,actions=normal"}));
    // The tunnel output, its port by name (flow_tunnel.rs).
    let tunnel = "priority=7,in_port=qa,udp actions=set_tunnel:0xa,set_field:10.203.0.9->tun_dst,output:tunnel";
    add(
        json!({"port": "qa", "flow": "priority=7,udp,actions=set_tunnel:10,set_field:10.203.0.9->tun_dst,output:tunnel"}),
    );
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(table.rules, 4);
    assert_eq!(
        texts(&table),
        [
            "hard_timeout=300,in_port=qa,icmp actions=NORMAL",
            "priority=100,in_port=pa,tcp,tp_dst=22 actions=drop",
            "priority=5,udp actions=output:qa",
            tunnel,
        ]
    );
    // pa's view: its own rule and the one for every port.
    let pa: FlowTable = nvod.get("/v1/flows?port=pa");
    assert_eq!(pa.flows.len(), 2, "{pa:?}");

    for (body, want) in [
        (r#"{"flow": "tcp,tp_dst=22"}"#, "actions="),
        (
            r#"{"flow": "tcp,nw_dst=10.0.0.300,actions=drop"}"#,
            "nw_dst",
        ),
        (
            r#"{"port": "nosuch", "flow": "tcp,actions=drop"}"#,
            "no port named \"nosuch\"",
        ),
        (
            r#"{"port": "pa", "flow": "in_port=qa,tcp,actions=drop"}"#,
            "in_port is not port pa",
        ),
        (r#"{"flow": "tcp,actions=meter:3"}"#, "no meter 3"),
        (
            r#"{"flow": "tcp,actions=set_tunnel:10,output:tunnel"}"#,
            "set_field:IP->tun_dst before it",
        ),
        (
            r#"{"flow": "tcp,actions=set_tunnel:11,set_field:10.203.0.9->tun_dst,output:65279"}"#,
            "no L2 network with VNI 11",
        ),
        (
            r#"{"flow": "tcp,actions=set_field:2001:db8::9->tun_dst,output:tunnel"}"#,
            "not of the underlay's address family",
        ),
        (r#"{"flow": "tp_dst=22,actions=drop"}"#, "needs"),
    ] {
        let message = nvod.expect_error("POST", "/v1/flows", Some(body), 400);
        assert!(message.contains(want), "{body}: {message}");
    }
    nvod.expect_error("GET", "/v1/flows?port=nosuch", None, 404);
    nvod.expect_error("GET", "/v1/flows?vni=10", None, 400);
    assert_eq!(
        nvod.get::<FlowTable>("/v1/flows").rules,
        4,
        "refusals changed nothing"
    );

    // kill -9: the rules without timeouts come back, ports still named.
    nvod.kill();
    nvod.spawn();
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(
        texts(&table),
        [
            "priority=100,in_port=pa,tcp,tp_dst=22 actions=drop",
            "priority=5,udp actions=output:qa",
            tunnel,
        ]
    );
    // Traces: read only, the rule named, where the frame goes.
    let t: Trace = nvod.post(
        "/v1/trace",
        &json!({"port": "pa", "flow": "tcp,nw_dst=10.0.0.2,tp_dst=22"}),
    );
    assert_eq!(t.result, "drop", "{t:?}");
    assert!(t
        .rule
        .as_ref()
        .is_some_and(|r| r.priority == 100 && r.n_packets == 0));
    let t: Trace = nvod.post("/v1/trace", &json!({"port": "pa", "flow": "udp,tp_dst=53"}));
    assert_eq!(t.result, "output:qa", "{t:?}");
    let t: Trace = nvod.post("/v1/trace", &json!({"port": "qa", "flow": "udp,tp_dst=53"}));
    assert_eq!(t.result, "tunnel: remote 10.203.0.9, vni 10", "{t:?}");
    let t: Trace = nvod.post(
        "/v1/trace",
        &json!({"port": "qa", "flow": "dl_dst=ff:ff:ff:ff:ff:ff,tcp"}),
    );
    assert!(t.rule.is_none(), "{t:?}");
    assert!(
        t.result.starts_with("normal: network 10") && t.result.contains("[\"pa\"]"),
        "{t:?}"
    );
    nvod.expect_error(
        "POST",
        "/v1/trace",
        Some(r#"{"port": "underlay", "flow": "tcp"}"#),
        400,
    );
    nvod.expect_error(
        "POST",
        "/v1/trace",
        Some(r#"{"port": "pa", "flow": "tcp,actions=drop"}"#),
        400,
    );
    let gone: FlowsDeleted = nvod.post("/v1/flows/delete", &json!({"port": "pa"}));
    assert_eq!(gone.deleted, 1);
    nvod.kill();
    nvod.spawn();
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(texts(&table), ["priority=5,udp actions=output:qa", tunnel]);
    let gone: FlowsDeleted = nvod.post("/v1/flows/delete", &json!({}));
    assert_eq!(gone.deleted, 2);
    assert_eq!(nvod.get::<FlowTable>("/v1/flows").rules, 0);

    // Timeouts: nvod expires the rules (hard: since installed; idle: since the last packet).
    for flow in [
        "hard_timeout=1,icmp,actions=drop",
        "idle_timeout=2,arp,actions=drop",
    ] {
        let body = json!({"flow": flow}).to_string();
        assert_eq!(nvod.raw("POST", "/v1/flows", Some(body.as_bytes())).0, 201);
    }
    assert_eq!(nvod.get::<FlowTable>("/v1/flows").rules, 2);
    let gone = common::wait_for(std::time::Duration::from_secs(8), || {
        nvod.get::<FlowTable>("/v1/flows").rules == 0
    });
    assert!(
        gone,
        "rules with timeouts did not expire: {:?}",
        nvod.get::<FlowTable>("/v1/flows")
    );

    // A removed port's rules go with it; the other port's stay.
    for (port, flow) in [
        ("qa", "priority=7,arp,actions=drop"),
        ("pa", "arp,actions=drop"),
    ] {
        let body = json!({"port": port, "flow": flow}).to_string();
        assert_eq!(nvod.raw("POST", "/v1/flows", Some(body.as_bytes())).0, 201);
    }
    nvod.delete("/v1/ports/qa");
    let table: FlowTable = nvod.get("/v1/flows");
    assert_eq!(texts(&table), ["in_port=pa,arp actions=drop"]);
    nvod.kill();
    nvod.spawn();
    assert_eq!(
        texts(&nvod.get("/v1/flows")),
        ["in_port=pa,arp actions=drop"]
    );
}

/// Port `tunnel` and `POST /v1/trace` from the underlay: a rule on the tunnel's frames of one
/// VNI, named by its trace; delivery after the table; the clear refusals.
#[test]
fn tunnel_rules_and_traces_from_the_underlay() {
    let scratch = Scratch::new("flt");
    let ns = host("flt", "10.203.0.1/24");
    ns.ip(&["link", "add", "pa", "type", "veth", "peer", "name", "pb"])
        .unwrap();
    ns.ip(&["link", "set", "pa", "up"]).unwrap();
    let mut nvod = Nvod::start(ns.name(), &scratch.0, "10.203.0.1", "");
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 10}));
    let _: Network = nvod.post("/v1/networks", &json!({"vni": 20}));
    let _: Port = nvod.post("/v1/ports", &json!({"name": "pa", "vni": 10}));
    let (status, _) = nvod.raw(
        "POST",
        "/v1/networks/10/flood",
        Some(br#"{"remote": "10.203.0.9"}"#),
    );
    assert!(status < 300, "flood add: {status}");
    let message = nvod.expect_error(
        "POST",
        "/v1/ports",
        Some(r#"{"name": "tunnel", "vni": 10}"#),
        400,
    );
    assert!(message.contains("reserved"), "{message}");

    let body =
        json!({"port": "tunnel", "flow": "priority=200,tun_id=10,tcp,tp_dst=5201,actions=drop"});
    let (status, message) = nvod.raw("POST", "/v1/flows", Some(body.to_string().as_bytes()));
    assert_eq!(status, 201, "{message}");
    let want = ["priority=200,in_port=tunnel,tcp,tp_dst=5201,tun_id=0xa actions=drop"];
    assert_eq!(texts(&nvod.get("/v1/flows?port=tunnel")), want);
    // Stored by name, restored after a kill -9.
    nvod.kill();
    nvod.spawn();
    assert_eq!(texts(&nvod.get("/v1/flows")), want);
    let trace = |body: serde_json::Value| -> Trace { nvod.post("/v1/trace", &body) };
    let t = trace(json!({"port": "underlay", "vni": 10, "flow": "tcp,tp_dst=5201"}));
    assert_eq!((t.result.as_str(), t.port_id), ("drop", 0xfeff), "{t:?}");
    assert!(t
        .rule
        .as_ref()
        .is_some_and(|r| r.priority == 200 && r.n_packets == 0));
    // Another VNI, another port: delivery from the tunnel floods to the network's ports.
    let t = trace(json!({"port": "underlay", "vni": 20, "flow": "tcp,tp_dst=5201"}));
    assert!(t.rule.is_none(), "{t:?}");
    assert!(t.result.contains("no local port"), "{t:?}");
    let t = trace(
        json!({"port": "underlay", "vni": 10, "flow": "dl_dst=ff:ff:ff:ff:ff:ff,tcp,tp_dst=80"}),
    );
    assert!(t.rule.is_none(), "{t:?}");
    assert!(
        t.result.starts_with("normal: network 10") && t.result.contains("[\"pa\"]"),
        "{t:?}"
    );
    // A remote outside the flood list: network 10 takes known remotes only.
    let t = trace(
        json!({"port": "underlay", "vni": 10, "remote": "10.203.0.50", "flow": "tcp,tp_dst=5201"}),
    );
    assert_eq!(t.result, "drop: unknown_remote", "{t:?}");
    let t = trace(
        json!({"port": "underlay", "vni": 10, "remote": "10.203.0.9", "flow": "tcp,tp_dst=5201"}),
    );
    assert_eq!(t.result, "drop", "{t:?}");
    // Back into the tunnel: the hairpin nvo refuses.
    let body = json!({"port": "tunnel", "flow": "priority=300,tun_id=10,udp,actions=in_port"});
    assert_eq!(
        nvod.raw("POST", "/v1/flows", Some(body.to_string().as_bytes()))
            .0,
        201
    );
    let t = trace(json!({"port": "underlay", "vni": 10, "flow": "udp"}));
    assert!(t.result.contains("hairpin"), "{t:?}");
    // The tunnel's frames are no port's: a port's trace does not meet these rules.
    let t = trace(json!({"port": "pa", "flow": "tcp,tp_dst=5201"}));
    assert!(t.rule.is_none(), "{t:?}");

    for (body, status, want) in [
        (r#"{"port": "underlay", "flow": "tcp"}"#, 400, "--vni"),
        (
            r#"{"port": "underlay", "vni": 99, "flow": "tcp"}"#,
            404,
            "no network with vni 99",
        ),
        (
            r#"{"port": "pa", "vni": 10, "flow": "tcp"}"#,
            400,
            "trace port underlay",
        ),
        (
            r#"{"port": "underlay", "vni": 10, "flow": "tcp,actions=drop"}"#,
            400,
            "without actions=",
        ),
    ] {
        let message = nvod.expect_error("POST", "/v1/trace", Some(body), status);
        assert!(message.contains(want), "{body}: {message}");
    }
}
